"""Vocabulary loaders: HF tokenizer.json, SentencePiece .model, GGUF, against the real libraries.

The fixtures in ``tests/golden/`` were trained offline by ``make_golden.py``; files
with a defect are written to a temporary directory by each test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from bpebench.errors import VocabularyError
from bpebench.algorithms.formats import load_path, load_vocabulary
from bpebench.algorithms.formats.hf_json import bytes_to_unicode, load_hf_tokenizer_json, token_text_to_bytes
from bpebench.algorithms.formats.sentencepiece_model import (
    BYTE, NORMAL, UNUSED, USER_DEFINED, load_sentencepiece, read_sentencepiece_model,
)
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import default_encoder_name
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

GOLDEN_DIR = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
from golden_fixtures import (  # noqa: E402
    HF_FIXTURE, SPM_FIXTURE, gguf_from_hf_fixture, gguf_from_spm_fixture, hf_json, spm_proto, tiny_spm_pieces,
    write_gguf,
)
GOLDEN = json.loads((GOLDEN_DIR / "golden.json").read_text(encoding="utf-8"))
TEXTS = GOLDEN["texts"]

SAMPLE = [
    "hello world", "  two  spaces", "It's 1234567 o'clock!", "東京 😀 👍🏽 naïve", "\ttab\r\nnew\n",
    "x" + " " * 5 + "y", "", "a",
]


def write_json(tmp_path: Path, data: dict, name: str = "tokenizer.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# ============================================================================= HF tokenizer.json
def test_bytes_to_unicode_is_a_bijection_onto_printable_characters():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    # the hand-checkable corners of GPT-2's table
    assert (table[ord("A")], table[0x20], table[0x0A], table[0x00], table[0xAD]) == ("A", "Ġ", "Ċ", "Ā", "Ń")
    assert token_text_to_bytes("ĠhelloĊ") == b" hello\n"
    assert token_text_to_bytes("hello\u2581") is None


def test_hf_fixture_loads_as_a_merges_vocabulary():
    vocab = load_hf_tokenizer_json(HF_FIXTURE)
    data = hf_json()
    assert vocab.rule == "merges" and vocab.pattern == "llama3" and vocab.normalizer == "none"
    assert len(vocab.tokens) == len(data["model"]["vocab"])
    assert vocab.special_tokens == {t["content"]: t["id"] for t in data["added_tokens"]}
    assert set(vocab.special_tokens.values()) <= vocab.excluded
    assert vocab.whole_piece_lookup is False
    assert len(vocab.merges) == len(data["model"]["merges"])
    # merge k has priority k and forms the concatenation of its parts
    for k in (0, 1, len(data["model"]["merges"]) - 1):
        left, right = data["model"]["merges"][k]
        pair = (vocab.token_id(token_text_to_bytes(left)), vocab.token_id(token_text_to_bytes(right)))
        priority, merged = vocab.merges[pair]
        assert priority == k and vocab.tokens[merged] == token_text_to_bytes(left + right)
    assert vocab.problems() == []


def test_hf_merges_as_strings_or_lists_load_the_same(tmp_path):
    data = hf_json()
    data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
    as_strings = load_hf_tokenizer_json(write_json(tmp_path, data))
    assert as_strings.fingerprint == load_hf_tokenizer_json(HF_FIXTURE).fingerprint


def test_hf_gpt2_style_byte_level_regex_and_ignore_merges(tmp_path):
    """``ByteLevel(use_regex=true)`` is GPT-2's pattern; ``ignore_merges`` is the whole-piece lookup;
    both checked against HF tokenizers itself."""
    tokenizers = pytest.importorskip("tokenizers")
    data = hf_json()
    data["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    data["model"]["ignore_merges"] = True
    path = write_json(tmp_path, data)
    vocab = load_hf_tokenizer_json(path)
    assert vocab.pattern == "gpt2" and vocab.whole_piece_lookup is True
    hf = tokenizers.Tokenizer.from_file(str(path))
    hf.encode_special_tokens = True
    tok = Tokenizer(vocab, algorithm="naive")
    for text in TEXTS:
        assert tok.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids, text


def test_hf_nfc_normalizer_is_applied(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    data = hf_json()
    data["normalizer"] = {"type": "NFC"}
    path = write_json(tmp_path, data)
    vocab = load_hf_tokenizer_json(path)
    assert vocab.normalizer == "nfc"
    text = "e\u0301te\u0301 cafe\u0301"
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert Tokenizer(vocab, algorithm="naive").encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids


def _break(data: dict, how: str) -> dict:
    model = data["model"]
    if how == "wordpiece":
        model["type"] = "WordPiece"
    elif how == "unknown merge":
        model["merges"].append(["Ġzzqq", "xx"])
    elif how == "duplicate id":
        first = next(iter(model["vocab"]))
        model["vocab"]["Ġnot_a_real_token"] = model["vocab"][first]
    elif how == "unknown component":
        data["pre_tokenizer"] = {"type": "UnicodeScripts"}
    elif how == "dropout":
        model["dropout"] = 0.1
    return data


@pytest.mark.parametrize("how, message", [
    ("wordpiece", "model type 'WordPiece' is not BPE"),
    ("unknown merge", "references unknown token 'Ġzzqq'"),
    ("duplicate id", "duplicate id"),
    ("unknown component", "pre-tokenizer 'UnicodeScripts' is not supported"),
    ("dropout", "dropout"),
])
def test_hf_defects_are_one_line_errors(tmp_path, how, message):
    path = write_json(tmp_path, _break(hf_json(), how))
    with pytest.raises(VocabularyError, match=message) as info:
        load_hf_tokenizer_json(path)
    assert "\n" not in str(info.value)


def test_hf_truncated_and_non_json_files(tmp_path):
    raw = HF_FIXTURE.read_bytes()
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(VocabularyError, match="truncated JSON"):
        load_hf_tokenizer_json(truncated)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{ this is not json", encoding="utf-8")
    with pytest.raises(VocabularyError, match="not valid JSON|truncated JSON"):
        load_path(garbage)
    not_tokenizer = write_json(tmp_path, {"hello": 1}, "other.json")
    with pytest.raises(VocabularyError, match="no 'model' object"):
        load_path(not_tokenizer)


# ============================================================================= SentencePiece
def test_protobuf_reader_agrees_with_sentencepiece_on_mistral():
    spm = pytest.importorskip("sentencepiece")
    vocab = load_vocabulary("mistral_v1")
    model = read_sentencepiece_model(vocab.source)
    sp = spm.SentencePieceProcessor(model_file=vocab.source)
    assert len(model.pieces) == sp.get_piece_size()
    for i in range(0, len(model.pieces), 97):
        assert model.pieces[i].text == sp.id_to_piece(i)
        assert model.pieces[i].score == pytest.approx(sp.get_score(i))
        assert (model.pieces[i].kind == BYTE) == sp.is_byte(i)
    assert (model.model_type, model.byte_fallback, model.normalizer_name) == (2, True, "identity")
    assert model.add_dummy_prefix and not model.remove_extra_whitespaces


def test_mistral_vocabulary_shape():
    vocab = load_vocabulary("mistral_v1")
    # control pieces are never parsed out of text (sentencepiece never does): no special tokens
    assert vocab.special_tokens == {} and vocab.pipeline["decoder"]["control_tokens"] == ["</s>", "<s>"]
    assert vocab.rule == "ranks" and vocab.pattern is None and vocab.normalizer == "pipeline"
    assert vocab.pipeline["normalizer"]["type"] == "SentencePiece"
    assert vocab.pipeline["model"] == {"type": "BPE", "token_text": "utf-8", "fuse_unk": True, "unk_token": "<unk>",
                                       "byte_fallback": True}
    # byte pieces are only emitted for unknown characters: never BPE's; a helper stands for the byte
    assert vocab.token_id(b"A") != 3 + 0x41 and 3 + 0x41 in vocab.excluded and 3 + 0xE6 in vocab.excluded
    assert vocab.token_id(b"\xe6") in vocab.hidden and vocab.byte_fallback[0xE6] == 3 + 0xE6
    # every multi-byte character piece is the merge of two tokens; partial characters are hidden
    assert all(i >= 32000 for i in vocab.hidden) and len(vocab.tokens) == 32000 + len(vocab.hidden)
    left, right = vocab.splits
    kyo = vocab.token_id("京".encode())
    assert vocab.tokens[left[kyo]] == "京".encode()[:2] and left[kyo] in vocab.hidden
    assert vocab.problems() == []


@pytest.mark.parametrize("algorithm", ["naive", default_encoder_name()])
def test_sentencepiece_whitespace_runs_and_ties_match_sentencepiece(algorithm):
    """Mistral's ▁-run pieces share one score: BPE must take the leftmost, as SentencePiece does."""
    spm = pytest.importorskip("sentencepiece")
    vocab = load_vocabulary("mistral_v1")
    sp = spm.SentencePieceProcessor(model_file=vocab.source)
    tok = Tokenizer(vocab, algorithm=algorithm)
    texts = [" " * k for k in range(1, 40)] + [f"a{' ' * k}b{' ' * (k // 2)}\n{' ' * (k % 7)}c" for k in range(30)]
    for text in texts:
        assert tok.encode_ordinary(text) == sp.encode(text), repr(text)


def test_unknown_characters_become_byte_fallback_ids(tmp_path):
    """A character that is not a piece: SentencePiece emits its bytes' <0xXX> pieces."""
    spm = pytest.importorskip("sentencepiece")
    path = tmp_path / "tiny.model"
    path.write_bytes(spm_proto(tiny_spm_pieces()))
    vocab = load_sentencepiece(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    tok = Tokenizer(vocab, algorithm="naive")
    for text in ["ab ab", "東京😀", "東 京 𝔘 😃 é", "ba\tb  a", "京東京東"]:
        expected = sp.encode(text)
        assert tok.encode_ordinary(text) == expected, text
        assert tok.decode(expected) == sp.decode(expected)


@pytest.mark.parametrize("change, message", [
    (dict(model_type=1), "unigram model; only BPE"),
    (dict(model_type=3), "word model"),
    (dict(suffix_whitespace=True), "treat_whitespace_as_suffix is not supported"),
])
def test_sentencepiece_unsupported_models_are_refused(tmp_path, change, message):
    path = tmp_path / "m.model"
    path.write_bytes(spm_proto(tiny_spm_pieces(), **change))
    with pytest.raises(VocabularyError, match=message):
        load_path(path)


def test_sentencepiece_defects_are_one_line_errors(tmp_path):
    raw = SPM_FIXTURE.read_bytes()
    truncated = tmp_path / "truncated.model"
    truncated.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(VocabularyError, match="not a SentencePiece model"):
        load_path(truncated)
    duplicate = tmp_path / "duplicate.model"
    duplicate.write_bytes(spm_proto(tiny_spm_pieces() + [("ab", -5.0, NORMAL)]))
    with pytest.raises(VocabularyError, match="duplicate token 'ab'"):
        load_path(duplicate)
    unused = tmp_path / "unused.model"
    unused.write_bytes(spm_proto(tiny_spm_pieces() + [("<mask>", 0.0, UNUSED)]))
    with pytest.raises(VocabularyError, match="unused piece '<mask>'"):
        load_path(unused)


def test_sentencepiece_user_defined_pieces_are_carved_as_sentencepiece_does(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    path = tmp_path / "user.model"
    path.write_bytes(spm_proto(tiny_spm_pieces() + [("<mask>", 0.0, USER_DEFINED)]))
    sp = spm.SentencePieceProcessor(model_file=str(path))
    tok = Tokenizer(load_path(path), algorithm="naive")
    for text in ["ab<mask>ab", "<mask>", " <mask> ab", "a<mask><mask>b"]:
        assert tok.encode_ordinary(text) == sp.encode(text), text


def test_no_dummy_prefix_normalizer(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    path = tmp_path / "noprefix.model"
    path.write_bytes(spm_proto(tiny_spm_pieces(), add_dummy_prefix=False))
    vocab = load_sentencepiece(path)
    assert vocab.pipeline["normalizer"]["add_dummy_prefix"] is False
    sp = spm.SentencePieceProcessor(model_file=str(path))
    tok = Tokenizer(vocab, algorithm="naive")
    for text in ["ab ab", " ab", "a b "]:
        assert tok.encode_ordinary(text) == sp.encode(text), text


# ============================================================================= GGUF
def test_gguf_gpt2_equals_its_tokenizer_json(tmp_path):
    pytest.importorskip("gguf")
    path = gguf_from_hf_fixture(tmp_path / "bpe.gguf")
    vocab = load_path(path)
    reference = load_hf_tokenizer_json(HF_FIXTURE)
    assert vocab.tokens == reference.tokens and vocab.merges == reference.merges
    assert vocab.special_tokens == reference.special_tokens
    assert vocab.pattern is None and vocab.llama_cpp["pre"] == "llama3"  # llama.cpp's Llama-3 split
    assert vocab.whole_piece_lookup is True  # llama.cpp's ignore_merges for llama-bpe
    expected = GOLDEN["vocabularies"]["tests/golden/bytelevel_bpe.json"]["ordinary"]
    tok = Tokenizer(vocab, algorithm="naive")
    assert [tok.encode_ordinary(t) for t in TEXTS] == expected


def test_gguf_llama_equals_its_sentencepiece_model(tmp_path):
    pytest.importorskip("gguf")
    vocab = load_path(gguf_from_spm_fixture(tmp_path / "spm.gguf"))
    reference = load_sentencepiece(SPM_FIXTURE)
    assert vocab.tokens == reference.tokens and np.array_equal(vocab.priority, reference.priority)
    assert vocab.normalizer == reference.normalizer and vocab.hidden == reference.hidden
    expected = GOLDEN["vocabularies"]["tests/golden/spm_bpe.model"]["ordinary"]
    tok = Tokenizer(vocab, algorithm="naive")
    assert [tok.encode_ordinary(t) for t in TEXTS] == expected


def test_gguf_defects_are_one_line_errors(tmp_path):
    pytest.importorskip("gguf")
    path = gguf_from_hf_fixture(tmp_path / "bpe.gguf")
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(VocabularyError, match="damaged GGUF file"):
        load_path(truncated)
    unknown_pre = gguf_from_hf_fixture(tmp_path / "pre.gguf", pre="no-such-pre")
    with pytest.raises(VocabularyError, match="pre-tokenizer 'no-such-pre' is not one llama.cpp knows"):
        load_path(unknown_pre)
    other = write_gguf(tmp_path / "t5.gguf", model="t5", tokens=["a", "b"], types=[1, 1], scores=[0.0, 0.0])
    with pytest.raises(VocabularyError, match="model 't5' \\(Unigram\\) is not BPE"):
        load_path(other)


# ============================================================================= round trips on every loader
def _all_loader_vocabularies(tmp_path: Path):
    pytest.importorskip("gguf")
    return {
        "tiktoken": load_vocabulary("cl100k_base"),
        "hf": load_hf_tokenizer_json(HF_FIXTURE),
        "spm": load_sentencepiece(SPM_FIXTURE),
        "gguf-gpt2": load_path(gguf_from_hf_fixture(tmp_path / "a.gguf")),
        "gguf-llama": load_path(gguf_from_spm_fixture(tmp_path / "b.gguf")),
    }


def test_reference_and_default_encoder_agree_on_every_loader(tmp_path):
    default = default_encoder_name()
    for label, vocab in _all_loader_vocabularies(tmp_path).items():
        fast, slow = Tokenizer(vocab, algorithm=default), Tokenizer(vocab, algorithm="naive")
        for text in SAMPLE:
            assert fast.encode_ordinary(text) == slow.encode_ordinary(text), (label, text)
        # raw BPE on whole texts, no pre-tokenizer
        data = "The naïve 東京 coder 👩‍💻 said: it's   fine".encode()
        assert fast.encoder.encode(data) == bpe_reference(vocab, data), label


@pytest.mark.parametrize("settled", [True, False])
def test_a_file_written_again_at_the_same_path_is_loaded_again(tmp_path, monkeypatch, settled):
    """``load_vocabulary`` remembers a file's vocabulary per process, keyed by its path, size, times and
    inode: the same path written again (same size, even with its old modification time put back)
    gives the new vocabulary; a file changed within the last two seconds is not remembered at all."""
    import base64
    import os

    import bpebench.algorithms.formats as formats

    monkeypatch.setenv("BPEBENCH_VOCAB_CACHE", "off")
    if settled:  # every file counts as changed long ago (a file's change time cannot be put back)
        monkeypatch.setattr(formats, "RECENT_NS", 0)
    path = tmp_path / "ranks.tiktoken"

    def write(tokens: list[bytes]) -> None:
        path.write_text("".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(tokens)))
        os.utime(path, ns=(10**18, 10**18))  # the same modification time for both writes

    base = [bytes([b]) for b in range(256)]
    write(base + [b"ab"])
    first = load_vocabulary(str(path), pattern="gpt2")
    assert first.tokens[256] == b"ab"
    assert (load_vocabulary(str(path), pattern="gpt2") is first) == settled
    write(base + [b"cd"])  # same size, same (put back) modification time
    again = load_vocabulary(str(path), pattern="gpt2")
    assert again.tokens[256] == b"cd"
