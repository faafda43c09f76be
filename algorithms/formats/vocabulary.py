"""The Vocabulary: tokens as byte strings in id order, plus the merges that define BPE on them.

Two rules of "which adjacent pair may merge" exist in the wild, and a Vocabulary
records which one it follows:

* ``"ranks"`` (tiktoken, SentencePiece): two adjacent tokens may merge when their
  concatenated bytes are themselves a token; the merge's priority is that token's
  priority (its rank, or its SentencePiece score order).
* ``"merges"`` (HF ``tokenizer.json``, GGUF): only the listed pairs merge, each with
  the priority of its position in the merge list.

Either way BPE is: start from single bytes, repeatedly apply the applicable merge
with the best (lowest) priority, leftmost on ties, until none applies.

For the fast encoders every reachable multi-byte token is reduced to exactly one
pair of earlier tokens, its *split*: the last merge BPE performs when it encodes the
token's own bytes (see ``bpebench.algorithms.kernels.compiled.derive_splits``). Tokens BPE can never
produce are reported by :meth:`Vocabulary.problems` instead of failing later.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Sequence

import numpy as np

from bpebench.errors import BpebenchError, VocabularyError

MergeRule = Literal["ranks", "merges"]

#: the largest id space a vocabulary may claim (16.7 M; real vocabularies have up to ~262 000 ids)
MAX_IDS = 1 << 24
#: the longest token accepted (16 KiB; real tokens are at most a few hundred bytes): deriving how BPE
#: forms a token costs time quadratic in its length, so one giant token would stall every load
MAX_TOKEN_BYTES = 1 << 14


def check_id_space(name: str, n_tokens: int, n_ids: int) -> None:
    """Refuse ids far beyond the tokens: more than :data:`MAX_IDS`, or over half the id space empty
    (plus a margin of 1024), which would make a small file allocate huge tables.

    >>> check_id_space("v", 100, 2**40)
    Traceback (most recent call last):
    ...
    bpebench.errors.VocabularyError: v: ids up to 1099511627775 for 100 tokens; ids must stay below 16777216
    """
    if n_ids > MAX_IDS:
        raise VocabularyError(f"{name}: ids up to {n_ids - 1} for {n_tokens} tokens; ids must stay below {MAX_IDS}")
    if n_ids > 2 * n_tokens + 1024:
        raise VocabularyError(f"{name}: ids up to {n_ids - 1} for only {n_tokens} tokens (over half the ids unused);"
                              " refused as too sparse")


@dataclass(eq=False)
class Vocabulary:
    """A BPE vocabulary.

    Attributes:
        name: a short label (``cl100k_base``, a file name, ...).
        tokens: the bytes of every token; the index is the token id.
        priority: per token, the priority of the merge that forms it (lower merges
            first). For ``"ranks"`` vocabularies this is the rank; for
            ``"merges"`` vocabularies it is filled from the merge list.
        rule: ``"ranks"`` or ``"merges"`` (see the module docstring).
        merges: for ``"merges"`` vocabularies, ``(left_id, right_id) -> (priority, merged_id)``.
        special_tokens: special token text -> id; never produced by BPE.
        pattern: name (``bpebench.algorithms.formats.patterns``) or regex of the pre-tokenizer, or None.
        normalizer: ``"none"``, or ``"sentencepiece"`` (space -> U+2581 and a dummy prefix).
        excluded: ids that BPE never produces although their bytes equal another
            token's (SentencePiece byte-fallback pieces, hidden helpers).
        hidden: ids that are not part of the source vocabulary but were added so
            that every multi-byte base unit is a merge of two tokens (SentencePiece
            characters of 3 or 4 bytes need one or two such partial tokens).
        byte_fallback: byte value -> id to emit for a hidden token's bytes, if any.
        pipeline: HF-tokenizers-shaped components (``normalizer``, ``pre_tokenizer``, ``decoder``,
            ``added_tokens``, ``model`` options; see ``bpebench.algorithms.pipeline.hf_pipeline``),
            or None for the plain tiktoken-style pipeline (``pattern`` + ``normalizer``). When
            ``normalizer`` is ``"pipeline"`` the Tokenizer runs these components.
        whole_piece_lookup: the Tokenizer emits a pre-tokenized piece that is itself a
            token directly, without BPE (what tiktoken and HF ``ignore_merges`` do;
            identical to BPE unless the vocabulary has unreachable tokens).
        source: where it was loaded from.
        llama_cpp: for GGUF vocabularies, llama.cpp's tokenizer settings as plain JSON data
            (``pre``: its pre-tokenizer type, ``user_defined``: literals cut out of the text
            even when special tokens are not parsed, ``lstrip`` / ``rstrip``, ``bos``, ``eos``,
            ``add_bos``, ``add_eos``); the Tokenizer then follows llama.cpp
            (:mod:`bpebench.algorithms.pipeline.llama_cpp_specials`). None elsewhere.
    """

    name: str
    tokens: list[bytes]
    priority: np.ndarray
    rule: MergeRule = "ranks"
    merges: dict[tuple[int, int], tuple[int, int]] | None = None
    special_tokens: dict[str, int] = field(default_factory=dict)
    pattern: str | None = None
    normalizer: str = "none"
    excluded: frozenset[int] = frozenset()
    hidden: frozenset[int] = frozenset()
    byte_fallback: dict[int, int] | None = None
    whole_piece_lookup: bool = True
    source: str = ""
    pipeline: dict | None = None
    llama_cpp: dict | None = None

    def __post_init__(self) -> None:
        self.priority = np.ascontiguousarray(self.priority, dtype=np.int64)
        if len(self.priority) != len(self.tokens):
            raise VocabularyError(
                f"{self.name}: {len(self.tokens)} tokens but {len(self.priority)} priorities"
            )
        if self.rule == "merges" and self.merges is None:
            raise VocabularyError(f"{self.name}: a 'merges' vocabulary needs its merge list")
        if self.tokens and max(map(len, self.tokens)) > MAX_TOKEN_BYTES:
            longest = max(range(len(self.tokens)), key=lambda i: len(self.tokens[i]))
            raise VocabularyError(f"{self.name}: token id {longest} is {len(self.tokens[longest]):,} bytes long;"
                                  f" tokens longer than {MAX_TOKEN_BYTES:,} bytes are refused")

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_ranks(
        cls,
        ranks: dict[bytes, int] | Sequence[bytes],
        *,
        name: str,
        special_tokens: dict[str, int] | None = None,
        pattern: str | None = None,
        source: str = "",
    ) -> "Vocabulary":
        """Build a ``"ranks"`` vocabulary where rank = id = priority (tiktoken style).

        Ranks may have gaps, and one token may be empty: those ids are placeholders BPE
        never produces (``excluded``, empty bytes), where a special token may sit (p50k's
        ``<|endoftext|>``). Ranks leaving most of the id space empty are refused
        (:func:`check_id_space`).

        >>> v = Vocabulary.from_ranks([bytes([i]) for i in range(256)] + [b"ab"], name="t")
        >>> v.token_id(b"ab"), int(v.priority[256])
        (256, 256)
        >>> gap = Vocabulary.from_ranks({**{bytes([i]): i for i in range(256)}, b"ab": 257}, name="gap")
        >>> gap.tokens[256], 256 in gap.excluded, gap.token_id(b"ab")
        (b'', True, 257)
        """
        excluded: set[int] = set()
        if isinstance(ranks, dict):
            if not ranks:
                raise VocabularyError(f"{name}: no tokens")
            for token, rank in ranks.items():
                if rank < 0:
                    raise VocabularyError(f"{name}: rank {rank} of token {token!r} is negative")
            n = max(ranks.values()) + 1
            check_id_space(name, len(ranks), n)
            tokens: list[bytes | None] = [None] * n
            for token, rank in ranks.items():
                if tokens[rank] is not None:
                    raise VocabularyError(f"{name}: duplicate rank {rank}")
                tokens[rank] = token
            excluded = {i for i, t in enumerate(tokens) if not t}
            token_list = [t or b"" for t in tokens]
        else:
            token_list = list(ranks)
        return cls(
            name=name,
            tokens=token_list,
            priority=np.arange(len(token_list), dtype=np.int64),
            rule="ranks",
            special_tokens=dict(special_tokens or {}),
            pattern=pattern,
            excluded=frozenset(excluded),
            source=source,
        )

    # ---------------------------------------------------------------- lookups
    def __len__(self) -> int:
        return len(self.tokens)

    @cached_property
    def _lookup(self) -> dict[bytes, int]:
        lookup: dict[bytes, int] = {}
        for token_id, token in enumerate(self.tokens):
            if token_id in self.excluded:
                continue
            if token in lookup:
                raise VocabularyError(
                    f"{self.name}: duplicate token {token!r} (ids {lookup[token]} and {token_id})"
                )
            lookup[token] = token_id
        return lookup

    def token_id(self, token: bytes) -> int | None:
        """The id BPE uses for these bytes, or None if they are not a token."""
        return self._lookup.get(token)

    @cached_property
    def byte_token(self) -> np.ndarray:
        """int32[256]: the token id of each single byte (-1 where the byte is not a token)."""
        table = np.full(256, -1, dtype=np.int32)
        for b in range(256):
            tid = self._lookup.get(bytes([b]))
            if tid is not None:
                table[b] = tid
        return table

    @cached_property
    def special_ids(self) -> dict[int, str]:
        return {i: s for s, i in self.special_tokens.items()}

    @property
    def n_ids(self) -> int:
        """One past the largest id, special tokens included."""
        return max([len(self.tokens) - 1, *self.special_tokens.values()], default=-1) + 1

    def merge(self, left: int, right: int) -> tuple[int, int] | None:
        """The merge BPE may apply to the adjacent pair (left, right): (priority, merged id) or None.

        This is the definition used by the reference encoder; it follows ``rule``
        literally and does not use the derived split table.
        """
        if self.rule == "merges":
            assert self.merges is not None
            return self.merges.get((left, right))
        merged = self._lookup.get(self.tokens[left] + self.tokens[right])
        if merged is None:
            return None
        return int(self.priority[merged]), merged

    # ---------------------------------------------------------------- decoding
    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        """Concatenate the bytes of the tokens (special tokens decode to their text).

        Raises VocabularyError for an id that is neither a token nor a special token.
        """
        tokens, n, specials = self.tokens, len(self.tokens), self.special_ids
        out = []
        for i in ids:
            special = specials.get(i) if specials else None
            if special is not None:  # also where a special token sits on an id of the ranks (p50k)
                out.append(special.encode("utf-8"))
            elif 0 <= i < n:
                out.append(tokens[i])
            else:
                raise VocabularyError(
                    f"token id {i} is out of range for {self.name} (0..{n - 1}"
                    + (f", specials {min(specials)}..{max(specials)})" if specials else ")")
                )
        return b"".join(out)

    def check_ids(self, ids: Sequence[int]) -> None:
        """Raise VocabularyError naming the first id that this vocabulary cannot decode."""
        self.decode_bytes(ids)

    # ---------------------------------------------------------------- identity
    @cached_property
    def fingerprint(self) -> str:
        """A hash of everything that defines the encoding (used as a cache key)."""
        h = hashlib.sha256()
        h.update(f"{self.rule}|{self.normalizer}|{len(self.tokens)}|".encode())
        for t in self.tokens:
            h.update(len(t).to_bytes(2, "little"))
            h.update(t)
        h.update(self.priority.tobytes())
        if self.merges is not None:
            for pair, (prio, merged) in sorted(self.merges.items()):
                h.update(np.array([*pair, prio, merged], dtype=np.int64).tobytes())
        h.update(repr(sorted(self.excluded)).encode())
        for spec in (self.pipeline, self.llama_cpp):
            if spec is not None:
                h.update(json.dumps(spec, sort_keys=True).encode())
        return h.hexdigest()[:24]

    # ---------------------------------------------------------------- validation
    @cached_property
    def splits(self) -> tuple[np.ndarray, np.ndarray]:
        """(left, right) int32 arrays: the pair each token is last merged from; -1 for base tokens
        and for tokens BPE can never produce (see :meth:`problems`)."""
        from ..kernels.compiled import derive_splits

        return derive_splits(self)

    @cached_property
    def unreachable(self) -> np.ndarray:
        """Ids of multi-byte tokens that BPE never produces from their own bytes."""
        left, _ = self.splits
        lengths = np.fromiter((len(t) for t in self.tokens), dtype=np.int64, count=len(self.tokens))
        excluded = np.zeros(len(self.tokens), dtype=bool)
        excluded[list(self.excluded)] = True
        ids = np.flatnonzero((left < 0) & (lengths > 1) & ~excluded)
        from ..kernels.compiled import rank_order_break

        if len(ids) and rank_order_break(self) is not None:
            # the derivation misses tokens that merges out of priority order form: ask the definition
            ids = np.array([i for i in ids.tolist() if not self._produces_itself(i)], dtype=np.int64)
        return ids

    def _produces_itself(self, token_id: int) -> bool:
        from ..kernels.reference import bpe_reference

        try:
            return bpe_reference(self, self.tokens[token_id]) == [token_id]
        except BpebenchError:  # a byte that is not a token
            return False

    def problems(self) -> list[str]:
        """Plain-language list of what is wrong with this vocabulary (empty when it is sound)."""
        problems = []
        try:
            self._lookup
        except VocabularyError as exc:
            return [str(exc)]
        missing = [b for b in range(256) if self.byte_token[b] < 0]
        if missing:
            shown = ", ".join(f"0x{b:02x}" for b in missing[:8])
            more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
            problems.append(
                f"{len(missing)} single bytes are not tokens ({shown}{more}): input containing them cannot be encoded"
            )
        empty = [i for i, t in enumerate(self.tokens) if not t and i not in self.excluded]
        if empty:
            problems.append(f"{len(empty)} tokens are empty (ids {empty[:5]})")
        model = (self.pipeline or {}).get("model") or {}
        # a model that starts words from prefixed or suffixed symbols (``##b``, ``o</w>``) has tokens no
        # merge of bytes forms, by design
        symbol_level = bool(model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"))
        unreachable = self.unreachable if not symbol_level else np.zeros(0, dtype=np.int64)
        if self.llama_cpp is not None:  # llama.cpp's special tokens are literals, merges need not form them
            unreachable = np.setdiff1d(unreachable, np.fromiter(self.special_tokens.values(), dtype=np.int64))
        if len(unreachable):
            shown = ", ".join(f"{int(i)} {self.tokens[int(i)]!r}" for i in unreachable[:5])
            problems.append(
                f"{len(unreachable)} tokens cannot be derived by merging two earlier tokens, so BPE never"
                f" produces them (e.g. {shown})"
            )
        from ..kernels.compiled import rank_order_break

        out_of_order = rank_order_break(self)
        if out_of_order:
            problems.append(f"{out_of_order}; encoders built on compatibility checks (backtracking, table,"
                            " appending, prepending, interval) refuse it, heap and naive encode it exactly")
        ordinary = set(range(len(self.tokens))) - set(self.excluded)
        collisions = sorted(set(self.special_tokens.values()) & ordinary)
        if collisions and self.llama_cpp is None:  # llama.cpp's merges may form special tokens too
            problems.append(f"special token ids {collisions[:5]} collide with ordinary token ids")
        return problems
