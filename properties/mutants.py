"""Broken encoders the kit must reject: realistic bugs, each one small change away from correct.

Every mutant claims to be exact (and some claim ``appending`` / ``interval``), so a
kit that lets one pass is a kit with a hole. ``properties/test_mutants.py`` runs
``bpebench verify bpebench.properties.mutants:<Name>`` on each and requires a failure with a
minimal counterexample under the ``ci`` profile.

The ``Control*`` classes are the same code without the bug; the kit must pass
them (otherwise a "rejected" mutant might only show a broken check).

None of these is registered: they exist for the kit only. Plain Python, O(n^2)
(like ``naive``); the compatibility-based ones are the paper's prefix table
(seed 001) over a Python port of the boundary test.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary, pair_lookup
from bpebench.algorithms.core.encoder import Encoder
from bpebench.algorithms.kernels.reference import bpe_reference

from .oracles import table_encode

_NO_MERGE = 1 << 62


# ----------------------------------------------------------------------------- a configurable reference
class _ReferenceLike(Encoder):
    """The definition, with the three decisions a bug can hide in made overridable:
    which pairs merge (:meth:`merge`), at what priority, and which best pair goes first (:meth:`pick`)."""

    name = ""
    capabilities = frozenset({"exact"})

    def merge(self, left: int, right: int):
        return self.vocabulary.merge(left, right)

    def pick(self, priorities: list[int], best: int) -> int:
        return priorities.index(best)  # leftmost

    def encode(self, data: bytes) -> list[int]:
        byte_token = self.vocabulary.byte_token
        parts = [int(byte_token[b]) for b in data]

        def look(i):
            found = self.merge(parts[i], parts[i + 1])
            return (_NO_MERGE, -1) if found is None else found

        looks = [look(i) for i in range(len(parts) - 1)]
        prio = [p for p, _ in looks]
        result = [m for _, m in looks]
        while prio:
            best = min(prio)
            if best == _NO_MERGE:
                break
            i = self.pick(prio, best)
            parts[i : i + 2] = [result[i]]
            del prio[i], result[i]
            if i > 0:
                prio[i - 1], result[i - 1] = look(i - 1)
            if i < len(parts) - 1:
                prio[i], result[i] = look(i)
        return parts


class ControlReference(_ReferenceLike):
    """No bug: must pass every check."""


class RightmostTieBreak(_ReferenceLike):
    """Among equally good merges, takes the rightmost (``aaa`` -> ``a aa`` instead of ``aa a``)."""

    def pick(self, priorities, best):
        return len(priorities) - 1 - priorities[::-1].index(best)


class DropsLongTokens(_ReferenceLike):
    """A merge table built with a fixed 8-byte key width: merges into longer tokens are lost."""

    def merge(self, left, right):
        found = self.vocabulary.merge(left, right)
        if found is not None and len(self.vocabulary.tokens[found[1]]) > 8:
            return None
        return found


class RanksRuleForMergesVocab(_ReferenceLike):
    """Always uses the tiktoken rule "merge if the concatenation is a token", also for HF merge lists."""

    def merge(self, left, right):
        vocab = self.vocabulary
        merged = vocab.token_id(vocab.tokens[left] + vocab.tokens[right])
        return None if merged is None else (int(vocab.priority[merged]), merged)


class IdAsPriority(_ReferenceLike):
    """Takes the merged token's id as its priority (right for tiktoken, wrong for HF/SentencePiece)."""

    def merge(self, left, right):
        found = self.vocabulary.merge(left, right)
        return None if found is None else (found[1], found[1])


class GreedyPosingAsExact(Encoder):
    """Leftmost-longest matching declared exact: right on most text, wrong on ``cbbb`` in the seed dictionary."""

    capabilities = frozenset({"exact"})

    def encode(self, data: bytes) -> list[int]:
        vocab = self.vocabulary
        longest = max(len(t) for t in vocab.tokens)
        out, i = [], 0
        while i < len(data):
            for end in range(min(len(data), i + longest), i, -1):
                t = vocab.token_id(data[i:end])
                if t is not None:
                    out.append(t)
                    i = end
                    break
        return out


class DropsLastByteOnOddLength(_ReferenceLike):
    """Reads the input two bytes at a time and forgets the tail when the length is odd."""

    def encode(self, data: bytes) -> list[int]:
        return super().encode(data[: len(data) - len(data) % 2])


class DropsIncompleteUtf8AtEdges(_ReferenceLike):
    """Decodes with ``errors="ignore"`` to "clean" the piece: split UTF-8 characters at its edges vanish."""

    def encode(self, data: bytes) -> list[int]:
        return super().encode(data.decode("utf-8", "ignore").encode("utf-8"))


class ReturnsNoneOnEmpty(_ReferenceLike):
    """An early exit without a value: ``encode(b"")`` returns None."""

    def encode(self, data: bytes):
        if not data:
            return None
        return super().encode(data)


class RaisesOnRareByte(_ReferenceLike):
    """Indexes a UTF-8 length table that stops at 0xF7: bytes 0xF8..0xFF raise IndexError."""

    _UTF8_LENGTH = [1] * 0x80 + [0] * 0x40 + [2] * 0x20 + [3] * 0x10 + [4] * 0x08

    def encode(self, data: bytes) -> list[int]:
        for b in data:
            self._UTF8_LENGTH[b]
        return super().encode(data)


class HangsOnRareInput(_ReferenceLike):
    """Walks back over the trailing run of one byte in a ring buffer: never stops when the
    whole input (3 bytes or more) is that one byte (Python: cut by the per-call time limit)."""

    def encode(self, data: bytes) -> list[int]:
        if len(data) >= 3:
            i = len(data) - 1
            while data[i] == data[-1]:
                i = (i - 1) % len(data)  # the bug: wraps around instead of stopping at 0
        return super().encode(data)


@njit(cache=True)
def _trailing_run_start(data):
    n = len(data)
    i = n - 1
    while data[i] == data[n - 1]:
        i = (i - 1) % n  # the same bug, compiled
    return i


class HangsInCompiledCode(_ReferenceLike):
    """The same bug inside numba: nothing in the process can interrupt it; the worker watchdog must."""

    def encode(self, data: bytes) -> list[int]:
        if len(data) >= 3:
            _trailing_run_start(np.frombuffer(data, dtype=np.uint8))
        return super().encode(data)


class StaleCacheKeyedOnPrefix(_ReferenceLike):
    """Memoises encodings under a cheap key (length and first two bytes): another input with the
    same key gets the earlier input's ids. Wrong only after an earlier call, never on a fresh
    encoder: the kit must replay the calls before it to show the failure."""

    def __init__(self, vocabulary) -> None:
        super().__init__(vocabulary)
        self._memo: dict = {}

    def encode(self, data: bytes) -> list[int]:
        key = (len(data), data[:2])
        if key not in self._memo:
            self._memo[key] = super().encode(data)
        return list(self._memo[key])


class CountUsesGreedyFastPath(_ReferenceLike):
    """``encode`` is exact but ``count`` takes a "fast path" (leftmost-longest) that disagrees."""

    def count(self, data: bytes) -> int:
        return len(GreedyPosingAsExact(self.vocabulary).encode(data))


# ----------------------------------------------------------------------------- the prefix table with a compatibility test
def _compatible(tables, a: int, b: int, *, strict: bool = True, tie_rule: bool = True) -> bool:
    """Python port of ``bpebench.algorithms.kernels.compiled.compatible`` with two knobs for bugs."""
    priority, split_left, split_right = tables.priority, tables.split_left, tables.split_right
    limit = int(NEVER) + 1
    while True:
        merged = int(pair_lookup(tables.pair_keys, tables.pair_vals, a, b))
        if merged >= 0:
            p = int(priority[merged])
            if (p < limit) if strict else (p <= limit):
                return False
        a_base, b_base = split_left[a] < 0, split_left[b] < 0
        if a_base and b_base:
            return True
        if not a_base and (b_base or priority[a] > priority[b]):
            limit = int(priority[a])
            a = int(split_right[a])
        else:
            limit = int(priority[b]) + (1 if tie_rule else 0)
            b = int(split_left[b])


class _TableLike(Encoder):
    capabilities = frozenset({"exact"})
    strict = True
    tie_rule = True

    def __init__(self, vocabulary) -> None:
        super().__init__(vocabulary)
        self.tables = compile_vocabulary(vocabulary)

    def encode(self, data: bytes) -> list[int]:
        tables = self.tables
        return table_encode(
            self.vocabulary, data,
            lambda a, b: _compatible(tables, a, b, strict=self.strict, tie_rule=self.tie_rule),
            reachable=lambda t: tables.priority[t] < NEVER,
        )


class ControlTable(_TableLike):
    """The paper's prefix-table algorithm with a correct compatibility test: must pass."""


class PriorityLessOrEqual(_TableLike):
    """The boundary test compares priorities with ``<=`` where ``<`` is right."""

    strict = False


class CompatIgnoresTieRule(_TableLike):
    """The boundary test forgets that the left pair wins a tie (``limit = priority`` without ``+ 1``)."""

    tie_rule = False


# ----------------------------------------------------------------------------- incremental and interval
class _Appender:
    def __init__(self, vocab, keeps_partial_token: bool) -> None:
        self.vocab = vocab
        self.text = b""
        self.ids: list[int] = []
        self.keeps_partial_token = keeps_partial_token

    def push(self, data: bytes) -> None:
        self.text += data
        self.ids = bpe_reference(self.vocab, self.text)

    def truncate(self, length: int) -> None:
        if self.keeps_partial_token:
            # the bug: keep the old tokens that start before the cut, as if the cut
            # token stayed one token (it may need several)
            kept, position = [], 0
            for t in self.ids:
                if position >= length:
                    break
                kept.append(t)
                position += len(self.vocab.tokens[t])
            self.ids = kept
        else:
            self.ids = bpe_reference(self.vocab, self.text[:length])
        self.text = self.text[:length]

    def count(self) -> int:
        return len(self.ids)


class ControlAppending(_ReferenceLike):
    """A correct (slow) appending counter: must pass."""

    capabilities = frozenset({"exact", "appending"})

    def appender(self):
        return _Appender(self.vocabulary, keeps_partial_token=False)


class AppendingTruncateKeepsPartialToken(ControlAppending):
    """After ``truncate`` inside a token the count is off by one or more (the cut token counts as one)."""

    def appender(self):
        return _Appender(self.vocabulary, keeps_partial_token=True)


class _Interval:
    def __init__(self, vocab, data: bytes, overlap: bool) -> None:
        self.vocab, self.data, self.overlap = vocab, data, overlap
        self.ids = bpe_reference(vocab, data)

    def count(self, start: int, end: int) -> int:
        if not self.overlap:
            return len(bpe_reference(self.vocab, self.data[start:end]))
        if start >= end:
            return 0
        # the bug: count the full text's tokens that overlap the interval
        n, position = 0, 0
        for t in self.ids:
            token_end = position + len(self.vocab.tokens[t])
            if token_end > start and position < end:
                n += 1
            position = token_end
        return n


class ControlInterval(_ReferenceLike):
    """A correct (slow) interval counter: must pass."""

    capabilities = frozenset({"exact", "interval"})

    def interval(self, data: bytes):
        return _Interval(self.vocabulary, data, overlap=False)


class IntervalCountsOverlappingTokens(ControlInterval):
    """Counts the tokens of the whole text's encoding that overlap the interval: wrong across token boundaries."""

    def interval(self, data: bytes):
        return _Interval(self.vocabulary, data, overlap=True)


#: every mutant, by class name (the test suite and ``bpebench verify`` use these)
MUTANTS = [
    RightmostTieBreak, PriorityLessOrEqual, CompatIgnoresTieRule, DropsLongTokens, RanksRuleForMergesVocab,
    IdAsPriority, GreedyPosingAsExact, DropsLastByteOnOddLength, DropsIncompleteUtf8AtEdges,
    ReturnsNoneOnEmpty, RaisesOnRareByte, HangsOnRareInput, HangsInCompiledCode, CountUsesGreedyFastPath,
    AppendingTruncateKeepsPartialToken, IntervalCountsOverlappingTokens, StaleCacheKeyedOnPrefix,
]
CONTROLS = [ControlReference, ControlTable, ControlAppending, ControlInterval]
