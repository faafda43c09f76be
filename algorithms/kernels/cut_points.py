"""Cut points: where no merge can ever join the two sides of a piece. Exact for any pair-merge BPE.

Every merge forms a token of the vocabulary, and a token formed across position ``p`` of a
piece spells the piece's bytes on both sides of ``p``. So when no token holds the byte before
``p`` followed by the start of the character at ``p``, no merge joins the two sides: both
evolve on their own (the definition's best merge over the whole piece is the best of one
side), and BPE of the piece is BPE of its part before ``p`` followed by BPE of the part after.
That holds whatever order the merges run in, so it serves vocabularies whose merges run out
of priority order, whose long pieces otherwise take the heap's O(L log L) loop: CJK runs and
Thai words fall apart into parts of a few characters that the merge loop takes.

The test is conservative. Only positions before a non-ASCII character (a lead byte C2-F4)
are candidates, and a token is taken to cross ``p`` when, at one of its inner positions, it holds
the byte before ``p`` followed by the character at ``p`` or a prefix of it (a token may end inside
a character). Three bit sets, keyed by the byte before and: the lead byte alone (2^14 bits, for a
token ending on it); the lead and first continuation byte (2^20 bits: a two-byte character, or a
longer one the token ends inside); the first three bytes of a longer character (a hash into 2^20
bits: CJK, kana and Thai characters differ in their third byte). 258 kB in all. A false "crosses"
(a hash collision, or a fourth byte that differs) only keeps a piece whole. Building: one pass
over every token's bytes (vectorised, tens of milliseconds for 200k tokens); a test: up to three
bit reads.
"""

from __future__ import annotations

import numpy as np

from .jit import njit

#: the three sets, one after the other in one array: (byte before, lead byte), (byte before, lead
#: byte, first continuation byte), and a hash of (byte before, a longer character's first three bytes)
PAIR_BITS = 1 << 14
TRIPLE_BITS = 1 << 20
FULL_BITS = 1 << 20
TRIPLE_BASE = PAIR_BITS
FULL_BASE = PAIR_BITS + TRIPLE_BITS
WORDS = (PAIR_BITS + TRIPLE_BITS + FULL_BITS) // 64
_FULL_MULTIPLIER = 0x9E3779B1


def _pair(before, lead):
    return (before << 6) | (lead & 0x3F)


def _triple(before, lead, follow):
    return TRIPLE_BASE + ((before << 12) | ((lead & 0x3F) << 6) | (follow & 0x3F))


def _full(before, lead, follow, third):
    packed = (before << 17) | ((lead & 0x1F) << 12) | ((follow & 0x3F) << 6) | (third & 0x3F)
    return FULL_BASE + (((packed * _FULL_MULTIPLIER) & 0xFFFFFFFF) >> 12)


# the same keys in the compiled test; the build calls the plain functions on arrays (no numba import)
pair_key = njit(cache=True, inline="always")(_pair)
triple_key = njit(cache=True, inline="always")(_triple)
full_key = njit(cache=True, inline="always")(_full)


def crossing_set(token_bytes: np.ndarray, token_start: np.ndarray) -> np.ndarray:
    """uint64[WORDS]: the three sets' bits for every inner character start of every token (see the
    module docstring). ``token_bytes`` / ``token_start``: the vocabulary's bytes concatenated and each
    token's start (``Tables``)."""
    token_bytes = np.asarray(token_bytes, dtype=np.uint8)
    token_start = np.asarray(token_start, dtype=np.int64)
    n = len(token_bytes)
    bits = np.zeros(WORDS, dtype=np.uint64)
    if n == 0:
        return bits
    lengths = np.diff(token_start)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    first = np.zeros(n, dtype=bool)
    first[token_start[:-1][lengths > 0]] = True
    left = token_start[1:][owner] - np.arange(n) - 1  # bytes of the token after each byte
    wide = np.concatenate([token_bytes, np.zeros(2, dtype=np.uint8)]).astype(np.int64)
    here = np.flatnonzero((token_bytes >= 0xC0) & ~first)  # lead bytes with a byte of their token before
    before, lead, follow, third = wide[here - 1], wide[here], wide[here + 1], wide[here + 2]
    left = left[here]
    continues = (follow >= 0x80) & (follow < 0xC0) & (left >= 1)
    third_continues = continues & (third >= 0x80) & (third < 0xC0) & (left >= 2)
    keys = [_pair(before, lead)[left == 0],
            # a two-byte character, or a longer one the token ends inside
            _triple(before, lead, follow)[continues & ((lead < 0xE0) | (left == 1))],
            _full(before, lead, follow, third)[third_continues & (lead >= 0xE0)]]
    # (a lead byte followed by a byte that continues nothing never matches valid UTF-8 text)
    index = np.unique(np.concatenate(keys))
    np.bitwise_or.at(bits, index >> 6, np.left_shift(np.uint64(1), (index & 63).astype(np.uint64)))
    return bits


@njit(cache=True, inline="always")
def _bit(crossing, index):
    return (crossing[index >> 6] >> np.uint64(index & 63)) & np.uint64(1)


@njit(cache=True, inline="always")
def can_cut(crossing, data, p, end):
    """Whether no merge can join ``data[:p]`` and ``data[p:end]``: ``data[p]`` starts a non-ASCII
    character that ends within the piece, and no token holds it, or a prefix of it, after
    ``data[p - 1]`` (``crossing``: :func:`crossing_set`)."""
    lead = np.int64(data[p])
    if lead < 0xC0 or p + 1 >= end:
        return False
    follow = np.int64(data[p + 1])
    if follow < 0x80 or follow >= 0xC0:
        return False
    before = np.int64(data[p - 1])
    if _bit(crossing, pair_key(before, lead)) or _bit(crossing, triple_key(before, lead, follow)):
        return False
    if lead < 0xE0:
        return True
    if p + 2 >= end:
        return False
    third = np.int64(data[p + 2])
    if third < 0x80 or third >= 0xC0:
        return False
    return _bit(crossing, full_key(before, lead, follow, third)) == 0
