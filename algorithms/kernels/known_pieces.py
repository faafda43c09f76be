"""Known pieces of several tokens, kept in the free rows of the whole-token table ``short_tokens``.
Exact.

A piece of at most 8 bytes that is not one token, once BPE has given its ids (two or three, each
below 2^18), is written into an empty row of ``short_tokens`` (:mod:`.short_piece`): key = the
packed bytes as for a token, value = a tag bit (:data:`KNOWN_MIN`) with the length, the count and the ids. The
whole-token probe of the fused loop then answers such a piece in one read, like a token, instead
of a miss followed by a second probe in the thread's piece cache. BPE of a piece depends on its
bytes alone, so a row is right for every later text of the table's vocabulary, on every thread.

Readers that know only tokens (``short_token_at``) pass over these rows: their value's high word
is not a length. The table is shared by every thread (one copy, not one per thread: the 8 MB of
o200k's would double in the caches), so a row is written without a lock and read without one:

* a row goes only from empty (value -1, key -1) to reserved (value :data:`RESERVED`, won by one
  writer with a compare-and-swap) to filled (the key written, then the value with a release
  store), never back; a reader stops at a row whose value is negative, as at an empty one, and
  then takes the piece cache's path, which is right;
* a reader that sees a new value beside an old key reads the key of an empty row, -1 (8 bytes of
  0xFF, never valid UTF-8): a known row never has that key, and a reader never takes a known row's
  value under it.

So every answer is a value written for exactly that key and length, whatever the order in which the
reader's two loads land. Two writers of the same piece may both fill a row: both hold the same ids.

Cost: a lookup is the whole-token probe it replaces; an insert is one compare-and-swap. Inserts
stop after :data:`MAX_PROBES` rows from the piece's slot, and a thread stops after ``slots //
INSERTS_PER_THREAD_DIVISOR`` of them (counted in its piece cache), so the table's load stays near
its build load of at most one half.
"""

from __future__ import annotations

import numpy as np

from .bits import compare_and_swap, store_release
from .jit import njit

#: longest known piece (bytes): the whole-token table's keys
KNOWN_MAX_BYTES = 8
#: most ids of a known piece, and the bits of each
KNOWN_MAX_IDS = 3
ID_BITS = 18
#: a value at or above this is a known piece's (a token's is below 2^36)
KNOWN_MIN = np.int64(1) << 62
#: a reserved row's value: negative, so readers stop there as at an empty row
RESERVED = np.int64(-2)
#: rows an insert looks at, from the piece's slot on
MAX_PROBES = 4
#: a thread inserts at most ``slots // INSERTS_PER_THREAD_DIVISOR`` pieces into a table
INSERTS_PER_THREAD_DIVISOR = 8
_ID_MASK = (np.int64(1) << ID_BITS) - 1
_TAG_SHIFT = 56
_COUNT_SHIFT = 54
_KNOWN_TAG = np.int64(KNOWN_MIN >> _TAG_SHIFT)
_EMPTY_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def known_value(key, out, first, count, length):
    """The row value of a known piece packed as ``key`` (``length`` bytes) whose ids are
    ``out[first:first+count]``, or -1 when it cannot be one (too long, too many ids, an id of more
    than ``ID_BITS`` bits, the key of an empty row)."""
    if length > KNOWN_MAX_BYTES or count > KNOWN_MAX_IDS or count < 2 or key == _EMPTY_KEY:
        return np.int64(-1)
    value = KNOWN_MIN | (np.int64(length) << _TAG_SHIFT) | (np.int64(count) << _COUNT_SHIFT)
    for i in range(count):
        token = np.int64(out[first + i])
        if token < 0 or token > _ID_MASK:
            return np.int64(-1)
        value |= token << (ID_BITS * i)
    return value


@njit(cache=True, inline="always")
def short_entry_at(short_tokens, key, length, slot):
    """The token whose bytes are the piece packed as ``key`` (``length`` bytes, at most 8), or the
    row value of it as a known piece (at least :data:`KNOWN_MIN`), or -1; the probe starts at
    ``slot`` (``short_piece.token_slot``)."""
    mask = short_tokens.shape[0] - 1
    while True:
        value = short_tokens[slot, 1]
        if value < 0:
            return np.int64(-1)
        if np.uint64(short_tokens[slot, 0]) == key:
            if (value >> 32) == length:
                return value & 0xFFFFFFFF
            if (value >> _TAG_SHIFT) == (_KNOWN_TAG | length) and key != _EMPTY_KEY:
                return value
        slot = (slot + 1) & mask


@njit(cache=True, inline="always")
def known_ids(value, out, n_out):
    """Append the ids of a known piece's row ``value`` to ``out[n_out:]``; returns the new count."""
    count = (value >> _COUNT_SHIFT) & 3  # 2 or 3
    for i in range(count):
        out[n_out + i] = (value >> (ID_BITS * i)) & _ID_MASK
    return n_out + count


@njit(cache=True)
def insert_known(short_tokens, key, slot, value):
    """Write the known piece packed as ``key`` with row ``value`` (:func:`known_value`) into the first
    empty row of at most ``MAX_PROBES`` from ``slot``; True when the table holds it afterwards."""
    mask = short_tokens.shape[0] - 1
    for _ in range(MAX_PROBES):
        current = short_tokens[slot, 1]
        if current == -1 and compare_and_swap(short_tokens, 2 * slot + 1, -1, RESERVED):
            short_tokens[slot, 0] = np.int64(key)
            store_release(short_tokens, 2 * slot + 1, value)
            return True
        if current == value and np.uint64(short_tokens[slot, 0]) == key:
            return True
        slot = (slot + 1) & mask
    return False
