"""The exact encoders (backtracking, table, heap, appending, prepending, interval) and matching.

Oracles: the ``naive`` reference (the definition) on short inputs, tiktoken's own
single-piece BPE on long ones, brute-force dictionary scans for the tries, and the
seed paper's hand-worked example.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import example, given, settings

from bpebench.algorithms.kernels.compiled import compile_vocabulary, is_compatible
from bpebench.errors import BpebenchError
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.matching import (build_matcher, compatible_after, longest_match_and_length,
                                                  longest_match_from_start, pair_compatible, prefix_matches,
                                                  spelled_token)
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.core.registry import default_encoder_name, get_encoder_class, make_encoder
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.properties.oracles import tiktoken_single_piece
from bpebench.properties.strategies import vocabulary_and_input
from bpebench.properties.vocabularies import resolve, train_bpe

EXACT = ["backtracking", "table", "heap", "appending", "prepending", "interval"]
SEED_TOKENS = [b"a", b"b", b"c", b"ab", b"cb", b"ac", b"bb", b"cbb", b"acbb"]
REAL = ["cl100k_base", "o200k_base"]


def seed_with_all_bytes() -> Vocabulary:
    others = [bytes([b]) for b in range(256) if bytes([b]) not in SEED_TOKENS]
    return Vocabulary.from_ranks(SEED_TOKENS + others, name="seed+bytes")


def reversed_merges() -> Vocabulary:
    """A merges-rule vocabulary whose merge priorities run against the ids: ``bc`` (id 260)
    merges first, ``ab`` (id 256) last, so an encoder ordering merges by id gets ``abc`` wrong."""
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc", b"cd", b"bcd", b"bc"]
    t = {tok: i for i, tok in enumerate(tokens)}
    merges = {
        (t[b"b"], t[b"c"]): (0, t[b"bc"]),
        (t[b"c"], t[b"d"]): (1, t[b"cd"]),
        (t[b"bc"], t[b"d"]): (2, t[b"bcd"]),
        (t[b"a"], t[b"bc"]): (3, t[b"abc"]),
        (t[b"a"], t[b"b"]): (4, t[b"ab"]),
    }
    priority = np.full(len(tokens), -1, dtype=np.int64)
    for prio, merged in merges.values():
        priority[merged] = prio
    return Vocabulary(name="reversed-merges", tokens=tokens, priority=priority, rule="merges", merges=merges)


#: a drawn vocabulary whose merges run out of priority order (``ba`` + ``baa`` after ``baa`` forms,
#: on ``babaaa``): the random-vocabulary strategies draw such lists, which some encoders refuse
OUT_OF_ORDER_SPEC = ("trained:rule=ranks,merges=10,alphabet=all,shuffle=0,reorder=1,text=626162616162616161"
                     "616261616261626162616162626261626162616261616161616262626162616161626261626162616261616161616162"
                     "61.636362626162626362626161616263626161626263636163616263616361636361636361636362616362636362616"
                     "1626161636161616162626263636261626161")

SMALL = {
    "seed": seed_with_all_bytes(),
    "reversed-merges": reversed_merges(),
    "trained-merges-shuffled": train_bpe([b"abcabcabd abcd aab", b"the theme then"], merges=30,
                                         rule="merges", alphabet="all", shuffle=3),
}


def random_token_text(vocab: Vocabulary, rng: random.Random, size: int) -> bytes:
    """Random tokens concatenated, cut to ``size`` bytes at a random offset (may be invalid UTF-8)."""
    pieces, total = [], 0
    while total < size + 64:
        token = vocab.tokens[rng.randrange(len(vocab.tokens))]
        pieces.append(token)
        total += len(token)
    text = b"".join(pieces)
    start = rng.randrange(32)
    return text[start : start + size]


# ----------------------------------------------------------------------------- registry
def test_backtracking_is_the_default_and_all_declare_exact():
    for name in EXACT:
        assert get_encoder_class(name).is_exact()
    ranks = {name: get_encoder_class(name).speed_rank for name in EXACT}
    assert min(ranks, key=ranks.get) == "backtracking"
    assert get_encoder_class(default_encoder_name()).is_exact()


# ----------------------------------------------------------------------------- hand-worked
@pytest.mark.parametrize("name", EXACT)
def test_seed_paper_example(name):
    vocab = SMALL["seed"]
    enc = make_encoder(name, vocab)
    assert [vocab.tokens[i] for i in enc.encode(b"abacb")] == [b"ab", b"a", b"cb"]
    assert [vocab.tokens[i] for i in enc.encode(b"abacbb")] == [b"ab", b"acbb"]
    assert enc.encode(b"") == [] and enc.count(b"") == 0


@pytest.mark.parametrize("name", EXACT)
def test_priority_not_id_decides(name):
    vocab = SMALL["reversed-merges"]
    enc = make_encoder(name, vocab)
    spell = lambda data: [vocab.tokens[i] for i in enc.encode(data)]  # noqa: E731
    # bc merges first (priority 0) although ab has the smaller id: a+bc -> abc, never ab+c
    assert spell(b"abc") == [b"abc"]
    assert spell(b"abcd") == [b"a", b"bcd"]  # bc, then bc+d (2) before a+bc (3)
    assert spell(b"abab") == [b"ab", b"ab"]


# ----------------------------------------------------------------------------- against naive
@pytest.mark.parametrize("vocab_name", sorted(SMALL))
@pytest.mark.parametrize("name", EXACT)
def test_small_vocabularies_equal_naive(name, vocab_name):
    vocab = SMALL[vocab_name]
    enc = make_encoder(name, vocab)
    rng = random.Random(7)
    alphabet = b"abcd eht"
    for _ in range(150):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(60)))
        expected = bpe_reference(vocab, data)
        assert enc.encode(data) == expected, data
        assert enc.count(data) == len(expected)


@settings(deadline=None)
@given(vocabulary_and_input("random"))
@example(("seed", b"abacbb"))
@example(("seed", b"cbbb"))
@example(("trained:rule=merges,merges=3,alphabet=all,shuffle=0,resplit=1,extra=1,text=00000001", b""))
def test_random_trained_vocabularies_equal_naive(case):
    from bpebench.algorithms.core.registry import get_encoder_class
    from bpebench.algorithms.kernels.compiled import rank_order_break
    from bpebench.errors import UnsupportedVocabulary

    spec, data = case
    vocab = resolve(spec)
    expected = bpe_reference(vocab, data)
    out_of_order = rank_order_break(vocab) is not None  # the drawn merges can run out of priority order
    for name in EXACT:
        if out_of_order and get_encoder_class(name).needs_ordered_merges:
            with pytest.raises(UnsupportedVocabulary):  # refused in one line, never other ids
                make_encoder(name, vocab)
            continue
        assert make_encoder(name, vocab).encode(data) == expected, name


@pytest.mark.parametrize("vocab_name", REAL)
def test_real_vocabularies_equal_naive(vocab_name):
    vocab = load_vocabulary(vocab_name)
    rng = random.Random(11)
    encoders = [make_encoder(name, vocab) for name in EXACT]
    cases = [random_token_text(vocab, rng, size) for size in (10, 37, 200, 1000, 2000)]
    cases += [b"a" * 300, b"ab" * 150, "ééé".encode() * 40, b"thequickbrownfoxjumpsoverthelazydog" * 8]
    for data in cases:
        expected = bpe_reference(vocab, data)
        for enc in encoders:
            assert enc.encode(data) == expected, (enc.name, data[:40])


@pytest.mark.parametrize("vocab_name", REAL)
def test_long_inputs_equal_tiktoken(vocab_name):
    vocab = load_vocabulary(vocab_name)
    rng = random.Random(5)
    fast = [make_encoder(name, vocab) for name in ("backtracking", "table", "heap", "appending")]
    for data in [random_token_text(vocab, rng, 100_000), b"x" * 20_000,
                 "Zürich".encode()[:-1] * 3000, random_token_text(vocab, rng, 30_000)[1:]]:
        expected = tiktoken_single_piece(vocab, data)
        for enc in fast:
            assert enc.encode(data) == expected, (enc.name, len(data))


def test_backtrack_piece_clears_the_dead_marks_it_reads():
    """Callers hand ``backtrack_piece`` unzeroed scratch (``np.empty``): marks left in it, here
    every byte set, must not change a piece's encoding."""
    from bpebench.algorithms.backtracking import backtrack_piece

    vocab = load_vocabulary("o200k_base")
    matcher = build_matcher(vocab)
    rng = random.Random(9)
    data = random_token_text(vocab, rng, 3_000) + bytes(rng.choice(b"abcdefghij") for _ in range(3_000))
    arr = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(data), dtype=np.int32)
    for start, end in [(0, len(data)), (17, 2_900), (3_001, len(data))]:
        dead = np.ones(len(data) + 1, dtype=np.uint8)
        n = backtrack_piece(matcher, arr, start, end, dead, out, 0)
        assert out[:n].tolist() == tiktoken_single_piece(vocab, data[start:end]), (start, end)


@pytest.mark.parametrize("name", EXACT)
def test_encode_pieces_matches_piecewise(name):
    vocab = load_vocabulary("cl100k_base")
    enc = make_encoder(name, vocab)
    rng = random.Random(3)
    pieces = [random_token_text(vocab, rng, rng.randrange(0, 40)) for _ in range(200)]
    expected = [t for p in pieces if p for t in tiktoken_single_piece(vocab, p)]  # tiktoken panics on b""
    assert enc.encode_pieces(pieces) == expected
    assert enc.encode_pieces(iter(pieces)) == expected


@pytest.mark.parametrize("name", EXACT)
def test_byte_that_is_not_a_token_is_a_clear_error(name):
    vocab = train_bpe([b"abab"], merges=2, rule="ranks", alphabet="text")
    enc = make_encoder(name, vocab)
    assert enc.encode(b"abab") == bpe_reference(vocab, b"abab")
    with pytest.raises(BpebenchError, match="0x7a"):
        enc.encode(b"abz")


# ----------------------------------------------------------------------------- matching
@pytest.mark.parametrize("vocab_name", ["cl100k_base"])
def test_matcher_against_dictionary_scans(vocab_name):
    vocab = load_vocabulary(vocab_name)
    matcher = build_matcher(vocab)
    lookup = {t: i for i, t in enumerate(vocab.tokens)}
    rng = random.Random(2)
    data = random_token_text(vocab, rng, 3000)
    arr = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(matcher.max_token_len, dtype=np.int32)
    for pos in range(0, len(data), 5):
        starting = [lookup[data[pos:e]] for e in range(pos + 1, min(len(data), pos + 128) + 1) if data[pos:e] in lookup]
        assert matcher.longest_match(data, pos) == starting[-1]
        assert out[: prefix_matches(matcher.forward, arr, pos, len(arr), out)].tolist() == starting
        end = pos + 1
        ending = [lookup[data[s:end]] for s in range(max(0, end - 128), end) if data[s:end] in lookup]
        assert matcher.tokens_ending_at(data, end) == ending
    for t in rng.sample(range(len(vocab.tokens)), 3000):
        token = vocab.tokens[t]
        prefixes = [lookup[token[:k]] for k in range(len(token) - 1, 0, -1) if token[:k] in lookup]
        suffixes = [lookup[token[-k:]] for k in range(len(token) - 1, 0, -1) if token[-k:] in lookup]
        assert matcher.next_prefix[t] == (prefixes[0] if prefixes else -1)
        assert matcher.next_suffix[t] == (suffixes[0] if suffixes else -1)
        assert matcher.rows[t, 4] == matcher.next_prefix[t]


@pytest.mark.parametrize("vocab_name", ["cl100k_base", "trained-merges-shuffled", "text-alphabet"])
def test_two_byte_start_walks_equal_dictionary_scans(vocab_name):
    """The walks that start from ``two_byte_start`` (the longest match and its length, the spelled
    token) against plain dictionary lookups of the tokens the trie indexes, at every position and
    at ends one and two bytes away."""
    from bpebench.algorithms.kernels.compiled import NEVER

    if vocab_name == "text-alphabet":  # bytes and byte pairs with no token at all
        vocab = train_bpe([b"abcabcabd abcd aab", b"the theme then"], merges=30, rule="ranks", alphabet="text")
    else:
        vocab = SMALL.get(vocab_name) or load_vocabulary(vocab_name)
    matcher = build_matcher(vocab)
    indexed = compile_vocabulary(vocab).priority < NEVER
    lookup = {t: i for i, t in enumerate(vocab.tokens) if indexed[i] and i not in vocab.excluded}
    rng = random.Random(4)
    data = random_token_text(vocab, rng, 1500) + bytes(rng.randrange(256) for _ in range(300))
    arr = np.frombuffer(data, dtype=np.uint8)
    forward, start = matcher.forward, matcher.two_byte_start
    for pos in range(len(data)):
        for end in {pos + 1, pos + 2, min(len(data), pos + 3), len(data)}:
            if end > len(data):
                continue
            ends = [e for e in range(pos + 1, min(end, pos + 128) + 1) if data[pos:e] in lookup]
            expected = lookup[data[pos : ends[-1]]] if ends else -1
            assert longest_match_from_start(forward, start, arr, pos, end) == expected
            assert longest_match_and_length(forward, start, arr, pos, end) == (expected, ends[-1] - pos if ends else 0)
        for length in (1, 2, 3, 5):
            if pos + length <= len(data):
                expected = lookup.get(data[pos : pos + length], -1)
                assert spelled_token(forward, start, arr, pos, pos + length) == expected


def test_two_byte_start_rows_by_hand():
    """Row ``b0 << 8 | b1`` = (the trie slot after ``b0 b1`` or -1, the longest token of ``b0``, ``b0 b1``,
    that slot's base, the token ``b0 b1`` or -1)."""
    tokens = [bytes([b]) for b in range(256) if b != ord("z")] + [b"ab", b"abc"]
    vocab = Vocabulary.from_ranks(tokens, name="hand")
    matcher = build_matcher(vocab)
    table, cells = matcher.two_byte_start, matcher.forward.cells
    a, ab = vocab.token_id(b"a"), vocab.token_id(b"ab")
    row_ab = table[ord("a") << 8 | ord("b")]
    assert row_ab[1] == ab == row_ab[3] and cells[row_ab[0], 2] == ab
    assert row_ab[2] == cells[row_ab[0], 0] and cells[row_ab[2] + ord("c"), 2] == vocab.token_id(b"abc")
    assert table[ord("a") << 8 | ord("c")].tolist() == [-1, a, 0, -1]  # no token starts "ac": the walk stops at "a"
    assert table[ord("z") << 8 | ord("a")].tolist() == [-1, -1, 0, -1]  # no token starts with "z"
    assert table[ord("q") << 8 | ord("a")].tolist() == [-1, vocab.token_id(b"q"), 0, -1]


def test_matcher_skips_excluded_ids():
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"ab"]
    vocab = Vocabulary(name="dup", tokens=tokens, priority=np.arange(len(tokens)), excluded=frozenset({257}))
    matcher = build_matcher(vocab)
    assert matcher.longest_match(b"abab") == 256
    assert make_encoder("backtracking", vocab).encode(b"abab") == [256, 256]


@pytest.mark.parametrize("vocab_name", ["o200k_base", "trained-merges-shuffled"])
def test_pair_floor_bounds_every_merge_rank_from_below(vocab_name):
    """``pair_floor`` lets compatibility checks skip merges at or above their limit: the bound
    it gives a slot must not exceed the rank of any merge hashed there, and a slot without
    merges must say so."""
    from bpebench.algorithms.kernels.matching import _FLOOR_EMPTY, _ID_BITS, _ID_MASK, _floor_slot, floor_bound

    vocab = SMALL.get(vocab_name) or load_vocabulary(vocab_name)
    m = build_matcher(vocab)
    entries = m.pairs[m.pairs != -1]
    slots = np.array([_floor_slot(int(key)) for key in (entries >> _ID_BITS).tolist()])
    lowest = np.full(len(m.pair_floor), np.iinfo(np.int64).max)
    np.minimum.at(lowest, slots, entries & _ID_MASK)
    bounds = np.array([floor_bound(q) for q in range(256)])
    bound = bounds[m.pair_floor]
    used = lowest < np.iinfo(np.int64).max
    assert (bound[used] <= lowest[used]).all()
    assert (bound[used] * 2 >= lowest[used]).all()  # and close: within an octave of the lowest rank
    assert (m.pair_floor[~used] == _FLOOR_EMPTY).all() and bounds[_FLOOR_EMPTY] > 1 << 42
    assert bounds[0] == 0 and (np.diff(bounds[: _FLOOR_EMPTY + 1]) >= 0).all()


@pytest.mark.parametrize("vocab_name", ["o200k_base", "trained-merges-shuffled"])
def test_packed_compatibility_equals_compiled(vocab_name):
    vocab = SMALL.get(vocab_name) or load_vocabulary(vocab_name)
    tables = compile_vocabulary(vocab)
    m = build_matcher(vocab)
    rng = random.Random(9)
    ids = np.flatnonzero(tables.priority < 2**62)
    pairs = [(int(rng.choice(ids)), int(rng.choice(ids))) for _ in range(3000)]
    # splits of tokens are the pairs most likely to be incompatible
    pairs += [(int(tables.split_left[t]), int(tables.split_right[t])) for t in ids[-500:] if tables.split_left[t] >= 0]
    for a, b in pairs:
        assert bool(pair_compatible(m.rows, m.pairs, m.pair_filter, m.pair_floor, a, b)) == is_compatible(tables, a, b), (a, b)


@pytest.mark.parametrize("vocab_name", ["o200k_base", "cl100k_base"])
def test_boundary_floors_and_their_shortcut_agree_with_the_merges(vocab_name):
    """``rows[:, 5:8]`` (``_boundary_floors``) recomputed from the merge list by brute force on a sample
    of tokens, and ``safe_boundary``'s shortcut (only a merge of the two whole tokens can break the
    pair) equal to the compiled compatibility walk on every pair of multi-byte tokens it accepts."""
    from bpebench.algorithms.kernels.compiled import NEVER
    from bpebench.algorithms.kernels.matching import NO_FLOOR, merge_rank, safe_boundary

    vocab = load_vocabulary(vocab_name)
    tables = compile_vocabulary(vocab)
    m = build_matcher(vocab)
    rows, tokens = m.rows, vocab.tokens
    merged = np.flatnonzero(tables.split_left >= 0)
    lefts, rights, ranks = tables.split_left[merged], tables.split_right[merged], rows[merged, 0]
    lead_right = np.array([tokens[r][0] >= 0xC2 for r in rights])
    continuation_left = np.array([tokens[left][-1] & 0xC0 == 0x80 for left in lefts])

    def spine(t, side):
        parts = []
        while tables.split_left[t] >= 0:
            t = int(tables.split_right[t] if side == "right" else tables.split_left[t])
            parts.append(t)
        return parts

    rng = random.Random(3)
    multi_byte = [t for t in range(len(tokens)) if len(tokens[t]) > 1 and tokens[t][0] >= 0xC2
                  and tables.priority[t] < NEVER]
    for t in rng.sample(multi_byte, 300):
        own = ranks[(rights == t) & continuation_left]
        assert rows[t, 5] == (int(own.min()) if len(own) else int(NO_FLOOR)), t
        right = [ranks[(lefts == x) & lead_right] for x in spine(t, "right")]
        left = [ranks[(rights == y) & continuation_left] for y in spine(t, "left")]
        assert rows[t, 6] == min((int(r.min()) for r in right if len(r)), default=int(NO_FLOOR)), t
        assert rows[t, 7] == min((int(r.min()) for r in left if len(r)), default=int(NO_FLOOR)), t
    ends = [t for t in multi_byte if tokens[t][-1] & 0xC0 == 0x80]
    accepted = 0
    for _ in range(20000):
        a, b = rng.choice(ends), rng.choice(multi_byte)
        if safe_boundary(rows, a, b, tokens[a][-1], tokens[b][0]):
            accepted += 1
            assert (merge_rank(m.pairs, m.pair_filter, a, b) < 0) == is_compatible(tables, a, b), (a, b)
    assert accepted > 300


@pytest.mark.parametrize("vocab_name", ["o200k_base", "cl100k_base"])
def test_boundary_signatures_hold_the_live_crossings_and_settle_only_true_pairs(vocab_name):
    """``boundary_signatures`` recomputed from the merge list by brute force on a sample of tokens
    (each spine part's live partners: below the right part's lifetime, at most the left part's), and
    ``no_live_crossing`` never accepting a pair that BPE of its bytes (the definition) does not give
    back: backtracking's own pairs on CJK, kana, Thai and Cyrillic text, random pairs, and pairs whose
    left token is the first half of the right one (``y yy``), where the crossing merge is the right
    token's own and BPE takes the leftmost."""
    from bpebench.algorithms.backtracking import backtrack_pieces
    from bpebench.algorithms.kernels.compiled import NEVER
    from bpebench.algorithms.kernels.matching import _SIG_LEFT_HASH, _SIG_RIGHT_HASH, _sig_bit, no_live_crossing

    vocab = load_vocabulary(vocab_name)
    tables = compile_vocabulary(vocab)
    m = build_matcher(vocab)
    rows, tokens, sigs = m.rows, vocab.tokens, m.boundary_sigs
    merges = {}
    for t in np.flatnonzero(tables.split_left >= 0):
        merges.setdefault(int(tables.split_left[t]), []).append((int(tables.split_right[t]), int(rows[t, 0])))
    by_right = {}
    for left, found in merges.items():
        for right, rank in found:
            by_right.setdefault(right, []).append((left, rank))

    def spine(t, side):  # (part, lifetime): the rank of the part it is merged into; the token itself: none
        parts, life = [], None
        while t >= 0:
            parts.append((t, life))
            life, t = int(rows[t, 0]), int(rows[t, side])
        return parts

    def bits(ids, multiplier):
        word = 0
        for t in ids:
            word |= int(_sig_bit(t, multiplier))
        return word

    rng = random.Random(5)
    produced = [t for t in range(len(tokens)) if tables.priority[t] < NEVER]
    for t in rng.sample(produced, 400):
        right, left = spine(t, 2), spine(t, 1)
        partners_right = {y for x, life in right for y, rank in merges.get(x, ())
                          if tokens[y][0] >= 0xC2 and (life is None or rank < life)}
        partners_left = {x for y, life in left for x, rank in by_right.get(y, ())
                         if tokens[x][-1] & 0xC0 == 0x80 and (life is None or rank <= life)}
        assert int(sigs[t, 0]) == bits(partners_right, _SIG_RIGHT_HASH), t
        assert int(sigs[t, 1]) == bits([x for x, _ in right], _SIG_LEFT_HASH), t
        assert int(sigs[t, 2]) == bits(partners_left, _SIG_LEFT_HASH), t
        assert int(sigs[t, 3]) == bits([y for y, _ in left], _SIG_RIGHT_HASH), t

    text = ("東京都の天気は晴れ、明日は雨が降るでしょう。中华人民共和国成立于一九四九年十月一日。"
            "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์นนน Москва является столицей Российской Федерации").encode()
    data = np.frombuffer(text, dtype=np.uint8)
    out = np.empty(len(text), dtype=np.int32)
    ids = out[:backtrack_pieces(m, data, np.array([0, len(text)], dtype=np.int64), out)]
    pairs = list(zip(ids[:-1].tolist(), ids[1:].tolist()))
    ends = [t for t in produced if len(tokens[t]) > 1 and tokens[t][-1] & 0xC0 == 0x80]
    starts = [t for t in produced if len(tokens[t]) > 1 and tokens[t][0] >= 0xC2]
    pairs += [(rng.choice(ends), rng.choice(starts)) for _ in range(3000)]
    doubled = [t for t in starts if rows[t, 1] >= 0 and rows[t, 1] == rows[t, 2] and tokens[t][-1] & 0xC0 == 0x80]
    pairs += [(int(rows[t, 1]), t) for t in doubled]
    accepted = 0
    for a, b in pairs:
        if no_live_crossing(sigs, a, b, tokens[a][-1], tokens[b][0]):
            accepted += 1
            assert bpe_reference(vocab, tokens[a] + tokens[b]) == [a, b], (tokens[a], tokens[b])
    assert accepted > 1000 and len(doubled) > 20, (accepted, len(doubled))
    assert not any(no_live_crossing(sigs, int(rows[t, 1]), t, tokens[t][-1], tokens[t][0]) for t in doubled)


@pytest.mark.parametrize("vocab_name", ["o200k_base", "cl100k_base"])
def test_compatibility_after_a_longest_match_equals_compiled(vocab_name):
    """``compatible_after`` skips the steps whose left side is ``a`` itself when ``a`` is the longest
    token at the start of ``a b``: same answer as the compiled walk on every such pair tried, the
    pairs of backtracking's own output on CJK, Thai and Cyrillic text, and random pairs."""
    vocab = load_vocabulary(vocab_name)
    tables = compile_vocabulary(vocab)
    m = build_matcher(vocab)
    text = ("東京都の天気は晴れ、明日は雨が降るでしょう。中华人民共和国成立于一九四九年十月一日。"
            "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ Москва является столицей Российской Федерации").encode()
    data = np.frombuffer(text, dtype=np.uint8)
    rng = random.Random(11)
    ids = np.flatnonzero(tables.priority < 2**62)
    pairs = [(int(rng.choice(ids)), int(rng.choice(ids))) for _ in range(4000)]
    for start in range(0, len(text) - 1):  # the longest token at each position, then each token after it
        a = int(longest_match_from_start(m.forward, m.two_byte_start, data, start, len(text)))
        after = start + len(vocab.tokens[a])
        for end in range(after + 1, min(after + 12, len(text)) + 1):
            b = vocab.token_id(text[after:end])
            if b is not None:
                pairs.append((a, b))
    checked = incompatible = 0
    for a, b in pairs:
        joined = np.frombuffer(vocab.tokens[a] + vocab.tokens[b], dtype=np.uint8)
        if longest_match_from_start(m.forward, m.two_byte_start, joined, 0, len(joined)) != a:
            continue
        expected = is_compatible(tables, a, b)
        assert bool(compatible_after(m.rows, m.pairs, m.pair_filter, m.pair_floor, a, b, a)) == expected, (a, b)
        checked += 1
        incompatible += not expected
    assert checked > 1000 and incompatible > 10, (checked, incompatible)
