"""Pre-tokenizers: split text into the pieces BPE runs on, and normalizers that run first.

``RegexPretokenizer`` is the reference: ``regex.findall`` with the vocabulary's
pattern, exactly what tiktoken and HF tokenizers do. A compiled scanner
(``algorithms.pretokenize_compiled``) must split identically.
"""

from __future__ import annotations

from typing import Protocol

import regex

from .errors import BpebenchError
from .patterns import resolve_pattern

SPM_SPACE = "\u2581"  # SentencePiece's visible space "▁"


class Pretokenizer(Protocol):
    def split(self, text: str) -> list[str]: ...


class RegexPretokenizer:
    """Split with a regex pattern (a name from ``algorithms.patterns`` or a regex string)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = resolve_pattern(pattern)
        try:
            self._regex = regex.compile(self.pattern)
        except regex.error as exc:
            raise BpebenchError(f"bad pre-tokenizer pattern {pattern!r}: {exc}") from None

    def split(self, text: str) -> list[str]:
        return self._regex.findall(text)


class WholeText:
    """No pre-tokenization: the whole text is one piece."""

    pattern = None

    def split(self, text: str) -> list[str]:
        return [text] if text else []


# ----------------------------------------------------------------------------- normalizers
def normalize_none(text: str) -> str:
    return text


def denormalize_none(text: str) -> str:
    return text


def normalize_sentencepiece(text: str) -> str:
    """SentencePiece's default for BPE models: a dummy-prefix space, spaces shown as ``▁``."""
    return SPM_SPACE + text.replace(" ", SPM_SPACE) if text else text


def denormalize_sentencepiece(text: str) -> str:
    text = text.replace(SPM_SPACE, " ")
    return text[1:] if text.startswith(" ") else text


NORMALIZERS = {
    "none": (normalize_none, denormalize_none),
    "sentencepiece": (normalize_sentencepiece, denormalize_sentencepiece),
}
