"""asv benchmark suites (``bench_*.py``); shared preparation in :mod:`bpebench.benchmarks.common`.

Run ``asv run --python=same --quick`` for a fast pass over the current
environment, ``asv run`` for the history in asv-managed virtualenvs, then
``asv publish`` and ``asv preview`` for the HTML.
"""
