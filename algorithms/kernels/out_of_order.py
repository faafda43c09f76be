"""Tables for the fused pipeline when a vocabulary's merges run out of priority order. Exact.

Some vocabularies (reordered merge lists, Llama-3-style files; ``compiled.rank_order_break``)
let BPE form a token from a part that is ranked after it. The derived splits, the
whole-token tables built from them and backtracking then describe another algorithm, so
the fused pipeline runs on tables that follow the definition instead:

* every merge the definition allows (``compiled.live_merges``: each listed merge, or each
  pair of tokens spelling a token under the ranks rule) packed for ``matching.merge_rank``,
  with the dense 64k table of byte-pair ranks and the token each rank forms; the merge
  loop of :mod:`.short_piece` over these is the definition itself (best rank first,
  leftmost on ties), as the ``heap`` encoder is for long pieces;
* ``produced``: whether BPE of a token's own bytes gives that token, found by running that
  merge loop over every token once (O(sum of L^2) over the tokens, tens of milliseconds
  for 200k tokens). The whole-token lookups of a piece (the short and medium tables, the
  bytes table beyond) accept only those tokens, so a piece that is one token is emitted
  exactly when BPE would produce it; under whole-piece lookup (tiktoken, HF
  ``ignore_merges``) they accept every usable token, as those libraries do. Those tokens
  fill the short and medium tables and a forward trie of their own
  (:func:`whole_token_lookup`), so the fused loop's lookup code is the in-order one.
* merges whose parts or result BPE never produces are dropped: BPE forms a token the same
  way wherever it occurs (the merges inside its span are those of its own bytes), so a
  token that its own bytes do not give never appears, and a merge that needs one never
  applies. Under the ranks rule this halves the pair table (every pair of tokens that
  spells a token is a merge there: 446k for o200k, against 200k derived splits).

Refused (None) when two different tokens share a merge rank: then a rank does not name
the merge and the merge loop cannot be used (the ``heap`` encoder still can).
"""

from __future__ import annotations

import numpy as np

from .compiled import live_merges, pair_table
from .jit import njit
from .matching import merge_ranks
from .short_piece import (
    NO_MERGE, _fill_byte_pair_ranks, byte_pairs_without_atoms, long_tokens, medium_tokens, merge_short_piece,
    rank_token_offset, short_tokens,
)


def out_of_order_tables(vocab, tables, matcher) -> dict | None:
    """The fused pipeline's tables for ``vocab`` by the definition's merges (memoised on it), or
    None when merge ranks tie: ``matcher`` (``matcher`` with the live merges), ``byte_pairs``,
    ``token_of_rank``, ``token_offset``, ``produced`` (uint8 per token), ``usable`` (uint8 per
    token: not excluded), ``pair_keys`` / ``pair_vals`` (live merge -> token, for
    ``heap_piece``) and ``unreachable`` (whether some usable multi-byte token is not produced)."""
    memo = vocab.__dict__
    if "_out_of_order_tables" not in memo:
        memo["_out_of_order_tables"] = _build(vocab, tables, matcher)
    return memo["_out_of_order_tables"]


def _ranked(left, right, merged, priority, byte_token):
    """(pairs, pair_filter, token_of_rank, token_offset, byte_pairs) of the merges, or None when one
    rank would name two tokens. Merges out of priority order: no two bytes start as one token inside a
    piece (``byte_pairs_without_atoms``)."""
    pairs, pair_filter = merge_ranks(left, right, priority)
    _, dense = np.unique(priority, return_inverse=True)
    by_rank = np.full(int(dense.max()) + 1 if len(dense) else 1, -1, dtype=np.int32)
    by_rank[dense] = merged
    if len(dense) and not bool((by_rank[dense] == merged).all()):
        return None
    byte_pair = np.full(1 << 16, NO_MERGE, dtype=np.int64)
    _fill_byte_pair_ranks(pairs, pair_filter, byte_token, byte_pair)
    return pairs, pair_filter, by_rank, rank_token_offset(by_rank), byte_pairs_without_atoms(byte_pair)


def _build(vocab, tables, matcher) -> dict | None:
    left, right, merged, priority = live_merges(vocab)
    ranked = _ranked(left, right, merged, priority, tables.byte_token)
    if ranked is None:
        return None
    usable = np.ones(len(tables.token_len), dtype=np.bool_)
    usable[list(vocab.excluded)] = False
    produced = _produced_by_own_bytes(tables.token_bytes, tables.token_start, tables.byte_token, ranked[4],
                                      ranked[0], ranked[1], ranked[2], ranked[3], usable)
    keep = (produced[left] & produced[right] & produced[merged]).astype(bool)
    if not keep.all():  # merges that never apply (see the module docstring); fewer pairs to probe
        left, right, merged, priority = left[keep], right[keep], merged[keep], priority[keep]
        ranked = _ranked(left, right, merged, priority, tables.byte_token)
    pairs, pair_filter, by_rank, offset, byte_pairs = ranked
    pair_keys, pair_vals = pair_table(left, right, merged)
    return {
        "matcher": matcher._replace(pairs=pairs, pair_filter=pair_filter),
        "byte_pairs": byte_pairs,
        "token_of_rank": by_rank,
        "token_offset": offset,
        "produced": produced,
        "usable": usable.astype(np.uint8),
        "pair_keys": pair_keys,
        "pair_vals": pair_vals,
        "unreachable": bool(((produced == 0) & (tables.token_len > 1) & usable).any()),
    }


def whole_token_lookup(vocab, tables, live: dict, whole_piece_lookup: bool) -> tuple:
    """(matcher, short_tokens, medium_tokens, long_tokens) for the whole-token lookup of the fused
    loop: the tokens a piece is emitted as (``produced``, or every ``usable`` one under whole-piece
    lookup) in the short, medium and long tables and in the forward trie of ``live["matcher"]``
    (with its two-byte start). Built on first use, kept in ``live``."""
    from .matching import _build_trie, two_byte_start

    key = "usable" if whole_piece_lookup else "produced"
    if f"lookup_{key}" not in live:
        mask = live[key].astype(bool)
        forward, _ = _build_trie(vocab.tokens, np.flatnonzero(mask), tables, reverse=False)
        matcher = live["matcher"]._replace(forward=forward, two_byte_start=two_byte_start(forward))
        live[f"lookup_{key}"] = (matcher, short_tokens(tables, mask), medium_tokens(tables, mask),
                                 long_tokens(tables, mask))
    return live[f"lookup_{key}"]


@njit(cache=True)
def _produced_by_own_bytes(token_bytes, token_start, byte_token, byte_pairs, pairs, pair_filter,
                           token_of_rank, token_offset, usable):
    """uint8 per token: 1 when the merge loop over the token's own bytes gives that token alone."""
    n = token_start.shape[0] - 1
    longest = 1
    for t in range(n):
        longest = max(longest, token_start[t + 1] - token_start[t])
    parts = np.empty(longest, dtype=np.int32)
    ranks = np.empty(longest, dtype=np.int64)
    out = np.empty(longest, dtype=np.int32)
    produced = np.zeros(n, dtype=np.uint8)
    for t in range(n):
        start, end = token_start[t], token_start[t + 1]
        if not usable[t] or end == start:
            continue
        encodable = True
        for i in range(start, end):
            if byte_token[token_bytes[i]] < 0:
                encodable = False
                break
        if not encodable:
            continue
        count = merge_short_piece(byte_token, byte_pairs, pairs, pair_filter, token_of_rank, token_offset,
                                  token_bytes, start, end, parts, ranks, out, 0)
        if count == 1 and out[0] == t:
            produced[t] = 1
    return produced
