"""The bit-parallel pre-tokenizer (over the bytes of ASCII text, over the characters of any other)
must split exactly like ``regex.findall`` (and so like the general compiled pre-tokenizer); its bit
primitives must compute what their Python twins do."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats.patterns import PATTERNS
from bpebench.algorithms.kernels import bits
from bpebench.algorithms.kernels.jit import njit
from bpebench.algorithms.pipeline import unicode_table as ut
from bpebench.algorithms.pipeline.pretokenize_bits import (B_APOS, B_BLANK, B_CRLF, B_DIGIT, B_LOWER, B_SLASH,
                                                           B_SPACE, B_UPPER, ascii_bitmaps, class_bitmaps,
                                                           piece_ends_ascii, piece_ends_chars, piece_ends_letters)
from bpebench.algorithms.pipeline.pretokenize_compiled import PATTERN_IDS, get_tables, piece_ends_utf8, stdlib_source

REPO = Path(__file__).resolve().parents[1]
REFERENCE = {name: regex.compile(PATTERNS[name]) for name in PATTERN_IDS}


def check(text: str) -> None:
    data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    for name, pattern_id in PATTERN_IDS.items():
        pieces = REFERENCE[name].findall(text)
        expected = np.cumsum([len(p) for p in pieces]).tolist()
        got = piece_ends_ascii(data, pattern_id).tolist()
        assert got == expected, (name, text, [text[a:b] for a, b in zip([0, *got[:-1]], got)], pieces)


TRICKY = [
    "", "a", " ", "  ", "hello world", "Hello  World   again    ",
    "I'm you're he'll we've she'd it's don't DON'T I'M YOU'RE HE'LL WE'VE SHE'D IT'S",
    "'S 'll 'VE 'Re 'rE 'Ll 'lL 'D 'M 'T 's't'", "'sam 'llama 'vex 'red 'x ' s ''s '",
    "the cat's toy's owner's", "O'Neil's McDonald'S", "x's's", "it'sgood it'sGood x'ry I'lx",
    "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890 12345678901 123456789012",
    "a1b22c333d4444 x-123.456e+78", "trailing   ", "trailing\n", "trailing \n ", "  \n  ", "\n\n\n",
    "line1\r\nline2\r\n\r\nline3\n\n  indented\n\tTabbed\n", "a\r\n\r\n  b", "  \r\n  x", "x  \r \n\t  y",
    "\t\tword \tword\t\t", "def f(x):\n    return x**2  # comment\n\n\nclass A:\n    pass\n",
    "https://example.com/path/to/file.txt?q=1&r=2", "a // b /// c\n//\n/\n", ";\n//x\n./\n/.\n", "!!!\n\n??? ...\r\n",
    "  !!!  ???", ".\n \n y", "x.\n\n  y", " (x ((x (\tx \t(x", "CamelCaseWord ALLCAPS lowerUPPERlower aBC ABc XMLHttpRequest",
    "HELLO'S Hello's hello'S HeLLo'Ll", "\x1c\x1d\x1e\x1f file separators \x1c x\x1fy", "\x0b\x0c vertical\x0b tab\x0cform",
    "\x00nul\x01 \x7f", "x" * 50 + " " * 20 + "\n" * 5, "A" * 30 + "a" * 30, "'" * 5 + "s", " 's",
    " " * 200 + "x", "\n" * 130 + " " * 70 + "y", " " * 70 + "\n" + " " * 70 + "z", "1" * 200, "a" * 64 + "1" * 64 + "." * 64,
    ("ab " * 30) + "\n" + ("." * 63) + "\n\n/" + "x" * 66, "x" + " \n" * 40 + "   ", "a" * 63 + "'s", "." * 63 + "\n/.x",
]


@pytest.mark.parametrize("text", TRICKY, ids=range(len(TRICKY)))
def test_tricky_strings(text):
    check(text)


ALPHABET = list("aAzZsStTdDmMlLvVeErRxX09 '\t\r\n\x0b\x0c\x1c\x1f/!.,-_#(\x00\x7f")


@st.composite
def runs(draw):
    """Text made of runs (long ones cross the 64-character words of the bitmaps)."""
    parts = draw(st.lists(st.tuples(st.sampled_from(ALPHABET), st.sampled_from([1, 1, 1, 2, 3, 5, 64, 70])),
                          max_size=40))
    return "".join(char * count for char, count in parts)


@settings(max_examples=300)  # about a millisecond each
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_any_ascii_text(text):
    check(text)


@settings(max_examples=300)
@given(runs())
def test_runs_of_the_tricky_characters(text):
    check(text)


@settings(max_examples=20)
@given(st.integers(0, 2**32 - 1))
def test_random_long_texts(seed):
    rng = random.Random(seed)
    check("".join(rng.choice(ALPHABET) * rng.choice([1, 1, 2, 70]) for _ in range(rng.randint(100, 600))))


@pytest.mark.parametrize("kind", ["source", "docstrings"])
def test_stdlib_text_equals_the_general_pre_tokenizer(kind):
    from bpebench.algorithms.pipeline.pretokenize_compiled import stdlib_prose

    raw = stdlib_source(400_000) if kind == "source" else stdlib_prose(400_000)
    text = raw.decode("utf-8").encode("ascii", "ignore")
    data = np.frombuffer(text, dtype=np.uint8)
    stage1, stage2 = get_tables()
    for name, pattern_id in PATTERN_IDS.items():
        assert np.array_equal(piece_ends_ascii(data, pattern_id), piece_ends_utf8(data, pattern_id, stage1, stage2)), name


#: characters of every class the patterns see, beyond ASCII: letters of one case or none, the long s
#: that folds to s, Kelvin sign, no-break and ideographic spaces, curly quotes, dashes, digits of other
#: scripts, a title-case letter, line separators; and ones in both of o200k's case classes
NON_ASCII = list("\u00e9\u00c9\u017f\u212a\u00a0\u3000\u2019\u201c\u2014\u0663\u2460\u0416\u0436\u03a3\u03c3"
                 "\u0130\u01c5\U0001d7ce\u2028\u0085")
BOTH_CASES = list("\u4e2d\u3042\u0301\u02b0\u0915\u093f")


_BOTH = regex.compile(r"[\p{Lm}\p{Lo}\p{M}]")
_UPPER = regex.compile(r"[\p{Lu}\p{Lt}]")
_MARK = regex.compile(r"\p{M}")
_LETTER_OR_MARK = regex.compile(r"[\p{L}\p{M}]")


def backs_off(text: str) -> bool:
    """Whether o200k's and Tekken's words in ``text`` can differ from those of the same text with
    every character of both case classes made a lower-case letter: one of them right before an
    upper-case letter, or a mark that does not continue a letter run."""
    for i, c in enumerate(text):
        if _BOTH.match(c) and i + 1 < len(text) and _UPPER.match(text[i + 1]):
            return True
        if _MARK.match(c) and (i == 0 or not _LETTER_OR_MARK.match(text[i - 1])):
            return True
    return False


def check_chars(text: str) -> None:
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    stage1, stage2 = get_tables()
    for name, pattern_id in PATTERN_IDS.items():
        got = piece_ends_chars(data, pattern_id, stage1, stage2).tolist()
        if name in ("o200k", "tekken") and backs_off(text):
            assert got == [], text  # refused: the general pre-tokenizer splits it
            continue
        pieces = REFERENCE[name].findall(text)
        expected = np.cumsum([len(p.encode("utf-8")) for p in pieces]).tolist()
        assert got == expected, (name, text, pieces)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(ALPHABET + NON_ASCII + BOTH_CASES), max_size=200))
def test_any_text_over_its_characters(text):
    check_chars(text)


@settings(max_examples=100)
@given(st.lists(st.tuples(st.sampled_from(ALPHABET + NON_ASCII), st.sampled_from([1, 1, 2, 3, 64, 70])), max_size=30))
def test_runs_of_characters_cross_the_words_of_the_bitmaps(parts):
    check_chars("".join(char * count for char, count in parts))


@pytest.mark.parametrize("text", TRICKY + ["\u017f 'ſ 'ſt ſ's", "it\u2019s \u201cquoted\u201d \u2014 x", "\u00a0\u00a0x \u3000\u3000y",
                                           "caf\u00e9's", "\u0663\u0663\u0663\u0663 \u2460\u2461\u2462\u2463"])
def test_tricky_strings_over_their_characters(text):
    check_chars(text)


_LETTER = regex.compile(r"\p{L}")


_NUMBER = regex.compile(r"\p{N}")


def check_letters(text: str) -> None:
    r"""The byte-level split of text whose non-ASCII characters are letters, whitespace or
    punctuation (for o200k and Tekken, marks only where they continue a letter run) equals
    ``regex``'s, and exactly the other texts are refused: non-ASCII numbers (``\p{N}{1,3}`` counts
    characters) and the long s (``(?i:'s)`` folds it)."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    stage1, stage2 = get_tables()
    for name, pattern_id in PATTERN_IDS.items():
        cased = name in ("o200k", "tekken")
        refused = any(ord(c) > 127 and (_NUMBER.match(c) or c == "\u017f") for c in text) \
            or (cased and backs_off(text))
        got = piece_ends_letters(data, pattern_id, stage1, stage2).tolist()
        if refused:
            assert got == [], (name, text)
            continue
        pieces = REFERENCE[name].findall(text)
        expected = np.cumsum([len(p.encode("utf-8")) for p in pieces]).tolist()
        assert got == expected, (name, text, pieces)


#: letters of one case class, of several byte lengths, and no case; modifier letters and marks of
#: several byte lengths (both of o200k's case classes)
LETTERS = list("\u00e9\u00c9\u0416\u0436\u03a3\u03c3\u0130\u01c5\u1e9e\U0001d400\U0001d41a\u4e2d\u05d0"
               "\u30fc\u3042\u02b0\u0301\u0e48\u093f\U000101fd\U00020000")


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(ALPHABET + LETTERS + NON_ASCII), max_size=200))
def test_text_split_over_its_bytes_unless_it_holds_a_number_or_long_s(text):
    check_letters(text)


#: whitespace and punctuation of two, three and four bytes (``\u0085`` and ``\u2028`` are ``\s`` but
#: not ``[\r\n]``)
OTHERS = list("\u00a0\u3000\u2028\u0085\u2019\u201c\u2014\u00bf\u2026\U0001f600\U0001d15e")


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(ALPHABET + LETTERS[:6] + OTHERS), max_size=120))
def test_whitespace_and_punctuation_of_several_bytes_split_over_their_bytes(text):
    check_letters(text)


@settings(max_examples=100)
@given(st.lists(st.tuples(st.sampled_from(ALPHABET + LETTERS + OTHERS), st.sampled_from([1, 1, 2, 3, 21, 32, 64, 70])),
                max_size=30))
def test_letters_of_several_bytes_cross_the_words_of_the_bitmaps(parts):
    check_letters("".join(char * count for char, count in parts))


@pytest.mark.parametrize("text", TRICKY + ["caf\u00e9's l'\u00e9t\u00e9 \u00c9T\u00c9'S", "\u0416'\u0436 x'\u0436\u0436",
                                           "\u00e9" * 63 + "'s", "a" * 62 + "\U0001d400" * 3 + "'ll",
                                           "\u017f 'ſ", "caf\u00e9 \u2019x", "\xff".encode("latin-1").decode("latin-1"),
                                           "\u30fcA\u30fc", "\u3042A\u3042", "AB\u3042AB", "\u30fcA\u30fcA",
                                           "x\u0301", " \u0301x", "1\u0301", "\u0301", "\u4e2d\u56fd'S \u4e2d'll",
                                           "\u0e01\u0e48\u0e32 \u0e01\u0e48", "\u00c9\u0301COLE", "a\u0301\u0301B",
                                           "\u3042" * 63 + "A", "a" * 63 + "\u0301", " " * 63 + "\u0301",
                                           "a\u2014word \u2014word  \u2014word \u2014\u2014word !\u2014word \u2014's",
                                           "a\u00a0word a \u00a0word a\u00a0\u00a0(x \u00a0\n\u00a0y\n\u00a0z end\u00a0\u00a0",
                                           "don\u2019t \u201cquoted\u201d e\u0301x \u0301x \u00bfQu\u00e9? \u3000\u3000\u4e2d",
                                           "!\n\u2014word \u00a0\u2014word x\u2026\n\u2026y \U0001f600x \U0001f600\U0001f600 x",
                                           "\u2014" * 30 + "x", "a" * 62 + "\u2014b", "a" * 63 + "\u00a0b", " " * 61 + "\u3000x"])
def test_tricky_strings_over_their_bytes(text):
    check_letters(text)


@pytest.mark.parametrize("prefix", [0, 1, 63, 64, 65, 127, 128, 200])
def test_the_letters_pass_goes_on_where_the_ascii_pass_stopped(prefix):
    from bpebench.algorithms.pipeline.pretokenize_bits import ascii_rows_into, bitmap_rows, letter_bitmaps_into

    stage1, stage2 = get_tables()
    rng = random.Random(prefix)
    for tail in ["\u2014word", "caf\u00e9 \u00a0x", "\u4e2d\u6587\u3002" * 30, "\u0663", "x" * 70 + "\u201cq\u201d"]:
        text = "".join(rng.choice("ab c\n.") for _ in range(prefix)) + tail
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        for pattern_id in PATTERN_IDS.values():
            whole = np.full((bitmap_rows(len(data)), 8), 7, dtype=np.uint64)
            expected = letter_bitmaps_into(data, 0, len(data), stage1, stage2, pattern_id, whole, 0)
            resumed = np.full_like(whole, 7)
            first_row = ascii_rows_into(data, 0, len(data), resumed)
            assert first_row == next(i for i, b in enumerate(data) if b > 127) // 64
            got = letter_bitmaps_into(data, 0, len(data), stage1, stage2, pattern_id, resumed, first_row)
            assert got == expected, (text, pattern_id)
            if got:
                assert (resumed == whole).all(), (text, pattern_id)


def test_ill_formed_utf8_is_refused_by_the_byte_split():
    stage1, stage2 = get_tables()
    for raw in [b"caf\xc3", b"\xc3\x28 x", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80abc",
                b"a\xff"]:
        data = np.frombuffer(raw, dtype=np.uint8)
        for pattern_id in PATTERN_IDS.values():
            assert piece_ends_letters(data, pattern_id, stage1, stage2).tolist() == [], raw


def test_text_that_is_not_ascii_is_refused():
    for text in ["café", "x" * 100 + "é", "é" + "x" * 100]:
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        assert piece_ends_ascii(data, PATTERN_IDS["o200k"]).tolist() == []
        assert not ascii_bitmaps(data, 0, len(data))[1]


def test_character_bitmaps_of_ascii_text_are_the_byte_bitmaps():
    from bpebench.algorithms.pipeline.pretokenize_compiled import utf8_class_words

    stage1, stage2 = get_tables()
    data = np.frombuffer(bytes(range(128)) * 3, dtype=np.uint8)
    by_bytes, _ = ascii_bitmaps(data, 0, len(data))
    for name, pattern_id in PATTERN_IDS.items():
        by_chars, splittable = class_bitmaps(utf8_class_words(data, stage1, stage2), pattern_id)
        assert splittable
        if name in ("o200k", "tekken"):
            assert np.array_equal(by_chars, by_bytes)
        else:  # one letter class: the case columns are not read
            assert np.array_equal(by_chars[:, B_UPPER] | by_chars[:, B_LOWER], by_bytes[:, B_UPPER] | by_bytes[:, B_LOWER])
            assert np.array_equal(np.delete(by_chars, [B_UPPER, B_LOWER], axis=1),
                                  np.delete(by_bytes, [B_UPPER, B_LOWER], axis=1))


def test_bitmaps_agree_with_the_unicode_class_table():
    """Each ASCII byte's bitmap bits are the flags the general pre-tokenizer reads for it."""
    stage1, stage2 = get_tables()
    columns = {B_UPPER: ut.F_UP, B_LOWER: ut.F_LO, B_DIGIT: ut.F_N, B_SPACE: ut.F_WS, B_CRLF: ut.F_CRLF,
               B_SLASH: ut.F_SLASH, B_BLANK: ut.F_SPACE, B_APOS: ut.F_APOS}
    data = np.arange(128, dtype=np.uint8)
    for offset in (0, 64, 100):  # whole rows (vector compares) and the byte-by-byte tail
        shifted = np.concatenate([np.full(offset, ord("x"), dtype=np.uint8), data])
        bitmaps, ascii_only = ascii_bitmaps(shifted, 0, len(shifted))
        assert ascii_only
        for b in range(128):
            p = offset + b
            for column, flag in columns.items():
                has = (int(bitmaps[p >> 6, column]) >> (p & 63)) & 1
                expected = int(stage2[(int(stage1[0]) << 8) + b]) & flag != 0
                assert has == expected, (b, column)


@njit
def _compiled_bits(data, i, x):
    return (bits.cttz(x), bits.ctlz(x), bits.load_u64(data, i), bits.ascii_masks(data, i), bits.bit_planes(data, i),
            bits.load_u16(data, i))


@settings(max_examples=200)
@given(st.binary(min_size=72, max_size=72), st.integers(0, 8), st.integers(0, 2**64 - 1))
def test_bit_primitives_equal_their_python_twins(raw, i, x):
    data = np.frombuffer(raw, dtype=np.uint8)
    cttz, ctlz, word, masks, planes, half = _compiled_bits(data, i, np.uint64(x))
    assert cttz == bits._cttz_py(x) and ctlz == bits._ctlz_py(x)
    assert word == bits._load_u64_py(data, i) == int.from_bytes(raw[i:i + 8], "little")
    assert half == bits._load_u16_py(data, i) == int.from_bytes(raw[i:i + 2], "little")
    assert tuple(int(m) for m in masks) == tuple(int(m) for m in bits._ascii_masks_py(data, i))
    assert tuple(int(p) for p in planes) == tuple(int(p) for p in bits._bit_planes_py(data, i))


def test_runs_without_jit():
    """``NUMBA_DISABLE_JIT=1``: the same functions (and the intrinsics' Python twins) as plain Python."""
    code = (
        "import numpy as np, regex, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from bpebench.algorithms.formats.patterns import PATTERNS\n"
        "from bpebench.algorithms.pipeline.pretokenize_compiled import PATTERN_IDS\n"
        "from bpebench.algorithms.pipeline.pretokenize_bits import piece_ends_ascii\n"
        "for t in [\"It's  A'LL 1234 ok!!\\r\\n\\n  x\", 'a' * 70 + ' \\n ' * 30 + './/\\n/x']:\n"
        "    for name, pid in PATTERN_IDS.items():\n"
        "        ends = piece_ends_ascii(np.frombuffer(t.encode(), np.uint8), pid).tolist()\n"
        "        assert ends == np.cumsum([len(p) for p in regex.findall(PATTERNS[name], t)]).tolist(), (name, t)\n"
        "print('ok')\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
