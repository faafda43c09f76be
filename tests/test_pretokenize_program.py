"""Pattern programs (``pattern_program`` + ``pretokenize_program``): the generated matcher splits
exactly like ``regex.findall``, for every shape it accepts, and refuses the shapes it does not."""

from __future__ import annotations

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats.patterns import PATTERNS
from bpebench.algorithms.pipeline.pattern_program import compile_pattern
from bpebench.algorithms.pipeline.pretokenize_program import program_pretokenizer

#: three shipped patterns (which have hand-written scanners too: a second, independent check of
#: the generator), the shapes custom tokenizers use, and the rarer constructs the generator emits
SHAPES = {
    **{name: PATTERNS[name] for name in ("gpt2", "cl100k", "o200k")},
    "custom": r"\s?\p{L}+|\s?\p{N}{1,4}|\s?[^\s\p{L}\p{N}]+|\s+",
    "deepseek": r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
                r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "lazy": r"\p{L}+?\p{L}|\s+|\S",
    "look-ahead": r"\p{L}+(?=\s)|\S|\s+",
    "end": r"\s+\Z|\s+$|\S+|\s",
    "case-insensitive": r"(?i)[a-c]+|(?i:xy|z)?\d{2,3}|.|\n",
    "possessive group": r"(?:'s|'t)?+\w+|\W",
}
ALPHABET = list("ab AZ \t\r\n.'1é中ſKßxyzXYZ\u00a0\u3000\u2019-_\u0301\u02b0sStTdD") + ["'s", "'T", " \n", "\n\n", "12345"]


def _pieces(pattern: str, text: str) -> list[str]:
    compiled = regex.compile(pattern)
    return compiled.findall(text) if compiled.groups == 0 else [m.group() for m in compiled.finditer(text)]


@pytest.fixture(scope="module")
def splitters():
    made = {name: program_pretokenizer(pattern) for name, pattern in SHAPES.items()}
    assert all(made.values()), [name for name, s in made.items() if s is None]
    return made


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_the_generated_matcher_splits_like_regex(splitters, text):
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    for name, splitter in splitters.items():
        pieces = _pieces(SHAPES[name], text)
        ends = splitter.piece_ends(data)
        if ends is None:  # text the pattern leaves out: regex answers, and it must indeed drop some
            assert sum(map(len, pieces)) < len(text), (name, text)
            assert splitter.split(text) == pieces
            continue
        assert ends.tolist() == np.cumsum([len(p.encode("utf-8")) for p in pieces]).tolist(), (name, text, pieces)


def test_text_the_pattern_leaves_out_goes_to_regex():
    splitter = program_pretokenizer(r"\p{L}+")
    data = np.frombuffer("ab, cd".encode(), dtype=np.uint8)
    assert splitter.piece_ends(data) is None and splitter.split("ab, cd") == ["ab", "cd"]
    assert splitter.piece_ends(np.frombuffer("abc".encode(), dtype=np.uint8)).tolist() == [3]


@pytest.mark.parametrize("pattern", [
    r"(a|aa)+", r"(?:ab)*c", r"((a)b)", r"\bword\b", r"(?<=a)b", r"(a)\1", r"x*|y", r"(?x)a b", r"^a", r"a{2,1}",
    r"[[:alpha:]]+", r"(?:a|b+)c", "(?:ab|c)??d", "a**",
])
def test_shapes_outside_the_subset_are_refused(pattern):
    """Refused means None (the pattern stays on regex), never a wrong matcher: repeated, nested or
    lazy groups, anchors, look-behind, back-references, empty matches, verbose mode, sets in sets."""
    assert compile_pattern(pattern) is None


def test_a_cache_root_that_cannot_be_written_leaves_the_pattern_on_regex(tmp_path, monkeypatch):
    from bpebench.algorithms.pipeline import pretokenize_program

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("BPEBENCH_CACHE", str(blocked))
    pretokenize_program._matcher.cache_clear()
    try:
        assert program_pretokenizer(r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+") is None
    finally:
        pretokenize_program._matcher.cache_clear()


def test_a_vocabulary_with_its_own_pattern_is_fused_through_the_program():
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.formats.vocabulary import Vocabulary
    from bpebench.algorithms.pipeline.pretokenize_program import ProgramPretokenizer
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    base = load_vocabulary("cl100k_base")
    vocab = Vocabulary.from_ranks(list(base.tokens), name="cl100k-deepseek", pattern=SHAPES["deepseek"])
    tok = Tokenizer(vocab)
    assert isinstance(tok._fused.splitter, ProgramPretokenizer)
    text = "Hello, wörld!  x = f(12345);\n\n\tdon't 中文 stop.\n" * 50
    assert tok.encode_ordinary(text) == Tokenizer(vocab, algorithm="heap").encode_ordinary(text)
