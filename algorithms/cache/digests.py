"""sha256 of files, remembered by their ``stat``: a fresh process need not read them again.

The vocabulary cache keys on its source file's contents and the ahead-of-time module on its
kernel sources; hashing them (2 MB for ``o200k_base``) cost a fresh process more than
everything else it does before it can encode. This index (``digests.json`` in the cache root)
keeps each file's digest with its size, modification and change times (ns) and inode; a
later lookup whose ``stat`` gives the same four returns the stored digest. Any write to a
file through the file system changes its change time, which no user can set back.

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

#: an entry is trusted only if the file was last modified this long before it was hashed
RACY_SECONDS = 2.0
_lock = threading.Lock()
_memo: dict[str, list] | None = None
_memo_path: Path | None = None


def index_path() -> Path:
    from .files import cache_root

    return cache_root() / "digests.json"


def file_digest(path: str | os.PathLike) -> str:
    """sha256 (hex) of the file's contents."""
    path = Path(path)
    st = path.stat()
    key = os.path.abspath(path)  # no system call, unlike resolve()
    stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    with _lock:
        entries = _entries()
        entry = entries.get(key)
        if (isinstance(entry, list) and len(entry) == 6 and entry[:4] == stamp
                and entry[4] - max(st.st_mtime_ns, st.st_ctime_ns) >= RACY_SECONDS * 1e9):
            return entry[5]
    hashed_at = time.time_ns()
    with path.open("rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with _lock:
        entries = _entries()
        entries[key] = [*stamp, hashed_at, digest]
        _save(entries)
    return digest


def _entries() -> dict[str, list]:
    global _memo, _memo_path
    target = index_path()
    if _memo is None or _memo_path != target:
        try:
            loaded = json.loads(target.read_bytes())
            _memo = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            _memo = {}
        _memo_path = target
    return _memo


#: entries kept at most (the most recently hashed): every fresh process parses the index
MAX_ENTRIES = 256


def _hashed_at(entry) -> int:
    stamp = entry[4] if isinstance(entry, list) and len(entry) == 6 else 0
    return stamp if isinstance(stamp, int) else 0


def _save(entries: dict[str, list]) -> None:
    from .files import write_atomically

    # files that are gone (a test's temporary directory, an old vocabulary) only slow the parse
    for key in [key for key in entries if not os.path.exists(key)]:
        del entries[key]
    if len(entries) > MAX_ENTRIES:
        newest = sorted(entries, key=lambda key: _hashed_at(entries[key]))[-MAX_ENTRIES:]
        kept = {key: entries[key] for key in newest}
        entries.clear()
        entries.update(kept)
    write_atomically(index_path(), json.dumps(entries).encode())  # False (nothing written) when it cannot
