"""``bpebench parity`` across processes: a local Dask cluster, an external scheduler, a run killed
and resumed, and worker processes that end with their parent.

Every run here is a real ``bpebench`` process (``python -m bpebench``). Runs that are
interrupted compare documents that are each one long pre-tokenizer piece of random letters
with the quadratic ``naive`` encoder (about a second per document), one document per
partition: long enough to stop them at a chosen point (after a few partitions are stored)
without any test hook in the code.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("distributed")
pytest.importorskip("tiktoken")

from bpebench.properties.parity_store import RESULTS  # noqa: E402

@pytest.fixture
def slow(tmp_path) -> list[str]:
    """Arguments of a run of 16 partitions that each take ``naive`` about a second."""
    import random

    rng = random.Random(16)
    corpus = tmp_path / "letters.jsonl"
    corpus.write_text("".join(json.dumps("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10_000)))
                              + "\n" for _ in range(16)), encoding="utf-8")
    return ["cl100k_base", "--corpus", str(corpus), "--algorithm", "naive", "--partition-bytes", "1", "-q"]


def bpebench(*argv: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bpebench", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"bpebench did not finish in {timeout} s: {err[-2000:]}")
    return proc.returncode, out, err


def raw_rows(directory: Path) -> list[dict]:
    path = directory / RESULTS
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.endswith(b"}")]


def wait_for_rows(directory: Path, proc: subprocess.Popen, n: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(raw_rows(directory)) >= n:
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {n} partitions were stored: {proc.stderr.read()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"fewer than {n} partitions stored after {timeout} s")


def matched_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("matched "))


def test_resume_after_kill_loses_nothing_and_redoes_nothing(tmp_path, slow):
    out = tmp_path / "r"
    first = bpebench("parity", *slow, "--workers", "0", "--out", str(out))
    wait_for_rows(out, first, 3)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before = raw_rows(out)
    assert len(before) >= 3 and all(r["worker"].endswith(f":{first.pid}") for r in before)

    code, stdout, err = finish(bpebench("parity", *slow, "--workers", "0", "--out", str(out), "--resume"))
    assert code == 0, err
    after = raw_rows(out)
    total = len(after)
    assert len(before) < total  # the kill did interrupt the run
    assert after[: len(before)] == before  # stored rows untouched
    assert sorted(r["partition"] for r in after) == list(range(total))  # each partition exactly once
    assert {r["partition"] for r in after[len(before):]}.isdisjoint(r["partition"] for r in before)
    assert f"ran:    {total - len(before)} partitions in this process in " in stdout
    assert f", {len(before)} stored before" in stdout
    assert matched_line(stdout).startswith(f"matched {sum(r['docs'] for r in after)}/")

    # resuming a finished run computes nothing and prints the same summary from disk
    code, again, _ = finish(bpebench("parity", *slow, "--workers", "0", "--out", str(out), "--resume"))
    assert code == 0 and "ran:    0 partitions" in again and matched_line(again) == matched_line(stdout)


def _children(proc: subprocess.Popen) -> list:
    return psutil.Process(proc.pid).children(recursive=True)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["kill-9", "ctrl-c", "term"])
def test_local_workers_end_with_their_parent(tmp_path, slow, how):
    out = tmp_path / "r"
    proc = bpebench("parity", *slow, "--workers", "2", "--out", str(out))
    wait_for_rows(out, proc, 2)
    workers = [p for p in _children(proc) if "python" in p.name().lower()]
    assert len(workers) >= 2, [p.cmdline() for p in workers]
    proc.send_signal(how)
    code, _, err = finish(proc, timeout=60)
    if how == signal.SIGKILL:
        assert code == -signal.SIGKILL
    else:
        assert code == 130 and "bpebench: error: interrupted" in err, err
    gone, alive = psutil.wait_procs(workers, timeout=30)
    for p in alive:  # clean up before failing
        p.kill()
    assert not alive, [p.cmdline() for p in alive]
    rows = raw_rows(out)
    assert len(rows) >= 2 and len({r["partition"] for r in rows}) == len(rows)


def test_a_local_cluster_gives_the_rows_of_an_in_process_run(tmp_path):
    argv = ["cl100k_base", "--corpus", "hard-strings", "prose-en", "--partition-bytes", "40000", "-q"]
    code, here, err = finish(bpebench("parity", *argv, "--workers", "0", "--out", str(tmp_path / "here")))
    assert code == 0, err
    code, there, err = finish(bpebench("parity", *argv, "--workers", "2", "--out", str(tmp_path / "there")))
    assert code == 0, err
    assert "in a local Dask cluster of 2 worker processes" in there
    columns = ("partition", "digest", "docs", "matched", "ours_tokens", "theirs_tokens")
    rows = {d: sorted(tuple(r[c] for c in columns) for r in raw_rows(tmp_path / d)) for d in ("here", "there")}
    assert rows["here"] == rows["there"]
    assert matched_line(here) == matched_line(there)
    workers = {r["worker"] for r in raw_rows(tmp_path / "there")}
    assert len(workers) == 2  # both processes took partitions


@contextmanager
def dask_processes(tmp_path: Path, workers: int):
    """A ``distributed`` scheduler and ``workers`` workers, each its own process, as on a real cluster;
    yields the scheduler's address."""
    file = tmp_path / "scheduler.json"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for _ in range(workers):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                           str(file), "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        yield json.loads(file.read_text())["address"]
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def scheduler(tmp_path):
    with dask_processes(tmp_path, workers=1) as address:
        yield address


def test_the_same_command_runs_against_a_scheduler_address(tmp_path, scheduler):
    argv = ["parity", "cl100k_base", "--corpus", "hard-strings", "udhr-all", "--partition-bytes", "100000", "-q"]
    code, here, err = finish(bpebench(*argv, "--out", str(tmp_path / "here")))
    assert code == 0, err
    code, there, err = finish(bpebench(*argv, "--out", str(tmp_path / "there"), "--scheduler", scheduler))
    assert code == 0, err
    assert f"in Dask scheduler {scheduler}" in there
    assert matched_line(there) == matched_line(here)
    workers = {r["worker"].rpartition(":")[2] for r in raw_rows(tmp_path / "there")}
    assert str(os.getpid()) not in workers and len(workers) == 1  # computed by the cluster's worker


def test_an_unreachable_scheduler_is_one_line(tmp_path):
    code, _, err = finish(bpebench("parity", "cl100k_base", "-q", "--scheduler", "tcp://127.0.0.1:9", "--out",
                                   str(tmp_path / "r")), timeout=120)
    assert code == 2 and err.strip().splitlines() == [err.strip()] and "cannot reach the Dask scheduler" in err


def test_a_scheduler_without_workers_is_one_line(tmp_path, capsys, monkeypatch):
    from bpebench.cli import main
    from bpebench.properties import parity_run

    monkeypatch.setattr(parity_run, "WAIT_FOR_WORKERS", 3)
    with dask_processes(tmp_path, workers=0) as address:
        code = main(["parity", "cl100k_base", "-q", "--scheduler", address, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"the Dask scheduler at {address} has had no worker for 3 s" in err


def test_the_cli_and_small_runs_never_import_dask(tmp_path):
    script = ("import sys\nfrom bpebench.cli import build_parser, main\nbuild_parser()\nassert 'dask' not in"
              f" sys.modules\ncode = main(['parity', 'cl100k_base', '-q', '--out', {str(tmp_path)!r}])\n"
              "print(code, 'dask' in sys.modules, 'distributed' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "0 False False"
