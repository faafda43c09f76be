r"""The run time of the pattern transducer (:mod:`.pretokenize_transducer` builds its tables): piece
ends of a UTF-8 text in one pass of table lookups, one character a step (two on ASCII text), no
branch on the text but at rare steps. Exact with respect to ``regex.findall`` for the tables
:func:`.pretokenize_transducer.build_transducer` makes (see that module for how and why).

Kept apart from the construction so that the fused kernel (:mod:`.fast_pipeline`) can split and
encode in one compiled call without importing the builder: numba compiles these functions into
the ahead-of-time module, and a vocabulary whose pattern has a transducer carries its tables in
its Plan (``fast_pipeline.split_tables``).

numba API::

    split_utf8(data, *split_arguments, ends) -> number of ends, or -1 (text no branch matches)
    split_window(data, *split_arguments, ends, settled) -> the same, and in ``settled[0]`` how many
        of the ends every longer text that starts with ``data`` has

Complexity: O(n) table lookups for n characters, plus a piece read again after each overflow.
"""

from __future__ import annotations

import numpy as np

from ..kernels.bits import load_u16
from ..kernels.jit import njit

#: piece ends one character may settle
_MAX_ENDS = 5
# what a step settles, packed above the next row: the number of piece ends, their offsets back from
# the position after the character (4 bits each), where the last match now is (an offset back, 0 =
# unchanged), and two flags
_OFFSETS_AT = 4
_MARK_AT = _OFFSETS_AT + 4 * _MAX_ENDS
SLOW = 1 << (_MARK_AT + 4)  # the piece ends at the last match, found at run time, and is read again
RARE = 1 << (_MARK_AT + 5)  # anything but none or one end: the run time's slower path
FAIL = 1 << (_MARK_AT + 6)  # (``final`` only) some text matches no branch

# a pair entry: the next pair row (21 bits), then each character's end (15 less its offset back,
# 4 bits, so that the end is one addition to the position; and whether it is there, 1 bit), and a
# flag for a step that either character makes rare
_PAIR_ROW = (1 << 21) - 1
_PAIR_FIRST_AT = 21
_PAIR_SECOND_AT = 26
PAIR_RARE = 1 << 31
#: byte offsets of the last characters kept while splitting UTF-8 (a piece end is at most 15 back)
_RING = 16


@njit(cache=True, inline="always")
def _settle(ends, m, after, packed, ring):
    """Write the ``packed`` piece ends (offsets back from the character position ``after``): the
    positions themselves, or their byte offsets from ``ring`` when it is not empty."""
    for j in range(packed & 15):
        p = after - ((packed >> (_OFFSETS_AT + 4 * j)) & 15)
        ends[m] = ring[p & (_RING - 1)] if ring.shape[0] > 0 else p
        m += 1
    return m


#: ASCII texts of at least this many bytes are split in two halves read side by side (:func:`_two_lanes`)
TWO_LANES_MIN = 2048
#: how far past the middle the second half's states are kept for the first half to meet
SYNC_CHARACTERS = 64


@njit(cache=True)
def split_ascii(data, byte_kinds, table, final, start, n_kinds, pairs, pair_shift, pair_kind, to_pair, mark_free,
                ends, settled):
    """Piece ends of the ASCII text ``data`` (its bytes are its characters). Returns the number of
    ends, or -1 when some of the text matches no branch. ``settled`` (int64[1], or empty for none)
    gets how many ends were written before the text's end was read: every text that starts with
    ``data`` has them (the transducer writes an end only once what follows cannot change it).
    Two characters a step through ``pairs`` when the transducer has them (:func:`_pair_tables`),
    one where a step is rare or one character is left, and a long text's halves side by side
    (:func:`_two_lanes`); one a step all along otherwise (a loop of its own: compiled beside the
    pair loop, the one-character loop ran 1.3x slower)."""
    n = data.shape[0]
    row = np.uint64(start)
    m = 0
    mark = 0  # where the last match is, in overflow states
    i = 0
    if pairs.shape[0] > 0 and n >= TWO_LANES_MIN:
        row, m, mark, i = _two_lanes(data, byte_kinds, table, start, n_kinds, pairs, pair_shift, pair_kind, to_pair,
                                     mark_free, ends)
    while True:
        if pairs.shape[0] == 0:
            while i < n:
                row, m, mark, i = _ascii_step(data, byte_kinds, table, start, ends, row, m, mark, i)
        else:
            row, m, mark, i = _ascii_run(data, byte_kinds, table, start, n_kinds, pairs, pair_shift, pair_kind,
                                         to_pair, ends, row, m, mark, i, n)
        if settled.shape[0] > 0:  # the first time the text's end is read
            settled[0] = m
            settled = settled[:0]
        packed = np.int64(final[row // np.uint64(n_kinds)])
        if packed & FAIL:
            return -1
        if packed & SLOW:
            ends[m] = mark
            m += 1
            i = mark
            row = np.uint64(start)
            continue
        return _settle(ends, m, n, packed, ends[:0])


@njit(cache=True)
def _two_lanes(data, byte_kinds, table, start, n_kinds, pairs, pair_shift, pair_kind, to_pair, mark_free, ends):
    """Split the ASCII text ``data`` as two runs read side by side, for :func:`split_ascii`: (row,
    ends written, last match, position) to go on from, the position being the text's end unless
    the halves did not meet.

    One run, each step waits for the entry the step before read (a load and an add); two runs over
    different parts of the text have two independent chains, which the CPU overlaps. The second
    run starts in the middle from the start state, as if the text began there, and keeps its
    state after each of its first :data:`SYNC_CHARACTERS` characters (read one at a time). The
    first run reads the first half, then on, one character at a time, until its state at some
    position equals the second run's there and is :func:`_mark_free`: from that position both would
    write the same ends, so the first run's ends so far and the second run's ends from there are
    the text's. They meet within a few characters on text (a piece's end resets both automata); when
    they do not (a long run that a state of overflow spans), the first run goes on alone and the
    second's work is dropped: exact either way, the cost of one half lost at worst.
    Ends of the second run go to an array of their own, copied after the first run's."""
    n = data.shape[0]
    half = n // 2
    later_ends = np.empty(n - half + 2, dtype=np.int64)
    seen_rows = np.empty(SYNC_CHARACTERS + 1, dtype=np.uint64)
    seen_counts = np.empty(SYNC_CHARACTERS + 1, dtype=np.int64)
    row_b = np.uint64(start)
    m_b = 0
    mark_b = half
    i_b = half
    seen_rows[0] = row_b
    seen_counts[0] = 0
    while i_b < half + SYNC_CHARACTERS:  # a step back (an overflow's) keeps the later visit's state
        row_b, m_b, mark_b, i_b = _ascii_step(data, byte_kinds, table, start, later_ends, row_b, m_b, mark_b, i_b)
        seen_rows[i_b - half] = row_b
        seen_counts[i_b - half] = m_b
    row_a = np.uint64(start)
    m_a = 0
    mark_a = 0
    i_a = 0
    shift = np.uint64(pair_shift)
    kinds = np.uint64(n_kinds)
    while i_a + 1 < half and i_b + 1 < n:
        a, b = np.uint64(i_a), np.uint64(i_b)
        written_a, written_b = np.uint64(m_a), np.uint64(m_b)
        last_a, last_b = np.uint64(half - 1), np.uint64(n - 1)
        pair_a, pair_b = np.uint64(to_pair[row_a]), np.uint64(to_pair[row_b])
        entry_a = entry_b = np.uint64(0)
        while a < last_a and b < last_b:
            entry_a = np.uint64(pairs[pair_a + np.uint64(pair_kind[load_u16(data, a)])])
            entry_b = np.uint64(pairs[pair_b + np.uint64(pair_kind[load_u16(data, b)])])
            if (entry_a | entry_b) & np.uint64(PAIR_RARE):
                break
            written_a = _pair_ends(ends, written_a, a, entry_a)
            written_b = _pair_ends(later_ends, written_b, b, entry_b)
            pair_a = entry_a & np.uint64(_PAIR_ROW)
            pair_b = entry_b & np.uint64(_PAIR_ROW)
            a += np.uint64(2)
            b += np.uint64(2)
        i_a, i_b = np.int64(a), np.int64(b)
        m_a, m_b = np.int64(written_a), np.int64(written_b)
        row_a, row_b = (pair_a >> shift) * kinds, (pair_b >> shift) * kinds
        if not (a < last_a and b < last_b):
            break
        if entry_a & np.uint64(PAIR_RARE):
            row_a, m_a, mark_a, i_a = _ascii_step(data, byte_kinds, table, start, ends, row_a, m_a, mark_a, i_a)
        if entry_b & np.uint64(PAIR_RARE):
            row_b, m_b, mark_b, i_b = _ascii_step(data, byte_kinds, table, start, later_ends, row_b, m_b, mark_b,
                                                  i_b)
    row_a, m_a, mark_a, i_a = _ascii_run(data, byte_kinds, table, start, n_kinds, pairs, pair_shift, pair_kind,
                                         to_pair, ends, row_a, m_a, mark_a, i_a, half)
    row_b, m_b, mark_b, i_b = _ascii_run(data, byte_kinds, table, start, n_kinds, pairs, pair_shift, pair_kind,
                                         to_pair, later_ends, row_b, m_b, mark_b, i_b, n)
    while i_a <= half + SYNC_CHARACTERS:
        if i_a >= half and row_a == seen_rows[i_a - half] and mark_free[row_a // kinds]:
            first = seen_counts[i_a - half]
            ends[m_a:m_a + m_b - first] = later_ends[first:m_b]
            return row_b, m_a + m_b - first, mark_b, n
        row_a, m_a, mark_a, i_a = _ascii_step(data, byte_kinds, table, start, ends, row_a, m_a, mark_a, i_a)
    return row_a, m_a, mark_a, i_a


@njit(cache=True, inline="always")
def _ascii_run(data, byte_kinds, table, start, n_kinds, pairs, pair_shift, pair_kind, to_pair, ends, row, m, mark,
               i, stop):
    """Read the characters from ``i`` to ``stop``, two a step and one where a step is rare: (row,
    ends written, last match, position), the position ``stop`` or beyond (an overflow's step back
    may read some again first)."""
    while i < stop:
        if i + 1 < stop:
            row, m, i = _ascii_pairs(data, n_kinds, pairs, pair_shift, pair_kind, to_pair, ends, row, m, i, stop)
            if i >= stop:
                break
        row, m, mark, i = _ascii_step(data, byte_kinds, table, start, ends, row, m, mark, i)
    return row, m, mark, i


@njit(cache=True, inline="always")
def _ascii_step(data, byte_kinds, table, start, ends, row, m, mark, i):
    """One character of :func:`split_ascii`: (row, ends written, last match, next position)."""
    entry = table[row + np.uint64(byte_kinds[data[i]])]
    row = entry & np.uint64(0xFFFFFFFF)
    packed = np.int64(entry >> np.uint64(32))
    if packed & RARE:  # several ends, an overflow's last match, or an end found at run time
        if packed & SLOW:
            ends[m] = mark
            return np.uint64(start), m + 1, mark, mark  # the next piece starts there: read it again
        m = _settle(ends, m, i + 1, packed, ends[:0])
        back = (packed >> _MARK_AT) & 15
        if back != 0:
            mark = i + 1 - back
    else:  # none or one end, written without a branch on the text
        ends[m] = i + 1 - ((packed >> _OFFSETS_AT) & 15)
        m += packed & 15
    return row, m, mark, i + 1


@njit(cache=True, inline="always")
def _pair_ends(ends, written, at, entry):
    """Write the ends that the pair entry ``entry`` read at position ``at`` settles (without a branch:
    each is written, and counted when it is there); returns how many ends are written."""
    first = entry >> np.uint64(_PAIR_FIRST_AT)
    second = entry >> np.uint64(_PAIR_SECOND_AT)
    ends[written] = np.int64(at + (first & np.uint64(15)) - np.uint64(14))  # at + 1 - offset
    written += (first >> np.uint64(4)) & np.uint64(1)
    ends[written] = np.int64(at + (second & np.uint64(15)) - np.uint64(13))  # at + 2 - offset
    return written + ((second >> np.uint64(4)) & np.uint64(1))


@njit(cache=True, inline="always")
def _ascii_pairs(data, n_kinds, pairs, pair_shift, pair_kind, to_pair, ends, row, m, i, stop):
    """Two characters a step from position ``i`` until a rare step or fewer than two characters are
    left before ``stop``: (row, ends written, position). Unsigned indices: numba's wraparound test
    on signed ones lengthens the chain of loads."""
    at = np.uint64(i)
    written = np.uint64(m)
    last = np.uint64(stop - 1)
    pair_row = np.uint64(to_pair[row])
    while at < last:
        entry = np.uint64(pairs[pair_row + np.uint64(pair_kind[load_u16(data, at)])])
        if entry & np.uint64(PAIR_RARE):
            break
        written = _pair_ends(ends, written, at, entry)
        pair_row = entry & np.uint64(_PAIR_ROW)
        at += np.uint64(2)
    return (pair_row >> np.uint64(pair_shift)) * np.uint64(n_kinds), np.int64(written), np.int64(at)


@njit(cache=True, inline="always")
def _kind_at(data, b, byte_kinds, stage1, stage2):
    """(the kind of the character at byte ``b`` of valid UTF-8 ``data``, its length in bytes)."""
    b0 = np.int64(data[b])
    if b0 < 0x80:
        return np.uint64(byte_kinds[b0]), 1
    if b0 < 0xE0:
        cp = ((b0 & 0x1F) << 6) | (np.int64(data[b + 1]) & 0x3F)
        length = 2
    elif b0 < 0xF0:
        cp = ((b0 & 0x0F) << 12) | ((np.int64(data[b + 1]) & 0x3F) << 6) | (np.int64(data[b + 2]) & 0x3F)
        length = 3
    else:
        cp = (((b0 & 0x07) << 18) | ((np.int64(data[b + 1]) & 0x3F) << 12)
              | ((np.int64(data[b + 2]) & 0x3F) << 6) | (np.int64(data[b + 3]) & 0x3F))
        length = 4
    return np.uint64(stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)]), length


@njit(cache=True, _nrt=False)
def split_mixed(data, byte_kinds, stage1, stage2, table, final, start, n_kinds, ends, ring, settled):
    """Piece ends (byte offsets) of the UTF-8 text ``data``, its characters decoded as they are read
    (a pass making kinds and int64 offsets first wrote and read ten bytes a character more: 4.8-5.7
    against 3.3 ms per MB of prose with a few curly quotes). A packed end is at most 15 characters
    back (four bits), so the byte offsets of the last ``_RING`` character positions are kept in
    ``ring`` (int64[_RING]); an overflow's last match keeps its own. ``settled`` as in
    :func:`split_ascii`. Compiled without reference counting: the decoding helper's arrays cost an
    atomic increment and decrement a character (7x slower). The loop is :func:`split_ascii`'s with
    the decoding and the ring; one loop for both, a constant flag inlined twice, made the ASCII
    split 0.87-0.94x as fast."""
    n = data.shape[0]
    low = np.uint64(0xFFFFFFFF)
    ring[0] = 0
    row = np.uint64(start)
    m = 0
    mark = 0  # the last match in overflow states: its character position and byte offset
    mark_byte = 0
    i = 0  # characters read
    b = 0  # their bytes
    while True:
        while b < n:
            kind, length = _kind_at(data, b, byte_kinds, stage1, stage2)
            entry = table[row + kind]
            row = entry & low
            packed = np.int64(entry >> np.uint64(32))
            b += length
            i += 1
            ring[i & (_RING - 1)] = b
            if packed & RARE:
                if packed & SLOW:  # the piece ends at the last match; read on from there
                    ends[m] = mark_byte
                    m += 1
                    i = mark
                    b = mark_byte
                    ring[i & (_RING - 1)] = b
                    row = np.uint64(start)
                    continue
                m = _settle(ends, m, i, packed, ring)
                back = (packed >> _MARK_AT) & 15
                if back != 0:
                    mark = i - back
                    mark_byte = ring[mark & (_RING - 1)]
            else:  # none or one end, written without a branch on the text
                ends[m] = ring[(i - ((packed >> _OFFSETS_AT) & 15)) & (_RING - 1)]
                m += packed & 15
        if settled.shape[0] > 0:  # the first time the text's end is read
            settled[0] = m
            settled = settled[:0]
        packed = np.int64(final[row // np.uint64(n_kinds)])
        if packed & FAIL:
            return -1
        if packed & SLOW:
            ends[m] = mark_byte
            m += 1
            i = mark
            b = mark_byte
            ring[i & (_RING - 1)] = b
            row = np.uint64(start)
            continue
        return _settle(ends, m, i, packed, ring)


@njit(cache=True, nogil=True)  # threads of a batch split their texts at the same time
def split_utf8(data, byte_kinds, stage1, stage2, table, final, start, n_kinds, pairs, pair_shift, pair_kind,
               to_pair, mark_free, ends):
    """Piece ends (byte offsets) of the UTF-8 text ``data``: :func:`split_ascii` over its bytes when it
    is ASCII, else :func:`split_mixed`. The arguments after ``data`` are a :class:`Transducer`'s
    arrays (:func:`split_arguments`)."""
    return split_window(data, byte_kinds, stage1, stage2, table, final, start, n_kinds, pairs, pair_shift,
                        pair_kind, to_pair, mark_free, ends, ends[:0])


@njit(cache=True, nogil=True)
def split_window(data, byte_kinds, stage1, stage2, table, final, start, n_kinds, pairs, pair_shift, pair_kind,
                 to_pair, mark_free, ends, settled):
    """:func:`split_utf8`, and in ``settled[0]`` (when not empty) how many of the ends every text that
    starts with ``data`` has (see :func:`split_ascii`): a window of a longer text split on its own."""
    n = data.shape[0]
    high = 0
    for i in range(n):
        high |= data[i]
    if high < 0x80:
        return split_ascii(data, byte_kinds, table, final, start, n_kinds, pairs, pair_shift, pair_kind, to_pair,
                           mark_free, ends, settled)
    return split_mixed(data, byte_kinds, stage1, stage2, table, final, start, n_kinds, ends,
                       np.empty(_RING, dtype=np.int64), settled)
