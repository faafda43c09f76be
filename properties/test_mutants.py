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
from .guard import shown
from .mutants import CHUNKING_MUTANTS, CONTROLS, MUTANTS, HangsInCompiledCode

# Python-level hangs are cut by the per-call limit; a small one keeps shrinking them quick (wall
# clock: not so small that a busy machine makes a correct call look hung).
FAST = ["--profile", "ci", "--vocab", "random", "--no-isolate", "--call-timeout", "2"]


#: mutants whose bug needs a long input (the minimal counterexample is long)
LONG_INPUTS = {"LengthInUint16", "PieceOffsetsInUint8", "AppenderForgetsPast1024", "IntervalPositionsInUint8"}


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
            current[1] = line.split(": ", 1)[1]  # as shown (long ones are shortened)
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


#: the bugs the kit did not catch before issue 18: mutant -> the only check that fails on it
#: (drawn vocabularies), and the strategy feature without which nothing catches it
CAUGHT_ALONE = {
    "DecodeThroughText": ("decode", None),
    "LengthInUint16": ("boundary-lengths", None),
    "PieceOffsetsInUint8": ("encode-pieces", None),
    "SkipsUnknownBytes": ("unencodable-bytes", None),
    "AppenderForgetsPast1024": ("appending", "long-sequences"),
    "IntervalPositionsInUint8": ("interval", "long-sequences"),
}


@pytest.mark.parametrize("mutant", [m.__name__ for m in MUTANTS if m is not HangsInCompiledCode])
def test_verify_rejects_mutant_with_a_minimal_counterexample(mutant, capsys):
    # a hang costs a time limit per attempt while shrinking: two checks show it
    only = ["--check", "output-types,equals-naive"] if mutant == "HangsOnRareInput" else []
    # the call limit is 10 s but for the hanging mutants: with 2 s a slow first call on a loaded
    # machine skipped the 65,536-byte boundary input that alone shows LengthInUint16 (an input is
    # skipped when its first sixteenth predicts a tenth of the limit; seen in a fresh virtualenv),
    # and cut AppendingTruncateKeepsPartialToken's shrinking short (a 201-byte counterexample)
    fast = FAST if mutant.startswith("Hangs") else [*FAST[:-1], "10"]
    # unless the test names the one check that catches the mutant, verify stops at the first failure
    # (--exitfirst): the checks after it would only add their shrinking (half of this file's time).
    # DropsLongTokens runs every check: its bug needs a token of over 8 bytes, and the first check to
    # fail can draw a vocabulary whose shortest such token has 10 (seen in the suite), where another
    # check's shows 9
    first = [] if mutant in CAUGHT_ALONE or mutant == "DropsLongTokens" else ["--exitfirst"]
    code, out = _verify(capsys, f"bpebench.properties.mutants:{mutant}", *fast, *only, *first)
    assert code == 1, out
    failures = _failures(out)
    assert failures, out
    if first:
        assert len(failures) == 1, out
    shortest = min(len(main_bytes(_example(command)) or b"") for _, _, command in failures)
    assert shortest <= 9 or mutant in LONG_INPUTS, out  # shrunk: the longest minimal case needs a 9-byte token
    if mutant in CAUGHT_ALONE:
        assert {check for check, _, _ in failures} == {CAUGHT_ALONE[mutant][0]}, out
    for check, counterexample, command in failures:
        # the counterexample shown is the input of the example the reproduce line replays
        example_bytes = main_bytes(_example(command))
        assert example_bytes is None or counterexample == shown(example_bytes, 240), (check, out)
        argv = shlex.split(command)
        assert argv[:3] == ["bpebench", "verify", f"bpebench.properties.mutants:{mutant}"]
        # a replayed boundary-length example of 65,536 bytes is skipped when it is predicted to take a
        # tenth of the call limit: 2 s made that depend on the machine's load (a busy one skipped it);
        # only the hanging mutants keep the short limit
        limit = "2" if mutant.startswith("Hangs") else "10"
        code, replayed = _verify(capsys, *argv[2:], "--no-isolate", "--call-timeout", limit)
        assert code == 1 and "FAIL" in replayed, (check, replayed)


@pytest.mark.parametrize("mutant", [m for m, (_, feature) in CAUGHT_ALONE.items() if feature])
def test_the_new_strategy_is_what_catches_the_mutant(mutant, capsys):
    """Without the strategy feature its check passes the mutant: the feature alone catches it."""
    from .strategies import without

    check, feature = CAUGHT_ALONE[mutant]
    with without(feature):
        code, out = _verify(capsys, f"bpebench.properties.mutants:{mutant}", *FAST, "--check", check)
    assert code == 0, out


@pytest.mark.parametrize("mutant, feature", [("CarvesSpecialLiterals", "specials"),
                                             ("TableRefusesOnlyRankDisorder", "disorder")])
def test_drawn_vocabulary_features_catch_their_mutants(mutant, feature, capsys):
    """Special tokens whose literals occur in the text, and merges out of priority order: with
    the feature the kit rejects the mutant on drawn vocabularies, without it it does not."""
    from .strategies import without

    code, out = _verify(capsys, f"bpebench.properties.mutants:{mutant}", *FAST, "--exitfirst")
    assert code == 1, out
    with without(feature):
        code, out = _verify(capsys, f"bpebench.properties.mutants:{mutant}", *FAST)
    assert code == 0, out


def test_raw_specials_alone_catches_carving_on_a_real_vocabulary(capsys):
    code, out = _verify(capsys, "bpebench.properties.mutants:CarvesSpecialLiterals", "--profile", "ci", "--vocab",
                        "cl100k_base", "--no-isolate")
    assert code == 1, out
    assert {check for check, _, _ in _failures(out)} == {"raw-specials"}, out


@pytest.mark.parametrize("function", sorted(CHUNKING_MUTANTS))
def test_chunking_mutants_are_reported_as_chunking_faults(function, capsys, monkeypatch):
    """The kit checks chunking too: a split or a limit that assumes counts only grow is caught
    on mistral_v1 (where they do not), as a fault of the chunking, not of the encoder."""
    from bpebench.algorithms.pipeline import chunking

    monkeypatch.setattr(chunking, function, CHUNKING_MUTANTS[function])
    code, out = _verify(capsys, "naive", "--profile", "ci", "--vocab", "mistral_v1,random", "--no-isolate",
                        "--check", "split-at-n,count-till-limit")
    assert code == 1, out
    failing = {check for check, _, _ in _failures(out)}
    assert failing == {function.replace("split_at_tokens", "split-at-n").replace("count_till_limit", "count-till-limit")}, out
    assert "chunking fault (not the encoder's" in out, out


def test_exitfirst_stops_the_worker_at_the_first_failure():
    """In worker processes (verify's default): RightmostTieBreak fails equals-naive and token-bytes;
    with --exitfirst token-bytes is not run."""
    command = [sys.executable, "-m", "bpebench", "verify", "bpebench.properties.mutants:RightmostTieBreak", "--profile",
               "ci", "--vocab", "random", "--check", "output-types,equals-naive,token-bytes"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "1 pass, 2 FAIL in" in proc.stdout, proc.stdout + proc.stderr
    proc = subprocess.run([*command, "--exitfirst"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"equals-naive .* FAIL", proc.stdout) and re.search(r"token-bytes .* not run", proc.stdout), proc.stdout
    assert "not run: --exitfirst stopped at the failure in equals-naive on random" in proc.stdout, proc.stdout
    assert "1 pass, 1 FAIL, 1 not run" in proc.stdout, proc.stdout


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


def test_exhaustive_mode_is_a_proof_with_its_count(capsys):
    """Issue 18 item 8: every input of 0..6 bytes over three letters is 1 + 3 + ... + 3^6 = 1,093
    inputs per vocabulary; the reference passes on all of them."""
    code, out = _verify(capsys, "naive", "--exhaustive", "--max-len", "6", "--no-isolate")
    assert code == 0, out
    assert out.count("1,093 inputs, every string of 0..6 bytes over b'abc'") == 4, out
    assert "4 pass; 4,372 inputs checked on the vocabularies that passed, in" in out, out


def test_exhaustive_mode_finds_the_shortest_failing_input(capsys):
    code, out = _verify(capsys, "bpebench.properties.mutants:RightmostTieBreak", "--exhaustive", "--max-len", "6",
                        "--vocab", "seed", "--no-isolate")
    assert code == 1, out
    (check, counterexample, command), = _failures(out)
    assert counterexample == "b'bbb'" and "input 27 of 1,093" in out, out  # every shorter input passes
    assert "--check equals-naive" in command
    code, replayed = _verify(capsys, *shlex.split(command)[2:], "--no-isolate")
    assert code == 1 and "FAIL" in replayed, replayed


def test_exhaustive_mode_refuses_a_run_too_big_in_one_line(capsys):
    code = main(["verify", "naive", "--exhaustive", "--max-len", "8", "--vocab", "cl100k_base"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "more than 5,000,000" in err, err
