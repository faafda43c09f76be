"""Independent oracles the properties compare against.

Everything here is derived from the definition (``bpebench.algorithms.naive``) or from a
peer library, never from the compiled tables the fast encoders share, so a bug
in those tables cannot hide itself.

* :func:`is_valid`: an encoding is valid iff decoding and re-encoding returns it.
* :func:`brute_compatible`: ``a b`` can be adjacent iff BPE of their bytes is ``[a, b]``.
* :func:`last_token_table` / :func:`rebuild_from_last_tokens`: Corollary IIa.
* :func:`table_encode`: the paper's prefix-table algorithm over any compatibility test.
* :func:`tiktoken_single_piece`: tiktoken's own BPE for rank vocabularies (longer inputs).
* :func:`long_reference`: the definition again, with a heap instead of a scan (kB-long inputs).

All are exact; costs are stated per function (naive is O(n^2) per call).
"""

from __future__ import annotations

import heapq
from functools import lru_cache
from typing import Callable, Sequence

from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.formats.vocabulary import Vocabulary


def reference(vocab: Vocabulary, data: bytes) -> list[int]:
    """The BPE encoding by the definition."""
    return bpe_reference(vocab, data)


def long_reference(vocab: Vocabulary, data: bytes) -> list[int]:
    """The BPE encoding by the definition, for long inputs: the same merges in the same order
    as :func:`reference` (best priority, leftmost on ties, one at a time, ``Vocabulary.merge``
    asked literally), with the candidate pairs in a heap and the parts in a linked list, so
    O(n log n) instead of O(n^2). Plain Python, no compiled table; checked against
    ``reference`` in ``properties/test_kit.py``."""
    if len(data) < 64:
        return bpe_reference(vocab, data)
    byte_token = vocab.byte_token
    parts = [int(byte_token[b]) for b in data]
    if -1 in parts:
        return bpe_reference(vocab, data)  # its error names the byte
    merge = vocab.merge
    n = len(parts)
    following = list(range(1, n + 1))  # the next live part after i (n: none)
    preceding = list(range(-1, n - 1))
    version = [0] * n  # bumped whenever part i changes or dies: older heap entries are stale
    heap = []

    def candidate(i: int) -> None:
        j = following[i]
        if j < n:
            found = merge(parts[i], parts[j])
            if found is not None:
                heapq.heappush(heap, (found[0], i, version[i], j, version[j], found[1]))

    for i in range(n - 1):
        candidate(i)
    while heap:
        _, i, seen_i, j, seen_j, merged = heapq.heappop(heap)
        if version[i] != seen_i or version[j] != seen_j:
            continue  # (positions keep their order, so the smallest i is the leftmost pair)
        parts[i] = merged
        version[i] += 1
        version[j] += 1
        following[i] = following[j]
        if following[i] < n:
            preceding[following[i]] = i
        if preceding[i] >= 0:
            candidate(preceding[i])
        candidate(i)
    out, i = [], 0
    while i < n:
        out.append(parts[i])
        i = following[i]
    return out


def is_valid(vocab: Vocabulary, ids: Sequence[int]) -> bool:
    """True iff ``ids`` is the BPE encoding of its own bytes (the paper's definition of valid)."""
    ids = list(ids)
    return bpe_reference(vocab, vocab.decode_bytes(ids)) == ids


def brute_compatible(vocab: Vocabulary, a: int, b: int) -> bool:
    """Can ``a b`` stand next to each other in a valid encoding? Decode, re-encode, compare."""
    return is_valid(vocab, [a, b])


def last_token_table(vocab: Vocabulary, data: bytes) -> list[int]:
    """``table[p]`` = the last token of the BPE encoding of ``data[:p]`` (``table[0] = -1``).

    Computed from scratch per prefix: O(n^3), for short inputs only.
    """
    return [-1] + [bpe_reference(vocab, data[:p])[-1] for p in range(1, len(data) + 1)]


def rebuild_from_last_tokens(vocab: Vocabulary, table: Sequence[int], length: int) -> list[int]:
    """Corollary IIa: walk back from ``length`` by the length of each prefix's last token."""
    out: list[int] = []
    p = length
    while p > 0:
        token = table[p]
        out.append(token)
        p -= len(vocab.tokens[token])
    out.reverse()
    return out


def suffix_tokens(vocab: Vocabulary, data: bytes, end: int, max_len: int) -> list[int]:
    """Ids of the tokens that end ``data[:end]``, longest first."""
    found = []
    for start in range(max(0, end - max_len), end):
        t = vocab.token_id(data[start:end])
        if t is not None:
            found.append(t)
    return found


def table_encode(vocab: Vocabulary, data: bytes, compatible: Callable[[int, int], bool],
                 reachable: Callable[[int], bool] = lambda t: True) -> list[int]:
    """The paper's prefix-table algorithm (seed 001) with a pluggable compatibility test.

    For each prefix, the last token is the one suffix token that is compatible with
    the last token of the prefix it leaves (or that covers the whole prefix). Plain
    Python, O(n * longest token), exact iff ``compatible`` is.
    """
    max_len = max(len(t) for t in vocab.tokens)
    last = [-1] * (len(data) + 1)
    for end in range(1, len(data) + 1):
        for token in suffix_tokens(vocab, data, end, max_len):
            if not reachable(token):
                continue
            start = end - len(vocab.tokens[token])
            if start == 0 or compatible(last[start], token):
                last[end] = token
                break
        else:
            raise AssertionError(f"no compatible last token for prefix {data[:end]!r}")
    return rebuild_from_last_tokens(vocab, last, len(data))


# ----------------------------------------------------------------------------- tiktoken
def tiktoken_ranked(vocab: Vocabulary) -> bool:
    """True if tiktoken can encode with this vocabulary: ranks rule, priority = id."""
    import numpy as np

    return vocab.rule == "ranks" and not vocab.excluded and bool(
        np.array_equal(vocab.priority, np.arange(len(vocab.tokens))))


@lru_cache(maxsize=8)
def _tiktoken_encoding(vocab: Vocabulary):
    import tiktoken

    from bpebench.algorithms.formats.patterns import resolve_pattern

    pattern = resolve_pattern(vocab.pattern) if vocab.pattern else r"[\s\S]+"
    return tiktoken.Encoding(
        f"bpebench-{vocab.name}",
        pat_str=pattern,
        mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)},
        special_tokens=dict(vocab.special_tokens),
    )


def tiktoken_encoding(vocab: Vocabulary):
    """A ``tiktoken.Encoding`` built in memory from the vocabulary's ranks (no download)."""
    return _tiktoken_encoding(vocab)


def tiktoken_single_piece(vocab: Vocabulary, data: bytes) -> list[int]:
    """tiktoken's BPE of one piece (fast, for inputs naive is too slow on).

    tiktoken looks a whole piece up first; that equals BPE unless the piece is an
    unreachable token, which the caller must avoid (``vocab.unreachable`` is empty
    for cl100k_base and o200k_base).
    """
    return tiktoken_encoding(vocab)._encode_single_piece(data)
