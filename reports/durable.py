"""Result files that survive interruption: rows appended whole, files replaced atomically.

Measurements are expensive and runs get interrupted (Ctrl-C, kill -9, a full disk), so the
files results go to keep three promises:

* :func:`append_whole`: a row is one ``os.write`` of a complete line, synced; a write that
  fails part-way is cut back to the previous end of the file before the one-line error;
* :func:`cut_partial_last_line`: what a crash inside a write can still leave (a last line
  without its newline) is cut off before the file is read for ``--resume``;
* :func:`write_atomically`: a whole file is replaced through a temporary file and a rename,
  so readers see the old file or the new one, never half of one.

A failed write is one line (:func:`disk_error`); a full disk says so. Used by the report's
store (:mod:`bpebench.reports.store`) and by ``bpebench parity``
(:mod:`bpebench.properties.parity_store`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from bpebench.errors import BpebenchError


def append_whole(path: Path, payload: bytes) -> None:
    """Append ``payload`` in one write and sync it; on failure cut the file back, so no partial
    row is ever left behind by this process, and raise one line."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, payload)
            if written != len(payload):
                raise OSError(errno.ENOSPC, "short write")
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
            raise disk_error(exc, path) from None
    finally:
        os.close(fd)


def cut_partial_last_line(path: Path) -> int:
    """Cut a last line that has no newline (the row a crash interrupted) off ``path``; returns
    how many bytes were cut (0: the file was whole, or absent)."""
    try:
        with path.open("rb+") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return 0
            block, end = 65536, size
            while end > 0:  # find the last newline, reading backwards
                begin = max(0, end - block)
                f.seek(begin)
                chunk = f.read(end - begin)
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    f.truncate(begin + cut + 1)
                    return size - (begin + cut + 1)
                end = begin
            f.truncate(0)
            return size
    except FileNotFoundError:
        return 0


def write_atomically(path: Path, payload: bytes) -> None:
    """Write ``path`` through a temporary file and a rename: readers see the old file or the new
    one, never half of one; a failure removes the temporary file and raises one line."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise disk_error(exc, path) from None


def disk_error(exc: OSError, path: Path) -> BpebenchError:
    """One line for a failed write: a full disk says so (nothing was left half written)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return BpebenchError(f"{path.parent} is full: the results written so far are intact; free some space"
                             f" and continue with --resume")
    return BpebenchError(f"cannot write {path}: {exc.strerror or exc}")

