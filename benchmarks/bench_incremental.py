"""Incremental encoding and interval counting (seed 001's second and third benchmarks).

``Appending``: a text built up byte by byte, with the exact token count known
after every byte. Approaches: an incremental encoder of every encoder that
declares ``appending`` (``push`` each byte) or ``prepending`` (the text grows to
the left), versus re-encoding the whole text after each byte with the default
(fastest exact) encoder (quadratic), versus one encode of the finished text (the
floor: no intermediate counts).

``IntervalCounting``: token counts of 100 random slices of a fixed 120 kB
random-token text. Every encoder that declares ``interval`` preprocesses the text
once (timed separately in ``IntervalPreprocess``) and answers each slice from its
tables, versus counting each slice from scratch with the default encoder.
"""

from __future__ import annotations

import random

from bpebench.algorithms.core.registry import default_encoder_name

from . import common

SIZES = [10, 100, 1_000, 10_000]
SLICE_SIZES = [10, 100, 1_000, 10_000, 100_000]
N_SLICES = 100
TEXT_BYTES = 120_000


def _approaches() -> list[str]:
    return ([f"append/{n}" for n in common.encoders_with("appending")]
            + [f"prepend/{n}" for n in common.encoders_with("prepending")]
            + ["re-encode-each-byte/default", "one-shot/default"])


class Appending:
    params = [_approaches(), SIZES]
    param_names = ["approach", "bytes"]
    timeout = 180

    def setup(self, approach, size):
        self.data = common.random_token_text(size).encode()
        kind, _, name = approach.partition("/")
        default = common.encoder(default_encoder_name())
        if kind == "append":
            self.run = self._appending(common.encoder(name))
        elif kind == "prepend":
            self.run = self._prepending(common.encoder(name))
        elif kind == "re-encode-each-byte":
            self.run = lambda data: [default.count(data[: i + 1]) for i in range(len(data))]
        else:
            self.run = default.count
        common.prepare(self.run, lambda n: common.head(self.data, n), size, start=10,
                       other=common.random_token_text(size, seed=1).encode())

    @staticmethod
    def _appending(enc):
        def run(data):
            appendable = enc.appendable()
            return [appendable.push(b) for b in data]
        return run

    @staticmethod
    def _prepending(enc):
        def run(data):
            prependable = enc.prependable()
            return [prependable.prepend(b) for b in reversed(data)]
        return run

    def time_count_after_every_byte(self, approach, size):
        self.run(self.data)


def _slices(size: int) -> list[tuple[int, int]]:
    rng = random.Random(size)
    starts = [rng.randrange(TEXT_BYTES - size + 1) for _ in range(N_SLICES)]
    return [(s, s + size) for s in starts]


class IntervalCounting:
    params = [[f"interval/{n}" for n in common.encoders_with("interval")] + ["from-scratch/default"],
              SLICE_SIZES]
    param_names = ["approach", "slice_bytes"]
    timeout = 180

    def setup(self, approach, size):
        data = common.random_token_text(TEXT_BYTES).encode()
        slices = _slices(size)
        kind, _, name = approach.partition("/")
        if kind == "interval":
            counter = common.encoder(name).interval_encoding(data)
            self.run = lambda: [counter.count(i, j) for i, j in slices]
            other = common.random_token_text(size, seed=1).encode()
            warm_counter = common.encoder(name).interval_encoding(other)
            warm_up = lambda: warm_counter.count(0, len(other))  # noqa: E731
        else:
            default = common.encoder(default_encoder_name())
            self.run = lambda: [default.count(data[i:j]) for i, j in slices]
            warm_up = lambda: default.count(common.random_token_text(size, seed=1).encode())  # noqa: E731
        warm_up()  # untimed, on other input: asv --quick takes one sample

    def time_count_100_slices(self, approach, size):
        self.run()


class IntervalPreprocess:
    params = [[n for n in common.encoders_with("interval")]]
    param_names = ["encoder"]
    timeout = 180

    def setup(self, name):
        self.data = common.random_token_text(TEXT_BYTES).encode()
        self.encoder = common.encoder(name)
        self.encoder.interval_encoding(self.data[:1000])

    def time_preprocess_120kB(self, name):
        self.encoder.interval_encoding(self.data)


common.preload(pipeline=False)
