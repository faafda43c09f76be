"""Code points ``regex`` reads in a newer Unicode than tiktoken and HF ``tokenizers``: the ids are the
libraries' own on every one of them (oracles: tiktoken, ``tokenizers`` with DeepSeek-V4's file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.pipeline import unicode_reference
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

LISTED = sorted(unicode_reference.translation())
#: short texts around a listed character ``c``: before a contraction, between letters, after a
#: space, before a digit, in a run (the shapes whose pieces depend on the character's class)
SHAPES = ("a{c}b", " {c}{c}x", "x {c}'s", "A{c}", "{c}1", "'{c}", "{c}'S", "\n{c}", "{c} ")


def _texts(shapes=SHAPES, points=LISTED):
    return [shape.format(c=chr(cp)) for cp in points for shape in shapes]


def test_the_libraries_read_every_listed_code_point_in_the_listed_category():
    """tiktoken's engine (an independent reading) finds each listed code point in the category the
    table gives it, and ``regex`` in another one: the table is neither empty nor stale."""
    import regex
    import tiktoken

    ranks = {bytes([i]): i for i in range(256)}
    by_category: dict[str, list[int]] = {}
    for first, last, category in unicode_reference._data()["differ"]:
        by_category.setdefault(category, []).extend(range(first, last + 1))
    assert sum(map(len, by_category.values())) == len(LISTED) > 4000
    for category, points in by_category.items():
        text = "".join(map(chr, points))
        probe = tiktoken.Encoding("probe", pat_str=rf"\p{{{category}}}", mergeable_ranks=ranks, special_tokens={})
        assert bytes(probe.encode_ordinary(text)).decode("utf-8") == text, category
        assert not regex.findall(rf"\p{{{category}}}", text), category


def test_stand_ins_keep_positions_and_utf8_lengths():
    text = "".join(chr(cp) for cp in LISTED) + "abc é 日本"
    reference = unicode_reference.reference_text(text)
    assert reference is not None and len(reference) == len(text)
    assert [len(c.encode()) for c in reference] == [len(c.encode()) for c in text]
    assert reference.endswith("abc é 日本")
    assert unicode_reference.reference_text("abc é 日本" * 100) is None
    assert unicode_reference.reference_text("plain ascii") is None


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_ids_equal_tiktoken_on_every_listed_code_point(name):
    from bpebench.properties.oracles import tiktoken_encoding

    vocab = load_vocabulary(name)
    tiktoken = tiktoken_encoding(vocab)
    fused, reference = Tokenizer(vocab), Tokenizer(vocab, pretokenizer="regex")
    texts = _texts()
    expected = [tiktoken.encode_ordinary(t) for t in texts]
    assert [fused.encode_ordinary(t) for t in texts] == expected
    assert [reference.encode_ordinary(t) for t in texts] == expected
    # the batch's and a long text's paths (parts on two threads, cut at pre-token boundaries)
    assert fused.encode_ordinary_batch(texts, num_threads=2) == expected
    long_text = "\n".join(texts)
    assert len(long_text) > 1 << 17
    assert fused.encode_ordinary(long_text, num_threads=2) == tiktoken.encode_ordinary(long_text)


def test_ids_equal_hf_tokenizers_on_every_listed_code_point():
    """DeepSeek-V4's file: Split steps with ``\\p{P}``/``\\p{S}`` classes, on the component path and
    through the compiled steps."""
    import tokenizers

    vocab = load_vocabulary("deepseek_v4")
    hf = tokenizers.Tokenizer.from_file(vocab.source)
    ours = Tokenizer(vocab)
    texts = _texts(shapes=("x {c}'ve", " {c}x", "1{c}2", "{c}{c}"))
    expected = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert [ours.encode_ordinary(t) for t in texts] == expected


def test_single_word_added_tokens_read_their_neighbours_as_hf_does():
    """A ``single_word`` added token next to a listed code point: HF's ``\\w`` does not take it (it
    is unassigned there), so the token is carved out; ``regex``'s takes most of them."""
    import tokenizers

    from bpebench.algorithms.formats import load_path

    path = str(Path(__file__).parent / "golden" / "pipelines" / "hf_bytelevel_prefix_nfd.json")
    hf = tokenizers.Tokenizer.from_file(path)
    ours = Tokenizer(load_path(path))
    texts = _texts(shapes=("{c}say", "say{c}", "a {c}say b"))
    expected = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert [ours.encode_ordinary(t) for t in texts] == expected
