"""Pieces of text as HF ``tokenizers`` passes them between its components, and its pattern matching.

A :class:`Piece` is a stretch of (normalized) text plus what HF's ``NormalizedString``
knows about where it came from: ``start``, the offset in the original text where the
piece's original text begins (``offsets_original().0``; Metaspace's ``prepend_scheme:
first`` reads it), and optionally ``align``, per character the original offset it came
from, which slicing needs to compute the ``start`` of a sub-piece. Tracking ``align``
costs a list per piece, so the pipeline only asks for it when a component reads
``start`` (``align`` is None otherwise).

:func:`find_matches` is HF's ``Pattern::find_matches``: the whole text cut into
(start, end, is_match) spans, matches found the way Oniguruma's ``find_iter`` finds
them (an empty match right after the previous match is skipped by one character, so
``x*`` on ``"ab"`` matches at 0 and 2 but never twice at the same place), and the
text between matches kept as non-matching spans. ``regex.findall`` differs twice: it
returns capture groups instead of whole matches and drops the text between matches.

File-supplied patterns run with the ``regex`` module's ``timeout``: one search that
backtracks catastrophically ends as a one-line error instead of a hang.

Complexity: :func:`find_matches` is one regex search per match; slicing is O(piece).
Exact: the spans equal HF's for every pattern the ``regex`` module reads as Oniguruma does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

import regex

from bpebench.errors import BpebenchError, VocabularyError

#: seconds one regex search may take before the pattern is declared runaway
#: (``BPEBENCH_REGEX_TIMEOUT`` overrides it)
DEFAULT_REGEX_TIMEOUT = 10.0

#: Rust's ``char::is_whitespace`` (Unicode White_Space), which HF's Strip, WhitespaceSplit
#: and added-token lstrip/rstrip use; Python's ``str.isspace`` also counts U+001C..U+001F
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def regex_timeout() -> float:
    try:
        return float(os.environ.get("BPEBENCH_REGEX_TIMEOUT", DEFAULT_REGEX_TIMEOUT))
    except ValueError:
        return DEFAULT_REGEX_TIMEOUT


@dataclass(slots=True)
class Piece:
    """Text with its origin; ``token`` is set for an added token carved out of the text."""

    text: str
    start: int = 0
    align: list[int] | None = None
    token: int | None = None

    def slice(self, a: int, b: int) -> "Piece":
        """``text[a:b]`` as a piece of its own (HF ``NormalizedString::slice``)."""
        if self.align is None:
            return Piece(self.text[a:b], self.start)
        align = self.align[a:b]
        return Piece(self.text[a:b], min(align) if align else self.start, align)

    def with_text(self, text: str, sources: list[int] | None) -> "Piece":
        """The same piece rewritten: ``sources[k]`` is the index of the old character the new
        character ``k`` comes from (ignored when alignments are not tracked)."""
        if self.align is None:
            return Piece(text, self.start)
        old = self.align
        return Piece(text, self.start, [old[k] if old else self.start for k in sources])


def onig_regex(pattern: str) -> str:
    """An Oniguruma pattern rewritten for the ``regex`` module where the two read it differently.

    Oniguruma reads ``X{2,3}+`` as "``X{2,3}``, one or more times"; ``regex`` reads a
    possessive interval. The atom is wrapped so that ``regex`` repeats it the same way:

    >>> onig_regex("[ab]{2}+|(xy){1,2}+|z{3}")
    '(?:[ab]{2})+|(?:(xy){1,2})+|z{3}'
    """
    if not re.search(r"\}\+", pattern):
        return pattern
    tokens: list[str] = []
    atom_start = -1  # index in tokens where the last complete atom starts
    groups: list[int] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            end = i + 2
            if pattern[i + 1 : i + 2] in ("p", "P", "x", "u") and pattern[i + 2 : i + 3] == "{":
                end = pattern.find("}", i) + 1 or n
            atom_start = len(tokens)
            tokens.append(pattern[i:end])
            i = end
        elif ch == "[":
            j = i + 1
            j += pattern[j : j + 1] == "^"
            j += pattern[j : j + 1] == "]"
            depth = 1
            while j < n and depth:
                if pattern[j] == "\\":
                    j += 2
                    continue
                depth += {"[": 1, "]": -1}.get(pattern[j], 0)
                j += 1
            atom_start = len(tokens)
            tokens.append(pattern[i:j])
            i = j
        elif ch == "(":
            groups.append(len(tokens))
            tokens.append(ch)
            i += 1
        elif ch == ")":
            tokens.append(ch)
            atom_start = groups.pop() if groups else len(tokens) - 1
            i += 1
        else:
            m = re.match(r"\{\d+(?:,\d*)?\}", pattern[i:])
            if m:
                if pattern[i + m.end() : i + m.end() + 1] == "+" and atom_start >= 0:
                    atom = "".join(tokens[atom_start:])
                    del tokens[atom_start:]
                    tokens.append(f"(?:{atom}{m.group()})+")
                    i += m.end() + 1
                else:
                    tokens.append(m.group())
                    i += m.end()
                continue
            if ch not in "|*+?":
                atom_start = len(tokens)
            tokens.append(ch)
            i += 1
    return "".join(tokens)


@lru_cache(maxsize=256)
def compile_pattern(pattern: str, *, literal: bool = False) -> regex.Pattern:
    """A file-supplied pattern compiled for :func:`find_matches` (one-line error if malformed)."""
    source = regex.escape(pattern) if literal else onig_regex(pattern)
    try:
        return regex.compile(source)
    except (regex.error, IndexError, ValueError) as exc:
        raise BpebenchError(f"bad pattern {pattern[:80]!r}: {exc}") from None
    except RecursionError:  # groups nested thousands deep: the regex parser recurses per level
        raise BpebenchError(f"bad pattern {pattern[:80]!r}: nested too deeply") from None


def find_matches(compiled: regex.Pattern, text: str) -> list[tuple[int, int, bool]]:
    """HF ``Pattern::find_matches``: spans covering ``text``, each marked as a match or not."""
    if not text:
        return [(0, 0, False)]
    timeout = regex_timeout()
    spans: list[tuple[int, int, bool]] = []
    n = len(text)
    prev = pos = 0
    last_match_end = -1
    search = compiled.search
    while pos <= n:
        try:
            m = search(text, pos, timeout=timeout)
        except TimeoutError:
            raise BpebenchError(
                f"pattern {compiled.pattern!r} ran longer than {timeout:g} s in one search on a piece of"
                f" {n} characters (catastrophic backtracking?); set BPEBENCH_REGEX_TIMEOUT to allow more"
            ) from None
        if m is None:
            break
        s, e = m.span()
        if s == e and e == last_match_end:
            pos = e + 1  # Oniguruma's find_iter: no empty match right after a match
            continue
        pos = last_match_end = e
        if prev != s:
            spans.append((prev, s, False))
        spans.append((s, e, True))
        prev = e
    if prev != n:
        spans.append((prev, n, False))
    return spans


def char_matches(text: str, chars) -> list[tuple[int, int, bool]]:
    """:func:`find_matches` for a character predicate (HF's ``Pattern`` for ``char`` and ``Fn(char)``)."""
    if not text:
        return [(0, 0, False)]
    spans: list[tuple[int, int, bool]] = []
    prev = 0
    for i, c in enumerate(text):
        if c in chars:
            if prev != i:
                spans.append((prev, i, False))
            spans.append((i, i + 1, True))
            prev = i + 1
    if prev != len(text):
        spans.append((prev, len(text), False))
    return spans


def build_component(spec, types: dict, kind: str, where: str):
    """The runtime object of one ``tokenizer.json`` component dict (None for null), or a
    one-line refusal naming a type that is not implemented."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise VocabularyError(f"{where}: {kind} {spec!r} is not an object")
    cls = types.get(spec.get("type"))
    if cls is None:
        raise VocabularyError(f"{where}: {kind} {spec.get('type')!r} is not supported"
                              f" (supported: {', '.join(sorted(types))})")
    return cls(spec, where)
