"""Which HF pre-tokenizers are a list of ``Isolated`` splits that the compiled regex list can run.

:func:`split_list` reads a ``tokenizer.json``-shaped spec (``Split`` steps, ``Digits``, ``Punctuation``
that isolates or joins runs, then ``ByteLevel``) into the regexes of those splits, in order; the
fused stage of a component pipeline (``hf_pipeline``) and the steps before a ``ByteLevel`` that
class steps follow (``class_split``) split with their ``ListSplitter``.

Complexity: linear in the spec. Exact: only shapes whose pieces are the list's are taken.
"""

from __future__ import annotations


def leaves(spec: dict | None, key: str) -> list[dict]:
    """The components of a spec, ``Sequence`` ones flattened (``key``: its list's name)."""
    if not spec:
        return []
    if spec.get("type") == "Sequence":
        return [leaf for child in spec.get(key) or [] for leaf in leaves(child, key)]
    return [spec]


def split_list(spec: dict | None, *, all_bytes: bool = True) -> tuple[str, ...] | None:
    """The regexes (as the file writes them) of a pre-tokenizer that is HF ``Split`` steps with
    ``Isolated`` behaviour run one after the other, ahead of byte-level BPE: ``Split`` leaves (a
    ``String`` pattern is its escaped text; ``Digits``, and ``Punctuation`` that isolates or joins
    runs, as a class of exactly the characters their tests take, ``hf_unicode.char_class``), then
    ``ByteLevel`` (its own regex last when ``use_regex``; a prefix space only when it is alone,
    ``hf_pipeline.prefix_space``). The model is plain
    byte-level BPE over a vocabulary that has a token for every byte, and no normalizer maps the
    text to byte-level characters. None for any other pipeline. Added tokens and normalizers are no part of it: the component pipeline carves
    and normalizes, then each stretch between added tokens is split by these regexes and encoded
    (``hf_pipeline.HFPipeline`` with a fused stage)."""
    import regex

    from .hf_unicode import char_class
    from .pretokenizers import BYTE_LEVEL_REGEX

    if spec is None or not all_bytes:
        return None
    model = spec.get("model") or {}
    if model.get("token_text", "byte_level") != "byte_level" or model.get("continuing_subword_prefix") \
            or model.get("end_of_word_suffix"):
        return None
    if any(leaf.get("type") == "ByteLevel" for leaf in leaves(spec.get("normalizer"), "normalizers")):
        return None
    parts = leaves(spec.get("pre_tokenizer"), "pretokenizers")
    if parts and parts[-1].get("type") == "ByteLevel":
        byte_level = parts.pop()
        if byte_level.get("add_prefix_space", True) and (parts or not byte_level.get("use_regex", True)):
            return None  # alone, its space goes before each stretch (``prefix_space``); after splits, before each piece
        if byte_level.get("use_regex", True):
            parts.append({"type": "Split", "pattern": {"Regex": BYTE_LEVEL_REGEX}})
    else:
        return None
    regexes = []
    for part in parts:
        kind = part.get("type")
        if kind == "Digits":  # each digit, or each run of them, a piece of its own
            regexes.append(char_class("numeric") + ("" if part.get("individual_digits", False) else "+"))
            continue
        if kind == "Punctuation" and part.get("behavior", "Isolated") in ("Isolated", "Contiguous"):
            regexes.append(char_class("punctuation") + ("+" if part.get("behavior") == "Contiguous" else ""))
            continue
        pattern = part.get("pattern") or {}
        if kind != "Split" or part.get("behavior", "Isolated") != "Isolated" or part.get("invert", False):
            return None
        if isinstance(pattern.get("Regex"), str):
            regexes.append(pattern["Regex"])
        elif isinstance(pattern.get("String"), str) and pattern["String"]:
            regexes.append(regex.escape(pattern["String"]))
        else:
            return None
    return tuple(regexes) or None
