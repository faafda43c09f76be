"""Short pieces: BPE by the definition's own merge loop on a small scratch array. Exact.

For a piece of ``L`` bytes, start from one token per byte, keep the merge rank of
every adjacent pair, and repeatedly merge the pair with the lowest rank (leftmost
on ties), updating only the ranks of its two new neighbours. Each merge is a scan
of at most ``L`` ranks and a shift, so a piece costs O(L^2) time; for the short
pieces of natural text that is cheaper than backtracking's trie walks and
compatibility checks (tiktoken does the same). The first round reads byte-pair
ranks from a dense 64k table (``byte_pairs``, below); later rounds use
``matching.merge_rank`` (packed pairs + bit filter), and the merged token is
``token_of_rank[rank]`` (no second hash probe), or ``rank + token_offset`` when every
merge rank forms the token that many ids above it (``rank_token_offset``: tiktoken's
vocabularies, where ids are merge order). That saves a load that misses the cache
about as often as the pair probe: the merge loop alone ran 1.12-1.15x faster on
the multi-token pieces of o200k prose, code and ``udhr-all``.

Two bytes start as one token where that is exact ("atoms"). For bytes ``b1 b2`` whose merge has rank
``r``: before ``b1 b2`` merges, ``b1`` can only merge with the token to its left (a merge ``(x, b1)``,
where ``x`` ends with the byte before ``b1``) and ``b2`` only with the token to its right (``(b2, y)``,
``y`` starting with the byte after it). When every such merge ranks above ``r`` (the floors in
``byte_pairs``), ``b1 b2`` merges before either byte takes part in anything else, and in a vocabulary
whose merges run in priority order every merge that uses the pair's token ranks above ``r`` too, so
merging it first changes no choice the loop makes: the same result, with one turn of the loop and
its pair-table reads fewer per atom. Taken left to right, two atoms never overlap (each would need
the other's rank above its own). About half the merges of new ASCII words of code and prose start
done so (o200k), and 84% of the two-byte characters of o200k's multilingual pieces (76% for cl100k).
Vocabularies whose merges run out of priority order get floors that admit none
(``byte_pairs_without_atoms``).

``byte_pairs`` (int64[65536]) holds, at ``a << 8 | b``, three fields of :data:`PAIR_FIELD_BITS` bits:
the rank of the merge ``a b``, the lowest rank of a merge whose right part is the byte ``b`` and whose
left part ends with ``a`` (the floor of ``b`` after ``a``), and the lowest rank of a merge whose left part
is the byte ``a`` and whose right part starts with ``b`` (the floor of ``a`` before ``b``); so a piece's
setup reads one entry per byte pair for its ranks and atoms.

Exact: it is the definition over the canonical splits' ranks (as the ``heap``
encoder uses them), so it equals ``naive`` on every piece whose bytes are all
tokens. It needs every merged token to have its own rank: ``token_of_rank``
returns None when ranks tie (then callers must not use this kernel). Callers
supply scratch arrays of at least ``L`` slots and keep ``L`` small (the fused
pipeline sends longer pieces to backtracking).

Also here: one-probe hash tables of the tokens BPE produces, for the whole-piece
lookup of short pieces: ``short_tokens`` / ``short_token`` (at most 8 bytes, key one
uint64), ``medium_tokens`` / ``medium_token`` (9 to 16 bytes, key two uint64) and
``long_tokens`` / ``long_token`` (17 to 32 bytes, key four uint64). A probe reads one row;
a trie walk over the piece reads one row per byte, each waiting for the one before (a
20-byte word of Cyrillic or Greek that is not a token walks 10-16 rows before it fails).

numba API::

    merge_short_piece(byte_token, byte_pairs, pairs, pair_filter, token_of_rank,
                      token_offset, data, start, end, parts, ranks, out, n_out) -> new n_out
    short_token(short_tokens, data, start, end) -> token | -1      (end - start <= 8)
    medium_token(medium_tokens, data, start, end) -> token | -1    (8 < end - start <= 16)
    long_token(long_tokens, data, start, end) -> token | -1        (16 < end - start <= 32)
"""

from __future__ import annotations

import numpy as np
from .jit import njit

from .bits import load_u64
from .matching import merge_rank

#: rank of a pair that never merges (above every real rank, so the minimum scan needs no test)
NO_MERGE = np.int64(1) << 62
#: ``token_offset`` when merged tokens are not their rank plus a constant: read ``token_of_rank``
TABLE_TOKENS = np.iinfo(np.int64).min
#: the arrays ``short_piece_tables`` returns
TABLE_NAMES = frozenset({"short_tokens", "medium_tokens", "long_tokens", "byte_pairs",
                         "token_of_rank", "token_offset", "unreachable"})


def short_piece_tables(vocab, tables, matcher) -> dict[str, np.ndarray]:
    """The fused pipeline's short-piece arrays (:data:`TABLE_NAMES`), memoised on ``vocab`` and
    stored in the on-disk vocabulary cache, so a cached load builds none of them:
    ``short_tokens``, ``medium_tokens``, ``long_tokens``, ``byte_pairs``, ``token_of_rank``
    (empty when ranks tie), ``token_offset`` (``rank_token_offset``, one int64: 2-3 ms to compute for
    o200k, a third of what a fused pipeline's set-up costs with the cache) and
    ``unreachable`` (``has_unreachable`` as one int64: about 1 ms of page faults on the
    mapped arrays otherwise)."""
    found = vocab.__dict__.get("_short_piece_tables")
    if found is None:
        by_rank = token_of_rank(matcher)
        found = vocab.__dict__["_short_piece_tables"] = {
            "short_tokens": short_tokens(tables),
            "medium_tokens": medium_tokens(tables),
            "long_tokens": long_tokens(tables),
            "byte_pairs": byte_pair_table(matcher.pairs, tables.byte_token, tables.token_bytes, tables.token_start,
                                          byte_pair_ranks(matcher, tables.byte_token)),
            "token_of_rank": np.empty(0, dtype=np.int32) if by_rank is None else by_rank,
            "token_offset": np.array([TABLE_TOKENS if by_rank is None else rank_token_offset(by_rank)],
                                     dtype=np.int64),
            "unreachable": np.array([has_unreachable(vocab, tables)], dtype=np.int64),
        }
    return found


def has_unreachable(vocab, tables) -> bool:
    """Whether some usable multi-byte token is one BPE never produces (then a whole-piece lookup,
    tiktoken's shortcut, can differ from BPE)."""
    from .compiled import NEVER

    usable = np.ones(len(tables.priority), dtype=bool)
    usable[list(vocab.excluded)] = False
    return bool(((tables.priority >= NEVER) & (tables.token_len > 1) & usable).any())


def token_of_rank(matcher) -> np.ndarray | None:
    """int32 array: the token formed by the merge of each priority rank (-1 for none), or None
    when two merged tokens share a rank (SentencePiece scores can tie): then the rank does
    not name the merge and this kernel does not apply."""
    rows = matcher.rows
    merged = np.flatnonzero(rows[:, 1] >= 0)
    ranks = rows[merged, 0]
    if len(np.unique(ranks)) != len(ranks):
        return None
    table = np.full(int(rows[:, 0].max()) + 1 if len(rows) else 1, -1, dtype=np.int32)
    table[ranks] = merged
    return table


def rank_token_offset(token_of_rank: np.ndarray) -> int:
    """``c`` if every merge rank ``r`` forms the token ``r + c`` (tiktoken's vocabularies:
    255, the byte tokens share rank 0), else ``TABLE_TOKENS``."""
    ranks = np.flatnonzero(token_of_rank >= 0)
    if len(ranks) == 0:
        return int(TABLE_TOKENS)
    offsets = token_of_rank[ranks].astype(np.int64) - ranks
    return int(offsets[0]) if bool((offsets == offsets[0]).all()) else int(TABLE_TOKENS)


def byte_pair_ranks(matcher, byte_token: np.ndarray) -> np.ndarray:
    """int64[65536]: the merge rank of the byte pair ``(a << 8) | b`` (``NO_MERGE`` if none).

    The first round of every piece looks up byte pairs only; this dense table (512 kB)
    answers them without probing the hash table."""
    table = np.full(1 << 16, NO_MERGE, dtype=np.int64)
    _fill_byte_pair_ranks(matcher.pairs, matcher.pair_filter, byte_token, table)
    return table


@njit(cache=True)
def _fill_byte_pair_ranks(pairs, pair_filter, byte_token, table):
    for a in range(256):
        for b in range(256):
            if byte_token[a] >= 0 and byte_token[b] >= 0:
                table[(a << 8) | b] = pair_rank(pairs, pair_filter, byte_token[a], byte_token[b])


#: the width of each field of a ``byte_pairs`` entry (module docstring); :data:`PAIR_NONE` where no merge is
PAIR_FIELD_BITS = 21
PAIR_NONE = np.int64((1 << PAIR_FIELD_BITS) - 1)
#: a floor that no rank reaches
NO_FLOOR = PAIR_NONE


def byte_pair_table(pairs, byte_token, token_bytes, token_start, byte_pair_ranks) -> np.ndarray:
    """The byte pairs' ranks and floors (above), from the merges in ``pairs`` (``matching``'s packed
    table, the one the merge loops read) and ``byte_pair_ranks``. 512 kB, of which a text touches the
    entries of its own byte pairs (ASCII: the first 256 kB)."""
    left = np.full(1 << 16, PAIR_NONE, dtype=np.int64)
    right = np.full(1 << 16, PAIR_NONE, dtype=np.int64)
    _fill_byte_pairs(pairs, byte_token, token_bytes, token_start, left, right)
    return _pack_pair_fields(byte_pair_ranks, left, right)


def byte_pairs_without_atoms(byte_pair_ranks) -> np.ndarray:
    """The ranks with floors that admit no atom but a piece of two bytes, whose one possible merge is
    all BPE can do (merges out of priority order: a merge that uses the pair's token can rank below
    the pair's own, so merging it first could change the result)."""
    zeros = np.zeros(1 << 16, dtype=np.int64)
    return _pack_pair_fields(byte_pair_ranks, zeros, zeros)


def _pack_pair_fields(byte_pair_ranks, left, right) -> np.ndarray:
    ranks = np.where(byte_pair_ranks >= PAIR_NONE, PAIR_NONE, byte_pair_ranks).astype(np.int64)
    return ranks | (np.minimum(left, PAIR_NONE) << PAIR_FIELD_BITS) | (np.minimum(right, PAIR_NONE) << (2 * PAIR_FIELD_BITS))


@njit(cache=True)
def _fill_byte_pairs(pairs, byte_token, token_bytes, token_start, left_floor, right_floor):
    byte_of = np.full(token_start.shape[0], -1, dtype=np.int64)
    for b in range(256):
        if byte_token[b] >= 0:
            byte_of[byte_token[b]] = b
    mask = (np.int64(1) << 21) - 1
    for entry in pairs:
        if entry == -1:
            continue
        left, right, rank = entry >> 42, (entry >> 21) & mask, entry & mask
        b = byte_of[right]
        if b >= 0:
            at = (np.int64(token_bytes[token_start[left + 1] - 1]) << 8) | b
            left_floor[at] = min(left_floor[at], rank)
        b = byte_of[left]
        if b >= 0:
            at = (b << 8) | np.int64(token_bytes[token_start[right]])
            right_floor[at] = min(right_floor[at], rank)


@njit(cache=True, inline="always")
def pair_entry_rank(entry):
    """The merge rank in a ``byte_pairs`` entry, :data:`NO_MERGE` for none."""
    rank = entry & PAIR_NONE
    return NO_MERGE if rank == PAIR_NONE else rank


@njit(cache=True, inline="always")
def atom_rank(byte_pairs, data, start, end, i):
    """The merge rank of the bytes ``data[i:i + 2]`` when they start as one token in the piece
    ``data[start:end]`` (module docstring), else -1."""
    if i + 1 >= end:
        return np.int64(-1)
    b1 = np.int64(data[i])
    b2 = np.int64(data[i + 1])
    rank = byte_pairs[(b1 << 8) | b2] & PAIR_NONE
    if rank == PAIR_NONE:
        return np.int64(-1)
    if i > start and rank >= (byte_pairs[(np.int64(data[i - 1]) << 8) | b1] >> PAIR_FIELD_BITS) & PAIR_NONE:
        return np.int64(-1)
    if i + 2 < end and rank >= byte_pairs[(b2 << 8) | np.int64(data[i + 2])] >> (2 * PAIR_FIELD_BITS):
        return np.int64(-1)
    return rank


@njit(cache=True, inline="always")
def pair_rank(pairs, pair_filter, left, right):
    """``matching.merge_rank``, with :data:`NO_MERGE` for a pair that never merges."""
    r = merge_rank(pairs, pair_filter, left, right)
    return r if r >= 0 else NO_MERGE


@njit(cache=True, inline="always")
def merged_token(rank, token_offset, token_of_rank):
    """The token the merge of priority ``rank`` forms: ``rank + token_offset``, or ``token_of_rank[rank]``
    when the offset is ``TABLE_TOKENS``."""
    return rank + token_offset if token_offset != TABLE_TOKENS else np.int64(token_of_rank[rank])


@njit(cache=True, inline="always")
def start_units(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset, data, start, end, parts,
                ranks):
    """The merge loop's start for ``data[start:end]``: its units (bytes, and two-byte characters that
    start whole: :func:`atom_rank`) in ``parts`` and the rank of each adjacent pair in ``ranks``;
    returns how many units."""
    n = 0
    i = start
    whole_before = False  # the unit before ``i`` is a character that started whole
    while i < end:
        rank = atom_rank(byte_pairs, data, start, end, i)
        if rank >= 0:
            parts[n] = merged_token(rank, token_offset, token_of_rank)
            if n > 0:
                ranks[n - 1] = pair_rank(pairs, pair_filter, parts[n - 1], parts[n])
            whole_before = True
            i += 2
        else:
            parts[n] = byte_token[data[i]]
            if n > 0:
                ranks[n - 1] = (pair_rank(pairs, pair_filter, parts[n - 1], parts[n]) if whole_before
                                else pair_entry_rank(byte_pairs[(np.int64(data[i - 1]) << 8) | np.int64(data[i])]))
            whole_before = False
            i += 1
        n += 1
    return n


@njit(cache=True, _nrt=False)
def merge_short_piece(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset,
                      data, start, end, parts, ranks, out, n_out):
    """Append the BPE encoding of ``data[start:end]`` to ``out[n_out:]``; return the new length.

    ``parts`` (int32) and ``ranks`` (int64) are scratch arrays of at least ``end - start`` slots.
    """
    n = start_units(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset, data, start, end,
                    parts, ranks)
    while n > 1:
        best = 0
        best_rank = ranks[0]
        for i in range(1, n - 1):
            if ranks[i] < best_rank:  # strict: leftmost wins on equal rank
                best_rank = ranks[i]
                best = i
        if best_rank == NO_MERGE:
            break
        parts[best] = merged_token(best_rank, token_offset, token_of_rank)
        # drop part best+1; pair j+1 becomes pair j
        for j in range(best + 1, n - 1):
            parts[j] = parts[j + 1]
        for j in range(best + 1, n - 2):
            ranks[j] = ranks[j + 1]
        n -= 1
        if best < n - 1:
            ranks[best] = pair_rank(pairs, pair_filter, parts[best], parts[best + 1])
        if best > 0:
            ranks[best - 1] = pair_rank(pairs, pair_filter, parts[best - 1], parts[best])
    for i in range(n):
        out[n_out + i] = parts[i]
    return n_out + n


# ----------------------------------------------------------------------------- whole-token tables
#: pieces up to this many bytes are looked up whole in ``short_tokens`` (key: one uint64)
SHORT_TOKEN_BYTES = 8
#: longer pieces up to this many bytes are looked up whole in ``medium_tokens`` (key: two uint64)
MEDIUM_TOKEN_BYTES = 16
#: longer pieces up to this many bytes are looked up whole in ``long_tokens`` (key: four uint64)
LONG_TOKEN_BYTES = 32
_ALL_BITS = ~np.uint64(0)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_SECOND_MULTIPLIER = np.uint64(0xD6E8FEB86659FD93)
_THIRD_MULTIPLIER = np.uint64(0xC2B2AE3D27D4EB4F)


@njit(cache=True, inline="always")
def _pack(data, start, end):
    """The bytes ``data[start:end]`` (at most 8) as one little-endian uint64."""
    key = np.uint64(0)
    for i in range(end - start):
        key |= np.uint64(data[start + i]) << np.uint64(8 * i)
    return key


@njit(cache=True, inline="always")
def _slot(low, high, length, mask):
    """Slot of the bytes packed as ``low`` (first 8) and ``high`` (the rest, 0 if none)."""
    # multiplicative hashing: the high half of the products mixes every byte of the key
    mixed = (low * _MULTIPLIER) ^ ((high ^ np.uint64(length)) * _SECOND_MULTIPLIER)
    return np.int64(mixed >> np.uint64(32)) & mask


@njit(cache=True, inline="always")
def short_token(short_tokens, data, start, end):
    """The token whose bytes are ``data[start:end]`` (at most ``SHORT_TOKEN_BYTES``), or -1.

    One probe of a (slots, 2) table, usually one cache line: a whole-piece trie walk reads
    a row per byte."""
    length = end - start
    key = _pack(data, start, end)
    return short_token_at(short_tokens, key, length, _slot(key, np.uint64(0), length, short_tokens.shape[0] - 1))


@njit(cache=True, inline="always")
def short_token_at(short_tokens, key, length, slot):
    """``short_token`` for the piece packed as ``key`` (``length`` bytes) whose probe starts at
    ``slot`` (``_slot(key, 0, length, mask)``: computed ahead, so the row can be prefetched)."""
    mask = short_tokens.shape[0] - 1
    while True:
        value = short_tokens[slot, 1]
        if value < 0:
            return np.int64(-1)
        if np.uint64(short_tokens[slot, 0]) == key and (value >> 32) == length:
            return value & 0xFFFFFFFF
        slot = (slot + 1) & mask


@njit(cache=True, inline="always")
def medium_token(medium_tokens, data, start, end):
    """The token whose bytes are ``data[start:end]`` (9 to ``MEDIUM_TOKEN_BYTES`` bytes), or -1."""
    length = end - start
    low = _pack(data, start, start + 8)
    high = _pack(data, start + 8, end)
    return medium_token_at(medium_tokens, low, high, length, _slot(low, high, length, medium_tokens.shape[0] - 1))


@njit(cache=True, inline="always")
def medium_token_at(medium_tokens, low, high, length, slot):
    """``medium_token`` for the piece packed as ``low`` and ``high``, probed from ``slot``."""
    mask = medium_tokens.shape[0] - 1
    while True:
        value = medium_tokens[slot, 2]
        if value < 0:
            return np.int64(-1)
        if (np.uint64(medium_tokens[slot, 0]) == low and np.uint64(medium_tokens[slot, 1]) == high
                and (value >> 32) == length):
            return value & 0xFFFFFFFF
        slot = (slot + 1) & mask


@njit(cache=True, inline="always")
def low_bytes(word, count):
    """The first ``count`` (1 to 8) bytes of a packed word."""
    return word & (_ALL_BITS >> np.uint64(64 - 8 * count))


@njit(cache=True, inline="always")
def long_words(data, start, end):
    """The 17 to 32 bytes ``data[start:end]`` as four little-endian words, zero past the end: four
    unaligned loads when 32 bytes can be read from ``start``, else byte by byte."""
    if start + 32 <= data.shape[0]:
        w0 = load_u64(data, start)
        w1 = load_u64(data, start + 8)
        w2 = load_u64(data, start + 16)
        w3 = load_u64(data, start + 24)
    else:
        w0 = _pack(data, start, min(end, start + 8))
        w1 = _pack(data, start + 8, min(end, start + 16))
        w2 = _pack(data, start + 16, min(end, start + 24))
        w3 = _pack(data, start + 24, min(end, start + 32))
    length = end - start
    return w0, w1, low_bytes(w2, min(length - 16, 8)), low_bytes(w3, length - 24) if length > 24 else np.uint64(0)


@njit(cache=True, inline="always")
def long_slot(w0, w1, w2, w3, length, mask):
    """Where the probe of ``long_tokens`` for a piece packed as four words starts."""
    mixed = ((w0 * _MULTIPLIER) ^ ((w1 ^ np.uint64(length)) * _SECOND_MULTIPLIER) ^ (w2 * _THIRD_MULTIPLIER)
             ^ (w3 * _MULTIPLIER))
    return np.int64(mixed >> np.uint64(32)) & mask


@njit(cache=True, inline="always")
def long_token_at(long_tokens, data, start, end, slot):
    """The token whose bytes are ``data[start:end]`` (17 to ``LONG_TOKEN_BYTES``), or -1, probing
    ``long_tokens`` from ``slot`` (``long_slot`` of the piece's words, computed ahead)."""
    length = end - start
    w0, w1, w2, w3 = long_words(data, start, end)
    mask = long_tokens.shape[0] - 1
    while True:
        value = long_tokens[slot, 4]
        if value < 0:
            return np.int64(-1)
        if ((value >> 32) == length and np.uint64(long_tokens[slot, 0]) == w0
                and np.uint64(long_tokens[slot, 1]) == w1 and np.uint64(long_tokens[slot, 2]) == w2
                and np.uint64(long_tokens[slot, 3]) == w3):
            return value & 0xFFFFFFFF
        slot = (slot + 1) & mask


@njit(cache=True, inline="always")
def long_token(long_tokens, data, start, end):
    """The token whose bytes are ``data[start:end]`` (17 to ``LONG_TOKEN_BYTES`` bytes), or -1."""
    w0, w1, w2, w3 = long_words(data, start, end)
    return long_token_at(long_tokens, data, start, end,
                         long_slot(w0, w1, w2, w3, end - start, long_tokens.shape[0] - 1))


@njit(cache=True)
def _fill_long_table(token_bytes, token_start, produced, table):
    mask = table.shape[0] - 1
    for t in range(len(token_start) - 1):
        s, e = token_start[t], token_start[t + 1]
        if not produced[t] or e - s <= MEDIUM_TOKEN_BYTES or e - s > LONG_TOKEN_BYTES:
            continue
        w0, w1, w2, w3 = long_words(token_bytes, s, e)
        slot = long_slot(w0, w1, w2, w3, e - s, mask)
        while table[slot, 4] >= 0:
            slot = (slot + 1) & mask
        table[slot, 0] = np.int64(w0)
        table[slot, 1] = np.int64(w1)
        table[slot, 2] = np.int64(w2)
        table[slot, 3] = np.int64(w3)
        table[slot, 4] = (np.int64(e - s) << 32) | t


@njit(cache=True, inline="always")
def token_slot(low, high, length, mask):
    """Where the probe of the short (``high`` = 0) or medium table for a packed piece starts."""
    return _slot(low, high, length, mask)


@njit(cache=True)
def _fill_token_table(token_bytes, token_start, produced, shortest, longest, table):
    mask = table.shape[0] - 1
    value_column = table.shape[1] - 1  # 1: key is one word, 2: two words
    for t in range(len(token_start) - 1):
        s, e = token_start[t], token_start[t + 1]
        if not produced[t] or e - s < shortest or e - s > longest:
            continue
        low = _pack(token_bytes, s, min(e, s + 8))
        high = _pack(token_bytes, s + 8, e) if e - s > 8 else np.uint64(0)
        slot = _slot(low, high, e - s, mask)
        while table[slot, value_column] >= 0:
            slot = (slot + 1) & mask
        table[slot, 0] = np.int64(low)
        if value_column == 2:
            table[slot, 1] = np.int64(high)
        table[slot, value_column] = (np.int64(e - s) << 32) | t


def _token_table(tables, shortest: int, longest: int, produced: np.ndarray | None = None) -> np.ndarray:
    """Open-addressing table (load <= 1/2) of the tokens of ``shortest..longest`` bytes that
    BPE produces (``produced``, by default ``priority < NEVER``): row = (key words...,
    length << 32 | token), -1 = empty."""
    from .compiled import NEVER

    if produced is None:
        produced = tables.priority < NEVER
    lengths = tables.token_len
    count = int((produced & (lengths >= shortest) & (lengths <= longest)).sum())
    capacity = 1024
    while capacity < 2 * count:
        capacity *= 2
    table = np.full((capacity, 2 if longest <= 8 else 3), -1, dtype=np.int64)
    _fill_token_table(tables.token_bytes, tables.token_start, produced, shortest, longest, table)
    return table


def short_tokens(tables, produced: np.ndarray | None = None) -> np.ndarray:
    """int64[slots, 2]: the tokens of at most ``SHORT_TOKEN_BYTES`` bytes BPE produces;
    row = (packed bytes, length << 32 | token)."""
    return _token_table(tables, 1, SHORT_TOKEN_BYTES, produced)


def medium_tokens(tables, produced: np.ndarray | None = None) -> np.ndarray:
    """int64[slots, 3]: the tokens of ``SHORT_TOKEN_BYTES + 1`` to ``MEDIUM_TOKEN_BYTES``
    bytes BPE produces; row = (first 8 bytes, the rest, length << 32 | token)."""
    return _token_table(tables, SHORT_TOKEN_BYTES + 1, MEDIUM_TOKEN_BYTES, produced)


def long_tokens(tables, produced: np.ndarray | None = None) -> np.ndarray:
    """int64[slots, 5]: the tokens of ``MEDIUM_TOKEN_BYTES + 1`` to ``LONG_TOKEN_BYTES`` bytes BPE
    produces; row = (the four words of ``long_words``, length << 32 | token), -1 = empty."""
    from .compiled import NEVER

    if produced is None:
        produced = tables.priority < NEVER
    lengths = tables.token_len
    count = int((produced & (lengths > MEDIUM_TOKEN_BYTES) & (lengths <= LONG_TOKEN_BYTES)).sum())
    capacity = 256
    while capacity < 2 * count:
        capacity *= 2
    table = np.full((capacity, 5), -1, dtype=np.int64)
    _fill_long_table(tables.token_bytes, tables.token_start, produced, table)
    return table
