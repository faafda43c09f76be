"""Pre-tokenizer patterns: the regular expressions real tokenizers split text with.

Each pattern is the exact string the upstream library uses (tiktoken's
``openai_public``, Meta's Llama-3 ``tokenizer.json``, Qwen's ``tokenization_qwen``, Mistral's ``tekken.json``),
so that a Tokenizer built on it splits text exactly as the peer does. They are
written for the third-party ``regex`` module (possessive quantifiers, ``\\p{..}``
classes, scoped ``(?i:...)``); the standard ``re`` module cannot run them.

>>> sorted(PATTERNS)[:3]
['cl100k', 'gpt2', 'llama3']
"""

from __future__ import annotations

#: GPT-2 / r50k / p50k. tiktoken ships this possessive form; it splits exactly like
#: the original ``'s|'t|...| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``.
GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

#: cl100k_base (GPT-3.5 / GPT-4).
CL100K = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""

#: o200k_base (GPT-4o): case-aware words with attached contractions.
O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: Llama-3 (tokenizer.json ``pre_tokenizer`` Split pattern).
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

#: Qwen / Qwen2: like Llama-3 but every digit is its own piece.
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

#: Mistral's Tekken (``tekken.json``, Mistral NeMo and later): o200k's words without the attached
#: contractions, and every digit its own piece.
TEKKEN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: Name -> pattern. Vocabularies refer to their pattern by one of these names.
PATTERNS: dict[str, str] = {
    "gpt2": GPT2,
    "cl100k": CL100K,
    "o200k": O200K,
    "llama3": LLAMA3,
    "qwen2": QWEN2,
    "tekken": TEKKEN,
}


def resolve_pattern(name_or_regex: str) -> str:
    """Return the regex for a pattern name; any other string is taken as a regex itself."""
    return PATTERNS.get(name_or_regex, name_or_regex)
