"""Zero-copy vocabulary loading: the compiled form written once, memory-mapped afterwards.

Loading ``o200k_base`` from its tiktoken file means base64-decoding 200k lines,
building Python lists and dicts, deriving the merge table and building the tries:
seconds. Seed 002's recipe is to do that work once, offline, and at load time
only map the result. ``cached_vocabulary(source, loader_id, build)`` does this:

* the first time, ``build()`` loads the vocabulary the slow way; its
  :class:`~bpebench.algorithms.kernels.compiled.Tables`, its :class:`~bpebench.algorithms.kernels.matching.Matcher`,
  its priorities (and merge list) and a small JSON header (name, pattern, special
  tokens, normalizer, ...) are written to one file in the cache directory;
* afterwards the file is memory-mapped (copy-on-write, so the arrays are ordinary
  writable numpy arrays of the same numba types, but nothing is copied until
  written) and the vocabulary is a :class:`CachedVocabulary`, whose Python
  ``tokens`` list, ``merges`` dict and bytes->id dict are only built if something
  asks for them (decoding, the reference encoder). Encoding needs none of them.

Cache file layout (little-endian)::

    magic (16 bytes) | header length (8) | sha256 of the header (32) | header (JSON)
    | arrays, each at a 64-byte aligned offset

The header lists every array (name, dtype, shape, offset) and the total file size.

Keys and staleness: the file name holds a hash of the format version, the loader
id (a built-in name, or a path and its format), the source file's size,
modification time and sha256 (about 2 ms for o200k), and the size and
modification time of the modules that define the stored layout and values
(``kernels/compiled.py``, ``kernels/matching.py``, ``formats/``, the HF loader's plain form in
``pipeline/hf_pipeline.py``, ``split_lists.py``, ``pattern_program.py`` and ``text_pieces.py``, this module).
Change any of these and the key changes: the vocabulary is rebuilt, and older
files for the same loader id are removed, as are files whose source file no longer
exists (the header records it), which no key can reach again.

Damage: a file whose magic, header checksum, total size (truncation), key, array
bounds, array shapes or array bytes do not check out is discarded (one line on
stderr) and rebuilt, so it can never produce wrong ids. Hashing all 45 MB of arrays
on every load would cost more than the load itself, so the sha256 of the array bytes
is checked the first time a file is read after it last changed: a small stamp file
beside it (``.verified``, see ``cache.files``) records the file's device, inode, size,
mtime and ctime when its bytes were last found sound, and a load whose ``fstat``
matches the stamp skips the hash. Any write to the file through the file system
changes its ctime (which no user can set back), so a damaged file is always hashed
before it is used; only damage the file system does not see (bits rotting on the disk)
would pass. A file changed within the last 2 s gets no stamp (a write in the same tick
of the file system's clock would leave its times as they were), so a new cache file
is hashed on each load until one comes 2 s after it was written.
``verify=True`` (or ``BPEBENCH_VERIFY_CACHE=1``) hashes on every load.

Concurrency: a file is written under a temporary name in the same directory and
moved into place with ``os.replace`` (atomic), so two processes building at once
both end with a complete file and readers never see a partial one.

Location: ``$BPEBENCH_CACHE/vocabularies`` (default ``~/.cache/bpebench/vocabularies``;
``BPEBENCH_CACHE`` is also the root of the corpora cache); ``BPEBENCH_VOCAB_CACHE=off``
disables it. An unwritable directory is not an error.

Complexity: a cached load is O(header) plus one ``mmap``; building is the loader's
cost plus ``compile_vocabulary`` and ``build_matcher``. Exact: the arrays are the
ones the build computed, byte for byte.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import mmap
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..formats.vocabulary import Vocabulary
from .files import CacheDamaged, cache_root, discard, is_verified, record_verified, remove_with_stamp

FORMAT_VERSION = 4  # 2: record types named in the bpebench namespace; 3: the pipeline spec; 4: llama.cpp settings
MAGIC = b"BPEBENCH-VOCAB\x00\x01"
_PREFIX = len(MAGIC) + 8 + 32
_ALIGN = 64
_SUFFIX = ".bpv"
_DISABLED = {"off", "0", "no", "false"}
#: modules whose code decides what a cache file holds (their size and mtime are in the key),
#: relative to the ``algorithms`` tree; a folder stands for its modules. The HF loader's plain form
#: (``hf_pipeline.plain_form``, with ``pattern_program.with_gaps`` and ``text_pieces.onig_regex``)
#: decides a file's stored pattern and normalizer; the table of code points read in the libraries'
#: Unicode decides stored class tables.
_LAYOUT_MODULES = ("cache/vocabularies.py", "kernels/compiled.py", "kernels/matching.py", "kernels/short_piece.py",
                   "formats", "pipeline/hf_pipeline.py", "pipeline/split_lists.py", "pipeline/pattern_program.py",
                   "pipeline/text_pieces.py", "pipeline/unicode_reference.py", "pipeline/unicode_reference.json")
_ALLOWED_DTYPES = {"|u1", "|b1", "<i4", "<i8", "<u8", "<u2", "<f8"}


# ----------------------------------------------------------------------------- location and keys
def cache_dir() -> Path | None:
    """Where vocabulary caches live, or None when caching is off (``BPEBENCH_VOCAB_CACHE=off``)."""
    if os.environ.get("BPEBENCH_VOCAB_CACHE", "").strip().lower() in _DISABLED:
        return None
    return cache_root() / "vocabularies"


def _layout_fingerprint() -> list:
    # os.scandir and plain strings: the same walk through pathlib cost a fresh process 0.7 ms
    root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    stamps = []
    for name in _LAYOUT_MODULES:
        path = os.path.join(root, name)
        try:
            if os.path.isdir(path):
                with os.scandir(path) as entries:
                    found = sorted((f"{name}/{e.name}", e.path) for e in entries if e.name.endswith(".py"))
            else:
                found = [(name, path)]
        except OSError:
            continue
        for relative, full in found:
            try:
                st = os.stat(full)
            except OSError:
                continue
            stamps.append([relative, st.st_size, st.st_mtime_ns])
    return stamps


def source_key(source: str | Path, loader_id: str) -> str:
    """The cache key of a vocabulary built by ``loader_id`` from the file ``source``."""
    from .digests import file_digest

    path = Path(source)
    st = path.stat()
    content = file_digest(path)
    described = [FORMAT_VERSION, loader_id, st.st_size, st.st_mtime_ns, content, _layout_fingerprint()]
    return hashlib.sha256(json.dumps(described).encode()).hexdigest()[:32]


_LABEL_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _label(loader_id: str) -> str:
    """A file-name-safe prefix that identifies the loader id (for removing stale files)."""
    # each run of other characters becomes one "_" (a loop: compiling a regex cost 0.3 ms per process)
    kept: list[str] = []
    for char in loader_id:
        if char in _LABEL_CHARACTERS:
            kept.append(char)
        elif not kept or kept[-1] != "\x00":
            kept.append("\x00")
    readable = "".join(kept).replace("\x00", "_")[-40:].strip("_.")
    return f"{readable}-{hashlib.sha256(loader_id.encode()).hexdigest()[:8]}"


def cache_path(source: str | Path, loader_id: str) -> Path | None:
    """The file that holds (or will hold) this vocabulary's cache; None when caching is off."""
    root = cache_dir()
    if root is None:
        return None
    return root / f"{_label(loader_id)}-{source_key(source, loader_id)}{_SUFFIX}"


# ----------------------------------------------------------------------------- the lazy vocabulary
class CachedVocabulary(Vocabulary):
    """A Vocabulary mapped from a cache file. ``tokens`` and ``merges`` are built from the
    mapped arrays on first access; everything else is there at once."""

    @property
    def tokens(self) -> list[bytes]:
        tokens = self.__dict__.get("_tokens")
        if tokens is None:
            buf = self._token_bytes.tobytes()
            starts = self._token_start.tolist()
            tokens = [buf[a:b] for a, b in zip(starts, starts[1:])]
            self.__dict__["_tokens"] = tokens
        return tokens

    @tokens.setter
    def tokens(self, value: list[bytes]) -> None:
        self.__dict__["_tokens"] = value

    @property
    def merges(self):
        merges = self.__dict__.get("_merges", ())
        if merges == ():
            columns = self.__dict__.get("_merge_columns")
            if columns is None:
                merges = None
            else:
                left, right, priority, merged = (c.tolist() for c in columns)
                merges = {(a, b): (p, m) for a, b, p, m in zip(left, right, priority, merged)}
            self.__dict__["_merges"] = merges
        return merges

    @merges.setter
    def merges(self, value) -> None:
        self.__dict__["_merges"] = value

    def __len__(self) -> int:
        return len(self.priority)


# ----------------------------------------------------------------------------- writing
def _flatten(prefix: str, record, arrays: dict, scalars: dict, types: dict) -> None:
    """Put the arrays of a (nested) NamedTuple into ``arrays``, its other fields into ``scalars``."""
    types[prefix] = f"{type(record).__module__}:{type(record).__qualname__}"
    for field, value in zip(record._fields, record):
        name = f"{prefix}.{field}"
        if isinstance(value, np.ndarray):
            arrays[name] = value
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            _flatten(name, value, arrays, scalars, types)
        elif isinstance(value, (bool, int, float, np.integer, np.floating)):
            scalars[name] = value.item() if isinstance(value, np.generic) else value
        else:
            raise TypeError(f"cannot store {name} of type {type(value).__name__}")


def _vocabulary_meta(vocab: Vocabulary) -> dict:
    from ..kernels.compiled import rank_order_break

    return {
        "class": "CachedVocabulary",
        "name": vocab.name,
        "rule": vocab.rule,
        "special_tokens": vocab.special_tokens,
        "pattern": vocab.pattern,
        "normalizer": vocab.normalizer,
        "excluded": sorted(int(i) for i in vocab.excluded),
        "hidden": sorted(int(i) for i in vocab.hidden),
        "byte_fallback": None if vocab.byte_fallback is None
        else {str(k): int(v) for k, v in vocab.byte_fallback.items()},
        "whole_piece_lookup": bool(vocab.whole_piece_lookup),
        "source": vocab.source,
        "pipeline": vocab.pipeline,
        "llama_cpp": vocab.llama_cpp,
        "fingerprint": vocab.fingerprint,
        "dead_merges": int(getattr(vocab, "_dead_merges", 0)),
        "rank_order_break": rank_order_break(vocab),
    }


def write_cache(path: Path, key: str, vocab: Vocabulary, source: str | Path | None = None) -> None:
    """Compile ``vocab`` (tables and matcher) and write it to ``path`` atomically; ``source``
    (the file it was built from) is recorded so the file can go once that file is gone."""
    from ..kernels.compiled import compile_vocabulary
    from ..kernels.matching import build_matcher
    from ..kernels.short_piece import short_piece_tables

    tables = compile_vocabulary(vocab)
    matcher = build_matcher(vocab)
    arrays: dict[str, np.ndarray] = {}
    scalars: dict = {}
    types: dict[str, str] = {}
    _flatten("tables", tables, arrays, scalars, types)
    _flatten("matcher", matcher, arrays, scalars, types)
    arrays["vocab.priority"] = vocab.priority
    for name, arr in short_piece_tables(vocab, tables, matcher).items():
        arrays[f"short_piece.{name}"] = arr
    if vocab.rule == "merges" and vocab.merges is not None:
        items = sorted(vocab.merges.items())
        for i, column in enumerate(("left", "right", "priority", "merged")):
            values = [pair[i] for pair, _ in items] if i < 2 else [v[i - 2] for _, v in items]
            arrays[f"merges.{column}"] = np.array(values, dtype=np.int64)
    directory = {}
    offset = 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        arrays[name] = arr
        directory[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset}
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    data_hash = hashlib.sha256()
    for name in sorted(arrays):  # the order the reader sees (the header's keys are sorted)
        data_hash.update(memoryview(arrays[name]).cast("B"))
    header = {
        "format": FORMAT_VERSION, "key": key, "meta": _vocabulary_meta(vocab), "scalars": scalars,
        "types": types, "arrays": directory, "data_bytes": offset, "data_sha256": data_hash.hexdigest(),
    }
    if source is not None:
        header["source_file"] = os.path.abspath(source)
    data_start = 0
    while True:  # the header holds its own end; grow until the numbers fit
        header["data_start"] = data_start
        header["file_size"] = data_start + offset
        header_bytes = json.dumps(header, sort_keys=True).encode()
        needed = -(-(_PREFIX + len(header_bytes)) // _ALIGN) * _ALIGN
        if needed <= data_start:
            break
        data_start = needed
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC)
            f.write(len(header_bytes).to_bytes(8, "little"))
            f.write(hashlib.sha256(header_bytes).digest())
            f.write(header_bytes)
            f.write(b"\0" * (data_start - f.tell()))
            for name, arr in arrays.items():
                f.write(memoryview(arr).cast("B"))
                f.write(b"\0" * (-arr.nbytes % _ALIGN))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache is shareable
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ----------------------------------------------------------------------------- reading
def _read_header(f, size: int) -> dict:
    prefix = f.read(_PREFIX)
    if len(prefix) < _PREFIX or prefix[: len(MAGIC)] != MAGIC:
        raise CacheDamaged("not a bpebench vocabulary cache (bad magic)")
    length = int.from_bytes(prefix[len(MAGIC) : len(MAGIC) + 8], "little")
    if length > size:
        raise CacheDamaged("header length past the end of the file")
    header_bytes = f.read(length)
    if hashlib.sha256(header_bytes).digest() != prefix[len(MAGIC) + 8 :]:
        raise CacheDamaged("header checksum mismatch")
    return json.loads(header_bytes)


def _resolve_type(spec: str):
    module_name, _, qualname = spec.partition(":")
    if not module_name.startswith("bpebench.algorithms."):
        raise CacheDamaged(f"unexpected record type {spec}")
    return getattr(importlib.import_module(module_name), qualname)


def _rebuild(prefix: str, types: dict, arrays: dict, scalars: dict):
    cls = _resolve_type(types[prefix])
    values = []
    for field in cls._fields:
        name = f"{prefix}.{field}"
        if name in arrays:
            values.append(arrays[name])
        elif name in scalars:
            values.append(scalars[name])
        elif name in types:
            values.append(_rebuild(name, types, arrays, scalars))
        else:
            raise CacheDamaged(f"field {name} missing")
    return cls(*values)


def _check_shapes(tables, matcher, priority: np.ndarray) -> None:
    """The invariants the kernels rely on (they do not bounds-check)."""
    from ..kernels.matching import FLOOR_BITS

    n = len(tables.token_len)
    per_token = [tables.priority, tables.split_left, tables.split_right, priority,
                 matcher.next_prefix, matcher.next_suffix]
    ok = (
        all(len(a) == n for a in per_token)
        and tables.token_start.shape == (n + 1,)
        and (n == 0 or int(tables.token_start[-1]) == len(tables.token_bytes))
        and tables.byte_token.shape == (256,)
        and len(tables.pair_keys) == len(tables.pair_vals)
        and matcher.rows.shape == (n, 8)
        and matcher.boundary_sigs.shape == (n, 4)
        and matcher.forward.cells.ndim == 2 and matcher.forward.cells.shape[1] == 4
        and matcher.backward.cells.ndim == 2 and matcher.backward.cells.shape[1] == 4
        and matcher.two_byte_start.shape == (1 << 16, 4)
        and matcher.pair_floor.shape == (1 << FLOOR_BITS,)
    )
    if not ok:
        raise CacheDamaged("array shapes are inconsistent")


def read_cache(path: Path, key: str, *, verify: bool = False) -> CachedVocabulary:
    """The vocabulary stored at ``path``; raises FileNotFoundError or CacheDamaged."""
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        size = stat.st_size
        header = _read_header(f, size)
        if header.get("format") != FORMAT_VERSION or header.get("key") != key:
            raise CacheDamaged("stale cache (format or key differ)")
        if header.get("file_size") != size:
            raise CacheDamaged(f"file is {size} bytes, expected {header.get('file_size')} (truncated?)")
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    data_start = header["data_start"]
    arrays = {}
    for name, spec in header["arrays"].items():
        dtype = np.dtype(spec["dtype"])
        if spec["dtype"] not in _ALLOWED_DTYPES:
            raise CacheDamaged(f"unexpected dtype {spec['dtype']}")
        count = math.prod(spec["shape"])  # numpy's prod: 3 us an array
        start = data_start + spec["offset"]
        if count < 0 or start + count * dtype.itemsize > size:
            raise CacheDamaged(f"array {name} has a negative size or runs past the end of the file")
        arrays[name] = np.frombuffer(mapped, dtype=dtype, count=count, offset=start).reshape(spec["shape"])
    if verify or not is_verified(path, stat):
        digest = hashlib.sha256()
        for name in sorted(header["arrays"]):
            digest.update(memoryview(np.ascontiguousarray(arrays[name])).cast("B"))
        if digest.hexdigest() != header["data_sha256"]:
            raise CacheDamaged("array data checksum mismatch")
        record_verified(path, stat)
    types, scalars = header["types"], header["scalars"]
    tables = _rebuild("tables", types, arrays, scalars)
    matcher = _rebuild("matcher", types, arrays, scalars)
    priority = arrays["vocab.priority"]
    _check_shapes(tables, matcher, priority)
    return _vocabulary_from(header["meta"], tables, matcher, priority, arrays)


def _vocabulary_from(meta: dict, tables, matcher, priority, arrays) -> CachedVocabulary:
    vocab = CachedVocabulary.__new__(CachedVocabulary)
    merge_columns = None
    if "merges.left" in arrays:
        merge_columns = tuple(arrays[f"merges.{c}"] for c in ("left", "right", "priority", "merged"))
    fallback = meta["byte_fallback"]
    vocab.__dict__.update(
        name=meta["name"], priority=priority, rule=meta["rule"],
        special_tokens=dict(meta["special_tokens"]), pattern=meta["pattern"],
        normalizer=meta["normalizer"], excluded=frozenset(meta["excluded"]),
        hidden=frozenset(meta["hidden"]),
        byte_fallback=None if fallback is None else {int(k): v for k, v in fallback.items()},
        whole_piece_lookup=meta["whole_piece_lookup"], source=meta["source"], pipeline=meta.get("pipeline"),
        llama_cpp=meta.get("llama_cpp"),
        # derived values the build already computed
        fingerprint=meta["fingerprint"], byte_token=tables.byte_token,
        splits=(tables.split_left, tables.split_right),
        _compiled_tables=tables, _dead_merges=meta["dead_merges"], _matcher=matcher,
        # the lazy parts
        _token_bytes=tables.token_bytes, _token_start=tables.token_start, _tokens=None,
        _merge_columns=merge_columns, _merges=() if meta["rule"] == "merges" else None,
    )
    if "rank_order_break" in meta:  # caches written before it was stored compute it when asked
        vocab.__dict__["_rank_order_break"] = meta["rank_order_break"]
    short = {name.split(".", 1)[1]: arr for name, arr in arrays.items() if name.startswith("short_piece.")}
    if set(short) == _short_piece_table_names():
        vocab.__dict__["_short_piece_tables"] = short
    return vocab


def _short_piece_table_names() -> frozenset[str]:
    from ..kernels.short_piece import TABLE_NAMES

    return TABLE_NAMES


# ----------------------------------------------------------------------------- the entry point
def _remove_stale(path: Path) -> None:
    """Remove other cache files of the same loader id (older keys)."""
    label = path.name[: -len(_SUFFIX) - 33]  # "<label>-<32 hex key>.bpv"
    stale = [p for p in path.parent.glob(f"{label}-*{_SUFFIX}") if p != path and len(p.name) == len(path.name)]
    now = time.time()
    for tmp in path.parent.glob(f"{label}-*{_SUFFIX}.*.tmp"):  # left by a killed writer
        try:
            if now - tmp.stat().st_mtime > 3600:
                stale.append(tmp)
        except OSError:
            pass
    for other in stale:
        remove_with_stamp(other)


def _source_file(header: dict) -> str | None:
    """The absolute path of the file a cache was built from, when its header says."""
    recorded = header.get("source_file")
    if recorded is None:  # written before the field existed: the vocabulary's source, if a path
        recorded = header.get("meta", {}).get("source")
    return recorded if isinstance(recorded, str) and os.path.isabs(recorded) else None


def _remove_orphans(directory: Path, keep: Path) -> None:
    """Remove cache files whose source file no longer exists.

    Their key holds the source's path, size, mtime and content, so they can never be read
    again; without this, vocabularies loaded from temporary files (a test suite's, a
    converter's output) would pile up, one file per temporary path. Reads only headers.
    """
    for other in directory.glob(f"*{_SUFFIX}"):
        if other == keep:
            continue
        try:
            with open(other, "rb") as f:
                source = _source_file(_read_header(f, os.fstat(f.fileno()).st_size))
        except (OSError, CacheDamaged, ValueError):
            continue  # a damaged file is discarded when something reads it
        if source is not None and not os.path.exists(source):
            remove_with_stamp(other)


def cached_vocabulary(source: str | Path, loader_id: str, build: Callable[[], Vocabulary],
                      *, verify: bool | None = None) -> Vocabulary:
    """The vocabulary ``build()`` makes from the file ``source``, through the disk cache.

    ``loader_id`` names how ``build`` reads ``source`` (it is part of the key). Returns the
    mapped :class:`CachedVocabulary` when a valid cache file exists; otherwise builds,
    writes the cache (best effort) and returns the freshly built vocabulary.
    """
    if verify is None:
        verify = os.environ.get("BPEBENCH_VERIFY_CACHE", "") not in ("", "0")
    try:
        path = cache_path(source, loader_id)
    except OSError:
        path = None  # unreadable source: let the loader report it
    if path is None:
        return build()
    key = path.name[-len(_SUFFIX) - 32 : -len(_SUFFIX)]
    try:
        return read_cache(path, key, verify=verify)
    except FileNotFoundError:
        pass  # built below
    except (CacheDamaged, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        discard(path, str(exc) if isinstance(exc, CacheDamaged) else f"{type(exc).__name__}: {exc}")
    vocab = build()
    try:
        write_cache(path, key, vocab, source)
        _remove_stale(path)
        _remove_orphans(path.parent, path)
    except Exception:  # noqa: BLE001 - best effort: a read-only or full disk, or a vocabulary
        pass  # the compiled form cannot be built for (its problems() say why), is just not cached
    return vocab
