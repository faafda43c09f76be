"""BPE by its definition, in plain Python: the function every encoder is checked against.

Start from one token per byte; while some adjacent pair may merge, merge the pair
with the best (lowest) priority, the leftmost one on ties. Which pairs may merge
and at what priority is ``Vocabulary.merge`` (the tiktoken "ranks" rule or the HF
"merges" rule, followed literally). Nothing here is derived or precomputed. O(n²).

The ``naive`` encoder (``algorithms/naive.py``) registers it; the derivation in
``kernels/compiled.py`` asks it when a vocabulary's merges run out of priority order.
"""

from __future__ import annotations

from bpebench.errors import BpebenchError

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
