"""HF pre-tokenizers made of character-class steps, split over a whole stretch with numpy.

HF's ``Whitespace``, ``WhitespaceSplit``, ``BertPreTokenizer``, ``Punctuation``, ``Digits``,
``CharDelimiterSplit`` and any ``Split`` whose pattern is an alternation of one-class branches
(``\\s+``, ``[,.!?]``, ``'``, ``\\w+|[^\\w\\s]+``), in every ``behavior``, inverted or not, match
runs or single characters of classes that do not overlap. :mod:`.pretokenizers` runs them in
Python, a ``Piece`` per piece and step (0.3-1 MB/s); here a whole stretch is split at once.

Every step only cuts pieces and removes spans, so what the steps have done to a stretch of ``n``
characters is two masks: ``cut[i]``, a piece boundary before character ``i`` (``cut[0]`` and
``cut[n]`` always), and ``gone[i]``, character ``i`` removed (a removed span is cut on both sides,
so a piece is never partly gone). One table gives every code point its branch in each step
(0 for none). Within a piece, a character of a run branch continues the match of the character
before it when that one is of the same branch; any other matching character starts a match.
HF's ``find_matches`` spans then start at the piece's start, at each match start and right after
each match end, and each span is a match or not (swapped by ``invert``). The behaviours, as
HF's ``NormalizedString::split`` folds the spans:

* ``Isolated``: a cut at every span start; ``Removed`` the same, and the matching spans gone;
* ``Contiguous``: a cut where a span's flag differs from the one before it;
* ``MergedWithPrevious``: a cut at every span start but a match's after a non-match;
* ``MergedWithNext``: a cut at every span start but a non-match's after a match.

A ``Split`` matching exactly ``k`` characters of one class (``[0-9][0-9][0-9]``) is a class step
too: in each run of the class within a piece, ``k`` at a time from the run's start.

Steps after a ``ByteLevel`` (Falcon's ``Digits`` and three-digit ``Split``) see byte-level
characters: the steps up to it (``Isolated`` splits and its own regex) are split by their compiled
list (``hf_pipeline.split_list``), and the later class steps read each byte as its byte-level
character, so a piece may end inside a character (``²`` is also the continuation byte 0xB2), as HF's
does.

A last ``Metaspace`` (HF: each piece's spaces replaced by its marker, the marker put before a piece
that does not start with one, by its ``prepend_scheme``, then with ``split`` a ``MergedWithNext``
split on the marker) is one more class step, spaces and markers of the stretch one class: the steps
read the stretch's own characters, and a space is a marker once replaced. Its marker is written in
place of each space of the pieces' UTF-8 and before each piece of the steps before it that it
prefixes (for ``first``, those holding a character of the original text's offset 0, read from the
stretch's alignment), which starts the first piece of its split.

A first step that is no class step but whose regex compiles (CLIP's ``Split``) takes its spans
from the compiled split (``llama_cpp_program.ListSplitter``, HF's ``Isolated`` pieces), each a match
when its first character starts one: that holds when every branch begins with a class taken at
least once and each such character is also taken alone by a one-class-run branch
(:func:`_starts`).

The pieces are the kept stretches between cuts; their UTF-8 (what a character-level model, or a
byte-level one behind a last ``ByteLevel`` step, encodes) and where each ends go to the compiled
BPE stage in one call, a space before a piece that does not start with one (``ByteLevel``'s
``add_prefix_space``) and the end-of-word byte after each (``formats.word_suffix``) inserted.

Complexity: a fixed number of numpy passes over the stretch per step (and the compiled split's
own pass for a first step); building the table is one pass over every code point per step (the
classes' lists come from ``pattern_program``'s cache).
Exact: the pieces are :mod:`.pretokenizers`' (and HF's), ``tests/test_class_split.py``. A text with
a lone surrogate (no table entry: ``regex`` may match it) is left to the Python pre-tokenizers.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import pattern_program
from .pretokenizers import (BertPreTokenizer, ByteLevel, CharDelimiterSplit, Digits, Metaspace, Punctuation,
                            SequencePreTokenizer, Split, Whitespace, WhitespaceSplit, WHITESPACE_REGEX)
from .text_pieces import WHITESPACE, character_class

_N_CODEPOINTS = 0x110000
_BEHAVIORS = ("Isolated", "Removed", "Contiguous", "MergedWithPrevious", "MergedWithNext")


class Step(NamedTuple):
    """One split: its field in the packed branch table, which branches match runs, and what it does.
    A first step whose regex compiles but is no class step has ``splitter``: its spans come from
    the compiled split (``llama_cpp_program.ListSplitter``), and its one-bit field says which
    characters start a match."""

    shift: int
    mask: int
    runs: np.ndarray  # bool[n_branches + 1]: branch b matches a run (True) or one character; 0 is no branch
    behavior: str
    invert: bool
    splitter: object = None
    chunk: int = 0  # a step matching exactly this many characters of one class (its branch 1)


def _steps_of(part) -> list[tuple[str, str, bool]] | None:
    """(pattern, behavior, invert) of each split a pre-tokenizer component makes, or None when one is
    not a class step. The patterns are read as :mod:`.pretokenizers` reads them."""
    import regex

    from .hf_unicode import char_class

    whitespace = character_class(ord(c) for c in WHITESPACE)
    if isinstance(part, Split):
        return None if part.pattern is None else [(part.pattern.pattern, part.behavior, part.invert)]
    if isinstance(part, Digits):
        return [(char_class("numeric"), "Isolated" if part.individual else "Contiguous", False)]
    if isinstance(part, Punctuation):
        return [(char_class("punctuation"), part.behavior, False)]
    if isinstance(part, Whitespace):
        return [(WHITESPACE_REGEX, "Removed", True)]
    if isinstance(part, WhitespaceSplit):
        return [(whitespace, "Removed", False)]
    if isinstance(part, BertPreTokenizer):
        return [(whitespace, "Removed", False), (char_class("punctuation"), "Isolated", False)]
    if isinstance(part, CharDelimiterSplit):
        return [(regex.escape(part.delimiter), "Removed", False)]
    return None


@lru_cache(maxsize=32)
def _branches(pattern: str) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(branch of every code point: uint8[0x110000], 0 for none; runs: bool[n + 1]; chunk) of a pattern
    that is an alternation of branches each one class taken once or as a greedy run, the classes
    disjoint (chunk 0), or one class exactly ``chunk`` >= 2 times (``[0-9][0-9][0-9]``, ``\\d{3}``);
    None for any other pattern."""
    program = pattern_program.compile_pattern(pattern)
    if program is None or len(program.branches) > 15:
        return None
    chunk = _chunk(program)
    if chunk:
        bits = pattern_program.code_point_classes(program)
        branch = ((bits >> int(program.items[0, 1])) & 1).astype(np.uint8)
        return branch, np.zeros(2, dtype=bool), chunk
    runs = [False]
    classes = []
    for first, end in program.branches.tolist():
        if end != first + 1:
            return None
        kind, cls, low, high, mode, _ = program.items[first].tolist()
        if kind != pattern_program.CLASS or low != 1 or high not in (1, pattern_program.UNBOUNDED):
            return None
        runs.append(high == pattern_program.UNBOUNDED and mode != pattern_program.LAZY)
        classes.append(cls)
    bits = pattern_program.code_point_classes(program)
    branch = np.zeros(_N_CODEPOINTS, dtype=np.uint8)
    taken = np.zeros(_N_CODEPOINTS, dtype=bool)
    for b, cls in enumerate(classes, start=1):
        member = ((bits >> cls) & 1).astype(bool)
        if (member & taken).any():
            return None  # overlapping branches: which one matches depends on where the match began
        branch[member] = b
        taken |= member
    return branch, np.array(runs, dtype=bool), 0


def _chunk(program) -> int:
    """``k`` when ``program`` is one branch matching exactly ``k`` >= 2 characters of one class, else 0."""
    if len(program.branches) != 1:
        return 0
    first, end = program.branches[0].tolist()
    items = program.items[first:end].tolist()
    if any(item[0] != pattern_program.CLASS or item[1] != items[0][1] or item[2] != item[3] for item in items):
        return 0
    k = sum(item[2] for item in items)
    return k if k >= 2 else 0


def _starts(source: str) -> np.ndarray | None:
    """Which code points start a match of the file regex ``source`` (``bool[0x110000]``), when that alone
    says whether HF's ``find_matches`` span beginning there is a match: every branch starts with a
    class (or a group of literals) taken at least once, and each such character is also taken alone
    by a branch that is one class run (so the search matches wherever one stands; where none does,
    the span is text between matches). None otherwise."""
    from .text_pieces import onig_regex

    program = pattern_program.compile_pattern(onig_regex(source))
    if program is None:
        return None
    first_classes, alone = [], []
    items = program.items
    for first, end in program.branches.tolist():
        kind, cls, low, high, _, alternative = items[first].tolist()
        if kind == pattern_program.CLASS and low >= 1:
            first_classes.append(cls)
            if end == first + 1 and low == 1:
                alone.append(cls)
        elif kind == pattern_program.GROUP and low >= 1:
            count = int(program.group_alternatives[first])
            offsets = program.alternatives
            for a in range(alternative, alternative + count):
                if offsets[a + 1] == offsets[a]:
                    return None  # an empty alternative
                first_classes.append(int(program.alternative_classes[offsets[a]]))
        else:
            return None
    bits = pattern_program.code_point_classes(program)
    starts = (bits & sum(1 << c for c in set(first_classes))) != 0
    if (starts & ((bits & sum(1 << c for c in set(alone))) == 0)).any():
        return None
    return starts


class ClassSplit:
    """A pre-tokenizer's pieces of a stretch as (UTF-8 bytes, piece ends), for the piece stage."""

    def __init__(self, steps: list[tuple[str, str, bool]], *, prefix_space: bool = False, piece_end: bytes = b"",
                 first_regex: str | None = None, lead: tuple[str, ...] | None = None,
                 metaspace: Metaspace | None = None) -> None:
        """``steps``: (class pattern, behavior, invert) each; ``first_regex``: the file regex of a first
        step that is no class step (its behavior and invert are then ``steps[0]``'s). ``lead``: the
        regexes (``Isolated``) of the steps up to a ``ByteLevel`` (its own regex last), split by their
        compiled list; ``steps`` then come after that ``ByteLevel`` and read each byte as its
        byte-level character (a piece may then end inside a character, as HF's does). ``metaspace``: a
        last ``Metaspace`` step (its split, when it has one, is the last of ``steps``), whose spaces
        and prefix :meth:`pieces` writes."""
        self.metaspace = metaspace
        fields, self.steps = [], []
        shift = 0
        for k, (pattern, behavior, invert) in enumerate(steps):
            if behavior not in _BEHAVIORS:
                raise ValueError(behavior)
            if k == 0 and first_regex is not None:
                from .llama_cpp_program import ListSplitter

                starts = _starts(first_regex)
                splitter = None if starts is None else ListSplitter.of_splits((first_regex,))
                if splitter is None:
                    raise ValueError(f"no compiled split for {first_regex[:60]!r}")
                fields.append((starts.astype(np.uint8), shift))
                self.steps.append(Step(shift, 1, np.zeros(2, dtype=bool), behavior, invert, splitter))
                shift += 1
                continue
            made = _branches(pattern)
            if made is None:
                raise ValueError(f"not a class step: {pattern[:60]!r}")
            branch, runs, chunk = made
            width = max(1, (len(runs) - 1).bit_length())
            fields.append((branch, shift))
            self.steps.append(Step(shift, (1 << width) - 1, runs, behavior, invert, chunk=chunk))
            shift += width
        if shift > 32:
            raise ValueError("too many class steps")
        dtype = np.uint8 if shift <= 8 else np.uint16 if shift <= 16 else np.uint32
        table = np.zeros(_N_CODEPOINTS, dtype=dtype)
        for branch, at in fields:
            table |= branch.astype(dtype) << dtype(at)
        #: every code point's branch in each step, packed
        self.table = table
        self.prefix_space = prefix_space
        self.piece_end = np.frombuffer(piece_end, dtype=np.uint8)
        #: the steps after a ``ByteLevel`` read bytes (``lead``); the compiled list of those before it
        self.byte_mode = lead is not None
        self.lead = None
        if lead is not None:
            from ..formats.byte_alphabet import bytes_to_unicode
            from .llama_cpp_program import ListSplitter

            self.lead = ListSplitter.of_splits(lead) if lead else None
            if (lead and self.lead is None) or prefix_space:
                raise ValueError("no compiled list for the steps before ByteLevel")
            characters = bytes_to_unicode()
            #: each byte's words, read as its byte-level character
            self.byte_table = table[[ord(characters[b]) for b in range(256)]]

    def cuts(self, points: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cut: bool[n + 1], gone: bool[n]) of the stretch whose code points are ``points`` (its UTF-8:
        ``data``); with a ``lead``, of its bytes."""
        cut, gone, _ = self._cuts(points, data)
        return cut, gone

    def _cuts(self, points: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`cuts`, and the cuts before a last ``Metaspace`` step split (where its prefix goes)."""
        n = len(points)
        split_last = self.metaspace is not None and self.metaspace.split
        cut = np.zeros(n + 1, dtype=bool)
        cut[0] = cut[n] = True
        gone = np.zeros(n, dtype=bool)
        if n == 0:
            return cut, gone, cut
        if self.byte_mode:
            if self.lead is not None:
                cut[self.lead.piece_ends(data)] = True
            words = self.byte_table[data]
        else:
            words = self.table[points]
        before = cut[:-1]  # a view: steps' new cuts show up in it
        opened = cut
        for k, step in enumerate(self.steps):
            if split_last and k == len(self.steps) - 1:
                opened = cut.copy()
            if step.splitter is not None:  # the first step: the whole stretch is one piece
                span_start = np.zeros(n, dtype=bool)
                ends = step.splitter.piece_ends(data)[:-1]
                span_start[0] = True
                span_start[ends if len(data) == n else _characters_before(data, ends)] = True
                # a span is a match when its first character starts one
                first = np.maximum.accumulate(np.where(span_start, np.arange(n), 0))
                matched = ((words[first] >> step.shift) & 1).astype(bool)
            else:
                branch = (words >> step.shift) & step.mask
                matched = branch != 0
                if step.chunk:
                    matched, goes_on = _chunks(matched, before, step.chunk)
                else:
                    # a character continues the match before it: same run branch, same piece
                    goes_on = np.zeros(n, dtype=bool)
                    np.equal(branch[1:], branch[:-1], out=goes_on[1:])
                    goes_on &= step.runs[branch]  # (no branch is no run)
                    goes_on &= ~before
                span_start = before | (matched & ~goes_on)
                span_start[1:] |= matched[:-1] & ~goes_on[1:]  # right after a match that ended
            flag = ~matched if step.invert else matched
            behavior = step.behavior
            if behavior in ("Isolated", "Removed"):
                new = span_start
                if behavior == "Removed":
                    gone |= flag
            else:
                flag_before = np.empty(n, dtype=bool)
                flag_before[0] = False
                flag_before[1:] = flag[:-1]
                if behavior == "Contiguous":
                    new = span_start & (flag != flag_before)
                elif behavior == "MergedWithPrevious":
                    new = span_start & ~(flag & ~flag_before)
                else:  # MergedWithNext
                    new = span_start & ~(flag_before & ~flag)
            before |= new
        return cut, gone, opened

    def pieces(self, text: str, align: list[int] | None = None,
               start: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
        """(bytes: uint8[...], ends: int64[k]) of ``text``'s pieces, or None when it holds a lone surrogate.
        ``align``: the original offset of each character of ``text`` (``Piece.align``), else None and
        every character at ``start``; read by a ``Metaspace`` step whose prefix goes on the first
        piece only."""
        metaspace = self.metaspace
        if (self.byte_mode or text.isascii()) and metaspace is None:
            try:
                data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            except UnicodeEncodeError:
                return None
            points, lengths = data, None  # (with a ``lead``, the bytes are the characters)
        else:
            try:
                points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            except UnicodeEncodeError:
                return None
            data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            written = points
            if metaspace is not None:  # its spaces are written as its replacement (the steps read spaces)
                written = np.where(points == 0x20, np.uint32(ord(metaspace.replacement)), points)
            lengths = 1 + (written >= 0x80).astype(np.int64) + (written >= 0x800) + (written >= 0x10000)
        cut, gone, opened = self._cuts(points, data)
        if metaspace is not None:
            data = np.frombuffer(text.replace(" ", metaspace.replacement).encode("utf-8"), dtype=np.uint8)
        kept = ~gone
        everything = bool(kept.all())
        if not everything:
            data = data[kept if lengths is None else np.repeat(kept, lengths)]
        offsets = np.zeros(len(points) + 1, dtype=np.int64)  # byte offsets, removed characters counted as none
        np.cumsum(kept if lengths is None else lengths * kept, out=offsets[1:])
        closing = np.flatnonzero(cut[1:] & kept)  # the last character of each piece
        ends = offsets[closing + 1]
        if self.prefix_space and len(ends):
            opening = np.flatnonzero(cut[:-1] & kept)
            wanted = points[opening] != 0x20
            if wanted.any():
                data = np.insert(data, offsets[opening[wanted]], np.uint8(0x20))
                ends = ends + np.cumsum(wanted)
        if metaspace is not None and metaspace.scheme != "never" and len(ends):
            data, ends = self._prefixed(data, ends, points, kept, opened, offsets, align, start)
        if len(self.piece_end) and len(ends):
            data = np.insert(data, np.repeat(ends, len(self.piece_end)), np.tile(self.piece_end, len(ends)))
            ends = ends + len(self.piece_end) * np.arange(1, len(ends) + 1)
        return data, ends


    def _prefixed(self, data, ends, points, kept, opened, offsets, align, start) -> tuple[np.ndarray, np.ndarray]:
        """(data, ends) with a last ``Metaspace`` step's replacement written before each piece it prefixes:
        the pieces before its own split (cut at ``opened``) that do not start with a space or the
        replacement, for ``first`` only those that hold a character of the original text's offset 0
        (HF: a split whose original start is 0). The replacement then starts the first piece of its
        split."""
        metaspace = self.metaspace
        marker = ord(metaspace.replacement)
        opening = np.flatnonzero(opened[:-1] & kept)
        wanted = (points[opening] != 0x20) & (points[opening] != marker)
        if metaspace.scheme == "first":
            if align is None:  # every character at ``start`` (``Piece.slice`` without alignments)
                wanted &= start == 0
            else:
                closing = np.flatnonzero(opened[1:] & kept)
                at_zero = np.zeros(len(points) + 1, dtype=np.int64)
                np.cumsum((np.asarray(align, dtype=np.int64) == 0) & kept, out=at_zero[1:])
                wanted &= at_zero[closing + 1] > at_zero[opening]
        if not wanted.any():
            return data, ends
        where = offsets[opening[wanted]]
        written = np.frombuffer(metaspace.replacement.encode("utf-8"), dtype=np.uint8)
        data = np.insert(data, np.repeat(where, len(written)), np.tile(written, len(where)))
        return data, ends + len(written) * np.searchsorted(where, ends, side="left")


def _chunks(member: np.ndarray, before: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(matched, goes on) of a pattern matching exactly ``k`` characters of one class: in each run of
    the class within a piece, the leftmost search takes ``k`` at a time from its start, the rest of
    the run matching nothing."""
    n = len(member)
    starts = member.copy()
    starts[1:] &= ~member[:-1] | before[1:]
    starts[0] = member[0]
    index = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, index, 0))
    offset = index - first
    # each run's length, spread over it: where the next run start or non-member is
    ends = member.copy()
    ends[:-1] &= ~member[1:] | before[1:]
    last = np.minimum.accumulate(np.where(ends, index, n)[::-1])[::-1]
    length = last - first + 1
    matched = member & (offset < length // k * k)
    return matched, matched & (offset % k != 0)


def _characters_before(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """How many characters of the UTF-8 ``data`` start before each byte offset."""
    leads = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum((data & 0xC0) != 0x80, out=leads[1:])
    return leads[offsets]


def class_split(pre_tokenizer, *, byte_level_model: bool, piece_end: bytes = b"") -> ClassSplit | None:
    """The :class:`ClassSplit` of a pre-tokenizer (:mod:`.pretokenizers` objects), or None when one of
    its steps is not a class step. A byte-level model needs ``ByteLevel`` without its regex as the last
    step (the pieces are then the UTF-8 of the text's own characters); a character-level model
    encodes the pieces' UTF-8 and takes no ``ByteLevel``."""
    if pre_tokenizer is None:
        return None
    parts = list(pre_tokenizer.parts) if isinstance(pre_tokenizer, SequencePreTokenizer) else [pre_tokenizer]
    prefix_space = False
    lead = None
    if byte_level_model:
        levels = [k for k, part in enumerate(parts) if isinstance(part, ByteLevel)]
        if len(levels) != 1:
            return None
        if levels[0] < len(parts) - 1:  # class steps after it (Falcon's): the steps up to it a compiled list
            from .split_lists import split_list

            if parts[levels[0]].add_prefix_space:
                return None
            if levels[0] == 0 and not parts[0].use_regex:
                lead = ()  # nothing splits before it
            else:
                lead = split_list({"model": {"type": "BPE"}, "pre_tokenizer": {
                    "type": "Sequence", "pretokenizers": [part.spec for part in parts[:levels[0] + 1]]}})
                if lead is None:
                    return None
            parts = parts[levels[0] + 1:]
        elif parts[-1].use_regex:
            return None
        else:
            prefix_space = parts.pop().add_prefix_space
    metaspace = parts.pop() if not byte_level_model and parts and isinstance(parts[-1], Metaspace) else None
    steps = []
    first_regex = None
    for k, part in enumerate(parts):
        made = _steps_of(part)
        if made is not None and (k > 0 or lead is not None or _branches(made[0][0]) is not None):
            steps.extend(made)
            continue
        regex = _file_regex(part) if k == 0 and lead is None else None
        if regex is None:
            return None
        first_regex = regex
        steps.append(("", part.behavior, part.invert))
    if metaspace is not None and metaspace.split:
        # after its spaces are replaced, a cut before each replacement but one that starts a split (HF's
        # ``MergedWithNext`` on it); the steps read the stretch's own characters, so spaces count too
        from regex import escape

        steps.append((f"[{escape(' ')}{escape(metaspace.replacement)}]", "MergedWithNext", False))
    if not steps and metaspace is None:
        return None
    try:
        return ClassSplit(steps, prefix_space=prefix_space, piece_end=piece_end, first_regex=first_regex, lead=lead,
                          metaspace=metaspace)
    except ValueError:
        return None


def _file_regex(part) -> str | None:
    """The regex a ``Split`` step's file gives (a ``String`` pattern escaped), as ``ListSplitter``
    takes it; None for any other step."""
    import regex

    if not isinstance(part, Split) or part.pattern is None:
        return None
    pattern = part.spec.get("pattern") or {}
    if isinstance(pattern.get("Regex"), str):
        return pattern["Regex"]
    return regex.escape(pattern["String"]) if isinstance(pattern.get("String"), str) and pattern["String"] else None
