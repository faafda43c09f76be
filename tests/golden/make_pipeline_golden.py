"""Regenerate the pipeline parity fixtures (run once; the outputs are committed).

    python tests/golden/make_pipeline_golden.py            # fixtures + golden ids
    python tests/golden/make_pipeline_golden.py --ids-only # keep the fixtures, recompute the ids

Writes ``tests/golden/pipelines/``:

* ``hf_*.json``: small BPE ``tokenizer.json`` files trained with HF ``tokenizers``, one per
  combination of normalizer / pre-tokenizer / model option / added-token flags (see
  ``HF_FIXTURES``); byte-fallback ones get Llama's ``<0x00>``..``<0xFF>`` tokens;
* ``spm_*.model``: small SentencePiece BPE models: without byte fallback, with
  ``nmt_nfkc`` and user-defined pieces, with a custom normalization rule table (a small
  charsmap, reused by ``hf_precompiled.json``), without dummy prefix and whitespace
  collapsing;
* ``golden_pipelines.json``: for every fixture (and the two issue-25 variants of
  ``bytelevel_bpe.json`` that ``golden_fixtures.issue25_fixture`` writes) and every text of
  ``bpebench.corpora.hard_strings.PIPELINE_TEXTS``, the ids the real library gives (``tokenizers``: ``encode(add_special_tokens=False)``
  with and without ``encode_special_tokens``; ``sentencepiece``: ``encode``) and its
  ``decode`` of them.

Nothing in bpebench computes the expected ids. Training is single-threaded and the
corpus is ``make_golden.corpus_lines()`` (deterministic for a given Python version).
"""

from __future__ import annotations

import argparse
import base64
import importlib.metadata
import io
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "pipelines"
GOLDEN = OUT / "golden_pipelines.json"
sys.path.insert(0, str(HERE))

from golden_fixtures import ISSUE25_PATTERNS, issue25_fixture  # noqa: E402
from bpebench.corpora.hard_strings import PIPELINE_TEXTS as HARD_STRINGS  # noqa: E402

GPT2_WITH_GROUPS = r"'(s|t|re|ve|m|ll|d)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
          r"|\s+(?!\S)|\s+")
SPM_SPACE = "\u2581"

#: a small normalization rule table (source code points -> target code points, hex), compiled by
#: sentencepiece into a charsmap small enough to commit twice
RULES = {
    "FB01": "66 69", "FB02": "66 6C", "2460": "31", "2461": "32", "00B2": "32", "00BD": "31 2044 32",
    "FF28": "48", "FF45": "65", "FF4C": "6C", "FF4F": "6F", "3000": "20", "00A0": "20", "2003": "20",
    "0065 0301": "E9", "0041 030A": "C5", "212B": "C5", "2160": "49", "216B": "58 49 49", "FF76": "30AB",
    "0009": "20", "000D 000A": "0A",
}


def _version(package: str) -> str:
    return f"{package} {importlib.metadata.version(package)}"


def corpus() -> list[str]:
    from make_golden import corpus_lines

    return corpus_lines()[:4000]


# ----------------------------------------------------------------------------- HF fixtures
def _byte_level(**kw):
    return {"type": "ByteLevel", "add_prefix_space": kw.get("add_prefix_space", False), "trim_offsets": True,
            "use_regex": kw.get("use_regex", True)}


def _split(pattern, behavior="Isolated", invert=False):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


LLAMA2_NORMALIZER = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": SPM_SPACE}, {"type": "Replace", "pattern": {"String": " "}, "content": SPM_SPACE}]}
LLAMA2_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": SPM_SPACE}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
METASPACE_DECODER = {"type": "Metaspace", "replacement": SPM_SPACE, "prepend_scheme": "always", "split": True}

#: name -> how to build it: components (tokenizer.json dicts), model options, added tokens
HF_FIXTURES: dict[str, dict] = {
    "hf_nfkc_lower_groups": dict(
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, _split(GPT2_WITH_GROUPS), _byte_level(use_regex=False)]},
        decoder=_byte_level(), added=[("<|endoftext|>", dict(special=True, normalized=False)),
                                      ("hello", dict(special=False, normalized=True)),
                                      ("<mask>", dict(special=True, normalized=False, lstrip=True, rstrip=True))]),
    "hf_bytelevel_prefix_nfd": dict(
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
        pre_tokenizer=_byte_level(add_prefix_space=True), decoder=_byte_level(add_prefix_space=True),
        added=[("<s>", dict(special=True, normalized=False)), ("</s>", dict(special=True, normalized=True)),
               ("say", dict(special=False, normalized=True, single_word=True))]),
    "hf_split_behaviors": dict(
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFKD"},
                                                        {"type": "Replace", "pattern": {"Regex": " {2,}"},
                                                         "content": " "}]},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            _split(r"\s+", "MergedWithNext"), _split(r"\p{N}", "Contiguous"), _split(r"[,.!?]", "MergedWithPrevious"),
            _split(r"'", "MergedWithNext"), _byte_level(use_regex=False)]},
        decoder=_byte_level(), added=[("<|endoftext|>", dict(special=True, normalized=False))]),
    "hf_punct_chardelim": dict(
        normalizer={"type": "Strip", "strip_left": True, "strip_right": True},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Contiguous"},
            {"type": "CharDelimiterSplit", "delimiter": "-"}, _split(r"[a-z]+", "Removed", invert=True),
            _byte_level(use_regex=False)]},
        decoder=_byte_level(), added=[]),
    "hf_llama3_ignore_merges": dict(
        normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [_split(LLAMA3),
                                                                             _byte_level(use_regex=False)]},
        decoder=_byte_level(), model=dict(ignore_merges=True),
        added=[("<|endoftext|>", dict(special=True, normalized=False)),
               ("<|fim_middle|>", dict(special=True, normalized=False))]),
    "hf_llama2_bytefallback": dict(
        normalizer=LLAMA2_NORMALIZER, pre_tokenizer=None, decoder=LLAMA2_DECODER, char_level=True,
        model=dict(byte_fallback=True, unk_token="<unk>", fuse_unk=True),
        added=[("<unk>", dict(special=True, normalized=False)), ("<s>", dict(special=True, normalized=False)),
               ("</s>", dict(special=True, normalized=False))]),
    "hf_metaspace_first": dict(
        normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": SPM_SPACE, "prepend_scheme": "first",
                                        "split": False},
        decoder=METASPACE_DECODER, char_level=True, model=dict(byte_fallback=True, unk_token="<unk>", fuse_unk=True),
        added=[("<unk>", dict(special=True, normalized=False)), ("<s>", dict(special=True, normalized=False)),
               ("</s>", dict(special=True, normalized=False)), ("[INST]", dict(special=True, normalized=False,
                                                                                lstrip=True))]),
    "hf_metaspace_unk": dict(
        normalizer={"type": "NFC"},
        pre_tokenizer={"type": "Metaspace", "replacement": SPM_SPACE, "prepend_scheme": "always", "split": True},
        decoder=METASPACE_DECODER, char_level=True, model=dict(unk_token="<unk>", fuse_unk=False),
        coverage_drop="東京한국어مرحبا", added=[("<unk>", dict(special=True, normalized=False))]),
    "hf_strip_split_first": dict(
        normalizer={"type": "Strip", "strip_left": True, "strip_right": False},
        pre_tokenizer={"type": "Sequence", "pretokenizers": [
            _split(r"\n", "Isolated"),
            {"type": "Metaspace", "replacement": SPM_SPACE, "prepend_scheme": "first", "split": True}]},
        decoder=METASPACE_DECODER, char_level=True, model=dict(unk_token="<unk>", fuse_unk=True),
        coverage_drop="😀👍", added=[("<unk>", dict(special=True, normalized=False)),
                                  ("<s>", dict(special=True, normalized=False))]),
    "hf_whitespace_suffix": dict(
        normalizer={"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
        pre_tokenizer={"type": "Whitespace"}, decoder={"type": "BPEDecoder", "suffix": "</w>"}, char_level=True,
        model=dict(end_of_word_suffix="</w>", unk_token="<unk>"), added=[("<unk>", dict(special=True, normalized=False))]),
    "hf_bert_prefix": dict(
        normalizer={"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                    "lowercase": True},
        pre_tokenizer={"type": "BertPreTokenizer"}, decoder={"type": "WordPiece", "prefix": "##", "cleanup": True},
        char_level=True, model=dict(continuing_subword_prefix="##", unk_token="[UNK]"),
        added=[("[UNK]", dict(special=True, normalized=False)), ("[MASK]", dict(special=True, normalized=False))]),
    "hf_precompiled": dict(
        normalizer="precompiled", pre_tokenizer={"type": "Metaspace", "replacement": SPM_SPACE,
                                                 "prepend_scheme": "always", "split": True},
        decoder=METASPACE_DECODER, char_level=True, model=dict(byte_fallback=True, unk_token="<unk>", fuse_unk=True),
        added=[("<unk>", dict(special=True, normalized=False))]),
}


def _train_hf(name: str, recipe: dict, lines: list[str], charsmap: bytes) -> None:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, trainers

    normalizer = recipe["normalizer"]
    if normalizer == "precompiled":
        normalizer = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()}
    options = dict(recipe.get("model") or {})
    char_level = recipe.get("char_level", False)
    specials = [content for content, flags in recipe["added"] if flags.get("special")]
    word_options = {k: options[k] for k in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix")
                    if k in options}
    tokenizer = Tokenizer(models.BPE(**word_options))
    data = json.loads(tokenizer.to_str())
    data["normalizer"], data["pre_tokenizer"], data["decoder"] = normalizer, recipe["pre_tokenizer"], recipe["decoder"]
    tokenizer = Tokenizer.from_str(json.dumps(data))
    drop = set(recipe.get("coverage_drop", ""))
    trainer = trainers.BpeTrainer(
        vocab_size=700 if char_level else 600, min_frequency=2, special_tokens=specials, show_progress=False,
        initial_alphabet=[] if char_level else pre_tokenizers.ByteLevel.alphabet(),
        **{k: v for k, v in word_options.items() if k != "unk_token"},
    )
    tokenizer.train_from_iterator([line for line in lines if not drop & set(line)], trainer)
    data = json.loads(tokenizer.to_str())
    model = data["model"]
    if options.get("byte_fallback"):
        vocab = model["vocab"]
        for b in range(256):
            vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    for key in ("byte_fallback", "fuse_unk", "ignore_merges"):
        if key in options:
            model[key] = options[key]
    tokenizer = Tokenizer.from_str(json.dumps(data))
    tokenizer.add_tokens([AddedToken(content, **{k: v for k, v in flags.items() if k != "special"})
                          for content, flags in recipe["added"] if not flags.get("special")])
    data = json.loads(tokenizer.to_str())
    flags_of = dict(recipe["added"])
    for entry in data["added_tokens"]:  # the trainer adds specials with default flags
        entry.update(flags_of.get(entry["content"], {}))
    (OUT / f"{name}.json").write_text(json.dumps(data, ensure_ascii=False, indent=None), encoding="utf-8")


# ----------------------------------------------------------------------------- SentencePiece fixtures
SPM_FIXTURES: dict[str, dict] = {
    "spm_no_fallback": dict(byte_fallback=False, normalization_rule_name="identity", character_coverage=0.995),
    "spm_nmt_nfkc_user": dict(byte_fallback=False, normalization_rule_name="nmt_nfkc",
                              user_defined_symbols=["<mask>", "[MASK]", "hello", "\n"], character_coverage=1.0),
    "spm_rules_fallback": dict(byte_fallback=True, normalization_rule_tsv="rules", character_coverage=1.0,
                               remove_extra_whitespaces=True),
    "spm_no_prefix_no_collapse": dict(byte_fallback=True, normalization_rule_name="identity", add_dummy_prefix=False,
                                      remove_extra_whitespaces=False, character_coverage=0.9995,
                                      allow_whitespace_only_pieces=True),
}


def _rules_file() -> Path:
    path = OUT / "rules.tsv"
    path.write_text("".join(f"{src}\t{dst}\n" for src, dst in RULES.items()), encoding="utf-8")
    return path


def _train_spm(name: str, options: dict, lines: list[str]) -> bytes:
    import sentencepiece as spm

    options = dict(options)
    if options.get("normalization_rule_tsv") == "rules":
        options["normalization_rule_tsv"] = str(_rules_file())
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, model_type="bpe",
                                   vocab_size=700, num_threads=1, minloglevel=2, **options)
    (OUT / f"{name}.model").write_bytes(model.getvalue())
    return model.getvalue()


def _charsmap_of(model_bytes: bytes) -> bytes:
    from bpebench.algorithms.formats.sentencepiece_model import parse_model_proto

    return parse_model_proto(model_bytes).precompiled_charsmap


# ----------------------------------------------------------------------------- oracles
def golden() -> dict:
    import sentencepiece as spm
    from tokenizers import Tokenizer

    out: dict[str, dict] = {}
    scratch = Path(tempfile.mkdtemp())
    paths = {name: OUT / f"{name}.json" for name in HF_FIXTURES}
    paths.update({name: issue25_fixture(scratch, name) for name in ISSUE25_PATTERNS})
    for name, path in paths.items():
        hf = Tokenizer.from_file(str(path))
        special = [e.ids for e in hf.encode_batch(HARD_STRINGS, add_special_tokens=False)]
        hf.encode_special_tokens = True
        ordinary = [e.ids for e in hf.encode_batch(HARD_STRINGS, add_special_tokens=False)]
        out[f"{name}.json"] = {
            "library": _version("tokenizers"), "ordinary": ordinary, "all_special": special,
            "decoded": [hf.decode(ids, skip_special_tokens=False) for ids in special],
        }
    for name in SPM_FIXTURES:
        sp = spm.SentencePieceProcessor(model_file=str(OUT / f"{name}.model"))
        ids = [sp.encode(t) for t in HARD_STRINGS]
        out[f"{name}.model"] = {"library": _version("sentencepiece"), "ordinary": ids,
                                "decoded": [sp.decode(i) for i in ids]}
    return {"about": "Expected ids from the real libraries; regenerate with tests/golden/make_pipeline_golden.py.",
            "python": sys.version.split()[0], "texts": HARD_STRINGS, "fixtures": out}


def main() -> None:
    from make_golden import _compact_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids-only", action="store_true", help="keep the trained fixtures")
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = "1"
    OUT.mkdir(exist_ok=True)
    if not args.ids_only:
        lines = corpus()
        charsmap = b""
        for name, options in SPM_FIXTURES.items():
            model = _train_spm(name, options, lines)
            if name == "spm_rules_fallback":
                charsmap = _charsmap_of(model)
        (OUT / "rules.tsv").unlink(missing_ok=True)
        for name, recipe in HF_FIXTURES.items():
            _train_hf(name, recipe, lines, charsmap)
        for path in sorted(OUT.iterdir()):
            print(f"{path.name}: {path.stat().st_size} bytes")
    GOLDEN.write_text(_compact_json(golden()), encoding="utf-8")
    print(f"wrote {GOLDEN.name}")


if __name__ == "__main__":
    main()
