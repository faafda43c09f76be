"""Properties of the DFS token trie and its allowed-token masks (seed 003).

The oracles are independent of the code under test: the masks are checked against
brute force (every token's bytes run through the recognizer on their own, in plain
Python) and the seed's recursive traversal over a nested dict; the flat layout
against a recursive build; the regex automata against Python's ``re.fullmatch``
on the same text, with a shortest completion of every viable prefix as witness.
"""

from __future__ import annotations

import re
from collections import deque

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from bpebench.algorithms.trie.dfs_trie import dfs_trie_from_tokens, path_bytes, reference_layout
from bpebench.algorithms.trie.masks import (
    BruteForceMasker,
    TokenMasker,
    brute_force_mask_python,
    recursive_mask,
)
from bpebench.algorithms.trie.recognizers import from_regex, from_table, utf8_sequences

from .strategies import MASK_CHARACTERS, byte_tables, mask_tokens, regexes


# ----------------------------------------------------------------------------- layout
@given(mask_tokens())
@example([b"a", b"b", b"c", b"ax", b"az", b"aya", b"ayb", b"aza"])  # the seed's drawing
@example([b"ab", b"ab", None, b"", b"a"])  # a duplicate, ids left out
def test_flat_layout_equals_the_recursive_build(tokens):
    trie = dfs_trie_from_tokens(tokens)
    byte, token, size, parents = reference_layout(tokens)
    assert trie.byte.tolist() == byte
    assert trie.token.tolist() == token
    assert trie.subtree_size.tolist() == size
    assert trie.num_parents.tolist() == parents


@given(mask_tokens())
def test_every_token_is_reached_by_its_own_bytes(tokens):
    trie = dfs_trie_from_tokens(tokens)
    token = trie.token
    owner = {int(t): node for node, t in enumerate(token) if t < len(tokens)}
    duplicates = dict(trie.duplicates.tolist())
    for token_id, data in enumerate(tokens):
        if not data:
            assert token_id not in owner and token_id not in duplicates
            continue
        node = owner[duplicates.get(token_id, token_id)]
        assert path_bytes(trie, node) == data
        assert tokens[duplicates.get(token_id, token_id)] == data
    assert len(set(owner)) == len(owner)  # one node per id


# ----------------------------------------------------------------------------- masks
def _assert_masks_agree(tokens, recognizer, state=None):
    expected = brute_force_mask_python(tokens, recognizer, state)
    masker = TokenMasker.from_tokens(tokens, recognizer)
    assert masker.mask(state).tolist() == expected.tolist()
    assert recursive_mask(tokens, recognizer, state).tolist() == expected.tolist()
    assert BruteForceMasker(tokens, recognizer).mask(state).tolist() == expected.tolist()
    assert masker.visited <= len(masker.trie) - 1


@given(mask_tokens(), byte_tables(), st.data())
def test_mask_of_a_random_automaton_equals_brute_force(tokens, table, data):
    transitions, accepting = table
    recognizer = from_table(transitions, accepting, 0)
    state = data.draw(st.integers(-1, recognizer.n_states - 1)) if recognizer.start >= 0 else -1
    _assert_masks_agree(tokens, recognizer, state)


@given(mask_tokens(), regexes())
@example([b"\xc3", b"\xc3\xa9", b"\xa9", b"e"], "é+")  # half a character is allowed, its tail alone is not
@example([b"ab", b"a"], "(?:a){2}")
def test_mask_of_a_regex_equals_brute_force(tokens, pattern):
    recognizer = from_regex(pattern)
    for state in range(-1, recognizer.n_states):
        _assert_masks_agree(tokens, recognizer, state)


# ----------------------------------------------------------------------------- regex automata
def _completion(recognizer, state: int) -> bytes | None:
    """A shortest byte string leading from ``state`` to an accepting state (breadth first)."""
    seen = {state: b""}
    queue = deque([state])
    while queue:
        s = queue.popleft()
        if recognizer.accepting[s]:
            return seen[s]
        for b in range(256):
            t = int(recognizer.transitions[s, b])
            if t >= 0 and t not in seen:
                seen[t] = seen[s] + bytes([b])
                queue.append(t)
    return None


@given(regexes(), st.lists(st.text(alphabet=MASK_CHARACTERS + "z\n", max_size=6), max_size=12))
@example(r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*', ["é\\n", "\\u00e9x", "\\u00g", "a\"", "東京"])
def test_regex_automaton_accepts_what_re_fullmatch_accepts(pattern, texts):
    recognizer = from_regex(pattern)
    compiled = re.compile(pattern)
    for text in texts:
        data = text.encode()
        assert recognizer.accepts(data) == bool(compiled.fullmatch(text)), text
        for cut in range(len(data) + 1):
            state = recognizer.run(data[:cut])
            if state >= 0:  # viable: some completion is a full match of the regex
                witness = data[:cut] + _completion(recognizer, state)
                assert compiled.fullmatch(witness.decode()), (data[:cut], witness)


@given(st.integers(0, 0x10FFFF), st.integers(0, 0x10FFFF), st.integers(0, 0x10FFFF))
@example(0x7F, 0x80, 0x80)
@example(0xD7FF, 0xE000, 0xD800)
def test_utf8_sequences_cover_exactly_the_range(a, b, probe):
    lo, hi = min(a, b), max(a, b)
    sequences = utf8_sequences(lo, hi)

    def matches(data: bytes) -> int:
        return sum(len(s) == len(data) and all(x <= c <= y for c, (x, y) in zip(data, s)) for s in sequences)

    for c in {lo, hi, probe, (lo + hi) // 2}:
        if 0xD800 <= c <= 0xDFFF:
            continue
        assert matches(chr(c).encode()) == (1 if lo <= c <= hi else 0), hex(c)
    total = sum(int(np.prod([y - x + 1 for x, y in s])) for s in sequences)
    surrogates = max(0, min(hi, 0xDFFF) - max(lo, 0xD800) + 1)
    assert total == hi - lo + 1 - surrogates
