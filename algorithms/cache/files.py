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
import json
import os
import sys
import time
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
    file is not one of ours, is cut short or longer, or its bytes do not hash to the stored sum.
    The sum is checked the first time the file is read after it last changed (see
    :func:`is_verified`)."""
    try:
        with open(path, "rb") as f:
            stat = os.fstat(f.fileno())
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheDamaged(f"unreadable ({exc.strerror or exc})") from None
    return bytes(_checked_payload(path, stat, memoryview(raw)))


def map_checked(path: Path) -> memoryview | None:
    """:func:`read_checked`'s payload mapped from the file (copy on write: writable, and the file never
    changes), not read: no copy of a table the caller touches only in part."""
    import mmap

    try:
        with open(path, "rb") as f:
            stat = os.fstat(f.fileno())
            if stat.st_size < _HEADER:
                raise CacheDamaged("not a bpebench cache file (bad header)")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheDamaged(f"unreadable ({exc.strerror or exc})") from None
    return _checked_payload(path, stat, memoryview(mapped))


def _checked_payload(path: Path, stat: os.stat_result, raw: memoryview) -> memoryview:
    if len(raw) < _HEADER or raw[: len(MAGIC)] != MAGIC:
        raise CacheDamaged("not a bpebench cache file (bad header)")
    length = int.from_bytes(raw[len(MAGIC) : len(MAGIC) + 8], "little")
    payload = raw[_HEADER:]
    if len(payload) != length:
        raise CacheDamaged(f"{len(payload)} bytes where {length} were written")
    if not is_verified(path, stat):
        if hashlib.sha256(payload).digest() != raw[len(MAGIC) + 8 : _HEADER]:
            raise CacheDamaged("checksum mismatch")
        record_verified(path, stat)
    return payload


# ----------------------------------------------------------------------------- verified once per change
# Hashing a cache file on every read cost a fresh process more than reading it (the vocabulary's
# 45 MB of arrays; the 88 kB Unicode class table 0.16 ms). A small stamp beside the file
# (``<name>.verified``) records its device, inode, size, mtime and ctime when its bytes were last
# found sound; a read whose ``fstat`` matches skips the hash. Any write to the file through the file
# system changes its ctime (which no user can set back) and a replacement its inode, so a damaged
# file is hashed before it is used; only damage the file system does not see (bits rotting on the
# disk) would pass. As in git's index, a file changed less than :data:`RACY_SECONDS` before it was
# found sound gets no stamp: a write within the same tick of the file system's clock (a few ms)
# would leave its times as they were.

#: a stamp is kept only for a file last changed at least this long before it was found sound
RACY_SECONDS = 2.0


def file_stamp(stat: os.stat_result) -> list[int]:
    """What identifies one version of a file: device, inode, size, mtime and ctime (ns)."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def stamp_path(path: Path) -> Path:
    """The ``.verified`` stamp beside ``path``."""
    return path.with_name(path.name + ".verified")


def is_verified(path: Path, stat: os.stat_result) -> bool:
    """Whether the version of ``path`` that ``stat`` describes was found sound before."""
    try:
        with open(stamp_path(path), "rb") as f:
            return json.loads(f.read()) == file_stamp(stat)
    except (OSError, ValueError):
        return False


def record_verified(path: Path, stat: os.stat_result) -> None:
    """Record that the version of ``path`` that ``stat`` describes was just found sound (best effort;
    nothing for a file changed within :data:`RACY_SECONDS`)."""
    if time.time_ns() - max(stat.st_mtime_ns, stat.st_ctime_ns) >= RACY_SECONDS * 1e9:
        write_atomically(stamp_path(path), json.dumps(file_stamp(stat)).encode())


def remove_with_stamp(path: Path) -> None:
    """Remove a cache file and its ``.verified`` stamp, whichever exist (best effort)."""
    for doomed in (path, stamp_path(path)):
        try:
            doomed.unlink()
        except OSError:
            pass


def discard(path: Path, reason: str) -> None:
    """Remove a damaged cache file (and its stamp) and say so once per file (it is rebuilt by the
    caller)."""
    remove_with_stamp(path)
    key = str(path)
    if key not in _warned:
        _warned.add(key)
        print(f"bpebench: discarded a damaged cache file ({reason}): {path}; rebuilding it", file=sys.stderr)


def read_or_make(path: Path, make, valid, what: str) -> bytes:
    """The checked payload kept at ``path`` when ``valid(payload)``, else ``make()``'s, written there
    (a damaged or invalid file is discarded with one line naming ``what``)."""
    try:
        payload = read_checked(path)
        if payload is not None:
            if valid(payload):
                return payload
            raise CacheDamaged("contents out of range")
    except CacheDamaged as exc:
        discard(path, f"{what}: {exc}")
    payload = make()
    write_checked(path, payload)
    return payload
