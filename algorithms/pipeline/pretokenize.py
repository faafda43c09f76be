"""Pre-tokenizers: split text into the pieces BPE runs on, and normalizers that run first.

``RegexPretokenizer`` is the reference for tiktoken-style vocabularies: every whole
match of the vocabulary's pattern in order, text between matches dropped, which is
what tiktoken does (and HF too for the covering patterns of ``formats/patterns.py``;
other ``tokenizer.json`` splits run HF's own semantics, see ``pretokenizers.py``). A compiled scanner
(``bpebench.algorithms.pipeline.pretokenize_compiled``) must split identically.
"""

from __future__ import annotations

import unicodedata
from typing import Protocol

import regex

from bpebench.errors import BpebenchError
from ..formats.patterns import resolve_pattern
from .text_pieces import exponential_risk, run_matching
from .unicode_reference import whole_matches

SPM_SPACE = "\u2581"  # SentencePiece's visible space "▁"


class Pretokenizer(Protocol):
    def split(self, text: str) -> list[str]: ...


class RegexPretokenizer:
    """Split with a regex pattern (a name from ``bpebench.algorithms.formats.patterns`` or a regex string)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = resolve_pattern(pattern)
        try:
            self._regex = regex.compile(self.pattern)
        except regex.error as exc:
            raise BpebenchError(f"bad pre-tokenizer pattern {pattern!r}: {exc}") from None
        self._exponential_risk = exponential_risk(self.pattern)  # such patterns keep regex's own timeout

    def split(self, text: str) -> list[str]:
        """The whole matches, in order (tiktoken: text no match covers is dropped). A long text is
        matched without ``regex``'s timeout on a watched worker (``text_pieces.run_matching``)."""
        try:
            return run_matching(lambda timeout: self._matches(text, timeout), len(text), self._exponential_risk)
        except TimeoutError as exc:
            raise BpebenchError(f"pre-tokenizer pattern {self.pattern!r} ran longer than {exc.args[0]:g} s"
                                " (catastrophic backtracking?); set BPEBENCH_REGEX_TIMEOUT to allow more") from None

    def _matches(self, text: str, timeout: float | None) -> list[str]:
        # concurrent: the GIL is released while matching, so that threads split in parallel
        return whole_matches(self._regex, text, concurrent=True, timeout=timeout)


class WholeText:
    """No pre-tokenization: the whole text is one piece."""

    pattern = None
    one_piece = True  # every text is one piece (``FusedPipeline`` encodes a batch of them in one call)

    def split(self, text: str) -> list[str]:
        return [text] if text else []

    def piece_ends(self, data):
        """Where the pieces of the UTF-8 text ``data`` (uint8) end: at its end (none for an empty text)."""
        import numpy as np

        return np.full(1 if len(data) else 0, len(data), dtype=np.int64)


def pretokenizer_for(vocabulary) -> Pretokenizer:
    """The reference pre-tokenizer of a vocabulary: llama.cpp's for GGUF files, else its pattern's."""
    llama_pre = (vocabulary.llama_cpp or {}).get("pre")
    if llama_pre:
        from .llama_cpp_split import LlamaCppPretokenizer

        return LlamaCppPretokenizer(llama_pre)
    return RegexPretokenizer(vocabulary.pattern) if vocabulary.pattern else WholeText()


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


#: a text at least twice this long is normalized in stretches of about this many characters
NFC_STRETCH = 1 << 13


def normalize_nfc(text: str) -> str:
    """Unicode NFC (what Qwen2's ``tokenizer.json`` applies before pre-tokenizing).

    A long text is normalized in stretches that each end right after a line feed. ``unicodedata``'s
    quick check answers "maybe" for a whole text as soon as it holds one character that may compose
    with the one before it (a Devanagari sign, a Hangul vowel jamo), and then decomposes and
    recomposes all of it: 64-82 ms for 2.9 million characters of mixed documents, against 15 ms in
    stretches, most of which pass the quick check. Exact: ``NFC(a + b) == NFC(a) + NFC(b)`` when
    ``a`` ends with a line feed, a starter (combining class 0) that begins and ends no canonical
    composition, so nothing in ``b`` composes with it or is reordered across it."""
    n = len(text)
    if n < 2 * NFC_STRETCH or text.isascii():
        return unicodedata.normalize("NFC", text)
    stretches = []
    start = 0
    while start < n:
        cut = text.find("\n", start + NFC_STRETCH)
        end = n if cut < 0 else cut + 1
        stretches.append(unicodedata.normalize("NFC", text[start:end]))
        start = end
    return "".join(stretches)


def _sentencepiece_variant(*, dummy_prefix: bool, collapse: bool):
    """SentencePiece's ``identity`` normalizer with its two flags (``normalizer.cc``):
    ``remove_extra_whitespaces`` drops leading/trailing spaces and squeezes runs of
    spaces to one; ``add_dummy_prefix`` puts one ``▁`` in front of non-empty text."""

    def normalize(text: str) -> str:
        if collapse:
            text = " ".join(word for word in text.split(" ") if word)
        if not text:
            return text
        return (SPM_SPACE if dummy_prefix else "") + text.replace(" ", SPM_SPACE)

    def denormalize(text: str) -> str:
        text = text.replace(SPM_SPACE, " ")
        return text[1:] if dummy_prefix and text.startswith(" ") else text

    return normalize, denormalize


NORMALIZERS = {
    "none": (normalize_none, denormalize_none),
    "nfc": (normalize_nfc, denormalize_none),
    "sentencepiece": (normalize_sentencepiece, denormalize_sentencepiece),
    "sentencepiece-no-prefix": _sentencepiece_variant(dummy_prefix=False, collapse=False),
    "sentencepiece-collapse": _sentencepiece_variant(dummy_prefix=True, collapse=True),
    "sentencepiece-collapse-no-prefix": _sentencepiece_variant(dummy_prefix=False, collapse=True),
}
