"""Reports: measure every encoder and peer, verify them, and write one HTML page.

Public API::

    from reports import PRESETS, ResultStore, RunContext, run_sweep, render, compare_dirs, import_asv

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

from .asv_import import import_asv
from .compare import compare_dirs
from .plan import FULL, PRESETS, QUICK, SweepPlan
from .render import SECTIONS, render
from .store import ResultStore
from .sweep import RunContext, run_sweep, stage_names

__all__ = ["FULL", "PRESETS", "QUICK", "SECTIONS", "ResultStore", "RunContext", "SweepPlan", "compare_dirs",
           "import_asv", "render", "run_sweep", "stage_names"]
