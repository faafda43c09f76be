"""Core: the split derivation and is_compatible against the reference, the registry's errors."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary, is_compatible
from bpebench.errors import UnknownNameError, VocabularyError
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import encoder_names, get_encoder_class, make_encoder
from bpebench.algorithms.formats.vocabulary import Vocabulary

SEED_TOKENS = [b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"]


def seed_vocabulary() -> Vocabulary:
    """The seed paper's dictionary ``a b c ab cb ac bb cbb acbb`` (priority = order) plus the
    other 253 single bytes at the end, so every input is encodable."""
    others = [bytes([b]) for b in range(256) if bytes([b]) not in SEED_TOKENS]
    return Vocabulary.from_ranks(SEED_TOKENS + others, name="seed")


def merges_vocabulary() -> Vocabulary:
    """A merges-rule vocabulary whose priorities run against the ids, with a dead merge and
    two merges producing the same token."""
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"bc", b"abc", b"ca", b"cab"]
    t = {tok: i for i, tok in enumerate(tokens)}
    merges = {
        (t[b"b"], t[b"c"]): (0, t[b"bc"]),
        (t[b"a"], t[b"b"]): (1, t[b"ab"]),
        (t[b"a"], t[b"bc"]): (2, t[b"abc"]),
        (t[b"ab"], t[b"c"]): (3, t[b"abc"]),  # same token, later: never applied
        (t[b"c"], t[b"ab"]): (4, t[b"cab"]),
        (t[b"c"], t[b"a"]): (5, t[b"ca"]),
    }
    priority = np.full(len(tokens), -1, dtype=np.int64)
    for prio, merged in merges.values():
        priority[merged] = min(prio, priority[merged]) if priority[merged] >= 0 else prio
    return Vocabulary(name="merges", tokens=tokens, priority=priority, rule="merges", merges=merges)


def test_seed_paper_example():
    vocab = seed_vocabulary()
    naive = make_encoder("naive", vocab)
    assert [vocab.tokens[i] for i in naive.encode(b"abacb")] == [b"ab", b"a", b"cb"]
    assert [vocab.tokens[i] for i in naive.encode(b"abacbb")] == [b"ab", b"acbb"]


@pytest.mark.parametrize("make", [seed_vocabulary, merges_vocabulary])
def test_every_split_is_the_last_merge_of_the_reference(make):
    """The derived split of a token is what BPE merges last when encoding the token's bytes."""
    vocab = make()
    tables = compile_vocabulary(vocab)
    for token_id, token in enumerate(vocab.tokens):
        if len(token) == 1:
            continue
        ids = bpe_reference(vocab, token)
        left, right = int(tables.split_left[token_id]), int(tables.split_right[token_id])
        if ids != [token_id]:
            assert left == -1 and tables.priority[token_id] == NEVER, token
            continue
        assert vocab.tokens[left] + vocab.tokens[right] == token
        # the split pair itself is a valid encoding of the token's bytes minus the last merge
        assert bpe_reference(vocab, vocab.tokens[left]) == [left]
        assert bpe_reference(vocab, vocab.tokens[right]) == [right]


@pytest.mark.parametrize("make", [seed_vocabulary, merges_vocabulary])
def test_is_compatible_equals_brute_force_on_all_pairs(make):
    vocab = make()
    tables = compile_vocabulary(vocab)
    interesting = [i for i, t in enumerate(vocab.tokens) if t[0] in b"abc"]
    reachable = [i for i in interesting if bpe_reference(vocab, vocab.tokens[i]) == [i]]
    for a, b in itertools.product(reachable, repeat=2):
        expected = bpe_reference(vocab, vocab.tokens[a] + vocab.tokens[b]) == [a, b]
        assert is_compatible(tables, a, b) == expected, (vocab.tokens[a], vocab.tokens[b])


def test_merges_rule_follows_merge_priority_not_ids():
    vocab = merges_vocabulary()
    # "abc": bc (prio 0) first, then a+bc (prio 2) -> abc; the later (ab, c) merge is dead
    assert [vocab.tokens[i] for i in bpe_reference(vocab, b"abc")] == [b"abc"]
    # "cab": c a (prio 5) vs a b (prio 1): ab first, then c+ab (prio 4) -> cab
    assert [vocab.tokens[i] for i in bpe_reference(vocab, b"cab")] == [b"cab"]
    tables = compile_vocabulary(vocab)
    abc = vocab.token_id(b"abc")
    assert vocab.tokens[tables.split_left[abc]] == b"a" and vocab.tokens[tables.split_right[abc]] == b"bc"


def test_real_vocabulary_splits_agree_with_reference_on_a_sample():
    from bpebench.algorithms.formats import load_vocabulary

    vocab = load_vocabulary("cl100k_base")
    assert vocab.problems() == []
    tables = compile_vocabulary(vocab)
    rng = random.Random(7)
    for token_id in rng.sample(range(256, len(vocab)), 300):
        assert bpe_reference(vocab, vocab.tokens[token_id]) == [token_id]
        left, right = tables.split_left[token_id], tables.split_right[token_id]
        assert vocab.tokens[left] + vocab.tokens[right] == vocab.tokens[token_id]


def test_unreachable_tokens_are_reported():
    # "ab" is only ever formed from a+b; "abab" would need "ab"+"ab" but "ba" merges first
    tokens = [bytes([b]) for b in range(256)] + [b"ba", b"ab", b"abab"]
    vocab = Vocabulary.from_ranks(tokens, name="odd")
    assert bpe_reference(vocab, b"abab") != [258]
    assert list(vocab.unreachable) == [258]
    assert any("cannot be derived" in p for p in vocab.problems())


def test_missing_single_bytes_are_reported():
    vocab = Vocabulary.from_ranks([b"a", b"b", b"ab"], name="tiny")
    assert any("single bytes are not tokens" in p for p in vocab.problems())


def test_duplicate_token_is_a_vocabulary_error():
    vocab = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + [b"a"], name="dup")
    with pytest.raises(VocabularyError, match="duplicate token"):
        vocab.token_id(b"a")


def test_registry_unknown_name_lists_known_ones():
    with pytest.raises(UnknownNameError) as info:
        get_encoder_class("no-such-encoder")
    assert "naive" in str(info.value)
    assert "naive" in encoder_names()


def test_decode_rejects_out_of_range_ids():
    vocab = seed_vocabulary()
    with pytest.raises(VocabularyError, match="out of range"):
        vocab.decode_bytes([0, 99999])


def test_a_broken_algorithm_module_does_not_hide_the_others(tmp_path, monkeypatch):
    """Discovery records a module that fails to import and still registers every other encoder."""
    from bpebench import algorithms
    from bpebench.algorithms.core import registry

    broken = tmp_path / "zz_broken_encoder.py"
    broken.write_text("raise RuntimeError('half-written module')\n")
    monkeypatch.setattr(algorithms, "__path__", [*algorithms.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(registry, "_builtins_imported", False)
    monkeypatch.setattr(registry, "BROKEN", {})
    names = registry.encoder_names()
    assert "naive" in names and "backtracking" in names
    assert "half-written module" in registry.BROKEN["bpebench.algorithms.zz_broken_encoder"]


def test_tokenizer_chunking_methods_meet_their_contract():
    """Tokenizer.split_at_tokens / count_till_limit / count_range against brute force with naive."""
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    fast = Tokenizer(load_vocabulary("cl100k_base"))
    reference = Tokenizer(load_vocabulary("cl100k_base"), algorithm="naive")
    text = "Tokens: naïve 東京 déjà-vu 1234567 👩‍💻 end."
    total = reference.count(text)
    for n in (1, 3, total // 2, total, total + 5):
        chunk = fast.split_at_tokens(text, n)
        assert text.startswith(chunk) and reference.count(chunk) <= n
        longer = text[: len(chunk) + 1]
        assert chunk == text or reference.count(longer) > n  # one more character would not fit
        assert chunk or reference.count(text[:1]) > n
        assert fast.count_till_limit(text, n) == (total if total <= n else None)
    for start, end in [(0, len(text)), (3, 17), (8, 9), (10, 30)]:
        assert fast.count_range(text, start, end) == reference.count(text[start:end])


def test_an_outside_encoder_never_becomes_the_default(monkeypatch):
    """However fast it says it is, an encoder from outside the package is used only when named."""
    from bpebench.algorithms.core import registry
    from bpebench.algorithms.core.encoder import Encoder

    class Outside(Encoder):
        name = "outside-fast"
        capabilities = frozenset({"exact"})
        speed_rank = -10_000

        def encode(self, data: bytes) -> list[int]:
            return []

    Outside.__module__ = "someone_elses_package.encoders"
    before = registry.default_encoder_name()
    monkeypatch.setitem(registry._REGISTRY, Outside.name, Outside)
    assert registry.default_encoder_name() == before != Outside.name
    assert registry.encoder_names()[0] == Outside.name  # it is listed, first among the exact ones
