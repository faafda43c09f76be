"""Pipeline vs peers: pre-tokenization + BPE, our encoders inside ``Tokenizer`` vs the peer libraries.

``PipelineUnseen`` is the headline (the protocol of :mod:`bpebench.benchmarks.protocol`):
each implementation is warmed up on 100 kB of a kind of text (prose, C code, faker text in
12 languages), then every document of the next 300 kB is encoded once, in one sample
(``number = repeat = rounds = 1``, so asv never times the same text twice).

``PipelineEncode`` and ``PipelineScaling`` are *repeat* figures: asv times the same text
again and again, which rewards caches. Natural text in several scripts (UDHR excerpts),
English prose, Python source, a multilingual mix, and seed 001's pre-tokenized benchmark
(random-token text, 10 ... 100 000 bytes). Every implementation gets the same ``str`` and
returns o200k ids (peers whose ids differ from ours are skipped as not comparable).
"""

from __future__ import annotations

from . import common, protocol


class PipelineUnseen:
    """Unseen text: warm-up on other text of the same kind, then each document once."""

    params = [common.pipeline_implementations(), list(protocol.KINDS)]
    param_names = ["implementation", "kind"]
    number = 1
    repeat = 1
    rounds = 1
    warmup_time = 0
    timeout = 300

    def setup(self, implementation, kind):
        try:
            self.stream = protocol.stream(kind, warm_bytes=100_000, measured_bytes=300_000)
        except Exception as exc:  # e.g. faker not installed
            raise NotImplementedError(f"{kind}: {exc}") from None
        self.encode = common.pipeline_encode(implementation)
        joined = "".join(self.stream.measured)
        common.skip_if_over_budget(self.encode, lambda n: common.clip_utf8(joined, n), len(joined.encode()))
        for doc in self.stream.warm:
            self.encode(doc)

    def time_unseen(self, implementation, kind):
        for doc in self.stream.measured:
            self.encode(doc)

#: corpus -> bytes used (None: the whole corpus)
CORPORA = {
    "prose-en": 20_000,
    "code-python": 20_000,
    "udhr-all": 20_000,
    "udhr-zh": None,
    "udhr-ja": None,
    "udhr-ar": None,
    "udhr-ru": None,
    "udhr-hi": None,
}


class PipelineEncode:
    """Repeat: one text timed again and again (rewards caches; not the headline)."""

    params = [common.pipeline_implementations(), list(CORPORA)]
    param_names = ["implementation", "corpus"]
    timeout = 180

    def setup(self, implementation, corpus):
        self.text = common.text(corpus, CORPORA[corpus])
        self.encode = common.pipeline_encode(implementation)

    def time_encode_ordinary(self, implementation, corpus):
        self.encode(self.text)


class PipelineScaling:
    """Seed 001's pre-tokenized comparison: slices of random-token text through each pipeline."""

    params = [common.pipeline_implementations(), [10, 1_000, 100_000]]
    param_names = ["implementation", "bytes"]
    timeout = 180

    def setup(self, implementation, size):
        self.text = common.random_token_text(size)
        self.encode = common.pipeline_encode(implementation)
        common.skip_if_over_budget(self.encode, common.random_token_text, size)

    def time_encode_ordinary(self, implementation, size):
        self.encode(self.text)


common.preload()
