"""Compiled (numba) pre-tokenizer that splits exactly like ``regex.findall``.

For the six patterns in :mod:`bpebench.algorithms.formats.patterns` (``gpt2``, ``cl100k``,
``o200k``, ``llama3``, ``qwen2``, ``tekken``) this module reproduces
``regex.findall(PATTERNS[name], text)`` piece for piece, without a regex
engine: UTF-8 is decoded in numba, each code point is looked up in a compact
two-level class table (:mod:`bpebench.algorithms.pipeline.unicode_table`), and every pattern's
alternatives are implemented by hand as a small state machine that follows the
backtracking engine's rules (leftmost alternative first, greedy quantifiers
backing off one step at a time, possessive quantifiers never backing off,
``(?!\\S)`` look-ahead, ``$`` = end of string).

Python API
----------
``CompiledPretokenizer(name)``
    ``split(text) -> list[str]`` (== ``regex.findall(PATTERNS[name], text)``),
    ``split_utf8(data) -> np.ndarray[int64]``: piece END byte offsets; piece
    ``i`` is ``data[ends[i-1]:ends[i]]`` (``ends[-1] == len(data)``).
    An unknown name raises ``ValueError`` listing :data:`SUPPORTED`.

numba API (all ``@njit(cache=True)``, callable from other numba code)
--------------------------------------------------------------------
``stage1, stage2 = get_tables()`` (Python) gives the class table arrays;
``PATTERN_IDS[name]`` gives the integer ``pattern_id``.

``piece_ends_utf8(data, pattern_id, stage1, stage2) -> int64[:]``
    ``data`` is a ``uint8[:]`` array of UTF-8; returns piece end byte offsets.
``utf8_class_words(data, stage1, stage2) -> uint16[:n]``
    decode once: one class word per character; bits 10-11 carry the
    character's UTF-8 length, read with ``char_nbytes(word)``.
``utf8_classes(data, stage1, stage2) -> (cls uint16[:n], starts int64[:n+1])``
    the same plus each character's start byte offset (``starts[n] == len(data)``).
``next_piece_end(cls, pos, pattern_id) -> int``
    character index where the piece starting at character ``pos`` ends
    (``0 <= pos < len(cls)``; result in ``pos+1 .. len(cls)``). A fused
    "pre-tokenize + BPE" loop does ``cls = utf8_class_words(...)``, then
    repeatedly ``e = next_piece_end(cls, p, pid)``, sums ``char_nbytes`` over
    ``cls[p:e]`` to get the piece's bytes, encodes them, ``p = e``.
``piece_ends(cls, pattern_id) -> int64[:]``
    all piece ends as character indices.

Complexity and exactness
------------------------
Linear time: every alternative is a forward scan over a run of one class;
the only back-offs (``U*`` before ``L+`` in o200k, the last ``[\\r\\n]`` in a
whitespace run, ``\\s+(?!\\S)`` giving back one character) re-examine a run at
most a constant number of times. Memory: 2 bytes per input character
(class word) plus 8 per piece.

Exact with respect to the ``regex`` module for the six patterns on valid
UTF-8 and on any Python ``str`` (``split`` also accepts lone surrogates; they
are "other" characters as in ``regex``). Tested against ``regex.findall``
with hypothesis and a few MB of real text.

Unicode version: the class table is generated from the ``regex`` module
itself (it is the reference), not from ``unicodedata``: ``regex`` 2026.11.15
implements Unicode 17.0 while Python 3.11's ``unicodedata`` is 14.0 (about
27,000 code points would be classified differently). See
:mod:`bpebench.algorithms.pipeline.unicode_table` (cached under ``~/.cache/bpebench``).
``regex``'s ``\\s`` is Unicode ``White_Space``: it does *not* contain
U+001C..U+001F (``str.isspace`` does).

Invalid UTF-8 (``split_utf8`` / ``utf8_classes``)
------------------------------------------------
Each maximal ill-formed subsequence (the "maximal subpart" practice of the
Unicode standard, chapter 3, which CPython's decoder follows) counts as one
character of class "other" (``[^\\s\\p{L}\\p{N}]``, like U+FFFD). Hence the
pieces are exactly those of ``regex.findall(pattern, data.decode("utf-8",
"replace"))``, with each piece's bytes decoding (with ``"replace"``) to that
piece. Encoded surrogates (``ED A0..BF xx``) are ill-formed too. Decoding
always advances, so it never loops or reads out of bounds.

``NUMBA_DISABLE_JIT=1`` runs the same functions as plain Python (slowly).
The first use compiles for ~20-30 s; numba caches the machine code on disk.

Speed: ``python -m bpebench.algorithms.pipeline.pretokenize_compiled`` benchmarks ``split_utf8``
against ``regex.findall`` on 2 MB of stdlib source and of docstring prose.
"""

from __future__ import annotations

import numpy as np
from ..kernels.jit import njit

from ..formats.patterns import PATTERNS
from .unicode_table import (
    F_APOS,
    F_ASCII_LOW,
    F_CRLF,
    F_L,
    F_LO,
    F_N,
    F_SLASH,
    F_SPACE,
    F_UP,
    F_WS,
    FOLD_D,
    FOLD_E,
    FOLD_L,
    FOLD_M,
    FOLD_R,
    FOLD_S,
    FOLD_SHIFT,
    FOLD_T,
    FOLD_V,
    LEN_SHIFT,
    load_tables,
)

__all__ = [
    "SUPPORTED",
    "PATTERN_IDS",
    "CompiledPretokenizer",
    "get_tables",
    "piece_ends_utf8",
    "utf8_classes",
    "utf8_class_words",
    "char_nbytes",
    "next_piece_end",
    "piece_ends",
]

GPT2, CL100K, O200K, LLAMA3, QWEN2, TEKKEN = 0, 1, 2, 3, 4, 5

#: pattern name -> ``pattern_id`` for the numba functions.
PATTERN_IDS: dict[str, int] = {
    "gpt2": GPT2,
    "cl100k": CL100K,
    "o200k": O200K,
    "llama3": LLAMA3,
    "qwen2": QWEN2,
    "tekken": TEKKEN,
}

#: Pattern names this module implements.
SUPPORTED = frozenset(PATTERN_IDS)

_LNW = F_L | F_N | F_WS  # a character with none of these is "other"
_NOT_PREFIX = F_CRLF | F_L | F_N  # [^\r\n\p{L}\p{N}] = none of these


# --------------------------------------------------------------------------
# UTF-8 decoding
# --------------------------------------------------------------------------


@njit(cache=True)
def utf8_class_words(data, stage1, stage2):
    """Decode UTF-8 ``data`` (uint8 array) into one class word per character.

    Bits 10-11 of each word hold the character's UTF-8 length minus one
    (``char_nbytes``), so byte offsets can be recovered without a separate
    offsets array. Ill-formed input: every maximal ill-formed subpart is one
    character with class 0 ("other") and the subpart's length (1..3).
    """
    nb = data.shape[0]
    cls = np.empty(nb, np.uint16)
    ascii_base = np.int64(stage1[0]) << 8
    i = 0
    k = 0
    while i < nb:
        b0 = np.int64(data[i])
        if b0 < 0x80:
            cls[k] = stage2[ascii_base | b0]
            i += 1
            k += 1
            continue
        cp = -1
        ln = 1  # bytes consumed (for an ill-formed subpart: its length)
        if 0xC2 <= b0 <= 0xDF:
            if i + 1 < nb and (data[i + 1] & 0xC0) == 0x80:
                cp = ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F)
                ln = 2
        elif 0xE0 <= b0 <= 0xEF:
            lo = 0x80
            hi = 0xBF
            if b0 == 0xE0:
                lo = 0xA0
            elif b0 == 0xED:
                hi = 0x9F  # ED A0..BF would be a surrogate: ill-formed
            if i + 1 < nb and lo <= data[i + 1] <= hi:
                ln = 2
                if i + 2 < nb and (data[i + 2] & 0xC0) == 0x80:
                    cp = (
                        ((b0 & 0x0F) << 12)
                        | ((np.int64(data[i + 1]) & 0x3F) << 6)
                        | (np.int64(data[i + 2]) & 0x3F)
                    )
                    ln = 3
        elif 0xF0 <= b0 <= 0xF4:
            lo = 0x80
            hi = 0xBF
            if b0 == 0xF0:
                lo = 0x90
            elif b0 == 0xF4:
                hi = 0x8F
            if i + 1 < nb and lo <= data[i + 1] <= hi:
                ln = 2
                if i + 2 < nb and (data[i + 2] & 0xC0) == 0x80:
                    ln = 3
                    if i + 3 < nb and (data[i + 3] & 0xC0) == 0x80:
                        cp = (
                            ((b0 & 0x07) << 18)
                            | ((np.int64(data[i + 1]) & 0x3F) << 12)
                            | ((np.int64(data[i + 2]) & 0x3F) << 6)
                            | (np.int64(data[i + 3]) & 0x3F)
                        )
                        ln = 4
        c = 0
        if cp >= 0:
            c = np.int64(stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)])
        cls[k] = c | ((ln - 1) << LEN_SHIFT)
        i += ln
        k += 1
    return cls[:k]


@njit(cache=True, inline="always")
def char_nbytes(c):
    """UTF-8 byte length of a character from its :func:`utf8_class_words` word."""
    return ((np.int64(c) >> LEN_SHIFT) & 3) + 1


@njit(cache=True)
def utf8_classes(data, stage1, stage2):
    """Like :func:`utf8_class_words`, plus each character's start byte offset.

    Returns ``(cls, starts)`` with ``starts[n] == len(data)``.
    """
    cls = utf8_class_words(data, stage1, stage2)
    n = cls.shape[0]
    starts = np.empty(n + 1, np.int64)
    b = 0
    for k in range(n):
        starts[k] = b
        b += char_nbytes(cls[k])
    starts[n] = b
    return cls, starts


@njit(cache=True)
def _codepoint_class_words(cps, stage1, stage2):
    n = cps.shape[0]
    cls = np.empty(n, np.uint16)
    for k in range(n):
        cp = np.int64(cps[k])
        cls[k] = stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)]
    return cls


def codepoint_classes(text: str, stage1: np.ndarray, stage2: np.ndarray) -> np.ndarray:
    """Class words of a Python ``str`` (one per code point; lone surrogates allowed)."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return _codepoint_class_words(cps, stage1, stage2)


# --------------------------------------------------------------------------
# Building blocks (character indices into the class array)
# --------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _run(cls, n, i, mask):
    """End of the run of characters having any bit of ``mask``, from ``i``."""
    while i < n and (cls[i] & mask) != 0:
        i += 1
    return i


@njit(cache=True, inline="always")
def _run_other(cls, n, i):
    """End of the run of ``[^\\s\\p{L}\\p{N}]`` characters from ``i``."""
    while i < n and (cls[i] & _LNW) == 0:
        i += 1
    return i


@njit(cache=True, inline="always")
def _fold(c):
    return (np.int64(c) >> FOLD_SHIFT) & 15


@njit(cache=True, inline="always")
def _contraction_tail(cls, n, i, exact):
    """After an apostrophe at ``i - 1``: end of ``[sdmt]|ll|ve|re`` at ``i``, or -1.

    ``exact``: ASCII lowercase only (gpt2); otherwise case-insensitive as
    ``regex`` folds (``(?i:...)``; e.g. U+017F LONG S matches ``s``).
    """
    if i >= n:
        return -1
    c1 = cls[i]
    if exact and (c1 & F_ASCII_LOW) == 0:
        return -1
    f1 = _fold(c1)
    if f1 == FOLD_S or f1 == FOLD_D or f1 == FOLD_M or f1 == FOLD_T:
        return i + 1
    if i + 1 < n:
        c2 = cls[i + 1]
        if exact and (c2 & F_ASCII_LOW) == 0:
            return -1
        f2 = _fold(c2)
        if (f1 == FOLD_L and f2 == FOLD_L) or ((f1 == FOLD_V or f1 == FOLD_R) and f2 == FOLD_E):
            return i + 2
    return -1


@njit(cache=True, inline="always")
def _whitespace(cls, n, p, dollar_first, crlf):
    """Whitespace alternatives at ``p`` (``cls[p]`` is ``\\s``).

    gpt2:    ``\\s++$ | \\s+(?!\\S) | \\s``
    cl100k:  ``\\s++$ | \\s*[\\r\\n] | \\s+(?!\\S) | \\s``
    o200k/llama3/qwen2: ``\\s*[\\r\\n]+ | \\s+(?!\\S) | \\s+``

    ``\\s*[\\r\\n]`` and ``\\s*[\\r\\n]+`` both end right after the last CR/LF of
    the whitespace run (greedy ``\\s*`` backs off to it; the character after
    it is not CR/LF). ``\\s+(?!\\S)`` is the whole run at end of text, else the
    run minus its last character (needs >= 2). ``$`` can only hold at the end
    of the text here, since ``\\s++`` has eaten any final ``\\n``.
    """
    q = _run(cls, n, p, F_WS)
    if dollar_first and q == n:
        return n
    if crlf:
        j = q - 1
        while j >= p:
            if (cls[j] & F_CRLF) != 0:
                return j + 1
            j -= 1
    if q == n:
        return n
    if q - p >= 2:
        return q - 1
    return p + 1


@njit(cache=True, inline="always")
def _o200k_word1(cls, n, s):
    """``[UP]*[LO]+`` at ``s`` (greedy ``[UP]*`` backing off); end or -1."""
    u = _run(cls, n, s, F_UP)
    k = u
    while k >= s:
        if k < n and (cls[k] & F_LO) != 0:
            return _run(cls, n, k, F_LO)
        k -= 1
    return -1


@njit(cache=True, inline="always")
def _suffix_contraction(cls, n, e):
    """Optional ``(?i:'s|'t|'re|'ve|'m|'ll|'d)?`` at ``e``."""
    if e < n and (cls[e] & F_APOS) != 0:
        t = _contraction_tail(cls, n, e + 1, False)
        if t >= 0:
            return t
    return e


# --------------------------------------------------------------------------
# Per-pattern matchers: end (character index) of the piece starting at p < n
# --------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _gpt2(cls, n, p):
    # '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
    c = cls[p]
    if (c & F_APOS) != 0:
        t = _contraction_tail(cls, n, p + 1, True)
        if t >= 0:
            return t
    if (c & F_SPACE) != 0 and p + 1 < n:
        c1 = cls[p + 1]
        if (c1 & F_L) != 0:
            return _run(cls, n, p + 1, F_L)
        if (c1 & F_N) != 0:
            return _run(cls, n, p + 1, F_N)
        if (c1 & _LNW) == 0:
            return _run_other(cls, n, p + 1)
    if (c & F_L) != 0:
        return _run(cls, n, p, F_L)
    if (c & F_N) != 0:
        return _run(cls, n, p, F_N)
    if (c & _LNW) == 0:
        return _run_other(cls, n, p)
    return _whitespace(cls, n, p, True, False)


@njit(cache=True, inline="always")
def _digits(cls, n, p, maxlen):
    e = p + 1
    while e < n and e - p < maxlen and (cls[e] & F_N) != 0:
        e += 1
    return e


@njit(cache=True, inline="always")
def _cl100k_llama(cls, n, p, pid):
    # cl100k: '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+
    #         | ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
    # llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
    #         | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    # qwen2:  llama3 with \p{N} instead of \p{N}{1,3}
    # The (non-)possessive differences do not change these matches: the optional
    # prefix excludes \p{L}, and nothing follows the other quantifiers.
    c = cls[p]
    if (c & F_APOS) != 0:
        t = _contraction_tail(cls, n, p + 1, False)
        if t >= 0:
            return t
    if (c & F_L) != 0:
        return _run(cls, n, p, F_L)
    if (c & _NOT_PREFIX) == 0 and p + 1 < n and (cls[p + 1] & F_L) != 0:
        return _run(cls, n, p + 1, F_L)
    if (c & F_N) != 0:
        return _digits(cls, n, p, 1 if pid == QWEN2 else 3)
    if (c & F_SPACE) != 0 and p + 1 < n and (cls[p + 1] & _LNW) == 0:
        return _run(cls, n, _run_other(cls, n, p + 1), F_CRLF)
    if (c & _LNW) == 0:
        return _run(cls, n, _run_other(cls, n, p), F_CRLF)
    if pid == CL100K:
        return _whitespace(cls, n, p, True, True)
    return _whitespace(cls, n, p, False, True)


@njit(cache=True, inline="always")
def _word_end(cls, n, e, contractions):
    return _suffix_contraction(cls, n, e) if contractions else e


@njit(cache=True, inline="always")
def _o200k(cls, n, p, tekken):
    # [^\r\n\p{L}\p{N}]?[UP]*[LO]+C? | [^\r\n\p{L}\p{N}]?[UP]+[LO]*C? | \p{N}{1,3}
    # | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
    # UP = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], LO = [\p{Ll}\p{Lm}\p{Lo}\p{M}],
    # C = (?i:'s|'t|'re|'ve|'m|'ll|'d). Note \p{M} is in UP/LO *and* in the
    # prefix class, so a mark at p can be the prefix or the first letter.
    # tekken: no C, and \p{N} instead of \p{N}{1,3}.
    c = cls[p]
    contractions = not tekken
    prefix = (c & _NOT_PREFIX) == 0 and p + 1 < n
    if prefix:
        e = _o200k_word1(cls, n, p + 1)
        if e >= 0:
            return _word_end(cls, n, e, contractions)
    e = _o200k_word1(cls, n, p)
    if e >= 0:
        return _word_end(cls, n, e, contractions)
    if prefix and (cls[p + 1] & F_UP) != 0:
        return _word_end(cls, n, _run(cls, n, _run(cls, n, p + 1, F_UP), F_LO), contractions)
    if (c & F_UP) != 0:
        return _word_end(cls, n, _run(cls, n, _run(cls, n, p, F_UP), F_LO), contractions)
    if (c & F_N) != 0:
        return _digits(cls, n, p, 1 if tekken else 3)
    if (c & F_SPACE) != 0 and p + 1 < n and (cls[p + 1] & _LNW) == 0:
        return _run(cls, n, _run_other(cls, n, p + 1), F_CRLF | F_SLASH)
    if (c & _LNW) == 0:
        return _run(cls, n, _run_other(cls, n, p), F_CRLF | F_SLASH)
    return _whitespace(cls, n, p, False, True)


@njit(cache=True, _nrt=False)
def next_piece_end(cls, pos, pattern_id):
    """End (character index) of the piece that starts at character ``pos``.

    ``cls`` is the class array from :func:`utf8_classes` (or
    :func:`codepoint_classes`); requires ``0 <= pos < len(cls)``. Always
    returns a value in ``pos + 1 .. len(cls)``.
    """
    n = cls.shape[0]
    if pattern_id == O200K or pattern_id == TEKKEN:
        return _o200k(cls, n, pos, pattern_id == TEKKEN)
    if pattern_id == GPT2:
        return _gpt2(cls, n, pos)
    return _cl100k_llama(cls, n, pos, pattern_id)


@njit(cache=True)
def piece_ends(cls, pattern_id):
    """All piece ends (character indices) for the class array ``cls``."""
    n = cls.shape[0]
    ends = np.empty(n, np.int64)
    m = 0
    p = 0
    while p < n:
        p = next_piece_end(cls, p, pattern_id)
        ends[m] = p
        m += 1
    return ends[:m].copy()


@njit(cache=True)
def piece_ends_utf8(data, pattern_id, stage1, stage2):
    """Piece end byte offsets of UTF-8 ``data`` (``uint8[:]``) for ``pattern_id``."""
    cls = utf8_class_words(data, stage1, stage2)
    n = cls.shape[0]
    ends = np.empty(n, np.int64)
    m = 0
    p = 0
    b = 0
    while p < n:
        e = next_piece_end(cls, p, pattern_id)
        for k in range(p, e):
            b += char_nbytes(cls[k])
        ends[m] = b
        m += 1
        p = e
    return ends[:m].copy()


# --------------------------------------------------------------------------
# Python front end
# --------------------------------------------------------------------------

_TABLES: tuple[np.ndarray, np.ndarray] | None = None


def get_tables() -> tuple[np.ndarray, np.ndarray]:
    """``(stage1, stage2)`` class tables (built from ``regex`` once, cached on disk)."""
    global _TABLES
    if _TABLES is None:
        _TABLES = load_tables()
    return _TABLES


class CompiledPretokenizer:
    """Split text like ``regex.findall(PATTERNS[pattern_name], text)``, compiled."""

    def __init__(self, pattern_name: str):
        if pattern_name not in SUPPORTED:
            raise ValueError(
                f"unsupported pattern {pattern_name!r}; supported: {', '.join(sorted(SUPPORTED))}"
            )
        self.name = pattern_name
        self.pattern = PATTERNS[pattern_name]
        self.pattern_id = PATTERN_IDS[pattern_name]
        self.stage1, self.stage2 = get_tables()

    def __repr__(self) -> str:
        return f"CompiledPretokenizer({self.name!r})"

    def split(self, text: str) -> list[str]:
        """The pieces of ``text`` (identical to ``regex.findall``)."""
        if not text:
            return []
        if text.isascii():  # O(1) in CPython; byte offsets are character offsets
            ends = self.split_utf8(text.encode("ascii")).tolist()
        else:
            cls = codepoint_classes(text, self.stage1, self.stage2)
            ends = piece_ends(cls, self.pattern_id).tolist()
        return [text[a:b] for a, b in zip([0, *ends[:-1]], ends)]

    def split_utf8(self, data) -> np.ndarray:
        """Piece END byte offsets (``int64``) of UTF-8 ``data`` (bytes-like or uint8 array)."""
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        if arr.dtype != np.uint8 or arr.ndim != 1:
            raise TypeError("split_utf8 expects bytes-like data or a 1-D uint8 array")
        return piece_ends_utf8(arr, self.pattern_id, self.stage1, self.stage2)

    def split_utf8_pieces(self, data: bytes) -> list[bytes]:
        """Convenience: the byte pieces of ``data``."""
        ends = self.split_utf8(data).tolist()
        return [bytes(data[a:b]) for a, b in zip([0, *ends[:-1]], ends)]


# --------------------------------------------------------------------------
# Benchmark: python -m bpebench.algorithms.pipeline.pretokenize_compiled [--mb 2] [--repeat 5]
# --------------------------------------------------------------------------


def _stdlib_files():
    import sysconfig
    from pathlib import Path

    root = Path(sysconfig.get_paths()["stdlib"])
    for f in sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts):
        try:
            raw = f.read_bytes()
            raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield raw


def _cut(data: bytes, limit: int) -> bytes:
    """First ``limit`` bytes, cut back to a UTF-8 character boundary."""
    return data[:limit].decode("utf-8", "ignore").encode("utf-8")


def stdlib_source(limit_bytes: int) -> bytes:
    """The first ``limit_bytes`` of all stdlib ``.py`` files (sorted by path), concatenated."""
    parts: list[bytes] = []
    total = 0
    for raw in _stdlib_files():
        parts.append(raw)
        total += len(raw)
        if total >= limit_bytes:
            break
    return _cut(b"".join(parts), limit_bytes)


def stdlib_prose(limit_bytes: int) -> bytes:
    """``limit_bytes`` of English prose: the stdlib's docstrings (modules, classes, functions)."""
    import ast
    import warnings

    docs: list[str] = []
    total = 0
    for raw in _stdlib_files():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # invalid escapes in old stdlib files
                tree = ast.parse(raw)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                d = ast.get_docstring(node)
                if d:
                    docs.append(d)
                    total += len(d) + 2
        if total >= limit_bytes:
            break
    return _cut("\n\n".join(docs).encode("utf-8"), limit_bytes)


def _bench(argv: list[str] | None = None) -> None:
    import argparse
    import time

    import regex

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=2.0, help="corpus size in MB (default 2)")
    ap.add_argument("--repeat", type=int, default=5, help="best of N runs (default 5)")
    ap.add_argument("--patterns", default="cl100k,o200k")
    args = ap.parse_args(argv)
    limit = int(args.mb * 1e6)
    for cname, data in (("stdlib .py", stdlib_source(limit)), ("docstring prose", stdlib_prose(limit))):
        text = data.decode("utf-8")
        for name in args.patterns.split(","):
            pt = CompiledPretokenizer(name)
            pt.split_utf8(data[:1000])  # compile / load cache
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                ends = pt.split_utf8(data)
                best = min(best, time.perf_counter() - t0)
            bsplit = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                pieces = pt.split(text)
                bsplit = min(bsplit, time.perf_counter() - t0)
            pat = regex.compile(pt.pattern)
            t0 = time.perf_counter()
            ref = pat.findall(text)
            tref = time.perf_counter() - t0
            assert pieces == ref and len(ends) == len(ref)
            mb = len(data) / 1e6
            print(
                f"{cname:16s} {name:7s} {mb:5.2f} MB  split_utf8 {mb / best:7.1f} MB/s  "
                f"split(str) {mb / bsplit:6.1f} MB/s  regex.findall {mb / tref:5.1f} MB/s  "
                f"({len(ref)} pieces)"
            )


if __name__ == "__main__":
    _bench()
