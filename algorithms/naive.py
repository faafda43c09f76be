"""``naive``: the reference BPE encoder, written to be read. Exact by definition. O(n²).

Start from one token per byte; while some adjacent pair may merge, merge the pair
with the best (lowest) priority, the leftmost one on ties. Which pairs may merge
and at what priority is ``Vocabulary.merge`` (the tiktoken "ranks" rule or the HF
"merges" rule, followed literally). Nothing here is derived or precomputed, so
every other encoder is checked against it.

Worked example with the dictionary ``a b c ab cb ac bb cbb acbb`` (priority = id):

>>> from algorithms.vocabulary import Vocabulary
>>> v = Vocabulary.from_ranks([b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"], name="seed")
>>> [v.tokens[i] for i in NaiveEncoder(v).encode(b"abacb")]
[b'ab', b'a', b'cb']
>>> [v.tokens[i] for i in NaiveEncoder(v).encode(b"abacbb")]
[b'ab', b'acbb']
"""

from __future__ import annotations

from .encoder import Encoder
from .errors import BpebenchError
from .registry import register_encoder

_NO_MERGE = 1 << 62  # priority of a pair that may not merge


def bpe_reference(vocabulary, data: bytes, applied: list | None = None) -> list[int]:
    """The BPE encoding of ``data`` under ``vocabulary``, by the definition.

    ``applied``, when given, receives ``(priority, left, right, merged)`` for every merge
    in the order BPE applies them."""
    byte_token = vocabulary.byte_token
    parts = [int(byte_token[b]) for b in data]
    if -1 in parts:
        b = data[parts.index(-1)]
        raise BpebenchError(f"byte 0x{b:02x} is not a token of {vocabulary.name}; it cannot be encoded")
    merge = vocabulary.merge

    # For the pair (parts[i], parts[i + 1]): its merge priority and the token it makes.
    pair_priority: list[int] = []
    pair_result: list[int] = []

    def look(i: int) -> tuple[int, int]:
        found = merge(parts[i], parts[i + 1])
        return (_NO_MERGE, -1) if found is None else found

    for i in range(len(parts) - 1):
        prio, merged = look(i)
        pair_priority.append(prio)
        pair_result.append(merged)
    while pair_priority:
        best = min(pair_priority)
        if best == _NO_MERGE:
            break
        i = pair_priority.index(best)  # the leftmost of the best
        if applied is not None:
            applied.append((best, parts[i], parts[i + 1], pair_result[i]))
        parts[i : i + 2] = [pair_result[i]]
        del pair_priority[i], pair_result[i]
        if i > 0:
            pair_priority[i - 1], pair_result[i - 1] = look(i - 1)
        if i < len(parts) - 1:
            pair_priority[i], pair_result[i] = look(i)
    return parts


@register_encoder
class NaiveEncoder(Encoder):
    """Repeatedly merge the best-priority adjacent pair (leftmost on ties): the definition."""

    name = "naive"
    summary = "reference: repeatedly merge the best pair, leftmost on ties (O(n^2), plain Python)"
    capabilities = frozenset({"exact", "reference"})
    speed_rank = 1000

    def encode(self, data: bytes) -> list[int]:
        return bpe_reference(self.vocabulary, data)
