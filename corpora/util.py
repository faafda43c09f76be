"""Small helpers shared by the corpus generators: clipping text to a byte budget, seeded choice."""

from __future__ import annotations

import random


def clip_utf8(text: str, size: int | None) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding has at most ``size`` bytes.

    >>> clip_utf8("aé東", 4)
    'aé'
    """
    if size is None:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= size:
        return text
    cut = size
    while cut > 0 and (data[cut] & 0xC0) == 0x80:  # never cut inside a character
        cut -= 1
    return data[:cut].decode("utf-8", "surrogatepass")


def fill(units, size: int, rng: random.Random) -> str:
    """Join units drawn uniformly (seeded) until adding one more would exceed ``size`` bytes."""
    out: list[str] = []
    total = 0
    sizes = [len(u.encode("utf-8")) for u in units]
    smallest = min(sizes)
    while total + smallest <= size:
        i = rng.randrange(len(units))
        if total + sizes[i] > size:
            continue
        out.append(units[i])
        total += sizes[i]
    return "".join(out)


def repeat_to(unit: str | bytes, size: int):
    """``unit`` repeated, cut to exactly ``size`` bytes for bytes or at most ``size`` for text."""
    if isinstance(unit, bytes):
        return (unit * (size // max(len(unit), 1) + 1))[:size]
    encoded = len(unit.encode("utf-8"))
    return clip_utf8(unit * (size // max(encoded, 1) + 1), size)
