"""The token trie laid out flat in depth-first order (seed ``003``). Exact.

One node per distinct non-empty prefix of the tokens' bytes, the root (the empty
prefix) first and every node followed by its whole subtree, children in byte order.
A node is one ``uint64`` (8 bytes, as in the seed's toktrie)::

    bits  0..7   byte           the byte on the edge from the parent (0 for the root)
    bits  8..31  token          the id whose bytes are the path to this node, or
                                ``n_tokens`` ("no token": a slot past the mask's end)
    bits 32..55  subtree_size   nodes in the subtree, the node itself included
    bits 56..63  num_parents    how many entries a traversal pops from its stack after
                                this node's subtree to stand at the parent of the node
                                that follows the subtree in DFS order

With ``depth(root) = 0``, ``num_parents(n) = depth(n) - depth(next) + 1``, where
``next`` is the node at ``n + subtree_size(n)`` (depth 1 past the last node): a
leaf pops itself and every ancestor the walk climbs out of. The seed's example,
tokens ``a b c ax az aya ayb aza`` (``ay`` is a node without a token)::

    >>> trie = dfs_trie_from_tokens([b"a", b"b", b"c", b"ax", b"az", b"aya", b"ayb", b"aza"])
    >>> bytes(trie.byte[1:]).decode(), trie.subtree_size.tolist(), trie.num_parents.tolist()
    ('axyabzabc', [10, 7, 1, 3, 1, 1, 2, 1, 1, 1], [0, 1, 1, 1, 1, 2, 2, 3, 1, 1])
    >>> [trie.token_bytes(int(t)) if t < trie.n_tokens else None for t in trie.token]
    [None, b'a', b'ax', None, b'aya', b'ayb', b'az', b'aza', b'b', b'c']

Which ids the trie holds: every token by the bytes it stands for in text
(:func:`surface_tokens`: SentencePiece's ``▁`` is a space there). Ids whose bytes
equal an earlier id's (byte-fallback pieces, ``▁`` next to a plain space) share
that id's node and are listed in ``duplicates``; ids no text spells (hidden helper
tokens, empty and special tokens) are left out.

Building is a lexicographic sort of the tokens (plain Python), the preorder pass of
:mod:`~bpebench.algorithms.kernels.matching` (a sorted token reuses the previous
token's path up to their common prefix) and one pass for the subtree sizes, in
numba: O(total token bytes) after the sort, ~0.1 s for o200k's token list. Field limits:
fewer than 2**24 tokens and nodes, tokens of at most 255 bytes (o200k: 200k
tokens, 128 bytes at most); beyond them :func:`dfs_trie_from_tokens` raises
:class:`~bpebench.errors.VocabularyError`.

:func:`reference_layout` builds the same four arrays from a nested dict by
recursion, to be read and to test the fast build against.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from bpebench.errors import VocabularyError

from ..kernels.jit import njit
from ..kernels.matching import _preorder_trie

#: width of the token and subtree-size fields; num_parents has the top 8 bits
FIELD_BITS = 24
MAX_DEPTH = 255


class DfsTrie(NamedTuple):
    """Flat DFS-order trie (see the module docstring)."""

    nodes: np.ndarray  # uint64[n_nodes]: byte | token << 8 | subtree_size << 32 | num_parents << 56
    n_tokens: int  # ids 0..n_tokens-1; ``n_tokens`` marks a node without a token
    max_depth: int  # the longest token's length: a traversal's stack holds max_depth + 1 states
    duplicates: np.ndarray  # int32[k, 2]: (id, id of the same bytes that has the node)

    @property
    def byte(self) -> np.ndarray:
        return (self.nodes & np.uint64(0xFF)).astype(np.uint8)

    @property
    def token(self) -> np.ndarray:
        return ((self.nodes >> np.uint64(8)) & np.uint64(0xFFFFFF)).astype(np.int64)

    @property
    def subtree_size(self) -> np.ndarray:
        return ((self.nodes >> np.uint64(32)) & np.uint64(0xFFFFFF)).astype(np.int64)

    @property
    def num_parents(self) -> np.ndarray:
        return (self.nodes >> np.uint64(56)).astype(np.int64)

    def __len__(self) -> int:
        return len(self.nodes)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of the trie's path to ``token_id`` (``b""`` when the id is not in the trie)."""
        return path_bytes(self, node_of(self, token_id))


def node_of(trie: DfsTrie, token_id: int) -> int:
    """The node holding ``token_id`` (its duplicate's node for a duplicate), or -1."""
    dups = {int(a): int(b) for a, b in trie.duplicates}
    found = np.flatnonzero(trie.token == dups.get(token_id, token_id))
    return int(found[0]) if len(found) else -1


def path_bytes(trie: DfsTrie, node: int) -> bytes:
    """The bytes on the path from the root to ``node``: ancestors are the nearest earlier
    nodes whose subtree covers it."""
    if node <= 0:
        return b""
    sizes, byte = trie.subtree_size, trie.byte
    out = []
    while node > 0:
        out.append(int(byte[node]))
        parent = node - 1
        while parent + sizes[parent] <= node:
            parent -= 1
        node = parent
    return bytes(reversed(out))


# ----------------------------------------------------------------------------- which bytes per id
def surface_tokens(vocab) -> list[bytes | None]:
    """Per id of ``vocab``, the bytes the token stands for in text, or None for ids no text
    spells (hidden helper tokens, empty tokens, special tokens such as SentencePiece's
    ``<s>``, which sit among the ordinary ids there)."""
    from ..pipeline.hf_pipeline import control_token_ids, space_symbol

    space = space_symbol(vocab)
    left_out = set(vocab.hidden) | set(control_token_ids(vocab).values())
    out: list[bytes | None] = []
    for i, token in enumerate(vocab.tokens):
        if not token or i in left_out:
            out.append(None)
        else:
            out.append(token.replace(space, b" ") if space else token)
    return out


# ----------------------------------------------------------------------------- building
@njit(cache=True)
def _subtrees(depth, count):
    """subtree_size and num_parents of each node from the preorder depths: a node's subtree
    ends at the first later node that is not deeper."""
    size = np.zeros(count, dtype=np.int64)
    parents = np.zeros(count, dtype=np.int64)
    stack = np.zeros(count + 1, dtype=np.int64)
    top = 0
    for i in range(count + 1):
        d = depth[i] if i < count else 0
        while top > 0 and depth[stack[top - 1]] >= d:
            top -= 1
            node = stack[top]
            size[node] = i - node
            following = d if i < count else 1
            parents[node] = depth[node] - following + 1
        if i < count:
            stack[top] = i
            top += 1
    size[0] = count
    parents[0] = 0
    return size, parents


def pack_nodes(byte: np.ndarray, token: np.ndarray, subtree_size: np.ndarray, num_parents: np.ndarray) -> np.ndarray:
    """The uint64 node words of the four fields (see the module docstring)."""
    return (np.asarray(byte, dtype=np.uint64)
            | (np.asarray(token, dtype=np.uint64) << np.uint64(8))
            | (np.asarray(subtree_size, dtype=np.uint64) << np.uint64(32))
            | (np.asarray(num_parents, dtype=np.uint64) << np.uint64(56)))


def flat_tokens(tokens: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """(token_bytes, token_start): the tokens concatenated, id ``t`` at
    ``token_bytes[token_start[t]:token_start[t + 1]]`` (empty for None)."""
    lengths = np.fromiter((len(t) if t else 0 for t in tokens), dtype=np.int64, count=len(tokens))
    token_start = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(lengths, out=token_start[1:])
    return np.frombuffer(b"".join(t or b"" for t in tokens), dtype=np.uint8), token_start


def dfs_trie_from_tokens(tokens: Sequence[bytes | None], *, name: str = "vocabulary") -> DfsTrie:
    """The :class:`DfsTrie` of ``tokens`` (id -> bytes; None or ``b""`` for ids left out)."""
    n = len(tokens)
    token_bytes, token_start = flat_tokens(tokens)
    lengths = np.diff(token_start)
    max_depth = int(lengths.max()) if n else 0
    if n >= (1 << FIELD_BITS) - 1:
        raise VocabularyError(f"{name}: {n} tokens; the DFS trie holds at most {(1 << FIELD_BITS) - 2}")
    if max_depth > MAX_DEPTH:
        longest = int(np.argmax(lengths))
        raise VocabularyError(f"{name}: token {longest} is {max_depth} bytes long; the DFS trie holds tokens of "
                              f"at most {MAX_DEPTH} bytes")
    order = sorted(np.flatnonzero(lengths > 0).tolist(), key=tokens.__getitem__)
    # equal bytes sort next to each other (ids ascending): the first id owns the node
    unique = [order[0]] if order else []
    duplicates = []
    for token_id in order[1:]:
        if tokens[token_id] == tokens[unique[-1]]:
            duplicates.append((token_id, unique[-1]))
        else:
            unique.append(token_id)
    _, byte, depth, token, _ = _preorder_trie(token_bytes, token_start, np.array(unique, dtype=np.int64), False,
                                              n, max_depth)
    count = len(depth)
    if count >= 1 << FIELD_BITS:
        raise VocabularyError(f"{name}: {count} trie nodes; the DFS trie holds at most {(1 << FIELD_BITS) - 1}")
    size, parents = _subtrees(depth, count)
    nodes = pack_nodes(byte, np.where(token >= 0, token, n), size, parents)
    return DfsTrie(nodes, n, max_depth, np.array(duplicates, dtype=np.int32).reshape(-1, 2))


def build_dfs_trie(vocab) -> DfsTrie:
    """The :class:`DfsTrie` of a Vocabulary's :func:`surface_tokens` (memoised on the vocabulary)."""
    cached = getattr(vocab, "_dfs_trie", None)
    if cached is None:
        cached = dfs_trie_from_tokens(surface_tokens(vocab), name=vocab.name)
        vocab._dfs_trie = cached
    return cached


# ----------------------------------------------------------------------------- longest match
def root_children(trie: DfsTrie) -> np.ndarray:
    """int64[256]: the node of each first byte (the root's children), -1 where no token starts."""
    table = np.full(256, -1, dtype=np.int64)
    nodes = trie.nodes
    p = 1
    while p < len(nodes):
        table[int(nodes[p] & np.uint64(0xFF))] = p
        p += int((nodes[p] >> np.uint64(32)) & np.uint64(0xFFFFFF))
    return table


@njit(cache=True, inline="always")
def dfs_longest_match(nodes, first, no_token, data, pos, end):
    """The longest token that is a prefix of ``data[pos:end]`` (``pos < end``), or -1, by a walk
    down the DFS trie: ``first`` (:func:`root_children`) gives the depth-1 node; below it a
    node's children are found by scanning its subtree, jumping over each child's own subtree
    (children are in byte order, so the scan stops at the first larger byte). O(depth x
    children scanned per level)."""
    best = -1
    p = first[data[pos]]
    i = pos
    while p >= 0:
        node = nodes[p]
        token = np.int64((node >> np.uint64(8)) & np.uint64(0xFFFFFF))
        if token != no_token:
            best = token
        i += 1
        stop = p + np.int64((node >> np.uint64(32)) & np.uint64(0xFFFFFF))
        if i == end:
            break
        want = data[i]
        q = p + 1
        p = -1
        while q < stop:
            child = nodes[q]
            b = np.int64(child & np.uint64(0xFF))
            if b == want:
                p = q
                break
            if b > want:
                break
            q += np.int64((child >> np.uint64(32)) & np.uint64(0xFFFFFF))
    return best


# ----------------------------------------------------------------------------- reference
def reference_layout(tokens: Sequence[bytes | None]) -> tuple[list[int], list[int], list[int], list[int]]:
    """(byte, token, subtree_size, num_parents) per node, built by recursion over a nested dict
    trie: what :func:`dfs_trie_from_tokens` must produce. Plain Python, to be read.

    >>> byte, token, size, parents = reference_layout([b"a", b"ab", b"b"])
    >>> bytes(byte[1:]), token, size, parents
    (b'abb', [3, 0, 1, 2], [4, 2, 1, 1], [0, 1, 2, 1])
    """
    n = len(tokens)
    root: dict = {"token": n, "children": {}}
    for token_id, token in enumerate(tokens):
        if not token:
            continue
        node = root
        for b in token:
            node = node["children"].setdefault(b, {"token": n, "children": {}})
        if node["token"] == n:  # the first id of these bytes owns the node; later ones are duplicates
            node["token"] = token_id

    byte: list[int] = []
    token: list[int] = []
    size: list[int] = []
    depth: list[int] = []

    def visit(node: dict, edge: int, level: int) -> None:
        index = len(byte)
        byte.append(edge)
        token.append(node["token"])
        size.append(0)
        depth.append(level)
        for b in sorted(node["children"]):
            visit(node["children"][b], b, level + 1)
        size[index] = len(byte) - index

    visit(root, 0, 0)
    parents = [0] * len(byte)
    for i in range(1, len(byte)):
        after = i + size[i]
        # pop back to the parent of the node after the subtree: stack depth d + 1 down to depth(after)
        parents[i] = depth[i] + 1 - (depth[after] if after < len(byte) else 1)
    return byte, token, size, parents
