"""Shared, memoised preparation for the asv suites (no benchmarks here).

Everything the suites need is built through the memoised functions below:
vocabularies, encoders (warmed up, so numba compilation or cache loading is never
timed), Tokenizers, peers and corpora. The bench modules call :func:`preload` at
import; it does the work only in asv's fork server (``"launch_method":
"forkserver"`` in ``asv.conf.json``), which imports the modules once and forks
every benchmark from itself, so a benchmark's ``setup`` only looks things up
instead of paying seconds of vocabulary loading and table building.

Implementations are named uniformly in parameters:

* ``ours/<encoder>`` (pipeline suites) or ``<encoder>`` (raw suites): a registered
  encoder; the lists come from ``bpebench.algorithms.core.registry.encoder_names()``, so a newly
  registered encoder appears in every suite by itself;
* ``peer/<name>``: a peer library from ``bpebench.algorithms.peers.peer_names()``.

Unsupported combinations raise ``NotImplementedError`` in ``setup`` (asv's "skip").

Every timed benchmark's ``setup`` ends with :func:`prepare`: sizes whose predicted time
passes the budget are skipped (measured, never by name, so a quadratic plugin is skipped
too), and the implementation runs once, untimed, on other input of the same kind, so that
``asv run --quick`` (one sample) does not time a first call.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from bpebench import corpora
from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.core.registry import encoder_names, get_encoder_class, make_encoder
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.corpora.util import clip_utf8

#: the vocabulary of the raw-BPE suites (seed 001 benchmarks o200k)
VOCAB = "o200k_base"
#: vocabularies of the load / short / long / decode suite (every built-in one)
VOCABS = ["o200k_base", "cl100k_base", "qwen", "mistral_v1"]
#: an implementation whose time would pass this (extrapolated from a smaller run) is skipped
BUDGET_SECONDS = 5.0

WARM_UP = "Warm up: déjà vu, 東京, 123 + 456\n\tdef f(x): return x"

_VOCABULARIES: dict[str, object] = {}
_ENCODERS: dict[tuple[str, str], object] = {}
_TOKENIZERS: dict[tuple[str, str], Tokenizer] = {}
_PEERS: dict[tuple[str, str], object] = {}


# ----------------------------------------------------------------------------- names
def our_encoders() -> list[str]:
    """Every registered encoder, exact ones first (the registry's order)."""
    return encoder_names()


def exact_encoders() -> list[str]:
    return [n for n in encoder_names() if get_encoder_class(n).is_exact()]


def approximate_encoders() -> list[str]:
    return [n for n in encoder_names() if not get_encoder_class(n).is_exact()]


def encoders_with(capability: str) -> list[str]:
    return [n for n in encoder_names() if capability in get_encoder_class(n).capabilities]


def peer_names() -> list[str]:
    try:
        from bpebench.algorithms.peers import peer_names as names
    except ImportError:
        return []
    return names()


def pipeline_implementations() -> list[str]:
    """``ours/<encoder>`` for every encoder, then ``peer/<name>`` for every known peer."""
    return [f"ours/{n}" for n in our_encoders()] + [f"peer/{n}" for n in peer_names()]


def raw_implementations() -> list[str]:
    """Every encoder, then ``peer/<name>`` for every known peer (skipped if it cannot do raw BPE)."""
    return our_encoders() + [f"peer/{n}" for n in peer_names()]


def is_reference(name: str) -> bool:
    return "reference" in get_encoder_class(name).capabilities


# ----------------------------------------------------------------------------- memoised objects
def vocabulary(name: str = VOCAB):
    vocab = _VOCABULARIES.get(name)
    if vocab is None:
        try:
            vocab = _VOCABULARIES[name] = load_vocabulary(name)
        except Exception as exc:  # not installed here: skip the benchmark
            raise NotImplementedError(f"vocabulary {name} unavailable: {exc}") from None
    return vocab


def encoder(name: str, vocab: str = VOCAB):
    """The registered encoder ``name`` on ``vocab``, already used once."""
    key = (name, vocab)
    enc = _ENCODERS.get(key)
    if enc is None:
        enc = make_encoder(name, vocabulary(vocab))
        enc.encode(WARM_UP.encode())
        _ENCODERS[key] = enc
    return enc


def tokenizer(name: str, vocab: str = VOCAB) -> Tokenizer:
    """A Tokenizer (the vocabulary's pre-tokenizer) around encoder ``name``, already used once."""
    key = (name, vocab)
    tok = _TOKENIZERS.get(key)
    if tok is None:
        tok = Tokenizer(vocabulary(vocab), algorithm=encoder(name, vocab))
        tok.encode_ordinary(WARM_UP)
        _TOKENIZERS[key] = tok
    return tok


def peer(name: str, vocab: str = VOCAB):
    """The peer ``name`` on ``vocab`` (verified and used once); NotImplementedError if unavailable."""
    key = (name, vocab)
    found = _PEERS.get(key)
    if found is None:
        from bpebench.errors import BpebenchError
        from bpebench.algorithms.peers import make_peer

        try:
            found = make_peer(name, vocabulary(vocab))
        except BpebenchError as exc:
            raise NotImplementedError(str(exc)) from None
        if found.same_ids is False:
            raise NotImplementedError(f"peer {name} gives other ids than ours on {vocab}; not comparable")
        found.encode_ordinary(WARM_UP)
        _PEERS[key] = found
    return found


def pipeline_encode(impl: str, vocab: str = VOCAB) -> Callable[[str], list[int]]:
    """``encode_ordinary`` of ``ours/<encoder>`` or ``peer/<name>``."""
    kind, _, name = impl.partition("/")
    if kind == "ours":
        return tokenizer(name, vocab).encode_ordinary
    return peer(name, vocab).encode_ordinary


def pipeline_decode(impl: str, vocab: str = VOCAB) -> Callable[[list[int]], str]:
    kind, _, name = impl.partition("/")
    if kind == "ours":
        return tokenizer(name, vocab).decode
    return peer(name, vocab).decode


def raw_encode(impl: str, vocab: str = VOCAB) -> Callable[[bytes], list[int]]:
    """Pure BPE over bytes (no pre-tokenizer) of an encoder or a peer that supports it."""
    if impl.startswith("peer/"):
        p = peer(impl[5:], vocab)
        if not p.supports_raw:
            raise NotImplementedError(f"{impl} cannot encode without pre-tokenization")
        return p.encode_raw_fn
    return encoder(impl, vocab).encode


def prepare(run: Callable[[object], object], make_input: Callable[[int], object], size: int, *,
            other: object, start: int = 1_000) -> None:
    """The end of a timed benchmark's ``setup``: skip when over budget (:func:`skip_if_over_budget`),
    then one untimed ``run(other)``, ``other`` being input of the same kind and size as the timed one
    but not the same bytes (a warm-up on the timed input itself would flatter caches)."""
    skip_if_over_budget(run, make_input, size, start=start)
    run(other)


def skip_if_over_budget(run: Callable[[object], object], make_input: Callable[[int], object], size: int,
                        *, start: int = 1_000) -> None:
    """Skip (NotImplementedError) when ``run(make_input(size))`` would take longer than the budget.

    Times ``run`` on inputs of ``start``, 10 x ``start``, ... bytes below ``size``,
    fits the exponent k of time ~ n^k to the last two (k = 2 from a single point;
    clamped to 1..3) and predicts the next size before running it, so no probe
    itself runs far over budget. Generic: no implementation is named, the
    measurement decides; a quadratic one shows up as skipped large sizes.
    """
    import math
    import time

    n, previous, exponent = start, None, 2.0
    while n < size:
        began = time.perf_counter()
        run(make_input(n))
        elapsed = max(time.perf_counter() - began, 1e-6)
        if previous is not None:
            exponent = min(3.0, max(1.0, math.log(elapsed / previous[1]) / math.log(n / previous[0])))
        following = min(n * 10, size)
        predicted = elapsed * (following / n) ** exponent
        if predicted > BUDGET_SECONDS:
            raise NotImplementedError(
                f"over budget: {elapsed:.2g} s at {n} bytes, time ~ n^{exponent:.1f} predicts"
                f" {predicted:.0f} s at {following} bytes (budget {BUDGET_SECONDS:.0f} s)"
            )
        previous, n = (n, elapsed), following


# ----------------------------------------------------------------------------- inputs
def random_token_text(size: int, vocab: str = VOCAB, *, seed: int = 0) -> str:
    """The first ``size`` bytes (cut at a character) of the vocabulary's random-token text
    (``seed`` draws other tokens: text of the same kind, not the same text)."""
    big = max(120_000, size)
    return clip_utf8(corpora.get("random-tokens", vocab=vocab, size=big, seed=seed), size)


def head(data: bytes, size: int) -> bytes:
    """The first ``size`` bytes of ``data``, shortened so as not to end inside a UTF-8 character."""
    while 0 < size < len(data) and (data[size] & 0xC0) == 0x80:
        size -= 1
    return data[:size]


def text(name: str, size: int | None = None, **params) -> str:
    spec = corpora.corpus(name)
    if "size" in spec.defaults:
        params["size"] = size
        return corpora.get(name, **params)
    return clip_utf8(corpora.get(name, **params), size)


# ----------------------------------------------------------------------------- preloading
def preloading() -> bool:
    """True in asv's fork server (``asv/benchmark.py run_server``), whose imports every benchmark
    process inherits; ``BPEBENCH_PRELOAD=1`` forces it, ``BPEBENCH_PRELOAD=0`` turns it off."""
    forced = os.environ.get("BPEBENCH_PRELOAD")
    if forced is not None:
        return forced == "1"
    return len(sys.argv) > 1 and sys.argv[1] == "run_server"


def preload(vocab: str = VOCAB, *, encoders: list[str] | None = None, raw: bool = True,
            pipeline: bool = True, peers: bool = True) -> None:
    """Build and warm up, when :func:`preloading`, what the suites use on ``vocab``:
    ``encoders`` (default: all) as raw encoders and/or inside Tokenizers, and the peers."""
    if not preloading():
        return
    try:
        vocabulary(vocab)
    except NotImplementedError:
        return
    for name in our_encoders() if encoders is None else encoders:
        if raw:
            encoder(name, vocab)
        if pipeline:
            tokenizer(name, vocab)
    for name in peer_names() if peers else []:
        try:
            peer(name, vocab)
        except NotImplementedError:
            pass
