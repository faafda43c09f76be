"""Added tokens with HF ``tokenizers`` semantics: carving them out of the text before BPE.

``tokenizer.json``'s ``added_tokens`` entries (``content``, ``id``, ``special``,
``normalized``, ``lstrip``, ``rstrip``, ``single_word``) are matched as HF's
``AddedVocabulary::extract_and_normalize`` matches them:

1. tokens with ``normalized: false`` are found in the raw text;
2. every stretch between them is normalized, and tokens with ``normalized: true`` are
   found in the normalized stretch (their content normalized the same way).

Matching is leftmost-longest over all contents (HF's Aho-Corasick). A match of a
``special`` token that the caller does not want carved (HF's
``encode_special_tokens``, tiktoken's ``allowed_special``) is skipped but still
consumed, as is a ``single_word`` match touching a word character (``\\w``) on either
side. ``lstrip`` widens a match over the whitespace before it (never into the previous
match), ``rstrip`` over the whitespace after it.

SentencePiece's user-defined pieces are the same mechanism with ``normalized: true``
and a normalizer that leaves them verbatim.

Complexity: one regex scan per stretch (of the literals' first two characters, when they are few
kinds, then a dictionary probe per length where one is found). Exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import regex

from bpebench.errors import VocabularyError
from .text_pieces import Piece
from .unicode_reference import reference_char

_STARTS_WITH_WORD = regex.compile(r"\w")
_TRAILING_SPACE = regex.compile(r"\s*\Z")
_LEADING_SPACE = regex.compile(r"\s*")
#: a matcher whose literals start with at most this many pairs of characters looks for them first
_SCREENED_STARTS = 64
#: ... and when they start with at most this many characters, one pattern for each is run apart
_SCREENED_FIRSTS = 4


@dataclass(frozen=True)
class AddedToken:
    content: str
    id: int
    special: bool = False
    normalized: bool = True
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False

    @classmethod
    def from_spec(cls, entry: dict, where: str) -> "AddedToken":
        content, token_id = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise VocabularyError(f"{where}: added token {entry!r} needs a 'content' string and a non-negative 'id'")
        flags = {k: bool(entry.get(k, default)) for k, default in
                 (("special", False), ("normalized", not entry.get("special", False)), ("lstrip", False),
                  ("rstrip", False), ("single_word", False))}
        return cls(content, token_id, **flags)

    def flags(self) -> str:
        on = [k for k in ("special", "normalized", "lstrip", "rstrip", "single_word") if getattr(self, k)]
        return ",".join(on) or "-"


class LiteralSearch:
    """Leftmost-longest search for a set of literals.

    When the literals start with few kinds of two characters, matches are looked for only where
    those are (one scan by ``re`` for a few short alternatives), by the lengths of the literals that
    start there, longest first; else by the alternation of every literal, longest first. The
    alternation tries its alternatives one by one wherever a first character is: DeepSeek-V4's 1,237
    literals all start with "<", 2-4 ms per MB of prose and 30 on C code.

    The screen is one pattern per first character (``<(?:｜|/|t)``), each found by ``re``'s fast scan
    for a literal prefix, when there are at most :data:`_SCREENED_FIRSTS` first characters: ``re``
    looks for a pattern that starts with a class of characters one character at a time (2.7 ns a
    character for DeepSeek-V4's normalized tokens, which start with "<" or "｜"; 0.3 for each literal
    prefix).
    """

    def __init__(self, literals) -> None:
        self.literals = frozenset(literal for literal in literals if literal)
        ordered = sorted(self.literals, key=len, reverse=True)
        self.empty = not ordered
        self._regex = None  # the alternation, compiled when first asked for (:attr:`regex`)
        self.lengths_after: dict[str, list[int]] = {}  # by the first two characters, longest first
        for text in ordered:
            lengths = self.lengths_after.setdefault(text[:2], [])
            if not lengths or lengths[-1] != len(text):
                lengths.append(len(text))
        self.starts = None  # patterns that find where a literal may start
        self._searches = []  # ``search(text, start=0)`` of each of ``starts``
        if ordered and len(self.lengths_after) <= _SCREENED_STARTS:
            by_first: dict[str, list[str]] = {}
            for prefix in sorted(self.lengths_after, key=len, reverse=True):
                by_first.setdefault(prefix[0], []).append(re.escape(prefix[1:]))
            if len(by_first) <= _SCREENED_FIRSTS:
                self.starts = [re.compile(re.escape(first) + "(?:" + "|".join(rests) + ")")
                               for first, rests in by_first.items()]
                # str.find skips to a first character at memchr's speed (``re`` takes 0.2-0.5 ns a
                # character even for a literal prefix); ``re`` goes on from there
                self._searches = [_from_first(pattern.search, first) for pattern, first in zip(self.starts, by_first)]
            else:
                self.starts = [re.compile("|".join(map(re.escape, sorted(self.lengths_after, key=len, reverse=True))))]
                self._searches = [self.starts[0].search]

    @property
    def regex(self):
        """The literals as one ``regex`` alternation, longest first (None for none): what the screen
        stands in for, compiled only when a search needs it (DeepSeek-V4's 1,237 literals take
        ``regex`` 0.1 s to compile, a fifth of its ``Tokenizer()``, and its screen never uses them)."""
        if self._regex is None and not self.empty:
            self._regex = regex.compile("|".join(map(regex.escape, sorted(self.literals, key=len, reverse=True))))
        return self._regex

    def matches(self, text: str):
        """(start, stop, literal) of each leftmost-longest match in ``text``, in order, none overlapping."""
        if self.empty:
            return
        if self.starts is None:
            for m in self.regex.finditer(text):
                yield m.start(), m.end(), m.group()
            return
        literals, lengths_after = self.literals, self.lengths_after
        searches = self._searches
        found = [search(text) for search in searches]  # each screen pattern's next match
        at = min((f.start() for f in found if f is not None), default=-1)
        while at >= 0:
            end = at + 1
            # a literal of two or more characters starts with the two here, one of one character is
            # the character itself
            for length in (*lengths_after.get(text[at:at + 2], ()), *lengths_after.get(text[at], ())):
                literal = text[at:at + length]
                if len(literal) == length and literal in literals:
                    end = at + length
                    yield at, end, literal
                    break
            for i, f in enumerate(found):  # a pattern looks again from where the next match may start
                if f is not None and f.start() < end:
                    found[i] = searches[i](text, end)
            at = min((f.start() for f in found if f is not None), default=-1)

    def first(self, text: str) -> str | None:
        """The literal of the first match in ``text``, or None."""
        return next((literal for _, _, literal in self.matches(text)), None)


def _from_first(search, first: str):
    """``search(text, start)`` that starts where ``first``, the pattern's first character, is next."""
    def found(text: str, start: int = 0):
        at = text.find(first, start)
        return None if at < 0 else search(text, at)
    return found


class _Matcher:
    """Leftmost-longest matching of a set of literals, each mapped to its token."""

    def __init__(self, tokens: list[tuple[str, AddedToken]]) -> None:
        self.by_text: dict[str, AddedToken] = {}
        for text, token in tokens:
            if text and text not in self.by_text:
                self.by_text[text] = token
        self.search = LiteralSearch(self.by_text)
        self.empty = self.search.empty

    def split(self, piece: Piece, carve_special) -> list[Piece]:
        """``piece`` cut around the tokens found in it (HF ``AddedVocabulary::find_matches``)."""
        text = piece.text
        if self.empty or not text:
            return [piece]
        out: list[Piece] = []
        start_offset = 0
        n = len(text)
        for start, stop, literal in self.search.matches(text):
            token = self.by_text[literal]
            if token.special and not carve_special(token):
                continue
            if token.single_word:
                # the neighbours as HF's engine reads them (a code point newer than its Unicode: none)
                start_space = start == 0 or not _STARTS_WITH_WORD.match(reference_char(text[start - 1]))
                stop_space = stop == n or not _STARTS_WITH_WORD.match(reference_char(text[stop]))
                if not (start_space and stop_space):
                    continue
            if token.lstrip:
                start = max(_TRAILING_SPACE.search(text, 0, start).start(), start_offset)
            if token.rstrip:
                stop = _LEADING_SPACE.match(text, stop).end()
            if start_offset < start:
                out.append(piece.slice(start_offset, start))
            carved = piece.slice(start, stop)
            carved.token = token.id
            out.append(carved)
            start_offset = stop
        if start_offset < n:
            out.append(piece.slice(start_offset, n) if start_offset else piece)
        return out


class AddedVocabulary:
    """The added tokens of a pipeline and how to carve them."""

    def __init__(self, tokens: list[AddedToken], normalizer=None) -> None:
        self.tokens = tokens
        self.normalizer = normalizer
        self.raw = _Matcher([(t.content, t) for t in tokens if not t.normalized])
        normalize = normalizer.normalize_added_token if normalizer is not None else (lambda s: s)
        self.normalized = _Matcher([(normalize(t.content), t) for t in tokens if t.normalized])
        self.specials = {t.content for t in tokens if t.special}
        #: the first characters of every literal, when normalizing changes nothing (then a text holding
        #: none of them has nothing to carve: :meth:`may_carve`)
        from .normalizers import changes_nothing

        self._firsts = tuple({literal[0] for literal in (*self.raw.by_text, *self.normalized.by_text)}) \
            if changes_nothing(normalizer) else None

    def may_carve(self, text: str) -> bool:
        """False when no added token can be in ``text``: normalizing changes nothing, and none of the
        literals' first characters is in it (a word's call then skips the screens' searches)."""
        firsts = self._firsts
        return firsts is None or any(first in text for first in firsts)

    def extract_and_normalize(self, text: str, *, carve_special, track_offsets: bool = False) -> list[Piece]:
        """``text`` as pieces: carved tokens (``Piece.token`` set) and normalized stretches."""
        whole = Piece(text, 0, list(range(len(text))) if track_offsets else None)
        out: list[Piece] = []
        for part in self.raw.split(whole, carve_special):
            if part.token is not None:
                out.append(part)
                continue
            if self.normalizer is not None:
                part = self.normalizer.normalize(part)
            # HF slices the normalized stretch even when nothing is carved from it, which sets
            # its start to the first original offset its characters come from
            for sub in self.normalized.split(part, carve_special) if not self.normalized.empty else [part]:
                if sub is part and part.align is not None and part.text:
                    sub = part.slice(0, len(part.text))
                if sub.text or sub.token is not None:
                    out.append(sub)
        return out
