"""Every registered algorithm through the conformance kit, and the Tokenizer round trip.

New encoders are picked up with no edit here: the parameters come from
``encoder_names()``. Approximate encoders fail the exactness checks by design;
those show as xfail with how often their output is invalid, never as skips.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings

from bpebench.algorithms.core.registry import encoder_names, get_encoder_class, make_encoder
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

from .kit import assert_check, parametrize_with_checks
from .settings import scaled
from .strategies import pipeline_texts
from .vocabularies import available, resolve

#: the drawn trained vocabularies, and one real vocabulary for a few examples per check
SUITE_VOCABULARIES = ("random", "cl100k_base")


@parametrize_with_checks(encoder_names(), vocabularies=SUITE_VOCABULARIES)
def test_registered_encoder_conforms(cls, check_id, kind):
    assert_check(cls, check_id, kind)


@pytest.mark.parametrize("vocab_name", ["cl100k_base", "mistral_v1"])
@pytest.mark.parametrize("algorithm", encoder_names())
def test_tokenizer_round_trip(algorithm, vocab_name):
    """decode(encode(text)) == text through the whole pipeline (normalizer, pre-tokenizer,
    special-token literals as text), for every encoder, approximate ones included."""
    reason = available(vocab_name)
    if reason:
        pytest.skip(reason)
    vocab = resolve(vocab_name)
    tokenizer = Tokenizer(vocab, algorithm=make_encoder(algorithm, vocab))

    # SentencePiece writes a space as U+2581 and its decoder turns every U+2581 into a space (the
    # library itself decodes its encoding of "\u2581" as " "), so one in the text comes back a space
    escapes = ((vocab.pipeline or {}).get("normalizer") or {}).get("escape_whitespaces", False)

    @settings(max_examples=scaled(0.3))
    @given(pipeline_texts())
    @example("\u2581 a\u2581b")
    def round_trip(text):
        expected = text.replace("\u2581", " ") if escapes else text
        assert tokenizer.decode(tokenizer.encode_ordinary(text)) == expected

    round_trip()


def test_every_registered_algorithm_declares_what_the_kit_needs():
    """Capabilities are a frozenset of known words; "exact" xor "approximate"."""
    known = {"exact", "approximate", "appending", "prepending", "interval", "reference", "minimal"}
    for name in encoder_names():
        caps = get_encoder_class(name).capabilities
        assert isinstance(caps, frozenset) and caps <= known, (name, caps - known)
        assert ("exact" in caps) != ("approximate" in caps), (name, caps)
