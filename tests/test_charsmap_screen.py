"""A precompiled charsmap's screen (``CharsMap.screen``): the normalizers look keys up only where one
may start, and copy the text between whole. Checked against the character loop that keeps offsets
(SentencePiece's rule), against HF ``tokenizers``' own normalizer (HF's grapheme rule) and against
sentencepiece's ids, on text drawn from the characters the screen treats apart."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats.sentencepiece_model import read_sentencepiece_model
from bpebench.algorithms.pipeline.charsmap import CharsMap
from bpebench.algorithms.pipeline.normalizers import SentencePieceNormalizer, build_normalizer
from bpebench.algorithms.pipeline.text_pieces import Piece
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

PIPELINES = Path(__file__).parent / "golden" / "pipelines"
NMT_NFKC_MODEL = PIPELINES / "spm_nmt_nfkc_user.model"
#: keys of two characters and more (a letter and a combining mark, Hangul jamo, CR LF, kana and a
#: voicing mark), keys of one (full-width letters, ligatures, circled digits, spaces, controls),
#: lone surrogates, and plain text
ALPHABET = ["a", "e", "o", "A", " ", "  ", "x y", "\u0301", "\u0308", "\u030a", "\u0300", "\u0338", "=", "<",
            "о", "α", "\u1100", "\u1161", "\u11a8", "가", "한", "\r", "\n", "\r\n", "\t", "\x01", "\x7f", "ﬁ",
            "①", "Ａ", "ｅ", "，", "ア", "\u3099", "ｶ", "ﾞ", "\u00a8", "\u00a0", "\u2003", "\u3000", "\u212b",
            "\u00bd", "𝐀", "😀", "\u200d", "\U0001F1E6", "\u0600", "\ufffd", "\ud800", "hello", "<mask>"]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join)


@functools.lru_cache(maxsize=None)
def _nmt_nfkc() -> bytes:
    return read_sentencepiece_model(NMT_NFKC_MODEL).precompiled_charsmap


@functools.lru_cache(maxsize=None)
def _precompiled_specs() -> tuple[dict, ...]:
    """HF ``Precompiled`` normalizers: nmt_nfkc's charsmap, and the small one of a trained fixture."""
    fixture = json.loads((PIPELINES / "hf_precompiled.json").read_text())["normalizer"]
    return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(_nmt_nfkc()).decode()}, fixture


@functools.lru_cache(maxsize=None)
def _hf_normalizer(index: int):
    import tokenizers

    base = json.loads(tokenizers.Tokenizer(tokenizers.models.BPE()).to_str())
    base["normalizer"] = _precompiled_specs()[index]
    return tokenizers.Tokenizer.from_str(json.dumps(base)).normalizer


@functools.lru_cache(maxsize=None)
def _spm_normalizer(collapse: bool, dummy_prefix: bool, escape: bool, user: bool) -> SentencePieceNormalizer:
    return SentencePieceNormalizer({"precompiled_charsmap": base64.b64encode(_nmt_nfkc()).decode(),
                                    "add_dummy_prefix": dummy_prefix, "remove_extra_whitespaces": collapse,
                                    "escape_whitespaces": escape,
                                    "user_defined": ["\n", "<mask>", "hello"] if user else []}, "spm")


def test_the_screen_of_nmt_nfkc_by_hand():
    charsmap = CharsMap(_nmt_nfkc())
    screen = charsmap.screen()
    # keys of one character that begin no other: looked up by str.translate
    assert "\n\x01ﬁ①".translate(screen.table) == " fi1"
    assert all(charsmap.longest(chr(c).encode(), 0) == (len(chr(c).encode()), norm) for c, norm in screen.table.items())
    # a letter that begins only longer keys (with a combining mark) is no stop; the mark is, alone
    assert screen.stops.search("plain ASCII words, and digits 123") is None
    assert "e" in screen.firsts and "\u0301" in screen.seconds and "\u0301" in screen.lone
    assert screen.next_stop(screen.stops, "abe\u0301", 0) == 3
    assert screen.next_stop(screen.stops, "ab1\u0301", 0) == 4  # after a digit the mark starts no key
    assert screen.next_stop(screen.stops, "\u0301x", 0) == 2  # nor at the start
    # the keys' pattern also finds the one-character keys (HF's clusters may start with them)
    assert screen.keys.search("ab\nc").start() == 2


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, collapse=st.booleans(), dummy_prefix=st.booleans(), escape=st.booleans(), user=st.booleans())
def test_sentencepiece_rule_screened_equals_the_character_loop(text, collapse, dummy_prefix, escape, user):
    """Without offsets to keep, the normalizer copies the text between stops; with offsets it walks
    every character (the reference of ``normalizer.cc``'s rule)."""
    normalizer = _spm_normalizer(collapse, dummy_prefix, escape, user)
    screened = normalizer.normalize(Piece(text, 0)).text
    assert screened == normalizer.normalize(Piece(text, 0, list(range(len(text))))).text


@settings(max_examples=300, deadline=None)
@given(text=TEXTS.filter(lambda t: "\ud800" not in t), index=st.sampled_from([0, 1]))
def test_hf_grapheme_rule_screened_equals_hf(text, index):
    pytest.importorskip("tokenizers")
    ours = build_normalizer(_precompiled_specs()[index])
    assert ours.normalize(Piece(text, 0)).text == _hf_normalizer(index).normalize_str(text)


def test_a_charsmap_without_a_screen_keeps_the_loop():
    """A charsmap whose keys end inside a character has no screen; the loop normalizes everything."""
    ours = build_normalizer(_precompiled_specs()[0])
    ours.charsmap._screen = None
    text = "ﬁ e\u0301 \r\n Ａ 한"
    assert ours.normalize(Piece(text, 0)).text == ours.normalize(Piece(text, 0, list(range(len(text))))).text


@settings(max_examples=150, deadline=None)
@given(text=TEXTS.filter(lambda t: "\ud800" not in t))
def test_nmt_nfkc_model_gives_sentencepieces_ids(text):
    sentencepiece = pytest.importorskip("sentencepiece")
    ours = _tokenizer()
    assert ours.encode_ordinary(text) == _processor(sentencepiece).encode(text)


@functools.lru_cache(maxsize=None)
def _tokenizer() -> Tokenizer:
    return Tokenizer(str(NMT_NFKC_MODEL))


@functools.lru_cache(maxsize=None)
def _processor(sentencepiece):
    return sentencepiece.SentencePieceProcessor(model_file=str(NMT_NFKC_MODEL))
