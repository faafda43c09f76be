"""``naive``: the reference BPE encoder, written to be read. Exact by definition. O(n²).

Start from one token per byte; while some adjacent pair may merge, merge the pair
with the best (lowest) priority, the leftmost one on ties. Which pairs may merge
and at what priority is ``Vocabulary.merge`` (the tiktoken "ranks" rule or the HF
"merges" rule, followed literally). Nothing here is derived or precomputed, so
every other encoder is checked against it. The loop itself is
:func:`bpebench.algorithms.kernels.reference.bpe_reference`, which the derivation of the
compiled tables also asks.

Worked example with the dictionary ``a b c ab cb ac bb cbb acbb`` (priority = id):

>>> from bpebench.algorithms.formats.vocabulary import Vocabulary
>>> v = Vocabulary.from_ranks([b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"], name="seed")
>>> [v.tokens[i] for i in NaiveEncoder(v).encode(b"abacb")]
[b'ab', b'a', b'cb']
>>> [v.tokens[i] for i in NaiveEncoder(v).encode(b"abacbb")]
[b'ab', b'acbb']
"""

from __future__ import annotations

from .core.encoder import Encoder
from .core.registry import register_encoder
from .kernels.reference import bpe_reference

__all__ = ["NaiveEncoder", "bpe_reference"]


@register_encoder
class NaiveEncoder(Encoder):
    """Repeatedly merge the best-priority adjacent pair (leftmost on ties): the definition."""

    name = "naive"
    summary = "reference: repeatedly merge the best pair, leftmost on ties (O(n^2), plain Python)"
    capabilities = frozenset({"exact", "reference"})
    speed_rank = 1000

    def encode(self, data: bytes) -> list[int]:
        return bpe_reference(self.vocabulary, data)
