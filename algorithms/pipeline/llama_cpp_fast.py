r"""The fused pipeline for GGUF files: llama.cpp's pre-tokenizer, then the compiled BPE stage.

llama.cpp runs C++ code instead of four of its regex lists: GPT-2's, Llama-3's, Qwen2's and
Qwen3.5's (its types ``gpt2``, ``llama3``, ``qwen2``, ``qwen35`` and the types that share their
lists, e.g. ``dbrx``, ``mpt``, ``stablelm2``). That code splits as the same pattern run by
``regex`` (the compiled pre-tokenizers of the first three follow it, the generated matcher of
``pretokenize_program`` takes Qwen3.5's), but for two things (``docs/gguf-tiktoken.md``, llama.cpp
against ``regex`` over every code point in eight contexts):

* **the Unicode tables**: llama.cpp's categories (emulated here from :mod:`unicodedata`) against
  the ``regex`` module's newer ones. What the four patterns ask of a character is whether it is
  a letter, a number, a mark, whitespace or none of these; :func:`unsafe_code_points` lists the
  code points whose answer differs (14,184 with Unicode 14 against 17: code points assigned
  since, 46 of them in the Basic Multilingual Plane);
* **``'ſ``**: the contractions of all but GPT-2 are case-insensitive, and ``regex`` folds U+017F
  (long s) to ``s`` where llama.cpp does not: every code point that folds onto a contraction
  letter but is not one of them (only ſ) is listed too.

So a text with none of the listed code points (nor a lone surrogate) splits alike under both, and
the fused pipeline encodes it with the ids llama.cpp gives; any other text takes the Tokenizer's
reference path (llama.cpp's split emulated over ``re``, then the vocabulary's encoder). Every
other byte-level pre-tokenizer has no twin: its split as emulated (``LlamaCppPretokenizer``)
feeds the compiled BPE stage, as ``regex`` feeds it for a pattern with no compiled pre-tokenizer.
The special tokens are llama.cpp's rules either way: the Tokenizer's carver cuts them out first,
and only the ordinary text between them comes here.

Complexity: the screen is one table read per character of a text that is not ASCII (ASCII text
needs no look once the 128 ASCII characters are found to agree), then the fused pipeline's linear
encode. Exact: the text either passes the screen or goes to the reference path (tested against
llama.cpp's recorded ids and against the reference path on drawn text).
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
#: or, for Qwen3.5, a pattern for the generated matcher
_SPLITTERS = {(llama_cpp_pre._GPT2,): "gpt2", (llama_cpp_pre._LLAMA3,): "llama3", (llama_cpp_pre._QWEN2,): "qwen2",
              llama_cpp_pre.PRE_TYPES["qwen35"].regexes: "qwen35"}
TWIN_PATTERNS = {"qwen35": QWEN35}
#: the contraction letters the case-insensitive patterns fold
_CONTRACTION_LETTERS = "sdmtlvre"
#: letter, number, mark, whitespace; none of them: other
_CLASS_REGEXES = (r"\p{L}+", r"\p{N}+", r"\p{M}+", r"\s+")
_CODE_POINTS = 0x110000


def compiled_pattern(pre_type: str | None) -> str | None:
    """The name of the twin (``gpt2``, ``llama3``, ``qwen2``: compiled pre-tokenizers; ``qwen35``: a
    generated matcher) that splits as llama.cpp's ``pre_type`` (a ``PRE_TYPES`` key) on screened
    text, or None."""
    spec = llama_cpp_pre.PRE_TYPES.get(pre_type or "")
    return _SPLITTERS.get(spec.regexes) if spec is not None and spec.byte_encode else None


def _all_code_points() -> str:
    """Every code point in order, surrogates replaced by NUL (a str cannot hold them alone)."""
    points = np.arange(_CODE_POINTS, dtype=np.uint32)
    points[0xD800:0xE000] = 0
    return points.tobytes().decode("utf-32-le")


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
    from . import llama_cpp_split

    digest = hashlib.sha256()
    for module in (llama_cpp_split.__file__, __file__):
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
    from ..cache.files import CacheDamaged, discard, read_checked, write_checked

    path = _cache_path(pattern_name)
    try:
        payload = read_checked(path)
        if payload is not None:
            points = np.frombuffer(payload, dtype=np.uint32)
            if len(points) and int(points.max()) >= _CODE_POINTS:
                raise CacheDamaged("a code point out of range")
            unsafe = np.zeros(_CODE_POINTS, dtype=bool)
            unsafe[points] = True
            return unsafe
    except (CacheDamaged, ValueError) as exc:
        discard(path, str(exc))
    from .llama_cpp_split import collapsed

    text = _all_code_points()
    unsafe = _disagreements(text, collapsed(text), pattern_name)
    unsafe[0xD800:0xE000] = True  # (NUL stood in for them in ``text``)
    write_checked(path, np.flatnonzero(unsafe).astype(np.uint32).tobytes())
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


class LlamaCppFused:
    """The fused pipeline of a GGUF vocabulary: with the twin of its pre-tokenizer (``pattern_name``)
    for the ordinary text that passes the screen, else with llama.cpp's split as emulated
    (``LlamaCppPretokenizer``, over ``re``) feeding the compiled BPE stage."""

    def __init__(self, vocabulary, pre_type: str, piece_cache_slots: int | None) -> None:
        from .fast_pipeline import fused_pipeline

        self.pattern_name = compiled_pattern(pre_type)
        if self.pattern_name in TWIN_PATTERNS:
            split = ("pattern", TWIN_PATTERNS[self.pattern_name])
        else:
            split = ("compiled", self.pattern_name) if self.pattern_name else ("emulated", pre_type)
        self.pipeline = fused_pipeline(vocabulary, piece_cache_slots, llama_cpp_split=split)
        self._ascii_passes = self.pattern_name is None or ascii_agrees(self.pattern_name)
        self._unsafe = None  # made on the first text that is not ASCII

    def passes(self, text: str) -> bool:
        """True when ``text`` splits alike under llama.cpp and the pipeline's pre-tokenizer."""
        if self.pattern_name is None:  # the emulated split itself
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
    if unsupported_reason(vocabulary, llama_cpp_split=("emulated", pre_type)) is not None:
        return None
    return LlamaCppFused(vocabulary, pre_type, piece_cache_slots)
