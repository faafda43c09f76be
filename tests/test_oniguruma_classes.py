"""Character classes that HF's Oniguruma reads differently from the ``regex`` module, rewritten by
``text_pieces.onig_regex``: ``\\w`` and ``\\p{Word}`` (alone they take ``²³¹¼½¾`` and not the
joiners; in a class neither), ``\\h`` and ``\\p{XDigit}`` (ASCII hex digits), ``\\x{HHHH}``, and a
class nested in a class (their union; BLOOM's split regex has one, and did not compile); and the
default syntax's anchors and ``(?m)``. Checked on every code point Python's Unicode data assigns against HF's own ``Split``, and
a BLOOM-shaped file trained by HF gives HF's ids; what cannot be rewritten is refused in one line."""

from __future__ import annotations

import json
import random
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.pipeline.text_pieces import onig_regex
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.corpora.hard_strings import HARD_STRINGS
from bpebench.errors import BpebenchError

tokenizers = pytest.importorskip("tokenizers")
#: BLOOM's split regex: a negated class holding a class
BLOOM_SPLIT = " ?[^(\\s|[.,!?…。，、।۔،])]+"


def _hf_split(pattern: str, behavior: str = "Removed"):
    return tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": False}}))


@pytest.fixture(scope="module")
def every_character() -> str:
    return "".join(chr(c) for c in range(0x110000)
                   if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn")


@pytest.mark.parametrize("pattern", [r"\w", r"\W", r"[^\w\s]", r"[\w\d]", "[^(\\s|[.,!?…。，、।۔،])]", "[a[b-d]x[-]]",
                                     r"\h", r"\H", r"[\h_]", r"\p{Word}", r"\P{word}", r"[\p{Word}]", r"\p{XDigit}",
                                     r"[^\p{XDigit}]", r"[\x{4e00}-\x{4e10}\x{3042}]"])
def test_classes_are_read_as_hf_reads_them(pattern, every_character):
    """HF's ``Split`` (``Removed``) removes exactly the characters the rewritten class matches."""
    import regex

    kept = set("".join(piece for piece, _ in _hf_split(pattern).pre_tokenizer.pre_tokenize_str(every_character)))
    assert set(regex.findall(onig_regex(pattern), every_character)) == set(every_character) - kept
    if pattern == r"\w":  # regex's own \w differs on eight assigned characters
        assert len(set(regex.findall(pattern, every_character)) ^ (set(every_character) - kept)) == 8


@pytest.mark.parametrize("pattern", ["[a-z&&[^aeiou]]", "[x[^y]]", "[[:digit:]x]", r"[\Hx]", r"\g<1>(a)"])
def test_classes_that_cannot_be_rewritten_are_refused_in_one_line(pattern, tmp_path):
    with pytest.raises(ValueError):
        onig_regex(pattern)
    spec = json.loads(_hf_split(pattern).to_str())
    spec["model"] = {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(BpebenchError, match="not supported"):
        Tokenizer(str(path))


WORDS = ["the", "model", "(x)", "a|b", "你好。", "hello,", "world!", "…", "،", "۔", "।", "2024", "naïve", "é", "😀"]


@pytest.fixture(scope="module")
def bloom_shaped(tmp_path_factory):
    from tokenizers import Regex, models, pre_tokenizers, trainers

    rng = random.Random(1)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(400)]
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(BLOOM_SPLIT), behavior="isolated"),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=500, show_progress=False, special_tokens=["<s>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path_factory.mktemp("bloom") / "tokenizer.json"
    hf.save(str(path))
    return Tokenizer(str(path)), hf


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(WORDS + [" ", "  ", "\n", "(", ")", "|", ",", ".", "?", "ß", "<s>"]),
                     max_size=30).map("".join))
def test_a_bloom_shaped_file_gives_hfs_ids(bloom_shaped, text):
    ours, hf = bloom_shaped
    assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


def test_a_bloom_shaped_file_on_hard_strings_and_every_character(bloom_shaped, every_character):
    ours, hf = bloom_shaped
    assert ours._hf is None  # the plain fused path: its split compiled
    for text in [*HARD_STRINGS, every_character]:
        assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


@settings(max_examples=150, deadline=None)
@given(pattern=st.sampled_from(["$", "^a", "a$", r"\s+$", r"\Z", r"a\Z", r"\z", "(?m).", "(?m:a.b)", r"(?i)A$",
                                r"\N+", r"\e", r"\cA", r"[\e\cA]+"]),
       text=st.lists(st.sampled_from(["a", "b", "A", " ", "\n", "\r\n", "\r", "\u2028", "\u0085", "é", "\x1b",
                                      "\x01"]), max_size=14).map("".join))
def test_anchors_flags_and_escapes_are_read_as_hf_reads_them(pattern, text):
    """Oniguruma's default (Ruby) syntax: ``^``/``$`` at every line, ``\\Z`` before a last line feed,
    ``\\z`` at the end, ``(?m)`` dot-all, ``\\N`` any character but a line feed, ``\\e`` and
    ``\\cA`` control characters; the Python pre-tokenizer's pieces are HF's."""
    from bpebench.algorithms.pipeline.pretokenizers import build_pre_tokenizer
    from bpebench.algorithms.pipeline.text_pieces import Piece

    ours = build_pre_tokenizer({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False})
    theirs = _hf_split(pattern, "Isolated").pre_tokenizer.pre_tokenize_str(text)
    assert [p.text for p in ours.pre_tokenize([Piece(text)])] == [piece for piece, _ in theirs]
