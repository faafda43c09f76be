"""Vocabularies whose merges run out of priority order (``compiled.rank_order_break``).

With ``bc`` ranked after ``abc``, BPE on ``abc`` merges ``b c`` (rank 4) and then
``a bc`` (rank 3), a lower rank after a higher one. The derived splits and every
compatibility check assume the opposite, so the encoders built on them refuse such a
vocabulary with one clear error; ``heap`` follows the definition and stays exact, the
Tokenizer picks it, and its texts go through the fused pipeline on the definition's
merges (``kernels.out_of_order``). Oracles: hand-worked examples, the ``naive`` reference, and a
brute-force scan of every token's own merge history.
"""

from __future__ import annotations

import itertools
import random

from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.appending import AppendableEncoder, PrependableEncoder
from bpebench.algorithms.kernels.compiled import NEVER, rank_order_break
from bpebench.errors import UnsupportedVocabulary
from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline, unsupported_reason
from bpebench.algorithms.interval import IntervalEncoding
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import get_encoder_class, make_encoder
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.properties.vocabularies import as_merge_list, break_merge_order, train_bpe

REFUSING = ["backtracking", "table", "appending", "prepending", "interval"]


def late_part_ranks() -> Vocabulary:
    """``abc`` (rank 3) forms from ``a`` + ``bc`` (rank 4)."""
    return Vocabulary.from_ranks([b"a", b"b", b"c", b"abc", b"bc"], name="late-part-ranks")


def late_part_merges() -> Vocabulary:
    """The same with a merge list: ``a bc -> abc`` is listed before ``b c -> bc``."""
    tokens = [b"a", b"b", b"c", b"bc", b"abc"]
    merges = {(0, 3): (0, 4), (1, 2): (1, 3)}
    priority = np.array([-1, -1, -1, 1, 0], dtype=np.int64)
    return Vocabulary(name="late-part-merges", tokens=tokens, priority=priority, rule="merges", merges=merges)


def strings(alphabet: bytes, longest: int):
    for n in range(1, longest + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield bytes(t)


@pytest.mark.parametrize("make", [late_part_ranks, late_part_merges])
def test_hand_worked_out_of_order_merge_is_found(make):
    vocab = make()
    abc = vocab.token_id(b"abc")
    assert bpe_reference(vocab, b"abc") == [abc]  # b c first, then a bc: worked by hand above
    reason = rank_order_break(vocab)
    assert reason is not None and "b'abc'" in reason and "b'bc'" in reason
    assert list(vocab.unreachable) == []  # abc is produced, although the derivation missed it
    assert any("out of priority order" in p for p in vocab.problems())


@pytest.mark.parametrize("make", [late_part_ranks, late_part_merges])
def test_compatibility_encoders_refuse_with_the_reason(make):
    vocab = make()
    for name in REFUSING:
        assert get_encoder_class(name).unsupported_reason(vocab) == rank_order_break(vocab)
        with pytest.raises(UnsupportedVocabulary, match=f"{name} cannot encode .*out of priority order"):
            get_encoder_class(name)(vocab)
    for build in (AppendableEncoder, PrependableEncoder):
        with pytest.raises(UnsupportedVocabulary):
            build(vocab)
    with pytest.raises(UnsupportedVocabulary):
        IntervalEncoding(vocab, b"abc")
    assert unsupported_reason(vocab) is None  # the fused pipeline follows the definition


@pytest.mark.parametrize("make", [late_part_ranks, late_part_merges])
def test_heap_and_tokenizer_follow_the_definition(make):
    vocab = make()
    heap = make_encoder("heap", vocab)
    for data in strings(b"abc", 7):
        assert heap.encode(data) == bpe_reference(vocab, data), data
    tokenizer = Tokenizer(vocab)
    assert tokenizer.encoder.name == "heap" and tokenizer.fused
    assert tokenizer.encode("abcabcbca") == bpe_reference(vocab, b"abcabcbca")
    for data in strings(b"abc", 7):
        assert tokenizer.encode_ordinary(data.decode()) == bpe_reference(vocab, data), data
    long = b"abc" * 40 + b"bca" * 30  # beyond the merge loop's 32 bytes: the heap's loop
    assert tokenizer.encode_ordinary(long.decode()) == bpe_reference(vocab, long)
    assert not Tokenizer(vocab, algorithm="heap").fused  # a named encoder stays measurable


def test_shipped_vocabularies_keep_merges_in_order():
    for name in ("cl100k_base", "o200k_base"):
        vocab = load_vocabulary(name)
        assert rank_order_break(vocab) is None
        assert Tokenizer(vocab).fused


def _out_of_order_tokens(vocab) -> list[int]:
    """Brute force: every token whose own bytes BPE merges with a priority below an earlier one."""
    found = []
    for t, token in enumerate(vocab.tokens):
        applied: list = []
        if len(token) < 2 or bpe_reference(vocab, token, applied) != [t]:
            continue
        priorities = [a[0] for a in applied]
        if any(b < a for a, b in zip(itertools.accumulate(priorities, max), priorities[1:])):
            found.append(t)
    return found


def test_detection_matches_brute_force_and_encoders_stay_exact():
    """Trained vocabularies with shuffled merge orders (both rules, dropped and re-split merges):
    the break is reported exactly when some token merges out of order; heap always equals the
    reference, and backtracking does whenever it accepts the vocabulary."""
    rng = random.Random(3)
    breaks = 0
    for _ in range(150):
        alphabet = b"abc"[: rng.randint(2, 3)]
        texts = [alphabet] + [bytes(rng.choice(alphabet) for _ in range(rng.randint(20, 120)))
                              for _ in range(rng.randint(1, 4))]
        rule = rng.choice(["ranks", "ranks", "merges"])  # reordered ranks break most often
        options = dict(merges=rng.randint(20, 60), rule=rule, alphabet="text", reorder=rng.randint(0, 4),
                       shuffle=rng.randint(0, 3))
        if rule == "merges":
            options.update(drop=rng.choice([0, 0, 1, 2]), resplit=rng.choice([0, 0, 1, 2]))
        vocab = train_bpe(texts, **options)
        reason = rank_order_break(vocab)
        assert (reason is not None) == bool(_out_of_order_tokens(vocab)), options
        breaks += reason is not None
        heap = make_encoder("heap", vocab)
        backtracking = None if reason else make_encoder("backtracking", vocab)
        for _ in range(25):
            data = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
            want = bpe_reference(vocab, data)
            assert heap.encode(data) == want, (options, texts, data)
            if backtracking is not None:
                assert backtracking.encode(data) == want, (options, texts, data)
    assert breaks >= 2  # the sample does exercise the refusal (about 5% of reordered ranks vocabularies)


def _merge_list_vocabulary(name: str, tokens: list[bytes], merge_list: list[tuple[bytes, bytes]]) -> Vocabulary:
    """A merges-rule vocabulary from a merge list in priority order (HF style: a token may be
    the result of several merges; its priority is its first one, ``NEVER`` if none forms it,
    as ``train_bpe`` writes it)."""
    ids = {t: i for i, t in enumerate(tokens)}
    merges = {}
    priority = np.array([-1 if len(t) == 1 else NEVER for t in tokens], dtype=np.int64)
    for rank, (left, right) in enumerate(merge_list):
        merged = ids[left + right]
        merges[(ids[left], ids[right])] = (rank, merged)
        priority[merged] = min(priority[merged], rank)
    return Vocabulary(name=name, tokens=tokens, priority=priority, rule="merges", merges=merges)


#: ``ab`` has no merge, so ``abc``'s first listed merge ``ab c`` never runs and ``abc`` forms
#: from ``a bc``: after ``b c`` (in order) or before it (out of order)
_TWO_MERGE_TOKENS = [b"a", b"b", b"c", b"ab", b"bc", b"abc"]


@pytest.mark.parametrize("merge_list, out_of_order", [
    ([(b"ab", b"c"), (b"b", b"c"), (b"a", b"bc")], False),
    ([(b"ab", b"c"), (b"a", b"bc"), (b"b", b"c")], True),
    ([(b"a", b"b"), (b"ab", b"c"), (b"b", b"c"), (b"a", b"bc")], False),
])
def test_a_token_formed_by_a_later_listed_merge(merge_list, out_of_order):
    """The merges rule's own case: a token whose first listed merge never runs is formed by a
    later listed one. In order, every encoder accepts the vocabulary; out of order, the
    detection names the token (and the brute-force scan agrees). Every encoder that accepts
    the vocabulary equals the reference on every string over ``abc`` up to 7 bytes."""
    vocab = _merge_list_vocabulary("later-listed-merge", _TWO_MERGE_TOKENS, merge_list)
    abc = vocab.token_id(b"abc")
    assert bpe_reference(vocab, b"abc") == [abc]
    reason = rank_order_break(vocab)
    assert (reason is not None) == out_of_order, reason
    assert (reason is not None) == bool(_out_of_order_tokens(vocab))
    if out_of_order:
        assert "b'abc'" in reason and "b'bc'" in reason
    encoders = {"heap": make_encoder("heap", vocab)}
    for name in REFUSING:
        if out_of_order:
            assert get_encoder_class(name).unsupported_reason(vocab) == reason
        else:
            encoders[name] = make_encoder(name, vocab)
    for data in strings(b"abc", 7):
        want = bpe_reference(vocab, data)
        for name, encoder in encoders.items():
            assert encoder.encode(data) == want, (name, data)


# ============================================================================= fused, out of order
HF_FIXTURE = str(Path(__file__).resolve().parent / "golden" / "bytelevel_bpe.json")


def llama3_shaped(whole_piece_lookup: bool) -> Vocabulary:
    """The byte-level HF fixture (merges rule, Llama-3 pattern) with 5% of its merges listed just
    before their later part's merge: BPE forms those tokens out of priority order."""
    import dataclasses

    vocab = break_merge_order(load_vocabulary(HF_FIXTURE), 0.05, seed=1)
    return dataclasses.replace(vocab, name=f"llama3-shaped-{whole_piece_lookup}", whole_piece_lookup=whole_piece_lookup)


_SHAPED = {flag: llama3_shaped(flag) for flag in (False, True)}
_SHAPED_RANKS = break_merge_order(train_bpe(
    [b"the theater's thoroughly thin thread, then three thousand things; 123 4567 \n\n  the other"] * 2,
    merges=90, rule="ranks", alphabet="all"), 0.3, seed=2, name="ranks-out-of-order")
#: words of the fixture's merges, long runs (the heap beyond 32 bytes), digits, newlines, unicode
_PIECES = st.sampled_from(["the", " the", "ing", " thorough", "ly", "'ll", " ", "  ", "\n", "\n\n", "123", "4567",
                           "er", "tion", " théâtre", "東京", "ab" * 20, "x", ",", "!!", " " * 40, "thethethethe" * 4])
_TEXTS = st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=40)


def test_llama3_shaped_fixtures_are_out_of_order_and_fused():
    for vocab in (*_SHAPED.values(), _SHAPED_RANKS):
        assert rank_order_break(vocab) is not None, vocab.name
        assert unsupported_reason(vocab) is None
        tokenizer = Tokenizer(vocab)
        assert tokenizer.fused and tokenizer.encoder.name == "heap"
        # the merge loop up to 32 bytes (the heap beyond it is slower than backtracking), CJK, kana and
        # Hangul pieces up to 24 (longer ones are cut into parts of a character or two)
        plan = tokenizer._fused.plan
        assert plan.short_limit == FusedPipeline.SHORT_PIECE_OUT_OF_ORDER == 32
        assert plan.wide_limit == FusedPipeline.SHORT_PIECE_WIDE_OUT_OF_ORDER == 24


@pytest.mark.parametrize("vocab", [_SHAPED[False], _SHAPED_RANKS], ids=lambda v: v.name)
def test_produced_tokens_are_those_bpe_gives_for_their_own_bytes(vocab):
    """The out-of-order tables' ``produced`` against the reference run on every token's bytes."""
    from bpebench.algorithms.kernels.compiled import compile_vocabulary
    from bpebench.algorithms.kernels.matching import build_matcher
    from bpebench.algorithms.kernels.out_of_order import out_of_order_tables

    produced = out_of_order_tables(vocab, compile_vocabulary(vocab), build_matcher(vocab))["produced"]
    for t, token in enumerate(vocab.tokens):
        if t in vocab.excluded or not token:
            assert not produced[t]
            continue
        assert bool(produced[t]) == (bpe_reference(vocab, token) == [t]), (t, token)


@settings(deadline=None, max_examples=200)
@given(text=_TEXTS, which=st.sampled_from(["merges", "merges+ignore_merges", "ranks"]))
@example(text="the theater's thoroughly thin  \n\n 123456" + "ab" * 20, which="merges")
def test_fused_out_of_order_equals_the_reference(text, which):
    """Property: on vocabularies whose merges run out of priority order, the fused pipeline (merge
    loop, heap beyond 32 bytes, whole-token tables of produced tokens, piece cache) gives the
    ids of ``regex`` + the ``naive`` definition; batches and ``encode_to_numpy`` too."""
    vocab = {"merges": _SHAPED[False], "merges+ignore_merges": _SHAPED[True], "ranks": _SHAPED_RANKS}[which]
    fused = Tokenizer(vocab)
    reference = Tokenizer(vocab, algorithm="naive", pretokenizer="regex")
    assert fused.fused and not reference.fused
    want = reference.encode_ordinary(text)
    assert fused.encode_ordinary(text) == want
    assert fused.encode_to_numpy(text).tolist() == want
    assert fused.encode_ordinary_batch([text, text[::-1], text]) == [want, reference.encode_ordinary(text[::-1]),
                                                                     want]


@pytest.mark.parametrize("shape", ["ranks", "merge list"])
def test_o200k_out_of_order_on_natural_text_equals_the_reference(shape):
    """o200k with 2% of its tokens ranked before their later part, as ranks or as an HF merge list
    (Llama-3-shaped, the vocabulary the performance notes measure): natural text through the
    fused pipeline equals the ``heap`` encoder's ids behind ``regex``."""
    from bpebench import corpora

    base = load_vocabulary("o200k_base")
    vocab = break_merge_order(base if shape == "ranks" else as_merge_list(base), 0.02, seed=1)
    assert rank_order_break(vocab) is not None
    fused = Tokenizer(vocab)
    reference = Tokenizer(vocab, algorithm="heap", pretokenizer="regex")  # heap: the definition, O(n log n)
    assert fused.fused and not reference.fused
    for name in ("prose-en", "code-python", "udhr-all"):
        text = corpora.get(name, size=60_000)
        assert fused.encode_ordinary(text) == reference.encode_ordinary(text), name


def test_o200k_out_of_order_cjk_pieces_past_the_wide_limit_equal_the_reference():
    """CJK and kana pieces of 25 to 32 bytes leave the merge loop when merges run out of priority
    order (``SHORT_PIECE_WIDE_OUT_OF_ORDER``) and are cut into parts: runs of the UDHR's Chinese and
    Japanese cut into pieces of 7 to 11 characters, after a space or a line feed, equal the ``heap``
    encoder's ids."""
    import regex

    from bpebench import corpora
    from bpebench.algorithms.formats.patterns import PATTERNS

    base = load_vocabulary("o200k_base")
    vocab = break_merge_order(as_merge_list(base), 0.02, seed=1)
    fused = Tokenizer(vocab)
    reference = Tokenizer(vocab, algorithm="heap", pretokenizer="regex")
    cjk = corpora.get("udhr-zh", size=30_000) + corpora.get("udhr-ja", size=30_000)
    runs = regex.findall(r"[\p{Han}\p{Hiragana}\p{Katakana}]{12,}", cjk)
    assert len(runs) >= 20
    pieces = [run[:7 + i % 5] for i, run in enumerate(runs)]
    text = "".join((" " if i % 2 else "\n") + piece for i, piece in enumerate(pieces))
    lengths = [len(p.encode()) for p in regex.findall(PATTERNS["o200k"], text)]
    assert sum(24 < n <= 32 for n in lengths) >= 10, lengths
    assert fused.encode_ordinary(text) == reference.encode_ordinary(text)


def test_ranks_as_a_merge_list_give_the_same_ids():
    """``as_merge_list`` (the conversion the Llama-3-shaped vocabulary starts from) keeps BPE: in
    priority order, the merge list gives tiktoken's ranks' ids (checked against tiktoken)."""
    from bpebench import corpora
    from bpebench.algorithms.peers import make_peer

    pytest.importorskip("tiktoken")
    base = load_vocabulary("o200k_base")
    merges = as_merge_list(base)
    assert merges.rule == "merges" and rank_order_break(merges) is None
    text = corpora.get("prose-en", size=20_000) + corpora.get("udhr-all", size=20_000)
    assert Tokenizer(merges).encode_ordinary(text) == make_peer("tiktoken", base).encode_ordinary(text)
