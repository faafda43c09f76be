"""Hostile vocabulary files found by ``benchmarks/fuzz_formats.py`` (issue 25): each ends in one line
on stderr and exit 2, never a traceback, an "internal error", a hang or a crash; plus a fast sample
of the fuzz script itself, whose oracle is each file's own library."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bpebench.cli import main

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "golden"))
from golden_fixtures import HF_FIXTURE, SPM_FIXTURE, hf_json  # noqa: E402

ROOT = HERE.parent


def one_line_error(capsys, *argv: str) -> str:
    code = main(list(argv))
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("bpebench: error: "), err
    assert "internal error" not in lines[0] and "Traceback" not in err
    return lines[0]


def _ranks() -> bytes:
    return b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))


def test_a_split_pattern_nested_thousands_deep_is_refused(tmp_path, capsys):
    data = hf_json()
    data["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(" * 3000 + "a" + ")" * 3000},
                             "behavior": "Isolated", "invert": False}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    assert "nested too deeply" in one_line_error(capsys, "vocab", str(path))


def test_a_pattern_option_nested_thousands_deep_is_refused(capsys):
    line = one_line_error(capsys, "encode", "--vocab", str(HF_FIXTURE), "--pattern", "(" * 3000 + ")" * 3000, "hi")
    assert "nested too deeply" in line


def test_json_nested_past_the_parser_recursion_is_refused(tmp_path, capsys):
    text = HF_FIXTURE.read_text()
    path = tmp_path / "tokenizer.json"
    path.write_text(text.replace('"normalizer": null', '"normalizer": ' + "[" * 100000 + "]" * 100000, 1))
    assert path.read_text() != text
    assert str(path) in one_line_error(capsys, "vocab", str(path))


def test_a_giant_token_is_refused_instead_of_stalling_the_load(tmp_path, capsys):
    """Deriving how BPE forms a token is quadratic in its length: 4 MB of one token took hours."""
    path = tmp_path / "giant.tiktoken"
    path.write_bytes(_ranks() + base64.b64encode(b"g" * 4_000_000) + b" 256\n")
    line = one_line_error(capsys, "vocab", str(path))
    assert "token id 256 is 4,000,000 bytes long" in line


def test_out_of_memory_is_a_user_error(monkeypatch, capsys):
    import bpebench.cli as cli

    def exhausted(args):
        raise MemoryError()

    monkeypatch.setattr(cli, "cmd_vocab", exhausted)
    assert "out of memory" in one_line_error(capsys, "vocab", str(SPM_FIXTURE))


def test_fuzz_script_fast_sample(tmp_path):
    """A few seeded cases of every format through the real command line: no bug outcome, and the
    unmutated seeds match their libraries (so the oracle is live)."""
    out = tmp_path / "cases.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fuzz_formats.py"), "--cases", "8",
                           "--formats", "tiktoken,gguf", "--seed", "7", "--timeout", "120", "--json", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cases = json.loads(out.read_text())
    assert len(cases) == 8
    seeds = [c for c in cases if c["mutation"] == "none"]
    assert len(seeds) == 4 and all(c["outcome"] == "matched" for c in seeds), seeds
    assert {c["outcome"] for c in cases} <= {"matched", "refused", "loaded, no oracle (GGUF metadata changed)",
                                            "loaded, no oracle (library refuses)"}


def test_a_sentencepiece_score_of_nan_is_refused(tmp_path, capsys):
    """NaN orders no merge: sentencepiece's ids then depend on its heap's layout ("hello world" with
    'wo' scored NaN gave other ids than bpebench's, silently)."""
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(SPM_FIXTURE.read_bytes())
    index = next(i for i, p in enumerate(model.pieces) if p.piece == "wo")
    model.pieces[index].score = float("nan")
    path = tmp_path / "nan.model"
    path.write_bytes(model.SerializeToString())
    assert f"piece {index} 'wo' has score NaN" in one_line_error(capsys, "vocab", str(path))


@pytest.mark.parametrize("edit", ["huge id", "renamed in the vocabulary"])
def test_added_token_ids_that_tokenizers_would_reassign_are_refused(tmp_path, capsys, edit):
    """tokenizers ignores an added token's written id: it takes the id of the same text in
    ``model.vocab``, else the next free one. Following the file gave ids the library never gives."""
    from tokenizers import Tokenizer

    data = hf_json()
    first = data["added_tokens"][0]
    if edit == "huge id":
        first["id"] = 1_000_000
    else:
        del data["model"]["vocab"][first["content"]]
        data["model"]["vocab"]["<renamed>"] = first["id"]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    library_id = Tokenizer.from_file(str(path)).token_to_id(first["content"])
    assert library_id != first["id"]  # the library's own reading differs from the written id
    line = one_line_error(capsys, "vocab", str(path))
    assert f"says id {first['id']}, but tokenizers gives it id {library_id}" in line


def _library_and_ours(path: Path, texts: list[str]) -> tuple[list, list]:
    from tokenizers import Tokenizer as HfTokenizer

    from bpebench.algorithms.formats import load_path
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    hf = HfTokenizer.from_file(str(path))
    ours = Tokenizer(load_path(path))
    return ([hf.encode(t, add_special_tokens=False).ids for t in texts],
            [ours.encode(t, allowed_special="all") for t in texts])


def test_characters_tokenizers_drops_let_their_neighbours_merge(tmp_path):
    """No unk_token, no byte fallback: tokenizers removes an unknown character from the word, so
    'llo' and 'w' of "hello world" meet (a byte-level vocabulary whose pre-tokenizer is not
    ByteLevel sees the raw space, which it lacks). bpebench encoded the two sides apart."""
    data = hf_json()
    data["pre_tokenizer"] = None
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    texts = ["hello world", "héllo wörld 12", "a  b\tc"]
    library, ours = _library_and_ours(path, texts)
    assert library[0] == [262, 915, 267, 2176]  # hand-checked: he llow or ld, the space dropped
    assert ours == library


def test_a_gguf_array_of_the_wrong_type_is_one_line(tmp_path, capsys):
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "x.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(["<unk>", "a", "b"])
    writer.add_token_scores([0.0, 0.0, 0.0])
    writer.add_float32("tokenizer.ggml.token_type", 1.5)  # an array of types in a sound file
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert "tokenizer.ggml.token_type is float" in one_line_error(capsys, "vocab", str(path))


def test_a_sentencepiece_piece_with_nul_is_refused(tmp_path, capsys):
    """sentencepiece loads a lone NUL piece but never matches it (it emits the byte fallback)."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(SPM_FIXTURE.read_bytes())
    model.pieces[488].piece = "\0"
    path = tmp_path / "nul.model"
    path.write_bytes(model.SerializeToString())
    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert 488 not in sp.encode("x\0y")  # the library's own reading
    assert "piece 488 '\\x00' contains a NUL" in one_line_error(capsys, "vocab", str(path))
