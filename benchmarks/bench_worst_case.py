"""Worst cases: one unsplittable piece of 1 kB ... 1 MB, and every adversarial corpus.

``UnsplittablePiece`` feeds each pipeline a single '\\p{Ll}+' run built from
vocabulary tokens (``corpora`` ``unsplittable``): the pre-tokenizer cannot cut it,
so the time shows each implementation's own complexity (seed 001: tiktoken is
quadratic here). Before a large size, setup times the implementation at 1 kB,
10 kB, ... and skips the size if the fitted growth predicts more than the budget
(``common.skip_if_over_budget``), so a quadratic implementation shows up as
skipped large sizes rather than as a timeout.

``AdversarialRaw`` runs raw BPE over 10 kB of every adversarial corpus.
"""

from __future__ import annotations

from bpebench import corpora

from . import common

SIZES = [1_000, 10_000, 100_000, 1_000_000]


class UnsplittablePiece:
    params = [common.pipeline_implementations(), SIZES]
    param_names = ["implementation", "bytes"]
    timeout = 300

    def setup(self, implementation, size):
        self.encode = common.pipeline_encode(implementation)
        self.text = common.text("unsplittable", size)
        try:  # some libraries refuse long inputs: that is a result, not a failure
            common.prepare(self.encode, lambda n: common.text("unsplittable", n), size,
                           other=common.text("unsplittable", size, seed=1))
        except NotImplementedError:
            raise
        except Exception as exc:
            raise NotImplementedError(f"{implementation} refuses {size} bytes: {exc}") from None

    def time_encode_ordinary(self, implementation, size):
        self.encode(self.text)


class AdversarialRaw:
    params = [common.raw_implementations(), corpora.names("adversarial")]
    param_names = ["implementation", "corpus"]
    timeout = 180
    size = 10_000

    def setup(self, implementation, corpus):
        self.encode = common.raw_encode(implementation)
        self.data = corpora.get_bytes(corpus, size=self.size)
        try:
            common.skip_if_over_budget(self.encode, lambda n: common.head(self.data, n), self.size)
            encoded = self.encode(corpora.get_bytes(corpus, size=self.size, seed=1)
                                  if "seed" in corpora.corpus(corpus).defaults else self.data)  # untimed first call
        except NotImplementedError:
            raise
        except Exception as exc:
            raise NotImplementedError(f"{implementation} cannot encode {corpus}: {exc}") from None
        if encoded is None:  # a peer's way of saying it cannot take these bytes (e.g. not UTF-8)
            raise NotImplementedError(f"{implementation} cannot encode {corpus} without pre-tokenization")

    def time_encode_10kB(self, implementation, corpus):  # the size in the name: the report reads it
        self.encode(self.data)


common.preload()
