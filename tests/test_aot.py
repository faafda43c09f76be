"""The fused pipeline's ahead-of-time module (``algorithms/pipeline/aot.py``) and the lazy ``njit``
(``algorithms/kernels/jit.py``).

Oracles: the JIT kernels on the same plan, and the committed golden ids. The module is
built once per session with ``bpebench compile`` into the cache the tests use (a no-op
when it is already there; about 40 s when not). Damaged modules are tested on copies in
temporary cache roots, never on the module this process has loaded.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import pickle
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.pipeline import aot, fast_pipeline
from bpebench.algorithms.pipeline.fast_pipeline import (SEGMENT_BYTES, FusedPipeline, _DirectCall, encode_utf8,
                                                       encode_utf8_batch, new_piece_cache, unsupported_reason)
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.properties.strategies import pipeline_texts

#: one worker runs this module: its first test builds the module on a clean cache (minutes, one core),
#: and a second worker reaching ``aot_module`` meanwhile would only wait on the build's lock
pytestmark = pytest.mark.xdist_group("aot")

REPO = Path(__file__).resolve().parents[1]
GOLDEN = json.loads((REPO / "tests" / "golden" / "golden.json").read_text(encoding="utf-8"))
HF_MERGES = "tests/golden/bytelevel_bpe.json"
#: the vocabularies of the comparisons: two tiktoken ones and a merges-rule (HF) one
VOCABULARIES = ["o200k_base", "cl100k_base", HF_MERGES]
JIT = _DirectCall(encode_utf8)
JIT_BATCH = _DirectCall(encode_utf8_batch)
CACHE = new_piece_cache(16)


def vocabulary(name: str):
    return load_vocabulary(str(REPO / name) if name.startswith("tests/") else name)


def _env(**changes) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env.update(changes)
    return env


def _run(script: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, env=_env(**env), capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def aot_module():
    """The module for the current sources, built by ``bpebench compile`` if missing; AOT on meanwhile."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("NUMBA_DISABLE_JIT=1: no compiled code at all")
    for name in ("o200k_base", "cl100k_base"):
        load_vocabulary(name)  # the vocabulary cache the subprocesses below map
    done = subprocess.run([sys.executable, "-m", "bpebench", "compile"], cwd=REPO, env=_env(BPEBENCH_AOT="1"),
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert aot.module_dir().name in done.stdout and "built" in done.stdout, done.stdout
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BPEBENCH_AOT", "1")
        module = aot.load()
        assert module is not None
        yield module


@pytest.fixture(scope="module")
def pipelines(aot_module):
    """A fresh (not memoised) FusedPipeline per vocabulary, on the compiled module."""
    out = {}
    for name in VOCABULARIES:
        fp = FusedPipeline(vocabulary(name))
        assert fp.aot, name
        out[name] = fp
    return out


def aot_and_jit(fp: FusedPipeline, data: bytes) -> tuple[list[int], list[int]]:
    arr = np.frombuffer(data, dtype=np.uint8)
    a, j = np.empty(len(arr), dtype=np.int32), np.empty(len(arr), dtype=np.int32)
    n_a = fp._encode(fp.plan, arr, a, new_piece_cache(16))
    n_j = JIT(fp.plan, arr, j, new_piece_cache(16))
    return a[:n_a].tolist(), j[:n_j].tolist()


def batch_aot_and_jit(fp: FusedPipeline, texts: list[bytes]):
    ids, offsets = fp.encode_utf8_batch(texts)  # the compiled module
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    text_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    arr = np.frombuffer(b"".join(texts), dtype=np.uint8)
    out = np.empty(len(arr), dtype=np.int32)
    out_offsets = np.empty(len(texts) + 1, dtype=np.int64)
    n = JIT_BATCH(fp.plan, arr, text_offsets, out, out_offsets, new_piece_cache(16))
    return (ids.tolist(), offsets.tolist()), (out[:n].tolist(), out_offsets.tolist())


# ============================================================================= same ids as the JIT and the golden ids
@pytest.mark.parametrize("name", [n for n in GOLDEN["vocabularies"] if n in VOCABULARIES or n == "qwen"])
def test_golden_texts_through_the_module(name, aot_module):
    vocab = vocabulary(name)
    if unsupported_reason(vocab) is not None:
        pytest.skip(unsupported_reason(vocab))
    tok = Tokenizer(vocab)
    tok._fused = FusedPipeline(vocab)  # not the memoised pipeline: one on the compiled module
    assert tok._fused.aot
    expected = GOLDEN["vocabularies"][name]
    for i, text in enumerate(GOLDEN["texts"]):
        assert tok.encode_ordinary(text) == expected["ordinary"][i], text
        if "all_special" in expected:
            assert tok.encode(text, allowed_special="all") == expected["all_special"][i], text
        data = tok._normalize(text).encode("utf-8", "surrogatepass")
        got, jit = aot_and_jit(tok._fused, data)
        assert got == jit, text
    (ids, offsets), (jit_ids, jit_offsets) = batch_aot_and_jit(
        tok._fused, [tok._normalize(t).encode("utf-8") for t in GOLDEN["texts"]])
    assert ids == jit_ids and offsets == jit_offsets


def test_a_batch_made_utf8_by_the_helper_on_threads_equals_one_text_at_a_time(aot_module):
    """A batch over several groups on two threads, each group's texts made UTF-8 by the helper with
    the GIL released (``utf8_texts``), and a group with a lone surrogate through Python's path: the
    ids of each text encoded alone (made UTF-8 by Python's encoder)."""
    from bpebench import corpora

    vocab = vocabulary("o200k_base")
    tok = Tokenizer(vocab)
    tok._fused = FusedPipeline(vocab)
    assert tok._fused.aot and tok._fused._id_lists is not None
    text = corpora.get("udhr-all", size=60_000) + corpora.get("prose-en", size=60_000)
    batch = [text[i:i + 2_000] for i in range(0, len(text), 2_000)]
    batch[40] = batch[40][:7] + "\ud800" + batch[40][7:]
    expected = [tok.encode_ordinary(t) for t in batch]
    assert tok.encode_ordinary_batch(batch, num_threads=2) == expected
    flat, offsets = tok.encode_ordinary_batch_to_numpy(batch, num_threads=2)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


@pytest.mark.parametrize("name", VOCABULARIES)
@settings(max_examples=150, deadline=None)
@given(text=pipeline_texts())
def test_module_equals_jit_on_drawn_text(name, text, pipelines):
    got, jit = aot_and_jit(pipelines[name], text.encode("utf-8"))
    assert got == jit


@pytest.mark.parametrize("name", VOCABULARIES)
@settings(max_examples=100, deadline=None)
@given(text=pipeline_texts())
def test_bytes_entry_point_equals_jit(name, text, pipelines):
    """``encode_bytes`` (the text as a ``bytes`` object, its array made inside the module, the
    caller's scratch: what ``encode_list`` calls) gives the JIT's ids and keeps no reference to the
    text; a scratch too short for the text is refused with the size it needs, and whatever an
    earlier call left in the scratch changes nothing."""
    fp = pipelines[name]
    assert fp._encode_bytes_own is not None
    data = text.encode("utf-8")
    out = np.empty(len(data), dtype=np.int32)
    cache = new_piece_cache(16)
    short = np.zeros(1, dtype=np.int64)
    needed = fp._encode_bytes_own(fp._bytes_state(out, cache, short), data)
    assert (needed < 0) == (0 < len(data) <= SEGMENT_BYTES)  # a longer text allocates its own
    work = np.random.default_rng(len(data)).integers(-3, 3, size=max(-needed, 1), dtype=np.int64)
    state = fp._bytes_state(out, cache, work)
    held = sys.getrefcount(data)
    n = fp._encode_bytes_own(state, data)
    kept = sys.getrefcount(data) - held
    assert kept == 0
    assert n >= 0 and out[:n].tolist() == aot_and_jit(fp, data)[1]


def test_short_texts_grow_the_threads_scratch(aot_module):
    """``encode_list`` and ``encode_array`` on a thread whose scratch starts too small: the kernel
    asks for more, the pipeline grows it and calls again, and the ids are the JIT's; a thread of
    its own gets a scratch of its own."""
    fp = FusedPipeline(vocabulary("o200k_base"))
    fp.SCRATCH_WORDS = 16
    texts = [("word " * k + "\n中文 ").encode() for k in (1, 10, 1000, 6000)] + [b"x" * 30000]
    for data in texts:
        expected = aot_and_jit(fp, data)[1]
        assert fp.encode_list(data) == expected and fp.encode_array(data).tolist() == expected
    assert len(fp._per_thread.work) >= 16 << 10
    seen = []
    thread = threading.Thread(target=lambda: seen.append((fp.encode_list(texts[1]), len(fp._per_thread.work))))
    thread.start()
    thread.join()
    assert seen[0][0] == aot_and_jit(fp, texts[1])[1] and seen[0][1] < 16 << 10


@pytest.mark.parametrize("name", VOCABULARIES)
@settings(max_examples=60, deadline=None)
@given(texts=st.lists(pipeline_texts(max_size=30), max_size=8))
def test_batch_entry_point_equals_jit(name, texts, pipelines):
    (ids, offsets), (jit_ids, jit_offsets) = batch_aot_and_jit(pipelines[name], [t.encode("utf-8") for t in texts])
    assert ids == jit_ids and offsets == jit_offsets


def test_long_text_and_one_long_piece(pipelines):
    rng = np.random.default_rng(3)
    long_piece = "".join(rng.choice(list("abcdefghij"), size=20_000)).encode()
    prose = (REPO / "README.md").read_bytes()
    for fp in pipelines.values():
        for data in (long_piece, prose, prose.decode().upper().encode()):
            got, jit = aot_and_jit(fp, data)
            assert got == jit


# ============================================================================= the wrappers refuse what the module would misread
def test_arguments_are_checked(pipelines):
    fp = pipelines["o200k_base"]
    arr = np.frombuffer(b"hello world", dtype=np.uint8)
    with pytest.raises(TypeError):
        fp._encode(fp.plan, arr, np.empty(16, dtype=np.int64), CACHE)
    read_only = np.empty(16, dtype=np.int32)
    read_only.flags.writeable = False
    with pytest.raises(TypeError):
        fp._encode(fp.plan, arr, read_only, CACHE)
    with pytest.raises(ValueError):
        fp._encode(fp.plan, arr, np.empty(4, dtype=np.int32), CACHE)
    with pytest.raises(TypeError):
        fp._encode(fp.plan, np.frombuffer(b"hello world!", dtype=np.uint8)[::2], np.empty(16, dtype=np.int32), CACHE)
    with pytest.raises(TypeError):
        fp._encode(fp.plan, arr.astype(np.int32), np.empty(16, dtype=np.int32), CACHE)
    with pytest.raises(ValueError):
        fp._encode_batch(fp.plan, arr, np.array([0, 99], dtype=np.int64), np.empty(16, dtype=np.int32),
                         np.empty(2, dtype=np.int64), CACHE)
    for bad_cache in (np.zeros((18, 8), dtype=np.int64), np.zeros((17, 8), dtype=np.int32), np.zeros((16, 7), dtype=np.int64),
                      np.zeros((34, 8), dtype=np.int64)[::2]):
        with pytest.raises((TypeError, ValueError)):
            fp._encode(fp.plan, arr, np.empty(16, dtype=np.int32), bad_cache)
    assert fp.encode_utf8(b"hello world").tolist() == [24912, 2375]


def test_plans_of_other_types_are_refused(pipelines, aot_module):
    fp = pipelines["o200k_base"]
    out = np.empty(16, dtype=np.int32)
    arr = np.frombuffer(b"hello world", dtype=np.uint8)
    wider = fp.plan._replace(stage1=fp.plan.stage1.astype(np.int64))
    with pytest.raises(aot.AotError):
        fp._encode(wider, arr, out, CACHE)
    strided = fp.plan._replace(byte_token=np.repeat(fp.plan.byte_token, 2)[::2])
    with pytest.raises(aot.AotError):
        fp._encode(strided, arr, out, CACHE)
    with pytest.raises(aot.AotError):
        aot_module.entry_points(fp.plan._replace(pattern_id=1.5))
    assert fp._encode(fp.plan, arr, out, CACHE) == 2  # the pipeline's own plan still works


def test_the_plan_handle_holds_each_array_address_and_shape_and_keeps_the_plan_alive(pipelines, aot_module):
    import gc

    fp = pipelines["o200k_base"]
    description = aot_module.manifest["plan"]
    handle = aot.plan_handle(fp.plan, description)
    starts, size = aot.handle_layout(description)
    assert len(handle) == size and not handle.flags.writeable
    for leaf, start in zip(description["leaves"], starts):
        value = aot._at(fp.plan, leaf["path"])
        if leaf["kind"] == "array":
            assert handle[start] == value.ctypes.data and tuple(handle[start + 1:start + 1 + value.ndim]) == value.shape
        else:
            assert handle[start] == int(value)
    # a plan made of copies, reachable only through the entry point once passed: the arrays the
    # handle points at must outlive every other reference
    encode = aot_module.entry_points(fp.plan)[0]
    copy = type(fp.plan)(*[np.array(v) if isinstance(v, np.ndarray) else v for v in fp.plan])
    out = np.empty(64, dtype=np.int32)
    arr = np.frombuffer(b"hello world, again", dtype=np.uint8)
    expected = out[:encode(fp.plan, arr, out, CACHE)].tolist()
    encode(copy, arr, out, CACHE)
    plan_id = id(copy)
    del copy
    gc.collect()
    np.full(1 << 22, 255, dtype=np.uint8)  # reuse freed memory, if any was freed
    state_plan = [c.cell_contents for c in encode.__closure__ if isinstance(c.cell_contents, list)][0][0]
    assert id(state_plan) == plan_id
    assert out[:encode(state_plan, arr, out, CACHE)].tolist() == expected


# ============================================================================= fresh processes
FRESH = (
    "import json, sys\n"
    "from bpebench.algorithms.pipeline.tokenizer import Tokenizer\n"
    "tok = Tokenizer('o200k_base')\n"
    "ids = tok.encode('hello world <|endoftext|> caf\\u00e9', allowed_special='all')\n"
    "batch = tok.encode_ordinary_batch(['a b', '', 'c'])\n"
    "print(json.dumps([ids, batch, tok._fused.aot, 'numba' in sys.modules]))\n"
)


def test_fresh_process_encodes_without_importing_numba(aot_module):
    expected = Tokenizer(load_vocabulary("o200k_base"), pretokenizer="regex")
    done = _run(FRESH, BPEBENCH_AOT="1")
    assert done.returncode == 0, done.stderr
    ids, batch, used_aot, numba_imported = json.loads(done.stdout)
    assert ids == expected.encode("hello world <|endoftext|> café", allowed_special="all")
    assert batch == [expected.encode_ordinary(t) for t in ["a b", "", "c"]]
    assert used_aot and not numba_imported
    assert done.stderr == ""


def test_aot_off_uses_the_jit(aot_module, monkeypatch):
    done = _run(FRESH, BPEBENCH_AOT="0")
    assert done.returncode == 0, done.stderr
    ids, batch, used_aot, numba_imported = json.loads(done.stdout)
    assert not used_aot and numba_imported
    with_aot = json.loads(_run(FRESH, BPEBENCH_AOT="1").stdout)
    assert [ids, batch] == with_aot[:2]
    monkeypatch.setenv("BPEBENCH_AOT", "0")
    assert not FusedPipeline(load_vocabulary("o200k_base")).aot
    monkeypatch.setenv("BPEBENCH_AOT", "1")
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")  # plain Python asked for: no compiled module either
    assert not aot.enabled() and aot.load() is None


def _cache_root_with(tmp_path: Path, module_dir: Path | None) -> Path:
    """A cache root that shares this one's vocabularies, Unicode tables and corpora, with
    a copy of ``module_dir`` (if given) as its ahead-of-time module."""
    real = aot.cache_root()
    root = tmp_path / "cache"
    root.mkdir()
    for entry in real.iterdir():
        if entry.name != "aot":
            (root / entry.name).symlink_to(entry)
    if module_dir is not None:
        shutil.copytree(module_dir, root / "aot" / module_dir.name)
    return root


def test_damaged_module_is_never_loaded(aot_module, tmp_path, monkeypatch):
    root = _cache_root_with(tmp_path, aot_module.directory)
    copy = root / "aot" / aot_module.directory.name
    so = copy / aot_module.manifest["file"]
    payload = so.read_bytes()
    so.write_bytes(payload[: len(payload) // 2])  # truncated
    with pytest.raises(aot.AotError):
        aot.verify_dir(copy)
    so.write_bytes(payload[:1000] + bytes([payload[1000] ^ 1]) + payload[1001:])  # one bit flipped
    with pytest.raises(aot.AotError, match="damaged"):
        aot.verify_dir(copy)
    so.write_bytes(payload[: len(payload) // 2])
    # a fresh process: the rebuild fails at once (no C compiler), so it falls back to the JIT
    done = _run(FRESH, BPEBENCH_CACHE=str(root), BPEBENCH_AOT="1", CC="/bin/false")
    assert done.returncode == 0, done.stderr
    ids, batch, used_aot, _ = json.loads(done.stdout)
    assert not used_aot
    assert [ids, batch] == json.loads(_run(FRESH, BPEBENCH_AOT="1").stdout)[:2]
    started, failed = done.stderr.splitlines()  # the one-off build says when it starts, then why it failed
    assert "compiling the fused pipeline ahead of time" in started
    assert "ahead-of-time compilation failed" in failed and "no working C compiler" in failed
    # the failure is remembered: the next process does not try again, and says so
    again = _run(FRESH, BPEBENCH_CACHE=str(root), BPEBENCH_AOT="1", CC="/bin/false")
    assert again.returncode == 0 and "failed before" in again.stderr and again.stderr.count("\n") == 1
    # bpebench compile retries, and reports its failure as one line with exit code 2
    cli = subprocess.run([sys.executable, "-m", "bpebench", "compile"], cwd=REPO, capture_output=True, text=True,
                         env=_env(BPEBENCH_CACHE=str(root), BPEBENCH_AOT="1", CC="/bin/false"), timeout=600)
    assert cli.returncode == 2 and cli.stderr.count("\n") == 1 and "no working C compiler" in cli.stderr


def test_damaged_module_is_replaced_by_a_build(aot_module, pipelines, tmp_path, monkeypatch):
    """load() with a plan rebuilds a damaged module (the build process is simulated: it copies the good one)."""
    root = _cache_root_with(tmp_path, aot_module.directory)
    target = root / "aot" / aot_module.directory.name
    so = target / aot_module.manifest["file"]
    so.write_bytes(so.read_bytes()[:4096])
    builds = []

    def fake_build(target, description, *, verbose):
        builds.append(description)
        aot._discard(target)
        shutil.copytree(aot_module.directory, target)

    monkeypatch.setenv("BPEBENCH_CACHE", str(root))
    monkeypatch.setattr(aot, "_build_into", fake_build)
    assert aot.load() is None and not builds  # without a plan nothing is built, and the damaged one is not loaded
    fp = pipelines["o200k_base"]
    module = aot.load(fp.plan)
    assert module is not None and module.directory == target and len(builds) == 1
    encode, _, _ = module.entry_points(fp.plan)
    out = np.empty(11, dtype=np.int32)
    assert encode(fp.plan, np.frombuffer(b"hello world", dtype=np.uint8), out, CACHE) == 2
    assert out[:2].tolist() == [24912, 2375]


# ============================================================================= the lazy njit
LAZY = (
    "import json, sys\n"
    "import bpebench.algorithms.pipeline.fast_pipeline as fp, bpebench.algorithms.backtracking as bt, bpebench.algorithms.core.registry as r\n"
    "from bpebench.algorithms.kernels.jit import LazyDispatcher, njit\n"
    "r.encoder_names()\n"
    "before = ['numba' in sys.modules, type(bt.backtrack_piece) is LazyDispatcher,\n"
    "          type(fp.backtrack_piece) is LazyDispatcher]\n"
    "from bpebench.algorithms.formats import load_vocabulary\n"
    "from bpebench.algorithms.core.registry import make_encoder\n"
    "ids = make_encoder('backtracking', load_vocabulary('o200k_base')).encode(b'hello world')\n"
    "from numba.core.dispatcher import Dispatcher\n"
    "stamp = fp.encode_utf8._cache._cache_file._source_stamp\n"
    "late = njit(cache=False)(lambda x: x + 1)\n"
    "print(json.dumps([before, ids, isinstance(bt.backtrack_piece, Dispatcher),\n"
    "                  isinstance(fp.backtrack_piece, Dispatcher), isinstance(stamp, tuple) and len(stamp) == 2,\n"
    "                  isinstance(late, Dispatcher), late(1)]))\n"
)


def test_lazy_njit_imports_numba_on_first_call_and_rebinds_every_module():
    done = _run(LAZY, BPEBENCH_AOT="0")
    assert done.returncode == 0, done.stderr
    before, ids, rebound, rebound_import, stamped, late_real, late_value = json.loads(done.stdout)
    assert before == [False, True, True]
    assert ids == [24912, 2375]
    assert rebound and rebound_import and stamped and late_real and late_value == 2


# ============================================================================= numba's disk cache follows callees
CALLEE = "from .jit import njit\n\n\n@njit(cache=True)\ndef value():\n    return {}\n"
CALLER = "from .jit import njit\nfrom .zz_callee import value\n\n\n@njit(cache=True)\ndef call():\n    return value()\n"


def test_the_build_key_covers_every_compiled_module_the_kernel_imports():
    """Editing a module whose compiled functions end up in the module must change the build key,
    else a stale module would keep running the old code: every module of the package that the
    fused pipeline imports and that defines numba functions is one of ``KEY_SOURCES``."""
    code = ("import sys, os, bpebench.algorithms.pipeline.fast_pipeline as fp\n"
            "root = os.path.dirname(os.path.dirname(fp.__file__))\n"
            "for name, module in sorted(sys.modules.items()):\n"
            "    path = getattr(module, '__file__', None)\n"
            "    if name.startswith('bpebench.algorithms.') and path and 'njit(' in open(path).read():\n"
            "        print(os.path.relpath(path, root).replace(os.sep, '/'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    compiled = set(done.stdout.split())
    assert {"pipeline/fast_pipeline.py", "backtracking.py", "kernels/interleaved_merge.py"} <= compiled
    assert compiled <= set(aot.KEY_SOURCES), compiled - set(aot.KEY_SOURCES)


def test_disk_cache_is_stale_once_a_callee_module_changes(tmp_path):
    """A cached kernel calling into another module: after editing only the callee, numba's
    own stamp (the caller's file) still matches, yet the result must be the new one."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("NUMBA_DISABLE_JIT=1: no compiled code at all")
    import shutil

    package = tmp_path / "algorithms"
    shutil.copytree(REPO / "algorithms", package, ignore=shutil.ignore_patterns("__pycache__"))
    kernels = package / "kernels"
    (kernels / "zz_caller.py").write_text(CALLER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    script = "from algorithms.kernels.zz_caller import call; print(call())"

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    (kernels / "zz_callee.py").write_text(CALLEE.format(1))
    assert run() == "1"
    assert list((tmp_path / "numba").rglob("*zz_caller*.nbi"))  # the caller was cached on disk
    (kernels / "zz_callee.py").write_text(CALLEE.format(2))
    assert run() == "2"


def test_disk_cache_is_shared_by_copies_of_the_same_sources(tmp_path):
    """Without ``NUMBA_CACHE_DIR``, compiled kernels are cached by the sources' contents, not their
    path or modification time: a second copy of the package (a fresh checkout, a new virtualenv)
    loads what the first compiled; an edited callee in either is compiled again."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("NUMBA_DISABLE_JIT=1: no compiled code at all")
    script = ("from algorithms.kernels.zz_caller import call; v = call(); "
              "print(v, call.stats.cache_hits.get(call.signatures[0], 0))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "home-cache")

    def copy(name: str, callee: int) -> Path:
        place = tmp_path / name
        shutil.copytree(REPO / "algorithms", place / "algorithms", ignore=shutil.ignore_patterns("__pycache__"))
        (place / "algorithms" / "kernels" / "zz_caller.py").write_text(CALLER)
        (place / "algorithms" / "kernels" / "zz_callee.py").write_text(CALLEE.format(callee))
        return place

    def run(place: Path) -> str:
        done = subprocess.run([sys.executable, "-c", script], cwd=place, env={**env, "PYTHONPATH": str(place)},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    first, second, edited = copy("first", 1), copy("second", 1), copy("edited", 2)
    assert run(first) == "1 0"  # compiled
    assert run(second) == "1 1"  # loaded: another path, other modification times, the same contents
    assert run(edited) == "2 0"  # a callee differs: compiled again
    assert run(first) == "1 1"
    root = tmp_path / "home-cache" / "bpebench" / "numba"
    states = list(root.iterdir())
    assert len(states) == 2 and all(list(state.rglob("*zz_caller*.nbi")) for state in states)
    assert not list(first.rglob("*.nbi"))  # nothing beside the sources
    for k in range(5):  # states of other sources, unused for two hours: all but the newest go
        stale = root / f"stale{k}"
        stale.mkdir()
        os.utime(stale, (time.time() - 7200 - k, time.time() - 7200 - k))
    assert run(first) == "1 1"
    assert sorted(p.name for p in root.iterdir()) == sorted([*(s.name for s in states), "stale0", "stale1"])


# ============================================================================= the id-list helper (id_lists.c)
def test_helper_builds_the_lists_tolist_builds(aot_module, pipelines):
    helper = aot_module.id_lists
    assert helper is not None
    fp = pipelines["o200k_base"]
    assert fp._id_lists is helper
    rng = np.random.default_rng(11)
    n_tokens = len(fp.plan.matcher.rows)
    ids = np.concatenate([rng.integers(0, n_tokens, size=20_000), [0, 256, 257, n_tokens - 1]]).astype(np.int32)
    for case in (ids, ids[:fp.GATHER_MIN], np.frombuffer(ids.tobytes(), dtype=np.int32)):  # the last one read-only
        first, second = fp.id_list(case), fp.id_list(case)
        assert first == case.tolist() and all(type(i) is int for i in first)
        first.append(-1)
        assert second == case.tolist()  # a new list per call
    bounds = np.array([0, 0, 3, 3, 9000, len(ids)], dtype=np.int64)
    assert fp.id_lists(ids, bounds) == [ids[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]
    assert helper.id_lists(fp._shared_ints(), ids, np.array([0], dtype=np.int64)) == []
    text = (REPO / "README.md").read_text(encoding="utf-8")
    tok = Tokenizer(vocabulary("o200k_base"), pretokenizer="regex")
    assert fp.encode_list(text.encode()) == tok.encode_ordinary(text)


def test_lists_hold_the_pinned_id_objects_without_new_references(aot_module, pipelines):
    """The process's table of id objects is pinned (Python 3.11: a reference count no release
    reaches), so lists of ids hold its objects without taking references: the counts stay, the
    objects outlive any number of lists, and a list of 4,096 ids or more, filled with the GIL
    released, comes back tracked by the garbage collector. An id past a shorter view of the table
    is refused on that path as on the other."""
    helper = aot_module.id_lists
    fp = pipelines["o200k_base"]
    objects = fp._shared_ints()
    assert objects.base is fast_pipeline.shared_ints(len(objects))  # one table for the process
    pinned = sys.version_info < (3, 12)
    assert (sys.getrefcount(objects[1000]) > 2**59) is pinned
    rng = np.random.default_rng(5)
    ids = rng.integers(0, len(objects), size=10_000).astype(np.int32)
    ids[:3] = 1000
    held = sys.getrefcount(objects[1000])
    lists = [helper.id_list(objects, ids), helper.id_list(objects, ids[:50])]
    taken = sys.getrefcount(objects[1000]) - held
    assert taken == (0 if pinned else 6)
    assert lists == [ids.tolist(), ids[:50].tolist()] and gc.is_tracked(lists[0])
    for _ in range(3):
        del lists
        lists = [helper.id_list(objects, ids)]
    assert objects[1000] == 1000 and lists[0] == ids.tolist()
    with pytest.raises(IndexError, match="id 150 at position 4500"):
        helper.id_list(objects[:100], np.where(np.arange(5000) == 4500, 150, 7).astype(np.int32))
    assert helper.id_list(objects, ids[:50]) == ids[:50].tolist()


def test_strided_ints_are_ints_at_one_stride_and_survive_a_larger_table(aot_module, pipelines):
    """On Python 3.11 the process's table holds the interpreter's small ints up to 256 and, above,
    ints made by the helper in one block, 32 bytes apart (so a list is filled without reading the
    table): they are plain ints in every respect. A vocabulary larger than the table gets a new one;
    the lists and objects of the old one stay valid."""
    helper = aot_module.id_lists
    fp = pipelines["o200k_base"]
    table = fast_pipeline.shared_ints(len(fp._shared_ints()))
    strided = sys.version_info < (3, 12)
    assert fast_pipeline.lists_without_gil() is strided
    assert (len(table) >= fast_pipeline.STRIDED_INTS_MIN) is strided
    if not strided:
        return
    assert table.tolist() == list(range(len(table)))
    assert all(table[i] is i for i in (0, 1, 100, 256))  # the interpreter's own small ints
    assert all(id(table[i]) - id(table[257]) == (i - 257) * 32 for i in (258, 1000, len(table) - 1))
    x = table[100_000]
    assert type(x) is int and x + 1 == 100_001 and hash(x) == 100_000 and f"{x:,}" == "100,000"
    assert pickle.loads(pickle.dumps(x)) == 100_000 and x.to_bytes(3, "big") == (100_000).to_bytes(3, "big")
    ids = np.array([5, 256, 257, 100_000, len(table) - 1], dtype=np.int32)
    old_list = helper.id_list(table, ids)
    assert old_list == ids.tolist() and old_list[3] is x
    larger = fast_pipeline.shared_ints(len(table) + 10, helper)
    assert len(larger) == len(table) + 10 and larger[300] is not table[300] and larger[300] == 300
    assert helper.id_list(larger, np.array([len(table) + 9, 7], dtype=np.int32)) == [len(table) + 9, 7]
    assert helper.id_list(table, ids) == old_list == ids.tolist()  # the old table serves on
    assert fp.id_list(np.tile(ids[:4], 20)) == np.tile(ids[:4], 20).tolist()  # the pipeline's view of it
    empty = np.empty(3, dtype=object)
    with pytest.raises(ValueError, match="writable"):
        empty.flags.writeable = False
        helper.strided_ints(empty)


def test_batch_lists_from_pinned_objects_are_filled_together(aot_module, pipelines):
    """A batch's lists are each shorter than 4,096 ids but together longer: from the pinned table
    they are made first and filled in one stretch with the GIL released. They equal the slices,
    take no references, come back tracked by the garbage collector (empty ones too), and an id past
    a shorter view of the table is refused with the position of the first bad id."""
    helper = aot_module.id_lists
    objects = pipelines["o200k_base"]._shared_ints()
    pinned = sys.version_info < (3, 12)
    rng = np.random.default_rng(9)
    ids = rng.integers(0, len(objects), size=12_000).astype(np.int32)
    ids[::500] = 1000
    bounds = np.array([0, 0, 300, 3000, 3000, 7000, 12_000], dtype=np.int64)
    held = sys.getrefcount(objects[1000])
    lists = helper.id_lists(objects, ids, bounds)
    taken = sys.getrefcount(objects[1000]) - held
    assert taken == (0 if pinned else 24)
    assert lists == [ids[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]
    assert all(gc.is_tracked(one) for one in lists) and gc.is_tracked(lists)
    del lists
    assert objects[1000] == 1000
    small = np.array([0, 0, 40, 41, 900], dtype=np.int64)  # under 4,096 together: filled with the GIL held
    assert helper.id_lists(objects, ids, small) == [ids[a:b].tolist() for a, b in zip(small[:-1], small[1:])]
    bad = np.where(np.arange(6000) == 4500, 150, 7).astype(np.int32)
    for bad_bounds in ([0, 2000, 4000, 6000], [0, 4490, 4510]):
        with pytest.raises(IndexError, match="id 150 at position 4500"):
            helper.id_lists(objects[:100], bad, np.array(bad_bounds, dtype=np.int64))
    # collections on another thread while the lists are filled without the GIL read none of them
    stop = threading.Event()
    collector = threading.Thread(target=lambda: [gc.collect(0) for _ in iter(stop.is_set, True)])
    collector.start()
    try:
        for _ in range(30):
            lists = helper.id_lists(objects, ids, bounds)
            assert [len(one) for one in lists] == np.diff(bounds).tolist() and lists[-1] == ids[7000:].tolist()
    finally:
        stop.set()
        collector.join()


def test_helper_refuses_what_it_would_misread_and_leaks_nothing(aot_module):
    helper = aot_module.id_lists
    token = 10**30  # an object only this test holds, so its reference count is exact
    objects = np.array([token, 1, 2], dtype=object)
    held = sys.getrefcount(token)
    got = helper.id_list(objects, np.array([0, 0, 1, 0], dtype=np.int32))
    counted = sys.getrefcount(token)  # before the assertion: pytest keeps its operands alive
    assert counted == held + 3
    assert got == [token, token, 1, token]
    del got
    assert sys.getrefcount(token) == held
    for bad_id in (3, -1):
        with pytest.raises(IndexError, match=f"id {bad_id} at position 3"):
            helper.id_list(objects, np.array([0, 0, 0, bad_id, 0], dtype=np.int32))
        with pytest.raises(IndexError):
            helper.id_lists(objects, np.array([0, 0, bad_id], dtype=np.int32), np.array([0, 1, 3], dtype=np.int64))
    assert sys.getrefcount(token) == held  # the half-built lists were released
    with pytest.raises(TypeError, match="ids must be"):
        helper.id_list(objects, np.array([0], dtype=np.int64))
    with pytest.raises(TypeError, match="ids must be"):
        helper.id_list(objects, np.zeros((1, 1), dtype=np.int32))
    with pytest.raises(TypeError, match="objects must be"):
        helper.id_list(np.arange(3), np.array([0], dtype=np.int32))
    with pytest.raises(ValueError, match="contiguous"):
        helper.id_list(objects, np.zeros(8, dtype=np.int32)[::2])
    with pytest.raises(TypeError, match="bounds must be"):
        helper.id_lists(objects, np.array([0], dtype=np.int32), np.array([0, 1], dtype=np.int32))
    for bounds in ([0, 2], [1, 0], [-1, 1]):
        with pytest.raises(ValueError, match="is not a range of the 1 ids"):
            helper.id_lists(objects, np.array([0], dtype=np.int32), np.array(bounds, dtype=np.int64))
    with pytest.raises(TypeError, match="takes 2 or 3 arguments"):
        helper.id_list(objects)
    # a count: the first ids only, never past the end
    three = np.array([0, 1, 0], dtype=np.int32)
    assert helper.id_list(objects, three, 2) == [token, 1] and helper.id_list(objects, three, 0) == []
    for count, error in ((4, "count 4 is more than the 3 ids"), (-1, "must not be negative")):
        with pytest.raises(ValueError, match=error):
            helper.id_list(objects, three, count)
    assert sys.getrefcount(token) == held


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=()), max_size=40).map(lambda t: t + "\u00e9\u4e2d"),
       cut=st.tuples(st.integers(0, 90), st.integers(0, 90)))
def test_helper_utf8_span_is_the_slices_utf8(aot_module, text, cut):
    """``utf8_span`` against Python's own encoder, on every kind of str (ASCII, Latin-1, BMP,
    astral): the bytes of ``text[a:b]``, or None exactly when the span holds a surrogate."""
    helper = aot_module.id_lists
    surrogate = text[:3] + "\udc80" + text[3:]
    runs = "ascii run " + text[:5] + "of eight and more" + text[5:] + "0123456789"  # the 8-at-a-time path
    for candidate in (text, text[:-1], text[:-2], "".join(c for c in text if c < "\u0100"), surrogate, runs,
                      runs[:-2] + "\U0001f600"):
        a, b = sorted(min(x, len(candidate)) for x in cut)
        try:
            expected = candidate[a:b].encode("utf-8")
        except UnicodeEncodeError:
            expected = None
        assert helper.utf8_span(candidate, a, b) == expected


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.characters(exclude_categories=()), max_size=30).map(
           lambda t: ("eight or more ascii " if len(t) % 2 else "") + t), max_size=8),
       cut=st.tuples(st.integers(0, 9), st.integers(0, 9)))
def test_helper_utf8_texts_joins_the_texts_utf8(aot_module, texts, cut):
    """``utf8_texts`` against Python's own encoder: the joined bytes of ``texts[first:last]`` and
    where each starts, or None exactly when one of them holds a surrogate."""
    helper = aot_module.id_lists
    first, last = sorted(min(x, len(texts)) for x in cut)
    made = helper.utf8_texts(texts, first, last)
    try:
        encoded = [t.encode("utf-8") for t in texts[first:last]]
    except UnicodeEncodeError:
        assert made is None
        return
    data, offsets = made
    assert data == b"".join(encoded)
    assert np.frombuffer(offsets, dtype=np.int64).tolist() == [0, *itertools.accumulate(map(len, encoded))]


def test_helper_utf8_texts_refuses_what_is_not_a_list_of_str(aot_module):
    helper = aot_module.id_lists
    for first, last in ((-1, 1), (2, 1), (0, 3)):
        with pytest.raises(ValueError, match="not within the list's 2"):
            helper.utf8_texts(["a", "b"], first, last)
    with pytest.raises(TypeError, match="item 1 is not a str"):
        helper.utf8_texts(["a", b"b"], 0, 2)
    assert helper.utf8_texts(["a", b"b"], 0, 1)[0] == b"a"  # only the texts asked for are read
    with pytest.raises(TypeError, match="takes 3 arguments"):
        helper.utf8_texts(("a",), 0, 1)


def test_helper_move_items_moves_the_items_and_leaks_nothing(aot_module):
    helper = aot_module.id_lists
    token = 10**30 + 7  # only this test holds it: its reference count is exact
    held = sys.getrefcount(token)
    parts = [[token, 1], [], [2, token, token], [3]]
    expected = [x for part in parts for x in part]
    before = sys.getrefcount(token)
    joined = parts[0]
    for more in parts[1:]:
        assert helper.move_items(joined, more) is None
    counted = sys.getrefcount(token)  # before the assertions: pytest keeps its operands alive
    assert joined == expected and parts[1:] == [[], [], []]
    assert counted == before  # moved, not copied: no new reference, none lost
    parts[2].append(5)  # the emptied lists stay usable
    assert parts[2] == [5]
    helper.move_items(joined, joined)  # onto itself: nothing moves
    assert joined == expected
    many = list(range(1 << 16))  # large enough to be copied with the GIL released
    helper.move_items(joined, many)
    assert joined == expected + list(range(1 << 16)) and many == []
    joined.append(token)  # the grown list is an ordinary list
    assert joined[-1] == token and len(joined) == len(expected) + (1 << 16) + 1
    del joined, expected, parts
    assert sys.getrefcount(token) == held
    for bad in (([1], (2,)), ((1,), [2]), ([1],), ([1], [2], [3])):
        with pytest.raises(TypeError, match="move_items"):
            helper.move_items(*bad)


def test_helper_utf8_span_refuses_spans_outside_the_text(aot_module):
    helper = aot_module.id_lists
    for a, b in ((-1, 2), (2, 1), (0, 5)):
        with pytest.raises(ValueError, match="not within the text's 4 characters"):
            helper.utf8_span("abcd", a, b)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        helper.utf8_span(b"abcd", 0, 1)
    with pytest.raises(TypeError):
        helper.utf8_span("abcd", "0", 1)


def test_helper_is_a_second_module_of_the_same_shared_object(aot_module):
    """One file to check and one dlopen: the helper's PyInit is linked into the kernels' module, so
    the damage tests of the module cover it."""
    assert Path(aot_module.id_lists.__file__) == Path(aot_module.module.__file__)
    assert aot_module.id_lists.__name__ == aot.ID_LISTS_MODULE and aot_module.module.__name__ == aot.MODULE_NAME
    assert sorted(p.name for p in aot_module.directory.iterdir()) == sorted([aot_module.manifest["file"],
                                                                              "manifest.json"])


def test_a_first_use_build_announces_its_start_and_end(tmp_path, monkeypatch, capsys):
    """The one-off build is not silent: one line when it starts, one with its time when it ends."""
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(aot, "_build_into", lambda target, description, verbose: target.mkdir(exist_ok=True))
    from bpebench.algorithms.pipeline import aot_build

    target = aot.build(aot_build.example_plan(), announce=True)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and "compiling the fused pipeline" in lines[0]
    assert lines[1].startswith("bpebench: compiled in ") and str(target) in lines[1]
    aot.build(aot_build.example_plan(), force=True)  # not announced unless asked (bpebench compile prints its own)
    assert capsys.readouterr().err == ""



@pytest.mark.parametrize("suffix", [".nbi", ".nbc"])
def test_a_damaged_numba_cache_file_is_a_miss_not_an_error(tmp_path, suffix):
    """A truncated numba index or data file once raised UnpicklingError on every run of that kernel."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("NUMBA_DISABLE_JIT=1: no compiled code at all")
    script = ("import numpy as np; from bpebench.algorithms.kernels.compiled import fnv1a;"
              "print(int(fnv1a(np.frombuffer(b'abc', dtype=np.uint8), 0, 3)))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "BPEBENCH_AOT": "0"}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    damaged = list(tmp_path.rglob(f"*fnv1a*{suffix}"))
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:7])
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert "discarded a damaged numba cache file" in again.stderr
    third = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0 and third.stdout == first.stdout and third.stderr == ""  # rewritten whole


def _first_pair(data: bytes, first: int, second: int) -> int:
    """The reference: the first index of the two bytes, by Python's own search."""
    return data.find(bytes([first, second]))


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300) | st.lists(st.sampled_from([b"<", b"|", b"<|", b"a", b"|<", b"\xe2"]), max_size=60)
       .map(b"".join), pair=st.sampled_from([(ord("<"), ord("|")), (ord("|"), ord("<")), (0xE2, 0x96), (0, 0)]))
def test_helper_find_pair_is_the_first_occurrence(aot_module, data, pair):
    """``find_pair`` (the Tokenizer's special-token screen) against ``bytes.find``: at the start,
    the end, a first byte in the last position, runs of the first byte, empty and one-byte data."""
    helper = aot_module.id_lists
    assert helper.find_pair(data, *pair) == _first_pair(data, *pair)
    for edge in (b"", b"<", b"|", b"<|", b"x<", data + b"<", b"<" * 70 + b"|"):
        assert helper.find_pair(edge, *pair) == _first_pair(edge, *pair)


def test_helper_find_pair_refuses_what_is_not_bytes_or_a_byte(aot_module):
    helper = aot_module.id_lists
    with pytest.raises(TypeError, match="find_pair"):
        helper.find_pair("<|", 60, 124)  # a str, not bytes
    with pytest.raises(TypeError, match="find_pair"):
        helper.find_pair(b"<|", 60)
    for first, second in ((256, 124), (60, -1)):
        with pytest.raises(ValueError, match="0 to 255"):
            helper.find_pair(b"<|", first, second)
