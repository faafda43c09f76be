"""The fused kernel against a changed copy of it, on unseen text, in one process (a plain script).

    python benchmarks/kernel_ab.py --same                      # A/A: the spread of the comparison
    python benchmarks/kernel_ab.py /tmp/fast_pipeline_b.py     # a changed copy of fast_pipeline.py
    python benchmarks/kernel_ab.py /tmp/fp_b.py --also kernels._merge_b=/tmp/merge_b.py --peer fastokens

The variant is a copy of ``algorithms/pipeline/fast_pipeline.py`` with a change, loaded as a module
of the package (its relative imports work) and compiled by numba's JIT beside the committed one;
``--also NAME=PATH`` loads further modules first as ``bpebench.algorithms.NAME`` (a changed kernel
that the variant imports as ``from ..kernels._merge_b import ...``).

Each kernel reads a copy of the vocabulary's tables of its own (64-byte aligned; the committed one
too, since the vocabulary's own mapping and a copy of it did not run alike): two kernels that read
one copy warm each other, since whichever encodes a document second finds its table rows in
the caches (o200k code: about 4.6 ms per MB with one copy, 5.4 with two). Every round makes fresh
piece caches (and with ``--fresh-tables`` fresh copies of the tables, for a variant that writes
into them), runs both on the warm-up documents, then each measured document once with each (who
goes first alternating per document and round), with ``--peer`` encoding the document first. Ids
are compared on every document. Per kind: the median over rounds of the committed kernel's time ÷
the variant's (above 1: the variant is faster), the range, and each kernel's ms per MB.

The copies are anonymous memory, but a real process reads the vocabulary's tables from the cache
file's private mapping, where the first write to each page is a copy-on-write fault: for a variant
that writes into the tables, ``--mapped-tables`` puts each copy in such a mapping of a file of its
own (docs/performance.md, "Known pieces in the whole-token table": 1.04x on code in anonymous
copies, 0.70x on prose in a fresh process).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
from pathlib import Path

os.environ["BPEBENCH_AOT"] = "0"  # both kernels through the JIT, compiled alike
os.environ.setdefault("BPEBENCH_BENCH_CLOCK", "cpu")

from bpebench.benchmarks import protocol  # noqa: E402

COMMITTED = Path(__file__).resolve().parent.parent / "algorithms" / "pipeline" / "fast_pipeline.py"


def load_module(name: str, path: Path):
    """``path`` imported as the module ``bpebench.algorithms.<name>`` (relative imports resolve there)."""
    full = f"bpebench.algorithms.{name}"
    spec = importlib.util.spec_from_file_location(full, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


def aligned_copy(array):
    """``array`` copied to a 64-byte boundary (as the vocabulary's disk cache lays its tables out)."""
    import numpy as np

    if not array.size:
        return array
    raw = np.empty(array.nbytes + 64, dtype=np.uint8)
    skip = -raw.ctypes.data % 64
    copy = raw[skip:skip + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def mapped_copy(array):
    """``array`` copied into a private copy-on-write mapping of a temporary file of its own, as a
    process reads the vocabulary cache's tables (``cache/files.map_checked``)."""
    import mmap
    import tempfile

    import numpy as np

    if not array.size:
        return array
    with tempfile.TemporaryFile() as f:
        np.ascontiguousarray(array).tofile(f)  # no bytes object of the whole table on the way
        f.flush()
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    return np.frombuffer(mapped, dtype=array.dtype).reshape(array.shape)


def copied(plan, copy=aligned_copy):
    """A Plan (nested named tuples of arrays) whose arrays are copies of its own, made by ``copy``."""
    import numpy as np

    if isinstance(plan, np.ndarray):
        return copy(plan)
    if isinstance(plan, tuple) and hasattr(plan, "_fields"):
        return type(plan)(*(copied(field, copy) for field in plan))
    return plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", nargs="?", help="a changed copy of fast_pipeline.py")
    parser.add_argument("--same", action="store_true", help="the committed kernel against a second copy of itself")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=PATH",
                        help="load PATH as bpebench.algorithms.NAME first (e.g. kernels._merge_b=/tmp/m.py)")
    parser.add_argument("--vocab", default="o200k_base")
    parser.add_argument("--kinds", default="code,prose,multilingual", help="kinds of the protocol's streams")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--peer", default=None, help="a peer that encodes each document first (e.g. fastokens)")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU to pin to (default: the last)")
    parser.add_argument("--fresh-tables", action="store_true",
                        help="copy both kernels' tables anew every round (for a variant that writes into them)")
    parser.add_argument("--mapped-tables", action="store_true",
                        help="the copies in private mappings of files, as a real process reads them")
    args = parser.parse_args(argv)
    if args.same == bool(args.variant):
        parser.exit(2, "kernel_ab: give a variant file or --same (one of them)\n")
    variant_path = COMMITTED if args.same else Path(args.variant)
    if not variant_path.is_file():
        parser.exit(2, f"kernel_ab: no such file: {variant_path}\n")
    if args.rounds < 1:
        parser.exit(2, "kernel_ab: --rounds must be at least 1\n")

    import numpy as np
    from bpebench import load_vocabulary
    from bpebench.errors import BpebenchError
    from bpebench.algorithms.pipeline import fast_pipeline as committed

    try:
        for item in args.also:
            name, _, path = item.partition("=")
            if not name or not Path(path).is_file():
                parser.exit(2, f"kernel_ab: --also wants NAME=PATH with an existing file, not {item!r}\n")
            load_module(name, Path(path))
        variant = load_module("pipeline._kernel_ab_variant", variant_path)
    except Exception as error:  # the variant is the user's own code: any failure to load is one line
        parser.exit(2, f"kernel_ab: cannot load the variant: {type(error).__name__}: {error}\n")
    try:
        vocab = load_vocabulary(args.vocab)
        streams = [protocol.stream(kind) for kind in args.kinds.split(",")]
        peer = None
        if args.peer:
            from bpebench.algorithms.peers import make_peer
            peer = make_peer(args.peer, vocab)
    except (BpebenchError, KeyError) as error:
        parser.exit(2, f"kernel_ab: {error}\n")
    protocol.pin_to_one_cpu(args.cpu)

    kernels = (committed._DirectCall(committed.encode_utf8), variant._DirectCall(variant.encode_utf8))
    # copies for both: the vocabulary's own mapping and a fresh copy of it did not run alike (A/A 0.96-1.00)
    copy = mapped_copy if args.mapped_tables else aligned_copy
    plans = (copied(committed.FusedPipeline(vocab).plan, copy), copied(variant.FusedPipeline(vocab).plan, copy))
    print(f"{args.vocab}: committed time / variant time (above 1: the variant is faster), {args.rounds} rounds,"
          f" CPU clock{', ' + args.peer + ' first on each document' if peer else ''}")
    for text_stream in streams:
        warm = [np.frombuffer(d.encode("utf-8", "surrogatepass"), dtype=np.uint8) for d in text_stream.warm]
        docs = [np.frombuffer(d.encode("utf-8", "surrogatepass"), dtype=np.uint8) for d in text_stream.measured]
        outs = [np.empty(max(len(d) for d in warm + docs) + 1, dtype=np.int32) for _ in kernels]
        spent: list[list[float]] = [[], []]
        for r in range(args.rounds):
            caches = (committed.FusedPipeline(vocab).thread_cache(), variant.FusedPipeline(vocab).thread_cache())
            if args.fresh_tables:
                plans = (copied(committed.FusedPipeline(vocab).plan, copy),
                         copied(variant.FusedPipeline(vocab).plan, copy))
            for doc in warm:
                for k in (0, 1):
                    kernels[k](plans[k], doc, outs[k], caches[k])
            total = [0.0, 0.0]
            for i, doc in enumerate(docs):
                if peer is not None:
                    peer.encode_ordinary(text_stream.measured[i])
                counts = [0, 0]
                for k in ((0, 1) if (i + r) % 2 == 0 else (1, 0)):
                    start = protocol.clock()
                    counts[k] = kernels[k](plans[k], doc, outs[k], caches[k])
                    total[k] += protocol.clock() - start
                if counts[0] != counts[1] or not np.array_equal(outs[0][:counts[0]], outs[1][:counts[1]]):
                    raise SystemExit(f"kernel_ab: the variant gave other ids on {text_stream.kind} document {i}")
            for k in (0, 1):
                spent[k].append(total[k])
        ratios = [a / b for a, b in zip(*spent)]
        mb = sum(len(d) for d in docs) / 1e6
        print(f"  {text_stream.kind:13s} {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f});"
              f" committed {1e3 * statistics.median(spent[0]) / mb:.2f}, variant"
              f" {1e3 * statistics.median(spent[1]) / mb:.2f} ms per MB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
