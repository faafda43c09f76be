"""The Tokenizer: the whole pipeline users compare with tiktoken and HF tokenizers.

special-token carving -> normalizer -> pre-tokenizer -> one Encoder per piece -> ids.

Any registered encoder can be plugged in; with an exact encoder the ids equal
tiktoken's (tiktoken vocabularies), HF's (``tokenizer.json``) or sentencepiece's
(SentencePiece models). The API follows tiktoken's ``Encoding``::

    tok = Tokenizer(load_vocabulary("o200k_base"), algorithm="backtracking")
    tok.encode("hello <|endoftext|>", allowed_special="all")
    tok.decode(tok.encode_ordinary("hello world"))
    tok.encode_ordinary_batch(["many", "short", "texts"])  # one compiled call

Two ways through the middle, with identical ids:

* the fused pipeline (:mod:`bpebench.algorithms.pipeline.fast_pipeline`): when the encoder is
  ``backtracking`` (the default), a whole text, or a whole batch, is split and encoded in
  one compiled call (``fused`` is True); a pattern with no compiled pre-tokenizer is split
  by ``regex`` and its pieces go through the same compiled BPE stage. Texts holding lone
  surrogates (which UTF-8 cannot carry) take the reference path below;
* the reference path: the pre-tokenizer's ``split`` gives ``str`` pieces, the
  encoder encodes them. Every other encoder uses it with ``regex.findall`` (so a
  ``naive`` Tokenizer shares no code with the fused one); ``pretokenizer="regex"``
  forces it for ``backtracking`` too.

Special tokens are carved out in Python around either path, as tiktoken does.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import AbstractSet, Collection, Iterable, Literal, Sequence

import numpy as np
import regex

from ..core.encoder import Encoder
from bpebench.errors import BpebenchError
from .parallel import MIN_PARALLEL_BYTES, cut_text, run_all, split_batch, thread_count
from .pretokenize import NORMALIZERS, RegexPretokenizer, WholeText
from ..core.registry import default_encoder_name, make_encoder
from ..formats.vocabulary import Vocabulary


class DisallowedSpecialError(BpebenchError, ValueError):
    """The text contains a special token the caller did not allow."""


@lru_cache(maxsize=64)
def _literal_regex(literals: frozenset[str]):
    """One regex matching any of ``literals``, longest first (compiled once per set)."""
    return regex.compile("|".join(map(regex.escape, sorted(literals, key=len, reverse=True))))


def _common_prefix(strings: Collection[str]) -> str:
    first, last = min(strings), max(strings)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


class Tokenizer:
    """Encode text with a vocabulary, a pre-tokenizer and any Encoder.

    Args:
        vocabulary: the Vocabulary, or a built-in name or path given to
            ``bpebench.algorithms.formats.load_vocabulary``.
        algorithm: an encoder name, an Encoder instance, or None for the fastest exact one that
            accepts the vocabulary (``heap`` when its merges run out of priority order).
        pretokenizer: None for the fastest exact choice (the compiled pre-tokenizer, fused
            with the encoder when it is ``backtracking``; else ``regex``); ``"regex"`` for the
            reference ``regex.findall``; ``"compiled"`` to require the compiled one; or any
            object with ``split(text) -> list[str]``. Without a pattern the whole text is one piece.
        piece_cache: the fused pipeline's exact piece cache (multi-token pieces of up to 24 bytes
            -> their ids, per thread, kept across calls): True for the default size (16,384 rows,
            1 MiB per thread), False to turn it off, or a power of two (rows of 64 bytes).
    """

    def __init__(
        self,
        vocabulary: Vocabulary | str | os.PathLike,
        *,
        algorithm: str | Encoder | None = None,
        pretokenizer=None,
        piece_cache: bool | int = True,
    ) -> None:
        from .fast_pipeline import supported_pattern, unsupported_reason

        if isinstance(vocabulary, (str, os.PathLike)):
            from ..formats import load_vocabulary

            vocabulary = load_vocabulary(vocabulary)
        self.vocabulary = vocabulary
        if isinstance(algorithm, Encoder):
            self.encoder = algorithm
        else:
            self.encoder = make_encoder(algorithm or default_encoder_name(vocabulary), vocabulary)
        compiled_name = supported_pattern(vocabulary) if vocabulary.pattern else None
        if pretokenizer == "compiled" and compiled_name is None:
            raise BpebenchError(
                f"{vocabulary.name}: pattern {vocabulary.pattern!r} has no compiled pre-tokenizer;"
                " use pretokenizer='regex'"
            )
        # the fused pipeline behind ``regex``: the default for a pattern with no compiled pre-tokenizer
        regex_fused = False
        if pretokenizer is None:
            # the compiled pre-tokenizer only where it is fused; elsewhere regex stays the
            # reference, so that e.g. a ``naive`` Tokenizer is an oracle independent of it
            fusable = self._encoder_is_fusable() and unsupported_reason(vocabulary) is None
            pretokenizer = "compiled" if fusable and compiled_name is not None else "regex"
            regex_fused = fusable and compiled_name is None
        if pretokenizer == "compiled":
            from .pretokenize_compiled import CompiledPretokenizer

            pretokenizer = CompiledPretokenizer(compiled_name)
        if pretokenizer == "regex":
            pretokenizer = RegexPretokenizer(vocabulary.pattern) if vocabulary.pattern else WholeText()
        self.pretokenizer = pretokenizer
        self._fused = None
        if regex_fused or (type(pretokenizer).__name__ == "CompiledPretokenizer" and self._encoder_is_fusable()):
            if unsupported_reason(vocabulary) is None:
                from .fast_pipeline import fused_pipeline

                if piece_cache is True:
                    slots = None
                elif piece_cache is False:
                    slots = 0
                elif isinstance(piece_cache, int) and piece_cache >= 0 and not piece_cache & (piece_cache - 1):
                    slots = piece_cache
                else:
                    raise BpebenchError(f"piece_cache must be True, False or a power of two, not {piece_cache!r}")
                self._fused = fused_pipeline(vocabulary, slots)
        self._normalize, self._denormalize = NORMALIZERS[vocabulary.normalizer]
        specials = vocabulary.special_tokens
        self._special_regex = _literal_regex(frozenset(specials)) if specials else None
        # every special token starts with this (tiktoken's "<|"): a text without it has none
        self._special_prefix = _common_prefix(specials) if specials else ""
        self._lookup = vocabulary.token_id if vocabulary.whole_piece_lookup else None

    def _encoder_is_fusable(self) -> bool:
        from ..backtracking import BacktrackingEncoder

        # exactly the backtracking encoder: a subclass may encode differently, and other
        # encoders must stay measurable through the Tokenizer
        return type(self.encoder) is BacktrackingEncoder and self.encoder.vocabulary is self.vocabulary

    @property
    def name(self) -> str:
        return f"{self.vocabulary.name}/{self.encoder.name}"

    @property
    def fused(self) -> bool:
        """True when texts go through the fused compiled pipeline."""
        return self._fused is not None

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.vocabulary.special_tokens)

    # ------------------------------------------------------------------ encoding
    def _ids_array(self, text: str) -> np.ndarray | list[int]:
        """Ids of ``text`` (special-token literals are plain text): an int32 array from the
        fused pipeline, or a list from the reference path."""
        if not text:
            return []
        text = self._normalize(text)
        if self._fused is not None:
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: only the reference path can split them
                pass
            else:
                return self._fused.encode_utf8(data)
        return self._reference(text)

    def encode_ordinary(self, text: str, *, num_threads: int | None = None) -> list[int]:
        """Encode ``text`` treating special-token literals as plain text. A long text is cut at
        pre-token boundaries and its parts encoded on ``num_threads`` threads (default: every
        CPU, or ``BPEBENCH_NUM_THREADS``), with the same ids."""
        if self._fused is not None and text:
            try:
                normalized = self._normalize(text)
                if len(normalized) >= MIN_PARALLEL_BYTES and thread_count(num_threads) > 1:
                    return self._fused.id_list(self._parallel_array(normalized, thread_count(num_threads)))
                data = normalized.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: only the reference path can split them
                pass
            else:
                return self._fused.encode_list(data)
        ids = self._ids_array(text)
        return ids.tolist() if isinstance(ids, np.ndarray) else ids

    def _parallel_array(self, normalized: str, threads: int) -> np.ndarray:
        """int32 ids of a long normalized text: its parts (cut at pre-token boundaries) on threads."""
        from .fast_pipeline import supported_pattern

        parts = cut_text(normalized, threads, supported_pattern(self.vocabulary))
        arrays = run_all(lambda part: self._fused.encode_utf8(part.encode("utf-8")), parts, threads)
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
        num_threads: int | None = None,
    ) -> np.ndarray:
        """``encode`` as one ``uint32`` array (tiktoken's name and semantics): the fused pipeline
        writes the ids into one buffer, and no Python int is made. A long text is spread over
        ``num_threads`` threads as in ``encode_ordinary``."""
        allowed = self._allowed_special(text, allowed_special, disallowed_special)
        segments = self._segments(text, allowed)
        if len(segments) == 1:
            return self._ordinary_array(segments[0], num_threads)
        parts = [np.array([s], dtype=np.uint32) if isinstance(s, int) else self._ordinary_array(s, num_threads)
                 for s in segments]
        return np.concatenate(parts)

    def _ordinary_array(self, text: str, num_threads: int | None = None) -> np.ndarray:
        """The ids of ordinary ``text`` as a new ``uint32`` array of exactly their length."""
        if self._fused is not None and text:
            try:
                normalized = self._normalize(text)
                if len(normalized) >= MIN_PARALLEL_BYTES and thread_count(num_threads) > 1:
                    return self._parallel_array(normalized, thread_count(num_threads)).view(np.uint32)
                data = normalized.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: only the reference path can split them
                pass
            else:
                return self._fused.encode_array(data)
        return np.array(self.encode_ordinary(text), dtype=np.uint32)

    def piece_cache_stats(self) -> dict | None:
        """The fused pipeline's piece-cache counters (see ``FusedPipeline.piece_cache_stats``), or
        None when texts do not go through the fused pipeline."""
        return self._fused.piece_cache_stats() if self._fused is not None else None

    def _reference(self, text: str) -> list[int]:
        """Ids of normalized ``text`` through ``pretokenizer.split`` and the encoder."""
        pieces = self.pretokenizer.split(text)
        lookup = self._lookup
        if lookup is None:
            out = self.encoder.encode_pieces(p.encode("utf-8", "surrogatepass") for p in pieces)
            return self._expand_hidden(out) if self.vocabulary.hidden else out
        out: list[int] = []
        encode = self.encoder.encode
        for piece in pieces:
            data = piece.encode("utf-8", "surrogatepass")
            token = lookup(data)
            if token is not None:
                out.append(token)
            else:
                out.extend(encode(data))
        return self._expand_hidden(out) if self.vocabulary.hidden else out

    def _expand_hidden(self, ids: list[int]) -> list[int]:
        """Replace helper tokens (partial SentencePiece characters) by byte-fallback ids."""
        vocab = self.vocabulary
        hidden, fallback = vocab.hidden, vocab.byte_fallback or {}
        out: list[int] = []
        for i in ids:
            if i in hidden:
                out.extend(fallback[b] for b in vocab.tokens[i])
            else:
                out.append(i)
        return out

    def _allowed_special(self, text: str, allowed_special, disallowed_special) -> frozenset[str]:
        """The special tokens to carve out of ``text``; raises on a disallowed one (tiktoken rules)."""
        specials = self.vocabulary.special_tokens
        if not specials or self._special_prefix not in text:
            return frozenset()  # fast path: no special-token literal can occur in the text
        allowed = frozenset(specials) if allowed_special == "all" else frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = frozenset(specials) - allowed
        else:
            disallowed = frozenset(disallowed_special)
        if disallowed:
            found = _literal_regex(disallowed).search(text)
            if found:
                raise DisallowedSpecialError(
                    f"text contains the special token {found.group()!r}; allow it with"
                    " allowed_special or encode it as text with disallowed_special=()"
                )
        return allowed

    def _segments(self, text: str, allowed: frozenset[str]) -> list[str | int]:
        """``text`` cut at allowed special tokens: ordinary text pieces and special ids."""
        if not allowed or self._special_regex is None:
            return [text]
        specials = self.vocabulary.special_tokens
        out: list[str | int] = []
        start = 0
        for match in self._special_regex.finditer(text):
            if match.group() not in allowed:
                continue
            out.append(text[start : match.start()])
            out.append(specials[match.group()])
            start = match.end()
        out.append(text[start:])
        return out

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Encode ``text``; special tokens in ``allowed_special`` become their ids.

        As in tiktoken, a special-token literal that is neither allowed nor explicitly
        permitted (``disallowed_special=()``) raises DisallowedSpecialError.
        """
        allowed = self._allowed_special(text, allowed_special, disallowed_special)
        out: list[int] = []
        for segment in self._segments(text, allowed):
            if isinstance(segment, int):
                out.append(segment)
            else:
                out.extend(self.encode_ordinary(segment))
        return out

    def encode_ordinary_batch(self, texts: Iterable[str], *, num_threads: int | None = None) -> list[list[int]]:
        """``[encode_ordinary(t) for t in texts]``: the texts cut into one contiguous group per
        thread (``num_threads``, default every CPU or ``BPEBENCH_NUM_THREADS``), each group one
        compiled call; the same ids on any number of threads."""
        texts = list(texts)
        if self._fused is None:
            return [self.encode_ordinary(t) for t in texts]
        normalize = self._normalize
        data: list[bytes] = []
        fallback: dict[int, list[int]] = {}
        for i, text in enumerate(texts):
            try:
                data.append(normalize(text).encode("utf-8") if text else b"")
            except UnicodeEncodeError:
                data.append(b"")
                fallback[i] = self.encode_ordinary(text, num_threads=1)
        sizes = [len(d) for d in data]
        threads = thread_count(num_threads) if sum(sizes) >= MIN_PARALLEL_BYTES else 1
        fused = self._fused

        def group(bounds: tuple[int, int]) -> list[list[int]]:
            ids, offsets = fused.encode_utf8_batch(data[bounds[0]:bounds[1]])
            return fused.id_lists(ids, offsets)

        out = [ids for part in run_all(group, split_batch(sizes, threads), threads) for ids in part]
        for i, ids_i in fallback.items():
            out[i] = ids_i
        return out

    def encode_batch(self, texts: Iterable[str], **kwargs) -> list[list[int]]:
        """``[encode(t, **kwargs) for t in texts]``, ordinary text of all texts in one compiled call."""
        unknown = set(kwargs) - {"allowed_special", "disallowed_special", "num_threads"}
        if unknown:
            raise TypeError(f"encode_batch() got unexpected keyword arguments {sorted(unknown)}")
        allowed_special = kwargs.get("allowed_special", frozenset())
        disallowed_special = kwargs.get("disallowed_special", "all")
        segmented = [self._segments(t, self._allowed_special(t, allowed_special, disallowed_special))
                     for t in texts]
        ordinary = [s for segments in segmented for s in segments if isinstance(s, str)]
        encoded = iter(self.encode_ordinary_batch(ordinary, num_threads=kwargs.get("num_threads")))
        out = []
        for segments in segmented:
            ids: list[int] = []
            for s in segments:
                if isinstance(s, int):
                    ids.append(s)
                else:
                    ids.extend(next(encoded))
            out.append(ids)
        return out

    def count(self, text: str) -> int:
        """``len(encode_ordinary(text))`` without building the list."""
        return len(self._ids_array(text))

    # ------------------------------------------------------------------ chunking
    def split_at_tokens(self, text: str, n: int) -> str:
        """The longest prefix of ``text`` ending on a character boundary whose own encoding
        has at most ``n`` tokens (never the empty string when a non-empty prefix fits)."""
        from .chunking import split_at_tokens

        return split_at_tokens(text, n, encoder_or_tokenizer=self)

    def count_till_limit(self, text: str, limit: int) -> int | None:
        """The token count of ``text``, or None as soon as it is known to exceed ``limit``."""
        from .chunking import count_till_limit

        return count_till_limit(text, limit, encoder_or_tokenizer=self)

    def count_range(self, text: str, start: int, end: int) -> int:
        """The exact token count of ``text[start:end]`` (repeated calls on one text reuse
        its preprocessing)."""
        from .chunking import count_range

        return count_range(text, start, end, encoder_or_tokenizer=self)

    # ------------------------------------------------------------------ decoding
    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return self.vocabulary.decode_bytes(ids)

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids``; invalid UTF-8 is replaced (``errors`` as in ``bytes.decode``)."""
        return self._denormalize(self.decode_bytes(ids).decode("utf-8", errors))

    def __repr__(self) -> str:
        return f"<Tokenizer {self.name}>"
