"""The compiled pre-tokenizer must split exactly like ``regex.findall``, with the code points newer than
tiktoken's Unicode read as tiktoken reads them (``unicode_reference``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from bpebench.algorithms.pipeline import unicode_table as ut
from bpebench.algorithms.pipeline.unicode_reference import whole_matches
from bpebench.algorithms.formats.patterns import PATTERNS
from bpebench.algorithms.pipeline.pretokenize_compiled import (
    PATTERN_IDS,
    SUPPORTED,
    CompiledPretokenizer,
    char_nbytes,
    get_tables,
    next_piece_end,
    piece_ends_utf8,
    stdlib_source,
    utf8_class_words,
    utf8_classes,
)

NAMES = sorted(PATTERNS)
COMPILED = {name: CompiledPretokenizer(name) for name in NAMES}


class _Reference:
    """``regex.findall`` of a pattern, the code points newer than the libraries' Unicode matched as
    their stand-ins and the pieces cut from the text itself."""

    def __init__(self, pattern: str) -> None:
        self.compiled = regex.compile(pattern)

    def findall(self, text: str) -> list[str]:
        return whole_matches(self.compiled, text)


REFERENCE = {name: _Reference(PATTERNS[name]) for name in NAMES}

REPO = Path(__file__).resolve().parents[1]


def check_text(text: str) -> None:
    """``split`` and ``split_utf8`` agree with ``regex.findall`` for every pattern."""
    data = text.encode("utf-8", "surrogatepass")
    valid = not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    for name in NAMES:
        expected = REFERENCE[name].findall(text)
        assert COMPILED[name].split(text) == expected, (name, text)
        if valid:
            ends = COMPILED[name].split_utf8(data).tolist()
            got = [data[a:b].decode("utf-8") for a, b in zip([0, *ends[:-1]], ends)]
            assert got == expected, (name, text)


# ---------------------------------------------------------------- hand-written

TRICKY = [
    "",
    "a",
    " ",
    "  ",
    "hello world",
    "Hello  World   again    ",
    "I'm you're he'll we've she'd it's don't DON'T I'M YOU'RE HE'LL WE'VE SHE'D IT'S",
    "'S 'll 'VE 'Re 'rE 'Ll 'lL 'D 'M 'T 's't'",
    "'sam 'llama 'vex 'red 'x ' s ''s '",
    "the cat's toy's owner's",
    "O'Neil's McDonald'S",
    "\u017f 'ſ 'ſt ſ's",  # LONG S folds to s under (?i)
    "Kelvin \u212a 'K",
    "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890 12345678901 123456789012",
    "a1b22c333d4444 x-123.456e+78",
    "\u0661\u0662\u0663\u0664 \u00bd\u00bc \u2163\u2164 \u2460\u2461 \U0001d7ce\U0001d7cf",
    "trailing   ",
    "trailing\n",
    "trailing \n ",
    "  \n  ",
    "\n\n\n",
    "line1\r\nline2\r\n\r\nline3\n\n  indented\n\tTabbed\n",
    "a\r\n\r\n  b",
    "  \r\n  x",
    "x  \r \n\t  y",
    "\t\tword \tword\t\t",
    "def f(x):\n    return x**2  # comment\n\n\nclass A:\n    pass\n",
    "https://example.com/path/to/file.txt?q=1&r=2",
    "a // b /// c\n//\n/\n",
    "!!!\n\n??? ...\r\n",
    "  !!!  ???",
    "中文字符测试，你好世界。日本語のテキスト",
    "مرحبا بالعالم ١٢٣",
    "नमस्ते दुनिया हिन्दी",  # Devanagari with combining vowel signs (Mc/Mn)
    "\u0301\u0301abc \u0301 \u0301x",  # combining marks on their own
    "e\u0301te\u0301 E\u0301TE\u0301 \u00c9t\u00e9",
    "\u01c5ungla \u01c8j \u02b0a\u02b0 \u1d2c\u1d2dx",  # Lt and Lm letters
    "CamelCaseWord ALLCAPS lowerUPPERlower aBC ABc XMLHttpRequest",
    "HELLO'S Hello's hello'S HeLLo'Ll",
    "👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏽 thumbs",
    "a\u200db\u200cc \u200d \ufeffBOM",
    "line\u2028sep\u2029para\u0085nel",
    "nbsp\u00a0here\u00a0\u00a0 \u00a0x \u202f\u205f\u3000wide",
    "\x1c\x1d\x1e\x1f file separators \x1c x\x1fy",
    "\x0b\x0c vertical\x0b tab\x0cform",
    "\x00nul\x01 \x7f",
    " \U00010940\U00010941 \U0001e5d0",  # Unicode 16/17 additions
    "\u1c89\u1c8a TJE",
    "\ud800 lone surrogate \udfff",  # only via split(); not encodable as UTF-8
    "x" * 50 + " " * 20 + "\n" * 5,
    "A" * 30 + "a" * 30,
    "\u0301" * 10 + "X" * 3,
    "\u00a0" * 3 + "a",
    "'" * 5 + "s",
    " 's",
    "\u02b0'S",
]


@pytest.mark.parametrize("text", TRICKY, ids=range(len(TRICKY)))
def test_tricky_strings(text):
    check_text(text)


def test_each_pattern_has_an_id():
    assert SUPPORTED == set(PATTERNS) == set(PATTERN_IDS)


def test_unknown_pattern_raises():
    with pytest.raises(ValueError, match="supported: cl100k, gpt2, llama3, o200k, qwen2"):
        CompiledPretokenizer("unknown")


def test_empty_input():
    for pt in COMPILED.values():
        assert pt.split("") == []
        assert pt.split_utf8(b"").tolist() == []
        assert pt.split_utf8(b"").dtype == np.int64


# ---------------------------------------------------------------- hypothesis

ALPHABET = list(
    "aAzZsStTdDmMlLvVeErR09 '\t\r\n\x0b\x0c\x1c\x1f/!.,-_#"
) + [
    "\u017f",  # LONG S (folds to s)
    "\u212a",  # KELVIN SIGN
    "\u00e9",
    "\u00c9",
    "\u01c5",  # Lt
    "\u02b0",  # Lm
    "\u0301",  # Mn
    "\u093f",  # Mc
    "\u0915",  # Lo
    "\u4e2d",  # Lo
    "\u0661",  # Nd
    "\u00bd",  # No
    "\u2163",  # Nl
    "\U0001f600",
    "\u200d",
    "\ufe0f",
    "\u00a0",
    "\u0085",
    "\u2028",
    "\u3000",
    "\u0130",
    "\u1c89",
    "\U00010940",
]


@settings(deadline=None, max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_property_any_text(text):
    check_text(text)


@settings(deadline=None, max_examples=600)
@given(st.text(alphabet=st.sampled_from(ALPHABET), max_size=40))
def test_property_tricky_alphabet(text):
    check_text(text)


@settings(deadline=None, max_examples=300)
@given(
    st.lists(
        st.one_of(st.text(max_size=3), st.sampled_from(ALPHABET + ["\ud800", "\udbff", "\udc00"])),
        max_size=15,
    ).map("".join)
)
def test_property_surrogates_via_split(text):
    """``split`` on a ``str`` with lone surrogates matches ``regex`` too."""
    for name in NAMES:
        assert COMPILED[name].split(text) == REFERENCE[name].findall(text)


BYTE_TOKENS = [
    b"a", b"S", b"'", b"s", b" ", b"\n", b"\r", b"1", b"/", b"!",
    b"\xe4\xb8\xad", b"\xcc\x81", b"\xc2\xa0", b"\xe2\x80\xa8",
    b"\xf0\x9f\x98\x80",
    # ill-formed: encoded surrogate, truncated sequences, overlongs, lone bytes
    b"\xed\xa0\x80", b"\xe1\x80", b"\xf0\x9f", b"\xf0\x9f\x98", b"\x80", b"\xbf",
    b"\xff", b"\xfe", b"\xc0\xaf", b"\xc1", b"\xe0\x80\x80", b"\xf4\x90\x80\x80",
    b"\xf5", b"\xc2",
]


def check_bytes(data: bytes) -> None:
    """Ill-formed UTF-8: pieces are those of the ``errors='replace'`` decoding."""
    text = data.decode("utf-8", "replace")
    for name in NAMES:
        ends = COMPILED[name].split_utf8(data)
        assert ends.dtype == np.int64
        ends = ends.tolist()
        assert ends == sorted(set(ends))
        assert (ends[-1] == len(data)) if data else ends == []
        got = [data[a:b].decode("utf-8", "replace") for a, b in zip([0, *ends[:-1]], ends)]
        assert got == REFERENCE[name].findall(text), (name, data)


@settings(deadline=None, max_examples=300)
@given(st.binary(max_size=40))
def test_property_random_bytes(data):
    check_bytes(data)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.sampled_from(BYTE_TOKENS), max_size=20).map(b"".join))
def test_property_ill_formed_utf8(data):
    check_bytes(data)


def test_truncated_at_every_position():
    data = "héllo 中文 👍🏽 it's\r\n".encode()
    for k in range(len(data) + 1):
        check_bytes(data[:k])
        check_bytes(data[k:])


# ---------------------------------------------------------------- real text


@pytest.fixture(scope="module")
def stdlib_2mb() -> bytes:
    source = stdlib_source(2_000_000)
    assert len(source) > 1_900_000
    return source


@pytest.mark.parametrize("name", NAMES)
def test_stdlib_source_piece_for_piece(stdlib_2mb, name):
    text = stdlib_2mb.decode("utf-8")
    expected = REFERENCE[name].findall(text)
    assert COMPILED[name].split(text) == expected
    ends = COMPILED[name].split_utf8(stdlib_2mb)
    assert len(ends) == len(expected)
    expected_ends = np.cumsum([len(p.encode("utf-8")) for p in expected])
    assert np.array_equal(ends, expected_ends)


def test_non_ascii_real_text():
    """The non-ASCII path of ``split`` (UTF-32 classes) on a longer mixed text."""
    blob = "".join(TRICKY[:-4]) * 50
    text = blob.replace("\ud800", "").replace("\udfff", "")
    check_text(text)


# ---------------------------------------------------------------- table / API


def test_whitespace_is_regex_whitespace():
    stage1, stage2 = get_tables()
    flat = ut.expand(stage1, stage2)
    ws = set(np.flatnonzero(flat & ut.F_WS).tolist())
    assert ws == {m.start() for m in regex.finditer(r"\s", "".join(map(chr, range(0x110000))))}
    assert not ws & {0x1C, 0x1D, 0x1E, 0x1F}  # unlike str.isspace()
    assert {0x85, 0xA0, 0x2028, 0x2029, 0x3000} <= ws


def test_table_matches_fresh_build():
    stage1, stage2 = get_tables()
    assert np.array_equal(ut.expand(stage1, stage2), ut.build_flat_table())


def test_case_folding_of_contraction_letters():
    stage1, stage2 = get_tables()
    flat = ut.expand(stage1, stage2)
    fold = flat >> ut.FOLD_SHIFT
    assert sorted(np.flatnonzero(fold == ut.FOLD_S).tolist()) == [ord("S"), ord("s"), 0x17F]
    assert int(fold[ord("K")]) == 0 and int(fold[0x212A]) == 0


def test_fused_numba_caller_matches():
    """The njit building blocks compose inside another numba function."""

    @njit
    def fused_piece_lengths(data, pid, stage1, stage2):
        cls = utf8_class_words(data, stage1, stage2)
        n = cls.shape[0]
        out = np.empty(n, np.int64)
        m = 0
        p = 0
        while p < n:
            e = next_piece_end(cls, p, pid)
            nbytes = 0
            for k in range(p, e):
                nbytes += char_nbytes(cls[k])
            out[m] = nbytes
            m += 1
            p = e
        return out[:m]

    stage1, stage2 = get_tables()
    data = np.frombuffer("It's 12345 héllo\r\n\n  世界 👍🏽\xff".encode("utf-8", "replace"), np.uint8)
    for name, pid in PATTERN_IDS.items():
        ends = piece_ends_utf8(data, pid, stage1, stage2)
        assert np.array_equal(np.cumsum(fused_piece_lengths(data, pid, stage1, stage2)), ends)
        cls, starts = utf8_classes(data, stage1, stage2)
        assert starts[-1] == len(data) and len(starts) == len(cls) + 1


def test_runs_without_jit():
    """``NUMBA_DISABLE_JIT=1`` executes the same functions as plain Python."""
    code = (
        "import regex\n"
        "from bpebench.algorithms.formats.patterns import PATTERNS\n"
        "from bpebench.algorithms.pipeline.pretokenize_compiled import CompiledPretokenizer\n"
        "for name in sorted(PATTERNS):\n"
        "    pt = CompiledPretokenizer(name)\n"
        "    for t in [\"It's  A'LL 1234 ok!!\\r\\n\\n  x\", 'Ünïcode \\u0301x \\u4e2d 👍 \\u2028 ']:\n"
        "        assert pt.split(t) == regex.findall(PATTERNS[name], t), (name, t)\n"
        "        b = t.encode()\n"
        "        e = pt.split_utf8(b + b'\\xff').tolist()\n"
        "        assert e[-1] == len(b) + 1\n"
        "print('ok')\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_damaged_unicode_table_cache_is_rebuilt(tmp_path, monkeypatch, capsys, damage):
    """A damaged table file (cut short, a flipped bit, not ours) is discarded with one line and rebuilt
    from the regex module, never used and never an error on every later encode."""
    good = ut.load_tables(use_cache=True)
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    ut.load_tables(use_cache=True)  # writes the cache under tmp_path
    path = ut.cache_path()
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        middle = len(raw) // 2
        path.write_bytes(raw[:middle] + bytes([raw[middle] ^ 0x40]) + raw[middle + 1:])
    else:
        path.write_bytes(b"PK\x03\x04 not one of ours")
    capsys.readouterr()
    stage1, stage2 = ut.load_tables(use_cache=True)
    assert np.array_equal(stage1, good[0]) and np.array_equal(stage2, good[1])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "discarded a damaged cache file" in err[0]
    again = ut.load_tables(use_cache=True)  # the rebuilt file is sound
    assert np.array_equal(again[1], good[1]) and capsys.readouterr().err == ""
    # mapped from the file, as the kernels take them (the ahead-of-time module refuses others)
    assert all(a.flags.aligned and a.flags.c_contiguous and a.flags.writeable for a in again)
