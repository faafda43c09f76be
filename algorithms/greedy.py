"""``greedy``: leftmost-longest matching. Approximate. Linear time.

From the left end, emit the longest token that is a prefix of the rest of the
input and continue after it. That is the "greedy" encoder of the seed paper
(``001``): the fastest way to produce *some* token sequence for a text, but not
BPE's. BPE decides by merge priority, not by length, so the longest token at a
position is often not the one BPE ends up with there. With the seed paper's
dictionary ``a b c ab cb ac bb cbb acbb``:

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> v = Vocabulary.from_ranks([b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"], name="seed")
>>> [v.tokens[i] for i in GreedyEncoder(v).encode(b"abacb")]  # BPE gives ab a cb
[b'ab', b'ac', b'b']
>>> [v.tokens[i] for i in GreedyEncoder(v).encode(b"abacbb")]  # here greedy agrees with BPE
[b'ab', b'acbb']

Matching uses the forward trie of :mod:`bpebench.algorithms.kernels.matching`, which indexes the
tokens BPE can produce (tokens that no merge forms are never matched). Each
output token of length ``m`` costs one trie walk of at most ``max_token_len``
steps past it (the walk reads on until the trie has no child), so encoding is
O(n * max_token_len) in the worst case and close to O(n) on real text. The
output always decodes to the input. Its token count is neither a lower nor an
upper bound of BPE's (see ``minimal`` for the lower bound).
"""

from __future__ import annotations


import numpy as np
from .kernels.jit import njit

from .kernels.compiled import compile_vocabulary
from .core.encoder import PiecewiseEncoder
from .kernels.matching import build_matcher, longest_match
from .core.registry import register_encoder
from .formats.vocabulary import Vocabulary


@njit(cache=True)
def greedy_pieces(forward, token_len, data, offsets, out):
    """Leftmost-longest over each piece ``data[offsets[i]:offsets[i + 1]]``.

    Writes ids to ``out`` (skipped when ``out`` is empty, to only count) and returns
    how many tokens there are, or ``-1 - position`` of a byte that starts no token.
    """
    n = 0
    write = len(out) > 0
    for p in range(len(offsets) - 1):
        i = offsets[p]
        end = offsets[p + 1]
        while i < end:
            token = longest_match(forward, data, i, end)
            if token < 0:
                return -1 - i
            if write:
                out[n] = token
            n += 1
            i += token_len[token]
    return n


@register_encoder
class GreedyEncoder(PiecewiseEncoder):
    """Repeatedly take the longest token that matches at the current position."""

    name = "greedy"
    summary = "approximate: leftmost-longest token match (fast; differs from BPE on some pieces)"
    capabilities = frozenset({"approximate"})
    speed_rank = 10
    counts_without_output = True

    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__(vocabulary)
        self._forward = build_matcher(vocabulary).forward
        self._token_len = compile_vocabulary(vocabulary).token_len

    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        return greedy_pieces(self._forward, self._token_len, data, offsets, out)
