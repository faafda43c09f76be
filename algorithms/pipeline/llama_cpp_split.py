r"""llama.cpp's pre-tokenizer: a list of regexes applied in sequence, with llama.cpp's semantics.

llama.cpp (``unicode_regex_split`` in ``src/unicode.cpp``) differs from HF and tiktoken
in how it runs a pre-tokenizer regex, and this module reproduces it:

* **Sequence**: each regex splits every piece the previous one produced; text a
  regex does not match stays a piece of its own (one piece per unmatched gap).
* **Categories, not properties**: before a regex that uses ``\p{N}``, ``\p{L}``,
  ``\p{P}``, ``\p{M}``, ``\p{S}`` (or ``\p{Lu}`` ... ``\p{Lo}``) runs, every non-ASCII code
  point is replaced by one placeholder per general category and the ``\p{..}`` by
  a class of that placeholder plus the ASCII members (``std::regex`` cannot read
  Unicode properties). So ``\p{Lu}`` matches *every* letter (all five letter classes
  are one placeholder), and non-ASCII whitespace becomes ``\v``. A regex without
  categories runs on the code points, non-ASCII whitespace again replaced by ``\v``.
* **ECMAScript** (``std::regex``): ``\s``, ``\d``, ``\w`` are ASCII-only, ``$`` is the end of
  the piece only, zero-width matches end pieces of length 0 (dropped).
* **Hand-written splitters**: llama.cpp recognises a few exact regex strings and
  runs C++ code instead. For GPT-2, Llama-3, Qwen2 and Qwen3.5 that code is the
  regex with llama.cpp's whitespace set, which is what the emulation above runs
  (``tests/test_llama_cpp.py`` checks it against llama.cpp's ids). Kimi-K2's
  splitter (``\p{Han}+``) and the AFMoE digit grouping (``\p{AFMoE_digits}``, also
  used for tiny_aya's ``\d{1,3}(?=(?:\d{3})*\b)``) are not regexes at all; they are
  ported here as they are written, quirks included: AFMoE glues the text before a
  digit run to the run's first group, Kimi-K2's words are letters of any case with
  marks and Han characters excluded.

Unicode categories come from :mod:`unicodedata` (Python 3.11: Unicode 14.0;
llama.cpp's generated table is Unicode 15.1): code points assigned in Unicode 15.0
or 15.1 are "undefined" here and letters/marks/... there.

Complexity: linear in the text per regex for the table's regexes (``re`` with no
nested quantifiers over overlapping classes); the ported splitters are linear.
Exact against llama.cpp on everything ``tests/test_llama_cpp.py`` and
``docs/gguf-tiktoken.md`` list, apart from the Unicode-version note above.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from functools import lru_cache

import numpy as np

from bpebench.errors import BpebenchError
from ..formats.llama_cpp_pre import PRE_TYPES

# Placeholder code points of the collapsed text, one per category llama.cpp distinguishes.
_OTHER, _NUMBER, _LETTER, _PUNCT, _MARK, _SYMBOL = 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5
_VTAB = 0x0B  # what non-ASCII whitespace becomes
_CATEGORY_CODE = {"N": _NUMBER, "L": _LETTER, "P": _PUNCT, "M": _MARK, "S": _SYMBOL}
#: the category names llama.cpp can collapse, and the one letter class they all become
_COLLAPSIBLE = {"N": "N", "L": "L", "P": "P", "M": "M", "S": "S",
                "Lu": "L", "Ll": "L", "Lt": "L", "Lm": "L", "Lo": "L"}
#: Unicode's White_Space code points (the set llama.cpp's table marks as whitespace)
WHITESPACE = frozenset([*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                        0x202F, 0x205F, 0x3000])

# The hand-written splitters llama.cpp substitutes for these exact regex strings.
KIMI_K2 = r"\p{Han}+"
AFMOE_DIGITS = r"\p{AFMoE_digits}"
TINY_AYA_DIGITS = r"\d{1,3}(?=(?:\d{3})*\b)"


@lru_cache(maxsize=1)
def category_codes() -> np.ndarray:
    """uint8[0x110000]: the collapsed placeholder of every code point (whitespace -> ``\\v``)."""
    category = unicodedata.category
    table = np.frombuffer(bytes(_CATEGORY_CODE.get(category(chr(c))[0], _OTHER) for c in range(0x110000)),
                          dtype=np.uint8).copy()
    table[list(WHITESPACE)] = _VTAB
    return table


def _codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def collapsed(text: str) -> str:
    """``text`` with every non-ASCII code point replaced by its category placeholder."""
    cps = _codepoints(text)
    out = np.where(cps < 128, cps, category_codes()[cps]).astype(np.uint32)
    return out.tobytes().decode("utf-32-le")


def whitespace_as_vtab(text: str) -> str:
    """``text`` with non-ASCII whitespace replaced by ``\\v`` (what llama.cpp feeds ``std::wregex``)."""
    cps = _codepoints(text)
    ws = (cps >= 128) & (category_codes()[cps] == _VTAB)
    if not ws.any():
        return text
    return np.where(ws, _VTAB, cps).astype(np.uint32).tobytes().decode("utf-32-le")


# ----------------------------------------------------------------------------- regex translation
@lru_cache(maxsize=None)
def _ascii_members(category: str) -> str:
    """The printable ASCII characters of a general category, escaped for a ``re`` class."""
    return "".join(re.escape(chr(c)) for c in range(0x21, 0x7F) if unicodedata.category(chr(c))[0] == category)


def uses_categories(regex_text: str) -> bool:
    return any(f"\\p{{{name}}}" in regex_text for name in _COLLAPSIBLE)


def collapse_regex(regex_text: str) -> str:
    r"""Replace ``\p{X}`` by a class of X's placeholder and ASCII members, as llama.cpp does
    (its "inside a class" test looks only at the previous character, and so does this one)."""
    out: list[str] = []
    inside = False
    i = 0
    while i < len(regex_text):
        c = regex_text[i]
        if c == "[" and (i == 0 or regex_text[i - 1] != "\\"):
            inside = True
        elif c == "]" and inside and regex_text[i - 1] != "\\":
            inside = False
        elif regex_text.startswith("\\p{", i):
            close = regex_text.find("}", i + 3)
            name = regex_text[i + 3:close] if close != -1 and close <= i + 10 else None
            if name in _COLLAPSIBLE:
                members = re.escape(chr(_CATEGORY_CODE[_COLLAPSIBLE[name]])) + _ascii_members(_COLLAPSIBLE[name])
                out.append(members if inside else f"[{members}]")
                i = close + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def ecmascript_to_python(regex_text: str) -> str:
    """The few ECMAScript spellings that mean something else to ``re``: ``$`` (end of input only)."""
    out: list[str] = []
    inside = escaped = False
    for c in regex_text:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "[" and not inside:
            inside = True
        elif c == "]" and inside:
            inside = False
        elif c == "$" and not inside:
            out.append(r"\Z")
            continue
        out.append(c)
    return "".join(out)


@lru_cache(maxsize=256)
def compile_step(regex_text: str):
    """(compiled ``re`` pattern, runs on the collapsed text?) for one regex of a list."""
    if uses_categories(regex_text):
        if any(ord(c) >= 128 for c in regex_text):
            raise BpebenchError(
                f"llama.cpp cannot run {regex_text!r}: a regex with both Unicode categories and non-ASCII characters"
            )
        python_text, on_collapsed = ecmascript_to_python(collapse_regex(regex_text)), True
    else:
        python_text, on_collapsed = ecmascript_to_python(regex_text), False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # "possible nested set" etc.: ECMAScript reads them plainly
            return re.compile(python_text, re.ASCII), on_collapsed
    except re.error as exc:
        raise BpebenchError(f"llama.cpp pre-tokenizer regex {regex_text!r} does not compile: {exc}") from None


# ----------------------------------------------------------------------------- splitting
Spans = list[tuple[int, int]]


def _split_regex(haystack: str, pattern, spans: Spans) -> Spans:
    """One regex over each span: matches and the gaps between them, as llama.cpp keeps both."""
    out: Spans = []
    for start, end in spans:
        position = start
        for match in pattern.finditer(haystack[start:end]):
            a, b = start + match.start(), start + match.end()
            if a > position:
                out.append((position, a))
            if b > a:
                out.append((a, b))
            position = b
        if position < end:
            out.append((position, end))
    return out


def is_han(cp: int) -> bool:
    """llama.cpp's Han ranges (CJK ideographs, extensions A-F, compatibility ideographs)."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2EBEF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _lower_contraction(cp: int) -> int:
    # llama.cpp lower-cases the contraction letters with its case table; only ASCII maps onto them
    return cp + 32 if 0x41 <= cp <= 0x5A else cp


def _contraction_length(cps, pos: int, end: int) -> int:
    """2 or 3 when ``'s 't 'm 'd`` / ``'re 've 'll`` (any case) starts at ``pos``, else 0."""
    if cps[pos] != 0x27 or pos + 1 >= end:
        return 0
    nxt = _lower_contraction(cps[pos + 1])
    if nxt in (0x73, 0x74, 0x6D, 0x64):  # s t m d
        return 2
    if pos + 2 < end:
        pair = (nxt, _lower_contraction(cps[pos + 2]))
        if pair in ((0x72, 0x65), (0x76, 0x65), (0x6C, 0x6C)):  # re ve ll
            return 3
    return 0


def _split_kimi_k2(cps: np.ndarray, codes: np.ndarray, spans: Spans) -> Spans:
    """llama.cpp's hand-written Kimi-K2 splitter, step by step: Han runs; an optional leading
    character and a run of non-Han letters with an optional contraction; digits in threes;
    an optional space and a run of "other" characters with trailing CR/LF; whitespace."""
    out: Spans = []
    for start, end in spans:
        def code(p: int) -> int:
            return int(codes[p]) if start <= p < end else -1

        def cp_at(p: int) -> int:
            return int(cps[p]) if start <= p < end else -1

        def word_letter(p: int) -> bool:
            return code(p) == _LETTER and not is_han(cp_at(p))

        def other(c: int) -> bool:
            return c not in (_VTAB, _LETTER, _NUMBER, -1)

        prev = pos = start
        while pos < end:
            cp, c = cp_at(pos), code(pos)
            if is_han(cp):
                while is_han(cp_at(pos)):
                    pos += 1
            elif word_letter(pos) or (not (cp in (0x0D, 0x0A) or c in (_LETTER, _NUMBER)) and word_letter(pos + 1)):
                if not word_letter(pos):
                    pos += 1  # the optional leading character
                while word_letter(pos):
                    pos += 1
                if pos < end:
                    pos += _contraction_length(cps, pos, end)
            elif c == _NUMBER:
                run = pos
                while code(pos) == _NUMBER:
                    pos += 1
                    if pos - run >= 3:
                        out.append((prev, pos))
                        prev = run = pos
            elif other(code(pos + 1) if cp == 0x20 else c):
                pos += cp == 0x20
                while other(code(pos)):
                    pos += 1
                while cp_at(pos) in (0x0D, 0x0A):
                    pos += 1
            else:
                pos = _whitespace_run_end(cps, codes, pos, end)
            if pos > prev:
                out.append((prev, pos))
            prev = pos
    return out


def _whitespace_run_end(cps: np.ndarray, codes: np.ndarray, pos: int, end: int) -> int:
    """Where llama.cpp's ``\\s*[\\r\\n]+ | \\s+(?!\\S) | \\s+`` step ends (one character when none matches)."""
    n = 0
    last_newline = 0
    while pos + n < end and codes[pos + n] == _VTAB:
        if cps[pos + n] in (0x0D, 0x0A):
            last_newline = pos + n + 1
        n += 1
    if last_newline:
        return last_newline
    if n > 1 and pos + n < end:
        return pos + n - 1
    return pos + max(n, 1)


def _split_digit_groups(codes: np.ndarray, spans: Spans) -> Spans:
    """llama.cpp's AFMoE digit grouping: each run of numbers is cut into a leading 1-2 and then
    threes; the text before a run joins the run's first group."""
    out: Spans = []
    for start, end in spans:
        prev = pos = start
        while pos < end:
            if codes[pos] != _NUMBER:
                pos += 1
                continue
            run = pos
            while pos < end and codes[pos] == _NUMBER:
                pos += 1
            cut = run + (pos - run) % 3
            if cut > run:
                out.append((prev, cut))
                prev = cut
            while cut < pos:
                out.append((prev, cut + 3))
                prev = cut = cut + 3
        if prev < end:
            out.append((prev, end))
    return out


class LlamaCppPretokenizer:
    """Split text as llama.cpp's BPE pre-tokenizer of one type (a ``PRE_TYPES`` key).

    >>> LlamaCppPretokenizer("gpt2").split("Hello  world's 42")
    ['Hello', ' ', ' world', "'s", ' 42']
    """

    def __init__(self, pre_type: str) -> None:
        spec = PRE_TYPES.get(pre_type)
        if spec is None:
            raise BpebenchError(f"unknown llama.cpp pre-tokenizer type {pre_type!r}")
        self.pre_type = pre_type
        self.regexes = spec.regexes
        self.pattern = None  # no single regex: the Tokenizer must not take a compiled fast path
        self._steps = [r if r in (KIMI_K2, AFMOE_DIGITS, TINY_AYA_DIGITS) else compile_step(r) for r in self.regexes]

    def spans(self, text: str) -> Spans:
        spans: Spans = [(0, len(text))] if text else []
        needs = {"codes": False, "collapsed": False, "wide": False}
        for step in self._steps:
            if isinstance(step, str):
                needs["codes"] = True
            elif step[1]:
                needs["collapsed"] = True
            else:
                needs["wide"] = True
        cps = _codepoints(text) if needs["codes"] else None
        codes = category_codes()[cps] if cps is not None else None
        folded = collapsed(text) if needs["collapsed"] else None
        wide = whitespace_as_vtab(text) if needs["wide"] else None
        for step in self._steps:
            if step == KIMI_K2:
                spans = _split_kimi_k2(cps, codes, spans)
            elif step in (AFMOE_DIGITS, TINY_AYA_DIGITS):
                spans = _split_digit_groups(codes, spans)
            else:
                pattern, on_collapsed = step
                spans = _split_regex(folded if on_collapsed else wide, pattern, spans)
        return spans

    def split(self, text: str) -> list[str]:
        return [text[a:b] for a, b in self.spans(text)]

    def __repr__(self) -> str:
        return f"<LlamaCppPretokenizer {self.pre_type}>"
