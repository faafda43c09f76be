"""How the kit shows token ids in a failure: each id with its bytes, two sequences side by side.

>>> from bpebench.properties.vocabularies import seed_vocabulary
>>> v = seed_vocabulary()
>>> tokens_text(v, [3, 0])
"[3 b'ab', 0 b'a']"
"""

from __future__ import annotations

from bpebench.algorithms.formats.vocabulary import Vocabulary

from .guard import CheckFailed


def _token(vocab: Vocabulary, i: int) -> str:
    """``id b'bytes'`` (a special token shows its literal)."""
    if 0 <= i < len(vocab.tokens):
        return f"{i} {vocab.tokens[i]!r}"
    return f"{i} {vocab.special_ids.get(i, '?')!r}"


def tokens_text(vocab: Vocabulary, ids) -> str:
    """Ids with their bytes: ``[3 b'ab', 0 b'a']`` (the first 12)."""
    ids = list(ids)
    more = f" ... ({len(ids)} tokens)" if len(ids) > 12 else ""
    return "[" + ", ".join(_token(vocab, i) for i in ids[:12]) + "]" + more


def side_by_side(vocab: Vocabulary, got, expected, names=("encoder", "expected")) -> list[str]:
    """Two id sequences as aligned lines of ``id bytes`` cells, from a little before the first
    token where they differ (marked ``^``) to a few tokens after it."""
    got, expected = list(got), list(expected)
    first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    start, end = max(0, first - 2), first + 4
    cells = [[_token(vocab, i) for i in seq[start:end]] for seq in (got, expected)]
    widths = [max(len(c[k]) if k < len(c) else 0 for c in cells) for k in range(end - start)]
    label = max(len(n) for n in names) + 1
    lines = [f"first difference at token {first} (byte {len(vocab.decode_bytes(expected[:first]))}):"]
    for name, row, seq in zip(names, cells, (got, expected)):
        text = " | ".join(c.ljust(w) for c, w in zip(row, widths))
        lines.append(f"{name + ':':<{label}} {'... ' if start else ''}{text}{' ...' if len(seq) > end else ''}"
                     f"  ({len(seq)} tokens)")
    offset = label + 1 + (4 if start else 0) + sum(w + 3 for w in widths[: first - start])
    lines.append(" " * offset + "^")
    return lines


def mismatch(message: str, vocab: Vocabulary, got, expected, names=("encoder", "naive"),
             data: bytes | None = None) -> CheckFailed:
    """A failure whose message shows both sequences briefly and whose details align them."""
    return CheckFailed(f"{message}: {tokens_text(vocab, got)}, {names[1]} gives {tokens_text(vocab, expected)}", data,
                       details=side_by_side(vocab, got, expected, names))
