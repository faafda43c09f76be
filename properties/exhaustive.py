"""Proof mode: every input up to a length, over the alphabet of a small vocabulary.

``bpebench verify TARGET --exhaustive --max-len L [--vocab SPEC ...]`` encodes every byte string
of length 0..L over the bytes that are tokens of the vocabulary and checks each one against
the reference: the ids decode back to the input, ``count`` equals their number, and ``encode``
equals ``naive`` (for an approximate encoder the last is an expected failure). Inputs come in order of length, so the first failure is a shortest
one; the run stops there. A pass is a proof for that vocabulary and those lengths, not a
sample, and the result says how many inputs it checked and how long it took.

The default vocabularies (:data:`PROOF_VOCABULARIES`) are small and trained on three letters:
the paper's seed dictionary, a ranks vocabulary with ids shuffled away from priorities, and two
merges-rule ones with tokens formed by more than one listed merge, one of them with merges left
out (tokens BPE never forms). Cost: with an
alphabet of ``a`` bytes, ``(a^(L+1) - 1) / (a - 1)`` inputs (88,573 for ``a = 3, L = 10``), each
encoded by the encoder and by the reference (O(L^2)); more than :data:`MAX_INPUTS` is refused
before anything runs.
"""

from __future__ import annotations

import random
from itertools import product

from bpebench.errors import BpebenchError

from . import oracles
from .display import mismatch
from .guard import CheckFailed, shown
from .vocabularies import alphabet_of, resolve, trained_spec

_RNG = random.Random(1)
_TRAINING = [bytes(_RNG.choice(b"abc") for _ in range(200))]
#: small vocabularies over three letters (a proof on each is quick up to about 10 bytes): the
#: paper's dictionary; a ranks vocabulary with shuffled ids; a merge list where three tokens are
#: formed by two listed merges; one that also leaves a quarter of its merges out (unreachable tokens)
PROOF_VOCABULARIES = (
    "seed",
    trained_spec(_TRAINING, merges=16, rule="ranks", alphabet="text", shuffle=1),
    trained_spec(_TRAINING, merges=16, rule="merges", alphabet="text", shuffle=2, extra=1),
    trained_spec(_TRAINING, merges=16, rule="merges", alphabet="text", shuffle=2, extra=1, drop=1),
)
DEFAULT_MAX_LEN = 8
MAX_INPUTS = 5_000_000


def input_count(alphabet_size: int, max_len: int) -> int:
    """How many byte strings of length 0..max_len an alphabet of that size spells."""
    return sum(alphabet_size**length for length in range(max_len + 1))


def plan(spec: str, max_len: int) -> tuple[bytes, int]:
    """(alphabet, input count) of a proof run; BpebenchError when it is too big to run."""
    if max_len < 0:
        raise BpebenchError(f"--max-len must be >= 0 (got {max_len})")
    alphabet = alphabet_of(resolve(spec))
    total = input_count(len(alphabet), max_len)
    if total > MAX_INPUTS:
        raise BpebenchError(
            f"every input up to {max_len} bytes over the {len(alphabet)} bytes of {spec[:60]} is {total:,} inputs"
            f" (more than {MAX_INPUTS:,}): use a smaller --max-len or a vocabulary with a smaller alphabet")
    return alphabet, total


def _at(failure: CheckFailed, check_id: str, spec: str) -> CheckFailed:
    """The failure, to be reproduced as the one input it failed on (``check_id`` on it)."""
    failure.replay_as = (check_id, {"vocab": spec, "data": failure.data})
    return failure


def check_exhaustive(ctx, p: dict) -> str:
    """Every input of 0..``max_len`` bytes over the vocabulary's alphabet (see the module docstring)."""
    spec, max_len = p["vocab"], int(p["max_len"])
    alphabet, total = plan(spec, max_len)
    enc = ctx.encoder(spec)
    vocab = enc.vocab
    checked = 0
    for length in range(max_len + 1):
        for letters in product(alphabet, repeat=length):
            data = bytes(letters)
            ids = enc.encode(data)
            where = f"input {checked + 1:,} of {total:,}"
            if vocab.decode_bytes(ids) != data:
                raise _at(CheckFailed(f"encode({shown(data)}) = {ids} decodes to {shown(vocab.decode_bytes(ids))}"
                                      f" ({where})", data), "round-trip", spec)
            if enc.count(data) != len(ids):
                raise _at(CheckFailed(f"count({shown(data)}) = {enc.count(data)} but encode gives {len(ids)} tokens"
                                      f" ({where})", data), "count-consistent", spec)
            expected = oracles.reference(vocab, data)
            if ids != expected:
                raise _at(mismatch(f"encode({shown(data)}) ({where})", vocab, ids, expected, data=data),
                          "equals-naive", spec)
            checked += 1
    return (f"{checked:,} inputs, every string of 0..{max_len} bytes over {bytes(alphabet)!r}: encode equals naive,"
            f" count agrees and the ids decode back, on each: a proof for this vocabulary up to {max_len} bytes")
