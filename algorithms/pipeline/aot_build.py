"""The ahead-of-time build itself: runs in a child process that :mod:`.aot` starts.

It compiles the fused pipeline's entry points into one extension module with
``numba.pycc`` (each wrapped in a generated function that takes the Plan as one int64
handle of addresses, shapes and scalars, see :mod:`.aot`), links ``id_lists.c`` into it (a
second module of the same shared object), and writes the manifest that :mod:`.aot` checks
before it loads anything. A regex list's generated splitter (:mod:`.aot_lists`) is built here
too, into an extension module of its own (:func:`list_main`). Kept apart from the loaders so
that a process that only encodes imports neither this module nor the kernels' sources twice.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from . import aot, fast_pipeline
from .aot import FORMAT_VERSION, ID_LISTS_SOURCE, MODULE_NAME, AotError, _file_record, _one_line


def main(argv: list[str]) -> int:
    """The build process: compile the exported functions into ``argv[0]``, write the manifest.
    Errors end as one line on stderr and exit code 1."""
    return _in_one_line(_child_build, argv)


def _in_one_line(build, argv: list[str]) -> int:
    """``build(out_dir, expected_file)`` from a build process's arguments; an error is one line on
    stderr (the parent shows the last) and exit code 1."""
    try:
        return build(Path(argv[0]), Path(argv[1]))
    except Exception as exc:  # noqa: BLE001 - the parent shows the last line
        print(_one_line(exc), file=sys.stderr)
        return 1


def _child_build(out_dir: Path, expected_file: Path) -> int:
    import warnings

    description = json.loads((out_dir / "plan.json").read_bytes())
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc's pending deprecation
        from numba import types

        cc = _compiler(MODULE_NAME, out_dir, expected_file)
        # the id-list helper compiled and linked with pycc's own C sources (its symbols are static
        # but for its PyInit), so that loading both is one dlopen
        cc._mixin_sources = [*cc._mixin_sources, str(Path(__file__).resolve().parent / ID_LISTS_SOURCE)]

        from ..kernels import jit

        jit.materialise()
        exports = _generate_exports(description, fast_pipeline)
        handle = types.Array(types.int64, 1, "C", readonly=True)
        data = types.Array(types.uint8, 1, "C", readonly=True)
        offsets = types.Array(types.int64, 1, "C", readonly=True)
        ids = types.Array(types.int32, 1, "C")
        out_offsets = types.Array(types.int64, 1, "C")
        cache = types.Array(types.int64, 2, "C")
        cc.export("encode_utf8", types.int64(handle, data, ids, cache))(exports["encode_utf8"])
        # the same kernel on a ``bytes`` object: its array is made inside (``np.frombuffer`` and the
        # array argument's conversion cost a short text's call about 0.5 us in Python), with the
        # calling thread's ids, piece cache and scratch (``encode_utf8_reusing``) given by address
        # in one array with the plan's handle (each array argument cost about 75 ns to convert)
        text = types.Bytes(types.uint8, 1, "C", readonly=True)
        cc.export("encode_bytes", types.int64(handle, text))(exports["encode_bytes"])
        cc.export("encode_utf8_batch", types.int64(handle, data, offsets, ids, out_offsets, cache))(
            exports["encode_utf8_batch"])
        # writable, as the empty piece ends of the other entry points are: one compiled copy of the loop
        piece_ends = types.Array(types.int64, 1, "C")
        cc.export("encode_pieces", types.int64(handle, data, piece_ends, ids, cache))(exports["encode_pieces"])
        cc.compile()
    manifest = {**_built(out_dir / cc.output_file, aot.build_key(), start), "format": FORMAT_VERSION,
                "parts": aot._key_parts(), "plan": description}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return 0


def list_main(argv: list[str]) -> int:
    """The build process of a regex list's splitter (:mod:`.aot_lists`): compile the generated
    module's ``split_utf8`` into ``argv[0]`` as the one export ``split``, write the manifest.
    Errors end as one line on stderr and exit code 1."""
    return _in_one_line(_list_build, argv)


def _list_build(out_dir: Path, expected_file: Path) -> int:
    import warnings

    from . import aot_lists
    from .pretokenize_program import load_generated

    spec = json.loads((out_dir / aot_lists.SPEC_FILE).read_bytes())
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc's pending deprecation
        from numba import types
        from numba.np.numpy_support import from_dtype

        cc = _compiler(spec["module"], out_dir, expected_file)
        generated = load_generated(spec["source"], "regex_list")
        if generated is None:
            raise AotError("the generated splitter cannot be written under the cache root")
        export = _generate_list_export(spec["leaves"], spec["before"], generated.split_utf8)

        def vector(dtype, readonly: bool = False):
            return types.Array(from_dtype(np.dtype(dtype)), 1, "C", readonly=readonly)

        cc.export("split", types.int64(vector(np.int64, True), vector(np.uint8, True), vector(np.int64),
                                       vector(np.int32), vector(np.int64), vector(np.uint8)))(export)
        cc.compile()
    key = aot_lists.list_key(spec["source"], spec["leaves"], spec["before"])
    manifest = {**_built(out_dir / cc.output_file, key, start), "format": aot_lists.FORMAT_VERSION,
                "module": spec["module"], "leaves": spec["leaves"], "before": spec["before"]}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return 0


def _compiler(name: str, out_dir: Path, expected_file: Path):
    """A ``numba.pycc.CC`` for the extension module ``name``, built into ``out_dir`` for this machine's
    CPU (as the JIT compiles; the keys hold it), its exports releasing the GIL. Refuses a process
    that imported another copy of :mod:`.aot` than the parent's (``expected_file``), a Python
    without its headers and a missing C compiler, each in one line."""
    import sysconfig

    if Path(aot.__file__).resolve() != expected_file:
        raise AotError(f"the build process imported {Path(aot.__file__).resolve()}, not {expected_file}")
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.exists():
        raise AotError(f"no Python headers ({include} is missing; install the python3-dev package)")
    from numba.pycc import CC

    _release_the_gil()
    try:
        cc = CC(name, source_module=__name__)  # checks that a C compiler works
    except Exception as exc:  # noqa: BLE001 - numba's message is several lines
        raise AotError(f"no working C compiler for numba.pycc ({type(exc).__name__})") from None
    cc.output_dir = str(out_dir)
    cc.target_cpu = "host"
    return cc


def _built(path: Path, key: str, start: float) -> dict:
    """The manifest's common part for the module file ``path`` built since ``start``."""
    import llvmlite.binding as llvm
    import numba

    return {"key": key, **_file_record(path), "host_cpu": llvm.get_host_cpu_name(), "numba": numba.__version__,
            "seconds": round(time.perf_counter() - start, 1), "built": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _release_the_gil() -> None:
    """Make the exported functions release the GIL while they run, as ``@njit(nogil=True)`` does:
    threads then encode in parallel (the kernels touch no Python object). pycc has no option for
    it; its compiler takes the flags of a fresh ``Flags()``, so this build process gives it
    flags with ``release_gil`` set."""
    from numba.pycc import compiler as pycc_compiler

    base = pycc_compiler.Flags

    class ReleasingFlags(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    pycc_compiler.Flags = ReleasingFlags


def _generate_exports(description: dict, fast_pipeline) -> dict:
    """Python source of the four exported functions (plan handle -> Plan -> kernel), compiled: each
    array leaf becomes ``numba.carray`` over its address and shape from the handle
    (:func:`.aot.handle_layout`), each scalar the handle's slot; ``encode_bytes``' handle is a call
    state (:func:`.aot.call_state`), its buffers after the plan's leaves."""
    import importlib

    import numba

    from ..kernels.bits import address_pointer

    namespace: dict = {"__name__": f"{__name__}_exports", "_carray": numba.carray, "_pointer": address_pointer,
                       "_encode_utf8": fast_pipeline.encode_utf8,
                       "_encode_utf8_reusing": fast_pipeline.encode_utf8_reusing,
                       "_encode_utf8_batch": fast_pipeline.encode_utf8_batch,
                       "_encode_pieces": fast_pipeline.encode_pieces, "_frombuffer": np.frombuffer, "_u8": np.uint8}
    names = dict(zip((leaf["path"] for leaf in description["leaves"]),
                     _leaf_expressions(description["leaves"], namespace, "plan field")))
    classes = {}
    for i, (prefix, spec) in enumerate(description["records"].items()):
        module_name, _, qualname = spec.partition(":")
        if not module_name.startswith("bpebench.algorithms."):
            raise AotError(f"unexpected record type {spec}")
        classes[prefix] = f"_R{i}"
        namespace[f"_R{i}"] = getattr(importlib.import_module(module_name), qualname)

    def construct(prefix: str) -> str:
        parts = []
        for field in description["fields"][prefix]:
            path = f"{prefix}.{field}" if prefix else field
            parts.append(construct(path) if path in description["records"] else names[path])
        return f"{classes[prefix]}({', '.join(parts)})"

    plan = construct("")
    # ``encode_bytes`` takes a call state (:func:`.aot.call_state`): the handle, then the addresses
    # and lengths of the thread's ids, piece cache and scratch
    _, at = aot.handle_layout(description)
    namespace.update(_I32=np.int32, _I64=np.int64)
    buffers = (f"_carray(_pointer(handle[{at}], _I32), (handle[{at + 1}],)), "
               f"_carray(_pointer(handle[{at + 2}], _I64), (handle[{at + 3}], {fast_pipeline.CACHE_ROW})), "
               f"_carray(_pointer(handle[{at + 4}], _I64), (handle[{at + 5}],))")
    source = (f"def encode_utf8(handle, data, out, cache):\n"
              f"    return _encode_utf8({plan}, data, out, cache)\n\n"
              f"def encode_bytes(handle, text):\n"
              f"    return _encode_utf8_reusing({plan}, _frombuffer(text, _u8), {buffers})\n\n"
              f"def encode_utf8_batch(handle, data, text_offsets, out, out_offsets, cache):\n"
              f"    return _encode_utf8_batch({plan}, data, text_offsets, out, out_offsets, cache)\n\n"
              f"def encode_pieces(handle, data, piece_ends, out, cache):\n"
              f"    return _encode_pieces({plan}, data, piece_ends, out, cache)\n")
    exec(compile(source, "<bpebench ahead-of-time exports>", "exec"), namespace)  # noqa: S102 - our own source
    return {name: namespace[name] for name in ("encode_utf8", "encode_bytes", "encode_utf8_batch", "encode_pieces")}


def _leaf_expressions(leaves: list[dict], namespace: dict, what: str) -> list[str]:
    """The nopython expression of each leaf read back from ``handle`` (:func:`.aot.handle_layout`): an
    array ``numba.carray`` over its address and shape (its scalar type put in ``namespace``), an int
    its slot, a bool its slot ``!= 0``."""
    starts, _ = aot.handle_layout({"leaves": leaves})
    out = []
    for i, (leaf, start) in enumerate(zip(leaves, starts)):
        kind = leaf["kind"]
        if kind == "array":
            namespace[f"_T{i}"] = np.dtype(leaf["dtype"]).type
            shape = ", ".join(f"handle[{start + 1 + d}]" for d in range(leaf["ndim"]))
            out.append(f"_carray(_pointer(handle[{start}], _T{i}), ({shape},))")
        elif kind == "int":
            out.append(f"handle[{start}]")
        elif kind == "bool":
            out.append(f"handle[{start}] != 0")
        else:
            raise AotError(f"{what} {leaf.get('path', i)} ({kind}) cannot be passed in a handle")
    return out


def _generate_list_export(leaves: list[dict], before: int, split_utf8):
    """The compiled ``split(handle, data, ends, scratch32, scratch64, kinds)`` of a generated list
    module: its ``split_utf8`` called with the list's tables (the first ``before`` leaves) and
    transducer arguments (the rest) rebuilt from the handle (:func:`.aot.handle_layout`: an array
    is ``numba.carray`` over its address and shape, an int its slot)."""
    import numba

    from ..kernels.bits import address_pointer

    namespace: dict = {"__name__": f"{__name__}_list_export", "_carray": numba.carray, "_pointer": address_pointer,
                       "_split": split_utf8}
    values = _leaf_expressions(leaves, namespace, "list argument")
    arguments = ", ".join(["data", *values[:before], "ends", "scratch32", "scratch64", "kinds", *values[before:]])
    source = (f"def split(handle, data, ends, scratch32, scratch64, kinds):\n"
              f"    return _split({arguments})\n")
    exec(compile(source, "<bpebench ahead-of-time list export>", "exec"), namespace)  # noqa: S102 - our own source
    return namespace["split"]


def example_plan():
    """The Plan of a tiny vocabulary (for ``bpebench compile``: the types are what matter)."""
    from ..formats.vocabulary import Vocabulary

    vocab = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + [b"ab", b"abc", b"bc"], name="aot-example",
                                  pattern="o200k")
    aot._suspended = True  # this plan only describes types: no module is loaded or built for it
    try:
        return fast_pipeline.FusedPipeline(vocab).plan
    finally:
        aot._suspended = False
