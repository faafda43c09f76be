"""Random-token text: vocabulary tokens drawn uniformly and concatenated (seed 001's benchmark input).

Only tokens whose bytes are valid UTF-8 on their own are drawn (and never special,
excluded or helper tokens), so the concatenation is valid UTF-8 and the same text
can feed raw encoders (as bytes) and pipelines (as str). Unlike natural text, every
token of the vocabulary is equally likely, so rare long tokens and odd merges show
up as often as common words. O(size) to build once the vocabulary is loaded.
"""

from __future__ import annotations

import random

from .registry import register_corpus


def utf8_token_ids(vocab) -> list[int]:
    """Ids of the tokens BPE may produce whose bytes are valid UTF-8 by themselves, in id order."""
    skip = set(vocab.excluded) | set(vocab.hidden)
    ids = []
    for token_id, token in enumerate(vocab.tokens):
        if not token or token_id in skip:
            continue
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            continue
        ids.append(token_id)
    return ids


@register_corpus(
    "random-tokens",
    description="Uniformly random tokens of a vocabulary (only tokens that are valid UTF-8 alone),"
    " concatenated: the input of seed 001's encoding benchmarks.",
    category="random",
)
def random_tokens(*, vocab: str = "o200k_base", size: int = 120_000, seed: int = 0) -> str:
    from bpebench.algorithms.formats import load_vocabulary

    vocabulary = load_vocabulary(vocab)
    ids = utf8_token_ids(vocabulary)
    rng = random.Random(seed)
    tokens = vocabulary.tokens
    out: list[bytes] = []
    total = 0
    while total < size:
        token = tokens[ids[rng.randrange(len(ids))]]
        if total + len(token) > size:
            # close the gap with single-byte ASCII tokens so the text is exactly `size` bytes
            out.append(bytes(rng.randrange(97, 123) for _ in range(size - total)))
            break
        out.append(token)
        total += len(token)
    return b"".join(out).decode("utf-8")
