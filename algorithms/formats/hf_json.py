"""Read Hugging Face ``tokenizer.json`` files with a byte-level BPE model.

Byte-level BPE (GPT-2, Llama-3, Qwen2, ...) writes every token as text in a
256-character alphabet that stands for the raw bytes (``Ġ`` is the space byte,
``Ċ`` the newline); :func:`bytes_to_unicode` is that alphabet and decoding a token
through it gives its bytes. The merges are taken exactly as listed
(``rule="merges"``): merge ``k`` has priority ``k``, and a pair that is not listed
never merges even when its concatenation is a token.

What is read, and how it maps onto a :class:`~bpebench.algorithms.formats.vocabulary.Vocabulary`:

* ``model.vocab`` / ``model.merges`` (``"a b"`` strings or ``["a", "b"]`` lists);
* ``model.ignore_merges`` -> ``whole_piece_lookup`` (HF emits a pre-tokenized piece
  that is a token as is; without it HF always runs the merges);
* ``added_tokens`` -> ``special_tokens``: those marked ``special`` and those the model
  vocabulary lacks (HF matches them in the text before pre-tokenizing, so a model
  token that is also a special token is excluded from BPE);
* ``pre_tokenizer``: a ``Split`` regex (+ ``ByteLevel(use_regex=false)``) becomes the
  ``pattern`` (the name from ``bpebench.algorithms.formats.patterns`` when it is a known one); a bare
  ``ByteLevel(use_regex=true)`` is the GPT-2 pattern;
* ``normalizer``: none or NFC.

Anything else (WordPiece/Unigram models, Metaspace / SentencePiece-style BPE,
prefix spaces, dropout, other normalizers) is refused with one clear line rather
than loaded with silently different behaviour.

Loading is linear in the size of the file; the result is exact (ids equal
``tokenizers.Tokenizer.encode`` for the supported configurations).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..kernels.compiled import NEVER
from bpebench.errors import VocabularyError
from .patterns import PATTERNS
from .vocabulary import Vocabulary


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (a bijection over all 256 bytes).

    Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls,
    space, DEL, NBSP, soft hyphen) take the characters from U+0100 on, in byte order.

    >>> bytes_to_unicode()[ord("a")], bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def token_text_to_bytes(text: str) -> bytes | None:
    """The bytes a byte-level token string stands for, or None if it uses other characters."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in text)
    except KeyError:
        return None


def bytes_to_token_text(data: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in data)


# ----------------------------------------------------------------------------- reading
def read_tokenizer_json(path: str | Path) -> dict[str, Any]:
    """The parsed JSON object, with one-line errors for unreadable, truncated or non-JSON files."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise VocabularyError(f"{path}: not a tokenizer.json (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # the parser stopped at the very end, or inside a string that runs to the end: cut short
        ends_early = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        what = "truncated JSON" if ends_early else "not valid JSON"
        raise VocabularyError(f"{path}: {what} (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise VocabularyError(f"{path}: not a tokenizer.json (no 'model' object)")
    return data


def _components(node: dict | None) -> list[dict]:
    """A pre-tokenizer / normalizer / decoder node flattened out of its ``Sequence`` wrappers."""
    if not node:
        return []
    if node.get("type") == "Sequence":
        key = "pretokenizers" if "pretokenizers" in node else "normalizers" if "normalizers" in node else "decoders"
        return [leaf for child in node.get(key, []) for leaf in _components(child)]
    return [node]


def _pattern_of(path: Path, data: dict) -> str | None:
    """The pre-tokenizer regex (a name from ``bpebench.algorithms.formats.patterns`` when it is a known one)."""
    parts = _components(data.get("pre_tokenizer"))
    decoders = {d.get("type") for d in _components(data.get("decoder"))}
    if "ByteLevel" not in decoders and not any(p.get("type") == "ByteLevel" for p in parts):
        raise VocabularyError(
            f"{path}: not a byte-level BPE tokenizer (no ByteLevel pre-tokenizer or decoder);"
            " SentencePiece-style tokenizer.json files are not supported, load the .model file instead"
        )
    pattern: str | None = None
    for part in parts:
        kind = part.get("type")
        if kind == "Split":
            if pattern is not None:
                raise VocabularyError(f"{path}: more than one Split pre-tokenizer is not supported")
            regex = (part.get("pattern") or {}).get("Regex")
            if regex is None:
                raise VocabularyError(f"{path}: only Split pre-tokenizers with a 'Regex' pattern are supported")
            if part.get("behavior", "Isolated") != "Isolated" or part.get("invert", False):
                raise VocabularyError(
                    f"{path}: Split behavior {part.get('behavior')!r} (invert={part.get('invert')}) is not supported;"
                    " only Isolated"
                )
            pattern = regex
        elif kind == "ByteLevel":
            if part.get("add_prefix_space", False):
                raise VocabularyError(f"{path}: ByteLevel add_prefix_space=true is not supported")
            if part.get("use_regex", True):
                if pattern is not None:
                    raise VocabularyError(f"{path}: a Split followed by ByteLevel(use_regex=true) is not supported")
                pattern = PATTERNS["gpt2"]
        else:
            raise VocabularyError(f"{path}: pre-tokenizer {kind!r} is not supported (Split and ByteLevel are)")
    if pattern is None:
        return None
    for name, known in PATTERNS.items():
        if known == pattern:
            return name
    return pattern


def _normalizer_of(path: Path, data: dict) -> str:
    kinds = [n.get("type") for n in _components(data.get("normalizer"))]
    if not kinds:
        return "none"
    if kinds == ["NFC"]:
        return "nfc"
    raise VocabularyError(f"{path}: normalizer {'+'.join(map(str, kinds))} is not supported (none or NFC)")


def _merge_pair(path: Path, index: int, merge: Any) -> tuple[str, str]:
    if isinstance(merge, str):
        parts = merge.split(" ")
        if len(parts) == 2:
            return parts[0], parts[1]
    elif isinstance(merge, list) and len(merge) == 2 and all(isinstance(p, str) for p in merge):
        return merge[0], merge[1]
    raise VocabularyError(f"{path}: merge {index} is {merge!r}; expected 'left right' or [left, right]")


def load_hf_tokenizer_json(path: str | Path, *, name: str | None = None) -> Vocabulary:
    """A ``"merges"`` Vocabulary from a byte-level BPE ``tokenizer.json``."""
    path = Path(path)
    data = read_tokenizer_json(path)
    model = data["model"]
    model_type = model.get("type", "BPE" if "merges" in model else None)
    if model_type != "BPE":
        raise VocabularyError(f"{path}: model type {model_type!r} is not BPE; only BPE models can be loaded")
    for option in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(option):
            raise VocabularyError(f"{path}: BPE option {option}={model[option]!r} is not supported")
    if model.get("dropout"):
        raise VocabularyError(f"{path}: BPE dropout={model['dropout']} makes encoding random; not supported")
    pattern = _pattern_of(path, data)
    normalizer = _normalizer_of(path, data)

    vocab_map = model.get("vocab")
    if not isinstance(vocab_map, dict) or not vocab_map:
        raise VocabularyError(f"{path}: model.vocab is missing or empty")
    by_id: dict[int, str] = {}
    for text, token_id in vocab_map.items():
        if not isinstance(token_id, int) or token_id < 0:
            raise VocabularyError(f"{path}: token {text!r} has id {token_id!r}; ids must be non-negative integers")
        if token_id in by_id:
            raise VocabularyError(f"{path}: duplicate id {token_id} (tokens {by_id[token_id]!r} and {text!r})")
        by_id[token_id] = text

    added: dict[int, str] = {}
    for entry in data.get("added_tokens") or []:
        content, token_id = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not isinstance(token_id, int):
            raise VocabularyError(f"{path}: added token {entry!r} needs a 'content' string and an integer 'id'")
        if token_id in added and added[token_id] != content:
            raise VocabularyError(f"{path}: duplicate id {token_id} in added_tokens ({added[token_id]!r}, {content!r})")
        if not entry.get("special", False) and by_id.get(token_id) is not None:
            continue  # an ordinary model token that is also listed as added: BPE produces it
        added[token_id] = content
    merges = [_merge_pair(path, index, merge) for index, merge in enumerate(model.get("merges") or [])]
    return byte_level_vocabulary(
        by_id, merges, added,
        name=name or (path.parent.name if path.name == "tokenizer.json" else path.name.split(".")[0]),
        pattern=pattern,
        normalizer=normalizer,
        whole_piece_lookup=bool(model.get("ignore_merges", False)),
        source=str(path),
    )


def byte_level_vocabulary(
    by_id: dict[int, str],
    merges: list[tuple[str, str]],
    added: dict[int, str],
    *,
    name: str,
    pattern: str | None,
    normalizer: str = "none",
    whole_piece_lookup: bool = False,
    source: str = "",
) -> Vocabulary:
    """A ``"merges"`` Vocabulary from byte-level token strings (id -> text), the merge list in
    priority order, and the added (special) tokens (id -> content).

    Shared by the ``tokenizer.json`` and the GGUF ``gpt2`` loaders. Ids used only by added
    tokens (or left unused) and model tokens that are also added tokens are ``excluded``:
    HF carves added tokens out of the text before BPE, so BPE never produces them.
    """
    where = source or name
    n = max([*by_id, *added]) + 1
    tokens: list[bytes] = [b""] * n
    excluded: set[int] = set()
    for token_id in range(n):
        text = by_id.get(token_id)
        if text is None:
            tokens[token_id] = added.get(token_id, "").encode("utf-8")
            excluded.add(token_id)
            continue
        raw = token_text_to_bytes(text)
        if raw is None:
            raise VocabularyError(
                f"{where}: token {token_id} {text!r} is not in the byte-level alphabet; not a byte-level BPE model"
            )
        tokens[token_id] = raw
        if token_id in added:
            excluded.add(token_id)
    special_tokens = {content: token_id for token_id, content in added.items()}

    ids = {text: token_id for token_id, text in by_id.items()}
    merge_table: dict[tuple[int, int], tuple[int, int]] = {}
    priority = np.full(n, NEVER, dtype=np.int64)
    for token_id, token in enumerate(tokens):
        if len(token) == 1 and token_id not in excluded:
            priority[token_id] = -1
    for index, (left_text, right_text) in enumerate(merges):
        left, right = ids.get(left_text), ids.get(right_text)
        merged = ids.get(left_text + right_text)
        if left is None or right is None or merged is None:
            missing = next(t for t, i in ((left_text, left), (right_text, right), (left_text + right_text, merged))
                           if i is None)
            raise VocabularyError(
                f"{where}: merge {index} {left_text!r} {right_text!r} references unknown token {missing!r}"
            )
        if (left, right) in merge_table or not excluded.isdisjoint((left, right, merged)):
            # a repeated pair (HF applies the first, best one), or a merge touching a special
            # token, whose literal HF always carves out of the text before BPE
            continue
        merge_table[(left, right)] = (index, merged)
        if priority[merged] == NEVER:
            priority[merged] = index

    return Vocabulary(
        name=name,
        tokens=tokens,
        priority=priority,
        rule="merges",
        merges=merge_table,
        special_tokens=special_tokens,
        pattern=pattern,
        normalizer=normalizer,
        excluded=frozenset(excluded),
        whole_piece_lookup=whole_piece_lookup,
        source=source,
    )
