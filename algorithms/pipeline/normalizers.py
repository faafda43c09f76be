"""Normalizers with HF ``tokenizers`` semantics, built from ``tokenizer.json``-shaped dicts.

``build_normalizer({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]})``
gives an object whose ``normalize(piece)`` rewrites a :class:`~.text_pieces.Piece` as HF's
``Normalizer::normalize`` rewrites a ``NormalizedString`` (text and, when tracked, the
original offset of every character). Implemented: NFC, NFD, NFKC, NFKD, Lowercase,
Strip, StripAccents, Replace (String or Regex pattern), Prepend, Precompiled
(SentencePiece charsmap, HF's grapheme rule), BertNormalizer, ByteLevel, Sequence; and
``SentencePiece``, bpebench's name for SentencePiece's own normalizer (charsmap with the
longest-match rule, ``add_dummy_prefix``, ``remove_extra_whitespaces``,
``escape_whitespaces``), which HF has no component for. Any other type is refused
with one line naming it.

Details that decide ids: Unicode data is HF's where its tables disagree with Python's
(``hf_unicode``); Lowercase maps each character alone (no final-sigma rule, unlike
``str.lower``); Strip and the whitespace tests use Unicode White_Space (not
``str.isspace``); Prepend leaves empty text empty; Replace finds matches as
:func:`~.text_pieces.find_matches` does (empty matches included).

Complexity: linear in the text per normalizer (the charsmap ones: times the longest
key). Exact for the text; the original offsets of characters that Unicode
normalization composes across a combining sequence are approximated by the sequence's
first character (only Metaspace ``prepend_scheme: first`` after a split reads them).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from functools import lru_cache
from typing import Callable

import regex

from bpebench.errors import VocabularyError
from . import hf_unicode
from .charsmap import CharsMap
from .text_pieces import WHITESPACE, Piece, build_component, compile_pattern, find_matches, substitute

SPM_SPACE = "\u2581"
_SURROGATE = regex.compile("[\ud800-\udfff]")
_SPACE_RUN = re.compile("  +")  # re finds a two-space literal prefix: 4 ns a character, regex 9.6


class Normalizer:
    """Base: ``normalize(piece) -> piece``; ``describe()`` is the one-line summary."""

    spec: dict

    def normalize(self, piece: Piece) -> Piece:
        raise NotImplementedError

    def normalize_str(self, text: str) -> str:
        return self.normalize(Piece(text)).text

    def normalize_added_token(self, content: str) -> str:
        """The form an added token with ``normalized: true`` is matched in (HF normalizes its content)."""
        return self.normalize_str(content)

    def describe(self) -> str:
        return describe_spec(self.spec)


def describe_spec(spec: dict | None) -> str:
    """``NFKC``, ``Replace(' '->'▁')``, ``Sequence[...]``: a compact name for a component dict."""
    if not spec:
        return "none"
    kind = spec.get("type", "?")
    children = spec.get("normalizers") or spec.get("pretokenizers") or spec.get("decoders")
    if kind == "Sequence" and isinstance(children, list):
        return " + ".join(describe_spec(c) for c in children) or "none"
    shown = {k: v for k, v in spec.items() if k not in ("type", "precompiled_charsmap", "trim_offsets")}
    if kind == "Precompiled" or "precompiled_charsmap" in spec:
        charsmap = spec.get("precompiled_charsmap") or ""
        shown["charsmap"] = f"{len(charsmap) * 3 // 4} bytes" if charsmap else "none"
    if not shown:
        return kind
    # sorted: the vocabulary cache stores the spec with sorted keys
    return f"{kind}({', '.join(f'{k}={_short(v)}' for k, v in sorted(shown.items()))})"


def _short(value) -> str:
    if isinstance(value, dict) and len(value) == 1:
        (kind, inner), = value.items()
        return f"{kind}:{inner!r}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ----------------------------------------------------------------------------- helpers
def _map_chars(piece: Piece, fn: Callable[[str], str]) -> Piece:
    """Replace every character by ``fn(char)`` (one or more characters, or none)."""
    text = piece.text
    parts = [fn(c) for c in text]
    if piece.align is None:
        return Piece("".join(parts), piece.start)
    sources = [k for k, part in enumerate(parts) for _ in part]
    return piece.with_text("".join(parts), sources)


def _filter_chars(piece: Piece, keep: Callable[[str], bool]) -> Piece:
    text = piece.text
    if piece.align is None:
        return Piece("".join(c for c in text if keep(c)), piece.start)
    kept = [k for k, c in enumerate(text) if keep(c)]
    return piece.with_text("".join(text[k] for k in kept), kept)


def _unicode_normalize(piece: Piece, form: str) -> Piece:
    text = piece.text
    out = hf_unicode.normalize(form, text)
    if piece.align is None or out == text:
        return Piece(out, piece.start, piece.align and list(piece.align))
    # offsets: normalize each combining sequence (a starter and the marks after it) alone;
    # where that does not add up to the whole (compositions across starters), every output
    # character of such a stretch takes the stretch's first original offset
    sources: list[int] = []
    pieces: list[str] = []
    k = 0
    n = len(text)
    while k < n:
        j = k + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        part = hf_unicode.normalize(form, text[k:j])
        pieces.append(part)
        sources.extend([k] * len(part))
        k = j
    if "".join(pieces) != out:
        sources = [0] * len(out)
    return piece.with_text(out, sources)


def _replace_spans(piece: Piece, spans, content: str) -> Piece:
    """Every matching span replaced by ``content`` (HF ``NormalizedString::replace``)."""
    text = piece.text
    out: list[str] = []
    sources: list[int] = []
    track = piece.align is not None
    for a, b, is_match in spans:
        if is_match:
            out.append(content)
            if track:  # HF: inserted characters share the alignment of the character before
                sources.extend([max(b - 1, 0)] * len(content))
        else:
            out.append(text[a:b])
            if track:
                sources.extend(range(a, b))
    return piece.with_text("".join(out), sources if track else None)


def pattern_of(spec: dict, where: str):
    """The compiled pattern of a ``{"String": ...}`` / ``{"Regex": ...}`` field, or None for an
    empty string (which HF treats as matching nothing)."""
    pattern = spec.get("pattern")
    if isinstance(pattern, str):  # some writers store the bare string
        pattern = {"String": pattern}
    if not isinstance(pattern, dict) or len(pattern) != 1:
        raise VocabularyError(f"{where}: {spec.get('type')} needs a pattern {{'String': ...}} or {{'Regex': ...}}")
    (kind, value), = pattern.items()
    if kind not in ("String", "Regex") or not isinstance(value, str):
        raise VocabularyError(f"{where}: {spec.get('type')} pattern {pattern!r} is neither String nor Regex")
    if kind == "String" and not value:
        return None
    return compile_pattern(value, literal=kind == "String")


def matches_of(compiled, text: str):
    return [(0, len(text), False)] if compiled is None else find_matches(compiled, text)


# ----------------------------------------------------------------------------- components
class UnicodeForm(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec, self.form = spec, spec["type"]

    def normalize(self, piece: Piece) -> Piece:
        return _unicode_normalize(piece, self.form)


class Lowercase(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec

    def normalize(self, piece: Piece) -> Piece:
        if piece.align is None:
            return Piece(self.lowered(piece.text), piece.start)
        return _map_chars(piece, hf_unicode.lowercase)

    @staticmethod
    def lowered(text: str) -> str:
        """Rust's ``to_lowercase`` of each character: ``str.lower`` unless the text holds a capital
        sigma (``str.lower`` applies the final-sigma rule, Rust's per-character one does not) or a
        capital newer than Python's Unicode."""
        if hf_unicode.has_lowercase_exception(text):
            return "".join(map(hf_unicode.lowercase, text))
        if "\u03a3" in text:  # no other character's lowercase depends on its neighbours
            return "\u03c3".join(part.lower() for part in text.split("\u03a3"))
        return text.lower()


class Strip(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.left = bool(spec.get("strip_left", spec.get("left", True)))
        self.right = bool(spec.get("strip_right", spec.get("right", True)))

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        a, b = 0, len(text)
        if self.left:
            while a < b and text[a] in WHITESPACE:
                a += 1
        if self.right:
            while b > a and text[b - 1] in WHITESPACE:
                b -= 1
        return piece.with_text(text[a:b], list(range(a, b)) if piece.align is not None else None)


class StripAccents(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec

    def normalize(self, piece: Piece) -> Piece:
        if piece.align is None:  # one substitution, not a test per character
            return Piece(hf_unicode.stripped_accents().sub("", piece.text), piece.start)
        return _filter_chars(piece, lambda c: not hf_unicode.strips_accent(c))


class Replace(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.pattern = pattern_of(spec, where)
        content = spec.get("content", "")
        if not isinstance(content, str):
            raise VocabularyError(f"{where}: Replace content {content!r} is not a string")
        self.content = content
        pattern = spec.get("pattern")
        #: a ``String`` pattern's text: replaced by ``str.replace`` when no offsets are kept (the same
        #: leftmost matches, none overlapping; Llama-2's spaces took 200 ms per MB through the spans)
        self.literal = pattern if isinstance(pattern, str) else (pattern.get("String") or None)
        self._nonempty: bool | None = None

    @property
    def nonempty(self) -> bool:
        """Whether the regex cannot match the empty string (the program compiler takes only such):
        then it is replaced by one ``sub`` when no offsets are kept (CLIP's ``\\s+``: 60% of its encode
        went to the spans). Asked at the first use, not when the file loads."""
        if self._nonempty is None:
            from .pattern_program import compile_pattern as compile_program

            self._nonempty = self.literal is None and self.pattern is not None and \
                compile_program(self.pattern.pattern) is not None
        return self._nonempty

    def normalize(self, piece: Piece) -> Piece:
        if self.pattern is None:
            return piece
        if self.literal is not None and piece.align is None:
            return Piece(piece.text.replace(self.literal, self.content), piece.start)
        if piece.align is None and self.nonempty:
            return Piece(substitute(self.pattern, piece.text, self.content), piece.start)
        return _replace_spans(piece, find_matches(self.pattern, piece.text), self.content)


class Prepend(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.prefix = spec.get("prepend", "")
        if not isinstance(self.prefix, str):
            raise VocabularyError(f"{where}: Prepend {self.prefix!r} is not a string")

    def normalize(self, piece: Piece) -> Piece:
        if not piece.text:
            return piece
        return piece.with_text(self.prefix + piece.text,
                               [0] * len(self.prefix) + list(range(len(piece.text)))
                               if piece.align is not None else None)


def _charsmap(spec: dict, where: str) -> CharsMap:
    raw = spec.get("precompiled_charsmap")
    if isinstance(raw, list):  # older files store the bytes as a list of numbers
        blob = bytes(raw)
    elif isinstance(raw, str):
        try:
            blob = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise VocabularyError(f"{where}: precompiled_charsmap is not base64") from None
    elif isinstance(raw, (bytes, bytearray)):
        blob = bytes(raw)
    else:
        raise VocabularyError(f"{where}: Precompiled normalizer without a precompiled_charsmap")
    return CharsMap(blob, where=where)


_GRAPHEME = regex.compile(r"\X")


class Precompiled(Normalizer):
    """HF's ``Precompiled``: the charsmap applied per grapheme cluster (see ``charsmap``)."""

    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.charsmap = _charsmap(spec, where) if spec.get("precompiled_charsmap") else None

    def normalize(self, piece: Piece) -> Piece:
        if self.charsmap is None:  # an empty charsmap: HF leaves the text alone
            return piece
        text = piece.text
        screen = self.charsmap.screen() if piece.align is None else None
        if screen is not None and (text.isascii() or _SURROGATE.search(text) is None):
            return piece.with_text(self._screened(text, screen), None)
        shortest = self.charsmap.shortest
        out: list[str] = []
        sources: list[int] = []
        for m in _GRAPHEME.finditer(piece.text):
            grapheme, g0 = m.group(), m.start()
            if len(grapheme.encode("utf-8")) < 6:
                norm = shortest(grapheme)
                if norm is not None:
                    out.append(norm)
                    sources.extend(g0 + min(k, len(grapheme) - 1) for k in range(len(norm)))
                    continue
            for k, c in enumerate(grapheme):
                norm = shortest(c)
                part = c if norm is None else norm
                out.append(part)
                sources.extend([g0 + k] * len(part))
        return piece.with_text("".join(out), sources if piece.align is not None else None)

    def _cluster(self, grapheme: str) -> str:
        """HF's rule for one grapheme cluster (the loop of :meth:`normalize`, without offsets)."""
        shortest = self.charsmap.shortest
        if len(grapheme.encode("utf-8")) < 6:
            norm = shortest(grapheme)
            if norm is not None:
                return norm
        parts = []
        for c in grapheme:
            norm = shortest(c)
            parts.append(c if norm is None else norm)
        return "".join(parts)

    def _screened(self, text: str, screen) -> str:
        """:meth:`normalize` of a text that needs no offsets: a cluster changes only if it holds a
        character that is a key or at which one may start (``CharsMap.screen``), so the text between
        those is kept whole, and only the clusters that hold them are looked up. An ASCII control
        character is a cluster of its own (but CR LF); for any other, the cluster it is in starts
        after the last whole cluster before it."""
        out: list[str] = []
        i, n = 0, len(text)
        keys = screen.keys
        while i < n:
            j = screen.next_stop(keys, text, i)
            if j == n:
                out.append(text[i:])
                break
            c = text[j]
            if c < " " or c == "\x7f":
                start = j - 1 if c == "\n" and j > i and text[j - 1] == "\r" else j
            else:
                start = _CLUSTERS_BEFORE_LAST.match(text, i, j).end()
            out.append(text[i:start])
            for cluster in _GRAPHEME.finditer(text, start):
                out.append(self._cluster(cluster.group()))
                if cluster.end() > j:
                    i = cluster.end()
                    break
        return "".join(out)


#: whole clusters while one more character follows: ends where the last cluster of the text starts
_CLUSTERS_BEFORE_LAST = regex.compile(r"(?:\X(?=[\s\S]))*")

_CHINESE = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
            (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


class _Verdicts(dict):
    """A per-character test's verdicts, each worked out the first time the character is met."""

    def __init__(self, test: Callable[[str], bool]) -> None:
        super().__init__()
        self.test = test

    def __missing__(self, c: str) -> bool:
        verdict = self[c] = self.test(c)
        return verdict


_BERT_REMOVES = _Verdicts(hf_unicode.bert_removes)
_BERT_NONSPACING = _Verdicts(hf_unicode.bert_nonspacing)
#: the whitespace clean_text makes a space (each character)
_OTHER_WHITESPACE = re.compile("[" + "".join(map(re.escape, sorted(WHITESPACE - {" "}))) + "]")


def _without(text: str, verdicts: _Verdicts) -> str:
    """``text`` without the characters ``verdicts`` says go: the test runs once per distinct character
    of the process (a class of every such code point costs ``re`` a test of each range per
    character, and listing them all 2.5 s)."""
    gone = [c for c in set(text) if verdicts[c]]
    return text.translate(dict.fromkeys(map(ord, gone))) if gone else text


@lru_cache(maxsize=1)
def _ascii_bert_clean() -> dict[int, str | None]:
    """clean_text on ASCII: the characters it removes, and whitespace made a space, as one translation."""
    return {c: None if hf_unicode.bert_removes(chr(c)) else " " for c in range(128)
            if hf_unicode.bert_removes(chr(c)) or chr(c) in WHITESPACE}


@lru_cache(maxsize=1)
def _chinese() -> "re.Pattern":
    return re.compile("([" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _CHINESE) + "])")


def _is_chinese(c: str) -> bool:
    cp = ord(c)
    return any(a <= cp <= b for a, b in _CHINESE)


class BertNormalizer(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.clean_text = bool(spec.get("clean_text", True))
        self.chinese = bool(spec.get("handle_chinese_chars", True))
        self.lowercase = bool(spec.get("lowercase", True))
        strip = spec.get("strip_accents")
        self.strip_accents = self.lowercase if strip is None else bool(strip)

    def normalize(self, piece: Piece) -> Piece:
        if piece.align is None:
            return Piece(self._normalize_text(piece.text), piece.start)
        if self.clean_text:
            piece = _filter_chars(piece, lambda c: not hf_unicode.bert_removes(c))
            piece = _map_chars(piece, lambda c: " " if c in WHITESPACE else c)
        if self.chinese:
            piece = _map_chars(piece, lambda c: f" {c} " if _is_chinese(c) else c)
        if self.strip_accents:
            piece = _unicode_normalize(piece, "NFD")
            piece = _filter_chars(piece, lambda c: not hf_unicode.bert_nonspacing(c))
        if self.lowercase:
            piece = _map_chars(piece, hf_unicode.lowercase)
        return piece

    def _normalize_text(self, text: str) -> str:
        """:meth:`normalize` without offsets: a translation or substitution per step over the text (ASCII
        text: one translation and ``str.lower``; NFD and its marks need no pass)."""
        if text.isascii():
            text = text.translate(_ascii_bert_clean()) if self.clean_text else text
            return text.lower() if self.lowercase else text
        if self.clean_text:
            text = _OTHER_WHITESPACE.sub(" ", _without(text, _BERT_REMOVES))
        if self.chinese:
            text = " ".join(_chinese().split(text))  # each character c as " c " (the class is captured)
        if self.strip_accents:
            text = _without(hf_unicode.normalize("NFD", text), _BERT_NONSPACING)
        if self.lowercase:
            text = Lowercase.lowered(text)
        return text


class ByteLevelNormalizer(Normalizer):
    """Every character replaced by the byte-level characters of its UTF-8 bytes."""

    def __init__(self, spec: dict, where: str) -> None:
        from ..formats.byte_alphabet import bytes_to_unicode

        self.spec = spec
        self.table = bytes_to_unicode()

    def normalize(self, piece: Piece) -> Piece:
        table = self.table
        return _map_chars(piece, lambda c: "".join(table[b] for b in c.encode("utf-8", "surrogatepass")))


class SentencePieceNormalizer(Normalizer):
    """SentencePiece's ``normalizer.cc`` (what a ``.model`` file's ``normalizer_spec`` asks for).

    Spec: ``{"type": "SentencePiece", "precompiled_charsmap": base64 or "", "add_dummy_prefix",
    "remove_extra_whitespaces", "escape_whitespaces", "user_defined": [...]}``. User-defined
    pieces pass through unnormalized, as SentencePiece's prefix matcher lets them.
    """

    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        self.charsmap = _charsmap(spec, where) if spec.get("precompiled_charsmap") else None
        self.dummy_prefix = bool(spec.get("add_dummy_prefix", True))
        self.collapse = bool(spec.get("remove_extra_whitespaces", True))
        self.escape = bool(spec.get("escape_whitespaces", True))
        user = sorted({u for u in spec.get("user_defined") or [] if u}, key=len, reverse=True)
        self.user_defined = regex.compile("|".join(map(regex.escape, user))) if user else None

    def _chunks(self, text: str):
        """(original chunk, normalized chunk, offset) in order: SentencePiece's NormalizePrefix."""
        data = text.encode("utf-8", "surrogatepass") if self.charsmap is not None else b""
        i, byte_pos = 0, 0
        while i < len(text):
            chunk, i, byte_pos = self._chunk_at(text, data, i, byte_pos)
            yield chunk

    def _chunk_at(self, text: str, data: bytes, i: int, byte_pos: int):
        """(the chunk at character ``i`` (byte ``byte_pos``), where the next starts, its byte)."""
        m = self.user_defined.match(text, i) if self.user_defined is not None else None
        if m is not None:
            return (m.group(), m.group(), i), m.end(), byte_pos + len(m.group().encode("utf-8", "surrogatepass"))
        if self.charsmap is not None:
            hit = self.charsmap.longest(data, byte_pos)
            if hit is not None:
                length, norm = hit
                # the key is whole characters of the text (keys are UTF-8 strings)
                j = i
                taken = 0
                while taken < length and j < len(text):
                    taken += len(text[j].encode("utf-8", "surrogatepass"))
                    j += 1
                return (text[i:j], norm, i), j, byte_pos + taken
            byte_pos += len(text[i].encode("utf-8", "surrogatepass"))
        c = text[i]
        return (c, ("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c), i), i + 1, byte_pos

    def _runs(self, text: str):
        """:meth:`_chunks` with the text between the stops of the charsmap as one chunk each
        (``CharsMap.screen``), for a text that needs no offsets. No key starts there but the keys of
        one character that begin no other, so each character is a chunk of its own, itself or that
        key's string; joined, with runs of spaces collapsed, they come out as the whitespace rule
        makes them (no such string holds two spaces)."""
        screen = self.charsmap.screen()
        stops, seconds = screen.stops, screen.seconds
        user = self.user_defined
        data = text.encode("utf-8", "surrogatepass")
        i, byte_pos, n = 0, 0, len(text)
        next_user = -1  # where the next user-defined piece starts (n: none)
        while i < n:
            j = screen.next_stop(stops, text, i)
            if i < j < n and text[j] in seconds:
                j -= 1  # a key of the character before and this one
            if user is not None:
                if next_user < i:
                    found = user.search(text, i)
                    next_user = n if found is None else found.start()
                j = min(j, next_user)
            if j > i:
                run = text[i:j]
                # the characters that are keys of their own and begin no other become their strings
                norm = screen.translated(run)
                if run.isascii():
                    byte_pos += j - i
                else:
                    byte_pos += len(run.encode("utf-8", "surrogatepass"))
                    norm = _SURROGATE.sub("\ufffd", norm)  # after: U+FFFD may be a key, a surrogate is none
                if self.collapse and "  " in norm:
                    norm = _SPACE_RUN.sub(" ", norm)
                yield run, norm, i
                i = j
                if i >= n:
                    break
            chunk, i, byte_pos = self._chunk_at(text, data, i, byte_pos)
            yield chunk

    def _plain(self, text: str) -> str:
        """:meth:`normalize` of a text with no charsmap and no user-defined pieces, by ``str`` methods
        (the character loop took 60% of Mistral's encode): lone surrogates read as U+FFFD, runs of
        spaces collapsed and the text stripped of them, spaces escaped, the dummy prefix, and the
        escaped trailing spaces stripped (any trailing ``▁``, as the loop does)."""
        if not text.isascii():
            text = _SURROGATE.sub("\ufffd", text)
        if self.collapse:
            text = text.lstrip(" ")
            if "  " in text:
                text = _SPACE_RUN.sub(" ", text)
        if not text:
            return text
        space = SPM_SPACE if self.escape else " "
        if self.escape:
            text = text.replace(" ", space)
        if self.dummy_prefix:
            text = space + text
        return text.rstrip(space) if self.collapse else text

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        if piece.align is None and self.charsmap is None and self.user_defined is None:
            return Piece(self._plain(text), piece.start)
        runs = piece.align is None and self.charsmap is not None and self.charsmap.screen() is not None
        chunks = self._runs(text) if runs else self._chunks(text)
        out: list[str] = []
        sources: list[int] = []
        pending = None
        if self.collapse:  # leading chunks that normalize to exactly " " are dropped
            for chunk in chunks:
                if chunk[1] != " ":
                    pending = chunk
                    break
            else:
                return piece.with_text("", [] if piece.align is not None else None)
        space = SPM_SPACE if self.escape else " "
        first = [pending] if pending is not None else []
        is_prev_space = self.collapse
        added_prefix = False
        for original, norm, offset in (*first, *chunks):
            if not added_prefix:
                added_prefix = True
                if self.dummy_prefix:
                    out.append(space)
                    sources.append(offset)
            if is_prev_space:
                norm = norm.lstrip(" ")
            if norm:
                text_out = norm.replace(" ", space) if self.escape else norm
                out.append(text_out)
                sources.extend([offset] * len(text_out))
                is_prev_space = norm.endswith(" ")
            if not self.collapse:
                is_prev_space = False
        result = "".join(out)
        if self.collapse:
            while result.endswith(space):
                result = result[: -len(space)]
            sources = sources[: len(result)]
        if piece.align is None:
            return Piece(result, piece.start)
        old = piece.align
        return Piece(result, piece.start, [old[k] for k in sources])

    def normalize_added_token(self, content: str) -> str:
        return content  # user-defined pieces are matched verbatim


class SequenceNormalizer(Normalizer):
    def __init__(self, spec: dict, where: str) -> None:
        self.spec = spec
        children = spec.get("normalizers")
        if not isinstance(children, list):
            raise VocabularyError(f"{where}: Sequence normalizer without a 'normalizers' list")
        self.parts = [build_normalizer(c, where) for c in children]
        self.parts = [p for p in self.parts if p is not None]

    def normalize(self, piece: Piece) -> Piece:
        for part in self.parts:
            piece = part.normalize(piece)
        return piece


NORMALIZER_TYPES: dict[str, type[Normalizer]] = {
    "NFC": UnicodeForm, "NFD": UnicodeForm, "NFKC": UnicodeForm, "NFKD": UnicodeForm,
    "Lowercase": Lowercase, "Strip": Strip, "StripAccents": StripAccents, "Replace": Replace,
    "Prepend": Prepend, "Precompiled": Precompiled, "BertNormalizer": BertNormalizer,
    "ByteLevel": ByteLevelNormalizer, "Sequence": SequenceNormalizer, "SentencePiece": SentencePieceNormalizer,
}


def changes_nothing(normalizer: Normalizer | None) -> bool:
    """True for no normalizer and for a ``Sequence`` of none (DeepSeek-V4's ``{"type": "Sequence",
    "normalizers": []}``): every text stays as it is."""
    return normalizer is None or (isinstance(normalizer, SequenceNormalizer)
                                  and all(changes_nothing(part) for part in normalizer.parts))


def build_normalizer(spec: dict | None, where: str = "normalizer") -> Normalizer | None:
    """The runtime normalizer of a ``tokenizer.json`` ``normalizer`` value (None for null)."""
    return build_component(spec, NORMALIZER_TYPES, "normalizer", where)
