"""Cut points of long pieces (``kernels.cut_points``) and the fused pipeline's use of them when merges
run out of priority order. Oracles: a brute-force scan of every token's occurrences in the text, the
set's keys recomputed in plain Python, and the ``heap`` encoder (the definition) on whole pieces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.compiled import compile_vocabulary, rank_order_break
from bpebench.algorithms.kernels.cut_points import (FULL_BITS, PAIR_BITS, TRIPLE_BITS, WORDS, _full, _pair, _triple,
                                                   can_cut, crossing_set)
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.properties.vocabularies import as_merge_list, break_merge_order

#: characters of one to four UTF-8 bytes, CJK, kana, Hangul and Thai among them
_CHARS = st.sampled_from(list("aé東京都のはがー한국어ภาษาไทยЖж€😀 ") + ["\u0301", "\U0002A6A5"])
_TEXT = st.lists(_CHARS, min_size=1, max_size=24).map("".join)


def _flat(tokens: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    start = np.zeros(len(tokens) + 1, dtype=np.int64)
    start[1:] = np.cumsum([len(t) for t in tokens])
    return np.frombuffer(b"".join(tokens), dtype=np.uint8).copy(), start


def _tokens_from(texts: list[str], cuts: list[tuple[int, int]]) -> list[bytes]:
    """Byte slices of the texts' UTF-8 (so tokens may begin or end inside a character)."""
    tokens = []
    for text, (a, b) in zip(texts, cuts):
        raw = text.encode()
        a, b = sorted((a % (len(raw) + 1), b % (len(raw) + 1)))
        tokens.append(raw[a:b])
    return tokens


def _cuts(bits: np.ndarray, data: bytes) -> list[int]:
    array = np.frombuffer(data, dtype=np.uint8)
    return [p for p in range(1, len(data) - 1) if can_cut(bits, array, p, len(data))]


@settings(deadline=None, max_examples=300)
@given(texts=st.lists(_TEXT, min_size=1, max_size=12),
       slices=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), min_size=12, max_size=12),
       text=_TEXT)
@example(texts=["東京"], slices=[(2, 4)] + [(0, 0)] * 11, text="東京")  # a token of one lead and one continuation byte
def test_no_cut_where_a_token_occurs_across_it(texts, slices, text):
    """Soundness: no cut point lies strictly inside any occurrence of any token in the text."""
    tokens = _tokens_from(texts, slices) + [t.encode() for t in texts]
    bits = crossing_set(*_flat(tokens))
    data = text.encode()
    for p in _cuts(bits, data):
        for token in tokens:
            at = data.find(token) if token else -1
            while at >= 0:
                assert not (at < p < at + len(token)), (token, p, data)
                at = data.find(token, at + 1)


@settings(deadline=None, max_examples=200)
@given(texts=st.lists(_TEXT, min_size=1, max_size=12),
       slices=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), min_size=12, max_size=12))
def test_crossing_set_holds_exactly_the_keys_of_inner_character_starts(texts, slices):
    """The vectorised build against the keys recomputed token by token in plain Python."""
    tokens = _tokens_from(texts, slices) + [t.encode() for t in texts]
    want = set()
    for token in tokens:
        for q in range(1, len(token)):
            lead = token[q]
            if lead < 0xC0:
                continue
            rest = token[q + 1:q + 3]
            if not rest:
                want.add(_pair(token[q - 1], lead))
            elif 0x80 <= rest[0] < 0xC0:
                if lead < 0xE0 or len(rest) == 1:
                    want.add(_triple(token[q - 1], lead, rest[0]))
                elif 0x80 <= rest[1] < 0xC0:
                    want.add(_full(token[q - 1], lead, rest[0], rest[1]))
    bits = crossing_set(*_flat(tokens))
    assert bits.shape == (WORDS,) and WORDS * 64 == PAIR_BITS + TRIPLE_BITS + FULL_BITS
    got = {w * 64 + b for w in range(WORDS) if bits[w] for b in range(64) if (int(bits[w]) >> b) & 1}
    assert got == want


def test_o200k_cuts_cjk_and_thai_runs_and_keeps_bpe():
    """On o200k, runs of Japanese, Chinese and Thai fall apart at many points, and BPE of each run
    equals BPE of its parts (the ``heap`` encoder, the definition, on each)."""
    from bpebench.algorithms.core.registry import make_encoder

    vocab = load_vocabulary("o200k_base")
    tables = compile_vocabulary(vocab)
    bits = crossing_set(tables.token_bytes, tables.token_start)
    heap = make_encoder("heap", vocab)
    runs = ["東京都庁舎前駅から新宿御苑までの道のりを説明してください", "我们今天在北京的天安门广场看到了很多游客",
            "ภาษาไทยเป็นภาษาที่มีระบบการเขียนของตัวเอง"]
    for run in runs:
        data = run.encode()
        cuts = _cuts(bits, data)
        assert len(cuts) >= len(run) // 8, (run, cuts)  # non-vacuous: the set does not block everything
        bounds = [0, *cuts, len(data)]
        parts = [tok for a, b in zip(bounds, bounds[1:]) for tok in heap.encode(data[a:b])]
        assert parts == heap.encode(data), run


@pytest.fixture(scope="module")
def shaped_o200k():
    vocab = break_merge_order(as_merge_list(load_vocabulary("o200k_base")), 0.02, seed=1)
    assert rank_order_break(vocab) is not None
    return Tokenizer(vocab), Tokenizer(vocab, algorithm="heap", pretokenizer="regex")


_WORDS = st.sampled_from(["東京都庁舎前駅", "ハンバーガーショップ", "대한민국의수도는서울", "ภาษาไทยเป็นภาษา", "переписывающими",
                          "我们今天在北京", "の", "、", " ", "\n", "abc", "😀", "e\u0301"])


@settings(deadline=None, max_examples=150)
@given(words=st.lists(_WORDS, min_size=1, max_size=16))
def test_out_of_order_long_pieces_cut_equal_the_heap_on_whole_pieces(shaped_o200k, words):
    """Property: o200k with 2% of its merges out of priority order (a merge list, Llama-3-shaped):
    the fused pipeline, which cuts long pieces, gives the ids of ``regex`` + ``heap`` on whole pieces."""
    fused, reference = shaped_o200k
    assert fused.fused
    text = "".join(words)
    assert fused.encode_ordinary(text) == reference.encode_ordinary(text)


def test_a_part_spelling_a_token_bpe_does_not_produce_leaves_that_tokens_piece_alone(shaped_o200k):
    """Parts of cut pieces share the piece cache with pieces: a part holds BPE of its bytes. Under
    whole-piece lookup (``ignore_merges``, as in Llama-3) a piece spelling a usable token is that
    token even when BPE of its bytes gives others; such a token met first as a part must not leak
    its part's ids into the piece (which is looked up before the cache is read)."""
    from bpebench.algorithms.kernels.matching import build_matcher
    from bpebench.algorithms.kernels.out_of_order import out_of_order_tables

    fused, reference = shaped_o200k
    vocab = fused._fused.vocabulary
    assert vocab.whole_piece_lookup
    live = out_of_order_tables(vocab, compile_vocabulary(vocab), build_matcher(vocab))
    crossing = fused._fused.plan.crossing
    unproduced = [token.decode() for t, token in enumerate(vocab.tokens)
                  if live["usable"][t] and not live["produced"][t] and len(token) > 3
                  and all(0x4E00 <= ord(c) <= 0x9FFF for c in token.decode("utf-8", "replace"))]
    context = "的是了我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天"
    checked = 0
    for word in unproduced:
        for before in context:
            for after in context:
                data = (before + word + after).encode()
                array = np.frombuffer(data, dtype=np.uint8)
                left = len(before.encode())
                if not (can_cut(crossing, array, left, len(data))
                        and can_cut(crossing, array, left + len(word.encode()), len(data))):
                    continue
                text = (before + word + after) * 2 + "\n" + word  # the word as a part, then as a piece
                assert reference.encode_ordinary(word) == [vocab.tokens.index(word.encode())]
                assert fused.encode_ordinary(text) == reference.encode_ordinary(text), word
                checked += 1
                break
            else:
                continue
            break
    assert checked >= 1, unproduced  # the o200k-shaped vocabulary has two such Han tokens
