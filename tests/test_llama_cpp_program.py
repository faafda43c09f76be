"""llama.cpp's regex lists compiled (``pipeline/llama_cpp_program.py``) against the emulation of
``pipeline/llama_cpp_split.py`` (``re`` over the collapsed text, itself checked against llama.cpp's
recorded ids in ``tests/test_llama_cpp.py``): the same pieces for every byte-level type whose list
compiles, on the hard-string set and on drawn text of many scripts and classes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats.llama_cpp_pre import PRE_TYPES
from bpebench.algorithms.pipeline.llama_cpp_fast import compiled_pattern
from bpebench.algorithms.pipeline.llama_cpp_program import ListSplitter, compiled_steps, llama_cpp_splitter
from bpebench.algorithms.pipeline.llama_cpp_split import LlamaCppPretokenizer
from bpebench.corpora.hard_strings import HARD_STRINGS


def _one_type_per_list() -> list[str]:
    """The first byte-level type of each regex list that has no hand-written twin (types that share
    a list share its compiled code)."""
    seen: dict[tuple, str] = {}
    for name, spec in PRE_TYPES.items():
        if spec.byte_encode and compiled_pattern(name) is None:
            seen.setdefault(spec.regexes, name)
    return list(seen.values())


LISTS = _one_type_per_list()
COMPILED = [name for name in LISTS if compiled_steps(name) is not None]


def test_the_lists_that_compile_and_those_that_do_not():
    # DeepSeek-V3's (shared by Hunyuan-dense, JoyAI, HY-v4), DeepSeek-LLM's, StarCoder's, BLOOM's,
    # Tekken's (case classes as one character in two classes), ...
    for name in ("deepseek3_llm", "hunyuan_dense", "deepseek_llm", "deepseek_coder", "default", "falcon",
                 "starcoder", "command_r", "poro", "bloom", "youtu", "jais2", "tekken", "granite_emb_multi"):
        assert name in PRE_TYPES and compiled_steps(name) is not None, name
    # the hand-written splitters that are no regex, ported
    for name in ("kimi_k2", "afmoe", "tiny_aya"):
        assert "hand-written" in {step.meaning for step in compiled_steps(name)}, name
    # nested groups, a look-ahead of several classes: the emulation keeps them
    for name in ("exaone_moe", "chameleon", "superbpe"):
        assert compiled_steps(name) is None, name
        assert isinstance(llama_cpp_splitter(name), LlamaCppPretokenizer)
    assert len(COMPILED) >= 21 and set(COMPILED) <= set(LISTS)


@pytest.fixture(scope="module")
def splitters():
    return {name: (ListSplitter.of(name), LlamaCppPretokenizer(name)) for name in COMPILED}


@pytest.mark.parametrize("name", COMPILED)
def test_hard_strings_split_as_the_emulation(splitters, name):
    compiled, emulated = splitters[name]
    assert isinstance(llama_cpp_splitter(name), ListSplitter)
    for text in HARD_STRINGS:
        if text.encode("utf-8", "surrogatepass") != text.encode("utf-8", "replace"):
            continue  # a lone surrogate: no UTF-8 text to split (``split`` hands it to the emulation)
        assert compiled.split(text) == emulated.split(text), (name, text)
    joined = "\n".join(t for t in HARD_STRINGS if t.isprintable() or "\n" in t)
    assert compiled.split(joined) == emulated.split(joined)


#: letters, numbers, marks, punctuation, symbols and whitespace of several scripts; the literals the
#: lists name (CJK and kana ranges, Hangul, DeepSeek-LLM's Latin/Greek letters, fullwidth forms)
_ALPHABET = list("aZsStTmdlLrReEvV0129 '\"\n\r\t\x0b\x0c.,!?-_$+<=>^~|`(){}[]/\\#@&*%:;") + [
    "\u017f", "\u00e9", "\u00b5", "\u0436", "\u03a9", "\u6771", "\u4e00", "\u9fa5", "\u3042", "\u30a2", "\uac00",
    "\u3131", "\u3105", "\u0e01", "\u0663", "\u00b2", "\u216b", "\u00a0", "\u2003", "\u3000", "\x85", "\u0301",
    "\u20ac", "\u00a9", "\U0001f600", "\u2026", "\u3002", "\uff0c", "\u3001", "\u0964", "\u06d4", "\u060c", "\uff01",
    "\uff21", "\u2018", "\u201d", "\ufe30", "\u088f", "\U000105c0", "\u1c89", "\u0130", "\u212a", "'s", "'LL", "'ſ",
    "   ", "IMGIMG", "<sentinel:1>", "1234567", "\u0660\u0661\u0662\u0663",
]
#: ASCII with few digits and some control characters (text between matches): pieces long enough for
#: the transducer of a list's word regex (ASCII pieces of ``TRANSDUCED_MIN`` characters or more are
#: split by it, the one-character pieces it leaves checked)
_ASCII = [*"aZsStTmdlLrReEvV '\"\n\r\t\x0b\x0c.,!?-_$+<=>^~|`(){}[]/\\#@&*%:;", "'s", "'LL", "hello", " World",
          "   ", "\n\n  ", " \t ", "2024", "\x00", "\x07\x1b", "\x7f"]
_TEXTS = st.one_of(st.lists(st.sampled_from(_ALPHABET), max_size=60).map("".join),
                   st.lists(st.sampled_from(_ASCII), min_size=150, max_size=400).map("".join))


@pytest.mark.parametrize("name", COMPILED)
@settings(max_examples=160, deadline=None)
@given(text=_TEXTS)
def test_drawn_text_splits_as_the_emulation(splitters, name, text):
    compiled, emulated = splitters[name]
    assert compiled.split(text) == emulated.split(text)
    data = text.encode()
    ends = compiled.piece_ends(np.frombuffer(data, dtype=np.uint8))
    # byte offsets of the same pieces, increasing to the end of the text
    assert ends.tolist() == np.cumsum([len(p.encode()) for p in emulated.split(text)]).tolist()


def test_word_regexes_have_transducers():
    splitter = ListSplitter.of("deepseek3_llm")
    assert [step.covering is not None for step in splitter.run] == [True]  # digits, Han and words in one pass
    falcon = ListSplitter.of("falcon")  # punctuation runs merged with GPT-2's regex, then digits: sparse
    assert [step.covering is not None for step in falcon.run] == [True, False]


def test_a_lone_surrogate_is_split_by_the_emulation(splitters):
    compiled, emulated = splitters["deepseek3_llm"]
    text = "ab\ud800 12345"
    assert compiled.split(text) == emulated.split(text)


def _union_by_code_point(programs, excluded):
    """``union_program``'s class tables worked out code point by code point (1.1 million of them), as
    its definition reads: each program's class bits, shifted past the classes of the programs before
    it, and cleared where an excluded program has a class."""
    from bpebench.algorithms.pipeline.pattern_program import class_count, code_point_classes, two_stage

    words = [code_point_classes(program) for program in programs]
    flat = np.zeros(0x110000, dtype=np.int64)
    offset = 0
    for program, own, outside in zip(programs, words, excluded):
        for h in outside:
            own = np.where(words[h] != 0, 0, own)
        flat |= own << offset
        offset += class_count(program)
    return two_stage(flat.astype(np.uint32))


@pytest.mark.parametrize("name", [name for name in COMPILED if len(PRE_TYPES[name].regexes) > 1][:8])
def test_the_merged_classes_per_block_equal_those_per_code_point(name):
    """``union_program`` works the classes out per 256-code-point block; the oracle per code point."""
    from bpebench.algorithms.pipeline.llama_cpp_program import _compiled_list
    from bpebench.algorithms.pipeline.pattern_program import compile_pattern, union_program

    programs = [step.program for step in _compiled_list(PRE_TYPES[name].regexes) if step.program is not None]
    programs.append(compile_pattern(r"[\s\S]", "regex"))  # as the merged step's covering program
    excluded = [tuple(range(i)) for i in range(len(programs) - 1)] + [()]
    merged = union_program(programs, excluded)
    assert merged is not None
    stage1, stage2, kinds = _union_by_code_point(programs, excluded)
    assert np.array_equal(merged.stage1, stage1) and np.array_equal(merged.stage2, stage2)
    assert np.array_equal(merged.kind_classes, kinds)
    assert merged.stage1.dtype == stage1.dtype and merged.stage2.dtype == stage2.dtype
