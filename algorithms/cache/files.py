"""Derived files on disk: where they live, how they are written, and when they may be read back.

Everything bpebench caches (built corpora, Unicode class tables, vocabulary stores, the
ahead-of-time module) is derived data: it can always be rebuilt, so a file that does not
check out is never used. It is discarded, rebuilt, and one line on stderr says so.

* :func:`cache_root`: ``$BPEBENCH_CACHE``, else ``$XDG_CACHE_HOME/bpebench``, else
  ``~/.cache/bpebench``;
* :func:`write_checked` / :func:`read_checked`: a small file format for whole-file payloads
  (a header with the payload's length and sha256); writes are atomic (temporary file, fsync,
  rename), so a reader sees the old file or the new one, never half of one. O(size).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

MAGIC = b"BPEBENCH-CHECKED\x00\x01"
_HEADER = len(MAGIC) + 8 + 32
_warned: set[str] = set()


class CacheDamaged(Exception):
    """A cache file that must not be used (its caller rebuilds it)."""


_roots: dict[tuple, Path] = {}


def cache_root() -> Path:
    """The directory under which every bpebench cache lives."""
    # asked for ~20 times while a fresh process gets ready: remembered per environment (0.5 ms)
    settings = (os.environ.get("BPEBENCH_CACHE"), os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
    root = _roots.get(settings)
    if root is None:
        if settings[0]:
            root = Path(settings[0])
        else:
            base = settings[1] or os.path.join(os.path.expanduser("~"), ".cache")
            root = Path(base) / "bpebench"
        _roots[settings] = root
    return root


def write_atomically(path: Path, payload: bytes) -> bool:
    """Write ``path`` through a temporary file and a rename; False (nothing left behind) when the
    directory cannot be written: a cache that cannot be saved only costs a rebuild next time."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            try:
                tmp.unlink()
            except OSError:
                pass
        return False


def write_checked(path: Path, payload: bytes) -> bool:
    """Store ``payload`` with its length and sha256 (atomically; see :func:`write_atomically`)."""
    header = MAGIC + len(payload).to_bytes(8, "little") + hashlib.sha256(payload).digest()
    return write_atomically(path, header + payload)


def read_checked(path: Path) -> bytes | None:
    """The payload :func:`write_checked` stored, None when there is no file; CacheDamaged when the
    file is not one of ours, is cut short or longer, or its bytes do not hash to the stored sum."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheDamaged(f"unreadable ({exc.strerror or exc})") from None
    if len(raw) < _HEADER or not raw.startswith(MAGIC):
        raise CacheDamaged("not a bpebench cache file (bad header)")
    length = int.from_bytes(raw[len(MAGIC) : len(MAGIC) + 8], "little")
    payload = raw[_HEADER:]
    if len(payload) != length:
        raise CacheDamaged(f"{len(payload)} bytes where {length} were written")
    if hashlib.sha256(payload).digest() != raw[len(MAGIC) + 8 : _HEADER]:
        raise CacheDamaged("checksum mismatch")
    return payload


def discard(path: Path, reason: str) -> None:
    """Remove a damaged cache file and say so once per file (it is rebuilt by the caller)."""
    try:
        path.unlink()
    except OSError:
        pass
    key = str(path)
    if key not in _warned:
        _warned.add(key)
        print(f"bpebench: discarded a damaged cache file ({reason}): {path}; rebuilding it", file=sys.stderr)
