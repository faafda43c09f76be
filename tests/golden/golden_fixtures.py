"""Writers for test fixtures that are cheaper to build than to commit.

* ``spm_proto``: a SentencePiece ModelProto written field by field (independent of
  the reader in ``bpebench.algorithms.formats.sentencepiece_model``), for small or defective models;
* ``issue25_fixture``: ``bytelevel_bpe.json`` with another Split pattern (issue 25);
* ``gguf_from_hf_fixture`` / ``gguf_from_spm_fixture``: GGUF files (``gguf.GGUFWriter``)
  holding the tokenizer of ``bytelevel_bpe.json`` / ``spm_bpe.model``, as llama.cpp's
  converters write them;
* ``llama_cpp_variant``: the GGUF files whose llama.cpp ids ``llama_cpp_golden.json.gz``
  holds (``make_llama_cpp_golden.py``): ``whole_text_bpe.json`` under every llama.cpp
  pre-tokenizer type, with special tokens of every kind added, and SentencePiece variants.

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
WHOLE_TEXT_FIXTURE = HERE / "whole_text_bpe.json"
LLAMA_CPP_GOLDEN = HERE / "llama_cpp_golden.json.gz"

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
               pre: str | None = None, **keys) -> Path:
    """A GGUF file with only tokenizer metadata; ``keys`` are more ``GGUFWriter.add_<key>(value)`` calls
    (``name``, ``add_space_prefix``, ``bos_token_id``, ``add_bos_token`` ...)."""
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
    for key, value in keys.items():
        getattr(writer, f"add_{key}")(value)
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


# ----------------------------------------------------------------------------- llama.cpp variants
#: tokens appended to the fixtures for llama.cpp's special-token rules: (text, GGUF token type).
#: USER_DEFINED ones are cut even from ordinary text, longest first ("   " before "  "; "x><y"
#: before "<x>" although "<x>" starts first); "<|im_end|>" and "<|fim_prefix|>" are typed NORMAL
#: but llama.cpp retypes them CONTROL by their text; "<|channel|>" is retyped USER_DEFINED.
BPE_EXTRA_TOKENS = [("<mask>", USER_DEFINED), ("   ", USER_DEFINED), ("  ", USER_DEFINED), ("<x>", USER_DEFINED),
                    ("x><y", CONTROL), ("<|im_end|>", NORMAL), ("<|channel|>", CONTROL),
                    ("<|fim_prefix|>", NORMAL), ("[PAD7]", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL),
                    ("<unk>", UNKNOWN)]
#: (a model named Phi-3 must have <unk>, <s>, </s> and <|endoftext|>: llama.cpp sets their attributes)
SPM_EXTRA_TOKENS = [("<mask>", USER_DEFINED), ("<|user|>", CONTROL), ("<|end|>", NORMAL), ("<|endoftext|>", CONTROL)]


#: a byte the whole-text fixture never merges (control byte 0x03); the "missing-byte" variant
#: renames its token, so the vocabulary has no token for it and llama.cpp drops it from its output
MISSING_BYTE_TOKEN = ("\u0103", "<no-byte-03>")


def _whole_text_tokens() -> tuple[list[str], list[int], list[str]]:
    data = json.loads(WHOLE_TEXT_FIXTURE.read_text(encoding="utf-8"))
    by_id = {i: t for t, i in data["model"]["vocab"].items()}
    specials = {t["id"] for t in data["added_tokens"]}
    tokens = [by_id[i] for i in range(len(by_id))]
    types = [CONTROL if i in specials else NORMAL for i in range(len(tokens))]
    clash = {t for t, _ in BPE_EXTRA_TOKENS} & set(tokens)
    if clash:
        raise ValueError(f"trained tokens {sorted(clash)} duplicate added ones; retrain without them")
    tokens += [t for t, _ in BPE_EXTRA_TOKENS]
    types += [k for _, k in BPE_EXTRA_TOKENS]
    return tokens, types, [" ".join(m) for m in data["model"]["merges"]]


def llama_cpp_variants() -> dict[str, dict]:
    """Variant name -> how to build it (``llama_cpp_variant``'s keyword arguments)."""
    from bpebench.algorithms.formats.llama_cpp_pre import PRE_NAMES, PRE_TYPES

    variants: dict[str, dict] = {}
    for name, pre in PRE_NAMES.items():  # one name per pre-tokenizer type (the table's first)
        if PRE_TYPES[pre.type].byte_encode and not any(v.get("type") == pre.type for v in variants.values()):
            variants[f"pre:{name}"] = {"model": "gpt2", "pre": name, "type": pre.type}
    variants["pre:(missing)"] = {"model": "gpt2", "pre": None, "type": "default"}
    variants["rstrip:phi3"] = {"model": "gpt2", "pre": "gpt-2", "keys": {"name": "Phi3"}}
    variants["lstrip:jina-v2-code"] = {"model": "gpt2", "pre": "jina-v2-code"}
    variants["bos-eos:llama-bpe"] = {"model": "gpt2", "pre": "llama-bpe", "keys": {
        "bos_token_id": 0, "eos_token_id": 1, "add_eos_token": True}}
    variants["missing-byte:gpt-2"] = {"model": "gpt2", "pre": "gpt-2", "rename": MISSING_BYTE_TOKEN}
    variants["spm"] = {"model": "llama"}
    variants["spm:no-space-prefix"] = {"model": "llama", "keys": {"add_space_prefix": False}}
    variants["spm:phi3"] = {"model": "llama", "keys": {"name": "Phi3", "add_bos_token": False}}
    return variants


def llama_cpp_variant(path: Path, variant: str) -> Path:
    """Write the GGUF file of one ``llama_cpp_variants()`` entry."""
    spec = llama_cpp_variants()[variant]
    keys = dict(spec.get("keys", {}))
    if spec["model"] == "gpt2":
        tokens, types, merges = _whole_text_tokens()
        if "rename" in spec:
            old, new = spec["rename"]
            if any(old in merge.split(" ") for merge in merges):
                raise ValueError(f"the fixture merges {old!r}; rename another byte")
            tokens[tokens.index(old)] = new
        return write_gguf(path, model="gpt2", tokens=tokens, types=types, merges=merges, pre=spec["pre"], **keys)
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(SPM_FIXTURE))
    ids = range(sp.get_piece_size())
    kinds = [CONTROL if sp.is_control(i) else UNKNOWN if sp.is_unknown(i) else BYTE if sp.is_byte(i)
             else NORMAL for i in ids]
    tokens = [sp.id_to_piece(i) for i in ids] + [t for t, _ in SPM_EXTRA_TOKENS]
    kinds += [k for _, k in SPM_EXTRA_TOKENS]
    scores = [sp.get_score(i) for i in ids] + [0.0] * len(SPM_EXTRA_TOKENS)
    return write_gguf(path, model="llama", tokens=tokens, types=kinds, scores=scores, **keys)
