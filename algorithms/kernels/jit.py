"""A lazy ``njit``: numba is imported when compiled code is first needed, not at import.

Every module of ``bpebench.algorithms`` decorates its kernels with this ``njit``
(same call forms as numba's: ``@njit``, ``@njit(cache=True)``,
``@njit(cache=True, inline="always")``). Importing those modules then costs no
``import numba`` (about 250 ms), so a process that encodes through the fused
pipeline's ahead-of-time compiled module (:mod:`bpebench.algorithms.pipeline.aot`)
never loads numba.

How: ``njit`` records the Python function and its options and returns a
:class:`LazyDispatcher` proxy. The first time any proxy is called, or one of its
numba attributes is read (``overloads``, ``py_func``, ``signatures``, ``_cache``,
anything not a dunder), :func:`materialise`:

1. imports numba and makes the real dispatcher of *every* recorded function;
2. rebinds every module global that holds a proxy (in all loaded modules, so names
   imported with ``from .x import f`` too) to its dispatcher: numba types a
   caller's globals when it compiles it, and must find real dispatchers there;
3. runs the hooks registered with :func:`on_materialise`.

Every cached dispatcher of this package is stamped with the contents of all its
kernel modules (:func:`_stamped`), so numba's disk cache never serves code compiled
from an older version of a callee in another module.

Afterwards ``njit`` returns real dispatchers directly, and proxies still held
somewhere keep forwarding calls and attributes. ``NUMBA_DISABLE_JIT=1`` works as
before: numba's ``njit`` then returns the plain function, and so do the proxies.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Callable

__all__ = ["njit", "intrinsic", "on_materialise", "materialise", "materialised", "LazyDispatcher",
           "LazyIntrinsic"]

_lock = threading.RLock()
_pending: list["LazyDispatcher"] = []
_pending_intrinsics: list["LazyIntrinsic"] = []
_hooks: list[Callable[[], None]] = []
_numba_njit = None  # numba.njit once materialised


class LazyDispatcher:
    """Stands for ``numba.njit(**options)(py_func)`` until numba is needed (see the module docstring)."""

    def __init__(self, py_func, options: dict) -> None:
        functools.update_wrapper(self, py_func)
        self._lazy_py_func = py_func
        self._lazy_options = options
        self._lazy_dispatcher = None

    def _lazy_real(self):
        real = self._lazy_dispatcher
        if real is None:
            materialise()
            real = self._lazy_dispatcher
        return real

    def __call__(self, *args, **kwargs):
        real = self._lazy_dispatcher
        if real is None:
            real = self._lazy_real()
        return real(*args, **kwargs)

    def __getattr__(self, name: str):
        # only called for attributes this object lacks: numba's (py_func, overloads, _cache, ...)
        if (name.startswith("__") and name.endswith("__")) or name.startswith("_lazy_"):
            raise AttributeError(name)  # e.g. probes by copy/pickle/inspect, or a half-made proxy
        return getattr(self._lazy_real(), name)

    def __reduce__(self):
        # pickled by reference, like a function: the module attribute is the proxy or its dispatcher
        return _by_name, (self.__module__, self.__qualname__)

    def __repr__(self) -> str:
        state = "pending" if self._lazy_dispatcher is None else repr(self._lazy_dispatcher)
        return f"<lazy njit {self.__module__}.{self.__qualname__}: {state}>"


class LazyIntrinsic:
    """Stands for ``numba.extending.intrinsic(definition)`` until numba is needed; called from plain
    Python (never compiled, or ``NUMBA_DISABLE_JIT=1``) it runs ``python_impl``, which must compute
    what the generated code computes."""

    def __init__(self, definition, python_impl) -> None:
        functools.update_wrapper(self, python_impl)
        self._lazy_definition = definition
        self._lazy_python_impl = python_impl

    def __call__(self, *args):
        return self._lazy_python_impl(*args)

    def _lazy_make(self, numba):
        if numba.config.DISABLE_JIT:
            return self._lazy_python_impl
        from numba.extending import intrinsic as make_intrinsic

        return make_intrinsic(self._lazy_definition)


def intrinsic(python_impl):
    """Declare a numba intrinsic (LLVM IR written by hand) with its plain-Python meaning:

        @intrinsic(python_version)
        def name(typingctx, *argument_types): ...   # numba.extending.intrinsic's signature

    Like :func:`njit`, numba is imported only when compiled code is first needed."""

    def declare(definition):
        with _lock:
            if _numba_njit is not None:
                import numba

                return LazyIntrinsic(definition, python_impl)._lazy_make(numba)
            proxy = LazyIntrinsic(definition, python_impl)
            _pending_intrinsics.append(proxy)
            return proxy

    return declare


def _by_name(module: str, qualname: str):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def njit(*args, **options):
    """``numba.njit``, deferred until the first call (see the module docstring)."""
    if args and callable(args[0]) and not options and len(args) == 1:
        return _wrap(args[0], {})
    if args:  # explicit signatures compile eagerly in numba: no point deferring
        import numba

        return numba.njit(*args, **options)
    return lambda func: _wrap(func, options)


def _wrap(func, options: dict):
    with _lock:
        if _numba_njit is not None:
            return _stamped(_numba_njit(**options)(func) if options else _numba_njit(func))
        proxy = LazyDispatcher(func, options)
        _pending.append(proxy)
        return proxy


# ----------------------------------------------------------------------------- cache freshness
#: the ``algorithms`` tree: every module under it that imports this ``njit`` is a kernel module
ALGORITHMS_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_kernel_digest: str | None = None


def kernel_modules() -> list[str]:
    """Paths (relative to :data:`ALGORITHMS_ROOT`, ``/``-separated, sorted) of the modules
    that compile numba code: those importing ``njit`` from this module."""
    from pathlib import Path

    root = Path(ALGORITHMS_ROOT)
    found = []
    for path in root.rglob("*.py"):
        try:
            text = path.read_bytes()
        except OSError:
            continue
        if b"jit import njit" in text:
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _kernel_sources_digest() -> str:
    """sha256 of every kernel module's name and contents."""
    global _kernel_digest
    if _kernel_digest is None:
        import hashlib
        from pathlib import Path

        digest = hashlib.sha256()
        for name in kernel_modules():
            try:
                digest.update(name.encode() + b"\0" + (Path(ALGORITHMS_ROOT) / name).read_bytes())
            except OSError:
                continue
        _kernel_digest = digest.hexdigest()
    return _kernel_digest


def _stamped(dispatcher):
    """Make numba's on-disk cache of ``dispatcher`` stale when any kernel module changes, and
    shared by every copy of the same sources.

    numba stamps a cached function with its own file only, yet callees from other
    modules are compiled into it: after an edit of ``matching.py`` the cached
    ``backtrack_piece`` kept the old code (it once gave misleading timings). The stamp
    is extended with the contents of every kernel module of this package, so an edit
    anywhere recompiles every cached kernel once.

    numba keeps its cache beside the sources (``__pycache__``) and stamps it with the
    file's modification time, so a fresh checkout or a new virtualenv of the same code
    compiled everything again (minutes of the test suite). Unless ``NUMBA_CACHE_DIR``
    chooses numba's own layout, the cache lives in :func:`kernel_cache_dir` instead,
    one directory per state of the sources, stamped with their contents alone.

    This touches numba internals (``Dispatcher._cache._cache_file``, numba 0.5x-0.6x);
    where they differ, nothing changes. Functions from outside this package are left
    alone."""
    module = sys.modules.get(getattr(getattr(dispatcher, "py_func", None), "__module__", "") or "")
    source = getattr(module, "__file__", None)
    if not source:
        return dispatcher
    inside = os.path.realpath(source).startswith(ALGORITHMS_ROOT + os.sep)
    if not inside and not module.__name__.startswith("bpebench."):
        return dispatcher
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    stamp = getattr(cache_file, "_source_stamp", None)
    if stamp is None:
        return dispatcher
    directory = None if os.environ.get("NUMBA_CACHE_DIR") else kernel_cache_dir()
    if directory is None:
        if inside:
            cache_file._source_stamp = (stamp, _kernel_sources_digest())
    else:
        own = _file_digest(source)
        if own is None:
            return dispatcher
        place = os.path.join(directory, module.__name__)
        cache._cache_path = cache_file._cache_path = place
        cache_file._index_path = os.path.join(place, cache_file._index_name)
        cache_file._source_stamp = (_kernel_sources_digest(), own)
        _save_into(cache_file, place)
    _guard_cache_file(cache_file)
    return dispatcher


@functools.lru_cache(maxsize=None)
def _file_digest(path: str) -> str | None:
    """sha256 of a module's file, read once per process (a module holds dozens of dispatchers)."""
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


#: states of the kernel sources whose compiled code is kept (the newest by use)
KEEP_KERNEL_CACHES = 4
_kernel_dir: list[str | None] = []


def kernel_cache_dir() -> str | None:
    """The directory of this state of the kernel sources in the compiled-kernel cache:
    ``$XDG_CACHE_HOME/bpebench/numba/<digest>`` (else ``~/.cache/...``), or None when it
    cannot be made. ``BPEBENCH_CACHE`` does not move it: the tests point that at empty
    directories, and their subprocesses would compile every kernel again.
    The oldest states beyond :data:`KEEP_KERNEL_CACHES` are removed."""
    if not _kernel_dir:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "bpebench", "numba")
        here = os.path.join(root, _kernel_sources_digest()[:20])
        try:
            os.makedirs(here, exist_ok=True)
            os.utime(here)
        except OSError:
            here = None
        else:
            _prune(root, here)
        _kernel_dir.append(here)
    return _kernel_dir[0]


def _prune(root: str, here: str) -> None:
    import shutil
    import time

    try:
        states = [os.path.join(root, name) for name in os.listdir(root)]
        states.sort(key=os.path.getmtime, reverse=True)
    except OSError:
        return
    for old in states[KEEP_KERNEL_CACHES:]:
        # an hour's grace: a process of another checkout may still be writing there
        try:
            if old != here and time.time() - os.path.getmtime(old) > 3600:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:  # removed meanwhile by another process
            continue


def _save_into(cache_file, place: str) -> None:
    """numba writes into a directory it made when the dispatcher was created; this one is made
    on the first save, and a save that cannot be written is skipped (the code still runs)."""
    save = cache_file.save

    def save_made(key, data):
        try:
            os.makedirs(place, exist_ok=True)
            save(key, data)
        except OSError:
            pass

    cache_file.save = save_made


def guard_disk_cache(dispatcher) -> None:
    """:func:`_guard_cache_file` for a dispatcher made outside this package's ``njit`` (a generated
    module's): a damaged entry of its disk cache is a miss too."""
    _guard_cache_file(getattr(getattr(dispatcher, "_cache", None), "_cache_file", None))


def _guard_cache_file(cache_file) -> None:
    """A damaged entry of numba's disk cache (a truncated ``.nbi`` index or ``.nbc`` data file) is a
    cache miss, not an UnpicklingError on every run: numba recompiles and rewrites it. One line on
    stderr says so. (numba itself only forgives a missing file.)"""
    load_index = getattr(cache_file, "_load_index", None)
    load_data = getattr(cache_file, "_load_data", None)
    if load_index is None or load_data is None or getattr(cache_file, "_bpebench_guarded", False):
        return

    def guarded_index():
        try:
            return load_index()
        except Exception as exc:  # noqa: BLE001 - pickle, EOF, ...: a miss
            _damaged(getattr(cache_file, "_index_path", "?"), exc)
            return {}

    def guarded_data(name):
        try:
            return load_data(name)
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 - numba's load() treats OSError as a miss
            _damaged(cache_file._data_path(name), exc)
            raise OSError(f"damaged numba cache entry {name}") from None

    cache_file._load_index, cache_file._load_data = guarded_index, guarded_data
    cache_file._bpebench_guarded = True


def _damaged(path, exc: Exception) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
    print(f"bpebench: discarded a damaged numba cache file ({type(exc).__name__}): {path}; recompiling",
          file=sys.stderr)


def materialised() -> bool:
    """True once numba is imported and the recorded functions have real dispatchers."""
    return _numba_njit is not None


def on_materialise(hook: Callable[[], None]) -> None:
    """Run ``hook()`` right after the dispatchers are made (at once if they already are)."""
    with _lock:
        if _numba_njit is None:
            _hooks.append(hook)
            return
    hook()


_PROXY_TYPES = (LazyDispatcher, LazyIntrinsic)


def materialise() -> None:
    """Import numba, make every recorded function's dispatcher and rebind module globals to them."""
    global _numba_njit
    with _lock:
        if _numba_njit is not None:
            return
        import numba

        proxies = list(_pending)
        for proxy in proxies:
            options = proxy._lazy_options
            func = proxy._lazy_py_func
            proxy._lazy_dispatcher = _stamped(numba.njit(**options)(func) if options else numba.njit(func))
        real = {id(p): p._lazy_dispatcher for p in proxies}
        # intrinsics first in every namespace: the dispatchers compile later and type their globals then
        real.update((id(p), p._lazy_make(numba)) for p in _pending_intrinsics)
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            try:
                found = [(k, v) for k, v in namespace.items() if type(v) in _PROXY_TYPES]
            except RuntimeError:  # the dict changed size (another thread importing): retry once
                found = [(k, v) for k, v in list(namespace.items()) if type(v) in _PROXY_TYPES]
            for name, proxy in found:
                target = real.get(id(proxy))
                if target is not None:
                    namespace[name] = target
        _pending.clear()
        _pending_intrinsics.clear()
        _numba_njit = numba.njit
        hooks = list(_hooks)
        _hooks.clear()
    for hook in hooks:
        hook()
