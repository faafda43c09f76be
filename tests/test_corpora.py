"""Corpora: determinism, the disk cache, user corpora, and each generator's documented property.

Exactness checks use the ``naive`` reference on short inputs (a few hundred bytes).
"""

from __future__ import annotations

import unicodedata

import pytest
import regex

from bpebench import corpora
from bpebench.algorithms.kernels.compiled import compile_vocabulary, is_compatible
from bpebench.errors import BpebenchError, UnknownNameError
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.reference import bpe_reference
from bpebench.algorithms.formats.patterns import PATTERNS
from bpebench.algorithms.pipeline.pretokenize import RegexPretokenizer
from bpebench.corpora.search import backtracking_trace, off_boundary_share, steps_per_byte

VOCAB = "o200k_base"


@pytest.fixture(scope="module")
def o200k():
    return load_vocabulary(VOCAB)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    corpora.clear_memory_cache()
    yield tmp_path / "corpora"
    corpora.clear_memory_cache()


def _is_char_start(data: bytes, pos: int) -> bool:
    return pos >= len(data) or (data[pos] & 0xC0) != 0x80


# ----------------------------------------------------------------------------- registry and cache
def test_every_corpus_has_a_description_and_adversarial_ones_say_why():
    described = corpora.describe()
    assert set(described) == set(corpora.names())
    assert len(corpora.names("adversarial")) >= 10
    for name in corpora.names():
        assert described[name].strip() and "\n" not in described[name]
        if corpora.corpus(name).category == "adversarial":
            assert corpora.corpus(name).why_hard


@pytest.mark.parametrize("name", ["digits", "whitespace", "combining-marks", "emoji-zwj", "invalid-utf8"])
def test_generators_are_deterministic_and_seeded(name, fresh_cache):
    first = corpora.get(name, size=500, seed=7)
    corpora.clear_memory_cache()
    for path in fresh_cache.iterdir():  # rebuild from scratch, not from the cache
        path.unlink()
    assert corpora.get(name, size=500, seed=7) == first
    assert corpora.get(name, size=500, seed=8) != first


def test_cache_file_is_written_and_read_back(fresh_cache, monkeypatch):
    from bpebench.algorithms.cache.files import read_checked

    value = corpora.get("letters-nospace", size=64, seed=1)
    files = [path for path in fresh_cache.iterdir() if path.suffix != ".verified"]
    assert len(files) == 1 and read_checked(files[0]) == value.encode()
    # a later process reads the file instead of rebuilding: make building impossible to see that
    import dataclasses

    from bpebench.corpora import registry

    spec = corpora.corpus("letters-nospace")
    unbuildable = dataclasses.replace(spec, build=lambda **_: pytest.fail("rebuilt although the cache was sound"))
    with monkeypatch.context() as patched:
        patched.setitem(registry._REGISTRY, "letters-nospace", unbuildable)
        corpora.clear_memory_cache()
        assert corpora.get("letters-nospace", size=64, seed=1) == value
    # other parameters are another file
    corpora.get("letters-nospace", size=65, seed=1)
    assert len(list(fresh_cache.iterdir())) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_damaged_cache_file_is_never_used(fresh_cache, capsys, damage):
    value = corpora.get("prose-en", size=5_000)
    (path,) = fresh_cache.iterdir()
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 4])  # the report's prose corpus once became 1 kB this way
    elif damage == "flip":
        path.write_bytes(raw[:-10] + bytes([raw[-10] ^ 1]) + raw[-9:])
    else:
        path.write_bytes(b"not a cache file at all")
    corpora.clear_memory_cache()
    assert corpora.get("prose-en", size=5_000) == value
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "discarded a damaged cache file" in err[0]


def test_size_is_respected_and_text_is_cut_at_character_boundaries():
    for name in ("udhr-ja", "combining-marks", "emoji-zwj", "prose-en"):
        text = corpora.get(name, size=101)
        assert isinstance(text, str)
        assert 90 <= len(text.encode()) <= 101
    assert len(corpora.get_bytes("digits", size=101)) == 101
    assert len(corpora.get_bytes("random-tokens", size=1000)) == 1000


def test_unknown_names_and_parameters_are_one_line_errors():
    with pytest.raises(UnknownNameError, match="unknown corpus 'nope'; known: "):
        corpora.get("nope")
    with pytest.raises(BpebenchError, match="no parameter 'colour'"):
        corpora.get("digits", colour=3)
    with pytest.raises(BpebenchError, match="size must be"):
        corpora.get("digits", size=-1)


def test_cli_lists_shows_and_fails_with_exit_2(capsys, fresh_cache):
    from bpebench.cli import main

    assert main(["corpora", "udhr-ru", "--head", "20"]) == 0
    assert capsys.readouterr().out.strip() == corpora.get("udhr-ru")[:20]
    assert main(["corpora", "no-such-corpus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown corpus 'no-such-corpus'" in err


def test_user_corpora_from_file_and_directory(tmp_path):
    (tmp_path / "b.txt").write_bytes(b"second")
    (tmp_path / "a.txt").write_bytes(b"first")
    assert corpora.get(tmp_path / "a.txt") == b"first"
    assert corpora.get(str(tmp_path)) == b"first\nsecond"  # sorted by path
    assert corpora.get(str(tmp_path), size=3) == b"fir"
    with pytest.raises(UnknownNameError):
        corpora.get(str(tmp_path / "missing.txt"))


# ----------------------------------------------------------------------------- natural text and code
SCRIPTS = {
    "udhr-zh": "CJK UNIFIED", "udhr-ja": "HIRAGANA", "udhr-ko": "HANGUL", "udhr-ar": "ARABIC",
    "udhr-he": "HEBREW", "udhr-ru": "CYRILLIC", "udhr-hi": "DEVANAGARI", "udhr-th": "THAI", "udhr-en": "LATIN",
}


@pytest.mark.parametrize("name,script", sorted(SCRIPTS.items()))
def test_natural_text_is_in_its_language_script(name, script):
    text = corpora.get(name)
    letters = [c for c in text if c.isalpha()]
    assert len(text.encode()) > 1000
    share = sum(script in unicodedata.name(c, "") for c in letters) / len(letters)
    assert share > 0.3, f"{name}: only {share:.0%} of letters are {script}"


def test_english_prose_and_code():
    prose = corpora.get("prose-en", size=50_000)
    assert len(prose.encode()) > 49_000 and prose.count(" the ") > 200
    assert sum(c.isascii() for c in prose) > 0.99 * len(prose)
    code = corpora.get("code-python", size=100_000)
    assert code.startswith("# file: ") and "\ndef " in code and "\nclass " in code
    mixed = corpora.get("udhr-all", size=200_000)
    scripts = {unicodedata.name(c, "?").split()[0] for c in mixed if c.isalpha()}
    assert len(scripts) >= 20


# ----------------------------------------------------------------------------- random tokens
def test_random_tokens_are_valid_utf8_vocabulary_tokens(o200k):
    text = corpora.get("random-tokens", size=3000, seed=5)
    data = text.encode()
    assert len(data) == 3000
    # the text is a concatenation of vocabulary tokens: naive BPE needs no more tokens than were drawn,
    # and random tokens average several bytes, unlike natural-language bytes per char
    assert len(bpe_reference(o200k, data[:600])) < 600 / 2


# ----------------------------------------------------------------------------- adversarial properties
ONE_PIECE = ["run-char", "letters-nospace", "unsplittable"]


@pytest.mark.parametrize("name", ONE_PIECE)
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_unsplittable_inputs_are_one_piece_under_every_pattern(name, pattern):
    text = corpora.get(name, size=5000)
    assert RegexPretokenizer(pattern).split(text) == [text]


def test_unsplittable_is_built_from_vocabulary_tokens(o200k):
    text = corpora.get("unsplittable", size=5000)
    assert regex.fullmatch(r"[a-z]+", text)
    # pieces of at least 2 bytes exist, i.e. it is not letters alone
    assert len(bpe_reference(o200k, text[:400].encode())) < 200


def test_run_token_needs_merges_across_copies(o200k):
    text = corpora.get("run-token", size=10_000)
    token = corpora.adversarial.self_incompatible_token(o200k)
    unit = o200k.tokens[token].decode()
    assert text.startswith(unit * 3)
    assert not is_compatible(compile_vocabulary(o200k), token, token)
    copies = unit * 6
    assert bpe_reference(o200k, copies.encode()) != [token] * 6


def test_run_pair_is_valid_one_way_only(o200k):
    a, b = corpora.adversarial.one_way_pair(o200k)
    tables = compile_vocabulary(o200k)
    assert is_compatible(tables, a, b) and not is_compatible(tables, b, a)
    assert bpe_reference(o200k, o200k.tokens[a] + o200k.tokens[b]) == [a, b]
    unit = (o200k.tokens[a] + o200k.tokens[b]).decode()
    assert corpora.get("run-pair", size=10_000).startswith(unit * 2)
    assert bpe_reference(o200k, (unit * 4).encode()) != [a, b] * 4


def test_digits_and_whitespace():
    digits = corpora.get("digits", size=3000)
    assert digits.isdigit() and digits.isascii()
    assert max(map(len, RegexPretokenizer("cl100k").split(digits))) == 3
    spaces = corpora.get("whitespace", size=3000)
    assert spaces.isspace() and not spaces.isascii() and "\t" in spaces and "\r\n" in spaces


def test_combining_mark_towers():
    text = corpora.get("combining-marks", size=3000, height=12)
    marks = sum(unicodedata.combining(c) > 0 for c in text)
    assert marks > 0.7 * len(text)
    for prev, c in zip(text, text[1:]):
        assert not (prev.isalpha() and c.isalpha()), "every letter carries at least one mark"


def test_emoji_zwj_tokens_end_inside_characters(o200k):
    text = corpora.get("emoji-zwj", size=3000)
    assert "\u200d" in text and all(ord(c) > 0x2000 for c in text)
    data = text[:80].encode()
    ids = bpe_reference(o200k, data)
    assert off_boundary_share(data, ids, o200k.tokens) > 0.1


def test_invalid_utf8_contains_every_kind():
    data = corpora.get("invalid-utf8", size=4000)
    assert isinstance(data, bytes) and len(data) == 4000
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    for marker in (b"\xc0\xaf", b"\xed\xa0", b"\xff", b"\xf0\x9f\x98"):
        assert marker in data


# ----------------------------------------------------------------------------- searched inputs
@pytest.mark.parametrize("name", ["random-tokens", "backtracking-worst", "chunking-trap", "emoji-zwj",
                                  "invalid-utf8", "run-pair"])
def test_backtracking_instrument_is_exact(o200k, name):
    data = corpora.get_bytes(name, size=500)
    assert backtracking_trace(o200k, data)[0] == bpe_reference(o200k, data)


def test_backtracking_worst_is_much_worse_than_random_tokens(o200k):
    worst = steps_per_byte(o200k, corpora.get_bytes("backtracking-worst", size=4000))
    typical = steps_per_byte(o200k, corpora.get_bytes("random-tokens", size=4000))
    prose = steps_per_byte(o200k, corpora.get_bytes("prose-en", size=4000))
    assert worst > 10 * max(typical, prose)


def test_chunking_trap_has_tokens_off_character_boundaries(o200k):
    data = corpora.get_bytes("chunking-trap", size=300)
    ids = bpe_reference(o200k, data)
    assert off_boundary_share(data, ids, o200k.tokens) > 0.9
    starts, floating = 0, 0
    for t in ids:
        end = starts + len(o200k.tokens[t])
        floating += not _is_char_start(data, starts) and not _is_char_start(data, end)
        starts = end
    assert floating >= len(ids) // 2
    # seed 001's naive chunker: take the first 20 tokens, drop tokens until a character boundary
    kept = 20
    while kept and not _is_char_start(data, sum(len(o200k.tokens[t]) for t in ids[:kept])):
        kept -= 1
    assert kept <= 1


@pytest.mark.parametrize("name", ["prose-docstrings", "code-c", "faker-multilingual"])
def test_document_streams_are_text_cut_into_documents(name):
    from bpebench.corpora.documents import documents

    text = corpora.get(name, size=60_000)
    assert isinstance(text, str) and 50_000 <= len(text.encode("utf-8")) <= 60_000
    docs = documents(text, 8_000)
    assert "".join(docs) == text and len(docs) >= 2
    assert all(len(d.encode("utf-8")) >= 8_000 for d in docs[:-1])
    if name == "faker-multilingual":
        scripts = {"Cyrillic": "\u0400-\u04ff", "Greek": "\u0370-\u03ff", "Arabic": "\u0600-\u06ff",
                   "Thai": "\u0e00-\u0e7f", "Han": "\u4e00-\u9fff"}
        full = corpora.get(name)
        for script, span in scripts.items():
            assert regex.search(f"[{span}]", full), script
