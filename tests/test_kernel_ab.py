"""benchmarks/kernel_ab.py: its own copies of the vocabulary's tables, and one line for a bad argument."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "kernel_ab.py"


@pytest.fixture
def kernel_ab(monkeypatch):
    # the script sets these for its own process when imported: keep them out of the test session
    monkeypatch.delenv("BPEBENCH_AOT", raising=False)
    monkeypatch.delenv("BPEBENCH_BENCH_CLOCK", raising=False)
    import importlib

    return importlib.import_module("bpebench.benchmarks.kernel_ab")


def _leaves(plan):
    if isinstance(plan, np.ndarray):
        yield plan
    elif isinstance(plan, tuple) and hasattr(plan, "_fields"):
        for field in plan:
            yield from _leaves(field)


def test_the_variant_reads_tables_of_its_own(kernel_ab):
    from bpebench import load_vocabulary
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline

    plan = FusedPipeline(load_vocabulary("cl100k_base")).plan
    copy = kernel_ab.copied(plan)
    pairs = list(zip(_leaves(plan), _leaves(copy)))
    assert len(pairs) > 10 and type(copy) is type(plan)
    for original, mine in pairs:
        assert mine.dtype == original.dtype and mine.shape == original.shape
        assert np.array_equal(mine, original)
        if original.size:
            assert not np.shares_memory(mine, original)
            assert mine.ctypes.data % 64 == 0


def test_mapped_tables_are_private_file_mappings(kernel_ab):
    """``--mapped-tables``: the same contents, in a copy-on-write mapping of a file (writable, and a
    write does not reach the original)."""
    import mmap

    from bpebench import load_vocabulary
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline

    plan = FusedPipeline(load_vocabulary("cl100k_base")).plan
    copy = kernel_ab.copied(plan, kernel_ab.mapped_copy)
    for original, mine in zip(_leaves(plan), _leaves(copy)):
        assert mine.dtype == original.dtype and mine.shape == original.shape and np.array_equal(mine, original)
        if original.size:
            owner = mine
            while isinstance(owner, np.ndarray):
                owner = owner.base
            owner = owner.obj if isinstance(owner, memoryview) else owner
            assert isinstance(owner, mmap.mmap) and mine.flags.writeable
            assert not np.shares_memory(mine, original)
    table = copy.short_tokens
    before = int(plan.short_tokens[0, 0])
    table[0, 0] = before + 1
    assert int(plan.short_tokens[0, 0]) == before and int(table[0, 0]) == before + 1


@pytest.mark.parametrize("arguments, message", [
    ([], "give a variant file or --same"),
    (["--same", "x.py"], "give a variant file or --same"),
    (["/no/such/file.py"], "no such file"),
    (["--same", "--rounds", "0"], "--rounds must be at least 1"),
    (["--same", "--also", "kernels._x=/no/such.py"], "--also wants NAME=PATH"),
    (["--same", "--vocab", "no-such-vocabulary"], "unknown vocabulary"),
])
def test_a_bad_argument_is_one_line_and_exit_2(arguments, message):
    done = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_a_variant_that_does_not_import_is_one_line(tmp_path):
    broken = tmp_path / "fast_pipeline_b.py"
    broken.write_text("from ..kernels.no_such_kernel import merge\n")
    done = subprocess.run([sys.executable, str(SCRIPT), str(broken)], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert done.returncode == 2
    assert done.stderr.startswith("kernel_ab: cannot load the variant: ModuleNotFoundError")
    assert len(done.stderr.strip().splitlines()) == 1
