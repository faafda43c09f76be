"""tiktoken rank files as users have them, mistral-common's tekken.json, content sniffing,
``--format`` / ``--pattern``, and the bounds on what a small file may make bpebench allocate.

The oracle is tiktoken itself, built from the same ranks (``tiktoken.Encoding``, nothing
downloaded), and mistral-common's ``Tekkenizer`` for tekken.json.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
import zlib
from pathlib import Path

import pytest

from bpebench.cli import main
from bpebench.errors import VocabularyError
from bpebench.algorithms.formats import load_path, load_vocabulary, sniff_format
from bpebench.algorithms.formats.patterns import CL100K, LLAMA3
from bpebench.algorithms.formats.tiktoken_file import MAX_BYTES
from bpebench.algorithms.formats.vocabulary import MAX_IDS, Vocabulary
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from golden_fixtures import SPM_FIXTURE  # noqa: E402
from make_golden import TEXTS  # noqa: E402


@pytest.fixture(scope="module")
def cl100k_ranks() -> dict[bytes, int]:
    vocab = load_vocabulary("cl100k_base")
    return {vocab.tokens[i]: i for i in range(50400)}


def write_ranks(path: Path, ranks: dict[bytes, int], *, extra_lines: list[str] = (), gz: bool = False) -> Path:
    lines = [f"{base64.b64encode(t).decode()} {r}" for t, r in sorted(ranks.items(), key=lambda kv: kv[1])]
    data = ("\n".join([*lines, *extra_lines]) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def tiktoken_encoding(ranks, pattern=CL100K, specials=None):
    tiktoken = pytest.importorskip("tiktoken")
    return tiktoken.Encoding("test", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials or {})


# ============================================================================= real-world rank files
def test_p50k_shaped_gap_with_the_special_token_in_it(tmp_path, cl100k_ranks):
    """p50k has no rank 50256; <|endoftext|> takes that id."""
    ranks = {t: r for t, r in cl100k_ranks.items() if r != 50256}
    path = write_ranks(tmp_path / "p50k_like.tiktoken", ranks)
    specials = {"<|endoftext|>": 50256}
    vocab = load_path(path, pattern="cl100k")
    vocab.special_tokens = dict(specials)
    assert vocab.tokens[50256] == b"" and 50256 in vocab.excluded and vocab.problems() == []
    enc = tiktoken_encoding(ranks, specials=specials)
    for algorithm in (None, "naive"):
        tok = Tokenizer(vocab, algorithm=algorithm)
        for text in TEXTS:
            assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all"), text
    assert Tokenizer(vocab).decode([50256]) == "<|endoftext|>"
    # the tiktoken peer (what `bpebench parity` and the reports run) takes the gap too
    from bpebench.algorithms.peers import make_peer

    peer = make_peer("tiktoken", vocab)
    assert [peer.encode_ordinary(t) for t in TEXTS] == [enc.encode_ordinary(t) for t in TEXTS]


def test_empty_last_token_is_a_placeholder(tmp_path, cl100k_ranks):
    ranks = {t: r for t, r in cl100k_ranks.items() if r < 3000}
    path = write_ranks(tmp_path / "empty_last.tiktoken", ranks, extra_lines=[" 3000"])
    vocab = load_path(path, pattern="cl100k")
    assert len(vocab.tokens) == 3001 and vocab.tokens[3000] == b"" and 3000 in vocab.excluded
    enc = tiktoken_encoding(ranks)
    tok = Tokenizer(vocab)
    assert [tok.encode_ordinary(t) for t in TEXTS] == [enc.encode_ordinary(t) for t in TEXTS]


def test_llama3_tokenizer_model_is_sniffed_as_tiktoken(tmp_path, cl100k_ranks):
    """Meta ships Llama-3/4 ranks as ``tokenizer.model``: the name must not make it SentencePiece."""
    ranks = {t: r for t, r in cl100k_ranks.items() if r < 5000}
    path = write_ranks(tmp_path / "tokenizer.model", ranks)
    assert sniff_format(path) == "tiktoken"
    vocab = load_path(path, pattern="llama3")
    enc = tiktoken_encoding(ranks, pattern=LLAMA3)
    tok = Tokenizer(vocab)
    assert [tok.encode_ordinary(t) for t in TEXTS] == [enc.encode_ordinary(t) for t in TEXTS]


def test_every_format_is_sniffed_by_content_not_name(tmp_path, cl100k_ranks):
    ranks = {t: r for t, r in cl100k_ranks.items() if r < 300}
    cases = {
        "ranks.json": (write_ranks(tmp_path / "a", ranks).read_bytes(), "tiktoken"),
        "ranks.bin": (gzip.compress(write_ranks(tmp_path / "b", ranks).read_bytes()), "tiktoken"),
        "spm.tiktoken": (SPM_FIXTURE.read_bytes(), "sentencepiece"),
        "tok.model": (json.dumps({"version": "1.0", "model": {"type": "BPE"}}).encode(), "hf"),
        "tekken.model": (json.dumps({"config": {"pattern": "x"}, "vocab": []}).encode(), "tekken"),
    }
    for name, (data, expected) in cases.items():
        (tmp_path / name).write_bytes(data)
        assert sniff_format(tmp_path / name) == expected, name
    (tmp_path / "mystery.tiktoken").write_bytes(b"%PDF-1.7\n garbage")
    with pytest.raises(VocabularyError, match="cannot tell the format .*pass --format"):
        load_path(tmp_path / "mystery.tiktoken")


# ============================================================================= tekken.json
def test_mistral_tekken_equals_mistral_common():
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    vocab = load_vocabulary("mistral_tekken")
    reference = tekken.Tekkenizer.from_file(vocab.source)
    assert len(vocab.tokens) == reference.n_words and vocab.problems() == []
    assert vocab.special_tokens["<s>"] == reference.bos_id and vocab.special_tokens["</s>"] == reference.eos_id
    tok = Tokenizer(vocab)
    for text in TEXTS:
        assert tok.encode_ordinary(text) == reference.encode(text, bos=False, eos=False), text
        assert tok.decode(tok.encode_ordinary(text)) == reference.decode(reference.encode(text, False, False))


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("vocab"), "no 'config' object and 'vocab' list"),
    (lambda d: d["config"].pop("pattern"), "config lacks 'pattern'"),
    (lambda d: d["config"].update(default_vocab_size=10**9), "asks for"),
    (lambda d: d["vocab"][300].update(rank=7), "vocab entry 300 has rank 7"),
])
def test_tekken_defects_are_one_line(tmp_path, change, message):
    vocab = [{"rank": i, "token_bytes": base64.b64encode(bytes([i])).decode(), "token_str": None} for i in range(256)]
    vocab += [{"rank": 256 + i, "token_bytes": base64.b64encode(b"ab" + bytes([i])).decode(), "token_str": None}
              for i in range(100)]
    data = {"config": {"pattern": r"\S+", "default_vocab_size": 366, "default_num_special_tokens": 10}, "vocab": vocab}
    change(data)
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(VocabularyError, match=message) as info:
        load_path(path, kind="tekken")
    assert "\n" not in str(info.value)


# ============================================================================= bounds (issue 25 item 7)
def test_gzip_bomb_is_refused_without_inflating_it(tmp_path):
    bomb = tmp_path / "bomb.tiktoken.gz"
    inflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"YQ== 0\n" * (1 << 17)  # 896 KiB of valid-looking lines
    bomb.write_bytes(b"".join(inflater.compress(chunk) for _ in range(MAX_BYTES // len(chunk) + 2))
                     + inflater.flush())
    assert bomb.stat().st_size < MAX_BYTES // 100
    with pytest.raises(VocabularyError, match="inflates past 64 MiB"):
        load_path(bomb)


def test_truncated_and_damaged_gzip_are_one_line(tmp_path, cl100k_ranks):
    good = gzip.compress(write_ranks(tmp_path / "r", {t: r for t, r in cl100k_ranks.items() if r < 300}).read_bytes())
    (tmp_path / "cut.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(VocabularyError, match="truncated gzip"):
        load_path(tmp_path / "cut.gz", kind="tiktoken")
    (tmp_path / "bad.gz").write_bytes(good[:20] + b"\x00" * 40 + good[60:])
    with pytest.raises(VocabularyError, match="damaged gzip|truncated gzip"):
        load_path(tmp_path / "bad.gz", kind="tiktoken")


def test_huge_plain_file_is_refused(tmp_path):
    path = tmp_path / "huge.tiktoken"
    with path.open("wb") as f:
        f.truncate(MAX_BYTES + 1)
    with pytest.raises(VocabularyError, match="larger than 64 MiB"):
        load_path(path, kind="tiktoken")


@pytest.mark.parametrize("rank, message", [
    (10**12, f"ids must stay below {MAX_IDS}"),
    (900_000, "over half the ids unused"),
    (-5, "negative rank"),
])
def test_absurd_and_sparse_ranks_are_refused(tmp_path, rank, message):
    ranks = {bytes([i]): i for i in range(256)}
    path = write_ranks(tmp_path / "sparse.tiktoken", ranks, extra_lines=[f"{base64.b64encode(b'ab').decode()} {rank}"])
    with pytest.raises(VocabularyError, match=message):
        load_path(path)


def test_dense_ranks_with_a_few_gaps_still_load():
    ranks = {bytes([i]): i for i in range(256)}
    ranks[b"ab"] = 1200  # 944 unused ids: within the margin
    vocab = Vocabulary.from_ranks(ranks, name="gappy")
    assert len(vocab.tokens) == 1201 and len(vocab.excluded) == 944 and vocab.token_id(b"ab") == 1200


# ============================================================================= CLI --format / --pattern
def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_pattern_and_format(tmp_path, capsys, cl100k_ranks):
    ranks = {t: r for t, r in cl100k_ranks.items() if r < 5000}
    path = write_ranks(tmp_path / "vocab.dat", ranks)
    text = "It's 12345 o'clock,  friends!\n"
    expected = tiktoken_encoding(ranks).encode_ordinary(text)
    code, out, _ = run(capsys, "encode", "--vocab", str(path), "--pattern", "cl100k", text)
    assert code == 0 and [int(x) for x in out.split()] == expected
    code, out, _ = run(capsys, "encode", "--vocab", str(path), "--format", "tiktoken", "--pattern", CL100K, text)
    assert code == 0 and [int(x) for x in out.split()] == expected
    code, out, _ = run(capsys, "vocab", str(path), "--pattern", "cl100k")
    assert code == 0 and "pattern:   cl100k" in out
    # without a pattern the whole text is one piece: plain BPE over the bytes
    code, out, _ = run(capsys, "encode", "--vocab", str(path), text)
    assert code == 0 and [int(x) for x in out.split()] != expected


@pytest.mark.parametrize("argv, message", [
    (["--format", "nope"], "unknown format 'nope'"),
    (["--format", "gguf"], "not a GGUF file"),
    (["--format", "spm"], "not a SentencePiece model"),
    (["--pattern", "(unclosed"], "bad --pattern '(unclosed'"),
])
def test_cli_bad_format_or_pattern_is_one_line(tmp_path, capsys, cl100k_ranks, argv, message):
    path = write_ranks(tmp_path / "v.tiktoken", {t: r for t, r in cl100k_ranks.items() if r < 300})
    code, _, err = run(capsys, "encode", "--vocab", str(path), *argv, "x")
    assert code == 2 and err.count("\n") == 1 and message in err and err.startswith("bpebench: error: ")


def test_cli_format_is_for_files_only(capsys):
    code, _, err = run(capsys, "vocab", "o200k_base", "--format", "hf")
    assert code == 2 and "--format applies to files only" in err
