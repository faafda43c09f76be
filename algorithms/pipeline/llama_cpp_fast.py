r"""The fused pipeline for GGUF files: llama.cpp's pre-tokenizer, then the compiled BPE stage.

llama.cpp runs C++ code instead of four of its regex lists: GPT-2's, Llama-3's, Qwen2's and
Qwen3.5's (its types ``gpt2``, ``llama3``, ``qwen2``, ``qwen35`` and the types that share their
lists, e.g. ``dbrx``, ``mpt``, ``stablelm2``). That code splits as the same pattern run by
``regex`` (the compiled pre-tokenizers of the first three follow it, the generated matcher of
``pretokenize_program`` takes Qwen3.5's), but for two things (``docs/gguf-tiktoken.md``, llama.cpp
against ``regex`` over every code point in eight contexts): the Unicode tables (llama.cpp's
categories, emulated here from :mod:`unicodedata`, against the ``regex`` module's newer ones), and
``'ſ``: ``regex`` folds U+017F (long s) onto the case-insensitive contractions' ``s``, llama.cpp
does not. GPT-4o's list (Llama 4's), which llama.cpp runs as a regex over collapsed categories, is
o200k's with case classes under which every non-ASCII letter is both cases and marks are not
letters.

All of that is how characters are classed, and a compiled pre-tokenizer reads its classes from the
two-stage table its Plan carries: :func:`class_tables` gives a compiled twin llama.cpp's classes
for every non-ASCII code point, and it then splits as llama.cpp on every text. Qwen3.5's generated
matcher reads ``regex``'s classes, so its texts are screened: :func:`unsafe_code_points` lists the
code points whose class (letter, number, mark, whitespace, other) the two sides answer differently
(14,184 with Unicode 14 against 17, all assigned since 14), with ſ and the surrogates; a text
holding one, and every text of a pre-tokenizer with no twin, is split by the emulation of
llama.cpp's pre-tokenizer (``LlamaCppPretokenizer``, over ``re``, as the reference path splits)
and its pieces go to the same compiled BPE stage, as ``regex``'s go for a pattern with no compiled
pre-tokenizer. The special tokens are llama.cpp's rules throughout: the Tokenizer's carver cuts
them out first, and only the ordinary text between them comes here.

Complexity: linear, as the fused pipeline (the screen adds one table read per character of a text
that is not ASCII); a compiled list's split is the generated matcher's, the emulated split
``re``'s. Exact: tested against llama.cpp's recorded ids and against the reference path on drawn
text and on words the two tables class differently.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from ..formats import llama_cpp_pre

#: Qwen3.5's pattern as ``regex`` spells it (letters and marks in one run); no compiled
#: pre-tokenizer has it, the generated matcher of ``pretokenize_program`` splits it
QWEN35 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
#: the twin of each of llama.cpp's hand-written splitters (its regex list): a compiled pre-tokenizer
#: or, for Qwen3.5, a pattern for the generated matcher; and o200k's compiled pre-tokenizer for
#: GPT-4o's list (Llama 4's), which llama.cpp runs as a regex on collapsed categories
_SPLITTERS = {(llama_cpp_pre._GPT2,): "gpt2", (llama_cpp_pre._LLAMA3,): "llama3", (llama_cpp_pre._QWEN2,): "qwen2",
              llama_cpp_pre.PRE_TYPES["qwen35"].regexes: "qwen35", llama_cpp_pre.PRE_TYPES["gpt4o"].regexes: "o200k"}
TWIN_PATTERNS = {"qwen35": QWEN35}
#: the contraction letters the case-insensitive patterns fold
_CONTRACTION_LETTERS = "sdmtlvre"
#: what Qwen3.5's pattern asks of a character: letter, number, mark, whitespace; none of them: other
_CLASS_REGEXES = (r"\p{L}+", r"\p{N}+", r"\p{M}+", r"\s+")


def compiled_pattern(pre_type: str | None) -> str | None:
    """The name of the twin (``gpt2``, ``llama3``, ``qwen2``: compiled pre-tokenizers; ``qwen35``: a
    generated matcher) that splits as llama.cpp's ``pre_type`` (a ``PRE_TYPES`` key) on screened
    text, or None."""
    spec = llama_cpp_pre.PRE_TYPES.get(pre_type or "")
    return _SPLITTERS.get(spec.regexes) if spec is not None and spec.byte_encode else None


def _classes(text: str, finders) -> np.ndarray:
    """uint8 per character of ``text``: 1 + the index of the finder whose match covers it (the
    classes do not overlap), 0 if none."""
    out = np.zeros(len(text), dtype=np.uint8)
    for k, finder in enumerate(finders):
        for match in finder(text):
            out[match.start():match.end()] = k + 1
    return out


def _cache_path(pattern_name: str):
    """Where the table of ``pattern_name`` is kept: its key holds both Unicode tables' versions and
    the two modules that define the classes compared."""
    import hashlib
    import unicodedata

    import regex

    from ..cache.files import cache_root
    from . import llama_cpp_split, unicode_reference

    digest = hashlib.sha256()
    for module in (llama_cpp_split.__file__, __file__, unicode_reference.TABLE):
        with open(module, "rb") as f:
            digest.update(f.read())
    return cache_root() / (f"llama_cpp_unsafe_{pattern_name}_unicodedata-{unicodedata.unidata_version}"
                           f"_regex-{regex.__version__}_{digest.hexdigest()[:16]}.bin")


@lru_cache(maxsize=None)
def unsafe_code_points(pattern_name: str) -> np.ndarray:
    """bool[0x110000]: the code points on which llama.cpp's split (as emulated) and the twin named
    ``pattern_name`` may differ; surrogates included. Made once per machine (0.4-0.9 s, most of it
    ``unicodedata`` over every code point) and kept in the cache root as the sorted list of those
    code points (read back in a few milliseconds)."""
    from ..cache.files import read_or_make
    from .llama_cpp_split import collapsed
    from .unicode_table import N_CODEPOINTS, _all_codepoints

    def make() -> bytes:
        text = _all_codepoints()  # the twin's reading: newer code points as their stand-ins
        raw = "".join(map(chr, range(N_CODEPOINTS)))
        unsafe = _disagreements(text, collapsed(raw), pattern_name)
        unsafe[0xD800:0xE000] = True
        return np.flatnonzero(unsafe).astype(np.uint32).tobytes()

    def valid(payload: bytes) -> bool:
        points = np.frombuffer(payload, dtype=np.uint32)
        return len(payload) % 4 == 0 and (len(points) == 0 or int(points.max()) < N_CODEPOINTS)

    points = np.frombuffer(read_or_make(_cache_path(pattern_name), make, valid, "llama.cpp class list"),
                           dtype=np.uint32)
    unsafe = np.zeros(N_CODEPOINTS, dtype=bool)
    unsafe[points] = True
    return unsafe


@lru_cache(maxsize=None)
def ascii_agrees(pattern_name: str) -> bool:
    """Whether llama.cpp and the twin class every ASCII character alike (then an ASCII text passes
    the screen without a look, and without the whole table being made)."""
    text = "".join(map(chr, range(128)))
    return not _disagreements(text, text, pattern_name).any()  # ASCII collapses to itself


def _disagreements(text: str, folded: str, pattern_name: str) -> np.ndarray:
    """bool per character of ``text``: where llama.cpp's class (computed on ``folded``, the text
    with every non-ASCII code point collapsed to its category's placeholder, through the
    emulation's own translation of ``\\p{..}`` and ``\\s``) and ``regex``'s differ, or where a
    case-insensitive contraction would match under ``regex`` only."""
    import regex

    from .llama_cpp_split import collapse_regex, ecmascript_to_python

    theirs = [re.compile(ecmascript_to_python(collapse_regex(r)), re.ASCII).finditer for r in _CLASS_REGEXES]
    ours = [regex.compile(r).finditer for r in _CLASS_REGEXES]
    differ = _classes(folded, theirs) != _classes(text, ours)
    if pattern_name != "gpt2":  # (?i:'s|'t|...): regex folds other letters onto these
        for match in regex.finditer(f"(?i:[{_CONTRACTION_LETTERS}])", text):
            if match.group() not in _CONTRACTION_LETTERS + _CONTRACTION_LETTERS.upper():
                differ[match.start()] = True
    return differ


@lru_cache(maxsize=None)
def class_tables(pattern_name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(stage1, stage2)``: the compiled pre-tokenizer's class table (``unicode_table``) with
    llama.cpp's answer for every non-ASCII code point: a letter, number or whitespace as its
    categories say (``category_codes``, Unicode 14.0 here), no contraction letter (llama.cpp spells
    them ``'[sS]``, so ſ folds to none), and for GPT-4o's list (``o200k``) every letter in both case
    classes and marks in neither. The twin's compiled pre-tokenizer reading it splits as llama.cpp
    on every text, with no screen. Kept in the cache root like the list of ``unsafe_code_points``."""
    from ..cache.files import read_or_make
    from .llama_cpp_split import _LETTER, _NUMBER, _VTAB, category_codes
    from .pretokenize_compiled import get_tables
    from .unicode_table import (BLOCK, F_L, F_LO, F_N, F_UP, F_WS, FOLD_SHIFT, N_BLOCKS, N_CODEPOINTS,
                                two_level)

    def make() -> bytes:
        stage1, stage2 = get_tables()
        points = np.arange(N_CODEPOINTS)
        flat = stage2[(stage1[points >> 8].astype(np.int64) << 8) | (points & 255)].astype(np.uint16)
        codes = category_codes()
        above = points >= 128  # ASCII keeps regex's bits: the two sides class it alike (tested)
        cased = F_UP | F_LO if pattern_name == "o200k" else 0
        flat[above] &= np.uint16(~(F_L | F_N | F_WS | F_UP | F_LO | (0xF << FOLD_SHIFT)) & 0xFFFF)
        flat[above & (codes == _LETTER)] |= np.uint16(F_L | cased)
        flat[above & (codes == _NUMBER)] |= np.uint16(F_N)
        flat[above & (codes == _VTAB)] |= np.uint16(F_WS)
        one, two = two_level(flat)
        return one.astype(np.int32).tobytes() + two.astype(np.uint16).tobytes()

    def split(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
        stage1 = np.frombuffer(payload, dtype=np.int32, count=N_BLOCKS)
        return stage1, np.frombuffer(payload, dtype=np.uint16, offset=stage1.nbytes)

    def valid(payload: bytes) -> bool:
        if len(payload) < 4 * N_BLOCKS or (len(payload) - 4 * N_BLOCKS) % (2 * BLOCK):
            return False
        stage1, stage2 = split(payload)
        return int(stage1.min()) >= 0 and int(stage1.max()) < len(stage2) // BLOCK

    return split(bytearray(read_or_make(_cache_path(f"classes_{pattern_name}"), make, valid,
                                         "llama.cpp class table")))


class LlamaCppFused:
    """The fused pipelines of a GGUF vocabulary: with the twin of its pre-tokenizer (``pattern_name``)
    for the ordinary text that passes the screen, else with llama.cpp's regex list (compiled, or
    emulated over ``re``) feeding the compiled BPE stage."""

    def __init__(self, vocabulary, pre_type: str, piece_cache_slots: int | None) -> None:
        self.pattern_name = compiled_pattern(pre_type)
        if self.pattern_name in TWIN_PATTERNS:
            split = ("pattern", TWIN_PATTERNS[self.pattern_name])
        else:
            split = ("compiled", self.pattern_name) if self.pattern_name else ("list", pre_type)
        self._vocabulary, self._piece_cache_slots, self._pre_type = vocabulary, piece_cache_slots, pre_type
        self.pipeline = self._pipeline(split)
        self._listed = self.pipeline if self.pattern_name is None else None  # made on the first text stopped
        # the compiled twins read llama.cpp's class table (``class_tables``): only a generated
        # matcher's, whose classes are ``regex``'s, needs the screen
        self._screened = self.pattern_name in TWIN_PATTERNS
        self._ascii_passes = not self._screened or ascii_agrees(self.pattern_name)
        self._unsafe = None  # made on the first text that is not ASCII

    def _pipeline(self, split: tuple[str, str]):
        from .fast_pipeline import fused_pipeline

        classes = class_tables(split[1]) if split[0] == "compiled" else None  # llama.cpp's view of each character
        return fused_pipeline(self._vocabulary, self._piece_cache_slots, split=split, classes=classes)

    @property
    def listed(self):
        """The pipeline fed by llama.cpp's regex list, or None while none has been made."""
        return self._listed

    def pipeline_for(self, text: str):
        """The pipeline that encodes ``text`` as llama.cpp does: the twin's when it passes the
        screen, else the one llama.cpp's regex list feeds."""
        if self.passes(text):
            return self.pipeline
        if self._listed is None:
            self._listed = self._pipeline(("list", self._pre_type))
        return self._listed

    def passes(self, text: str) -> bool:
        """True when ``text`` splits alike under llama.cpp and the pipeline's pre-tokenizer."""
        if not self._screened:  # a compiled twin with llama.cpp's classes, or the regex list itself
            return True
        if text.isascii() and self._ascii_passes:
            return True
        if self._unsafe is None:
            self._unsafe = unsafe_code_points(self.pattern_name)
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        return not self._unsafe[points].any()


def llama_cpp_fused(vocabulary, piece_cache_slots: int | None) -> LlamaCppFused | None:
    """The fused path of a byte-level GGUF ``vocabulary``, or None when it has none: no llama.cpp
    pre-tokenizer (``pattern=`` replaced it), byte values with no token (llama.cpp drops them),
    or merges the fused pipeline cannot take."""
    from .fast_pipeline import unsupported_reason

    info = vocabulary.llama_cpp
    if info is None or vocabulary.rule != "merges" or vocabulary.hidden or vocabulary.normalizer != "none":
        return None
    pre_type = info.get("pre")
    if pre_type not in llama_cpp_pre.PRE_TYPES or (np.asarray(vocabulary.byte_token) < 0).any():
        return None
    if unsupported_reason(vocabulary, split=("list", pre_type)) is not None:
        return None
    return LlamaCppFused(vocabulary, pre_type, piece_cache_slots)
