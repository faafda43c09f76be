"""``table``: exact BPE by dynamic programming over all prefixes. O(n · m) per piece.

The seed paper's observation (corollary IIa): the valid encoding of a text is
determined by its last token, and that last token determines the rest by peeling
it off and looking up the last token of the shorter prefix. So it is enough to
know, for every prefix ``data[:p]``, its last token ``last[p]``:

* the candidates for ``last[p]`` are the tokens that end at ``p`` (a walk of the
  backward trie from ``p``: ``m`` matches, a few on average, bounded by the
  longest token);
* a candidate ``t`` of length ``L`` is the right one iff ``L == p`` or ``t`` is
  *compatible* with ``last[p - L]`` (corollary IIIa: appending a token that forms a
  valid pair with the last token of a valid encoding keeps it valid, and exactly
  one valid encoding exists). Longest candidates are tried first: they are the
  usual answer.

Reconstruction walks ``last`` back from the end. Exact: equals ``naive``.

:func:`extend_last_tokens` is the shared kernel: ``bpebench.algorithms.appending`` extends
the same table one pushed byte at a time (and, mirrored, to the left), and
``bpebench.algorithms.interval`` runs it over a whole text once.
"""

from __future__ import annotations


import numpy as np
from .kernels.jit import njit

from .core.encoder import PiecewiseEncoder
from .kernels.matching import build_matcher, pair_compatible, suffix_matches
from .core.registry import register_encoder
from .formats.vocabulary import Vocabulary


@njit(cache=True)
def extend_last_tokens(trie, rows, pairs, pair_filter, pair_floor, data, start, lo, hi, last, counts, buf,
                       leftward):
    """Fill ``last[p]`` and ``counts[p]`` for ``p`` in ``lo+1 .. hi``, the last token and the
    token count of the valid encoding of ``data[start:p]``; entries ``start .. lo`` must be
    filled already (``counts[start] == 0``).

    With ``leftward=False`` pass the backward trie: the candidates at ``p`` are the
    tokens ending there. With ``leftward=True`` ``data`` is a text stored back to front
    (``data[k]`` is the k-th byte from the right), pass the forward trie, and the table
    holds the *first* token of every suffix; compatibility is checked the other way
    round. ``buf`` needs ``max_token_len`` slots.
    """
    for p in range(lo + 1, hi + 1):
        k = suffix_matches(trie, data, start, p, buf)
        for j in range(k - 1, -1, -1):
            token = buf[j]
            q = p - rows[token, 3]
            if q == start:
                last[p] = token
                counts[p] = 1
                break
            before = last[q]
            if leftward:
                ok = pair_compatible(rows, pairs, pair_filter, pair_floor, token, before)
            else:
                ok = pair_compatible(rows, pairs, pair_filter, pair_floor, before, token)
            if ok:
                last[p] = token
                counts[p] = counts[q] + 1
                break


@njit(cache=True)
def unwind(rows, last, start, end, out, n_out):
    """Write the encoding of ``data[start:end]`` (from its last-token table) to ``out[n_out:]``
    in text order; return the new length."""
    k = 0
    p = end
    while p > start:
        p -= rows[last[p], 3]
        k += 1
    p = end
    i = n_out + k
    while p > start:
        i -= 1
        out[i] = last[p]
        p -= rows[last[p], 3]
    return n_out + k


@njit(cache=True)
def table_pieces(matcher, data, offsets, out, count_only):
    """Encode (or, with ``count_only``, just count) every piece; return the number of tokens."""
    last = np.empty(len(data) + 1, dtype=np.int32)
    counts = np.empty(len(data) + 1, dtype=np.int32)
    buf = np.empty(max(matcher.max_token_len, 1), dtype=np.int32)
    n_out = 0
    for i in range(len(offsets) - 1):
        start, end = offsets[i], offsets[i + 1]
        if start == end:
            continue
        counts[start] = 0
        extend_last_tokens(matcher.backward, matcher.rows, matcher.pairs, matcher.pair_filter, matcher.pair_floor,
                           data, start, start, end, last, counts, buf, False)
        if count_only:
            n_out += counts[end]
        else:
            n_out = unwind(matcher.rows, last, start, end, out, n_out)
    return n_out


@register_encoder
class TableEncoder(PiecewiseEncoder):
    """The last token of every prefix by dynamic programming; the encoding read backwards."""

    name = "table"
    summary = "exact: last token of every prefix by DP over tokens ending there + compatibility (O(n·m), numba)"
    capabilities = frozenset({"exact"})
    speed_rank = 30
    needs_ordered_merges = True
    counts_without_output = True

    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__(vocabulary)
        self.matcher = build_matcher(vocabulary)

    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        return table_pieces(self.matcher, data, offsets, out, len(out) == 0)
