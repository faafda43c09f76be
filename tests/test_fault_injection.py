"""A fast sample of ``benchmarks/fault_injection.py`` (issue 25): damaged vocabulary-store and Unicode
cache files still give tiktoken's ids for cl100k, the run after needs no repair, and nothing is left
running. The full run's counts are in ``docs/reliability.md``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_fault_injection_fast_sample(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fault_injection.py"), "--only", "caches",
                           "--cache-kinds", "vocabulary,unicode", "--damages", "flip-tail,garbage", "--seed", "5"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("  caches ")]
    assert len(lines) == 4 and all(line.endswith(" ok") for line in lines), lines
    assert any("(warned)" in line for line in lines)  # the damage was seen, not only survived
    assert "| caches | 4 | 4 | 0 |" in proc.stdout
