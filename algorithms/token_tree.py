"""``token_tree``: the TokenTree tokenizer of seed ``000`` (Gyula Rabai). Approximate.

The tree
--------
Every token is a node; the root stands for the empty string. Tokens are inserted
shortest first (the seed dequeues them from a priority queue keyed by length).
Inserting a token walks down from the root over the token's own bytes: at each
node it follows the child whose *key* (the bytes that child adds to its parent)
is a prefix of the bytes still to place, trying the node's key lengths shortest
first; when no child fits, the token becomes a child keyed by **all** of its
remaining bytes (``AddChild`` stores ``Children.Add(addition, child)`` with the
whole rest, not one byte). Encoding walks the same way over the text and emits
the deepest node reached, then restarts after it.

What the seed's code implies (and what this module therefore does)
-------------------------------------------------------------------
The prose ("each child node a continuation of the parent node, where 'New' is a
continuation of 'N'") could be read as a byte trie in which a long token whose
intermediate prefixes are not tokens is unreachable. The code says otherwise:
because a child is keyed by its whole remainder, every token gets a node and a
token with no shorter token prefix simply hangs under its longest proper prefix
that *is* a token (or under the root) with a multi-byte key. Inserting shortest
first makes that exact:

* a node's keys are added in non-decreasing length, so when a token ``t`` is
  inserted, every shorter token that is a prefix of ``t`` is already in the tree
  and the walk passes through all of them; ``t``'s parent is its longest proper
  prefix that is a token;
* hence at any node at most one child key is a prefix of the text, and the walk
  over a text passes through every token that is a prefix of it.

So the walk returns the longest token that is a prefix of the rest of the text:
the TokenTree is leftmost-longest (``greedy``) matching with a different data
structure, and its output equals ``greedy``'s on every input. It deviates from
BPE exactly where greedy does (``abacb`` with the seed paper's dictionary gives
``ab ac b``, BPE gives ``ab a cb``); the seed's assumptions 1-3 are the argument
that this happens rarely on natural text.

The tree holds every token of the vocabulary (except ``excluded`` duplicates), as
the seed's does, including tokens no merge forms; ``greedy`` matches only tokens
BPE can produce, so on a vocabulary with such unreachable tokens the two can
differ (cl100k_base and o200k_base have none).

Two details of the seed are deliberately not reproduced: ``Get`` looks at a
``MaxTokenLen`` buffer zero-padded past the end of the text, so near the end it
can match a token containing NUL bytes that are not in the text (the output then
does not decode to the input); here the walk stops at the end of the piece. And
where the seed emits an "unknown" id for a byte that starts no token, this raises
:class:`~bpebench.errors.BpebenchError` as every encoder here does.

Layout and complexity
---------------------
The per-node dictionaries of the seed become one open-addressing table keyed by
``(parent node, key bytes)`` plus, per node, the ascending list of its distinct
key lengths (the seed's ``Lengths``), in CSR form. At a node the walk hashes the
text incrementally along those lengths (FNV-1a extends byte by byte), so one
output token of length ``m`` costs O(m) hashing plus one probe per distinct key
length tried: encoding is linear in the input for a fixed vocabulary. Building
is O(sum over tokens of length x depth) once per vocabulary, in numba.
"""

from __future__ import annotations


import numpy as np
from .kernels.jit import njit

from .kernels.compiled import compile_vocabulary
from .core.encoder import PiecewiseEncoder
from .core.registry import register_encoder
from .formats.vocabulary import Vocabulary

_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, inline="always")
def _node_seed(node):
    # the hash of (node, empty key): splitmix64 of the node id, so equal keys under
    # different parents land in different slots
    z = np.uint64(node) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def _extend(h, byte):
    return (h ^ np.uint64(byte)) * _FNV_PRIME


@njit(cache=True)
def _find_child(child_slots, parent, node_depth, token_bytes, token_start,
                node, h, data, pos, length):
    """The child of ``node`` keyed by ``data[pos:pos + length]`` (``h`` is that key's hash), or -1."""
    mask = np.uint64(len(child_slots) - 1)
    slot = h & mask
    depth = node_depth[node]
    while True:
        child = child_slots[slot]
        if child == -1:
            return -1
        if parent[child] == node and node_depth[child] - depth == length:
            key_start = token_start[child] + depth
            same = True
            for j in range(length):
                if token_bytes[key_start + j] != data[pos + j]:
                    same = False
                    break
            if same:
                return child
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True)
def _build_tree(token_bytes, token_start, insertion_order, n_tokens, capacity):
    """Insert the tokens in ``insertion_order`` (shortest first) as the seed's ``Add`` does.

    Returns ``parent`` (int32[n + 1], -1 for the root and for tokens left out),
    ``node_depth`` (bytes from the root), the child hash table, and the CSR lists
    of each node's distinct key lengths in ascending order.
    """
    root = n_tokens
    parent = np.full(n_tokens + 1, -1, dtype=np.int32)
    node_depth = np.zeros(n_tokens + 1, dtype=np.int32)
    for t in range(n_tokens):
        node_depth[t] = token_start[t + 1] - token_start[t]
    child_slots = np.full(capacity, -1, dtype=np.int32)
    mask = np.uint64(capacity - 1)
    # the seed's per-node ``Lengths``, as singly linked lists appended at the tail
    cell_length = np.zeros(n_tokens, dtype=np.int32)
    cell_next = np.full(n_tokens, -1, dtype=np.int32)
    head = np.full(n_tokens + 1, -1, dtype=np.int32)
    tail = np.full(n_tokens + 1, -1, dtype=np.int32)
    n_cells = 0

    for t in insertion_order:
        start = token_start[t]
        end = token_start[t + 1]
        node = root
        pos = start
        while True:  # descend while some child's key is a prefix of the rest of t
            descended = False
            h = _node_seed(node)
            hashed = 0
            cell = head[node]
            while cell != -1:
                length = cell_length[cell]
                if pos + length > end:
                    break
                while hashed < length:
                    h = _extend(h, token_bytes[pos + hashed])
                    hashed += 1
                child = _find_child(child_slots, parent, node_depth, token_bytes, token_start,
                                    node, h, token_bytes, pos, length)
                if child >= 0:
                    node = child
                    pos += length
                    descended = True
                    break
                cell = cell_next[cell]
            if not descended or pos == end:
                break
        if pos == end:  # empty remainder: a duplicate of a node already there (AddChild returns null)
            continue
        # AddChild: key = all remaining bytes of t
        length = end - pos
        parent[t] = node
        h = _node_seed(node)
        for j in range(pos, end):
            h = _extend(h, token_bytes[j])
        slot = h & mask
        while child_slots[slot] != -1:
            slot = (slot + np.uint64(1)) & mask
        child_slots[slot] = t
        if tail[node] == -1 or cell_length[tail[node]] != length:
            cell_length[n_cells] = length
            if tail[node] == -1:
                head[node] = n_cells
            else:
                cell_next[tail[node]] = n_cells
            tail[node] = n_cells
            n_cells += 1

    length_start = np.zeros(n_tokens + 2, dtype=np.int64)
    for node in range(n_tokens + 1):
        count = 0
        cell = head[node]
        while cell != -1:
            count += 1
            cell = cell_next[cell]
        length_start[node + 1] = length_start[node] + count
    lengths = np.zeros(length_start[n_tokens + 1], dtype=np.int32)
    for node in range(n_tokens + 1):
        k = length_start[node]
        cell = head[node]
        while cell != -1:
            lengths[k] = cell_length[cell]
            k += 1
            cell = cell_next[cell]
    return parent, node_depth, child_slots, length_start, lengths


@njit(cache=True, inline="always")
def _walk(parent, node_depth, child_slots, length_start, lengths, token_bytes, token_start,
          root, data, start, end):
    """The seed's ``Get``: follow matching children from the root; the deepest node reached."""
    node = root
    pos = start
    while pos < end:
        h = _node_seed(node)
        hashed = 0
        descended = False
        for k in range(length_start[node], length_start[node + 1]):
            length = lengths[k]
            if pos + length > end:
                break
            while hashed < length:
                h = _extend(h, data[pos + hashed])
                hashed += 1
            child = _find_child(child_slots, parent, node_depth, token_bytes, token_start,
                                node, h, data, pos, length)
            if child >= 0:
                node = child
                pos += length
                descended = True
                break
        if not descended:
            break
    return node


@njit(cache=True)
def _encode_pieces(parent, node_depth, child_slots, length_start, lengths, token_bytes,
                   token_start, root, data, offsets, out):
    """Encode each piece ``data[offsets[i]:offsets[i + 1]]``; write the ids to ``out``.

    Returns ``(n_tokens, -1)``, or ``(n, byte offset)`` of a byte that starts no token.
    With ``out`` of length 0 it only counts.
    """
    n = 0
    write = len(out) > 0
    for p in range(len(offsets) - 1):
        i = offsets[p]
        end = offsets[p + 1]
        while i < end:
            node = _walk(parent, node_depth, child_slots, length_start, lengths, token_bytes,
                         token_start, root, data, i, end)
            if node == root:
                return n, i
            if write:
                out[n] = node
            n += 1
            i += node_depth[node]
    return n, -1


def _capacity(n: int) -> int:
    capacity = 1024
    while capacity < 2 * n:
        capacity *= 2
    return capacity


@register_encoder
class TokenTreeEncoder(PiecewiseEncoder):
    """Walk the seed's token tree (children keyed by their whole extra bytes) over the text."""

    name = "token_tree"
    summary = ("approximate: the TokenTree of seed 000 (tokens inserted shortest first, "
               "deepest node emitted); equals leftmost-longest")
    capabilities = frozenset({"approximate"})
    speed_rank = 30
    counts_without_output = True

    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__(vocabulary)
        tables = compile_vocabulary(vocabulary)
        self._tables = tables
        n = len(vocabulary.tokens)
        lengths = tables.token_len.astype(np.int64)
        usable = lengths > 0
        if vocabulary.excluded:
            usable[list(vocabulary.excluded)] = False
        # shortest first, ids ascending within a length (the seed's queue leaves ties unordered;
        # the tree does not depend on their order, see the module docstring)
        order = np.argsort(lengths, kind="stable")
        order = order[usable[order]].astype(np.int64)
        (self._parent, self._node_depth, self._child_slots,
         self._length_start, self._lengths) = _build_tree(
            tables.token_bytes, tables.token_start, order, n, _capacity(n))
        self._root = n

    # ---------------------------------------------------------------- tree access
    def parent_of(self, token_id: int) -> int | None:
        """The tree parent of a token (None for a child of the root or a token left out)."""
        p = int(self._parent[token_id])
        return None if p < 0 or p == self._root else p

    # ---------------------------------------------------------------- encoding
    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        n, bad = _encode_pieces(self._parent, self._node_depth, self._child_slots,
                                self._length_start, self._lengths, self._tables.token_bytes,
                                self._tables.token_start, self._root, data, offsets, out)
        return n if bad < 0 else -1 - bad
