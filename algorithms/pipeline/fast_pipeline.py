"""Fused pipeline: pre-tokenize and BPE-encode a whole text in one numba call. Exact.

The Tokenizer's reference path is three steps with Python in between:
``regex.findall`` -> one ``bytes`` object per piece -> the encoder. Seed 002's
lesson is that the pre-tokenizer, not BPE, is the bottleneck, and seed 001's that
backtracking BPE is linear. Here both run in one compiled call over the UTF-8
bytes of the text:

1. split it into pieces identical to ``regex.findall`` with the vocabulary's pattern. An
   ASCII text (most prose and code) takes the bit-parallel pre-tokenizer of
   :mod:`bpebench.algorithms.pipeline.pretokenize_bits` (class bitmaps 64 bytes at a time,
   every piece start as word algebra), and so does text whose other characters are letters,
   whitespace or punctuation (European, Cyrillic, Greek, CJK, Hebrew, Thai, curly quotes and
   dashes: ``letter_bitmaps`` marks each byte of such a character; the kernel on French faker text
   1.4x faster than over characters, English prose with a dash every few paragraphs 1.2x); text
   with non-ASCII numbers is decoded into class words (``utf8_class_words``), split over its characters when the
   pattern allows, else by the general one of
   :mod:`bpebench.algorithms.pipeline.pretokenize_compiled` (``next_piece_end``, a piece at a time);
2. encode each piece. Most pieces of natural text are one token (95% of English
   prose and code): if the whole piece is a token BPE produces, that token is
   the piece's encoding (BPE of a token's own bytes gives the token), so one
   lookup and no BPE. Pieces of at most 32 bytes are looked up in small-key hash
   tables (one probe: ``short_piece.short_token`` up to 8 bytes,
   ``short_piece.medium_token`` for 9 to 16, ``short_piece.long_token`` for 17 to 32;
   the long table made Cyrillic, Greek and Bengali text 1.07-1.13x faster than a trie
   walk, CJK and Thai level), longer ones by walking the forward trie over the piece. The
   pieces of an ASCII segment are probed as soon as their ends are known, in a loop small
   enough for its values to stay in registers (``_window_from_bits``); on the other paths they go
   64 at a time (``CHUNK``), every probe's table row prefetched before the first is read. The
   piece-cache row of every piece that is not one token is prefetched, so the misses of a text
   the CPU has not seen overlap. A piece of several tokens is first
   looked up in the piece cache (below); if it is new, pieces of at most 24 bytes (16 when they end with a CJK, kana or
   Hangul character, whose runs backtracking takes faster; 32 for every piece when merges run out of
   priority order) run the O(L^2) merge loop (the definition over packed merge ranks, as tiktoken does)
   and longer ones the backtracking kernel of :mod:`bpebench.algorithms.backtracking` (linear,
   so one long piece stays O(n)). The ids of ``WINDOW`` (512) pieces are written together: the
   window's new short pieces first run side by side, up to 16 taking turns in
   :mod:`bpebench.algorithms.kernels.interleaved_merge`, so that the pair-table misses of one
   overlap the work of the others (a window of prose holds about 10 such pieces; the merge
   loop alone went from 500 to 280 ns a new word), the rest one at a time in
   :mod:`bpebench.algorithms.kernels.short_piece`;
3. append the ids to a preallocated ``int32`` output (a text of ``n`` bytes has at
   most ``n`` tokens).

Whole-piece lookup (tiktoken's "a piece that is a token is emitted as is") only
differs from BPE for tokens BPE cannot produce; when the vocabulary has such
tokens every piece is first looked up in the bytes table.

The piece cache (``new_piece_cache``) keeps, across calls, the ids of multi-token pieces
of up to 31 bytes and 8 ids: a direct-mapped table of 64-byte rows (the piece's bytes as four
words, the last one also holding its length and count, its ids), one per thread (the kernel
writes it, so no two threads share one), 32,768 rows (2 MiB) by default. A row is used only when every key
word and the length match, so a hit is the piece's own encoding (BPE of a piece depends on
its bytes alone): exact by construction, and a collision only replaces a row. On unseen
text (warm-up on 200 kB of the same kind) 54% of prose's, 79% of C code's and 84% of
multilingual text's multi-token pieces hit; measured against no cache with the process's
CPU time, interleaved, median of 5: 1.04x prose, 1.11x code, 1.32x multilingual (o200k).
Probing it before the whole-token tables (caching one-token pieces too) was slower on
prose (0.84x): those tables already answer in one probe.

A vocabulary whose pattern has no compiled pre-tokenizer is split by ``regex`` (the
reference itself) and the pieces go through the same compiled stage (``encode_pieces``).
The entry points release the GIL (``nogil``; the ahead-of-time module is built that way),
so threads encode in parallel (:mod:`bpebench.algorithms.pipeline.parallel`).

Without the piece cache, and for pieces longer than its keys, the piece memo is a small
hash table (16 to 4096 slots, at most 128 kB) that lives for one call (one text, or one
whole batch). It remembers where a multi-token piece
of at most 256 bytes has its bytes and ids (in ``data`` and in ``out``, which only
grows during the call), so it holds no copies and can never return stale ids; a hit
is verified by comparing bytes, then the ids are copied. English prose and code repeat 64-70% of
their multi-token pieces (multilingual ``udhr-all``: 31%).

Measured side by side in one process (interleaved rounds of the kernel before and
after each change on the same arrays, best of 11; ``prose-en``, ``code-python`` and
``udhr-all`` on cl100k and o200k):

* the short-piece merge loop plus the 8-byte table, against backtracking for every
  piece and a trie walk for every lookup: 1.10-1.17x on English prose and code,
  1.19-1.27x on ``udhr-all``;
* the piece memo: 1.10-1.32x on prose and code, 1.03-1.13x on ``udhr-all``
  (an earlier cache kept across calls, with its own id storage, was 0.92-1.09x);
* the 16-byte table after that: 1.18-1.22x on prose and code, 1.02-1.08x on ``udhr-all``;
* compiling the loop and the kernels it calls without reference counting (``_nrt=False``,
  two ahead-of-time builds loaded in one process): 1.08-1.15x everywhere, 1.12x on a
  1 MB unsplittable piece;
* building long id lists from shared int objects (``FusedPipeline.id_list``): 1.08-1.19x
  per call on prose and code, 1.03-1.07x on the 1 MB piece (``udhr-all`` keeps ``tolist``);
  interleaved with another library's calls it depends on whether results are kept (see there);
  then writing them into the list in one pass in C (``id_lists.c``, built with the
  ahead-of-time module) instead of numpy's two: 1.11-1.21x on prose and code, 1.09-1.11x
  on the 1 MB piece, 1.03-1.09x on ``udhr-all``, interleaved or not;
* naming a merged token ``rank + token_offset`` instead of reading ``token_of_rank`` in the
  merge loop (tiktoken's vocabularies; ``short_piece.rank_token_offset``): whole kernels,
  two ahead-of-time builds in one process, o200k 1.02-1.05x on prose and code and
  1.06-1.08x on ``udhr-all``, cl100k 0.99-1.06x;
* reusing the thread's output and gather buffers instead of new arrays per call (whole
  calls interleaved with tiktoken's): 1.04-1.08x on o200k prose and code, 1.01-1.05x on cl100k;
* for the 1 MB piece, in ``matching``: the two-byte start table (1.08x, then 1.02-1.08x for
  its base column), 32-byte merge rows holding ``next_prefix`` (1.06x) and ``pair_floor``
  (1.02-1.07x); long pieces skipping the memo saved the 1.1 ms of hashing 1 MB.

Tried and left out: checking whether a multi-token piece is two tokens (longest prefix
token + whole-token rest + compatibility) before the merge loop, 0.75-0.95x; trie rows
of 12 instead of 16 bytes, the tables on 2 MB pages (tried again with interleaved calls,
where cache misses cost most: no change either), and one unaligned 8-byte load instead
of a loop to pack a short piece's bytes, all within 1-4%; scanning one piece ahead to
start the next whole-token read early (in batches, or one piece ahead carrying its row):
0.93-0.97x, the out-of-order core already overlaps it; a branch-free compatibility walk,
0.95x; a pair table at load 0.76 instead of 0.38, 0.98x; skipping the character-length
sum of pieces that end before the next multi-byte character, no change (the 8% that
``prose-en`` seemed to lose to its 575 curly quotes came from how they split, not from
the sum). Reading every table of the plan once after a tiktoken call, to pull it back
into cache, left o200k ``prose-en`` at 8.4 ms against 8.5 ms without (7.2 ms in a loop of
our own calls): the 50 MB of tables sit in the L3 cache either way, and what the other
library's call evicts is our L2 working set, which no bulk read restores.
Tried on 2026-11-23 (kernel against kernel in one process, o200k prose and code, in a loop
and after tiktoken calls): a 256 kB table of the short tokens among the first 8192 ids
(82% of prose's one-token pieces) probed before the 8 MB one, 0.90-0.95x; copying every
table over 200 kB into 2 MB pages (63 MB of ``AnonHugePages`` confirmed), 0.97-1.01x, so
the TLB is not what an interleaved call loses; the 8-byte branch-free pack again, and
inlining ``next_piece_end``, 0.96-1.04x.

The hash lookup for pieces starting with a non-ASCII byte was slower than the trie
walk (which fails after a byte or two on pieces that are not tokens), hence the
ASCII gate. The id-list gather, first measured for every output, gave 0.91-1.21x:
it loses on outputs that are mostly byte tokens (Python's cached small ints make
``tolist`` cheap there) and on very short ones, which now keep ``tolist``.

Complexity: O(n) for a text of n bytes (pre-tokenizer and backtracking are both
linear; the merge loop is O(L^2) on pieces of L <= 32 bytes, so O(32 n) at worst).
Exact: same ids as the regex pre-tokenizer followed by any exact encoder
(tested against ``naive``, tiktoken and the golden ids). ``NUMBA_DISABLE_JIT=1``
runs the same code as plain Python.

numba API::

    encode_utf8(plan, data, out, cache) -> n_out
    encode_utf8_batch(plan, data, text_offsets, out, out_offsets, cache) -> n_out
    encode_pieces(plan, data, piece_ends, out, cache) -> n_out
"""

from __future__ import annotations

import functools
import threading
from typing import Callable, NamedTuple, Sequence

import numpy as np
from . import aot as _aot
from ..kernels.jit import njit

from ..backtracking import backtrack_piece
from ..heap import heap_piece
from ..kernels.compiled import bytes_lookup, fnv1a, rank_order_break
from ..kernels.matching import Matcher, spelled_token
from ..kernels.bits import cttz, load_u64, prefetch
from ..kernels.cut_points import can_cut, crossing_set
from .pretokenize_bits import (BITMAP_COLUMNS, LETTERS, OTHERS, REFUSED, ascii_rows_into, bitmap_rows,
                               class_bitmaps, letter_bitmaps_into, piece_starts, piece_starts_into, start_words)
from .pretokenize_compiled import char_nbytes, next_piece_end, utf8_class_words, utf8_classes
from .marker_split import marker_piece_ends
from .transducer_split import split_window
from ..kernels.interleaved_merge import (END, LANE_COLUMNS, LANES, START, TAG, WIDTH, lane_tokens,
                                         merge_pieces_interleaved)
from ..kernels.short_piece import (LONG_TOKEN_BYTES, MEDIUM_TOKEN_BYTES, SHORT_TOKEN_BYTES, long_slot,
                                   long_token_at, long_words, low_bytes, medium_token_at, merge_short_piece,
                                   short_token_at, token_slot)

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
    byte_token: np.ndarray  # int32[256]: the token of each single byte
    short_tokens: np.ndarray  # int64[slots, 2]: ``short_piece.short_tokens``
    medium_tokens: np.ndarray  # int64[slots, 3]: ``short_piece.medium_tokens``
    long_tokens: np.ndarray  # int64[slots, 5]: ``short_piece.long_tokens``
    byte_pairs: np.ndarray  # int64[65536]: byte pairs' ranks and where they start whole (``short_piece.byte_pairs``)
    token_of_rank: np.ndarray  # int32: the token each merge rank forms (``short_piece.token_of_rank``)
    token_offset: int  # ``short_piece.rank_token_offset``: merge rank + this = the token, or TABLE_TOKENS
    short_limit: int  # pieces of at most this many bytes run the merge loop of ``short_piece``
    wide_limit: int  # the same for pieces that end with a character above U+0FFF (``_merge_loop_limit``)
    # merges out of priority order (``kernels.out_of_order``); both empty when they run in order
    live_pair_keys: np.ndarray  # int64: every live merge (left << 32 | right), for ``heap_piece``
    live_pair_vals: np.ndarray  # int32: the token it forms
    crossing: np.ndarray  # uint64: ``cut_points.crossing_set``, where a long piece may be cut
    split: np.ndarray  # uint64: how the kernel splits a text itself (``split_tables``), or empty


#: the arrays of a packed split (:func:`split_tables`), in order, with their dtypes: a pattern
#: transducer's tables (:func:`.pretokenize_transducer.split_arguments`' arrays) and the marker
SPLIT_ARRAYS = (("byte_kinds", np.uint16), ("stage1", np.int32), ("stage2", np.uint16), ("table", np.uint64),
                ("final", np.uint64), ("pairs", np.uint32), ("pair_kind", np.uint16), ("to_pair", np.uint32),
                ("mark_free", np.uint8), ("marker", np.uint8))
#: the scalars after the arrays' (offset, length) pairs in the header
SPLIT_SCALARS = ("start", "n_kinds", "pair_shift", "every")
#: the names of :func:`.pretokenize_transducer.split_arguments`, in its order
_TRANSDUCER_ARGUMENTS = ("byte_kinds", "stage1", "stage2", "table", "final", "start", "n_kinds", "pairs", "pair_shift",
                         "pair_kind", "to_pair", "mark_free")
_SPLIT_SCALARS_AT = 2 * len(SPLIT_ARRAYS)
_SPLIT_HEADER = _SPLIT_SCALARS_AT + len(SPLIT_SCALARS)


def split_tables(splitter=None) -> np.ndarray:
    """How the kernel splits a text itself, in the call that encodes its pieces, where no bit-parallel
    pre-tokenizer applies, packed into one uint64 array (the Plan's ``split``): a pattern transducer's
    tables (``splitter.transducer_arguments``, :mod:`.transducer_split`), or a marker to cut before
    each run of (``splitter.marker_bytes``, UTF-8; before each marker with ``every``:
    :mod:`.marker_split`). Empty for a plan whose pieces come from elsewhere (``splitter`` None).

    One array rather than fourteen leaves: the Plan is every kernel function's argument, passed as
    its leaves, so each leaf costs every call (the kernel on a word 0.90 us with the leaves apart, 0.85
    packed; docs/performance.md).
    Layout: a header of (offset in words, length) per array of :data:`SPLIT_ARRAYS`, then the
    scalars of :data:`SPLIT_SCALARS`; each array's bytes from its offset, padded to whole words.
    :func:`split_views` reads it back."""
    arguments = getattr(splitter, "transducer_arguments", None)
    marker = getattr(splitter, "marker_bytes", ())
    if arguments is None and not len(marker):
        return np.zeros(0, dtype=np.uint64)
    # what is not given (no transducer: a marker only) is empty, or 0
    given = dict(zip(_TRANSDUCER_ARGUMENTS, arguments or ()), marker=marker,
                 every=int(bool(getattr(splitter, "every", False))))
    header, parts, at = [], [], _SPLIT_HEADER
    for name, dtype in SPLIT_ARRAYS:
        values = np.ascontiguousarray(given.get(name, ()), dtype=dtype).ravel()
        words = np.zeros(-(-values.nbytes // 8), dtype=np.uint64)
        words.view(np.uint8)[:values.nbytes] = values.view(np.uint8)
        header += [at, values.shape[0]]
        parts.append(words)
        at += words.shape[0]
    header += [int(given.get(name, 0)) for name in SPLIT_SCALARS]
    return np.concatenate([np.array(header, dtype=np.uint64)] + parts)


@njit(cache=True, inline="always")
def _split_array(packed, i, dtype, itemsize):
    at, length = np.int64(packed[2 * i]), np.int64(packed[2 * i + 1])
    return packed[at:at + (length * itemsize + 7) // 8].view(dtype)[:length]


@njit(cache=True, inline="always")
def split_views(packed):
    """The arrays and scalars of a packed split (:func:`split_tables`), as views of it:
    ``(byte_kinds, stage1, stage2, table, final, start, n_kinds, pairs, pair_shift, pair_kind, to_pair,
    mark_free, marker, every)``, the transducer's in :func:`.transducer_split.split_window`'s order."""
    h = _SPLIT_SCALARS_AT
    return (_split_array(packed, 0, np.uint16, 2), _split_array(packed, 1, np.int32, 4),
            _split_array(packed, 2, np.uint16, 2), _split_array(packed, 3, np.uint64, 8),
            _split_array(packed, 4, np.uint64, 8), np.int64(packed[h]), np.int64(packed[h + 1]),
            _split_array(packed, 5, np.uint32, 4), np.int64(packed[h + 2]), _split_array(packed, 6, np.uint16, 2),
            _split_array(packed, 7, np.uint32, 4), _split_array(packed, 8, np.uint8, 1),
            _split_array(packed, 9, np.uint8, 1), packed[h + 3] != 0)


def splits_itself(plan) -> bool:
    """Whether ``plan``'s kernel splits a text itself (:func:`split_tables`)."""
    return plan.split.shape[0] > 0


#: ``splits_itself`` in the kernel (the Python one never imports numba)
_own_split = njit(cache=True, inline="always")(splits_itself)


#: what the kernel returns when the plan's transducer finds text that no branch of its pattern
#: matches (``regex`` then splits the text: it drops such text, as tiktoken does)
SPLIT_REFUSED = -(1 << 62)


class HeapScratch(NamedTuple):
    """What ``heap_piece`` needs for long pieces when merges run out of priority order (all empty
    otherwise): the live merge table and scratch indexed by position in the text."""

    pair_keys: np.ndarray  # int64
    pair_vals: np.ndarray  # int32
    crossing: np.ndarray  # uint64: ``cut_points.crossing_set``
    token: np.ndarray  # int32[n]
    prev: np.ndarray  # int32[n]
    queue: np.ndarray  # int64[3n + 1]


# ----------------------------------------------------------------------------- the fused loop
#: bounds of the per-call piece memo (slots); a slot is 32 bytes, so at most 128 kB (L2-resident)
_MEMO_MIN_SLOTS = 16
_MEMO_MAX_SLOTS = 4096
#: longer pieces bypass the memo
_MEMO_MAX_PIECE = 256


@njit(cache=True, inline="always")
def _memo_slots(n_bytes):
    """Slots of the piece memo of a call over ``n_bytes`` bytes (rows of 4 int64, all -1 to start
    with: the hash of the piece's bytes, its start in ``data``, the start of its ids in ``out``,
    length << 32 | number of ids). It stores no ids: a memoised piece's ids are still in ``out``
    (append-only within one call), so a hit copies them from there."""
    slots = _MEMO_MIN_SLOTS
    while slots < _MEMO_MAX_SLOTS and slots * 64 < n_bytes:
        slots *= 2
    return slots


@njit(cache=True, inline="always")
def _memo_find(memo, slot, key, data, start, end):
    """The slot's ids (start in ``out``, count) if it holds the piece ``data[start:end]``, else (-1, 0)."""
    length = end - start
    if memo[slot, 0] != key or (memo[slot, 3] >> 32) != length:
        return np.int64(-1), np.int64(0)
    seen = memo[slot, 1]
    for i in range(length):
        if data[seen + i] != data[start + i]:
            return np.int64(-1), np.int64(0)
    return memo[slot, 2], memo[slot, 3] & 0xFFFFFFFF


# ----------------------------------------------------------------------------- the piece cache
#: pieces of at most this many bytes are kept in the piece cache: four packed words, the last one's
#: top byte left for the length and the count. (24 bytes kept words of 12 Cyrillic or Greek letters
#: and a space out: 4% of the Cyrillic pieces of the multilingual stream, 9% of its bytes, sent to
#: backtracking again at every repeat.)
CACHE_MAX_BYTES = 31
#: and at most this many ids (two per int64 word)
CACHE_MAX_IDS = 8
#: words of a piece's key (``_cache_key``)
KEY_WORDS = 4
#: a cache row: 4 key words (the fourth holding bytes 24-30, the length in bits 56-60 and the count
#: of ids minus one in bits 61-63), 4 words of packed ids = one 64-byte line
CACHE_ROW = 8
#: bytes in a CPU cache line (where ``new_piece_cache`` puts each row)
CACHE_LINE = 64
#: the counters row (the cache's last row): hits, misses, pieces looked up
CACHE_HITS, CACHE_MISSES, CACHE_LOOKUPS = 0, 1, 2
_CACHE_M0 = np.uint64(0x9E3779B97F4A7C15)
_CACHE_M1 = np.uint64(0xD6E8FEB86659FD93)
_CACHE_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_CACHE_M3 = np.uint64(0x165667B19E3779F9)
_LENGTH_SHIFT = np.uint64(56)
_COUNT_SHIFT = np.uint64(61)
#: the key bits of a row's fourth word (the count's bits cleared)
_TAIL_KEY = ~(np.uint64(7) << _COUNT_SHIFT)


def check_piece_cache_slots(slots: int) -> None:
    """ValueError unless ``slots`` is 0 or a power of two."""
    if slots < 0 or slots & (slots - 1):
        raise ValueError(f"piece cache slots must be 0 or a power of two, not {slots}")


def new_piece_cache(slots: int) -> np.ndarray:
    """An empty piece cache of ``slots`` rows (a power of two, or 0 for none): int64[slots + 1, 8],
    the last row holding the counters. ``slots * 64`` bytes."""
    check_piece_cache_slots(slots)
    # each row on a cache line of its own: numpy aligns an array to 16 bytes only, and a row across
    # two lines costs two misses (the probe's prefetch fetches the first)
    words = np.zeros((slots + 2) * CACHE_ROW, dtype=np.int64)
    skip = (-words.ctypes.data % CACHE_LINE) // words.itemsize
    return words[skip:skip + (slots + 1) * CACHE_ROW].reshape(slots + 1, CACHE_ROW)


@njit(cache=True, inline="always")
def _pack_word(data, start, end):
    """Up to 8 bytes ``data[start:end]`` (empty if ``end <= start``) as a little-endian uint64."""
    key = np.uint64(0)
    for i in range(max(end - start, 0)):
        key |= np.uint64(data[start + i]) << np.uint64(8 * i)
    return key


@njit(cache=True, inline="always")
def _cache_key(data, start, end):
    """The piece ``data[start:end]`` (at most ``CACHE_MAX_BYTES``) as four packed words."""
    w0 = _pack_word(data, start, min(end, start + 8))
    w1 = _pack_word(data, start + 8, min(end, start + 16))
    w2 = _pack_word(data, start + 16, min(end, start + 24))
    w3 = _pack_word(data, start + 24, end)
    return w0, w1, w2, w3


@njit(cache=True, inline="always")
def _cache_slot(w0, w1, w2, w3, length, mask):
    mixed = (w0 * _CACHE_M0) ^ ((w1 ^ np.uint64(length)) * _CACHE_M1) ^ (w2 * _CACHE_M2) ^ (w3 * _CACHE_M3)
    return np.int64(mixed >> np.uint64(40)) & mask


@njit(cache=True, inline="always")
def _chunk_key(chunk_keys, i):
    """The four key words of the window's piece ``i`` (``_cache_key``'s packing)."""
    return chunk_keys[i, 0], chunk_keys[i, 1], chunk_keys[i, 2], chunk_keys[i, 3]


@njit(cache=True, inline="always")
def _set_chunk_key(chunk_keys, i, w0, w1, w2, w3):
    chunk_keys[i, 0] = w0
    chunk_keys[i, 1] = w1
    chunk_keys[i, 2] = w2
    chunk_keys[i, 3] = w3


@njit(cache=True, inline="always")
def _cache_tail(w3, length):
    """A row's fourth word without its count: the piece's bytes 24-30 and its length."""
    return w3 | (np.uint64(length) << _LENGTH_SHIFT)


@njit(cache=True, inline="always")
def _cache_holds(cache, slot, w0, w1, w2, w3, length):
    """Whether the piece's row holds its ids (``_cache_get`` would hit)."""
    return ((np.uint64(cache[slot, 3]) & _TAIL_KEY) == _cache_tail(w3, length) and np.uint64(cache[slot, 0]) == w0
            and np.uint64(cache[slot, 1]) == w1 and np.uint64(cache[slot, 2]) == w2)


@njit(cache=True, inline="always")
def _cache_get(cache, slot, w0, w1, w2, w3, length, out, n_out):
    """Append the cached ids of the piece to ``out`` and return their count, or -1 on a miss.

    A row is only used when all its key words and the length match, so a hit is the piece's
    own encoding (BPE of a piece depends on its bytes alone)."""
    if not _cache_holds(cache, slot, w0, w1, w2, w3, length):
        return -1
    count = np.int64(np.uint64(cache[slot, 3]) >> _COUNT_SHIFT) + 1
    for i in range(count):
        word = cache[slot, 4 + (i >> 1)]
        out[n_out + i] = (word >> (32 * (i & 1))) & 0xFFFFFFFF
    return count


@njit(cache=True, inline="always")
def _cache_put(cache, slot, w0, w1, w2, w3, length, out, first, count):
    """Keep the ids ``out[first:first+count]`` (1 to ``CACHE_MAX_IDS``) of the piece in its row
    (replacing what was there)."""
    cache[slot, 3] = 0  # a reader on this thread only; cleared first so a half-written row never matches
    cache[slot, 0] = np.int64(w0)
    cache[slot, 1] = np.int64(w1)
    cache[slot, 2] = np.int64(w2)
    for k in range(4):
        low = np.int64(out[first + 2 * k]) if 2 * k < count else 0
        high = np.int64(out[first + 2 * k + 1]) if 2 * k + 1 < count else 0
        cache[slot, 4 + k] = low | (high << 32)
    cache[slot, 3] = np.int64(_cache_tail(w3, length) | (np.uint64(count - 1) << _COUNT_SHIFT))


@njit(cache=True, inline="always")
def _next_piece(cls, char, piece_start, pattern_id, ascii_only):
    """(end byte, end character) of the piece that starts at character ``char`` = byte ``piece_start``."""
    piece_end_char = next_piece_end(cls, char, pattern_id)
    if ascii_only:  # one byte per character
        return piece_start + (piece_end_char - char), piece_end_char
    piece_end = piece_start
    for k in range(char, piece_end_char):
        piece_end += char_nbytes(cls[k])
    return piece_end, piece_end_char


@njit(cache=True, inline="always")
def _merge_loop_limit(short_limit, wide_limit, data, start, end):
    """The longest piece like ``data[start:end]`` that the merge loop takes: ``wide_limit`` when it ends
    with a three-byte character above U+0FFF (CJK, kana, Hangul; in valid UTF-8 the byte three from the
    end is E1-EF only then), whose runs backtracking takes faster, else ``short_limit``."""
    if end - start > wide_limit and end - start >= 3 and data[end - 3] >= 0xE1:
        return wide_limit
    return short_limit


@njit(cache=True, inline="always")
def _bpe_piece(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
               short_limit,
               data, piece_start, piece_end, dead, parts, ranks, heap, out, n_out, cache):
    """Append the ids of a piece that is not one token: the merge loop up to ``short_limit``
    bytes, backtracking (linear) beyond; when merges run out of priority order (``heap``
    scratch given) :func:`_cut_piece` beyond."""
    if piece_end - piece_start <= short_limit:
        return merge_short_piece(byte_token, byte_pairs, pairs, pair_filter, token_of_rank,
                                 token_offset, data, piece_start, piece_end, parts, ranks, out, n_out)
    if heap.queue.shape[0] > 0:
        return _cut_piece(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank,
                          token_offset, short_limit, data, piece_start, piece_end, parts, ranks, heap, out, n_out,
                          cache)
    return backtrack_piece(matcher, data, piece_start, piece_end, dead, out, n_out)


@njit(cache=True, _nrt=False)
def _cut_piece(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
               short_limit, data, piece_start, piece_end, parts, ranks, heap, out, n_out, cache):
    """Append the ids of a long piece when merges run out of priority order: cut where no merge can
    join the two sides (``cut_points``; exact), each part through :func:`_part`. CJK runs fall into
    parts of a character or two, which repeat: the piece cache or the merge loop takes them at a
    fraction of the heap's cost a byte."""
    part = piece_start
    for p in range(piece_start + 1, piece_end - 1):
        if data[p] >= 0xC0 and can_cut(heap.crossing, data, p, piece_end):
            n_out = _part(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank,
                          token_offset, short_limit, data, part, p, parts, ranks, heap, out, n_out, cache)
            part = p
    return _part(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
                 short_limit, data, part, piece_end, parts, ranks, heap, out, n_out, cache)


@njit(cache=True, inline="always")
def _part(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
          short_limit, data, start, end, parts, ranks, heap, out, n_out, cache):
    """Append BPE of the part ``data[start:end]`` of a cut piece: from the piece cache when it holds
    those bytes, else the merge loop up to ``short_limit`` bytes and the heap's loop beyond (kept in
    the cache). A part shares the rows of pieces with the same bytes: a piece's row holds BPE of its
    bytes too, since a piece that is one token is looked up before the cache is."""
    length = end - start
    cache_slots = cache.shape[0] - 1
    cached = cache_slots > 0 and length <= CACHE_MAX_BYTES
    if cached:
        w0, w1, w2, w3 = _cache_key(data, start, end)
        slot = _cache_slot(w0, w1, w2, w3, length, cache_slots - 1)
        count = _cache_get(cache, slot, w0, w1, w2, w3, length, out, n_out)
        if count >= 0:
            return n_out + count
    first = n_out
    if length <= short_limit:
        n_out = merge_short_piece(byte_token, byte_pairs, pairs, pair_filter, token_of_rank,
                                  token_offset, data, start, end, parts, ranks, out, n_out)
    else:
        n_out = heap_piece(matcher, heap.pair_keys, heap.pair_vals, byte_token, data, start, end, heap.token,
                           heap.prev, heap.queue, out, n_out)
    if cached and n_out - first <= CACHE_MAX_IDS:
        _cache_put(cache, slot, w0, w1, w2, w3, length, out, first, n_out - first)
    return n_out


@njit(cache=True, inline="always")
def _several_tokens(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
                    short_limit,
                    data, piece_start, piece_end, dead, memo, parts, ranks, heap, out, n_out, cache, key):
    """Append the ids of a piece that is not one token; returns (new n_out, 1 if the piece cache was
    looked up, 1 if it held the piece). ``key``: the piece's four words as ``_cache_key`` packs them
    when it has at most ``CACHE_MAX_BYTES`` bytes (the chunk's phase one packed them already)."""
    w0, w1, w2, w3 = key
    length = piece_end - piece_start
    cache_slots = cache.shape[0] - 1
    if cache_slots > 0 and length <= CACHE_MAX_BYTES:
        # natural text repeats such pieces across documents as well as within one, and a repeat
        # costs one probe and a copy instead of BPE
        cache_slot = _cache_slot(w0, w1, w2, w3, length, cache_slots - 1)
        count = _cache_get(cache, cache_slot, w0, w1, w2, w3, length, out, n_out)
        if count >= 0:
            return n_out + count, 1, 1
        first = n_out
        n_out = _bpe_piece(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
                           short_limit, data, piece_start, piece_end, dead, parts, ranks, heap, out, n_out, cache)
        if n_out - first <= CACHE_MAX_IDS:
            _cache_put(cache, cache_slot, w0, w1, w2, w3, length, out, first, n_out - first)
        return n_out, 1, 0
    if length > _MEMO_MAX_PIECE:
        # a long piece: it hardly ever repeats, and hashing it would cost 2-3% of its BPE
        return _bpe_piece(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
                          short_limit, data, piece_start, piece_end, dead, parts, ranks, heap, out, n_out, cache), 0, 0
    # without the piece cache (or longer than its keys): the call's memo, which points at the
    # piece's earlier bytes and ids in ``data`` and ``out``
    key = np.int64(fnv1a(data, piece_start, piece_end))
    slot = (key ^ (key >> 29)) & (memo.shape[0] - 1)
    seen_at, count = _memo_find(memo, slot, key, data, piece_start, piece_end)
    if seen_at >= 0:
        for i in range(count):
            out[n_out + i] = out[seen_at + i]
        return n_out + count, 0, 0
    first = n_out
    n_out = _bpe_piece(matcher, pairs, pair_filter, byte_token, byte_pairs, token_of_rank, token_offset,
                       short_limit, data, piece_start, piece_end, dead, parts, ranks, heap, out, n_out, cache)
    memo[slot, 0] = key
    memo[slot, 1] = piece_start
    memo[slot, 2] = first
    memo[slot, 3] = (np.int64(length) << 32) | (n_out - first)
    return n_out, 0, 0


@njit(cache=True, inline="always")
def _count_cache_use(cache, lookups, hits):
    cache_slots = cache.shape[0] - 1
    if cache_slots > 0:
        cache[cache_slots, CACHE_HITS] += hits
        cache[cache_slots, CACHE_MISSES] += lookups - hits
        cache[cache_slots, CACHE_LOOKUPS] += lookups


#: pieces whose ids are written together: the new ones of several tokens among them take turns in
#: the interleaved merge loop
WINDOW = 512
#: lanes a window may fill: its new pieces run in groups of at most ``LANES`` (sixteen in turns
#: overlap the table misses best; more in one group wait longer for their turn)
LANE_ROWS = 4 * LANES


@njit(cache=True, _nrt=False)
def _whole_token(short_tokens, medium_tokens, long_tokens, forward, two_byte_start, data, s, e):
    """(the token whose bytes are ``data[s:e]`` or -1, the piece's four words as ``_cache_key`` packs
    them when it has at most ``LONG_TOKEN_BYTES`` bytes, else zeros)."""
    length = e - s
    w0 = w1 = w2 = w3 = np.uint64(0)
    if length <= MEDIUM_TOKEN_BYTES:
        w0 = _pack_word(data, s, min(e, s + 8))
        w1 = _pack_word(data, s + 8, e)
        if length <= SHORT_TOKEN_BYTES:
            token = short_token_at(short_tokens, w0, length, token_slot(w0, w1, length, short_tokens.shape[0] - 1))
        else:
            token = medium_token_at(medium_tokens, w0, w1, length,
                                    token_slot(w0, w1, length, medium_tokens.shape[0] - 1))
    elif length <= LONG_TOKEN_BYTES:
        w0, w1, w2, w3 = long_words(data, s, e)
        token = long_token_at(long_tokens, data, s, e, long_slot(w0, w1, w2, w3, length, long_tokens.shape[0] - 1))
    else:
        token = spelled_token(forward, two_byte_start, data, s, e)
    return token, w0, w1, w2, w3


@njit(cache=True, inline="always")
def _note_piece(chunk_ints, chunk_keys, m, token, w0, w1, w2, w3, n_candidates, cache, lane_limit, short_limit,
                wide_limit, data, s, e):
    """Keep the window's piece ``m`` (``data[s:e]``, ``token`` or -1): a piece of several tokens keeps its
    key, has its piece-cache row fetched, and goes on the list of pieces that may take a lane (the
    list's new length is returned)."""
    chunk_ints[m, 1] = token
    if token >= 0:
        return n_candidates
    _set_chunk_key(chunk_keys, m, w0, w1, w2, w3)
    length = e - s
    cache_slots = cache.shape[0] - 1
    if cache_slots > 0 and length <= CACHE_MAX_BYTES:
        prefetch(cache, _cache_slot(w0, w1, w2, w3, length, cache_slots - 1) * CACHE_ROW)
        if length <= lane_limit and length <= _merge_loop_limit(short_limit, wide_limit, data, s, e):
            chunk_ints[n_candidates, 2] = m
            n_candidates += 1
    return n_candidates


@njit(cache=True, inline="always")
def _next_bit(starts, word, word_index):
    """(the position of the next set bit of ``starts``, or -1 when there is none; the bits of
    ``starts[word_index]`` still to take; word_index), from ``word``, the bits of
    ``starts[word_index]`` not taken yet."""
    while word == 0 and word_index + 1 < starts.shape[0]:
        word_index += 1
        word = starts[word_index]
    if word == 0:
        return np.int64(-1), word, word_index
    return (word_index << 6) + cttz(word), word & (word - np.uint64(1)), word_index


@njit(cache=True, _nrt=False)
def _window_from_bits(short_tokens, medium_tokens, long_tokens, forward, two_byte_start, data, start, end, s,
                      starts, word, word_index, chunk_ints, chunk_keys, cache, lane_limit, short_limit, wide_limit,
                      piece_ends, given):
    """The first stage of a window of an ASCII segment, whose pieces start at the set bits of ``starts``
    (from ``word``, the bits of ``starts[word_index]`` not taken yet), or end at ``start +
    piece_ends[given:]`` when ``piece_ends`` is not empty (a split made elsewhere, of mostly ASCII
    text): each piece's end and whole-token probe, and for a piece of several tokens its key and
    piece-cache row (:func:`_note_piece`). Returns (pieces, where the next piece starts, word,
    word_index, candidates for a lane, given).

    The loop holds only what pieces of at most ``MEDIUM_TOKEN_BYTES`` need, and probes each piece as
    soon as its end is known, with no prefetch: on English prose and code the rows of the pieces that
    recur sit in the core's caches, and the iterations do not depend on each other, so the CPU overlaps
    the misses of several pieces. Longer pieces, and pieces near the end of ``data``, are listed (from
    the top of ``chunk_ints[:, 2]`` down; their long-table rows prefetched) and probed after the loop.
    Inside ``_encode_chunked``, or with a call or the long tables' probe in it, the loop's values did
    not fit in registers and went to the stack on every piece; this loop took 0.75x the time of
    ``CHUNK``'s two passes on code and 0.83x on prose (the stage table's lookup column)."""
    loads_end = data.shape[0] - 16  # a piece starting here or before can be read as two words
    short_mask = short_tokens.shape[0] - 1
    medium_mask = medium_tokens.shape[0] - 1
    window_start = s
    m = 0
    n_candidates = 0
    n_apart = 0
    while m < WINDOW and s < end:
        if piece_ends.shape[0] > 0:
            e = start + piece_ends[given]
            given += 1
        else:
            position, word, word_index = _next_bit(starts, word, word_index)
            e = end if position < 0 else start + position
        chunk_ints[m, 0] = e
        length = e - s
        if length <= MEDIUM_TOKEN_BYTES and s <= loads_end:
            w0 = load_u64(data, s)
            if length <= SHORT_TOKEN_BYTES:
                w0 = low_bytes(w0, length)
                w1 = np.uint64(0)
                token = short_token_at(short_tokens, w0, length, token_slot(w0, w1, length, short_mask))
            else:
                w1 = low_bytes(load_u64(data, s + 8), length - 8)
                token = medium_token_at(medium_tokens, w0, w1, length, token_slot(w0, w1, length, medium_mask))
            n_candidates = _note_piece(chunk_ints, chunk_keys, m, token, w0, w1, np.uint64(0), np.uint64(0),
                                       n_candidates, cache, lane_limit, short_limit, wide_limit, data, s, e)
        else:
            if length <= LONG_TOKEN_BYTES and s + 32 <= data.shape[0]:
                # fetched now, probed after the loop
                w0, w1, w2, w3 = long_words(data, s, e)
                prefetch(long_tokens, long_slot(w0, w1, w2, w3, length, long_tokens.shape[0] - 1) * 5)
            n_apart += 1
            chunk_ints[WINDOW - n_apart, 2] = m
        s = e
        m += 1
    # lowest list entry first: an entry is read before a candidate can be written over it
    for k in range(WINDOW - n_apart, WINDOW):
        i = chunk_ints[k, 2]
        piece_start = chunk_ints[i - 1, 0] if i > 0 else window_start
        piece_end = chunk_ints[i, 0]
        token, w0, w1, w2, w3 = _whole_token(short_tokens, medium_tokens, long_tokens, forward, two_byte_start,
                                             data, piece_start, piece_end)
        n_candidates = _note_piece(chunk_ints, chunk_keys, i, token, w0, w1, w2, w3, n_candidates, cache,
                                   lane_limit, short_limit, wide_limit, data, piece_start, piece_end)
    return m, s, word, word_index, n_candidates, given


#: pieces of a non-ASCII text (or of a split made elsewhere) whose whole-token probes are computed,
#: and their table rows prefetched, before the first of them is read: on multilingual text, whose
#: pieces recur less, this beat probing each piece at once as ``_window_from_bits`` does
CHUNK = 64


@njit(cache=True, _nrt=False)
def _encode_chunked(plan, data, start, end, starts, offsets, cls, piece_ends, dead, memo, parts, ranks, heap, out,
                    n_out, cache, chunk_ints, chunk_keys, lanes, lookup_only):
    """Append the ids of every piece of ``data[start:end]``, ``WINDOW`` pieces at a time. First every
    piece's end and whole-token probe: in an ASCII segment by :func:`_window_from_bits`, else for each
    ``CHUNK`` of the window every piece's end, packed bytes and whole-token probe slot, with a
    prefetch of that row (one random read of a table of megabytes per piece, which the previous
    pieces' work now hides), then the probes; a piece that is not one token has its piece-cache row
    prefetched. Then the window's short pieces of several tokens that the piece cache
    does not hold run in the lanes of the interleaved merge loop (``lanes``), and last the ids,
    in order, with BPE for the other pieces of several tokens. The pieces start at the set bits of
    ``starts`` (the bit-parallel pre-tokenizer) when it is not empty: bits are bytes of an ASCII
    text, or characters whose byte offsets are ``offsets`` when that is not empty; else, when
    ``piece_ends`` is not empty, they end at ``start + piece_ends[i]`` (a split made elsewhere, e.g.
    by ``regex`` for a pattern with no compiled pre-tokenizer); else they come from the general
    pre-tokenizer over ``cls`` (the class words of the text's characters). ``parts`` and ``ranks``
    are the merge loop's scratch (``short_limit`` slots), ``heap`` the long pieces' when merges run
    out of priority order (:class:`HeapScratch`); ``chunk_ints`` (int64[WINDOW, 3]: end, probe slot then token or
    -2 - lane, and the list of pieces that may take a lane) and ``chunk_keys`` (uint64[WINDOW, 4]:
    a piece of at most 32 bytes packed in four words, the whole-token tables' key and the piece
    cache's) the window's. ``lookup_only`` (the benchmark's stage probe) leaves out the pieces of
    several tokens.

    Allocates nothing, so it is compiled without reference counting (``_nrt=False``):
    with it, every inlined helper and every call that takes an array paid an atomic
    increment and decrement per piece (5% of the time on English prose). Every array the loop
    reads is taken out of the Plan once: reading a NamedTuple field inside the loop costs a
    reference-count increment and decrement per piece."""
    matcher = plan.matcher
    forward, two_byte_start = matcher.forward, matcher.two_byte_start
    short_tokens = plan.short_tokens
    medium_tokens = plan.medium_tokens
    long_tokens = plan.long_tokens
    bytes_slots, token_bytes, token_start = plan.bytes_slots, plan.token_bytes, plan.token_start
    byte_token, token_of_rank = plan.byte_token, plan.token_of_rank
    byte_pairs = plan.byte_pairs
    token_offset = plan.token_offset
    pairs, pair_filter = matcher.pairs, matcher.pair_filter
    whole_piece = plan.whole_piece
    short_limit, wide_limit = plan.short_limit, plan.wide_limit
    short_mask = short_tokens.shape[0] - 1
    medium_mask = medium_tokens.shape[0] - 1
    long_mask = long_tokens.shape[0] - 1
    loads_end = data.shape[0] - 16  # a piece starting here or before can be read as two words
    cache_slots = cache.shape[0] - 1
    lane_limit = min(short_limit, CACHE_MAX_BYTES, WIDTH) if cache_slots > 0 and not lookup_only else 0
    n_words = starts.shape[0]
    word = starts[0] & ~np.uint64(1) if n_words > 0 else np.uint64(0)  # position 0 starts the first piece
    by_char = offsets.shape[0] > 0
    word_index = 0
    pattern_id = plan.pattern_id
    n_given = piece_ends.shape[0]
    given = 0
    # a split made elsewhere takes the window loop too on text that is mostly ASCII
    ends_by_window = n_given > 0 and n_words == 0 and _mostly_ascii(data, start, end)
    char = 0
    hits = 0
    lookups = 0
    piece_start = start
    while piece_start < end:
        m = 0
        s = piece_start
        n_candidates = 0
        if (n_words > 0 and not by_char or ends_by_window) and not whole_piece:
            m, s, word, word_index, n_candidates, given = _window_from_bits(
                short_tokens, medium_tokens, long_tokens, forward, two_byte_start, data, start, end, s, starts,
                word, word_index, chunk_ints, chunk_keys, cache, lane_limit, short_limit, wide_limit,
                piece_ends[:n_given if ends_by_window else 0], given)
        while m < WINDOW and s < end:
            sub_first = m
            sub_start = s
            while m < sub_first + CHUNK and s < end:
                if n_words > 0:
                    position, word, word_index = _next_bit(starts, word, word_index)
                    e = end if position < 0 else start + (offsets[position] if by_char else position)
                elif n_given > 0:
                    e = start + piece_ends[given]
                    given += 1
                else:
                    e, char = _next_piece(cls, char, s, pattern_id, False)
                length = e - s
                chunk_ints[m, 0] = e
                if length <= MEDIUM_TOKEN_BYTES and not whole_piece:
                    if s <= loads_end:
                        low = load_u64(data, s)
                        high = load_u64(data, s + 8)
                    else:
                        low = _pack_word(data, s, min(e, s + 8))
                        high = _pack_word(data, s + 8, e)
                    if length <= SHORT_TOKEN_BYTES:
                        low = low_bytes(low, length)
                        high = np.uint64(0)
                        slot = token_slot(low, high, length, short_mask)
                        prefetch(short_tokens, slot * 2)
                    else:
                        high = low_bytes(high, length - 8)
                        slot = token_slot(low, high, length, medium_mask)
                        prefetch(medium_tokens, slot * 3)
                    _set_chunk_key(chunk_keys, m, low, high, np.uint64(0), np.uint64(0))
                    chunk_ints[m, 1] = slot
                elif length <= LONG_TOKEN_BYTES and not whole_piece:
                    w0, w1, w2, w3 = long_words(data, s, e)
                    slot = long_slot(w0, w1, w2, w3, length, long_mask)
                    prefetch(long_tokens, slot * 5)
                    chunk_ints[m, 1] = slot
                    # the piece cache's key too (up to CACHE_MAX_BYTES)
                    _set_chunk_key(chunk_keys, m, w0, w1, w2, w3)
                elif length <= CACHE_MAX_BYTES:  # whole-piece lookup: the cache's key all the same
                    w0, w1, w2, w3 = _cache_key(data, s, e)
                    _set_chunk_key(chunk_keys, m, w0, w1, w2, w3)
                s = e
                m += 1
            # the whole-token probes; a piece of several tokens has its piece-cache row fetched meanwhile
            s = sub_start
            for i in range(sub_first, m):
                e = chunk_ints[i, 0]
                length = e - s
                if whole_piece:
                    token = bytes_lookup(bytes_slots, token_bytes, token_start, data, s, e)
                elif length <= SHORT_TOKEN_BYTES:
                    token = short_token_at(short_tokens, chunk_keys[i, 0], length, chunk_ints[i, 1])
                elif length <= MEDIUM_TOKEN_BYTES:
                    token = medium_token_at(medium_tokens, chunk_keys[i, 0], chunk_keys[i, 1], length, chunk_ints[i, 1])
                elif length <= LONG_TOKEN_BYTES:
                    token = long_token_at(long_tokens, data, s, e, chunk_ints[i, 1])
                else:
                    token = spelled_token(forward, two_byte_start, data, s, e)
                w0, w1, w2, w3 = _chunk_key(chunk_keys, i)
                n_candidates = _note_piece(chunk_ints, chunk_keys, i, token, w0, w1, w2, w3, n_candidates, cache,
                                           lane_limit, short_limit, wide_limit, data, s, e)
                s = e
        # the window's new short pieces of several tokens take lanes of the interleaved merge loop
        # (their table misses overlap); ``chunk_ints[i, 1]`` becomes -2 - lane
        n_lanes = 0
        for k in range(n_candidates):
            i = chunk_ints[k, 2]
            e = chunk_ints[i, 0]
            s = chunk_ints[i - 1, 0] if i > 0 else piece_start
            length = e - s
            w0, w1, w2, w3 = _chunk_key(chunk_keys, i)
            if _cache_holds(cache, _cache_slot(w0, w1, w2, w3, length, cache_slots - 1), w0, w1, w2, w3, length):
                continue
            lane = 0
            while lane < n_lanes:  # the same new word twice in a window takes one lane
                seen = lanes[lane, TAG]
                if lanes[lane, END] - lanes[lane, START] == length and _chunk_key(chunk_keys, seen) == (w0, w1, w2, w3):
                    break
                lane += 1
            if lane == LANE_ROWS:
                break  # the rest take the merge loop one at a time
            if lane == n_lanes:
                lanes[lane, START] = s
                lanes[lane, END] = e
                lanes[lane, TAG] = i
                n_lanes += 1
            chunk_ints[i, 1] = -2 - lane
        groups = (n_lanes + LANES - 1) // LANES
        for g in range(groups):  # groups of near-equal size, so none runs a lone lane
            first = g * n_lanes // groups
            merge_pieces_interleaved(byte_token, byte_pairs, pairs, pair_filter, token_of_rank,
                                     token_offset, data, lanes[first:], (g + 1) * n_lanes // groups - first)
        for i in range(m):
            piece_end = chunk_ints[i, 0]
            token = chunk_ints[i, 1]
            if token >= 0:
                out[n_out] = token
                n_out += 1
            elif token <= -2:
                first = n_out
                n_out = lane_tokens(lanes, -2 - token, out, n_out)
                lookups += 1
                if lanes[-2 - token, TAG] != i:
                    hits += 1  # the word again in the window: as good as a hit
                elif n_out - first <= CACHE_MAX_IDS:
                    w0, w1, w2, w3 = _chunk_key(chunk_keys, i)
                    length = piece_end - piece_start
                    _cache_put(cache, _cache_slot(w0, w1, w2, w3, length, cache_slots - 1), w0, w1, w2, w3, length,
                               out, first, n_out - first)
            elif not lookup_only:
                n_out, looked_up, hit = _several_tokens(matcher, pairs, pair_filter, byte_token, byte_pairs,
                                                        token_of_rank, token_offset,
                                                        _merge_loop_limit(short_limit, wide_limit, data, piece_start, piece_end),
                                                        data, piece_start,
                                                        piece_end, dead, memo, parts, ranks, heap, out, n_out, cache,
                                                        _chunk_key(chunk_keys, i))
                lookups += looked_up
                hits += hit
            piece_start = piece_end
    _count_cache_use(cache, lookups, hits)
    return n_out


#: texts are split in segments of about this many bytes, each cut where a piece must start (a line
#: feed, then an ASCII letter): each segment takes the bit-parallel pre-tokenizer unless it holds
#: characters it cannot split (one CJK character then costs its segment, not the whole text), and
#: its bitmaps stay in the core's caches
SEGMENT_BYTES = 1 << 15
#: a segment of at most this many bytes takes its bitmaps from the call's scratch (a segment ends at
#: the first boundary ``SEGMENT_BYTES`` on, so nearly every one fits); a longer one allocates them
SCRATCH_SEGMENT_BYTES = SEGMENT_BYTES + 4096


@njit(cache=True, inline="always")
def _scratch_layout(plan, n, span):
    """(offsets of the scratch's parts, total words) for a call over ``n`` bytes whose segments of up
    to ``span`` bytes take their bitmaps from it: lanes, chunk ints, chunk keys, merge ranks, merge
    parts, memo, backtracking's dead flags, the heap's three arrays (merges out of priority order
    only), bitmaps, start words and their scratch, then the piece ends of a plan that splits a text
    itself (``n + 1``; none otherwise). The last two: (total words, where the ends start)."""
    size = max(plan.short_limit, 1)
    heap_n = n if plan.live_pair_keys.shape[0] > 0 else 0
    chunk_ints = LANE_ROWS * LANE_COLUMNS
    chunk_keys = chunk_ints + 3 * WINDOW
    ranks = chunk_keys + KEY_WORDS * WINDOW
    parts = ranks + size
    memo = parts + ((size + 1) >> 1)
    dead = memo + 4 * _memo_slots(n)
    token = dead + ((n + 8) >> 3)
    prev = token + ((heap_n + 1) >> 1)
    queue = prev + ((heap_n + 1) >> 1)
    bitmaps = queue + (3 * heap_n + 1 if heap_n > 0 else 0)
    starts = bitmaps + bitmap_rows(span) * BITMAP_COLUMNS
    final = starts + start_words(span)
    ends = final + start_words(span)
    total = ends + (n + 1 if _own_split(plan) else 0)
    return chunk_ints, chunk_keys, ranks, parts, memo, dead, token, prev, queue, bitmaps, starts, final, total, ends


@njit(cache=True)
def _new_scratch(plan, n, span):
    """A call's scratch, one allocation (a call's fixed cost was a dozen small allocations and the
    reference counts of the arrays passed down): int64 words laid out by ``_scratch_layout``, the
    memo's rows set to -1. ``n``: the bytes of the call's text(s); ``span``: the longest segment
    whose bitmaps it holds."""
    layout = _scratch_layout(plan, n, span)
    work = np.empty(layout[12], dtype=np.int64)
    work[layout[4]:layout[5]] = -1
    return work


@njit(cache=True, inline="always")
def _scratch(plan, work, n, span):
    """Views of ``work`` (``_new_scratch(plan, n, span)``): (chunk_ints int64[WINDOW, 3], chunk_keys
    uint64[WINDOW, KEY_WORDS], the interleaved merge loop's lanes, the merge loop's parts int32 and ranks
    int64 of ``short_limit`` slots, the heap's :class:`HeapScratch` (empty arrays when merges run in
    order: ``queue`` empty means backtracking), the memo (slots, 4), dead uint8[n + 1], bitmaps,
    start words, their scratch). Views only: free in the kernels compiled without reference counts."""
    (chunk_ints, chunk_keys, ranks, parts, memo, dead, token, prev, queue, bitmaps, starts, final,
     ends, _) = _scratch_layout(plan, n, span)
    size = max(plan.short_limit, 1)
    heap_n = n if plan.live_pair_keys.shape[0] > 0 else 0
    heap = HeapScratch(plan.live_pair_keys, plan.live_pair_vals, plan.crossing, work[token:prev].view(np.int32)[:heap_n],
                       work[prev:queue].view(np.int32)[:heap_n], work[queue:bitmaps])
    return (work[chunk_ints:chunk_keys].reshape((WINDOW, 3)),
            work[chunk_keys:ranks].view(np.uint64).reshape((WINDOW, KEY_WORDS)),
            work[:chunk_ints].reshape((LANE_ROWS, LANE_COLUMNS)),
            work[parts:memo].view(np.int32)[:size], work[ranks:parts], heap,
            work[memo:dead].reshape(((dead - memo) >> 2, 4)), work[dead:token].view(np.uint8)[:n + 1],
            work[bitmaps:starts].view(np.uint64).reshape((bitmap_rows(span), BITMAP_COLUMNS)),
            work[starts:final].view(np.uint64), work[final:ends].view(np.uint64))


@njit(cache=True, inline="always")
def _segment_over_bytes(plan, data, start, end, out, n_out, cache, span, chunk_ints, chunk_keys, lanes, parts, ranks,
                        heap, memo, dead, bitmaps, starts, final):
    """Encode the segment ``data[start:end]`` over its bytes (ASCII, or its other characters letters:
    ``letter_bitmaps``) with bitmaps in the call's scratch; returns the new ``n_out``, or -1 when the
    segment is longer than the scratch's ``span``, -2 when its characters must be split one by one."""
    length = end - start
    if length > span:
        return np.int64(-1)
    found = LETTERS
    first_row = ascii_rows_into(data, start, end, bitmaps)
    if first_row >= 0:  # the rows before it are ASCII: the letters' pass goes on from there
        found = letter_bitmaps_into(data, start, end, plan.stage1, plan.stage2, plan.pattern_id, bitmaps, first_row)
        if found == REFUSED:
            return np.int64(-2)
    no_starts, no_offsets, no_classes, no_ends = _empty_sources(chunk_ints, chunk_keys)
    starts = starts[:start_words(length)]
    piece_starts_into(data, start, length, bitmaps, plan.pattern_id, no_classes, starts, final, found == OTHERS)
    return _encode_chunked(plan, data, start, end, starts, no_offsets, no_classes, no_ends, dead, memo, parts, ranks,
                           heap, out, n_out, cache, chunk_ints, chunk_keys, lanes, False)


@njit(cache=True, _nrt=False)
def _encode_segment_bytes(plan, data, start, end, out, n_out, cache, work, n, span):
    """``_segment_over_bytes`` with the views of the call's scratch ``work``. Allocates nothing."""
    chunk_ints, chunk_keys, lanes, parts, ranks, heap, memo, dead, bitmaps, starts, final = _scratch(plan, work, n,
                                                                                                     span)
    return _segment_over_bytes(plan, data, start, end, out, n_out, cache, span, chunk_ints, chunk_keys, lanes, parts,
                               ranks, heap, memo, dead, bitmaps, starts, final)


@njit(cache=True, _nrt=False)
def _encode_over_bytes(plan, data, text_offsets, text, start, out, n_out, out_offsets, cache, work, n, span):
    """Encode the texts ``data[text_offsets[i]:text_offsets[i+1]]`` from text ``text``'s byte ``start`` on,
    segment after segment (``_segment_end``), text after text (text ``i``'s ids end at
    ``out_offsets[i + 1]``), as long as each segment splits over its bytes in the call's scratch
    (``_segment_over_bytes``). Returns (text, start, n_out, why) where it stopped: ``why`` 0 when every
    text is done, else -1 or -2 (``_segment_over_bytes``'s reason) for the segment that starts at
    ``start``, which the caller encodes with ``_encode_segment_general`` before calling again.

    Compiled without reference counts, the scratch's views made once: a batch of one-word texts
    spent a third of its time on per-text reference counts, reshapes and views before."""
    chunk_ints, chunk_keys, lanes, parts, ranks, heap, memo, dead, bitmaps, starts, final = _scratch(plan, work, n,
                                                                                                     span)
    n_texts = text_offsets.shape[0] - 1
    while text < n_texts:
        end = text_offsets[text + 1]
        while start < end:
            stop = _segment_end(data, start, end)
            got = _segment_over_bytes(plan, data, start, stop, out, n_out, cache, span, chunk_ints, chunk_keys, lanes,
                                      parts, ranks, heap, memo, dead, bitmaps, starts, final)
            if got < 0:
                return text, start, n_out, got
            n_out = got
            start = stop
        out_offsets[text + 1] = n_out
        text += 1
        if text < n_texts:
            start = text_offsets[text]
    return text, start, n_out, np.int64(0)


@njit(cache=True, inline="always")
def _byte_bitmaps(plan, data, start, end):
    """(new bitmaps over the bytes of ``data[start:end]``, ``REFUSED``, ``LETTERS`` or ``OTHERS``):
    ASCII text, or text whose other characters are letters, whitespace or punctuation
    (``letter_bitmaps_into``, going on from the first row that is not ASCII)."""
    bitmaps = np.empty((bitmap_rows(end - start), BITMAP_COLUMNS), dtype=np.uint64)
    first_row = ascii_rows_into(data, start, end, bitmaps)
    if first_row < 0:
        return bitmaps, LETTERS
    return bitmaps, letter_bitmaps_into(data, start, end, plan.stage1, plan.stage2, plan.pattern_id, bitmaps, first_row)


@njit(cache=True)
def _encode_segment_general(plan, data, start, end, out, n_out, cache, work, n, span, by_bytes):
    """Encode the segment ``data[start:end]`` that ``_segment_over_bytes`` left: over its bytes with
    bitmaps of its own when ``by_bytes`` (it was too long for the scratch's) and they may split it,
    else over its characters if the pattern can split them that way (any text but o200k's with a
    letter of both case classes right before an upper-case one, ``class_bitmaps``), else with the
    general pre-tokenizer."""
    chunk_ints, chunk_keys, lanes, parts, ranks, heap, memo, dead, _, _, _ = _scratch(plan, work, n, span)
    # every call below passes arrays of the same types (views here, not module constants, which numba
    # types as read-only): one compiled copy of the loop instead of one per combination
    no_starts, no_offsets, no_classes, no_ends = _empty_sources(chunk_ints, chunk_keys)
    if by_bytes:
        bitmaps, found = _byte_bitmaps(plan, data, start, end)
        if found != REFUSED:
            starts = piece_starts(data, start, end - start, bitmaps, plan.pattern_id, no_classes, found == OTHERS)
            return _encode_chunked(plan, data, start, end, starts, no_offsets, no_classes, no_ends, dead, memo, parts,
                                   ranks, heap, out, n_out, cache, chunk_ints, chunk_keys, lanes, False)
    cls, offsets = utf8_classes(data[start:end], plan.stage1, plan.stage2)
    bitmaps, splittable = class_bitmaps(cls, plan.pattern_id)
    if splittable:
        starts = piece_starts(data, start, cls.shape[0], bitmaps, plan.pattern_id, cls, False)
        return _encode_chunked(plan, data, start, end, starts, offsets, cls, no_ends, dead, memo, parts, ranks, heap,
                               out, n_out, cache, chunk_ints, chunk_keys, lanes, False)
    return _encode_chunked(plan, data, start, end, no_starts, no_offsets, cls, no_ends, dead, memo, parts, ranks, heap,
                           out, n_out, cache, chunk_ints, chunk_keys, lanes, False)


@njit(cache=True, inline="always")
def _encode_split(plan, data, start, end, out, n_out, cache, work, n, span):
    """Split ``data[start:end]`` as ``plan.split`` says (a pattern transducer, or cuts before a
    marker) into the scratch's piece ends, then encode the pieces as ``encode_pieces`` does: one
    compiled call where a pattern with no bit-parallel pre-tokenizer took a call of the split, an
    array of ends and a call of the BPE stage (2-3 us a text in Python). Returns the new ``n_out``,
    or ``SPLIT_REFUSED`` when some of the text matches no branch of the transducer's pattern.
    ``work``: the call's scratch for ``n`` bytes (its ends hold ``n + 1``) and segments of up to
    ``span``."""
    if start == end:
        return n_out
    (byte_kinds, stage1, stage2, table, final, first, n_kinds, pairs, pair_shift, pair_kind, to_pair, mark_free,
     marker, every) = split_views(plan.split)
    at = _scratch_layout(plan, n, span)[13]
    ends = work[at:at + end - start + 1]
    if n_kinds > 0:
        m = split_window(data[start:end], byte_kinds, stage1, stage2, table, final, first, n_kinds, pairs,
                         pair_shift, pair_kind, to_pair, mark_free, ends, ends[:0])
        if m < 0:
            return np.int64(SPLIT_REFUSED)
    else:
        m = marker_piece_ends(data[start:end], marker, every, ends)
    chunk_ints, chunk_keys, lanes, parts, ranks, heap, memo, dead, _, _, _ = _scratch(plan, work, n, span)
    no_starts, no_offsets, no_classes, _ = _empty_sources(chunk_ints, chunk_keys)
    return _encode_chunked(plan, data, start, end, no_starts, no_offsets, no_classes, ends[:m], dead, memo, parts,
                           ranks, heap, out, n_out, cache, chunk_ints, chunk_keys, lanes, False)


_HIGH_BITS = np.uint64(0x8080808080808080)
_BYTE_SUM = np.uint64(0x0101010101010101)


@njit(cache=True, inline="always")
def _mostly_ascii(data, start, end):
    """Whether at most one byte in eight of ``data[start:end]`` is above 127: then the pieces of a split
    made elsewhere take ``_window_from_bits`` (a file with a ``Split`` regex of its own: the kernel
    1.27x on code and 1.17x on prose against the chunked loop); on mostly non-ASCII text that loop
    lost."""
    high = np.uint64(0)
    i = start
    while i + 8 <= end:
        high += (((load_u64(data, i) & _HIGH_BITS) >> np.uint64(7)) * _BYTE_SUM) >> np.uint64(56)
        i += 8
    while i < end:
        high += np.uint64(data[i] >> 7)
        i += 1
    return high * np.uint64(8) <= np.uint64(end - start)


@njit(cache=True, inline="always")
def _empty_sources(chunk_ints, chunk_keys):
    """Empty (starts, offsets, class words, piece ends) for ``_encode_chunked``'s unused piece sources:
    views of the chunk's scratch, so no allocation."""
    return chunk_keys[0, :0], chunk_ints[0, :0], chunk_keys[0, :0].view(np.uint16), chunk_ints[1, :0]


@njit(cache=True, inline="always")
def _segment_end(data, start, end):
    """Where the segment that starts at ``start`` ends: the first position at least
    ``SEGMENT_BYTES`` on that holds an ASCII letter after a line feed after a printable ASCII
    character (no piece of the six patterns runs across it, see ``parallel._BOUNDARY``), or ``end``."""
    i = start + SEGMENT_BYTES
    while i < end:
        if data[i - 1] == 10 and 97 <= (data[i] | 32) <= 122 and 33 <= data[i - 2] <= 126:
            return i
        i += 1
    return end


@njit(cache=True, inline="always")
def _encode_texts(plan, data, text_offsets, out, out_offsets, cache, work, n, span):
    """Encode each text ``data[text_offsets[i]:text_offsets[i+1]]`` into ``out`` (its ids end at
    ``out_offsets[i + 1]``; ``out_offsets[0]`` is 0); ``work``: the call's scratch for ``n`` bytes and
    segments of up to ``span``. Returns the number of ids.

    Inlined into the batch's entry point: a function compiled with reference counts increments and
    decrements each array of the Plan on entry and exit, 60 calls (300 ns), unless the compiler sees
    them all come from the ahead-of-time module's handle, which has no reference counts."""
    n_texts = text_offsets.shape[0] - 1
    out_offsets[0] = 0
    text = 0
    start = text_offsets[0] if n_texts > 0 else 0
    n_out = 0
    while text < n_texts:
        text, start, n_out, why = _encode_over_bytes(plan, data, text_offsets, text, start, out, n_out, out_offsets,
                                                     cache, work, n, span)
        if why == 0:
            break
        end = text_offsets[text + 1]
        stop = _segment_end(data, start, end)
        n_out = _encode_segment_general(plan, data, start, stop, out, n_out, cache, work, n, span, why == -1)
        start = stop
        if start == end:
            out_offsets[text + 1] = n_out
            text += 1
            if text < n_texts:
                start = text_offsets[text]
    return n_out


@njit(cache=True)
def _encode_segments(plan, data, start, end, out, n_out, cache, work, n, span):
    """Encode each segment of ``data[start:end]`` (``_segment_end``) into ``out`` from ``n_out`` on;
    ``work``: the call's scratch for ``n`` bytes and segments of up to ``span``."""
    while start < end:
        stop = _segment_end(data, start, end)
        got = _encode_segment_bytes(plan, data, start, stop, out, n_out, cache, work, n, span)
        if got < 0:
            got = _encode_segment_general(plan, data, start, stop, out, n_out, cache, work, n, span, got == -1)
        n_out = got
        start = stop
    return n_out


@njit(cache=True, nogil=True)
def encode_utf8(plan, data, out, cache):
    """Encode the UTF-8 text ``data`` (uint8) into ``out``; return the number of ids. ``cache`` is
    the calling thread's piece cache (``new_piece_cache``; 0 slots: none). A text of one segment that
    splits over its bytes goes straight to ``_encode_segment_bytes`` (the ahead-of-time kernel on a
    word 945 -> 852 ns against ``_encode_segments``, a function compiled with reference counts: see
    ``_encode_texts``). A plan that splits a text itself takes ``_encode_split`` (``SPLIT_REFUSED``
    back when its transducer refuses the text)."""
    n = data.shape[0]
    if _own_split(plan):  # a pattern transducer or a marker splits the text (no bitmaps needed)
        return _encode_split(plan, data, 0, n, out, 0, cache, _new_scratch(plan, n, 0), n, 0)
    span = min(n, SCRATCH_SEGMENT_BYTES)
    work = _new_scratch(plan, n, span)
    if 0 < n <= SEGMENT_BYTES:
        got = _encode_segment_bytes(plan, data, 0, n, out, 0, cache, work, n, span)
        if got >= 0:
            return got
    return _encode_segments(plan, data, 0, n, out, 0, cache, work, n, span)


@njit(cache=True, nogil=True, inline="always")
def encode_utf8_reusing(plan, data, out, cache, work):
    """``encode_utf8`` with the caller's scratch ``work`` (int64, the calling thread's own) for a
    text of one segment (at most ``SEGMENT_BYTES``): the call then allocates nothing. On a word the
    scratch's allocation and release were a fifth of the kernel's time. Inlined into the
    ahead-of-time module's entry point, whose Plan has no reference counts (see ``_encode_texts``).
    Returns ``-words`` when ``work`` is shorter than the ``words`` the text needs (the caller grows
    it and calls again); a longer text goes to ``encode_utf8``."""
    n = data.shape[0]
    if n == 0:
        return np.int64(0)
    if n > SEGMENT_BYTES:
        return encode_utf8(plan, data, out, cache)
    layout = _scratch_layout(plan, n, n)
    if work.shape[0] < layout[12]:
        return -layout[12]
    for i in range(layout[4], layout[5]):  # the memo's rows start empty (``_new_scratch``)
        work[i] = -1
    if _own_split(plan):
        return _encode_split(plan, data, 0, n, out, 0, cache, work, n, n)
    got = _encode_segment_bytes(plan, data, 0, n, out, 0, cache, work, n, n)
    if got >= 0:
        return got
    return _encode_segments(plan, data, 0, n, out, 0, cache, work, n, n)


@njit(cache=True, nogil=True)
def encode_pieces(plan, data, piece_ends, out, cache):
    """Encode the pieces ``data[piece_ends[i-1]:piece_ends[i]]`` (``piece_ends`` increasing, the
    last one ``len(data)``) into ``out``: the fused BPE stage behind any pre-tokenizer."""
    n = data.shape[0]
    if piece_ends.shape[0] == 0:
        return np.int64(0)
    work = _new_scratch(plan, n, 0)
    chunk_ints, chunk_keys, lanes, parts, ranks, heap, memo, dead, _, _, _ = _scratch(plan, work, n, 0)
    no_starts, no_offsets, no_classes, _ = _empty_sources(chunk_ints, chunk_keys)
    return _encode_chunked(plan, data, 0, n, no_starts, no_offsets, no_classes, piece_ends, dead, memo, parts, ranks,
                           heap, out, 0, cache, chunk_ints, chunk_keys, lanes, False)


@njit(cache=True, nogil=True)
def encode_utf8_batch(plan, data, text_offsets, out, out_offsets, cache):
    """Encode each text ``data[text_offsets[i]:text_offsets[i+1]]``; its ids are
    ``out[out_offsets[i]:out_offsets[i+1]]``. Returns the total number of ids (``SPLIT_REFUSED`` when
    the plan's transducer refuses one of the texts: ``_encode_split``)."""
    n = data.shape[0]
    if _own_split(plan):  # each text split by the plan's own splitter, then encoded
        work = _new_scratch(plan, n, 0)
        out_offsets[0] = 0
        n_out = np.int64(0)
        for text in range(text_offsets.shape[0] - 1):
            n_out = _encode_split(plan, data, text_offsets[text], text_offsets[text + 1], out, n_out, cache, work, n,
                                  0)
            if n_out < 0:
                return n_out
            out_offsets[text + 1] = n_out
        return n_out
    span = min(n, SCRATCH_SEGMENT_BYTES)
    # one memo for the batch: every text's ids stay in ``out``
    return _encode_texts(plan, data, text_offsets, out, out_offsets, cache, _new_scratch(plan, n, span), n, span)


# ----------------------------------------------------------------------------- stage probe
@njit(cache=True)
def probe_stages(plan, data, stop, out):
    """What the first stages of ``encode_utf8`` cost, for the benchmark's stage table (JIT only):
    ``stop`` 0 classifies the text (the bitmaps, or class words), 1 also finds every piece, 2 also
    looks every piece up as one whole token in the chunked loop (pieces of several tokens are
    left out). Returns a checksum so that no stage is optimised away."""
    n = data.shape[0]
    bitmaps, found = _byte_bitmaps(plan, data, 0, n)
    work = _new_scratch(plan, n, 0)
    chunk_ints, chunk_keys, lanes, parts, ranks, heap, memo, dead, _, _, _ = _scratch(plan, work, n, 0)
    starts, offsets, cls, no_ends = _empty_sources(chunk_ints, chunk_keys)
    splittable = True
    if found == REFUSED:
        cls, offsets = utf8_classes(data, plan.stage1, plan.stage2)
        bitmaps, splittable = class_bitmaps(cls, plan.pattern_id)
    if stop == 0:
        return np.int64(bitmaps.shape[0] + cls.shape[0])
    if splittable:
        starts = piece_starts(data, 0, cls.shape[0] if cls.shape[0] > 0 else n, bitmaps, plan.pattern_id, cls,
                              found == OTHERS)
    if stop == 1:
        if splittable:
            return np.int64(starts[0] + starts[starts.shape[0] // 2])
        total = np.int64(0)
        char = 0
        piece_start = 0
        while char < cls.shape[0]:
            piece_start, char = _next_piece(cls, char, piece_start, plan.pattern_id, False)
            total += piece_start
        return total
    return _encode_chunked(plan, data, 0, n, starts, offsets, cls, no_ends, dead, memo, parts, ranks,
                           heap, out, 0, np.zeros((1, CACHE_ROW), dtype=np.int64), chunk_ints,
                           chunk_keys, lanes, True)


# ----------------------------------------------------------------------------- Python front end
def supported_pattern(vocab) -> str | None:
    """The compiled pre-tokenizer's name for ``vocab``'s pattern, or None if it has none."""
    from ..formats.patterns import PATTERNS
    from .pretokenize_compiled import SUPPORTED

    pattern = vocab.pattern
    if pattern in SUPPORTED:
        return pattern
    for name, regex_text in PATTERNS.items():
        if pattern == regex_text and name in SUPPORTED:
            return name
    return None


def unsupported_reason(vocab, *, split: tuple | None = None) -> str | None:
    """Why the fused pipeline cannot encode ``vocab`` (None when it can). A pattern with no
    compiled pre-tokenizer is no reason: ``regex`` splits, the compiled stage encodes; nor are
    merges out of priority order (the tables of ``kernels.out_of_order``), unless their ranks tie.
    ``split`` names a split other than the vocabulary's pattern. A GGUF file's vocabulary needs one:
    ``("compiled", name)``, a compiled pattern that splits as its llama.cpp pre-tokenizer when given
    llama.cpp's class table (the pipeline's ``classes``); ``("pattern", regex)``, a pattern that
    does on the texts its caller lets through; or ``("list", type)``, that pre-tokenizer's type,
    whose regex list ``llama_cpp_program`` compiles or, when it cannot, ``llama_cpp_split`` emulates
    (``llama_cpp_fast``). ``("splits", regexes)``: HF ``Split`` steps one after the other
    (``llama_cpp_program.ListSplitter.of_splits``; the caller has checked that they compile).
    ``("marker", marker, every)``: cut before each run of ``marker`` (each one with ``every``;
    :mod:`.marker_split`); ``("whole",)``: each text one piece. A character-level vocabulary (helper
    ids: SentencePiece, HF byte-fallback BPE) is encoded when its unknown characters can be written
    as its model writes them (:mod:`.unknown_chars`)."""
    if vocab.hidden:
        from .unknown_chars import UnknownCharacters

        if UnknownCharacters.of(vocab) is None:
            return "its model drops unknown characters (neither byte fallback nor an unknown token)"
    if vocab.llama_cpp is not None and split is None:
        return "llama.cpp's own pre-tokenizer and special-token rules (a GGUF file) run on the reference path"
    reason = rank_order_break(vocab)
    if reason is not None and _out_of_order_tables(vocab) is None:
        return f"{reason}, and two tokens share a merge rank"
    return None


def _out_of_order_tables(vocab) -> dict | None:
    from ..kernels.compiled import compile_vocabulary
    from ..kernels.matching import build_matcher
    from ..kernels.out_of_order import out_of_order_tables

    return out_of_order_tables(vocab, compile_vocabulary(vocab), build_matcher(vocab))


def _whole_piece_tables(vocabulary, tables) -> dict | None:
    """The short, medium and long whole-token tables holding every usable token, for a whole-piece
    lookup (HF's ``ignore_merges``, llama.cpp's) over merges in priority order: then a piece that is
    any token is emitted as it by the chunked loop's probes, as the bytes table would. None when a
    token BPE cannot produce is longer than the long table's pieces (the probe of a longer piece
    finds only tokens BPE produces), so every piece must be looked up in the bytes table."""
    from ..kernels.compiled import NEVER
    from ..kernels.short_piece import long_tokens, medium_tokens, short_tokens

    usable = np.ones(len(tables.token_len), dtype=bool)
    usable[list(vocabulary.excluded)] = False
    if ((tables.priority >= NEVER) & (tables.token_len > LONG_TOKEN_BYTES) & usable).any():
        return None
    return {"short_tokens": short_tokens(tables, usable), "medium_tokens": medium_tokens(tables, usable),
            "long_tokens": long_tokens(tables, usable)}


#: Python keeps one shared int object for each of -5..256: ``tolist`` allocates nothing for those
_CACHED_INT_MAX = 256

_shared_ints_lock = threading.Lock()
_shared_ints_table: np.ndarray | None = None
_shared_ints_pin_tried = False  # the helper was asked to pin the current table
_shared_ints_pinned = False  # ... and did (Python 3.11): lists of ids are then filled without the GIL


def shared_ints(n: int, helper=None) -> np.ndarray:
    """An object array whose item ``i`` is the int ``i``, for at least ``n`` ids: one table for every
    pipeline of the process, made once (a larger vocabulary gets a larger one). With the
    ahead-of-time ``helper`` on Python 3.11 its objects are made by the helper at one stride (at
    least 2**18 ids: 8 MB of objects and 2 MB of table, a few ms) and pinned (``id_lists.c``,
    "Strided ints", "Pinned arrays"): lists of ids hold them without taking references, and are
    filled without reading the table. Elsewhere ``np.arange(n).astype(object)`` (~5 ms for
    200,000 ids), pinned when the helper can."""
    global _shared_ints_table, _shared_ints_pin_tried, _shared_ints_pinned
    table = _shared_ints_table
    if table is not None and len(table) >= n and (helper is None or _shared_ints_pin_tried):
        return table
    with _shared_ints_lock:
        table = _shared_ints_table
        if table is None or len(table) < n:
            # with the helper, the objects are made in one block at one stride (``id_lists.c``,
            # "Strided ints"): at least 2**18 of them, which covers the common vocabularies. A
            # larger vocabulary gets a table of its own; lists made from the old one keep its
            # objects, which stay alive.
            strided = None if helper is None else np.empty(max(n, STRIDED_INTS_MIN), dtype=object)
            if strided is not None and helper.strided_ints(strided):  # False on Python 3.12 and newer
                _shared_ints_table = table = strided
                _shared_ints_pin_tried = _shared_ints_pinned = True
            else:
                grown = np.arange(n).astype(object)
                if table is not None:
                    grown[: len(table)] = table  # the ids already handed out keep their objects
                table = _shared_ints_table = grown
                _shared_ints_pin_tried = _shared_ints_pinned = False
        if helper is not None and not _shared_ints_pin_tried:
            # False (nothing done) on Python 3.12 and newer
            _shared_ints_pinned = bool(helper.pin_objects(table))
            _shared_ints_pin_tried = True
    return table


#: the fewest ids of a table of strided ints (``shared_ints``): o200k has 200,019, Gemma 3 262,144
STRIDED_INTS_MIN = 1 << 18


def lists_without_gil() -> bool:
    """Whether lists of ids (``FusedPipeline.id_list`` / ``id_lists``) are filled with the GIL
    released once they hold 4,096 ids (a batch's lists together): the shared table is pinned."""
    return _shared_ints_pinned


_U8 = np.dtype(np.uint8)
_U32 = np.dtype(np.uint32)


class FusedPipeline:
    """Pre-tokenizer + backtracking BPE over one vocabulary, one numba call per text or batch.

    Only the pieces' ids: normalizers and special tokens are the Tokenizer's job. The
    calls go to the ahead-of-time compiled copy of ``encode_utf8`` / ``encode_utf8_batch``
    when it is available (``aot`` is True; see :mod:`bpebench.algorithms.pipeline.aot`), else to numba's JIT.
    """

    #: texts up to this many bytes reuse the calling thread's output buffer, and outputs up to
    #: this many ids its gather buffer (``encode_list`` copies out of both, so a thread keeps
    #: at most 12 bytes per byte of this: 12 MB). A fresh 4 MB array every call cost page
    #: faults (1,400 per call on 1 MB of code). Per thread: one buffer shared by threads gave
    #: other threads' ids when the interpreter switched threads between the kernel and the copy.
    REUSE_MAX = 1 << 20
    #: pieces up to this many bytes (and not one token) run ``short_piece``'s merge loop, or take a lane
    #: of the interleaved one, longer ones backtracking. Unseen multilingual text, first pass over each
    #: document: 24 against 16 was 1.10-1.17x on Cyrillic, Arabic and Bengali words of 17-24 bytes
    #: (their merges' table misses overlap in the lanes; backtracking's trie walk waits on each row),
    #: level on CJK and kana; 32 lost 1.2-1.3x on CJK and kana (the loop is O(L^2)). With two-byte
    #: characters starting whole (``short_piece``'s atoms) and CJK, kana and Hangul runs held to
    #: ``SHORT_PIECE_WIDE``, 32 was level with 24 on every script (40 and 48 too)
    SHORT_PIECE = 24
    #: the limit for pieces that end with a character above U+0FFF (``_merge_loop_limit``): on the
    #: multilingual stream's CJK and kana documents 16 against 24 took 0.90-0.92x the time on o200k,
    #: 0.83-0.95x on cl100k (12 and 9 level with 16)
    SHORT_PIECE_WIDE = 16
    #: the same when merges run out of priority order: the heap's loop beyond it is slower than
    #: backtracking (about 40 ns a byte), so the merge loop keeps pieces up to 32 bytes
    SHORT_PIECE_OUT_OF_ORDER = 32
    #: ``SHORT_PIECE_WIDE`` when merges run out of priority order: longer CJK, kana and Hangul pieces
    #: are cut where no merge can join the sides (``_cut_piece``), and their parts of a character or
    #: two are mostly one token or in the piece cache (the multilingual stream's CJK documents: 24
    #: against 32 took 0.84-0.87x the time; 16 and 20 level with 24)
    SHORT_PIECE_WIDE_OUT_OF_ORDER = 24
    #: outputs of at least this many ids are gathered from pre-made int objects (``id_list``)
    GATHER_MIN = 64
    #: ``encode_list`` takes outputs of at least this many ids (of any size once they exist) from the
    #: pre-made int objects, the thread's buffer passed whole with the count (the C helper: 41 ids
    #: 0.22 us against 0.65 for ``tolist`` of the slice, one id 0.14 against 0.16). Not fewer: the
    #: objects take a few ms to make, which a process that encodes a word first would wait for
    LIST_MIN = 8
    #: words of a thread's scratch for ``encode_utf8_reusing``: enough for a segment of o200k or
    #: cl100k (17,031 words; 5,833 for a word), grown when a text needs more (merges out of order)
    SCRATCH_WORDS = 1 << 15

    #: piece-cache rows per thread by default (64 bytes each: 2 MiB). Unseen text, A/B in one process
    #: (2026-11-27): against 16,384 rows, multilingual 1.04-1.12x (fewer rows a hot piece loses to a
    #: collision in the direct-mapped table), prose and code 0.98-1.04x
    PIECE_CACHE_SLOTS = 1 << 15

    def __init__(self, vocabulary, *, piece_cache_slots: int | None = None,
                 split: tuple | None = None,
                 classes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        from ..kernels.compiled import compile_vocabulary
        from ..kernels.matching import build_matcher
        from .pretokenize_compiled import PATTERN_IDS, get_tables
        from ..kernels.short_piece import short_piece_tables

        reason = unsupported_reason(vocabulary, split=split)
        if reason is not None:
            from bpebench.errors import BpebenchError

            raise BpebenchError(f"{vocabulary.name}: no fused pipeline: {reason}")
        self.vocabulary = vocabulary
        tables = compile_vocabulary(vocabulary)
        stage1, stage2 = get_tables() if classes is None else classes
        matcher = build_matcher(vocabulary)
        short = short_piece_tables(vocabulary, tables, matcher)
        unreachable = bool(short["unreachable"][0])
        live_pair_keys, live_pair_vals = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
        crossing = np.zeros(0, dtype=np.uint64)
        self.out_of_order = rank_order_break(vocabulary) is not None
        if self.out_of_order:
            # the definition's own merges and the tokens BPE produces from their own bytes
            # the definition's own merges; a piece that is one token is emitted when BPE of its bytes
            # gives that token, or, under whole-piece lookup, when it is any usable token: the
            # short and medium tables and the forward trie hold exactly those (so the bytes
            # table is not probed first: ``whole_piece`` stays False)
            from ..kernels.out_of_order import whole_token_lookup

            live = _out_of_order_tables(vocabulary)
            matcher, short_lookup, medium_lookup, long_lookup = whole_token_lookup(vocabulary, tables, live,
                                                                                   vocabulary.whole_piece_lookup)
            short = dict(short, token_of_rank=live["token_of_rank"], token_offset=[live["token_offset"]],
                         byte_pairs=live["byte_pairs"],
                         short_tokens=short_lookup,
                         medium_tokens=medium_lookup, long_tokens=long_lookup)
            unreachable = False
            live_pair_keys, live_pair_vals = live["pair_keys"], live["pair_vals"]
            if "crossing" not in live:  # kept with the vocabulary's other out-of-order tables
                live["crossing"] = crossing_set(tables.token_bytes, tables.token_start)
            crossing = live["crossing"]
        # whole-piece lookup differs from BPE only on tokens BPE cannot produce
        whole_piece = bool(vocabulary.whole_piece_lookup and unreachable)
        if whole_piece and not self.out_of_order:
            whole_tables = _whole_piece_tables(vocabulary, tables)
            if whole_tables is not None:  # the loop's probes answer it: no bytes-table lookup per piece
                short = dict(short, **whole_tables)
                whole_piece = False
        merges_by_rank = short["token_of_rank"]
        short_limit = self.SHORT_PIECE_OUT_OF_ORDER if self.out_of_order else self.SHORT_PIECE
        wide_limit = min(self.SHORT_PIECE_WIDE_OUT_OF_ORDER if self.out_of_order else self.SHORT_PIECE_WIDE,
                         short_limit)
        if len(merges_by_rank) == 0:  # tied ranks: every piece goes to backtracking
            merges_by_rank, short_limit, wide_limit = np.full(1, -1, dtype=np.int32), 0, 0
        if split is None:
            compiled_name = supported_pattern(vocabulary)
        else:
            compiled_name = split[1] if split[0] == "compiled" else None
        self.pattern_name = compiled_name  # the compiled pre-tokenizer's (where a long text may be cut)
        # a pattern with no compiled pre-tokenizer is split by ``regex`` (the reference), and the
        # pieces go through the same compiled BPE stage (``encode_pieces``); no pattern: one piece
        self.splitter = None
        if compiled_name is None and split is not None:
            from .llama_cpp_program import ListSplitter, llama_cpp_splitter
            from .pretokenize import RegexPretokenizer
            from .pretokenize_program import program_pretokenizer

            if split[0] == "pattern":  # a pattern that splits as llama.cpp's on screened text
                self.splitter = program_pretokenizer(split[1]) or RegexPretokenizer(split[1])
            elif split[0] == "marker":  # ("marker", marker, every): cut before each run of it (or each)
                from .marker_split import MarkerSplitter

                self.splitter = MarkerSplitter(split[1], every=split[2])
            elif split[0] == "whole":  # no pre-tokenizer: each text one piece
                from .pretokenize import WholeText

                self.splitter = WholeText()
            elif split[0] == "splits":  # HF's Split steps, compiled
                self.splitter = ListSplitter.of_splits(split[1])
            else:  # llama.cpp's regex list, compiled (else emulated)
                self.splitter = llama_cpp_splitter(split[1])
        elif compiled_name is None:
            from ..formats.patterns import resolve_pattern
            from .pretokenize import RegexPretokenizer, WholeText
            from .pretokenize_program import program_pretokenizer

            if vocabulary.pattern:
                # most patterns compile to a generated numba matcher (``pretokenize_program``); the rest,
                # and text the pattern leaves out, go through ``regex``
                pattern = resolve_pattern(vocabulary.pattern)
                self.splitter = program_pretokenizer(pattern) or RegexPretokenizer(pattern)
            else:
                self.splitter = WholeText()
        self.plan = Plan(matcher, PATTERN_IDS.get(compiled_name, -1),
                         stage1, stage2, whole_piece, tables.bytes_slots, tables.token_bytes,
                         tables.token_start, tables.byte_token, short["short_tokens"], short["medium_tokens"],
                         short["long_tokens"],
                         short["byte_pairs"], merges_by_rank, int(short["token_offset"][0]), short_limit,
                         wide_limit,
                         live_pair_keys, live_pair_vals, crossing,
                         split_tables(self.splitter))
        self._all_bytes_are_tokens = bool((tables.byte_token >= 0).all())
        # a character-level vocabulary's unknown characters come out as helper ids, rewritten here
        # (the module imported only for a vocabulary with helpers: 0.1-0.25 ms of a fresh process)
        self.unknown = None
        if vocabulary.hidden:
            from .unknown_chars import UnknownCharacters

            self.unknown = UnknownCharacters.of(vocabulary)
        self.piece_cache_slots = self.PIECE_CACHE_SLOTS if piece_cache_slots is None else int(piece_cache_slots)
        check_piece_cache_slots(self.piece_cache_slots)  # refuses a bad size now rather than in a call
        self._per_thread = threading.local()
        self._caches_lock = threading.Lock()
        self._caches: list = []  # weak references to every thread's piece cache (for the statistics)
        self._id_objects = None  # made on first use by ``id_list``
        self._lengths = None  # made on first use by ``_token_lengths``
        self._id_lists = None  # the ahead-of-time helper module that builds id lists in C
        self._encode = _DirectCall(encode_utf8)
        self._encode_batch = _DirectCall(encode_utf8_batch)
        self._encode_pieces = _DirectCall(encode_pieces)
        # the ahead-of-time compiled entry points when available (``algorithms/pipeline/aot.py``): no numba import
        aot_calls = _aot.entry_points(self.plan)
        self.aot = aot_calls is not None
        if aot_calls is not None:
            self._encode, self._encode_batch, self._encode_pieces = aot_calls
            self._id_lists = _aot.id_lists()
        #: the C helper's ``find_pair(data, first, second)`` (the first index of two bytes), or None
        self.find_pair = None if self._id_lists is None else self._id_lists.find_pair
        if self.splitter is not None and splits_itself(self.plan):
            # the kernel splits (a transducer, a marker); ``regex`` takes a text a transducer refuses
            self._encode = _refusing(self._encode, self._split_and_encode, self.plan)
            self._encode_batch = _refusing(self._encode_batch, self._split_and_encode_batch, self.plan)
        elif self.splitter is not None:
            self._encode = self._split_and_encode
            self._encode_batch = self._split_and_encode_batch
        # ``encode_list`` and ``encode_array`` make their arrays themselves, so they skip the checks
        # of the ahead-of-time wrapper (0.4 us a call; a call on a short text costs about 2 us in all)
        self._encode_own = getattr(self._encode, "unchecked", None) or functools.partial(self._encode, self.plan)
        # the ahead-of-time kernel on a ``bytes`` text (no numpy array made in Python), where no byte
        # needs the encodability check
        self._encode_bytes_own = getattr(self._encode, "unchecked_bytes", None) if self._all_bytes_are_tokens else None
        # ... whose buffers it takes by address, with the plan's handle, in one array per thread
        self._bytes_state = getattr(self._encode, "bytes_state", None)
        self._encode_pieces_own = (getattr(self._encode_pieces, "unchecked", None)
                                   or functools.partial(self._encode_pieces, self.plan))

    def _split(self, arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """(the bytes to encode, their piece ends, whether the ends come from a generated matcher) of
        the UTF-8 text ``arr`` for a pattern with no compiled pre-tokenizer: the generated matcher
        splits, else ``regex``."""
        piece_ends = getattr(self.splitter, "piece_ends", None)
        if piece_ends is not None:
            ends = piece_ends(arr)
            if ends is not None:
                return arr, ends, True
        text = arr.tobytes().decode("utf-8")
        pieces = self.splitter.split(text)
        if not pieces:
            return arr, np.zeros(0, dtype=np.int64), False
        char_ends = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)).cumsum()
        if char_ends[-1] == len(text):
            # the matches cover the text (in order, without overlap): its own bytes, cut at their
            # ends, instead of every piece encoded again and joined (a quarter of this path's time)
            if len(text) == len(arr):  # ASCII: a character is a byte
                return arr, char_ends, False
            char_starts = np.append(np.flatnonzero((arr & 0xC0) != 0x80), len(arr))
            return arr, char_starts[char_ends], False
        encoded = [p.encode("utf-8") for p in pieces]  # text between matches is dropped (tiktoken)
        ends = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)).cumsum()
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), ends, False

    def _split_and_encode(self, plan, arr, out, cache) -> int:
        """``encode_utf8`` for a pattern with no compiled pre-tokenizer: :meth:`_split`, then the
        compiled stage encodes the pieces."""
        data, ends, generated = self._split(arr)
        if not len(ends):
            return 0
        if generated and plan is self.plan:  # a generated matcher's ends increase to len(arr): no checks
            return self._encode_pieces_own(data, ends, out, cache)
        return self._encode_pieces(plan, data, ends, out, cache)

    def split_parts(self, data: bytes, targets: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        """A long UTF-8 text, for a pattern with no compiled pre-tokenizer, split whole and cut at piece
        ends into parts, each ending with the first piece that reaches its byte target (cumulative:
        ``parallel.part_targets`` or ``equal_targets``): (the part's bytes, its piece ends).
        Encoding the parts (:meth:`encode_part_list`) one after the other gives the whole text's ids,
        since BPE runs piece by piece. The text is not cut before it is split: where a piece of an
        arbitrary pattern ends may depend on text far before it, so a part split on its own could
        split otherwise (``\\s+(?!\\S)`` at a part's end); :meth:`encode_split_parts` splits part by
        part where that is exact. Empty for an empty split."""
        arr = np.frombuffer(data, _U8)
        if not self._all_bytes_are_tokens:
            self._check(arr)
        source, ends, _ = self._split(arr)
        if not len(ends):
            return []
        # the last piece of each part: the first piece ending at or after the part's target
        last = np.unique(np.searchsorted(ends, np.asarray(targets[:-1], dtype=np.int64)))
        bounds = [-1, *(int(i) for i in last if i < len(ends) - 1), len(ends) - 1]
        result = []
        for first_piece, last_piece in zip(bounds, bounds[1:]):
            start = int(ends[first_piece]) if first_piece >= 0 else 0
            result.append((source[start:int(ends[last_piece])], ends[first_piece + 1:last_piece + 1] - start))
        return result

    def encode_split_parts(self, data: bytes, targets: Sequence[int], threads: int, as_array: bool):
        """The ids of a long UTF-8 text, for a pattern with a transducer, cut near the byte ``targets``
        (cumulative) into parts that are split and encoded on the thread that takes them
        (:mod:`.parallel_split`) and joined (:meth:`joined_parts`): a list (int32 with ``as_array``),
        or None when the splitter has no transducer or some part's check fails (then
        :meth:`split_parts` has the answer). A part's split and its pieces' BPE follow each other on
        one core, so its piece ends are read from the core's caches, and no thread waits for
        another's split."""
        from .parallel_split import character_start, part_ends, part_start

        splitter = self.splitter
        if getattr(splitter, "engine", None) != "transducer":
            return None
        arr = np.frombuffer(data, _U8)
        if not self._all_bytes_are_tokens:
            self._check(arr)
        n = len(arr)
        cuts = [0, *sorted({character_start(arr, t) for t in targets[:-1]} - {0, n})]
        encode_part = self.encode_part_array if as_array else self.encode_part_list

        def part(j: int):
            # a part's start is guessed again by the part before it (a 256-byte probe): no thread waits
            start = part_start(splitter, arr, cuts[j])
            stop = part_start(splitter, arr, cuts[j + 1]) if j + 1 < len(cuts) else n
            ends = None if start is None or stop is None else part_ends(splitter, arr, start, stop)
            return None if ends is None else encode_part((arr[start:stop], ends))

        return self.joined_parts(part, range(len(cuts)), threads, as_array)

    def joined_parts(self, part: Callable, items: Sequence, threads: int, as_array: bool):
        """``part`` (ids of one part of a long text) over ``items`` on threads, the results joined in
        order as they come in (``parallel.run_folded``): lists of ids moved onto the ones before them
        (:meth:`move_items`), int32 arrays concatenated once at the end. None when a part gives
        None."""
        from .parallel import run_folded

        if not len(items):
            return np.zeros(0, dtype=np.int32) if as_array else []
        if not as_array:
            return run_folded(part, items, threads, self.move_items)
        arrays = run_folded(lambda item: _listed(part(item)), items, threads, _extended)
        return None if arrays is None else np.concatenate(arrays)

    def _encode_part(self, part: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, int]:
        data, ends = part
        out, cache, _ = self._buffers(len(data))
        return self._known(out, self._encode_pieces(self.plan, data, ends, out, cache))

    def _known(self, out: np.ndarray, n: int) -> tuple[np.ndarray, int]:
        """``(out, n)`` with the helper ids of unknown characters rewritten (:mod:`.unknown_chars`):
        a new array when there were any."""
        if self.unknown is not None:
            rewritten = self.unknown.rewrite(out[:n])
            if rewritten is not None:
                return rewritten, len(rewritten)
        return out, n

    def encode_part_list(self, part: tuple[np.ndarray, np.ndarray]) -> list[int]:
        """The ids of a part of :meth:`split_parts` as a list (on the calling thread's buffers)."""
        out, n = self._encode_part(part)
        return out[:n].tolist() if n < self.GATHER_MIN else self.id_list(out[:n])

    def encode_part_array(self, part: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """The ids of a part of :meth:`split_parts` as a new int32 array."""
        out, n = self._encode_part(part)
        return out[:n].copy()

    def _split_and_encode_batch(self, plan, arr, text_offsets, out, out_offsets, cache) -> int:
        if (plan is self.plan and getattr(self.splitter, "one_piece", False) and len(text_offsets) > 1
                and text_offsets[0] == 0 and text_offsets[-1] == len(arr)):
            return self._encode_whole_texts(arr, text_offsets, out, out_offsets, cache)
        n = 0
        out_offsets[0] = 0
        for i in range(len(text_offsets) - 1):
            start, end = int(text_offsets[i]), int(text_offsets[i + 1])
            n += self._split_and_encode(plan, arr[start:end], out[n:], cache)
            out_offsets[i + 1] = n
        return n

    def _encode_whole_texts(self, arr, text_offsets, out, out_offsets, cache) -> int:
        """``encode_utf8_batch`` with no pre-tokenizer, each text one piece (a piece stage's batch of
        pieces, so that no run of unknown characters is fused across two of them): every text in one
        call of the BPE stage, where a call per text cost some 40 us of Python. Each text's ids spell
        exactly its bytes, so where its ids end is where the running sum of their tokens' lengths
        reaches the text's end."""
        ends = text_offsets[1:][text_offsets[1:] > text_offsets[:-1]]  # an empty text is no piece
        n = self._encode_pieces_own(arr, ends, out, cache) if len(ends) else 0
        spelled = np.cumsum(self._token_lengths()[out[:n]])
        out_offsets[:] = np.searchsorted(spelled, text_offsets, side="right")
        return n

    def _token_lengths(self) -> np.ndarray:
        """The byte length of every id the kernel writes (int64; made on first use)."""
        lengths = self._lengths
        if lengths is None:
            lengths = self._lengths = np.fromiter((len(t or b"") for t in self.vocabulary.tokens), dtype=np.int64,
                                                  count=len(self.vocabulary.tokens))
        return lengths

    def _check(self, data: np.ndarray) -> None:
        if not self._all_bytes_are_tokens:
            from ..core.encoder import check_encodable

            check_encodable(self.vocabulary, data)

    def encode_list(self, data: bytes) -> list[int]:
        """Ids of the UTF-8 text ``data`` as a list (the Tokenizer's hot path)."""
        out, n = self._encode_into_buffer(data)
        if self._id_lists is not None and (n >= self.LIST_MIN or self._id_objects is not None):
            return self._id_lists.id_list(self._shared_ints(), out, n)
        return out[:n].tolist() if n < self.GATHER_MIN else self.id_list(out[:n])

    def _encode_into_buffer(self, data: bytes) -> tuple[np.ndarray, int]:
        """(the calling thread's id buffer, the number of ids of the UTF-8 text ``data`` written to it):
        the ahead-of-time kernel on the ``bytes`` with the thread's scratch, grown when it asks."""
        encode_bytes = self._encode_bytes_own
        if encode_bytes is None:
            out, cache, _ = self._buffers(len(data))
            return self._known(out, self._encode_as_array(data, out, cache))
        found = getattr(self._per_thread, "bytes_call", None)
        if found is None or len(found[0]) < len(data):
            found = self._bytes_call(len(data))
        out, state, buffers = found
        n = encode_bytes(state, data)
        if n < 0:
            if n == SPLIT_REFUSED:
                return self._known(out, self._split_and_encode(self.plan, np.frombuffer(data, _U8), out, buffers[1]))
            self._grow_scratch(-n)
            out, state, _ = self._bytes_call(len(data))
            n = encode_bytes(state, data)
        return (out, n) if self.unknown is None else self._known(out, n)  # no call on the common path

    def _bytes_call(self, size: int) -> tuple:
        """(an output buffer of at least ``size`` ids, the state the ahead-of-time ``encode_bytes``
        takes: the plan's handle and the addresses of that buffer, the piece cache and the scratch,
        those three buffers, which the state needs alive) of the calling thread."""
        buffers = self._buffers(size)
        found = buffers[0], self._bytes_state(*buffers), buffers
        if size <= self.REUSE_MAX:
            self._per_thread.bytes_call = found
        return found

    def _encode_as_array(self, data: bytes, out: np.ndarray, cache: np.ndarray) -> int:
        """The number of ids of the UTF-8 text ``data`` written into ``out`` (at least as long), the text
        made an array here: the JIT's kernel, or a vocabulary whose bytes are checked first."""
        arr = np.frombuffer(data, _U8)  # a dtype object: half the cost of ``dtype=np.uint8``
        if not self._all_bytes_are_tokens:
            self._check(arr)
        return self._encode_own(arr, out, cache)

    def _buffers(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(an output buffer of at least ``size`` ids, the piece cache, the scratch of
        ``encode_utf8_reusing``) of the calling thread: one lookup of the thread's state instead of
        three."""
        found = getattr(self._per_thread, "buffers", None)
        if found is not None and len(found[0]) >= size:
            return found
        work = getattr(self._per_thread, "work", None)
        if work is None:
            work = self._per_thread.work = np.empty(self.SCRATCH_WORDS, dtype=np.int64)
        found = self._thread_buffer("out", size, np.int32), self.thread_cache(), work
        if size <= self.REUSE_MAX:
            self._per_thread.buffers = found
        return found

    def _grow_scratch(self, words: int) -> np.ndarray:
        """The calling thread's scratch, grown to at least ``words`` (``encode_utf8_reusing`` asked)."""
        work = self._per_thread.work = np.empty(max(words, 2 * len(self._per_thread.work)), dtype=np.int64)
        found = getattr(self._per_thread, "buffers", None)
        if found is not None:
            self._per_thread.buffers = found[0], found[1], work
        self._per_thread.bytes_call = None  # its state holds the old scratch's address
        return work

    def thread_cache(self) -> np.ndarray:
        """The calling thread's piece cache (made on its first call): the kernel writes to it, so
        threads never share one. ``piece_cache_slots`` rows of 64 bytes, plus the counters."""
        cache = getattr(self._per_thread, "cache", None)
        if cache is None:
            import weakref

            cache = self._per_thread.cache = new_piece_cache(self.piece_cache_slots)
            with self._caches_lock:
                self._caches = [r for r in self._caches if r() is not None] + [weakref.ref(cache)]
        return cache

    def piece_cache_stats(self) -> dict:
        """Counters of the live threads' piece caches: ``hits``, ``misses``, ``hit_rate`` (of the
        pieces looked up), ``threads``, ``slots`` (per thread), ``filled`` and ``bytes`` (all threads)."""
        with self._caches_lock:
            caches = [c for c in (r() for r in self._caches) if c is not None]
        slots = self.piece_cache_slots
        hits = sum(int(c[slots, CACHE_HITS]) for c in caches)
        misses = sum(int(c[slots, CACHE_MISSES]) for c in caches)
        filled = sum(int(np.count_nonzero(c[:slots, 3])) for c in caches)
        return {"hits": hits, "misses": misses, "hit_rate": hits / (hits + misses) if hits + misses else 0.0,
                "threads": len(caches), "slots": slots, "filled": filled, "bytes": sum(c.nbytes for c in caches)}

    def _thread_buffer(self, name: str, size: int, dtype) -> np.ndarray:
        """At least ``size`` items: the calling thread's buffer ``name`` (grown as needed) when
        ``size <= REUSE_MAX``, else a new array."""
        if size > self.REUSE_MAX:
            return np.empty(size, dtype=dtype)
        buffer = getattr(self._per_thread, name, None)
        if buffer is None or len(buffer) < size:
            buffer = np.empty(max(size, 1 << 12), dtype=dtype)
            setattr(self._per_thread, name, buffer)
        return buffer

    def _shared_ints(self) -> np.ndarray:
        """One int object per token id, as an object array: this vocabulary's view of the process's
        ``shared_ints`` (the view starts where the table does, so the helper knows it as pinned)."""
        objects = self._id_objects
        if objects is None:
            n = len(self.plan.matcher.rows)
            objects = self._id_objects = shared_ints(n, self._id_lists)[:n]
        return objects

    def id_list(self, ids: np.ndarray) -> list[int]:
        """``ids.tolist()`` (int32 ids), several times as fast for long outputs (the 519k ids of a
        1 MB unsplittable piece on o200k: 1.3 ms, against 10.5 ms for ``tolist``).

        ``tolist`` allocates a new int object per id (~20 ns; ids above 256 are not
        cached by Python) and the caller frees them all again. Long outputs instead hold
        one shared int object per token id (``shared_ints``). With the ahead-of-time build,
        the ``_bpebench_ids`` helper (``id_lists.c``) writes them straight into the list in
        one pass, without taking references where it pinned the table (Python 3.11: every
        reference taken was a write to the id's object); outputs under ``GATHER_MIN`` ids
        keep ``tolist`` (no shared ints needed for short texts).

        Measured (o200k, whole calls, one process, best of 9, 2026-11-23): against numpy's
        gather (``np.take`` into an object buffer, then its ``tolist``) the helper made
        prose 1.12-1.17x faster, code 1.13-1.21x and the 1 MB piece 1.08-1.10x, back to back
        and interleaved with tiktoken, results kept or dropped; against ``tolist``,
        1.08-1.37x. On ``udhr-all`` (72% of its ids are byte tokens, Python's cached small
        ints, so ``tolist`` allocates little there) 1.05-1.07x against ``tolist``.

        Without the helper (JIT), numpy's gather is used, except when most ids are at
        most 256 (there ``tolist`` allocates nothing and the gather was 6% slower). That
        gather is a trade (2026-11-23): back to back it wins (prose 5.7 against 6.2 ms),
        interleaved with tiktoken ``tolist`` wins when each result is dropped (7.3 against
        8.1 ms) and loses when every result is kept (8.1 against 7.9 ms)."""
        if len(ids) < self.GATHER_MIN:
            return ids.tolist()
        if self._id_lists is not None:
            return self._id_lists.id_list(self._shared_ints(), ids)
        if 2 * np.count_nonzero(ids > _CACHED_INT_MAX) < len(ids):
            return ids.tolist()
        # into a reused buffer: no new 8 bytes per id each call. mode="clip" (the ids are in
        # range) lets numpy write straight into ``out``; "raise" copies it first
        gathered = self._thread_buffer("gathered", len(ids), object)[: len(ids)]
        np.take(self._shared_ints(), ids, out=gathered, mode="clip")
        return gathered.tolist()

    def utf8_span(self, text: str, start: int, end: int) -> bytes:
        """The UTF-8 bytes of ``text[start:end]`` (surrogates replaced as ``utf8`` does). With the
        ahead-of-time helper they are converted with the GIL released and no slice is made, so
        threads that take parts of one long text convert them at the same time."""
        if self._id_lists is not None:
            data = self._id_lists.utf8_span(text, start, end)
            if data is not None:
                return data
        from .text_bytes import utf8

        return utf8(text[start:end])

    def move_items(self, target: list[int], source: list[int]) -> list[int]:
        """``target`` with the items of ``source`` appended (returned, for folding parts in order);
        ``source`` may be left empty (the helper moves its items instead of taking new references,
        see ``id_lists.c``)."""
        if self._id_lists is not None:
            self._id_lists.move_items(target, source)
        else:
            target += source
        return target

    def id_lists(self, ids: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
        """``[id_list(ids[a:b]) for a, b in consecutive offsets]`` (a batch's results)."""
        if self._id_lists is not None and len(ids) >= self.GATHER_MIN:
            return self._id_lists.id_lists(self._shared_ints(), ids, offsets)
        flat = self.id_list(ids)
        bounds = offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds, bounds[1:])]

    def encode_array(self, data: bytes) -> np.ndarray:
        """``uint32`` ids of the UTF-8 text ``data``: encoded into the thread's buffer, then copied
        into an array of exactly their length (ids are below 2**31: int32 and uint32 agree)."""
        out, n = self._encode_into_buffer(data)
        return out[:n].astype(_U32)  # one numpy call: a short text's view-and-copy cost 0.3 us more

    def encode_utf8(self, data: bytes) -> np.ndarray:
        """int32 ids of the UTF-8 text ``data`` (valid UTF-8: pieces as ``regex`` splits its str).
        ``bytes`` of at most ``REUSE_MAX`` are encoded into the thread's buffer and their ids copied
        into an array of exactly their length (each part of a long text once had an output array
        the size of its bytes, whose pages the kernel touched first)."""
        if type(data) is bytes and len(data) <= self.REUSE_MAX:
            out, n = self._encode_into_buffer(data)
            return out[:n].copy()
        arr = np.frombuffer(data, dtype=np.uint8)
        self._check(arr)
        out = np.empty(len(arr), dtype=np.int32)
        out, n = self._known(out, self._encode(self.plan, arr, out, self.thread_cache()))
        return out[:n]

    def encode_utf8_batch(self, texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(ids, offsets): text ``i``'s ids are ``ids[offsets[i]:offsets[i+1]]``."""
        from .text_bytes import joined_utf8

        return self.encode_joined_batch(*joined_utf8(texts))

    def encode_joined_batch(self, data: bytes, text_offsets: np.ndarray,
                            fresh: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``encode_utf8_batch`` of texts given as one UTF-8 ``data`` and their int64 ``text_offsets``
        (the starts and the last end, as :meth:`utf8_texts` makes them). Without ``fresh`` the ids
        are in the calling thread's reused buffer, valid until its next call (for a caller that
        lists them at once: a new buffer's pages are first touched, at a page fault each, inside
        the kernel)."""
        arr = np.frombuffer(data, dtype=np.uint8)
        self._check(arr)
        out = np.empty(len(arr), dtype=np.int32) if fresh else self._buffers(len(arr))[0]
        out_offsets = np.empty(len(text_offsets), dtype=np.int64)
        n = self._encode_batch(self.plan, arr, text_offsets, out, out_offsets, self.thread_cache())
        if self.unknown is not None:
            rewritten = self.unknown.rewrite(out[:n], out_offsets)
            if rewritten is not None:
                return rewritten
        return out[:n], out_offsets

    def utf8_texts(self, texts: list[str], first: int, last: int) -> tuple[bytes, np.ndarray]:
        """The UTF-8 of ``texts[first:last]`` joined, and the int64 offsets where each starts (and the
        last ends), for :meth:`encode_joined_batch`. With the ahead-of-time helper, converted with the
        GIL released straight into one buffer (``id_lists.c``), so threads that take groups of a
        batch convert them at the same time."""
        if self._id_lists is not None:
            made = self._id_lists.utf8_texts(texts, first, last)
            if made is not None:
                return made[0], np.frombuffer(made[1], dtype=np.int64)
        from .text_bytes import joined_utf8, utf8_all

        return joined_utf8(utf8_all(texts[first:last]))


def _listed(ids: np.ndarray | None) -> list[np.ndarray] | None:
    return None if ids is None else [ids]


def _extended(arrays: list[np.ndarray], more: list[np.ndarray]) -> list[np.ndarray]:
    arrays.extend(more)  # in place: ``+`` would copy the list for every part
    return arrays


def _refusing(kernel, fallback, plan):
    """``kernel(plan, data, ...)``, or ``fallback`` with the same arguments where the kernel returns
    ``SPLIT_REFUSED``; ``unchecked`` and ``unchecked_bytes`` (the ahead-of-time entry's, bound to
    ``plan``) carried over, the former wrapped the same way, the latter returning ``SPLIT_REFUSED``
    for its caller to see."""

    def call(plan, data, *rest):
        n = kernel(plan, data, *rest)
        return fallback(plan, data, *rest) if n == SPLIT_REFUSED else n

    unchecked = getattr(kernel, "unchecked", None)
    if unchecked is not None:
        def call_unchecked(data, *rest):
            n = unchecked(data, *rest)
            return fallback(plan, data, *rest) if n == SPLIT_REFUSED else n

        call.unchecked = call_unchecked
    call.unchecked_bytes = getattr(kernel, "unchecked_bytes", None)
    call.bytes_state = getattr(kernel, "bytes_state", None)
    return call


class _DirectCall:
    """Call a numba function's compiled overload without the dispatcher.

    The dispatcher types every argument on every call, and the Plan (a nested
    NamedTuple of 15 arrays) takes it ~6 us, more than encoding a short text. The
    arguments of one call site always have the same types, except that the text
    array is read-only when it comes from ``bytes``; so the overload is looked up
    once per read-only flag and called directly afterwards. Without jit
    (``NUMBA_DISABLE_JIT=1``) the plain function is called.
    """

    def __init__(self, function) -> None:
        self.function = function
        self.entries: dict[bool, object] = {}

    def __call__(self, plan, data, *rest):
        entry = self.entries.get(data.flags.writeable)
        if entry is not None:
            return entry(plan, data, *rest)
        result = self.function(plan, data, *rest)  # compiles or loads from numba's cache
        overloads = getattr(self.function, "overloads", None)
        if overloads is not None:
            signature = tuple(self.function.typeof_pyval(a) for a in (plan, data, *rest))
            compiled = overloads.get(signature)
            if compiled is not None:
                self.entries[data.flags.writeable] = compiled.entry_point
        return result


def fused_pipeline(vocabulary, piece_cache_slots: int | None = None, *,
                   split: tuple | None = None,
                   classes: tuple[np.ndarray, np.ndarray] | None = None) -> FusedPipeline:
    """The :class:`FusedPipeline` of ``vocabulary`` (memoised on it, per ``whole_piece_lookup``,
    piece-cache size and pattern; its piece caches are per thread). ``classes``: the compiled
    pre-tokenizer's ``(stage1, stage2)`` class table when not ``regex``'s (a GGUF file's compiled
    twin reads llama.cpp's, which its ``split`` names)."""
    memo = vocabulary.__dict__.setdefault("_fused_pipelines", {})
    key = (bool(vocabulary.whole_piece_lookup), piece_cache_slots, split)
    if key not in memo:
        memo[key] = FusedPipeline(vocabulary, piece_cache_slots=piece_cache_slots,
                                  split=split, classes=classes)
    return memo[key]
