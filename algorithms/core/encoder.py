"""The Encoder interface: one BPE strategy over raw bytes (no pre-tokenization).

An encoder is built from a :class:`~bpebench.algorithms.formats.vocabulary.Vocabulary` and turns
bytes into token ids. It declares what it can do in ``capabilities`` so that the
conformance kit, the benchmarks and the reports choose what to run on it:

* ``"exact"``: output equals the reference BPE encoding (else it is approximate);
* ``"appending"`` / ``"prepending"``: offers an incremental counter (see ``bpebench.algorithms.appending``);
* ``"interval"``: offers range counting after preprocessing.

Subclasses implement :meth:`encode`; :meth:`count` and :meth:`encode_pieces` have
plain defaults that fast encoders override.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Sequence

import numpy as np

from bpebench.errors import BpebenchError
from ..formats.vocabulary import Vocabulary


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
    #: True when the encoder relies on BPE applying merges in priority order (compatibility
    #: checks, derived splits): it then refuses vocabularies that break that order
    needs_ordered_merges: ClassVar[bool] = False

    def __init__(self, vocabulary: Vocabulary) -> None:
        if self.needs_ordered_merges:
            from ..kernels.compiled import require_ordered_merges

            require_ordered_merges(vocabulary, self.name or type(self).__qualname__)
        self.vocabulary = vocabulary

    @classmethod
    def unsupported_reason(cls, vocabulary: Vocabulary) -> str | None:
        """Why this encoder refuses ``vocabulary`` (raising ``UnsupportedVocabulary`` when built
        on it), or None when it encodes it."""
        if cls.needs_ordered_merges:
            from ..kernels.compiled import rank_order_break

            return rank_order_break(vocabulary)
        return None

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


# ----------------------------------------------------------------------------- compiled encoders
def as_byte_array(data) -> np.ndarray:
    """``data`` (bytes, bytearray, memoryview or uint8 array) as a uint8 array, without copying."""
    if isinstance(data, np.ndarray):
        return data if data.dtype == np.uint8 else data.astype(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def join_pieces(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte pieces: (uint8 data, int64 offsets[k + 1]); piece i is
    ``data[offsets[i]:offsets[i + 1]]``. Lets an encoder handle many pieces in one numba call."""
    if not isinstance(pieces, (list, tuple)):
        pieces = list(pieces)
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    if pieces:
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=offsets[1:])
    return np.frombuffer(b"".join(pieces), dtype=np.uint8), offsets


def check_encodable(vocab: Vocabulary, arr: np.ndarray) -> None:
    """Raise BpebenchError naming the first byte of ``arr`` that is not a token of ``vocab``
    (free when every byte is a token, the usual case)."""
    byte_token = vocab.byte_token
    if len(arr) == 0 or (byte_token >= 0).all():
        return
    bad = np.flatnonzero(byte_token[arr] < 0)
    if len(bad):
        raise BpebenchError(f"byte 0x{int(arr[bad[0]]):02x} is not a token of {vocab.name}; it cannot be encoded")


class PiecewiseEncoder(Encoder):
    """Base of the compiled encoders: one kernel call encodes many pieces at once.

    A subclass implements :meth:`_kernel`; this class supplies ``encode``,
    ``encode_array``, ``count`` and ``encode_pieces`` around it, so no per-piece
    Python loop runs on the hot path.
    """

    #: the kernel only counts when handed an empty ``out`` (saves the output array)
    counts_without_output: ClassVar[bool] = False

    def _kernel(self, data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> int:
        """Encode each piece ``data[offsets[i]:offsets[i + 1]]`` into ``out`` (int32, at least
        ``len(data)`` long, or empty to only count); return the number of ids, or
        ``-1 - offset`` of a byte where no token starts."""
        raise NotImplementedError

    def _run(self, data: np.ndarray, offsets: np.ndarray, *, count_only: bool = False) -> tuple[int, np.ndarray]:
        check_encodable(self.vocabulary, data)
        out = np.empty(0 if count_only and self.counts_without_output else len(data), dtype=np.int32)
        n = int(self._kernel(data, offsets, out))
        if n < 0:
            raise BpebenchError(f"{self.vocabulary.name}: no token starts at byte offset {-1 - n}")
        return n, out

    def encode_array(self, data) -> np.ndarray:
        """int32 token ids of ``data`` (bytes or a uint8 array)."""
        arr = as_byte_array(data)
        n, out = self._run(arr, np.array([0, len(arr)], dtype=np.int64))
        return out[:n]

    def encode(self, data: bytes) -> list[int]:
        return self.encode_array(data).tolist()

    def count(self, data: bytes) -> int:
        arr = as_byte_array(data)
        return self._run(arr, np.array([0, len(arr)], dtype=np.int64), count_only=True)[0]

    def encode_pieces(self, pieces: Iterable[bytes]) -> list[int]:
        n, out = self._run(*join_pieces(pieces))
        return out[:n].tolist()
