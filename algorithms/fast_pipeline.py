"""Fused pipeline: pre-tokenize and BPE-encode a whole text in one numba call. Exact.

The Tokenizer's reference path is three steps with Python in between:
``regex.findall`` -> one ``bytes`` object per piece -> the encoder. Seed 002's
lesson is that the pre-tokenizer, not BPE, is the bottleneck, and seed 001's that
backtracking BPE is linear. Here both run in one compiled loop over the UTF-8
bytes of the text:

1. decode UTF-8 and classify every character (``utf8_class_words``);
2. find where the piece that starts here ends (``next_piece_end``; the
   pre-tokenizer of :mod:`algorithms.pretokenize_compiled`, identical to
   ``regex.findall`` with the vocabulary's pattern);
3. encode the piece. Most pieces of natural text are one token: the longest token
   matching at the piece start covers the piece, and since nothing precedes it
   in the piece, backtracking would emit it as is (one trie walk, no call).
   Other pieces come from the piece cache if seen before, else from the
   backtracking kernel of :mod:`algorithms.backtracking`;
4. append the ids to a preallocated ``int32`` output (a text of ``n`` bytes has at
   most ``n`` tokens).

Whole-piece lookup (tiktoken's "a piece that is a token is emitted as is") only
differs from BPE for tokens BPE cannot produce; when the vocabulary has such
tokens every piece is first looked up in the bytes table.

Piece cache (``new_piece_cache``): words that need more than one token repeat in
natural text, and backtracking them costs several compatibility checks. A slot
of a fixed-size, direct-mapped table (``int32[slots, 16]``, one 64-byte cache
line) holds a piece of at most 16 bytes and its at most 11 ids. A slot is found
by a hash of the bytes and used only if its stored bytes equal the piece, so a
collision costs a miss, never a wrong id; a new piece overwrites the slot. Memory
is bounded by the table (64 bytes per slot). The cache lives for one call (one
text, or one batch), so results never depend on earlier calls.

Complexity: O(n) for a text of n bytes (pre-tokenizer and backtracking are both
linear; a cache probe is O(1)). Exact: same ids as the regex pre-tokenizer
followed by any exact encoder (tested against ``naive`` and tiktoken).
``NUMBA_DISABLE_JIT=1`` runs the same code as plain Python.

numba API::

    encode_utf8(plan, data, cache, out) -> n_out
    encode_utf8_batch(plan, data, text_offsets, cache, out, out_offsets) -> n_out
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from .backtracking import backtrack_piece
from .compiled import bytes_lookup
from .matching import Matcher
from .pretokenize_compiled import char_nbytes, next_piece_end, utf8_class_words

CACHE_ROW = 16  # int32 per slot: 4 words of piece bytes, 1 word length | count << 8, 11 ids
CACHE_MAX_BYTES = 16
CACHE_MAX_IDS = CACHE_ROW - 5
DEFAULT_CACHE_SLOTS = 4096  # 256 kB


class Plan(NamedTuple):
    """Everything the fused kernel reads about one vocabulary, as one numba argument."""

    matcher: Matcher
    pattern_id: int
    stage1: np.ndarray  # int32: character class table, first level
    stage2: np.ndarray  # uint16: second level
    whole_piece: bool  # look every piece up as a whole token first
    bytes_slots: np.ndarray  # int32: the bytes -> id table of ``Tables``
    token_bytes: np.ndarray  # uint8
    token_start: np.ndarray  # int64


def new_piece_cache(slots: int) -> np.ndarray:
    """An empty piece cache with ``slots`` slots (rounded up to a power of two; 0 = no cache)."""
    if slots <= 0:
        return np.zeros((0, CACHE_ROW), dtype=np.int32)
    size = 1
    while size < slots:
        size *= 2
    return np.zeros((size, CACHE_ROW), dtype=np.int32)


# ----------------------------------------------------------------------------- piece cache
@njit(cache=True, inline="always")
def _piece_key(data, start, end):
    """The piece's bytes (at most 16) as four little-endian int32 words, zero padded."""
    w0 = np.int32(0)
    w1 = np.int32(0)
    w2 = np.int32(0)
    w3 = np.int32(0)
    for i in range(end - start):
        b = np.int32(data[start + i]) << np.int32(8 * (i & 3))
        q = i >> 2
        if q == 0:
            w0 |= b
        elif q == 1:
            w1 |= b
        elif q == 2:
            w2 |= b
        else:
            w3 |= b
    return w0, w1, w2, w3


@njit(cache=True, inline="always")
def _slot(w0, w1, w2, w3, length, n_slots):
    lo = np.uint64(np.uint32(w0)) | (np.uint64(np.uint32(w1)) << np.uint64(32))
    hi = np.uint64(np.uint32(w2)) | (np.uint64(np.uint32(w3)) << np.uint64(32))
    h = (lo * np.uint64(0x9E3779B97F4A7C15)) ^ ((hi + np.uint64(length)) * np.uint64(0xC2B2AE3D27D4EB4F))
    return np.int64(h >> np.uint64(32)) & (n_slots - 1)


@njit(cache=True)
def _encode_piece_cached(plan, data, start, end, dead, out, n_out, cache):
    """Ids of a piece of 2..16 bytes from the cache, or from backtracking (then cached)."""
    length = end - start
    w0, w1, w2, w3 = _piece_key(data, start, end)
    row = cache[_slot(w0, w1, w2, w3, length, cache.shape[0])]
    meta = row[4]
    if (meta & 255) == length and row[0] == w0 and row[1] == w1 and row[2] == w2 and row[3] == w3:
        count = meta >> 8
        for j in range(count):
            out[n_out + j] = row[5 + j]
        return n_out + count
    new_n_out = backtrack_piece(plan.matcher, data, start, end, dead, out, n_out)
    count = new_n_out - n_out
    if count <= CACHE_MAX_IDS:
        row[0] = w0
        row[1] = w1
        row[2] = w2
        row[3] = w3
        row[4] = length | (count << 8)
        for j in range(count):
            row[5 + j] = out[n_out + j]
    return new_n_out


# ----------------------------------------------------------------------------- the fused loop
@njit(cache=True, inline="always")
def _whole_piece_token(cells, data, start, end):
    """The token spelled by all of ``data[start:end]`` in the forward trie, or -1.

    Same walk as ``matching.longest_match`` but it only answers "is the whole piece
    one token", so it needs no token-length lookup (one cache miss less per piece)."""
    node = 0
    for i in range(start, end):
        slot = cells[node, 0] + data[i]
        if cells[slot, 1] != node:
            return -1
        node = slot
    return cells[node, 2]


@njit(cache=True)
def _encode_text(plan, data, start, end, dead, cache, out, n_out):
    """Pre-tokenize ``data[start:end]`` (whole characters) and append the ids of every piece."""
    cls = utf8_class_words(data[start:end], plan.stage1, plan.stage2)
    n_chars = cls.shape[0]
    matcher = plan.matcher
    pattern_id = plan.pattern_id
    use_cache = cache.shape[0] > 0
    char = 0
    piece_start = start
    while char < n_chars:
        piece_end_char = next_piece_end(cls, char, pattern_id)
        piece_end = piece_start
        for k in range(char, piece_end_char):
            piece_end += char_nbytes(cls[k])
        length = piece_end - piece_start
        token = -1
        if plan.whole_piece:
            token = bytes_lookup(plan.bytes_slots, plan.token_bytes, plan.token_start,
                                 data, piece_start, piece_end)
        if token < 0:
            token = _whole_piece_token(matcher.forward.cells, data, piece_start, piece_end)
        if token >= 0:
            out[n_out] = token
            n_out += 1
        elif use_cache and length <= CACHE_MAX_BYTES:
            n_out = _encode_piece_cached(plan, data, piece_start, piece_end, dead, out, n_out, cache)
        else:
            n_out = backtrack_piece(matcher, data, piece_start, piece_end, dead, out, n_out)
        piece_start = piece_end
        char = piece_end_char
    return n_out


@njit(cache=True)
def encode_utf8(plan, data, cache, out):
    """Encode the UTF-8 text ``data`` (uint8) into ``out``; return the number of ids."""
    dead = np.zeros(data.shape[0] + 1, dtype=np.uint8)
    return _encode_text(plan, data, 0, data.shape[0], dead, cache, out, 0)


@njit(cache=True)
def encode_utf8_batch(plan, data, text_offsets, cache, out, out_offsets):
    """Encode each text ``data[text_offsets[i]:text_offsets[i+1]]``; its ids are
    ``out[out_offsets[i]:out_offsets[i+1]]``. Returns the total number of ids."""
    dead = np.zeros(data.shape[0] + 1, dtype=np.uint8)
    n_out = 0
    out_offsets[0] = 0
    for i in range(text_offsets.shape[0] - 1):
        n_out = _encode_text(plan, data, text_offsets[i], text_offsets[i + 1], dead, cache, out, n_out)
        out_offsets[i + 1] = n_out
    return n_out


# ----------------------------------------------------------------------------- Python front end
def supported_pattern(vocab) -> str | None:
    """The compiled pre-tokenizer's name for ``vocab``'s pattern, or None if it has none."""
    from .patterns import PATTERNS
    from .pretokenize_compiled import SUPPORTED

    pattern = vocab.pattern
    if pattern in SUPPORTED:
        return pattern
    for name, regex_text in PATTERNS.items():
        if pattern == regex_text and name in SUPPORTED:
            return name
    return None


def unsupported_reason(vocab) -> str | None:
    """Why the fused pipeline cannot encode ``vocab`` (None when it can)."""
    if supported_pattern(vocab) is None:
        return f"pattern {vocab.pattern!r} has no compiled pre-tokenizer"
    if vocab.hidden:
        return "the vocabulary has hidden helper tokens (SentencePiece byte fallback)"
    return None


class FusedPipeline:
    """Pre-tokenizer + backtracking BPE over one vocabulary, one numba call per text or batch.

    Only the pieces' ids: normalizers and special tokens are the Tokenizer's job.
    ``piece_cache_slots`` sizes the per-call piece cache (0 turns it off).
    """

    def __init__(self, vocabulary, *, piece_cache_slots: int = DEFAULT_CACHE_SLOTS) -> None:
        from .compiled import compile_vocabulary
        from .matching import build_matcher
        from .pretokenize_compiled import PATTERN_IDS, get_tables

        reason = unsupported_reason(vocabulary)
        if reason is not None:
            from .errors import BpebenchError

            raise BpebenchError(f"{vocabulary.name}: no fused pipeline: {reason}")
        self.vocabulary = vocabulary
        tables = compile_vocabulary(vocabulary)
        stage1, stage2 = get_tables()
        # whole-piece lookup differs from BPE only on tokens BPE cannot produce
        whole_piece = bool(vocabulary.whole_piece_lookup and _has_unreachable(vocabulary, tables))
        self.plan = Plan(build_matcher(vocabulary), PATTERN_IDS[supported_pattern(vocabulary)],
                         stage1, stage2, whole_piece, tables.bytes_slots, tables.token_bytes,
                         tables.token_start)
        self.piece_cache_slots = piece_cache_slots
        self._all_bytes_are_tokens = bool((tables.byte_token >= 0).all())

    def _check(self, data: np.ndarray) -> None:
        if not self._all_bytes_are_tokens:
            from .encoder import check_encodable

            check_encodable(self.vocabulary, data)

    def _cache_for(self, n_bytes: int) -> np.ndarray:
        # a text far shorter than the table would only pay for zeroing it
        return new_piece_cache(min(self.piece_cache_slots, n_bytes // 16))

    def encode_utf8(self, data: bytes) -> np.ndarray:
        """int32 ids of the UTF-8 text ``data`` (valid UTF-8: pieces as ``regex`` splits its str)."""
        arr = np.frombuffer(data, dtype=np.uint8)
        self._check(arr)
        out = np.empty(len(arr), dtype=np.int32)
        n = encode_utf8(self.plan, arr, self._cache_for(len(arr)), out)
        return out[:n]

    def encode_utf8_batch(self, texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(ids, offsets): text ``i``'s ids are ``ids[offsets[i]:offsets[i+1]]``."""
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        text_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=text_offsets[1:])
        arr = np.frombuffer(b"".join(texts), dtype=np.uint8)
        self._check(arr)
        out = np.empty(len(arr), dtype=np.int32)
        out_offsets = np.empty(len(texts) + 1, dtype=np.int64)
        n = encode_utf8_batch(self.plan, arr, text_offsets, self._cache_for(len(arr)), out, out_offsets)
        return out[:n], out_offsets


def _has_unreachable(vocabulary, tables) -> bool:
    from .compiled import NEVER

    usable = np.ones(len(tables.priority), dtype=bool)
    usable[list(vocabulary.excluded)] = False
    return bool(((tables.priority >= NEVER) & (tables.token_len > 1) & usable).any())


def fused_pipeline(vocabulary) -> FusedPipeline:
    """The :class:`FusedPipeline` of ``vocabulary`` (memoised on it, per ``whole_piece_lookup``)."""
    memo = vocabulary.__dict__.setdefault("_fused_pipelines", {})
    key = bool(vocabulary.whole_piece_lookup)
    if key not in memo:
        memo[key] = FusedPipeline(vocabulary)
    return memo[key]
