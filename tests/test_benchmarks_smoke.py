"""Smoke test of the asv suites: every bench module imports, and every benchmark's setup and one
call run at its smallest parameters with the default encoder, so a broken benchmark fails here
rather than in a 15-minute asv run."""

from __future__ import annotations

import importlib
import inspect
import math
import os
import pkgutil

import pytest

from bpebench import benchmarks
from bpebench.algorithms.core.registry import default_encoder_name, encoder_names

BENCH_MODULES = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_"))
PREFIXES = ("time_", "track_", "peakmem_", "mem_", "timeraw_")


def _benchmark_classes():
    for module_name in BENCH_MODULES:
        module = importlib.import_module(f"{benchmarks.__name__}.{module_name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and any(m.startswith(PREFIXES) for m in dir(cls)):
                yield pytest.param(cls, id=f"{module_name}.{name}")


def _smallest(values: list):
    """The default encoder's entry if the list names implementations, else the first (smallest) value."""
    default = default_encoder_name()
    for value in values:
        if isinstance(value, str) and value.split("/")[-1] == default:
            return value
    return values[0]


def test_there_are_bench_modules():
    assert {"bench_scaling", "bench_pipeline", "bench_worst_case", "bench_incremental", "bench_load",
            "bench_tracks"} <= set(BENCH_MODULES)


@pytest.mark.parametrize("cls", list(_benchmark_classes()))
def test_benchmark_runs_once_at_its_smallest_parameters(cls):
    params = [_smallest(values) for values in getattr(cls, "params", [])]
    assert len(params) == len(getattr(cls, "param_names", [])), "each parameter list needs a name"
    bench = cls()
    if hasattr(bench, "setup"):
        bench.setup(*params)  # NotImplementedError here is a failure: the default must be supported
    methods = [m for m in dir(bench) if m.startswith(PREFIXES)]
    assert methods
    for method in methods:
        result = getattr(bench, method)(*params)
        if method.startswith("track_"):
            assert isinstance(result, (int, float)) and math.isfinite(result), (method, result)
    if hasattr(bench, "teardown"):
        bench.teardown(*params)


def test_raw_suites_cover_every_registered_encoder():
    from bpebench.benchmarks import bench_scaling
    from bpebench.benchmarks import bench_worst_case

    for cls in (bench_scaling.RawEncodeScaling, bench_worst_case.AdversarialRaw):
        assert set(encoder_names()) <= set(cls.params[0])
    from bpebench.benchmarks.bench_pipeline import PipelineEncode

    assert {f"ours/{n}" for n in encoder_names()} <= set(PipelineEncode.params[0])


def test_a_quadratic_encoder_is_skipped_by_measurement_not_by_name(monkeypatch):
    """Every scaling suite predicts each size's time from smaller ones: a registered encoder that is
    quadratic (an unknown plugin here: the reference's algorithm under another name) is skipped at
    large sizes, and runs at small ones."""
    from bpebench.algorithms.core import registry
    from bpebench.algorithms.naive import NaiveEncoder
    from bpebench.benchmarks import common
    from bpebench.benchmarks.bench_scaling import RawEncodeScaling

    class QuadraticPlugin(NaiveEncoder):
        name = "zz_quadratic_plugin"
        capabilities = frozenset({"exact"})  # not marked as the reference

    monkeypatch.setitem(registry._REGISTRY, QuadraticPlugin.name, QuadraticPlugin)
    monkeypatch.setattr(common, "BUDGET_SECONDS", 0.5)
    with pytest.raises(NotImplementedError, match="over budget"):
        RawEncodeScaling().setup(QuadraticPlugin.name, 100_000)
    RawEncodeScaling().setup(QuadraticPlugin.name, 100)


def test_tokens_per_byte_agrees_with_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.benchmarks import common
    from bpebench.benchmarks.bench_tracks import TokensPerByte

    bench = TokensPerByte()
    bench.setup("o200k_base", "prose-en")
    vocab = common.vocabulary("o200k_base")
    from bpebench.algorithms.formats.patterns import resolve_pattern

    encoding = tiktoken.Encoding("o200k-check", pat_str=resolve_pattern(vocab.pattern),
                                 mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)}, special_tokens={})
    expected = len(encoding.encode_ordinary(bench.text)) / len(bench.text.encode())
    assert bench.track_tokens_per_byte("o200k_base", "prose-en") == pytest.approx(expected)


@pytest.mark.parametrize("cost,skipped", [(lambda n: 1e-6 * n, False), (lambda n: 1e-8 * n * n, True)])
def test_budget_check_extrapolates_the_measured_growth(monkeypatch, cost, skipped):
    """A fake clock makes the implementation's cost exactly ``cost(n)`` seconds for n bytes."""
    import time as time_module

    from bpebench.benchmarks import common

    clock = [0.0]
    monkeypatch.setattr(time_module, "perf_counter", lambda: clock[0])
    probed = []

    def run(data):
        probed.append(len(data))
        clock[0] += cost(len(data))

    if skipped:  # 1e-8 n^2: 1 kB 0.01 s, 10 kB 1 s, 100 kB would be 100 s
        with pytest.raises(NotImplementedError, match=r"n\^2\.0 predicts 100 s at 100000"):
            common.skip_if_over_budget(run, lambda n: b"x" * n, 1_000_000)
        assert probed == [1_000, 10_000]  # never ran the probe that would blow the budget
    else:  # linear: 1 MB would take 1 s
        common.skip_if_over_budget(run, lambda n: b"x" * n, 1_000_000)
        assert probed == [1_000, 10_000, 100_000]


def test_thread_ceiling_adds_the_fastest_cpus_speeds():
    from bpebench.benchmarks.protocol import thread_ceiling

    # hand-worked: one CPU at 0.65 of the other can add only 0.65 of a thread's work
    assert thread_ceiling({0: 65.0, 1: 100.0}, 2) == pytest.approx(1.65)
    assert thread_ceiling({0: 100.0, 1: 50.0, 2: 80.0}, 2) == pytest.approx(1.8)
    assert thread_ceiling({0: 100.0}, 4) == 1.0
    assert thread_ceiling({}, 2) is None


@pytest.mark.parametrize("n", range(1, 9))
def test_balanced_orders_put_each_after_every_other_equally_often(n):
    """Every order a permutation; each item in each position, and each ordered pair of neighbours,
    equally often (counted by hand below). A rotation of one order fails the second count from three
    items on: each item always follows the same one."""
    from collections import Counter

    from bpebench.benchmarks.protocol import balanced_orders

    orders = balanced_orders(n)
    assert len(orders) == (n if n % 2 == 0 else 2 * n)
    assert all(sorted(order) == list(range(n)) for order in orders)
    positions = Counter((item, i) for order in orders for i, item in enumerate(order))
    assert set(positions.values()) == {len(orders) // n} and len(positions) == n * n
    pairs = Counter(pair for order in orders for pair in zip(order, order[1:]))
    assert len(pairs) == n * (n - 1) and len(set(pairs.values())) <= 1
    rotations = [list(range(i, n)) + list(range(i)) for i in range(n)]
    rotated = Counter(pair for order in rotations for pair in zip(order, order[1:]))
    assert (len(rotated) == n * (n - 1)) == (n <= 2)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_cpu_speeds_visits_every_allowed_cpu_and_restores_the_affinity():
    from bpebench.benchmarks.protocol import cpu_speeds

    allowed = os.sched_getaffinity(0)
    seen = []
    speeds = cpu_speeds(lambda: seen.append(os.sched_getaffinity(0)), rounds=2)
    assert sorted(speeds) == sorted(allowed) and all(s > 0 for s in speeds.values())
    assert seen == [{cpu} for cpu in sorted(allowed) for _ in range(3)]  # pinned: one untimed, two timed
    assert os.sched_getaffinity(0) == allowed
