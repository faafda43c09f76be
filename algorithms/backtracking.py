"""``backtracking``: exact BPE by leftmost-longest matching with backtracking. O(n) per piece.

The seed paper's fastest exact encoder. The output is built left to right and is
always a valid encoding of the bytes consumed so far (every token is checked to be
*compatible* with the one before it, which by the paper's corollary IIIa keeps the
whole sequence valid):

1. at the current position take the longest token that matches;
2. if it is compatible with the previous token and does not end on a position
   already known to be dead, append it and continue after it;
3. otherwise try the next-longest token that matches there (``next_prefix``);
4. if no token is left, the position is *dead*: the unique valid encoding of the
   text before it cannot be continued to a valid encoding of the whole text, so
   no valid encoding of the whole text has a boundary there. Mark it, drop the
   previous token and retry its shorter alternatives.

Dead positions are never revisited, so every position is entered a bounded number
of times (times the number of tokens that match there): linear time for a fixed
vocabulary. Exact: the result is the one valid encoding, i.e. equal to ``naive``.

Hot loops are numba over the :class:`~bpebench.algorithms.kernels.matching.Matcher` (forward trie,
next-prefix table, packed merge tables); ``encode_pieces`` runs all pieces in one call.
"""

from __future__ import annotations


import numpy as np
from .kernels.jit import njit

from .core.encoder import PiecewiseEncoder
from .kernels.matching import (build_matcher, compatible_after, longest_match_and_length, merge_rank,
                               no_live_crossing, safe_boundary)
from .core.registry import register_encoder
from .formats.vocabulary import Vocabulary


@njit(cache=True, _nrt=False)
def backtrack_piece(matcher, data, start, end, dead, out, n_out):
    """Append the encoding of ``data[start:end]`` to ``out[n_out:]``; return the new length.

    ``dead`` is uint8 scratch indexed by absolute position (at least ``end + 1`` slots);
    its slots ``start+1 .. end`` are cleared here, so callers allocate it without zeroing
    and a text whose pieces are all short never touches it. (The fused kernels zeroed a
    text-sized array per call before; without it they were level, 0.99-1.03x.)
    """
    if start >= end:
        return n_out
    for i in range(start + 1, end + 1):
        dead[i] = 0
    forward, two_byte_start = matcher.forward, matcher.two_byte_start
    rows, pairs, pair_filter, pair_floor = matcher.rows, matcher.pairs, matcher.pair_filter, matcher.pair_floor
    sigs = matcher.boundary_sigs
    first = n_out
    pos = start
    token, length = longest_match_and_length(forward, two_byte_start, data, pos, end)
    # ``last`` was the longest match at its start: then no merge joins it whole to a prefix of
    # the next token, and the compatibility walk skips those steps (``compatible_after``;
    # 1.08-1.36x on the long pieces of unseen multilingual text). Unknown after a backtrack.
    longest = -1
    while True:
        last = out[n_out - 1] if n_out > first else -1
        first_choice = True
        while True:
            stop = pos + length
            if dead[stop] == 0 and (last < 0 or _compatible(sigs, rows, pairs, pair_filter, pair_floor, last, token,
                                                            longest, data[pos - 1], data[pos])):
                out[n_out] = token
                n_out += 1
                pos = stop
                longest = token if first_choice else -1
                break
            first_choice = False
            shorter = rows[token, 4]  # next_prefix[token], from the row just read
            if shorter >= 0:
                token = shorter
                length = rows[token, 3]
                continue
            # nothing fits after `last`: pos is dead, retry last's shorter alternatives
            dead[pos] = 1
            n_out -= 1
            length = rows[last, 3]
            pos -= length
            token = last
            stop = -1
            longest = -1
            break
        if pos == end:
            return n_out
        if stop >= 0:
            token, length = longest_match_and_length(forward, two_byte_start, data, pos, end)


@njit(cache=True, inline="always")
def _compatible(sigs, rows, pairs, pair_filter, pair_floor, last, token, longest, last_byte, first_byte):
    """``compatible_after(..., last, token, longest)``, settled without the walk where it can be: first by
    the tokens' boundary signatures (``no_live_crossing``: no merge between the two spines can run),
    then by the rows' boundary floors (``safe_boundary``: only a merge of the two whole tokens could
    break the pair, and none exists when ``last`` is the longest match at its start). The walk, whose
    dependent reads of the rows and merge tables were half of backtracking's time on unseen CJK text,
    is left for the pairs neither settles (12% of them there, against 68% with the floors alone)."""
    if no_live_crossing(sigs, last, token, last_byte, first_byte):
        return True
    if safe_boundary(rows, last, token, last_byte, first_byte):
        return last == longest or merge_rank(pairs, pair_filter, last, token) < 0
    return compatible_after(rows, pairs, pair_filter, pair_floor, last, token, longest)


@njit(cache=True)
def backtrack_pieces(matcher, data, offsets, out):
    """Encode every piece ``data[offsets[i]:offsets[i+1]]`` into ``out``; return the length."""
    dead = np.empty(len(data) + 1, dtype=np.uint8)
    n_out = 0
    for i in range(len(offsets) - 1):
        n_out = backtrack_piece(matcher, data, offsets[i], offsets[i + 1], dead, out, n_out)
    return n_out


@register_encoder
class BacktrackingEncoder(PiecewiseEncoder):
    """Leftmost-longest match, shorter alternatives on conflict, backtracking over dead positions."""

    name = "backtracking"
    summary = "exact: longest match + compatibility check + backtracking with dead-position marks (O(n), numba)"
    capabilities = frozenset({"exact"})
    speed_rank = 10
    needs_ordered_merges = True

    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__(vocabulary)
        self.matcher = build_matcher(vocabulary)

    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        return backtrack_pieces(self.matcher, data, offsets, out)
