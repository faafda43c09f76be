"""An HF ``tokenizer.json`` whose ``Split`` regex is its own (no built-in pattern) takes the fused
pipeline: the compiled split of its regex, with the text between matches kept as pieces
(``Isolated``), and the same ids as HF ``tokenizers`` itself."""

from __future__ import annotations

import json
import random

import pytest
import regex
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.formats import load_path
from bpebench.algorithms.pipeline.pattern_program import with_gaps, without_gaps
from bpebench.algorithms.pipeline.pretokenizers import Split
from bpebench.algorithms.pipeline.tokenizer import Tokenizer

#: split regexes of files of one's own: a covering one, ones that leave text between matches (spaces,
#: punctuation, a lone letter), a look-ahead, Llama-3's with numbers in twos and a scoped flag
SPLITS = {
    "covering": r"\s?\p{L}+|\s?\p{N}{1,4}|\s?[^\s\p{L}\p{N}]+|\s+",
    "gaps": r"\p{L}+|\p{N}{1,3}",
    "gaps-and-look-ahead": r"[^\r\n\p{L}\p{N}]?\p{L}{2,}|\p{N}|\s+(?!\S)",
    "llama3-in-twos": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,2}"
                      r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
HARD = ["", " ", "a", "hello world", "  two  spaces  ", "tabs\tand\nnew\n\nlines\r\n", "12345678 9",
        "naïve café — déjà vu!", "日本語のテキスト、句読点。", "Привет, мир 2024", "x=1;y+=22//333",
        "emoji 👍🏽 and ZWJ 👨‍👩‍👧", "a\u0301e\u0301", "!!!???...", "\u00a0nbsp\u2003em", "a b c d e f"]


def _corpus() -> list[str]:
    rng = random.Random(7)
    words = ["the", "model", "token", "tokens", "naïve", "café", "Привет", "мир", "日本", "語", "x", "y1",
             "return", "def", "for", "in", "range", "2024", "42", "!!", "?", ",", ".", "—", "(", ")", "::"]
    separators = [" ", " ", " ", "  ", "\n", "\t", "", "\r\n"]
    return ["".join(rng.choice(words) + rng.choice(separators) for _ in range(rng.randint(5, 60)))
            for _ in range(400)]


def _trained_file(tmp_path_factory, name: str, special: bool = True):
    path = tmp_path_factory.mktemp("hf-split") / f"{name}.json"
    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    hf.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(SPLITS[name]), behavior="isolated"),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=700, show_progress=False,
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
                                             special_tokens=["<|end|>"] if special else [])
    hf.train_from_iterator(_corpus(), trainer)
    hf.save(str(path))
    return path, hf


@pytest.fixture(scope="module", params=sorted(SPLITS))
def trained(request, tmp_path_factory):
    path, hf = _trained_file(tmp_path_factory, request.param)
    return request.param, Tokenizer(load_path(path)), hf


def test_the_file_takes_the_fused_pipeline_with_its_own_compiled_split(trained):
    name, tok, _ = trained
    assert tok.vocabulary.normalizer == "none" and without_gaps(tok.vocabulary.pattern) is not None
    assert tok.fused and type(tok._fused.splitter).__name__ == "ProgramPretokenizer"


def test_hard_strings_give_hfs_ids(trained):
    name, tok, hf = trained
    for text in HARD + _corpus()[:20] + ["<|end|>".join(HARD[:6])]:
        assert tok.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, text
        assert tok.encode_ordinary(text.replace("<|end|>", "")) == \
            hf.encode(text.replace("<|end|>", ""), add_special_tokens=False).ids
    long_text = "\n".join(_corpus()) * 3  # a long text is split part by part on every core
    expected = hf.encode(long_text, add_special_tokens=False).ids
    assert tok.encode_ordinary(long_text) == expected
    assert tok.encode_ordinary_batch([long_text[:5000], "", long_text], num_threads=2) == \
        [hf.encode(long_text[:5000], add_special_tokens=False).ids, [], expected]


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from(list("ab yz19 \t\n\r.,!é日Ж\u00a0\u0301_-")), max_size=60))
def test_any_text_gives_hfs_ids(trained, text):
    name, tok, hf = trained
    assert tok.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.sampled_from(list("ab yz19 \t\n.,!é日\u0301")), max_size=40),
       name=st.sampled_from(sorted(SPLITS)))
def test_findall_of_the_covering_pattern_is_hfs_isolated_split(text, name):
    """Checked against the component pipeline's ``Split`` (HF's ``find_matches`` and ``Isolated``)."""
    from bpebench.algorithms.pipeline.text_pieces import onig_regex

    covering = with_gaps(onig_regex(SPLITS[name]))
    split = Split({"type": "Split", "pattern": {"Regex": SPLITS[name]}, "behavior": "Isolated"}, "test")
    assert regex.findall(covering, text) == split.pre_tokenize_str(text)


@pytest.mark.parametrize("pattern", [r"(?i)ab|\s+", r"x*|\s+", r"(a)\1|\s+", r"(?P<n>a)|\s+"])
def test_patterns_it_cannot_keep_exact_stay_with_the_component_pipeline(pattern, tmp_path):
    """A whole-pattern flag, a possible empty match, a reference to a group: no covering form."""
    assert with_gaps(pattern) is None
    data = json.loads(tokenizers.Tokenizer(tokenizers.models.BPE()).to_str())
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    data["model"]["vocab"] = {c: i for i, c in enumerate(sorted(set(
        tokenizers.pre_tokenizers.ByteLevel.alphabet())))}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    tok = Tokenizer(load_path(path))
    assert tok.vocabulary.normalizer == "pipeline" and not tok.fused


def test_long_texts_give_hfs_ids(trained):
    """Long texts of mostly ASCII (their pieces' ends fed to the window loop), with a 40,000-letter word;
    the ids are HF's."""
    _, tok, hf = trained
    assert tok.fused
    prose = " ".join(_corpus())
    word = "tokens" * 6_700
    texts = [prose, prose[:70_000] + " " + word + " " + prose[:9_000], word, "x " + word + "\n" + prose[:40_000]]
    for text in texts:
        assert len(text.encode()) > 35_000
        ids = hf.encode(text, add_special_tokens=False).ids
        assert tok.encode_ordinary(text) == ids
        assert tok.encode_ordinary_batch([text[:50_000], text], num_threads=1) == [
            hf.encode(text[:50_000], add_special_tokens=False).ids, ids]


def test_long_texts_give_tiktokens_ids_over_ranks_that_cross_the_split():
    """o200k's ranks under a pattern of their own: their tokens cross this split's boundaries, so a
    piece boundary lost or moved by the window loop changes the ids (with a file trained on its own
    split it might not). Oracle: tiktoken with the same ranks and pattern."""
    import numpy as np
    tiktoken = pytest.importorskip("tiktoken")
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.formats.vocabulary import Vocabulary
    from bpebench.algorithms.pipeline.fast_pipeline import FusedPipeline, _DirectCall, encode_utf8
    from bpebench.benchmarks import protocol

    pattern = SPLITS["covering"]
    base = load_vocabulary("o200k_base")
    vocab = Vocabulary.from_ranks(list(base.tokens), name="o200k-covering", pattern=pattern)
    oracle = tiktoken.Encoding("o200k-covering", pat_str=pattern,
                               mergeable_ranks={t: i for i, t in enumerate(base.tokens)}, special_tokens={})
    fused = FusedPipeline(vocab)
    assert type(fused.splitter).__name__ == "ProgramPretokenizer"
    code = "".join(protocol.stream("code").measured)[:150_000]
    texts = [code, code[:50_000] + " " + "tokens" * 6_700 + "\n" + code[:20_000]]
    for text in texts:
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        out = np.empty(len(data) + 1, dtype=np.int32)
        n = _DirectCall(encode_utf8)(fused.plan, data, out, fused.thread_cache())
        assert out[:n].tolist() == oracle.encode_ordinary(text)
