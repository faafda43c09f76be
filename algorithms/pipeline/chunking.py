"""Chunking operations: split after at most n tokens, count up to a limit, count a range.

The seed paper's motivating problems. Each function takes ``encoder_or_tokenizer``:

* an :class:`~bpebench.algorithms.core.encoder.Encoder`: the text is raw bytes (a ``str`` is
  UTF-8 encoded and positions are *bytes*); no pre-tokenizer, no special tokens;
* a :class:`~bpebench.algorithms.pipeline.tokenizer.Tokenizer`: the text is a ``str``, positions
  are *characters*, and counts are the Tokenizer's (normalizer, pre-tokenizer, whole-piece
  lookup, the encoder per piece; special-token literals in ``allowed_special`` count as one
  token each, every other literal is plain text, as in ``encode_ordinary``).

Definitions
-----------
``count(s)``: the number of tokens of ``s``'s *own* encoding (for an exact encoder, BPE's).

``split_at_tokens(text, n)``: the longest prefix ``text[:p]`` ending on a character boundary
with ``count(text[:p]) <= n``, *whatever the counts of shorter prefixes*::

    p = max { p : p is a character boundary of text, count(text[:p]) <= n }

Counts are not monotone: a longer prefix can take fewer tokens (mistral_v1's pipeline encodes
``'*****'`` as 3 tokens and ``'******'`` as 2), so the answer is neither "where the count first
exceeds n" nor "the first n tokens of the whole text, backed off to a character boundary"
(tokens need not start or end on character boundaries). ``p = 0`` always fits, so the answer
exists for every ``n >= 0``; for raw bytes a character boundary is any position not followed by
a UTF-8 continuation byte.

``count_till_limit(text, limit)``: ``count(text)`` if it is at most ``limit``, else None.

How, exactly and fast
---------------------
Two facts bound the count of every longer prefix by the counts of shorter ones, so a search
can stop without reading the rest of the text:

* *fewest tokens*: an encoding is a sequence of vocabulary tokens spelling the bytes, so its
  count is at least the fewest tokens that spell them (:func:`fewest_tokens`, a shortest path
  over the tokens ending at each byte, all tokens included, O(bytes x longest token));
* *the window rule*: let ``C(q)`` be BPE's count of the first ``q`` bytes, or the fewest-tokens
  count, and ``L`` the longest token. For ``q' > q`` the token of ``q'``'s encoding covering
  byte ``q`` starts at some ``s`` in ``(q - L, q]``, and the tokens before it spell ``[:s]``
  (for BPE they *are* its encoding: a prefix of a valid encoding is valid), so
  ``C(q') >= 1 + min(C(s) for s in (q - L, q])``. Once every count in a window of ``L``
  positions reaches ``n``, no longer prefix fits.

*Raw bytes, exact encoder, merges in priority order:* an
:class:`~bpebench.algorithms.appending.AppendableEncoder` gives BPE's count of every prefix as
bytes are pushed (O(1) per byte, in doubling blocks) until the window rule stops it: O(answer
+ L), however long the text. *Any other encoder* (approximate ones, and exact ones on
vocabularies whose merges run out of priority order): the window rule on the fewest-tokens
counts gives the last possible candidate; candidates are tried from the longest down,
skipping those whose fewest-tokens count already exceeds ``n``, each counted by the encoder
itself; the first that fits is the answer (exact for any encoder whose output spells its input).

*Tokenizer:* special-token literals cut the text into segments (their counts add up). Within
a segment, the normalizer must map prefixes to prefixes (``none``, ``sentencepiece``,
``sentencepiece-no-prefix``, and ``nfc`` on text already in NFC) and the pre-tokenizer must
tile the text (regex, compiled, whole text). It relies on one property of the pre-tokenizer,
*cut locality*: cutting the text after character ``q`` changes at most the last two pieces,
so ``count(q) = C[j] + count(split(N[start_j:q]))`` with ``j`` the piece before the one holding
character ``q - 1`` and ``C[j]`` the tokens of the pieces before ``j`` (true of the tiktoken,
HF byte-level and SentencePiece patterns: their decisions look one character past a match;
``tests/test_chunking.py`` checks it against brute force on every built-in vocabulary). Each
candidate then costs one re-split of a short region, and its lower bound ``C[j] + fewest
tokens of the region`` costs O(1); the window rule on that bound caps a long piece. The
returned prefix's count is checked directly at the end. Any other normalizer or pre-tokenizer
falls back to counting every prefix with the Tokenizer itself: exact, O(text x answer).

``count_till_limit`` adds whole-text piece counts until the limit is passed (a piece count
never goes back down); raw bytes use the window rule on BPE prefix counts, or the
fewest-tokens bound before one call of the encoder.

``count_range(text, start, end, encoder_or_tokenizer=...)`` / ``RangeCounter``
    Exact counts of ``text[start:end]``. Encoders use an
    :class:`~bpebench.algorithms.interval.IntervalEncoding` (typically O(1) per query after O(n)
    preprocessing); Tokenizers add whole-piece counts in between and re-tokenize the two
    edge stretches.

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

import unicodedata
from bisect import bisect_right
from typing import Union

import numpy as np

from bpebench.errors import BpebenchError

from ..appending import AppendableEncoder
from ..core.encoder import Encoder, as_byte_array
from ..interval import IntervalEncoding
from ..kernels.compiled import bytes_lookup, compile_vocabulary, rank_order_break
from ..kernels.jit import njit
from .pretokenize import NORMALIZERS

Text = Union[str, bytes]
_SHORT_REGION = 64  # characters re-tokenized one prefix at a time by RangeCounter
_UNSPELLED = 1 << 30


# ----------------------------------------------------------------------------- fewest tokens
@njit(cache=True)
def _fewest_tokens_kernel(bytes_slots, token_bytes, token_start, byte_token, max_len, data, budget, out):
    """``out[q]`` = fewest tokens spelling ``data[:q]``; a byte no token spells costs 0 (the
    result stays a lower bound). With ``budget >= 0`` (and every byte a token) it stops at the
    first ``q`` whose window of ``max_len`` counts all reach ``budget`` (no longer prefix can
    have ``<= budget`` tokens) and returns that ``q``; else it returns ``len(data)``."""
    n = len(data)
    out[0] = 0
    last_low = 0  # the last q with out[q] < budget
    for q in range(1, n + 1):
        best = _UNSPELLED
        if byte_token[data[q - 1]] < 0:
            best = out[q - 1]
        for length in range(1, min(max_len, q) + 1):
            start = q - length
            if out[start] + 1 < best and bytes_lookup(bytes_slots, token_bytes, token_start, data, start, q) >= 0:
                best = out[start] + 1
        out[q] = best
        if budget >= 0:
            if best < budget:
                last_low = q
            elif q - last_low >= max_len:
                return q
    return n


def _max_token_len(vocabulary) -> int:
    return max(int(compile_vocabulary(vocabulary).token_len.max(initial=1)), 1)


def fewest_tokens(vocabulary, data, *, budget: int = -1) -> tuple[np.ndarray, int]:
    """``(counts, stop)``: ``counts[q]`` is the fewest tokens of ``vocabulary`` that spell the
    first ``q`` bytes of ``data`` (a lower bound of every encoding's count; every token counts,
    unreachable ones too); with ``budget >= 0`` the table stops at ``stop``, past which no
    prefix can be spelled with ``<= budget`` tokens (``stop = len(data)`` when it ran to the end).
    O(bytes x longest token^2) at worst, in compiled code.

    >>> from bpebench.algorithms.formats.vocabulary import Vocabulary
    >>> v = Vocabulary.from_ranks([bytes([i]) for i in range(256)] + [b"ab", b"abab"], name="t")
    >>> fewest_tokens(v, b"ababa")[0].tolist()
    [0, 1, 1, 2, 1, 2]
    """
    tables = compile_vocabulary(vocabulary)
    arr = as_byte_array(data)
    out = np.empty(len(arr) + 1, dtype=np.int64)
    every_byte = bool((tables.byte_token >= 0).all())
    stop = _fewest_tokens_kernel(tables.bytes_slots, tables.token_bytes, tables.token_start, tables.byte_token,
                                 _max_token_len(vocabulary), arr, budget if every_byte else -1, out)
    return out[: stop + 1], int(stop)


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
    """bool[len + 1]: True where a UTF-8 character may start, at the end, and at 0 (the empty
    prefix is always a candidate, even before a stray continuation byte)."""
    out = np.ones(len(data) + 1, dtype=bool)
    out[:-1] = (data & 0xC0) != 0x80
    out[0] = True
    return out


def _utf8_offsets(text: str) -> np.ndarray:
    """int64[len + 1]: byte offset of each character of ``text`` in its UTF-8 (surrogatepass) form."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    sizes = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
    out = np.zeros(len(points) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _check_n(n: int) -> None:
    if n < 0:
        raise BpebenchError(f"n must be >= 0 (got {n}): no prefix has fewer than 0 tokens")


def _ordered_merges(vocabulary) -> bool:
    return rank_order_break(vocabulary) is None


# ----------------------------------------------------------------------------- raw bytes (Encoder)
def _bpe_prefix_counts(vocabulary, data: np.ndarray, budget: int) -> np.ndarray:
    """BPE's count of ``data[:q]`` for ``q = 0 ..`` up to where the window rule proves that no
    longer prefix has ``<= budget`` tokens (or the end). O(returned length)."""
    max_len = _max_token_len(vocabulary)
    total = len(data)
    block = 4 * budget + 2 * max_len + 1  # about the answer plus the window: usually one block
    enc = AppendableEncoder(vocabulary, capacity=min(total, block) + 1)
    pushed, last_low = 0, 0
    while pushed < total:
        new = min(total, pushed + block)
        enc.push(data[pushed:new])
        low = np.flatnonzero(enc.prefix_counts()[pushed + 1 : new + 1] < budget)
        if len(low):
            last_low = pushed + 1 + int(low[-1])
        pushed = new
        if pushed - last_low >= max_len:
            break  # every prefix in the last window has >= budget tokens: longer ones have more
        block *= 2
    return np.array(enc.prefix_counts())


def _top_down(candidates: np.ndarray, bound: np.ndarray, n: int, count) -> int:
    """The largest of the increasing ``candidates`` with ``count(p) <= n``, trying them from the
    longest down and skipping those whose lower ``bound[p]`` exceeds ``n``; 0 if none."""
    for p in candidates[::-1].tolist():
        if bound[p] <= n and count(p) <= n:
            return p
    return 0


def _split_bytes(encoder: Encoder, data: np.ndarray, n: int) -> int:
    """Byte length of the longest character-boundary prefix with at most ``n`` tokens."""
    if n == 0 or len(data) == 0:
        return 0
    boundary = _char_boundaries(data)
    vocab = encoder.vocabulary
    if encoder.is_exact() and _ordered_merges(vocab):
        counts = _bpe_prefix_counts(vocab, data, n)
        ok = np.flatnonzero((counts <= n) & boundary[: len(counts)])
        return int(ok[-1])
    bound, stop = fewest_tokens(vocab, data, budget=n)
    raw = data.tobytes()
    candidates = np.flatnonzero(boundary[1 : stop + 1]) + 1
    return _top_down(candidates, bound, n, lambda p: encoder.count(raw[:p]))


def _count_till_limit_bytes(encoder: Encoder, data: np.ndarray, limit: int) -> int | None:
    if limit < 0:
        return None
    total = len(data)
    if total == 0:
        return 0
    vocab = encoder.vocabulary
    if encoder.is_exact() and _ordered_merges(vocab):
        counts = _bpe_prefix_counts(vocab, data, limit)
        if len(counts) <= total:
            return None  # stopped early: the whole text needs more than `limit` tokens
        count = int(counts[total])
    else:
        _, stop = fewest_tokens(vocab, data, budget=limit)
        if stop < total:
            return None
        count = encoder.count(data.tobytes())
    return count if count <= limit else None


# ----------------------------------------------------------------------------- Tokenizer
def _piece_counts(tokenizer, pieces: list[str], memo: dict | None = None) -> list[int]:
    """Token count of each piece exactly as ``tokenizer.encode_ordinary`` encodes it."""
    vocab = tokenizer.vocabulary
    lookup = vocab.token_id if vocab.whole_piece_lookup else None
    encoder = tokenizer.encoder
    hidden = vocab.hidden
    out = []
    for piece in pieces:
        if memo is not None and piece in memo:
            out.append(memo[piece])
            continue
        data = piece.encode("utf-8", "surrogatepass")
        token = lookup(data) if lookup is not None else None
        if token is not None:
            ids = [token]
        elif hidden:
            ids = encoder.encode(data)
        else:
            ids = None
        if ids is None:
            c = int(encoder.count(data))
        else:
            c = sum(len(vocab.tokens[t]) if t in hidden else 1 for t in ids)
        if memo is not None:
            memo[piece] = c
        out.append(c)
    return out


#: normalizers that map a prefix of the text to a prefix of the normalized text:
#: name -> characters the normalized form has in front (SentencePiece's dummy prefix)
_PREFIX_NORMALIZERS = {"none": 0, "nfc": 0, "sentencepiece": 1, "sentencepiece-no-prefix": 0}
#: pre-tokenizers known to tile the text with cut locality (see the module docstring)
_LOCAL_PRETOKENIZERS = {"RegexPretokenizer", "CompiledPretokenizer", "WholeText"}


class _CutLocalityBroken(Exception):
    """The pre-tokenizer did not tile a region: use the generic search."""


class _Segment:
    """One stretch of ordinary text (no allowed special token inside) of a Tokenizer's input."""

    def __init__(self, tokenizer, text: str) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self.memo: dict[str, int] = {}
        vocab = tokenizer.vocabulary
        self.shift = _PREFIX_NORMALIZERS.get(vocab.normalizer)
        structured = self.shift is not None and type(tokenizer.pretokenizer).__name__ in _LOCAL_PRETOKENIZERS
        if structured and vocab.normalizer == "nfc" and not unicodedata.is_normalized("NFC", text):
            structured = False  # a prefix of text that is not NFC need not normalize to a prefix
        self.normalized = None
        if structured and text:
            normalized = NORMALIZERS[vocab.normalizer][0](text)
            if len(normalized) == len(text) + self.shift:
                self.normalized = normalized  # a character-for-character map: prefix q -> q + shift

    def count(self, p: int) -> int:
        """The Tokenizer's count of ``text[:p]`` (ordinary text)."""
        return self.tokenizer.count(self.text[:p]) if p else 0

    def split(self, budget: int) -> int:
        """The largest ``p`` with ``count(text[:p]) <= budget``."""
        if not self.text or (budget == 0 and self.normalized is not None):
            return 0  # (a normalizer that drops characters can make a non-empty prefix 0 tokens)
        if self.normalized is not None:
            try:
                p = self._split_structured(budget)
            except _CutLocalityBroken:
                pass
            else:
                if self.count(p) <= budget:
                    return p
        for p in range(len(self.text), 0, -1):  # generic: every prefix, counted by the Tokenizer
            if self.count(p) <= budget:
                return p
        return 0

    def total(self, limit: int) -> int | None:
        """``count(text)`` if at most ``limit``, else None (adds whole-text piece counts)."""
        if not self.text:
            return 0
        if self.normalized is None:
            c = self.count(len(self.text))
            return c if c <= limit else None
        pieces = self.tokenizer.pretokenizer.split(self.normalized)
        total = 0
        batch = max(16, limit // 2)
        for i in range(0, len(pieces), batch):
            total += sum(_piece_counts(self.tokenizer, pieces[i : i + batch], self.memo))
            if total > limit:
                return None  # piece counts only add up
        return total

    # ------------------------------------------------------------------ the structured search
    def _pieces(self, end: int) -> tuple[list[str], list[int]]:
        """Pieces of the normalized text up to character ``end`` and their start offsets."""
        region = self.normalized[:end]
        pieces = self.tokenizer.pretokenizer.split(region)
        if "".join(pieces) != region:
            raise _CutLocalityBroken
        starts, pos = [], 0
        for piece in pieces:
            starts.append(pos)
            pos += len(piece)
        return pieces, starts

    def _region_count(self, start: int, q: int) -> int:
        region = self.normalized[start:q]
        pieces = self.tokenizer.pretokenizer.split(region)
        if "".join(pieces) != region:
            raise _CutLocalityBroken
        return sum(_piece_counts(self.tokenizer, pieces, self.memo))

    def _split_structured(self, budget: int) -> int:
        """Candidates ``q`` (prefix length in the normalized text), longest first; see the module
        docstring. Pieces come from a window of the text that doubles until the last candidate
        lies in its settled part (all but its last two pieces)."""
        normalized, shift = self.normalized, self.shift
        size = len(normalized)
        window = min(size, 4 * budget + 64)
        bounds: dict[int, tuple] = {}
        while True:
            pieces, starts = self._pieces(window)
            ends = [s + len(p) for s, p in zip(starts, pieces)]
            settled = len(pieces) if window == size else max(0, len(pieces) - 2)
            before = np.zeros(settled + 1, dtype=np.int64)  # before[j]: tokens of pieces 0 .. j-1
            np.cumsum(_piece_counts(self.tokenizer, pieces[:settled], self.memo), out=before[1:])
            top = size if window == size else None
            for k in range(settled):
                j = max(k - 1, 0)
                if before[j] > budget:  # every prefix ending in piece k or later has more tokens
                    top = starts[k]
                    break
                if len(pieces[k]) > 2 * _SHORT_REGION:  # a long piece: the window rule may stop inside
                    bounds[j] = self._bound(starts[j], ends[k], budget - int(before[j]))
                    if bounds[j][1] < ends[k]:
                        top = bounds[j][1]
                        break
            if top is not None:
                break
            window = min(size, window * 2)
        for q in range(top, shift, -1):
            k = bisect_right(starts, q - 1) - 1  # the piece holding character q - 1
            j = max(k - 1, 0)
            if j not in bounds:
                bounds[j] = self._bound(starts[j], ends[min(j + 1, len(pieces) - 1)], budget - int(before[j]))
            offsets, _, fewest = bounds[j]
            if before[j] + fewest[offsets[q - starts[j]]] > budget:
                continue
            if int(before[j]) + self._region_count(starts[j], q) <= budget:
                return q - shift
        return 0

    def _bound(self, start: int, end: int, budget: int) -> tuple[np.ndarray, int, np.ndarray]:
        """(char -> byte offsets, stop character, fewest tokens per byte prefix) of the normalized
        text from character ``start`` to ``end``, the table stopped by the window rule at ``budget``
        (entries past the stop are "too many")."""
        region = self.normalized[start:end]
        offsets = _utf8_offsets(region)
        fewest, stop = fewest_tokens(self.tokenizer.vocabulary, region.encode("utf-8", "surrogatepass"),
                                     budget=max(budget, 0))
        total = int(offsets[-1])
        if stop == total:
            return offsets, end, fewest
        padded = np.full(total + 1, _UNSPELLED, dtype=np.int64)
        padded[: len(fewest)] = fewest
        return offsets, start + int(np.searchsorted(offsets, stop, side="right")) - 1, padded


def _carve(tokenizer, text: str, allowed_special) -> tuple[list[tuple[int, int]], frozenset]:
    """Spans ``(start, end)`` of the allowed special-token literals in ``text``, as
    ``Tokenizer.encode(allowed_special=...)`` carves them."""
    specials = tokenizer.vocabulary.special_tokens
    if allowed_special == "all":
        allowed = frozenset(specials)
    else:
        allowed = frozenset(allowed_special) & frozenset(specials)
    regex = getattr(tokenizer, "_special_regex", None)
    if not allowed or regex is None:
        return [], allowed
    return [(m.start(), m.end()) for m in regex.finditer(text) if m.group() in allowed], allowed


def _count_with_specials(tokenizer, text: str, allowed: frozenset) -> int:
    if not allowed:
        return tokenizer.count(text)
    return len(tokenizer.encode(text, allowed_special=allowed, disallowed_special=()))


def _split_tokenizer(tokenizer, text: str, n: int, allowed_special) -> int:
    """Character length of the longest prefix with at most ``n`` tokens (see the module docstring).

    Allowed special tokens cut the text into segments whose counts add up (plus one per
    special token): only the last segment that starts within the budget can hold the answer."""
    if not text:
        return 0
    spans, allowed = _carve(tokenizer, text, allowed_special)
    starts = [0] + [end for _, end in spans]  # segment i is text[starts[i]:ends[i]], then special i
    ends = [start for start, _ in spans] + [len(text)]
    base, i = 0, 0  # base: tokens before segment i
    segment = _Segment(tokenizer, text[: ends[0]])
    while i < len(spans):
        total = segment.total(n - base)
        if total is None or base + total + 1 > n:
            break
        base += total + 1
        i += 1
        segment = _Segment(tokenizer, text[starts[i] : ends[i]])
    if i < len(spans):  # inside the special literal after segment i the literal is plain text
        for p in range(starts[i + 1] - 1, ends[i], -1):
            if base + _count_with_specials(tokenizer, text[starts[i] : p], allowed) <= n:
                return p
    return starts[i] + segment.split(n - base)


def _count_till_limit_tokenizer(tokenizer, text: str, limit: int, allowed_special) -> int | None:
    if limit < 0:
        return None
    spans, _ = _carve(tokenizer, text, allowed_special)
    bounds = [0] + [x for span in spans for x in span] + [len(text)]
    total = len(spans)
    if total > limit:
        return None
    for start, end in zip(bounds[::2], bounds[1::2]):
        part = _Segment(tokenizer, text[start:end]).total(limit - total)
        if part is None:
            return None
        total += part
    return total


# ----------------------------------------------------------------------------- public API
def split_at_tokens(text: Text, n: int, *, encoder_or_tokenizer, allowed_special=frozenset()) -> Text:
    """The longest prefix of ``text`` on a character boundary whose own encoding has at most
    ``n`` tokens (see the module docstring). Returns the same type as ``text``.
    ``allowed_special`` ("all" or a set of literals) applies to a Tokenizer only."""
    _check_n(n)
    encoder, tokenizer = _resolve(encoder_or_tokenizer)
    if tokenizer is not None:
        if not isinstance(text, str):
            raise BpebenchError("split_at_tokens with a Tokenizer needs a str (decode the bytes first)")
        return text[: _split_tokenizer(tokenizer, text, n, allowed_special)]
    data = as_byte_array(_as_bytes(text))
    cut = _split_bytes(encoder, data, n)
    prefix = data[:cut].tobytes()
    return prefix.decode("utf-8", "surrogatepass") if isinstance(text, str) else prefix


def count_till_limit(text: Text, limit: int, *, encoder_or_tokenizer, allowed_special=frozenset()) -> int | None:
    """The token count of ``text`` if it is at most ``limit``, else None (stops early)."""
    encoder, tokenizer = _resolve(encoder_or_tokenizer)
    if tokenizer is not None:
        if not isinstance(text, str):
            raise BpebenchError("count_till_limit with a Tokenizer needs a str")
        return _count_till_limit_tokenizer(tokenizer, text, limit, allowed_special)
    return _count_till_limit_bytes(encoder, as_byte_array(_as_bytes(text)), limit)


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
            identity = self.tokenizer.vocabulary.normalizer == "none"
            tiled = _pieces_with_offsets(self.tokenizer, text) if identity else None
            if tiled is not None:
                self._starts = tiled[1] + [len(text)]
                self._cum = np.concatenate([[0], np.cumsum(_piece_counts(self.tokenizer, tiled[0]))]).tolist()
            else:
                self._starts = None
            return
        self._data = _as_bytes(text)
        self.length = len(self._data)
        exact = self.encoder.is_exact() and _ordered_merges(self.encoder.vocabulary)
        self._interval = IntervalEncoding(self.encoder, self._data) if exact else None

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
        left_count = sum(_piece_counts(self.tokenizer, left[: lengths.index(left_end - start) + 1]))
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
