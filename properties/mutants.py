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
from bpebench.algorithms.kernels.jit import njit  # its disk cache shared like the kernels'

from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary, pair_lookup
from bpebench.algorithms.pipeline.chunking import count_till_limit as _real_count_till_limit
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
        if -1 in parts:
            raise ValueError(f"byte 0x{data[parts.index(-1)]:02x} is not a token")

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
    needs_ordered_merges = True  # the compatibility test assumes merges in priority order

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


class TableWithoutRefusal(_TableLike):
    """The prefix table used on every vocabulary, also where merges run out of priority order
    (there the compatibility test is wrong: the encoder should refuse the vocabulary)."""

    needs_ordered_merges = False


class TableRefusesOnlyRankDisorder(_TableLike):
    """Refuses rank files whose ranks run out of order, but takes every HF-style merge list, also
    one whose merges run out of priority order."""

    needs_ordered_merges = False

    @classmethod
    def unsupported_reason(cls, vocabulary):
        from bpebench.algorithms.kernels.compiled import rank_order_break

        return rank_order_break(vocabulary) if vocabulary.rule == "ranks" else None


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


# ----------------------------------------------------------------------------- the rest of the interface
class _Fast(Encoder):
    """A correct compiled encoder (``heap``: it accepts every vocabulary) to hang a bug on, so
    that the kit can give it long inputs."""

    capabilities = frozenset({"exact"})

    def __init__(self, vocabulary) -> None:
        super().__init__(vocabulary)
        from bpebench.algorithms.core.registry import make_encoder

        self.inner = make_encoder("heap", vocabulary)

    def encode(self, data: bytes) -> list[int]:
        return self.inner.encode(data)

    def count(self, data: bytes) -> int:
        return self.inner.count(data)


class ControlFast(_Fast):
    """No bug: must pass every check."""


class DecodeThroughText(ControlFast):
    """Its own ``decode`` goes through ``str`` with ``errors="replace"``: bytes that are not
    whole UTF-8 characters come back as U+FFFD."""

    def decode(self, ids) -> bytes:
        return self.vocabulary.decode_bytes(ids).decode("utf-8", "replace").encode("utf-8")


class LengthInUint16(ControlFast):
    """Keeps the input length in 16 bits: from 65536 bytes on, it encodes only ``len % 65536``."""

    def encode(self, data: bytes) -> list[int]:
        return super().encode(data[: len(data) & 0xFFFF])

    def count(self, data: bytes) -> int:
        return super().count(data[: len(data) & 0xFFFF])


class PieceOffsetsInUint8(ControlFast):
    """``encode_pieces`` joins the pieces and keeps their offsets in 8 bits: past 255 bytes in
    all, pieces are cut at the wrong places."""

    def encode_pieces(self, pieces) -> list[int]:
        pieces = list(pieces)
        joined = b"".join(pieces)
        offsets = np.cumsum([0] + [len(p) for p in pieces]).astype(np.uint8)
        out: list[int] = []
        for a, b in zip(offsets[:-1], offsets[1:]):
            out.extend(self.encode(joined[int(a) : int(b)]))
        return out


class CarvesSpecialLiterals(ControlFast):
    """Raw encoding carves special-token literals out of the bytes and emits their ids (a
    Tokenizer's job, and only for allowed ones)."""

    def encode(self, data: bytes) -> list[int]:
        for literal, token in self.vocabulary.special_tokens.items():
            raw = literal.encode("utf-8")
            if raw and raw in data:
                before, _, after = data.partition(raw)
                return self.encode(before) + [token] + self.encode(after)
        return super().encode(data)

    def count(self, data: bytes) -> int:
        return len(self.encode(data))


class SkipsUnknownBytes(ControlFast):
    """Drops the bytes that are not tokens instead of refusing the input."""

    def encode(self, data: bytes) -> list[int]:
        known = self.vocabulary.byte_token
        return super().encode(bytes(b for b in data if known[b] >= 0))

    def count(self, data: bytes) -> int:
        return len(self.encode(data))


class _ShortMemoryAppender(_Appender):
    """Keeps only the last 1 kB of text: longer texts are counted from a wrong start."""

    def push(self, data: bytes) -> None:
        self.text += data
        self.ids = bpe_reference(self.vocab, self.text[-1024:])


class AppenderForgetsPast1024(ControlAppending):
    """Its appending counter keeps a 1 kB buffer: wrong once the text is longer."""

    def appender(self):
        return _ShortMemoryAppender(self.vocabulary, keeps_partial_token=False)


class _Uint8Interval(_Interval):
    def count(self, start: int, end: int) -> int:
        return super().count(start & 0xFF, end & 0xFF) if max(start, end) > 255 else super().count(start, end)


class IntervalPositionsInUint8(ControlInterval):
    """Its interval structure keeps positions in 8 bits: wrong on texts longer than 255 bytes."""

    def interval(self, data: bytes):
        return _Uint8Interval(self.vocabulary, data, overlap=False)


# ----------------------------------------------------------------------------- chunking mutants
def split_before_first_overflow(text, n, *, encoder_or_tokenizer, allowed_special=frozenset()):
    """``split_at_tokens`` that assumes prefix counts only grow: it stops at the first character
    boundary where the count passes ``n`` (wrong where a longer prefix needs fewer tokens)."""
    best = text[:0]
    for end in range(1, len(text) + 1):
        prefix = text[:end]
        if isinstance(prefix, bytes) and end < len(text) and (text[end] & 0xC0) == 0x80:
            continue
        if _real_count_till_limit(prefix, n, encoder_or_tokenizer=encoder_or_tokenizer,
                                  allowed_special=allowed_special) is None:
            break
        best = prefix
    return best


def limit_stops_at_first_overflow(text, limit, *, encoder_or_tokenizer, allowed_special=frozenset()):
    """``count_till_limit`` that gives up as soon as some prefix has more than ``limit`` tokens
    (wrong where the whole text needs fewer than one of its prefixes)."""
    for end in range(1, len(text) + 1):
        prefix = text[:end]
        if isinstance(prefix, bytes):
            count = encoder_or_tokenizer.count(prefix)
        else:
            count = len(encoder_or_tokenizer.encode(prefix, allowed_special=allowed_special or frozenset(),
                                                    disallowed_special=()))
        if count > limit:
            return None
    return _real_count_till_limit(text, limit, encoder_or_tokenizer=encoder_or_tokenizer,
                                  allowed_special=allowed_special)


#: chunking functions with a bug, for ``properties/test_mutants.py`` to put in place of the real ones
CHUNKING_MUTANTS = {"split_at_tokens": split_before_first_overflow, "count_till_limit": limit_stops_at_first_overflow}

#: every mutant, by class name (the test suite and ``bpebench verify`` use these)
MUTANTS = [
    RightmostTieBreak, PriorityLessOrEqual, CompatIgnoresTieRule, DropsLongTokens, RanksRuleForMergesVocab,
    IdAsPriority, GreedyPosingAsExact, DropsLastByteOnOddLength, DropsIncompleteUtf8AtEdges,
    ReturnsNoneOnEmpty, RaisesOnRareByte, HangsOnRareInput, HangsInCompiledCode, CountUsesGreedyFastPath,
    AppendingTruncateKeepsPartialToken, IntervalCountsOverlappingTokens, StaleCacheKeyedOnPrefix,
    TableWithoutRefusal, TableRefusesOnlyRankDisorder, DecodeThroughText, LengthInUint16, PieceOffsetsInUint8, CarvesSpecialLiterals,
    SkipsUnknownBytes, AppenderForgetsPast1024, IntervalPositionsInUint8,
]
CONTROLS = [ControlReference, ControlTable, ControlAppending, ControlInterval, ControlFast]
