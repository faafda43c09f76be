"""Token matching over a vocabulary: flat tries for "which tokens start / end here?".

Built once per vocabulary by :func:`build_matcher` and memoised on it (like
``compile_vocabulary``). Everything is flat numpy arrays, so numba code takes it as
one argument and ``NUMBA_DISABLE_JIT=1`` runs the same code in plain Python.

Layout
------
A :class:`Trie` holds one node per distinct prefix of the indexed byte strings,
numbered level by level (breadth first) with the children of every node stored
contiguously and sorted by their byte, so a child is found by a binary search
over at most 256 labels (the root's children through a direct ``root_child[256]``
table). That keeps o200k (200k tokens, 1.4 MB of bytes) at ~13 bytes per node
instead of a 1 kB dense row per node.

* ``first_child[node]``, ``n_children[node]``: the node's children are
  ``first_child .. first_child + n_children - 1``;
* ``label[node]``: the byte on the edge into the node;
* ``token[node]``: the token id spelled by the path to the node, or -1;
* ``root_child[byte]``: the depth-1 node for that byte, or -1.

A :class:`Matcher` holds two tries and two tables:

* ``forward``: the trie of token bytes (for matching tokens that start at a position);
* ``backward``: the trie of reversed token bytes (tokens that end at a position);
* ``next_prefix[t]``: the longest token that is a proper prefix of ``t`` (-1 if none);
* ``next_suffix[t]``: the longest token that is a proper suffix of ``t`` (-1 if none);
* ``max_token_len``.

Which tokens are indexed: exactly the ones BPE can produce, i.e. ``Tables.priority
< NEVER`` (``vocab.excluded`` ids and unreachable multi-byte tokens are left out,
so they are never matched and never appear in ``next_prefix``/``next_suffix``).

numba functions (all exact; ``d`` is the depth walked, at most ``max_token_len``):

* ``child(trie, node, byte) -> node | -1``                   O(log 256)
* ``longest_match(trie, data, pos, end) -> token | -1``      longest token that is a prefix of ``data[pos:end]``; O(d)
* ``prefix_matches(trie, data, pos, end, out) -> k``         all tokens that are prefixes of ``data[pos:end]``, shortest first, into ``out[:k]``; O(d)
* ``longest_suffix_match(backward, data, start, end) -> token | -1``  longest token that is a suffix of ``data[start:end]``; O(d)
* ``suffix_matches(backward, data, start, end, out) -> k``   all tokens that are suffixes of ``data[start:end]``, shortest first; O(d)

Building is O(total token bytes) after a lexicographic sort of the tokens
(about 1 s for o200k, mostly the sort and the numba calls).

>>> from algorithms.vocabulary import Vocabulary
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
from numba import njit

from .compiled import NEVER, compile_vocabulary


class Trie(NamedTuple):
    """A breadth-first flat trie (see the module docstring)."""

    first_child: np.ndarray  # int32[nodes]
    n_children: np.ndarray  # int32[nodes]
    label: np.ndarray  # uint8[nodes]
    token: np.ndarray  # int32[nodes]
    root_child: np.ndarray  # int32[256]


class Matcher(NamedTuple):
    """Forward and backward tries plus next-prefix / next-suffix tables of one vocabulary."""

    forward: Trie
    backward: Trie
    next_prefix: np.ndarray  # int32[n_tokens]
    next_suffix: np.ndarray  # int32[n_tokens]
    max_token_len: int

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
    """The child of ``node`` along ``byte``, or -1 (binary search over sorted labels)."""
    if node == 0:
        return trie.root_child[byte]
    lo = trie.first_child[node]
    hi = lo + trie.n_children[node]
    label = trie.label
    while lo < hi:
        mid = (lo + hi) >> 1
        b = label[mid]
        if b < byte:
            lo = mid + 1
        elif b > byte:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True)
def longest_match(trie, data, pos, end):
    """The longest token that is a prefix of ``data[pos:end]``, or -1."""
    best = -1
    node = 0
    token = trie.token
    for i in range(pos, end):
        node = child(trie, node, data[i])
        if node < 0:
            break
        if token[node] >= 0:
            best = token[node]
    return best


@njit(cache=True)
def prefix_matches(trie, data, pos, end, out):
    """Write every token that is a prefix of ``data[pos:end]`` into ``out``, shortest first;
    return how many. ``out`` needs ``max_token_len`` slots."""
    k = 0
    node = 0
    token = trie.token
    for i in range(pos, end):
        node = child(trie, node, data[i])
        if node < 0:
            break
        if token[node] >= 0:
            out[k] = token[node]
            k += 1
    return k


@njit(cache=True)
def longest_suffix_match(backward, data, start, end):
    """The longest token that is a suffix of ``data[start:end]``, or -1 (``backward`` trie)."""
    best = -1
    node = 0
    token = backward.token
    for i in range(end - 1, start - 1, -1):
        node = child(backward, node, data[i])
        if node < 0:
            break
        if token[node] >= 0:
            best = token[node]
    return best


@njit(cache=True)
def suffix_matches(backward, data, start, end, out):
    """Write every token that is a suffix of ``data[start:end]`` into ``out``, shortest first;
    return how many (``backward`` trie; ``out`` needs ``max_token_len`` slots)."""
    k = 0
    node = 0
    token = backward.token
    for i in range(end - 1, start - 1, -1):
        node = child(backward, node, data[i])
        if node < 0:
            break
        if token[node] >= 0:
            out[k] = token[node]
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
    root_child = np.full(256, -1, dtype=np.int32)
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
        if p == 0:
            root_child[label[old]] = i
    return first_child, n_children, new_label, new_token, root_child


def _build_trie(tokens: list[bytes], ids: np.ndarray, tables, *, reverse: bool) -> tuple[Trie, np.ndarray]:
    key = (lambda t: tokens[t][::-1]) if reverse else tokens.__getitem__
    order = np.array(sorted(ids.tolist(), key=key), dtype=np.int64)
    max_len = int(tables.token_len.max()) if len(tables.token_len) else 0
    parent, label, depth, node_token, proper = _preorder_trie(
        tables.token_bytes, tables.token_start, order, reverse, len(tokens), max_len
    )
    bfs_order = np.argsort(depth, kind="stable")
    return Trie(*_relayout(parent, label, node_token, bfs_order)), proper


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
    matcher = Matcher(forward, backward, next_prefix, next_suffix, max_len)
    vocab._matcher = matcher
    return matcher


# ----------------------------------------------------------------------------- input helpers
def as_byte_array(data) -> np.ndarray:
    """``data`` (bytes, bytearray, memoryview or uint8 array) as a uint8 array, without copying."""
    if isinstance(data, np.ndarray):
        return data if data.dtype == np.uint8 else data.astype(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def check_encodable(vocab, arr: np.ndarray) -> None:
    """Raise BpebenchError naming the first byte of ``arr`` that is not a token of ``vocab``
    (free when every byte is a token, the usual case)."""
    byte_token = compile_vocabulary(vocab).byte_token
    if len(arr) == 0 or (byte_token >= 0).all():
        return
    bad = np.flatnonzero(byte_token[arr] < 0)
    if len(bad):
        from .errors import BpebenchError

        raise BpebenchError(
            f"byte 0x{int(arr[bad[0]]):02x} is not a token of {vocab.name}; it cannot be encoded"
        )


def join_pieces(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte pieces: (uint8 data, int64 offsets[k + 1]); piece i is
    ``data[offsets[i]:offsets[i + 1]]``. Lets an encoder handle many pieces in one numba call."""
    if not isinstance(pieces, (list, tuple)):
        pieces = list(pieces)
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    if pieces:
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=offsets[1:])
    return np.frombuffer(b"".join(pieces), dtype=np.uint8), offsets
