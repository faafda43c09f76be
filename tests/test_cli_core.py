"""The core CLI commands (list, vocab, encode, decode) and their one-line errors on bad files."""

from __future__ import annotations

import base64
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bpebench.cli import main

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from golden_fixtures import HF_FIXTURE, SPM_FIXTURE, hf_json, spm_proto, tiny_spm_pieces  # noqa: E402

GOLDEN = json.loads((Path(__file__).parent / "golden" / "golden.json").read_text(encoding="utf-8"))


def run(capsys, *argv: str, stdin: str | bytes | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        raw = stdin if isinstance(stdin, bytes) else stdin.encode("utf-8")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bpebench: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


# ============================================================================= malformed files
def _tiktoken_lines() -> list[bytes]:
    """A sound rank file: the 256 single bytes, then ``ab``."""
    single = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)]
    return single + [base64.b64encode(b"ab") + b" 256"]


def malformed(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """One defective file per format and defect -> (path, what the error must say)."""
    files: dict[str, tuple[Path, str]] = {}
    lines = _tiktoken_lines()
    bad = tmp_path / "bad_base64.tiktoken"
    bad.write_bytes(b"\n".join(lines[:10] + [b"not*base64! 10"] + lines[11:]))
    files["tiktoken bad base64"] = (bad, "bad base64")
    dup = tmp_path / "duplicate.tiktoken"
    dup.write_bytes(b"\n".join(lines + [base64.b64encode(b"ab") + b" 257"]))
    files["tiktoken duplicate token"] = (dup, "duplicate token b'ab'")
    trunc = tmp_path / "truncated.tiktoken.gz"
    trunc.write_bytes(gzip.compress(b"\n".join(lines))[:200])
    files["tiktoken truncated"] = (trunc, "truncated gzip file")

    raw = HF_FIXTURE.read_bytes()
    trunc = tmp_path / "truncated.json"
    trunc.write_bytes(raw[: len(raw) // 2])
    files["hf truncated"] = (trunc, "truncated JSON")
    data = hf_json()
    data["model"]["type"] = "Unigram"
    unigram = tmp_path / "unigram.json"
    unigram.write_text(json.dumps(data), encoding="utf-8")
    files["hf not BPE"] = (unigram, "not BPE")
    data = hf_json()
    data["model"]["vocab"]["Ġduplicate"] = 5
    dup = tmp_path / "duplicate_id.json"
    dup.write_text(json.dumps(data), encoding="utf-8")
    files["hf duplicate id"] = (dup, "duplicate id 5")

    raw = SPM_FIXTURE.read_bytes()
    trunc = tmp_path / "truncated.model"
    trunc.write_bytes(raw[: len(raw) // 2])
    files["spm truncated"] = (trunc, "not a SentencePiece model")
    unigram = tmp_path / "unigram.model"
    unigram.write_bytes(spm_proto(tiny_spm_pieces(), model_type=1))
    files["spm not BPE"] = (unigram, "unigram model")
    dup = tmp_path / "duplicate.model"
    dup.write_bytes(spm_proto(tiny_spm_pieces() + [("ab", -9.0, 1)]))
    files["spm duplicate token"] = (dup, "duplicate token 'ab'")

    gguf = tmp_path / "truncated.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 20)
    files["gguf truncated"] = (gguf, "damaged GGUF file")
    return files


MALFORMED = ["tiktoken bad base64", "tiktoken duplicate token", "tiktoken truncated", "hf truncated",
             "hf not BPE", "hf duplicate id", "spm truncated", "spm not BPE", "spm duplicate token",
             "gguf truncated"]


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_files_give_one_line_and_exit_2(tmp_path, capsys, case):
    if case.startswith("gguf"):
        pytest.importorskip("gguf")
    path, needle = malformed(tmp_path)[case]
    code, out, err = run(capsys, "vocab", str(path))
    assert_one_line_error(code, err, needle, path.name)
    assert out == ""
    code, out, err = run(capsys, "encode", "--vocab", str(path), "x")
    assert_one_line_error(code, err, needle)


def test_malformed_file_in_a_subprocess(tmp_path):
    path, needle = malformed(tmp_path)["tiktoken bad base64"]
    result = subprocess.run([sys.executable, "-m", "bpebench", "encode", "--vocab", str(path), "hello"],
                            capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[1])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and needle in result.stderr and "Traceback" not in result.stderr


def test_missing_file_and_unknown_name(capsys, tmp_path):
    code, _, err = run(capsys, "vocab", str(tmp_path / "nothing.json"))
    assert_one_line_error(code, err, "no such file")
    code, _, err = run(capsys, "encode", "--vocab", "no_such_vocab", "x")
    assert_one_line_error(code, err, "unknown vocabulary 'no_such_vocab'", "cl100k_base")


# ============================================================================= commands
def test_list_shows_vocabularies_and_algorithms(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    for name in ("o200k_base", "cl100k_base", "qwen", "mistral_v1", "naive"):
        assert name in out


def test_vocab_describes_each_format(capsys):
    for name, expected in [("cl100k_base", "rule:      ranks"), (str(HF_FIXTURE), "rule:      merges"),
                           (str(SPM_FIXTURE), "normalizer:    SentencePiece(")]:
        code, out, _ = run(capsys, "vocab", name, "--strict")
        assert code == 0 and expected in out and "problems:  none" in out, out


def test_encode_text_arguments_and_stdin(capsys, monkeypatch):
    expected = GOLDEN["vocabularies"]["cl100k_base"]["ordinary"][0]  # "hello world"
    code, out, _ = run(capsys, "encode", "--vocab", "cl100k_base", "hello", "world")
    assert code == 0 and out.split() == [str(i) for i in expected]
    code, out, _ = run(capsys, "encode", "--vocab", "cl100k_base", stdin="hello world", monkeypatch=monkeypatch)
    assert code == 0 and out.split() == [str(i) for i in expected]



def test_encode_special_tokens_follow_tiktoken(capsys):
    """Flags with tiktoken's names and defaults: a special-token literal is an error unless allowed
    (then its id) or permitted as text (then the ids of its characters)."""
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.properties.oracles import tiktoken_encoding

    encoding = tiktoken_encoding(load_vocabulary("cl100k_base"))
    text = "a <|endoftext|> b <|fim_prefix|>"
    code, _, err = run(capsys, "encode", "--vocab", "cl100k_base", text)
    assert_one_line_error(code, err, "<|endoftext|>", "--allowed-special")
    for flags, kwargs in [(["--allowed-special", "all"], {"allowed_special": "all"}),
                          (["--disallowed-special", "none"], {"disallowed_special": ()}),
                          (["--allowed-special", "<|endoftext|>", "--disallowed-special", "none"],
                           {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()})]:
        code, out, err = run(capsys, "encode", "--vocab", "cl100k_base", *flags, text)
        assert code == 0, err
        assert [int(x) for x in out.split()] == encoding.encode(text, **kwargs)
    code, _, err = run(capsys, "encode", "--vocab", "cl100k_base", "--allowed-special", "<|endoftext|>", text)
    assert_one_line_error(code, err, "<|fim_prefix|>")  # not allowed, still disallowed
    code, _, err = run(capsys, "encode", "--allowed-special", "<|nope|>", "x")
    assert_one_line_error(code, err, "'<|nope|>' is not a special token")


def test_encode_input_that_is_not_utf8(capsys, monkeypatch):
    code, _, err = run(capsys, "encode", "--vocab", "o200k_base", stdin=b"abc\xff", monkeypatch=monkeypatch)
    assert_one_line_error(code, err, "stdin is not valid UTF-8", "--errors replace")
    code, out, _ = run(capsys, "encode", "--vocab", "o200k_base", "--errors", "replace", stdin=b"abc\xff",
                       monkeypatch=monkeypatch)
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.properties.oracles import tiktoken_encoding

    assert [int(x) for x in out.split()] == tiktoken_encoding(load_vocabulary("o200k_base")).encode("abc\ufffd")
    code, out, _ = run(capsys, "encode", "--vocab", "o200k_base", "--raw", "-a", "naive", stdin=b"abc\xff",
                       monkeypatch=monkeypatch)  # raw BPE runs on the bytes themselves
    from bpebench.algorithms.kernels.reference import bpe_reference

    assert [int(x) for x in out.split()] == bpe_reference(load_vocabulary("o200k_base"), b"abc\xff")


def test_encode_jsonl(capsys, monkeypatch):
    texts = GOLDEN["texts"][:6]
    stdin = "\n".join(json.dumps(t) for t in texts) + "\n"
    code, out, _ = run(capsys, "encode", "--vocab", "o200k_base", "--jsonl", stdin=stdin, monkeypatch=monkeypatch)
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == GOLDEN["vocabularies"]["o200k_base"]["ordinary"][:6]
    code, _, err = run(capsys, "encode", "--jsonl", stdin='"ok"\n{"not": "a string"}\n', monkeypatch=monkeypatch)
    assert_one_line_error(code, err, "stdin line 2", "expected a JSON string")
    code, out, _ = run(capsys, "encode", "--vocab", "o200k_base", "--jsonl", stdin='"a"\n\n"b"\n\n',
                       monkeypatch=monkeypatch)
    expected = GOLDEN["vocabularies"]["o200k_base"]
    assert code == 0 and out.split("\n")[1] == "" and out.split("\n")[3] == ""  # one output line per input line
    assert len(out.splitlines()) == 4


def test_encode_raw_is_pure_bpe_without_pre_tokenizer(capsys):
    code, out, _ = run(capsys, "encode", "--vocab", "cl100k_base", "--raw", "-a", "naive", "hello world")
    assert code == 0
    ids = [int(x) for x in out.split()]
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.kernels.reference import bpe_reference

    assert ids == bpe_reference(load_vocabulary("cl100k_base"), b"hello world")
    pytest.importorskip("tiktoken")
    from bpebench.algorithms.peers import make_peer

    assert ids == make_peer("tiktoken", load_vocabulary("cl100k_base")).encode_raw(b"hello world")


def test_decode_and_its_errors(capsys, monkeypatch):
    ids = GOLDEN["vocabularies"]["o200k_base"]["ordinary"][2]
    code, out, _ = run(capsys, "decode", "--vocab", "o200k_base", *map(str, ids))
    assert code == 0 and out == GOLDEN["texts"][2] + "\n"
    code, out, _ = run(capsys, "decode", "--vocab", "o200k_base", stdin=" ".join(map(str, ids)),
                       monkeypatch=monkeypatch)
    assert out == GOLDEN["texts"][2] + "\n"
    code, _, err = run(capsys, "decode", "--vocab", "o200k_base", "24912", "999999")
    assert_one_line_error(code, err, "token id 999999 is out of range")
    code, _, err = run(capsys, "decode", "--vocab", "o200k_base", "12", "x1")
    assert_one_line_error(code, err, "not a token id: 'x1'")


def test_decode_raw_writes_exactly_the_bytes():
    from bpebench.algorithms.formats import load_vocabulary

    vocab = load_vocabulary("o200k_base")
    ids = [vocab.token_id(b"hello"), vocab.token_id(b"\xe6"), vocab.token_id(b" world")]  # not valid UTF-8
    done = subprocess.run([sys.executable, "-m", "bpebench", "decode", "--raw", *map(str, ids)],
                          capture_output=True, timeout=120)
    assert done.returncode == 0 and done.stdout == b"hello\xe6 world"  # no decoding, no newline


def test_version_and_single_error_prefix(capsys):
    import bpebench

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"bpebench {bpebench.__version__}"
    code, _, err = run(capsys, "encode", "--vocab")
    assert_one_line_error(code, err, "encode: argument --vocab: expected one argument")
    assert err.count("bpebench") == 1


def test_vocabulary_with_merges_out_of_order(tmp_path, capsys):
    """``abc`` ranked before its part ``bc``: backtracking refuses in one line, the default
    (heap) encodes it like the reference, and ``sample`` lists the refusals and goes on."""
    tokens = [bytes([b]) for b in range(256)] + [b"abc", b"bc"]
    path = tmp_path / "late.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    code, out, err = run(capsys, "encode", "--vocab", str(path), "--algorithm", "backtracking", "xabcbc")
    assert_one_line_error(code, err, "backtracking cannot encode", "out of priority order")
    code, out, err = run(capsys, "encode", "--vocab", str(path), "xabcbc")
    assert code == 0 and out.split() == ["120", "256", "257"]  # x abc bc: b c, then a bc (hand-worked)
    code, out, err = run(capsys, "sample", "--vocab", str(path))
    assert code == 0 and "table          exact        refuses this vocabulary" in out
    assert any(line.startswith("heap") and line.split()[-2] == "yes" for line in out.splitlines())
