"""The first BPE of new short pieces, alone: the interleaved lanes against the one-piece merge loop (a
plain script).

    python benchmarks/merge_ab.py                                  # lanes and the merge loop
    python benchmarks/merge_ab.py --variant /tmp/im_b.py           # and a changed interleaved_merge.py

On unseen text about a third of the fused kernel's time goes to pieces of several tokens that the
piece cache has not seen (docs/performance.md, "What stands between us and the leaders"). This
times just that step, on the pieces that need it in the protocol's streams: every piece of the
measured documents that is not one token, short enough for the lanes, seen neither in the warm-up
documents nor earlier in the measured ones, in text order. Each kernel encodes all of them, in
groups of ``--group`` pieces per call as a window of the kernel hands them out (the merge loop one
at a time), first right after ``--evict-mb`` of other memory was written (the tables' rows come from
far away, as on text never seen), then again at once (every row in the caches). Whether the step
waits on memory or computes shows in the difference. The kernels run in turns, the order
alternating per round; their ids are compared, and any difference is one line and exit 1. Numba's
JIT compiles every kernel alike (``BPEBENCH_AOT=0``).

A variant is a copy of ``algorithms/kernels/interleaved_merge.py`` with a change, loaded as
``bpebench.algorithms.kernels._merge_ab_variant`` (its relative imports work) with the same API:
``new_lanes``, ``merge_pieces_interleaved``, ``lane_tokens``, ``START``, ``END``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["BPEBENCH_AOT"] = "0"  # every kernel through the JIT, compiled alike

from bpebench.benchmarks import protocol  # noqa: E402
from bpebench.benchmarks.kernel_ab import load_module  # noqa: E402


def new_pieces(vocab, streams, plan) -> list[bytes]:
    """The pieces of several tokens that a warmed-up piece cache would not hold and the kernel gives
    the merge loop (the lanes' limits: ``_note_piece``), in text order."""
    import regex

    from bpebench.algorithms.formats.patterns import resolve_pattern
    from bpebench.algorithms.kernels.interleaved_merge import WIDTH

    def merged(piece: bytes) -> bool:
        if len(piece) > min(plan.short_limit, WIDTH):
            return False
        # backtracking takes a longer piece that ends in a CJK, kana or Hangul character
        return len(piece) <= plan.wide_limit or len(piece) < 3 or piece[-3] < 0xE1

    split = regex.compile(resolve_pattern(vocab.pattern))
    tokens = set(vocab.tokens)
    found: list[bytes] = []
    for text_stream in streams:
        seen = {m.encode("utf-8", "surrogatepass") for d in text_stream.warm for m in split.findall(d)}
        for doc in text_stream.measured:
            for match in split.findall(doc):
                piece = match.encode("utf-8", "surrogatepass")
                if merged(piece) and piece not in tokens and piece not in seen:
                    seen.add(piece)
                    found.append(piece)
    return found


def _lanes_runner(module):
    from bpebench.algorithms.kernels.jit import njit

    merge, lane_tokens, start, end = module.merge_pieces_interleaved, module.lane_tokens, module.START, module.END

    @njit
    def run(tables, data, bounds, group, lanes, out):
        byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset = tables
        n_out = 0
        count = bounds.shape[0] - 1
        for first in range(0, count, group):
            n = min(group, count - first)
            for j in range(n):
                lanes[j, start] = bounds[first + j]
                lanes[j, end] = bounds[first + j + 1]
            merge(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset, data, lanes, n)
            for j in range(n):
                n_out = lane_tokens(lanes, j, out, n_out)
        return n_out

    return lambda tables, data, bounds, group, out: run(tables, data, bounds, group, module.new_lanes(), out)


def _loop_runner():
    import numpy as np

    from bpebench.algorithms.kernels.jit import njit
    from bpebench.algorithms.kernels.short_piece import merge_short_piece

    @njit
    def run(tables, data, bounds, parts, ranks, out):
        byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset = tables
        n_out = 0
        for k in range(bounds.shape[0] - 1):
            n_out = merge_short_piece(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset,
                                      data, bounds[k], bounds[k + 1], parts, ranks, out, n_out)
        return n_out

    parts, ranks = np.zeros(64, np.int32), np.zeros(64, np.int64)
    return lambda tables, data, bounds, group, out: run(tables, data, bounds, parts, ranks, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default=None, help="a changed copy of algorithms/kernels/interleaved_merge.py")
    parser.add_argument("--vocab", default="o200k_base")
    parser.add_argument("--kinds", default="code,prose,multilingual", help="kinds of the protocol's streams")
    parser.add_argument("--group", type=int, default=8, help="pieces per call of the lanes (at most 16)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--evict-mb", type=int, default=64, help="memory written before each cold pass (MB)")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU to pin to (default: the last)")
    args = parser.parse_args(argv)
    if not 1 <= args.group <= 16:
        parser.exit(2, "merge_ab: --group must be 1 to 16\n")
    if args.rounds < 1 or args.evict_mb < 0:
        parser.exit(2, "merge_ab: --rounds must be at least 1 and --evict-mb not negative\n")
    if args.variant and not Path(args.variant).is_file():
        parser.exit(2, f"merge_ab: no such file: {args.variant}\n")

    import numpy as np

    from bpebench import load_vocabulary
    from bpebench.errors import BpebenchError
    from bpebench.algorithms.kernels import interleaved_merge
    from bpebench.algorithms.kernels.jit import njit
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline, unsupported_reason

    runners = {"lanes": _lanes_runner(interleaved_merge), "merge loop": _loop_runner()}
    if args.variant:
        try:
            runners["variant"] = _lanes_runner(load_module("kernels._merge_ab_variant", Path(args.variant)))
        except Exception as error:  # the variant is the user's own code: any failure to load is one line
            parser.exit(2, f"merge_ab: cannot load the variant: {type(error).__name__}: {error}\n")
    try:
        vocab = load_vocabulary(args.vocab)
        streams = [protocol.stream(kind) for kind in args.kinds.split(",")]
    except (BpebenchError, KeyError) as error:
        parser.exit(2, f"merge_ab: {error}\n")
    why = unsupported_reason(vocab)
    if why or vocab.pattern is None:
        parser.exit(2, f"merge_ab: {args.vocab}: no fused pipeline with a regex split ({why or 'no pattern'})\n")
    protocol.pin_to_one_cpu(args.cpu)

    plan = FusedPipeline(vocab).plan
    tables = (plan.byte_token, plan.byte_pairs, plan.matcher.pairs, plan.matcher.pair_filter, plan.token_of_rank,
              plan.token_offset)
    pieces = new_pieces(vocab, streams, plan)
    if not pieces:
        parser.exit(2, "merge_ab: the streams hold no new piece of several tokens\n")
    data = np.frombuffer(b"".join(pieces) + bytes(64), dtype=np.uint8)
    bounds = np.cumsum([0] + [len(p) for p in pieces]).astype(np.int64)
    evict = np.zeros(args.evict_mb << 17, dtype=np.int64)  # 8-byte words

    @njit
    def write_over(words):
        for k in range(0, words.shape[0], 8):  # a word per 64-byte line
            words[k] += 1

    names = list(runners)
    ids = {}
    for name in names:
        out = np.zeros(len(data) + 1, dtype=np.int64)
        ids[name] = out[:runners[name](tables, data, bounds, args.group, out)].copy()  # compiles too
    for name in names[1:]:
        if not np.array_equal(ids[name], ids[names[0]]):
            print(f"merge_ab: {name} and {names[0]} give different ids", file=sys.stderr)
            return 1
    times = {name: {"evicted": [], "warm": []} for name in names}
    out = np.zeros(len(data) + 1, dtype=np.int64)
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            for kind in ("evicted", "warm"):
                if kind == "evicted":
                    write_over(evict)
                start = time.perf_counter()
                runners[name](tables, data, bounds, args.group, out)
                times[name][kind].append((time.perf_counter() - start) / len(pieces) * 1e9)
    print(f"{args.vocab}: {len(pieces):,} new pieces of several tokens ({bounds[-1] / len(pieces):.1f} bytes,"
          f" {len(ids[names[0]]) / len(pieces):.2f} ids each) from {args.kinds}; ns per piece, median (range)"
          f" of {args.rounds} rounds; lanes {args.group} pieces per call, {args.evict_mb} MB written before"
          " each evicted pass")
    for name in names:
        row = "  ".join(f"{kind} {statistics.median(v):6.0f} ({min(v):.0f}-{max(v):.0f})"
                        for kind, v in times[name].items())
        print(f"  {name:12s} {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
