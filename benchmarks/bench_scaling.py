"""Encoding scaling: raw BPE (no pre-tokenizer) on slices of random-token text.

Seed 001's first benchmark: slices of 10 ... 100 000 bytes of o200k random-token
text, every registered encoder plus the peers that can run BPE without their
pre-tokenizer. The reference (``naive``, O(n^2) in Python) stops at 1 kB.
"""

from __future__ import annotations

from . import common

SIZES = [10, 100, 1_000, 10_000, 100_000]


class RawEncodeScaling:
    params = [common.raw_implementations(), SIZES]
    param_names = ["implementation", "bytes"]
    timeout = 180

    def setup(self, implementation, size):
        if not implementation.startswith("peer/") and common.is_reference(implementation) \
                and size > common.NAIVE_MAX_BYTES:
            raise NotImplementedError("the reference is O(n^2): small inputs only")
        self.encode = common.raw_encode(implementation)
        self.data = common.random_token_text(size).encode()

    def time_encode(self, implementation, size):
        self.encode(self.data)


common.preload(pipeline=False)
