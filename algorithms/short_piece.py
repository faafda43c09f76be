"""Short pieces: BPE by the definition's own merge loop on a small scratch array. Exact.

For a piece of ``L`` bytes, start from one token per byte, keep the merge rank of
every adjacent pair, and repeatedly merge the pair with the lowest rank (leftmost
on ties), updating only the ranks of its two new neighbours. Each merge is a scan
of at most ``L`` ranks and a shift, so a piece costs O(L^2) time; for the short
pieces of natural text that is cheaper than backtracking's trie walks and
compatibility checks (tiktoken does the same). The first round reads byte-pair
ranks from a dense 64k table (``byte_pair_ranks``, L2-resident); later rounds use
``matching.merge_rank`` (packed pairs + bit filter), and the merged token is
``token_of_rank[rank]`` (no second hash probe).

Exact: it is the definition over the canonical splits' ranks (as the ``heap``
encoder uses them), so it equals ``naive`` on every piece whose bytes are all
tokens. It needs every merged token to have its own rank: ``token_of_rank``
returns None when ranks tie (then callers must not use this kernel). Callers
supply scratch arrays of at least ``L`` slots and keep ``L`` small (the fused
pipeline sends longer pieces to backtracking).

Also here: ``short_tokens`` / ``short_token``, a one-probe hash table of the tokens
of at most 8 bytes that BPE produces (whole-piece lookup of short pieces).

numba API::

    merge_short_piece(byte_token, byte_pair_rank, pairs, pair_filter, token_of_rank,
                      data, start, end, parts, ranks, out, n_out) -> new n_out
    short_token(short_tokens, data, start, end) -> token | -1
"""

from __future__ import annotations

import numpy as np
from .jit import njit

from .matching import merge_rank

#: rank of a pair that never merges (above every real rank, so the minimum scan needs no test)
NO_MERGE = np.int64(1) << 62


def short_piece_tables(vocab, tables, matcher) -> dict[str, np.ndarray]:
    """The fused pipeline's three short-piece arrays, memoised on ``vocab`` (and stored in the
    on-disk vocabulary cache, so a cached load builds none of them):
    ``short_tokens``, ``byte_pair_ranks`` and ``token_of_rank`` (empty when ranks tie)."""
    found = vocab.__dict__.get("_short_piece_tables")
    if found is None:
        by_rank = token_of_rank(matcher)
        found = vocab.__dict__["_short_piece_tables"] = {
            "short_tokens": short_tokens(tables),
            "byte_pair_ranks": byte_pair_ranks(matcher, tables.byte_token),
            "token_of_rank": np.empty(0, dtype=np.int32) if by_rank is None else by_rank,
        }
    return found


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
                table[(a << 8) | b] = _rank(pairs, pair_filter, byte_token[a], byte_token[b])


@njit(cache=True, inline="always")
def _rank(pairs, pair_filter, left, right):
    r = merge_rank(pairs, pair_filter, left, right)
    return r if r >= 0 else NO_MERGE


@njit(cache=True)
def merge_short_piece(byte_token, byte_pair_rank, pairs, pair_filter, token_of_rank,
                      data, start, end, parts, ranks, out, n_out):
    """Append the BPE encoding of ``data[start:end]`` to ``out[n_out:]``; return the new length.

    ``parts`` (int32) and ``ranks`` (int64) are scratch arrays of at least ``end - start`` slots.
    """
    n = end - start
    for i in range(n):
        parts[i] = byte_token[data[start + i]]
    for i in range(n - 1):
        ranks[i] = byte_pair_rank[(np.int64(data[start + i]) << 8) | np.int64(data[start + i + 1])]
    while n > 1:
        best = 0
        best_rank = ranks[0]
        for i in range(1, n - 1):
            if ranks[i] < best_rank:  # strict: leftmost wins on equal rank
                best_rank = ranks[i]
                best = i
        if best_rank == NO_MERGE:
            break
        parts[best] = token_of_rank[best_rank]
        # drop part best+1; pair j+1 becomes pair j
        for j in range(best + 1, n - 1):
            parts[j] = parts[j + 1]
        for j in range(best + 1, n - 2):
            ranks[j] = ranks[j + 1]
        n -= 1
        if best < n - 1:
            ranks[best] = _rank(pairs, pair_filter, parts[best], parts[best + 1])
        if best > 0:
            ranks[best - 1] = _rank(pairs, pair_filter, parts[best - 1], parts[best])
    for i in range(n):
        out[n_out + i] = parts[i]
    return n_out + n


# ----------------------------------------------------------------------------- whole short pieces
#: pieces up to this many bytes are looked up whole in the ``short_tokens`` table
SHORT_TOKEN_BYTES = 8
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_LENGTH_SALT = np.uint64(0xC2B2AE3D27D4EB4F)


@njit(cache=True, inline="always")
def _pack(data, start, end):
    """The bytes ``data[start:end]`` (at most 8) as one little-endian uint64."""
    key = np.uint64(0)
    for i in range(end - start):
        key |= np.uint64(data[start + i]) << np.uint64(8 * i)
    return key


@njit(cache=True, inline="always")
def _short_slot(key, length, mask):
    # multiplicative hash: the high half of the product mixes every byte of the key
    return np.int64(((key ^ (np.uint64(length) * _LENGTH_SALT)) * _MULTIPLIER) >> np.uint64(32)) & mask


@njit(cache=True, inline="always")
def short_token(short_tokens, data, start, end):
    """The token whose bytes are ``data[start:end]`` (at most ``SHORT_TOKEN_BYTES``), or -1.

    One probe of a (slots, 2) table, usually one cache line: a whole-piece trie walk reads
    a row per byte."""
    length = end - start
    key = _pack(data, start, end)
    mask = short_tokens.shape[0] - 1
    slot = _short_slot(key, length, mask)
    while True:
        value = short_tokens[slot, 1]
        if value < 0:
            return np.int64(-1)
        if np.uint64(short_tokens[slot, 0]) == key and (value >> 32) == length:
            return value & 0xFFFFFFFF
        slot = (slot + 1) & mask


@njit(cache=True)
def _fill_short_tokens(token_bytes, token_start, produced, table):
    mask = table.shape[0] - 1
    for t in range(len(token_start) - 1):
        s, e = token_start[t], token_start[t + 1]
        if not produced[t] or e - s > SHORT_TOKEN_BYTES:
            continue
        key = _pack(token_bytes, s, e)
        slot = _short_slot(key, e - s, mask)
        while table[slot, 1] >= 0:
            slot = (slot + 1) & mask
        table[slot, 0] = np.int64(key)
        table[slot, 1] = (np.int64(e - s) << 32) | t


def short_tokens(tables) -> np.ndarray:
    """int64[slots, 2] hash table of the tokens of at most ``SHORT_TOKEN_BYTES`` bytes that BPE
    produces (``priority < NEVER``): row = (packed bytes, length << 32 | token), -1 = empty."""
    from .compiled import NEVER

    produced = tables.priority < NEVER
    count = int((produced & (tables.token_len <= SHORT_TOKEN_BYTES)).sum())
    capacity = 1024
    while capacity < 2 * count:
        capacity *= 2
    table = np.full((capacity, 2), -1, dtype=np.int64)
    _fill_short_tokens(tables.token_bytes, tables.token_start, produced, table)
    return table
