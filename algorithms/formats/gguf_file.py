"""Read the tokenizer of a GGUF file (``tokenizer.ggml.*`` keys) with llama.cpp's semantics.

The metadata is read by :mod:`bpebench.algorithms.formats.gguf_metadata` (bounded, one-line
errors). Two tokenizer models are supported:

* ``gpt2``: byte-level BPE (``tokens`` in GPT-2's byte alphabet, ``merges`` as
  ``"left right"``, priority = position). The pre-tokenizer is llama.cpp's for
  ``tokenizer.ggml.pre`` (:mod:`bpebench.algorithms.formats.llama_cpp_pre`, run by
  :mod:`bpebench.algorithms.pipeline.llama_cpp_split`); a missing name is ``default``, as in
  llama.cpp, and an unknown one is refused (``pattern=`` loads it with a regex of your
  own, tiktoken semantics). ``ignore_merges`` comes with the name.
* ``llama``: SentencePiece BPE (``tokens`` with ``▁``, ``scores``), mapped like a
  ``.model`` file, but with llama.cpp's space rule: one ``▁`` is put in front of the
  text and after every special token when ``add_space_prefix`` (default true) and
  ``remove_extra_whitespaces`` is ignored, as llama.cpp ignores it.

llama.cpp's special tokens, for both: every token typed CONTROL, USER_DEFINED or
UNKNOWN is cut out of the text by its literal, longest first; USER_DEFINED ones
even when special tokens are not parsed (``encode_ordinary``). Before that llama.cpp
retypes a few tokens by their text (end-of-generation and fill-in-the-middle
names become CONTROL, gpt-oss's channel tokens and a redundant ``<|end|>``
USER_DEFINED) and sets ``rstrip`` / ``lstrip`` by model name (Phi-3, Jina-v2,
Nomic-BERT-MoE, ModernBERT); all of that is reproduced here and recorded in
``Vocabulary.llama_cpp`` for the Tokenizer
(:mod:`bpebench.algorithms.pipeline.llama_cpp_specials`). BOS/EOS ids and flags are kept for
:func:`~bpebench.algorithms.pipeline.llama_cpp_specials.llama_tokenize`, the call that adds them.

Other tokenizer models (``bert``, ``t5``, ``rwkv``, ``gemma4``, ...) and the raw-UTF-8 BPE
pre-tokenizers (Gemma 4, Sarvam, ``whitespace``) are refused with one line.
Loading is linear in the metadata size; the result is exact against llama.cpp
(see ``docs/gguf-tiktoken.md`` for the measured parity).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bpebench.errors import VocabularyError
from .gguf_metadata import read_gguf_metadata
from .hf_json import byte_level_vocabulary, token_text_to_bytes
from .llama_cpp_pre import MISSING_PRE_NAME, PRE_NAMES, PRE_TYPES
from .sentencepiece_model import (
    BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED, Piece, normalizer_name, sentencepiece_vocabulary,
)
from .vocabulary import Vocabulary

# Token texts llama.cpp retypes as CONTROL when the file types them otherwise (llama-vocab.cpp).
_EOG_TEXTS = frozenset([
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
])
#: (GGUF key that names the token, the texts llama.cpp looks for when the key is absent)
_GUESSED = [
    ("tokenizer.ggml.eot_token_id", ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                     "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
                                     "<end_of_utterance>"]),
    ("tokenizer.ggml.eom_token_id", ["<|eom_id|>"]),
    ("tokenizer.ggml.fim_pre_token_id", ["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                                         "▁<PRE>", "<|code_prefix|>", "<|prefix|>"]),
    ("tokenizer.ggml.fim_suf_token_id", ["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                                         "▁<SUF>", "<|code_suffix|>", "<|suffix|>"]),
    ("tokenizer.ggml.fim_mid_token_id", ["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                                         "▁<MID>", "<|code_middle|>", "<|middle|>"]),
    ("tokenizer.ggml.fim_pad_token_id", ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"]),
    ("tokenizer.ggml.fim_rep_token_id", ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"]),
    ("tokenizer.ggml.fim_sep_token_id", ["<|file_sep|>"]),
]
_GUESS_ALIASES = {"tokenizer.ggml.fim_pre_token_id": "tokenizer.ggml.prefix_token_id",
                  "tokenizer.ggml.fim_suf_token_id": "tokenizer.ggml.suffix_token_id",
                  "tokenizer.ggml.fim_mid_token_id": "tokenizer.ggml.middle_token_id"}
#: gpt-oss's channel tokens, which llama.cpp always renders (USER_DEFINED)
_ALWAYS_USER_DEFINED = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")
#: model types llama.cpp knows but bpebench does not load, with what they are
_OTHER_MODELS = {"bert": "WordPiece", "t5": "Unigram", "rwkv": "RWKV", "plamo2": "PLaMo-2", "gemma4":
                 "raw-UTF-8 BPE (Gemma 4)", "hybriddna": "DNA k-mer", "whitespace": "whitespace-split BPE",
                 "no_vocab": "no vocabulary", "none": "no vocabulary"}


# llama.cpp's token attributes (bit flags; a token type maps onto one of them)
A_UNKNOWN, A_UNUSED, A_NORMAL, A_CONTROL, A_USER_DEFINED, A_BYTE = 1, 2, 4, 8, 16, 32
_ATTRIBUTE_OF_TYPE = {UNKNOWN: A_UNKNOWN, UNUSED: A_UNUSED, NORMAL: A_NORMAL, CONTROL: A_CONTROL,
                      USER_DEFINED: A_USER_DEFINED, BYTE: A_BYTE}
#: attributes llama.cpp cuts out of the text; of these, only USER_DEFINED without CONTROL or
#: UNKNOWN is cut when special tokens are not parsed
A_CARVED = A_CONTROL | A_USER_DEFINED | A_UNKNOWN


def _check_numbers(path: Path, key: str, value: Any, n: int) -> None:
    """``value`` must be an array of at least ``n`` numbers (a damaged file may hold any type there)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iuf":
        raise VocabularyError(f"{path}: {key} is {type(value).__name__} {str(value)[:40]!r}, not an array of numbers")
    if len(value) < n:
        raise VocabularyError(f"{path}: {key} has {len(value)} entries for {n} tokens")


def _attributes(path: Path, meta: dict[str, Any], n: int) -> list[int]:
    kinds = meta.get("tokenizer.ggml.token_type")
    if kinds is None:
        return [A_NORMAL] * n
    _check_numbers(path, "tokenizer.ggml.token_type", kinds, n)
    return [_ATTRIBUTE_OF_TYPE.get(int(k), 0) for k in kinds[:n]]


def _retype(meta: dict[str, Any], texts: list[str], attrs: list[int]) -> list[int]:
    """llama.cpp's changes to token attributes by token text (see the module docstring)."""
    attrs = list(attrs)
    by_text = {t: i for i, t in enumerate(texts)}
    n = len(texts)
    for key, candidates in _GUESSED:
        if _special_id(meta, key, None, n) is not None or _special_id(meta, _GUESS_ALIASES.get(key, ""), None, n):
            continue
        # llama.cpp takes the first candidate its hash map yields; with one present, that one
        present = [t for t in candidates if t in by_text]
        if present:
            attrs[by_text[present[0]]] |= A_CONTROL
    eog = _EOG_TEXTS & by_text.keys()
    for text in eog:
        attrs[by_text[text]] |= A_CONTROL
    for text in _ALWAYS_USER_DEFINED:
        if text in by_text:
            attrs[by_text[text]] = A_USER_DEFINED
    if "<|end|>" in eog and (("<|return|>" in eog and "<|call|>" in eog)
                             or ({"<|call|>", "<|calls|>"} & eog and "<|flush|>" in eog)):
        attrs[by_text["<|end|>"]] = A_USER_DEFINED
    if "</s>" in eog and ({"<|tool_response>", "<|plamo:eos|>"} & eog):
        attrs[by_text["</s>"]] = A_NORMAL
    return attrs


def _strip_attributes(path: Path, meta: dict[str, Any], texts: list[str], carved: list[int]
                      ) -> tuple[list[str], list[str]]:
    """(lstrip texts, rstrip texts): llama.cpp sets these by model name only."""
    pre = str(meta.get("tokenizer.ggml.pre", ""))
    arch = str(meta.get("general.architecture", ""))
    name = str(meta.get("general.name", "")).lower()
    present = set(texts)
    if any(p in pre for p in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
            a in arch for a in ("nomic-bert-moe", "jina-bert-v3")):
        return (["<mask>"] if "<mask>" in present else []), []
    if "phi-3" in name or "phi3" in name:
        missing = sorted({"</s>", "<unk>", "<s>", "<|endoftext|>"} - present)
        if missing:  # llama.cpp sets their attributes and fails to load without them
            raise VocabularyError(f"{path}: a model named {meta.get('general.name')!r} (Phi-3) needs the tokens"
                                  f" {', '.join(missing)}; llama.cpp does not load it without them")
        rstrip = {texts[i] for i in carved} | {"</s>"}
        return [], sorted(rstrip - {"<unk>", "<s>", "<|endoftext|>"})
    if "modern-bert" in name:
        return (["[MASK]"] if "[MASK]" in present else []), []
    return [], []


def _special_id(meta: dict[str, Any], key: str, default: int | None, n: int) -> int | None:
    if default is not None and default >= n:
        default = None
    value = meta.get(key)
    if isinstance(value, (int, np.integer)) and 0 <= value < n:
        return int(value)
    return default


def _merge_pairs(path: Path, merges) -> list[tuple[str, str]]:
    pairs = []
    for index, merge in enumerate(merges):
        cut = merge.find(" ", 1)  # llama.cpp splits at the first space after the first character
        if cut == -1:
            raise VocabularyError(f"{path}: merge {index} is {merge!r}; expected 'left right'")
        pairs.append((merge[:cut], merge[cut + 1:]))
    return pairs


def load_gguf(path: str | Path, *, name: str | None = None, pattern: str | None = None) -> Vocabulary:
    """A Vocabulary from the tokenizer metadata of a GGUF file (see the module docstring)."""
    path = Path(path)
    meta = read_gguf_metadata(path)
    model = meta.get("tokenizer.ggml.model")
    texts = meta.get("tokenizer.ggml.tokens")
    if model is None or texts is None:
        raise VocabularyError(f"{path}: GGUF file has no tokenizer (tokenizer.ggml.model / tokens missing)")
    if not isinstance(texts, list) or not texts:
        raise VocabularyError(f"{path}: tokenizer.ggml.tokens is not a list of strings")
    if model in _OTHER_MODELS:
        raise VocabularyError(f"{path}: GGUF tokenizer model {model!r} ({_OTHER_MODELS[model]}) is not BPE;"
                              " only 'gpt2' (byte-level BPE) and 'llama' (SentencePiece BPE) load")
    if model not in ("gpt2", "llama"):
        raise VocabularyError(f"{path}: GGUF tokenizer model {model!r} is not supported (gpt2 and llama are)")
    attrs = _retype(meta, texts, _attributes(path, meta, len(texts)))
    label = name or path.name.split(".")[0]
    if model == "gpt2":
        vocab, info = _byte_level(path, meta, texts, attrs, label, pattern)
    else:
        vocab, info = _sentencepiece(path, meta, texts, attrs, label)
    carved = [i for i, a in enumerate(attrs) if a & A_CARVED]
    lstrip, rstrip = _strip_attributes(path, meta, texts, carved)
    info.update(
        user_defined=[texts[i] for i in carved if not attrs[i] & (A_CONTROL | A_UNKNOWN)],
        lstrip=lstrip, rstrip=rstrip,
        add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", info.pop("add_bos"))),
        add_eos=bool(meta.get("tokenizer.ggml.add_eos_token", False)),
    )
    vocab.llama_cpp = info
    return vocab


def _byte_level(path: Path, meta: dict, texts: list[str], attrs: list[int], label: str, pattern: str | None):
    merges = meta.get("tokenizer.ggml.merges")
    pre_value = meta.get("tokenizer.ggml.pre")
    pre_name = MISSING_PRE_NAME if pre_value is None else str(pre_value)
    pre = PRE_NAMES.get(pre_name)
    if pre is None and pattern is None:
        raise VocabularyError(
            f"{path}: GGUF pre-tokenizer {pre_name!r} is not one llama.cpp knows ({len(PRE_NAMES)} known, e.g."
            " llama-bpe, qwen2, gpt-2, deepseek-v3); pass pattern= to load it with a regex of your own"
        )
    if pre is not None and not PRE_TYPES[pre.type].byte_encode:
        raise VocabularyError(f"{path}: GGUF pre-tokenizer {pre_name!r} runs BPE on raw UTF-8 with escaped spaces"
                              " (SentencePiece style); not supported")
    if merges is None:
        raise VocabularyError(f"{path}: gpt2 tokenizer without tokenizer.ggml.merges")
    if not isinstance(merges, list):
        raise VocabularyError(f"{path}: tokenizer.ggml.merges is not a list of strings")
    # llama.cpp's merges may form any token whose text is in GPT-2's byte alphabet, special or
    # not; the others (and empty ones) can never come out of byte-level BPE
    foreign = {i: t for i, t in enumerate(texts) if not t or token_text_to_bytes(t) is None}
    by_id = {i: t for i, t in enumerate(texts) if i not in foreign}
    vocab = byte_level_vocabulary(by_id, _merge_pairs(path, merges), foreign, name=label, pattern=pattern,
                                  whole_piece_lookup=bool(pre and pre.ignore_merges), source=str(path))
    vocab.special_tokens = {t: i for i, (t, a) in enumerate(zip(texts, attrs)) if a & A_CARVED}
    n = len(texts)
    bos_default = None if (pre and pre.no_bos) else 11
    info = {
        "pre": None if pattern is not None else pre.type,
        "pre_name": pre_name,
        "bos": _special_id(meta, "tokenizer.ggml.bos_token_id", bos_default, n),
        "eos": _special_id(meta, "tokenizer.ggml.eos_token_id", 11, n),
        "add_bos": bool(pre and pre.add_bos),
    }
    return vocab, info


def _sentencepiece(path: Path, meta: dict, texts: list[str], attrs: list[int], label: str):
    scores = meta.get("tokenizer.ggml.scores")
    if scores is None:
        raise VocabularyError(f"{path}: llama tokenizer without tokenizer.ggml.scores")
    _check_numbers(path, "tokenizer.ggml.scores", scores, len(texts))
    present = set(texts)
    for text, attr in zip(texts, attrs):
        if attr & (A_CARVED | A_BYTE) and any(text[:i] in present and text[i:] in present for i in range(1, len(text))):
            # llama.cpp's SentencePiece merges look up every token, special or not
            raise VocabularyError(f"{path}: llama.cpp's merges can form the special token {text!r} from two other"
                                  " tokens; bpebench does not reproduce that")
    pieces = []
    for text, score, attr in zip(texts, scores, attrs):
        # a carved token is a literal cut out of the text (never formed by merges)
        kind = CONTROL if attr & A_CARVED else BYTE if attr & A_BYTE else NORMAL
        pieces.append(Piece(text, float(score), kind))
    add_prefix = bool(meta.get("tokenizer.ggml.add_space_prefix", True))
    normalizer = normalizer_name(add_dummy_prefix=add_prefix, remove_extra_whitespaces=False)
    vocab = sentencepiece_vocabulary(pieces, name=label, normalizer=normalizer, source=str(path))
    # llama.cpp carves these literals out of the text itself (sentencepiece never does)
    vocab.special_tokens = {t: i for i, (t, a) in enumerate(zip(texts, attrs)) if a & A_CARVED}
    n = len(texts)
    info = {
        "pre": None,
        "pre_name": None,
        "bos": _special_id(meta, "tokenizer.ggml.bos_token_id", 1, n),
        "eos": _special_id(meta, "tokenizer.ggml.eos_token_id", 2, n),
        "add_bos": True,
    }
    return vocab, info
