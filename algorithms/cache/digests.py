"""sha256 of files, remembered by their ``stat``: a fresh process need not read them again.

The vocabulary cache keys on its source file's contents and the ahead-of-time module on its
kernel sources; hashing them (2 MB for ``o200k_base``) cost a fresh process more than
everything else it does before it can encode. An index per directory (``digests/<hash of the
directory>.json`` in the cache root) keeps each file's digest with its size, modification and
change times (ns) and inode; a later lookup whose ``stat`` gives the same four returns the
stored digest. Any write to a file through the file system changes its change time, which no
user can set back. One index per directory, because a fresh process parses every index it
looks in: one for the whole cache (every temporary file a test suite hashed) cost 0.2-0.4 ms.

Exact as git's index is: an entry is trusted only when the file had not been modified for
:data:`RACY_SECONDS` before it was hashed, so a file rewritten within the same clock tick
with the same size is read again, never taken for the old one. A damaged, missing or
unwritable index only means the files are hashed (and nothing is remembered).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

# an entry is trusted only if the file was last modified this long before it was hashed (as a stamp)
from .files import RACY_SECONDS
_lock = threading.Lock()
#: each index read in this process, by its path (a test points ``BPEBENCH_CACHE`` elsewhere: other paths)
_memo: dict[Path, dict[str, list]] = {}
_index_paths: dict[tuple[Path, str], Path] = {}


def index_path(path: str | os.PathLike) -> Path:
    """The index that holds (or will hold) the digest of the file at ``path``: its directory's."""
    from .files import cache_root

    directory = os.path.dirname(os.path.abspath(path))
    root = cache_root()
    index = _index_paths.get((root, directory))
    if index is None:  # remembered: pathlib and a hash cost 7 us, asked ~20 times in a fresh process
        index = root / "digests" / f"{hashlib.sha256(directory.encode()).hexdigest()[:24]}.json"
        _index_paths[(root, directory)] = index
    return index


def file_digest(path: str | os.PathLike) -> str:
    """sha256 (hex) of the file's contents."""
    st = os.stat(path)
    key = os.path.abspath(path)  # no system call, unlike resolve()
    index = index_path(key)
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    with _lock:
        entry = _entries(index).get(key)
        if (isinstance(entry, list) and len(entry) == 6 and entry[:4] == stamp
                and entry[4] - max(st.st_mtime_ns, st.st_ctime_ns) >= RACY_SECONDS * 1e9):
            return entry[5]
    hashed_at = time.time_ns()
    digest = _sha256_of(path)
    with _lock:
        entries = _entries(index)
        entries[key] = [*stamp, hashed_at, digest]
        _save(index, entries)
    return digest


def file_digests(paths: list[str | os.PathLike]) -> list[str]:
    """sha256 (hex) of each file's contents, remembered as one entry in the first file's index: one
    lookup for the group (the ahead-of-time module's 16 kernel sources in three directories cost a
    fresh process 0.3 ms file by file). Trusted as a single file's entry is, member by member."""
    keys = [os.path.abspath(path) for path in paths]
    if not keys:
        return []
    stats = [os.stat(key) for key in keys]
    stamps = [[st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino] for st in stats]
    group = "\0".join(keys)  # no path holds a NUL
    index = index_path(keys[0])
    with _lock:
        entry = _entries(index).get(group)
        if _group_holds(entry, stamps, stats):
            return [member[4] for member in entry[2]]
    hashed_at = time.time_ns()
    digests = [_sha256_of(key) for key in keys]
    with _lock:
        entries = _entries(index)
        entries[group] = ["group", hashed_at, [[*stamp, digest] for stamp, digest in zip(stamps, digests)]]
        _save(index, entries)
    return digests


def _sha256_of(path: str | os.PathLike) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _group_holds(entry, stamps: list[list[int]], stats: list[os.stat_result]) -> bool:
    """Whether a group entry was made from files with these stamps, each then unmodified for
    :data:`RACY_SECONDS` before it was hashed."""
    if not (isinstance(entry, list) and len(entry) == 3 and entry[0] == "group" and isinstance(entry[1], int)
            and isinstance(entry[2], list) and len(entry[2]) == len(stamps)):
        return False
    newest = max((max(st.st_mtime_ns, st.st_ctime_ns) for st in stats), default=0)
    return (entry[1] - newest >= RACY_SECONDS * 1e9
            and all(isinstance(member, list) and len(member) == 5 and member[:4] == stamp
                    for member, stamp in zip(entry[2], stamps)))


def forget() -> None:
    """Drop the indexes read in this process (the next lookup reads them again)."""
    with _lock:
        _memo.clear()


def _entries(index: Path) -> dict[str, list]:
    entries = _memo.get(index)
    if entries is None:
        try:
            loaded = json.loads(index.read_bytes())
            entries = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            entries = {}
        _memo[index] = entries
    return entries


#: entries kept at most in one directory's index (the most recently hashed)
MAX_ENTRIES = 256


def _hashed_at(entry) -> int:
    if isinstance(entry, list) and len(entry) == 3 and entry[0] == "group":
        stamp = entry[1]
    else:
        stamp = entry[4] if isinstance(entry, list) and len(entry) == 6 else 0
    return stamp if isinstance(stamp, int) else 0


def _save(index: Path, entries: dict[str, list]) -> None:
    from .files import write_atomically

    # files that are gone (a test's temporary directory, an old vocabulary) only slow the parse
    for key in [key for key in entries if not all(os.path.exists(path) for path in key.split("\0"))]:
        del entries[key]
    if len(entries) > MAX_ENTRIES:
        newest = sorted(entries, key=lambda key: _hashed_at(entries[key]))[-MAX_ENTRIES:]
        kept = {key: entries[key] for key in newest}
        entries.clear()
        entries.update(kept)
    write_atomically(index, json.dumps(entries).encode())  # False (nothing written) when it cannot
