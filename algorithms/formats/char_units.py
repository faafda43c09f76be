"""Character-level BPE (SentencePiece, HF Metaspace / byte-fallback BPE) mapped onto bytes.

These models start from characters, the encoders start from bytes. Every
single-character token of 2 to 4 bytes is made a merge of its bytes through helper
tokens (its first 2 and 3 bytes, and the single bytes that no token covers), and these
*unit* merges run before every real merge (their priorities are the lowest), so that
BPE over the bytes of known characters first rebuilds the characters and then does
exactly what the character-level model does. The helpers are ``hidden`` ids after the
real vocabulary: BPE never leaves one in its output, because the Tokenizer only hands
the encoder runs of known characters (see ``pipeline/bpe_model.py``) and a known
character always assembles completely (a helper starts with a UTF-8 lead byte, so it
can only grow inside one character).

Complexity: linear in the vocabulary. Exact (the mapping adds merges only inside characters).
"""

from __future__ import annotations

import numpy as np

from ..kernels.compiled import NEVER
from bpebench.errors import VocabularyError
from .vocabulary import Vocabulary


def unit_merges(tokens: list[bytes], chars: list[int], excluded: set[int]) -> tuple[list[bytes], list[tuple[int, int, int]]]:
    """Helper tokens (to append after ``tokens``) and the unit merges ``(left, right, merged)``,
    in the order they must run, that assemble the single-character tokens ``chars``.

    Every one of the 256 single bytes ends up a token (a helper where none exists), so any
    byte string can be handed to an encoder.
    """
    n = len(tokens)
    extra: list[bytes] = []
    ids: dict[bytes, int] = {}
    for token_id, data in enumerate(tokens):
        if len(data) == 1 and token_id not in excluded:
            ids.setdefault(data, token_id)

    def helper(data: bytes) -> int:
        token_id = ids.get(data)
        if token_id is None:
            token_id = ids[data] = n + len(extra)
            extra.append(data)
        return token_id

    for b in range(256):
        helper(bytes([b]))
    merges: list[tuple[int, int, int, int]] = []  # (length, left, right, merged)
    seen: set[bytes] = set()
    for token_id in chars:
        data = tokens[token_id]
        for k in range(2, len(data) + 1):
            prefix = data[:k]
            if prefix in seen:
                continue
            seen.add(prefix)
            merged = token_id if k == len(data) else helper(prefix)
            merges.append((k, ids[data[: k - 1]], ids[data[k - 1 : k]], merged))
    merges.sort()  # shorter prefixes first: a unit's parts are formed before it
    return extra, [(left, right, merged) for _, left, right, merged in merges]


def listed_merges(
    merges: list[tuple[str, str]],
    ids: dict[str, int],
    *,
    barrier: set[int],
    rank_offset: int = 0,
    where: str,
    forbidden: set[int] = frozenset(),
    prefix: str = "",
) -> dict[tuple[int, int], tuple[int, int]]:
    """HF's merge map: ``(left id, right id) -> (rank, merged id)`` from the listed merges.

    A pair listed twice keeps its *last* rank (HF collects the list into a hash map).
    With a ``prefix`` (``continuing_subword_prefix``) the merged token drops it from the right
    part (``a`` + ``##b`` -> ``ab``). Merges touching ``barrier`` ids (added tokens that are always carved out of the text
    before BPE) are left out; merges touching ``forbidden`` ids are refused.
    """
    table: dict[tuple[int, int], tuple[int, int]] = {}
    for index, (left_text, right_text) in enumerate(merges):
        left, right = ids.get(left_text), ids.get(right_text)
        if prefix:
            if not right_text.startswith(prefix):
                raise VocabularyError(f"{where}: merge {index} {left_text!r} {right_text!r}: the right part does not"
                                      f" start with continuing_subword_prefix {prefix!r}")
            merged = ids.get(left_text + right_text[len(prefix):])
        else:
            merged = ids.get(left_text + right_text)
        if left is None or right is None or merged is None:
            missing = next(t for t, i in ((left_text, left), (right_text, right), (left_text + right_text, merged))
                           if i is None)
            raise VocabularyError(f"{where}: merge {index} {left_text!r} {right_text!r} references unknown token"
                                  f" {missing!r}")
        if left in forbidden or right in forbidden:
            raise VocabularyError(f"{where}: merge {index} {left_text!r} {right_text!r} joins a byte-fallback or"
                                  " unknown token; merges over those are not reproduced")
        if not barrier.isdisjoint((left, right, merged)):
            continue
        table[(left, right)] = (rank_offset + index, merged)
    return table


def base_priorities(tokens: list[bytes], excluded: set[int]) -> np.ndarray:
    """Priorities with every single-byte token BPE may start from at -1, the rest at NEVER."""
    priority = np.full(len(tokens), NEVER, dtype=np.int64)
    for token_id, data in enumerate(tokens):
        if len(data) == 1 and token_id not in excluded:
            priority[token_id] = -1
    return priority


def set_merge_priorities(priority: np.ndarray, table: dict[tuple[int, int], tuple[int, int]]) -> None:
    """Each merged token's priority: the best rank of the merges that form it."""
    for rank, merged in table.values():
        if rank < priority[merged]:
            priority[merged] = rank


def char_level_vocabulary(
    by_id: dict[int, str],
    merges: list[tuple[str, str]],
    added: dict[int, str],
    *,
    name: str,
    byte_fallback: dict[int, int],
    unk_id: int | None,
    source: str = "",
    prefix: str = "",
) -> Vocabulary:
    """A ``"merges"`` Vocabulary for an HF BPE model over characters (tokens are UTF-8 text).

    ``added`` are the added-token ids (excluded from BPE where they are not model tokens or
    are special); ``byte_fallback`` maps byte value -> id of its ``<0xXX>`` token.
    """
    where = source or name
    n = max([*by_id, *added]) + 1
    tokens: list[bytes] = [b""] * n
    excluded: set[int] = set(byte_fallback.values())
    for token_id in range(n):
        text = by_id.get(token_id)
        if text is None:
            tokens[token_id] = added.get(token_id, "").encode("utf-8")
            excluded.add(token_id)
        else:
            tokens[token_id] = text.encode("utf-8", "surrogatepass")
            if token_id in added:
                excluded.add(token_id)
    for value, token_id in byte_fallback.items():
        tokens[token_id] = bytes([value])
    if unk_id is not None:
        excluded.add(unk_id)
    ids = {text: token_id for token_id, text in by_id.items()}
    chars = [i for i, t in by_id.items() if len(t) == 1 and i not in excluded and len(tokens[i]) > 1]
    extra, units = unit_merges(tokens, chars, excluded)
    tokens.extend(extra)
    hidden = set(range(n, len(tokens)))
    merge_table: dict[tuple[int, int], tuple[int, int]] = {}
    priority = base_priorities(tokens, excluded)
    for rank, (left, right, merged) in enumerate(units):
        merge_table[(left, right)] = (rank, merged)
        priority[merged] = rank
    fallback_ids = set(byte_fallback.values())
    forbidden = fallback_ids | ({unk_id} if unk_id is not None else set())
    merge_table.update(listed_merges(merges, ids, barrier=excluded, rank_offset=len(units), where=where,
                                     forbidden=forbidden, prefix=prefix))
    set_merge_priorities(priority, merge_table)
    return Vocabulary(
        name=name,
        tokens=tokens,
        priority=priority,
        rule="merges",
        merges=merge_table,
        special_tokens={},
        pattern=None,
        normalizer="pipeline",
        excluded=frozenset(excluded),
        hidden=frozenset(hidden),
        byte_fallback=dict(byte_fallback) or None,
        whole_piece_lookup=False,
        source=source,
    )
