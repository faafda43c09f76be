"""The algorithm registry: every encoder, found by name.

Encoders inside bpebench register with ``@register_encoder`` in their own module
under ``algorithms/``. Every plain module there is an encoder (the infrastructure
lives in subpackages), and each is imported on first use, so a new module needs no
other edit. Outside packages register through the
entry-point group ``bpebench.encoders`` (``name = "module:Class"``).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TypeVar

from .encoder import Encoder
from bpebench.errors import UnknownNameError

ENTRY_POINT_GROUP = "bpebench.encoders"
_REGISTRY: dict[str, type[Encoder]] = {}
#: modules / entry points that failed to load: where -> one-line reason (``bpebench list`` shows them)
BROKEN: dict[str, str] = {}
_discovered = False
#: the package of the built-in encoders (one module each)
_BUILTIN_PREFIX = "bpebench.algorithms."

E = TypeVar("E", bound=type[Encoder])


def register_encoder(cls: E) -> E:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} needs a non-empty `name` to be registered")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"encoder name {cls.name!r} is taken by {existing.__module__}.{existing.__qualname__}")
    _REGISTRY[cls.name] = cls
    return cls


_builtins_imported = False


def _import_builtin_modules(*, again: bool = False) -> None:
    """Import every encoder module of ``algorithms/`` (each registers itself; ``again`` walks
    the folder once more, as a full discovery does)."""
    global _builtins_imported
    if _builtins_imported and not again:
        return
    _builtins_imported = True
    from bpebench import algorithms

    for info in pkgutil.iter_modules(algorithms.__path__):
        if info.ispkg or info.name.startswith("_"):  # subpackages hold the infrastructure
            continue
        module_name = f"{algorithms.__name__}.{info.name}"
        try:
            importlib.import_module(module_name)
        except Exception as exc:  # one broken module must not take every other encoder down
            BROKEN[module_name] = f"{type(exc).__name__}: {exc}"


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    _discovered = True
    from importlib import metadata  # ~10 ms to import: only when outside encoders are asked for

    _import_builtin_modules(again=True)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # an outside package must not break the whole tool
            BROKEN[f"entry point {ep.name} ({ep.value})"] = f"{type(exc).__name__}: {exc}"
            continue
        if not (isinstance(cls, type) and issubclass(cls, Encoder)):
            BROKEN[f"entry point {ep.name} ({ep.value})"] = "not an Encoder subclass"
            continue
        if not cls.name:
            cls.name = ep.name
        _REGISTRY.setdefault(ep.name, cls)


def encoder_names() -> list[str]:
    """Every registered algorithm name, exact ones first, each group fastest first."""
    _discover()
    return sorted(_REGISTRY, key=lambda n: (not _REGISTRY[n].is_exact(), _REGISTRY[n].speed_rank, n))


def get_encoder_class(name: str) -> type[Encoder]:
    """The encoder class registered as ``name``; UnknownNameError lists the known names."""
    _import_builtin_modules()
    if name not in _REGISTRY:  # an outside encoder: scan the entry points
        _discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError("algorithm", name, encoder_names()) from None


def default_encoder_name(vocabulary=None) -> str:
    """The fastest built-in exact encoder (that accepts ``vocabulary``, when given). An outside
    encoder is used when named and never becomes the default, so no entry point is scanned."""
    _import_builtin_modules()
    builtin = [n for n, cls in _REGISTRY.items() if cls.__module__.startswith(_BUILTIN_PREFIX)]
    exact = sorted((n for n in builtin if _REGISTRY[n].is_exact()), key=lambda n: (_REGISTRY[n].speed_rank, n))
    if vocabulary is not None:
        exact = [n for n in exact if _REGISTRY[n].unsupported_reason(vocabulary) is None] or exact
    return exact[0]


def make_encoder(name: str, vocabulary) -> Encoder:
    """Build (and memoise per vocabulary) the encoder ``name`` for ``vocabulary``."""
    cache = vocabulary.__dict__.setdefault("_encoders", {})
    enc = cache.get(name)
    if enc is None:
        enc = cache[name] = get_encoder_class(name)(vocabulary)
    return enc
