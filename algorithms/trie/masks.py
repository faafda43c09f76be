"""Allowed-token masks: which tokens a byte-level recognizer lets through. Exact.

A token is *allowed* in recognizer state ``s`` when reading its bytes from ``s``
never reaches a dead state, i.e. the token's bytes continue what was read so far
towards some accepted string (constrained decoding asks this before every sampled
token; ``llguidance`` computes the same set for a regex grammar). The mask is a
``bool`` array over the vocabulary's ids.

Three ways to compute it, all giving the same mask:

* :func:`dfs_mask_kernel` (numba): the seed's (``003``) non-recursive walk over the
  flat :class:`~.dfs_trie.DfsTrie`. A stack holds the recognizer state after each
  byte of the current path; at each node the state after its byte is looked up once
  (one table read); when it is alive the node's token is marked (nodes without a
  token write to the slot past the end, no branch) and the walk moves to the next
  node, popping ``num_parents`` states after a leaf; when it is dead the walk jumps
  over the whole subtree (``subtree_size``) and pops ``num_parents - 1``. Every
  token sharing a dead prefix is skipped at once, so the cost is the number of
  nodes *visited* (the kernel returns it): O(nodes) at worst, far fewer for a
  restrictive recognizer. The only data-dependent branch is "is the state alive".
* :func:`recursive_mask` (plain Python): the seed's first, recursive version over a
  nested dict trie: the reference the walk is tested against.
* :class:`BruteForceMasker` (numba) and :func:`brute_force_mask_python`: every
  token's bytes run through the recognizer on their own: O(total token bytes),
  no sharing of prefixes.

Ids whose bytes equal another id's take that id's answer (``DfsTrie.duplicates``).

>>> from .recognizers import from_regex
>>> tokens = [b"a", b"b", b"1", b"ab", b"a1", b"1a", b"ba"]
>>> masker = TokenMasker.from_tokens(tokens, from_regex(r"[ab]+"))
>>> [tokens[i] for i in masker.allowed_ids()]
[b'a', b'b', b'ab', b'ba']
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from bpebench.errors import BpebenchError

from ..kernels.jit import njit
from .dfs_trie import DfsTrie, build_dfs_trie, dfs_trie_from_tokens, flat_tokens, surface_tokens
from .recognizers import ByteRecognizer

_LOW8 = np.uint64(0xFF)
_LOW24 = np.uint64(0xFFFFFF)


@njit(cache=True)
def dfs_mask_kernel(nodes, transitions, state, stack, mask):
    """Mark ``mask[token] = 1`` for every token of the trie ``nodes`` that the recognizer
    ``transitions`` allows from ``state`` (``mask`` needs ``n_tokens + 1`` entries and must
    be zero; the last one collects nodes without a token). ``stack`` needs ``max_depth + 1``
    entries. Returns the number of nodes visited."""
    n_nodes = len(nodes)
    if state < 0:
        return 0
    stack[0] = state
    top = 0
    pop = 0
    p = 1
    visited = 0
    while p < n_nodes:
        visited += 1
        top -= pop
        node = nodes[p]
        following = transitions[stack[top], np.int64(node & _LOW8)]
        size = np.int64((node >> np.uint64(32)) & _LOW24)
        parents = np.int64(node >> np.uint64(56))
        if following >= 0:
            top += 1
            stack[top] = following
            mask[np.int64((node >> np.uint64(8)) & _LOW24)] = 1
            pop = parents * (size == 1)  # a leaf: climb back to the next node's parent
            p += 1
        else:
            pop = parents - 1  # the dead node itself was never pushed
            p += size
    return visited


@njit(cache=True)
def brute_force_kernel(token_bytes, token_start, transitions, state, mask):
    """``mask[t] = 1`` for every token ``t`` (bytes ``token_bytes[token_start[t]:token_start[t + 1]]``,
    empty ones skipped) whose bytes the recognizer reads from ``state`` without dying."""
    if state < 0:
        return
    for t in range(len(token_start) - 1):
        end = token_start[t + 1]
        i = token_start[t]
        if i == end:
            continue
        s = state
        while i < end and s >= 0:
            s = transitions[s, token_bytes[i]]
            i += 1
        if s >= 0:
            mask[t] = 1


class TokenMasker:
    """Masks of one vocabulary under one recognizer, from any recognizer state.

    Holds the trie, the recognizer's table and reusable buffers; :meth:`mask` costs one
    clear of an ``n_tokens + 1`` byte array plus the walk."""

    def __init__(self, trie: DfsTrie, recognizer: ByteRecognizer) -> None:
        self.trie = trie
        self.recognizer = recognizer
        self._transitions = np.ascontiguousarray(recognizer.transitions, dtype=np.int32)
        self._stack = np.zeros(trie.max_depth + 2, dtype=np.int32)
        self._buffer = np.zeros(trie.n_tokens + 1, dtype=np.uint8)
        self.visited = 0  #: nodes the last walk visited

    @classmethod
    def for_vocabulary(cls, vocab, recognizer: ByteRecognizer) -> "TokenMasker":
        return cls(build_dfs_trie(vocab), recognizer)

    @classmethod
    def from_tokens(cls, tokens: Sequence[bytes | None], recognizer: ByteRecognizer) -> "TokenMasker":
        return cls(dfs_trie_from_tokens(tokens), recognizer)

    def _state(self, state: int | None) -> int:
        if state is None:
            return self.recognizer.start
        if not -1 <= state < self.recognizer.n_states:
            raise BpebenchError(f"recognizer state {state} is outside -1..{self.recognizer.n_states - 1}")
        return int(state)

    def fill(self, state: int | None = None) -> np.ndarray:
        """The mask as uint8 (1 = allowed) over ``n_tokens`` ids, in the masker's own buffer
        (valid until the next call)."""
        buffer = self._buffer
        buffer[:] = 0
        self.visited = int(dfs_mask_kernel(self.trie.nodes, self._transitions, self._state(state),
                                           self._stack, buffer))
        dups = self.trie.duplicates
        if len(dups):
            buffer[dups[:, 0]] = buffer[dups[:, 1]]
        return buffer[: self.trie.n_tokens]

    def walk(self, state: int | None = None) -> int:
        """The traversal alone, into a buffer it does not clear: the nodes visited. For timing the
        walk (``walk(-1)`` returns at once: the cost of the call itself)."""
        return int(dfs_mask_kernel(self.trie.nodes, self._transitions, self._state(state), self._stack,
                                   self._buffer))

    def mask(self, state: int | None = None) -> np.ndarray:
        """bool[n_tokens]: the tokens allowed from ``state`` (default: the recognizer's start)."""
        return self.fill(state).astype(bool)

    def allowed_ids(self, state: int | None = None) -> np.ndarray:
        return np.flatnonzero(self.fill(state))

    def count(self, state: int | None = None) -> int:
        return int(np.count_nonzero(self.fill(state)))


# ----------------------------------------------------------------------------- references
class BruteForceMasker:
    """The same masks as :class:`TokenMasker` by running every token through the recognizer
    (numba; the baseline the trie is measured against)."""

    def __init__(self, tokens: Sequence[bytes | None], recognizer: ByteRecognizer) -> None:
        self.recognizer = recognizer
        self._bytes, self._start = flat_tokens(tokens)
        self._transitions = np.ascontiguousarray(recognizer.transitions, dtype=np.int32)
        self._buffer = np.zeros(len(tokens), dtype=np.uint8)

    @classmethod
    def for_vocabulary(cls, vocab, recognizer: ByteRecognizer) -> "BruteForceMasker":
        return cls(surface_tokens(vocab), recognizer)

    def fill(self, state: int | None = None) -> np.ndarray:
        self._buffer[:] = 0
        brute_force_kernel(self._bytes, self._start, self._transitions,
                           self.recognizer.start if state is None else state, self._buffer)
        return self._buffer

    def mask(self, state: int | None = None) -> np.ndarray:
        return self.fill(state).astype(bool)


def brute_force_mask_python(tokens: Sequence[bytes | None], recognizer: ByteRecognizer,
                            state: int | None = None) -> np.ndarray:
    """The definition, in plain Python: token by token, :meth:`ByteRecognizer.viable`."""
    return np.array([bool(t) and recognizer.viable(t, state) for t in tokens], dtype=bool)


def recursive_mask(tokens: Sequence[bytes | None], recognizer: ByteRecognizer,
                   state: int | None = None) -> np.ndarray:
    """The seed's recursive traversal over a nested dict trie (plain Python)."""
    root: dict = {"ids": [], "children": {}}
    for token_id, token in enumerate(tokens):
        if not token:
            continue
        node = root
        for b in token:
            node = node["children"].setdefault(b, {"ids": [], "children": {}})
        node["ids"].append(token_id)
    mask = np.zeros(len(tokens), dtype=bool)
    table = recognizer.transitions

    def traverse(node: dict, at: int) -> None:
        for b, child in node["children"].items():
            following = int(table[at, b])
            if following >= 0:  # byte allowed: push it, mark the child's tokens, go down, pop
                mask[child["ids"]] = True
                traverse(child, following)

    start = recognizer.start if state is None else state
    if start >= 0:
        traverse(root, start)
    return mask
