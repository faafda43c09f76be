"""The Tokenizer: the whole pipeline users compare with tiktoken and HF tokenizers.

special-token carving -> normalizer -> pre-tokenizer -> one Encoder per piece -> ids.

Any registered encoder can be plugged in; with an exact encoder the ids equal
tiktoken's (tiktoken vocabularies), HF's (``tokenizer.json``) or sentencepiece's
(SentencePiece models). The API follows tiktoken's ``Encoding``::

    tok = Tokenizer(load_vocabulary("o200k_base"), algorithm="backtracking")
    tok.encode("hello <|endoftext|>", allowed_special="all")
    tok.decode(tok.encode_ordinary("hello world"))
"""

from __future__ import annotations

from typing import AbstractSet, Collection, Iterable, Literal, Sequence

import regex

from .encoder import Encoder
from .errors import BpebenchError
from .pretokenize import NORMALIZERS, RegexPretokenizer, WholeText
from .registry import default_encoder_name, make_encoder
from .vocabulary import Vocabulary


class DisallowedSpecialError(BpebenchError, ValueError):
    """The text contains a special token the caller did not allow."""


class Tokenizer:
    """Encode text with a vocabulary, a pre-tokenizer and any Encoder.

    Args:
        vocabulary: the Vocabulary (see ``algorithms.loaders.load_vocabulary``).
        algorithm: an encoder name, an Encoder instance, or None for the fastest exact one.
        pretokenizer: an object with ``split(text) -> list[str]``; by default the
            vocabulary's pattern through the ``regex`` module, or the whole text when
            the vocabulary has no pattern.
    """

    def __init__(
        self,
        vocabulary: Vocabulary,
        *,
        algorithm: str | Encoder | None = None,
        pretokenizer=None,
    ) -> None:
        self.vocabulary = vocabulary
        if isinstance(algorithm, Encoder):
            self.encoder = algorithm
        else:
            self.encoder = make_encoder(algorithm or default_encoder_name(), vocabulary)
        if pretokenizer is None:
            pretokenizer = RegexPretokenizer(vocabulary.pattern) if vocabulary.pattern else WholeText()
        self.pretokenizer = pretokenizer
        self._normalize, self._denormalize = NORMALIZERS[vocabulary.normalizer]
        specials = sorted(vocabulary.special_tokens, key=len, reverse=True)
        self._special_regex = regex.compile("|".join(map(regex.escape, specials))) if specials else None
        self._lookup = vocabulary.token_id if vocabulary.whole_piece_lookup else None

    @property
    def name(self) -> str:
        return f"{self.vocabulary.name}/{self.encoder.name}"

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.vocabulary.special_tokens)

    # ------------------------------------------------------------------ encoding
    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` treating special-token literals as plain text."""
        if not text:
            return []
        pieces = self.pretokenizer.split(self._normalize(text))
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
        specials = self.vocabulary.special_tokens
        if allowed_special == "all":
            allowed_special = set(specials)
        if disallowed_special == "all":
            disallowed_special = set(specials) - set(allowed_special)
        if disallowed_special:
            pattern = regex.compile("|".join(map(regex.escape, sorted(disallowed_special, key=len, reverse=True))))
            found = pattern.search(text)
            if found:
                raise DisallowedSpecialError(
                    f"text contains the special token {found.group()!r}; allow it with"
                    " allowed_special or encode it as text with disallowed_special=()"
                )
        if not allowed_special or self._special_regex is None:
            return self.encode_ordinary(text)
        out: list[int] = []
        start = 0
        for match in self._special_regex.finditer(text):
            if match.group() not in allowed_special:
                continue
            out.extend(self.encode_ordinary(text[start : match.start()]))
            out.append(specials[match.group()])
            start = match.end()
        out.extend(self.encode_ordinary(text[start:]))
        return out

    def encode_batch(self, texts: Iterable[str], **kwargs) -> list[list[int]]:
        return [self.encode(t, **kwargs) for t in texts]

    def encode_ordinary_batch(self, texts: Iterable[str]) -> list[list[int]]:
        return [self.encode_ordinary(t) for t in texts]

    def count(self, text: str) -> int:
        return len(self.encode_ordinary(text))

    # ------------------------------------------------------------------ decoding
    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return self.vocabulary.decode_bytes(ids)

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids``; invalid UTF-8 is replaced (``errors`` as in ``bytes.decode``)."""
        return self._denormalize(self.decode_bytes(ids).decode("utf-8", errors))

    def __repr__(self) -> str:
        return f"<Tokenizer {self.name}>"
