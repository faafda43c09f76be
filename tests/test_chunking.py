"""Chunking: split after n tokens at a character boundary, count ranges, count up to a limit.

Oracles: brute force over every prefix / slice, counted by ``naive`` (small
vocabularies) or by tiktoken (its single-piece BPE for raw bytes, its full
``encode_ordinary`` pipeline for the Tokenizer versions).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.pipeline.chunking import RangeCounter, count_range, count_till_limit, split_at_tokens
from bpebench.errors import BpebenchError
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import make_encoder
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.properties.oracles import tiktoken_encoding, tiktoken_single_piece
from bpebench.algorithms.core.registry import encoder_names, get_encoder_class
from bpebench.properties.strategies import pipeline_texts, pipeline_vocabulary_specs, vocabulary_and_input
from bpebench.properties.vocabularies import available, resolve

from test_exact_encoders import OUT_OF_ORDER_SPEC, SMALL

# o200k encodes this Georgian pair with tokens that start and end inside characters
# (found by corpora's chunking-trap search): cutting the full encoding after n tokens
# and backing off to a character boundary loses most of the chunk.
TRAP_UNIT = "რუ"


def tiktoken_count(vocab, data: bytes) -> int:
    return len(tiktoken_single_piece(vocab, data)) if data else 0  # tiktoken panics on b""


def is_char_boundary(data: bytes, p: int) -> bool:
    return p == len(data) or (data[p] & 0xC0) != 0x80


def brute_split_bytes(data: bytes, n: int, count) -> bytes:
    best = 0
    for p in range(len(data) + 1):
        if is_char_boundary(data, p) and count(data[:p]) <= n:
            best = p
    return data[:best]


def mid_character_vocabulary() -> Vocabulary:
    """Tokens that straddle the characters of ``é`` (c3 a9): ``\\xa9\\xc3`` merges first, so
    ``éé`` is ``\\xc3 \\xa9\\xc3 \\xa9``: no token boundary of the text is a character boundary."""
    tokens = [bytes([b]) for b in range(256)] + [b"\xa9\xc3", b"\xc3\xa9", b"a\xc3"]
    return Vocabulary.from_ranks(tokens, name="mid-char")


# ----------------------------------------------------------------------------- raw bytes
@pytest.mark.parametrize("vocab", [SMALL["seed"], SMALL["trained-merges-shuffled"], mid_character_vocabulary()],
                         ids=lambda v: v.name)
def test_split_bytes_equals_brute_force(vocab):
    rng = random.Random(3)
    enc = make_encoder("backtracking", vocab)
    units = [b"a", b"b", b"c", b"ab", "é".encode(), b" ", b"abc", "ü".encode()]
    for _ in range(60):
        data = b"".join(rng.choice(units) for _ in range(rng.randrange(0, 20)))
        if rng.random() < 0.3 and data:
            data = data[rng.randrange(len(data)) :]  # may start inside a character
        for n in (0, 1, 2, 3, 5, 8, 40):
            expected = brute_split_bytes(data, n, lambda d: len(bpe_reference(vocab, d)))
            assert split_at_tokens(data, n, encoder_or_tokenizer=enc) == expected, (data, n)


@settings(deadline=None)
@given(vocabulary_and_input("random", max_size=40), st.integers(0, 12))
@example((OUT_OF_ORDER_SPEC, b"babaaabab"), 3)
def test_split_and_limit_on_random_vocabularies(case, n):
    """Backtracking's splits and limits equal the brute force's; for a drawn vocabulary whose merges
    run out of priority order, which backtracking refuses, the ``heap`` encoder's do."""
    from bpebench.algorithms.kernels.compiled import rank_order_break

    spec, data = case
    vocab = resolve(spec)
    enc = make_encoder("backtracking" if rank_order_break(vocab) is None else "heap", vocab)
    expected = brute_split_bytes(data, n, lambda d: len(bpe_reference(vocab, d)))
    assert split_at_tokens(data, n, encoder_or_tokenizer=enc) == expected
    exact = len(bpe_reference(vocab, data))
    assert count_till_limit(data, n, encoder_or_tokenizer=enc) == (exact if exact <= n else None)


def test_split_never_empty_when_a_character_fits():
    vocab = mid_character_vocabulary()
    enc = make_encoder("table", vocab)
    text = "é" * 40
    data = text.encode()
    counts = [len(bpe_reference(vocab, data[:p])) for p in range(len(data) + 1)]
    # no token boundary of the encoding is a character boundary: "first n tokens, then
    # back off to a boundary" would return an empty chunk for every n
    ends, pos = [], 0
    for t in bpe_reference(vocab, data)[:-1]:
        pos += len(vocab.tokens[t])
        ends.append(pos)
    assert ends and not any(is_char_boundary(data, p) for p in ends)
    for n in range(1, 45):
        chunk = split_at_tokens(text, n, encoder_or_tokenizer=enc)
        expected = max(p for p in range(0, len(data) + 1, 2) if counts[p] <= n)
        assert chunk and len(chunk.encode()) == expected, n


def test_split_on_the_chunking_trap_against_tiktoken():
    vocab = load_vocabulary("o200k_base")
    enc = make_encoder("backtracking", vocab)
    text = TRAP_UNIT * 400
    data = text.encode()
    for n in (1, 2, 3, 10, 57, 200):
        chunk = split_at_tokens(text, n, encoder_or_tokenizer=enc)
        assert isinstance(chunk, str) and text.startswith(chunk)
        cut = len(chunk.encode())
        assert tiktoken_count(vocab, data[:cut]) <= n
        # maximal: the next 40 longer character-boundary prefixes do not fit
        longer = [p for p in range(cut + 1, len(data) + 1) if is_char_boundary(data, p)][:40]
        assert all(tiktoken_count(vocab, data[:p]) > n for p in longer), n


def test_split_stops_early_on_a_huge_text():
    vocab = load_vocabulary("cl100k_base")
    enc = make_encoder("backtracking", vocab)
    text = ("lorem ipsum " * 10) * 50_000  # 6 MB: encoding it all would take seconds
    chunk = split_at_tokens(text, 20, encoder_or_tokenizer=enc)
    assert chunk == brute_split_bytes(text[:400].encode(), 20, lambda d: tiktoken_count(vocab, d)).decode()


def test_approximate_encoder_chunks_stay_within_the_limit():
    vocab = load_vocabulary("cl100k_base")
    enc = make_encoder("greedy", vocab)
    text = "Grüße aus Zürich, schönes Wetter heute! " * 20
    for n in (1, 7, 50):
        chunk = split_at_tokens(text, n, encoder_or_tokenizer=enc)
        assert chunk and enc.count(chunk.encode()) <= n


def test_count_till_limit_bytes():
    vocab = SMALL["trained-merges-shuffled"]
    enc = make_encoder("backtracking", vocab)
    rng = random.Random(5)
    for _ in range(80):
        data = bytes(rng.choice(b"abcd eht") for _ in range(rng.randrange(0, 80)))
        exact = len(bpe_reference(vocab, data))
        for limit in (0, 1, exact - 1, exact, exact + 3):
            expected = exact if exact <= limit else None
            assert count_till_limit(data, limit, encoder_or_tokenizer=enc) == expected


def test_count_range_bytes_against_tiktoken():
    vocab = load_vocabulary("cl100k_base")
    enc = make_encoder("backtracking", vocab)
    rng = random.Random(6)
    text = "Grüße aus Zürich — 東京 and naïve café; " * 40
    data = text.encode()
    for _ in range(300):
        i = rng.randrange(len(data))
        j = rng.randrange(i, min(len(data), i + 300) + 1)
        assert count_range(text, i, j, encoder_or_tokenizer=enc) == tiktoken_count(vocab, data[i:j])


# ----------------------------------------------------------------------------- Tokenizer
@pytest.fixture(scope="module")
def cl100k_pipeline():
    vocab = load_vocabulary("cl100k_base")
    return Tokenizer(vocab, algorithm="backtracking"), tiktoken_encoding(vocab)


TEXTS = [
    "Hello world, this is a test of chunking.   It has  odd   spacing\n\n and numbers 1234567.",
    "Grüße aus Zürich — 東京 and naïve café; " * 4,
    "a   b    c\t\t d" * 5,
    "x" * 300 + " tail words here",
    TRAP_UNIT * 60,
    "  0  12   3    .  ,\n  7 \t 9",  # a prefix ending in spaces is one piece alone, two inside the text
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_split_tokenizer_equals_brute_force(cl100k_pipeline, text):
    tokenizer, oracle = cl100k_pipeline
    counts = [len(oracle.encode_ordinary(text[:p])) for p in range(len(text) + 1)]
    for n in (1, 2, 3, 7, 15, 40):
        expected = max(p for p, c in enumerate(counts) if c <= n)
        assert split_at_tokens(text, n, encoder_or_tokenizer=tokenizer) == text[:expected], n


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_count_till_limit_and_ranges_with_a_tokenizer(cl100k_pipeline, text):
    tokenizer, oracle = cl100k_pipeline
    exact = len(oracle.encode_ordinary(text))
    assert count_till_limit(text, exact, encoder_or_tokenizer=tokenizer) == exact
    assert count_till_limit(text, exact - 1, encoder_or_tokenizer=tokenizer) is None
    counter = RangeCounter(text, encoder_or_tokenizer=tokenizer)
    rng = random.Random(len(text))
    for _ in range(150):
        i = rng.randrange(len(text))
        j = rng.randrange(i, len(text) + 1)
        assert counter.count(i, j) == len(oracle.encode_ordinary(text[i:j])), (i, j)


def test_wrong_arguments_are_clear_errors(cl100k_pipeline):
    tokenizer, _ = cl100k_pipeline
    with pytest.raises(BpebenchError, match="Encoder or a Tokenizer"):
        split_at_tokens("abc", 2, encoder_or_tokenizer="backtracking")
    with pytest.raises(BpebenchError, match="needs a str"):
        split_at_tokens(b"abc", 2, encoder_or_tokenizer=tokenizer)
    with pytest.raises(BpebenchError):
        RangeCounter("abc", encoder_or_tokenizer=tokenizer).count(2, 1)


# ----------------------------------------------------------------------------- non-monotone counts
def brute_split_text(text: str, n: int, count) -> str:
    """The definition: the longest prefix (any character boundary) whose own count is <= n."""
    return text[: max(p for p in range(len(text) + 1) if count(text[:p]) <= n)]


def test_mistral_prefix_counts_go_down_and_the_split_is_the_longest_fitting_prefix():
    """Issue example: ``'*****'`` is 3 tokens, ``'******'`` 2, so ``'******0'`` split at 2
    tokens is ``'******'``, not the ``'****'`` where the count first passes 2."""
    vocab = resolve("mistral_v1")
    for algorithm in [n for n in encoder_names() if get_encoder_class(n).is_exact()]:
        tokenizer = Tokenizer(vocab, algorithm=algorithm)
        assert [tokenizer.count("*" * k) for k in (4, 5, 6)] == [2, 3, 2]
        assert split_at_tokens("******0", 2, encoder_or_tokenizer=tokenizer) == "******", algorithm
        assert count_till_limit("******0", 2, encoder_or_tokenizer=tokenizer) is None
        assert count_till_limit("******", 2, encoder_or_tokenizer=tokenizer) == 2


def _accepting(vocab) -> list[str]:
    return [n for n in encoder_names() if get_encoder_class(n).unsupported_reason(vocab) is None]


@settings(deadline=None, max_examples=40)
@given(vocabulary_and_input("random", max_size=40), st.integers(0, 12))
def test_split_and_limit_equal_brute_force_for_every_encoder(case, n):
    """Raw bytes, every registered encoder (approximate ones by their own counts), drawn
    vocabularies with merges out of priority order too."""
    spec, data = case
    vocab = resolve(spec)
    for name in _accepting(vocab):
        enc = make_encoder(name, vocab)
        expected = brute_split_bytes(data, n, enc.count)
        assert split_at_tokens(data, n, encoder_or_tokenizer=enc) == expected, name
        total = enc.count(data)
        assert count_till_limit(data, n, encoder_or_tokenizer=enc) == (total if total <= n else None), name


def assert_split_and_limit_match_brute_force(tokenizer, text: str, n: int, allowed) -> None:
    if allowed:
        def count(s):
            return len(tokenizer.encode(s, allowed_special=allowed, disallowed_special=()))
    else:
        count = tokenizer.count
    expected = brute_split_text(text, n, count)
    assert split_at_tokens(text, n, encoder_or_tokenizer=tokenizer, allowed_special=allowed) == expected
    total = count(text)
    assert count_till_limit(text, n, encoder_or_tokenizer=tokenizer, allowed_special=allowed) == (
        total if total <= n else None)


@settings(deadline=None, max_examples=60)
@given(pipeline_vocabulary_specs(), st.data(), st.integers(0, 14), st.sampled_from([frozenset(), "all"]))
def test_split_and_limit_equal_brute_force_through_drawn_pipelines(spec, data, n, allowed):
    """A hypothesis search over trained vocabularies with a pre-tokenizer pattern, a normalizer
    and special tokens whose literals occur in the text: the split and the limit equal the
    definition, counted by the Tokenizer itself."""
    vocab = resolve(spec)
    literals = list(vocab.special_tokens)
    text = data.draw(pipeline_texts(max_size=24, extra=literals), label="text")
    assert_split_and_limit_match_brute_force(Tokenizer(vocab, algorithm=_accepting(vocab)[0]), text, n, allowed)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "qwen", "mistral_v1"])
def test_split_and_limit_equal_brute_force_on_every_builtin_vocabulary(name):
    """Cut locality of every built-in pre-tokenizer, checked where it matters: the split
    through the real pipelines equals the definition on drawn text (whitespace runs, digits,
    contractions, scripts, special-token literals allowed or not)."""
    reason = available(name)
    if reason:
        pytest.skip(reason)
    vocab = resolve(name)
    tokenizer = Tokenizer(vocab)

    @settings(deadline=None, max_examples=40)
    @given(pipeline_texts(max_size=30, extra=list(vocab.special_tokens)[:2]), st.integers(0, 16),
           st.sampled_from([frozenset(), "all"]))
    def check(text, n, allowed):
        assert_split_and_limit_match_brute_force(tokenizer, text, n, allowed)

    check()


def test_long_piece_split_stops_inside_the_piece():
    """A 200 kB run of one letter is one piece: the fewest-tokens window rule stops the
    search inside it, and the answer still equals tiktoken's count."""
    vocab = load_vocabulary("cl100k_base")
    tokenizer = Tokenizer(vocab)
    text = "ab " + "x" * 200_000
    for n in (1, 2, 5, 30):
        chunk = split_at_tokens(text, n, encoder_or_tokenizer=tokenizer)
        oracle = tiktoken_encoding(vocab)
        assert len(oracle.encode_ordinary(chunk)) <= n
        longer = [chunk + "x" * k for k in range(1, 200)]
        assert all(len(oracle.encode_ordinary(t)) > n for t in longer), n


def test_negative_n_is_a_clear_error():
    enc = make_encoder("backtracking", SMALL["seed"])
    with pytest.raises(BpebenchError, match="n must be >= 0"):
        split_at_tokens(b"abc", -1, encoder_or_tokenizer=enc)
    assert count_till_limit(b"abc", -1, encoder_or_tokenizer=enc) is None
