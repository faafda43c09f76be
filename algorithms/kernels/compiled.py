"""The compiled form of a Vocabulary: flat numpy arrays that compiled encoders share.

Built once per vocabulary (``compile_vocabulary``) and memoised on it:

* ``token_bytes`` / ``token_start`` / ``token_len``: all token bytes concatenated;
  token ``t`` is ``token_bytes[token_start[t]:token_start[t + 1]]``.
* ``priority``: per token, the priority of the merge that forms it (lower merges
  first); base tokens (single bytes) have -1, tokens BPE never forms have
  ``NEVER``.
* ``split_left`` / ``split_right``: the pair of earlier tokens each token is last
  merged from (-1 for base and unreachable tokens).
* a pair table ``(left, right) -> merged`` (open addressing over int64 keys) and a
  bytes table ``bytes -> id`` (open addressing over FNV-1a hashes).

``is_compatible(tables, a, b)`` answers "can ``a b`` stand next to each other in a
valid encoding?" by undoing merges at the boundary, latest first, and checking
that BPE would never have merged across it: a handful of lookups, never a
re-encode. ``derive_splits`` uses it to reduce every token to its unique split.
Both are exact and linear in the vocabulary size (times the token length) as long as
BPE applies the vocabulary's merges in priority order; ``rank_order_break`` finds the
vocabularies where it does not (encoders built on these tables then refuse them).
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np
from .jit import njit

if os.environ.get("NUMBA_DISABLE_JIT") == "1":
    # As plain Python the hashes run on numpy scalars, which warn where compiled code
    # wraps around silently; the wrap-around is intended (64-bit FNV / splitmix).
    warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)

NEVER = np.int64(2**62)  # priority of tokens BPE never produces
EMPTY = np.int64(-1)
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


class Tables(NamedTuple):
    """Flat arrays describing one vocabulary; passed as one argument into numba code."""

    token_bytes: np.ndarray  # uint8[total]
    token_start: np.ndarray  # int64[n + 1]
    token_len: np.ndarray  # int32[n]
    priority: np.ndarray  # int64[n]
    split_left: np.ndarray  # int32[n]
    split_right: np.ndarray  # int32[n]
    pair_keys: np.ndarray  # int64[cap]  (left << 32 | right), -1 = empty
    pair_vals: np.ndarray  # int32[cap]
    bytes_slots: np.ndarray  # int32[cap2] token id, -1 = empty
    byte_token: np.ndarray  # int32[256]


# ----------------------------------------------------------------------------- hashing
@njit(cache=True, inline="always")
def _mix(key):
    # splitmix64 finaliser: spreads consecutive ids over the table
    z = np.uint64(key) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def pair_lookup(pair_keys, pair_vals, left, right):
    """The token formed by merging ``left`` and ``right``, or -1."""
    key = (np.int64(left) << np.int64(32)) | np.int64(right)
    mask = np.uint64(len(pair_keys) - 1)
    slot = _mix(key) & mask
    while True:
        k = pair_keys[slot]
        if k == key:
            return np.int64(pair_vals[slot])
        if k == -1:
            return np.int64(-1)
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True)
def _pair_insert(pair_keys, pair_vals, left, right, merged):
    key = (np.int64(left) << np.int64(32)) | np.int64(right)
    mask = np.uint64(len(pair_keys) - 1)
    slot = _mix(key) & mask
    while pair_keys[slot] != -1 and pair_keys[slot] != key:
        slot = (slot + np.uint64(1)) & mask
    pair_keys[slot] = key
    pair_vals[slot] = merged


@njit(cache=True, inline="always")
def fnv1a(data, start, end):
    """64-bit FNV-1a hash of the bytes ``data[start:end]``."""
    h = _FNV_OFFSET
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return h


@njit(cache=True, _nrt=False)
def bytes_lookup(bytes_slots, token_bytes, token_start, data, start, end):
    """The id of the token whose bytes equal ``data[start:end]``, or -1."""
    mask = np.uint64(len(bytes_slots) - 1)
    slot = fnv1a(data, start, end) & mask
    length = end - start
    while True:
        t = bytes_slots[slot]
        if t == -1:
            return np.int64(-1)
        s = token_start[t]
        if token_start[t + 1] - s == length:
            same = True
            for i in range(length):
                if token_bytes[s + i] != data[start + i]:
                    same = False
                    break
            if same:
                return np.int64(t)
        slot = (slot + np.uint64(1)) & mask


@njit(cache=True)
def _build_bytes_slots(token_bytes, token_start, usable, capacity):
    slots = np.full(capacity, -1, dtype=np.int32)
    mask = np.uint64(capacity - 1)
    for t in range(len(token_start) - 1):
        if not usable[t]:
            continue
        slot = fnv1a(token_bytes, token_start[t], token_start[t + 1]) & mask
        while slots[slot] != -1:
            slot = (slot + np.uint64(1)) & mask
        slots[slot] = t
    return slots


# ----------------------------------------------------------------------------- compatibility
@njit(cache=True, _nrt=False)
def compatible(priority, split_left, split_right, pair_keys, pair_vals, a, b):
    """True iff the two tokens ``a b`` are the BPE encoding of their concatenated bytes.

    Walks BPE's history at the boundary backwards: the later of the two tokens is
    unmerged into its parts (keeping the part next to the boundary) until both are
    single bytes. At every step, if the pair across the boundary has a merge that BPE
    would have applied before the state changed (``priority < limit``), BPE would have
    crossed the boundary, so ``a b`` is not valid. Leftmost-wins on equal priority is
    why unmerging the right token uses ``limit = priority + 1``.
    """
    limit = NEVER + 1
    while True:
        merged = pair_lookup(pair_keys, pair_vals, a, b)
        if merged >= 0 and priority[merged] < limit:
            return False
        a_base = split_left[a] < 0
        b_base = split_left[b] < 0
        if a_base and b_base:
            return True
        if not a_base and (b_base or priority[a] > priority[b]):
            limit = priority[a]
            a = split_right[a]
        else:
            limit = priority[b] + 1
            b = split_left[b]


def is_compatible(tables: Tables, a: int, b: int) -> bool:
    """Python entry point of :func:`compatible` for one vocabulary's tables."""
    return bool(
        compatible(
            tables.priority, tables.split_left, tables.split_right,
            tables.pair_keys, tables.pair_vals, a, b,
        )
    )


# ----------------------------------------------------------------------------- derivation
@njit(cache=True)
def _derive_from_ranks(token_bytes, token_start, order, rank_priority, usable, bytes_slots,
                       priority, split_left, split_right, pair_keys, pair_vals):
    """Rank rule: the split of token t is the only pair (x, y), x + y = t, of earlier
    tokens that is itself a valid encoding (at most one exists)."""
    for t in order:
        s, e = token_start[t], token_start[t + 1]
        if e - s == 1:
            priority[t] = -1
            continue
        for k in range(s + 1, e):
            x = bytes_lookup(bytes_slots, token_bytes, token_start, token_bytes, s, k)
            # parts may share the token's priority (SentencePiece pieces with equal scores)
            if x < 0 or priority[x] >= NEVER or rank_priority[x] > rank_priority[t]:
                continue
            y = bytes_lookup(bytes_slots, token_bytes, token_start, token_bytes, k, e)
            if y < 0 or priority[y] >= NEVER or rank_priority[y] > rank_priority[t]:
                continue
            if compatible(priority, split_left, split_right, pair_keys, pair_vals, x, y):
                split_left[t] = x
                split_right[t] = y
                priority[t] = rank_priority[t]
                _pair_insert(pair_keys, pair_vals, x, y, t)
                break


@njit(cache=True)
def _derive_from_merges(merge_left, merge_right, merge_result, merge_priority,
                        priority, split_left, split_right, pair_keys, pair_vals):
    """Merge rule: in priority order, a listed merge is live when both parts are already
    formed, its result is not yet formed, and the pair is a valid encoding.
    Returns how many merges were dead (never applied by BPE)."""
    dead = 0
    for i in range(len(merge_left)):
        x, y, t = merge_left[i], merge_right[i], merge_result[i]
        if priority[x] >= NEVER or priority[y] >= NEVER or priority[t] < NEVER:
            dead += 1
            continue
        if not compatible(priority, split_left, split_right, pair_keys, pair_vals, x, y):
            dead += 1
            continue
        split_left[t] = x
        split_right[t] = y
        priority[t] = merge_priority[i]
        _pair_insert(pair_keys, pair_vals, x, y, t)
    return dead


def _capacity(n: int) -> int:
    cap = 1024
    while cap < 2 * n:
        cap *= 2
    return cap


def compile_vocabulary(vocab) -> Tables:
    """Flatten ``vocab`` into :class:`Tables` (memoised on the vocabulary object)."""
    cached = getattr(vocab, "_compiled_tables", None)
    if cached is not None:
        return cached
    n = len(vocab.tokens)
    lengths = np.fromiter((len(t) for t in vocab.tokens), dtype=np.int64, count=n)
    token_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=token_start[1:])
    token_bytes = np.frombuffer(b"".join(vocab.tokens), dtype=np.uint8).copy()
    usable = np.ones(n, dtype=np.bool_)
    for i in vocab.excluded:
        usable[i] = False
    bytes_slots = _build_bytes_slots(token_bytes, token_start, usable, _capacity(n))

    priority = np.full(n, NEVER, dtype=np.int64)
    split_left = np.full(n, -1, dtype=np.int32)
    split_right = np.full(n, -1, dtype=np.int32)
    pair_keys = np.full(_capacity(n), -1, dtype=np.int64)
    pair_vals = np.full(len(pair_keys), -1, dtype=np.int32)
    single = (lengths == 1) & usable
    priority[single] = -1

    dead_merges = 0
    if vocab.rule == "ranks":
        order = np.lexsort((lengths, vocab.priority))  # by priority, shorter first on ties
        order = order[usable[order]]
        _derive_from_ranks(token_bytes, token_start, order, vocab.priority, usable, bytes_slots,
                           priority, split_left, split_right, pair_keys, pair_vals)
    else:
        items = sorted(vocab.merges.items(), key=lambda kv: kv[1][0])
        ml = np.array([p[0] for p, _ in items], dtype=np.int64)
        mr = np.array([p[1] for p, _ in items], dtype=np.int64)
        mp = np.array([v[0] for _, v in items], dtype=np.int64)
        mt = np.array([v[1] for _, v in items], dtype=np.int64)
        dead_merges = int(_derive_from_merges(ml, mr, mt, mp, priority, split_left, split_right,
                                              pair_keys, pair_vals))
    byte_token = np.asarray(vocab.byte_token, dtype=np.int32)
    tables = Tables(token_bytes, token_start, lengths.astype(np.int32), priority,
                    split_left, split_right, pair_keys, pair_vals, bytes_slots, byte_token)
    vocab._compiled_tables = tables
    vocab._dead_merges = dead_merges
    return tables


def derive_splits(vocab) -> tuple[np.ndarray, np.ndarray]:
    tables = compile_vocabulary(vocab)
    return tables.split_left, tables.split_right


# ----------------------------------------------------------------------------- merge order
def rank_order_break(vocab) -> str | None:
    """None when BPE applies the merges of ``vocab`` in priority order on every input; else
    one line showing a token whose own bytes BPE merges out of order (memoised).

    The derivation above, ``compatible`` and every encoder built on them assume that a
    token is formed after its parts (its merge's priority is not lower than theirs). A
    ranks file can break that: with ``bc`` ranked after ``abc``, BPE still forms ``abc``
    from ``a`` + ``bc`` (the pair merges as soon as ``bc`` exists), but the derivation
    marks ``abc`` unreachable. Then the output of BPE depends on when a part was formed,
    which no static priority describes, so those encoders would give wrong ids.

    Exact and cheap: BPE forms a token the same way wherever it occurs (the merges inside
    its span are those of its bytes alone), and if some token's bytes are merged out of
    order, the first such token in priority order is one the derivation left unformed
    (ranks) or formed from another pair (merges). So only those candidates are re-encoded
    by the reference, none at all for the shipped vocabularies.
    """
    memo = vocab.__dict__
    if "_rank_order_break" not in memo:
        memo["_rank_order_break"] = _find_rank_order_break(vocab)
    return memo["_rank_order_break"]


def _find_rank_order_break(vocab) -> str | None:
    tables = compile_vocabulary(vocab)
    usable = np.ones(len(tables.token_len), dtype=np.bool_)  # not vocab.tokens: a cached one builds that list
    usable[list(vocab.excluded)] = False
    candidates = set(np.flatnonzero((tables.priority >= NEVER) & (tables.token_len > 1) & usable).tolist())
    if vocab.rule == "merges":
        formed = tables.priority < NEVER
        for (x, y), (_, t) in vocab.merges.items():
            if formed[x] and formed[y] and (tables.split_left[t] != x or tables.split_right[t] != y):
                candidates.add(t)
    if not candidates:
        return None
    from bpebench.errors import BpebenchError
    from .reference import bpe_reference

    tokens = vocab.tokens
    for t in sorted(candidates):
        applied: list = []
        try:
            if bpe_reference(vocab, tokens[t], applied) != [t]:
                continue
        except BpebenchError:  # a byte that is not a token: BPE never sees these bytes
            continue
        highest = applied[0][0], applied[0][3]  # (priority, token) of the latest-priority merge so far
        for merge_priority, left, right, merged in applied:
            if merge_priority < highest[0]:
                return (f"in {tokens[t]!r}, BPE merges {tokens[left]!r} + {tokens[right]!r} (priority"
                        f" {merge_priority}) after forming {tokens[highest[1]]!r} (priority {highest[0]}):"
                        " merges run out of priority order")
            highest = max(highest, (merge_priority, merged))
        # in order, yet not what the derivation found: never expected; refuse rather than guess
        _, left, right, _ = applied[-1]
        if tables.split_left[t] != left or tables.split_right[t] != right:
            return f"BPE forms {tokens[t]!r} from {tokens[left]!r} + {tokens[right]!r}, not as derived"
    return None


def require_ordered_merges(vocab, who: str) -> None:
    """Raise UnsupportedVocabulary when ``vocab`` breaks the merge order ``who`` relies on."""
    reason = rank_order_break(vocab)
    if reason is not None:
        from bpebench.errors import UnsupportedVocabulary

        raise UnsupportedVocabulary(f"{who} cannot encode {vocab.name} exactly: {reason} (heap and naive can)")


def live_merges(vocab) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, merged, priority) int64 arrays: every merge ``Vocabulary.merge`` may apply,
    whether or not the derivation found it (what an encoder that follows the definition needs
    when :func:`rank_order_break` is not None). O(total token length) dictionary lookups."""
    if vocab.rule == "merges":
        items = [(x, y, t, p) for (x, y), (p, t) in vocab.merges.items()]
    else:
        lookup, priority = vocab._lookup, vocab.priority
        items = []
        for token, t in lookup.items():
            for k in range(1, len(token)):
                x = lookup.get(token[:k])
                if x is not None:
                    y = lookup.get(token[k:])
                    if y is not None:
                        items.append((x, y, t, int(priority[t])))
    arr = np.array(items, dtype=np.int64).reshape(-1, 4)
    return arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3]


@njit(cache=True)
def _fill_pair_table(lefts, rights, merged, capacity):
    pair_keys = np.full(capacity, -1, dtype=np.int64)
    pair_vals = np.full(capacity, -1, dtype=np.int32)
    for i in range(len(lefts)):
        _pair_insert(pair_keys, pair_vals, lefts[i], rights[i], merged[i])
    return pair_keys, pair_vals


def pair_table(lefts: np.ndarray, rights: np.ndarray, merged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``(left, right) -> merged`` table of :class:`Tables` for the given merges."""
    return _fill_pair_table(lefts, rights, merged, _capacity(len(lefts)))
