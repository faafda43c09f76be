"""A component pipeline whose pre-tokenizer has no fused split (Split steps of every behaviour,
Punctuation, CharDelimiterSplit, WhitespaceSplit, Metaspace after a Split, ...) sends the
pieces of a text to the compiled BPE stage in one call (``HFPipeline.piece_stage``) rather than to
the encoder piece by piece; when every step is a class step its pieces are split in numpy
(``class_split``). Its ids are HF ``tokenizers``' own and the per-piece path's, on drawn
text with unknown characters next to each other across pieces (which must not fuse). A lone
``ByteLevel`` with a prefix space takes the fused stage, the space put before each stretch."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.pipeline.tokenizer import Tokenizer

PIPELINES = Path(__file__).parent / "golden" / "pipelines"
#: the committed fixtures whose pipelines take the piece stage, with whether they take the class split
FILES = {"hf_punct_chardelim.json": True, "hf_split_behaviors.json": True, "hf_strip_split_first.json": True}
ALPHABET = [" ", "  ", "\n", "\r\n", "\r", "\t", "a", "the", "Windows", "é", "e\u0301", "1", "2024", "-", ".", ",",
            "!?", "'", "京", "😀", "\u00a0", "x-y", "<unk>", "\u2581", "\u2581a"]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join)


@functools.lru_cache(maxsize=None)
def _three(file: str):
    """(ours through the piece stage, ours piece by piece, HF tokenizers) for one fixture."""
    tokenizers = pytest.importorskip("tokenizers")
    path = str(PIPELINES / file)
    return Tokenizer(path), Tokenizer(path, pretokenizer="regex"), tokenizers.Tokenizer.from_file(path)


@pytest.mark.parametrize("file", FILES)
def test_the_fixture_takes_the_piece_stage(file):
    staged, per_piece, _ = _three(file)
    assert staged._hf.piece_stage is not None and staged._hf.fused is None
    assert per_piece._hf.piece_stage is None
    staged.encode_ordinary("a b")
    assert bool(staged._hf._class_split) == FILES[file]


def test_a_lone_byte_level_step_with_a_prefix_space_is_fused():
    staged, per_piece, _ = _three("hf_bytelevel_prefix_nfd.json")
    assert staged._hf.fused is not None and staged._hf._prefix_space
    assert per_piece._hf.fused is None
    assert "a space put before each" in staged.components["path"]


@settings(max_examples=120, deadline=None)
@given(text=TEXTS)
@pytest.mark.parametrize("file", [*FILES, "hf_bytelevel_prefix_nfd.json"])
def test_drawn_text_gives_hfs_and_the_per_piece_ids(file, text):
    staged, per_piece, hf = _three(file)
    ids = staged.encode_ordinary(text)
    assert ids == per_piece.encode_ordinary(text)
    assert staged.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


def test_symbol_level_models_keep_their_own_merges():
    """A continuing-subword prefix or an end-of-word suffix: tokens are not their parts' bytes."""
    for file in ("hf_bert_prefix.json", "hf_whitespace_suffix.json"):
        assert Tokenizer(str(PIPELINES / file))._hf.piece_stage is None


def test_a_batch_of_pieces_is_encoded_in_one_call_with_each_pieces_own_ids():
    """A model that fuses runs of unknown characters gets its pieces as the texts of a batch, so that no
    run fuses across two; the stage encodes them in one call and finds where each text's ids end from
    their tokens' lengths. Each text's ids are those it has alone, empty texts and unknown characters
    at both ends of a text included."""
    staged, _, _ = _three("hf_strip_split_first.json")
    stage = staged._hf.piece_stage
    assert stage.unknown is not None and stage.unknown.fuse
    texts = [t.encode() for t in ("", "\u2581the", "京京", "", "京\u2581a京", "😀", "\u2581", "a\nb", "")]
    bounds = np.cumsum([0, *map(len, texts)])
    ids, offsets = stage.encode_joined_batch(b"".join(texts), bounds)
    alone = [stage.encode_utf8(t).tolist() if t else [] for t in texts]
    assert [ids[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == alone
    assert alone[2] == alone[5] and len(alone[2]) == 1  # a run of unknown characters is one unknown token
