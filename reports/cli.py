"""``bpebench report``: measure, verify and write the HTML comparison report.

    bpebench report --quick                      # < 5 min: one vocabulary, one corpus per category
    bpebench report --full                       # every built-in vocabulary, every corpus, up to 1 MB
    bpebench report --resume --out DIR           # continue an interrupted run
    bpebench report --render-only --out DIR      # draw the page from what DIR holds
    bpebench report --from-asv [.asv/results]    # the same page from asv results
    bpebench report --compare OLD_DIR NEW_DIR    # ratio new/old per measurement, regressions flagged
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bpebench.errors import BpebenchError

DEFAULT_OUT = "report"


def _names(values: list[str] | None) -> list[str] | None:
    """``["a,b", "c"]`` -> ``["a", "b", "c"]``; None stays None."""
    if not values:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help="measure every encoder and peer, verify them, write an HTML report",
        description="Run an in-process sweep (timings, agreement with naive, conformance kit) and write "
                    "DIR/index.html with PNG charts and CSV results beside it.",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="preset", action="store_const", const="quick",
                      help="small sweep, under 5 minutes (default)")
    size.add_argument("--full", dest="preset", action="store_const", const="full",
                      help="every built-in vocabulary and corpus, inputs up to 1 MB (long)")
    size.add_argument("--preset", dest="preset", choices=["quick", "full", "tiny"], help=argparse.SUPPRESS)
    p.add_argument("--vocab", action="append", metavar="NAME",
                   help="vocabulary name or path (repeatable or comma-separated; default: o200k_base for "
                        "--quick, every installed built-in for --full)")
    p.add_argument("--algorithms", action="append", metavar="NAMES",
                   help="only these registered encoders (comma-separated; default: all)")
    p.add_argument("--peers", action="append", metavar="NAMES", help="only these peers (default: all installed)")
    p.add_argument("--corpora", action="append", metavar="NAMES",
                   help="only these corpora (default: the first of each category for --quick, all for --full)")
    p.add_argument("--stages", action="append", metavar="NAMES", help="only these stages (default: all)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"output directory (default: {DEFAULT_OUT}/)")
    p.add_argument("--resume", action="store_true", help="keep the results in DIR and measure only what is missing")
    p.add_argument("--render-only", action="store_true", help="measure nothing; render DIR/index.html from DIR")
    p.add_argument("--from-asv", nargs="?", const=".asv/results", metavar="ASV_RESULTS_DIR",
                   help="build the report from asv results (default .asv/results) instead of measuring")
    p.add_argument("--compare", nargs=2, metavar=("OLD_DIR", "NEW_DIR"),
                   help="compare two result directories (ratio new/old per measurement); exit status 1 "
                        "when a regression is flagged")
    p.add_argument("--threshold", type=float, default=1.25, metavar="FACTOR",
                   help="--compare flags ratios beyond FACTOR or below 1/FACTOR (default 1.25)")
    p.add_argument("--screenshot", metavar="PNG", help="also save a PNG of the top of the page (needs chromium)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--isolation-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="an outside encoder's call (run in a forked child) counts as hung after this long"
                        " (default 600)")
    p.add_argument("--isolation-memory", type=float, default=4.0, metavar="GB",
                   help="memory an outside encoder's call may add before it counts as too much (default 4)")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    if args.compare:
        return _compare(args)
    out = Path(args.out)
    if args.from_asv is not None:
        from .asv_import import import_asv

        n = import_asv(args.from_asv, out)
        print(f"imported {n} asv measurements from {args.from_asv}", file=sys.stderr)
        return _render(args, out)
    if args.render_only:
        from .store import ResultStore

        if not ResultStore(out).has_results():
            raise BpebenchError(f"{out}: no results to render (run `bpebench report --out {out}` first)")
        return _render(args, out)
    return _measure(args, out)


def _measure(args, out: Path) -> int:
    from bpebench.algorithms.formats import BUILTIN, DEFAULT_VOCABULARY, load_vocabulary

    from .plan import PRESETS
    from .store import ResultStore
    from .subjects import select_encoders
    from .sweep import interrupts_recorded, run_sweep, stage_names
    from .tasks import RunContext

    plan = PRESETS[args.preset or "quick"]
    vocabs = _names(args.vocab)
    if vocabs:
        for name in vocabs:  # fail on a bad name before anything is written
            load_vocabulary(name)
    elif plan.preset != "full":
        vocabs = [DEFAULT_VOCABULARY]
    else:  # every built-in that loads here; the others are named, not fatal
        vocabs = []
        for builtin in BUILTIN.values():
            try:
                if builtin.available():
                    load_vocabulary(builtin.name)
                    vocabs.append(builtin.name)
            except BpebenchError as exc:
                print(f"bpebench: {builtin.name} left out: {exc}", file=sys.stderr)
    algorithms = _names(args.algorithms)
    select_encoders(algorithms)
    corpora = _names(args.corpora)
    _check_corpora(corpora)
    stages = _names(args.stages)
    if stages:
        unknown = [s for s in stages if s not in stage_names()]
        if unknown:
            from bpebench.errors import UnknownNameError

            raise UnknownNameError("stage", unknown[0], stage_names())
        stages = [s for s in stage_names() if s in stages]
    store = ResultStore(out)
    if args.resume and not store.has_results():
        print(f"nothing to resume in {out}: starting a new run", file=sys.stderr)
    if args.isolation_timeout <= 0 or args.isolation_memory <= 0:
        raise BpebenchError("--isolation-timeout and --isolation-memory must be positive")
    ctx = RunContext(plan=plan, store=store, vocab_names=vocabs, algorithms=algorithms, peers=_names(args.peers),
                     corpora=corpora, quiet=args.quiet, isolation_timeout=args.isolation_timeout,
                     isolation_memory=int(args.isolation_memory * 2**30))
    if not args.quiet:
        print(f"bpebench report ({plan.preset}): vocabularies {', '.join(vocabs)}; stages "
              f"{', '.join(stages or stage_names())}; each result is written to {out}/ as it is measured"
              " (Ctrl-C keeps them, --resume continues)", file=sys.stderr, flush=True)
    started = time.perf_counter()
    try:
        with interrupts_recorded() as interrupted:
            run_sweep(ctx, stages=stages, resume=args.resume)
            if interrupted():  # swallowed in the last task: the run is still an interrupted one
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        kept = sum(len(store.rows(t)) for t in ("timings.csv", "agreement.csv", "conformance.csv"))
        print(f"\ninterrupted: {kept} results kept in {out}/ (continue: bpebench report --resume --out {out}; "
              f"render what is there: bpebench report --render-only --out {out})", file=sys.stderr)
        return 130
    print(f"measured in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return _render(args, out)


def _check_corpora(names: list[str] | None) -> None:
    """Every name must be a registered corpus or an existing file / directory."""
    if not names:
        return
    try:
        from bpebench.corpora import names as corpus_names
    except ImportError:
        return
    known = corpus_names()
    for name in names:
        if name not in known and not Path(name).exists():
            from bpebench.errors import UnknownNameError

            raise UnknownNameError("corpus", name, known)


def _render(args, out: Path) -> int:
    from .render import render

    path = render(out)
    print(f"report written to {path}")
    if args.screenshot:
        from .browser import screenshot

        print(f"screenshot written to {screenshot(path, args.screenshot)}")
    return 0


def _compare(args) -> int:
    from .compare import compare_dirs, render_comparison

    old, new = (Path(d) for d in args.compare)
    if args.threshold <= 1:
        raise BpebenchError(f"--threshold must be a factor above 1 (e.g. 1.25), got {args.threshold:g}")
    table = compare_dirs(old, new, threshold=args.threshold)
    print(table.to_text())
    path = render_comparison(table, new / "compare.html")
    print(f"comparison written to {path}")
    return 1 if table.regressions else 0
