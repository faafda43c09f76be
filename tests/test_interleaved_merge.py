"""The interleaved merge loop against the ``naive`` reference (the definition), piece by piece,
and through the fused pipeline where a window holds more new pieces than there are lanes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.core.registry import make_encoder
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.interleaved_merge import (END, LANES, START, WIDTH, lane_tokens,
                                                           merge_pieces_interleaved, new_lanes)
from bpebench.algorithms.peers import make_peer
from bpebench.algorithms.pipeline.fast_pipeline import WINDOW, FusedPipeline
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

#: bytes of real words in several scripts, so pieces merge deep, plus arbitrary bytes
WORD_BYTES = list(" the tion ing straße значение ประเทศ 東京 déjà 1234'\n".encode()) + list(range(256))
pieces = (st.binary(min_size=1, max_size=WIDTH)
          | st.lists(st.sampled_from(WORD_BYTES), min_size=1, max_size=WIDTH).map(bytes))


def interleaved(plan, group: list[bytes]) -> list[list[int]]:
    data = np.frombuffer(b"".join(group) + bytes(8), dtype=np.uint8)
    lanes = new_lanes()
    at = 0
    for lane, piece in enumerate(group):
        lanes[lane, START], lanes[lane, END] = at, at + len(piece)
        at += len(piece)
    merge_pieces_interleaved(plan.byte_token, plan.byte_pair_rank, plan.matcher.pairs, plan.matcher.pair_filter,
                             plan.token_of_rank, plan.token_offset, data, lanes, len(group))
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


def test_a_window_with_more_new_pieces_than_lanes_equals_tiktoken():
    """Every new word of several tokens in one window: more than ``LANES`` of them (the rest take the
    merge loop one at a time), the same word again (one lane for both), windows cut mid-text; with a
    one-row cache, a small one, the default one and none."""
    pytest.importorskip("tiktoken")
    vocab = load_vocabulary("o200k_base")
    words = [f" zq{chr(97 + i % 26)}x{chr(97 + i // 26)}vr" for i in range(3 * LANES)]
    text = " ".join(words + words[::2] + ["a ."] * (WINDOW // 2) + words[::-1]) * 2
    expected = make_peer("tiktoken", vocab).encode_ordinary_fn(text)
    for cache in (1, 16, None, False):
        tok = Tokenizer(vocab) if cache is None else Tokenizer(vocab, piece_cache=cache)
        assert tok.encode_ordinary(text) == expected, cache
        assert tok.encode_ordinary(text) == expected, cache  # now from the cache
