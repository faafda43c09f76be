"""Whole pipelines against their own libraries: the fixtures of ``tests/golden/pipelines/``
(trained offline by ``make_pipeline_golden.py``) encode the hard-string set to exactly the
ids HF ``tokenizers`` / ``sentencepiece`` gave, through the default encoder and through
``naive`` (the reference BPE, sharing no code with the fast encoders); decoding equals the
library's ``decode``. Also issue 25's two Split patterns and the loaders' refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bpebench.errors import VocabularyError
from bpebench.algorithms.formats import load_path
from bpebench.algorithms.formats.hf_json import load_hf_tokenizer_json
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

GOLDEN_DIR = Path(__file__).parent / "golden"
PIPELINES = GOLDEN_DIR / "pipelines"
sys.path.insert(0, str(GOLDEN_DIR))
from golden_fixtures import ISSUE25_PATTERNS, hf_json, issue25_fixture, spm_proto, tiny_spm_pieces  # noqa: E402

GOLDEN = json.loads((PIPELINES / "golden_pipelines.json").read_text(encoding="utf-8"))
TEXTS = GOLDEN["texts"]
FIXTURES = sorted(GOLDEN["fixtures"])


def _path(name: str, tmp_path_factory) -> Path:
    stem = name.rsplit(".", 1)[0]
    if stem in ISSUE25_PATTERNS:
        return issue25_fixture(tmp_path_factory.mktemp("issue25"), stem)
    return PIPELINES / name


@pytest.mark.parametrize("algorithm", [None, "naive"])
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_ids_equal_the_library(name, algorithm, tmp_path_factory):
    expected = GOLDEN["fixtures"][name]
    tok = Tokenizer(load_path(_path(name, tmp_path_factory)), algorithm=algorithm)
    for text, ids in zip(TEXTS, expected["ordinary"]):
        assert tok.encode_ordinary(text) == ids, text
    if "all_special" in expected:  # HF: every added token carved (encode_special_tokens=False)
        for text, ids in zip(TEXTS, expected["all_special"]):
            assert tok.encode(text, allowed_special="all") == ids, text
    else:  # sentencepiece never parses control pieces out of text
        for text, ids in zip(TEXTS, expected["ordinary"]):
            assert tok.encode(text, allowed_special="all") == ids, text


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_decoding_equals_the_library(name, tmp_path_factory):
    expected = GOLDEN["fixtures"][name]
    tok = Tokenizer(load_path(_path(name, tmp_path_factory)))
    for ids, text in zip(expected.get("all_special", expected["ordinary"]), expected["decoded"]):
        assert tok.decode(ids) == text


def test_issue25_split_with_groups_keeps_whole_matches(tmp_path):
    # regex.findall returned the groups ("s", "", "", ...) and gave 3 ids; HF gives 16
    tok = Tokenizer(load_path(issue25_fixture(tmp_path, "hf_issue25_groups")))
    text = "It's the model's 2nd test, isn't it?"
    ids = tok.encode_ordinary(text)
    assert len(ids) == 16
    assert ids == GOLDEN["fixtures"]["hf_issue25_groups.json"]["ordinary"][TEXTS.index(text)]


def test_issue25_empty_matches_keep_the_text(tmp_path):
    # findall of "x*" returned only empty strings: "hello world" encoded to nothing
    tok = Tokenizer(load_path(issue25_fixture(tmp_path, "hf_issue25_empty")))
    ids = tok.encode_ordinary("hello world")
    assert ids == GOLDEN["fixtures"]["hf_issue25_empty.json"]["ordinary"][TEXTS.index("hello world")]
    assert tok.decode(ids) == "hello world"


def test_plain_byte_level_files_stay_on_the_fused_path():
    tok = Tokenizer(load_path(PIPELINES / "hf_llama3_ignore_merges.json"))
    assert tok.vocabulary.pattern == "llama3" and tok.fused
    # NFKC and Lowercase keep the component pipeline; its Digits and Split steps are the fused stage
    vocab = load_path(PIPELINES / "hf_nfkc_lower_groups.json")
    tok = Tokenizer(vocab)
    assert vocab.normalizer == "pipeline" and tok._hf is not None and tok._hf.fused is not None and tok.fused
    assert not Tokenizer(vocab, algorithm="heap").fused


def test_spm_dummy_prefix_is_added_once_around_user_defined_pieces():
    tok = Tokenizer(load_path(PIPELINES / "spm_nmt_nfkc_user.model"))
    ids = tok.encode("<mask>hello<mask>", allowed_special="all")
    pieces = [tok.vocabulary.tokens[i].decode() for i in ids]
    assert pieces[0] == "\u2581" and pieces[1:] == ["<mask>", "hello", "<mask>"]


# ----------------------------------------------------------------------------- refusals
def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, message", [
    (lambda d: d["model"].update(dropout=0.1), "dropout=0.1 makes encoding random"),
    (lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "!!"}), "not base64"),
    (lambda d: d.update(decoder={"type": "CTC"}), "decoder 'CTC' is not supported"),
    (lambda d: d["model"]["vocab"].update({"Ġfar": 10**9}), "absurdly sparse"),
])
def test_unsupported_tokenizer_json_is_one_line(tmp_path, change, message):
    data = hf_json()
    change(data)
    with pytest.raises(VocabularyError, match=message) as info:
        Tokenizer(load_hf_tokenizer_json(_write(tmp_path, data)))
    assert "\n" not in str(info.value)


def test_unknown_token_missing_from_the_vocabulary_is_refused(tmp_path):
    # HF only fails once a character needs it; bpebench says so when the Tokenizer is built
    data = json.loads((PIPELINES / "hf_metaspace_unk.json").read_text(encoding="utf-8"))
    data["model"]["unk_token"] = "<nope>"
    with pytest.raises(VocabularyError, match="unk_token '<nope>' is not in the vocabulary"):
        Tokenizer(load_hf_tokenizer_json(_write(tmp_path, data)))


def test_merges_over_byte_fallback_tokens_are_refused(tmp_path):
    data = json.loads((PIPELINES / "hf_llama2_bytefallback.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab["<0x41><0x42>"] = max(vocab.values()) + 1
    data["model"]["merges"].append(["<0x41>", "<0x42>"])
    with pytest.raises(VocabularyError, match="joins a byte-fallback or unknown token"):
        load_hf_tokenizer_json(_write(tmp_path, data))


def test_spm_piece_with_a_character_that_is_no_piece_is_refused(tmp_path):
    pieces = [p for p in tiny_spm_pieces() if p[0] != "b"]  # "ab", "▁ab" keep a "b" that is no piece
    path = tmp_path / "bad.model"
    path.write_bytes(spm_proto(pieces))
    with pytest.raises(VocabularyError, match="contains 'b', which is not a piece"):
        load_path(path)


# ----------------------------------------------------------------------------- real files from wheels
def _mistral_models() -> list[Path]:
    from bpebench.benchmarks.quick_file_parity import default_files

    return default_files()


@pytest.mark.parametrize("path", _mistral_models(), ids=lambda p: p.name)
def test_every_sentencepiece_model_mistral_common_ships_equals_sentencepiece(path):
    spm = pytest.importorskip("sentencepiece")
    import bpebench.corpora as corpora

    sp = spm.SentencePieceProcessor(model_file=str(path))
    tok = Tokenizer(load_path(path))
    lines = [line for line in corpora.get("udhr-all").splitlines()[:150] if line]
    for text in TEXTS + lines:
        assert tok.encode(text, allowed_special="all") == sp.encode(text), text


# ----------------------------------------------------------------------------- command line
def test_cli_encodes_and_describes_a_component_pipeline(capsys):
    from bpebench.cli import main

    path = PIPELINES / "hf_metaspace_first.json"
    text = "  <s>  hello</s>world <s>"
    assert main(["encode", "--vocab", str(path), "--allowed-special", "all", text]) == 0
    out = capsys.readouterr().out.split()
    assert [int(i) for i in out] == GOLDEN["fixtures"][path.name]["all_special"][TEXTS.index(text)]
    assert main(["vocab", str(path)]) == 0
    out = capsys.readouterr().out
    assert "pre_tokenizer: Metaspace(prepend_scheme='first', replacement='▁', split=False)" in out
    assert "byte_fallback=True" in out and "1 special,lstrip" in out


def test_cli_refuses_an_unsupported_component_in_one_line(tmp_path, capsys):
    from bpebench.cli import main

    data = hf_json()
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Nmt"}]}
    code = main(["encode", "--vocab", str(_write(tmp_path, data)), "x"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "normalizer 'Nmt' is not supported" in err
