"""A regex list's generated splitter compiled ahead of time: a fresh process splits without numba.

:mod:`.llama_cpp_program` writes a numba module for each regex list it compiles (an HF
``tokenizer.json`` whose pre-tokenizer is several ``Split`` steps, such as DeepSeek-V3's and V4's;
llama.cpp's pre-tokenizer types without a hand-written twin). Through numba, a fresh process pays
``import numba`` and the load of the module's machine code from numba's cache before its first
split: about 1 s of DeepSeek-V4's 1.2-1.5 s to a ready Tokenizer, where the fused pipeline itself
comes from the ahead-of-time module of :mod:`.aot` and needs numpy only. Here the generated
module's ``split_utf8`` is compiled with ``numba.pycc`` into an extension module of its own, once
per list and installation, and loaded with numpy only.

Calling: the one export, ``split(handle, data, ends, scratch32, scratch64, kinds) -> count``, takes
the list's tables and transducer arguments as one int64 *handle* (each array's address and shape,
each int's value: :func:`.aot.handle_layout`), made and checked once per splitter (dtype,
dimensions, contiguity, alignment: pycc's conversion checks nothing); the bound call
(:class:`BoundSplit`) keeps those arrays alive and checks the text and the working arrays on every
call. The export releases the GIL, as the numba function does (``nogil``).

Where: ``$BPEBENCH_CACHE/aot/list-<key>/`` with a ``manifest.json``; the module file's size and
sha256 are checked before it is loaded (a damaged one is removed and built again, never loaded).
The key hashes the generated source, the arguments' types, the sources the generated code calls
into (:data:`LIST_SOURCES`) and everything in the fused module's key (its kernel sources, the numba,
llvmlite, numpy and Python versions, the platform and the CPU).

When: the first splitter of a list whose module is missing starts its build in a detached
background process (one line on stderr) and splits through numba meanwhile: the build (in a child
process, :func:`.aot_build.list_main`, with an empty ``NUMBA_CACHE_DIR``, under a lock) takes 30-45 s
on a 2-core machine where numba's JIT compiles the generated module in 5-10 s, so the first process
is not held up; the processes after it load the module. ``bpebench compile --vocab NAME`` builds it
and waits (:data:`WAIT_FOR_BUILDS`). A build that fails is remembered (``list-<key>.failed``: later
processes do not spend the time again, and say so in one line); numba keeps splitting. Builds beyond
the newest :data:`KEEP` are removed. ``BPEBENCH_AOT=0`` (and ``NUMBA_DISABLE_JIT=1``)
turn it off, as for the fused module.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import aot
from .aot import AotError

#: the files (relative to the ``algorithms`` tree) whose numba code a generated list module calls or
#: whose generator writes it, besides those of the fused module's key
LIST_SOURCES = ("pipeline/llama_cpp_program.py", "pipeline/pretokenize_transducer.py",
                "pipeline/pattern_program.py", "pipeline/pretokenize_program.py", "pipeline/aot_lists.py")
FORMAT_VERSION = 1
#: the build's input in its temporary directory
SPEC_FILE = "list.json"
#: list modules kept (one per regex list used with this installation's sources)
KEEP = 16

_U8, _I32, _I64 = np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64)


def describe(arguments: tuple) -> list[dict]:
    """The type of each of a list's fixed arguments: ``{"kind": "array", "dtype": "<u2", "ndim": 1}``
    or ``{"kind": "int"}``. AotError for anything else."""
    leaves = []
    for i, value in enumerate(arguments):
        if isinstance(value, np.ndarray):
            leaves.append({"kind": "array", "dtype": value.dtype.str, "ndim": value.ndim})
        elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            leaves.append({"kind": "int"})
        else:
            raise AotError(f"list argument {i} of type {type(value).__name__} cannot be passed")
    return leaves


def list_key(source: str, leaves: list[dict], before: int) -> str:
    """sha256 of everything a list's compiled module depends on (see the module docstring)."""
    from ..cache.digests import file_digests
    from ..kernels.jit import ALGORITHMS_ROOT

    names = sorted(LIST_SOURCES)
    digests = file_digests([str(Path(ALGORITHMS_ROOT) / name) for name in names])
    parts = {"format": FORMAT_VERSION, "fused": aot.build_key(), "sources": dict(zip(names, digests)),
             "source": hashlib.sha256(source.encode()).hexdigest(), "leaves": leaves, "before": before}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def handle(arguments: tuple, leaves: list[dict]) -> np.ndarray:
    """The fixed arguments as one read-only int64 array (:func:`.aot.handle_layout`), each checked
    against ``leaves``. It holds addresses: whoever passes it keeps ``arguments`` alive."""
    if len(arguments) != len(leaves):
        raise AotError(f"{len(arguments)} list arguments where the module takes {len(leaves)}")
    for i, (value, leaf) in enumerate(zip(arguments, leaves)):
        if leaf["kind"] == "array":
            if not (isinstance(value, np.ndarray) and value.dtype.str == leaf["dtype"] and value.ndim == leaf["ndim"]
                    and value.flags.c_contiguous and value.flags.aligned):
                raise AotError(f"list argument {i} is not a C-contiguous {leaf['dtype']}[{leaf['ndim']}d]")
        elif isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                or not -(1 << 63) <= int(value) < (1 << 63):
            raise AotError(f"list argument {i} is not an int64")
    return aot.handle_of(arguments, leaves, "list argument")


class BoundSplit:
    """``split(data, ends, scratch32, scratch64, kinds) -> count`` of a list's compiled module with
    its fixed arguments bound: the generated ``split_utf8(data, *before, ends, scratch32, scratch64,
    kinds, *after)``. The working arrays are checked against the text's length as
    ``ListSplitter._scratch_for`` sizes them (the module does not check its writes)."""

    def __init__(self, function, arguments: tuple, before: int, handle: np.ndarray, directory: Path) -> None:
        self._function = function
        self.arguments = arguments  # the handle holds their addresses
        self.before = before  # how many of them come before the working arrays
        self._handle = handle
        self.directory = directory
        self._checked = None  # the working arrays last checked

    def __call__(self, data, ends, scratch32, scratch64, kinds) -> int:
        n = len(data)
        if not (data.dtype is _U8 and data.ndim == 1 and data.flags.c_contiguous):
            _check(data, _U8, 0, False)
        flags = ends.flags
        if not (ends.dtype is _I64 and ends.ndim == 1 and len(ends) > n and flags.c_contiguous and flags.writeable
                and flags.aligned):
            _check(ends, _I64, n + 1, True)
        checked = self._checked  # one attribute, read and written whole: threads share the splitter
        if (checked is None or scratch32 is not checked[0] or scratch64 is not checked[1] or kinds is not checked[2]
                or len(kinds) < n):  # a thread's working arrays are checked once, then known by identity
            _check(scratch32, _I32, 3 * n + 2, True)
            _check(scratch64, _I64, 2 * n + 2, True)
            _check(kinds, _U8, n, True)
            if len(scratch32) != 3 * len(kinds) + 2 or len(scratch64) != 2 * len(kinds) + 2:
                raise ValueError("the working arrays are not one set made for one length")
            self._checked = (scratch32, scratch64, kinds)
        return self._function(self._handle, data, ends, scratch32, scratch64, kinds)


def _check(a, dtype, min_len: int, writable: bool) -> None:
    if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == 1 and a.flags.c_contiguous
            and a.flags.aligned and (a.flags.writeable or not writable)) or len(a) < min_len:
        raise TypeError(f"the compiled split takes a C-contiguous 1-d {dtype} array of at least {min_len}")


_loaded: dict[Path, object] = {}


#: whether a missing module is built before the splitter is made (``bpebench compile --vocab`` sets it),
#: rather than in the background while numba splits
WAIT_FOR_BUILDS = False


def split_call(source: str, before: tuple, after: tuple, *, wait: bool | None = None) -> BoundSplit | None:
    """The compiled split of the generated list module ``source`` (what :mod:`.llama_cpp_program`
    writes) with its tables ``before`` the text's working arrays and its transducer arguments
    ``after`` them bound; None when ahead-of-time modules are off, when the module is being built
    (a missing one is built in the background unless ``wait``) or cannot be had (one line on
    stderr): the caller uses numba."""
    if not aot.enabled():
        return None
    arguments = (*before, *after)
    try:
        leaves = describe(arguments)
        key = list_key(source, leaves, len(before))
        target = aot.cache_root() / "aot" / f"list-{key[:32]}"
        module = _loaded.get(target)
        if module is None:
            module = _load_or_build(target, key, source, leaves, len(before),
                                    WAIT_FOR_BUILDS if wait is None else wait)
            if module is None:
                return None
            _loaded[target] = module
        return BoundSplit(module.split, arguments, len(before), handle(arguments, leaves), target)
    except Exception as exc:  # noqa: BLE001 - any failure means: use the JIT
        aot._warn_once(f"the regex list's splitter cannot be compiled ahead of time ({aot._one_line(exc)})")
        return None


def _load_or_build(target: Path, key: str, source: str, leaves: list[dict], before: int, wait: bool):
    """The loaded module in ``target``; when it is missing (or damaged: never loaded), built first if
    ``wait``, else None with a build started in the background."""
    try:
        return _load_dir(target, key)
    except (FileNotFoundError, AotError):
        pass  # missing, or damaged: built below, the damaged one replaced under the lock
    failed_before = aot._failure(target)
    if failed_before is not None and not wait:  # a compiler missing stays missing: not retried in every process
        raise AotError(f"its build failed before ({failed_before}; `bpebench compile --vocab` retries)")
    if not wait:
        _start_background(target, {"target": target.name, "key": key, "source": source, "leaves": leaves,
                                   "before": before})
        return None
    build(target, key, source, leaves, before)
    return _load_dir(target, key)


#: the list modules whose build this process started
_started: set[Path] = set()


def _start_background(target: Path, spec: dict) -> None:
    """Start a detached process that builds the module into ``target`` (:func:`background_main`), once
    per process and not while another build of it holds the lock; one line on stderr says so. The
    build takes about a minute where numba's JIT compiles the generated module in 5-10 s: the first
    process splits through numba meanwhile, the later ones load the module."""
    if target in _started:
        return
    _started.add(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if _build_running(target):
        return
    fd, name = tempfile.mkstemp(prefix=f".spec-{target.name}-", suffix=".json", dir=target.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(spec, f)
    _spawn([sys.executable, "-c", f"import sys; from {__name__} import background_main; background_main(sys.argv[1])",
            name])
    print("bpebench: compiling a regex list's splitter ahead of time in the background (about a minute, once per"
          " list; numba splits meanwhile)", file=sys.stderr, flush=True)


def _build_running(target: Path) -> bool:
    """Whether another process holds the build lock of ``target`` now."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(target.parent / f"{target.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # releases the lock if it was taken
    return False


def _spawn(command: list[str]) -> None:
    """Run ``command`` detached: its own session, no terminal, nothing inherited on stdin and stdout."""
    import subprocess

    subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)


def background_main(spec_path: str) -> None:
    """The background build (:func:`_start_background`): the module of the list in ``spec_path``, which
    is removed. A failure is remembered by :func:`build` (then numba keeps splitting)."""
    if hasattr(os, "sched_setaffinity"):  # not the one CPU a benchmark pinned its parent to
        try:
            os.sched_setaffinity(0, range(os.cpu_count() or 1))
        except OSError:
            pass
    path = Path(spec_path)
    try:
        spec = json.loads(path.read_text())
    finally:
        path.unlink(missing_ok=True)
    target = path.parent / spec["target"]
    try:
        build(target, spec["key"], spec["source"], spec["leaves"], spec["before"], announce=False)
    except Exception:  # noqa: BLE001 - remembered in the .failed file; nobody reads this process's output
        pass


def build(target: Path, key: str, source: str, leaves: list[dict], before: int, *, announce: bool = True) -> None:
    """Build the list module into ``target`` (unless another process did meanwhile), with one line on
    stderr when it starts and one when it ends (``announce``); a failure is remembered."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with aot._BuildLock(target.parent / f"{target.name}.lock"):
        try:
            _verify_dir(target, key)
            return  # built by another process while this one waited for the lock
        except (FileNotFoundError, AotError):
            pass
        aot._clean_leftovers(target.parent)
        start = time.perf_counter()
        if announce:
            print("bpebench: compiling a regex list's splitter ahead of time (once per list, about a minute)...",
                  file=sys.stderr, flush=True)
        spec = {"module": f"_bpebench_list_{key[:16]}", "source": source, "leaves": leaves, "before": before}
        try:
            aot.run_build(target, {SPEC_FILE: json.dumps(spec)}, "list_main", key, verbose=False)
        except Exception as exc:
            try:
                aot._failure_path(target).write_text(aot._one_line(exc) + "\n")
            except OSError:
                pass
            raise
        if announce:
            print(f"bpebench: compiled in {time.perf_counter() - start:.0f} s into {target}", file=sys.stderr,
                  flush=True)
        try:
            aot._failure_path(target).unlink()
        except OSError:
            pass
    aot._remove_old(target, "list-", KEEP)


def _verify_dir(directory: Path, key: str) -> tuple[dict, Path]:
    """:func:`.aot.verify_dir` for a list's module: FileNotFoundError when there is none, AotError when it
    is damaged or stale."""
    return aot.verify_dir(directory, key, FORMAT_VERSION)


def _load_dir(directory: Path, key: str):
    manifest, so = _verify_dir(directory, key)
    return aot._import_file(str(manifest.get("module")), so, ("split",))

