"""Tests of ``reports``: the result store, timing helpers, the sweep end to end (interrupted with
SIGINT, resumed, rendered and looked at in headless Chromium), asv import and run comparison.

The end-to-end test runs ``bpebench report`` on the seed paper's dictionary (``a b c ab cb ac bb
cbb acbb`` after the 256 single bytes) with a mutant that is greedy but declares itself exact:
on ``cbbb`` greedy gives ``cbb b`` while BPE gives ``cb bb`` (worked by hand in the docstring of
``test_seed_dictionary_greedy_differs``), so the report must call the mutant out.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bpebench.reports.analysis import fit_exponent
from bpebench.reports.compare import compare_dirs
from bpebench.reports.render import SECTIONS
from bpebench.reports.stages_timing import predicted_seconds
from bpebench.reports.store import ResultStore
from bpebench.reports.timing import measure
from bpebench.algorithms.core.registry import encoder_names

SEED_MERGES = [b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"]

# Registers a mutant (greedy, declared exact) before running the CLI, in a child process so the
# registry of the test process stays clean.
DRIVER = """
import sys
from bpebench.algorithms.core.registry import register_encoder
from bpebench.properties.mutants import GreedyPosingAsExact


class PosingExact(GreedyPosingAsExact):
    name = "posing_exact"
    summary = "test mutant: leftmost-longest declared exact"


register_encoder(PosingExact)
from bpebench.cli import main

sys.exit(main(sys.argv[1:]))
"""


def _write_seed_vocabulary(path: Path) -> Path:
    tokens = [bytes([b]) for b in range(256)] + SEED_MERGES
    path.write_text("".join(f"{base64.b64encode(t).decode()} {rank}\n" for rank, t in enumerate(tokens)))
    return path


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _environment(tmp: Path) -> dict:
    env = dict(os.environ)
    env["BPEBENCH_CACHE"] = str(tmp / "cache")
    env.pop("BPEBENCH_DEBUG", None)
    return env


# ----------------------------------------------------------------------------- small pieces
def test_seed_dictionary_greedy_differs():
    """BPE on ``cbbb``: pairs cb(257) bb(259) bb(259) -> merge cb -> ``cb b b``; then bb(259) beats
    cbb(260) -> ``cb bb``; ``cbbb`` is no token, so it stops. Greedy takes ``cbb`` then ``b``."""
    from bpebench.algorithms.kernels.reference import bpe_reference
    from bpebench.algorithms.formats.vocabulary import Vocabulary
    from bpebench.properties.mutants import GreedyPosingAsExact

    vocab = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + SEED_MERGES, name="seed")
    assert [vocab.tokens[t] for t in bpe_reference(vocab, b"cbbb")] == [b"cb", b"bb"]
    assert [vocab.tokens[t] for t in GreedyPosingAsExact(vocab).encode(b"cbbb")] == [b"cbb", b"b"]


def test_fit_exponent_recovers_power_laws():
    sizes = [100, 1_000, 10_000, 100_000]
    assert fit_exponent(sizes, [3e-6 * (n / 100) for n in sizes]) == pytest.approx(1.0)
    assert fit_exponent(sizes, [2e-6 * (n / 100) ** 2 for n in sizes]) == pytest.approx(2.0)
    # a fixed overhead dominating the smallest size is left out of the fit
    assert fit_exponent(sizes, [1e-3, 1e-4, 1e-3, 1e-2]) == pytest.approx(1.0)
    assert fit_exponent([100], [1e-3]) is None


def test_predicted_seconds_extrapolates_and_clamps():
    assert predicted_seconds([], 1000) == 0.0
    assert predicted_seconds([(100, 1.0)], 1000) == pytest.approx(100.0)  # one point: quadratic
    assert predicted_seconds([(100, 1.0), (1000, 10.0)], 10_000) == pytest.approx(100.0)  # slope 1
    assert predicted_seconds([(100, 1.0), (1000, 1e4)], 10_000) == pytest.approx(1e6)  # slope 4 -> 2
    assert predicted_seconds([(100, 1.0), (1000, 0.5)], 10_000) == pytest.approx(5.0)  # slope < 1 -> 1


def test_measure_warms_up_and_returns_the_result():
    calls = []

    def work():
        calls.append(1)
        return len(calls)

    timing = measure(work, warmup=2, repeats=5, budget_s=0.01)
    assert 1 <= timing.repeats <= 5
    assert len(calls) >= 2 + timing.repeats  # warm-up calls are not samples
    assert timing.result == len(calls)
    assert min(timing.samples) <= timing.q1 <= timing.median <= timing.q3 <= max(timing.samples)


def test_store_appends_resumes_and_restarts(tmp_path):
    store = ResultStore(tmp_path)
    store.create(resume=False)
    row = {"stage": "scaling", "vocab": "v", "subject": "s", "kind": "encoder", "corpus": "c",
           "operation": "encode_raw", "size_bytes": 100, "median_s": 0.5}
    store.append("timings.csv", row)
    assert store.done("timings.csv", {**row, "median_s": 9.0})  # the key, not the value, identifies a row
    assert not store.done("timings.csv", {**row, "size_bytes": 1000})
    again = ResultStore(tmp_path)
    again.create(resume=True)
    assert again.done("timings.csv", row)
    assert again.frame("timings.csv")["median_s"].tolist() == [0.5]
    fresh = ResultStore(tmp_path)
    fresh.create(resume=False)
    assert fresh.frame("timings.csv").empty
    with pytest.raises(ValueError):
        store.append("timings.csv", {"unknown_column": 1})


# ----------------------------------------------------------------------------- end to end
def _wait_for_rows(path: Path, proc: subprocess.Popen, minimum: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            n = len(_rows(path))
            if n >= minimum:
                return n
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return len(_rows(path)) if path.exists() else 0


def test_report_interrupt_resume_render_in_chromium(tmp_path):
    from bpebench.reports.browser import find_chromium, inspect_page

    vocab = _write_seed_vocabulary(tmp_path / "seed.tiktoken")
    corpus = tmp_path / "seed-text.txt"
    corpus.write_text("abacbb cbbb abacb bbcb acbb cbbb ab " * 40)
    out = tmp_path / "report"
    args = [sys.executable, "-c", DRIVER, "report", "--preset", "tiny", "--vocab", str(vocab),
            "--algorithms", "backtracking,posing_exact", "--corpora", f"{corpus},run-char", "--out", str(out)]
    env = _environment(tmp_path)

    proc = subprocess.Popen(args + ["--quiet"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen = _wait_for_rows(out / "timings.csv", proc, minimum=3, timeout=120)
        assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.communicate()}"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr
    kept = _rows(out / "timings.csv")
    assert len(kept) >= seen >= 3  # everything measured before the interrupt is on disk
    assert not (out / "index.html").exists()

    done = subprocess.run(args + ["--resume", "--quiet"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    timings = _rows(out / "timings.csv")
    keys = [(r["stage"], r["vocab"], r["subject"], r["corpus"], r["operation"], r["size_bytes"]) for r in timings]
    assert len(keys) == len(set(keys))  # resumed, not redone
    assert kept == timings[: len(kept)]  # the rows from before the interrupt were kept as they were

    # every registered encoder asked for, and every peer that says it supports the vocabulary, was measured
    from bpebench.algorithms.formats import load_path
    from bpebench.algorithms.peers import peer_status

    expected_peers = {name for name, ok, _ in peer_status(load_path(vocab)) if ok}
    subjects = {r["subject"] for r in timings}
    assert {"backtracking", "posing_exact"} <= subjects
    assert expected_peers <= subjects
    assert {r["stage"] for r in timings} >= {"load", "scaling", "throughput", "worst_case"}

    # correctness: the exact encoder agrees everywhere, the mutant is caught on the cbbb text
    agreement = _rows(out / "agreement.csv")
    for r in agreement:
        if r["subject"] == "backtracking":
            assert r["exact_matches"] == r["inputs"], r
    caught = [r for r in agreement if r["subject"] == "posing_exact" and int(r["exact_matches"]) < int(r["inputs"])]
    assert any(r["corpus"] == corpus.name for r in caught)
    page = (out / "index.html").read_text()
    assert "Declared exact but differs from naive" in page
    conformance = _rows(out / "conformance.csv")
    assert {r["subject"] for r in conformance} >= {"backtracking", "posing_exact"}
    assert all(r["status"] != "FAIL" for r in conformance if r["subject"] == "backtracking")

    # the page, as a browser sees it: every section there, every image loaded
    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); page not inspected")
    seen_page = inspect_page(out / "index.html")
    assert [s["id"] for s in seen_page["sections"]] == [sid for sid, _ in SECTIONS]
    assert all(s["text"] > 0 for s in seen_page["sections"])
    images = seen_page["images"]
    charts = {img["src"].split("-")[0] for img in images}
    assert {"scaling", "throughput", "worst_case"} <= charts
    assert all(img["width"] > 0 for img in images), images
    # ... and the probe does see a missing image
    (out / images[0]["src"]).unlink()
    assert inspect_page(out / "index.html")["images"][0]["width"] == 0


# ----------------------------------------------------------------------------- asv import, compare, CLI errors
def _asv_results(root: Path) -> Path:
    """A minimal asv results tree in asv's format (results version 2), named like our asv suites."""
    machine = root / "box"
    machine.mkdir(parents=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "box", "cpu": "Test CPU", "num_cpu": "4",
                                                      "ram": "8388608", "os": "Linux", "version": 1}))
    (root / "benchmarks.json").write_text(json.dumps({
        "bench_scaling.RawEncodeScaling.time_encode": {"param_names": ["implementation", "bytes"], "unit": "seconds"},
        "bench_load.LoadCold.track_load_cold_seconds": {"param_names": ["vocabulary", "implementation"],
                                                        "unit": "seconds"},
        "bench_load.Load.peakmem_load": {"param_names": ["vocabulary"], "unit": "bytes"},
        "bench_incremental.Appending.time_count_after_every_byte": {"param_names": ["approach", "bytes"],
                                                                    "unit": "seconds"},
        "bench_worst_case.AdversarialRaw.time_encode_10kB": {"param_names": ["implementation", "corpus"],
                                                             "unit": "seconds"},
        "version": 2}))
    result = {
        "commit_hash": "0123456789abcdef", "env_name": "existing-py", "date": 1760000000000,
        "params": {"machine": "box"}, "python": "3.11", "requirements": {"numba": "0.60"}, "env_vars": {},
        "result_columns": ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
                           "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat"],
        "results": {
            "bench_scaling.RawEncodeScaling.time_encode": [
                [1e-4, 1e-3, 2e-4, None],
                [["'backtracking'", "'peer/tiktoken'"], ["100", "1000"]],
                "v1", None, None, None, None, [0.9e-4, 0.9e-3, 1.9e-4, None], [1.1e-4, 1.1e-3, 2.1e-4, None],
                None, [10, 10, 10, None]],
            "bench_load.LoadCold.track_load_cold_seconds": [
                [0.5, 0.25], [["'o200k_base'"], ["'ours/backtracking'", "'peer/tiktoken'"]], "v1"],
            "bench_load.Load.peakmem_load": [[123456], [["'o200k_base'"]], "v1"],
            "bench_incremental.Appending.time_count_after_every_byte": [
                [1e-3, 1e-2, 5e-3, 5e-1], [["'append/appending'", "'re-encode-each-byte/default'"], ["10", "100"]],
                "v1"],
            "bench_worst_case.AdversarialRaw.time_encode_10kB": [
                [1e-3, 2e-3], [["'backtracking'", "'peer/tiktoken'"], ["'run-char'"]], "v1"],
        },
        "durations": {}, "version": 2,
    }
    (machine / "0123456789ab-existing-py.json").write_text(json.dumps(result))
    return root


def test_from_asv_maps_parameters(tmp_path):
    from bpebench.algorithms.core.registry import default_encoder_name
    from bpebench.reports.asv_import import import_asv
    from bpebench.reports.render import render

    n = import_asv(_asv_results(tmp_path / "asv"), tmp_path / "out")
    rows = ResultStore(tmp_path / "out").frame("timings.csv")
    assert n == len(rows) == 12  # 4 scaling + 2 load + 4 incremental + 2 raw adversarial; peakmem is not a timing
    measured = rows[rows["median_s"].notna()].fillna({"size_bytes": 0})
    measured = measured.sort_values(["stage", "subject", "size_bytes", "operation"])
    default = default_encoder_name()
    assert measured[["stage", "vocab", "subject", "kind", "corpus", "operation", "size_bytes"]].values.tolist() == [
        # the suites' own vocabulary where a benchmark has no vocabulary parameter; the approach of
        # "<approach>/default" is an operation of the default encoder, never a subject of its own
        ["incremental", "o200k_base", "appending", "encoder", "Appending", "append time_count_after_every_byte", 10],
        ["incremental", "o200k_base", "appending", "encoder", "Appending", "append time_count_after_every_byte", 100],
        ["incremental", "o200k_base", default, "encoder", "Appending",
         "re-encode-each-byte time_count_after_every_byte", 10],
        ["incremental", "o200k_base", default, "encoder", "Appending",
         "re-encode-each-byte time_count_after_every_byte", 100],
        ["load", "o200k_base", "backtracking", "encoder", "LoadCold", "build", 0],  # no size known
        ["load", "o200k_base", "tiktoken", "peer", "LoadCold", "build", 0],
        ["scaling", "o200k_base", "backtracking", "encoder", "RawEncodeScaling", "time_encode", 100],
        ["scaling", "o200k_base", "backtracking", "encoder", "RawEncodeScaling", "time_encode", 1000],
        ["scaling", "o200k_base", "tiktoken", "peer", "RawEncodeScaling", "time_encode", 100],
        # a size in the method name; raw BPE on a corpus is labelled so, apart from pipelines on it
        ["throughput", "o200k_base", "backtracking", "encoder", "run-char (raw BPE)", "time_encode_10kB", 10_000],
        ["throughput", "o200k_base", "tiktoken", "peer", "run-char (raw BPE)", "time_encode_10kB", 10_000],
    ]
    assert rows["note"].str.startswith("skipped").sum() == 1  # asv's None: not run
    page = render(tmp_path / "out").read_text()
    assert "Test CPU" in page and "n<sup>1.00</sup>" in page  # backtracking: 10x input, 10x time
    assert "re-encode-each-byte</b>" not in page  # not listed as an encoder
    assert "(–)" not in page  # no unknown sizes in the table headers
    details = json.loads((tmp_path / "out" / "meta.json").read_text())["vocabulary_details"]
    assert details["o200k_base"]["tokens"] == 199_998 and details["o200k_base"]["rule"] == "ranks"


def test_from_asv_page_in_chromium(tmp_path):
    """The page built from asv results, as a browser sees it: every image loaded, every section there."""
    from bpebench.reports.asv_import import import_asv
    from bpebench.reports.browser import find_chromium, inspect_page
    from bpebench.reports.render import render

    import_asv(_asv_results(tmp_path / "asv"), tmp_path / "out")
    page = render(tmp_path / "out")
    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); page not inspected")
    seen = inspect_page(page)
    assert [s["id"] for s in seen["sections"]] == [sid for sid, _ in SECTIONS]
    assert seen["images"] and all(img["width"] > 0 for img in seen["images"]), seen["images"]


def test_chart_titles_and_names_leave_out_what_is_unknown():
    from bpebench.reports.render import _chart_name, _title

    assert _title("", "Appending", "median seconds") == "Appending: median seconds"
    assert _title("o200k_base", "prose-en", "x") == "o200k_base, prose-en: x"
    assert _chart_name("scaling", "", "c") == "scaling-c.png"
    assert _chart_name("throughput", "/a/x/tok.json") != _chart_name("throughput", "/b/y/tok.json")  # same file name


def _timing(stage, subject, size, median, low, high):
    return {"stage": stage, "vocab": "v", "subject": subject, "kind": "encoder", "corpus": "c",
            "operation": "encode_raw", "size_bytes": size, "median_s": median, "q1_s": low, "q3_s": high}


def test_compare_flags_only_clear_changes(tmp_path):
    from bpebench.cli import main

    old, new = ResultStore(tmp_path / "old"), ResultStore(tmp_path / "new")
    for store in (old, new):
        store.create(resume=False)
    old.append("timings.csv", _timing("scaling", "slow", 100, 1.0, 0.95, 1.05))
    new.append("timings.csv", _timing("scaling", "slow", 100, 2.0, 1.9, 2.1))  # 2x, clear
    old.append("timings.csv", _timing("scaling", "noisy", 100, 1.0, 0.5, 2.0))
    new.append("timings.csv", _timing("scaling", "noisy", 100, 1.5, 0.8, 2.5))  # 1.5x but ranges overlap
    old.append("timings.csv", _timing("scaling", "quick", 100, 1.0, 0.95, 1.05))
    new.append("timings.csv", _timing("scaling", "quick", 100, 0.5, 0.45, 0.55))  # 2x faster
    new.append("timings.csv", _timing("scaling", "only_new", 100, 1.0, 1.0, 1.0))
    result = compare_dirs(old.directory, new.directory, threshold=1.25)
    flags = dict(zip(result.timings["subject"], result.timings["flag"]))
    assert flags == {"slow": "slower", "noisy": "", "quick": "faster"}
    assert result.regressions == 1
    assert main(["report", "--compare", str(old.directory), str(new.directory)]) == 1
    assert (new.directory / "compare.html").exists()


def test_cli_user_mistakes_are_one_line(tmp_path, capsys):
    from bpebench.cli import main

    assert main(["report", "--render-only", "--out", str(tmp_path / "empty")]) == 2
    assert main(["report", "--algorithms", "no_such_encoder", "--out", str(tmp_path / "x")]) == 2
    assert main(["report", "--from-asv", str(tmp_path / "missing"), "--out", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("bpebench: error:") for line in err), err
    assert "no_such_encoder" in err[1] and "backtracking" in err[1]  # names the known encoders


def test_each_subject_keeps_one_colour_whatever_else_is_shown():
    from bpebench.algorithms.peers import peer_names
    from bpebench.reports.plots import Palette

    names = encoder_names() + peer_names()
    colours = [Palette()(n) for n in names]
    assert len(set(colours)) == len(colours), "two built-in subjects share a colour"
    plugin = Palette()("some_plugin_encoder")
    assert plugin not in colours and plugin == Palette()("some_plugin_encoder")  # stable, and apart


# ============================================================================= durable results
def test_a_partial_last_row_is_cut_off_on_resume(tmp_path):
    store = ResultStore(tmp_path / "r")
    store.create(resume=False)
    for size in (10, 100):
        store.append("timings.csv", _timing("scaling", "enc", size, 1.0, 0.9, 1.1))
    path = tmp_path / "r" / "timings.csv"
    whole = path.read_bytes()
    with path.open("ab") as f:
        f.write(b"scaling,v,enc,encoder,c,encode_raw,1000,,,0.5")  # a crash in the middle of a row
    resumed = ResultStore(tmp_path / "r")
    resumed.create(resume=True)
    assert path.read_bytes() == whole
    resumed.append("timings.csv", _timing("scaling", "enc", 1000, 2.0, 1.9, 2.1))
    rows = resumed.rows("timings.csv")
    assert [r["size_bytes"] for r in rows] == ["10", "100", "1000"] and rows[-1]["median_s"] == "2.0"


def test_a_full_disk_leaves_the_results_intact(tmp_path, monkeypatch):
    import errno

    from bpebench.errors import BpebenchError
    from bpebench.reports import durable

    store = ResultStore(tmp_path / "r")
    store.create(resume=False)
    store.append("timings.csv", _timing("scaling", "enc", 10, 1.0, 0.9, 1.1))
    before = (tmp_path / "r" / "timings.csv").read_bytes()
    real_write = os.write

    def half_then_full(fd, data):  # the disk fills in the middle of the row
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(durable.os, "write", half_then_full)
    with pytest.raises(BpebenchError, match="is full"):
        store.append("timings.csv", _timing("scaling", "enc", 100, 1.0, 0.9, 1.1))
    assert (tmp_path / "r" / "timings.csv").read_bytes() == before
    monkeypatch.setattr(durable.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    with pytest.raises(BpebenchError, match="is full"):
        store.write_meta({"a": 1})
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["timings.csv"]  # no temporary file left


# ============================================================================= outside encoders isolated
BAD_PLUGINS = """
import ctypes, sys, time
from bpebench.algorithms.core.registry import register_encoder
from bpebench.algorithms.backtracking import BacktrackingEncoder


class Segfaults(BacktrackingEncoder):
    name, summary = "zz_segfaults", "test plugin: dereferences NULL"

    def encode(self, data):
        return ctypes.string_at(0)


class Sleeps(BacktrackingEncoder):
    name, summary = "zz_sleeps", "test plugin: never answers"

    def encode(self, data):
        time.sleep(3600)


class Hungry(BacktrackingEncoder):
    name, summary = "zz_hungry", "test plugin: a 300M-element list"

    def encode(self, data):
        return [0] * 300_000_000


for cls in (Segfaults, Sleeps, Hungry):
    register_encoder(cls)
from bpebench.cli import main

sys.exit(main(sys.argv[1:]))
"""


def test_outside_encoders_that_crash_hang_or_eat_memory_do_not_stop_the_report(tmp_path):
    vocab = _write_seed_vocabulary(tmp_path / "seed.tiktoken")
    corpus = tmp_path / "seed-text.txt"
    corpus.write_text("abacbb cbbb abacb bbcb acbb cbbb ab " * 40)
    out = tmp_path / "report"
    args = [sys.executable, "-c", BAD_PLUGINS, "report", "--preset", "tiny", "--vocab", str(vocab), "--quiet",
            "--algorithms", "backtracking,zz_segfaults,zz_sleeps,zz_hungry", "--corpora", f"{corpus},run-char",
            "--stages", "load,scaling,throughput", "--peers", "none", "--out", str(out),
            "--isolation-timeout", "10", "--isolation-memory", "1"]
    done = subprocess.run(args, cwd=tmp_path, env=_environment(tmp_path), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    timings = _rows(out / "timings.csv")
    notes = {s: [r["note"] for r in timings if r["subject"] == s and r["note"]]  # building them works
             for s in ("zz_segfaults", "zz_sleeps", "zz_hungry")}
    assert notes["zz_segfaults"][0].startswith("crashed: killed by signal 11")
    assert notes["zz_sleeps"][0].startswith("hung:")
    assert notes["zz_hungry"][0].startswith("too much memory:")
    for subject, subject_notes in notes.items():  # one failure, then nothing more is spent on it
        assert len(subject_notes) > 1 and all(n.startswith("skipped: ") for n in subject_notes[1:]), subject_notes
    assert any(r["subject"] == "backtracking" and r["median_s"] for r in timings)
    page = (out / "index.html").read_text()
    assert "zz_segfaults crashed" in page and "zz_sleeps hung" in page
    # --resume does not run them again
    again = subprocess.run(args + ["--resume", "--stages", "load,scaling,throughput,worst_case"], cwd=tmp_path,
                           env=_environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    new_rows = _rows(out / "timings.csv")[len(timings):]
    assert new_rows and all(r["note"].startswith("skipped: ") for r in new_rows if r["subject"].startswith("zz_"))


def test_ctrl_c_during_an_isolated_call_ends_its_child_too(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = f"""
import os, time
from bpebench.reports.isolation import run_isolated

def sleeper():
    open({str(pid_file)!r}, "w").write(str(os.getpid()))
    time.sleep(600)

try:
    run_isolated(sleeper, timeout=600)
except KeyboardInterrupt:
    print("interrupted")
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert out.strip() == "interrupted"
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
