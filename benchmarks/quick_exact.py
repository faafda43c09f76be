"""Quick speed check of the exact encoders (a plain script, not an asv suite).

    python benchmarks/quick_exact.py            # o200k_base, a minute or two
    python benchmarks/quick_exact.py --repeat 3 # fewer repetitions

Prints four tables:

1. raw BPE throughput on 100 kB of random o200k tokens (no pre-tokenization):
   ``backtracking`` and the other exact encoders next to bpe-openai's Rust
   backtracking encoder (``rs_bpe``) in the same process;
2. scaling on one unsplittable piece: time(100 kB) / time(10 kB) (10 = linear),
   and ``naive`` on 1-4 kB to show it is quadratic;
3. interval counting: median time per ``IntervalEncoding.count`` call from Python
   on a 1 MB text, per slice length, and the fallback rate;
4. incremental encoding: ``AppendableEncoder`` over a whole text (bulk push and
   one push per byte) relative to one ``backtracking`` encode.

Times are medians of ``--repeat`` runs after a warm-up (numba compiles on first
use); the machine's load shows up in them, so compare within one run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from bpebench.algorithms.appending import AppendableEncoder  # noqa: E402
from bpebench.algorithms.interval import IntervalEncoding  # noqa: E402
from bpebench.algorithms.formats import load_vocabulary  # noqa: E402
from bpebench.algorithms.core.registry import make_encoder  # noqa: E402

FAST = ["backtracking", "table", "heap", "appending", "prepending"]


def random_token_text(vocab, size: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        token = vocab.tokens[rng.randrange(len(vocab.tokens))]
        parts.append(token)
        total += len(token)
    return b"".join(parts)[:size]


def letters(size: int, seed: int = 0) -> bytes:
    """Random lowercase letters without spaces: one piece for any pre-tokenizer."""
    rng = random.Random(seed)
    return bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(size))


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up: numba compilation, caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(runs: dict, repeat: int) -> dict:
    """Median and best time of each callable, run round-robin so that load changes on a
    shared machine hit all of them alike."""
    for fn in runs.values():
        fn()  # warm-up
    times = {label: [] for label in runs}
    for _ in range(repeat):
        for label, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
    return {label: (statistics.median(t), min(t)) for label, t in times.items()}


def throughput(vocab, repeat: int) -> None:
    data = random_token_text(vocab, 100_000)
    runs = {}
    try:
        import rs_bpe.bpe

        rust = getattr(rs_bpe.bpe.openai, vocab.name)().bpe()
        runs["rs_bpe encode_via_backtracking"] = lambda: rust.encode_via_backtracking(data)
    except (ImportError, AttributeError):
        print(f"(no rs_bpe encoder for {vocab.name}: no Rust comparison)")
    for name in FAST:
        enc = make_encoder(name, vocab)
        runs[name] = lambda enc=enc: enc.encode(data)
    print(f"\n1. raw BPE, 100 kB of random {vocab.name} tokens (interleaved runs)")
    print(f"{'encoder':34} {'median ms':>10} {'best ms':>8} {'MB/s':>7}")
    for label, (med, best) in interleaved(runs, repeat * 3).items():
        print(f"{label:34} {med * 1e3:10.2f} {best * 1e3:8.2f} {len(data) / med / 1e6:7.2f}")


def scaling(vocab, repeat: int) -> None:
    """A 100 kB piece against its ten 10 kB slices encoded one after another, so both
    touch the same vocabulary entries (a lone 10 kB input re-encoded stays in cache
    and would make the ratio look superlinear)."""
    print("\n2. scaling on one unsplittable piece: time(100 kB) / time(10 kB slice), 10 = linear")
    print(f"{'encoder':14} {'input':14} {'10 kB ms':>9} {'100 kB ms':>10} {'ratio':>7}")
    inputs = {"letters": letters(100_000), "random tokens": random_token_text(vocab, 100_000, seed=1),
              "one byte": b"a" * 100_000}
    for name in FAST:
        enc = make_encoder(name, vocab)
        for label, large in inputs.items():
            slices = [large[k : k + 10_000] for k in range(0, len(large), 10_000)]
            result = interleaved({"small": lambda: [enc.encode(s) for s in slices],
                                  "large": lambda: enc.encode(large)}, repeat)
            t_small, t_large = result["small"][0] / len(slices), result["large"][0]
            print(f"{name:14} {label:14} {t_small * 1e3:9.2f} {t_large * 1e3:10.2f} {t_large / t_small:7.1f}")
    naive = make_encoder("naive", vocab)
    sizes = [1_000, 2_000, 4_000]
    times = [median_time(lambda n=n: naive.encode(letters(n)), 3) for n in sizes]
    print("naive (letters): " + ", ".join(f"{n // 1000} kB {t * 1e3:.0f} ms" for n, t in zip(sizes, times))
          + f"; x{times[1] / times[0]:.1f} and x{times[2] / times[1]:.1f} per doubling (2 = linear, 4 = quadratic)")


def interval(vocab, repeat: int) -> None:
    data = random_token_text(vocab, 1_000_000, seed=2)
    start = time.perf_counter()
    iv = IntervalEncoding(vocab, data)
    prep = time.perf_counter() - start
    rng = random.Random(3)
    print(f"\n3. interval counts on a 1 MB text (preprocessing {prep:.2f} s)")
    print(f"{'slice':>10} {'median us/call':>15} {'mean us/call':>13} {'fallbacks':>10}")
    for length in ["random", 10, 100, 1_000, 10_000, 100_000]:
        ranges = []
        for _ in range(20_000):
            if length == "random":
                i, j = sorted((rng.randrange(len(data) + 1), rng.randrange(len(data) + 1)))
            else:
                i = rng.randrange(len(data) - length)
                j = i + length
            ranges.append((i, j))
        iv.fallbacks = 0
        times = []
        count = iv.count
        for i, j in ranges:
            t0 = time.perf_counter()
            count(i, j)
            times.append(time.perf_counter() - t0)
        print(f"{str(length):>10} {statistics.median(times) * 1e6:15.2f} {statistics.mean(times) * 1e6:13.2f}"
              f" {iv.fallbacks / len(ranges):9.1%}")


def incremental(vocab, repeat: int) -> None:
    data = random_token_text(vocab, 100_000, seed=4)
    backtracking = make_encoder("backtracking", vocab)

    def bulk():
        AppendableEncoder(vocab).push(data)

    result = interleaved({"one-shot": lambda: backtracking.encode(data), "bulk": bulk}, repeat)
    one_shot, t_bulk = result["one-shot"][0], result["bulk"][0]

    def per_byte():
        enc = AppendableEncoder(vocab)
        push = enc.push
        for b in data[:20_000]:
            push(b)

    t_byte = median_time(per_byte, max(1, repeat // 3)) * 5  # scaled from 20 kB
    print("\n4. incremental: exact count after every byte of 100 kB of random tokens")
    print(f"backtracking, one encode:         {one_shot * 1e3:8.2f} ms")
    print(f"AppendableEncoder, one push:      {t_bulk * 1e3:8.2f} ms  (x{t_bulk / one_shot:.1f})")
    print(f"AppendableEncoder, push per byte: {t_byte * 1e3:8.2f} ms  (x{t_byte / one_shot:.1f},"
          f" {t_byte / len(data) * 1e6:.1f} us per push)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocabulary", default="o200k_base")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", choices=["throughput", "scaling", "interval", "incremental"])
    args = parser.parse_args(argv)
    vocab = load_vocabulary(args.vocabulary)
    for name, part in [("throughput", throughput), ("scaling", scaling), ("interval", interval),
                       ("incremental", incremental)]:
        if args.only in (None, name):
            part(vocab, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
