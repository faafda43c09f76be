"""A regex list's generated splitter compiled ahead of time (``algorithms/pipeline/aot_lists.py``).

Oracles: the generated numba function of the same list (the JIT), the ``regex`` reference of the
list (``_isolated_spans``) and HF ``tokenizers`` on DeepSeek-V4's own file. The module of
DeepSeek-V4's list is built once into the cache the tests use (about 35 s when missing); damaged
modules and failed builds are tested in temporary cache roots, with the build replaced.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.pipeline import aot, aot_lists, llama_cpp_program
from bpebench.algorithms.pipeline.llama_cpp_program import ListSplitter, _isolated_spans
from bpebench.corpora.hard_strings import HARD_STRINGS
from test_aot import _cache_root_with  # a cache root sharing this one's data, with a module's copy or none

pytestmark = pytest.mark.xdist_group("aot")

REPO = Path(__file__).resolve().parents[1]
#: DeepSeek-V3's and V4's three splits, as their ``tokenizer.json`` gives them
DEEPSEEK = (r"\p{N}{1,3}", "[一-龥\u3040-ゟ゠-ヿ]+",
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
            "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+")


def _env(**changes) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env.update(changes)
    return env


@pytest.fixture(scope="module")
def compiled():
    """(the list's ListSplitter on its ahead-of-time module, the same list's on numba's JIT)."""
    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("NUMBA_DISABLE_JIT=1: no compiled code at all")
    jit = ListSplitter.of_splits(DEEPSEEK)  # the tests run with BPEBENCH_AOT=0: the generated numba function
    assert not isinstance(jit._split, aot_lists.BoundSplit)
    for name in ("o200k_base", "deepseek_v4"):
        load_vocabulary(name)  # the vocabulary cache the subprocesses map
    # the fused module and DeepSeek-V4's list module, built now when missing
    done = subprocess.run([sys.executable, "-m", "bpebench", "compile", "--vocab", "deepseek_v4"], cwd=REPO,
                          env=_env(BPEBENCH_AOT="1"), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BPEBENCH_AOT", "1")
        found = llama_cpp_program._split_function.__wrapped__(DEEPSEEK, "hf")  # past the JIT's memo
    steps, split, tables, run = found
    assert isinstance(split, aot_lists.BoundSplit), "the list's module was not built or loaded"
    return ListSplitter("deepseek", steps, split, tables, run, lambda text: _isolated_spans(steps, text)), jit


TEXTS = [*HARD_STRINGS, "", "a", "12345678", "日本語のテキスト、カタカナ", "x" * 5000, "  \n\n \t 1 2 3 —— «ok»!!",
         "def f(x):\n    return x ** 2  # 10000\n" * 40]


def test_the_module_splits_as_the_jit_and_the_reference(compiled):
    ahead, jit = compiled
    for text in TEXTS:
        pieces = ahead.split(text)
        assert pieces == jit.split(text), text
        assert pieces == [text[a:b] for a, b in _isolated_spans(ahead.steps, text)], text


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.sampled_from(list("ab Zz19 \t\n\r.,!?é日本ひカЖ\u00a0\u2003\u0301_-'٣²５¿«、$+")), max_size=80))
def test_drawn_text_splits_as_the_jit(compiled, text):
    ahead, jit = compiled
    assert ahead.split(text) == jit.split(text)


def test_the_call_checks_what_the_module_would_misread(compiled):
    ahead, _ = compiled
    data = np.frombuffer(b"hello 123", dtype=np.uint8)
    ends = np.empty(len(data) + 1, dtype=np.int64)
    scratch = ahead._scratch_for(len(data))
    assert ahead._split(data, ends, *scratch) == 3  # "hello", " ", "123"
    with pytest.raises(TypeError):
        ahead._split(data.astype(np.int32), ends, *scratch)
    with pytest.raises(TypeError):
        ahead._split(data, ends[:3], *scratch)
    with pytest.raises(TypeError):
        ahead._split(data, ends, scratch[0][:5], *scratch[1:])
    bigger = ListSplitter._scratch_for(type("Other", (), {"_scratch": __import__("threading").local()})(), 10_000)
    with pytest.raises(ValueError):  # working arrays of two different sets
        ahead._split(data, ends, scratch[0], bigger[1], scratch[2])
    assert ahead._split(data, ends, *bigger) == 3 and ahead._split(data, ends, *scratch) == 3
    with pytest.raises(aot_lists.AotError):
        aot_lists.handle(tuple(a.astype(np.int64) if isinstance(a, np.ndarray) else a
                               for a in ahead._split.arguments), aot_lists.describe(ahead._split.arguments)[::-1])


def test_the_handle_holds_each_address_and_shape(compiled):
    ahead, _ = compiled
    arguments = ahead._split.arguments
    leaves = aot_lists.describe(arguments)
    handle = aot_lists.handle(arguments, leaves)
    starts, size = aot.handle_layout({"leaves": leaves})
    assert len(handle) == size and not handle.flags.writeable
    for value, start in zip(arguments, starts):
        if isinstance(value, np.ndarray):
            assert handle[start] == value.ctypes.data and tuple(handle[start + 1:start + 1 + value.ndim]) == value.shape
        else:
            assert handle[start] == value


def test_the_key_covers_the_source_the_types_and_the_split_of_the_arguments(compiled):
    ahead, _ = compiled
    leaves = aot_lists.describe(ahead._split.arguments)
    source = llama_cpp_program.generated_source(ahead.run)
    before = ahead._split.before
    key = aot_lists.list_key(source, leaves, before)
    assert aot_lists.list_key(source, leaves, before) == key
    assert aot_lists.list_key(source + "\n", leaves, before) != key
    assert aot_lists.list_key(source, leaves, before + 1) != key
    assert aot_lists.list_key(source, [*leaves[:-1], {"kind": "int"}], before) != key
    assert ahead._split.directory.name == f"list-{aot_lists.list_key(source, leaves, ahead._split.before)[:32]}"


FRESH = (
    "import json, sys\n"
    "from bpebench.algorithms.pipeline.tokenizer import Tokenizer\n"
    "tok = Tokenizer('deepseek_v4')\n"
    "texts = json.loads(sys.stdin.read())\n"
    "print(json.dumps([[tok.encode_ordinary(t) for t in texts], 'numba' in sys.modules]))\n"
)


def test_a_fresh_process_encodes_deepseek_v4_without_importing_numba(compiled):
    """DeepSeek-V4's file in a fresh process: HF ``tokenizers``' ids, and neither the fused pipeline
    nor the split list's code needs numba."""
    texts = [*HARD_STRINGS[:80], "hello world 12345 你好 カタカナ", "def f(x):\n    return x  # 1000000\n"]
    child = subprocess.run([sys.executable, "-c", FRESH], cwd=REPO, env=_env(BPEBENCH_AOT="1"),
                           input=json.dumps(texts), capture_output=True, text=True, timeout=900)
    assert child.returncode == 0, child.stderr
    ids, numba_imported = json.loads(child.stdout)
    hf = tokenizers.Tokenizer.from_file(load_vocabulary("deepseek_v4").source)
    assert ids == [hf.encode(t, add_special_tokens=False).ids for t in texts]
    assert not numba_imported, child.stderr


def test_compile_builds_what_a_vocabulary_needs(compiled):
    """``bpebench compile --vocab``: the fused module, then each vocabulary's split list (the module the
    splitter above loaded), or nothing more for a vocabulary without one; a bad name is one line."""
    ahead, _ = compiled
    done = subprocess.run([sys.executable, "-m", "bpebench", "compile", "--vocab", "deepseek_v4", "--vocab",
                           "o200k_base"], cwd=REPO, env=_env(BPEBENCH_AOT="1"), capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"deepseek_v4: the split list (3 splits) in {ahead._split.directory}" in lines
    assert "o200k_base: nothing more to compile" in lines
    bad = subprocess.run([sys.executable, "-m", "bpebench", "compile", "--vocab", "no-such-vocabulary"], cwd=REPO,
                         env=_env(BPEBENCH_AOT="1"), capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "no-such-vocabulary" in bad.stderr


def _arguments(splitter):
    source = llama_cpp_program.generated_source(splitter.run)
    arguments, before = splitter._split.arguments, splitter._split.before
    return source, arguments[:before], arguments[before:]


def test_a_damaged_module_is_never_loaded_but_built_again(compiled, tmp_path, monkeypatch):
    ahead, _ = compiled
    monkeypatch.setenv("BPEBENCH_AOT", "1")
    monkeypatch.setenv("BPEBENCH_CACHE", str(_cache_root_with(tmp_path, ahead._split.directory)))
    copy = aot.cache_root() / "aot" / ahead._split.directory.name
    manifest = json.loads((copy / "manifest.json").read_text())
    module_file = copy / manifest["file"]
    payload = bytearray(module_file.read_bytes())
    payload[len(payload) // 2] ^= 0xFF
    module_file.write_bytes(bytes(payload))
    key = manifest["key"]
    with pytest.raises(aot_lists.AotError, match="damaged"):
        aot_lists._verify_dir(copy, key)
    builds = []

    def rebuilt(target, inputs, entry, build_key, *, verbose):
        builds.append((entry, json.loads(inputs[aot_lists.SPEC_FILE])["source"]))
        shutil.rmtree(target)
        shutil.copytree(ahead._split.directory, target)  # what the build would write

    monkeypatch.setattr(aot, "run_build", rebuilt)
    monkeypatch.setattr(aot_lists, "_loaded", {})
    source, before, after = _arguments(ahead)
    split = aot_lists.split_call(source, before, after, wait=True)
    assert builds == [("list_main", source)]
    assert isinstance(split, aot_lists.BoundSplit) and split.directory == copy
    aot_lists._verify_dir(copy, key)  # the good module is back in place


def test_a_failed_build_says_so_in_one_line_and_the_jit_is_used(compiled, tmp_path, monkeypatch, capsys):
    ahead, jit = compiled
    monkeypatch.setenv("BPEBENCH_AOT", "1")
    monkeypatch.setenv("BPEBENCH_CACHE", str(_cache_root_with(tmp_path, None)))
    monkeypatch.setattr(aot, "_warned", False)
    monkeypatch.setattr(aot_lists, "_loaded", {})
    calls = []

    def failing(target, inputs, entry, key, *, verbose):
        calls.append(entry)
        raise aot.AotError("no working C compiler for numba.pycc (CompileError)")

    monkeypatch.setattr(aot, "run_build", failing)
    source, before, after = _arguments(ahead)
    assert aot_lists.split_call(source, before, after, wait=True) is None
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("bpebench: compiling a regex list's splitter")
    assert len(err) == 2 and "no working C compiler" in err[1] and "using numba's JIT instead" in err[1]
    spawned = []
    monkeypatch.setattr(aot_lists, "_spawn", spawned.append)
    assert aot_lists.split_call(source, before, after) is None  # remembered: neither built nor started again
    assert calls == ["list_main"] and not spawned and list((aot.cache_root() / "aot").glob("list-*.failed"))
    assert aot_lists.split_call(source, before, after, wait=True) is None  # ``compile --vocab`` tries again
    assert calls == ["list_main", "list_main"]
    # the splitter then takes the generated numba function, with the same pieces
    found = llama_cpp_program._split_function.__wrapped__(DEEPSEEK, "hf")
    assert found is not None and not isinstance(found[1], aot_lists.BoundSplit)
    fallback = ListSplitter("deepseek", found[0], found[1], found[2], found[3], None)
    assert fallback.split("hello 12345 世界!") == jit.split("hello 12345 世界!")


def test_a_missing_module_is_built_in_the_background_while_numba_splits(compiled, tmp_path, monkeypatch, capsys):
    """A process's first use of a list does not wait for its build: the build starts detached, once,
    with the list's source and key, and the splitter gets numba's function; the build it runs writes
    the module the next process loads."""
    ahead, _ = compiled
    monkeypatch.setenv("BPEBENCH_AOT", "1")
    monkeypatch.setenv("BPEBENCH_CACHE", str(_cache_root_with(tmp_path, None)))
    monkeypatch.setattr(aot_lists, "_loaded", {})
    monkeypatch.setattr(aot_lists, "_started", set())
    spawned = []
    monkeypatch.setattr(aot_lists, "_spawn", spawned.append)
    source, before, after = _arguments(ahead)
    assert aot_lists.split_call(source, before, after) is None
    assert aot_lists.split_call(source, before, after) is None  # started once per process
    assert len(spawned) == 1 and "background_main" in spawned[0][2]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "in the background" in err[0]
    spec_path = Path(spawned[0][3])
    spec = json.loads(spec_path.read_text())
    assert spec["source"] == source and spec["target"] == ahead._split.directory.name
    # what the detached process runs, with the build replaced by a copy of the real module
    monkeypatch.setattr(aot, "run_build", lambda target, inputs, entry, key, *, verbose:
                        shutil.copytree(ahead._split.directory, target))
    aot_lists.background_main(str(spec_path))
    assert not spec_path.exists() and capsys.readouterr().err == ""
    monkeypatch.setattr(aot_lists, "_loaded", {})
    split = aot_lists.split_call(source, before, after)
    assert isinstance(split, aot_lists.BoundSplit) and split.directory.parent == aot.cache_root() / "aot"


def test_off_means_numba(monkeypatch):
    monkeypatch.setenv("BPEBENCH_AOT", "0")
    assert aot_lists.split_call("", (), ()) is None
