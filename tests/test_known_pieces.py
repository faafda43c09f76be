"""Known pieces of several tokens in the whole-token table (``kernels.known_pieces``): a row answers
exactly its own piece, readers of tokens pass over it, a half-written row answers nothing, and the
fused pipeline that writes and reads them gives the reference's ids on one thread and on several."""

from __future__ import annotations

import itertools
import string
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.formats.vocabulary import Vocabulary
from bpebench.algorithms.kernels.bits import _compare_and_swap_py, _store_release_py, compare_and_swap, store_release
from bpebench.algorithms.kernels.jit import njit
from bpebench.algorithms.kernels.known_pieces import (INSERTS_PER_THREAD_DIVISOR, KNOWN_MIN, RESERVED, insert_known,
                                                      known_ids, known_value, short_entry_at)
from bpebench.algorithms.kernels.short_piece import short_token_at, token_slot
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def tiny_vocabulary() -> Vocabulary:
    """Every byte, then ``ab`` (256) and ``cd`` (257): a new object, so a new whole-token table."""
    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"cd"]
    return Vocabulary.from_ranks(tokens, name="tiny-known", pattern="o200k")


def naive(vocab) -> Tokenizer:
    """regex.findall + the naive definition: shares no code with the fused pipeline."""
    return Tokenizer(vocab, algorithm="naive", pretokenizer="regex")


def packed(piece: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(piece, "little"))


def slot_of(table: np.ndarray, piece: bytes) -> int:
    return int(token_slot(packed(piece), np.uint64(0), len(piece), table.shape[0] - 1))


def known_rows(table: np.ndarray) -> int:
    return int((table[:, 1] >= KNOWN_MIN).sum())


def test_a_known_row_answers_its_piece_and_only_it():
    tok = Tokenizer(tiny_vocabulary())
    assert tok.fused
    table = tok._fused.plan.short_tokens.copy()
    key, slot = packed(b"abcd"), slot_of(table, b"abcd")
    assert short_entry_at(table, key, 4, slot) == -1
    value = known_value(key, np.array([256, 257], dtype=np.int32), 0, 2, 4)
    assert value >= KNOWN_MIN
    assert insert_known(table, key, slot, value)
    assert short_entry_at(table, key, 4, slot) == value
    out = np.zeros(4, dtype=np.int32)
    assert known_ids(value, out, 1) == 3 and out.tolist() == [0, 256, 257, 0]
    assert short_token_at(table, key, 4, slot) == -1  # a reader of tokens passes over the row
    assert short_entry_at(table, packed(b"ab"), 2, slot_of(table, b"ab")) == 256  # tokens still answer
    # the same bytes with another length, another piece: no answer
    assert short_entry_at(table, packed(b"abcd\0"), 5, slot_of(table, b"abcd\0")) == -1
    assert insert_known(table, key, slot, value) and known_rows(table) == 1  # already there: no second row


def test_pieces_that_cannot_be_known_are_refused():
    ids = np.array([256, 257, 97, 98], dtype=np.int32)
    assert known_value(packed(b"abcdab"), ids, 0, 3, 6) >= KNOWN_MIN
    assert known_value(packed(b"abcdabcd"), ids, 0, 2, 8) >= KNOWN_MIN
    assert known_value(packed(b"abcdabcd"), ids, 0, 4, 8) == -1  # four ids
    assert known_value(packed(b"a"), ids, 0, 1, 1) == -1  # one id: a token
    assert known_value(packed(b"ab"), np.array([1 << 18, 5], dtype=np.int32), 0, 2, 2) == -1  # 19 bits
    assert known_value(ALL_ONES, ids, 0, 2, 8) == -1  # the key of an empty row
    assert known_value(packed(b"abcdabcd"), ids, 0, 2, 9) == -1  # longer than the table's keys


def test_a_half_written_row_answers_nothing():
    """A reader may see a row's new value beside its old key (-1, the key of an empty row) or a
    reserved value: neither answers, so a race never gives another piece's ids."""
    table = Tokenizer(tiny_vocabulary())._fused.plan.short_tokens.copy()
    piece = b"\xff" * 8  # packs to -1, the key an empty row keeps
    slot = slot_of(table, piece)
    empty = slot
    while table[empty, 1] != -1:
        empty = (empty + 1) % table.shape[0]
    assert table[empty, 0] == -1
    # another piece of 8 bytes, its value stored and its key not yet
    table[empty, 1] = known_value(packed(b"abcdabcd"), np.array([256, 257], dtype=np.int32), 0, 2, 8)
    assert short_entry_at(table, ALL_ONES, 8, slot) == -1
    table[empty, 1] = RESERVED
    assert short_entry_at(table, ALL_ONES, 8, slot) == -1
    # a reserved row is not taken by another writer
    assert table[empty, 1] == RESERVED


short_words = st.lists(st.sampled_from(["abcd", " abcd", "cdab", " xab", "qz", " qz", "abab!", "(cd)", " z9",
                                        "ab cd", "\n\nab", "abcdabcd", " ab"]), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(short_words.map("".join), min_size=1, max_size=6))
def test_known_pieces_give_the_reference_ids_text_after_text(texts):
    """A new table each example; every text twice, so the second pass reads rows the first wrote."""
    vocab = tiny_vocabulary()
    tok = Tokenizer(vocab)
    expected = [naive(vocab).encode_ordinary(t) for t in texts]
    assert [tok.encode_ordinary(t) for t in texts] == expected
    assert [tok.encode_to_numpy(t, disallowed_special=()).tolist() for t in texts] == expected
    assert tok.encode_ordinary_batch(texts) == expected


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_known_pieces_of_a_real_vocabulary(name):
    """Short pieces of two and three tokens of the vocabulary (found by the reference), repeated:
    they become known pieces, and every call gives the reference's ids."""
    vocab = load_vocabulary(name)
    reference = naive(vocab)
    candidates = [" " + "".join(w) for w in itertools.product("qxzj", repeat=3)] + ["".join(w) for w in
                                                                                 itertools.product("zqx", "jkv", "0")]
    several = [w for w in candidates if 2 <= len(reference.encode_ordinary(w)) <= 3]
    assert len(several) >= 20
    text = "".join(several)
    tok = Tokenizer(vocab)
    expected = reference.encode_ordinary(text)
    for _ in range(3):
        assert tok.encode_ordinary(text) == expected
    # (an earlier test of this process may have written them into the vocabulary's table)
    assert known_rows(tok._fused.plan.short_tokens) > 0 and tok.piece_cache_stats()["hits"] > 0


def test_threads_write_and_read_one_table():
    """Four threads on one tokenizer, each with its own texts of the same short words in other orders:
    every result is the reference's, and the rows written stay within the threads' bounds."""
    vocab = tiny_vocabulary()
    words = [" " + a + b for a, b in itertools.product(string.ascii_lowercase[:12], repeat=2)]
    texts = [["".join(words[(k * 7 + i) % len(words)] for i in range(j, j + 60)) for j in range(0, 120, 12)]
             for k in range(4)]
    expected = [[naive(vocab).encode_ordinary(t) for t in ts] for ts in texts]
    tok = Tokenizer(vocab)
    results: list = [None] * 4

    def work(k: int) -> None:
        results[k] = [tok.encode_ordinary(t) for t in texts[k] * 5]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [e * 5 for e in expected]
    table = tok._fused.plan.short_tokens
    assert 0 < known_rows(table) <= 4 * (table.shape[0] // INSERTS_PER_THREAD_DIVISOR)


def test_a_thread_writes_a_bounded_number_of_known_pieces():
    vocab = tiny_vocabulary()
    tok = Tokenizer(vocab)
    table = tok._fused.plan.short_tokens
    bound = table.shape[0] // INSERTS_PER_THREAD_DIVISOR
    words = [" " + a + b for a, b in itertools.product(string.ascii_lowercase, repeat=2)]  # 676 pieces of 3 ids
    text = "".join(words)
    expected = naive(vocab).encode_ordinary(text)
    for _ in range(3):
        assert tok.encode_ordinary(text) == expected
    assert known_rows(table) == bound == tok.piece_cache_stats()["known"]
    no_cache = Tokenizer(vocab, piece_cache=False)  # reads the rows, writes none
    assert no_cache.encode_ordinary(text) == expected and known_rows(table) == bound



@njit
def _swap_twice_then_store(words):
    first = compare_and_swap(words, 3, -1, -2)
    second = compare_and_swap(words, 3, -1, -5)
    store_release(words, 2, 77)
    return first, second


def _swap_twice_then_store_py(words):
    first = _compare_and_swap_py(words, 3, -1, -2)
    second = _compare_and_swap_py(words, 3, -1, -5)
    _store_release_py(words, 2, 77)
    return first, second


def test_compare_and_swap_and_release_store_do_what_their_python_twins_do():
    compiled, twin = np.full((2, 2), -1, dtype=np.int64), np.full((2, 2), -1, dtype=np.int64)
    assert _swap_twice_then_store(compiled) == _swap_twice_then_store_py(twin) == (True, False)
    assert compiled.tolist() == twin.tolist() == [[-1, -1], [77, -2]]
