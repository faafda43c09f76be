"""Pipeline vs peers: pre-tokenization + BPE, our encoders inside ``Tokenizer`` vs the peer libraries.

Natural text in several scripts (UDHR excerpts), English prose, Python source,
a multilingual mix, and seed 001's pre-tokenized benchmark (random-token text,
10 ... 100 000 bytes). Every implementation gets the same ``str`` and returns
o200k ids (peers whose ids differ from ours are skipped as not comparable).
"""

from __future__ import annotations

from . import common

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
