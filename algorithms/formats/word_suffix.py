"""A byte-level BPE model with an end-of-word suffix (HF's ``end_of_word_suffix``: CLIP's and
OpenAI GPT's ``</w>``) as a plain byte vocabulary, so that the compiled BPE stage can run it.

HF starts a word from its characters, the last one with the suffix attached (``h e l l o</w>``),
then merges by rank. A token is then not the concatenation of its parts' bytes (``o</w>`` is one
starting symbol), so such models merged in Python. Here the suffix becomes one byte that UTF-8
text never holds, 0xFF (its byte-level token ``ÿ`` is then the word's end mark): ``o</w>`` is
``o`` + 0xFF, and a merge of every character with the mark, ranked before every listed merge,
forms the starting symbol first. A word's bytes with 0xFF after them then merge as HF merges the
word: the first merges join its last character and the mark (nothing else can go first), which is
HF's starting sequence; then the listed merges run in their own order.

Refused (None): a character-level model (its characters are assembled from helper units), a
continuing-subword prefix or ``ignore_merges``, a character without its suffixed token (HF would
emit the unknown token for it), and tokens whose new bytes would clash.

Complexity: linear in the vocabulary. Exact (tested against HF ``tokenizers``).
"""

from __future__ import annotations

from .byte_alphabet import token_text_to_bytes
from .char_units import base_priorities, set_merge_priorities
from .vocabulary import Vocabulary

#: the byte that stands for the suffix: never a byte of UTF-8 text
WORD_END = 0xFF


def word_end_vocabulary(vocabulary: Vocabulary) -> Vocabulary | None:
    """``vocabulary`` (an HF byte-level BPE model with ``end_of_word_suffix``) with the suffix as the
    byte :data:`WORD_END`, the same ids, or None where that is not exact (see the module)."""
    model = (vocabulary.pipeline or {}).get("model") or {}
    suffix = model.get("end_of_word_suffix") or ""
    if (not suffix or model.get("continuing_subword_prefix") or model.get("ignore_merges")
            or model.get("token_text", "byte_level") != "byte_level" or vocabulary.hidden
            or vocabulary.merges is None):
        return None
    suffix_bytes = token_text_to_bytes(suffix)
    mark = int(vocabulary.byte_token[WORD_END])
    if suffix_bytes is None or mark < 0:
        return None
    excluded = set(vocabulary.excluded)
    by_bytes = {data: token_id for token_id, data in enumerate(vocabulary.tokens) if token_id not in excluded}
    tokens = list(vocabulary.tokens)
    for token_id, data in enumerate(vocabulary.tokens):
        if token_id in excluded:
            continue
        if data == suffix_bytes:  # the suffix alone: never a symbol of a word
            excluded.add(token_id)
        elif data.endswith(suffix_bytes):
            tokens[token_id] = data[:-len(suffix_bytes)] + bytes([WORD_END])
        elif bytes([WORD_END]) in data and token_id != mark:  # text never holds the byte: unreachable
            excluded.add(token_id)
    live = [data for token_id, data in enumerate(tokens) if token_id not in excluded]
    if len(set(live)) != len(live):
        return None
    # every character first joins the word's end mark, before any listed merge
    starts = [token_id for token_id, data in enumerate(vocabulary.tokens)
              if len(data) == 1 and token_id not in excluded and token_id != mark]
    table: dict[tuple[int, int], tuple[int, int]] = {}
    for rank, token_id in enumerate(starts):
        suffixed = by_bytes.get(vocabulary.tokens[token_id] + suffix_bytes)
        if suffixed is None:
            return None
        table[(token_id, mark)] = (rank, suffixed)
    offset = len(starts)
    for (left, right), (rank, merged) in vocabulary.merges.items():
        if merged in excluded or left in excluded or right in excluded:
            continue
        if tokens[left] + tokens[right] != tokens[merged]:  # a suffixed token on the left, say
            return None
        table[(left, right)] = (rank + offset, merged)
    priority = base_priorities(tokens, excluded)
    set_merge_priorities(priority, table)
    derived = Vocabulary(name=f"{vocabulary.name} (word ends as byte 0xFF)", tokens=tokens,
                         priority=priority, rule="merges", merges=table,
                         special_tokens=dict(vocabulary.special_tokens), pattern=None, normalizer="pipeline",
                         excluded=frozenset(excluded), source=vocabulary.source)
    derived.pipeline = vocabulary.pipeline
    return derived
