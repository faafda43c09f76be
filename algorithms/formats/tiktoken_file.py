"""Read tiktoken rank files: one ``base64(token) rank`` pair per line, plain or gzipped.

What real rank files hold besides the plain case, and what is made of it:

* **gaps** in the ranks (p50k's file has no rank 50256, where ``<|endoftext|>``
  sits): the missing ids are placeholders BPE never produces (empty, ``excluded``);
  a special token may take such an id;
* **an empty token** (a line ``" 123"``: the base64 of nothing, then the rank): the
  same kind of placeholder. tiktoken itself cannot read such a line;
* names do not matter: Llama-3/Llama-4 ship their ranks as ``tokenizer.model``;
  :func:`looks_like_tiktoken` recognises the content.

Bounded (issue 25): a file, or what a gzip file inflates to, larger than
:data:`MAX_BYTES` (far above any real vocabulary: o200k's ranks are 3.6 MB) is
refused without inflating the rest, and ranks that leave more than half the id
space empty or exceed :data:`~bpebench.algorithms.formats.vocabulary.MAX_IDS` are refused
(:meth:`~bpebench.algorithms.formats.vocabulary.Vocabulary.from_ranks`). Each refusal is one line.
Linear in the file size.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from pathlib import Path

from bpebench.errors import VocabularyError
from .vocabulary import Vocabulary

#: the largest rank file (or inflated gzip content) read: 64 MiB
MAX_BYTES = 64 << 20
_LINE = re.compile(rb"^(?:[A-Za-z0-9+/]*={0,2})? \d+$")


def read_limited(path: Path, what: str = "file") -> bytes:
    """The bytes of ``path``, gunzipped if gzipped, refusing more than :data:`MAX_BYTES` either way."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_BYTES:
        raise VocabularyError(f"{path}: {what} larger than {MAX_BYTES >> 20} MiB; far above any real vocabulary")
    if raw[:2] != b"\x1f\x8b":
        return raw
    out = bytearray()
    try:
        while raw:  # one gzip member after another, never inflating more than the cap
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += inflater.decompress(raw, MAX_BYTES + 1 - len(out))
            if len(out) > MAX_BYTES:
                raise VocabularyError(f"{path}: gzip content inflates past {MAX_BYTES >> 20} MiB; far above any"
                                      " real vocabulary, refused")
            if not inflater.eof:
                raise VocabularyError(f"{path}: truncated gzip file")
            raw = inflater.unused_data
    except zlib.error as exc:
        raise VocabularyError(f"{path}: damaged gzip file ({exc})") from None
    return bytes(out)


def looks_like_tiktoken(head: bytes) -> bool:
    """True when the first lines of ``head`` are ``base64 rank`` pairs (the last, maybe cut, is ignored)."""
    lines = [line for line in head.split(b"\n")[:-1] if line.strip()][:8]
    return bool(lines) and all(_LINE.match(line.rstrip(b"\r")) for line in lines)


def read_tiktoken_ranks(path: str | Path) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file into {token bytes: rank}, with one-line errors for bad input.

    An empty token (``" 123"``) comes back as ``b""``.
    """
    path = Path(path)
    raw = read_limited(path)
    ranks: dict[bytes, int] = {}
    for line_no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) == 1 and line[:1] in (b" ", b"\t"):
            fields = [b"", fields[0]]  # the base64 of the empty token is empty
        if len(fields) != 2:
            raise VocabularyError(f"{path}:{line_no}: expected 'base64-token rank', got {line[:60]!r}")
        try:
            token = base64.b64decode(fields[0], validate=True)
            rank = int(fields[1])
        except (binascii.Error, ValueError):
            raise VocabularyError(f"{path}:{line_no}: bad base64 token or rank: {line[:60]!r}") from None
        if rank < 0:
            raise VocabularyError(f"{path}:{line_no}: negative rank {rank}")
        if token in ranks:
            what = "empty token" if not token else f"token {token!r}"
            raise VocabularyError(f"{path}:{line_no}: duplicate {what} (ranks {ranks[token]} and {rank})")
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
