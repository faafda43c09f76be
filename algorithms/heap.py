"""``heap``: the textbook BPE loop with a priority queue. Exact. O(n log n) per piece.

Start from one token per byte. Every adjacent pair that may merge sits in a binary
min-heap keyed by ``(priority rank, position)``, so the heap's top is the merge
the definition applies next (best priority, leftmost on ties). Token boundaries
are one array: ``token[i]`` is the token starting at byte ``i`` (-1 inside a
token), the next boundary is ``i + len(token[i])`` and ``prev[i]`` the previous
one, so a merge is O(1) plus at most two heap pushes for the new neighbours.

Entries are deleted lazily: a popped entry is applied only if the pair now at
its position still merges with the popped priority (the pair may have been
merged away or changed since it was pushed). Every current pair always has an
entry with its current key, so the pops follow exactly the reference's order.
Exact: equals ``naive``. Usually the pairs that merge are the derived splits (one per
token); for a vocabulary whose merges run out of priority order
(``compiled.rank_order_break``) the splits miss some, so the heap then takes every
merge the definition allows and stays exact where the compatibility-based encoders
refuse.
"""

from __future__ import annotations


import numpy as np
from .kernels.jit import njit

from .kernels.compiled import compile_vocabulary, live_merges, pair_lookup, pair_table, rank_order_break
from .core.encoder import PiecewiseEncoder
from .kernels.matching import build_matcher, merge_rank, merge_ranks
from .core.registry import register_encoder
from .formats.vocabulary import Vocabulary

_POS_BITS = np.int64(32)
_POS_MASK = np.int64((1 << 32) - 1)


@njit(cache=True, inline="always")
def _sift_down(heap, size, i):
    item = heap[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] >= item:
            break
        heap[i] = heap[c]
        i = c
    heap[i] = item


@njit(cache=True, inline="always")
def _push(heap, size, item):
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= item:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item
    return size + 1


@njit(cache=True, _nrt=False)  # allocates nothing; also called from the fused pipeline's loop
def heap_piece(matcher, pair_keys, pair_vals, byte_token, data, start, end, token, prev, heap, out, n_out):
    """Append the encoding of ``data[start:end]`` to ``out[n_out:]``; return the new length.
    ``token``/``prev`` are scratch arrays indexed by absolute position, ``heap`` needs
    ``3 * (end - start)`` slots."""
    if start >= end:
        return n_out
    rows, pairs, pair_filter = matcher.rows, matcher.pairs, matcher.pair_filter
    size = 0
    for i in range(start, end):
        token[i] = byte_token[data[i]]
        prev[i] = i - 1
    for i in range(start, end - 1):
        r = merge_rank(pairs, pair_filter, token[i], token[i + 1])
        if r >= 0:
            heap[size] = (r << _POS_BITS) | i
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, i)
    while size > 0:
        top = heap[0]
        size -= 1
        if size > 0:
            heap[0] = heap[size]
            _sift_down(heap, size, 0)
        i = top & _POS_MASK
        left = token[i]
        if left < 0:
            continue
        j = i + rows[left, 3]
        if j >= end:
            continue
        right = token[j]
        if merge_rank(pairs, pair_filter, left, right) != (top >> _POS_BITS):
            continue
        merged = pair_lookup(pair_keys, pair_vals, left, right)
        token[i] = merged
        token[j] = -1
        k = j + rows[right, 3]
        if k < end:
            prev[k] = i
            r = merge_rank(pairs, pair_filter, merged, token[k])
            if r >= 0:
                size = _push(heap, size, (r << _POS_BITS) | i)
        if i > start:
            h = prev[i]
            r = merge_rank(pairs, pair_filter, token[h], merged)
            if r >= 0:
                size = _push(heap, size, (r << _POS_BITS) | h)
    i = start
    while i < end:
        out[n_out] = token[i]
        n_out += 1
        i += rows[token[i], 3]
    return n_out


@njit(cache=True)
def heap_pieces(matcher, pair_keys, pair_vals, byte_token, data, offsets, out):
    """Encode every piece ``data[offsets[i]:offsets[i+1]]`` into ``out``; return the length."""
    n = len(data)
    token = np.empty(n, dtype=np.int32)
    prev = np.empty(n, dtype=np.int32)
    longest = 0
    for i in range(len(offsets) - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    heap = np.empty(3 * longest + 1, dtype=np.int64)
    n_out = 0
    for i in range(len(offsets) - 1):
        n_out = heap_piece(matcher, pair_keys, pair_vals, byte_token, data, offsets[i], offsets[i + 1],
                           token, prev, heap, out, n_out)
    return n_out


@register_encoder
class HeapEncoder(PiecewiseEncoder):
    """Best-priority-first merging with a binary heap and lazy deletion."""

    name = "heap"
    summary = "exact: the reference's merge order with a min-heap of pairs and a boundary array (O(n log n), numba)"
    capabilities = frozenset({"exact"})
    speed_rank = 40

    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__(vocabulary)
        tables = compile_vocabulary(vocabulary)
        self.matcher = build_matcher(vocabulary)
        self._pair_keys, self._pair_vals, self._byte_token = tables.pair_keys, tables.pair_vals, tables.byte_token
        if rank_order_break(vocabulary) is not None:
            # the derived splits miss merges BPE applies out of order: take every merge the
            # definition allows instead (any pair spelling a token, or every listed merge)
            left, right, merged, priority = live_merges(vocabulary)
            self._pair_keys, self._pair_vals = pair_table(left, right, merged)
            pairs, pair_filter = merge_ranks(left, right, priority)
            self.matcher = self.matcher._replace(pairs=pairs, pair_filter=pair_filter)

    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        return heap_pieces(self.matcher, self._pair_keys, self._pair_vals, self._byte_token, data, offsets, out)
