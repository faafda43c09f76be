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

* the fused pipeline (:mod:`bpebench.algorithms.pipeline.fast_pipeline`): when the vocabulary's
  pattern has a compiled pre-tokenizer and the encoder is ``backtracking`` (the
  default), a whole text, or a whole batch, is split and encoded in one numba
  call (``fused`` is True). Texts holding lone surrogates (which UTF-8 cannot
  carry) take the reference path below, split by the compiled pre-tokenizer;
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
from .pretokenize import NORMALIZERS, pretokenizer_for
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
    """

    def __init__(
        self,
        vocabulary: Vocabulary | str | os.PathLike,
        *,
        algorithm: str | Encoder | None = None,
        pretokenizer=None,
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
        if pretokenizer is None:
            # the compiled pre-tokenizer only where it is fused; elsewhere regex stays the
            # reference, so that e.g. a ``naive`` Tokenizer is an oracle independent of it
            fusable = compiled_name is not None and self._encoder_is_fusable()
            pretokenizer = "compiled" if fusable and unsupported_reason(vocabulary) is None else "regex"
        if pretokenizer == "compiled":
            from .pretokenize_compiled import CompiledPretokenizer

            pretokenizer = CompiledPretokenizer(compiled_name)
        if pretokenizer == "regex":
            pretokenizer = pretokenizer_for(vocabulary)
        self.pretokenizer = pretokenizer
        self._fused = None
        if type(pretokenizer).__name__ == "CompiledPretokenizer" and self._encoder_is_fusable():
            if unsupported_reason(vocabulary) is None:
                from .fast_pipeline import fused_pipeline

                self._fused = fused_pipeline(vocabulary)
        self._normalize, self._denormalize = NORMALIZERS[vocabulary.normalizer]
        specials = vocabulary.special_tokens
        self._special_regex = _literal_regex(frozenset(specials)) if specials else None
        # every special token starts with this (tiktoken's "<|"): a text without it has none
        self._special_prefix = _common_prefix(specials) if specials else ""
        self._lookup = vocabulary.token_id if vocabulary.whole_piece_lookup else None
        self._carver = self._unencodable = None
        if vocabulary.llama_cpp is not None:  # llama.cpp's special-token rules (GGUF files)
            from .llama_cpp_specials import LlamaCppCarver, missing_bytes_regex

            self._carver = LlamaCppCarver(vocabulary)
            if vocabulary.rule == "merges":
                self._unencodable = missing_bytes_regex(vocabulary)

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

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special-token literals as plain text (but for literals a
        GGUF file says are always cut out, llama.cpp's USER_DEFINED tokens)."""
        if self._carver is not None and self._carver.always:
            return self._join(self._carver.segments(text, frozenset()))
        return self._encode_plain(text)

    def _encode_plain(self, text: str) -> list[int]:
        """Ids of ``text`` with no special token carved out."""
        if self._fused is not None and text:
            try:
                data = self._normalize(text).encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: only the reference path can split them
                pass
            else:
                return self._fused.encode_list(data)
        ids = self._ids_array(text)
        return ids.tolist() if isinstance(ids, np.ndarray) else ids

    def _reference(self, text: str) -> list[int]:
        """Ids of normalized ``text`` through ``pretokenizer.split`` and the encoder."""
        pieces = self.pretokenizer.split(text)
        if self._unencodable is not None:
            return self._reference_dropping(pieces)
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

    def _reference_dropping(self, pieces: list[str]) -> list[int]:
        """llama.cpp drops the bytes a byte-level GGUF vocabulary has no token for (Falcon's lacks
        some control bytes): the rest of each piece is encoded around them, as BPE there never
        merges across such a byte."""
        out: list[int] = []
        for piece in pieces:
            data = piece.encode("utf-8", "surrogatepass")
            parts = [part for part in self._unencodable.split(data) if part]
            whole = self._lookup(data) if self._lookup is not None and parts == [data] else None
            if whole is not None:
                out.append(whole)
            else:
                for part in parts:
                    out.extend(self.encoder.encode(part))
        return out

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
            disallowed = frozenset(specials) - allowed - (self._carver.always if self._carver else frozenset())
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
        if self._carver is not None:
            return self._carver.segments(text, allowed)
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
        return self._join(self._segments(text, allowed))

    def _join(self, segments: list[str | int]) -> list[int]:
        out: list[int] = []
        for segment in segments:
            if isinstance(segment, int):
                out.append(segment)
            else:
                out.extend(self._encode_plain(segment))
        return out

    def encode_ordinary_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """``[encode_ordinary(t) for t in texts]``, with all texts in one compiled call."""
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
                fallback[i] = self.encode_ordinary(text)
        ids, offsets = self._fused.encode_utf8_batch(data)
        out = self._fused.id_lists(ids, offsets)
        for i, ids_i in fallback.items():
            out[i] = ids_i
        return out

    def encode_batch(self, texts: Iterable[str], **kwargs) -> list[list[int]]:
        """``[encode(t, **kwargs) for t in texts]``, ordinary text of all texts in one compiled call."""
        unknown = set(kwargs) - {"allowed_special", "disallowed_special"}
        if unknown:
            raise TypeError(f"encode_batch() got unexpected keyword arguments {sorted(unknown)}")
        allowed_special = kwargs.get("allowed_special", frozenset())
        disallowed_special = kwargs.get("disallowed_special", "all")
        segmented = [self._segments(t, self._allowed_special(t, allowed_special, disallowed_special))
                     for t in texts]
        ordinary = [s for segments in segmented for s in segments if isinstance(s, str)]
        encoded = iter(self.encode_ordinary_batch(ordinary))
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
        if self._carver is not None and self._carver.always:
            return len(self.encode_ordinary(text))
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
