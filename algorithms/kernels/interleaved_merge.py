"""Several short pieces' merge loops run in turns, so their table misses overlap. Exact.

``short_piece.merge_short_piece`` merges one piece at a time: each merge reads the ranks
of the merged token's two new neighbour pairs from the pair table (megabytes), and the
next merge cannot be chosen before they arrive. On text the encoder has not seen, those
reads miss the CPU's caches: a new 8-byte word of prose took 500 ns, 370 of them
waiting. Here up to :data:`LANES` pieces take turns: a lane chooses and applies its merge,
prefetches the two pair ranks it will need and yields to the next lane; when its turn
comes again the ranks are in cache. The waits of different pieces overlap instead of
adding up.

Each lane is the merge loop's own state in one row of ``lanes``: the piece's tokens in order
(``parts``), the rank of each adjacent pair (``ranks``, :data:`~.short_piece.NO_MERGE` for a pair
that never merges), how many tokens are left and where the last merge was. A turn reads the two
ranks prefetched on the lane's previous turn, takes the lowest rank (the leftmost on ties, as the
definition says), merges there and closes the gap. It is the definition's merge loop, so it
equals ``merge_short_piece`` (and ``naive``) on every piece of at most :data:`WIDTH` bytes, under
the same condition (every merged token has its own rank). Two-byte characters start whole where
that is exact, as in ``merge_short_piece`` (``short_piece.atom_rank``). (An earlier layout kept each
piece at fixed byte positions with linked neighbours and branch-free minimum keys; this one, the
merge loop's, ran its first BPE of new pieces 7-17% faster in every cache state measured by
``benchmarks/merge_ab.py``.)

Cost: O(L^2) per piece of ``L`` bytes, as the merge loop.

numba API::

    lanes[j, START], lanes[j, END] = piece j's bounds in data      (the caller's, j < count)
    merge_pieces_interleaved(byte_token, byte_pairs, pairs, pair_filter,
                             token_of_rank, token_offset, data, lanes, count) -> None
    lane_tokens(lanes, j, out, n_out) -> new n_out         (piece j's ids in order)
"""

from __future__ import annotations

import numpy as np

from .jit import njit
from .matching import prefetch_merge_rank
from .short_piece import NO_MERGE, merged_token, pair_rank, start_units

#: pieces merged in turns at most (the fused pipeline's scratch holds this many lanes)
LANES = 16
#: bytes of a piece at most
WIDTH = 32
#: columns of ``lanes`` (int64[LANES, LANE_COLUMNS]): the tokens, the pair ranks, the state, then the
#: piece's bounds (set by the caller) and a column the caller may use as it likes
_PARTS, _RANKS = 0, WIDTH
_COUNT, _LAST, _FINAL = 2 * WIDTH, 2 * WIDTH + 1, 2 * WIDTH + 2
START, END, TAG = 2 * WIDTH + 3, 2 * WIDTH + 4, 2 * WIDTH + 5
LANE_COLUMNS = 2 * WIDTH + 6


def new_lanes() -> np.ndarray:
    """Scratch for :func:`merge_pieces_interleaved`."""
    return np.zeros((LANES, LANE_COLUMNS), dtype=np.int64)


@njit(cache=True, _nrt=False)
def merge_pieces_interleaved(byte_token, byte_pairs, pairs, pair_filter, token_of_rank,
                             token_offset, data, lanes, count):
    """BPE of the pieces ``data[lanes[j, START]:lanes[j, END]]`` (each of 1 to :data:`WIDTH` bytes)
    of the first ``count`` lanes (at most :data:`LANES`); read them with :func:`lane_tokens`."""
    for lane in range(count):  # each lane's units and the ranks of their pairs, as merge_short_piece
        n = start_units(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset, data,
                        lanes[lane, START], lanes[lane, END], lanes[lane, _PARTS:_RANKS], lanes[lane, _RANKS:_COUNT])
        lanes[lane, _COUNT] = n
        lanes[lane, _LAST] = -1
    active = count
    while active > 0:
        for lane in range(count):
            n = lanes[lane, _COUNT]
            if n == 0:  # done
                continue
            at = lanes[lane, _LAST]
            if at >= 0:  # the ranks prefetched on this lane's previous turn
                if at < n - 1:
                    lanes[lane, _RANKS + at] = pair_rank(pairs, pair_filter, lanes[lane, _PARTS + at],
                                                        lanes[lane, _PARTS + at + 1])
                if at > 0:
                    lanes[lane, _RANKS + at - 1] = pair_rank(pairs, pair_filter, lanes[lane, _PARTS + at - 1],
                                                            lanes[lane, _PARTS + at])
            best = 0
            best_rank = lanes[lane, _RANKS] if n > 1 else NO_MERGE
            for i in range(1, n - 1):
                r = lanes[lane, _RANKS + i]
                if r < best_rank:  # strict: leftmost wins on equal rank
                    best_rank = r
                    best = i
            if best_rank == NO_MERGE:
                lanes[lane, _FINAL] = n
                lanes[lane, _COUNT] = 0
                active -= 1
                continue
            token = merged_token(best_rank, token_offset, token_of_rank)
            lanes[lane, _PARTS + best] = token
            for j in range(best + 1, n - 1):
                lanes[lane, _PARTS + j] = lanes[lane, _PARTS + j + 1]
            for j in range(best + 1, n - 2):
                lanes[lane, _RANKS + j] = lanes[lane, _RANKS + j + 1]
            n -= 1
            lanes[lane, _COUNT] = n
            if best < n - 1:
                prefetch_merge_rank(pairs, pair_filter, token, lanes[lane, _PARTS + best + 1])
            if best > 0:
                prefetch_merge_rank(pairs, pair_filter, lanes[lane, _PARTS + best - 1], token)
            lanes[lane, _LAST] = best


@njit(cache=True, inline="always")
def lane_tokens(lanes, lane, out, n_out):
    """Append lane ``lane``'s ids (after :func:`merge_pieces_interleaved`) to ``out[n_out:]``."""
    for i in range(lanes[lane, _FINAL]):
        out[n_out] = lanes[lane, _PARTS + i]
        n_out += 1
    return n_out
