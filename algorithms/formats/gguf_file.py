"""Read the tokenizer of a GGUF file (``tokenizer.ggml.*`` keys) with the ``gguf`` package.

Two tokenizer models are supported, each through the loader of the format it came from:

* ``gpt2``: byte-level BPE, as in ``tokenizer.json``: ``tokens`` (byte-level
  strings), ``merges`` (``"a b"``, priority = position) and ``token_type``
  (control and user-defined tokens become special tokens). The pre-tokenizer
  regex is not stored in GGUF, only a name (``tokenizer.ggml.pre``); the names
  llama.cpp uses for the patterns in ``bpebench.algorithms.formats.patterns`` are mapped here,
  anything else is refused unless ``pattern=`` is given.
* ``llama``: SentencePiece BPE: ``tokens`` (with ``▁``), ``scores`` and
  ``token_type`` are the pieces of a ``.model`` file, and
  ``add_space_prefix`` / ``remove_extra_whitespaces`` its normalizer flags.

Only the metadata is read (tensors are memory-mapped by ``gguf`` and never
touched). Exact: the result equals what the ``tokenizer.json`` / ``.model`` the
GGUF was converted from gives.
"""

from __future__ import annotations

from pathlib import Path

from bpebench.errors import VocabularyError
from .vocabulary import Vocabulary
from .hf_json import byte_level_vocabulary
from .sentencepiece_model import (
    CONTROL, NORMAL, UNKNOWN, USER_DEFINED, Piece, normalizer_name, sentencepiece_vocabulary,
)

#: ``tokenizer.ggml.pre`` -> (pattern name, whole-piece lookup as llama.cpp's ``ignore_merges``)
PRE_TOKENIZERS: dict[str, tuple[str, bool]] = {
    "gpt-2": ("gpt2", False),
    "llama-bpe": ("llama3", True),
    "llama3": ("llama3", True),
    "llama-v3": ("llama3", True),
    "qwen2": ("qwen2", False),
}


def _field(reader, key: str, default=None):
    field = reader.get_field(key)
    if field is None:
        return default
    return field.contents()


def load_gguf(path: str | Path, *, name: str | None = None, pattern: str | None = None) -> Vocabulary:
    """A Vocabulary from the tokenizer metadata of a GGUF file."""
    path = Path(path)
    try:
        from gguf import GGUFReader
    except ImportError:
        raise VocabularyError(f"{path}: reading GGUF needs the 'gguf' package (pip install gguf)") from None
    try:
        reader = GGUFReader(path, "r")
        model = _field(reader, "tokenizer.ggml.model")
        texts = _field(reader, "tokenizer.ggml.tokens")
        kinds = _field(reader, "tokenizer.ggml.token_type")
        scores = _field(reader, "tokenizer.ggml.scores")
        merges = _field(reader, "tokenizer.ggml.merges")
        pre = _field(reader, "tokenizer.ggml.pre")
        add_prefix = _field(reader, "tokenizer.ggml.add_space_prefix", True)
        remove_spaces = _field(reader, "tokenizer.ggml.remove_extra_whitespaces", False)
    except VocabularyError:
        raise
    except Exception as exc:  # gguf raises ValueError/IndexError/struct errors on damaged files
        raise VocabularyError(f"{path}: not a readable GGUF file ({type(exc).__name__}: {exc})") from None
    label = name or path.name.split(".")[0]
    if model is None or texts is None:
        raise VocabularyError(f"{path}: GGUF file has no tokenizer (tokenizer.ggml.model / tokens missing)")
    kinds = kinds or [NORMAL] * len(texts)
    if len(kinds) != len(texts) or (scores is not None and len(scores) != len(texts)):
        raise VocabularyError(f"{path}: tokenizer arrays disagree in length ({len(texts)} tokens, {len(kinds)} types)")

    if model == "gpt2":
        if merges is None:
            raise VocabularyError(f"{path}: gpt2 tokenizer without tokenizer.ggml.merges")
        whole_piece = False
        if pattern is None:
            if pre not in PRE_TOKENIZERS:
                known = ", ".join(PRE_TOKENIZERS)
                raise VocabularyError(
                    f"{path}: unknown pre-tokenizer {pre!r} (known: {known}); pass pattern= to load it anyway"
                )
            pattern, whole_piece = PRE_TOKENIZERS[pre]
        added = {i: t for i, (t, k) in enumerate(zip(texts, kinds)) if k in (CONTROL, USER_DEFINED, UNKNOWN)}
        by_id = {i: t for i, t in enumerate(texts) if i not in added}
        pairs = []
        for index, merge in enumerate(merges):
            parts = merge.split(" ")
            if len(parts) != 2:
                raise VocabularyError(f"{path}: merge {index} is {merge!r}; expected 'left right'")
            pairs.append((parts[0], parts[1]))
        return byte_level_vocabulary(by_id, pairs, added, name=label, pattern=pattern,
                                     whole_piece_lookup=whole_piece, source=str(path))
    if model == "llama":
        if scores is None:
            raise VocabularyError(f"{path}: llama tokenizer without tokenizer.ggml.scores")
        # llama.cpp matches user-defined tokens in the text like control tokens
        pieces = [Piece(t, float(s), CONTROL if k == USER_DEFINED else int(k))
                  for t, s, k in zip(texts, scores, kinds)]
        normalizer = normalizer_name(add_dummy_prefix=bool(add_prefix), remove_extra_whitespaces=bool(remove_spaces))
        return sentencepiece_vocabulary(pieces, name=label, normalizer=normalizer, source=str(path))
    raise VocabularyError(f"{path}: GGUF tokenizer model {model!r} is not supported (gpt2 and llama are)")
