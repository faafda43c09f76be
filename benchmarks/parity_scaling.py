"""Speed-up of ``bpebench parity`` from 1 to 2 Dask workers (a plain script, not an asv suite).

    python benchmarks/parity_scaling.py                      # tokenizer.json fixture vs HF, 10 MB
    python benchmarks/parity_scaling.py --vocab o200k_base --against tiktoken --repeat 5
    python benchmarks/parity_scaling.py --workers 0 1 2      # also the in-process run
    python benchmarks/parity_scaling.py --vocab cl100k_base --algorithm heap   # a slower exact encoder

Runs the same ``bpebench parity VOCAB --corpus ... --workers N`` command for each N,
interleaved (1, 2, 1, 2, ...), each in a fresh process as a user would, and prints per run
the wall time of the process, the ``ran:`` time the command reports (cluster start-up,
comparing, storing), its cluster start-up alone, the CPU time of the process and all its
workers, and the CPU time the busiest worker spent comparing (from the stored rows), then the
median of each and the 1 -> 2 ratios of the medians. The last ratio is how evenly the work
splits, whatever else runs on the machine: the speed-up two free cores would give the
comparing. The corpus is ``code-python`` cut to ``--size`` bytes (the
CPython standard library's source, so it is the same on every machine with the same
Python). The machine's load average is printed before and after: on a shared machine the
second worker only helps as far as a core is free, so the script also measures what the
machine gives at that moment: the same pure-Python loop in 1 and then 2 processes at once
(``capacity``: 2.00 when two cores are free, 1.00 when only one core's worth is left).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "golden" / "bytelevel_bpe.json"


def busiest_worker_cpu(out: Path) -> float:
    """The CPU seconds the busiest worker spent comparing, from the run's stored rows."""
    per_worker: dict[str, float] = {}
    for line in (out / "partitions.jsonl").read_text().splitlines():
        row = json.loads(line)
        per_worker[row["worker"]] = per_worker.get(row["worker"], 0.0) + row["cpu_seconds"]
    return max(per_worker.values())


def run_once(vocab: str, against: str, size: int, workers: int, out: Path,
             algorithm: str | None = None) -> tuple[float, float, float, float, float]:
    """(process wall seconds, reported run seconds, reported start-up seconds, CPU seconds of the
    process and its workers, CPU seconds the busiest worker spent comparing)."""
    cmd = [sys.executable, "-m", "bpebench", "parity", vocab, "--against", against, "--corpus", "code-python",
           "--size", str(size), "--workers", str(workers), "--out", str(out), "-q"]
    if algorithm:
        cmd += ["--algorithm", algorithm]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers were waited for by their parent
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if result.returncode != 0:
        sys.exit(f"failed ({result.returncode}): {' '.join(cmd)}\n{result.stdout}{result.stderr}")
    ran = re.search(r"^ran: .* in ([\d.]+) s, (?:([\d.]+) s to start it, )?", result.stdout, re.M)
    return wall, float(ran.group(1)), float(ran.group(2) or 0.0), cpu, busiest_worker_cpu(out)


def _spin(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def capacity(n: int = 20_000_000) -> float:
    """How many cores' worth of work two processes get now: 2 x time(one loop) / time(two at once)."""
    pool_context = multiprocessing.get_context("spawn")
    times = {}
    for k in (1, 2, 1, 2):
        with pool_context.Pool(k) as pool:
            pool.map(_spin, [1000])  # started before timing
            start = time.perf_counter()
            pool.map(_spin, [n] * k)
            times.setdefault(k, []).append(time.perf_counter() - start)
    return 2 * min(times[1]) / min(times[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", default=str(FIXTURE))
    parser.add_argument("--against", default="auto")
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--algorithm", default=None, help="bpebench's encoder (default: the fastest exact one)")
    args = parser.parse_args()

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, cores: {os.cpu_count()},"
          f" capacity of two processes: {capacity():.2f}")
    # untimed: the corpus cache, and one small run for the vocabulary cache and numba's disk cache
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, "-m", "bpebench", "corpora", "code-python", "--size", str(args.size),
                        "--head", "0"], check=True, capture_output=True)
        run_once(args.vocab, args.against, 100_000, 0, Path(scratch, "warm"), args.algorithm)
        times: dict[int, list[tuple[float, ...]]] = {n: [] for n in args.workers}
        for r in range(args.repeat):
            for n in args.workers:
                row = run_once(args.vocab, args.against, args.size, n, Path(scratch, f"{n}-{r}"), args.algorithm)
                times[n].append(row)
                wall, ran, startup, cpu, busiest = row
                print(f"  workers {n}: process {wall:6.2f} s, ran {ran:6.2f} s, of which start-up {startup:5.2f} s;"
                      f" CPU {cpu:6.2f} s, busiest worker's comparing {busiest:6.2f} s CPU", flush=True)
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())},"
          f" capacity of two processes: {capacity():.2f}")
    print(f"{'workers':>8} {'process (median)':>17} {'ran (median)':>13} {'start-up':>9} {'CPU':>9}"
          f" {'busiest worker':>15}")
    medians = {}
    for n, rows in times.items():
        medians[n] = [statistics.median(col) for col in zip(*rows)]
        print(f"{n:>8} {medians[n][0]:>15.2f} s {medians[n][1]:>11.2f} s {medians[n][2]:>7.2f} s"
              f" {medians[n][3]:>7.2f} s {medians[n][4]:>13.2f} s")
    if 1 in medians and 2 in medians:
        print(f"speed-up 1 -> 2 workers: process {medians[1][0] / medians[2][0]:.2f}x,"
              f" ran {medians[1][1] / medians[2][1]:.2f}x,"
              f" ran without start-up {(medians[1][1] - medians[1][2]) / (medians[2][1] - medians[2][2]):.2f}x;"
              f" busiest worker's CPU {medians[1][4] / medians[2][4]:.2f}x (the split of the work)")


if __name__ == "__main__":
    main()
