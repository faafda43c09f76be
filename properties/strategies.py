"""Hypothesis strategies: the one place that says what the properties are tried on.

Vocabularies are drawn too, not only inputs: :func:`trained_specs` trains a small
BPE vocabulary (both the ``ranks`` and the ``merges`` rule, ids shuffled so that
priorities differ from ids) on drawn text, and shrinks toward tiny vocabularies.
A vocabulary travels as its spec string (``bpebench.properties.vocabularies``) so that a
counterexample names the exact vocabulary it needs.

Inputs are biased toward the vocabulary: concatenations of its tokens, slices of
those at arbitrary byte offsets (invalid UTF-8 included), tokens glued on their
overlaps (``ab`` + ``bc`` -> ``abc``: where merges compete), a token or a pair of
tokens repeated, runs of one byte, the training text itself, plain bytes.

The paper's hand-worked cases are pinned: on the ``seed`` dictionary ``abacb`` ->
``ab a cb`` and ``abacbb`` -> ``ab acbb`` (:data:`PINNED`).
"""

from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Sequence

from hypothesis import strategies as st

from bpebench.algorithms.formats.vocabulary import Vocabulary

from .vocabularies import (
    alphabet_of,
    parse_trained_spec,
    producible_ids,
    resolve,
    trained_spec,
)

#: hand-found hard cases: (vocabulary spec, input); every kit check on bytes tries them first
PINNED: list[tuple[str, bytes]] = [
    ("seed", b"abacb"),
    ("seed", b"abacbb"),
    ("seed", b"aaaa"),
    ("seed", b"cbbb"),
    ("seed", b"cbbbb"),  # leftmost-longest gives 2 tokens, BPE 3
]

_SMALL_ALPHABETS = (b"ab", b"abc", b"abcd", b"ab ")

#: features of the drawn vocabularies and inputs, all on; ``properties/test_mutants.py`` turns one
#: off (:func:`without`) to show the mutant that only it catches
FEATURES = {
    "disorder": True,  # merge lists with merges out of priority order
    "specials": True,  # special tokens whose literals are made of the text's own bytes
    "long-sequences": True,  # long push/truncate sequences and long texts for interval counts
}


@contextmanager
def without(feature: str):
    """Draw without one of :data:`FEATURES` inside the block."""
    if feature not in FEATURES:
        raise KeyError(f"unknown strategy feature {feature!r}; known: {', '.join(FEATURES)}")
    before = FEATURES[feature]
    FEATURES[feature] = False
    try:
        yield
    finally:
        FEATURES[feature] = before


# ----------------------------------------------------------------------------- training text
@st.composite
def _small_alphabet_bytes(draw, max_size: int = 48) -> bytes:
    alphabet = draw(st.sampled_from(_SMALL_ALPHABETS))
    return bytes(draw(st.lists(st.sampled_from(list(alphabet)), min_size=1, max_size=max_size)))


@st.composite
def _seeded_small_alphabet_bytes(draw) -> bytes:
    """A longer random text over a few letters, from a drawn seed: rich vocabularies
    (many overlapping tokens) at the cost of three choices for hypothesis to shrink."""
    alphabet = draw(st.sampled_from(_SMALL_ALPHABETS))
    length = draw(st.integers(4, 80))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return bytes(rng.choice(alphabet) for _ in range(length))


@st.composite
def _repeated_unit(draw) -> bytes:
    """A short unit repeated: trains long tokens (runs, 2**k-byte powers)."""
    unit = draw(st.binary(min_size=1, max_size=3))
    return unit * draw(st.integers(2, 24))


def training_chunk(*, small_alphabet_only: bool = False) -> st.SearchStrategy[bytes]:
    if small_alphabet_only:
        return st.one_of(_small_alphabet_bytes(), _seeded_small_alphabet_bytes())
    return st.one_of(
        _small_alphabet_bytes(),
        _seeded_small_alphabet_bytes(),
        _repeated_unit(),
        st.text(max_size=24).map(lambda s: s.encode("utf-8")).filter(bool),
        st.binary(min_size=1, max_size=32),
    )


@st.composite
def trained_specs(
    draw,
    *,
    rule: str | None = None,
    alphabet: str | None = None,
    min_merges: int = 1,
    max_merges: int = 120,
    small_alphabet_only: bool = False,
    disorder: bool = False,
) -> str:
    """A spec of a vocabulary trained on drawn text (see ``bpebench.properties.vocabularies``).

    With ``disorder`` (the kit's vocabularies) some merge lists run out of priority order, which
    most encoders refuse; tests of encoders that need the order leave it off."""
    texts = draw(st.lists(training_chunk(small_alphabet_only=small_alphabet_only), min_size=1, max_size=4))
    rule = rule or draw(st.sampled_from(["ranks", "merges"]))
    params = dict(
        merges=draw(st.integers(min_merges, max_merges)),
        rule=rule,
        alphabet=alphabet or draw(st.sampled_from(["all", "text"])),
        shuffle=draw(st.sampled_from([0, 0, 1, 2, 3])),
        reorder=draw(st.sampled_from([0, 0, 1, 2])),
        resplit=draw(st.sampled_from([0, 1, 2])) if rule == "merges" else 0,
        drop=draw(st.sampled_from([0, 0, 0, 1])) if rule == "merges" else 0,
        disorder=draw(st.sampled_from([0, 0, 0, 1, 2])) if disorder and FEATURES["disorder"] else 0,
        extra=draw(st.sampled_from([0, 0, 1, 2])) if rule == "merges" else 0,
        specials=draw(_special_literals(texts)) if FEATURES["specials"] else (),
    )
    spec = trained_spec(texts, **params)
    if params["extra"] and not disorder:
        # a second listed merge can also run out of priority order (b"\0\0\0" + b"\1" listed before
        # b"\0\0\0" is formed): without ``disorder`` such a list is drawn without it
        from bpebench.algorithms.kernels.compiled import rank_order_break

        if rank_order_break(resolve(spec)) is not None:
            spec = trained_spec(texts, **{**params, "extra": 0})
    return spec


@st.composite
def _special_literals(draw, texts: list[bytes]) -> list[str]:
    """Up to two special-token literals cut from the training text (so they occur in inputs)."""
    cuts = draw(st.lists(st.tuples(st.integers(0, len(texts) - 1), st.integers(0, 30), st.integers(1, 6)),
                         max_size=2))
    literals = []
    for which, start, length in cuts:
        try:
            literal = texts[which][start : start + length].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if literal and literal not in literals:
            literals.append(literal)
    return literals


def small_specs(max_merges: int = 24) -> st.SearchStrategy[str]:
    """Tiny vocabularies over a few letters: all pairs of tokens can be checked by brute force."""
    return st.one_of(
        st.just("seed"),
        trained_specs(alphabet="text", max_merges=max_merges, small_alphabet_only=True),
    )


def vocabulary_specs(kind: str, *, min_merges: int = 1, disorder: bool = False) -> st.SearchStrategy[str]:
    """``random`` draws a trained vocabulary per example; anything else is that fixed spec.

    ``min_merges`` keeps drawn vocabularies from shrinking below that many merges
    (stateful checks need tokens of several bytes to say anything); ``disorder`` lets merge
    lists run out of priority order (see :func:`trained_specs`)."""
    if kind == "random":
        return trained_specs(min_merges=min_merges, disorder=disorder)
    if kind == "small":
        return small_specs()
    return st.just(kind)


# ----------------------------------------------------------------------------- inputs
def _token_bytes(vocab: Vocabulary) -> st.SearchStrategy[bytes]:
    """The bytes of any token, unreachable ones included (their bytes are where the
    merge rules differ: a token listed as ``aa + b`` that BPE never forms from ``a ab``)."""
    tokens = vocab.tokens
    return st.integers(0, len(tokens) - 1).map(lambda i: tokens[i]).filter(bool)


def _producible(vocab: Vocabulary):
    cached = vocab.__dict__.get("_properties_producible")
    if cached is None:
        cached = vocab.__dict__["_properties_producible"] = producible_ids(vocab)
    return cached


def _overlap(left: bytes, right: bytes) -> bytes:
    """``left`` and ``right`` glued on their longest proper overlap (``ab`` + ``bc`` -> ``abc``):
    where two merges compete, and the priority order and tie rule decide."""
    for k in range(min(len(left), len(right)) - 1, 0, -1):
        if left[-k:] == right[:k]:
            return left + right[k:]
    return left + right


@st.composite
def _overlapping(draw, token: st.SearchStrategy[bytes]) -> bytes:
    out = draw(token)
    for right in draw(st.lists(token, min_size=1, max_size=5)):
        out = _overlap(out, right)
    return out


@st.composite
def _sliced(draw, base: st.SearchStrategy[bytes]) -> bytes:
    data = draw(base)
    start = draw(st.integers(0, len(data)))
    end = draw(st.integers(start, len(data)))
    return data[start:end]


def inputs(vocab: Vocabulary, *, max_size: int = 64) -> st.SearchStrategy[bytes]:
    """Bytes ``vocab`` can encode, biased toward its own tokens (memoised per vocabulary:
    building and validating a strategy costs more than drawing from it)."""
    cache = vocab.__dict__.setdefault("_properties_inputs", {})
    strategy = cache.get(max_size)
    if strategy is None:
        strategy = cache[max_size] = _inputs(vocab, max_size)
    return strategy


def _inputs(vocab: Vocabulary, max_size: int) -> st.SearchStrategy[bytes]:
    alphabet = list(alphabet_of(vocab))
    token = _token_bytes(vocab)
    concatenation = st.lists(token, max_size=12).map(b"".join)
    choices = [
        concatenation,
        _sliced(concatenation),
        _overlapping(token),
        st.tuples(token, st.integers(1, 12)).map(lambda p: p[0] * p[1]),
        st.tuples(token, token, st.integers(1, 8)).map(lambda p: (p[0] + p[1]) * p[2]),
        st.tuples(st.sampled_from(alphabet), st.integers(1, 40)).map(lambda p: bytes([p[0]]) * p[1]),
        st.lists(st.sampled_from(alphabet), max_size=max_size).map(bytes),
    ]
    if vocab.source.startswith("trained:"):
        texts = parse_trained_spec(vocab.source)["texts"]
        choices.append(_sliced(st.sampled_from(texts).map(lambda t: t * 2)))
    if len(alphabet) == 256:
        choices.append(st.binary(max_size=max_size))
        choices.append(st.text(max_size=max_size // 2).map(lambda s: s.encode("utf-8", "surrogatepass")))
    return st.one_of(choices).map(lambda b: b[:max_size])


@st.composite
def vocabulary_and_input(draw, kind: str = "random", *, max_size: int = 64, disorder: bool = False) -> tuple[str, bytes]:
    """``(spec, data)``: a vocabulary spec and bytes to encode with it."""
    spec = draw(vocabulary_specs(kind, disorder=disorder))
    return spec, draw(inputs(resolve(spec), max_size=max_size))


@st.composite
def token_pairs(draw, vocab: Vocabulary) -> tuple[int, int]:
    """Two producible token ids, biased toward pairs that are *not* compatible:
    the split of a token, or two tokens that together spell another token."""
    ids = _producible(vocab)
    any_id = st.integers(0, len(ids) - 1).map(lambda i: int(ids[i]))
    how = draw(st.integers(0, 2))
    if how == 1:
        left, right = vocab.splits
        t = draw(any_id)
        if left[t] >= 0:
            return int(left[t]), int(right[t])
    if how == 2:
        t = vocab.tokens[draw(any_id)]
        if len(t) >= 2:
            k = draw(st.integers(1, len(t) - 1))
            a, b = vocab.token_id(t[:k]), vocab.token_id(t[k:])
            if a is not None and b is not None:
                return a, b
    return draw(any_id), draw(any_id)


# ----------------------------------------------------------------------------- text for the pipeline
_WORDS = ["the", " the", "Hello", " world", "naïve", " café", "東京", "مرحبا", "नमस्ते", "👩‍💻", "'s", "'LL",
          "1234567", " 42", "\n\n", "   ", "\t", "def", "(x):", " ", "<|endoftext|>", "ſ", "İ", "\r\n"]


def pipeline_texts(*, max_size: int = 60, extra: Sequence[str] = ()) -> st.SearchStrategy[str]:
    """Unicode text for the Tokenizer: words, numbers, whitespace, scripts, and single
    pieces the pre-tokenizer cannot split (long letter, digit, space, symbol runs);
    ``extra`` strings (special-token literals, say) join the words."""
    words = st.lists(st.sampled_from(_WORDS + list(extra)), max_size=12).map("".join)
    runs = st.tuples(st.sampled_from(["a", "Z", "7", " ", "!", "é", "\n", "中", "*"]), st.integers(1, 80)).map(
        lambda p: p[0] * p[1])
    # no lone surrogates; no code point unassigned in Python's Unicode data: the libraries read
    # those with Unicode versions of their own (the README's known limit, measured in docs/parity.md)
    unicode = st.text(st.characters(exclude_categories=["Cs", "Cn"]), max_size=max_size)
    mixed = st.lists(st.one_of(words, runs, unicode), max_size=4).map(lambda parts: "".join(parts)[: 4 * max_size])
    return st.one_of(unicode, words, runs, mixed)


# ----------------------------------------------------------------------------- token masks (DFS trie)
#: characters the mask strategies build tokens and regexes from: ASCII, 2-, 3- and 4-byte UTF-8
MASK_CHARACTERS = "ab1_\"\\é東😀"


@st.composite
def mask_tokens(draw, *, max_tokens: int = 40) -> list[bytes | None]:
    """A token list (id -> bytes) for the mask properties: slices of strings over
    :data:`MASK_CHARACTERS` cut at any byte (so half characters occur), with duplicates,
    prefixes of one another, and ids left out (None or empty)."""
    text = draw(st.text(alphabet=MASK_CHARACTERS, min_size=1, max_size=12)).encode()
    pieces = st.builds(lambda i, j: text[min(i, j):max(i, j)],
                       st.integers(0, len(text)), st.integers(0, len(text)))
    single = st.binary(min_size=1, max_size=3)
    tokens = draw(st.lists(st.one_of(pieces, pieces, single, st.none()), min_size=1, max_size=max_tokens))
    if draw(st.booleans()):  # every single byte of the text, as real vocabularies have
        tokens += [bytes([b]) for b in sorted(set(text))]
    return tokens


@st.composite
def byte_tables(draw, *, max_states: int = 5) -> tuple[list[list[int]], list[bool]]:
    """(transitions, accepting) of a random DFA over bytes (dead = -1): only the bytes of
    :data:`MASK_CHARACTERS` and a few others get live transitions, so masks are neither
    all nor nothing."""
    n = draw(st.integers(1, max_states))
    live_bytes = sorted(set("".join(MASK_CHARACTERS).encode()) | {0, 0x7F, 0xFF})
    table = [[-1] * 256 for _ in range(n)]
    for s in range(n):
        for b in live_bytes:
            table[s][b] = draw(st.integers(-1, n - 1))
    accepting = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return table, accepting


_REGEX_ATOMS = ["a", "b", "1", "_", "é", "東", "😀", r"\"", r"\\", ".", "[ab]", "[^a]", "[a-z]", "[0-9_]",
                "[é東]", "[^é\"]", r"\d"]


def regexes(*, max_leaves: int = 6) -> st.SearchStrategy[str]:
    """Regexes both ``re`` and ``interegular`` read alike: atoms over :data:`MASK_CHARACTERS`
    (classes, negated classes, ``.``) combined by concatenation, alternation and repetition."""
    atoms = st.sampled_from(_REGEX_ATOMS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: p[0] + p[1]),
            st.tuples(inner, inner).map(lambda p: f"(?:{p[0]}|{p[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])).map(lambda p: f"(?:{p[0]}){p[1]}"),
        )

    return st.recursive(atoms, extend, max_leaves=max_leaves)


# ----------------------------------------------------------------------------- whole pipelines
_PIPELINE_UNITS = ["a", "b", "ab", "ba", " ", "  ", "\n", "*", "**", "0", "12", "\u2581", "\u2581a", "é", "'s", "."]


@st.composite
def pipeline_vocabulary_specs(draw, *, max_merges: int = 80) -> str:
    """A trained vocabulary that is a whole pipeline: a pre-tokenizer pattern, a normalizer and
    special tokens whose literals are made of the text's own characters (so they occur in
    text: raw encoding must not carve them, a Tokenizer carves only the allowed ones)."""
    units = st.lists(st.sampled_from(_PIPELINE_UNITS), min_size=1, max_size=30).map("".join)
    texts = draw(st.lists(units, min_size=1, max_size=3))
    literal = st.lists(st.sampled_from(["a", "b", "*", " ", "<", ">", "|"]), min_size=1, max_size=4).map("".join)
    rule = draw(st.sampled_from(["ranks", "merges"]))
    return trained_spec(
        [t.encode() for t in texts],
        merges=draw(st.integers(1, max_merges)), rule=rule, alphabet="all",
        shuffle=draw(st.sampled_from([0, 1])),
        disorder=draw(st.sampled_from([0, 0, 0, 1, 2])) if FEATURES["disorder"] else 0,
        drop=draw(st.sampled_from([0, 0, 1])) if rule == "merges" else 0,
        pattern=draw(st.sampled_from(["", "cl100k", "o200k", "gpt2", "llama3"])),
        normalizer=draw(st.sampled_from(["", "sentencepiece", "sentencepiece-no-prefix", "nfc",
                                         "sentencepiece-collapse"])),
        specials=draw(st.lists(literal, max_size=2, unique=True)),
    )
