"""The fused pipeline for GGUF files (``pipeline/llama_cpp_fast.py``): the compiled twin of
llama.cpp's hand-written splitters behind the screen, whose table is checked against a
per-character oracle, and llama.cpp's other pre-tokenizers as emulated feeding the compiled BPE
stage; the ids against the reference path (llama.cpp's split emulated over ``re``, the ``naive``
encoder) on drawn text. ``tests/test_llama_cpp.py`` checks the same Tokenizers against llama.cpp's
recorded ids."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_path
from bpebench.algorithms.pipeline.llama_cpp_fast import ascii_agrees, compiled_pattern, unsafe_code_points
from bpebench.algorithms.pipeline import unicode_reference
from bpebench.algorithms.pipeline.llama_cpp_split import WHITESPACE
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from golden_fixtures import llama_cpp_variant  # noqa: E402

#: one variant per hand-written splitter, one that shares Qwen2's list under another name, GPT-4o's
#: case classes in llama.cpp's lookahead spelling (o200k's twin), and pre-tokenizers with no twin:
#: sequences of regexes and the hand-written Kimi-K2 and AFMoE splitters (compiled,
#: ``llama_cpp_program``), EXAONE-MoE's nested groups (emulated)
FAST_VARIANTS = {"pre:gpt-2": "gpt2", "pre:llama3": "llama3", "pre:qwen2": "qwen2", "pre:stablelm2": "qwen2",
                 "pre:qwen35": "qwen35", "pre:gpt-4o": "o200k",
                 "pre:(missing)": None, "pre:deepseek-llm": None, "pre:deepseek-v3": None, "pre:kimi-k2": None,
                 "pre:afmoe": None, "pre:exaone-moe": None}
#: the variants with no twin whose regex list does not compile
EMULATED = {"pre:exaone-moe"}


@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    pytest.importorskip("gguf")
    directory = tmp_path_factory.mktemp("llama_cpp_fast")
    made = {}
    for name in [*FAST_VARIANTS, "missing-byte:gpt-2"]:
        path = directory / (name.replace(":", "_").replace("(", "").replace(")", "") + ".gguf")
        llama_cpp_variant(path, name)
        made[name] = load_path(path)
    return made


def _their_class(c: int, pattern_name: str) -> str:
    """A character's class as llama.cpp's tables give it (per character, from the documentation);
    for GPT-4o's list (o200k's twin) letters split into A-Z, a-z and the rest (both cases there)."""
    ch = chr(c)
    cased = pattern_name == "o200k"
    if c < 128:
        if ch.isalpha():
            return ("U" if ch.isupper() else "l") if cased else "L"
        return "N" if ch.isdigit() else "S" if ch in " \t\n\r\f\v" else "O"
    if c in WHITESPACE:
        return "S"
    kind = {"L": "B" if cased else "L", "N": "N", "M": "O" if cased else "M"}
    return kind.get(unicodedata.category(ch)[0], "O")


def _regex_class(c: int) -> str:
    # the twin reads ``regex``'s classes at the libraries' Unicode: a code point newer than it as its
    # stand-in (``unicode_reference``)
    ch = chr(unicode_reference.translation().get(c, c))
    for name, pattern in (("L", r"\p{L}"), ("N", r"\p{N}"), ("M", r"\p{M}"), ("S", r"\s")):
        if regex.fullmatch(pattern, ch):
            return name
    return "O"


@pytest.mark.parametrize("pattern_name", ["qwen35", "gpt2"])
def test_unsafe_code_points_match_a_per_character_oracle(pattern_name):
    unsafe = unsafe_code_points(pattern_name)
    assert unsafe.shape == (0x110000,) and not unsafe[:128].any() and ascii_agrees(pattern_name)
    assert unsafe[0xD800:0xE000].all()
    sample = [*range(0, 0x3000), *range(0x3000, 0x110000, 61), 0x17F, 0x88F, 0xA7CB, 0x105C0, 0x1C89]
    folds = set() if pattern_name == "gpt2" else {0x17F}  # (?i:'s) matches 'ſ under regex only
    for c in sample:
        if 0xD800 <= c < 0xE000:
            continue
        theirs, ours = _their_class(c, "plain"), _regex_class(c)
        assert unsafe[c] == (theirs != ours or c in folds), (hex(c), theirs, ours)
    assert unsafe.sum() > 100  # the newer Unicode tables assign letters llama.cpp's do not know


def test_only_the_hand_written_splitters_have_a_compiled_twin(variants):
    for name, pattern in FAST_VARIANTS.items():
        assert compiled_pattern(variants[name].llama_cpp["pre"]) == pattern
        tok = Tokenizer(variants[name])
        assert tok.fused and tok._llama_fused.pattern_name == pattern
        # a compiled pre-tokenizer; Qwen3.5's generated matcher; llama.cpp's regex list, compiled or
        # (a hand-written splitter that is no regex) emulated
        splitter = tok._llama_fused.pipeline.splitter
        no_twin = "LlamaCppPretokenizer" if name in EMULATED else "ListSplitter"
        assert type(splitter).__name__ == {None: no_twin, "qwen35": "ProgramPretokenizer"}.get(pattern, "NoneType")
        assert not Tokenizer(variants[name], algorithm="naive").fused  # the reference stays the oracle
        assert not Tokenizer(variants[name], pretokenizer="regex").fused
    assert not Tokenizer(variants["missing-byte:gpt-2"]).fused  # llama.cpp drops the byte: reference path


#: letters, numbers, whitespace and other characters of several scripts, ASCII and not; contraction
#: letters and ſ after apostrophes; code points whose class the two Unicode tables disagree on; the
#: fixture's special tokens (USER_DEFINED ones are cut out of ordinary text too)
_ALPHABET = list("aZsStTmdlLrReEvV09 '\n\r\t\x0b\x0c\x1c.,!?-_") + [
    "\u017f", "\u00e9", "\u0436", "\u6771", "\u0e01", "\u0663", "\u00b2", "\u216b", "\u00a0", "\u2003", "\u3000",
    "\x85", "\u0301", "\u20ac", "\U0001f600", "\ud800", "\u088f", "\ua7cb", "\U000105c0", "\u1c89", "\u0130", "\u212a",
    "'s", "'LL", "'ſ", "   ", "<mask>", "<x>", "x><y", "<s>", "</s>",
]
_TEXTS = st.lists(st.sampled_from(_ALPHABET), max_size=40).map("".join)


@pytest.mark.parametrize("variant", list(FAST_VARIANTS))
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(_TEXTS, min_size=1, max_size=4))
def test_fused_equals_the_reference_path(variants, variant, texts):
    fused, reference = Tokenizer(variants[variant]), Tokenizer(variants[variant], algorithm="naive")
    for text in texts:
        assert fused.encode_ordinary(text) == reference.encode_ordinary(text), text
        assert fused.encode(text, allowed_special="all") == reference.encode(text, allowed_special="all"), text
        assert fused.encode_to_numpy(text, disallowed_special=()).tolist() == reference.encode_ordinary(text)
        assert fused.count(text) == len(reference.encode_ordinary(text))
    expected = [reference.encode_ordinary(t) for t in texts]
    assert fused.encode_ordinary_batch(texts) == expected
    ids, offsets = fused.encode_ordinary_batch_to_numpy(texts)
    assert ids.dtype == np.uint32 and [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    assert fused.encode_batch(texts, allowed_special="all") == [reference.encode(t, allowed_special="all")
                                                                for t in texts]


def test_a_compiled_twin_takes_every_text_and_a_screened_one_stops_some(variants):
    """The compiled twins read llama.cpp's class table, so every text goes to them, the characters
    the two Unicode tables class differently and ſ included; Qwen3.5's generated matcher reads
    ``regex``'s classes, so its screen sends those texts to llama.cpp's regex list (compiled with
    llama.cpp's classes, ``llama_cpp_program``)."""
    safe = "It's 2024: naïve café, 東京 ×3 — Ωmega\u00a0end\n"
    # U+105C0 and U+1C89: assigned in Unicode 16, which llama.cpp's emulated tables (Python 3.11's
    # Unicode 14) do not know
    unsafe = ("x'ſx", "word \U000105c0 word", "a\ud800b", "\u1c89\u0301 É")
    for variant in ("pre:llama3", "pre:gpt-4o", "pre:qwen35"):
        tok, naive = Tokenizer(variants[variant]), Tokenizer(variants[variant], algorithm="naive")
        llama = tok._llama_fused
        tok._reference = lambda text: pytest.fail(f"the reference path ran on {text!r}")
        assert llama.pipeline_for(safe) is llama.pipeline
        assert tok.encode_ordinary(safe) == naive.encode_ordinary(safe)
        for text in unsafe:
            used = llama.pipeline_for(text)
            if variant == "pre:qwen35":
                assert type(used.splitter).__name__ == "ListSplitter"
            else:
                assert used is llama.pipeline and used.splitter is None
            assert tok.encode_ordinary(text) == naive.encode_ordinary(text), (variant, text)
    # llama.cpp's contractions are 's and 'S: 'ſx is one piece there, 'ſ and x under regex's (?i:'s)
    from bpebench.algorithms.formats.patterns import LLAMA3

    tok = Tokenizer(variants["pre:llama3"])
    assert tok.pretokenizer.split("'ſx") == ["'ſx"] and regex.findall(LLAMA3, "'ſx") == ["'ſ", "x"]


@pytest.mark.parametrize("pattern_name", ["llama3", "o200k"])
def test_class_tables_hold_llama_cpps_classes(pattern_name):
    """Every sampled code point's bits in the twin's table against the per-character oracle."""
    from bpebench.algorithms.pipeline.llama_cpp_fast import class_tables
    from bpebench.algorithms.pipeline.unicode_table import F_L, F_LO, F_N, F_UP, F_WS, FOLD_SHIFT

    stage1, stage2 = class_tables(pattern_name)
    sample = [*range(0, 0x3000), *range(0x3000, 0x110000, 61), 0x17F, 0x88F, 0xA7CB, 0x105C0, 0x1C89, 0x212A]
    for c in sample:
        if 0xD800 <= c < 0xE000:
            continue
        bits = int(stage2[(int(stage1[c >> 8]) << 8) | (c & 255)])
        cls = _their_class(c, "o200k" if pattern_name == "o200k" else "plain")
        letter = cls in ("L", "U", "l", "B")
        assert bool(bits & F_L) == letter and bool(bits & F_N) == (cls == "N") and bool(bits & F_WS) == (cls == "S"), (
            hex(c), cls, bits)
        if pattern_name == "o200k":
            assert (bool(bits & F_UP), bool(bits & F_LO)) == {"U": (True, False), "l": (False, True),
                                                              "B": (True, True)}.get(cls, (False, False)), hex(c)
        if c >= 128:
            assert bits >> FOLD_SHIFT == 0, hex(c)  # no contraction letter outside ASCII, ſ included


def test_the_table_is_kept_on_disk_and_a_damaged_copy_is_rebuilt(tmp_path, monkeypatch):
    from bpebench.algorithms.pipeline import llama_cpp_fast

    expected = llama_cpp_fast.unsafe_code_points("qwen2")  # from the usual cache root, or made there
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    llama_cpp_fast.unsafe_code_points.cache_clear()
    try:
        assert (llama_cpp_fast.unsafe_code_points("qwen2") == expected).all()  # made, then written
        (path,) = tmp_path.glob("llama_cpp_unsafe_qwen2_*.bin")
        assert path.stat().st_size > 4 * expected.sum()
        llama_cpp_fast.unsafe_code_points.cache_clear()
        assert (llama_cpp_fast.unsafe_code_points("qwen2") == expected).all()  # read back
        path.write_bytes(path.read_bytes()[:-4])
        llama_cpp_fast.unsafe_code_points.cache_clear()
        assert (llama_cpp_fast.unsafe_code_points("qwen2") == expected).all()  # cut short: rebuilt
        assert path.stat().st_size > 4 * expected.sum()
    finally:
        llama_cpp_fast.unsafe_code_points.cache_clear()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("variant", ["pre:qwen2", "pre:qwen35", "pre:deepseek-llm", "pre:exaone-moe"])
def test_long_texts_are_cut_into_parts_with_the_same_ids(variants, variant, threads):
    """A text of at least 64 kB is encoded in parts cut at pre-token boundaries (on the threads), as a
    tiktoken vocabulary's is (a compiled twin's cut points; a generated matcher's or the emulated
    split's piece ends); the ids are the reference path's, special tokens carved as before."""
    tok = Tokenizer(variants[variant])
    reference = Tokenizer(variants[variant], algorithm="naive")
    line = "It's 12 naïve cafés:\tΑθήνα, 東京 and\u00a0Zürich <mask> x\n    y = f(x)  # ok\n"
    text = line * (80_000 // len(line) + 1)
    expected = reference.encode_ordinary(text)
    assert len(text) > 65_536 and text.count("<mask>") > 1000
    assert tok.encode_ordinary(text, num_threads=threads) == expected
    assert tok.encode_to_numpy(text, num_threads=threads, disallowed_special=()).tolist() == expected
    assert tok.encode(text) == expected == tok.encode(text, allowed_special="all")
    # no literal (the fixture's USER_DEFINED tokens include runs of two and three spaces): one
    # ordinary stretch, in parts
    plain = text.replace("<mask>", "mask").replace("    ", "\t").replace("  ", " ")
    assert len(plain) > 65_536
    in_parts = []
    parts = "_encoded_parts" if tok._llama_fused.pipeline.splitter is None else "_split_encoded_parts"
    whole = getattr(tok, parts)
    setattr(tok, parts, lambda *args, **kwargs: in_parts.append(args[0]) or whole(*args, **kwargs))
    assert tok.encode_ordinary(plain, num_threads=threads) == reference.encode_ordinary(plain)
    assert tok.encode_to_numpy(plain, num_threads=threads).tolist() == reference.encode_ordinary(plain)
    assert in_parts == [plain, plain]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("variant", ["pre:gpt-4o", "pre:qwen35", "pre:deepseek-llm", "pre:exaone-moe"])
def test_batches_go_to_the_fused_pipelines_with_the_same_ids(variants, variant, threads):
    """A batch of a GGUF file is carved text by text and each pipeline's stretches are encoded as one
    batch on the threads (qwen35: the screen sends the texts with characters the two tables class
    differently to the emulated split); the ids are the reference path's, with literals cut out."""
    tok = Tokenizer(variants[variant])
    reference = Tokenizer(variants[variant], algorithm="naive")
    lines = ["It's 12 naïve cafés:\tΑθήνα, 東京 and\u00a0Zürich\n", "    y = f(x)  # ok <mask> x\n", "",
             "x\u088fx \ua7cb\u1c89\n", "<mask>", "tab\t\tend   \n", "\U0001f600 done\u2003\n"]
    texts = [lines[k % len(lines)] * (1 + k % 5) for k in range(2000)]
    assert sum(map(len, texts)) > 65_536
    used = []
    for name in ("_batch_lists", "_batch_flat"):
        whole = getattr(tok, name)
        setattr(tok, name, lambda stretches, many, pipeline, whole=whole: (used.append(pipeline)
                                                                           or whole(stretches, many, pipeline)))
    expected = [reference.encode_ordinary(t) for t in texts]
    assert tok.encode_ordinary_batch(texts, num_threads=threads) == expected
    ids, offsets = tok.encode_ordinary_batch_to_numpy(texts, num_threads=threads)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    assert tok.encode_batch(texts, allowed_special="all", num_threads=threads) == [
        reference.encode(t, allowed_special="all") for t in texts]
    llama = tok._llama_fused
    assert set(map(id, used)) == ({id(llama.pipeline), id(llama.listed)} if variant == "pre:qwen35"
                                  else {id(llama.pipeline)})


@pytest.fixture(scope="module")
def real_ranks(tmp_path_factory):
    """cl100k's ranks written as GGUF files of three types: merges across characters the whole-line
    fixture never saw (line feeds after punctuation, accented and other non-ASCII letters)."""
    pytest.importorskip("gguf")
    from bpebench.benchmarks.quick_gguf import gguf_from_ranks

    directory = tmp_path_factory.mktemp("llama_cpp_ranks")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BPEBENCH_VOCAB_CACHE", "off")  # a cache file per temporary path would only pile up
        return {pre: load_path(gguf_from_ranks("cl100k_base", pre, str(directory / f"{pre}.gguf")))
                for pre in ("gpt-4o", "llama-bpe", "qwen35")}


@pytest.mark.parametrize("pre", ["gpt-4o", "llama-bpe", "qwen35"])
@settings(max_examples=60, deadline=None)
@given(lines=st.lists(_TEXTS, min_size=1, max_size=8))
def test_real_ranks_give_the_reference_ids(real_ranks, pre, lines):
    tok, naive = Tokenizer(real_ranks[pre]), Tokenizer(real_ranks[pre], algorithm="naive")
    text = ".\nA".join(lines)
    assert tok.encode_ordinary(text) == naive.encode_ordinary(text)


#: words whose pieces differ between llama.cpp's classes and regex's, in contexts where cl100k's
#: merges make the difference show in the ids
_HARD_WORDS = [" café", " naïve", " Zürich", " ÉCOLE", " Ελλάδα", " Москва", "e\u0301t\u0301e", " Ǆemal",
               "it'ſ", "It'ſ a", "'ſx", "x\u088fx", " a\U000105c0b", "東京都", " ﬁne", "\u00a0word", "x\u2003 y"]


@pytest.mark.parametrize("pre", ["gpt-4o", "llama-bpe", "qwen35"])
def test_words_the_two_tables_class_differently(real_ranks, pre):
    tok, naive = Tokenizer(real_ranks[pre]), Tokenizer(real_ranks[pre], algorithm="naive")
    for word in _HARD_WORDS:
        assert tok.encode_ordinary(word) == naive.encode_ordinary(word), word
    text = "".join(_HARD_WORDS)
    assert tok.encode_ordinary(text) == naive.encode_ordinary(text)
