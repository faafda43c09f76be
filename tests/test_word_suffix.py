"""A byte-level BPE model with an end-of-word suffix (CLIP's shape: ``</w>`` on each word's last
character) runs on the compiled BPE stage with the suffix as the byte 0xFF after each piece
(``formats.word_suffix``). Its ids are HF ``tokenizers``' own, on a file HF trains here."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_path
from bpebench.algorithms.formats.word_suffix import WORD_END, word_end_vocabulary
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.corpora.hard_strings import HARD_STRINGS

tokenizers = pytest.importorskip("tokenizers")
#: CLIP's split: its matches are the words (the text between them is removed)
CLIP_SPLIT = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
WORDS = ["the", "model", "tokens", "naïve", "café", "привет", "東京", "x", "return", "def", "2024", "!!", "?", ",",
         "don't", "it's", "we'll", "ÿ", "a\u0301", "😀", "(", ")", "--"]
ALPHABET = WORDS + [" ", "  ", "\n", "\t", "<|endoftext|>", "Ÿ"]


def _train(path, *, every_suffixed: bool):
    """A CLIP-shaped ``tokenizer.json`` trained by HF on a seeded corpus; with ``every_suffixed`` every
    byte-level character also gets its suffixed token, as CLIP's vocabulary has."""
    from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, trainers

    rng = random.Random(3)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(400)]
    hf = tokenizers.Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    hf.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"\s+"), " "),
                                          normalizers.Lowercase()])
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CLIP_SPLIT), behavior="removed", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.BPEDecoder(suffix="</w>")
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    hf.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=600, end_of_word_suffix="</w>",
                                                       initial_alphabet=alphabet, show_progress=False,
                                                       special_tokens=["<|endoftext|>"]))
    data = json.loads(hf.to_str())
    vocab = data["model"]["vocab"]
    if every_suffixed:
        for c in sorted(alphabet):
            vocab.setdefault(c + "</w>", len(vocab) + len(data["added_tokens"]))
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def clip_like(tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "tokenizer.json"
    hf = _train(path, every_suffixed=True)
    return Tokenizer(str(path)), Tokenizer(str(path), pretokenizer="regex"), hf


def test_the_suffix_becomes_a_byte_after_each_word(tmp_path):
    path = tmp_path / "tokenizer.json"
    _train(path, every_suffixed=True)
    vocab = load_path(path)
    derived = word_end_vocabulary(vocab)
    assert derived is not None and derived.tokens is not vocab.tokens
    ids = {data: token_id for token_id, data in enumerate(vocab.tokens)}
    o, o_end, mark = ids[b"o"], ids[b"o</w>"], int(vocab.byte_token[WORD_END])
    assert derived.tokens[o_end] == b"o\xff" and derived.tokens[o] == b"o"
    # the character's merge with the end mark goes before every listed merge
    rank = derived.merges[(o, mark)][0]
    assert (rank, o_end) == derived.merges[(o, mark)]
    assert rank < min(r for pair, (r, _) in derived.merges.items() if mark not in pair)


def test_a_character_without_its_suffixed_token_keeps_the_python_merges(tmp_path):
    path = tmp_path / "tokenizer.json"
    hf = _train(path, every_suffixed=False)  # HF gives such a last character no token at all
    assert word_end_vocabulary(load_path(path)) is None
    ours = Tokenizer(str(path))
    assert ours._hf.piece_stage is None
    for text in ("the model", "ÿ x", "Ÿ"):
        assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


def test_hard_strings_give_hfs_ids(clip_like):
    ours, per_piece, hf = clip_like
    assert ours._hf.piece_stage is not None
    for text in HARD_STRINGS:
        assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, text
        assert ours.encode_ordinary(text) == per_piece.encode_ordinary(text), text


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=25).map("".join))
def test_drawn_text_gives_hfs_ids(clip_like, text):
    ours, per_piece, hf = clip_like
    assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids
    assert ours.encode_ordinary(text) == per_piece.encode_ordinary(text)
