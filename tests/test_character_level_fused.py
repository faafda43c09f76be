"""Character-level BPE (SentencePiece ``.model`` files, the HF files made from them: no
pre-tokenizer, or ``Metaspace``) encodes each stretch between added tokens through the fused stage:
cut before each run of ``▁`` (before each ``▁`` for ``Metaspace`` with ``split``), unknown characters
written as the model writes them. Its ids are the component pipeline's (the reference, itself
checked against the libraries by the golden tests) and the libraries' own (sentencepiece, HF
``tokenizers``) on drawn text."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.algorithms.pipeline.fast_pipeline import split_views, unsupported_reason
from bpebench.algorithms.pipeline.marker_split import MarkerSplitter, cuts_before_marker_runs
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.algorithms.pipeline.unknown_chars import UnknownCharacters
from bpebench.corpora.hard_strings import HARD_STRINGS

GOLDEN = Path(__file__).parent / "golden"
PIPELINES = GOLDEN / "pipelines"
#: every character-level file the tests have, and the split its fused stage takes
FILES = {
    "mistral_v1": "run",
    str(GOLDEN / "spm_bpe.model"): "run",
    **{str(PIPELINES / f"spm_{name}.model"): "run"
       for name in ("nmt_nfkc_user", "no_fallback", "no_prefix_no_collapse", "rules_fallback")},
    # Prepend + Replace, no pre-tokenizer; trained by HF with tokens such as "s▁": stretches whole
    str(PIPELINES / "hf_llama2_bytefallback.json"): "whole",
    str(PIPELINES / "hf_metaspace_first.json"): "whole",  # Metaspace without split (tokens like "x▁")
    str(PIPELINES / "hf_metaspace_unk.json"): "every",  # Metaspace with split, NFC, an unknown token
    str(PIPELINES / "hf_precompiled.json"): "every",  # Metaspace with split, a charsmap normalizer
}
#: spaces and markers in runs, characters each vocabulary lacks (byte fallback or unknown), newlines
ALPHABET = [" ", "  ", "▁", "▁▁", "\n", "\t", "a", "b", "the", "é", "京", "亰", "😀", "ß", "1", "<s>", "</s>",
            "\u3000", "Ａ"]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=24).map("".join)


def _pair(name: str) -> tuple[Tokenizer, Tokenizer]:
    cache = _pair.__dict__.setdefault("cache", {})
    if name not in cache:
        cache[name] = Tokenizer(name), Tokenizer(name, pretokenizer="regex")
    return cache[name]


@functools.lru_cache(maxsize=None)
def _library(kind: str, path: str):
    """The file's own library, made once: sentencepiece's processor or an HF ``tokenizers.Tokenizer``."""
    if kind == "sentencepiece":
        import sentencepiece

        return sentencepiece.SentencePieceProcessor(model_file=path)
    import tokenizers

    return tokenizers.Tokenizer.from_file(path)


@pytest.mark.parametrize("name", FILES, ids=lambda n: Path(n).name)
def test_takes_the_fused_stage_with_the_reference_ids(name):
    fused, reference = _pair(name)
    assert fused.fused and not reference.fused
    split = FILES[name]
    assert {"every": "cut before each '▁'", "run": "cut before each run of '▁'",
            "whole": "added tokens whole"}[split] in fused.components["path"]
    # the compiled call cuts before the markers itself (no split in Python between texts)
    packed = fused._hf.fused.plan.split
    assert bool(packed.size) == (split != "whole")
    if packed.size:
        views = split_views(packed)
        assert bytes(views[12]) == "▁".encode() and views[6] == 0  # the marker, no transducer
        assert bool(views[13]) == (split == "every")
    texts = list(HARD_STRINGS) + ["", " ", "   lead and trail   ", "▁▁▁x▁", "a\n\n  b\t\tc", "x" * 5000 + " y",
                                  "    " * 40 + "def f():\n        return 1\n", "😀🦜 京亰 " * 30, "a\ud800b"]
    for text in texts:
        expected = reference.encode_ordinary(text)
        assert fused.encode_ordinary(text) == expected, repr(text[:60])
        assert fused.encode_to_numpy(text, disallowed_special=()).tolist() == \
            reference.encode(text, disallowed_special=()), repr(text[:60])
        assert fused.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all")
    assert fused.encode_ordinary_batch(texts, num_threads=2) == [reference.encode_ordinary(t) for t in texts]
    ids, offsets = fused.encode_ordinary_batch_to_numpy(texts, num_threads=2)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == \
        [reference.encode_ordinary(t) for t in texts]


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=4))
@pytest.mark.parametrize("name", FILES, ids=lambda n: Path(n).name)
def test_drawn_text_gives_the_reference_ids(name, texts):
    fused, reference = _pair(name)
    expected = [reference.encode_ordinary(t) for t in texts]
    assert [fused.encode_ordinary(t) for t in texts] == expected
    assert fused.encode_ordinary_batch(texts) == expected
    assert fused.encode(texts[0], allowed_special="all") == reference.encode(texts[0], allowed_special="all")


@settings(max_examples=80, deadline=None)
@given(text=TEXTS)
def test_drawn_text_gives_sentencepieces_ids(text):
    """mistral_v1 against sentencepiece itself (byte fallback, runs of spaces, ``▁`` in the text)."""
    pytest.importorskip("sentencepiece")
    fused = _pair("mistral_v1")[0]
    assert fused.encode_ordinary(text) == _library("sentencepiece", fused.vocabulary.source).encode(text)


@settings(max_examples=80, deadline=None)
@given(text=TEXTS)
@pytest.mark.parametrize("file", ["hf_llama2_bytefallback.json", "hf_metaspace_first.json", "hf_metaspace_unk.json"])
def test_drawn_text_gives_hf_tokenizers_ids(file, text):
    pytest.importorskip("tokenizers")
    path = str(PIPELINES / file)
    theirs = _library("tokenizers", path)
    assert _pair(path)[0].encode(text, allowed_special="all") == theirs.encode(text, add_special_tokens=False).ids


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["▁", "a", "é", " ", "😀", "▁▁"]), max_size=20).map("".join),
       every=st.booleans())
def test_marker_pieces_are_cut_before_each_run_or_each_marker(text, every):
    cut = r"(?<!^)(?=▁)" if every else r"(?<=[^▁])(?=▁)"
    expected = [p for p in re.split(cut, text) if p]
    splitter = MarkerSplitter("▁", every=every)
    assert splitter.split(text) == expected
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    assert splitter.piece_ends(data).tolist() == np.cumsum([len(p.encode()) for p in expected]).tolist()


def test_a_token_with_a_marker_inside_keeps_the_stretch_whole():
    runs = Vocabulary.from_ranks([bytes([i]) for i in range(256)] + ["▁".encode(), "a▁".encode()], name="inside")
    assert not cuts_before_marker_runs(runs)
    assert cuts_before_marker_runs(load_vocabulary("mistral_v1"))


def test_unknown_characters_rewritten_by_hand():
    """Helpers 10 (a lead byte) and 11 (a continuation byte) after real ids 0..9."""
    fallback = UnknownCharacters(10, [[7, 8], [9]], fuse=False)
    ids = np.array([1, 10, 11, 2], dtype=np.int32)
    assert fallback.rewrite(ids).tolist() == [1, 7, 8, 9, 2]
    assert fallback.rewrite(np.array([1, 2], dtype=np.int32)) is None
    # one unknown token (0) a character, a run of them fused, but not across two texts of a batch
    unknown = UnknownCharacters(10, [[0], []], fuse=True)
    out, bounds = unknown.rewrite(np.array([10, 11, 10, 3, 10, 10], dtype=np.int32),
                                  np.array([0, 4, 5, 6], dtype=np.int64))
    assert out.tolist() == [0, 3, 0, 0] and bounds.tolist() == [0, 2, 3, 4]
    assert UnknownCharacters(10, [[0], []], fuse=False).rewrite(np.array([10, 11, 10], dtype=np.int32)).tolist() == [0, 0]


def test_a_model_that_drops_unknown_characters_is_not_fused():
    vocab = load_vocabulary(str(PIPELINES / "spm_no_fallback.model"))
    assert unsupported_reason(vocab) is None
    spec = dict(vocab.pipeline, model={k: v for k, v in vocab.pipeline["model"].items() if k != "unk_token"})
    dropping = dataclasses.replace(vocab, pipeline=spec)
    assert "drops unknown characters" in unsupported_reason(dropping)


@settings(max_examples=400, deadline=None)
@given(text=st.text(st.sampled_from([" ", "a", "▁", "\ud800", "é", "\n"]), max_size=10),
       collapse=st.booleans(), dummy_prefix=st.booleans(), escape=st.booleans())
def test_normalizers_by_str_methods_equal_their_offset_keeping_loops(text, collapse, dummy_prefix, escape):
    """Without offsets to keep, SentencePiece's normalizer (no charsmap) and a ``String`` Replace run
    on ``str`` methods; with offsets, on the character loop and the matched spans."""
    from bpebench.algorithms.pipeline.normalizers import Replace, SentencePieceNormalizer
    from bpebench.algorithms.pipeline.text_pieces import Piece

    for normalizer in (SentencePieceNormalizer({"add_dummy_prefix": dummy_prefix, "remove_extra_whitespaces": collapse,
                                                "escape_whitespaces": escape, "precompiled_charsmap": ""}, "spm"),
                       Replace({"pattern": {"String": " " if escape else "a▁"}, "content": "▁▁"}, "replace")):
        plain = normalizer.normalize(Piece(text, 0)).text
        assert plain == normalizer.normalize(Piece(text, 0, list(range(len(text))))).text
