"""Read Hugging Face ``tokenizer.json`` files with a BPE model, components and all.

The model becomes a ``"merges"`` :class:`~bpebench.algorithms.formats.vocabulary.Vocabulary`
(merge ``k`` has priority ``k``; a pair listed twice keeps its last rank, as HF's merge
map does; a pair that is not listed never merges). Its token strings are read in one of
two alphabets: byte-level (a ``ByteLevel`` component anywhere: GPT-2's 256 characters
standing for bytes) or UTF-8 text (Metaspace / byte-fallback BPE of the Llama-2 kind,
whose characters are assembled from bytes, see ``char_units``).

Everything else the file says is kept as the vocabulary's ``pipeline`` (the
``normalizer``, ``pre_tokenizer``, ``decoder`` and ``added_tokens`` dicts as written, and
the model options ``unk_token``, ``fuse_unk``, ``byte_fallback``, ``ignore_merges``,
``continuing_subword_prefix``, ``end_of_word_suffix``), which
``bpebench.algorithms.pipeline.hf_pipeline`` runs with HF's semantics. Every component is
built once at load time, so one that is not implemented is refused with a line naming
it, and so is ``dropout`` (random encodings). A file whose pipeline is exactly a known
covering pattern + byte-level BPE (+ NFC) also gets ``pattern`` / ``normalizer`` set, so
the Tokenizer keeps its fused compiled path for it.

Loading is linear in the size of the file; the result is exact (ids equal
``tokenizers.Tokenizer.encode(text, add_special_tokens=False)``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bpebench.errors import VocabularyError
from .byte_alphabet import bytes_to_token_text, bytes_to_unicode, token_text_to_bytes, unicode_to_bytes  # noqa: F401
from .vocabulary import Vocabulary


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


def _leaves(node: dict | None, key: str) -> list[dict]:
    """A component node flattened out of its ``Sequence`` wrappers."""
    if not isinstance(node, dict):
        return []
    if node.get("type") == "Sequence":
        return [leaf for child in node.get(key) or [] for leaf in _leaves(child, key)]
    return [node]


def _merge_pair(path: Path, index: int, merge: Any) -> tuple[str, str]:
    if isinstance(merge, str):
        parts = merge.split(" ")
        if len(parts) == 2:
            return parts[0], parts[1]
    elif isinstance(merge, list) and len(merge) == 2 and all(isinstance(p, str) for p in merge):
        return merge[0], merge[1]
    raise VocabularyError(f"{path}: merge {index} is {merge!r}; expected 'left right' or [left, right]")


#: ids may leave gaps, but not absurd ones (a small file claiming id 10**9 would allocate gigabytes)
MAX_ID_SLACK = 1 << 20


def _model_options(path: Path, model: dict, token_text: str) -> dict:
    dropout = model.get("dropout")
    if dropout not in (None, 0, 0.0):
        raise VocabularyError(f"{path}: BPE dropout={dropout} makes encoding random (each call may split"
                              " differently); bpebench only loads deterministic tokenizers")
    options = {"type": "BPE", "token_text": token_text}
    for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        value = model.get(key)
        if value is not None and not isinstance(value, str):
            raise VocabularyError(f"{path}: BPE {key}={value!r} is not a string")
        if value:
            options[key] = value
    for key in ("fuse_unk", "byte_fallback", "ignore_merges"):
        if model.get(key):
            options[key] = True
    return options


def _added_token_id(content: str, vocab_map: dict[str, int], assigned: dict[str, int]) -> int:
    """The id ``tokenizers`` gives an added token when it reads a file (it ignores the written one):
    the token's id in ``model.vocab`` or among the tokens added before it, else the vocabulary's size
    (its number of entries) or one past the largest added id, whichever is larger."""
    if content in assigned:
        return assigned[content]
    if content in vocab_map:
        return vocab_map[content]
    size = len(vocab_map)
    top = max(assigned.values(), default=None)
    return size if top is None or top < size else top + 1


def load_hf_tokenizer_json(path: str | Path, *, name: str | None = None) -> Vocabulary:
    """A ``"merges"`` Vocabulary, with its pipeline, from a BPE ``tokenizer.json``."""
    from ..pipeline.hf_pipeline import plain_form, validate_spec

    path = Path(path)
    data = read_tokenizer_json(path)
    model = data["model"]
    model_type = model.get("type", "BPE" if "merges" in model else None)
    if model_type != "BPE":
        raise VocabularyError(f"{path}: model type {model_type!r} is not BPE; only BPE models can be loaded")
    # the model sees byte-level characters only when a pre-tokenizer or normalizer maps the text to
    # them; a ByteLevel decoder alone changes nothing before the model (tokenizers then drops the
    # characters its vocabulary lacks, as in any character-level model)
    byte_level = any(leaf.get("type") == "ByteLevel" for node, key in (
        (data.get("pre_tokenizer"), "pretokenizers"), (data.get("normalizer"), "normalizers"))
        for leaf in _leaves(node, key))
    token_text = "byte_level" if byte_level else "utf-8"
    options = _model_options(path, model, token_text)

    vocab_map = model.get("vocab")
    if not isinstance(vocab_map, dict) or not vocab_map:
        raise VocabularyError(f"{path}: model.vocab is missing or empty")
    by_id: dict[int, str] = {}
    for text, token_id in vocab_map.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise VocabularyError(f"{path}: token {text!r} has id {token_id!r}; ids must be non-negative integers")
        if token_id in by_id:
            raise VocabularyError(f"{path}: duplicate id {token_id} (tokens {by_id[token_id]!r} and {text!r})")
        by_id[token_id] = text

    entries = data.get("added_tokens") or []
    if not isinstance(entries, list):
        raise VocabularyError(f"{path}: added_tokens is not a list")
    added: dict[int, str] = {}  # ids BPE must not produce: added-only ids and special model tokens
    added_specs = []
    assigned: dict[str, int] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise VocabularyError(f"{path}: added token {entry!r} is not an object")
        content, token_id = entry.get("content"), entry.get("id")
        if not isinstance(content, str) or not isinstance(token_id, int) or token_id < 0:
            raise VocabularyError(f"{path}: added token {entry!r} needs a 'content' string and a non-negative 'id'")
        if token_id in added and added[token_id] != content:
            raise VocabularyError(f"{path}: duplicate id {token_id} in added_tokens ({added[token_id]!r}, {content!r})")
        expected = _added_token_id(content, vocab_map, assigned)
        if token_id != expected:  # tokenizers ignores the written id: the file is damaged or hand-edited
            raise VocabularyError(f"{path}: added token {content!r} says id {token_id}, but tokenizers gives it id"
                                  f" {expected} (the id of that text in model.vocab, else the next free id); refused")
        assigned[content] = token_id
        added_specs.append({k: entry[k] for k in ("content", "id", "special", "normalized", "lstrip", "rstrip",
                                                  "single_word") if k in entry})
        if entry.get("special", False) or by_id.get(token_id) is None:
            added[token_id] = content
    largest = max([*by_id, *added])
    if largest >= len(by_id) + len(added) + MAX_ID_SLACK:
        raise VocabularyError(f"{path}: token ids are absurdly sparse (largest id {largest} for"
                              f" {len(by_id) + len(added)} tokens)")
    merges = [_merge_pair(path, index, merge) for index, merge in enumerate(model.get("merges") or [])]
    label = name or (path.parent.name if path.name == "tokenizer.json" else path.name.split(".")[0])
    spec = {
        "normalizer": data.get("normalizer"),
        "pre_tokenizer": data.get("pre_tokenizer"),
        "decoder": data.get("decoder"),
        "added_tokens": added_specs,
        "model": options,
    }
    validate_spec(spec, str(path))
    if byte_level:
        vocab = byte_level_vocabulary(by_id, merges, added, name=label, pattern=None,
                                      whole_piece_lookup=bool(options.get("ignore_merges")), source=str(path),
                                      prefix=options.get("continuing_subword_prefix", ""))
    else:
        from .char_units import char_level_vocabulary

        ids = {text: token_id for token_id, text in by_id.items()}
        fallback = {}
        if options.get("byte_fallback"):
            fallback = {b: ids[f"<0x{b:02X}>"] for b in range(256) if f"<0x{b:02X}>" in ids}
        unk = options.get("unk_token")
        vocab = char_level_vocabulary(by_id, merges, added, name=label, byte_fallback=fallback,
                                      unk_id=ids.get(unk) if unk else None, source=str(path),
                                      prefix=options.get("continuing_subword_prefix", ""))
    vocab.special_tokens = {e["content"]: e["id"] for e in added_specs if e.get("special")}
    vocab.pipeline = spec
    plain = plain_form(spec, all_bytes=bool((vocab.byte_token >= 0).all()) and not vocab.hidden)
    if plain is not None:
        vocab.pattern, vocab.normalizer = plain
    else:
        vocab.pattern, vocab.normalizer = None, "pipeline"
    return vocab


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
    prefix: str = "",
) -> Vocabulary:
    """A ``"merges"`` Vocabulary from byte-level token strings (id -> text), the merge list in
    priority order, and the added (special) tokens (id -> content).

    Shared by the ``tokenizer.json`` and the GGUF ``gpt2`` loaders. Ids used only by added
    tokens (or left unused) and model tokens that are also added tokens are ``excluded``:
    HF carves added tokens out of the text before BPE, so BPE never produces them.
    ``prefix``: HF's ``continuing_subword_prefix``, which a merge drops from its right part.
    """
    from .char_units import base_priorities, listed_merges, set_merge_priorities

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
        if raw is None and token_id in added:  # carved out of the text before BPE, never produced by it
            tokens[token_id] = text.encode("utf-8")
            excluded.add(token_id)
            continue
        if raw is None:
            raise VocabularyError(
                f"{where}: token {token_id} {text!r} is not in the byte-level alphabet; not a byte-level BPE model"
            )
        tokens[token_id] = raw
        if token_id in added:
            excluded.add(token_id)
    special_tokens = {content: token_id for token_id, content in added.items()}

    ids = {text: token_id for token_id, text in by_id.items()}
    priority = base_priorities(tokens, excluded)
    merge_table = listed_merges(merges, ids, barrier=excluded, where=where, prefix=prefix)
    set_merge_priorities(priority, merge_table)

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
