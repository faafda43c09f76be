"""Durable results of a parity run: one directory, one JSON line per finished partition.

Files::

    run.json          what the run compares (vocabulary fingerprint, library and version,
                      algorithm, inputs, partitioning): written atomically before any row
    partitions.jsonl  one row per finished partition, appended as it finishes

Guarantees, and how they are kept:

* *append-only, written whole*: each row is one ``os.write`` of a complete line on an
  ``O_APPEND`` descriptor, then ``fsync``; a write that fails part-way (a full disk) is cut
  back to the previous end of file before the one-line error is raised, so the file only
  ever holds whole rows;
* *repaired on resume*: a partial last line (the process was killed inside a write, or the
  machine went down) is cut off, and a line that does not parse as a row is dropped with
  a warning; its partition is simply computed again;
* *resume never mixes runs*: ``--resume`` refuses a directory whose ``run.json`` describes
  another comparison.

The summary is always rebuilt from ``partitions.jsonl``, never from memory.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bpebench.errors import BpebenchError

RESULTS = "partitions.jsonl"
META = "run.json"
#: keys every stored row has (a line without them is not a row of this format)
ROW_KEYS = frozenset({"partition", "digest", "docs", "bytes", "matched", "failed", "mismatches", "seconds"})
FORMAT = 1


def _disk_error(path: Path, exc: OSError) -> BpebenchError:
    return BpebenchError(f"cannot write {path}: {exc.strerror or exc}; the rows written before are intact,"
                         " free space and rerun with --resume")


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a temporary file renamed over it; removed on failure)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise _disk_error(path, exc) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


class ParityStore:
    """The results directory of one parity run."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.results = self.directory / RESULTS
        self.meta_path = self.directory / META
        self.repaired: list[str] = []  # what resuming had to repair, one line each
        self._fd: int | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, meta: dict, *, resume: bool) -> dict[int, dict]:
        """Prepare the directory; returns the rows already stored (only when resuming)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BpebenchError(f"cannot create {self.directory}: {exc.strerror or exc}") from None
        meta = json.loads(json.dumps({"format": FORMAT, **meta}))  # as it reads back (lists, not tuples)
        if resume and self.meta_path.exists():
            previous = self.read_meta()
            if previous != meta:
                changed = sorted(k for k in set(previous) | set(meta) if previous.get(k) != meta.get(k))
                raise BpebenchError(f"{self.directory} holds another parity run (it differs in"
                                    f" {', '.join(changed)}); rerun without --resume or choose another --out")
            return {row["partition"]: row for row in self.rows(repair=True)}
        for path in (self.results, self.meta_path):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise BpebenchError(f"cannot remove {path}: {exc.strerror or exc}") from None
        write_atomically(self.meta_path, json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return {}

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "ParityStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ reading
    def read_meta(self) -> dict:
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BpebenchError(f"{self.meta_path}: unreadable ({exc}); rerun without --resume") from None
        if not isinstance(meta, dict):
            raise BpebenchError(f"{self.meta_path}: not a parity run description; rerun without --resume")
        return meta

    def rows(self, *, repair: bool = False) -> list[dict]:
        """The stored rows, one per partition (the first if one were stored twice).

        With ``repair``, a partial last line is cut off the file and lines that are not rows
        are removed from it (each noted in :attr:`repaired`); without, they are only skipped.
        """
        try:
            data = self.results.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise BpebenchError(f"{self.results}: cannot read ({exc.strerror or exc})") from None
        whole = data.rfind(b"\n") + 1
        if whole < len(data):
            if repair:
                self._truncate(whole)
                self.repaired.append(f"cut a partial last row ({len(data) - whole} bytes) off {self.results.name}")
            data = data[:whole]
        rows: dict[int, dict] = {}
        kept: list[bytes] = []
        bad = repeated = 0
        for line in data.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict) or not ROW_KEYS <= row.keys() or not isinstance(row["partition"], int):
                bad += 1
                continue
            if row["partition"] in rows:
                repeated += 1
                continue
            rows[row["partition"]] = row
            kept.append(line)
        if (bad or repeated) and repair:
            write_atomically(self.results, "".join(line.decode("utf-8", "replace") + "\n" for line in kept))
            self.repaired.append(f"dropped {bad} damaged and {repeated} repeated row(s) from {self.results.name}")
        return list(rows.values())

    def _truncate(self, size: int) -> None:
        try:
            os.truncate(self.results, size)
        except OSError as exc:
            raise BpebenchError(f"cannot repair {self.results}: {exc.strerror or exc}") from None

    # ------------------------------------------------------------------ writing
    def append(self, row: dict) -> None:
        """Store one finished partition: one whole line, synced before returning."""
        data = (json.dumps(row, separators=(",", ":")) + "\n").encode("ascii")  # escapes keep even lone surrogates
        try:
            if self._fd is None:
                self._fd = os.open(self.results, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            end = os.fstat(self._fd).st_size
        except OSError as exc:
            raise _disk_error(self.results, exc) from None
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(28, os.strerror(28))  # ENOSPC: only part of the row fit
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, end)  # never leave half a row behind
            except OSError:
                print(f"bpebench: warning: {self.results} may end in a partial row; --resume repairs it",
                      file=sys.stderr)
            raise _disk_error(self.results, exc) from None
