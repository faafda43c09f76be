"""``bpebench verify`` and ``bpebench fuzz``: the conformance kit from the command line.

``bpebench verify TARGET`` (TARGET = ``module:Class`` or a registered algorithm)
prints one row per check and vocabulary; a failure shows its minimal
counterexample and a command that replays it. Exit 0 only if every applicable
check passed (approximate encoders' expected failures included), 1 otherwise, 2
for a user mistake (unknown class, bad option).

``bpebench fuzz`` runs the same checks (and, with ``--corollaries``, the
corollary properties of ``properties/test_corollaries.py``) with the long
``fuzz`` profile and the example database (``.hypothesis/``), round after round
with fresh random seeds,
until the time budget is spent (checked between rounds, so the last round may
overrun by one round's time).
"""

from __future__ import annotations

import sys
import time

from bpebench.errors import BpebenchError


def _vocab_list(values: list[str] | None, default) -> list[str]:
    if not values:
        return list(default)
    out: list[str] = []
    for v in values:
        out.extend(x for x in v.split(",") if x)
    return out


def _check_named_vocabularies(specs) -> None:
    """A vocabulary the user named must exist (a built-in whose package is missing is only n/a)."""
    from bpebench.algorithms.formats import BUILTIN

    from .vocabularies import available

    for spec in specs or []:
        if spec == "random" or spec in BUILTIN:
            continue
        reason = available(spec)
        if reason:
            raise BpebenchError(reason)


def _print_result(r, *, verbose: bool = False, out=None) -> None:
    from .guard import shown

    out = out or sys.stdout
    secs = f"{r.seconds:7.2f}s"
    print(f"  {r.check:<17} {r.vocabulary:<28} {r.status:<31} {secs}", file=out)
    if r.passed is False or (verbose and r.message) or r.status == "not run":
        print(f"      {r.message}", file=out)
    if r.passed is False:
        for line in r.details:
            print(f"        {line}", file=out)
        if r.counterexample is not None:
            print(f"      counterexample: {shown(r.counterexample, 240)}", file=out)
        if r.reproduce:
            print(f"      reproduce: {r.reproduce}", file=out)
    out.flush()


def _summary(results) -> tuple[int, str]:
    failed = [r for r in results if not r.ok]
    counts = {s: sum(1 for r in results if r.status == s) for s in
              ("pass", "FAIL", "expected failure (approximate)", "not run", "n/a")}
    text = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    return (1 if failed else 0), text


def cmd_verify(args) -> int:
    from .checks import payload_from_json
    from .kit import DEFAULT_VOCABULARIES, check_encoder, replay, resolve_target

    cls, target = resolve_target(args.target)
    if args.example:
        text = args.example
        if text.startswith("@"):
            try:
                with open(text[1:], encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:
                raise BpebenchError(f"--example {args.example}: cannot read the file: {exc.strerror}") from None
        try:
            payload = payload_from_json(text)
        except ValueError as exc:
            raise BpebenchError(f"--example is not valid JSON: {exc}") from None
        if not isinstance(payload, dict) or "vocab" not in payload:
            raise BpebenchError("--example must be a JSON object with a 'vocab' (the payload a failure prints)")
        if not args.check or len(args.check) != 1:
            raise BpebenchError("--example needs exactly one --check")
        r = replay(target, args.check[0], payload, call_timeout=args.call_timeout, isolate=not args.no_isolate,
                   check_timeout=args.timeout)
        print(f"{target}: replaying one example")
        _print_result(r, verbose=True)
        return 0 if r.ok else 1
    if args.exhaustive:
        return _cmd_exhaustive(args, cls, target)
    if args.max_len is not None:
        raise BpebenchError("--max-len goes with --exhaustive")
    vocabularies = _vocab_list(args.vocab, DEFAULT_VOCABULARIES)
    _check_named_vocabularies(args.vocab and vocabularies)
    checks = [c for v in args.check or [] for c in v.split(",") if c] or None
    exact = "exact" if "exact" in getattr(cls, "capabilities", ()) else "approximate"
    print(f"verify {target} ({exact}; capabilities: {', '.join(sorted(getattr(cls, 'capabilities', ())))})")
    print(f"  {'check':<17} {'vocabulary':<28} {'status':<31} {'time':>8}")
    start = time.perf_counter()
    results = check_encoder(cls if args.no_isolate else target, vocabularies, args.max_examples, checks=checks,
                            isolate=not args.no_isolate, check_timeout=args.timeout,
                            call_timeout=args.call_timeout, profile=args.profile, seed=args.seed,
                            exitfirst=args.exitfirst, on_result=lambda r: (r.status != "n/a" or args.verbose)
                            and _print_result(r, verbose=args.verbose))
    skipped: dict[str, set[str]] = {}
    for r in results:
        if r.status == "n/a":
            skipped.setdefault(r.message, set()).add(r.check if "available" not in r.message else r.vocabulary)
    if skipped and not args.verbose:
        print("  not applicable: " + "; ".join(f"{', '.join(sorted(v))} ({reason})" for reason, v in skipped.items()))
    code, text = _summary(results)
    print(f"{text} in {time.perf_counter() - start:.1f}s: {'OK' if code == 0 else 'FAILED'}")
    return code


def _cmd_exhaustive(args, cls, target) -> int:
    """Proof mode: every input up to --max-len bytes over each vocabulary's alphabet."""
    from .exhaustive import DEFAULT_MAX_LEN, PROOF_VOCABULARIES, plan
    from .kit import replay
    from .vocabularies import short_name

    if args.check or args.example:
        raise BpebenchError("--exhaustive runs its own check: leave out --check and --example")
    max_len = DEFAULT_MAX_LEN if args.max_len is None else args.max_len
    vocabularies = _vocab_list(args.vocab, PROOF_VOCABULARIES)
    _check_named_vocabularies(args.vocab and vocabularies)
    planned = [(spec, *plan(spec, max_len)) for spec in vocabularies]  # too big: one line, before any run
    print(f"verify {target} --exhaustive: every input of 0..{max_len} bytes over each vocabulary's alphabet")
    print(f"  {'check':<17} {'vocabulary':<28} {'status':<31} {'time':>8}")
    start = time.perf_counter()
    results = []
    for spec, alphabet, total in planned:
        r = replay(cls if args.no_isolate else target, "exhaustive", {"vocab": spec, "max_len": max_len},
                   call_timeout=args.call_timeout, isolate=not args.no_isolate, check_timeout=args.timeout)
        r.vocabulary = short_name(spec)
        results.append(r)
        _print_result(r, verbose=True)
    code, text = _summary(results)
    proved = sum(total for (_, _, total), r in zip(planned, results) if r.passed)
    print(f"{text}; {proved:,} inputs checked on the vocabularies that passed, in {time.perf_counter() - start:.1f}s:"
          f" {'OK' if code == 0 else 'FAILED (each failure above says at which input)'}")
    return code


def cmd_fuzz(args) -> int:
    from bpebench.algorithms.core.registry import encoder_names

    from .kit import DEFAULT_VOCABULARIES, check_encoder, resolve_target

    targets = [args.algorithm] if args.algorithm else encoder_names()
    for t in targets:
        resolve_target(t)  # unknown names fail now, in one line
    vocabularies = _vocab_list(args.vocab, DEFAULT_VOCABULARIES)
    _check_named_vocabularies(args.vocab and vocabularies)
    budget = args.minutes * 60.0
    end = time.monotonic() + budget
    print(f"fuzz {', '.join(targets)} for {args.minutes:g} min (profile fuzz, example database .hypothesis/)")
    failures: dict[tuple, object] = {}
    rounds = 0
    while time.monotonic() < end:
        rounds += 1
        if args.corollaries:
            failures.update(_fuzz_corollaries(rounds))
        for t in targets:
            if rounds > 1 and time.monotonic() >= end:  # every target gets at least one round
                break
            results = check_encoder(t, vocabularies, args.max_examples, isolate=True, profile="fuzz",
                                    check_timeout=args.timeout, call_timeout=args.call_timeout)
            new = 0
            for r in results:
                key = (r.encoder, r.check, r.vocabulary)
                if not r.ok and key not in failures:
                    failures[key] = r
                    new += 1
                    print(f"{t}:")
                    _print_result(r)
            ran = sum(r.passed is not None for r in results)
            print(f"round {rounds} {t}: {ran} checks, {new} new failures", flush=True)
    print(f"{rounds} rounds, {len(failures)} failing checks")
    return 1 if failures else 0


def _fuzz_corollaries(round_no: int) -> dict:
    """One pytest run of the corollary properties under the fuzz profile (a subprocess)."""
    import os
    import subprocess
    from pathlib import Path

    path = Path(__file__).with_name("test_corollaries.py")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "fuzz"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(path)],
                          capture_output=True, text=True, env=env)
    last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    print(f"round {round_no} corollaries: {last}", flush=True)
    if proc.returncode == 0:
        return {}
    print(proc.stdout[-3000:])
    return {("corollaries", round_no): last}


def register(subparsers) -> None:
    from .checks import CHECKS
    from .kit import DEFAULT_CALL_TIMEOUT, DEFAULT_CHECK_TIMEOUT

    p = subparsers.add_parser(
        "verify", help="run the conformance kit on an encoder class (module:Class) or a registered algorithm")
    p.add_argument("target", help="module:Class, or a registered algorithm name")
    p.add_argument("--vocab", action="append", metavar="SPEC",
                   help="'random' (drawn trained vocabularies), a built-in name, 'seed', a trained:... spec"
                        " or a path; repeat or comma-separate (default: random + the real vocabularies)")
    p.add_argument("--check", action="append", metavar="ID", help=f"only these checks ({', '.join(CHECKS)})")
    p.add_argument("--max-examples", type=int, default=None, help="examples per check (default: the profile's)")
    p.add_argument("--example", default=None,
                   help="replay one payload (the JSON a failure prints, or @FILE holding it)")
    p.add_argument("--profile", default=None, choices=["dev", "ci", "fuzz"],
                   help="hypothesis profile (default: $HYPOTHESIS_PROFILE, else ci under $CI, else dev)")
    p.add_argument("--timeout", type=float, default=DEFAULT_CHECK_TIMEOUT,
                   help=f"seconds per check before the worker is killed (default {DEFAULT_CHECK_TIMEOUT:g})")
    p.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT,
                   help=f"seconds (wall clock) per encoder call before it counts as a hang (default {DEFAULT_CALL_TIMEOUT:g})")
    p.add_argument("--no-isolate", action="store_true", help="run in this process (no protection from hangs in compiled code)")
    p.add_argument("--verbose", "-v", action="store_true", help="show the message of passing checks too")
    p.add_argument("--exitfirst", "-x", action="store_true",
                   help="stop at the first failing check (the rest are reported as not run)")
    p.add_argument("--seed", type=int, default=None,
                   help="hypothesis seed: other examples for every value (no example database, not derandomized)")
    p.add_argument("--exhaustive", action="store_true",
                   help="proof mode: every input up to --max-len bytes over each vocabulary's alphabet (default:"
                        " small trained vocabularies over three letters); a pass is a proof for them")
    p.add_argument("--max-len", type=int, default=None, metavar="L",
                   help="longest input of --exhaustive (default 8)")
    p.set_defaults(func=cmd_verify)

    p = subparsers.add_parser("fuzz", help="run the kit with the long fuzz profile until the time budget is spent")
    p.add_argument("--algorithm", "-a", default=None, help="a registered name or module:Class (default: all)")
    p.add_argument("--minutes", type=float, default=10.0, help="time budget (default 10)")
    p.add_argument("--vocab", action="append", metavar="SPEC", help="as for verify")
    p.add_argument("--max-examples", type=int, default=200,
                   help="examples per check and round (default 200; the budget is checked between rounds)")
    p.add_argument("--timeout", type=float, default=DEFAULT_CHECK_TIMEOUT, help="seconds per check")
    p.add_argument("--call-timeout", type=float, default=DEFAULT_CALL_TIMEOUT, help="seconds (wall clock) per encoder call")
    p.add_argument("--corollaries", action="store_true",
                   help="also run the corollary properties (properties/test_corollaries.py) each round")
    p.set_defaults(func=cmd_fuzz)
