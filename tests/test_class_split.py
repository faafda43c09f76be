"""Pre-tokenizers of character-class steps split over a whole stretch in numpy
(``pipeline.class_split``): the pieces are those of the Python pre-tokenizers
(``pipeline.pretokenizers``) and of HF ``tokenizers``' own components, for every step type,
behaviour and ``invert``, on drawn sequences of steps and drawn text; a Tokenizer on an HF-trained
file of the HF tutorial's shape (Whitespace, character-level BPE with an unknown token) gives HF's ids."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench.algorithms.pipeline.class_split import class_split
from bpebench.algorithms.pipeline.pretokenizers import build_pre_tokenizer
from bpebench.algorithms.pipeline.text_pieces import Piece
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.corpora.hard_strings import HARD_STRINGS

BEHAVIORS = ["Isolated", "Removed", "Contiguous", "MergedWithPrevious", "MergedWithNext"]
PATTERNS = [r"\s+", r"\s", r"\p{N}", "[,.!?]", "'", r"\p{L}+|[^\p{L}\s]+", "-", r"[a-z]+|\d", r"\p{L}+?|\p{P}+",
            r"\w+", r"[^\w\s]"]
STEPS = ([{"type": "Whitespace"}, {"type": "WhitespaceSplit"}, {"type": "BertPreTokenizer"},
          {"type": "Digits", "individual_digits": True}, {"type": "Digits", "individual_digits": False},
          {"type": "CharDelimiterSplit", "delimiter": "-"}, {"type": "CharDelimiterSplit", "delimiter": "é"}]
         + [{"type": "Punctuation", "behavior": b} for b in BEHAVIORS]
         + [{"type": "Split", "pattern": {"Regex": p}, "behavior": b, "invert": i}
            for p in PATTERNS for b in BEHAVIORS for i in (False, True)]
         + [{"type": "Split", "pattern": {"String": s}, "behavior": b, "invert": False} for s in ("-", "\n")
            for b in BEHAVIORS])
ALPHABET = ["a", "b", "the", "Word", " ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\u2028", "-", "1", "42", "٣",
            "½", ",", ".", "!?", "'", "«", "—", "é", "e\u0301", "京都", "ไทย", "😀", "_", "$", "+", "x-y"]
TEXTS = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)


def _spec(steps: list[dict]) -> dict:
    return steps[0] if len(steps) == 1 else {"type": "Sequence", "pretokenizers": steps}


def _split(data, ends) -> list[bytes]:
    return [bytes(data[a:b]) for a, b in zip([0, *ends[:-1]], ends)]


@pytest.mark.parametrize("step", STEPS, ids=lambda s: json.dumps(s, ensure_ascii=True)[:70])
def test_each_step_alone_gives_the_python_pieces(step):
    pre = build_pre_tokenizer(step)
    split = class_split(pre, byte_level_model=False)
    assert split is not None
    for text in [*HARD_STRINGS[:200], *ALPHABET, "".join(ALPHABET), "a--b,,c  1 2\n\n-"]:
        data, ends = split.pieces(text)
        assert _split(data, ends) == [p.text.encode() for p in pre.pre_tokenize([Piece(text)])], text


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=4), text=TEXTS)
def test_drawn_sequences_give_the_python_and_hfs_pieces(steps, text):
    tokenizers = pytest.importorskip("tokenizers")
    spec = _spec(steps)
    pre = build_pre_tokenizer(spec)
    data, ends = class_split(pre, byte_level_model=False).pieces(text)
    got = _split(data, ends)
    assert got == [p.text.encode() for p in pre.pre_tokenize([Piece(text)])]
    theirs = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        "pre_tokenizer": spec}))
    assert got == [piece.encode() for piece, _ in theirs.pre_tokenizer.pre_tokenize_str(text)]


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.sampled_from(STEPS), max_size=3), text=TEXTS, prefix=st.booleans(),
       end=st.sampled_from([b"", b"\xff"]))
def test_a_last_byte_level_step_gives_utf8_pieces_with_their_space_and_end(steps, text, prefix, end):
    """Over a byte-level model the pieces are the UTF-8 of the text's own characters, a space before
    each that does not start with one (``add_prefix_space``), the end-of-word byte after each."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": prefix, "use_regex": False}
    pre = build_pre_tokenizer(_spec([*steps, byte_level]))
    split = class_split(pre, byte_level_model=True, piece_end=end)
    if not steps:
        assert split is None  # nothing to split: the piece is the stretch
        return
    steps_only = build_pre_tokenizer(_spec(steps))
    last = build_pre_tokenizer(byte_level)
    want = [p.text.encode() + end for p in last.pre_tokenize_text(steps_only.pre_tokenize([Piece(text)]))]
    assert _split(*split.pieces(text)) == want


WHITESPACE_SPLIT = {"type": "WhitespaceSplit"}


@pytest.mark.parametrize("spec", [
    # after a first step: overlapping branches (Oniguruma's \w alone takes "²", inside a class not)
    {"type": "Sequence", "pretokenizers": [WHITESPACE_SPLIT, {"type": "Split", "pattern": {"Regex": r"\w+|\d+"}}]},
    {"type": "Sequence", "pretokenizers": [WHITESPACE_SPLIT,
                                           {"type": "Split", "pattern": {"Regex": r"\w+|[^\w\s]+"}}]},
    {"type": "Sequence", "pretokenizers": [WHITESPACE_SPLIT, {"type": "Split", "pattern": {"String": "ab"}}]},
    # first: a branch that may start with an optional item, a run of at least two
    {"type": "Split", "pattern": {"Regex": r" ?\p{L}+|\p{N}+"}, "behavior": "Isolated"},
    {"type": "Split", "pattern": {"Regex": r"\s{2,}"}, "behavior": "Removed"},
    # Metaspace anywhere but last
    {"type": "Sequence", "pretokenizers": [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                                            "split": True}, WHITESPACE_SPLIT]},
    {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "ByteLevel", "use_regex": True}]},
])
def test_other_steps_are_left_to_python(spec):
    assert class_split(build_pre_tokenizer(spec), byte_level_model=False) is None
    assert class_split(build_pre_tokenizer(spec), byte_level_model=True) is None


METASPACE_TEXTS = st.lists(st.sampled_from(ALPHABET + ["\u2581", "\u2581a", " \u2581", "-", "_x_"]),
                          max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(st.sampled_from(STEPS), max_size=2), scheme=st.sampled_from(["always", "first", "never"]),
       split=st.booleans(), replacement=st.sampled_from(["\u2581", "-", "_", " "]), text=METASPACE_TEXTS)
def test_a_last_metaspace_step_gives_the_python_and_hfs_pieces(steps, scheme, split, replacement, text):
    """``Metaspace`` last (after any class steps, or alone): its spaces written as the replacement, the
    replacement put before each piece of the steps before it that does not start with one (``first``:
    only the piece at the original text's start), and with ``split`` a cut before each replacement
    but the first of a piece (HF's ``MergedWithNext``), replacements that were in the text included."""
    tokenizers = pytest.importorskip("tokenizers")
    spec = _spec([*steps, {"type": "Metaspace", "replacement": replacement, "prepend_scheme": scheme,
                           "split": split}])
    pre = build_pre_tokenizer(spec)
    split_at_once = class_split(pre, byte_level_model=False)
    assert split_at_once is not None and class_split(pre, byte_level_model=True) is None
    offsets = list(range(len(text)))
    got = _split(*split_at_once.pieces(text, offsets))
    assert got == [p.text.encode() for p in pre.pre_tokenize([Piece(text, 0, offsets)])]
    theirs = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        "pre_tokenizer": spec}))
    assert got == [piece.encode() for piece, _ in theirs.pre_tokenizer.pre_tokenize_str(text)]
    # a stretch that does not start the text (after a carved token): ``first`` prefixes none of it
    later = list(range(3, 3 + len(text)))
    assert (_split(*split_at_once.pieces(text, later))
            == [p.text.encode() for p in pre.pre_tokenize([Piece(text, 3, later)])])


#: first steps that are no class steps: their spans come from the compiled split, and whether a span
#: is a match from its first character (CLIP's split, a group of literals, a bounded run)
CLIP_SPLIT = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
FIRST_REGEXES = [CLIP_SPLIT, r"(?:ab|cd)|\p{L}+|\s", r"\p{L}+|\p{N}{1,3}|[^\s\p{L}\p{N}]+"]
FIRST_TEXTS = st.lists(st.sampled_from(ALPHABET + ["'s", "'re", "<|endoftext|>", "<|start", "1234", "ab", "cd"]),
                       max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(first=st.sampled_from(FIRST_REGEXES), behavior=st.sampled_from(BEHAVIORS), invert=st.booleans(),
       rest=st.lists(st.sampled_from(STEPS), max_size=2), text=FIRST_TEXTS)
def test_a_first_step_with_a_compiled_split_gives_the_python_and_hfs_pieces(first, behavior, invert, rest, text):
    tokenizers = pytest.importorskip("tokenizers")
    spec = _spec([{"type": "Split", "pattern": {"Regex": first}, "behavior": behavior, "invert": invert}, *rest])
    pre = build_pre_tokenizer(spec)
    split = class_split(pre, byte_level_model=False)
    assert split is not None and split.steps[0].splitter is not None
    got = _split(*split.pieces(text))
    assert got == [p.text.encode() for p in pre.pre_tokenize([Piece(text)])]
    theirs = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        "pre_tokenizer": spec}))
    assert got == [piece.encode() for piece, _ in theirs.pre_tokenizer.pre_tokenize_str(text)]


def test_a_char_level_model_takes_no_byte_level_step_and_a_surrogate_goes_to_python():
    byte_level = build_pre_tokenizer({"type": "Sequence", "pretokenizers": [
        {"type": "Whitespace"}, {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})
    assert class_split(byte_level, byte_level_model=False) is None
    assert class_split(build_pre_tokenizer({"type": "Whitespace"}), byte_level_model=True) is None  # no mapping
    assert class_split(build_pre_tokenizer({"type": "Whitespace"}), byte_level_model=False).pieces("a\ud800b") is None


# ----------------------------------------------------------------------------- a whole file
WORDS = ["the", "model", "tokens", "naïve", "café", "привет", "東京", "return", "2024", "!!", "?", ",", "don't",
         "e-mail", "😀", "(", ")", "--", "x"]


@pytest.fixture(scope="module", params=["quick tour", "fused unknowns"])
def tutorial(tmp_path_factory, request):
    """HF's quick-tour shape, trained by HF here: Whitespace, character-level BPE with ``[UNK]``; and
    WhitespaceSplit + Punctuation before a model that fuses runs of unknown characters (the pieces go
    to the piece stage as texts of a batch, so that no run fuses across two)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    rng = random.Random(5)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30))) for _ in range(400)]
    fuse = request.param == "fused unknowns"
    hf = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]", fuse_unk=fuse))
    hf.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]) \
        if fuse else pre_tokenizers.Whitespace()
    hf.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                                       special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    path = tmp_path_factory.mktemp("tutorial") / "tokenizer.json"
    hf.save(str(path))
    return Tokenizer(str(path)), Tokenizer(str(path), pretokenizer="regex"), hf


def test_the_tutorial_file_takes_the_class_split(tutorial):
    ours, per_piece, _ = tutorial
    assert ours._hf.piece_stage is not None
    ours.encode_ordinary("the model")
    assert ours._hf._class_split  # made at the first encode
    assert per_piece._hf.piece_stage is None
    assert "split over each stretch at once" in ours.components["path"]


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(WORDS + [" ", "  ", "\n", "\t", "[CLS]", "ß", "ßж", "#$%", "\u00a0", "a-b"]),
                     max_size=30).map("".join))
def test_the_tutorial_file_gives_hfs_ids(tutorial, text):
    ours, per_piece, hf = tutorial
    assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids
    assert ours.encode_ordinary(text) == per_piece.encode_ordinary(text)


def test_the_tutorial_file_on_hard_strings(tutorial):
    ours, _, hf = tutorial
    for text in HARD_STRINGS:
        assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids, text



# ----------------------------------------------------------------------------- models merging in Python
PIPELINES = Path(__file__).parent / "golden" / "pipelines"


@pytest.fixture(scope="module", params=["hf_bert_prefix.json", "hf_whitespace_suffix.json"])
def symbol_level(request):
    """A character-level model that merges symbols in Python (a ``##`` prefix, a ``</w>`` suffix):
    ours with the numpy split, ours with the Python pre-tokenizer, HF."""
    tokenizers = pytest.importorskip("tokenizers")
    path = str(PIPELINES / request.param)
    return Tokenizer(path), Tokenizer(path, pretokenizer="regex"), tokenizers.Tokenizer.from_file(path)


def test_symbol_level_models_take_the_numpy_split_and_keep_their_merges(symbol_level):
    ours, per_piece, _ = symbol_level
    ours.encode_ordinary("the model")
    assert ours._hf._class_split and ours._hf.piece_stage is None
    assert per_piece._hf._class_split is False


@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_symbol_level_models_give_hfs_ids_twice(symbol_level, text):
    """The second time a text's words come from the model's word cache: the same ids."""
    ours, per_piece, hf = symbol_level
    want = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text, allowed_special="all") == want
    assert ours.encode(text, allowed_special="all") == want
    assert per_piece.encode(text, allowed_special="all") == want


# ----------------------------------------------------------------------------- steps after ByteLevel
#: steps a compiled list takes before ``ByteLevel`` (``Isolated`` splits)
LEADS = [[], [{"type": "Punctuation", "behavior": "Contiguous"}], [{"type": "Digits", "individual_digits": True}],
         [{"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Isolated", "invert": False}]]
#: class steps after it, on byte-level characters (digits, and "²³¹¼½¾" which are UTF-8 continuation bytes)
TAILS = [{"type": "Digits", "individual_digits": False}, {"type": "Digits", "individual_digits": True},
         {"type": "Split", "pattern": {"Regex": "[0-9][0-9][0-9]"}, "behavior": "Isolated", "invert": False},
         {"type": "Split", "pattern": {"Regex": r"\d{2}"}, "behavior": "Removed", "invert": True},
         {"type": "Split", "pattern": {"Regex": r"\p{N}"}, "behavior": "MergedWithNext", "invert": False},
         {"type": "Punctuation", "behavior": "Isolated"}]


@settings(max_examples=200, deadline=None)
@given(lead=st.sampled_from(LEADS), use_regex=st.booleans(), tail=st.lists(st.sampled_from(TAILS), min_size=1, max_size=2),
       text=st.lists(st.sampled_from(ALPHABET + ["12345", "1234567", "β²", "½", "β", "x99y"]), max_size=25).map("".join))
def test_class_steps_after_byte_level_read_bytes_as_hf_does(lead, use_regex, tail, text):
    """Falcon's shape: splits before ``ByteLevel`` (a compiled list, its own regex last), class steps
    after it over byte-level characters, where a continuation byte may be a digit (``²``): the pieces'
    bytes are HF's (``pre_tokenize_str`` in byte-level characters) and the Python pre-tokenizers'."""
    from bpebench.algorithms.formats.byte_alphabet import bytes_to_unicode

    tokenizers = pytest.importorskip("tokenizers")
    spec = _spec([*lead, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex},
                  *tail])
    pre = build_pre_tokenizer(spec)
    split = class_split(pre, byte_level_model=True)
    assert split is not None and split.byte_mode
    got = _split(*split.pieces(text))
    to_byte = {c: b for b, c in bytes_to_unicode().items()}
    as_bytes = lambda piece: bytes(to_byte[c] for c in piece)  # noqa: E731
    assert got == [as_bytes(p.text) for p in pre.pre_tokenize([Piece(text)])]
    theirs = tokenizers.Tokenizer.from_str(json.dumps({
        "version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        "pre_tokenizer": spec}))
    assert got == [as_bytes(piece) for piece, _ in theirs.pre_tokenizer.pre_tokenize_str(text)]


def test_a_prefix_space_before_later_steps_is_left_to_python():
    spec = _spec([{"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}, TAILS[0]])
    assert class_split(build_pre_tokenizer(spec), byte_level_model=True) is None


@settings(max_examples=100, deadline=None)
@given(text=st.lists(st.sampled_from(WORDS + ["12345", "1234567", " ", "\n", "½", "β²", "<|endoftext|>"]),
                     max_size=25).map("".join))
def test_a_falcon_shaped_file_gives_hfs_ids(falcon_shaped, text):
    ours, hf = falcon_shaped
    assert ours._hf.piece_stage is not None
    assert ours.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def falcon_shaped(tmp_path_factory):
    """Falcon's pre-tokenizer (Punctuation, ByteLevel with its regex, Digits, three digits at a time)
    before byte-level BPE, trained by HF here."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, models, pre_tokenizers, trainers

    rng = random.Random(7)
    corpus = [" ".join(rng.choice(WORDS + ["12345", "2024", "½"]) for _ in range(rng.randint(3, 30)))
              for _ in range(400)]
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Punctuation("contiguous"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        pre_tokenizers.Digits(individual_digits=False), pre_tokenizers.Split(Regex("[0-9][0-9][0-9]"), "isolated")])
    hf.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, show_progress=False, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path_factory.mktemp("falcon") / "tokenizer.json"
    hf.save(str(path))
    return Tokenizer(str(path)), hf
