"""The algorithm registry: every encoder, found by name, and where each comes from.

Encoders inside bpebench register with ``@register_encoder`` in their own module
under ``algorithms/``. Every plain module there is an encoder (the infrastructure
lives in subpackages), and each is imported on first use, so a new module needs no
other edit. Outside packages register through the entry-point group
``bpebench.encoders`` (``name = "module:Class"``).

An outside encoder is used when it is named; it never becomes the default of
``Tokenizer(vocab)`` or ``bpebench encode``, however fast it says it is
(:func:`default_encoder_name` picks among the built-in ones). :func:`origin` says where
each name comes from (``bpebench list`` shows it), and a plugin that failed to load is
remembered with its error, so naming it gives that error in one line.

The built-in modules are imported on first use; the entry points (about 10 ms to scan) only
when a name is not built-in or the whole list is asked for. Both run once, under a lock:
threads that ask for an encoder at the same time all wait for the complete registry.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from typing import TypeVar

from .encoder import Encoder
from bpebench.errors import BpebenchError, UnknownNameError

ENTRY_POINT_GROUP = "bpebench.encoders"
BUILTIN_PACKAGE = "bpebench.algorithms"
_REGISTRY: dict[str, type[Encoder]] = {}
#: name -> where the encoder comes from (see :func:`origin`)
_ORIGINS: dict[str, str] = {}
#: modules / entry points that failed to load: where -> one-line reason (``bpebench list`` shows them)
BROKEN: dict[str, str] = {}
#: entry-point names that failed to load -> the one-line error naming them gives
_BROKEN_NAMES: dict[str, str] = {}
_lock = threading.RLock()
_builtins_imported = False
_importing_builtins = False
_discovered = False
_discovering = False

E = TypeVar("E", bound=type[Encoder])


def _is_builtin(cls: type) -> bool:
    return cls.__module__ == BUILTIN_PACKAGE or cls.__module__.startswith(BUILTIN_PACKAGE + ".")


def register_encoder(cls: E) -> E:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    # no lock here: a module registers while it is imported, and the discovery lock is held by
    # whichever thread runs the discovery (the GIL keeps the dict updates whole)
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} needs a non-empty `name` to be registered")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"encoder name {cls.name!r} is taken by {existing.__module__}.{existing.__qualname__}")
    _ORIGINS[cls.name] = "built-in" if _is_builtin(cls) else f"module {cls.__module__} (outside bpebench)"
    _REGISTRY[cls.name] = cls
    return cls


def _distribution(ep) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown distribution"
    return f"{dist.metadata['Name'] or dist.name} {dist.version}"


def _load_entry_point(ep) -> None:
    where = f"entry point {ep.name} ({ep.value}) of {_distribution(ep)}"
    if ep.name in _REGISTRY:
        BROKEN[where] = f"not used: the name {ep.name!r} is taken by {_ORIGINS.get(ep.name, 'another encoder')}"
        return
    try:
        cls = ep.load()
    except Exception as exc:  # an outside package must not break the whole tool
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        BROKEN[where] = reason
        _BROKEN_NAMES[ep.name] = f"encoder {ep.name!r} ({where}) failed to import: {reason}"
        return
    if not (isinstance(cls, type) and issubclass(cls, Encoder)):
        BROKEN[where] = "not an Encoder subclass"
        _BROKEN_NAMES[ep.name] = f"encoder {ep.name!r} ({where}) is not an Encoder subclass"
        return
    if not cls.name:
        cls.name = ep.name
    _REGISTRY.setdefault(ep.name, cls)
    _ORIGINS[ep.name] = where


def _import_builtin_modules() -> None:
    """Import every encoder module of ``algorithms/`` once (each registers itself)."""
    global _builtins_imported, _importing_builtins
    if _builtins_imported:
        return
    with _lock:
        if _builtins_imported or _importing_builtins:  # done meanwhile, or asked by a module being imported
            return
        _importing_builtins = True
        try:
            from bpebench import algorithms

            for info in pkgutil.iter_modules(algorithms.__path__):
                if info.ispkg or info.name.startswith("_"):  # subpackages hold the infrastructure
                    continue
                module_name = f"{algorithms.__name__}.{info.name}"
                try:
                    importlib.import_module(module_name)
                except Exception as exc:  # one broken module must not take every other encoder down
                    BROKEN[module_name] = f"{type(exc).__name__}: {exc}"
            _builtins_imported = True
        finally:
            _importing_builtins = False


def _discover() -> None:
    """The built-in modules, then every entry point of ``bpebench.encoders``."""
    global _discovered, _discovering
    if _discovered:
        return
    _import_builtin_modules()
    with _lock:
        if _discovered or _discovering:  # done meanwhile, or asked again while importing a module
            return
        _discovering = True
        try:
            from importlib import metadata  # ~10 ms to import: only when outside encoders are asked for

            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                _load_entry_point(ep)
            _discovered = True
        finally:
            _discovering = False


def encoder_names() -> list[str]:
    """Every registered algorithm name, exact ones first, each group fastest first."""
    _discover()
    registry = dict(_REGISTRY)
    return sorted(registry, key=lambda n: (not registry[n].is_exact(), registry[n].speed_rank, n))


def get_encoder_class(name: str) -> type[Encoder]:
    """The encoder class registered as ``name``; UnknownNameError lists the known names, and a
    plugin that failed to load says why."""
    cls = _REGISTRY.get(name)
    if cls is not None and _ORIGINS.get(name) == "built-in":  # e.g. the default, found without the rest
        return cls
    _import_builtin_modules()
    cls = _REGISTRY.get(name)
    if cls is None:  # an outside encoder: scan the entry points
        _discover()
        cls = _REGISTRY.get(name)
    if cls is not None:
        return cls
    if name in _BROKEN_NAMES:
        raise BpebenchError(_BROKEN_NAMES[name])
    raise UnknownNameError("algorithm", name, encoder_names())


def origin(name: str) -> str:
    """Where the encoder ``name`` comes from: ``built-in``, ``entry point NAME (module:Class) of
    DIST VERSION``, or ``module M (outside bpebench)`` for a class registered by imported code."""
    get_encoder_class(name)
    return _ORIGINS.get(name, "unknown")


def is_builtin(name: str) -> bool:
    return origin(name) == "built-in"


#: the built-in exact encoders (name, module) in the order ``default_encoder_name`` ranks them (speed
#: rank, then name; ``tests/test_registry.py`` checks it against the registry): the default is found
#: by importing these one at a time, not every encoder module (1.5 ms of a fresh ``Tokenizer()``)
DEFAULT_ORDER = (("backtracking", "backtracking"), ("table", "table"), ("appending", "appending"),
                 ("prepending", "appending"), ("heap", "heap"), ("interval", "interval"), ("naive", "naive"))


def default_encoder_name(vocabulary=None) -> str:
    """The fastest built-in exact encoder (that accepts ``vocabulary``, when given). Encoders from
    outside bpebench are never the default: they are used when named."""
    if not _builtins_imported:
        for name, module in DEFAULT_ORDER:
            importlib.import_module(f"bpebench.algorithms.{module}")
            cls = _REGISTRY.get(name)
            if cls is not None and _ORIGINS.get(name) == "built-in" and (
                    vocabulary is None or cls.unsupported_reason(vocabulary) is None):
                return name
    _import_builtin_modules()
    registry = dict(_REGISTRY)
    exact = sorted((n for n, cls in registry.items() if cls.is_exact() and _ORIGINS.get(n) == "built-in"),
                   key=lambda n: (registry[n].speed_rank, n))
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
