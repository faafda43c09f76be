"""Commands import only what they need: ``encode``, ``decode``, ``vocab`` and ``list`` never load
pandas, matplotlib, hypothesis or dask (issue 25). Each command runs in a fresh interpreter, which
then lists the heavy modules present in ``sys.modules``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HF_FIXTURE = Path(__file__).parent / "golden" / "bytelevel_bpe.json"
SPM_FIXTURE = Path(__file__).parent / "golden" / "spm_bpe.model"
HEAVY = ("pandas", "matplotlib", "hypothesis", "dask")

_PROBE = """
import contextlib, io, json, sys
from bpebench.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(%r))}))
""" % (HEAVY,)


def _heavy_imports(tmp_path: Path, *argv: str) -> dict:
    env = {"BPEBENCH_CACHE": str(tmp_path / "cache"), "BPEBENCH_AOT": "0", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=300,
                          env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [
    ("list",),
    ("encode", "--vocab", str(HF_FIXTURE), "hello world"),
    ("encode", "--vocab", str(SPM_FIXTURE), "--raw", "hello"),
    ("decode", "--vocab", str(HF_FIXTURE), "1", "2", "3"),
    ("vocab", str(HF_FIXTURE)),
    ("vocab", str(SPM_FIXTURE)),
], ids=lambda a: " ".join(Path(w).name for w in a))
def test_core_commands_import_no_heavy_library(tmp_path, argv):
    result = _heavy_imports(tmp_path, *argv)
    assert result["code"] == 0
    assert result["heavy"] == [], f"bpebench {' '.join(argv)} imported {result['heavy']}"


def test_the_full_parser_still_lists_every_command(tmp_path):
    """Leaving the other areas' modules out for core commands must not hide them from ``--help``."""
    proc = subprocess.run([sys.executable, "-m", "bpebench", "--help"], capture_output=True, text=True, timeout=300,
                          env={"BPEBENCH_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    for command in ("encode", "decode", "vocab", "list", "verify", "report", "corpora", "mask"):
        assert f"    {command}" in proc.stdout, command
