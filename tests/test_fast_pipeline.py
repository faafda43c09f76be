"""The fused pipeline (compiled pre-tokenizer + backtracking in one numba call) against
independent oracles: ``regex.findall`` + the ``naive`` reference, tiktoken, and the
committed golden ids."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bpebench import corpora
from bpebench.errors import BpebenchError
from bpebench.algorithms.pipeline.fast_pipeline import (FusedPipeline, _merge_loop_limit, fused_pipeline, new_piece_cache,
                                                        split_views, unsupported_reason)
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.peers import make_peer
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.algorithms.formats.vocabulary import Vocabulary

REPO = Path(__file__).resolve().parents[1]
GOLDEN = json.loads((REPO / "tests" / "golden" / "golden.json").read_text(encoding="utf-8"))
TIKTOKEN_VOCABULARIES = ["cl100k_base", "o200k_base", "qwen"]

#: characters that exercise every branch of the patterns: contractions, case runs, digits,
#: CR/LF runs, marks, NBSP (\s but not " "), U+017F (folds to s), other symbols
TRICKY = list("aZk ' \n\r\t\x0b19.,/!?-_\u00e9\u0301\u017f\u212a\u00a0\u3000\u6771\u4eac\u0663\U0001f44d")
texts = st.text(alphabet=st.sampled_from(TRICKY) | st.characters(blacklist_categories=("Cs",)), max_size=40)
#: ASCII text goes through the bit-parallel pre-tokenizer and the chunked loop (32 pieces at a time)
ASCII_TRICKY = list("aZkSstTdDlLvVrReE ' \n\r\t\x0b19.,/!?-_(\x00")
ascii_texts = st.text(alphabet=st.sampled_from(ASCII_TRICKY) | st.characters(max_codepoint=127), max_size=300)


def fused(name: str) -> Tokenizer:
    tok = Tokenizer(load_vocabulary(name))
    assert tok.fused, name
    return tok


def reference(name: str) -> Tokenizer:
    """regex.findall + the naive definition: shares no code with the fused pipeline."""
    tok = Tokenizer(load_vocabulary(name), algorithm="naive", pretokenizer="regex")
    assert not tok.fused
    return tok


def tiktoken_peer(name: str):
    pytest.importorskip("tiktoken")
    return make_peer("tiktoken", load_vocabulary(name))


# ============================================================================= golden and corpora
@pytest.mark.parametrize("name", TIKTOKEN_VOCABULARIES)
def test_golden_texts_equal_committed_ids_regex_path_and_tiktoken(name):
    tok, peer = fused(name), tiktoken_peer(name)
    regex_backtracking = Tokenizer(load_vocabulary(name), pretokenizer="regex")
    expected = GOLDEN["vocabularies"][name]["ordinary"]
    got = tok.encode_ordinary_batch(GOLDEN["texts"])
    for text, ids, want in zip(GOLDEN["texts"], got, expected):
        assert ids == want == tok.encode_ordinary(text), text
        assert ids == regex_backtracking.encode_ordinary(text) == peer.encode_ordinary(text), text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("corpus", ["prose-en", "code-python", "udhr-all"])
def test_corpus_samples_equal_tiktoken(name, corpus):
    text = corpora.get(corpus, size=60_000)
    assert fused(name).encode_ordinary(text) == tiktoken_peer(name).encode_ordinary(text)


@pytest.mark.parametrize("language", ["en", "zh", "ar", "hi", "th"])
def test_natural_text_equals_the_naive_reference(language):
    text = corpora.get(f"udhr-{language}", size=1200)
    assert fused("o200k_base").encode_ordinary(text) == reference("o200k_base").encode_ordinary(text)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_every_script_glued_to_capitals_marks_and_digits_equals_tiktoken(name):
    """Faker paragraphs of every benchmark locale, and the same with ASCII capitals, a combining
    mark, digits and contractions glued to their words, end to end against tiktoken: o200k's
    letters of both case classes (CJK, Hebrew, Thai, Arabic) split over bytes or characters as
    lower-case letters except right before a capital. (A wrong split there rarely changes ids, no
    token spans such a boundary: ``test_pretokenize_bits`` checks the split itself against regex.)"""
    import random

    from faker import Faker

    from bpebench.corpora.documents import FAKER_LOCALES

    encoder, peer = fused(name), tiktoken_peer(name)
    rng = random.Random(5)
    for i, locale in enumerate(FAKER_LOCALES):
        faker = Faker(locale)
        faker.seed_instance(40 + i)
        for _ in range(4):
            text = faker.paragraph(nb_sentences=6)
            glued = "".join(word + rng.choice([" ", "A", "Ab", "", "'S ", "\u0301", "1", "\u00c9"])
                            for word in text.split(" "))
            for sample in (text, glued):
                assert encoder.encode_ordinary(sample) == peer.encode_ordinary(sample), (locale, sample[:60])


# ============================================================================= generated text
@pytest.mark.parametrize("name", TIKTOKEN_VOCABULARIES)
@settings(deadline=None)
@given(text=texts)
@example(text="I'm  DON'T\r\n\r\n  x 12345 ſ's")
@example(text="\u00a0\u00a0x \t\n")
@example(text="cafe\u0301 Cafe\u0301S")  # NFC changes it for qwen
@example(text="\U0003d000/A")  # a letter for regex (Unicode 17), unassigned for tiktoken
def test_generated_text_equals_naive_and_tiktoken(name, text):
    ids = fused(name).encode_ordinary(text)
    assert ids == reference(name).encode_ordinary(text)
    if not _assigned_after_unicode_14(text):
        assert ids == tiktoken_peer(name).encode_ordinary(text)


@pytest.mark.parametrize("name", TIKTOKEN_VOCABULARIES)
@settings(deadline=None)
@given(text=ascii_texts)
@example(text="x" * 70 + "'s " + " " * 70 + "\n" * 3 + "./\n/y" + "1" * 7)
@example(text="supercalifragilistic antidisestablishmentarianism aa ab")  # longer than the 16-byte tables
def test_ascii_text_equals_naive_and_tiktoken(name, text):
    ids = fused(name).encode_ordinary(text)
    assert ids == reference(name).encode_ordinary(text)
    assert ids == tiktoken_peer(name).encode_ordinary(text)


def _assigned_after_unicode_14(text: str) -> bool:
    """True if ``text`` has a character the ``regex`` module (Unicode 17, our reference)
    knows but Python 3.11's ``unicodedata`` (Unicode 14) does not. tiktoken's Rust regex
    has its own, older tables and may split those differently (hypothesis found U+3D000:
    a letter for ``regex``, unassigned for tiktoken), so only the reference judges them."""
    return any(unicodedata.category(c) == "Cn" and not _UNASSIGNED.match(c) for c in text)


_UNASSIGNED = regex.compile(r"\p{Cn}")


@settings(deadline=None)
@given(batch=st.lists(texts | ascii_texts, max_size=8))
def test_batch_equals_one_text_at_a_time(batch):
    tok = fused("cl100k_base")
    assert tok.encode_ordinary_batch(batch) == [tok.encode_ordinary(t) for t in batch]
    assert [tok.count(t) for t in batch] == [len(tok.encode_ordinary(t)) for t in batch]


# ============================================================================= API details
def test_batch_with_special_tokens_follows_encode():
    tok = fused("cl100k_base")
    batch = ["a<|endoftext|>b", "", "<|fim_middle|> x <|endoftext|>", "plain \ud800 surrogate", "<|endoftext|>"]
    for kwargs in ({"allowed_special": "all"}, {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
                   {"disallowed_special": ()}):
        assert tok.encode_batch(batch, **kwargs) == [tok.encode(t, **kwargs) for t in batch]
    with pytest.raises(BpebenchError):
        tok.encode_batch(batch)  # tiktoken semantics: disallowed specials raise


@pytest.mark.parametrize("text", ["a\ud800b", "abc\ud800def \udfff x", "\udfff", "pair \ud83d\ude00 joined",
                                  "x\ud800<|endoftext|>"])
def test_lone_surrogates_are_replaced_as_tiktoken_replaces_them(text):
    """tiktoken repairs text UTF-8 cannot carry (each lone surrogate becomes U+FFFD) before encoding."""
    peer = make_peer("tiktoken", load_vocabulary("o200k_base"))
    expected = peer.encode_ordinary(text)
    for tok in (fused("o200k_base"), reference("o200k_base")):
        assert tok.encode_ordinary(text) == expected
        assert tok.encode_ordinary_batch(["ok", text]) == [tok.encode_ordinary("ok"), expected]
        assert tok.count(text) == len(expected)
    assert fused("o200k_base").encode_ordinary("a\ud800b") == [64, 3251, 65]  # the example


def test_qwen_normalizes_before_the_fused_pipeline():
    tok = fused("qwen")
    assert tok.encode_ordinary("cafe\u0301") == tok.encode_ordinary("caf\u00e9")
    composed = unicodedata.normalize("NFC", "cafe\u0301")
    assert tok.encode_ordinary_batch(["cafe\u0301"]) == [tok.encode_ordinary(composed)]


def test_pretokenizer_switch():
    vocab = load_vocabulary("o200k_base")
    assert Tokenizer(vocab, pretokenizer="compiled").fused
    assert not Tokenizer(vocab, pretokenizer="regex").fused
    assert not Tokenizer(vocab, algorithm="heap").fused  # other encoders stay measurable
    # a SentencePiece model: its component pipeline, with a fused stage unless the reference is asked for
    assert Tokenizer(load_vocabulary("mistral_v1")).fused
    assert not Tokenizer(load_vocabulary("mistral_v1"), pretokenizer="regex").fused
    assert unsupported_reason(load_vocabulary("mistral_v1")) is None
    with pytest.raises(BpebenchError, match="no compiled pre-tokenizer"):
        Tokenizer(load_vocabulary("mistral_v1"), pretokenizer="compiled")


# ============================================================================= calls, whole pieces
def test_direct_calls_and_the_reused_buffer_keep_results_apart():
    """The compiled overload is called directly (per read-only flag of the text array), and short
    texts share one output buffer: results of earlier calls must not change."""
    vocab = load_vocabulary("cl100k_base")
    pipeline = FusedPipeline(vocab)
    peer = tiktoken_peer("cl100k_base")
    texts = ["hello world", "naïve café 東京", "x" * 5000, "hello world"]
    lists = [pipeline.encode_list(t.encode()) for t in texts]  # readonly arrays (from bytes)
    arrays = [pipeline.encode_utf8(bytearray(t.encode())) for t in texts]  # writable arrays
    for text, as_list, as_array in zip(texts, lists, arrays):
        assert as_list == as_array.tolist() == peer.encode_ordinary(text), text[:20]
    text = corpora.get("udhr-all", size=20_000)
    ids, offsets = pipeline.encode_utf8_batch([text.encode(), b"", text.encode()])
    expected = peer.encode_ordinary(text)
    assert ids.tolist() == expected * 2 and offsets.tolist() == [0, len(expected), len(expected), 2 * len(expected)]


def test_id_lists_gathered_from_shared_int_objects_equal_tolist():
    """Long outputs are gathered from one int object per token id instead of ``tolist``:
    same values, a new list per call, and the short and mostly-byte-token cases keep ``tolist``.
    This is numpy's gather, the JIT's path; the ahead-of-time build's C helper is tested in
    ``test_aot.py``."""
    pipeline = FusedPipeline(load_vocabulary("o200k_base"))
    pipeline._id_lists = None
    rng = np.random.default_rng(3)
    n_tokens = len(pipeline.vocabulary.tokens)
    cases = {
        "short": rng.integers(0, n_tokens, size=pipeline.GATHER_MIN - 1),
        "long, large ids": rng.integers(257, n_tokens, size=5000),
        "long, mostly byte tokens": np.where(rng.random(5000) < 0.8, rng.integers(0, 257, size=5000),
                                             rng.integers(257, n_tokens, size=5000)),
        "edges": np.array([0, 256, 257, n_tokens - 1] * 40),
    }
    for name, ids in cases.items():
        ids = ids.astype(np.int32)
        first, second = pipeline.id_list(ids), pipeline.id_list(ids)
        assert first == ids.tolist() and all(type(i) is int for i in first), name
        first.append(-1)
        assert second == ids.tolist(), name
    assert pipeline._id_objects is not None  # the gather was taken for the long cases
    text = corpora.get("prose-en", size=30_000)
    peer = tiktoken_peer("o200k_base")
    expected = peer.encode_ordinary(text)
    assert pipeline.encode_list(text.encode()) == expected
    reused = pipeline._per_thread.out, pipeline._per_thread.gathered
    assert pipeline.encode_list(text[:9_000].encode()) == peer.encode_ordinary(text[:9_000])
    assert pipeline._per_thread.out is reused[0] and pipeline._per_thread.gathered is reused[1]  # not regrown
    pipeline.REUSE_MAX = 1_000  # now a new array for every long text, as above REUSE_MAX
    assert pipeline.encode_list(text.encode()) == expected


def test_threads_sharing_a_tokenizer_get_their_own_ids():
    """Texts reuse an output buffer, and outputs of at least ``GATHER_MIN`` ids a gather buffer
    (the second text): two threads encoding through one Tokenizer, switching as often as the
    interpreter allows, must each get tiktoken's ids for their own text."""
    tok = fused("cl100k_base")
    peer = tiktoken_peer("cl100k_base")
    texts = ["hello world " * 20, "the quick brown fox jumps over " * 15]
    expected = [peer.encode_ordinary(t) for t in texts]
    wrong = [0, 0]

    def work(i: int) -> None:
        for _ in range(3000):
            if tok.encode_ordinary(texts[i]) != expected[i]:
                wrong[i] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == [0, 0]


@pytest.mark.parametrize("longest", [3, 40])
def test_whole_piece_lookup_emits_unreachable_tokens_like_tiktoken(longest):
    # "abc" is a token but neither "ab" nor "bc" is: BPE cannot produce it, tiktoken emits it whole.
    # Unreachable tokens of up to 32 bytes are answered by the loop's whole-token tables; a longer one
    # makes every piece look itself up in the bytes table first
    long = b"q" * 40
    extra = [long] if longest == 40 else []
    vocab = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + [b"abc", b"xy", b"xyz", b"xyzxyz"] + extra,
                                  name=f"u{longest}", pattern="gpt2")
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.algorithms.formats.patterns import PATTERNS

    enc = tiktoken.Encoding("u", pat_str=PATTERNS["gpt2"],
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)}, special_tokens={})
    tok = Tokenizer(vocab)
    assert tok.fused and tok._fused.plan.whole_piece == (longest > 32)
    for text in ["abc", "abcabc", " abc", "xy abc xyz", "abc\n", "xyzxyz", "xyzxyzxyz", "q" * 40, "q" * 41,
                 " " + "q" * 40, "ab abcd abc"]:
        assert tok.encode_ordinary(text) == enc.encode_ordinary(text), text
        assert tok.encode_ordinary(text) == Tokenizer(vocab, algorithm="naive").encode_ordinary(text), text
    assert tok.encode_ordinary("abc") == [256]


def test_bytes_that_are_not_tokens_are_a_one_line_error():
    vocab = Vocabulary.from_ranks([bytes([b]) for b in range(128)] + [b"ab"], name="ascii", pattern="gpt2")
    tok = Tokenizer(vocab)
    assert tok.fused and tok.encode_ordinary("ab ab") == [128, 32, 128]
    with pytest.raises(BpebenchError, match="0xc3") as info:
        tok.encode_ordinary("caf\u00e9")
    assert "\n" not in str(info.value)


# ============================================================================= long pieces
def test_one_long_unsplittable_piece_equals_tiktoken():
    peer = tiktoken_peer("o200k_base")
    rng = np.random.default_rng(7)
    text = "".join(rng.choice(list("abcdefghij"), size=6000))
    assert fused("o200k_base").encode_ordinary(text) == peer.encode_ordinary(text)


def test_runs_without_jit():
    """NUMBA_DISABLE_JIT=1 runs the same kernel as plain Python and gives the same ids."""
    from bpebench.algorithms.cache.vocabularies import cache_dir

    if cache_dir() is None:
        pytest.skip("BPEBENCH_VOCAB_CACHE=off: without jit the subprocess would build cl100k in plain Python")
    texts = ["Hello wörld, it's 2024!\n\n  東京 👍🏽", "Hello world, it's 2024!\n\n  " + "x" * 40 + " ab" * 30]
    expected = [fused("cl100k_base").encode_ordinary(text) for text in texts]
    script = (
        "import sys; from bpebench.algorithms.formats import load_vocabulary; from bpebench.algorithms.pipeline.tokenizer import Tokenizer;"
        "tok = Tokenizer(load_vocabulary('cl100k_base')); assert tok.fused;"
        f"print([tok.encode_ordinary(t) for t in {texts!r}])"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == expected


HF_MERGES_FIXTURE = str(REPO / "tests" / "golden" / "bytelevel_bpe.json")
#: text biased toward the HF fixture's merges: its tokens are English-ish byte-level pieces
MERGE_HEAVY = st.text(alphabet=st.sampled_from(list("the an ing ed er s ion tion ough 'll \n12")), max_size=60)


@settings(deadline=None, max_examples=300)  # ~1 ms each: cheap enough to look harder
@given(text=texts | MERGE_HEAVY)
@example(text="the theater's thoroughly thin  \n\n 123456")
def test_merges_rule_vocabulary_through_the_fused_path_equals_naive(text):
    """A merges-rule vocabulary (HF tokenizer.json: priorities differ from ids, no whole-piece
    lookup) takes the fused path, including its short-piece merge loop, and must still equal
    the regex + naive reference."""
    fused_tok = fused(HF_MERGES_FIXTURE)
    assert fused_tok.vocabulary.rule == "merges" and not fused_tok.vocabulary.whole_piece_lookup
    assert fused_tok.encode_ordinary(text) == reference(HF_MERGES_FIXTURE).encode_ordinary(text)


@pytest.fixture(scope="module")
def shuffled_ids_fixture(tmp_path_factory) -> str:
    """The HF fixture with the ids of its merged tokens shuffled: merge order no longer
    follows id order, so the merge loop must read ``token_of_rank`` (no constant offset)."""
    spec = json.loads(Path(HF_MERGES_FIXTURE).read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    merged = sorted((token for token, i in vocab.items() if i >= 258), key=vocab.get)
    ids = [vocab[token] for token in merged]
    np.random.default_rng(7).shuffle(ids)
    vocab.update(zip(merged, ids))
    path = tmp_path_factory.mktemp("shuffled") / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


@settings(deadline=None, max_examples=150)
@given(text=texts | MERGE_HEAVY)
@example(text="the theater's thoroughly thin  \n\n 123456")
def test_merged_tokens_out_of_rank_order_through_the_fused_path_equal_naive(text, shuffled_ids_fixture):
    """With merged tokens out of rank order the merge loop reads ``token_of_rank`` (the HF
    fixture itself takes ``rank + offset``, tested above): it must equal the regex + naive reference."""
    assert fused(shuffled_ids_fixture).encode_ordinary(text) == reference(shuffled_ids_fixture).encode_ordinary(text)


def test_merged_token_offset_only_where_every_rank_fits_it(shuffled_ids_fixture):
    from bpebench.algorithms.kernels.short_piece import TABLE_TOKENS, rank_token_offset

    assert fused("o200k_base")._fused.plan.token_offset == 255  # byte tokens share rank 0; merges are ids 256..
    assert fused(HF_MERGES_FIXTURE)._fused.plan.token_offset == 257  # ids 0-1 special, 2-257 bytes
    assert fused(shuffled_ids_fixture)._fused.plan.token_offset == TABLE_TOKENS
    assert rank_token_offset(np.array([-1, 5, 6, 7], dtype=np.int32)) == 4
    assert rank_token_offset(np.array([-1, 5, 7, 6], dtype=np.int32)) == TABLE_TOKENS
    assert rank_token_offset(np.array([-1], dtype=np.int32)) == TABLE_TOKENS


@pytest.mark.parametrize("name", ["o200k_base", HF_MERGES_FIXTURE, "shuffled", "mistral_v1"])
def test_every_piece_of_one_or_two_bytes_gives_the_reference_ids(name, shuffled_ids_fixture):
    """Every piece of one or two bytes, as given pieces (256 + 65,536 of them, most not text), against
    ``naive``: the whole-token probe and the merge loop where merge ranks name their tokens (an
    offset: o200k, the HF fixture; a table: the shuffled fixture), backtracking where they do not
    (tied SentencePiece scores: ``mistral_v1``)."""
    from bpebench.algorithms.core.registry import make_encoder
    from bpebench.algorithms.pipeline.fast_pipeline import encode_pieces

    vocab = load_vocabulary(shuffled_ids_fixture if name == "shuffled" else name)
    fp = FusedPipeline(vocab)
    naive = make_encoder("naive", vocab)
    pieces = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    data = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    ends = np.cumsum([len(p) for p in pieces]).astype(np.int64)
    out = np.empty(len(data), dtype=np.int32)
    n = encode_pieces(fp.plan, data, ends, out, new_piece_cache(1024))
    expected = [i for p in pieces for i in naive.encode(p)]
    assert out[:n].tolist() == expected


def test_repeated_multi_token_pieces_with_memo_collisions_equal_the_reference():
    # a 4 kB text gets a 64-slot piece memo: 150 distinct multi-token
    # words, each seen three times in shuffled order, collide and overwrite each other
    import random

    rng = random.Random(7)
    words = ["".join(rng.choice("qxzjkvw") for _ in range(rng.randint(3, 12))) for _ in range(150)]
    text = " ".join(rng.sample(words * 3, 450))
    for name in ("cl100k_base", "o200k_base"):
        tok = fused(name)
        assert tok.encode_ordinary(text) == tiktoken_peer(name).encode_ordinary(text)
        halves = [text[: len(text) // 2], text[len(text) // 2:], text]
        assert tok.encode_ordinary_batch(halves) == [reference(name).encode_ordinary(t) for t in halves]


def test_repeated_long_pieces_around_the_memo_bound_equal_tiktoken():
    """Pieces of more than 256 bytes bypass the memo (backtracking every time), those up to 256
    use it: repeats on both sides of the bound, in one text and in one batch."""
    import random

    from bpebench.algorithms.pipeline.fast_pipeline import _MEMO_MAX_PIECE

    rng = random.Random(11)
    pieces = ["".join(rng.choice("qxzjkvw") for _ in range(length))
              for length in (_MEMO_MAX_PIECE - 1, _MEMO_MAX_PIECE, _MEMO_MAX_PIECE + 1, 3 * _MEMO_MAX_PIECE)]
    text = " ".join(rng.sample(pieces * 3, 12))
    for name in ("cl100k_base", "o200k_base"):
        tok, peer = fused(name), tiktoken_peer(name)
        assert tok.encode_ordinary(text) == peer.encode_ordinary(text)
        assert tok.encode_ordinary_batch([text, text[5:]]) == [peer.encode_ordinary(t) for t in (text, text[5:])]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_whole_token_tables_find_every_produced_token_and_nothing_else(name):
    from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary
    from bpebench.algorithms.kernels.short_piece import (LONG_TOKEN_BYTES, MEDIUM_TOKEN_BYTES, SHORT_TOKEN_BYTES,
                                                         long_token, medium_token, short_token)

    vocab = load_vocabulary(name)
    plan = fused(name)._fused.plan
    priority = compile_vocabulary(vocab).priority

    def lookup(piece: bytes) -> int:
        # the piece at the end of a longer buffer as well: the long table's words are read with
        # whole-word loads when 32 bytes can be read, else byte by byte
        for padding in (b"", b"\xff" * 40):
            data = np.frombuffer(piece + padding, dtype=np.uint8)
            if len(piece) <= SHORT_TOKEN_BYTES:
                found = short_token(plan.short_tokens, data, 0, len(piece))
            elif len(piece) <= MEDIUM_TOKEN_BYTES:
                found = medium_token(plan.medium_tokens, data, 0, len(piece))
            else:
                found = long_token(plan.long_tokens, data, 0, len(piece))
            if padding:
                assert found == first
            first = found
        return int(found)

    checked = 0
    long_checked = 0
    for token_id, piece in enumerate(vocab.tokens):
        if 1 <= len(piece) <= LONG_TOKEN_BYTES and priority[token_id] < NEVER:
            assert lookup(piece) == token_id, piece
            checked += 1
            long_checked += len(piece) > MEDIUM_TOKEN_BYTES
            # the same bytes one shorter or one longer are another token or none
            for other in (piece[:-1], piece + b"\x00"):
                if 1 <= len(other) <= LONG_TOKEN_BYTES:
                    want = vocab.token_id(other)
                    got = lookup(other)
                    assert got == (want if want is not None and priority[want] < NEVER else -1), other
    assert checked > 0.9 * len(vocab.tokens) and long_checked > 500


# ============================================================================= merge loop or backtracking
def test_runs_of_wide_characters_leave_the_merge_loop_sooner():
    """Worked by hand: a piece longer than 16 bytes that ends with a CJK, kana or Hangul character goes
    to backtracking (``wide_limit``); other pieces stay in the merge loop up to 24 bytes, a piece
    ending with a four-byte character included (its third byte from the end is a continuation)."""
    plan = FusedPipeline(load_vocabulary("o200k_base")).plan
    assert (plan.short_limit, plan.wide_limit) == (24, 16)

    def limit(piece: str) -> int:
        data = np.frombuffer(piece.encode(), dtype=np.uint8)
        return _merge_loop_limit(plan.short_limit, plan.wide_limit, data, 0, len(data))

    assert limit(" 東京都庁舎前駅") == 16  # 22 bytes, a space first: the last character decides
    assert limit("ハンバーガーショップ") == 16
    assert limit(" 대한민국의수도는서울") == 16
    assert limit(" переписывающими") == 24  # 31 bytes of two-byte letters: backtracking either way
    assert limit(" значение") == 24  # 17 bytes
    assert limit(" ประเทศไทย") == 24  # Thai (U+0E00-U+0E7F, lead byte E0), 28 bytes
    assert limit("\U0001d400\U0001d401\U0001d402\U0001d403\U0001d404") == 24  # 20 bytes, four-byte letters
    assert limit("東京都") == 24  # not longer than 16 bytes: either limit takes it


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@settings(max_examples=80, deadline=None)
@given(words=st.lists(st.sampled_from([" 東京都庁舎前駅", "ハンバーガーショップ", " 대한민국의수도는서울", " переписывающими",
                                       " конструкциями", " ประเทศไทยเป็นประเทศ", " übermäßigübermäßig", "αβγδεζηθικλμνξοπ",
                                       "東京", "の", " значение"]) | texts, min_size=1, max_size=10))
def test_pieces_on_either_side_of_both_limits_give_the_reference_ids(name, words):
    """Pieces of 12 to 31 bytes ending with wide and narrow characters, through both paths of the
    merge-loop limit, a small piece cache and none: the reference's ids."""
    vocab = load_vocabulary(name)
    text = "".join(words)
    expected = reference(name).encode_ordinary(text)
    assert Tokenizer(vocab, piece_cache=False).encode_ordinary(text) == expected
    assert Tokenizer(vocab, piece_cache=4).encode_ordinary(text) == expected


# ============================================================================= the piece cache
#: words that recur across texts, so a small cache sees hits, collisions and replaced rows
RECURRING = st.sampled_from(["naïve", " Straße", " значение", " ประเทศ", " 東京都", "ing", " the", "'re",
                             " déjà", " αβγδ", "1234", " \u0661\u0662", " übermäßig", " données",
                             # 25 to 31 bytes (keys of four words; the two ``переписывающ`` words share
                             # their first 24 bytes and their length), 8 ids in cl100k, too many ids, 32 bytes
                             " конструкциями", " übermäßigübermäßig", " переписывающими", " переписывающего",
                             " ধনপফবভম",
                             " ঘঙচছজঝঞটঠ", "αβγδεζηθικλμνξοπ"])
cached_texts = st.lists(st.lists(RECURRING | texts, max_size=8).map("".join), min_size=1, max_size=12)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@settings(max_examples=60, deadline=None)
@given(batch=cached_texts, slots=st.sampled_from([1, 2, 16, 1024]))
def test_cached_ids_equal_uncached_ids(name, batch, slots):
    """The piece cache is exact by construction (BPE of a piece depends only on its bytes):
    a tiny cache (every row replaced often) kept across calls gives the ids of no cache,
    and of the reference, text after text."""
    vocab = load_vocabulary(name)
    cached = Tokenizer(vocab, piece_cache=slots)
    uncached = Tokenizer(vocab, piece_cache=False)
    for text in batch:
        expected = uncached.encode_ordinary(text)
        assert cached.encode_ordinary(text) == expected
        assert cached.encode_to_numpy(text, disallowed_special=()).tolist() == expected
    assert cached.encode_ordinary_batch(batch) == [reference(name).encode_ordinary(t) for t in batch]


@pytest.mark.parametrize("slots", [1, 16, 1 << 15])
def test_every_piece_cache_row_is_one_cache_line(slots):
    """A row is read whole on every probe: on a line boundary it is one miss, across two it was two
    (numpy aligns an array to 16 bytes only; the default cache sat 32 bytes off a line)."""
    cache = new_piece_cache(slots)
    assert cache.shape == (slots + 1, 8) and cache.strides == (64, 8) and not cache.any()
    assert cache.ctypes.data % 64 == 0
    fp = fused_pipeline(load_vocabulary("o200k_base"), slots)
    fp.encode_list(" a new word, ünseen".encode())
    assert fp.thread_cache().ctypes.data % 64 == 0 and fp.piece_cache_stats()["filled"] > 0


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_a_cache_row_tells_apart_pieces_that_differ_only_past_their_24th_byte(name):
    """Two 31-byte words with the same first 24 bytes, and words of 25 to 32 bytes and of 8 and more
    ids, through a cache of one row (each replaces the other) and of many: the reference's ids."""
    vocab = load_vocabulary(name)
    words = [" переписывающими", " переписывающего", " übermäßigübermäßig", " ঘঙচছজঝঞটঠ", "αβγδεζηθικλμνξοπ"]
    text = "".join(words[i % len(words)] + words[(3 * i) % len(words)] for i in range(12))
    expected = reference(name).encode_ordinary(text)
    for slots in (1, 1024):
        cached = Tokenizer(vocab, piece_cache=slots)
        for _ in range(3):
            assert cached.encode_ordinary(text) == expected
            assert cached.encode_to_numpy(text, disallowed_special=()).tolist() == expected
        assert cached.piece_cache_stats()["hits"] > 0


def test_piece_cache_counts_hits_and_is_bounded():
    vocab = load_vocabulary("o200k_base")
    tok = Tokenizer(vocab, piece_cache=64)
    text = "Die Straße ist übermäßig lang; значение значение значение. " * 3
    tok.encode_ordinary(text)
    stats = tok.piece_cache_stats()
    assert stats["hits"] > 0 and stats["misses"] > 0 and stats["hits"] + stats["misses"] > 0
    assert stats["bytes"] == (64 + 1) * 64 and stats["filled"] <= 64
    assert 0.0 < stats["hit_rate"] < 1.0
    assert Tokenizer(vocab, piece_cache=False).piece_cache_stats()["bytes"] in (0, 64)
    with pytest.raises(BpebenchError):
        Tokenizer(vocab, piece_cache=100)


def test_piece_caches_are_per_thread():
    vocab = load_vocabulary("o200k_base")
    tok = Tokenizer(vocab, piece_cache=256)
    words = ["значение", "ประเทศไทย", "Straße", "übermäßig", "données"]
    texts_by_thread = [[" ".join(words[i:] + words[:i]) * 20 for i in range(5)] for _ in range(4)]
    expected = [[Tokenizer(vocab, piece_cache=False).encode_ordinary(t) for t in ts] for ts in texts_by_thread]
    results: list = [None] * 4

    def work(k: int) -> None:
        results[k] = [tok.encode_ordinary(t) for t in texts_by_thread[k] * 10]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [e * 10 for e in expected]
    tok.encode_ordinary("значение")
    assert tok.piece_cache_stats()["threads"] == 1  # the ended threads' caches were freed with them


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_encode_to_numpy_is_tiktokens(name):
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.algorithms.formats.patterns import resolve_pattern

    vocab = load_vocabulary(name)
    enc = tiktoken.Encoding(name, pat_str=resolve_pattern(vocab.pattern),
                            mergeable_ranks={t: i for i, t in enumerate(vocab.tokens)},
                            special_tokens=dict(vocab.special_tokens))
    tok = fused(name)
    for text in ["", "hello world", "x <|endoftext|> y", corpora.get("udhr-ru", size=3000)]:
        for kwargs in ({"allowed_special": "all"}, {"disallowed_special": ()}, {}):
            try:
                expected = enc.encode_to_numpy(text, **kwargs)
            except ValueError:
                with pytest.raises(ValueError):
                    tok.encode_to_numpy(text, **kwargs)
                continue
            got = tok.encode_to_numpy(text, **kwargs)
            assert got.dtype == expected.dtype == np.uint32
            assert got.tolist() == expected.tolist()


# ============================================================================= every core
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("threads", [2, 3, 5])
def test_threads_give_the_ids_of_one_thread(name, threads):
    """Batches cut into groups and long texts cut at pre-token boundaries: the same ids as one
    thread, and as tiktoken."""
    peer = tiktoken_peer(name)
    tok = fused(name)
    docs = [corpora.get("prose-en", size=200_000), corpora.get("code-python", size=150_000),
            corpora.get("udhr-all", size=150_000)]
    long_text = "\n".join(docs)
    one = tok.encode_ordinary(long_text, num_threads=1)
    assert one == peer.encode_ordinary(long_text)
    assert tok.encode_ordinary(long_text, num_threads=threads) == one
    assert tok.encode_to_numpy(long_text, disallowed_special=()).tolist() == one
    batch = [d[i:i + 3000] for d in docs for i in range(0, len(d), 3000)] + ["", "x"]
    expected = tok.encode_ordinary_batch(batch, num_threads=1)
    assert tok.encode_ordinary_batch(batch, num_threads=threads) == expected
    assert expected == [peer.encode_ordinary(t) for t in batch]
    flat, offsets = tok.encode_ordinary_batch_to_numpy(batch, num_threads=threads)
    assert flat.dtype == np.uint32 and offsets.dtype == np.int64 and len(offsets) == len(batch) + 1
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_long_text_is_screened_for_special_tokens_part_by_part(threads):
    """``encode`` and ``encode_to_numpy`` of a long text screen each part's bytes for the literals'
    first two bytes on the thread that encodes it: tiktoken's ids with no literal, tiktoken's error
    with one in a late part, its carving when allowed, and ordinary ids for a ``<|`` that starts none."""
    from bpebench.algorithms.pipeline.tokenizer import DisallowedSpecialError

    pytest.importorskip("tiktoken")
    from bpebench.properties.oracles import tiktoken_encoding

    enc = tiktoken_encoding(load_vocabulary("o200k_base"))
    tok = fused("o200k_base")
    assert tok._screen_long and "<|endoftext|>" in enc.special_tokens_set
    text = "\n".join([corpora.get("prose-en", size=120_000), corpora.get("code-c", size=60_000),
                      corpora.get("udhr-all", size=60_000)])
    assert "<|" not in text
    assert tok.encode(text) == enc.encode(text) == tok.encode_to_numpy(text, num_threads=threads).tolist()
    late = len(text) * 9 // 10
    with_literal = text[:late] + "<|endoftext|>" + text[late:]
    with pytest.raises(DisallowedSpecialError):
        tok.encode(with_literal)
    with pytest.raises(DisallowedSpecialError):
        tok.encode_to_numpy(with_literal, num_threads=threads)
    carved = enc.encode(with_literal, allowed_special="all")
    assert tok.encode(with_literal, allowed_special="all") == carved
    assert tok.encode_to_numpy(with_literal, allowed_special="all", num_threads=threads).tolist() == carved
    assert tok.encode(with_literal, disallowed_special=()) == enc.encode(with_literal, disallowed_special=())
    almost = text[:late] + "a <| b" + text[late:]  # the two bytes, but no literal: ordinary ids
    assert tok.encode_to_numpy(almost, num_threads=threads).tolist() == enc.encode(almost) == tok.encode(almost)


def test_threads_give_the_ids_of_one_thread_through_a_normalizer():
    """A vocabulary that normalizes (NFC) makes each group's texts normalized and UTF-8 on the thread
    that encodes them: the ids of one thread, and each text's own ids."""
    base = load_vocabulary("cl100k_base")
    vocab = dataclasses.replace(Vocabulary.from_ranks(list(base.tokens), name="cl100k-nfc", pattern="cl100k"),
                                normalizer="nfc")
    tok = Tokenizer(vocab)
    assert tok.fused and not tok._direct
    text = corpora.get("udhr-all", size=150_000) + "e\u0301 A\u030a"  # decomposed: NFC composes them
    batch = [text[i:i + 2000] for i in range(0, len(text), 2000)]
    expected = [tok.encode_ordinary(t) for t in batch]
    assert tok.encode_ordinary_batch(batch, num_threads=1) == expected
    assert tok.encode_ordinary_batch(batch, num_threads=3) == expected
    flat, offsets = tok.encode_ordinary_batch_to_numpy(batch, num_threads=2)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    assert expected[-1] == Tokenizer(base).encode_ordinary(unicodedata.normalize("NFC", batch[-1]))


def test_flat_batch_of_nothing_and_off_the_fused_path():
    tok = fused("cl100k_base")
    flat, offsets = tok.encode_ordinary_batch_to_numpy([])
    assert flat.tolist() == [] and offsets.tolist() == [0]
    reference = Tokenizer(load_vocabulary("cl100k_base"), algorithm="heap", pretokenizer="regex")
    assert reference._fused is None
    texts = ["", "hello world", "don't 中文"]
    flat, offsets = reference.encode_ordinary_batch_to_numpy(texts)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == tok.encode_ordinary_batch(texts)


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 0, 1, 2, 5, 100, 4096]), max_size=14), parts=st.integers(0, 7))
def test_split_batch_cuts_where_the_running_total_reaches_each_share(sizes, parts):
    """Contiguous, non-empty groups covering every text, at most ``parts`` of them, each cut right
    after the first text where the running total reaches the next share (never after the last
    text): the definition written out as a plain loop."""
    from bpebench.algorithms.pipeline.parallel import equal_targets, split_batch

    expected, start, running, total = [], 0, 0, sum(sizes)
    for i, size in enumerate(sizes):
        running += size
        if len(expected) < parts - 1 and running * parts >= total * (len(expected) + 1) and i + 1 < len(sizes):
            expected.append((start, i + 1))
            start = i + 1
    if start < len(sizes):
        expected.append((start, len(sizes)))
    groups = split_batch(sizes, equal_targets(sum(sizes), parts))
    assert groups == expected
    assert [i for a, b in groups for i in range(a, b)] == list(range(len(sizes)))
    assert all(a < b for a, b in groups) and len(groups) <= max(parts, 1)


def test_cut_text_cuts_only_before_a_letter_after_a_line_feed():
    from bpebench.algorithms.pipeline.parallel import cut_text, equal_targets

    text = ("word " * 30_000 + "end\n") * 4 + "Ünïcode\n  \nx"
    parts = cut_text(text, equal_targets(len(text), 4), "o200k")
    assert "".join(parts) == text and len(parts) == 4
    for before, part in zip(parts, parts[1:]):
        assert part[0].isalpha() and before[-1] == "\n" and not before[-2].isspace()
    assert cut_text(text, equal_targets(len(text), 4), None) == [text]  # an unknown pattern is never cut
    # whitespace before the line feed: no cut (gpt2 would split that run otherwise)
    spaced = ("word " * 30_000 + " \n") * 4
    assert cut_text(spaced, equal_targets(len(spaced), 4), "gpt2") == [spaced]
    # targets closer together than the boundaries: every boundary cut once, in order
    every = cut_text(text, list(range(1000, len(text), 1000)) + [len(text)], "o200k")
    assert every == ["word " * 30_000 + "end\n"] * 4 + ["Ünïcode\n  \nx"]


def test_part_spans_taken_out_of_order_give_the_cuts_in_order():
    """A part's span asked for before those before it (as a second thread may) finds every cut up to
    it in order: the spans are the same, and tile the text; empty parts where a target was passed."""
    from bpebench.algorithms.pipeline.parallel import PartSpans, cut_spans

    text = ("word " * 3_000 + "end\n") * 6 + "x" * 20_000 + "\nYes"
    targets = [100, 200, 15_000, 16_000, 40_000, 60_000, 95_000, 100_000, len(text)]
    in_order = PartSpans(text, targets, "o200k")
    spans = [in_order.span(k) for k in range(len(in_order))]
    backwards = PartSpans(text, targets, "o200k")
    assert [backwards.span(k) for k in reversed(range(len(backwards)))][::-1] == spans
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    # 100 is cut after the first line feed (15,004), which passes 200 and 15,000: two empty parts
    assert spans[:3] == [(0, 15_004), (15_004, 15_004), (15_004, 15_004)]
    assert [span for span in spans if span[0] < span[1]] == cut_spans(text, targets, "o200k")
    assert [text[a:b] for a, b in cut_spans(text, targets, "o200k")][-1] == "Yes"
    assert [PartSpans(text, targets, None).span(0)] == [(0, len(text))] == cut_spans(text, targets, "unknown")


#: characters around line feeds that decide a boundary: ASCII and other letters, whitespace that
#: ``str.isspace`` and ``regex`` disagree on (U+001C is not White_Space), digits, marks, punctuation
_CUT_ALPHABET = "aZ\u00e9\u4e00\u0416 \t\r\n\n\n\x1c\u3000\u00a0\u2028;{}#/1\u0301"
#: the oracle: ``parallel._BOUNDARY``'s matches spelled the plain way (lookbehind first)
_PLAIN_BOUNDARY = regex.compile(r"(?<=\S)\n(?=\p{L})")


def _reference_spans(text: str, targets: list[int]) -> list[tuple[int, int]]:
    """``PartSpans``' cuts, as its docstring states them, with the boundary spelled the plain way
    (lookbehind first) and every match listed: each target cut at the first boundary at or after
    it within ``CUT_WINDOW``, else at the last one before it, never at or before the cut before."""
    from bpebench.algorithms.pipeline.parallel import CUT_WINDOW

    plain = _PLAIN_BOUNDARY
    ends: list[int] = []
    for k, target in enumerate(targets):
        previous = ends[-1] if ends else 0
        if k == len(targets) - 1:
            ends.append(len(text))
            continue
        after = [m.start() for m in plain.finditer(text, target, min(len(text), target + CUT_WINDOW))]
        before = [m.start() for m in plain.finditer(text, max(0, target - CUT_WINDOW), target)]
        found = after[0] if after else (before[-1] if before else None)
        cut = previous if target < previous or found is None else found + 1
        ends.append(cut if previous < cut < len(text) else previous)
    return [((ends[k - 1] if k else 0), end) for k, end in enumerate(ends)]


#: stretches with a boundary in them, and stretches of C-like code and whitespace with none
_CUT_FRAGMENTS = ["x\nA", "\u00e9\n\u4e00", ".\nZ", "{;\n  }", " \nA", "\x1c\nA", "1\n\u0301", "\n\n",
                  "........", "  /* x */", "\u3000\nb"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_CUT_FRAGMENTS), st.sampled_from(_CUT_ALPHABET)), min_size=1,
                max_size=120).map("".join),
       st.lists(st.integers(0, 400), max_size=8), st.integers(1, 4))
@example("x\nA" * 50 + "{;\n  }" * 30, [10, 100, 200, 250], 1)
@example("x\nA" + "." * 40 + "x\nA" * 10, [5, 60], 1)  # a search that stops short of the end finds nothing
def test_part_spans_match_the_plain_boundary_search(text, raw_targets, window_power):
    """The cuts (the boundary spelled line feed first, the last one found from the end back, a search
    that reached the end remembered) are those of the plain spelling's every match, with a small
    ``CUT_WINDOW`` so that both searches run out of text; ``last_boundary`` agrees with the plain
    spelling's last match on every span, and the stream's ``_last_cut`` too."""
    from bpebench.algorithms.pipeline import parallel
    from bpebench.algorithms.pipeline.streaming import _last_cut

    plain = _PLAIN_BOUNDARY
    targets = sorted(t for t in raw_targets if t < len(text)) + [len(text)]
    window = 4 ** window_power
    original = parallel.CUT_WINDOW
    parallel.CUT_WINDOW = window
    try:
        spans = parallel.PartSpans(text, targets, "o200k")
        assert [spans.span(k) for k in range(len(spans))] == _reference_spans(text, targets)
    finally:
        parallel.CUT_WINDOW = original
    for start in range(0, len(text), 7):
        for end in (start, start + 1, start + window, len(text)):
            every = [m.start() for m in plain.finditer(text, start, end)]
            assert parallel.last_boundary(text, start, end) == (every[-1] if every else None)
    every = [m.start() for m in plain.finditer(text)]
    assert _last_cut(text) == (every[-1] + 1 if every else 0)


def test_run_folded_folds_in_order_whatever_order_the_parts_end_in():
    """Parts ending out of order are folded in item order, each as soon as its predecessors are in
    (before the slow last part ends); a None result gives None and skips the parts not started."""
    import threading
    import time

    from bpebench.algorithms.pipeline.parallel import run_all, run_folded

    finished, folds = [], []
    lock = threading.Lock()

    def part(i):
        time.sleep({0: 0.05, 7: 0.3}.get(i, 0.005))
        with lock:
            finished.append(i)
        return [i]

    def fold(acc, more):
        with lock:
            folds.append((len(finished), more[0]))
        return acc + more

    assert run_folded(part, list(range(8)), 3, fold) == list(range(8))
    assert finished != sorted(finished)  # the parts did end out of order
    assert [item for _, item in folds] == list(range(1, 8))
    assert all(done < 8 for done, item in folds if item < 7)  # folded while part 7 still ran
    assert run_folded(part, [], 2, fold) is None
    calls = []
    assert run_folded(lambda i: calls.append(i) or (None if i == 2 else [i]), range(6), 1, fold) is None
    assert calls == [0, 1, 2]  # one thread: nothing after the failed part is started
    assert run_all(lambda i: i * i, range(5), 2) == [0, 1, 4, 9, 16]


def test_part_targets_shrink_to_the_smallest_part():
    """Hand-worked: each part a quarter of what is left on two threads, none under MIN_PART_BYTES
    but the last and none over MAX_PART_BYTES; on one thread, parts of MAX_PART_BYTES."""
    from bpebench.algorithms.pipeline.parallel import MAX_PART_BYTES, MIN_PART_BYTES, part_targets

    assert (MIN_PART_BYTES, MAX_PART_BYTES) == (16_384, 262_144)
    # 100,000 -> 25,000 + 18,750, then quarters under 16,384: 16,384 each, and the 7,098 left
    assert part_targets(100_000, 2) == [25_000, 43_750, 60_134, 76_518, 92_902, 100_000]
    assert part_targets(100_000, 1) == [100_000]
    assert part_targets(600_000, 1) == [262_144, 524_288, 600_000]
    assert part_targets(10_000, 2) == [10_000] and part_targets(0, 4) == [0]
    targets = part_targets(3_300_000, 2)
    sizes = [b - a for a, b in zip([0, *targets], targets)]
    assert targets[-1] == 3_300_000 and sizes[0] == MAX_PART_BYTES
    assert all(a >= b for a, b in zip(sizes, sizes[1:-1])) and min(sizes[:-1]) == MIN_PART_BYTES


@settings(max_examples=20, deadline=None)
@given(lines=st.lists(st.text(alphabet=st.sampled_from(list("ab \t\r\n.'1é中")), max_size=12), min_size=2, max_size=12))
def test_cut_text_and_the_kernels_segments_split_like_the_whole_text(lines):
    """Every part of a cut text splits like its stretch of the whole text, for every pattern; so do
    the kernel's segments (texts longer than SEGMENT_BYTES cut at the same kind of place)."""
    from bpebench.algorithms.formats.patterns import PATTERNS
    from bpebench.algorithms.pipeline import fast_pipeline
    from bpebench.algorithms.pipeline.parallel import cut_text, equal_targets

    text = "\n".join(lines) * 3
    for name, pattern in PATTERNS.items():
        whole = regex.findall(pattern, text)
        parts = cut_text(text, equal_targets(len(text), 8), name) if len(text) > 8 else [text]
        assert [p for part in parts for p in regex.findall(pattern, part)] == whole, name
    long_text = text * (1 + 3 * fast_pipeline.SEGMENT_BYTES // max(len(text.encode("utf-8")), 1))
    for name in ("gpt2", "o200k", "cl100k", "tekken"):
        vocab = Vocabulary.from_ranks([bytes([b]) for b in range(256)] + [b" \n", b"\n\n", b"ab", b" a"], name=name,
                                      pattern=name)
        pipeline = FusedPipeline(vocab, piece_cache_slots=0)
        expected = Tokenizer(vocab, algorithm="backtracking", pretokenizer="regex").encode_ordinary(long_text)
        assert pipeline.encode_utf8(long_text.encode("utf-8")).tolist() == expected, name


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_segments_too_long_for_the_calls_scratch_or_refused_by_the_byte_split_equal_tiktoken(name):
    """The kernel's segments take their bitmaps from the call's scratch when they fit it; a segment
    longer than ``SCRATCH_SEGMENT_BYTES`` (a line with no cut point) takes bitmaps of its own, and one
    that the byte split refuses (a CJK letter right before an upper-case one) the character path.
    Each alone, and mixed in one text and in one batch, against tiktoken."""
    from bpebench.algorithms.pipeline import fast_pipeline

    peer = tiktoken_peer(name)
    tok = fused(name)
    span = fast_pipeline.SCRATCH_SEGMENT_BYTES
    ascii_line = " ".join(f"w{i % 97}x, it's" for i in range(span // 6))  # no line feed: one segment
    cyrillic_line = " ".join(f"слово{i % 31}" for i in range(span // 8))
    refused = "中A ー € — 😀" + "The 漢字 text.\n" * 40
    short = "plain words\nnext line 12345 "
    assert len(ascii_line.encode()) > span and len(cyrillic_line.encode()) > span
    texts = [ascii_line, cyrillic_line, refused, short,
             short * 2000 + "\n" + ascii_line,  # segments that fit, then one that does not
             ascii_line + "\nnext " + refused * 50 + "\nlast words"]
    for text in texts:
        assert tok.encode_ordinary(text, num_threads=1) == peer.encode_ordinary(text), text[:40]
        assert tok._fused.encode_utf8(text.encode()).tolist() == peer.encode_ordinary(text), text[:40]
    # a batch runs its texts in one loop that leaves it for such segments and comes back
    batch = [short, ascii_line, "", refused, short, cyrillic_line, "x", refused, ""]
    assert tok.encode_ordinary_batch(batch, num_threads=1) == [peer.encode_ordinary(t) for t in batch]
    assert tok.encode_ordinary_batch(texts, num_threads=1) == [peer.encode_ordinary(t) for t in texts]


def test_thread_count_from_the_environment(monkeypatch):
    from bpebench.algorithms.pipeline.parallel import thread_count

    monkeypatch.setenv("BPEBENCH_NUM_THREADS", "3")
    assert thread_count() == 3 and thread_count(1) == 1
    monkeypatch.setenv("BPEBENCH_NUM_THREADS", "many")
    with pytest.raises(BpebenchError):
        thread_count()
    with pytest.raises(BpebenchError):
        thread_count(0)


# ============================================================================= any pattern
CUSTOM_PATTERN = r"\s?\p{L}+|\s?\p{N}{1,4}|\s?[^\s\p{L}\p{N}]+|\s+"


@pytest.mark.parametrize("pattern", [CUSTOM_PATTERN, None, r"\p{L}+|\p{N}"])
def test_a_pattern_with_no_compiled_pre_tokenizer_is_fused_behind_regex(pattern):
    """The pattern's transducer splits inside the compiled call (``regex``, the reference itself, where
    the transducer finds text no branch matches), the compiled stage encodes: tiktoken's ids for the
    same ranks and pattern, and the reference's; also for a pattern whose matches leave text out
    (dropped, as tiktoken drops it: every batch below holds such text, so the whole batch goes to
    ``regex``), and for no pattern (the whole text one piece)."""
    tiktoken = pytest.importorskip("tiktoken")
    base = load_vocabulary("cl100k_base")
    vocab = Vocabulary.from_ranks(list(base.tokens), name="cl100k-custom", pattern=pattern)
    tok = Tokenizer(vocab)
    assert tok.fused and tok._fused.splitter is not None
    split = tok._fused.plan.split  # the kernel splits with the transducer, its tables packed as they were made
    assert (split.size > 0) == (pattern is not None)
    if pattern is not None:
        views = split_views(split)
        arguments = tok._fused.splitter.transducer_arguments
        assert all(np.array_equal(np.asarray(a), np.asarray(v)) for a, v in zip(arguments, views))
        assert views[6] > 0 and views[12].size == 0  # n_kinds; no marker
    reference = Tokenizer(vocab, algorithm="naive")
    text = corpora.get("prose-en", size=20_000) + corpora.get("udhr-all", size=6_000)
    if pattern is None:
        text = text[:3000]  # the whole text is one piece: keep the naive reference quick
    ids = tok.encode_ordinary(text)
    assert ids == reference.encode_ordinary(text)
    assert tok.encode_ordinary_batch([text[:500], "", text[500:900]]) == [
        reference.encode_ordinary(t) for t in (text[:500], "", text[500:900])]
    assert tok.encode_to_numpy(text).tolist() == ids
    if pattern is not None:
        enc = tiktoken.Encoding("custom", pat_str=pattern, mergeable_ranks={t: i for i, t in enumerate(base.tokens)},
                                special_tokens={})
        assert ids == enc.encode_ordinary(text)
        words = ["one", "", "two words", "x1 y22", " \n", "caf\u00e9 \u4e2d"]  # the kernel's batch, or regex's
        assert tok.encode_ordinary_batch(words) == [enc.encode_ordinary(w) for w in words]
        assert [tok.encode_ordinary(w) for w in words] == [enc.encode_ordinary(w) for w in words]


@pytest.mark.parametrize("pattern, splitter", [(CUSTOM_PATTERN, "ProgramPretokenizer"),
                                               (r"\p{L}+|\p{N}", "ProgramPretokenizer"),
                                               (r"(?<=\s)\p{L}+|\S+|\s+", "RegexPretokenizer")])
@pytest.mark.parametrize("threads", [2, 3])
def test_a_long_text_with_another_pattern_is_encoded_in_parts_on_threads(pattern, splitter, threads):
    """No built-in scanner knows these patterns, so a long text cannot be cut before it is split: with
    a transducer each part is split from a guessed piece end and checked against the next part's
    (``FusedPipeline.encode_split_parts``), else (or where a check fails) the text is split whole,
    then cut at piece ends and the parts encoded on threads. tiktoken's ids for the same ranks and
    pattern (also for a pattern whose matches leave text out, and one with a look-behind that only
    ``regex`` splits), and those of one thread."""
    from bpebench.algorithms.pipeline.parallel import equal_targets, part_targets

    tiktoken = pytest.importorskip("tiktoken")
    base = load_vocabulary("o200k_base")
    vocab = Vocabulary.from_ranks(list(base.tokens), name="o200k-another-pattern", pattern=pattern)
    tok = Tokenizer(vocab)
    assert type(tok._fused.splitter).__name__ == splitter
    text = "\n".join([corpora.get("prose-en", size=90_000), corpora.get("code-python", size=60_000),
                      corpora.get("udhr-all", size=60_000)])
    enc = tiktoken.Encoding("another", pat_str=pattern, mergeable_ranks={t: i for i, t in enumerate(base.tokens)},
                            special_tokens={})
    expected = enc.encode_ordinary(text)
    data = text.encode()
    parts = tok._fused.split_parts(data, equal_targets(len(data), 2 * threads))
    assert 2 <= len(parts) <= 2 * threads
    shrinking = tok._fused.split_parts(data, part_targets(len(data), threads))
    assert len(shrinking) > 2 * threads
    assert [i for part in shrinking for i in tok._fused.encode_part_list(part)] == expected
    assert [i for part in parts for i in tok._fused.encode_part_list(part)] == expected
    in_parts = tok._fused.encode_split_parts(data, part_targets(len(data), threads), threads, as_array=False)
    if pattern == CUSTOM_PATTERN:  # a transducer's split, and natural text passes every check
        assert in_parts == expected
    else:  # text matched by no branch, or no transducer: split whole
        assert in_parts is None
    assert tok.encode_ordinary(text, num_threads=1) == expected
    assert tok.encode_ordinary(text, num_threads=threads) == expected
    assert tok.encode_to_numpy(text, num_threads=threads).tolist() == expected
    assert tok._fused.split_parts(b"", [0]) == []
    assert tok.encode_ordinary(" " * 70_000, num_threads=threads) == enc.encode_ordinary(" " * 70_000)
    digits = "x " + "1234567" * 20_000  # runs of digits across every cut: checks fail, the text is split whole
    assert tok._fused.encode_split_parts(digits.encode(), part_targets(len(digits), threads), threads,
                                         as_array=True) is None or r"\p{N}{1,4}" not in pattern
    assert tok.encode_to_numpy(digits, num_threads=threads).tolist() == enc.encode_ordinary(digits)
    paired = "a" * 39_999 + "\ud83d\ude00" + "b" * 40_000  # a surrogate pair where the first of two shares ends
    joined = paired.encode("utf-16", "surrogatepass").decode("utf-16")
    assert tok.encode_ordinary(paired, num_threads=2) == enc.encode_ordinary(joined)


@settings(max_examples=80, deadline=None)
@given(text=texts)
def test_regex_split_fused_pipeline_equals_the_reference_on_drawn_text(text):
    vocab = _custom_vocabulary()
    assert Tokenizer(vocab).encode_ordinary(text) == Tokenizer(vocab, algorithm="naive").encode_ordinary(text)


def _custom_vocabulary():
    found = _CUSTOM.get("vocab")
    if found is None:
        found = _CUSTOM["vocab"] = Vocabulary.from_ranks(list(load_vocabulary("o200k_base").tokens),
                                                         name="o200k-custom", pattern=CUSTOM_PATTERN)
    return found


_CUSTOM: dict = {}
