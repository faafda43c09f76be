"""The BPE validity corollaries of the seed paper (001), as properties of the definition.

An encoding is *valid* when decoding and re-encoding it gives it back. These
tests check the corollaries the fast encoders rely on, against ``naive`` (the
definition) on drawn trained vocabularies and, for a few examples, on the real
ones. Each test names the corollary it checks.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, example, find, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.kernels.compiled import compile_vocabulary, is_compatible, rank_order_break
from bpebench.algorithms.kernels.reference import bpe_reference

from .oracles import (
    brute_compatible,
    is_valid,
    last_token_table,
    rebuild_from_last_tokens,
    suffix_tokens,
)
from .settings import scaled
from .strategies import inputs, small_specs, token_pairs, vocabulary_and_input
from .vocabularies import producible_ids, resolve, seed_vocabulary


def _tokens(vocab, ids):
    return [vocab.tokens[i] for i in ids]


# ----------------------------------------------------------------------------- the paper's worked example
def test_seed_dictionary_examples_from_the_paper():
    """``abacb`` -> ``ab a cb`` but ``abacbb`` -> ``ab acbb``; the per-prefix last tokens are
    ``a ab a ac cb acbb`` (the paper's table)."""
    v = seed_vocabulary()
    assert _tokens(v, bpe_reference(v, b"abacb")) == [b"ab", b"a", b"cb"]
    assert _tokens(v, bpe_reference(v, b"abacbb")) == [b"ab", b"acbb"]
    table = last_token_table(v, b"abacbb")
    assert _tokens(v, table[1:]) == [b"a", b"ab", b"a", b"ac", b"cb", b"acbb"]


# ----------------------------------------------------------------------------- validity
@given(vocabulary_and_input())
@example(("seed", b"abacbb"))
def test_validity_is_uniqueness(case):
    """BPE output is valid; splitting any of its tokens into its two parts gives an encoding of the
    same bytes that is *not* valid (there is exactly one valid encoding per text)."""
    spec, data = case
    vocab = resolve(spec)
    ids = bpe_reference(vocab, data)
    assert is_valid(vocab, ids)
    left, right = vocab.splits
    for k, t in enumerate(ids):
        if left[t] >= 0:
            other = ids[:k] + [int(left[t]), int(right[t])] + ids[k + 1:]
            assert vocab.decode_bytes(other) == data
            assert not is_valid(vocab, other)


# ----------------------------------------------------------------------------- Corollary II
@given(vocabulary_and_input(max_size=40))
@example(("seed", b"abacbb"))
def test_corollary_2_every_contiguous_subsequence_is_valid(case):
    """Corollary II: every e_i..e_j of a valid encoding is valid."""
    spec, data = case
    vocab = resolve(spec)
    ids = bpe_reference(vocab, data)
    for i, j in itertools.combinations(range(len(ids) + 1), 2):
        assert is_valid(vocab, ids[i:j]), (i, j, _tokens(vocab, ids))


# ----------------------------------------------------------------------------- Corollary IIa
@given(vocabulary_and_input(max_size=24))
@example(("seed", b"abacbb"))
def test_corollary_2a_last_tokens_of_prefixes_rebuild_the_encoding(case):
    """Corollary IIa: the last token of every prefix determines the encoding; walking back
    from the end by each last token's length rebuilds it (for every prefix)."""
    spec, data = case
    vocab = resolve(spec)
    table = last_token_table(vocab, data)
    for p in range(len(data) + 1):
        assert rebuild_from_last_tokens(vocab, table, p) == bpe_reference(vocab, data[:p])


@given(vocabulary_and_input(max_size=32))
@example(("seed", b"abacbb"))
def test_exactly_one_suffix_token_is_compatible(case):
    """The paper's sketch: of the tokens ending a prefix, exactly one is compatible with the
    last token of the prefix it leaves (or covers the prefix), and it is BPE's last token."""
    spec, data = case
    vocab = resolve(spec)
    assume(rank_order_break(vocab) is None)  # the compatibility test assumes merges in priority order
    tables = compile_vocabulary(vocab)
    reachable = set(producible_ids(vocab).tolist())
    max_len = max(len(t) for t in vocab.tokens)
    table = last_token_table(vocab, data)
    for end in range(1, len(data) + 1):
        fitting = []
        for t in suffix_tokens(vocab, data, end, max_len):
            if t not in reachable:
                continue
            start = end - len(vocab.tokens[t])
            if start == 0 or is_compatible(tables, table[start], t):
                fitting.append(t)
        assert fitting == [table[end]], (data[:end], _tokens(vocab, fitting))


# ----------------------------------------------------------------------------- Corollary III / IIIa
@st.composite
def _sharing_boundary(draw):
    spec, x = draw(vocabulary_and_input(max_size=24))
    vocab = resolve(spec)
    assume(x)
    first = bpe_reference(vocab, x)
    shared = first[-1]
    y = draw(inputs(vocab, max_size=24))
    second = bpe_reference(vocab, vocab.tokens[shared] + y)
    assume(second[0] == shared)
    return spec, first, second


@given(_sharing_boundary())
def test_corollary_3_valid_encodings_sharing_a_token_concatenate(case):
    """Corollary III: if e_0..e_i and e_i..e_n are valid, so is e_0..e_i..e_n."""
    spec, first, second = case
    vocab = resolve(spec)
    assert is_valid(vocab, first) and is_valid(vocab, second)
    assert is_valid(vocab, first + second[1:])


@given(st.data())
def test_corollary_3a_appending_a_compatible_token_keeps_validity(data):
    """Corollary IIIa: a valid encoding followed by a token compatible with its last token is
    valid, and followed by an incompatible one it is not (the pair itself would be invalid)."""
    spec, text = data.draw(vocabulary_and_input(max_size=24))
    vocab = resolve(spec)
    assume(text)
    ids = bpe_reference(vocab, text)
    reachable = producible_ids(vocab)
    nxt = int(reachable[data.draw(st.integers(0, len(reachable) - 1))])
    assert is_valid(vocab, ids + [nxt]) == brute_compatible(vocab, ids[-1], nxt)


# ----------------------------------------------------------------------------- is_compatible
@settings(max_examples=scaled(0.3))
@given(small_specs())
@example("seed")
def test_is_compatible_equals_brute_force_on_all_pairs_of_small_vocabularies(spec):
    """``compiled.is_compatible(a, b)`` == (naive re-encodes the bytes of ``a b`` as ``a b``),
    for every pair of producible tokens of a small vocabulary."""
    vocab = resolve(spec)
    assume(rank_order_break(vocab) is None)  # the compatibility test assumes merges in priority order
    tables = compile_vocabulary(vocab)
    ids = producible_ids(vocab).tolist()
    for a in ids:
        for b in ids:
            assert is_compatible(tables, a, b) == brute_compatible(vocab, a, b), _tokens(vocab, [a, b])


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "mistral_v1"])
def test_is_compatible_equals_brute_force_on_sampled_pairs_of_real_vocabularies(name):
    """The same on pairs of a real vocabulary, biased to the splits of tokens and to two
    tokens that spell a third (where compatibility fails)."""
    from .vocabularies import available

    reason = available(name)
    if reason:
        pytest.skip(reason)
    vocab = resolve(name)
    tables = compile_vocabulary(vocab)
    outcomes = []

    @settings(max_examples=scaled(2.0, minimum=20))
    @given(token_pairs(vocab))
    def check(pair):
        a, b = pair
        expected = brute_compatible(vocab, a, b)
        outcomes.append(expected)
        assert is_compatible(tables, a, b) == expected, _tokens(vocab, [a, b])

    check()
    assert True in outcomes and False in outcomes, "the sample must contain both kinds of pairs"


# ----------------------------------------------------------------------------- non-monotonicity
@pytest.mark.parametrize("kind", ["random", "cl100k_base"])
def test_appending_a_byte_can_lower_the_count(kind):
    """BPE counts are not monotonic: hypothesis finds a text where one more byte means fewer
    tokens (the paper: ``abacb`` has 3 tokens, ``abacbb`` 2)."""
    if kind == "random":
        strategy = vocabulary_and_input(max_size=16)
    else:
        vocab = resolve(kind)
        strategy = st.tuples(st.just(kind), inputs(vocab, max_size=16))

    def lower(case):
        spec, data = case
        vocab = resolve(spec)
        return any(len(bpe_reference(vocab, data + bytes([b]))) < len(bpe_reference(vocab, data))
                   for b in set(data))

    spec, data = find(strategy, lower, settings=settings(max_examples=2000, database=None))
    vocab = resolve(spec)
    assert lower((spec, data))
    assert len(data) >= 2
