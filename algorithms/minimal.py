"""``minimal``: an encoding with the fewest tokens. Approximate. O(n * max_token_len).

A shortest path over the token matches of the input: position ``i`` links to
``i + len(t)`` for every token ``t`` that starts at ``i``. A backward dynamic
program computes ``cost[i]``, the fewest tokens that spell ``data[i:]``:

    cost[end] = 0,    cost[i] = 1 + min over tokens t matching at i of cost[i + len(t)]

(the matches come from one walk of the forward trie of :mod:`bpebench.algorithms.kernels.matching`,
at most ``max_token_len`` steps), then the encoding is read forwards.

Tie-break (deterministic): at every position the *longest* token that still
leads to a minimum is taken. Among all minimum-count encodings the output is
the one whose token lengths, read left to right, are lexicographically largest.

How it relates to BPE: the count is a lower bound of every tokenization's
count, so ``count(minimal) <= count(BPE)`` on every input (and equal on
most natural-text pieces); that count is unique, the sequence is not (any of the
shortest paths is as short), and the chosen one need not be BPE's even when the
counts agree. With the seed paper's dictionary ``a b c ab cb ac bb cbb acbb``:

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> v = Vocabulary.from_ranks([b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"], name="seed")
>>> [v.tokens[i] for i in MinimalEncoder(v).encode(b"abacb")]   # BPE: ab a cb (also 3)
[b'ab', b'ac', b'b']
>>> [v.tokens[i] for i in MinimalEncoder(v).encode(b"acbbb")]   # BPE: a cb bb (3)
[b'acbb', b'b']
"""

from __future__ import annotations


import numpy as np
from .kernels.jit import njit

from .kernels.compiled import compile_vocabulary
from .core.encoder import PiecewiseEncoder
from .kernels.matching import build_matcher, prefix_matches
from .core.registry import register_encoder
from .formats.vocabulary import Vocabulary

_UNREACHABLE = 1 << 30  # cost of a suffix no token sequence spells


@njit(cache=True)
def minimal_pieces(forward, token_len, max_token_len, data, offsets, out):
    """Fewest-token encoding of each piece ``data[offsets[i]:offsets[i + 1]]``.

    Writes ids to ``out`` (skipped when ``out`` is empty, to only count) and returns
    the total count, or ``-1 - start`` of a piece that cannot be spelled with tokens.
    """
    cost = np.empty(len(data) + 1, dtype=np.int32)
    choice = np.empty(len(data), dtype=np.int32)
    matches = np.empty(max(max_token_len, 1), dtype=np.int32)
    n = 0
    write = len(out) > 0
    for p in range(len(offsets) - 1):
        start = offsets[p]
        end = offsets[p + 1]
        cost[end] = 0
        for i in range(end - 1, start - 1, -1):
            k = prefix_matches(forward, data, i, end, matches)
            best = _UNREACHABLE
            pick = -1
            for j in range(k):  # shortest first, so "<=" keeps the longest of equal cost
                t = matches[j]
                c = cost[i + token_len[t]] + 1
                if c <= best:
                    best = c
                    pick = t
            cost[i] = best
            choice[i] = pick
        if cost[start] >= _UNREACHABLE:
            return -1 - start
        if write:
            i = start
            while i < end:
                t = choice[i]
                out[n] = t
                n += 1
                i += token_len[t]
        else:
            n += cost[start]
    return n


@register_encoder
class MinimalEncoder(PiecewiseEncoder):
    """A fewest-token encoding (shortest path over all token matches, longest token on ties)."""

    name = "minimal"
    summary = "approximate: an encoding with the fewest tokens (DP over all matches; count <= BPE's)"
    capabilities = frozenset({"approximate"})
    speed_rank = 20
    counts_without_output = True

    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__(vocabulary)
        matcher = build_matcher(vocabulary)
        self._forward = matcher.forward
        self._max_token_len = matcher.max_token_len
        self._token_len = compile_vocabulary(vocabulary).token_len

    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        return minimal_pieces(self._forward, self._token_len, self._max_token_len, data, offsets, out)
