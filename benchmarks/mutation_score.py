"""The kit's own mutation score: how many of ``properties/mutants.py`` ``verify`` rejects, and how fast.

    python -m bpebench.benchmarks.mutation_score --profile ci
    python -m bpebench.benchmarks.mutation_score --profile dev --seed 1
    python -m bpebench.benchmarks.mutation_score --profile ci --as-before

Every mutant (a realistic bug, one small change away from a correct encoder) goes through
``bpebench verify`` with the default vocabularies (drawn ones, cl100k_base, o200k_base,
mistral_v1) under the given hypothesis profile; it is caught when some check fails for real (an
expected failure of an approximate encoder does not count, and no mutant is approximate). The
chunking mutants (a split and a limit that assume counts only grow) replace the chunking
functions and go through ``verify naive`` on the chunking checks. The controls (the same code
without the bug) must pass, or a catch would mean nothing.

``--as-before`` runs the kit as it was before issue 18: the checks it had then and none of the
strategy features added since (merges out of priority order, special tokens in drawn
vocabularies, long operation sequences), to show what the new ones add.

Prints one line per mutant (caught by which checks, seconds) and the score with the time.
Exit 1 if a control fails.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time

#: the checks the kit had before issue 18
CHECKS_BEFORE = ("output-types", "round-trip", "count-consistent", "equals-naive", "token-bytes", "valid-output",
                 "long-inputs", "pipeline", "appending", "prepending", "interval", "split-at-n", "minimal-bound")


def _verify(target, *, profile, seed, checks, call_timeout, check_timeout, vocabularies=None):
    from bpebench.properties.kit import DEFAULT_VOCABULARIES, check_encoder

    isolate = getattr(target, "__name__", "") == "HangsInCompiledCode"  # only a worker can stop it
    return check_encoder(target, vocabularies or DEFAULT_VOCABULARIES, None, checks=checks, isolate=isolate,
                         check_timeout=check_timeout, call_timeout=call_timeout, profile=profile, seed=seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="ci", choices=["ci", "dev", "fuzz"])
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (dev and fuzz profiles)")
    parser.add_argument("--max-examples", type=int, default=None)
    parser.add_argument("--as-before", action="store_true", help="the checks and strategies of before issue 18")
    parser.add_argument("--call-timeout", type=float, default=5.0)
    parser.add_argument("--check-timeout", type=float, default=120.0)
    args = parser.parse_args(argv)

    from bpebench.algorithms.pipeline import chunking
    from bpebench.properties import mutants
    from bpebench.properties.checks import CHECKS
    from bpebench.properties.settings import load_profile
    from bpebench.properties.strategies import FEATURES, without

    load_profile(args.profile)
    checks = list(CHECKS_BEFORE) if args.as_before else None
    features = list(FEATURES) if args.as_before else []
    options = dict(profile=args.profile, seed=args.seed, checks=checks, call_timeout=args.call_timeout,
                   check_timeout=args.check_timeout)
    if args.max_examples:
        from hypothesis import settings

        settings.register_profile("score", settings.get_profile(args.profile), max_examples=args.max_examples)
        load_profile("score")
        options["profile"] = "score"
    start = time.perf_counter()
    caught = []
    controls_ok = True
    with contextlib.ExitStack() as stack:
        for feature in features:
            stack.enter_context(without(feature))
        for cls in mutants.MUTANTS + mutants.CONTROLS:
            t = time.perf_counter()
            results = _verify(cls, **options)
            failing = sorted({r.check for r in results if not r.ok})
            is_control = cls in mutants.CONTROLS
            if is_control:
                controls_ok &= not failing
            else:
                caught.append(bool(failing))
            verdict = ("FAILS (a control must pass)" if failing else "passes") if is_control else \
                ("caught by " + ", ".join(failing) if failing else "NOT CAUGHT")
            print(f"  {cls.__name__:<36} {verdict:<70} {time.perf_counter() - t:7.1f} s", flush=True)
        chunking_caught = []
        if not args.as_before:
            for function, broken in mutants.CHUNKING_MUTANTS.items():
                t = time.perf_counter()
                original = getattr(chunking, function)
                setattr(chunking, function, broken)
                try:
                    results = _verify("naive", **{**options, "checks": ["split-at-n", "count-till-limit"]},
                                      vocabularies=["random", "mistral_v1"])
                finally:
                    setattr(chunking, function, original)
                failing = sorted({r.check for r in results if not r.ok})
                chunking_caught.append(bool(failing))
                print(f"  chunking {function:<27} {'caught by ' + ', '.join(failing) if failing else 'NOT CAUGHT':<70}"
                      f" {time.perf_counter() - t:7.1f} s", flush=True)
    what = "as before issue 18" if args.as_before else "now"
    print(f"profile {args.profile}{'' if args.seed is None else f' seed {args.seed}'} ({what}): {sum(caught)} of"
          f" {len(caught)} mutants caught" + (f", {sum(chunking_caught)} of {len(chunking_caught)} chunking mutants"
                                              if chunking_caught else "")
          + f", controls {'pass' if controls_ok else 'FAIL'}, in {time.perf_counter() - start:.0f} s")
    return 0 if controls_ok else 1


if __name__ == "__main__":
    sys.exit(main())
