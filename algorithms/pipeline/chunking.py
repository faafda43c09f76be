"""Chunking operations: split after n tokens, count a range, count up to a limit.

The seed paper's motivating problems. Each function takes ``encoder_or_tokenizer``:

* an :class:`~bpebench.algorithms.core.encoder.Encoder`: the text is raw bytes (a ``str`` is
  UTF-8 encoded and positions are *bytes*), no pre-tokenization;
* a :class:`~bpebench.algorithms.pipeline.tokenizer.Tokenizer`: the text is a ``str``, positions are
  *characters*, and counts are those of ``tokenizer.count`` (normalizer,
  pre-tokenizer, whole-piece lookup, then the encoder per piece).

``split_at_tokens(text, n, encoder_or_tokenizer=...)``
    The longest prefix ending on a character boundary whose *own* encoding has at
    most ``n`` tokens (same type as ``text``). Not "the first n tokens of the
    whole text": tokens need not start or end on character boundaries, so cutting
    the full encoding and backing off can return much less (or nothing, on a
    crafted text). With an exact Encoder the answer is exact: an
    ``AppendableEncoder`` gives the count of every prefix as bytes are pushed
    (in doubling blocks), and pushing stops once no longer prefix can come back
    under the limit: a prefix longer than ``p`` has at least ``1 + min count``
    over the ``max_token_len`` prefixes ending at ``p`` (the token covering byte
    ``p`` starts inside that window). Cost O(answer + max_token_len), however
    long the text. With a Tokenizer, pieces are counted one by one until the
    count passes ``n``; the piece at the split point and the one before it are
    re-tokenized from the earlier piece's start (a regex with lookahead splits a
    truncated text differently there), positions inside a long piece come from
    the byte-level split, and the returned prefix's count is checked directly.

``count_range(text, start, end, encoder_or_tokenizer=...)`` / ``RangeCounter``
    Exact counts of ``text[start:end]``. Encoders use an
    :class:`~bpebench.algorithms.interval.IntervalEncoding` (typically O(1) per query
    after O(n) preprocessing); Tokenizers add whole-piece counts in between and
    re-tokenize the two edge stretches.

``count_till_limit(text, limit, encoder_or_tokenizer=...)``
    The count of ``text`` if it is at most ``limit``, else None, stopping as soon
    as the count provably exceeds the limit (same window bound as above; for a
    Tokenizer, piece counts only grow).

Guarantees: a chunk from ``split_at_tokens`` always has at most ``n`` tokens and
is non-empty whenever some non-empty prefix fits. Maximality is exact for exact
encoders; with a Tokenizer it assumes the pre-tokenizer splits a truncated text
like the full one except in the last two pieces (true for the tiktoken / HF
patterns); with approximate encoders (whose counts need not follow BPE's
structure) the prefix is found by galloping and bisection, maximal when their
count grows with the prefix.

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> from bpebench.algorithms.core.registry import make_encoder
>>> v = Vocabulary.from_ranks([bytes([i]) for i in range(256)] + [b"\\xc3\\xa9", b"a\\xc3", b"a\\xc3\\xa9"], name="t")
>>> enc = make_encoder("backtracking", v)
>>> split_at_tokens("aéaé", 1, encoder_or_tokenizer=enc)   # "aé" is one token
'aé'
>>> count_till_limit(b"aaaa", 3, encoder_or_tokenizer=enc) is None
True
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Callable, Union

import numpy as np

from ..appending import AppendableEncoder
from bpebench.errors import BpebenchError
from ..interval import IntervalEncoding
from ..core.encoder import Encoder, as_byte_array
from ..kernels.matching import build_matcher
from .pretokenize import NORMALIZERS

Text = Union[str, bytes]
_SHORT_REGION = 64  # characters re-tokenized one prefix at a time around a Tokenizer split


# ----------------------------------------------------------------------------- helpers
def _resolve(encoder_or_tokenizer):
    if isinstance(encoder_or_tokenizer, Encoder):
        return encoder_or_tokenizer, None
    if hasattr(encoder_or_tokenizer, "encode_ordinary") and hasattr(encoder_or_tokenizer, "pretokenizer"):
        return None, encoder_or_tokenizer  # a Tokenizer (it imports this module, not the other way round)
    raise BpebenchError(
        f"expected an Encoder or a Tokenizer, got {type(encoder_or_tokenizer).__name__}"
    )


def _as_bytes(text: Text) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)


def _char_boundaries(data: np.ndarray) -> np.ndarray:
    """bool[len + 1]: True where a UTF-8 character may start (or at the end)."""
    out = np.ones(len(data) + 1, dtype=bool)
    out[:-1] = (data & 0xC0) != 0x80
    return out


def _galloping_split(positions, fits: Callable[[int], bool]) -> int:
    """The largest of the sorted candidate ``positions`` (``positions[0]`` fits) for which
    ``fits`` holds, by galloping then bisection: O(log answer) calls, exact when ``fits``
    holds on an initial run of the positions."""
    lo, step, last = 0, 1, len(positions) - 1
    while True:
        idx = min(lo + step, last)
        if idx == lo:
            return int(positions[lo])
        if fits(int(positions[idx])):
            lo = idx
            step *= 2
        else:
            hi = idx
            break
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(int(positions[mid])):
            lo = mid
        else:
            hi = mid
    return int(positions[lo])


# ----------------------------------------------------------------------------- raw bytes (Encoder)
def _split_bytes_exact(vocabulary, data: np.ndarray, n: int) -> int:
    """Byte length of the longest character-boundary prefix with at most ``n`` BPE tokens."""
    if n <= 0 or len(data) == 0:
        return 0
    max_len = max(build_matcher(vocabulary).max_token_len, 1)
    boundary = _char_boundaries(data)
    total = len(data)
    enc = AppendableEncoder(vocabulary, capacity=min(total, 4 * n + 2 * max_len) + 1)
    best, last_low, pushed = 0, 0, 0
    block = 4 * n + 2 * max_len  # about the answer plus the window: usually one block
    while pushed < total:
        new = min(total, pushed + block)
        enc.push(data[pushed:new])
        counts = enc.prefix_counts()[pushed + 1 : new + 1]
        positions = np.arange(pushed + 1, new + 1)
        ok = np.flatnonzero((counts <= n) & boundary[pushed + 1 : new + 1])
        if len(ok):
            best = int(positions[ok[-1]])
        low = np.flatnonzero(counts < n)
        if len(low):
            last_low = int(positions[low[-1]])
        pushed = new
        if pushed - last_low >= max_len:
            break  # every prefix in the last window has >= n tokens: longer ones have > n
        block *= 2
    return best


def _split_bytes(encoder: Encoder, data: np.ndarray, n: int) -> int:
    if n <= 0 or len(data) == 0:
        return 0
    if encoder.is_exact():
        return _split_bytes_exact(encoder.vocabulary, data, n)
    raw = data.tobytes()
    return _galloping_split(np.flatnonzero(_char_boundaries(data)), lambda p: encoder.count(raw[:p]) <= n)


def _count_till_limit_bytes(encoder: Encoder, data: np.ndarray, limit: int) -> int | None:
    total = len(data)
    if not encoder.is_exact():
        c = encoder.count(data.tobytes())
        return c if c <= limit else None
    if total == 0:
        return 0 if limit >= 0 else None
    max_len = max(build_matcher(encoder.vocabulary).max_token_len, 1)
    enc = AppendableEncoder(encoder.vocabulary, capacity=min(total, 4 * max(limit, 1) + 2 * max_len))
    pushed, last_low = 0, 0
    block = 4 * max(limit, 1) + 2 * max_len
    while pushed < total:
        new = min(total, pushed + block)
        enc.push(data[pushed:new])
        low = np.flatnonzero(enc.prefix_counts()[pushed + 1 : new + 1] < limit)
        if len(low):
            last_low = pushed + 1 + int(low[-1])
        pushed = new
        if pushed < total and pushed - last_low >= max_len:
            return None  # the whole text needs more than `limit` tokens
        block *= 2
    count = enc.token_count()
    return count if count <= limit else None


# ----------------------------------------------------------------------------- Tokenizer
def _normalizer_is_identity(tokenizer) -> bool:
    return tokenizer.vocabulary.normalizer == "none"


def _pieces_with_offsets(tokenizer, text: str) -> tuple[list[str], list[int]] | None:
    """Pieces of ``text`` and their start offsets; None when they do not tile the text."""
    pieces = tokenizer.pretokenizer.split(text)
    starts, pos = [], 0
    for piece in pieces:
        starts.append(pos)
        pos += len(piece)
    if pos != len(text) or "".join(pieces) != text:
        return None
    return pieces, starts


def _piece_counts(tokenizer, pieces: list[str]) -> np.ndarray:
    """Token count of each piece exactly as ``tokenizer.encode_ordinary`` encodes it."""
    vocab = tokenizer.vocabulary
    lookup = vocab.token_id if vocab.whole_piece_lookup else None
    encoder = tokenizer.encoder
    hidden = vocab.hidden
    counts = np.empty(len(pieces), dtype=np.int64)
    for i, piece in enumerate(pieces):
        data = piece.encode("utf-8", "surrogatepass")
        token = lookup(data) if lookup is not None else None
        if token is not None:
            ids = [token]
        elif hidden:
            ids = encoder.encode(data)
        else:
            counts[i] = encoder.count(data)
            continue
        counts[i] = sum(len(vocab.tokens[t]) if t in hidden else 1 for t in ids)
    return counts


def _split_tokenizer(tokenizer, text: str, n: int) -> int:
    """Character length of the longest prefix with ``tokenizer.count(prefix) <= n``."""
    if n <= 0 or not text:
        return 0
    count = tokenizer.count
    if not _normalizer_is_identity(tokenizer):
        return _galloping_split(range(len(text) + 1), lambda p: count(text[:p]) <= n)
    window = min(len(text), 4 * n + 64)
    while True:
        chunk = text[:window]
        tiled = _pieces_with_offsets(tokenizer, chunk)
        if tiled is None:  # a pre-tokenizer that drops characters: no piece arithmetic
            return _galloping_split(range(len(text) + 1), lambda p: count(text[:p]) <= n)
        pieces, starts = tiled
        cum = np.cumsum(_piece_counts(tokenizer, pieces))
        over = np.flatnonzero(cum > n)
        whole = window == len(text)
        if len(over) == 0 and whole:
            return len(text)
        # the last two pieces of a window may be cut short: decide only before them
        if len(over) and (whole or over[0] < len(pieces) - 2):
            k = int(over[0])
            break
        window = min(len(text), window * 2)
    region_start = starts[k - 1] if k >= 1 else 0
    base = int(cum[k - 2]) if k >= 2 else 0
    region_end = starts[k] + len(pieces[k])

    def fits(p: int) -> bool:
        return base + count(text[region_start:p]) <= n

    if region_end - region_start > _SHORT_REGION:
        # a long piece: the byte-level split of piece k gives the candidate
        budget = n - (int(cum[k - 1]) if k >= 1 else 0)
        piece_bytes = as_byte_array(pieces[k].encode("utf-8", "surrogatepass"))
        cut = _split_bytes(tokenizer.encoder, piece_bytes, budget)
        p = starts[k] + len(piece_bytes[:cut].tobytes().decode("utf-8", "surrogatepass"))
        if p > starts[k] and fits(p):
            return p
        highest = min(p, region_end)
        lowest = max(region_start, highest - _SHORT_REGION)
    else:
        # from the end of piece k: alone, a prefix can take fewer tokens than inside the text
        # ("  " is one piece at the end of a text, two before "0" in cl100k's pattern)
        highest, lowest = region_end, region_start
    for p in range(highest, lowest, -1):
        if fits(p):
            return p
    # nothing in the stretch fits: fall back to the last piece start that does
    for p in (starts[k], region_start):
        if p == 0 or count(text[:p]) <= n:
            return p
    return _galloping_split(range(region_start + 1), lambda p: count(text[:p]) <= n)


def _count_till_limit_tokenizer(tokenizer, text: str, limit: int) -> int | None:
    if tokenizer.vocabulary.normalizer not in NORMALIZERS:  # a component pipeline: no piece arithmetic
        total = tokenizer.count(text)
        return total if total <= limit else None
    normalize = NORMALIZERS[tokenizer.vocabulary.normalizer][0]
    pieces = tokenizer.pretokenizer.split(normalize(text)) if text else []
    total = 0
    batch = max(16, limit // 2)
    for i in range(0, len(pieces), batch):
        total += int(_piece_counts(tokenizer, pieces[i : i + batch]).sum())
        if total > limit:
            return None  # piece counts only add up
    return total


# ----------------------------------------------------------------------------- public API
def split_at_tokens(text: Text, n: int, *, encoder_or_tokenizer) -> Text:
    """The longest prefix of ``text`` on a character boundary whose own encoding has at
    most ``n`` tokens (see the module docstring). Returns the same type as ``text``."""
    encoder, tokenizer = _resolve(encoder_or_tokenizer)
    if tokenizer is not None:
        if not isinstance(text, str):
            raise BpebenchError("split_at_tokens with a Tokenizer needs a str (decode the bytes first)")
        return text[: _split_tokenizer(tokenizer, text, n)]
    data = as_byte_array(_as_bytes(text))
    cut = _split_bytes(encoder, data, n)
    prefix = data[:cut].tobytes()
    return prefix.decode("utf-8", "surrogatepass") if isinstance(text, str) else prefix


def count_till_limit(text: Text, limit: int, *, encoder_or_tokenizer) -> int | None:
    """The token count of ``text`` if it is at most ``limit``, else None (stops early)."""
    encoder, tokenizer = _resolve(encoder_or_tokenizer)
    if tokenizer is not None:
        if not isinstance(text, str):
            raise BpebenchError("count_till_limit with a Tokenizer needs a str")
        return _count_till_limit_tokenizer(tokenizer, text, limit)
    return _count_till_limit_bytes(encoder, as_byte_array(_as_bytes(text)), limit)


class RangeCounter:
    """Exact token counts of ``text[start:end]`` for many ranges of one text.

    With an exact Encoder: an IntervalEncoding of the bytes (positions are bytes; a
    ``str`` is UTF-8 encoded). With a Tokenizer (``str``, positions are characters):
    whole-piece counts in the middle plus the two edge stretches re-tokenized.
    """

    def __init__(self, text: Text, *, encoder_or_tokenizer) -> None:
        self.encoder, self.tokenizer = _resolve(encoder_or_tokenizer)
        self.text = text
        if self.tokenizer is not None:
            if not isinstance(text, str):
                raise BpebenchError("RangeCounter with a Tokenizer needs a str")
            self.length = len(text)
            tiled = _pieces_with_offsets(self.tokenizer, text) if _normalizer_is_identity(self.tokenizer) else None
            if tiled is not None:
                self._starts = tiled[1] + [len(text)]
                self._cum = np.concatenate([[0], np.cumsum(_piece_counts(self.tokenizer, tiled[0]))]).tolist()
            else:
                self._starts = None
            return
        self._data = _as_bytes(text)
        self.length = len(self._data)
        self._interval = IntervalEncoding(self.encoder, self._data) if self.encoder.is_exact() else None

    def count(self, start: int, end: int) -> int:
        if not 0 <= start <= end <= self.length:
            raise BpebenchError(f"range {start}..{end} is not inside the text (0..{self.length}) or is reversed")
        if self.tokenizer is None:
            if self._interval is not None:
                return self._interval.count(start, end)
            return self.encoder.count(self._data[start:end])
        count, text = self.tokenizer.count, self.text
        starts = self._starts
        if starts is None or end - start <= _SHORT_REGION:
            return count(text[start:end])
        a = bisect_right(starts, start) - 1  # piece holding `start`
        b = bisect_right(starts, end - 1) - 1  # piece holding the last character
        if b - a < 4:
            return count(text[start:end])
        # left stretch: from `start` to the start of piece a+2, if its pieces end there too
        left_end = starts[a + 2]
        left = self.tokenizer.pretokenizer.split(text[start : starts[a + 3]])
        lengths = np.cumsum([len(p) for p in left]).tolist()
        if left_end - start not in lengths:
            return count(text[start:end])
        left_count = int(_piece_counts(self.tokenizer, left[: lengths.index(left_end - start) + 1]).sum())
        right_start = starts[b - 1]
        middle = self._cum[b - 1] - self._cum[a + 2]  # pieces a+2 .. b-2
        return left_count + middle + count(text[right_start:end])


_RANGE_COUNTERS: dict[tuple, RangeCounter] = {}


def count_range(text: Text, start: int, end: int, *, encoder_or_tokenizer) -> int:
    """Exact token count of ``text[start:end]``; the preprocessing of ``text`` is kept for
    the last few texts, so repeated calls on one text are typically O(1)."""
    key = (id(encoder_or_tokenizer), text)
    counter = _RANGE_COUNTERS.get(key)
    if counter is None:
        if len(_RANGE_COUNTERS) >= 4:
            _RANGE_COUNTERS.pop(next(iter(_RANGE_COUNTERS)))
        counter = _RANGE_COUNTERS[key] = RangeCounter(text, encoder_or_tokenizer=encoder_or_tokenizer)
    return counter.count(start, end)
