"""Adversarial inputs found by searching a vocabulary: worst cases for backtracking, chunking traps.

Both searches score short candidate *units* (strings built from vocabulary tokens),
keep the best ones, try pairs of the best, and return the winner repeated to the
requested size. They are seeded, so a vocabulary name + seed always gives the same
text; they cost a few seconds once (then the corpus cache serves the result).

The score of ``backtracking-worst`` is the step count of the backtracking encoder
of seed 001 (:func:`backtracking_trace`, written here as a small measuring
instrument, independent of ``algorithms/backtracking.py``): every candidate token
it tries is one step, so there is one step per output token when greedy
longest-match is right, and more for every rejected candidate and every token it
has to take back. The search maximises steps per input byte.

The score of ``chunking-trap`` is the share of token boundaries, in the exact BPE
encoding of the unit repeated, that fall inside a UTF-8 character. A chunker that
cuts after n tokens and then drops tokens until it reaches a character boundary
(seed 001) loses that many tokens; at 100% it never reaches one and returns an
empty chunk.

:func:`backtracking_trace` is exact (it returns the BPE encoding; the tests check
it against ``naive``) and linear: a position is given up at most once.
"""

from __future__ import annotations

import random

import numpy as np
from bpebench.algorithms.kernels.jit import njit  # numba is imported on first use

from bpebench.algorithms.kernels.compiled import NEVER, compatible, compile_vocabulary
from bpebench.errors import BpebenchError
from bpebench.algorithms.kernels.matching import build_matcher, longest_match

from .registry import register_corpus
from .util import repeat_to

_CANDIDATES = 3000  # units scored in the first round
_FINALISTS = 40  # best units whose pairs are scored in the second round
_PROBE_BYTES = 256  # each unit is scored on itself repeated to about this many bytes


# ----------------------------------------------------------------------------- the instrument
@njit(cache=True)
def _backtrack(trie, next_prefix, token_len, priority, split_left, split_right, pair_keys, pair_vals,
               data, out):
    """Seed 001's backtracking encoder, counting steps. Returns (number of tokens in out, steps),
    or (-1, steps) if some byte is not a token."""
    n = len(data)
    if n == 0:
        return 0, 0
    dead = np.zeros(n + 1, dtype=np.bool_)  # positions from which no valid continuation exists
    depth = 0
    pos = 0
    steps = 0
    token = longest_match(trie, data, 0, n)
    while True:
        if token < 0:
            return -1, steps
        steps += 1
        end = pos + token_len[token]
        if not dead[end] and (depth == 0 or compatible(priority, split_left, split_right, pair_keys,
                                                        pair_vals, out[depth - 1], token)):
            out[depth] = token
            depth += 1
            pos = end
            if pos == n:
                return depth, steps
            token = longest_match(trie, data, pos, n)
        else:
            token = next_prefix[token]
            while token < 0:  # no shorter candidate here: the encoding cannot pass through pos
                dead[pos] = True
                depth -= 1
                if depth < 0:
                    return -1, steps
                last = out[depth]
                pos -= token_len[last]
                token = next_prefix[last]


def backtracking_trace(vocab, data: bytes) -> tuple[list[int], int]:
    """(BPE encoding of ``data``, steps the backtracking encoder takes to find it)."""
    tables = compile_vocabulary(vocab)
    matcher = build_matcher(vocab)
    arr = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(max(len(arr), 1), dtype=np.int32)
    k, steps = _backtrack(matcher.forward, matcher.next_prefix, tables.token_len, tables.priority,
                          tables.split_left, tables.split_right, tables.pair_keys, tables.pair_vals, arr, out)
    if k < 0:
        raise BpebenchError(f"{vocab.name} cannot encode this input (a byte is not a token)")
    return out[:k].tolist(), int(steps)


def steps_per_byte(vocab, data: bytes) -> float:
    """Backtracking steps per input byte (tokens per byte when greedy longest-match is always right)."""
    return backtracking_trace(vocab, data)[1] / max(len(data), 1)


# ----------------------------------------------------------------------------- helpers
def _probe(unit: bytes) -> bytes:
    return unit * max(2, _PROBE_BYTES // len(unit))


def _search(units: list[bytes], score, rng: random.Random) -> bytes:
    """Best unit by ``score``: the candidates, then concatenated pairs of the best ones."""
    scored = sorted(((score(u), -len(u), u) for u in set(units)), reverse=True)
    finalists = [u for _, _, u in scored[:_FINALISTS]]
    pairs = [a + b for a in finalists for b in finalists if a != b]
    rng.shuffle(pairs)
    scored += [(score(u), -len(u), u) for u in pairs[: _CANDIDATES // 2]]
    return max(scored)[2]


def _utf8_multibyte_tokens(vocab) -> list[int]:
    tables = compile_vocabulary(vocab)
    ids = []
    for t in np.flatnonzero((tables.priority < NEVER) & (tables.token_len > 1)):
        try:
            vocab.tokens[t].decode("utf-8")
        except UnicodeDecodeError:
            continue
        ids.append(int(t))
    return ids


# ----------------------------------------------------------------------------- backtracking-worst
@register_corpus(
    "backtracking-worst",
    description="The unit (a vocabulary token, or two concatenated) that makes seed 001's backtracking"
    " encoder take the most steps per byte, found by a seeded search, repeated.",
    why_hard="greedy longest-match is wrong at almost every position, so the backtracking encoder tries"
    " and rejects many candidates and takes tokens back before it finds the valid encoding; shows how"
    " far each encoder's constant factor moves away from the average case.",
    category="adversarial",
)
def backtracking_worst(*, vocab: str = "o200k_base", size: int = 10_000, seed: int = 0) -> str:
    from bpebench.algorithms.formats import load_vocabulary

    vocabulary = load_vocabulary(vocab)
    rng = random.Random(seed)
    ids = _utf8_multibyte_tokens(vocabulary)
    units = [vocabulary.tokens[ids[rng.randrange(len(ids))]] for _ in range(_CANDIDATES)]
    best = _search(units, lambda u: steps_per_byte(vocabulary, _probe(u)), rng)
    return repeat_to(best.decode("utf-8"), size)


# ----------------------------------------------------------------------------- chunking-trap
def _is_continuation(byte: int) -> bool:
    return (byte & 0xC0) == 0x80


def _sequence_length(lead: int) -> int:
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def off_boundary_share(data: bytes, ids: list[int], tokens: list[bytes]) -> float:
    """Share of the interior token boundaries of ``ids`` (encoding ``data``) inside a UTF-8 character."""
    pos, inside, cuts = 0, 0, 0
    for t in ids[:-1]:
        pos += len(tokens[t])
        cuts += 1
        inside += _is_continuation(data[pos])
    return inside / cuts if cuts else 0.0


def mid_tokens(vocab) -> list[int]:
    """Reachable tokens that start inside a character and end inside another one (valid in between)."""
    tables = compile_vocabulary(vocab)
    found = []
    for t in np.flatnonzero((tables.priority < NEVER) & (tables.token_len > 2)):
        b = vocab.tokens[int(t)]
        if not _is_continuation(b[0]):
            continue
        last_lead = max(i for i in range(len(b)) if not _is_continuation(b[i])) if any(
            not _is_continuation(x) for x in b) else -1
        if last_lead < 0 or len(b) - last_lead >= _sequence_length(b[last_lead]):
            continue
        first_lead = next(i for i in range(len(b)) if not _is_continuation(b[i]))
        try:
            b[first_lead:last_lead].decode("utf-8")
        except UnicodeDecodeError:
            continue
        found.append(int(t))
    return found


def _char_indexes(vocab) -> tuple[dict[bytes, list[bytes]], dict[bytes, list[bytes]]]:
    """Every non-ASCII character in the vocabulary's tokens, indexed by its proper suffixes and prefixes."""
    chars = set()
    for token in vocab.tokens:
        chars.update(c for c in token.decode("utf-8", "ignore") if ord(c) >= 0x80)
    by_suffix: dict[bytes, list[bytes]] = {}
    by_prefix: dict[bytes, list[bytes]] = {}
    for c in sorted(chars):
        b = c.encode("utf-8", "surrogatepass")
        for k in range(1, len(b)):
            by_suffix.setdefault(b[-k:], []).append(b)
            by_prefix.setdefault(b[:k], []).append(b)
    return by_suffix, by_prefix


def _trap_units(vocab, rng: random.Random) -> list[bytes]:
    """Candidate units: a mid-token with its first and last characters completed (valid UTF-8)."""
    mids = mid_tokens(vocab)
    if not mids:
        raise BpebenchError(f"{vocab.name} has no token that starts and ends inside a character")
    by_suffix, by_prefix = _char_indexes(vocab)
    units = []
    for _ in range(_CANDIDATES * 4):
        b = vocab.tokens[mids[rng.randrange(len(mids))]]
        head = next(i for i in range(len(b)) if not _is_continuation(b[i]))
        tail = max(i for i in range(len(b)) if not _is_continuation(b[i]))
        lefts, rights = by_suffix.get(b[:head]), by_prefix.get(b[tail:])
        if not lefts or not rights:
            continue
        left, right = lefts[rng.randrange(len(lefts))], rights[rng.randrange(len(rights))]
        unit = left[: len(left) - head] + b + right[len(b) - tail:]
        units.append(unit)
        if len(units) >= _CANDIDATES:
            break
    return units


@register_corpus(
    "chunking-trap",
    description="A short text, repeated, whose BPE encoding puts most token boundaries inside UTF-8"
    " characters (a token that starts and ends mid-character, with its characters completed), found by"
    " a seeded search.",
    why_hard="chunking by 'take n tokens, then drop tokens until a character boundary' (seed 001)"
    " drops most of the chunk, or all of it when no boundary in the loop is a character boundary;"
    " only exact prefix-aware chunking gets it right.",
    category="adversarial",
)
def chunking_trap(*, vocab: str = "o200k_base", size: int = 10_000, seed: int = 0) -> str:
    from bpebench.algorithms.formats import load_vocabulary

    vocabulary = load_vocabulary(vocab)
    rng = random.Random(seed)

    def score(unit: bytes) -> float:
        probe = _probe(unit)
        ids, _ = backtracking_trace(vocabulary, probe)
        return off_boundary_share(probe, ids, vocabulary.tokens)

    best = _search(_trap_units(vocabulary, rng), score, rng)
    return repeat_to(best.decode("utf-8"), size)
