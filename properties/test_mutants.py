"""The kit's own test: ``bpebench verify`` rejects every mutant and passes correct encoders.

Each mutant in ``bpebench.properties.mutants`` is one realistic bug. Under the ``ci``
profile (derandomized) verify must exit 1, show a short counterexample, and
print a reproduction command that, run as printed, fails again. The controls
(the same code without the bug) and the registered exact encoders must pass, so a
rejection is the bug's doing, not a broken check.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys

import pytest

from bpebench.algorithms.core.registry import default_encoder_name
from bpebench.cli import main

from .mutants import CONTROLS, MUTANTS, HangsInCompiledCode

# Python-level hangs are cut by the per-call limit; a small one keeps shrinking them quick (wall
# clock: not so small that a busy machine makes a correct call look hung).
FAST = ["--profile", "ci", "--vocab", "random", "--no-isolate", "--call-timeout", "2"]


def _verify(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    return code, capsys.readouterr().out


def _failures(out: str) -> list[tuple[str, bytes, str]]:
    """(check, counterexample, reproduce command) of every FAIL row."""
    rows = []
    for match in re.finditer(r"^  (\S+) .* FAIL .*\n.*\n      counterexample: (.*)\n      reproduce: (.*)$", out,
                             re.MULTILINE):
        rows.append((match.group(1), ast.literal_eval(match.group(2)), match.group(3)))
    return rows


@pytest.mark.parametrize("mutant", [m.__name__ for m in MUTANTS if m is not HangsInCompiledCode])
def test_verify_rejects_mutant_with_a_minimal_counterexample(mutant, capsys):
    # a hang costs a time limit per attempt while shrinking: two checks show it
    only = ["--check", "output-types,equals-naive"] if mutant == "HangsOnRareInput" else []
    code, out = _verify(capsys, f"bpebench.properties.mutants:{mutant}", *FAST, *only)
    assert code == 1, out
    failures = _failures(out)
    assert failures, out
    shortest = min(len(ce) for _, ce, _ in failures)
    assert shortest <= 9, out  # shrunk: the longest minimal case here needs a 9-byte token
    check, counterexample, command = failures[0]
    argv = shlex.split(command)
    assert argv[:3] == ["bpebench", "verify", f"bpebench.properties.mutants:{mutant}"]
    code, replayed = _verify(capsys, *argv[2:], "--no-isolate", "--call-timeout", "2")
    assert code == 1 and "FAIL" in replayed, replayed


def test_verify_kills_a_worker_hung_in_compiled_code():
    """numba holds the GIL: only the parent's watchdog can stop it. The check fails with the
    input the worker was on, and a fresh worker runs the remaining checks."""
    proc = subprocess.run(
        [sys.executable, "-m", "bpebench", "verify", "bpebench.properties.mutants:HangsInCompiledCode", "--profile", "ci",
         "--vocab", "random", "--check", "output-types,round-trip", "--timeout", "4"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("hangs") == 2, proc.stdout  # both checks ran, each in its own worker
    counterexample = re.search(r"counterexample: (.*)", proc.stdout).group(1)
    data = ast.literal_eval(counterexample)
    assert len(set(data)) == 1 and len(data) >= 3, data  # the one input kind that hangs it


@pytest.mark.parametrize("control", [c.__name__ for c in CONTROLS])
def test_verify_passes_the_controls(control, capsys):
    code, out = _verify(capsys, f"bpebench.properties.mutants:{control}", *FAST)
    assert code == 0, out
    assert "FAIL" not in out


def test_verify_passes_the_default_encoder_in_a_worker():
    """The default path (an isolated worker) on the default exact encoder; every registered
    encoder runs through the same checks in-process in ``test_conformance``."""
    name = default_encoder_name()
    proc = subprocess.run([sys.executable, "-m", "bpebench", "verify", name, "--profile", "ci", "--vocab",
                           "random,cl100k_base", "--max-examples", "10"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"equals-naive +cl100k_base +pass", proc.stdout), proc.stdout


def test_verify_reports_approximate_encoders_as_expected_failures(capsys):
    code, out = _verify(capsys, "greedy", "--profile", "ci", "--vocab", "random", "--no-isolate",
                        "--check", "round-trip,equals-naive")
    assert code == 0, out
    assert "expected failure (approximate)" in out and "invalid output on" in out
    assert re.search(r"round-trip +random +pass", out)


@pytest.mark.parametrize("args, message", [
    (["nosuchmodule.x:Y"], "cannot import module"),
    (["bpebench.properties.mutants:NoSuchClass"], "unknown class"),
    (["no-such-algorithm"], "unknown algorithm"),
    (["naive", "--check", "no-such-check"], "unknown check"),
    (["naive", "--check", "equals-naive", "--example", "{not json"], "not valid JSON"),
    (["naive", "--vocab", "no_such_vocabulary"], "unknown vocabulary"),
    (["naive", "--vocab", "trained:rule=nope"], "bad vocabulary spec"),
])
def test_verify_user_mistakes_are_one_line_and_exit_2(args, message, capsys):
    code = main(["verify", *args, "--no-isolate", "--max-examples", "2"])
    captured = capsys.readouterr()
    assert code == 2, captured.out
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err


def test_fuzz_reports_a_mutant(capsys):
    code = main(["fuzz", "--algorithm", "bpebench.properties.mutants:DropsLastByteOnOddLength", "--minutes", "0.01",
                 "--vocab", "seed", "--max-examples", "20"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "counterexample:" in out and "reproduce:" in out
