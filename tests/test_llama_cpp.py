"""GGUF vocabularies with llama.cpp's semantics, against llama.cpp's own recorded ids.

``tests/golden/llama_cpp_golden.json.gz`` holds the ids llama.cpp (through
``llama-cpp-python``) gave for every variant of ``golden_fixtures.llama_cpp_variants()``:
a whole-text BPE fixture under each of llama.cpp's pre-tokenizer types, with special
tokens of every kind, and SentencePiece variants (``make_llama_cpp_golden.py`` made it;
llama.cpp is not needed here). The GGUF files are rebuilt from the committed fixtures.
The rest checks the pieces by hand-worked examples: the table, the special-token
partition, the metadata reader's refusals.
"""

from __future__ import annotations

import gzip
import json
import string
import struct
import sys
from pathlib import Path

import pytest

from bpebench.errors import VocabularyError
from bpebench.algorithms.formats import load_path
from bpebench.algorithms.formats.gguf_metadata import read_gguf_metadata
from bpebench.algorithms.formats.llama_cpp_pre import PRE_NAMES, PRE_TYPES
from bpebench.algorithms.pipeline.llama_cpp_fast import compiled_pattern
from bpebench.algorithms.pipeline.llama_cpp_specials import llama_tokenize, partition
from bpebench.algorithms.pipeline.llama_cpp_split import (
    LlamaCppPretokenizer, collapse_regex, collapsed, compile_step,
)
from bpebench.algorithms.pipeline.tokenizer import DisallowedSpecialError, Tokenizer

GOLDEN_DIR = Path(__file__).parent / "golden"
sys.path.insert(0, str(GOLDEN_DIR))
from golden_fixtures import LLAMA_CPP_GOLDEN, llama_cpp_variant, llama_cpp_variants, write_gguf  # noqa: E402

GOLDEN = json.loads(gzip.decompress(LLAMA_CPP_GOLDEN.read_bytes()))
TEXTS: list[str] = GOLDEN["texts"]
VARIANTS = list(llama_cpp_variants())


@pytest.fixture(scope="module")
def variant_dir(tmp_path_factory):
    pytest.importorskip("gguf")
    return tmp_path_factory.mktemp("llama_cpp_variants")


def _variant(directory: Path, name: str):
    path = directory / (name.replace(":", "_").replace("(", "").replace(")", "") + ".gguf")
    if not path.exists():
        llama_cpp_variant(path, name)
    return load_path(path)


def _mismatches(got: list[list[int]], expected: list[list[int]]) -> list:
    return [(text, g, e) for text, g, e in zip(TEXTS, got, expected) if g != e]


# ============================================================================= llama.cpp's recorded ids
def test_golden_covers_every_pre_tokenizer_type():
    byte_level = {t for t, spec in PRE_TYPES.items() if spec.byte_encode}
    covered = {spec["type"] for spec in llama_cpp_variants().values() if "type" in spec}
    assert covered == byte_level
    assert set(GOLDEN["variants"]) == set(VARIANTS)


@pytest.mark.parametrize("variant", VARIANTS)
def test_ids_equal_llama_cpp(variant_dir, variant):
    """parse_special=False (encode_ordinary) and =True (every special token allowed), every text."""
    vocab = _variant(variant_dir, variant)
    expected = GOLDEN["variants"][variant]
    tok = Tokenizer(vocab)
    # byte-level files take the fused pipeline (a hand-written splitter's compiled twin on the text
    # its screen lets through, else llama.cpp's split as emulated), but where llama.cpp drops bytes;
    # SentencePiece files fuse each stretch their carver leaves (``hf_pipeline.character_split``)
    sentencepiece = variant.startswith("spm")
    assert tok.fused == (sentencepiece or (vocab.rule == "merges" and variant != "missing-byte:gpt-2"))
    if sentencepiece:
        assert tok._hf.fused is not None and tok._llama_fused is None
    else:
        fused_split = tok._llama_fused.pattern_name if tok.fused else None
        assert fused_split == (compiled_pattern(vocab.llama_cpp["pre"]) if tok.fused else None)
    mismatches = _mismatches([tok.encode_ordinary(t) for t in TEXTS], expected["ordinary"])
    assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[0]}"
    mismatches = _mismatches([tok.encode(t, allowed_special="all") for t in TEXTS], expected["special"])
    assert not mismatches, f"{len(mismatches)} texts differ, first: {mismatches[0]}"
    assert not _mismatches(tok.encode_ordinary_batch(TEXTS), expected["ordinary"])
    ids, offsets = tok.encode_ordinary_batch_to_numpy(TEXTS)
    assert not _mismatches([ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])], expected["ordinary"])
    added = [llama_tokenize(tok, t, add_special=True) for t in ("", "hello world")]
    assert added == expected["add_special"]


@pytest.mark.parametrize("variant", ["pre:gpt-2", "pre:llama3", "pre:deepseek-llm", "spm"])
def test_reference_encoder_gives_the_same_ids(variant_dir, variant):
    tok = Tokenizer(_variant(variant_dir, variant), algorithm="naive")
    expected = GOLDEN["variants"][variant]["ordinary"]
    assert not _mismatches([tok.encode_ordinary(t) for t in TEXTS[:60]], expected[:60])


def test_ignore_merges_and_flags_come_from_the_name(variant_dir):
    assert _variant(variant_dir, "pre:llama3").whole_piece_lookup is True
    assert _variant(variant_dir, "pre:gpt-2").whole_piece_lookup is False
    missing = _variant(variant_dir, "pre:(missing)")
    assert missing.llama_cpp["pre"] == "default" and missing.llama_cpp["pre_name"] == "default"


def test_special_token_kinds(variant_dir):
    vocab = _variant(variant_dir, "pre:gpt-2")
    info = vocab.llama_cpp
    # USER_DEFINED are cut even from ordinary text; "<|channel|>" is retyped to USER_DEFINED
    assert set(info["user_defined"]) == {"<mask>", "   ", "  ", "<x>", "<|channel|>"}
    # retyped CONTROL by their text: carved only when special tokens are parsed
    assert {"<|im_end|>", "<|fim_prefix|>", "[PAD7]"} <= set(vocab.special_tokens) - set(info["user_defined"])
    tok = Tokenizer(vocab)
    with pytest.raises(DisallowedSpecialError):
        tok.encode("a <|im_end|> b")
    assert tok.encode("a <mask> b") == tok.encode_ordinary("a <mask> b")  # always cut: never disallowed
    assert vocab.special_tokens["<mask>"] in tok.encode_ordinary("a <mask> b")
    strip = _variant(variant_dir, "lstrip:jina-v2-code").llama_cpp
    assert strip["lstrip"] == ["<mask>"] and strip["rstrip"] == []
    phi = _variant(variant_dir, "rstrip:phi3").llama_cpp
    assert "<mask>" in phi["rstrip"] and "</s>" in phi["rstrip"] and "<s>" not in phi["rstrip"]


# ============================================================================= hand-worked pieces
def test_partition_is_longest_token_first_not_leftmost():
    tokens = [("x><y", 2, False, False), ("<x>", 1, False, False)]
    assert partition("<x><y>", tokens) == ["<", 2, ">"]  # leftmost-first would give [1, "<y>"]
    spaces = [("   ", 3, False, False), ("  ", 2, False, False)]
    assert partition("a" + " " * 8 + "b", spaces) == ["a", 3, 3, 2, "b"]


@pytest.mark.parametrize("many_firsts", [False, True])
def test_carver_finds_exactly_the_literals_present(many_firsts):
    """Many literals sharing a first character take the positions pass; few take str.find. Few
    first characters are each looked for in the text; many are met with the text's characters."""
    import random
    from types import SimpleNamespace

    from bpebench.algorithms.pipeline.llama_cpp_specials import _SCANNED_FIRSTS, LlamaCppCarver

    rng = random.Random(3)
    literals = [f"[PAD{i}]" for i in range(40)] + ["[", "[[", "<a>", "<ab>", " ", "   "]
    pieces = ["[PAD1", "2]", "[PAD3]", "[", "<a", "b>", "<a>", " ", "x", "]"]
    if many_firsts:
        literals += [chr(0x4E00 + i) + ">" for i in range(_SCANNED_FIRSTS + 1)]
        pieces += [chr(0x4E00 + i) for i in range(0, _SCANNED_FIRSTS + 1, 5)] + [">"]
    vocab = SimpleNamespace(special_tokens={t: i for i, t in enumerate(literals)},
                            llama_cpp={"user_defined": literals[::2]})
    carver = LlamaCppCarver(vocab)
    always = set(literals[::2])
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert carver.present(text) == {t for t in literals if t in text}, text
        # ordinary text is cut at the always-cut literals alone
        assert carver.segments(text, frozenset()) == partition(text, [t for t in carver._tokens if t[0] in always])


def test_partition_strips_c_whitespace_only():
    tokens = [("<m>", 7, True, True)]
    assert partition("a \t<m>\n b", tokens) == ["a", 7, "b"]
    assert partition("a\u00a0<m>\u3000b", tokens) == ["a\u00a0", 7, "\u3000b"]  # isspace in the C locale
    assert partition("  <m>  ", tokens) == [7]


def test_pretokenizer_sequence_keeps_unmatched_text():
    # falcon: punctuation runs first, then GPT-2's regex inside each piece, then digit triples
    falcon = LlamaCppPretokenizer("falcon")
    assert falcon.split("Hi!! 1234567 x") == ["Hi", "!!", " ", "123", "456", "7", " x"]
    # llama.cpp's GPT-2 list has no final ``\s+``: a lone tab before a letter stays a piece
    assert LlamaCppPretokenizer("gpt2").split("a\tb") == ["a", "\t", "b"]
    # newlines first, then letters, ...: DeepSeek-LLM's list on a line with trailing spaces
    assert LlamaCppPretokenizer("deepseek_llm").split("ab  \n") == ["ab", "  ", "\n"]
    # ECMAScript's ``$`` is the end of the piece only, not also before a final newline as in ``re``
    pattern, _ = compile_step("a$")
    assert pattern.search("a\n") is None and pattern.search("ba") is not None


def test_categories_collapse_like_llama_cpp():
    # every letter class is one placeholder: \p{Lu} matches lower-case non-ASCII letters too
    assert collapse_regex(r"[\p{Lu}x]") == "[\xd2" + string.ascii_uppercase + string.ascii_lowercase + "x]"
    assert collapse_regex(r"\p{N}+") == "[\xd10123456789]+"
    assert collapsed("aé京 ١\u3000") == "a\xd2\xd2 \xd1\x0b"
    gpt4o = LlamaCppPretokenizer("gpt4o")
    assert gpt4o.split("camelCase HTTPServer") == ["camel", "Case", " HTTPServer"]
    assert gpt4o.split("ÉCOLEéte") == ["ÉCOLEéte"]  # non-ASCII letters count as both cases


def test_kimi_k2_and_afmoe_splitters():
    kimi = LlamaCppPretokenizer("kimi_k2")
    assert kimi.split("中文abc's 12345") == ["中文", "abc's", " ", "123", "45"]
    afmoe = LlamaCppPretokenizer("afmoe")
    # digits grouped from the right; the text before a run joins its first group (llama.cpp's quirk)
    assert afmoe.split("x1234567") == ["x", "1", "234", "567"]


def test_table_names_map_to_known_types():
    assert all(p.type in PRE_TYPES for p in PRE_NAMES.values())
    assert len(PRE_NAMES) >= 90 and len(PRE_TYPES) >= 57
    for name in ("deepseek-llm", "deepseek-coder", "deepseek-v3", "falcon", "mpt", "starcoder", "refact", "command-r",
                 "qwen2", "qwen35", "llama3", "gpt-2", "stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat",
                 "chatglm-bpe", "viking", "jais", "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone",
                 "chameleon", "minerva-7b", "megrez", "gpt-4o", "superbpe", "trillion", "bailingmoe", "kimi-k2",
                 "hunyuan", "default"):
        assert name in PRE_NAMES, name


# ============================================================================= refusals
def test_unknown_pre_tokenizer_is_refused_by_name(tmp_path):
    pytest.importorskip("gguf")
    path = write_gguf(tmp_path / "x.gguf", model="gpt2", tokens=["a", "b", "ab", "Ġ", "Ġa"], types=[1] * 5,
                      merges=["a b", "Ġ a"], pre="no-such-pre")
    with pytest.raises(VocabularyError, match="pre-tokenizer 'no-such-pre' is not one llama.cpp knows"):
        load_path(path)
    # a pattern of one's own loads it (tiktoken semantics), llama.cpp's special-token rules kept
    vocab = load_path(path, pattern="gpt2")
    assert vocab.pattern == "gpt2" and vocab.llama_cpp["pre"] is None
    # GPT-2's split gives "ab", " ab"; in " ab" the merge "a b" comes first, so " a" never forms
    assert Tokenizer(vocab).encode_ordinary("ab ab") == [2, 3, 2]


def _gguf_bytes(pairs: list[tuple[str, int, bytes]], version: int = 3) -> bytes:
    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(pairs))
    for key, kind, payload in pairs:
        out += struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", kind) + payload
    return out


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text.encode())) + text.encode()


@pytest.mark.parametrize("data, message", [
    (b"GGUF\x03\x00\x00\x00" + b"\xff" * 20, "does not fit"),
    (b"GGUF", "truncated in the header"),
    (b"GGUX" + b"\x00" * 30, "not a GGUF file"),
    (_gguf_bytes([("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 10**12))]), "array count of 1,000,000,000,000"),
    (_gguf_bytes([("tokenizer.ggml.model", 8, _string("gpt2"))])[:-2],
     "string length of 4 in the value of 'tokenizer.ggml.model' does not fit in the 2 bytes left"),
    (_gguf_bytes([("tokenizer.ggml.model", 8, _string("gpt2"))])[:-12], "truncated in the value of 'tokenizer.ggml.model'"),
    (_gguf_bytes([("k", 77, b"")]), "unknown value type 77 in the value of 'k'"),
    (_gguf_bytes([("k", 9, struct.pack("<IQ", 9, 1))]), "array of arrays"),
    (_gguf_bytes([], version=1), "version 1 is not supported"),
    (_gguf_bytes([], version=99), "unknown version 99"),
    (_gguf_bytes([("k", 8, struct.pack("<Q", 2) + b"\xff\xfe")]), "not UTF-8"),
])
def test_damaged_gguf_is_one_plain_line(tmp_path, data, message):
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    with pytest.raises(VocabularyError, match=message) as info:
        load_path(path, kind="gguf")
    text = str(info.value)
    assert "\n" not in text and "numpy" not in text and "buffer" not in text and "dtype" not in text


def test_every_truncation_of_a_real_gguf_is_one_line(variant_dir, tmp_path):
    source = (variant_dir / "pre_gpt-2.gguf")
    if not source.exists():
        llama_cpp_variant(source, "pre:gpt-2")
    raw = source.read_bytes()
    # (the last bytes are alignment padding after the metadata: cutting them loses nothing)
    for cut in sorted({8, 23, 24, 40, 100, 1000, len(raw) // 3, len(raw) // 2, len(raw) - 64}):
        path = tmp_path / f"cut{cut}.gguf"
        path.write_bytes(raw[:cut])
        with pytest.raises(VocabularyError) as info:
            load_path(path)
        assert "damaged GGUF file" in str(info.value) or "not a GGUF" in str(info.value), cut


def test_metadata_reader_reads_both_byte_orders(tmp_path):
    little = _gguf_bytes([("n", 4, struct.pack("<I", 7)), ("s", 8, _string("hi"))])
    big = b"GGUF" + struct.pack(">IQQ", 3, 0, 2)
    big += struct.pack(">Q", 1) + b"n" + struct.pack(">I", 4) + struct.pack(">I", 7)
    big += struct.pack(">Q", 1) + b"s" + struct.pack(">I", 8) + struct.pack(">Q", 2) + b"hi"
    for name, data in (("little", little), ("big", big)):
        (tmp_path / name).write_bytes(data)
        assert read_gguf_metadata(tmp_path / name) == {"n": 7, "s": "hi"}


def test_other_tokenizer_models_are_refused_by_name(tmp_path):
    pytest.importorskip("gguf")
    for model, what in (("bert", "WordPiece"), ("t5", "Unigram"), ("gemma4", "Gemma 4"), ("mystery", None)):
        path = write_gguf(tmp_path / f"{model}.gguf", model=model, tokens=["a"], types=[1], scores=[0.0])
        with pytest.raises(VocabularyError, match=f"model '{model}'" + (f".*{what}" if what else " is not supported")):
            load_path(path)
