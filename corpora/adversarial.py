"""Adversarial inputs: simple generators, each with the reason it is hard.

Every generator is seeded and O(size). Those that depend on a vocabulary take its
name (``vocab=``) and pick their material from it deterministically. The two that
need a search over the vocabulary (``backtracking-worst``, ``chunking-trap``) live
in :mod:`bpebench.corpora.search`.
"""

from __future__ import annotations

import random
import re

from .registry import register_corpus
from .util import clip_utf8, fill, repeat_to

_LOWER_ASCII = re.compile(rb"[a-z]+")


def lowercase_token_ids(vocab, *, min_len: int = 1) -> list[int]:
    """Ids of tokens made only of ASCII lowercase letters (one ``\\p{Ll}+`` run under every pattern)."""
    skip = set(vocab.excluded) | set(vocab.hidden)
    return [
        i for i, t in enumerate(vocab.tokens)
        if len(t) >= min_len and i not in skip and _LOWER_ASCII.fullmatch(t)
    ]


def _load(vocab: str):
    from bpebench.algorithms.formats import load_vocabulary

    return load_vocabulary(vocab)


# ----------------------------------------------------------------------------- runs
@register_corpus(
    "run-char",
    description="One character repeated (default 'a').",
    why_hard="the whole run is a single pre-tokenizer piece, so a pipeline hands BPE all n bytes at"
    " once and per-piece quadratic loops (tiktoken, naive) show; every pair has the same priority, so"
    " leftmost tie-breaking decides every merge.",
    category="adversarial",
)
def run_char(*, char: str = "a", size: int = 10_000) -> str:
    return repeat_to(char, size)


def self_incompatible_token(vocab) -> int:
    """The longest lowercase-ASCII token ``t`` for which ``t t`` is not a valid encoding (lowest id on ties)."""
    from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary, is_compatible

    tables = compile_vocabulary(vocab)
    best = -1
    for t in lowercase_token_ids(vocab, min_len=2):
        if tables.priority[t] >= NEVER or is_compatible(tables, t, t):
            continue
        if best < 0 or len(vocab.tokens[t]) > len(vocab.tokens[best]):
            best = t
    if best < 0:  # every lowercase token can follow itself: fall back to the longest one
        best = max(lowercase_token_ids(vocab, min_len=1), key=lambda t: (len(vocab.tokens[t]), -t))
    return best


@register_corpus(
    "run-token",
    description="One vocabulary token repeated: the longest lowercase token t for which 't t' is not a"
    " valid encoding (or `token=` given as text).",
    why_hard="every position starts a long overlapping match (the token and its shifts), and because"
    " 't t' is not valid BPE must merge across every copy boundary: greedy matching is wrong at each"
    " copy and compatibility checks or backtracking fire all along the run.",
    category="adversarial",
)
def run_token(*, vocab: str = "o200k_base", token: str | None = None, size: int = 10_000) -> str:
    if token is None:
        vocabulary = _load(vocab)
        token = vocabulary.tokens[self_incompatible_token(vocabulary)].decode("utf-8")
    return repeat_to(token, size)


def one_way_pair(vocab, seed: int = 0) -> tuple[int, int]:
    """Two lowercase tokens ``a, b`` (3+ bytes) with ``a b`` valid but ``b a`` not (seeded search)."""
    from bpebench.algorithms.kernels.compiled import NEVER, compile_vocabulary, is_compatible

    tables = compile_vocabulary(vocab)
    ids = [t for t in lowercase_token_ids(vocab, min_len=3) if tables.priority[t] < NEVER]
    rng = random.Random(seed)
    for _ in range(200_000):
        a, b = ids[rng.randrange(len(ids))], ids[rng.randrange(len(ids))]
        if is_compatible(tables, a, b) and not is_compatible(tables, b, a):
            return a, b
    return ids[0], ids[1]


@register_corpus(
    "run-pair",
    description="A pair of lowercase tokens 'a b' repeated, chosen so that 'a b' is a valid encoding but"
    " 'b a' is not.",
    why_hard="the copies cannot be encoded independently: at every 'b|a' seam BPE merges across, so"
    " the encoding of the run is not the pair repeated and per-seam decisions need look-ahead.",
    category="adversarial",
)
def run_pair(*, vocab: str = "o200k_base", size: int = 10_000, seed: int = 0) -> str:
    vocabulary = _load(vocab)
    a, b = one_way_pair(vocabulary, seed)
    return repeat_to((vocabulary.tokens[a] + vocabulary.tokens[b]).decode("utf-8"), size)


@register_corpus(
    "digits",
    description="Random decimal digits with no separator.",
    why_hard="pre-tokenizers cut digits into 1-3 digit pieces (many tiny pieces: per-piece overhead"
    " dominates, one piece per digit for Qwen), while raw BPE sees one long run whose many number"
    " tokens all overlap.",
    category="adversarial",
)
def digits(*, size: int = 10_000, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("0123456789") for _ in range(size))


_WHITESPACE_UNITS = [" " * k for k in (1, 1, 1, 2, 3, 4, 8, 16, 33, 64)] + ["\t", "\n", "\r\n", "\n\n",
                                                                              "\u00a0", "\u3000", "\u2003"]


@register_corpus(
    "whitespace",
    description="Runs of spaces (1-64) mixed with tabs, newlines, CRLF, no-break and ideographic spaces.",
    why_hard="'\\s+(?!\\S)' and '\\s*[\\r\\n]+' make regex engines look ahead and back off over the"
    " whole run, the vocabulary's long indentation tokens overlap at every position, and the Unicode"
    " spaces are multi-byte characters that are not ASCII whitespace.",
    category="adversarial",
)
def whitespace(*, size: int = 10_000, seed: int = 0) -> str:
    return fill(_WHITESPACE_UNITS, size, random.Random(seed))


@register_corpus(
    "letters-nospace",
    description="Random lowercase ASCII letters with no spaces.",
    why_hard="one giant pre-tokenizer piece (like a minified identifier or base64 without digits);"
    " random letters form few long tokens, so BPE performs nearly n merges of short tokens.",
    category="adversarial",
)
def letters_nospace(*, size: int = 10_000, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size))


@register_corpus(
    "unsplittable",
    description="A single unsplittable piece built from random lowercase-ASCII vocabulary tokens"
    " (one '\\p{Ll}+' run: every tiktoken/Llama/Qwen pattern yields exactly one piece).",
    why_hard="pre-tokenization cannot help, so the encoder's own complexity shows at full size: seed 001"
    " shows tiktoken quadratic on such input; the tokens are real, so merges are long and realistic"
    " (unlike random letters).",
    category="adversarial",
)
def unsplittable(*, vocab: str = "o200k_base", size: int = 10_000, seed: int = 0) -> str:
    vocabulary = _load(vocab)
    units = [vocabulary.tokens[i].decode("ascii") for i in lowercase_token_ids(vocabulary)]
    return fill(units, size, random.Random(seed))


# ----------------------------------------------------------------------------- unicode
_COMBINING = [chr(c) for c in range(0x0300, 0x0370)] + [chr(c) for c in range(0x1DC0, 0x1DD0)]


@register_corpus(
    "combining-marks",
    description="Letters each carrying a tower of 1..height combining marks (U+0300-036F, U+1DC0-1DCF),"
    " 'zalgo' text.",
    why_hard="marks are 2-3 byte characters that few tokens cover, so BPE leaves many short tokens;"
    " o200k counts \\p{M} as part of a word (one long piece) while cl100k splits the marks into"
    " punctuation-like pieces; normalizers would rewrite them.",
    category="adversarial",
)
def combining_marks(*, size: int = 10_000, seed: int = 0, height: int = 12) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size:
        cluster = rng.choice("abcdefghijklmnopqrstuvwxyzAEIOU") + "".join(
            rng.choice(_COMBINING) for _ in range(rng.randint(1, height))
        )
        out.append(cluster)
        total += len(cluster.encode("utf-8"))
    return clip_utf8("".join(out), size)


_ZWJ, _VS16 = "\u200d", "\ufe0f"
_PEOPLE = [chr(c) for c in (0x1F468, 0x1F469, 0x1F467, 0x1F466, 0x1F9D1, 0x1F474, 0x1F475)]
_SKIN = [chr(c) for c in range(0x1F3FB, 0x1F400)]
_OBJECTS = [chr(c) for c in (0x1F4BB, 0x1F52C, 0x1F680, 0x1F373, 0x1F3A8, 0x1F692, 0x2695, 0x2696, 0x1F33E)]


def _emoji_cluster(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:  # family: 2-4 people joined by ZWJ
        return _ZWJ.join(rng.choice(_PEOPLE) for _ in range(rng.randint(2, 4)))
    if kind == 1:  # profession with skin tone: person + tone + ZWJ + object (+ VS16 for text-default symbols)
        obj = rng.choice(_OBJECTS)
        return rng.choice(_PEOPLE) + rng.choice(_SKIN) + _ZWJ + obj + (_VS16 if ord(obj) < 0x10000 else "")
    if kind == 2:  # flag: two regional indicators
        return chr(0x1F1E6 + rng.randrange(26)) + chr(0x1F1E6 + rng.randrange(26))
    # couple with two skin tones: person tone ZWJ handshake ZWJ person tone
    return (rng.choice(_PEOPLE) + rng.choice(_SKIN) + _ZWJ + "\U0001F91D" + _ZWJ
            + rng.choice(_PEOPLE) + rng.choice(_SKIN))


@register_corpus(
    "emoji-zwj",
    description="Emoji ZWJ sequences (families, professions with skin tones, couples) and flags, with no"
    " spaces.",
    why_hard="4-byte code points glued by 3-byte ZWJs and variation selectors form one long"
    " '[^\\s\\p{L}\\p{N}]+' piece; vocabularies hold emoji fragments that end inside a code point, so"
    " token boundaries fall inside characters.",
    category="adversarial",
)
def emoji_zwj(*, size: int = 10_000, seed: int = 0) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size:
        cluster = _emoji_cluster(rng)
        out.append(cluster)
        total += len(cluster.encode("utf-8"))
    return clip_utf8("".join(out), size)


#: kinds of invalid UTF-8 mixed into ``invalid-utf8`` (each a function of the rng)
INVALID_UTF8_KINDS = {
    "lone continuation": lambda rng: bytes([rng.randrange(0x80, 0xC0)]),
    "truncated 3-byte": lambda rng: "東".encode()[:2],
    "truncated 4-byte": lambda rng: "😀".encode()[: rng.randint(1, 3)],
    "overlong": lambda rng: rng.choice([b"\xc0\xaf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xc1\xbf"]),
    "never valid": lambda rng: bytes([rng.choice([0xF5, 0xF8, 0xFC, 0xFE, 0xFF])]),
    "encoded surrogate": lambda rng: b"\xed" + bytes([rng.randrange(0xA0, 0xC0), rng.randrange(0x80, 0xC0)]),
    "random byte": lambda rng: bytes([rng.randrange(256)]),
}
_VALID_UNITS = [b"the ", b"data", "東京".encode(), "é".encode(), b"\n", "\U0001F600".encode(), b"123"]


@register_corpus(
    "invalid-utf8",
    kind="bytes",
    description="Bytes that are not UTF-8: lone continuation bytes, truncated sequences, overlong forms,"
    " 0xF5-0xFF, encoded surrogates, random bytes, between valid fragments.",
    why_hard="byte-level BPE must encode any bytes, but text pipelines cannot even decode them, and"
    " encoders that assume UTF-8 (char-boundary logic, str-based regexes) break; few tokens cover"
    " such bytes, so many single-byte tokens remain.",
    category="adversarial",
)
def invalid_utf8(*, size: int = 10_000, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    makers = list(INVALID_UTF8_KINDS.values())
    out = bytearray()
    while len(out) < size:
        out += rng.choice(_VALID_UNITS) if rng.random() < 0.5 else rng.choice(makers)(rng)
    return bytes(out[:size])
