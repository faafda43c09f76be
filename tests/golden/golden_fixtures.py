"""Writers for test fixtures that are cheaper to build than to commit.

* ``spm_proto``: a SentencePiece ModelProto written field by field (independent of
  the reader in ``bpebench.algorithms.formats.sentencepiece_model``), for small or defective models;
* ``issue25_fixture``: ``bytelevel_bpe.json`` with another Split pattern (issue 25);
* ``gguf_from_hf_fixture`` / ``gguf_from_spm_fixture``: GGUF files (``gguf.GGUFWriter``)
  holding the tokenizer of ``bytelevel_bpe.json`` / ``spm_bpe.model``, as llama.cpp's
  converters write them.

Used by ``tests/test_loaders.py`` and ``tests/test_tokenizer.py`` (import with
``sys.path`` pointing here).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
HF_FIXTURE = HERE / "bytelevel_bpe.json"
SPM_FIXTURE = HERE / "spm_bpe.model"

# SentencePiece / GGUF piece types
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def hf_json() -> dict:
    return json.loads(HF_FIXTURE.read_text(encoding="utf-8"))


#: issue 25: ``bytelevel_bpe.json`` with a Split pattern that has groups / that matches empty strings
ISSUE25_PATTERNS = {
    "hf_issue25_groups": r"'(s|t|re|ve|m|ll|d)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "hf_issue25_empty": "x*",
}


def issue25_fixture(directory: Path, name: str) -> Path:
    """Write ``name`` (a key of ``ISSUE25_PATTERNS``) into ``directory``; the golden ids of
    ``pipelines/golden_pipelines.json`` are HF's for exactly this file."""
    data = hf_json()
    data["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": ISSUE25_PATTERNS[name]}
    path = Path(directory) / f"{name}.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- SentencePiece protobuf
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | bytes | float) -> bytes:
    if isinstance(value, float):
        return _varint(number << 3 | 5) + struct.pack("<f", value)
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def spm_proto(pieces: list[tuple[str, float, int]], *, model_type: int = 2, byte_fallback: bool = True,
              normalizer: str = "identity", add_dummy_prefix: bool = True, suffix_whitespace: bool = False) -> bytes:
    """A ModelProto written by hand (independent of the reader under test)."""
    out = b"".join(
        _field(1, _field(1, text.encode()) + _field(2, float(score)) + _field(3, kind))
        for text, score, kind in pieces
    )
    out += _field(2, _field(3, model_type) + _field(35, int(byte_fallback)) + _field(24, int(suffix_whitespace)))
    out += _field(3, _field(1, normalizer.encode()) + _field(3, int(add_dummy_prefix)) + _field(4, 0))
    return out


def tiny_spm_pieces() -> list[tuple[str, float, int]]:
    pieces = [("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL)]
    pieces += [(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
    pieces += [("▁a", -1.0, NORMAL), ("ab", -2.0, NORMAL), ("▁ab", -3.0, NORMAL), ("東京", -4.0, NORMAL)]
    pieces += [(c, -10.0 - i, NORMAL) for i, c in enumerate("▁ab東京😀")]
    return pieces



# ----------------------------------------------------------------------------- GGUF
def write_gguf(path: Path, *, model: str, tokens: list[str], types: list[int], scores=None, merges=None,
               pre: str | None = None) -> Path:
    import gguf
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model(model)
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    if scores is not None:
        writer.add_token_scores(scores)
    if merges is not None:
        writer.add_token_merges(merges)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def gguf_from_hf_fixture(path: Path, pre: str = "llama-bpe") -> Path:
    data = hf_json()
    by_id = {i: t for t, i in data["model"]["vocab"].items()}
    specials = {t["id"] for t in data["added_tokens"]}
    tokens = [by_id[i] for i in range(len(by_id))]
    types = [CONTROL if i in specials else NORMAL for i in range(len(tokens))]
    merges = [" ".join(m) for m in data["model"]["merges"]]
    return write_gguf(path, model="gpt2", tokens=tokens, types=types, merges=merges, pre=pre)


def gguf_from_spm_fixture(path: Path) -> Path:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(SPM_FIXTURE))
    ids = range(sp.get_piece_size())
    kinds = [CONTROL if sp.is_control(i) else UNKNOWN if sp.is_unknown(i) else BYTE if sp.is_byte(i)
             else NORMAL for i in ids]
    return write_gguf(path, model="llama", tokens=[sp.id_to_piece(i) for i in ids], types=kinds,
                      scores=[sp.get_score(i) for i in ids])
