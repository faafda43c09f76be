"""Peers: the tokenizer libraries bpebench compares against, behind one small interface.

Every benchmark, property and report iterates over :func:`available_peers` (or
:func:`peer_status` for the reasons a peer is missing) so that no other module
names a library. A :class:`Peer` offers:

* ``encode_ordinary(text)``: the library's full pipeline (normalizer,
  pre-tokenizer, BPE), special-token literals treated as text;
* ``encode_raw(data)``: pure BPE over bytes without pre-tokenization, or None when
  the library cannot do that (``supports_raw`` says which);
* ``encode_with_specials(text)``: the library's own encode, special-token literals
  parsed as it parses them (tiktoken ``allowed_special="all"``, HF's default; sentencepiece
  never parses control pieces), when the peer offers it;
* ``count(text)``, ``decode(ids)``, ``piece(id)`` (one token as the library shows it),
  ``load_seconds`` (time to build it), and
  ``same_ids``: whether its ids agreed with bpebench's reference on a small
  verification sample (False for e.g. a bundled vocabulary whose ids differ).

Peers (all built offline from data in installed wheels or from the vocabulary):

=================  ===================================================================
``tiktoken``       ``tiktoken.Encoding`` from the vocabulary's ranks, pattern, specials
``hf-tokenizers``  ``tokenizers.Tokenizer``: the ``tokenizer.json`` itself, or a byte-level
                   BPE converted from a ranks vocabulary (merges from its derived splits)
``sentencepiece``  ``SentencePieceProcessor`` on the ``.model`` file
``mistral-common`` ``Tekkenizer`` on a ``tekken.json`` file
``bpe-openai``     its bundled ``cl100k_base`` / ``o200k_base``
``quicktok``       its bundled ``cl100k_base`` / ``o200k_base`` / ``qwen3``
``rs-bpe``         its bundled ``cl100k_base`` / ``o200k_base`` (raw BPE by backtracking)
``gigatoken``      ``gigatoken.Tokenizer.from_tiktoken(...).as_tiktoken()``: lists out
``gigatoken-numpy`` the same tokenizer's native ``encode`` (a ``uint32`` array out)
``fastokens``      ``fastokens.Tokenizer.from_tiktoken`` with the vocabulary's pattern (PCRE2)
``toktok``         toktok-rs's bundled ``cl100k_base`` / ``o200k_base``
``splintr``        its bundled ``cl100k_base`` / ``o200k_base``; other ranks with their pattern
``tokie``          ``tokie.Tokenizer.from_json`` on the ``tokenizer.json`` (converted for ranks)
``kitoken``        ``kitoken.Kitoken.from_tiktoken_file`` (it knows the OpenAI patterns only)
=================  ===================================================================

The peers that read a ranks file (gigatoken, fastokens, splintr, kitoken) get one written
from the vocabulary under ``$BPEBENCH_CACHE/peers`` (once per vocabulary fingerprint).

The exactness gate: every built peer is run on :data:`VERIFY_TEXTS` against the reference
(``naive``) pipeline; ``same_ids`` says whether it agreed and ``note`` names the first text
where it did not (tokie, for one, splits whitespace runs such as ``"a\\n \\nb"`` otherwise).
Benchmarks and reports time only peers that pass it, and say which did not.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..formats.vocabulary import Vocabulary

#: short texts every built peer is checked on (pre-tokenized pieces are short, so the
#: reference encoder is cheap here)
VERIFY_TEXTS = (
    "Hello world, it's 2026! Numbers 1234567 and  spaces\n\ttabs.",
    "naïve café 東京 مرحبا नमस्ते 👍🏽 e\u0301",
    "def f(x):\n    return x ** 2  # don't",
    "a\n \nb",  # whitespace runs ending in a newline before a space: \\s*[\\r\\n]+ against \\s+(?!\\S)
    "x  \n\n   \r\n\ty \u3000\u00a0z   ",
    "I'M HERE'S they'LL   'tis 1\u0663\u0967 12345 /path/to\n//x",
    "x <|endoftext|> y",  # a special-token literal is ordinary text here (kitoken cuts the text at it)
)


@dataclass
class Peer:
    """One library tokenizing one vocabulary. Build with :func:`available_peers`."""

    name: str
    library_version: str
    vocabulary_name: str
    encode_ordinary_fn: Callable[[str], list[int]] = field(repr=False)
    decode_fn: Callable[[Sequence[int]], str] = field(repr=False)
    encode_raw_fn: Callable[[bytes], list[int] | None] | None = field(default=None, repr=False)
    count_fn: Callable[[str], int] | None = field(default=None, repr=False)
    encode_special_fn: Callable[[str], list[int]] | None = field(default=None, repr=False)
    piece_fn: Callable[[int], bytes | str] | None = field(default=None, repr=False)
    load_seconds: float = 0.0
    same_ids: bool | None = None  # None until verified
    note: str = ""

    @property
    def supports_raw(self) -> bool:
        return self.encode_raw_fn is not None

    def encode_ordinary(self, text: str) -> list[int]:
        return list(self.encode_ordinary_fn(text))

    def encode_raw(self, data: bytes) -> list[int] | None:
        """Pure BPE over ``data``; None when the library cannot (or not for these bytes)."""
        if self.encode_raw_fn is None:
            return None
        ids = self.encode_raw_fn(data)
        return None if ids is None else list(ids)

    def encode_with_specials(self, text: str) -> list[int] | None:
        """The library's encode with special-token literals parsed as it parses them; None if not offered."""
        return None if self.encode_special_fn is None else list(self.encode_special_fn(text))

    def count(self, text: str) -> int:
        return self.count_fn(text) if self.count_fn is not None else len(self.encode_ordinary_fn(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self.decode_fn(list(ids))

    def piece(self, token_id: int) -> bytes | str:
        """One token as the library shows it: its bytes where the library gives them, else its text."""
        return self.piece_fn(token_id) if self.piece_fn is not None else self.decode_fn([token_id])


@dataclass(frozen=True)
class PeerSpec:
    """How to build one peer: its distribution, a check of what it can tokenize, a builder."""

    name: str
    distribution: str  # PyPI name, for the version and the install hint
    module: str  # import name
    unsupported: Callable[[Vocabulary], str | None]  # reason it cannot tokenize this vocabulary
    build: Callable[[Vocabulary], Peer]

    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def version(self) -> str:
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return "?"


# ----------------------------------------------------------------------------- helpers
def _plain_text_vocabulary(vocab: Vocabulary) -> str | None:
    """Why a byte-level pipeline peer (tiktoken, converted HF) cannot reproduce ``vocab``."""
    if vocab.hidden or vocab.normalizer not in ("none", "nfc"):
        return f"normalizer {vocab.normalizer!r} (SentencePiece-style vocabulary)"
    if vocab.llama_cpp is not None:
        return "llama.cpp's pre-tokenizer and special-token rules (GGUF) have no tiktoken/HF equivalent"
    if not vocab.pattern:
        return "the vocabulary has no pre-tokenizer pattern"
    return None


def _normalize(vocab: Vocabulary | None) -> Callable[[str], str]:
    """What the peer must do to the text first (None: the library applies the file's own normalizer)."""
    if vocab is not None and vocab.normalizer == "nfc":
        return lambda text: unicodedata.normalize("NFC", text)
    return lambda text: text


def _source_kind(vocab: Vocabulary) -> str | None:
    """The file format the vocabulary was loaded from ('hf', 'sentencepiece', ...), if a file."""
    if not vocab.source or not Path(vocab.source).is_file():
        return None
    from bpebench.errors import VocabularyError
    from ..formats import sniff_format

    try:
        return sniff_format(Path(vocab.source))
    except VocabularyError:
        return None


def _builtin_name(vocab: Vocabulary, names: Sequence[str]) -> str | None:
    """``vocab``'s name if it is one of the built-in vocabularies ``names`` (loaded from the wheels)."""
    from bpebench.errors import BpebenchError
    from ..formats import BUILTIN, load_vocabulary

    if vocab.name not in names or vocab.name not in BUILTIN:
        return None
    try:
        builtin = load_vocabulary(vocab.name)
    except BpebenchError:  # the wheel with the data is not installed
        return None
    return vocab.name if vocab is builtin or vocab.fingerprint == builtin.fingerprint else None


# ----------------------------------------------------------------------------- tiktoken
def _tiktoken_unsupported(vocab: Vocabulary) -> str | None:
    if _source_kind(vocab) == "tiktoken":  # tiktoken reads the rank file itself
        return _plain_text_vocabulary(vocab)
    if vocab.rule != "ranks":
        return "tiktoken needs a ranks vocabulary (this one lists its merges)"
    if any(vocab.tokens[i] for i in vocab.excluded):  # empty placeholders (gaps in the ranks) are fine
        return "the vocabulary has excluded ids"
    if not np.array_equal(vocab.priority, np.arange(len(vocab.tokens))):
        return "tiktoken needs rank = id for every token"
    return _plain_text_vocabulary(vocab)


def _tiktoken_ranks(vocab: Vocabulary) -> dict[bytes, int]:
    """The ranks as tiktoken has them: read by tiktoken's own loader from the rank file the
    vocabulary came from (gzip undone first, tiktoken's by-path cache off, so an edited file
    is read afresh), else the vocabulary's tokens in id order."""
    if _source_kind(vocab) != "tiktoken":  # empty placeholders (gaps in the ranks) are left out
        return {token: rank for rank, token in enumerate(vocab.tokens) if rank not in vocab.excluded}
    import gzip
    import os
    import tempfile

    from tiktoken.load import load_tiktoken_bpe

    data = Path(vocab.source).read_bytes()
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""  # no cache
    try:
        if data[:2] != b"\x1f\x8b":
            return load_tiktoken_bpe(vocab.source)
        with tempfile.TemporaryDirectory() as scratch:
            plain = Path(scratch, Path(vocab.source).name.removesuffix(".gz"))
            plain.write_bytes(gzip.decompress(data))
            return load_tiktoken_bpe(str(plain))
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def _tiktoken_build(vocab: Vocabulary) -> Peer:
    import tiktoken

    from ..formats.patterns import resolve_pattern

    encoding = tiktoken.Encoding(
        name=f"bpebench-{vocab.name}",
        pat_str=resolve_pattern(vocab.pattern),
        mergeable_ranks=_tiktoken_ranks(vocab),
        special_tokens=dict(vocab.special_tokens),
    )
    normalize = _normalize(vocab)
    return Peer(
        name="tiktoken", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=lambda text: encoding.encode_ordinary(normalize(text)),
        encode_raw_fn=getattr(encoding, "_encode_single_piece", None),  # private, but stable since 0.4
        encode_special_fn=lambda text: encoding.encode(normalize(text), allowed_special="all"),
        decode_fn=encoding.decode,
        piece_fn=encoding.decode_single_token_bytes,
    )


# ----------------------------------------------------------------------------- HF tokenizers
def _hf_unsupported(vocab: Vocabulary) -> str | None:
    if _source_kind(vocab) == "hf":
        return None
    if vocab.rule != "ranks":
        return "only tokenizer.json files and ranks vocabularies can be given to HF tokenizers"
    return _plain_text_vocabulary(vocab)


def merges_in_priority_order(vocab: Vocabulary) -> list[tuple[int, int]]:
    """``(left, right)`` token ids of every merge, in priority order: each reachable token as the
    merge of its derived split (what a merge-list file, HF's or GGUF's, holds)."""
    left, right = vocab.splits
    formed = np.flatnonzero(left >= 0)
    formed = formed[np.argsort(vocab.priority[formed], kind="stable")]
    return [(int(left[t]), int(right[t])) for t in formed]


def hf_tokenizer_from_vocabulary(vocab: Vocabulary):
    """A byte-level BPE ``tokenizers.Tokenizer`` equivalent to a ranks vocabulary.

    Merges are the vocabulary's derived splits in priority order (each reachable token
    is the merge of its split); the Split pattern and ``ByteLevel(use_regex=False)``
    reproduce the pre-tokenizer; ``ignore_merges`` reproduces the whole-piece lookup.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    from ..formats.hf_json import bytes_to_token_text
    from ..formats.patterns import resolve_pattern

    # Oniguruma (HF's regex engine) reads ``{1,3}+`` as "{1,3}, one or more times", not as a
    # possessive interval; a possessive interval at the end of a branch is a greedy one
    pattern = re.sub(r"(\{\d+(?:,\d*)?\})\+", r"\1", resolve_pattern(vocab.pattern))
    texts = [bytes_to_token_text(t) for t in vocab.tokens]
    vocab_map = {text: i for i, text in enumerate(texts) if i not in vocab.excluded}
    for special, token_id in vocab.special_tokens.items():
        vocab_map[special] = token_id
    merges = [(texts[a], texts[b]) for a, b in merges_in_priority_order(vocab)]
    model = models.BPE(vocab=vocab_map, merges=merges, ignore_merges=vocab.whole_piece_lookup)
    tokenizer = Tokenizer(model)
    if vocab.normalizer == "nfc":
        tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    specials = sorted(vocab.special_tokens, key=vocab.special_tokens.__getitem__)
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return tokenizer


def _hf_build(vocab: Vocabulary) -> Peer:
    from tokenizers import Tokenizer, pre_tokenizers

    if _source_kind(vocab) == "hf":
        tokenizer = Tokenizer.from_file(vocab.source)
        how = "the tokenizer.json itself"
    else:
        tokenizer = hf_tokenizer_from_vocabulary(vocab)
        how = "converted from the ranks (merges = derived splits)"
    with_specials = Tokenizer.from_str(tokenizer.to_str())  # HF's default: added tokens are parsed
    tokenizer.encode_special_tokens = True  # literals are text in encode_ordinary
    raw = Tokenizer.from_str(tokenizer.to_str())
    raw.normalizer = None
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    raw.encode_special_tokens = True

    def encode_raw(data: bytes) -> list[int] | None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # HF takes text: bytes that are not UTF-8 cannot be given to it
        return raw.encode(text, add_special_tokens=False).ids

    return Peer(
        name="hf-tokenizers", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=lambda text: tokenizer.encode(text, add_special_tokens=False).ids,
        encode_raw_fn=encode_raw,
        encode_special_fn=lambda text: with_specials.encode(text, add_special_tokens=False).ids,
        decode_fn=lambda ids: tokenizer.decode(ids, skip_special_tokens=False),
        note=how,
    )


# ----------------------------------------------------------------------------- sentencepiece
def _spm_unsupported(vocab: Vocabulary) -> str | None:
    if _source_kind(vocab) != "sentencepiece":
        return "sentencepiece only reads its own .model files"
    return None


def _spm_build(vocab: Vocabulary) -> Peer:
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=vocab.source)
    return Peer(
        name="sentencepiece", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=processor.encode,
        encode_special_fn=processor.encode,  # sentencepiece never parses control pieces out of text
        decode_fn=processor.decode,
        piece_fn=processor.id_to_piece,
        note="encodes the normalized text as one piece; control tokens decode to ''",
    )


# ----------------------------------------------------------------------------- mistral-common (tekken.json)
def _tekken_unsupported(vocab: Vocabulary) -> str | None:
    if _source_kind(vocab) != "tekken":
        return "mistral-common's Tekkenizer only reads its own tekken.json files"
    return None


def _tekken_build(vocab: Vocabulary) -> Peer:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tekken = Tekkenizer.from_file(vocab.source)

    def encode(text: str) -> list[int]:
        return tekken.encode(text, bos=False, eos=False)

    return Peer(
        name="mistral-common", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=encode,
        encode_special_fn=encode,  # Tekkenizer never parses special tokens out of text
        decode_fn=tekken.decode,
        piece_fn=tekken.id_to_byte_piece,
        note="Tekkenizer.encode(bos=False, eos=False)",
    )


# ----------------------------------------------------------------------------- bundled vocabularies
_OPENAI = ("cl100k_base", "o200k_base")


def _bundled_unsupported(names: Sequence[str]) -> Callable[[Vocabulary], str | None]:
    def check(vocab: Vocabulary) -> str | None:
        if _builtin_name(vocab, names) is None:
            return f"bundles only {', '.join(names)}"
        return None
    return check


def _bpe_openai_build(vocab: Vocabulary) -> Peer:
    import warnings

    with warnings.catch_warnings():  # it reads its data with a deprecated importlib.resources call
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        encoding = bpe_openai.get_encoding(vocab.name)
        encoding.encode_ordinary("warm up")  # its tables load lazily, on the first call
    return Peer(
        name="bpe-openai", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=encoding.encode_ordinary,
        count_fn=getattr(getattr(encoding, "_backend", None), "count", None),
        decode_fn=encoding.decode,
    )


_QUICKTOK_NAMES = {"cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "qwen": "qwen3"}


def _quicktok_build(vocab: Vocabulary) -> Peer:
    import quicktok

    bundled = _QUICKTOK_NAMES[vocab.name]
    encoding = quicktok.get_encoding(bundled)
    return Peer(
        name="quicktok", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=encoding.encode_ordinary,
        count_fn=encoding.count,
        decode_fn=encoding.decode,
        note=f"bundled {bundled!r}",
    )


def _rs_bpe_build(vocab: Vocabulary) -> Peer:
    from rs_bpe.bpe import openai

    tokenizer = getattr(openai, vocab.name)()
    bpe = tokenizer.bpe()
    return Peer(
        name="rs-bpe", library_version="", vocabulary_name=vocab.name,
        encode_ordinary_fn=tokenizer.encode,
        encode_raw_fn=bpe.encode_via_backtracking,
        count_fn=tokenizer.count,
        decode_fn=tokenizer.decode,
    )


# ----------------------------------------------------------------------------- the fast Rust peers
#: our pattern names -> gigatoken's pre-tokenizer names
_GIGATOKEN_PATTERNS = {"gpt2": "gpt2", "cl100k": "cl100k", "o200k": "o200k", "qwen2": "qwen2"}


def _ranks_file(vocab: Vocabulary) -> str:
    """A ``.tiktoken`` file of ``vocab``'s ranks (written once per fingerprint under
    ``$BPEBENCH_CACHE/peers``) for the peers that only read files."""
    import base64
    import os
    import tempfile

    from ..cache.vocabularies import cache_dir

    root = cache_dir()
    folder = (root.parent if root is not None else Path(tempfile.gettempdir()) / "bpebench") / "peers"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{vocab.fingerprint[:32]}.tiktoken"
    if not path.exists():
        lines = b"".join(base64.b64encode(token) + b" %d\n" % rank for rank, token in enumerate(vocab.tokens))
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_bytes(lines)
        os.replace(scratch, path)
    return str(path)


def _pattern_name(vocab: Vocabulary) -> str | None:
    from ..formats.patterns import PATTERNS

    if vocab.pattern in PATTERNS:
        return vocab.pattern
    return next((name for name, text in PATTERNS.items() if text == vocab.pattern), None)


def _hf_file_or_ranks(vocab: Vocabulary) -> str | None:
    """None when a peer that reads ``tokenizer.json`` files and rank files can take ``vocab``."""
    if _source_kind(vocab) == "hf":
        return None
    return _tiktoken_unsupported(vocab)


def _gigatoken_unsupported(vocab: Vocabulary) -> str | None:
    if _source_kind(vocab) == "hf":
        return None
    reason = _tiktoken_unsupported(vocab)
    if reason is None and _GIGATOKEN_PATTERNS.get(_pattern_name(vocab) or "") is None:
        return f"gigatoken has no pre-tokenizer for the pattern {vocab.pattern!r}"
    return reason


def _gigatoken_tokenizer(vocab: Vocabulary):
    import gigatoken

    if _source_kind(vocab) == "hf":
        return gigatoken.Tokenizer(vocab.source)
    # without special tokens: gigatoken always carves the ones it knows out of the text (its
    # ``encode_ordinary`` raises on a literal), while ``encode_ordinary`` must treat them as text
    return gigatoken.Tokenizer.from_tiktoken(_ranks_file(vocab), pretokenizer=_GIGATOKEN_PATTERNS[_pattern_name(vocab)],
                                             special_tokens={})


def _gigatoken_build(vocab: Vocabulary) -> Peer:
    encoding = _gigatoken_tokenizer(vocab).as_tiktoken()
    normalize = _normalize(vocab)
    return Peer(name="gigatoken", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=lambda text: encoding.encode_ordinary(normalize(text)),
                decode_fn=encoding.decode, note="as_tiktoken(): lists out")


def _gigatoken_numpy_build(vocab: Vocabulary) -> Peer:
    tokenizer = _gigatoken_tokenizer(vocab)
    normalize = _normalize(vocab)
    return Peer(name="gigatoken-numpy", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=lambda text: tokenizer.encode(normalize(text)),
                decode_fn=lambda ids: tokenizer.decode(list(ids)).decode("utf-8", "replace"),
                note="native encode: a uint32 array out")


def _fastokens_build(vocab: Vocabulary) -> Peer:
    import fastokens

    from ..formats.patterns import resolve_pattern

    if _source_kind(vocab) == "hf":
        tokenizer = fastokens.Tokenizer.from_file(vocab.source)
        normalize = _normalize(None)
    else:
        tokenizer = fastokens.Tokenizer.from_tiktoken(_ranks_file(vocab), pattern=resolve_pattern(vocab.pattern),
                                                      special_tokens=dict(vocab.special_tokens))
        normalize = _normalize(vocab)
    return Peer(name="fastokens", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=lambda text: tokenizer.encode_ordinary(normalize(text)).ids,
                decode_fn=tokenizer.decode)


def _toktok_build(vocab: Vocabulary) -> Peer:
    import toktok

    encoding = toktok._encoding(vocab.name)  # its full encode surface (the public API only counts)
    return Peer(name="toktok", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=encoding.encode_ordinary, count_fn=encoding.count,
                decode_fn=encoding.decode, note=f"bundled {vocab.name!r}")


def _splintr_unsupported(vocab: Vocabulary) -> str | None:
    from ..formats.patterns import resolve_pattern

    reason = _tiktoken_unsupported(vocab)
    if reason is None and _builtin_name(vocab, _OPENAI) is None and re.search(r"[+*?}]\+", resolve_pattern(vocab.pattern)):
        return "splintr's regex engine has no possessive quantifiers (it bundles cl100k_base, o200k_base)"
    return reason


def _splintr_build(vocab: Vocabulary) -> Peer:
    import splintr

    from ..formats.patterns import resolve_pattern

    if _builtin_name(vocab, _OPENAI) is not None:
        tokenizer = splintr.Tokenizer.from_pretrained(vocab.name)
    else:
        tokenizer = splintr.Tokenizer(_ranks_file(vocab), resolve_pattern(vocab.pattern), dict(vocab.special_tokens))
    normalize = _normalize(vocab)
    return Peer(name="splintr", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=lambda text: tokenizer.encode_ordinary(normalize(text)),
                decode_fn=tokenizer.decode)


def _tokie_build(vocab: Vocabulary) -> Peer:
    import tokie

    if _source_kind(vocab) == "hf":
        path = vocab.source
    else:
        path = _ranks_file(vocab)[: -len(".tiktoken")] + ".tokenizer.json"
        if not Path(path).exists():
            hf_tokenizer_from_vocabulary(vocab).save(path)
    tokenizer = tokie.Tokenizer.from_json(str(path))
    return Peer(name="tokie", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=lambda text: tokenizer.encode(text, add_special_tokens=False).ids,
                decode_fn=tokenizer.decode)


def _kitoken_build(vocab: Vocabulary) -> Peer:
    import kitoken

    encoder = kitoken.Kitoken.from_tiktoken_file(_ranks_file(vocab))
    return Peer(name="kitoken", library_version="", vocabulary_name=vocab.name,
                encode_ordinary_fn=encoder.encode, decode_fn=lambda ids: encoder.decode(list(ids)).decode("utf-8", "replace"))


PEERS: dict[str, PeerSpec] = {
    spec.name: spec
    for spec in [
        PeerSpec("tiktoken", "tiktoken", "tiktoken", _tiktoken_unsupported, _tiktoken_build),
        PeerSpec("hf-tokenizers", "tokenizers", "tokenizers", _hf_unsupported, _hf_build),
        PeerSpec("sentencepiece", "sentencepiece", "sentencepiece", _spm_unsupported, _spm_build),
        PeerSpec("mistral-common", "mistral-common", "mistral_common", _tekken_unsupported, _tekken_build),
        PeerSpec("bpe-openai", "bpe-openai", "bpe_openai", _bundled_unsupported(_OPENAI), _bpe_openai_build),
        PeerSpec("quicktok", "quicktok-v1", "quicktok", _bundled_unsupported(tuple(_QUICKTOK_NAMES)),
                 _quicktok_build),
        PeerSpec("rs-bpe", "rs_bpe", "rs_bpe", _bundled_unsupported(_OPENAI), _rs_bpe_build),
        PeerSpec("gigatoken", "gigatoken", "gigatoken", _gigatoken_unsupported, _gigatoken_build),
        PeerSpec("gigatoken-numpy", "gigatoken", "gigatoken", _gigatoken_unsupported, _gigatoken_numpy_build),
        PeerSpec("fastokens", "fastokens", "fastokens", _hf_file_or_ranks, _fastokens_build),
        PeerSpec("toktok", "toktok-rs", "toktok", _bundled_unsupported(_OPENAI), _toktok_build),
        PeerSpec("splintr", "splintr-rs", "splintr", _splintr_unsupported, _splintr_build),
        PeerSpec("tokie", "tokie", "tokie", _hf_unsupported, _tokie_build),
        PeerSpec("kitoken", "kitoken", "kitoken", _bundled_unsupported(_OPENAI), _kitoken_build),
    ]
}

_BUILT: dict[tuple[str, str], Peer] = {}


def peer_names() -> list[str]:
    return list(PEERS)


def peer_status(vocab: Vocabulary) -> list[tuple[str, bool, str]]:
    """For every known peer: (name, can it tokenize ``vocab`` here, why not / library version).

    Cheap: nothing is built.
    """
    status = []
    for spec in PEERS.values():
        if not spec.installed():
            status.append((spec.name, False, f"not installed (pip install {spec.distribution})"))
            continue
        reason = spec.unsupported(vocab)
        status.append((spec.name, reason is None, reason or f"{spec.distribution} {spec.version()}"))
    return status


def verify_peer(peer: Peer, vocab: Vocabulary, texts: Sequence[str] = VERIFY_TEXTS) -> bool:
    """Do the peer's ids equal bpebench's reference pipeline on ``texts``? Sets ``peer.same_ids``."""
    from ..pipeline.tokenizer import Tokenizer

    reference = Tokenizer(vocab, algorithm="naive")
    differs = None
    for text in texts:
        try:
            agrees = peer.encode_ordinary(text) == reference.encode_ordinary(text)
        except Exception as exc:  # noqa: BLE001 - a peer that raises on a text fails the gate
            differs = f"{text!r} raised {type(exc).__name__}"
            break
        if not agrees:
            differs = repr(text)
            break
    peer.same_ids = differs is None
    if not peer.same_ids:
        peer.note = "; ".join(filter(None, [peer.note, f"NOT EXACT: ids differ from the reference on {differs}"]))
    return peer.same_ids


def make_peer(name: str, vocab: Vocabulary, *, verify: bool = True) -> Peer:
    """Build (memoised per vocabulary) the peer ``name`` for ``vocab``; BpebenchError if it cannot."""
    from bpebench.errors import BpebenchError, UnknownNameError

    spec = PEERS.get(name)
    if spec is None:
        raise UnknownNameError("peer", name, peer_names())
    key = (name, vocab.fingerprint, vocab.pattern)  # the pattern is no part of the fingerprint
    peer = _BUILT.get(key)
    if peer is None:
        if not spec.installed():
            raise BpebenchError(f"peer {name} is not installed (pip install {spec.distribution})")
        reason = spec.unsupported(vocab)
        if reason is not None:
            raise BpebenchError(f"peer {name} cannot tokenize {vocab.name}: {reason}")
        start = time.perf_counter()
        try:
            peer = spec.build(vocab)
        except BpebenchError:
            raise
        except Exception as exc:  # the library refuses the file: one line, not its traceback
            first_line = (str(exc).strip().splitlines() or [""])[0]
            raise BpebenchError(f"{spec.distribution} cannot read {vocab.source or vocab.name}:"
                                f" {type(exc).__name__}: {first_line}") from None
        peer.load_seconds = time.perf_counter() - start
        peer.library_version = spec.version()
        _BUILT[key] = peer
    if verify and peer.same_ids is None:
        verify_peer(peer, vocab)
    return peer


def available_peers(vocab: Vocabulary, *, verify: bool = True) -> list[Peer]:
    """Every installed peer that can tokenize ``vocab``, built (and verified) once per process."""
    return [make_peer(name, vocab, verify=verify) for name, ok, _ in peer_status(vocab) if ok]
