"""Real source code: the Python standard library installed on this machine.

Files are taken in sorted relative-path order (``test`` packages, ``site-packages``
and ``idlelib`` left out), each preceded by a ``# file: <path>`` line, until the
byte budget is reached. Deterministic for a given Python version.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

from .registry import register_corpus
from .util import clip_utf8

_SKIP_DIRS = {"test", "tests", "site-packages", "idlelib", "__pycache__", "lib2to3"}


def stdlib_files() -> list[Path]:
    """The standard library's ``.py`` files, sorted by path relative to the stdlib root."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [
        p for p in root.rglob("*.py")
        if not (_SKIP_DIRS & set(p.relative_to(root).parts[:-1]))
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


@register_corpus(
    "code-python",
    description="Python source: the standard library of the running interpreter (sorted file order, tests"
    " excluded), each file after a '# file:' line.",
    category="code",
)
def code_python(*, size: int | None = 1_000_000) -> str:
    root = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    total = 0
    for path in stdlib_files():
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        chunk = f"# file: {path.relative_to(root).as_posix()}\n{source}\n"
        parts.append(chunk)
        total += len(chunk.encode("utf-8"))
        if size is not None and total >= size:
            break
    return clip_utf8("".join(parts), size)
