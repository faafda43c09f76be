"""HF ``tokenizers`` components reproduced one by one, compared with the real library on the
hard-string set: normalizers (``normalize_str``), pre-tokenizers (``pre_tokenize_str``),
decoders (``decode``), Split semantics (issue 25: groups, non-covering patterns, empty
matches, every behavior, invert), and the bounded regex."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.errors import BpebenchError, VocabularyError
from bpebench.algorithms.pipeline.decoders import build_decoder
from bpebench.algorithms.pipeline.normalizers import build_normalizer
from bpebench.algorithms.pipeline.pretokenizers import build_pre_tokenizer
from bpebench.algorithms.pipeline.text_pieces import compile_pattern, find_matches

from bpebench.corpora.hard_strings import PIPELINE_TEXTS as HARD_STRINGS

tokenizers = pytest.importorskip("tokenizers")

GPT2_SPLIT = r"'(s|t|re|ve|m|ll|d)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]


def _hf_with(**components):
    """A real ``tokenizers.Tokenizer`` whose components are the given JSON dicts."""
    base = json.loads(tokenizers.Tokenizer(tokenizers.models.BPE()).to_str())
    base.update(components)
    return tokenizers.Tokenizer.from_str(json.dumps(base))


def _charsmap_spec() -> dict:
    """A Precompiled normalizer with the nmt_nfkc charsmap of a committed SentencePiece fixture."""
    from bpebench.algorithms.formats.sentencepiece_model import read_sentencepiece_model

    model = read_sentencepiece_model(Path(__file__).parent / "golden" / "pipelines" / "spm_nmt_nfkc_user.model")
    return {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(model.precompiled_charsmap).decode()}


NORMALIZERS = [
    {"type": "NFC"}, {"type": "NFD"}, {"type": "NFKC"}, {"type": "NFKD"}, {"type": "Lowercase"},
    {"type": "Strip", "strip_left": True, "strip_right": True}, {"type": "Strip", "strip_left": False, "strip_right": True},
    {"type": "StripAccents"}, {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
    {"type": "Replace", "pattern": {"Regex": "x*"}, "content": "-"},
    {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": ""},
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
    {"type": "BertNormalizer", "clean_text": False, "handle_chinese_chars": False, "strip_accents": True, "lowercase": False},
    {"type": "ByteLevel"},
    {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                         {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
]


@pytest.mark.parametrize("spec", NORMALIZERS, ids=lambda s: json.dumps(s)[:60])
def test_normalizers_equal_hf(spec):
    ours = build_normalizer(spec)
    theirs = _hf_with(normalizer=spec).normalizer
    for text in HARD_STRINGS:
        assert ours.normalize_str(text) == theirs.normalize_str(text), text


def test_precompiled_charsmap_equals_hf():
    spec = _charsmap_spec()
    ours = build_normalizer(spec)
    theirs = _hf_with(normalizer=spec).normalizer
    for text in HARD_STRINGS:
        assert ours.normalize_str(text) == theirs.normalize_str(text), text


PRE_TOKENIZERS = [
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False},
    *({"type": "Split", "pattern": {"Regex": GPT2_SPLIT}, "behavior": b, "invert": inv}
      for b in BEHAVIORS for inv in (False, True)),
    *({"type": "Split", "pattern": {"String": " "}, "behavior": b, "invert": False} for b in BEHAVIORS),
    {"type": "Split", "pattern": {"Regex": "x*"}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": "a|"}, "behavior": "MergedWithNext", "invert": False},
    {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Removed", "invert": True},
    {"type": "Split", "pattern": {"Regex": r"[a-z]+"}, "behavior": "Isolated", "invert": False},
    {"type": "Digits", "individual_digits": True}, {"type": "Digits", "individual_digits": False},
    {"type": "Punctuation", "behavior": "Isolated"}, {"type": "Punctuation", "behavior": "Contiguous"},
    {"type": "Whitespace"}, {"type": "WhitespaceSplit"}, {"type": "BertPreTokenizer"},
    {"type": "CharDelimiterSplit", "delimiter": " "},
    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": True},
    {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                           {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                            "split": True}]},
    {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                           {"type": "Split", "pattern": {"Regex": GPT2_SPLIT}, "behavior": "Isolated",
                                            "invert": False},
                                           {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                            "use_regex": False}]},
]


@pytest.mark.parametrize("spec", PRE_TOKENIZERS, ids=lambda s: json.dumps(s)[:70])
def test_pre_tokenizers_equal_hf(spec):
    ours = build_pre_tokenizer(spec)
    theirs = _hf_with(pre_tokenizer=spec).pre_tokenizer
    for text in HARD_STRINGS:
        assert ours.pre_tokenize_str(text) == [p for p, _ in theirs.pre_tokenize_str(text)], text


DECODERS = [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": True},
    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 1},
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "BPEDecoder", "suffix": "</w>"},
    {"type": "WordPiece", "prefix": "##", "cleanup": True},
    {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                      {"type": "ByteFallback"}, {"type": "Fuse"},
                                      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
]
TOKEN_LISTS = [
    ["\u2581\u2581a", "\u2581b", "c</w>", "d"], ["<0xE6>", "<0x9D>", "<0xB1>", "x", "<0xFF>", "<0x41>"],
    ["ĠHello", "Ġworld", "Ċ", "Ã©"], [" a ", "  ", "##b", "c", " .", " n't"], ["\u2581"], [],
]


@pytest.mark.parametrize("spec", DECODERS, ids=lambda s: json.dumps(s)[:60])
def test_decoders_equal_hf(spec):
    ours = build_decoder(spec)
    theirs = _hf_with(decoder=spec).decoder
    for tokens in TOKEN_LISTS:
        assert ours.decode(tokens) == theirs.decode(tokens), tokens


# ----------------------------------------------------------------------------- issue 25: Split semantics
def test_find_matches_skips_an_empty_match_right_after_a_match():
    # Oniguruma's find_iter: "x*" on "abxc" matches at 0, 1, 2..3 and 4, never at 3 (right after "x")
    assert find_matches(compile_pattern("x*"), "abxc") == [
        (0, 0, True), (0, 1, False), (1, 1, True), (1, 2, False), (2, 3, True), (3, 4, False), (4, 4, True)]
    assert find_matches(compile_pattern("x"), "") == [(0, 0, False)]


def test_possessive_looking_intervals_repeat_as_in_oniguruma():
    # Oniguruma reads {1,3}+ as "one or more runs of 1-3", not as a possessive interval
    spec = {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}+"}, "behavior": "Isolated", "invert": False}
    assert build_pre_tokenizer(spec).pre_tokenize_str("a12345b") == ["a", "12345", "b"]
    assert [p for p, _ in _hf_with(pre_tokenizer=spec).pre_tokenizer.pre_tokenize_str("a12345b")] == [
        "a", "12345", "b"]


def test_runaway_pattern_ends_as_one_line(monkeypatch):
    monkeypatch.setenv("BPEBENCH_REGEX_TIMEOUT", "0.05")
    spec = {"type": "Split", "pattern": {"Regex": r"(a|aa)+c"}, "behavior": "Isolated", "invert": False}
    with pytest.raises(BpebenchError, match="ran longer than") as info:
        build_pre_tokenizer(spec).pre_tokenize_str("a" * 60)
    assert "\n" not in str(info.value)


def test_a_long_text_is_matched_without_regex_timeout_and_still_never_hangs(monkeypatch):
    """Texts of WATCHED_MIN_CHARS or more run on a watched worker without ``regex``'s per-match
    clock: a quadratic search past its deadline is one line, and the next call gets a new worker."""
    from bpebench.algorithms.pipeline.pretokenize import RegexPretokenizer
    from bpebench.algorithms.pipeline.text_pieces import WATCHED_MIN_CHARS

    splitter = RegexPretokenizer(r"\s+x|y")  # no nested repetition: not an exponential risk
    assert not splitter._exponential_risk
    text = " " * 20_000 + "y"  # ~20,000^2 / 2 backtracking steps: about a second
    assert len(text) >= WATCHED_MIN_CHARS
    monkeypatch.setenv("BPEBENCH_REGEX_TIMEOUT", "0.02")
    start = time.perf_counter()
    with pytest.raises(BpebenchError, match="ran longer than") as info:
        splitter.split(text)
    assert "\n" not in str(info.value) and time.perf_counter() - start < 0.5
    with pytest.raises(BpebenchError, match="ran longer than"):
        find_matches(compile_pattern(r"\s+x|y"), text)
    monkeypatch.setenv("BPEBENCH_REGEX_TIMEOUT", "10")
    long_words = "ab " * 3000
    assert splitter.split("y" + long_words) == ["y"] and RegexPretokenizer(r"\w+").split(long_words) == ["ab"] * 3000
    assert find_matches(compile_pattern(r"b"), long_words)[:3] == [(0, 1, False), (1, 2, True), (2, 4, False)]


def test_a_forked_child_gets_its_own_regex_worker():
    """The watched worker is a thread: a child forked after the parent used it has the object but
    not the thread, and must not wait on it until the deadline."""
    import os

    from bpebench.algorithms.pipeline.pretokenize import RegexPretokenizer

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    splitter = RegexPretokenizer(r"\w+|\s+")
    text = "ab " * 3000
    assert splitter.split(text)[:2] == ["ab", " "]  # the parent's worker exists now
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report what it got, then leave without running pytest's teardown
        try:
            ok = splitter.split(text) == ["ab", " "] * 3000
        except BaseException:  # noqa: BLE001 - reported as a failure below
            ok = False
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.close(write)
    got = os.read(read, 1)
    os.waitpid(child, 0)
    assert got == b"1"


def test_patterns_that_may_backtrack_exponentially_keep_regex_timeout(monkeypatch):
    from bpebench.algorithms.formats.patterns import PATTERNS
    from bpebench.algorithms.pipeline.pretokenize import RegexPretokenizer
    from bpebench.algorithms.pipeline.text_pieces import exponential_risk

    assert not any(exponential_risk(p) for p in PATTERNS.values())
    for pattern in (r"(a|aa)+c", r"(?:a+)+", r"(a{2,3})*", r"((a+)b)*", r"(x|y){2}", r"(?:(a|b)c)+", "(a"):
        assert exponential_risk(pattern), pattern
    for pattern in (r"(?i:'s|'t)?", r"[(+]+", r"\(a+\)+", r"(ab)+", r"(x|y){1}", r"\p{N}{1,3}+", r"[\]]+(a|b)"):
        assert not exponential_risk(pattern), pattern
    monkeypatch.setenv("BPEBENCH_REGEX_TIMEOUT", "0.05")
    splitter = RegexPretokenizer(r"(a|aa)+c")
    assert splitter._exponential_risk
    with pytest.raises(BpebenchError, match="ran longer than 0.05 s"):
        splitter.split("a" * 5000)  # long, yet regex's own timeout ends it: no runaway worker is left


@pytest.mark.parametrize("spec, message", [
    ({"type": "UnicodeScripts"}, "pre-tokenizer 'UnicodeScripts' is not supported"),
    ({"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}, "bad pattern"),
    ({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"}, "split behavior 'Sideways'"),
    ({"type": "Metaspace", "replacement": "ab"}, "not one character"),
])
def test_unsupported_or_malformed_components_are_one_line(spec, message):
    with pytest.raises(BpebenchError, match=message) as info:
        build_pre_tokenizer(spec)
    assert "\n" not in str(info.value)


def test_unsupported_normalizer_and_decoder_are_named():
    with pytest.raises(VocabularyError, match="normalizer 'Fancy' is not supported"):
        build_normalizer({"type": "Fancy"})
    with pytest.raises(VocabularyError, match="decoder 'CTC' is not supported"):
        build_decoder({"type": "CTC"})


def _table_chars() -> list[str]:
    """Every character the HF-Unicode table corrects (the big unassigned ranges sampled)."""
    from bpebench.algorithms.pipeline.hf_unicode import TABLE

    data = json.loads(TABLE.read_text(encoding="utf-8"))
    chars: set[str] = set(data["lowercase"])

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for a, b in value:
                chars.update(chr(cp) for cp in range(a, min(b, a + 50) + 1))

    walk({k: v for k, v in data.items() if k != "lowercase"})
    return sorted(chars)


@pytest.mark.parametrize("spec", [{"type": f} for f in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents")]
                         + [NORMALIZERS[14]], ids=lambda s: s["type"])
def test_unicode_tables_follow_hf_where_python_differs(spec):
    ours, theirs = build_normalizer(spec), _hf_with(normalizer=spec).normalizer
    for c in _table_chars():
        text = "a" + c + "\u0323\u0301"
        assert ours.normalize_str(text) == theirs.normalize_str(text), hex(ord(c))


@pytest.mark.parametrize("spec", [{"type": "Digits", "individual_digits": True},
                                  {"type": "Punctuation", "behavior": "Isolated"}], ids=lambda s: s["type"])
def test_character_classes_follow_hf_where_python_differs(spec):
    ours, theirs = build_pre_tokenizer(spec), _hf_with(pre_tokenizer=spec).pre_tokenizer
    for c in _table_chars():
        assert ours.pre_tokenize_str("a" + c + "a") == [p for p, _ in theirs.pre_tokenize_str("a" + c + "a")], \
            hex(ord(c))


@settings(max_examples=200, deadline=None)
@given(literals=st.lists(st.text("<>ab|", min_size=1, max_size=4), min_size=1, max_size=6),
       text=st.text("<>ab|c", max_size=30))
def test_added_tokens_found_where_their_first_two_characters_are_the_regexs_matches(literals, text):
    """Few kinds of first two characters: matches are looked for where those are, by length; the
    same leftmost-longest matches as the alternation of the literals, longest first."""
    from bpebench.algorithms.pipeline.added_tokens import LiteralSearch

    search = LiteralSearch(literals)
    assert search.starts is not None
    expected = [(m.start(), m.end(), m.group()) for m in search.regex.finditer(text)]
    assert list(search.matches(text)) == expected
    assert search.first(text) == (expected[0][2] if expected else None)


@settings(max_examples=200, deadline=None)
@given(text=st.text("<>ab|c ｜x", max_size=30),
       normalizer=st.sampled_from([None, {"type": "Sequence", "normalizers": []}, {"type": "Lowercase"},
                                   {"type": "Sequence", "normalizers": [{"type": "Sequence", "normalizers": []}]}]))
def test_a_text_without_a_literals_first_character_has_nothing_to_carve(text, normalizer):
    """``may_carve`` says no only where the full search finds nothing: normalizing changes nothing (no
    normalizer, an empty Sequence) and no literal's first character is in the text."""
    from bpebench.algorithms.pipeline.added_tokens import AddedToken, AddedVocabulary
    from bpebench.algorithms.pipeline.normalizers import changes_nothing

    built = build_normalizer(normalizer)
    added = AddedVocabulary([AddedToken("<a>", 1, special=True, normalized=False), AddedToken("｜x", 2),
                             AddedToken("B", 3)], built)
    pieces = added.extract_and_normalize(text, carve_special=lambda token: True)
    if not added.may_carve(text):
        assert changes_nothing(built) and [(p.text, p.token) for p in pieces] == ([(text, None)] if text else [])
    assert changes_nothing(built) == (normalizer is None or normalizer["type"] == "Sequence")
    assert added.may_carve(text) or not any(c in text for c in "<｜B")


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["a", "A", "Σ", "ΣΑΣ", "σ", "ς", "İ", " ", "\t", "\n", "\r\n", "\x00", "\x0b", "\x1f",
                                      "\ufffd", "\u200b", "\u00a0", "\u3000", "é", "e\u0301", "\u0323", "京", "中文",
                                      "한", "\U00020000", "ǅ", "ẞ", "x"]), max_size=25).map("".join))
@pytest.mark.parametrize("spec", [NORMALIZERS[4], NORMALIZERS[14], NORMALIZERS[15],
                                  dict(NORMALIZERS[14], handle_chinese_chars=False, strip_accents=False),
                                  NORMALIZERS[10], NORMALIZERS[12],
                                  {"type": "Replace", "pattern": {"Regex": r"\s+|Σ"}, "content": "\\1 \\g<0>"}],
                         ids=lambda s: json.dumps(s)[:60])
def test_text_only_normalizers_equal_the_offset_keeping_ones_and_hf(spec, text):
    """Without offsets Lowercase and BertNormalizer run a translation or substitution per step (ASCII
    text one translation), Replace by a regex that cannot match the empty string one ``sub`` (its
    content literal, backslashes too); with offsets, a test per character or a span per match: both
    are HF's."""
    from bpebench.algorithms.pipeline.text_pieces import Piece

    ours = build_normalizer(spec)
    fast = ours.normalize(Piece(text)).text
    assert fast == ours.normalize(Piece(text, 0, list(range(len(text))))).text
    assert fast == _hf_with(normalizer=spec).normalizer.normalize_str(text)


def test_the_digits_and_punctuation_classes_are_kept_under_the_cache_root(tmp_path, monkeypatch):
    """``char_class`` tests every code point once (0.4 s) and keeps the class under the cache root; a
    later process reads it back (the same class as made from scratch), and a damaged file is made
    again rather than read."""
    import regex

    from bpebench.algorithms.pipeline import hf_unicode

    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    hf_unicode.char_class.cache_clear()
    try:
        made = hf_unicode.char_class("numeric")
        assert made == hf_unicode._char_class("numeric")
        (kept,) = (tmp_path / "patterns").glob("char_class_*.txt")
        hf_unicode.char_class.cache_clear()
        assert hf_unicode.char_class("numeric") == made
        kept.write_bytes(kept.read_bytes()[:-5] + b"0-9]]")  # same length, wrong bytes: the checksum fails
        hf_unicode.char_class.cache_clear()
        assert hf_unicode.char_class("numeric") == made
        assert regex.fullmatch(made, "\u0663") and not regex.fullmatch(made, "a")
    finally:
        hf_unicode.char_class.cache_clear()


@pytest.mark.parametrize("unk", ["<unk>", "ident", "▁group", "<my-unk>"])
def test_the_unknown_tokens_id_is_hfs(tmp_path, unk):
    """The model's ``unk_token`` at id 0, at ids past the first few hundred, and as an added token only:
    the id HF's ``token_to_id`` gives (the first ids are looked at before every token's string)."""
    from bpebench import Tokenizer

    spec = json.loads((Path(__file__).parent / "golden" / "pipelines" / "hf_metaspace_unk.json").read_text("utf-8"))
    spec["model"]["unk_token"] = unk
    if unk not in spec["model"]["vocab"]:
        spec["added_tokens"] = [*(spec.get("added_tokens") or []),
                                {"id": len(spec["model"]["vocab"]), "content": unk, "single_word": False,
                                 "lstrip": False, "rstrip": False, "normalized": False, "special": True}]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    expected = tokenizers.Tokenizer.from_file(str(path)).token_to_id(unk)
    assert expected is not None and (unk != "ident" or expected > 256)
    assert Tokenizer(str(path))._hf.model.unk_id == expected


@pytest.mark.parametrize("model", ["tests/golden/spm_bpe.model", "tests/golden/pipelines/spm_no_fallback.model",
                                   "tests/golden/pipelines/spm_rules_fallback.model", "mistral_v1"])
def test_a_sentencepiece_models_unknown_id_is_sentencepieces(model):
    """SentencePiece leaves ``<unk>`` out of what BPE can give (a control id), so its id is found past
    the model's own map; the oracle is the library's ``unk_id``."""
    spm = pytest.importorskip("sentencepiece")
    from bpebench import Tokenizer, load_vocabulary

    repo = Path(__file__).resolve().parents[1]
    path = load_vocabulary(model).source if not model.startswith("tests/") else str(repo / model)
    expected = spm.SentencePieceProcessor(model_file=path).unk_id()
    tokenizer = Tokenizer(path)
    if tokenizer._hf is None:
        pytest.fail(f"{model}: no component pipeline")
    assert tokenizer._hf.model.unk_id == expected
