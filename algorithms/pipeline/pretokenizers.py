"""Pre-tokenizers with HF ``tokenizers`` semantics, built from ``tokenizer.json``-shaped dicts.

Each one maps a list of :class:`~.text_pieces.Piece` to a list of pieces, splitting every
piece that is not an added token and dropping empty results, as HF's
``PreTokenizedString::split`` does. Implemented: ByteLevel (``add_prefix_space``,
``use_regex``), Split (String or Regex pattern, every ``behavior``, ``invert``), Digits
(``individual_digits``), Punctuation (``behavior``), Whitespace, WhitespaceSplit,
BertPreTokenizer, Metaspace (``replacement``, ``prepend_scheme`` always / first / never
or the older ``add_prefix_space``, ``split``), CharDelimiterSplit and Sequence. Any
other type is refused with one line naming it.

A split is HF's ``NormalizedString::split``: the pattern's matches and the text
between them (:func:`~.text_pieces.find_matches`), then by ``behavior``: ``Removed``
drops the matches, ``Isolated`` keeps each as its own piece, ``MergedWithPrevious`` /
``MergedWithNext`` glue a match to the text before / after it, ``Contiguous`` joins
runs of matches (and runs of non-matches). ``invert`` swaps which spans count as the
matches. Nothing is ever dropped except by ``Removed``.

Complexity: linear in the text (plus the regex engine's own cost). Exact.
"""

from __future__ import annotations

from bpebench.errors import VocabularyError
from . import hf_unicode
from .normalizers import SPM_SPACE, describe_spec, pattern_of
from .text_pieces import (WATCHED_MIN_CHARS, WHITESPACE, Piece, _find_matches, build_component, char_matches,
                          compile_pattern, find_matches, regex_timeout)

BEHAVIORS = {
    "removed": "Removed", "isolated": "Isolated", "mergedwithprevious": "MergedWithPrevious",
    "mergedwithnext": "MergedWithNext", "contiguous": "Contiguous",
}

#: the regex of HF's ByteLevel pre-tokenizer (``use_regex: true``)
BYTE_LEVEL_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
#: HF's Whitespace pre-tokenizer keeps these and drops what is between them
WHITESPACE_REGEX = r"\w+|[^\w\s]+"


def behavior_of(value, where: str) -> str:
    name = BEHAVIORS.get(str(value).replace("_", "").lower())
    if name is None:
        raise VocabularyError(f"{where}: split behavior {value!r} is not one of {', '.join(BEHAVIORS.values())}")
    return name


def apply_behavior(spans: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
    """The (start, end) pieces HF keeps from matched / unmatched spans under ``behavior``."""
    if behavior == "Isolated":
        return [(a, b) for a, b, _ in spans]
    if behavior == "Removed":
        return [(a, b) for a, b, is_match in spans if not is_match]
    out: list[list[int]] = []
    previous = False
    if behavior == "Contiguous":
        for a, b, is_match in spans:
            if is_match == previous and out:
                out[-1][1] = b
            else:
                out.append([a, b])
            previous = is_match
    elif behavior == "MergedWithPrevious":
        for a, b, is_match in spans:
            if is_match and not previous and out:
                out[-1][1] = b
            else:
                out.append([a, b])
            previous = is_match
    elif behavior == "MergedWithNext":
        for a, b, is_match in reversed(spans):
            if is_match and not previous and out:
                out[-1][0] = a
            else:
                out.append([a, b])
            previous = is_match
        out.reverse()
    else:
        raise ValueError(behavior)
    return [(a, b) for a, b in out]


def split_piece(piece: Piece, spans, behavior: str, invert: bool = False) -> list[Piece]:
    if invert:
        spans = [(a, b, not m) for a, b, m in spans]
    return [piece.slice(a, b) for a, b in apply_behavior(spans, behavior) if b > a]


def split_each(pieces: list[Piece], split) -> list[Piece]:
    """``split(piece)`` of every piece that is not an added token, empty results dropped (HF's
    ``PreTokenizedString::split``)."""
    out: list[Piece] = []
    for piece in pieces:
        if piece.token is not None:
            out.append(piece)
        else:
            out.extend(p for p in split(piece) if p.text)
    return out


class PreTokenizer:
    """Base: ``split_one(piece) -> pieces``; ``pre_tokenize`` maps it over non-token pieces."""

    spec: dict
    #: True when the component reads ``Piece.start`` (the pipeline then tracks offsets)
    reads_offsets = False

    def split_one(self, piece: Piece) -> list[Piece]:
        raise NotImplementedError

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        return split_each(pieces, self.split_one)

    def pre_tokenize_str(self, text: str) -> list[str]:
        """The pieces of ``text`` (HF's ``pre_tokenize_str`` without the offsets)."""
        piece = Piece(text, 0, list(range(len(text))) if self.reads_offsets else None)
        return [p.text for p in self.pre_tokenize([piece])]

    def describe(self) -> str:
        return describe_spec(self.spec)


class Split(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.pattern = pattern_of(spec, where)
        self.behavior = behavior_of(spec.get("behavior", "Isolated"), where)
        self.invert = bool(spec.get("invert", False))

    def split_one(self, piece: Piece) -> list[Piece]:
        spans = [(0, len(piece.text), False)] if self.pattern is None else find_matches(self.pattern, piece.text)
        return split_piece(piece, spans, self.behavior, self.invert)

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        """:meth:`split_one` of each piece, the regex's time limit read once for all the pieces shorter
        than the watched length (``find_matches`` reads it for each: 2 us a piece, 13% of a list of
        Split steps); a piece that overruns it, or a longer one, goes through ``find_matches``."""
        if self.pattern is None:
            return super().pre_tokenize(pieces)
        timeout = regex_timeout()
        pattern, behavior, invert = self.pattern, self.behavior, self.invert
        out: list[Piece] = []
        for piece in pieces:
            text = piece.text
            if piece.token is not None:
                out.append(piece)
                continue
            spans = None
            if 0 < len(text) < WATCHED_MIN_CHARS:
                try:
                    spans = _find_matches(pattern, text, timeout)
                except TimeoutError:  # find_matches says so in one line
                    pass
            if spans is None:
                spans = find_matches(pattern, text)
            out.extend(p for p in split_piece(piece, spans, behavior, invert) if p.text)
        return out


class ByteLevel(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        from ..formats.byte_alphabet import bytes_to_unicode

        self.spec = spec
        self.add_prefix_space = bool(spec.get("add_prefix_space", True))
        self.use_regex = bool(spec.get("use_regex", True))
        self.regex = compile_pattern(BYTE_LEVEL_REGEX) if self.use_regex else None
        table = bytes_to_unicode()
        #: the byte-level text of every Latin-1 character (the common case, one translate call)
        self._latin1 = str.maketrans({chr(b): table[b] for b in range(128)})
        self._table = table

    def to_byte_chars(self, piece: Piece) -> Piece:
        text = piece.text
        if text.isascii():
            return Piece(text.translate(self._latin1), piece.start, piece.align, piece.token)
        table = self._table
        data = text.encode("utf-8", "surrogatepass")
        mapped = "".join(table[b] for b in data)
        if piece.align is None:
            return Piece(mapped, piece.start)
        sources = [k for k, c in enumerate(text) for _ in c.encode("utf-8", "surrogatepass")]
        return piece.with_text(mapped, sources)

    def split_one(self, piece: Piece) -> list[Piece]:
        return [self.to_byte_chars(p) for p in self.split_text(piece)]

    def split_text(self, piece: Piece) -> list[Piece]:
        """:meth:`split_one` without the byte-level characters: the pieces in the text's own
        characters (their UTF-8 is what the byte-level model's tokens spell)."""
        if self.add_prefix_space and piece.text and not piece.text.startswith(" "):
            piece = piece.with_text(" " + piece.text, [0, *range(len(piece.text))] if piece.align else None)
        if self.regex is not None:
            return split_piece(piece, find_matches(self.regex, piece.text), "Isolated")
        return [piece]

    def pre_tokenize_text(self, pieces: list[Piece]) -> list[Piece]:
        """:meth:`pre_tokenize` by :meth:`split_text`."""
        return split_each(pieces, self.split_text)


class Digits(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.individual = bool(spec.get("individual_digits", False))

    def split_one(self, piece: Piece) -> list[Piece]:
        digits = {c for c in piece.text if hf_unicode.is_numeric(c)}
        return split_piece(piece, char_matches(piece.text, digits), "Isolated" if self.individual else "Contiguous")


class Punctuation(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.behavior = behavior_of(spec.get("behavior", "Isolated"), where)

    def split_one(self, piece: Piece) -> list[Piece]:
        punct = {c for c in piece.text if hf_unicode.is_punctuation(c)}
        return split_piece(piece, char_matches(piece.text, punct), self.behavior)


class Whitespace(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        import regex

        self.spec = spec
        # HF compiles this one with the ``regex`` crate, whose ``\w`` is the ``regex`` module's (not
        # Oniguruma's, which ``compile_pattern`` rewrites it as)
        self.regex = regex.compile(WHITESPACE_REGEX)

    def split_one(self, piece: Piece) -> list[Piece]:
        return split_piece(piece, find_matches(self.regex, piece.text), "Removed", invert=True)


class WhitespaceSplit(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec

    def split_one(self, piece: Piece) -> list[Piece]:
        return split_piece(piece, char_matches(piece.text, WHITESPACE), "Removed")


class BertPreTokenizer(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec

    def split_one(self, piece: Piece) -> list[Piece]:
        out = []
        for part in split_piece(piece, char_matches(piece.text, WHITESPACE), "Removed"):
            punct = {c for c in part.text if hf_unicode.is_punctuation(c)}
            out.extend(split_piece(part, char_matches(part.text, punct), "Isolated"))
        return out


class Metaspace(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        replacement = spec.get("replacement", SPM_SPACE)
        if not isinstance(replacement, str) or len(replacement) != 1:
            raise VocabularyError(f"{where}: Metaspace replacement {replacement!r} is not one character")
        self.replacement = replacement
        scheme = spec.get("prepend_scheme")
        if scheme is None:  # files written before prepend_scheme existed
            scheme = "always" if spec.get("add_prefix_space", True) else "never"
        if scheme not in ("always", "first", "never"):
            raise VocabularyError(f"{where}: Metaspace prepend_scheme {scheme!r} is not always, first or never")
        self.scheme = scheme
        self.split = bool(spec.get("split", True))
        self.reads_offsets = scheme == "first"

    def prefixes(self, text: str, at_start: bool) -> bool:
        """Whether ``text`` (spaces replaced) gets the replacement in front: by the scheme, and for
        ``first`` only the piece at the start of the original text."""
        return bool(text) and not text.startswith(self.replacement) and (
            self.scheme == "always" or (self.scheme == "first" and at_start))

    def split_one(self, piece: Piece) -> list[Piece]:
        rep = self.replacement
        text = piece.text.replace(" ", rep)
        piece = Piece(text, piece.start, piece.align, piece.token)
        if self.prefixes(text, piece.start == 0):
            piece = piece.with_text(rep + text, [0, *range(len(text))] if piece.align is not None else None)
        if not self.split:
            return [piece]
        return split_piece(piece, char_matches(piece.text, rep), "MergedWithNext")


class CharDelimiterSplit(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        delimiter = spec.get("delimiter")
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise VocabularyError(f"{where}: CharDelimiterSplit delimiter {delimiter!r} is not one character")
        self.delimiter = delimiter

    def split_one(self, piece: Piece) -> list[Piece]:
        return split_piece(piece, char_matches(piece.text, self.delimiter), "Removed")


class SequencePreTokenizer(PreTokenizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        children = spec.get("pretokenizers")
        if not isinstance(children, list):
            raise VocabularyError(f"{where}: Sequence pre-tokenizer without a 'pretokenizers' list")
        self.parts = [p for p in (build_pre_tokenizer(c, where) for c in children) if p is not None]
        self.reads_offsets = any(p.reads_offsets for p in self.parts)

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        for part in self.parts:
            pieces = part.pre_tokenize(pieces)
        return pieces

    def split_one(self, piece: Piece) -> list[Piece]:
        return self.pre_tokenize([piece])


PRE_TOKENIZER_TYPES: dict[str, type[PreTokenizer]] = {
    "ByteLevel": ByteLevel, "Split": Split, "Digits": Digits, "Punctuation": Punctuation,
    "Whitespace": Whitespace, "WhitespaceSplit": WhitespaceSplit, "BertPreTokenizer": BertPreTokenizer,
    "Metaspace": Metaspace, "CharDelimiterSplit": CharDelimiterSplit, "Sequence": SequencePreTokenizer,
}


def build_pre_tokenizer(spec: dict | None, where: str = "pre_tokenizer") -> PreTokenizer | None:
    """The runtime pre-tokenizer of a ``tokenizer.json`` ``pre_tokenizer`` value (None for null)."""
    return build_component(spec, PRE_TOKENIZER_TYPES, "pre-tokenizer", where)
