"""tiktoken's API on the Tokenizer, checked against a real ``tiktoken.Encoding`` built from the
same ranks (nothing downloaded): same names, same values, same errors."""

from __future__ import annotations

import pytest

import bpebench
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.pipeline.tokenizer import Tokenizer, UnknownEncodingError
from bpebench.properties.oracles import tiktoken_encoding

VOCABS = ["cl100k_base", "o200k_base"]
TEXTS = ["hello world", "héllo 東京 👩‍💻", "<|endoftext|> after", "", "  \n\t x", "naïve café 1234567"]


@pytest.fixture(scope="module", params=VOCABS)
def pair(request):
    vocab = load_vocabulary(request.param)
    return bpebench.get_encoding(request.param), tiktoken_encoding(vocab)


def test_get_encoding_is_cached_and_lists_the_builtins():
    assert bpebench.get_encoding("cl100k_base") is bpebench.get_encoding("cl100k_base")
    assert {"cl100k_base", "o200k_base"} <= set(bpebench.list_encoding_names())
    with pytest.raises(ValueError):  # tiktoken raises ValueError for an unknown encoding
        bpebench.get_encoding("no_such_encoding")
    with pytest.raises(UnknownEncodingError):
        bpebench.get_encoding("no_such_encoding")


def test_attributes(pair):
    ours, theirs = pair
    assert f"bpebench-{ours.name}" == theirs.name  # the oracle is built under a prefixed name
    assert ours.n_vocab == theirs.n_vocab
    assert ours.max_token_value == theirs.max_token_value
    assert ours.eot_token == theirs.eot_token
    assert ours.special_tokens_set == theirs.special_tokens_set
    assert sorted(ours.token_byte_values()) == sorted(theirs.token_byte_values())
    for token in (0, 100, theirs.eot_token, theirs.n_vocab - 1):
        assert ours.is_special_token(token) == theirs.is_special_token(token)


def test_single_tokens(pair):
    ours, theirs = pair
    for text in ["hello", " world", "<|endoftext|>", b"\xe6\x9d", "\n\n"]:
        try:
            expected = theirs.encode_single_token(text)
        except KeyError:
            with pytest.raises(KeyError):
                ours.encode_single_token(text)
        else:
            assert ours.encode_single_token(text) == expected
    for text in ["hello world", "zzzzqqqqxxxx"]:
        with pytest.raises(KeyError):
            theirs.encode_single_token(text)
        with pytest.raises(KeyError):
            ours.encode_single_token(text)
    for token in (0, 15339, theirs.eot_token, 1000):
        assert ours.decode_single_token_bytes(token) == theirs.decode_single_token_bytes(token)
    with pytest.raises(KeyError):
        ours.decode_single_token_bytes(theirs.n_vocab + 5)


def test_decoding(pair):
    ours, theirs = pair
    batch = [theirs.encode(t, allowed_special="all") for t in TEXTS]
    assert ours.decode_batch(batch) == theirs.decode_batch(batch)
    assert ours.decode_bytes_batch(batch) == theirs.decode_bytes_batch(batch)
    for ids in batch:
        assert ours.decode_tokens_bytes(ids) == theirs.decode_tokens_bytes(ids)
        assert ours.decode_with_offsets(ids) == theirs.decode_with_offsets(ids)
    split_char = theirs.encode("東")  # a character split over tokens: offsets point inside it
    assert ours.decode_with_offsets(split_char) == theirs.decode_with_offsets(split_char)
    assert ours.decode([split_char[0]]) == theirs.decode([split_char[0]])  # invalid UTF-8 replaced


def test_encoding_semantics(pair):
    ours, theirs = pair
    for text in TEXTS:
        kwargs = {"allowed_special": "all"}
        assert ours.encode(text, **kwargs) == theirs.encode(text, **kwargs)
        assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())
    with pytest.raises(ValueError):
        ours.encode("a <|endoftext|>")
    with pytest.raises(ValueError):
        theirs.encode("a <|endoftext|>")
    texts = [t for t in TEXTS if "<|" not in t]
    assert ours.encode_ordinary_batch(texts) == theirs.encode_ordinary_batch(texts)
    assert ours.encode_batch(TEXTS, allowed_special="all") == theirs.encode_batch(TEXTS, allowed_special="all")


def test_sentencepiece_counts_its_own_ids():
    import sentencepiece

    tok = Tokenizer(load_vocabulary("mistral_v1"))
    processor = sentencepiece.SentencePieceProcessor(model_file=tok.vocabulary.source)
    assert tok.n_vocab == processor.get_piece_size()  # ids added for partial characters are not counted
    assert tok.eot_token == processor.eos_id()


def test_short_texts_take_the_direct_path_with_the_same_ids_and_errors(pair):
    """Texts under the threads' size go straight to the fused pipeline (``Tokenizer._direct_bytes``);
    the ids, the special-token errors and lone surrogates must come out as tiktoken has them, and as
    the general path gives them."""
    import numpy as np

    ours, theirs = pair
    assert ours._direct  # the path this test is about
    general = Tokenizer(ours.vocabulary)
    general._direct = False
    texts = ["hello", "a < b | c", "x <| y", "lone \ud800 surrogate", "é", "\u00a0\n", "endoftext|>"]
    for text in texts:
        expected = theirs.encode(text)
        assert ours.encode(text) == expected == general.encode(text)
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text) == general.encode_ordinary(text)
        array = ours.encode_to_numpy(text)
        assert array.dtype == np.uint32 and array.tolist() == expected
        assert general.encode_to_numpy(text).tolist() == expected
    for text in ["a <|endoftext|>", "<|endofprompt|>b" if ours.name == "o200k_base" else "<|fim_prefix|>b"]:
        for encode in (ours.encode, ours.encode_to_numpy):
            with pytest.raises(ValueError):
                encode(text)
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
        assert ours.encode_to_numpy(text, allowed_special="all").tolist() == theirs.encode(text, allowed_special="all")
