"""Token matching over a vocabulary: flat tries for "which tokens start / end here?".

Built once per vocabulary by :func:`build_matcher` and memoised on it (like
``compile_vocabulary``). Everything is flat numpy arrays, so numba code takes it as
one argument and ``NUMBA_DISABLE_JIT=1`` runs the same code in plain Python.

Layout
------
A :class:`Trie` is a *double-array* trie: one node per distinct prefix of the
indexed byte strings, each node a row ``cells[slot] = (base, check, token, -)``
of one int32 array. The child of ``slot`` along byte ``c`` is ``base + c`` if
that row's ``check`` equals ``slot`` (else there is none), so a step of a walk is
one row read, no search and usually one cache line. Bases are packed first-fit,
so the array has little more than one row per node: o200k (200k tokens, 1.4 MB
of bytes) takes ~420k rows, 7 MB, instead of a 1 kB dense row per node.

* ``cells[slot, 0]``: base of the node's children (0 for leaves);
* ``cells[slot, 1]``: the parent's slot (-2 for the root, -1 for an unused row);
* ``cells[slot, 2]``: the token id spelled by the path to the node, or -1.

The root is slot 0. Nodes are numbered in numba code only through ``child``.

A :class:`Matcher` holds two tries and these tables:

* ``forward``: the trie of token bytes (for matching tokens that start at a position);
* ``backward``: the trie of reversed token bytes (tokens that end at a position);
* ``next_prefix[t]``: the longest token that is a proper prefix of ``t`` (-1 if none);
* ``next_suffix[t]``: the longest token that is a proper suffix of ``t`` (-1 if none);
* ``max_token_len``;
* ``two_byte_start``: the forward trie's first two levels as one table, so a walk
  starts with one read instead of two dependent row reads (``longest_match_from_start``);
* ``rows`` / ``pairs`` / ``pair_filter`` / ``pair_floor``: the merge tables of ``Tables``
  packed for cache locality (one int32 row per token, one int64 per merge, a bit filter
  that rules out most non-merging pairs without touching the table, and a byte per
  slot bounding the ranks of the merges there from below, which rules out the merges
  a compatibility check can ignore), read by ``pair_compatible``;
* ``boundary_sigs``: four 64-bit Bloom signatures per token of what can meet its right and left
  split spines across a boundary (``boundary_signatures``), read by ``no_live_crossing``.

Which tokens are indexed: exactly the ones BPE can produce, i.e. ``Tables.priority
< NEVER`` (``vocab.excluded`` ids and unreachable multi-byte tokens are left out,
so they are never matched and never appear in ``next_prefix``/``next_suffix``).

numba functions (all exact; ``d`` is the depth walked, at most ``max_token_len``):

* ``child(trie, node, byte) -> node | -1``: one step of a walk; O(1).
* ``longest_match(trie, data, pos, end) -> token | -1``: the longest token that is
  a prefix of ``data[pos:end]``; O(d).
* ``longest_match_from_start(trie, two_byte_start, data, pos, end)``: the same answer,
  starting from the two-byte table; O(d).
* ``longest_match_and_length(trie, two_byte_start, data, pos, end) -> (token, length)``: the
  same walk with the match's length (backtracking's hot walk); O(d).
* ``spelled_token(trie, two_byte_start, data, start, end) -> token | -1``: the token
  whose bytes are all of ``data[start:end]`` (not empty); O(end - start).
* ``prefix_matches(trie, data, pos, end, out) -> k``: all tokens that are prefixes
  of ``data[pos:end]``, shortest first, into ``out[:k]``; O(d).
* ``longest_suffix_match(backward, data, start, end) -> token | -1``: the longest
  token that is a suffix of ``data[start:end]``; O(d).
* ``suffix_matches(backward, data, start, end, out) -> k``: all tokens that are
  suffixes of ``data[start:end]``, shortest first; O(d).
* ``merge_rank(pairs, pair_filter, left, right) -> rank | -1`` and
  ``pair_compatible(rows, pairs, pair_filter, pair_floor, a, b) -> bool``: the merge of a pair
  and the compatibility test, same answers as ``compiled.pair_lookup`` /
  ``compiled.compatible`` with fewer cache misses; O(1) / O(split depth).
  ``compatible_after(..., a, b, longest)``: the same test when ``a`` is known to be the
  longest token at its start (``longest == a``), which skips the steps that cannot merge.
* ``safe_boundary(rows, a, b, a_last_byte, b_first_byte) -> bool``: a sufficient condition,
  from the two rows' boundary floors alone, under which only a merge of ``a`` with ``b`` could
  make the pair incompatible; O(1).
* ``no_live_crossing(boundary_sigs, a, b, a_last_byte, b_first_byte) -> bool``: a sufficient
  condition for ``a b`` to be compatible, from the two tokens' signatures alone; O(1).

Building is O(total token bytes) after a lexicographic sort of the tokens
(about 1 s for o200k, mostly the sort and the numba calls).

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> v = Vocabulary.from_ranks([bytes([i]) for i in range(256)] + [b"ab", b"abc", b"bc"], name="t")
>>> m = build_matcher(v)
>>> data = np.frombuffer(b"abcd", dtype=np.uint8)
>>> v.tokens[longest_match(m.forward, data, 0, 4)], v.tokens[m.next_prefix[v.token_id(b"abc")]]
(b'abc', b'ab')
>>> out = np.empty(8, dtype=np.int32)
>>> [v.tokens[t] for t in out[: suffix_matches(m.backward, data, 0, 3, out)]]
[b'c', b'bc', b'abc']
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from .jit import njit

from .bits import prefetch
from .compiled import NEVER, compile_vocabulary


class Trie(NamedTuple):
    """A double-array trie (see the module docstring): one int32 row per slot."""

    cells: np.ndarray  # int32[slots, 4]: base, check (parent slot), token, unused


class Matcher(NamedTuple):
    """Forward and backward tries plus next-prefix / next-suffix tables of one vocabulary."""

    forward: Trie
    backward: Trie
    next_prefix: np.ndarray  # int32[n_tokens]
    next_suffix: np.ndarray  # int32[n_tokens]
    max_token_len: int
    rows: np.ndarray  # int32[n_tokens, 8]: priority rank, split_left, split_right, token_len,
    #                   next_prefix, then three boundary floors (``_boundary_floors``)
    pairs: np.ndarray  # int64[cap]: (left << 42 | right << 21 | rank of the merge's priority), -1 empty
    pair_filter: np.ndarray  # uint64[2**16]: a 4-Mbit one-hash filter of the pairs that merge
    two_byte_start: np.ndarray  # int32[65536, 4]: see ``two_byte_start``
    pair_floor: np.ndarray  # uint8[2**FLOOR_BITS]: a lower bound of the merge ranks hashed to each slot (``_pair_floor``)
    boundary_sigs: np.ndarray  # uint64[n_tokens, 4]: what meets each token's spines (``boundary_signatures``)

    def longest_match(self, data: bytes, pos: int = 0) -> int:
        """Python convenience: the longest token that is a prefix of ``data[pos:]`` (-1 if none)."""
        arr = np.frombuffer(data, dtype=np.uint8)
        return int(longest_match(self.forward, arr, pos, len(arr)))

    def tokens_ending_at(self, data: bytes, end: int) -> list[int]:
        """Python convenience: every token that is a suffix of ``data[:end]``, longest first."""
        arr = np.frombuffer(data, dtype=np.uint8)
        out = np.empty(self.max_token_len, dtype=np.int32)
        k = suffix_matches(self.backward, arr, 0, end, out)
        return [int(t) for t in out[:k][::-1]]


# ----------------------------------------------------------------------------- lookups
@njit(cache=True, inline="always")
def child(trie, node, byte):
    """The child of ``node`` along ``byte``, or -1: one row read, no search."""
    cells = trie.cells
    slot = cells[node, 0] + byte
    if cells[slot, 1] == node:
        return slot
    return -1


@njit(cache=True, inline="always")  # inlined: a call per token costs reference counting on the trie
def longest_match(trie, data, pos, end):
    """The longest token that is a prefix of ``data[pos:end]``, or -1."""
    best = -1
    node = 0
    cells = trie.cells
    for i in range(pos, end):
        node = child(trie, node, data[i])
        if node < 0:
            break
        if cells[node, 2] >= 0:
            best = cells[node, 2]
    return best


@njit(cache=True, inline="always")
def longest_match_and_length(trie, two_byte_start, data, pos, end):
    """(the longest token that is a prefix of ``data[pos:end]`` or -1, its length in bytes or 0), for
    ``pos < end``, the first two levels of the walk read from ``two_byte_start``.

    A trie step reads the child's row, whose address needs the parent's base: on text whose
    tokens are short (a long unsplittable piece of letters: ~3 steps per walk) one table row
    replaces the first two rows and the third row's wait for its parent (1.08x for
    backtracking on 1 MB of random letters, then another 1.02-1.03x for the base column).
    Backtracking moves on by the length found here: read from the token's row, it made the next
    walk wait on that row (on long CJK and kana pieces 1.02x warm, 1.03-1.05x with evicted caches)."""
    cells = trie.cells
    if pos + 1 == end:
        slot = cells[0, 0] + data[pos]
        token = cells[slot, 2] if cells[slot, 1] == 0 else -1
        return token, np.int64(1 if token >= 0 else 0)
    row = (np.int64(data[pos]) << 8) | np.int64(data[pos + 1])
    best = two_byte_start[row, 1]
    length = np.int64(2 if two_byte_start[row, 3] >= 0 else (1 if best >= 0 else 0))
    node = two_byte_start[row, 0]
    if node < 0:
        return best, length
    base = two_byte_start[row, 2]  # the node's own row is not read: one dependent load less
    for i in range(pos + 2, end):
        slot = base + data[i]
        if cells[slot, 1] != node:
            break
        node = slot
        token = cells[slot, 2]
        if token >= 0:
            best = token
            length = i + 1 - pos
        base = cells[slot, 0]
    return best, length


@njit(cache=True, inline="always")
def longest_match_from_start(trie, two_byte_start, data, pos, end):
    """``longest_match(trie, data, pos, end)`` (``pos < end``), with the first two levels of
    the walk read from ``two_byte_start`` (the matcher's table of ``trie``): the token of
    :func:`longest_match_and_length`."""
    return longest_match_and_length(trie, two_byte_start, data, pos, end)[0]


@njit(cache=True, inline="always")
def spelled_token(trie, two_byte_start, data, start, end):
    """The token whose bytes are all of ``data[start:end]`` (``start < end``), or -1: a walk
    that needs no token lengths and starts from ``two_byte_start``."""
    cells = trie.cells
    if start + 1 == end:
        slot = cells[0, 0] + data[start]
        return cells[slot, 2] if cells[slot, 1] == 0 else -1
    row = (np.int64(data[start]) << 8) | np.int64(data[start + 1])
    node = two_byte_start[row, 0]
    if node < 0:
        return -1
    if start + 2 == end:
        return two_byte_start[row, 3]
    base = two_byte_start[row, 2]
    for i in range(start + 2, end):
        slot = base + data[i]
        if cells[slot, 1] != node:
            return -1
        node = slot
        base = cells[slot, 0]
    return cells[node, 2]


@njit(cache=True, _nrt=False)
def prefix_matches(trie, data, pos, end, out):
    """Write every token that is a prefix of ``data[pos:end]`` into ``out``, shortest first;
    return how many. ``out`` needs ``max_token_len`` slots."""
    k = 0
    node = 0
    cells = trie.cells
    for i in range(pos, end):
        node = child(trie, node, data[i])
        if node < 0:
            break
        if cells[node, 2] >= 0:
            out[k] = cells[node, 2]
            k += 1
    return k


@njit(cache=True, _nrt=False)
def longest_suffix_match(backward, data, start, end):
    """The longest token that is a suffix of ``data[start:end]``, or -1 (``backward`` trie)."""
    best = -1
    node = 0
    cells = backward.cells
    for i in range(end - 1, start - 1, -1):
        node = child(backward, node, data[i])
        if node < 0:
            break
        if cells[node, 2] >= 0:
            best = cells[node, 2]
    return best


@njit(cache=True, _nrt=False)
def suffix_matches(backward, data, start, end, out):
    """Write every token that is a suffix of ``data[start:end]`` into ``out``, shortest first;
    return how many (``backward`` trie; ``out`` needs ``max_token_len`` slots)."""
    k = 0
    node = 0
    cells = backward.cells
    for i in range(end - 1, start - 1, -1):
        node = child(backward, node, data[i])
        if node < 0:
            break
        if cells[node, 2] >= 0:
            out[k] = cells[node, 2]
            k += 1
    return k


# ----------------------------------------------------------------------------- building
@njit(cache=True)
def _preorder_trie(token_bytes, token_start, order, reverse, n_tokens, max_len):
    """One node per distinct prefix, numbered in preorder (= lexicographic order of the
    prefixes, because ``order`` is sorted). Returns parent, label, depth, token arrays
    (trimmed) and the proper-prefix table along the indexed direction.

    Tokens arrive sorted, so the path of the previous token is the current path: the
    new token reuses its first ``lcp`` nodes and adds the rest. A proper prefix sorts
    before the longer string, so it is already a node on the path when the longer
    token arrives: ``best[d]`` (last token on the path at depth <= d) gives the
    longest proper prefix token directly."""
    capacity = 1
    for t in order:
        capacity += token_start[t + 1] - token_start[t]
    parent = np.empty(capacity, dtype=np.int32)
    label = np.zeros(capacity, dtype=np.uint8)
    depth = np.zeros(capacity, dtype=np.int32)
    node_token = np.full(capacity, -1, dtype=np.int32)
    proper_prefix = np.full(n_tokens, -1, dtype=np.int32)
    path = np.zeros(max_len + 1, dtype=np.int32)
    best = np.full(max_len + 1, -1, dtype=np.int32)
    parent[0] = -1
    count = 1
    prev = -1
    for t in order:
        s = token_start[t]
        length = token_start[t + 1] - s
        lcp = 0
        if prev >= 0:
            ps = token_start[prev]
            plen = token_start[prev + 1] - ps
            limit = min(plen, length)
            while lcp < limit:
                if reverse:
                    a = token_bytes[ps + plen - 1 - lcp]
                    b = token_bytes[s + length - 1 - lcp]
                else:
                    a = token_bytes[ps + lcp]
                    b = token_bytes[s + lcp]
                if a != b:
                    break
                lcp += 1
        for d in range(lcp + 1, length + 1):
            node = count
            count += 1
            parent[node] = path[d - 1]
            label[node] = token_bytes[s + length - d] if reverse else token_bytes[s + d - 1]
            depth[node] = d
            path[d] = node
            best[d] = best[d - 1]
        node_token[path[length]] = t
        proper_prefix[t] = best[length - 1]
        best[length] = t
        prev = t
    return parent[:count], label[:count], depth[:count], node_token[:count], proper_prefix


@njit(cache=True)
def _relayout(parent, label, node_token, bfs_order):
    """Renumber preorder nodes breadth first. Within one depth preorder is lexicographic,
    so the children of each node come out contiguous and sorted by label."""
    count = len(parent)
    new_id = np.empty(count, dtype=np.int32)
    for i in range(count):
        new_id[bfs_order[i]] = i
    first_child = np.zeros(count, dtype=np.int32)
    n_children = np.zeros(count, dtype=np.int32)
    new_label = np.zeros(count, dtype=np.uint8)
    new_token = np.full(count, -1, dtype=np.int32)
    for i in range(count):
        old = bfs_order[i]
        new_label[i] = label[old]
        new_token[i] = node_token[old]
        if i == 0:
            continue
        p = new_id[parent[old]]
        if n_children[p] == 0:
            first_child[p] = i
        n_children[p] += 1
    return first_child, n_children, new_label, new_token


@njit(cache=True)
def _find_free(next_free, x):
    """The smallest free slot >= x (union-find "next free" with path halving)."""
    while next_free[x] != x:
        next_free[x] = next_free[next_free[x]]
        x = next_free[x]
    return x


@njit(cache=True)
def _double_array(first_child, n_children, label, node_token, visit):
    """Place the breadth-first trie into a double array: the children of a node live at
    ``base + byte``. Nodes are placed in ``visit`` order (depth first), each node's
    children first-fit at or after the node's own slot, so the nodes of one token's
    path end up close together (a walk touches few cache lines). A union-find over
    used slots finds the next free slot in near constant time."""
    count = len(first_child)
    capacity = 2 * count + 1024
    next_free = np.arange(capacity + 1).astype(np.int64)  # slot `capacity` is a free sentinel
    slot_of = np.empty(count, dtype=np.int64)
    parent_slot = np.full(count, -2, dtype=np.int64)
    base = np.zeros(capacity, dtype=np.int64)
    slot_of[0] = 0
    next_free[0] = 1
    top = 0
    for node in visit:
        k = n_children[node]
        if k == 0:
            continue
        lo = first_child[node]
        c0 = np.int64(label[lo])
        # base >= 1: no child lands on the root's slot
        f = _find_free(next_free, max(c0 + 1, slot_of[node] + 1))
        while True:
            b = f - c0
            ok = b + 256 < capacity
            if ok:
                for i in range(lo + 1, lo + k):
                    if next_free[b + label[i]] != b + label[i]:
                        ok = False
                        break
            if ok:
                break
            if b + 256 >= capacity:
                # grow: keep the union-find consistent (new slots are free)
                grown = np.arange(2 * capacity + 1).astype(np.int64)
                grown[:capacity] = next_free[:capacity]
                next_free = grown
                new_base = np.zeros(2 * capacity, dtype=np.int64)
                new_base[:capacity] = base
                base = new_base
                capacity *= 2
                continue
            f = _find_free(next_free, f + 1)
        base[slot_of[node]] = b
        for i in range(lo, lo + k):
            s = b + label[i]
            slot_of[i] = s
            parent_slot[i] = slot_of[node]
            next_free[s] = s + 1
            if s > top:
                top = s
    cells = np.full((top + 257, 4), -1, dtype=np.int32)
    cells[:, 0] = 0
    for node in range(count):
        s = slot_of[node]
        cells[s, 0] = base[s]
        cells[s, 1] = parent_slot[node]
        cells[s, 2] = node_token[node]
    return cells


def _build_trie(tokens: list[bytes], ids: np.ndarray, tables, *, reverse: bool) -> tuple[Trie, np.ndarray]:
    key = (lambda t: tokens[t][::-1]) if reverse else tokens.__getitem__
    order = np.array(sorted(ids.tolist(), key=key), dtype=np.int64)
    max_len = int(tables.token_len.max()) if len(tables.token_len) else 0
    parent, label, depth, node_token, proper = _preorder_trie(
        tables.token_bytes, tables.token_start, order, reverse, len(tokens), max_len
    )
    bfs_order = np.argsort(depth, kind="stable")
    first_child, n_children, bfs_label, bfs_token = _relayout(parent, label, node_token, bfs_order)
    bfs_id_in_preorder = np.empty(len(bfs_order), dtype=np.int64)
    bfs_id_in_preorder[bfs_order] = np.arange(len(bfs_order))
    cells = _double_array(first_child, n_children, bfs_label, bfs_token, bfs_id_in_preorder)
    return Trie(cells), proper


def two_byte_start(trie: Trie) -> np.ndarray:
    """int32[65536, 4]: row ``b0 << 8 | b1`` = (the slot the walk along ``b0 b1`` reaches from
    the root, or -1 when the trie has no such path; the longest token among ``b0`` and
    ``b0 b1``, or -1; that slot's base, where its children are; the token ``b0 b1`` itself,
    or -1). 1 MB, of which a text touches only the rows of its byte pairs."""
    cells = trie.cells
    table = np.full((1 << 16, 4), -1, dtype=np.int32)
    table[:, 2] = 0
    if len(cells) == 0:
        return table
    everything = np.arange(256)
    first = cells[0, 0] + everything  # depth-1 slots, by first byte
    has_first = cells[first, 1] == 0
    for b0 in np.flatnonzero(has_first):
        node = first[b0]
        rows = table[b0 << 8 : (b0 + 1) << 8]
        rows[:, 1] = cells[node, 2]
        if cells[node, 0] <= 0:  # a leaf: no second level
            continue
        second = cells[node, 0] + everything
        inside = second < len(cells)
        found = np.zeros(256, dtype=bool)
        found[inside] = cells[second[inside], 1] == node
        rows[found, 0] = second[found]
        token = cells[second[found], 2]
        rows[found, 1] = np.where(token >= 0, token, cells[node, 2])
        rows[found, 2] = cells[second[found], 0]
        rows[found, 3] = token
    return table


def build_matcher(vocab) -> Matcher:
    """The :class:`Matcher` of ``vocab`` (memoised on the vocabulary object)."""
    cached = getattr(vocab, "_matcher", None)
    if cached is not None:
        return cached
    tables = compile_vocabulary(vocab)
    ids = np.flatnonzero(tables.priority < NEVER)
    forward, next_prefix = _build_trie(vocab.tokens, ids, tables, reverse=False)
    backward, next_suffix = _build_trie(vocab.tokens, ids, tables, reverse=True)
    max_len = int(tables.token_len[ids].max()) if len(ids) else 0
    rows, pairs = _pack_merges(tables, next_prefix)
    matcher = Matcher(forward, backward, next_prefix, next_suffix, max_len, rows, pairs, _pair_filter(pairs),
                      two_byte_start(forward), _pair_floor(pairs),
                      boundary_signatures(rows, tables.token_bytes, tables.token_start))
    vocab._matcher = matcher
    return matcher


# ----------------------------------------------------------------------------- packed merges
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_FILTER_BITS = 22  # 512 kB: stays in L2 while the pair table (MBs) does not
_FILTER_MULTIPLIER = np.uint64(0xD6E8FEB86659FD93)
_ID_BITS = 21  # token ids and priority ranks must fit: 2M tokens
_ID_MASK = np.int64((1 << _ID_BITS) - 1)


@njit(cache=True, inline="always")
def _pair_slot(key, mask):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask


@njit(cache=True)
def _fill_pairs(split_left, split_right, rank, capacity):
    pairs = np.full(capacity, -1, dtype=np.int64)
    mask = capacity - 1
    for t in range(len(split_left)):
        if split_left[t] < 0:
            continue
        key = (np.int64(split_left[t]) << _ID_BITS) | np.int64(split_right[t])
        slot = _pair_slot(key, mask)
        while pairs[slot] != -1:
            slot = (slot + 1) & mask
        pairs[slot] = (key << _ID_BITS) | np.int64(rank[t])
    return pairs


@njit(cache=True, inline="always")
def _filter_bit(key):
    return np.int64((np.uint64(key) * _FILTER_MULTIPLIER) >> np.uint64(64 - _FILTER_BITS))


@njit(cache=True)
def _pair_filter(pairs):
    """Most pairs probed by a compatibility check never merge; this bit set answers
    "no merge" for them from L2 instead of a cache miss in the table (one bit per
    merge; ~5% false positives on o200k)."""
    bits = np.zeros(1 << (_FILTER_BITS - 6), dtype=np.uint64)
    for entry in pairs:
        if entry != -1:
            b = _filter_bit(entry >> _ID_BITS)
            bits[b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    return bits


#: slots of ``pair_floor``: 256 kB, which stays in a core's L2 where 1 MB did not. On text never seen
#: before, with another tokenizer's tables between documents, the compatibility walk's read of a
#: 1 MB floor was 38% of backtracking's time on CJK and kana (perf): 2**18 slots against 2**20 were
#: 1.06x on that text (three alternations), level on 1 MB of random letters (one slot in two holds
#: a merge of o200k now, one in six before, so fewer pairs are ruled out without the pair table)
FLOOR_BITS = 18
_FLOOR_MULTIPLIER = np.uint64(0xC2B2AE3D27D4EB4F)
#: the floor byte of a slot without merges (its bound, 2**59, is above every limit)
_FLOOR_EMPTY = 240


@njit(cache=True, inline="always")
def floor_bound(q):
    """The rank a floor byte ``q`` stands for: a 2-bit-mantissa float, ``(4 + q % 4) * 2**(q // 4) / 8``
    rounded down (0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 10, ...: quarter octaves).
    Shifts, not a table: a global array read here gave wrong ids in the ahead-of-time build
    (the JIT was right; ``tests/test_aot.py`` caught it)."""
    q = np.int64(q)
    return ((np.int64(4) | (q & 3)) << (q >> 2)) >> 3


@njit(cache=True, inline="always")
def _floor_slot(key):
    return np.int64((np.uint64(key) * _FLOOR_MULTIPLIER) >> np.uint64(64 - FLOOR_BITS))


@njit(cache=True)
def _pair_floor(pairs):
    """uint8[2**FLOOR_BITS]: for each slot, ``q`` such that every merge hashed there has a rank of at
    least ``floor_bound(q)`` (``_FLOOR_EMPTY``: no merge is hashed there).

    A compatibility check only cares whether a pair merges *below a limit* (the rank at
    which one side of the pair was formed); on 1 MB of random letters 69% of the merges it
    finds are above it and change nothing. When the slot's bound is not below the limit
    the check skips the probe of the pair table, whatever the pair. One hash; quarter octaves
    separate most of those ignorable merges from their limits (with 2**20 slots: 1.02-1.07x for
    backtracking on 1 MB of random letters, o200k and cl100k, in one process against the same walk
    without it; see ``FLOOR_BITS`` for the size). Floor bytes and filter bits
    in one 64-byte line per hash (48 + 128 bits, one cache miss instead of two) were
    0.90-0.93x (not profiled further; likely the fuller shared line rules out fewer pairs)."""
    floor = np.full(1 << FLOOR_BITS, _FLOOR_EMPTY, dtype=np.uint8)
    for entry in pairs:
        if entry == -1:
            continue
        rank = entry & _ID_MASK
        q = 0
        while q + 1 < _FLOOR_EMPTY and floor_bound(q + 1) <= rank:
            q += 1
        slot = _floor_slot(entry >> _ID_BITS)
        if q < floor[slot]:
            floor[slot] = q
    return floor


def _pack_merges(tables, next_prefix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row per token and one int64 per merge, so that a compatibility check reads
    about three cache lines per step instead of eight (``Tables`` keeps each field in
    its own array). Priorities are replaced by their dense rank: only their order matters.

    A row is 32 bytes (two per cache line): backtracking reads a candidate's length,
    its next-shorter alternative (``next_prefix``, copied into the row) and its merge
    fields together, one line instead of two (1.06x on 1 MB of random letters against
    16-byte rows and a separate ``next_prefix`` array)."""
    n = len(tables.priority)
    if n >= 1 << _ID_BITS:
        from bpebench.errors import VocabularyError

        raise VocabularyError(f"{n} tokens: the fast encoders support at most {(1 << _ID_BITS) - 1}")
    _, rank = np.unique(tables.priority, return_inverse=True)
    rows = np.zeros((n, 8), dtype=np.int32)
    rows[:, 0] = rank
    rows[:, 1] = tables.split_left
    rows[:, 2] = tables.split_right
    rows[:, 3] = tables.token_len
    rows[:, 4] = next_prefix
    pairs = _fill_pairs(tables.split_left, tables.split_right, rank.astype(np.int64), _pairs_capacity(n))
    _boundary_floors(rows, pairs, tables.token_bytes, tables.token_start)
    return rows, pairs


#: a boundary floor when no merge bounds it
NO_FLOOR = np.int32(np.iinfo(np.int32).max)


@njit(cache=True)
def _boundary_floors(rows, pairs, token_bytes, token_start):
    """Columns 5 to 7 of ``rows``, for the compatibility test's shortcut (``safe_boundary``):

    * ``rows[t, 5]``: the lowest rank of a merge whose right part is ``t`` and whose left part ends
      with a continuation byte (0x80-0xBF);
    * ``rows[t, 6]``: the lowest rank of a merge whose left part is a part of ``t``'s right spine
      (``split_right``, its ``split_right``, ... down to the last byte; ``t`` itself excluded) and
      whose right part starts with a byte of 0xC2 or above (a lead byte);
    * ``rows[t, 7]``: the lowest rank of a merge whose right part is a part of ``t``'s left spine and
      whose left part ends with a continuation byte (0x80-0xBF).

    ``NO_FLOOR`` when there is none. O(merges + tokens x spine depth)."""
    n = rows.shape[0]
    lead_after = np.full(n, NO_FLOOR, dtype=np.int32)  # lowest merge (x, y): y starts with a lead byte
    continuation_before = np.full(n, NO_FLOOR, dtype=np.int32)  # lowest merge (x, y): x ends with 0x80-0xBF
    for entry in pairs:
        if entry < 0:
            continue
        left = entry >> (2 * _ID_BITS)
        right = (entry >> _ID_BITS) & _ID_MASK
        rank = np.int32(entry & _ID_MASK)
        if token_start[right + 1] > token_start[right] and token_bytes[token_start[right]] >= 0xC2:
            lead_after[left] = min(lead_after[left], rank)
        if token_start[left + 1] > token_start[left] and (token_bytes[token_start[left + 1] - 1] & 0xC0) == 0x80:
            continuation_before[right] = min(continuation_before[right], rank)
    for t in range(n):
        rows[t, 5] = continuation_before[t]
        rows[t, 6] = _spine_floor(rows, t, 2, lead_after)
        rows[t, 7] = _spine_floor(rows, t, 1, continuation_before)


@njit(cache=True, inline="always")
def _spine_floor(rows, t, side, lowest):
    """The least ``lowest[part]`` over the parts of ``t``'s spine along column ``side`` of ``rows``
    (2: right parts, 1: left parts), ``t`` excluded; ``NO_FLOOR`` for a token with no parts."""
    floor = NO_FLOOR
    part = rows[t, side]
    while part >= 0:
        floor = min(floor, lowest[part])
        part = rows[part, side]
    return floor


def _pairs_capacity(n: int) -> int:
    capacity = 1024
    while capacity < 2 * n:
        capacity *= 2
    return capacity


def merge_ranks(left: np.ndarray, right: np.ndarray, priority: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, pair_filter) that ``merge_rank`` reads, for the merges ``left[i] right[i]`` at
    ``priority[i]`` (replaced by their dense rank)."""
    _, rank = np.unique(priority, return_inverse=True)
    pairs = _fill_pairs(left.astype(np.int32), right.astype(np.int32), rank.astype(np.int64),
                        _pairs_capacity(len(left)))
    return pairs, _pair_filter(pairs)


@njit(cache=True, inline="always")
def merge_rank(pairs, pair_filter, left, right):
    """The priority rank of the merge ``left right``, or -1 when the pair never merges."""
    key = (np.int64(left) << _ID_BITS) | np.int64(right)
    bit = _filter_bit(key)
    if (pair_filter[bit >> 6] >> np.uint64(bit & 63)) & np.uint64(1) == 0:
        return np.int64(-1)
    mask = len(pairs) - 1
    slot = _pair_slot(key, mask)
    while True:
        entry = pairs[slot]
        if entry == -1:
            return np.int64(-1)
        if (entry >> _ID_BITS) == key:
            return entry & _ID_MASK
        slot = (slot + 1) & mask


@njit(cache=True, inline="always")
def prefetch_merge_rank(pairs, pair_filter, left, right):
    """Start loading what ``merge_rank(pairs, pair_filter, left, right)`` reads (its filter word and
    first table slot), so that a later call finds them in cache."""
    key = (np.int64(left) << _ID_BITS) | np.int64(right)
    prefetch(pair_filter, _filter_bit(key) >> 6)
    prefetch(pairs, _pair_slot(key, len(pairs) - 1))


#: columns of ``boundary_sigs``
SIG_RIGHT_PARTNERS, SIG_RIGHT_SPINE, SIG_LEFT_PARTNERS, SIG_LEFT_SPINE = 0, 1, 2, 3
_SIG_RIGHT_HASH = np.uint64(0x9E3779B97F4A7C15)  # hashes the tokens that start at a boundary
_SIG_LEFT_HASH = np.uint64(0xC2B2AE3D27D4EB4F)  # and those that end there


@njit(cache=True, inline="always")
def _sig_bit(token, multiplier):
    return np.uint64(1) << ((np.uint64(token) * multiplier) >> np.uint64(58))


def boundary_signatures(rows: np.ndarray, token_bytes: np.ndarray, token_start: np.ndarray) -> np.ndarray:
    """uint64[n, 4] per token ``t``: four 64-bit Bloom signatures for ``no_live_crossing``.

    A token's right spine is ``t``, ``split_right(t)``, its ``split_right``, ... down to a byte; each
    part lives, in BPE of ``t``'s own bytes, until it is merged into the part above it at that part's
    rank (``t`` itself for ever). Likewise the left spine. With merges in priority order, BPE of ``a b``
    runs merges in increasing rank, and the first merge across the boundary joins a part ``x`` of
    ``a``'s right spine with a part ``y`` of ``b``'s left spine that both still exist: ranked below
    ``x``'s lifetime, and at most ``y``'s (at it, the crossing pair is ``y``'s own pair, further left,
    so it goes first: ``compatible_after``'s limits). So ``a b`` is the encoding of its bytes when no
    such *live* crossing merge exists:

    * column 0: the bits of every ``y`` starting with a lead byte (0xC2 or above) that some part ``x``
      of the right spine meets by a merge ranked below ``x``'s lifetime;
    * column 1: the bits of the right spine's parts themselves (the other hash);
    * column 2: the bits of every ``x`` ending with a continuation byte that meets some part ``y`` of
      the left spine by a merge ranked at most ``y``'s lifetime (the other hash);
    * column 3: the bits of the left spine's parts.

    O(merges log merges + tokens x spine depth x live partners)."""
    n = rows.shape[0]
    merged = np.flatnonzero(rows[:, 1] >= 0)
    left, right, rank = rows[merged, 1], rows[merged, 2], rows[merged, 0]
    lead_right = token_bytes[token_start[right]] >= 0xC2
    continuation_left = (token_bytes[token_start[left + 1] - 1] & 0xC0) == 0x80
    # each token's live partners, cheapest merge first, so a spine part stops at its lifetime
    by_left = np.flatnonzero(lead_right)
    by_left = by_left[np.lexsort((rank[by_left], left[by_left]))]
    by_right = np.flatnonzero(continuation_left)
    by_right = by_right[np.lexsort((rank[by_right], right[by_right]))]
    right_start = np.searchsorted(left[by_left], np.arange(n + 1))
    left_start = np.searchsorted(right[by_right], np.arange(n + 1))
    return _fill_signatures(rows, right_start, right[by_left].astype(np.int64), rank[by_left].astype(np.int64),
                            left_start, left[by_right].astype(np.int64), rank[by_right].astype(np.int64))


@njit(cache=True)
def _fill_signatures(rows, right_start, right_partner, right_rank, left_start, left_partner, left_rank):
    n = rows.shape[0]
    sigs = np.zeros((n, 4), dtype=np.uint64)
    for t in range(n):
        sigs[t, SIG_RIGHT_PARTNERS], sigs[t, SIG_RIGHT_SPINE] = _spine_words(
            rows, t, 2, right_start, right_partner, right_rank, _SIG_RIGHT_HASH, _SIG_LEFT_HASH, 0)
        # a left part meets its partners at its lifetime too: the same pair, to the left, goes first
        sigs[t, SIG_LEFT_PARTNERS], sigs[t, SIG_LEFT_SPINE] = _spine_words(
            rows, t, 1, left_start, left_partner, left_rank, _SIG_LEFT_HASH, _SIG_RIGHT_HASH, 1)
    return sigs


@njit(cache=True, inline="always")
def _spine_words(rows, t, side, start, partner, rank, partner_hash, part_hash, at_lifetime):
    """(the bits of the partners that meet ``t``'s spine along column ``side`` of ``rows`` below each
    part's lifetime, plus ``at_lifetime``; the bits of the spine's parts). ``partner[start[x]:start[x +
    1]]`` are ``x``'s partners by increasing ``rank``."""
    partners = spine = np.uint64(0)
    life, x = np.int64(1) << 40, np.int64(t)  # ``t`` itself lives for ever
    while x >= 0:
        for k in range(start[x], start[x + 1]):
            if rank[k] >= life + at_lifetime:
                break
            partners |= _sig_bit(partner[k], partner_hash)
        spine |= _sig_bit(x, part_hash)
        life, x = np.int64(rows[x, 0]), np.int64(rows[x, side])
    return partners, spine


@njit(cache=True, inline="always")
def no_live_crossing(sigs, a, b, a_last_byte, b_first_byte):
    """A sufficient condition, from the two tokens' ``boundary_signatures``, for ``a b`` to be the BPE
    encoding of its bytes (merges in priority order): ``a`` ends with a continuation byte, ``b`` starts
    with a lead byte, and either the partners of ``a``'s right spine miss ``b``'s left spine or the
    partners of ``b``'s left spine miss ``a``'s right spine. A live crossing merge ``x y`` would put
    ``y``'s bit in both words of the first test and ``x``'s in both of the second (``y`` starts with
    ``b``'s first byte, ``x`` ends with ``a``'s last). No merge table is read; on unseen CJK, kana and
    Thai text it settles 88% of the pairs backtracking checks (the rows' floors, ``safe_boundary``, 32%)."""
    return ((a_last_byte & 0xC0) == 0x80 and b_first_byte >= 0xC2
            and ((sigs[a, SIG_RIGHT_PARTNERS] & sigs[b, SIG_LEFT_SPINE]) == 0
                 or (sigs[b, SIG_LEFT_PARTNERS] & sigs[a, SIG_RIGHT_SPINE]) == 0))


@njit(cache=True, inline="always")
def safe_boundary(rows, a, b, a_last_byte, b_first_byte):
    """A sufficient condition for ``a b`` to be compatible except for a merge of ``a`` with ``b`` itself,
    read from the two rows alone (no merge table; the floors of ``_boundary_floors``): ``a`` ends with a
    continuation byte, ``b`` starts with a lead byte, no part of ``b``'s left spine meets a token ending
    with a continuation byte by a merge ranked below ``rank(b)``, and either no part of ``a``'s right
    spine meets a token starting with a lead byte below ``rank(a)``, or no token ending with a
    continuation byte meets ``b`` itself below ``rank(a)``.

    Why that suffices: BPE of the pair's bytes merges ranks in increasing order (merges in priority
    order), and the merges that build a token rank at most its own rank. A part of ``a`` (not ``a``)
    exists only while ``a`` is incomplete, so a merge joining it with anything to its right harms
    only if it ranks below ``rank(a)``; a part of ``b``, likewise below ``rank(b)``. A merge of two
    parts is ruled out by either side's floor; of ``a`` with a part of ``b`` by ``b``'s; of a part of
    ``a`` with ``b`` itself by ``a``'s floor or by ``b``'s own (``rows[b, 5]``). Left: ``a`` and ``b``
    whole, which then merge exactly when ``merge_rank(a, b) >= 0``. The compatibility walk's random
    reads of the merge tables (cache misses on text never seen before) are skipped."""
    return ((a_last_byte & 0xC0) == 0x80 and b_first_byte >= 0xC2 and rows[b, 7] > rows[b, 0]
            and (rows[a, 6] > rows[a, 0] or rows[b, 5] > rows[a, 0]))


@njit(cache=True, inline="always")  # a call per candidate with five arrays costs more than the walk
def pair_compatible(rows, pairs, pair_filter, pair_floor, a, b):
    """``bpebench.algorithms.kernels.compiled.compatible`` over the packed layout (same walk, same answer):
    True iff the tokens ``a b`` are the BPE encoding of their concatenated bytes."""
    return compatible_after(rows, pairs, pair_filter, pair_floor, a, b, -1)


@njit(cache=True, inline="always")
def compatible_after(rows, pairs, pair_filter, pair_floor, a, b, longest):
    """``pair_compatible(rows, pairs, pair_filter, pair_floor, a, b)``, told that ``a`` is the
    longest token starting where it starts (``longest == a``; -1: not known).

    The walk undoes merges at the boundary, latest first, and at each step asks whether the
    current pair merges below ``limit``; ``pair_floor`` rules most of those merges out before
    the bit filter and the table are read. While the left side is still ``a`` itself, the
    right side is a token that starts where ``b`` starts (``b`` or a prefix of it along its
    splits), so a merge of the pair would make a token that starts where ``a`` starts and is
    longer: none exists when ``a`` is the longest match there (backtracking knows this of every
    token it took first; the merge table only holds tokens the trie matches), and those steps
    read neither table. Half the walk's steps on CJK and Thai text, 70% of its table probes."""
    limit = np.int64(1) << 40
    while True:
        if a != longest:
            key = (np.int64(a) << _ID_BITS) | np.int64(b)
            if floor_bound(pair_floor[_floor_slot(key)]) < limit:
                p = merge_rank(pairs, pair_filter, a, b)
                if p >= 0 and p < limit:
                    return False
        a_base = rows[a, 1] < 0
        b_base = rows[b, 1] < 0
        if a_base and b_base:
            return True
        if not a_base and (b_base or rows[a, 0] > rows[b, 0]):
            limit = rows[a, 0]
            a = rows[a, 2]
        else:
            limit = rows[b, 0] + 1
            b = rows[b, 1]
