"""Interval encoding: exact token counts of any slice ``data[i:j]`` of a fixed text.

``IntervalEncoding(vocabulary, data)`` preprocesses ``data`` once in linear time;
afterwards ``count(i, j)`` is typically O(1) (a handful of array reads), and
``encode(i, j)`` costs O(tokens of the slice).

Why it works
------------
Write ``E(a, b)`` for the valid encoding of ``data[a:b]`` and ``G = E(0, n)``.
Preprocessing runs the last-token table of ``bpebench.algorithms.table`` over the whole
text in both directions:

* forward: for every ``p``, the last token and the count of ``E(0, p)``. Following
  last tokens back from ``j`` visits exactly the token boundaries of ``E(0, j)``
  (the *prefix chain* of ``j``);
* backward: for every ``k``, the first token and the count of ``E(k, n)``; the
  *suffix chain* of ``i`` visits the boundaries of ``E(i, n)``.

A chain that reaches a boundary of ``G`` coincides with ``G`` from there on (the
part of ``G`` beyond a boundary is the unique valid encoding of that part, and
so is the part of ``E(i, n)`` beyond one of its boundaries). Preprocessing
stores ``r[i]``, the first ``G`` boundary on the suffix chain of ``i``, and
``q[j]``, the last ``G`` boundary on the prefix chain of ``j``. If ``r[i] < q[j]``,
both ``E(i, n)`` and ``E(0, j)`` contain the ``G`` token that starts at ``r[i]``.
The seed paper's corollary IV (two valid encodings that share a token at the
same place concatenate, over that token, to a valid encoding) then gives

    E(i, j) = [E(i, n) up to r[i]] + [E(0, j) from r[i]]
    count(i, j) = (scount[i] - scount[r[i]]) + (count[j] - count[r[i]])

with ``count``/``scount`` the prefix/suffix token counts. In words: the slice's
encoding differs from ``G`` only near its two ends, and the two disturbed
stretches are read off the two tables. When they overlap (short slices, or
texts where one change ripples far) the slice is encoded with ``backtracking``:
exact, O(j - i), and rare on ordinary text (``fallbacks`` counts them).

Exact: every answer equals ``len(naive(data[i:j]))``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from .kernels.jit import njit

from .backtracking import backtrack_piece
from .kernels.compiled import require_ordered_merges
from bpebench.errors import BpebenchError
from .core.encoder import Encoder, as_byte_array, check_encodable
from .kernels.matching import Trie, build_matcher
from .core.registry import register_encoder
from .table import extend_last_tokens, unwind
from .formats.vocabulary import Vocabulary


@njit(cache=True)
def _link(rows, last, first_rev, n, q, r, scount, scount_rev):
    """From the two tables: q[p] (last G boundary on p's prefix chain), r[k] (first G
    boundary on k's suffix chain) and suffix counts by absolute position."""
    on_g = np.zeros(n + 1, dtype=np.uint8)
    p = n
    on_g[n] = 1
    while p > 0:
        p -= rows[last[p], 3]
        on_g[p] = 1
    q[0] = 0
    for p in range(1, n + 1):
        q[p] = p if on_g[p] else q[p - rows[last[p], 3]]
    r[n] = n
    scount[n] = 0
    for k in range(n - 1, -1, -1):
        scount[k] = scount_rev[n - k]
        r[k] = k if on_g[k] else r[k + rows[first_rev[n - k], 3]]


class _BacktrackingView(NamedTuple):
    """The fields of a Matcher that ``backtrack_piece`` reads."""

    forward: Trie
    rows: np.ndarray
    pairs: np.ndarray
    pair_filter: np.ndarray
    two_byte_start: np.ndarray
    pair_floor: np.ndarray
    boundary_sigs: np.ndarray


@njit(cache=True)
def _count_slice(cells, rows, pairs, pair_filter, two_byte_start, pair_floor, boundary_sigs, data, i, j, dead, out):
    """Count ``data[i:j]`` by encoding it. Plain array arguments: numba's dispatch is several
    times cheaper for them than for the nested Matcher tuple, and short slices are all
    dispatch."""
    view = _BacktrackingView(Trie(cells), rows, pairs, pair_filter, two_byte_start, pair_floor, boundary_sigs)
    return backtrack_piece(view, data, i, j, dead, out, 0)  # it clears its dead marks itself


@njit(cache=True)
def _count_many(matcher, data, counts, scount, q, r, starts, ends, result):
    """Counts of ``data[starts[x]:ends[x]]`` into ``result``; returns how many fell back."""
    dead = np.empty(len(data) + 1, dtype=np.uint8)  # scratch: backtrack_piece clears what it uses
    out = np.empty(len(data), dtype=np.int32)
    fallbacks = 0
    for x in range(len(starts)):
        i, j = starts[x], ends[x]
        if i >= j:
            result[x] = 0
            continue
        ri = r[i]
        if ri < q[j]:
            result[x] = scount[i] - scount[ri] + counts[j] - counts[ri]
        else:
            fallbacks += 1
            result[x] = backtrack_piece(matcher, data, i, j, dead, out, 0)
    return fallbacks


class IntervalEncoding:
    """Token counts (and encodings) of slices of one text after linear preprocessing.

    Args:
        vocabulary: a Vocabulary, or an Encoder (its vocabulary is used).
        data: the text as bytes (or a uint8 array); kept by reference.
    """

    def __init__(self, vocabulary: Vocabulary | Encoder, data) -> None:
        if isinstance(vocabulary, Encoder):
            vocabulary = vocabulary.vocabulary
        require_ordered_merges(vocabulary, "IntervalEncoding")
        self.vocabulary = vocabulary
        self._matcher = m = build_matcher(vocabulary)
        arr = as_byte_array(data)
        check_encodable(vocabulary, arr)
        self.data = arr
        n = self.n = len(arr)
        buf = np.empty(max(m.max_token_len, 1), dtype=np.int32)
        self._last = np.empty(n + 1, dtype=np.int32)
        self._counts = np.zeros(n + 1, dtype=np.int32)
        extend_last_tokens(m.backward, m.rows, m.pairs, m.pair_filter, m.pair_floor, arr, 0, 0, n,
                           self._last, self._counts, buf, False)
        reverse = np.ascontiguousarray(arr[::-1])
        self._first_rev = np.empty(n + 1, dtype=np.int32)
        scount_rev = np.zeros(n + 1, dtype=np.int32)
        extend_last_tokens(m.forward, m.rows, m.pairs, m.pair_filter, m.pair_floor, reverse, 0, 0, n,
                           self._first_rev, scount_rev, buf, True)
        self._q = np.empty(n + 1, dtype=np.int32)
        self._r = np.empty(n + 1, dtype=np.int32)
        self._scount = np.empty(n + 1, dtype=np.int32)
        _link(m.rows, self._last, self._first_rev, n, self._q, self._r, self._scount, scount_rev)
        # memoryviews: indexing them from Python is several times cheaper than numpy scalars
        self._qv, self._rv = memoryview(self._q), memoryview(self._r)
        self._cv, self._sv = memoryview(self._counts), memoryview(self._scount)
        self.fallbacks = 0
        self._backtracking = None
        self._scratch = None  # (dead marks, output) buffers of the fallback

    def __len__(self) -> int:
        return self.n

    def _check(self, i: int, j: int) -> None:
        if not 0 <= i <= j <= self.n:
            raise BpebenchError(f"range {i}..{j} is not inside the text (0..{self.n}) or is reversed")

    def count(self, i: int, j: int) -> int:
        """Exact number of tokens of ``data[i:j]``; typically O(1)."""
        if not 0 <= i <= j <= self.n:
            self._check(i, j)
        if i == j:
            return 0
        ri = self._rv[i]
        if ri < self._qv[j]:
            return self._sv[i] - self._sv[ri] + self._cv[j] - self._cv[ri]
        self.fallbacks += 1
        return self._slow_count(i, j)

    def count_many(self, starts, ends) -> np.ndarray:
        """Counts of many slices in one numba call (int32 array)."""
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        if starts.shape != ends.shape:
            raise BpebenchError("count_many needs as many starts as ends")
        bad = (starts < 0) | (ends > self.n) | (starts > ends)
        if bad.any():
            x = int(np.flatnonzero(bad)[0])
            self._check(int(starts[x]), int(ends[x]))
        result = np.empty(len(starts), dtype=np.int32)
        self.fallbacks += int(_count_many(self._matcher, self.data, self._counts, self._scount,
                                          self._q, self._r, starts, ends, result))
        return result

    def encode(self, i: int = 0, j: int | None = None) -> list[int]:
        """The valid encoding of ``data[i:j]``: O(tokens) when the fast path applies."""
        j = self.n if j is None else j
        self._check(i, j)
        if i == j:
            return []
        ri = int(self._r[i])
        if ri >= self._q[j]:
            self.fallbacks += 1
            return self._slow_encode(i, j)
        rows = self._matcher.rows
        head = []
        k = i
        while k < ri:  # E(i, n) up to r[i], along the suffix chain
            token = int(self._first_rev[self.n - k])
            head.append(token)
            k += int(rows[token, 3])
        out = np.empty(j - ri, dtype=np.int32)
        n_tail = unwind(rows, self._last, ri, j, out, 0)  # E(0, j) from r[i]
        return head + out[:n_tail].tolist()

    def _slow_count(self, i: int, j: int) -> int:
        if self._scratch is None or len(self._scratch[1]) < j - i:
            self._scratch = (np.zeros(self.n + 1, dtype=np.uint8), np.empty(max(j - i, 4096), dtype=np.int32))
        dead, out = self._scratch
        m = self._matcher
        return _count_slice(m.forward.cells, m.rows, m.pairs, m.pair_filter, m.two_byte_start, m.pair_floor,
                            m.boundary_sigs, self.data, i, j, dead, out)

    def _slow_encode(self, i: int, j: int) -> list[int]:
        if self._backtracking is None:
            from .core.registry import make_encoder

            self._backtracking = make_encoder("backtracking", self.vocabulary)
        return self._backtracking.encode(self.data[i:j])


@register_encoder
class IntervalEncoder(Encoder):
    """Encodes through an :class:`IntervalEncoding` of the whole input (both tables)."""

    name = "interval"
    summary = "exact: prefix and suffix last-token tables; any slice's count in O(1) after O(n) preprocessing"
    capabilities = frozenset({"exact", "interval"})
    speed_rank = 60
    needs_ordered_merges = True

    def interval_encoding(self, data) -> IntervalEncoding:
        """Preprocess ``data`` for slice counts (what the "interval" capability promises)."""
        return IntervalEncoding(self.vocabulary, data)

    def encode(self, data: bytes) -> list[int]:
        return IntervalEncoding(self.vocabulary, data).encode()
