"""The merge loops (interleaved and one piece at a time) against the ``naive`` reference (the
definition), piece by piece, with two-byte characters that start whole ("atoms") where their
neighbours allow; and through the fused pipeline where a window holds more new pieces than there
are lanes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.core.registry import make_encoder
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.interleaved_merge import (END, LANES, START, WIDTH, lane_tokens,
                                                           merge_pieces_interleaved, new_lanes)
from bpebench.algorithms.kernels.matching import merge_rank
from bpebench.algorithms.kernels.short_piece import PAIR_FIELD_BITS, PAIR_NONE, atom_rank, merge_short_piece
from bpebench.algorithms.peers import make_peer
from bpebench.algorithms.pipeline.fast_pipeline import LANE_ROWS, WINDOW, FusedPipeline
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

#: bytes of real words in several scripts, so pieces merge deep (two-byte characters next to spaces,
#: letters, signs and other two-byte characters, which decides whether they start whole), plus
#: arbitrary bytes (lead bytes without their continuation, continuation bytes alone)
WORD_BYTES = (list(" the tion ing straße значение ประเทศ 東京 déjà 1234'\n".encode())
              + list("Ελληνικά שלום مرحبا ½°±µ×÷ ÀÉ".encode()) + list(range(256)))
pieces = (st.binary(min_size=1, max_size=WIDTH)
          | st.lists(st.sampled_from(WORD_BYTES), min_size=1, max_size=WIDTH).map(bytes))


def interleaved(plan, group: list[bytes]) -> list[list[int]]:
    data = np.frombuffer(b"".join(group) + bytes(8), dtype=np.uint8)
    lanes = new_lanes()
    at = 0
    for lane, piece in enumerate(group):
        lanes[lane, START], lanes[lane, END] = at, at + len(piece)
        at += len(piece)
    merge_pieces_interleaved(plan.byte_token, plan.byte_pairs, plan.matcher.pairs,
                             plan.matcher.pair_filter, plan.token_of_rank, plan.token_offset, data, lanes, len(group))
    out = np.empty(WIDTH * LANES, dtype=np.int64)
    return [out[:lane_tokens(lanes, lane, out, 0)].tolist() for lane in range(len(group))]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@settings(deadline=None, max_examples=80)
@given(group=st.lists(pieces, min_size=1, max_size=LANES))
@example(group=[b"aaaaaaaa", b"aaaaaaaa", b" tokenizers", b"\xff\xfe", b"a"])  # ties: leftmost first
def test_each_lane_equals_the_definition(name, group):
    vocab = load_vocabulary(name)
    plan = FusedPipeline(vocab).plan
    naive = make_encoder("naive", vocab)
    assert interleaved(plan, group) == [naive.encode(piece) for piece in group]


def one_piece(plan, piece: bytes, byte_pairs=None) -> list[int]:
    data = np.frombuffer(piece + bytes(8), dtype=np.uint8)
    parts, ranks, out = np.empty(WIDTH, np.int32), np.empty(WIDTH, np.int64), np.empty(WIDTH, np.int32)
    n = merge_short_piece(plan.byte_token, plan.byte_pairs if byte_pairs is None else byte_pairs, plan.matcher.pairs, plan.matcher.pair_filter,
                          plan.token_of_rank, plan.token_offset, data, 0, len(piece), parts, ranks, out, 0)
    return out[:n].tolist()


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@settings(deadline=None, max_examples=300)
@given(piece=pieces)
@example(piece=" °".encode())  # the space merges with the sign's first byte first: not an atom
@example(piece="°".encode())
@example(piece="η".encode() + b"\xb8")  # in cl100k the second byte merges rightward first: not an atom
def test_the_merge_loop_of_one_piece_equals_the_definition(name, piece):
    plan = FusedPipeline(load_vocabulary(name)).plan
    assert one_piece(plan, piece) == make_encoder("naive", load_vocabulary(name)).encode(piece)


def test_a_two_byte_character_starts_whole_only_where_its_neighbours_allow():
    """Worked by hand on o200k: the merge of a space with the byte C2 ranks below that of C2 B0
    (the sign "°"), so after a space "°" must not start whole (the space and C2 do: nothing merges
    with C2 from the right below their rank); alone, or after a letter, it may. Floors that let the
    sign start whole whatever is before it give other ids than the definition."""
    vocab = load_vocabulary("o200k_base")
    plan = FusedPipeline(vocab).plan
    token = vocab.byte_token
    space_c2 = merge_rank(plan.matcher.pairs, plan.matcher.pair_filter, token[0x20], token[0xC2])
    degree = merge_rank(plan.matcher.pairs, plan.matcher.pair_filter, token[0xC2], token[0xB0])
    assert 0 <= space_c2 < degree
    after_space = np.frombuffer(" °".encode(), dtype=np.uint8)
    alone = np.frombuffer("°".encode(), dtype=np.uint8)
    assert atom_rank(plan.byte_pairs, after_space, 0, 3, 1) == -1
    assert atom_rank(plan.byte_pairs, after_space, 0, 3, 0) == space_c2
    assert atom_rank(plan.byte_pairs, alone, 0, 2, 0) == degree
    naive = make_encoder("naive", vocab)
    blind = plan.byte_pairs & PAIR_NONE  # the ranks, with floors that let no two bytes start whole...
    blind[(0x20 << 8) | 0xC2] |= PAIR_NONE << PAIR_FIELD_BITS  # ...but the sign after a space
    assert one_piece(plan, " °".encode(), blind) != naive.encode(" °".encode())
    assert one_piece(plan, " °".encode()) == naive.encode(" °".encode())
    # most characters of a Russian word start whole, so the loops above do run on atoms
    word = "значение".encode()
    data = np.frombuffer(word, dtype=np.uint8)
    whole = sum(atom_rank(plan.byte_pairs, data, 0, len(word), i) >= 0
                for i in range(0, len(word), 2))
    assert whole >= 6


def test_two_ascii_bytes_start_whole_only_where_their_neighbours_allow():
    """Worked by hand on o200k: "in" merges at rank 3 and a space with "i" at rank 320, so in " in" the
    "i" goes to "n" first. The pair " i" must not start whole there (a merge of "i" to its right ranks
    below it), "in" may (no merge of a token ending with a space and "i" ranks below 3). Floors that
    ignore the neighbours take " i" first and give other ids than the definition."""
    vocab = load_vocabulary("o200k_base")
    plan = FusedPipeline(vocab).plan
    token = vocab.byte_token
    rank = lambda a, b: merge_rank(plan.matcher.pairs, plan.matcher.pair_filter, token[ord(a)], token[ord(b)])
    assert rank("i", "n") == 3 and rank(" ", "i") == 320
    piece = np.frombuffer(b" in", dtype=np.uint8)
    assert atom_rank(plan.byte_pairs, piece, 0, 3, 0) == -1
    assert atom_rank(plan.byte_pairs, piece, 0, 3, 1) == 3
    naive = make_encoder("naive", vocab)
    blind = (plan.byte_pairs & PAIR_NONE) | (PAIR_NONE << PAIR_FIELD_BITS) | (PAIR_NONE << (2 * PAIR_FIELD_BITS))
    assert one_piece(plan, b" in", blind) != naive.encode(b" in")
    assert one_piece(plan, b" in") == naive.encode(b" in")
    assert len(naive.encode(b" in")) == 1


def test_a_window_with_more_new_pieces_than_lanes_equals_tiktoken():
    """Every new word of several tokens in one window: more than ``LANES`` of them (they run in groups of
    lanes), more than ``LANE_ROWS`` (the rest take the merge loop one at a time), the same word again
    (one lane for both), windows cut mid-text; with a one-row cache, a small one, the default one and
    none."""
    pytest.importorskip("tiktoken")
    vocab = load_vocabulary("o200k_base")
    words = [f" zq{chr(97 + i % 26)}x{chr(97 + i // 26)}vr" for i in range(LANE_ROWS + LANES + 3)]
    text = " ".join(words + words[::2] + ["a ."] * (WINDOW // 2) + words[::-1]) * 2
    expected = make_peer("tiktoken", vocab).encode_ordinary_fn(text)
    for cache in (1, 16, None, False):
        tok = Tokenizer(vocab) if cache is None else Tokenizer(vocab, piece_cache=cache)
        assert tok.encode_ordinary(text) == expected, cache
        assert tok.encode_ordinary(text) == expected, cache  # now from the cache
