"""Encoding scaling: raw BPE (no pre-tokenizer) on slices of random-token text.

Seed 001's first benchmark: slices of 10 ... 100 000 bytes of o200k random-token
text, every registered encoder plus the peers that can run BPE without their
pre-tokenizer. A size whose predicted time passes the budget is skipped (the
reference ``naive``, O(n^2) in Python, stops around 10 kB; so does any quadratic
plugin), measured rather than by name.
"""

from __future__ import annotations

from . import common

SIZES = [10, 100, 1_000, 10_000, 100_000]


class RawEncodeScaling:
    params = [common.raw_implementations(), SIZES]
    param_names = ["implementation", "bytes"]
    timeout = 180

    def setup(self, implementation, size):
        self.encode = common.raw_encode(implementation)
        self.data = common.random_token_text(size).encode()
        common.prepare(self.encode, lambda n: common.random_token_text(n).encode(), size, start=100,
                       other=common.random_token_text(size, seed=1).encode())

    def time_encode(self, implementation, size):
        self.encode(self.data)


common.preload(pipeline=False)
