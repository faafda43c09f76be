"""Reports: measure every encoder and peer, verify them, and write one HTML page.

Public API::

    from bpebench.reports import PRESETS, ResultStore, RunContext, run_sweep, render, compare_dirs, import_asv

    ctx = RunContext(plan=PRESETS["quick"], store=ResultStore("report"), vocab_names=["o200k_base"])
    run_sweep(ctx)              # appends every measurement to report/*.csv as it is taken
    render("report")            # report/index.html + PNG charts beside it

The command line is ``bpebench report`` (``reports/cli.py``). Modules: ``plan``
(presets), ``sweep`` (runner) with the stages in ``stages_timing``,
``stages_checks`` and ``stages_incremental``; ``store`` (CSV result store);
``timing`` (measurement); ``subjects`` and ``inputs`` (what is measured, on
what); ``analysis``, ``plots``, ``html``, ``render`` (the page); ``compare``
(two runs), ``asv_import`` (asv results), ``browser`` (headless Chromium checks).
"""

from bpebench._lazy import lazy_exports

_EXPORTS = {"import_asv": "asv_import", "compare_dirs": "compare", "FULL": "plan", "PRESETS": "plan",
            "QUICK": "plan", "SweepPlan": "plan", "SECTIONS": "render", "render": "render",
            "ResultStore": "store", "run_sweep": "sweep", "stage_names": "sweep", "RunContext": "tasks"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
