"""Several short pieces' merge loops run in turns, so their table misses overlap. Exact.

``short_piece.merge_short_piece`` merges one piece at a time: each merge reads the ranks
of the merged token's two new neighbour pairs from the pair table (megabytes), and the
next merge cannot be chosen before they arrive. On text the encoder has not seen, those
reads miss the CPU's caches: a new 8-byte word of prose took 500 ns, 370 of them
waiting. Here up to :data:`LANES` pieces take turns: a lane chooses and applies its merge,
prefetches the two pair ranks it will need and yields to the next lane; when its turn
comes again the ranks are in cache. The waits of different pieces overlap instead of
adding up.

Each lane keeps its piece at fixed positions (a position is the piece's byte offset where
a token starts), one row of ``lanes`` with a column group per field: the token there, the next
and the previous live position, and the rank of the pair starting there packed with the position
(``rank << 5 | i``, the key).
The merge to make is then the minimum key (lowest rank, leftmost on ties, as the
definition says) found without a branch per entry; merged-away positions hold
:data:`_DONE_KEY`. It is the definition's merge loop in another layout, so it equals
``merge_short_piece`` (and ``naive``) on every piece of at most :data:`WIDTH` bytes, under
the same condition (every merged token has its own rank). Two-byte characters start whole where
that is exact, as in ``merge_short_piece`` (``short_piece.atom_rank``): their second byte's
position holds no unit.

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
from .short_piece import atom_rank, merged_token, pair_entry_rank, pair_rank

#: pieces merged in turns at most (the fused pipeline's scratch holds this many lanes)
LANES = 16
#: bytes of a piece at most (a position fits in the key's low five bits)
WIDTH = 32
_POSITION_BITS = 5
#: ranks are capped here before packing, so a pair that never merges packs below overflow
_RANK_CAP = np.int64(1) << 56
#: a key at or above this is a pair that never merges (or no pair)
_DONE_KEY = _RANK_CAP << _POSITION_BITS
#: the key of a pair whose rank is still to be read from the pair table (prefetched meanwhile)
_PENDING = np.int64(-1)
#: columns of ``lanes`` (int64[LANES, LANE_COLUMNS]): tokens, keys, next, previous, the state, then
#: the piece's bounds (set by the caller) and a column the caller may use as it likes
_PARTS, _KEYS, _NEXT, _PREV = 0, WIDTH, 2 * WIDTH, 3 * WIDTH
_LENGTH, _LAST = 4 * WIDTH, 4 * WIDTH + 1
START, END, TAG = 4 * WIDTH + 2, 4 * WIDTH + 3, 4 * WIDTH + 4
LANE_COLUMNS = 4 * WIDTH + 5


def new_lanes() -> np.ndarray:
    """Scratch for :func:`merge_pieces_interleaved`."""
    return np.zeros((LANES, LANE_COLUMNS), dtype=np.int64)


@njit(cache=True, inline="always")
def _packed(rank, position):
    return (min(rank, _RANK_CAP) << _POSITION_BITS) | position


@njit(cache=True, _nrt=False)
def merge_pieces_interleaved(byte_token, byte_pairs, pairs, pair_filter, token_of_rank,
                             token_offset, data, lanes, count):
    """BPE of the pieces ``data[lanes[j, START]:lanes[j, END]]`` (each of 1 to :data:`WIDTH` bytes)
    of the first ``count`` lanes (at most :data:`LANES`); read them with :func:`lane_tokens`."""
    pending = 0
    for lane in range(count):
        start = lanes[lane, START]
        end = lanes[lane, END]
        length = end - start
        before = -1  # the position of the unit before ``i``
        whole_before = False  # and whether it is a character that started whole
        i = 0
        while i < length:
            rank = atom_rank(byte_pairs, data, start, end, start + i)
            whole = rank >= 0
            lanes[lane, _PARTS + i] = (merged_token(rank, token_offset, token_of_rank) if whole
                                       else byte_token[data[start + i]])
            lanes[lane, _PREV + i] = before
            if before >= 0:
                lanes[lane, _NEXT + before] = i
                if whole or whole_before:  # read from the pair table once every lane is set up
                    prefetch_merge_rank(pairs, pair_filter, lanes[lane, _PARTS + before], lanes[lane, _PARTS + i])
                    lanes[lane, _KEYS + before] = _PENDING
                    pending += 1
                else:
                    lanes[lane, _KEYS + before] = _packed(pair_entry_rank(
                        byte_pairs[(np.int64(data[start + before]) << 8) | np.int64(data[start + i])]), before)
            if whole:
                lanes[lane, _KEYS + i + 1] = _DONE_KEY  # the character's second byte starts no unit
            before = i
            whole_before = whole
            i += 2 if whole else 1
        lanes[lane, _NEXT + before] = length
        lanes[lane, _KEYS + before] = _DONE_KEY
        lanes[lane, _LENGTH] = length
        lanes[lane, _LAST] = -1
    if pending > 0:
        for lane in range(count):
            for i in range(lanes[lane, _LENGTH] - 1):
                if lanes[lane, _KEYS + i] == _PENDING:
                    paired = pair_rank(pairs, pair_filter, lanes[lane, _PARTS + i],
                                       lanes[lane, _PARTS + lanes[lane, _NEXT + i]])
                    lanes[lane, _KEYS + i] = _packed(paired, i)
    active = count
    while active > 0:
        for lane in range(count):
            length = lanes[lane, _LENGTH]
            if length == 0:
                continue
            merged = lanes[lane, _LAST]
            if merged >= 0:
                # the ranks prefetched on this lane's previous turn
                right = lanes[lane, _NEXT + merged]
                if right < length:
                    lanes[lane, _KEYS + merged] = _packed(pair_rank(pairs, pair_filter, lanes[lane, _PARTS + merged],
                                                                lanes[lane, _PARTS + right]), merged)
                else:
                    lanes[lane, _KEYS + merged] = _DONE_KEY
                left = lanes[lane, _PREV + merged]
                if left >= 0:
                    lanes[lane, _KEYS + left] = _packed(pair_rank(pairs, pair_filter, lanes[lane, _PARTS + left],
                                                              lanes[lane, _PARTS + merged]), left)
            best = lanes[lane, _KEYS]
            for i in range(1, length - 1):
                best = min(best, lanes[lane, _KEYS + i])
            if best >= _DONE_KEY:
                lanes[lane, _LENGTH] = 0
                lanes[lane, _LAST] = length  # kept for lane_tokens
                active -= 1
                continue
            at = best & (WIDTH - 1)
            rank = best >> _POSITION_BITS
            token = merged_token(rank, token_offset, token_of_rank)
            lanes[lane, _PARTS + at] = token
            gone = lanes[lane, _NEXT + at]
            after = lanes[lane, _NEXT + gone]
            lanes[lane, _NEXT + at] = after
            lanes[lane, _KEYS + gone] = _DONE_KEY
            if after < length:
                lanes[lane, _PREV + after] = at
                prefetch_merge_rank(pairs, pair_filter, token, lanes[lane, _PARTS + after])
            left = lanes[lane, _PREV + at]
            if left >= 0:
                prefetch_merge_rank(pairs, pair_filter, lanes[lane, _PARTS + left], token)
            lanes[lane, _LAST] = at


@njit(cache=True, inline="always")
def lane_tokens(lanes, lane, out, n_out):
    """Append lane ``lane``'s ids (after :func:`merge_pieces_interleaved`) to ``out[n_out:]``."""
    length = lanes[lane, _LAST]
    at = 0
    while at < length:
        out[n_out] = lanes[lane, _PARTS + at]
        n_out += 1
        at = lanes[lane, _NEXT + at]
    return n_out
