"""Tracked figures (not times): tokens per byte, disagreement of approximate encoders, scaling exponents.

* ``TokensPerByte``: tokens per input byte of every built-in vocabulary's pipeline
  (default exact encoder) on each natural, code and random corpus.
* ``Disagreement``: share of pre-tokenized pieces (by occurrence) on which an
  approximate encoder's ids differ from the reference ``naive``, per corpus, and
  the relative excess of tokens (negative: fewer tokens than BPE), via
  ``bpebench.algorithms.pipeline.agreement.disagreement``. Adversarial corpora are kept to 2 kB
  (they hold long pieces, and the reference is O(n^2) per piece).
* ``ScalingExponent``: the empirical exponent k in time ~ n^k of each pipeline on
  one unsplittable piece, from the best of three runs at 10 kB and 100 kB (1 =
  linear, 2 = quadratic); implementations over budget at 100 kB are skipped.
"""

from __future__ import annotations

import math
import time

from bpebench.algorithms.core.registry import default_encoder_name

from . import common

TEXT_CORPORA = ["prose-en", "code-python", "udhr-all", "udhr-zh", "udhr-ja", "udhr-ar", "udhr-he",
                "udhr-ru", "udhr-hi", "random-tokens"]
DISAGREEMENT_CORPORA = {name: 20_000 for name in ["prose-en", "code-python", "udhr-all", "random-tokens"]}
DISAGREEMENT_CORPORA.update({name: 2_000 for name in ["unsplittable", "run-pair", "digits", "emoji-zwj",
                                                      "chunking-trap", "backtracking-worst"]})


class TokensPerByte:
    params = [common.VOCABS, TEXT_CORPORA]
    param_names = ["vocabulary", "corpus"]
    timeout = 180

    def setup(self, vocab, corpus):
        self.tokenizer = common.tokenizer(default_encoder_name(), vocab)
        size = 20_000 if corpus != "random-tokens" else None
        self.text = (common.random_token_text(20_000, vocab) if corpus == "random-tokens"
                     else common.text(corpus, size))

    def track_tokens_per_byte(self, vocab, corpus):
        return len(self.tokenizer.encode_ordinary(self.text)) / len(self.text.encode())

    track_tokens_per_byte.unit = "tokens/byte"


class Disagreement:
    params = [common.approximate_encoders(), list(DISAGREEMENT_CORPORA)]
    param_names = ["encoder", "corpus"]
    timeout = 300

    def setup(self, name, corpus):
        from bpebench.algorithms.pipeline.agreement import disagreement, split_text

        vocab = common.vocabulary()
        size = DISAGREEMENT_CORPORA[corpus]
        text = common.random_token_text(size) if corpus == "random-tokens" else common.text(corpus, size)
        pieces = split_text(vocab, text)
        reference = next(n for n in common.exact_encoders() if common.is_reference(n))
        self.result = disagreement(common.encoder(name), common.encoder(reference), pieces)

    def track_disagreement_rate(self, name, corpus):
        return 1.0 - self.result["exact_match_rate"]

    track_disagreement_rate.unit = "pieces"

    def track_token_excess(self, name, corpus):
        reference = self.result["reference_tokens"]
        return (self.result["tokens"] - reference) / max(reference, 1)

    track_token_excess.unit = "relative"


class ScalingExponent:
    params = [common.pipeline_implementations()]
    param_names = ["implementation"]
    timeout = 300
    small, large = 10_000, 100_000

    def setup(self, implementation):
        self.encode = common.pipeline_encode(implementation)
        self.texts = [common.text("unsplittable", n) for n in (self.small, self.large)]
        common.skip_if_over_budget(self.encode, lambda n: common.text("unsplittable", n), self.large,
                                   start=self.small)

    def _best_of_three(self, text: str) -> float:
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            self.encode(text)
            best = min(best, time.perf_counter() - start)
        return best

    def track_exponent(self, implementation):
        small, large = (self._best_of_three(t) for t in self.texts)
        return math.log(large / small) / math.log(self.large / self.small)

    track_exponent.unit = "exponent"


common.preload(raw=False)
for _vocab in common.VOCABS[1:]:
    common.preload(_vocab, encoders=[default_encoder_name()], raw=False, peers=False)
