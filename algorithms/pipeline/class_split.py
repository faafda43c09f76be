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
from .pretokenizers import (BertPreTokenizer, ByteLevel, CharDelimiterSplit, Digits, Punctuation,
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
def _branches(pattern: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(branch of every code point: uint8[0x110000], 0 for none; runs: bool[n + 1]) of a pattern that
    is an alternation of branches each one class taken once or as a greedy run, the classes disjoint;
    None for any other pattern."""
    program = pattern_program.compile_pattern(pattern)
    if program is None or len(program.branches) > 15:
        return None
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
    return branch, np.array(runs, dtype=bool)


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
                 first_regex: str | None = None) -> None:
        """``steps``: (class pattern, behavior, invert) each; ``first_regex``: the file regex of a first
        step that is no class step (its behavior and invert are then ``steps[0]``'s)."""
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
            branch, runs = made
            width = max(1, (len(runs) - 1).bit_length())
            fields.append((branch, shift))
            self.steps.append(Step(shift, (1 << width) - 1, runs, behavior, invert))
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

    def cuts(self, points: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cut: bool[n + 1], gone: bool[n]) of the stretch whose code points are ``points`` (its UTF-8:
        ``data``)."""
        n = len(points)
        cut = np.zeros(n + 1, dtype=bool)
        cut[0] = cut[n] = True
        gone = np.zeros(n, dtype=bool)
        if n == 0:
            return cut, gone
        words = self.table[points]
        before = cut[:-1]  # a view: steps' new cuts show up in it
        for step in self.steps:
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
        return cut, gone

    def pieces(self, text: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(bytes: uint8[...], ends: int64[k]) of ``text``'s pieces, or None when it holds a lone surrogate."""
        if text.isascii():
            data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
            points, lengths = data, None
        else:
            try:
                points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            except UnicodeEncodeError:
                return None
            data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            lengths = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
        cut, gone = self.cuts(points, data)
        kept = ~gone
        everything = bool(kept.all())
        if not everything:
            data = data[kept if lengths is None else np.repeat(kept, lengths)]
        offsets = np.zeros(len(points) + 1, dtype=np.int64)  # byte offsets, removed characters counted as none
        if lengths is None:
            if everything:
                offsets = np.arange(len(points) + 1, dtype=np.int64)
            else:
                np.cumsum(kept, out=offsets[1:])
        else:
            np.cumsum(lengths * kept if not everything else lengths, out=offsets[1:])
        closing = np.flatnonzero(cut[1:] & kept)  # the last character of each piece
        ends = offsets[closing + 1]
        if self.prefix_space and len(ends):
            opening = np.flatnonzero(cut[:-1] & kept)
            wanted = points[opening] != 0x20
            if wanted.any():
                data = np.insert(data, offsets[opening[wanted]], np.uint8(0x20))
                ends = ends + np.cumsum(wanted)
        if len(self.piece_end) and len(ends):
            data = np.insert(data, np.repeat(ends, len(self.piece_end)), np.tile(self.piece_end, len(ends)))
            ends = ends + len(self.piece_end) * np.arange(1, len(ends) + 1)
        return data, ends


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
    if byte_level_model:
        if not parts or not isinstance(parts[-1], ByteLevel) or parts[-1].use_regex:
            return None
        prefix_space = parts.pop().add_prefix_space
    steps = []
    first_regex = None
    for k, part in enumerate(parts):
        made = _steps_of(part)
        if made is not None and (k > 0 or _branches(made[0][0]) is not None):
            steps.extend(made)
            continue
        regex = _file_regex(part) if k == 0 else None
        if regex is None:
            return None
        first_regex = regex
        steps.append(("", part.behavior, part.invert))
    if not steps:
        return None
    try:
        return ClassSplit(steps, prefix_space=prefix_space, piece_end=piece_end, first_regex=first_regex)
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
