"""The corpus registry: named, seeded, disk-cached inputs.

A corpus is a function that builds bytes (or text) from keyword parameters, with
a one-line description and, for adversarial inputs, a sentence on why it is hard.
``get(name, **params)`` builds it once and caches the result on disk, keyed by the
name, the generator's version and the parameters, so later processes (asv runs
every benchmark in a fresh process) read a file instead of rebuilding.

The cache lives in ``$BPEBENCH_CACHE/corpora`` (default ``~/.cache/bpebench/corpora``).
Anything that is not a registered name but an existing file or directory is read
as a user corpus (a directory: every regular file in it, sorted by path).
"""

from __future__ import annotations

import hashlib
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from bpebench.algorithms.cache.files import CacheDamaged, cache_root, discard, read_checked, write_checked
from bpebench.errors import BpebenchError, UnknownNameError

Kind = Literal["text", "bytes"]
Category = Literal["natural", "code", "random", "adversarial"]


@dataclass(frozen=True)
class Corpus:
    """A registered corpus generator.

    Attributes:
        name: registry name, e.g. ``"udhr-zh"``.
        description: one line: what it is and where it comes from.
        build: ``build(**params) -> str | bytes``; must be deterministic in its parameters.
        kind: ``"text"`` (``get`` returns ``str``) or ``"bytes"`` (may be invalid UTF-8).
        category: ``natural``, ``code``, ``random`` or ``adversarial``.
        why_hard: for adversarial corpora, what it stresses and why.
        version: bump when the generator changes, so stale cache files are not reused.
    """

    name: str
    description: str
    build: Callable[..., str | bytes]
    kind: Kind
    category: Category
    why_hard: str = ""
    version: int = 1
    defaults: dict = field(default_factory=dict)

    @property
    def parameters(self) -> dict:
        """Parameter name -> default value."""
        return dict(self.defaults)


_REGISTRY: dict[str, Corpus] = {}
_MEMO: dict[tuple, str | bytes] = {}


def register_corpus(
    name: str,
    *,
    description: str,
    kind: Kind = "text",
    category: Category,
    why_hard: str = "",
    version: int = 1,
):
    """Decorator: register ``build`` under ``name``; its keyword defaults are the parameters."""

    def decorate(build: Callable[..., str | bytes]):
        if name in _REGISTRY:
            raise TypeError(f"corpus name {name!r} is registered twice")
        defaults = {
            p.name: p.default
            for p in inspect.signature(build).parameters.values()
            if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
        }
        _REGISTRY[name] = Corpus(name, description, build, kind, category, why_hard, version, defaults)
        return build

    return decorate


# ----------------------------------------------------------------------------- lookups
# (the generator modules register on import; ``bpebench.corpora`` imports them all, and
# importing this module imports that package first)
def names(category: str | None = None) -> list[str]:
    """Registered corpus names (in registration order), optionally of one category."""
    return [n for n, c in _REGISTRY.items() if category is None or c.category == category]


def corpus(name: str) -> Corpus:
    """The registered Corpus ``name``; UnknownNameError lists the known names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError("corpus", name, names()) from None


def describe() -> dict[str, str]:
    """Name -> one-line description (``corpus(name).why_hard`` says why an adversarial one is hard)."""
    return {n: c.description for n, c in _REGISTRY.items()}


# ----------------------------------------------------------------------------- cache
def cache_dir() -> Path:
    """Where built corpora are stored: ``corpora/`` under bpebench's cache root."""
    return cache_root() / "corpora"


def _cache_path(spec: Corpus, params: dict) -> Path:
    key = repr((spec.name, spec.version, sorted(params.items()))).encode()
    digest = hashlib.sha256(key).hexdigest()[:20]
    return cache_dir() / f"{spec.name}-{digest}.bpc"


def _check_params(spec: Corpus, params: dict) -> dict:
    unknown = sorted(set(params) - set(spec.defaults))
    if unknown:
        known = ", ".join(spec.defaults) or "none"
        raise BpebenchError(f"corpus {spec.name!r} has no parameter {unknown[0]!r} (parameters: {known})")
    merged = {**spec.defaults, **params}
    if merged.get("size") is not None and (not isinstance(merged["size"], int) or merged["size"] < 0):
        raise BpebenchError(f"corpus {spec.name!r}: size must be a non-negative integer, got {merged['size']!r}")
    return merged


def get(name: str | os.PathLike, **params) -> str | bytes:
    """The corpus ``name`` built with ``params`` (``str`` for text corpora, ``bytes`` otherwise).

    ``name`` may also be a path to a file or directory (a user corpus: bytes; pass
    ``size=`` to keep only the first bytes). Built corpora are cached in memory and
    on disk; building is deterministic, so a cache hit equals a rebuild.
    """
    name = os.fspath(name)
    if name not in names() and (os.sep in name or "/" in name or Path(name).exists()):
        extra = sorted(set(params) - {"size"})
        if extra:
            raise BpebenchError(f"a user corpus (a path) takes only size=, not {extra[0]}=")
        return read_user_corpus(name, **params)
    spec = corpus(name)
    params = _check_params(spec, params)
    memo_key = (spec.name, spec.version, tuple(sorted(params.items())))
    found = _MEMO.get(memo_key)
    if found is not None:
        return found
    path = _cache_path(spec, params)
    try:
        raw = read_checked(path)
    except CacheDamaged as exc:  # a truncated or altered file is never used
        discard(path, str(exc))
        raw = None
    if raw is None:
        built = spec.build(**params)
        if spec.kind == "text" and not isinstance(built, str):
            raise TypeError(f"corpus {spec.name!r} is declared text but built {type(built).__name__}")
        raw = built.encode("utf-8", "surrogatepass") if isinstance(built, str) else bytes(built)
        write_checked(path, raw)
    value = raw.decode("utf-8", "surrogatepass") if spec.kind == "text" else raw
    _MEMO[memo_key] = value
    return value


def get_bytes(name: str | os.PathLike, **params) -> bytes:
    """The corpus as bytes (text corpora UTF-8 encoded): what raw BPE encoders take."""
    value = get(name, **params)
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


def corpus_files(root: Path) -> list[Path]:
    """The files of a user corpus: ``root`` itself, or every regular file under it, sorted by path."""
    if not root.is_dir():
        return [root]
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if not files:
        raise BpebenchError(f"{root}: directory has no files to use as a corpus")
    return files


def read_user_corpus(path: str | os.PathLike, *, size: int | None = None) -> bytes:
    """The bytes of a file, or of every regular file under a directory (sorted by path, joined by newlines)."""
    root = Path(path)
    if not root.exists():
        raise UnknownNameError("corpus", os.fspath(path), names())
    chunks, total = [], 0
    for file in corpus_files(root):
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise BpebenchError(f"{file}: cannot read ({exc.strerror or exc})") from None
        chunks.append(data)
        total += len(data) + 1
        if size is not None and total >= size:
            break
    joined = b"\n".join(chunks)
    return joined if size is None else joined[:size]


def clear_memory_cache() -> None:
    """Forget corpora built in this process (the disk cache stays)."""
    _MEMO.clear()
