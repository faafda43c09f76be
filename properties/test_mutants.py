"""The kit's own test: ``bpebench verify`` rejects every mutant and passes correct encoders.

Each mutant in ``bpebench.properties.mutants`` is one realistic bug. Under the ``ci``
profile (derandomized) verify must exit 1, show a short counterexample, and
print a reproduction command that, run as printed, fails again. The controls
(the same code without the bug) and the registered exact encoders must pass, so a
rejection is the bug's doing, not a broken check.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from bpebench.algorithms.core.registry import default_encoder_name
from bpebench.cli import main

from .checks import main_bytes
from .mutants import CONTROLS, MUTANTS, HangsInCompiledCode

# Python-level hangs are cut by the per-call limit; a small one keeps shrinking them quick (wall
# clock: not so small that a busy machine makes a correct call look hung).
FAST = ["--profile", "ci", "--vocab", "random", "--no-isolate", "--call-timeout", "2"]


def _verify(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *args])
    return code, capsys.readouterr().out


def _failures(out: str) -> list[tuple[str, bytes, str]]:
    """(check, counterexample, reproduce command) of every FAIL row."""
    rows, current = [], None
    for line in out.splitlines():
        row = re.match(r"^  (\S+) .* FAIL ", line)
        if row:
            current = [row.group(1), None, None]
            rows.append(current)
        elif current and line.startswith("      counterexample: "):
            current[1] = ast.literal_eval(line.split(": ", 1)[1])
        elif current and line.startswith("      reproduce: "):
            current[2] = line.split(": ", 1)[1]
    return [tuple(r) for r in rows if r[2]]


def _example(command: str) -> dict:
    from .checks import payload_from_json

    text = shlex.split(command)[-1]
    if text.startswith("@"):
        with open(text[1:]) as f:
            text = f.read()
    return payload_from_json(text)


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
    for check, counterexample, command in failures:
        # the counterexample shown is the input of the example the reproduce line replays
        assert counterexample == main_bytes(_example(command)), (check, out)
        argv = shlex.split(command)
        assert argv[:3] == ["bpebench", "verify", f"bpebench.properties.mutants:{mutant}"]
        code, replayed = _verify(capsys, *argv[2:], "--no-isolate", "--call-timeout", "2")
        assert code == 1 and "FAIL" in replayed, (check, replayed)


def test_verify_kills_a_worker_hung_in_compiled_code():
    """numba holds the GIL: only the parent's watchdog can stop it. The check fails with the
    input the worker was on; the encoder is then marked hung and the other checks are not run
    (issue 25: they used to cost the whole limit each)."""
    proc = subprocess.run(
        [sys.executable, "-m", "bpebench", "verify", "bpebench.properties.mutants:HangsInCompiledCode", "--profile", "ci",
         "--vocab", "random", "--check", "output-types,round-trip,equals-naive", "--timeout", "4"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.count("hangs") == 1, proc.stdout
    assert proc.stdout.count("not run: the encoder hung in output-types") == 2, proc.stdout
    assert "1 FAIL, 2 not run" in proc.stdout, proc.stdout
    counterexample = re.search(r"counterexample: (.*)", proc.stdout).group(1)
    data = ast.literal_eval(counterexample)
    assert len(set(data)) == 1 and len(data) >= 3, data  # the one input kind that hangs it


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill -9", "Ctrl-C"])
def test_workers_die_with_their_parent(how):
    """Issue 25: after Ctrl-C or kill -9 of ``bpebench verify``, its worker (here hung in compiled
    code, which only a signal stops) must not stay alive."""
    parent = subprocess.Popen(
        [sys.executable, "-m", "bpebench", "verify", "bpebench.properties.mutants:HangsInCompiledCode", "--profile",
         "ci", "--vocab", "seed", "--check", "output-types", "--timeout", "600"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        workers = []
        while not workers and time.monotonic() < deadline:
            time.sleep(0.5)
            workers = _children(parent.pid)
        assert workers, "no worker started"
        time.sleep(3)  # let it reach the hang
        parent.send_signal(how)
        parent.wait(60)
        deadline = time.monotonic() + 30
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), workers
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


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
