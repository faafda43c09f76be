"""The fused pipeline compiled ahead of time: ready to encode without importing numba.

A fresh process that encodes through numba pays its fixed cost before the first
id: ``import numba`` (~250 ms) and LLVM's start-up on the first call of any
compiled function (~220 ms), even when every kernel comes from numba's disk
cache. This module compiles the fused pipeline's entry points (``fast_pipeline.encode_utf8``,
``encode_utf8_batch`` and ``encode_pieces``) once into
a plain CPython extension module with ``numba.pycc``; loading it needs numpy
only. With the lazy ``njit`` of :mod:`bpebench.algorithms.kernels.jit`, a process that only
encodes with the default Tokenizer then never imports numba.

Exported functions: pycc exports take flat arguments, and converting each array argument
costs about 70 ns, so the
:class:`~bpebench.algorithms.pipeline.fast_pipeline.Plan` (and its nested ``Matcher`` and
``Trie``: 26 leaves) is passed as one int64 *handle* (:func:`plan_handle`: each array's
address and shape, each scalar's value); each entry point is wrapped in a generated function
that rebuilds the arrays over those addresses (``numba.carray``) and the NamedTuples in
nopython code and calls the kernel, which numba compiles into the module. A call costs about
0.5 us instead of 2.3. The leaf types come from :func:`describe` of a real plan. pycc's argument
conversion does not check dtypes or shapes, so the wrappers of :meth:`AotModule.entry_points`
check every plan array once per plan (dtype, dimensions, contiguity, alignment; the handle is
made then and kept with the plan, which keeps the arrays alive) and the text and output arrays
on every call, and refuse anything else. The text array is declared read-only (a ``bytes`` text
is), so one signature serves writable and read-only inputs alike. A fourth export,
``encode_bytes``, is ``encode_utf8_reusing`` on a ``bytes`` object, its array made inside the
module (``np.frombuffer`` and the array's conversion in Python cost a call on a word about 0.5 us;
the Tokenizer's short texts take it), with the calling thread's ids, piece cache and scratch given
by address after the plan's handle in one array (:func:`call_state`, made once per thread and
buffer: three array arguments fewer, 0.14-0.17 us of a word's call).

The same shared object also holds a second, small extension module, ``_bpebench_ids``,
compiled from ``id_lists.c`` and linked in beside the kernels (its own ``PyInit``, so Python
imports it by name from the same file: one ``dlopen``, which cost a fresh process 0.13-0.27 ms
for a separate file): it turns the kernel's int32 ids into a Python list in one pass
(``FusedPipeline.id_list``), which numpy cannot do as fast. Without it (JIT) numpy's gather is used.

Where: ``$BPEBENCH_CACHE/aot/fused-<key>/`` (default ``~/.cache/bpebench``), with a
``manifest.json``. The key hashes the kernel sources (:data:`KEY_SOURCES`: the fused
kernel and every module compiled into it, this module, the build and ``id_lists.c``), the numba,
llvmlite, numpy and Python versions, the platform and the CPU (the module is
compiled for the host CPU, as the JIT is). Edit a kernel and the key changes.

When: the first :class:`~bpebench.algorithms.pipeline.fast_pipeline.FusedPipeline` of a process
that finds no module builds it (``bpebench compile`` does it on purpose). The
build replaces numba's JIT compilation of the fused kernels, once per installation instead of
a cache load of about 0.9 s in every process; it compiles every entry point up front, so it
takes longer than the JIT's first encode (on a 2-core machine 180-300 s against 135-145 s;
`benchmarks/quick_pipeline.py --only load`). It runs :mod:`.aot_build` in a child process with an empty
``NUMBA_CACHE_DIR``, so the module is compiled from the current sources, never from
stale numba cache entries. It is written under a temporary name and renamed into
place (atomic); a lock file makes a second process wait for the first one's build.
If the build fails (no C compiler, no Python headers, ...), one line is printed on
stderr and the JIT is used; the failure is remembered (``fused-<key>.failed``), so
later processes do not spend the time again until ``bpebench compile`` retries.
Old builds beyond the newest four are removed.

Damage: a module (or helper) whose manifest, key, size or sha256 does not match is removed
and rebuilt; it is never loaded.

``BPEBENCH_AOT=0`` turns all of this off (JIT only); so does
``NUMBA_DISABLE_JIT=1``, which asks for plain Python.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ..cache.files import cache_root

MODULE_NAME = "_bpebench_fused_aot"
#: the helper extension linked into the same shared object from ``ID_LISTS_SOURCE``
ID_LISTS_MODULE = "_bpebench_ids"
ID_LISTS_SOURCE = "id_lists.c"
FORMAT_VERSION = 6
_OFF = {"0", "off", "no", "false"}
#: builds kept in the ``aot`` directory (other checkouts or versions may use the older ones)
_KEEP = 4
#: the files whose contents are in the key (paths relative to the ``algorithms`` tree): the fused
#: kernel, the modules whose numba code is compiled into it, this loader, its build and the C helper
KEY_SOURCES = ("pipeline/fast_pipeline.py", "backtracking.py", "heap.py", "kernels/matching.py",
               "kernels/compiled.py", "kernels/short_piece.py", "kernels/interleaved_merge.py",
               "pipeline/pretokenize_compiled.py", "pipeline/unicode_table.py",
               "pipeline/pretokenize_bits.py", "pipeline/transducer_split.py", "pipeline/marker_split.py", "kernels/bits.py", "kernels/cut_points.py",
               "kernels/jit.py", "pipeline/aot.py", "pipeline/aot_build.py", f"pipeline/{ID_LISTS_SOURCE}")
_BUILD_TIMEOUT = 3600


class AotError(Exception):
    """The ahead-of-time module cannot be built, loaded or used (the JIT is used instead)."""


# ----------------------------------------------------------------------------- switches and places
_suspended = False  # set while ``example_plan`` builds a pipeline


def enabled() -> bool:
    """False when ``BPEBENCH_AOT=0`` (JIT only) or ``NUMBA_DISABLE_JIT=1`` (plain Python)."""
    if _suspended or os.environ.get("BPEBENCH_AOT", "").strip().lower() in _OFF:
        return False
    return os.environ.get("NUMBA_DISABLE_JIT", "").strip() in ("", "0")


def module_dir() -> Path:
    """The directory that holds (or will hold) the module for the current sources and versions."""
    return cache_root() / "aot" / f"fused-{build_key()[:32]}"


_key: str | None = None


def build_key() -> str:
    """sha256 of everything the compiled module depends on (see the module docstring)."""
    global _key
    if _key is None:
        _key = hashlib.sha256(json.dumps(_key_parts(), sort_keys=True).encode()).hexdigest()
    return _key


def _key_parts() -> dict:
    import platform

    from ..cache.digests import file_digest, file_digests
    from ..kernels.jit import ALGORITHMS_ROOT

    names = sorted(KEY_SOURCES)
    paths = [os.path.join(ALGORITHMS_ROOT, name) for name in names]
    try:
        sources = dict(zip(names, file_digests(paths)))
    except OSError:  # a source missing (a damaged installation): the others' digests, that one None
        sources = {}
        for name, path in zip(names, paths):
            try:
                sources[name] = file_digest(path)
            except OSError:
                sources[name] = None
    return {
        "format": FORMAT_VERSION,
        "sources": sources,
        "numba": _package_version("numba"),
        "llvmlite": _package_version("llvmlite"),
        "numpy": np.__version__,
        "python": sys.version,
        "abi": sys.implementation.cache_tag,
        "platform": [sys.platform, platform.machine()],
        "cpu": _cpu_fingerprint(),
    }


def _package_locations(name: str) -> list[str] | None:
    """Where the package ``name`` would be imported from, without importing it: the first
    ``sys.path`` directory that holds ``<name>/__init__.py`` (a few ``stat`` calls), else what
    ``importlib.util.find_spec`` says (0.08-0.12 ms a package in a fresh process: it lists each
    directory of the path). None when there is no such package."""
    import importlib.util

    for entry in sys.path:
        # the path's finder comes before the finders that editable installs append to sys.meta_path
        if os.path.isfile(os.path.join(entry or os.curdir, name, "__init__.py")):
            return [os.path.join(entry or os.curdir, name)]
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return list(spec.submodule_search_locations) if spec is not None and spec.submodule_search_locations else None


def _package_version(name: str) -> str | None:
    """The version in ``<package>/_version.py``, read without importing the package."""
    locations = _package_locations(name)
    if not locations:
        return None
    for location in locations:
        try:
            with open(os.path.join(location, "_version.py"), encoding="utf-8") as f:
                text = f.read()
        except (OSError, ValueError):
            continue
        # plain string search: compiling a regular expression here cost a fresh process 0.3 ms
        for marker in ('"version": "', 'version = "'):
            at = text.find(marker)
            if at >= 0:
                at += len(marker)
                close = text.find('"', at)
                if close > at:
                    return text[at:close]
        return hashlib.sha256(text.encode()).hexdigest()[:16]
    return "unknown"


def _cpu_fingerprint() -> str:
    """The CPU model and feature flags (the module is compiled for this CPU)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            # the first processor's block only: the kernel writes the file as it is read, and
            # reading all of it on a machine of many CPUs costs a fresh process 0.1 ms or more
            text = b""
            while b"\n\n" not in text:
                more = f.read(4096)
                if not more:
                    break
                text += more
        first = text.split(b"\n\n", 1)[0].decode("ascii", "replace")
    except OSError:
        import platform

        return platform.processor() or platform.machine()
    wanted = ("vendor_id", "cpu family", "model", "model name", "flags", "Features", "CPU part")
    kept = [line for line in first.splitlines() if line.split(":", 1)[0].strip() in wanted]
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- the plan, flattened
def describe(plan) -> dict:
    """The flat argument list of ``plan``: its NamedTuple records and its leaves in order.

    ``{"records": {"": "bpebench.algorithms.pipeline.fast_pipeline:Plan", "matcher": ..., ...},
    "fields": {"": [...], ...}, "leaves": [{"path": "matcher.forward.cells",
    "kind": "array", "dtype": "<i4", "ndim": 2}, {"path": "pattern_id", "kind": "int"}, ...]}``
    """
    records: dict[str, str] = {}
    fields: dict[str, list[str]] = {}
    leaves: list[dict] = []

    def walk(prefix: str, record) -> None:
        cls = type(record)
        records[prefix] = f"{cls.__module__}:{cls.__qualname__}"
        fields[prefix] = list(cls._fields)
        for field, value in zip(cls._fields, record):
            path = f"{prefix}.{field}" if prefix else field
            if isinstance(value, tuple) and hasattr(value, "_fields"):
                walk(path, value)
            elif isinstance(value, np.ndarray):
                leaves.append({"path": path, "kind": "array", "dtype": value.dtype.str, "ndim": value.ndim})
            elif isinstance(value, (bool, np.bool_)):
                leaves.append({"path": path, "kind": "bool"})
            elif isinstance(value, (int, np.integer)):
                leaves.append({"path": path, "kind": "int"})
            elif isinstance(value, (float, np.floating)):
                leaves.append({"path": path, "kind": "float"})
            else:
                raise AotError(f"plan field {path} of type {type(value).__name__} cannot be passed")

    walk("", plan)
    return {"records": records, "fields": fields, "leaves": leaves}


def flatten(plan, description: dict) -> tuple:
    """``plan``'s leaves as a tuple of arguments, each checked against ``description``.

    Raises AotError when the plan's structure, an array's dtype, dimensions,
    contiguity or alignment, or a scalar's kind differs from what the module was
    compiled for: pycc's argument conversion would not notice."""
    for prefix, names in description["fields"].items():
        record = _at(plan, prefix)
        cls = type(record)
        if f"{cls.__module__}:{cls.__qualname__}" != description["records"][prefix] or list(cls._fields) != names:
            raise AotError(f"plan record {prefix or 'Plan'} differs from the compiled one")
    out = []
    for leaf in description["leaves"]:
        value = _at(plan, leaf["path"])
        kind = leaf["kind"]
        if kind == "array":
            if not (isinstance(value, np.ndarray) and value.dtype.str == leaf["dtype"] and value.ndim == leaf["ndim"]
                    and value.flags.c_contiguous and value.flags.aligned):
                raise AotError(f"plan array {leaf['path']} is not a C-contiguous {leaf['dtype']}[{leaf['ndim']}d]")
        elif kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise AotError(f"plan field {leaf['path']} is not a bool")
            value = bool(value)
        elif kind == "int":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise AotError(f"plan field {leaf['path']} is not an int")
            value = int(value)
            if not -(1 << 63) <= value < (1 << 63):
                raise AotError(f"plan field {leaf['path']} does not fit in int64")
        elif kind == "float":
            if not isinstance(value, (float, np.floating)):
                raise AotError(f"plan field {leaf['path']} is not a float")
            value = float(value)
        else:
            raise AotError(f"unknown leaf kind {kind!r}")
        out.append(value)
    return tuple(out)


def handle_layout(description: dict) -> tuple[list[int], int]:
    """Where each leaf of ``description`` starts in a plan handle (:func:`plan_handle`), and its length:
    an array takes its address and then its shape, a scalar one slot."""
    starts = []
    size = 0
    for leaf in description["leaves"]:
        starts.append(size)
        size += 1 + leaf["ndim"] if leaf["kind"] == "array" else 1
    return starts, size


def plan_handle(plan, description: dict) -> np.ndarray:
    """``plan``'s leaves as one int64 array (see :func:`handle_layout`): what the compiled module
    takes instead of one argument per leaf, whose conversion cost about 70 ns each (2.3 us a call
    for the 26 leaves). Checked like :func:`flatten`; the handle holds addresses, so whoever
    passes it must keep ``plan`` alive (the entry points keep it with the handle)."""
    return handle_of(flatten(plan, description), description["leaves"], "plan field")


def handle_of(values, leaves: list[dict], what: str) -> np.ndarray:
    """``values`` (checked against ``leaves``) as one read-only int64 array laid out by
    :func:`handle_layout`: each array's address and shape, each int's or bool's value."""
    starts, size = handle_layout({"leaves": leaves})
    handle = np.zeros(max(size, 1), dtype=np.int64)
    for i, (leaf, start, value) in enumerate(zip(leaves, starts, values)):
        if leaf["kind"] == "array":
            handle[start] = value.ctypes.data
            handle[start + 1:start + 1 + value.ndim] = value.shape
        elif leaf["kind"] in ("int", "bool"):
            handle[start] = int(value)
        else:
            raise AotError(f"{what} {leaf.get('path', i)} ({leaf['kind']}) cannot be passed in a handle")
    handle.flags.writeable = False
    return handle


def _at(record, path: str):
    for part in path.split(".") if path else ():
        record = getattr(record, part)
    return record


# ----------------------------------------------------------------------------- calling the module
class AotModule:
    """A loaded ahead-of-time module and what it was compiled for."""

    def __init__(self, module, manifest: dict, directory: Path, id_lists=None) -> None:
        self.module = module
        self.manifest = manifest
        self.directory = directory
        #: the ``_bpebench_ids`` helper module (``id_list``, ``id_lists``)
        self.id_lists = id_lists

    def entry_points(self, plan):
        """``(encode_utf8, encode_utf8_batch, encode_pieces)`` bound to ``plan``, called like the numba
        kernels: ``encode_utf8(plan, data, out, cache)``,
        ``encode_utf8_batch(plan, data, text_offsets, out, out_offsets, cache)``,
        ``encode_pieces(plan, data, piece_ends, out, cache)``.

        The plan's leaves are checked once (and again if another plan is passed), the
        other arrays on every call (about 0.2 us). Raises AotError if the plan does not
        match the compiled types."""
        description = self.manifest["plan"]
        handle = plan_handle(plan, description)
        return (_encode_entry(self.module.encode_utf8, description, plan, handle, self.module.encode_bytes),
                _batch_entry(self.module.encode_utf8_batch, description, plan, handle),
                _pieces_entry(self.module.encode_pieces, description, plan, handle))


_U8, _I32, _I64 = np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64)


def _binder(function, description: dict, plan, handle=None) -> list:
    """``[plan, function with the plan's checked handle bound, handle]``; ``rebind`` replaces them. The
    state keeps the plan alive while its handle (which holds the addresses of its arrays) is bound.
    ``handle``: ``plan``'s, when already made (the three entry points of one plan share it)."""
    state = [None, None, None]

    def rebind(new_plan, handle=None):
        if handle is None:
            handle = plan_handle(new_plan, description)
        state[1] = functools.partial(function, handle)
        state[0], state[2] = new_plan, handle
        return state[1]

    rebind(plan, handle)
    return state, rebind


def _encode_entry(function, description: dict, plan, handle=None, bytes_function=None):
    state, rebind = _binder(function, description, plan, handle)

    def encode_utf8(plan, data, out, cache):
        bound = state[1] if plan is state[0] else rebind(plan)
        # the common case in a few attribute reads (a non-array has no dtype identical to these)
        if (data.dtype is not _U8 or out.dtype is not _I32 or data.ndim != 1 or out.ndim != 1
                or len(out) < len(data) or not data.flags.c_contiguous or not _writable_contiguous(out.flags)):
            _check_vector("data", data, _U8, 0)
            _check_vector("out", out, _I32, len(data), writable=True)
        if cache is not _last_cache[0]:
            _check_cache(cache)
        return bound(data, out, cache)

    # for callers whose arrays are right by construction (``FusedPipeline.encode_list``): ``plan``'s
    # kernel without the checks; ``unchecked_bytes(state, text)`` takes the text as a ``bytes``
    # object and the thread's buffers in a state made by ``bytes_state(out, cache, work)`` (``out``
    # at least as long as the text, ``work`` the thread's int64 scratch:
    # ``fast_pipeline.encode_utf8_reusing``)
    encode_utf8.unchecked = state[1]
    encode_utf8.unchecked_bytes = bytes_function
    encode_utf8.bytes_state = None if bytes_function is None else functools.partial(call_state, state[2])
    return encode_utf8


#: words in a row of the piece cache (``fast_pipeline.CACHE_ROW``, checked here without importing it)
CACHE_ROW_WORDS = 8


def call_state(handle: np.ndarray, out: np.ndarray, cache: np.ndarray, work: np.ndarray) -> np.ndarray:
    """What the module's ``encode_bytes`` takes besides the text: ``handle`` (a plan's), then the
    address and length of ``out`` (int32 ids, at least as long as the text), of ``cache`` (a piece
    cache, in rows) and of ``work`` (the thread's int64 scratch), checked here once: one array
    argument where four cost about 0.3 us a call to convert (a third of the kernel's call on a
    word). The caller keeps the four arrays alive while the state is used."""
    _check_vector("out", out, _I32, 0, writable=True)
    _check_vector("work", work, _I64, 0, writable=True)
    _check_cache(cache)
    state = np.empty(len(handle) + 6, dtype=np.int64)
    state[:len(handle)] = handle
    state[len(handle):] = (out.ctypes.data, len(out), cache.ctypes.data, cache.shape[0], work.ctypes.data, len(work))
    state.flags.writeable = False
    return state


def _batch_entry(function, description: dict, plan, handle=None):
    state, rebind = _binder(function, description, plan, handle)

    def encode_utf8_batch(plan, data, text_offsets, out, out_offsets, cache):
        bound = state[1] if plan is state[0] else rebind(plan)
        _check_vector("data", data, _U8, 0)
        _check_vector("out", out, _I32, len(data), writable=True)
        _check_vector("text_offsets", text_offsets, _I64, 1)
        _check_vector("out_offsets", out_offsets, _I64, len(text_offsets), writable=True)
        if not 0 <= text_offsets[0] <= text_offsets[-1] <= len(data):
            raise ValueError("text_offsets run outside data")
        if cache is not _last_cache[0]:
            _check_cache(cache)
        return bound(data, text_offsets, out, out_offsets, cache)

    return encode_utf8_batch


def _pieces_entry(function, description: dict, plan, handle=None):
    state, rebind = _binder(function, description, plan, handle)

    def encode_pieces(plan, data, piece_ends, out, cache):
        bound = state[1] if plan is state[0] else rebind(plan)
        _check_vector("data", data, _U8, 0)
        _check_vector("out", out, _I32, len(data), writable=True)
        _check_vector("piece_ends", piece_ends, _I64, 0, writable=True)
        if len(piece_ends) and (piece_ends[-1] != len(data) or (len(piece_ends) > 1 and (piece_ends[1:] <= piece_ends[:-1]).any())
                                or piece_ends[0] <= 0):
            raise ValueError("piece_ends must increase from above 0 to len(data)")
        if cache is not _last_cache[0]:
            _check_cache(cache)
        return bound(data, piece_ends, out, cache)

    # for piece ends that are right by construction (a generated matcher's, ``FusedPipeline``):
    # ``plan``'s kernel without the checks (numpy's test of increasing ends alone costs microseconds)
    encode_pieces.unchecked = state[1]
    return encode_pieces


#: the last piece cache that passed ``_check_cache`` (its shape and flags cannot change afterwards)
_last_cache: list = [None]


def _check_cache(cache) -> None:
    """A piece cache is int64[slots + 1, 8], C-contiguous, writable, ``slots`` 0 or a power of two, and
    an array of its own: one that owns its memory, or a view that spans all of its owner but the few
    words ``fast_pipeline.new_piece_cache`` skips to put the rows on cache lines."""
    if not (isinstance(cache, np.ndarray) and cache.dtype == _I64 and cache.ndim == 2 and cache.shape[1] == CACHE_ROW_WORDS
            and cache.shape[0] >= 1 and cache.flags.c_contiguous and cache.flags.aligned and cache.flags.writeable
            and (cache.flags.owndata or (isinstance(cache.base, np.ndarray) and cache.base.flags.owndata
                                         and cache.base.nbytes - cache.nbytes <= 64))):
        raise TypeError("cache must be a writable C-contiguous int64[slots + 1, 8] array of its own")
    slots = cache.shape[0] - 1
    if slots & (slots - 1):
        raise ValueError(f"cache slots must be 0 or a power of two, not {slots}")
    _last_cache[0] = cache


def _writable_contiguous(flags) -> bool:
    return flags.c_contiguous and flags.writeable


def _check_vector(name: str, a, dtype, min_len: int, *, writable: bool = False) -> None:
    """Refuse what the compiled module would misread: pycc does not check its arguments."""
    if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == 1 and a.flags.c_contiguous
            and a.flags.aligned and (a.flags.writeable or not writable)):
        raise TypeError(f"{name} must be a C-contiguous{' writable' if writable else ''} 1-d {dtype} array")
    if len(a) < min_len:
        raise ValueError(f"{name} has {len(a)} slots, needs {min_len}")


# ----------------------------------------------------------------------------- loading
_loaded: dict[Path, AotModule | None] = {}
_warned = False


def _warn_once(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        print(f"bpebench: {message}; using numba's JIT instead (BPEBENCH_AOT=0 silences this)", file=sys.stderr)


def load(plan=None) -> AotModule | None:
    """The ahead-of-time module for the current sources, or None (disabled, or unavailable).

    With ``plan`` (a Plan to take the argument types from) a missing or damaged
    module is built first; without it, only an existing module is loaded. A build
    that fails prints one line on stderr and is not retried in this process."""
    if not enabled():
        return None
    try:
        target = module_dir()
    except Exception as exc:  # noqa: BLE001 - e.g. no home directory: no ahead-of-time module
        _warn_once(f"no place for the ahead-of-time module ({type(exc).__name__}: {exc})")
        return None
    if target in _loaded:
        return _loaded[target]
    found = None
    try:
        found = _load_dir(target)
    except (FileNotFoundError, AotError):
        pass  # missing, or damaged (never loaded): built below, the damaged one replaced under the lock
    if found is None and plan is not None:
        failed_before = _failure(target)
        if failed_before is not None:  # a compiler missing stays missing: do not retry in every process
            _warn_once(f"ahead-of-time compilation failed before ({failed_before}; `bpebench compile` retries)")
        else:
            try:
                build(plan, announce=True)
                found = _load_dir(target)
            except Exception as exc:  # noqa: BLE001 - any failure means: use the JIT
                _warn_once(f"ahead-of-time compilation failed ({_one_line(exc)})")
        _loaded[target] = found
    elif found is not None:
        _loaded[target] = found
    return found


def _failure_path(target: Path) -> Path:
    return target.parent / f"{target.name}.failed"


def _failure(target: Path) -> str | None:
    """Why the last build for ``target`` failed, or None."""
    try:
        return _failure_path(target).read_text().strip() or "unknown reason"
    except OSError:
        return None


def verify_dir(directory: Path, key: str | None = None, version: int = FORMAT_VERSION) -> tuple[dict, Path]:
    """The manifest and module file of ``directory`` if they check out (``key``, by default the fused
    module's, the manifest's format ``version``, the file's size and sha256); FileNotFoundError when
    there is no module, AotError when it is damaged or stale."""
    try:
        manifest = json.loads((directory / "manifest.json").read_bytes())
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise AotError(f"unreadable manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("key") != (build_key() if key is None else key) \
            or manifest.get("format") != version:
        raise AotError("manifest of other sources or versions")
    return manifest, _verified_file(directory, manifest, "module")


def _verified_file(directory: Path, record: dict, what: str) -> Path:
    """``directory / record["file"]`` if its size and sha256 are the recorded ones."""
    from ..cache.digests import file_digest

    path = directory / str(record.get("file", ""))
    try:
        size = path.stat().st_size
        digest = file_digest(path)  # remembered by stat, as git's index does: no re-read per process
    except OSError as exc:
        raise AotError(f"{what} file unreadable: {exc}") from None
    if size != record.get("size") or digest != record.get("sha256"):
        raise AotError(f"{what} file damaged (size or sha256 differ)")
    return path


def _load_dir(directory: Path) -> AotModule:
    """Check and load the module and its helper in ``directory`` (see :func:`verify_dir`): two
    modules of one shared object."""
    manifest, so = verify_dir(directory)
    module = _import_file(MODULE_NAME, so, ("encode_utf8", "encode_utf8_batch"))
    id_lists = _import_file(ID_LISTS_MODULE, so, ("id_list", "id_lists", "utf8_span", "utf8_texts", "move_items"))
    return AotModule(module, manifest, directory, id_lists)


def _import_file(name: str, path: Path, functions: tuple[str, ...]):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AotError(f"cannot load {path}")
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise AotError(f"cannot load {path}: {exc}") from None
    if not all(hasattr(module, function) for function in functions):
        raise AotError(f"{path.name} lacks {', '.join(functions)}")
    return module


def _one_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[-1].strip() if lines else ""
    return text if isinstance(exc, AotError) and text else f"{type(exc).__name__}: {text}".rstrip(": ")


def _discard(directory: Path) -> None:
    """Remove ``directory`` (renamed away first, so no reader sees half of it)."""
    import shutil
    import tempfile

    if not directory.exists():
        return
    try:
        trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=directory.parent))
        os.rename(directory, trash / "x")
    except OSError:
        trash = directory
    shutil.rmtree(trash, ignore_errors=True)


# ----------------------------------------------------------------------------- building
def build(plan, *, force: bool = False, verbose: bool = False, announce: bool = False) -> Path:
    """Build the module for the current sources into :func:`module_dir` and return that directory.

    ``plan`` gives the argument types (any Plan: only dtypes, dimensions and scalar
    kinds matter). An existing valid module is kept unless ``force``. Raises
    AotError (with the child's last error line) when the build fails. ``announce`` prints
    one line on stderr when a build starts and one when it ends (a first use is otherwise
    silent for minutes: 3-5 on a 2-core machine)."""
    target = module_dir()
    description = describe(plan)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _BuildLock(target.parent / f"{target.name}.lock"):
        if not force:
            try:
                verify_dir(target)
                return target  # built by another process while this one waited for the lock
            except (FileNotFoundError, AotError):
                pass
        _clean_leftovers(target.parent)
        start = time.perf_counter()
        if announce:
            print("bpebench: compiling the fused pipeline ahead of time (once per installation, one to five"
                  " minutes)...", file=sys.stderr, flush=True)
        try:
            _build_into(target, description, verbose=verbose)
            if announce:
                print(f"bpebench: compiled in {time.perf_counter() - start:.0f} s into {target}", file=sys.stderr,
                      flush=True)
        except Exception as exc:
            try:  # remembered, so that later processes do not spend the time again (bpebench compile retries)
                _failure_path(target).write_text(_one_line(exc) + "\n")
            except OSError:
                pass
            raise
        try:
            _failure_path(target).unlink()
        except OSError:
            pass
    _remove_old(target)
    return target


def _build_into(target: Path, description: dict, *, verbose: bool) -> None:
    """Run the build process in a temporary directory and rename it to ``target``."""
    run_build(target, {"plan.json": json.dumps(description)}, "main", build_key(), verbose=verbose)


def run_build(target: Path, inputs: dict[str, str], entry: str, key: str, *, verbose: bool) -> None:
    """Run ``aot_build.<entry>`` in a child process on a temporary directory holding the files
    ``inputs`` (name -> text), check that the manifest it writes there has ``key``, and rename the
    directory to ``target``. The child gets an empty ``NUMBA_CACHE_DIR``: what it compiles comes
    from the current sources, never from stale numba cache entries. AotError with the child's last
    error line when it fails."""
    import shutil
    import subprocess
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix=f".build-{target.name}-", dir=target.parent))
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is shareable
        for name, text in inputs.items():
            (tmp / name).write_text(text)
        env = dict(os.environ, BPEBENCH_AOT="0", NUMBA_CACHE_DIR=str(tmp / "numba-cache"))
        env.pop("NUMBA_DISABLE_JIT", None)
        script = f"import sys; from {__package__}.aot_build import {entry}; sys.exit({entry}(sys.argv[1:]))"
        done = subprocess.run([sys.executable, "-c", script, str(tmp), str(Path(__file__).resolve())],
                              cwd=str(tmp), env=env, timeout=_BUILD_TIMEOUT,
                              stdout=None if verbose else subprocess.PIPE,
                              stderr=None if verbose else subprocess.PIPE, text=True)
        if done.returncode != 0:
            lines = [line for line in (done.stderr or "").splitlines() if line.strip()]
            raise AotError(lines[-1] if lines else f"the build process exited with code {done.returncode}")
        shutil.rmtree(tmp / "numba-cache", ignore_errors=True)
        for name in inputs:
            (tmp / name).unlink()
        manifest = json.loads((tmp / "manifest.json").read_bytes())
        if manifest.get("key") != key:
            raise AotError("the build process saw other sources (is another copy of bpebench on the path?)")
        _discard(target)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class _BuildLock:
    """An exclusive ``flock`` on ``path`` (a no-op where ``fcntl`` is missing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = None

    def __enter__(self):
        try:
            import fcntl
        except ImportError:
            return self
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock
            self.fd = None


def _clean_leftovers(aot_root: Path) -> None:
    """Remove temporary directories of builds that were killed (older than a day)."""
    import shutil

    now = time.time()
    for path in list(aot_root.glob(".build-*")) + list(aot_root.glob(".trash-*")):
        try:
            if now - path.stat().st_mtime > 86400:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def _remove_old(keep: Path, prefix: str = "fused-", count: int = _KEEP) -> None:
    """Keep the newest ``count`` builds named ``prefix...`` (other checkouts or versions may still use them)."""
    builds = []
    for path in keep.parent.glob(f"{prefix}*"):
        if path.is_dir() and path != keep:
            try:
                builds.append((path.stat().st_mtime, path))
            except OSError:
                pass
    for _, path in sorted(builds, reverse=True)[count - 1:]:
        _discard(path)
        try:
            (path.parent / f"{path.name}.lock").unlink()
        except OSError:
            pass


def _file_record(path: Path) -> dict:
    payload = path.read_bytes()
    return {"file": path.name, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}


# ----------------------------------------------------------------------------- the fused pipeline's hook
def entry_points(plan):
    """``(encode_utf8, encode_utf8_batch)`` of the ahead-of-time module bound to ``plan``, or None
    (disabled, unavailable, or the plan does not match the compiled types: then the JIT is used)."""
    module = load(plan)
    if module is None:
        return None
    try:
        return module.entry_points(plan)
    except AotError as exc:
        _warn_once(f"the ahead-of-time module does not fit this vocabulary's tables ({exc})")
        return None


def id_lists():
    """The loaded ``_bpebench_ids`` helper module (``id_list``, ``id_lists``), or None."""
    module = load()
    return None if module is None else module.id_lists
