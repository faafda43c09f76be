"""Read tiktoken rank files: one ``base64(token) rank`` pair per line, plain or gzipped."""

from __future__ import annotations

import base64
import binascii
import gzip
from pathlib import Path

from bpebench.errors import VocabularyError
from .vocabulary import Vocabulary


def read_tiktoken_ranks(path: str | Path) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file into {token bytes: rank}, with one-line errors for bad input."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise VocabularyError(f"{path}: cannot read tiktoken file ({exc})") from None
    ranks: dict[bytes, int] = {}
    for line_no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise VocabularyError(f"{path}:{line_no}: expected 'base64-token rank', got {line[:60]!r}")
        try:
            token = base64.b64decode(fields[0], validate=True)
            rank = int(fields[1])
        except (binascii.Error, ValueError):
            raise VocabularyError(f"{path}:{line_no}: bad base64 token or rank: {line[:60]!r}") from None
        if token in ranks:
            raise VocabularyError(f"{path}:{line_no}: duplicate token {token!r} (ranks {ranks[token]} and {rank})")
        ranks[token] = rank
    if not ranks:
        raise VocabularyError(f"{path}: no tokens (empty or not a tiktoken file)")
    return ranks


def load_tiktoken(
    path: str | Path,
    *,
    name: str | None = None,
    pattern: str | None = None,
    special_tokens: dict[str, int] | None = None,
) -> Vocabulary:
    """A ``"ranks"`` Vocabulary from a tiktoken file (id = rank = priority)."""
    path = Path(path)
    ranks = read_tiktoken_ranks(path)
    return Vocabulary.from_ranks(
        ranks,
        name=name or path.name.split(".")[0],
        special_tokens=special_tokens,
        pattern=pattern,
        source=str(path),
    )
