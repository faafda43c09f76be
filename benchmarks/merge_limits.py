"""The fused pipeline's merge-loop limits, per script, on unseen text (a plain script, not asv).

    python benchmarks/merge_limits.py --vocab o200k_base --limits 24/24,24/16
    python benchmarks/merge_limits.py --kind code --limits 24/16,32/16

Each ``SHORT/WIDE`` pair is a ``FusedPipeline`` whose pieces of several tokens run the merge loop
up to ``SHORT`` bytes, or ``WIDE`` when they end with a CJK, kana or Hangul character
(``FusedPipeline.SHORT_PIECE`` and ``SHORT_PIECE_WIDE``), backtracking beyond. All of them and
fastokens (when installed) take turns per document over the protocol's unseen stream (in balanced
orders, ``protocol.balanced_orders``), after one pass over its warm-up documents, in one process pinned to
one CPU; the documents are grouped by their commonest script. Milliseconds per group. In some runs
the first pipeline made in a process ran 5-10% slower than identical later ones, so a throw-away copy of the
first pair is made and timed first (listed as ``warm-up copy``). Variants share the vocabulary's
tables, so absolute figures flatter all of them alike; compare the variants' columns.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# before the protocol is imported: it picks its clock then
os.environ.setdefault("BPEBENCH_BENCH_CLOCK", "cpu")

from benchmarks import protocol  # noqa: E402


def commonest_script(doc: str) -> str:
    counts = collections.Counter(unicodedata.name(ch, "OTHER ").split()[0] if ord(ch) > 127 else "LATIN"
                                 for ch in doc if ch.isalpha())
    return counts.most_common(1)[0][0] if counts else "NONE"


def parse_limits(text: str) -> list[tuple[int, int]]:
    pairs = []
    for item in text.split(","):
        short, _, wide = item.partition("/")
        if not (short.isdigit() and wide.isdigit()) or int(wide) > int(short) or not 0 < int(short) <= 32:
            raise ValueError(f"bad limit pair {item!r}: want SHORT/WIDE with 0 < WIDE <= SHORT <= 32")
        pairs.append((int(short), int(wide)))
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default="o200k_base")
    parser.add_argument("--kind", default="multilingual", help="a kind of the protocol's streams")
    parser.add_argument("--limits", default="24/24,24/16", help="SHORT/WIDE pairs, comma separated")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU to pin to (default: the last)")
    args = parser.parse_args(argv)
    try:
        limits = parse_limits(args.limits)
    except ValueError as error:
        parser.exit(2, f"merge_limits: {error}\n")

    from bpebench import load_vocabulary
    from bpebench.errors import BpebenchError
    from bpebench.algorithms.peers import make_peer
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline

    try:
        vocab = load_vocabulary(args.vocab)
        text_stream = protocol.stream(args.kind)
    except (BpebenchError, KeyError) as error:
        parser.exit(2, f"merge_limits: {error}\n")
    protocol.pin_to_one_cpu(args.cpu)

    functions = {}
    saved = FusedPipeline.SHORT_PIECE, FusedPipeline.SHORT_PIECE_WIDE
    try:
        for k, (short, wide) in enumerate([limits[0], *limits]):
            FusedPipeline.SHORT_PIECE, FusedPipeline.SHORT_PIECE_WIDE = short, wide
            pipeline = FusedPipeline(vocab)
            name = "warm-up copy" if k == 0 else f"{short}/{wide}"
            functions[name] = (lambda p: lambda text: p.encode_list(text.encode("utf-8", "surrogatepass")))(pipeline)
    finally:
        FusedPipeline.SHORT_PIECE, FusedPipeline.SHORT_PIECE_WIDE = saved
    try:
        peer = make_peer("fastokens", vocab)
        functions[f"fastokens {peer.library_version}"] = peer.encode_ordinary
    except BpebenchError as error:  # not installed, or not exact on this vocabulary: ours alone
        print(f"(fastokens left out: {error})")

    def same_ids(name, result, first):
        if list(result) != list(first):
            raise SystemExit(f"merge_limits: {name} gave other ids than {next(iter(functions))}")

    groups = collections.defaultdict(list)
    for doc in text_stream.measured:
        groups[commonest_script(doc)].append(doc)
    for doc in text_stream.warm:
        for fn in functions.values():
            fn(doc)
    print(f"{args.vocab}, {args.kind}: ms per group (turns per document, CPU clock)")
    print(f"  {'script':10s} {'docs':>4s} " + " ".join(f"{name:>14s}" for name in functions))
    totals = collections.Counter()
    for script, docs in sorted(groups.items()):
        times = protocol.time_unseen(functions, protocol.Stream(args.kind, text_stream.corpus, [], docs), same_ids)
        totals.update(times)
        print(f"  {script:10s} {len(docs):4d} " + " ".join(f"{1e3 * times[name]:14.2f}" for name in functions))
    print(f"  {'all':10s} {len(text_stream.measured):4d} " + " ".join(f"{1e3 * totals[name]:14.2f}" for name in functions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
