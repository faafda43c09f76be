"""Regenerate llama.cpp's golden ids for the GGUF fixtures (run once; the outputs are committed).

    pip install llama-cpp-python                          # builds llama.cpp (10+ minutes)
    python tests/golden/make_llama_cpp_golden.py          # fixture + ids
    python tests/golden/make_llama_cpp_golden.py --ids-only

Writes, next to this script:

* ``whole_text_bpe.json``: a byte-level BPE ``tokenizer.json`` trained with HF ``tokenizers``
  on whole lines, with **no** pre-tokenizer regex, so its merges cross every boundary a
  pre-tokenizer could draw (between words, cases, digits, spaces): a split that differs from
  llama.cpp's shows up in the ids. Trained on ``make_golden.py``'s corpus plus seeded random
  lines over the characters below, 4 000 tokens, two special tokens;
* ``llama_cpp_golden.json.gz``: the texts and, for every GGUF variant of
  ``golden_fixtures.llama_cpp_variants()`` (that fixture under each of llama.cpp's
  pre-tokenizer types, with special tokens of every kind; the SentencePiece fixture with
  and without the space prefix, and as "Phi3"), the ids llama.cpp gives through
  ``llama-cpp-python`` (``vocab_only``): ``ordinary`` (``parse_special=False``), ``special``
  (``parse_special=True``) and ``add_special`` (BOS/EOS added, on two texts).

Nothing in bpebench computes the expected ids; the GGUF files are written by the ``gguf``
package (``golden_fixtures.py``), the ids come from llama.cpp itself.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import os
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golden_fixtures import LLAMA_CPP_GOLDEN, WHOLE_TEXT_FIXTURE, llama_cpp_variant, llama_cpp_variants  # noqa: E402
from make_golden import TEXTS as GOLDEN_TEXTS, corpus_lines  # noqa: E402

#: characters and fragments the random texts are made of: every whitespace kind, letters of
#: both cases and several scripts, marks, digits of several kinds, contractions, punctuation,
#: the fixtures' special-token literals
PIECES = [
    *"abcdefXYZ0123456789'sStTdDmMlLrReEvV _-.,!?<>|/\\\"#$%&()*+:;=@[]^`{}~",
    "\r", "\n", "\r\n", "\t", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u2007",
    "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\u200b",
    "\u0301", "\u0308", "\u093f", "\u0e31", "東", "京", "語", "ひ", "カ", "ー", "한", "ㄱ", "ㄅ", "ก", "ក", "က",
    "😀", "\u200d", "👍", "🏽", "🇯", "٣", "４", "²", "Ⅻ", "ſ", "\u212a", "İ", "’", "é", "Ñ", "ß", "ǅ", "ʰ", "µ",
    "Ω", "\u0378", "\ue000", "…", "。", "，", "、", "！", "：", "€", "©", "\x00", "\x7f",
    "Hello", "WORLD", "camelCase", "HTTPServer", "it's", "IT'S", "we'll", "they've", "I'M", "x/y",
    "12", "123", "1234", "1234567", "3.14", "   ", "    ", "\n\n", " \n ",
    "<|endoftext|>", "<|fim_middle|>", "<mask>", "<x>", "x><y", "<|im_end|>", "<|channel|>", "<|fim_prefix|>",
    "[PAD7]", "<|user|>", "<|end|>", "<s>", "</s>", "<unk>", "<sentinel:7>", "IMGIMGABZ",
]

#: hard strings aimed at llama.cpp's rules (plus the golden texts of make_golden.py)
EXTRA_TEXTS = [
    "'ſx it'ſ IT'S we'LL they'Ve I'm don'T",
    "x\x1c\x1dy\x1e\x1fz \x0bv\x0cf",
    "a\x03b \x03\x03 c\x03 \x03",
    "a\u0085b\u00a0c\u1680d\u2000e\u2028f\u2029g\u202fh\u205fi\u3000j\ufeffk",
    "٣٤٥ ４５６ ²³ Ⅻ 12345678901 1.5e10",
    " ".join("123456789012"[:k] for k in range(1, 13)),
    "Hello<mask>world <mask> <mask>  x",
    "a  b   c    d     e      f       g",
    "<x><y> <x>x><y <x>",
    "<|im_end|> <|channel|>x<|fim_prefix|>y [PAD7] <|endoftext|>",
    "  <|endoftext|>  <|im_end|>\n\n<mask>\t",
    "<|user|>\n hi <|end|> \n<mask> ok",
    "<s> hi </s>  <unk>\t<|endoftext|>\n x",
    "IMGIMGABZ <sentinel:12> ok",
    "東京タワー한국어ไทยខ្មែរမြန်မာ 中文和English混合",
    "camelCaseHTTPServer getX(y) x/y\n/z a/\n",
    " \n \r\n\t\n  x\n\n\n  \n",
    "a" * 200 + " " * 64 + "1" * 40 + "!" * 30,
    "\u0378\ue000\ufeff\U000e0001 unassigned, private use, tags",
    "<0x41> ▁▁x ▁ leading visible space",
    "👨\u200d👩\u200d👧\u200d👦 👩🏽\u200d💻 🏳️\u200d🌈",
    "Z\u0351\u036b\u0343\u036aa\u0302\u036b\u033d\u034f\u0334\u0319l\u0324\u031e\u0349go",
]


#: the fixtures' special-token literals (kept out of the training lines, so that no trained
#: token duplicates one: llama.cpp refuses a vocabulary with two tokens of the same text)
LITERALS = {"<|endoftext|>", "<|fim_middle|>", "<mask>", "<x>", "x><y", "<|im_end|>", "<|channel|>",
            "<|fim_prefix|>", "[PAD7]", "<|user|>", "<|end|>", "<s>", "</s>", "<unk>"}


def random_texts(n: int, seed: int, pieces: list[str] = PIECES) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(n)]


def golden_texts() -> list[str]:
    return list(GOLDEN_TEXTS) + EXTRA_TEXTS + random_texts(100, seed=2026)


def train_whole_text_fixture() -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    lines = corpus_lines() + random_texts(20000, seed=11, pieces=[p for p in PIECES if p not in LITERALS])
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4000, min_frequency=2, special_tokens=["<|endoftext|>", "<|fim_middle|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer)
    tokenizer.save(str(WHOLE_TEXT_FIXTURE))


def golden_ids(texts: list[str]) -> dict:
    import llama_cpp

    variants = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in llama_cpp_variants():
            path = llama_cpp_variant(Path(tmp) / "variant.gguf", name)
            llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            variants[name] = {
                "ordinary": [llm.tokenize(t.encode("utf-8"), add_bos=False, special=False) for t in texts],
                "special": [llm.tokenize(t.encode("utf-8"), add_bos=False, special=True) for t in texts],
                "add_special": [llm.tokenize(t.encode("utf-8"), add_bos=True, special=False)
                                for t in ("", "hello world")],
            }
            del llm
            print(f"{name}: done", flush=True)
    return {
        "about": "llama.cpp's ids for the GGUF variants of golden_fixtures.py; regenerate with"
                 " tests/golden/make_llama_cpp_golden.py.",
        "library": f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}",
        "texts": texts,
        "variants": variants,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids-only", action="store_true", help="keep the trained fixture")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"
    if not args.ids_only:
        train_whole_text_fixture()
        print(f"wrote {WHOLE_TEXT_FIXTURE.name} ({WHOLE_TEXT_FIXTURE.stat().st_size} bytes)")
    data = json.dumps(golden_ids(golden_texts()), ensure_ascii=False, separators=(",", ":"))
    LLAMA_CPP_GOLDEN.write_bytes(gzip.compress(data.encode("utf-8"), mtime=0))
    print(f"wrote {LLAMA_CPP_GOLDEN.name} ({LLAMA_CPP_GOLDEN.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
