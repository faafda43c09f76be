"""The Encoder interface: one BPE strategy over raw bytes (no pre-tokenization).

An encoder is built from a :class:`~algorithms.vocabulary.Vocabulary` and turns
bytes into token ids. It declares what it can do in ``capabilities`` so that the
conformance kit, the benchmarks and the reports choose what to run on it:

* ``"exact"``: output equals the reference BPE encoding (else it is approximate);
* ``"appending"`` / ``"prepending"``: offers an incremental counter (see ``algorithms.appending``);
* ``"interval"``: offers range counting after preprocessing.

Subclasses implement :meth:`encode`; :meth:`count` and :meth:`encode_pieces` have
plain defaults that fast encoders override.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Sequence

from .vocabulary import Vocabulary


class Encoder:
    """Base class of every encoder. Register concrete ones with ``@register_encoder``."""

    #: registry name, e.g. ``"backtracking"``
    name: ClassVar[str] = ""
    #: one-line description shown by ``bpebench list``
    summary: ClassVar[str] = ""
    #: declared capabilities; include ``"exact"`` only if output always equals ``naive``
    capabilities: ClassVar[frozenset[str]] = frozenset({"exact"})
    #: lower is faster; the default algorithm is the exact one with the lowest value
    speed_rank: ClassVar[int] = 100

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary

    @classmethod
    def is_exact(cls) -> bool:
        return "exact" in cls.capabilities

    def encode(self, data: bytes) -> list[int]:
        """Token ids of ``data`` (raw bytes, no pre-tokenization)."""
        raise NotImplementedError

    def count(self, data: bytes) -> int:
        """Number of tokens ``encode(data)`` returns."""
        return len(self.encode(data))

    def encode_pieces(self, pieces: Iterable[bytes]) -> list[int]:
        """Encode each piece separately and concatenate (used by the Tokenizer)."""
        out: list[int] = []
        encode = self.encode
        for piece in pieces:
            out.extend(encode(piece))
        return out

    def decode(self, ids: Sequence[int]) -> bytes:
        return self.vocabulary.decode_bytes(ids)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} on {self.vocabulary.name}>"
