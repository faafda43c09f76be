"""Lazy package attributes: a package's public names, imported on first use (PEP 562).

``import bpebench`` (and ``bpebench.reports``, ``bpebench.properties``, ...) then costs
nothing but the package itself, and a command imports only the modules it uses: the CLI
never loads pandas, matplotlib or hypothesis for ``bpebench encode``.
"""

from __future__ import annotations

import importlib
from typing import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each public name to the
    module (relative to ``package``) that defines it."""

    def __getattr__(name: str) -> object:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
