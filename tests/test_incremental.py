"""Incremental and interval structures: AppendableEncoder, PrependableEncoder, IntervalEncoding.

Oracles: ``naive`` on every prefix / suffix / slice of short texts, tiktoken's
single-piece BPE on slices of long texts, and a hypothesis state machine that
pushes, truncates and prepends against naive.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from bpebench.algorithms.appending import AppendableEncoder, PrependableEncoder
from bpebench.errors import BpebenchError
from bpebench.algorithms.interval import IntervalEncoding
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import make_encoder
from bpebench.properties.oracles import tiktoken_single_piece
from bpebench.properties.strategies import vocabulary_and_input
from bpebench.properties.vocabularies import resolve, train_bpe

from test_exact_encoders import OUT_OF_ORDER_SPEC, SMALL, random_token_text

TRAINED = train_bpe([b"abcabcabd abcd aab", b"aaaaaaaa bbb"], merges=40, rule="merges", alphabet="all", shuffle=2)


# ----------------------------------------------------------------------------- appending / prepending
@pytest.mark.parametrize("vocab", [SMALL["seed"], SMALL["reversed-merges"], TRAINED], ids=lambda v: v.name)
def test_counts_of_every_prefix_and_suffix(vocab):
    rng = random.Random(1)
    for _ in range(20):
        data = bytes(rng.choice(b"abcd ") for _ in range(rng.randrange(1, 50)))
        app, pre = AppendableEncoder(vocab), PrependableEncoder(vocab)
        for k in range(len(data)):
            assert app.push(data[k]) == len(bpe_reference(vocab, data[: k + 1]))
            suffix = data[len(data) - 1 - k :]
            assert pre.prepend(suffix[:1]) == len(bpe_reference(vocab, suffix))
        assert app.encode() == bpe_reference(vocab, data)
        assert pre.encode() == bpe_reference(vocab, data)
        assert app.text() == data and pre.text() == data


def test_seed_paper_prefixes():
    vocab = SMALL["seed"]
    app = AppendableEncoder(vocab)
    counts = [app.push(ch) for ch in b"abacbb"]
    assert counts == [1, 1, 2, 2, 3, 2]  # ab a cb becomes ab acbb: counts are not monotone
    assert [app.count_at(k) for k in range(7)] == [0, 1, 1, 2, 2, 3, 2]


def test_appending_on_a_real_vocabulary_against_tiktoken():
    vocab = load_vocabulary("cl100k_base")
    rng = random.Random(4)
    data = random_token_text(vocab, rng, 20_000)
    app = AppendableEncoder(vocab)
    for start in range(0, len(data), 997):  # uneven blocks, several array growths
        app.push(data[start : start + 997])
    assert app.encode() == tiktoken_single_piece(vocab, data)
    for k in rng.sample(range(1, len(data)), 12):
        assert app.count_at(k) == len(tiktoken_single_piece(vocab, data[:k]))
    pre = PrependableEncoder(vocab)
    for end in range(len(data), 0, -1500):
        pre.prepend(data[max(0, end - 1500) : end])
    assert pre.encode() == tiktoken_single_piece(vocab, data)


def test_truncate_then_push_again():
    vocab = TRAINED
    app = AppendableEncoder(vocab, capacity=1)
    app.push(b"abcabcabd")
    app.truncate(4)
    assert app.token_count() == len(bpe_reference(vocab, b"abca"))
    assert app.push(b"aaaa") == len(bpe_reference(vocab, b"abcaaaaa"))
    assert app.encode() == bpe_reference(vocab, b"abcaaaaa")
    with pytest.raises(IndexError):
        app.truncate(99)
    with pytest.raises(BpebenchError):
        app.push(300)


class IncrementalMachine(RuleBasedStateMachine):
    """Random pushes, prepends and truncations; after every step the counts equal naive."""

    def __init__(self):
        super().__init__()
        self.vocab = TRAINED
        self.app = AppendableEncoder(self.vocab, capacity=2)
        self.pre = PrependableEncoder(self.vocab, capacity=2)
        self.text = b""
        self.front = b""

    @rule(data=st.binary(max_size=6) | st.sampled_from([b"abc", b"aaaa", b"d ab", b"b"]))
    def push(self, data):
        self.app.push(data)
        self.text += data

    @rule(byte=st.sampled_from(b"abcd "))
    def push_byte(self, byte):
        self.app.push(byte)
        self.text += bytes([byte])

    @rule(data=st.sampled_from([b"a", b"bc", b"abc", b"aaa", b" "]))
    def prepend(self, data):
        self.pre.prepend(data)
        self.front = data + self.front

    @precondition(lambda self: self.text)
    @rule(fraction=st.floats(0, 1))
    def truncate(self, fraction):
        n = int(len(self.text) * fraction)
        self.app.truncate(n)
        self.text = self.text[:n]

    @precondition(lambda self: self.front)
    @rule(fraction=st.floats(0, 1))
    def truncate_front(self, fraction):
        n = int(len(self.front) * fraction)
        self.pre.truncate(n)
        self.front = self.front[len(self.front) - n :]

    @invariant()
    def counts_match(self):
        assert self.app.token_count() == len(bpe_reference(self.vocab, self.text))
        assert self.pre.token_count() == len(bpe_reference(self.vocab, self.front))
        assert len(self.app) == len(self.text)

    @invariant()
    def encodings_match(self):
        assert self.app.encode() == bpe_reference(self.vocab, self.text)
        assert self.pre.encode() == bpe_reference(self.vocab, self.front)


TestIncrementalMachine = IncrementalMachine.TestCase
TestIncrementalMachine.settings = settings(deadline=None, stateful_step_count=25)


# ----------------------------------------------------------------------------- interval
@pytest.mark.parametrize("vocab", [SMALL["seed"], SMALL["reversed-merges"], TRAINED], ids=lambda v: v.name)
def test_interval_counts_every_slice_of_short_texts(vocab):
    rng = random.Random(8)
    for _ in range(4):
        data = bytes(rng.choice(b"abcd ") for _ in range(60))
        iv = IntervalEncoding(vocab, data)
        for i in range(len(data) + 1):
            for j in range(i, len(data) + 1):
                expected = bpe_reference(vocab, data[i:j])
                assert iv.count(i, j) == len(expected), (data, i, j)
        for i, j in [(0, 60), (3, 41), (10, 11), (59, 60)]:
            assert iv.encode(i, j) == bpe_reference(vocab, data[i:j])


@settings(deadline=None)
@given(vocabulary_and_input("random", max_size=48), st.data())
@example((OUT_OF_ORDER_SPEC, b"babaaa"), st.data())
def test_interval_on_random_vocabularies(case, draw):
    """Counts of drawn slices equal the reference's; a drawn vocabulary whose merges run out of
    priority order is refused in one line instead (the interval structure relies on that order)."""
    from bpebench.algorithms.kernels.compiled import rank_order_break
    from bpebench.errors import UnsupportedVocabulary

    spec, data = case
    vocab = resolve(spec)
    if rank_order_break(vocab) is not None:
        with pytest.raises(UnsupportedVocabulary, match="out of priority order"):
            IntervalEncoding(vocab, data)
        return
    iv = IntervalEncoding(vocab, data)
    for _ in range(10):
        i = draw.draw(st.integers(0, len(data)))
        j = draw.draw(st.integers(i, len(data)))
        assert iv.count(i, j) == len(bpe_reference(vocab, data[i:j]))


@pytest.mark.parametrize("vocab_name", ["cl100k_base", "o200k_base"])
def test_interval_thousands_of_ranges_against_tiktoken(vocab_name):
    vocab = load_vocabulary(vocab_name)
    rng = random.Random(12)
    data = random_token_text(vocab, rng, 50_000)
    iv = make_encoder("interval", vocab).interval_encoding(data)
    starts, ends, expected = [], [], []
    for _ in range(3000):
        length = rng.choice([1, 2, 5, 20, 100, 400])
        i = rng.randrange(len(data) - length)
        starts.append(i)
        ends.append(i + length)
        expected.append(len(tiktoken_single_piece(vocab, data[i : i + length])))
    assert [iv.count(i, j) for i, j in zip(starts, ends)] == expected
    assert iv.count_many(np.array(starts), np.array(ends)).tolist() == expected
    assert iv.count(0, len(data)) == len(tiktoken_single_piece(vocab, data))
    for i, j in zip(starts[:50], ends[:50]):
        assert iv.encode(i, j) == tiktoken_single_piece(vocab, data[i:j])
    # slices of 100+ bytes take the O(1) path: the fallback (re-encoding) stays rare
    iv.fallbacks = 0
    long = [(i, j) for i, j in zip(starts, ends) if j - i >= 100]
    for i, j in long:
        iv.count(i, j)
    assert iv.fallbacks <= 0.02 * len(long)


def test_interval_rejects_bad_ranges():
    iv = IntervalEncoding(SMALL["seed"], b"abacbb")
    assert iv.count(2, 2) == 0
    for i, j in [(-1, 2), (3, 2), (0, 7)]:
        with pytest.raises(BpebenchError):
            iv.count(i, j)
    with pytest.raises(BpebenchError):
        iv.count_many([0, 3], [6, 2])
