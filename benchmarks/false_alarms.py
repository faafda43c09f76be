"""False alarms of the conformance kit: many ``verify`` runs of correct encoders, each its own seed.

    python -m bpebench.benchmarks.false_alarms --runs 1000 --jobs 2

Run ``i`` verifies the registered encoder ``i mod k`` (all of them in turn, approximate ones
included: their exactness checks fail by design and count as expected failures, not alarms)
with every applicable check, under hypothesis seed ``i`` (no example database, not
derandomized), on drawn vocabularies and on one real vocabulary (cl100k_base, o200k_base and
mistral_v1 in turn). Runs share nothing but the vocabularies; ``--jobs`` processes take them
in turn. A false alarm is any result that is neither a pass, an expected failure, nor "not
applicable". The script prints every alarm with its reproduce line, and the totals:

    1000 runs, 15913 checks: 0 false alarms (0 runs with one) in 2891 s

Exit 1 if there was an alarm.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

REAL = ("cl100k_base", "o200k_base", "mistral_v1")


def _one_run(args: tuple[int, int | None, float]) -> tuple[int, str, int, list[str], float]:
    """(run, encoder, checks run, alarms, seconds) of run ``i``."""
    i, max_examples, call_timeout = args
    from bpebench.algorithms.core.registry import encoder_names
    from bpebench.properties.kit import check_encoder
    from bpebench.properties.settings import load_profile

    load_profile("dev")
    names = encoder_names()
    name = names[i % len(names)]
    start = time.perf_counter()
    results = check_encoder(name, ["random", REAL[i % len(REAL)]], max_examples, isolate=False,
                            call_timeout=call_timeout, profile="dev", seed=i)
    ran = sum(r.passed is not None for r in results)
    alarms = [f"run {i} ({name}, seed {i}) {r.check} on {r.vocabulary}: {r.message[:300]}\n    reproduce: {r.reproduce}"
              for r in results if not r.ok]
    return i, name, ran, alarms, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--first", type=int, default=0, help="seed of the first run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--max-examples", type=int, default=None, help="per check (default: the dev profile's 30)")
    parser.add_argument("--call-timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    checks = alarms = alarm_runs = 0
    per_encoder: dict[str, list[float]] = {}
    work = [(i, args.max_examples, args.call_timeout) for i in range(args.first, args.first + args.runs)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for done, (i, name, ran, found, seconds) in enumerate(pool.map(_one_run, work, chunksize=1), 1):
            checks += ran
            alarms += len(found)
            alarm_runs += bool(found)
            per_encoder.setdefault(name, []).append(seconds)
            for line in found:
                print(line, flush=True)
            if done % 50 == 0 or done == len(work):
                print(f"{done} runs, {checks} checks, {alarms} false alarms, {time.perf_counter() - start:.0f} s",
                      flush=True)
    for name, times in sorted(per_encoder.items()):
        print(f"  {name:<14} {len(times):>4} runs, {sum(times) / len(times):6.1f} s per run")
    print(f"{args.runs} runs, {checks} checks: {alarms} false alarms ({alarm_runs} runs with one) in"
          f" {time.perf_counter() - start:.0f} s")
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
