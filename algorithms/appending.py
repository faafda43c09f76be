"""Incremental encoders: exact token counts while text grows to the right (or left).

``AppendableEncoder`` keeps, for every prefix of the text pushed so far, its last
token and its token count (the table of ``bpebench.algorithms.table``; the seed paper's
corollary IIa says the last token determines the whole encoding). Pushing a
byte computes one more entry from the tokens that end there, so:

* ``push(byte or bytes)``: amortised O(1) per byte for a fixed vocabulary (the
  number of tokens ending at a position and the compatibility checks are bounded
  by the vocabulary, not by the text; arrays grow by doubling);
* ``token_count()``: the exact count of the current text, O(1); ``count_at(n)``
  the count of any earlier prefix, O(1);
* ``truncate(n_bytes)``: back to a shorter prefix, O(1) (the table of a prefix
  does not depend on what follows);
* ``encode()``: the valid encoding of the current text, O(tokens).

``PrependableEncoder`` is the mirror image: text grows to the left, the table holds
the *first* token of every suffix, ``truncate(n)`` keeps the last ``n`` bytes.
It stores the text back to front and runs the same kernel with the forward trie.

Both are exact (equal to ``naive`` on the current text). The registered encoders
``appending`` and ``prepending`` encode through them; their ``appendable()`` /
``prependable()`` methods hand out a fresh incremental encoder (what the
"appending" / "prepending" capabilities promise).

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> v = Vocabulary.from_ranks([b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"]
...                           + [bytes([i]) for i in range(256) if i not in b"abc"], name="seed")
>>> enc = AppendableEncoder(v)
>>> counts = [enc.push(ch) for ch in b"abacbb"]
>>> counts  # ab a cb -> ab acbb: appending can lower the count
[1, 1, 2, 2, 3, 2]
>>> [v.tokens[t] for t in enc.encode()]
[b'ab', b'acbb']
"""

from __future__ import annotations

import numpy as np
from .kernels.jit import njit

from .kernels.compiled import compile_vocabulary, require_ordered_merges
from bpebench.errors import BpebenchError
from .core.encoder import Encoder, as_byte_array, check_encodable
from .kernels.matching import Trie, build_matcher
from .core.registry import register_encoder
from .table import extend_last_tokens, unwind
from .formats.vocabulary import Vocabulary


@njit(cache=True)
def _extend(cells, rows, pairs, pair_filter, pair_floor, data, lo, hi, last, counts, buf, leftward):
    """Fill the table for positions ``lo+1 .. hi``; return the count at ``hi``. Plain array
    arguments keep numba's per-call dispatch cheap (a push of one byte is mostly this call)."""
    extend_last_tokens(Trie(cells), rows, pairs, pair_filter, pair_floor, data, 0, lo, hi, last, counts, buf,
                       leftward)
    return counts[hi]


class _IncrementalTable:
    """The last-token table of a growing byte string (``leftward``: stored back to front)."""

    _leftward = False

    def __init__(self, vocabulary: Vocabulary, *, capacity: int = 256) -> None:
        require_ordered_merges(vocabulary, type(self).__name__)
        self.vocabulary = vocabulary
        self._matcher = m = build_matcher(vocabulary)
        self._cells = (m.forward if self._leftward else m.backward).cells
        self._rows, self._pairs, self._filter, self._floor = m.rows, m.pairs, m.pair_filter, m.pair_floor
        byte_token = compile_vocabulary(vocabulary).byte_token
        self._byte_ok = (byte_token >= 0).tolist()
        self._data = np.empty(max(capacity, 1), dtype=np.uint8)
        self._last = np.empty(len(self._data) + 1, dtype=np.int32)
        self._counts = np.zeros(len(self._data) + 1, dtype=np.int32)
        self._buf = np.empty(max(self._matcher.max_token_len, 1), dtype=np.int32)
        self._len = 0

    def __len__(self) -> int:
        """Number of bytes in the current text."""
        return self._len

    def _grow(self, needed: int) -> None:
        cap = len(self._data)
        while cap < needed:
            cap *= 2
        for name in ("_data", "_last", "_counts"):
            old = getattr(self, name)
            new = np.empty(cap + (name != "_data"), dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _extend(self, data) -> int:
        lo = self._len
        if isinstance(data, int):  # the one-byte fast path: no array, no scan
            if not (0 <= data < 256 and self._byte_ok[data]):
                if 0 <= data < 256:
                    check_encodable(self.vocabulary, np.array([data], dtype=np.uint8))
                raise BpebenchError(f"cannot push {data}: a byte is 0..255")
            if lo + 1 > len(self._data):
                self._grow(lo + 1)
            self._data[lo] = data
            k = 1
        else:
            arr = as_byte_array(data)
            k = len(arr)
            if k == 0:
                return int(self._counts[lo])
            check_encodable(self.vocabulary, arr)
            if lo + k > len(self._data):
                self._grow(lo + k)
            self._data[lo : lo + k] = arr[::-1] if self._leftward else arr
        count = _extend(self._cells, self._rows, self._pairs, self._filter, self._floor, self._data, lo, lo + k,
                        self._last, self._counts, self._buf, self._leftward)
        self._len = lo + k
        return count

    def token_count(self) -> int:
        """Exact token count of the current text. O(1)."""
        return int(self._counts[self._len])

    def prefix_counts(self) -> np.ndarray:
        """Read-only view: ``[k]`` is the token count of the text when it had ``k`` bytes."""
        view = self._counts[: self._len + 1]
        view.flags.writeable = False
        return view

    def count_at(self, n_bytes: int) -> int:
        """Token count of the text as it was when it had ``n_bytes`` bytes. O(1)."""
        if not 0 <= n_bytes <= self._len:
            raise IndexError(f"n_bytes {n_bytes} outside 0..{self._len}")
        return int(self._counts[n_bytes])

    def truncate(self, n_bytes: int) -> None:
        """Go back to the text as it was when it had ``n_bytes`` bytes. O(1)."""
        if not 0 <= n_bytes <= self._len:
            raise IndexError(f"n_bytes {n_bytes} outside 0..{self._len}")
        self._len = n_bytes

    def text(self) -> bytes:
        stored = self._data[: self._len]
        return (stored[::-1] if self._leftward else stored).tobytes()

    def encode(self) -> list[int]:
        """The valid encoding of the current text."""
        out = np.empty(self._len, dtype=np.int32)
        n = unwind(self._matcher.rows, self._last, 0, self._len, out, 0)
        ids = out[:n]
        return (ids[::-1] if self._leftward else ids).tolist()


class AppendableEncoder(_IncrementalTable):
    """Exact token count after every appended byte (see the module docstring)."""

    def push(self, data: int | bytes) -> int:
        """Append a byte (int) or bytes; return the new token count."""
        return self._extend(data)


class PrependableEncoder(_IncrementalTable):
    """Exact token count after every prepended byte; ``truncate(n)`` keeps the last ``n`` bytes."""

    _leftward = True

    def prepend(self, data: int | bytes) -> int:
        """Put a byte (int) or bytes in front of the text; return the new token count."""
        return self._extend(data)


@register_encoder
class AppendingEncoder(Encoder):
    """Encodes by pushing the bytes through an :class:`AppendableEncoder`."""

    name = "appending"
    summary = "exact: last-token table extended byte by byte; exact count after every appended byte (numba)"
    capabilities = frozenset({"exact", "appending"})
    speed_rank = 35
    needs_ordered_merges = True

    def appendable(self) -> AppendableEncoder:
        """A fresh, empty incremental encoder for this vocabulary."""
        return AppendableEncoder(self.vocabulary)

    def encode(self, data: bytes) -> list[int]:
        enc = AppendableEncoder(self.vocabulary, capacity=len(data))
        enc.push(data)
        return enc.encode()

    def count(self, data: bytes) -> int:
        return AppendableEncoder(self.vocabulary, capacity=len(data)).push(data)


@register_encoder
class PrependingEncoder(Encoder):
    """Encodes by prepending the bytes (last byte first) through a :class:`PrependableEncoder`."""

    name = "prepending"
    summary = "exact: first-token table extended to the left; exact count after every prepended byte (numba)"
    capabilities = frozenset({"exact", "prepending"})
    speed_rank = 36
    needs_ordered_merges = True

    def prependable(self) -> PrependableEncoder:
        """A fresh, empty incremental encoder for this vocabulary."""
        return PrependableEncoder(self.vocabulary)

    def encode(self, data: bytes) -> list[int]:
        enc = PrependableEncoder(self.vocabulary, capacity=len(data))
        enc.prepend(data)
        return enc.encode()

    def count(self, data: bytes) -> int:
        return PrependableEncoder(self.vocabulary, capacity=len(data)).prepend(data)
