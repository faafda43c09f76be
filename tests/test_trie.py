"""The DFS token trie and its masks on real vocabularies, against independent oracles.

* the seed's (003) drawing, worked by hand;
* the built-in recognizers on o200k_base / cl100k_base: each mask equals the plain
  definition of the recognizer applied to every token (``re.fullmatch`` of the
  identifier and digit classes, "is a prefix of a keyword"), brute force, and
  llguidance (a separate implementation in Rust);
* SentencePiece vocabularies: masks are about the text a token spells;
* the DFS longest-match walk against the double-array trie of ``kernels/matching.py``;
* the ``bpebench mask`` command, its answers and its one-line errors.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import numpy as np
import pytest

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.kernels.matching import build_matcher
from bpebench.algorithms.trie.dfs_trie import (
    build_dfs_trie,
    dfs_longest_match,
    dfs_trie_from_tokens,
    root_children,
    surface_tokens,
)
from bpebench.algorithms.trie.masks import BruteForceMasker, TokenMasker, brute_force_mask_python
from bpebench.algorithms.trie.recognizers import KEYWORDS, builtin_regex, from_regex, get_recognizer, keywords
from bpebench.errors import BpebenchError, UnknownNameError, VocabularyError


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base"])
def vocab(request):
    return load_vocabulary(request.param)


# ----------------------------------------------------------------------------- the seed's drawing
def test_seed_drawing_num_parents_and_subtree_sizes():
    """Seed 003: root ε; a, b, c; ax, ay (no token), az; aya, ayb under ay; aza under az. Its
    num_parents as drawn: a 1, ax 1, ay 1, aya 1, ayb 2, az 2, aza 3, b 1, c 1."""
    tokens = [b"a", b"b", b"c", b"ax", b"az", b"aya", b"ayb", b"aza"]
    trie = dfs_trie_from_tokens(tokens)
    names = ["" if t >= len(tokens) else tokens[t].decode() for t in trie.token]
    assert names == ["", "a", "ax", "", "aya", "ayb", "az", "aza", "b", "c"]  # "" at 3: ay has no token
    drawn = {"a": 1, "ax": 1, "aya": 1, "ayb": 2, "az": 2, "aza": 3, "b": 1, "c": 1}
    assert {n: int(p) for n, p in zip(names, trie.num_parents) if n} == drawn
    assert int(trie.num_parents[3]) == 1  # ay
    assert trie.subtree_size.tolist() == [10, 7, 1, 3, 1, 1, 2, 1, 1, 1]


def test_seed_traversal_skips_dead_subtrees():
    """A recognizer of ``a(x|z.*)``: ``ay``'s subtree is skipped at once (one node visited for
    it), so the walk visits root's children a, b, c plus ax, ay, az, aza."""
    tokens = [b"a", b"b", b"c", b"ax", b"az", b"aya", b"ayb", b"aza"]
    masker = TokenMasker.from_tokens(tokens, from_regex("a(?:x|z.*)"))
    assert [tokens[i] for i in masker.allowed_ids()] == [b"a", b"ax", b"az", b"aza"]
    assert masker.visited == 7


# ----------------------------------------------------------------------------- real vocabularies
def test_trie_holds_every_token_once(vocab):
    trie = build_dfs_trie(vocab)
    owned = trie.token[trie.token < trie.n_tokens]
    assert len(owned) == len(np.unique(owned)) == len(vocab.tokens) - len(trie.duplicates)
    assert trie.subtree_size[0] == len(trie)
    rng = random.Random(0)
    for token_id in rng.sample(range(len(vocab.tokens)), 50):
        assert trie.token_bytes(token_id) == vocab.tokens[token_id]


@pytest.mark.parametrize("name,definition", [
    ("identifier", lambda t: re.fullmatch(rb"[A-Za-z_][A-Za-z0-9_]*", t) is not None),
    ("digits", lambda t: re.fullmatch(rb"[0-9]+", t) is not None),
    ("keywords", lambda t: any(k.encode().startswith(t) for k in KEYWORDS)),
])
def test_builtin_masks_equal_their_plain_definition(vocab, name, definition):
    """Every prefix of an identifier (a digit string) is one, so "can continue to a match" is
    "matches"; for the keyword set it is "is a prefix of a keyword"."""
    expected = np.array([definition(t) for t in vocab.tokens])
    assert TokenMasker.for_vocabulary(vocab, get_recognizer(name)).mask().tolist() == expected.tolist()


@pytest.mark.parametrize("name", ["identifier", "json-string", "digits", "keywords"])
def test_builtin_masks_equal_brute_force(vocab, name):
    recognizer = get_recognizer(name)
    mask = TokenMasker.for_vocabulary(vocab, recognizer).mask()
    assert mask.tolist() == BruteForceMasker.for_vocabulary(vocab, recognizer).mask().tolist()
    if name == "json-string":  # and the plain-Python definition once, on the largest mask
        assert mask.tolist() == brute_force_mask_python(vocab.tokens, recognizer).tolist()


def test_masks_from_inner_states_equal_brute_force(vocab):
    """Inside a JSON string escape (after ``\\``, ``\\u``, ``\\u0``) and inside a keyword."""
    for name, prefix in [("json-string", b"\\"), ("json-string", b"\\u"), ("json-string", b"\\u0"),
                         ("json-string", "é".encode()[:1]), ("keywords", b"re"), ("keywords", b"n")]:
        recognizer = get_recognizer(name)
        state = recognizer.run(prefix)
        assert state >= 0
        ours = TokenMasker.for_vocabulary(vocab, recognizer).mask(state)
        assert ours.tolist() == brute_force_mask_python(vocab.tokens, recognizer, state).tolist(), prefix
        assert ours.any()


@pytest.mark.parametrize("name", ["identifier", "json-string", "digits", "keywords"])
def test_builtin_masks_equal_llguidance(vocab, name):
    pytest.importorskip("llguidance")
    from bpebench.algorithms.trie.llguidance_peer import LlguidanceMasker

    for slices in (None, []):
        theirs = LlguidanceMasker(vocab, builtin_regex(name), slices=slices)
        assert theirs.forced_bytes() == b""
        ours = TokenMasker.for_vocabulary(vocab, get_recognizer(name)).mask()
        assert theirs.mask().tolist() == ours.tolist()
        assert theirs.eos_allowed == bool(get_recognizer(name).accepting[0])  # JSON string contents may be empty


def test_sentencepiece_masks_are_about_the_text_a_token_spells():
    vocab = load_vocabulary("mistral_v1")
    spelled = surface_tokens(vocab)
    space_word = vocab.token_id("\u2581the".encode())
    assert spelled[space_word] == b" the"
    assert all(spelled[i] is None for i in vocab.special_ids)  # <unk> <s> </s> are not text
    masker = TokenMasker.for_vocabulary(vocab, from_regex(r" [a-z]+"))
    mask = masker.mask()
    assert mask[space_word] and not mask[vocab.token_id(b"the")]
    assert mask.tolist() == brute_force_mask_python(spelled, masker.recognizer).tolist()
    trie = masker.trie
    for dup, owner in trie.duplicates.tolist():  # byte-fallback pieces answer as the byte they stand for
        assert spelled[dup] == spelled[owner] and mask[dup] == mask[owner]


def test_limits_and_bad_states_are_one_line_errors():
    with pytest.raises(VocabularyError, match="at most 255 bytes"):
        dfs_trie_from_tokens([b"a", b"x" * 256])
    masker = TokenMasker.from_tokens([b"a"], keywords(["a"]))
    with pytest.raises(BpebenchError, match="outside"):
        masker.mask(5)
    with pytest.raises(UnknownNameError):
        get_recognizer("nope")
    for pattern in [r"(a)\1", "^a", "[a"]:
        with pytest.raises(BpebenchError, match="cannot build an automaton"):
            from_regex(pattern)


def test_empty_language_allows_nothing():
    masker = TokenMasker.from_tokens([b"a", b"b"], from_regex("(?=a)b"))
    assert masker.recognizer.start == -1
    assert not masker.mask().any() and masker.visited == 0


# ----------------------------------------------------------------------------- longest match
def test_dfs_longest_match_equals_the_double_array_trie(vocab):
    matcher = build_matcher(vocab)
    trie = dfs_trie_from_tokens(vocab.tokens)
    first = root_children(trie)
    rng = random.Random(1)
    texts = [b"Hello world, this is a test of longest matches 12345 \xe6\x9d\xb1\xe4\xba\xac",
             bytes(rng.randrange(256) for _ in range(300)),
             b"".join(vocab.tokens[rng.randrange(len(vocab.tokens))] for _ in range(100))]
    for data in texts:
        arr = np.frombuffer(data, dtype=np.uint8)
        for pos in range(len(arr)):
            ours = dfs_longest_match(trie.nodes, first, trie.n_tokens, arr, pos, len(arr))
            assert ours == matcher.longest_match(data, pos), (data[pos:pos + 20])


# ----------------------------------------------------------------------------- CLI
def _cli(*args):
    return subprocess.run([sys.executable, "-m", "bpebench", "mask", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_mask_prints_the_allowed_count():
    done = _cli("--vocab", "cl100k_base", "--recognizer", "digits", "--repeat", "3", "--compare")
    assert done.returncode == 0, done.stderr
    expected = sum(re.fullmatch(rb"[0-9]+", t) is not None for t in load_vocabulary("cl100k_base").tokens)
    assert f"allowed:    {expected} of 100256 tokens" in done.stdout
    assert "brute force:" in done.stdout and "same mask" in done.stdout and "DIFFERENT" not in done.stdout


@pytest.mark.parametrize("args,message", [
    (["--vocab", "cl100k_base", "--regex", "[a"], "cannot build an automaton"),
    (["--vocab", "cl100k_base", "--recognizer", "digit"], "unknown recognizer 'digit'"),
    (["--vocab", "nope", "--recognizer", "digits"], "unknown vocabulary 'nope'"),
    (["--vocab", "cl100k_base", "--recognizer", "digits", "--after", "x"], "allows nothing after 'x'"),
    (["--vocab", "cl100k_base", "--recognizer", "digits", "--repeat", "0"], "--repeat must be at least 1"),
    (["--vocab", "cl100k_base"], "one of the arguments --regex --recognizer is required"),
])
def test_cli_mask_mistakes_are_one_line(args, message):
    done = _cli(*args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bpebench: error:"), done.stderr
    assert message in done.stderr


@pytest.mark.parametrize("module", ["dfs_trie", "masks", "recognizers"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"bpebench.algorithms.trie.{module}"))
    assert result.attempted > 0 and result.failed == 0
