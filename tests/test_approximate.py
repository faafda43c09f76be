"""The approximate encoders ``greedy``, ``minimal``, ``token_tree`` and ``agreement.disagreement``.

Oracles: a plain-Python leftmost-longest matcher, a brute-force enumeration of all
segmentations, a line-by-line Python port of the seed-000 TokenTree classes, the
``naive`` reference, tiktoken's own BPE, and hand-worked cases on the seed
paper's dictionary ``a b c ab cb ac bb cbb acbb``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.pipeline.agreement import disagreement, split_text
from bpebench.algorithms.core.encoder import Encoder
from bpebench.errors import BpebenchError
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import default_encoder_name, make_encoder
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.properties.oracles import tiktoken_single_piece
from bpebench.properties.strategies import vocabulary_and_input
from bpebench.properties.vocabularies import producible_ids, resolve

APPROXIMATE = ["greedy", "minimal", "token_tree"]
SEED_TOKENS = [b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"]
REAL = ["cl100k_base", "o200k_base"]


def seed_with_all_bytes() -> Vocabulary:
    """The seed dictionary (priority = order) followed by the other 253 single bytes."""
    others = [bytes([b]) for b in range(256) if bytes([b]) not in SEED_TOKENS]
    return Vocabulary.from_ranks(SEED_TOKENS + others, name="seed+bytes")


SEED = seed_with_all_bytes()


def spelled(vocab: Vocabulary, ids: list[int]) -> list[bytes]:
    return [vocab.tokens[i] for i in ids]


# ----------------------------------------------------------------------------- oracles
def leftmost_longest(token_ids: dict[bytes, int], data: bytes) -> list[int]:
    """Plain Python: at each position the longest ``token_ids`` key that matches, then continue after it."""
    max_len = max(map(len, token_ids))
    out, i = [], 0
    while i < len(data):
        for length in range(min(max_len, len(data) - i), 0, -1):
            t = token_ids.get(data[i : i + length])
            if t is not None:
                out.append(t)
                i += length
                break
        else:
            raise AssertionError(f"no token at {i}")
    return out


def producible_lookup(vocab: Vocabulary) -> dict[bytes, int]:
    """What ``greedy`` matches: the tokens BPE can produce."""
    return {vocab.tokens[i]: int(i) for i in producible_ids(vocab)}


def all_token_lookup(vocab: Vocabulary) -> dict[bytes, int]:
    """What the seed's tree holds: every (non-excluded, non-empty) token."""
    return {t: i for i, t in enumerate(vocab.tokens) if t and i not in vocab.excluded}


def fewest_tokens_brute_force(token_set: set[bytes], data: bytes) -> int:
    """Enumerate every segmentation of ``data`` into tokens (no memo) and keep the shortest."""
    if not data:
        return 0
    best = None
    for k in range(1, len(data) + 1):
        if data[:k] in token_set:
            rest = fewest_tokens_brute_force(token_set, data[k:])
            best = 1 + rest if best is None else min(best, 1 + rest)
    return best if best is not None else 10**9


class SeedTokenTree:
    """A transcription of the seed's ``OzAITokenTree`` / ``OzAITokenTree_Node`` (C#) into Python,
    ``ref`` parameters becoming returned values. ``Get`` takes the exact rest of the text (the
    seed passes a zero-padded ``MaxTokenLen`` buffer, see the ``token_tree`` docstring)."""

    class Node:
        def __init__(self, token_id: int) -> None:
            self.id = token_id
            self.children: dict[bytes, SeedTokenTree.Node] = {}
            self.lengths: list[int] = []

        def add_child(self, addition: bytes, child):
            if not addition:
                return None, addition
            res, addition = self.try_token(addition)
            if res is not None:
                return res, addition
            self.children[addition] = child
            if not self.lengths or self.lengths[-1] != len(addition):
                self.lengths.append(len(addition))
            child.parent = self.id
            return None, addition

        def try_token(self, addition: bytes):
            if not addition:
                return None, addition
            if len(self.lengths) < len(self.children):
                for length in self.lengths:
                    if length > len(addition):
                        return None, addition
                    key = addition[:length]
                    if key not in self.children:
                        continue
                    return self.children[key], addition[length:]
            else:
                for key in self.children:  # C# Dictionary: insertion order
                    if addition[: len(key)] == key and len(addition) >= len(key):
                        return self.children[key], addition[len(key):]
            return None, addition

    def __init__(self, vocab: Vocabulary) -> None:
        self.root = self.Node(-1)
        self.nodes: dict[int, SeedTokenTree.Node] = {}
        for token_id in sorted(all_token_lookup(vocab).values(), key=lambda i: len(vocab.tokens[i])):
            node = self.Node(token_id)
            node.parent = None
            self.nodes[token_id] = node
            current, rest = self.root, vocab.tokens[token_id]
            while current is not None:
                current, rest = current.add_child(rest, node)
        self.max_len = max(len(t) for t in vocab.tokens)
        self.tokens = vocab.tokens

    def get(self, data: bytes) -> int:
        current, res, addition = self.root, self.root.id, data
        while current is not None:
            res = current.id
            current, addition = current.try_token(addition)
        return res

    def encode(self, data: bytes) -> list[int]:
        out, i = [], 0
        while i < len(data):
            res = self.get(data[i : i + self.max_len])
            assert res != -1
            out.append(res)
            i += len(self.tokens[res])
        return out


def random_token_text(vocab: Vocabulary, n_tokens: int, seed: int) -> bytes:
    rng = random.Random(seed)
    ids = producible_ids(vocab)
    return b"".join(vocab.tokens[int(ids[rng.randrange(len(ids))])] for _ in range(n_tokens))


@pytest.fixture(scope="module", params=REAL)
def real_vocab(request) -> Vocabulary:
    return load_vocabulary(request.param)


# ----------------------------------------------------------------------------- hand-worked
def test_seed_paper_cases_by_hand():
    greedy, minimal, tree = (make_encoder(n, SEED) for n in APPROXIMATE)
    # BPE: ab a cb. Greedy takes ac at position 2 (longest), leaving b.
    assert spelled(SEED, greedy.encode(b"abacb")) == [b"ab", b"ac", b"b"]
    assert spelled(SEED, tree.encode(b"abacb")) == [b"ab", b"ac", b"b"]
    # minimal: 3 tokens is the fewest (no token spans "aba" or "bac"); longest first on ties
    assert spelled(SEED, minimal.encode(b"abacb")) == [b"ab", b"ac", b"b"]
    # abacbb: all agree with BPE (ab acbb)
    for enc in (greedy, minimal, tree):
        assert spelled(SEED, enc.encode(b"abacbb")) == [b"ab", b"acbb"]
    # acbbb: BPE merges cb first, then bb before cbb: a cb bb (3). Two tokens suffice.
    assert spelled(SEED, bpe_reference(SEED, b"acbbb")) == [b"a", b"cb", b"bb"]
    assert spelled(SEED, minimal.encode(b"acbbb")) == [b"acbb", b"b"]
    assert minimal.count(b"acbbb") == 2


def test_token_tree_hangs_a_token_without_prefix_tokens_under_its_longest_prefix_token():
    """The seed keys a child by its whole remainder: ``abcd`` (no ``ab``/``abc`` token) sits under
    ``a`` with key ``bcd`` and is reached; ``abcdef`` sits under ``abcd``."""
    tokens = [bytes([b]) for b in range(256)] + [b"abcd", b"abx", b"abcdef"]
    vocab = Vocabulary.from_ranks(tokens, name="no-prefix")
    tree = make_encoder("token_tree", vocab)
    tid = vocab.token_id
    assert tree.parent_of(tid(b"abcd")) == tid(b"a")
    assert tree.parent_of(tid(b"abx")) == tid(b"a")
    assert tree.parent_of(tid(b"abcdef")) == tid(b"abcd")
    assert tree.parent_of(tid(b"a")) is None
    assert spelled(vocab, tree.encode(b"abcdefabxabcabcdz")) == [
        b"abcdef", b"abx", b"a", b"b", b"c", b"abcd", b"z"]
    # greedy matches only what BPE can produce; none of these three tokens is derivable
    assert len(vocab.unreachable) == 3
    assert spelled(vocab, make_encoder("greedy", vocab).encode(b"abcd")) == [b"a", b"b", b"c", b"d"]


def test_token_tree_equals_a_port_of_the_seed_code():
    """Tree parents and encodings equal a transcription of the seed's C# classes, on the seed
    dictionary and on a sample of cl100k whose tokens mostly lack their intermediate prefixes."""
    cl100k = load_vocabulary("cl100k_base")
    rng = random.Random(7)
    sample = rng.sample([t for t in cl100k.tokens if len(t) > 1], 3000)
    sampled = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + sample, name="cl100k-sample")
    for vocab in (SEED, sampled):
        port = SeedTokenTree(vocab)
        tree = make_encoder("token_tree", vocab)
        for token_id, node in port.nodes.items():
            parent = node.parent if node.parent != -1 else None
            assert tree.parent_of(token_id) == parent, vocab.tokens[token_id]
        texts = [random_token_text(vocab, 400, seed) for seed in range(3)]
        texts.append(bytes(rng.randrange(256) for _ in range(2000)))
        texts.append(random_token_text(cl100k, 300, 11))
        for text in texts:
            assert tree.encode(text) == port.encode(text)


# ----------------------------------------------------------------------------- properties
@given(vocabulary_and_input("random", max_size=64))
@example(("seed", b"abacb"))
@settings(deadline=None)
def test_matching_encoders_equal_leftmost_longest_on_trained_vocabularies(spec_and_data):
    spec, data = spec_and_data
    vocab = resolve(spec)
    assert make_encoder("greedy", vocab).encode(data) == leftmost_longest(producible_lookup(vocab), data)
    assert make_encoder("token_tree", vocab).encode(data) == leftmost_longest(all_token_lookup(vocab), data)


@given(vocabulary_and_input("random", max_size=48))
@example(("seed", b"acbbb"))
@settings(deadline=None)
def test_minimal_count_is_at_most_bpe_count(spec_and_data):
    spec, data = spec_and_data
    vocab = resolve(spec)
    minimal = make_encoder("minimal", vocab)
    ids = minimal.encode(data)
    assert vocab.decode_bytes(ids) == data
    assert set(ids) <= set(producible_ids(vocab).tolist())
    assert minimal.count(data) == len(ids) <= len(bpe_reference(vocab, data))


@given(st.binary(max_size=12) | st.lists(st.sampled_from(b"abc"), max_size=12).map(bytes))
@example(b"acbbb")
@settings(deadline=None)
def test_minimal_count_equals_brute_force_shortest_segmentation(data):
    minimal = make_encoder("minimal", SEED)
    assert minimal.count(data) == fewest_tokens_brute_force(set(SEED.tokens), data)


@given(st.binary(max_size=200), st.sampled_from(REAL))
@example(b"\xf0\x9f\x98", "cl100k_base")  # a truncated 4-byte UTF-8 sequence
@example(b"\xff\xfe hello \x80", "o200k_base")
@settings(deadline=None)
def test_every_approximate_encoder_round_trips_arbitrary_bytes(data, vocab_name):
    vocab = load_vocabulary(vocab_name)
    for name in APPROXIMATE:
        enc = make_encoder(name, vocab)
        ids = enc.encode(data)
        assert vocab.decode_bytes(ids) == data, name
        assert enc.count(data) == len(ids), name


# ----------------------------------------------------------------------------- real vocabularies
def test_real_vocabularies_random_token_text(real_vocab):
    """20 kB of random tokens plus random bytes: greedy against the Python oracle, token_tree
    equal to greedy (no unreachable tokens here), minimal at most tiktoken's BPE count."""
    assert len(real_vocab.unreachable) == 0
    rng = random.Random(3)
    texts = [random_token_text(real_vocab, 6000, 1), bytes(rng.randrange(256) for _ in range(3000))]
    lookup = producible_lookup(real_vocab)
    greedy, minimal, tree = (make_encoder(n, real_vocab) for n in APPROXIMATE)
    for text in texts:
        expected = leftmost_longest(lookup, text)
        assert greedy.encode(text) == expected
        assert tree.encode(text) == expected
        assert greedy.count(text) == tree.count(text) == len(expected)
        fewest = minimal.encode(text)
        assert real_vocab.decode_bytes(fewest) == text
        assert minimal.count(text) == len(fewest) <= len(tiktoken_single_piece(real_vocab, text))
        assert len(fewest) <= len(expected)


def test_minimal_against_naive_on_a_short_real_text():
    vocab = load_vocabulary("cl100k_base")
    text = random_token_text(vocab, 300, 5)[:1200]
    assert make_encoder("minimal", vocab).count(text) <= len(bpe_reference(vocab, text))


def test_encode_pieces_is_the_concatenation_of_piece_encodings(real_vocab):
    text = "The naïve café's 12345 owners     said:\n\n\t東京 👩‍💻 don't!! " * 3
    pieces = split_text(real_vocab, text) + [b"\xff\x80abc", b""]
    for name in APPROXIMATE:
        enc = make_encoder(name, real_vocab)
        assert enc.encode_pieces(iter(pieces)) == [i for p in pieces for i in enc.encode(p)], name


@pytest.mark.parametrize("name", APPROXIMATE)
def test_a_byte_outside_the_vocabulary_is_a_clear_error(name):
    vocab = Vocabulary.from_ranks(SEED_TOKENS, name="seed-abc")
    enc = make_encoder(name, vocab)
    with pytest.raises(BpebenchError, match="0x7a is not a token of seed-abc"):
        enc.encode(b"abz")
    with pytest.raises(BpebenchError, match="0x7a"):
        enc.count(b"zab")


def test_approximate_encoders_are_registered_as_not_exact():
    for name in APPROXIMATE:
        enc = make_encoder(name, SEED)
        assert not enc.is_exact() and "approximate" in enc.capabilities and enc.summary


# ----------------------------------------------------------------------------- agreement
def test_disagreement_of_the_reference_with_itself_is_zero():
    naive = make_encoder("naive", SEED)
    pieces = [b"abacb", b"abacbb", b"acbbb", b"", b"\xff\x00cab"]
    d = disagreement(naive, naive, pieces)
    assert d["pieces"] == 5 and d["bytes"] == sum(map(len, pieces))
    assert d["exact_match_rate"] == 1.0 and d["invalid_rate"] == 0.0
    assert d["count_diff"] == [0] * 5 and d["count_diff_histogram"] == {0: 5}
    assert d["incompatible_pair_rate"] == 0.0 and d["roundtrip_failures"] == 0 and d["examples"] == []


def test_disagreement_of_greedy_on_a_hand_worked_case():
    """greedy: ab ac b; BPE: ab a cb. ``ab ac`` is BPE's own encoding of ``abac`` (compatible);
    ``ac b`` is not (BPE merges cb before ac), so one pair of two is incompatible."""
    greedy, naive = make_encoder("greedy", SEED), make_encoder("naive", SEED)
    d = disagreement(greedy, naive, [b"abacb", b"abacb", b"abacbb"])
    assert d["exact_match_rate"] == pytest.approx(1 / 3)
    assert d["invalid_rate"] == pytest.approx(2 / 3)
    assert d["count_diff"] == [0, 0, 0]
    assert d["incompatible_pair_rate"] == pytest.approx(2 / 5)  # pairs: 2 + 2 + 1
    assert d["differing_byte_rate"] == pytest.approx(10 / 16)
    assert d["examples"] == [{"piece": b"abacb", "tokens": [b"ab", b"ac", b"b"],
                              "reference_tokens": [b"ab", b"a", b"cb"]}]
    m = disagreement(make_encoder("minimal", SEED), naive, [b"acbbb"])
    assert m["count_diff"] == [-1] and m["count_diff_histogram"] == {-1: 1}
    assert m["tokens"] == 2 and m["reference_tokens"] == 3


def test_disagreement_validity_is_about_the_decoded_bytes():
    """An encoder that drops the last byte gives valid BPE of *other* bytes: it differs from the
    reference, but re-encoding its own decoded output reproduces it."""

    class DropsLastByte(Encoder):
        name = "drops-last-byte"
        capabilities = frozenset({"approximate"})

        def encode(self, data: bytes) -> list[int]:
            return bpe_reference(self.vocabulary, data[:-1])

    d = disagreement(DropsLastByte(SEED), make_encoder("naive", SEED), [b"abacbb"])
    assert d["exact_match_rate"] == 0.0 and d["roundtrip_failures"] == 1
    assert d["invalid_rate"] == 0.0 and d["count_diff"] == [1]  # ab a cb vs ab acbb


def test_disagreement_defaults_to_the_fastest_exact_reference():
    vocab = load_vocabulary("cl100k_base")
    pieces = split_text(vocab, "Hello world, this is a short English sentence. " * 4)
    d = disagreement(make_encoder("greedy", vocab), None, pieces)
    assert d["reference"] == default_encoder_name()
    naive = make_encoder("naive", vocab)
    assert d["count_diff"] == [len(make_encoder("greedy", vocab).encode(p)) - len(naive.encode(p)) for p in pieces]
    assert np.isclose(d["exact_match_rate"], np.mean(
        [make_encoder("greedy", vocab).encode(p) == naive.encode(p) for p in pieces]))
