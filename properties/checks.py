"""The conformance checks: each a named, documented property of an Encoder.

A check draws a *payload* (a JSON-able dict naming its vocabulary spec and its
input) and runs it; the kit (``bpebench.properties.kit``) chooses the checks an encoder
declares itself fit for, runs them under hypothesis and reports the minimal
failing payload with a command that replays it.

=====================  ==========================================================
check id               property
=====================  ==========================================================
``output-types``       encode returns a list of token ids, count an int; ``b""`` -> ``[]``
``round-trip``         ``decode(encode(x)) == x`` (every encoder, approximate ones too)
``count-consistent``   ``count(x) == len(encode(x))``; ``encode_pieces`` = concatenation
``equals-naive``       Corollary I: the output equals the reference ``naive`` [exact]
``token-bytes``        each token's own bytes encode as ``naive`` does (all tokens) [exact]
``valid-output``       the output is a valid encoding (re-encoding gives it back) [exact]
``long-inputs``        kB-long inputs equal tiktoken's BPE of the same piece [exact]
``pipeline``           Tokenizer with this encoder equals the peer library on text [exact]
``appending``          incremental counter (push / truncate) = count of a fresh encode
``prepending``         incremental counter, growing at the front
``interval``           interval counts equal the count of the slice (all intervals of short texts)
``split-at-n``         ``chunking.split_at_tokens`` = the longest prefix with <= n tokens
``count-till-limit``   ``chunking.count_till_limit`` = the count when <= limit, else None
``minimal-bound``      a minimal-count encoder never uses more tokens than BPE
``decode``             the encoder's own ``decode`` gives the tokens' bytes
``boundary-lengths``   encode/count of 255/256 ... 65535/65536-byte inputs equal BPE [exact]
``encode-pieces``      ``encode_pieces`` of 0, 1 and hundreds of pieces [exact]
``raw-specials``       raw encode of special-token literals is plain BPE, no carving [exact]
``unencodable-bytes``  a byte that is not a token makes ``encode`` and ``count`` raise
``exhaustive``         proof mode: every input up to ``--max-len`` bytes (``--exhaustive`` only)
=====================  ==========================================================

Checks marked [exact] fail *by design* for approximate encoders; the kit reports
those as "expected failure (approximate)" together with how often the output is
invalid on a fixed sample (:func:`approximate_report`).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Callable

from hypothesis import strategies as st

from bpebench.algorithms.core.encoder import Encoder
from bpebench.algorithms.formats.vocabulary import Vocabulary

from . import adapters, oracles
from .guard import (CallTimeout, CheckFailed, GuardedEncoder, VocabularyRefused, construct, guarded_call, refusal,
                    shown)
from .strategies import (FEATURES, PINNED, inputs, pipeline_texts, pipeline_vocabulary_specs, trained_specs,
                         vocabulary_and_input, vocabulary_specs)
from .display import mismatch, side_by_side, tokens_text
from .exhaustive import check_exhaustive
from .vocabularies import alphabet_of, producible_ids, resolve, trained_spec

#: the kinds of vocabulary a check can run on: "random" (drawn trained vocabularies) or a spec
RANDOM = "random"


# ----------------------------------------------------------------------------- context
class Context:
    """What a check needs: the encoder class, built per vocabulary spec and guarded."""

    def __init__(self, cls: type, *, call_timeout: float | None, build_timeout: float | None,
                 probe=None, cache_size: int = 64) -> None:
        self.cls = cls
        self.call_timeout = call_timeout
        self.build_timeout = build_timeout
        self.probe = probe
        self._encoders: dict[str, GuardedEncoder] = {}
        self._cache_size = cache_size

    def start_check(self) -> None:
        """Give every cached encoder its full per-call limit again (see GuardedEncoder.call)."""
        for enc in self._encoders.values():
            enc.reset_timeout(self.call_timeout)

    def vocab(self, spec: str) -> Vocabulary:
        return resolve(spec)

    def too_slow(self, spec: str, data: bytes) -> str | None:
        """Why encoding ``data`` could overrun the call limit, or None: an instance of its own
        (the timing calls must not join the history of the encoder under test) encodes the first
        sixteenth of it; if that time times 256 (growth as n^2) exceeds a tenth of the limit,
        the input is skipped. Up to three timed calls, the fastest counting: a first call can carry
        a one-time cost (a JIT compilation on a clean cache, a busy neighbour), and a skipped input
        is a bug not looked for. Each call drops one more byte from the sample's end: an encoder
        that memoises whole inputs must not answer the second call from its memo."""
        if len(data) <= 1024:
            return None
        timers = self.__dict__.setdefault("_timers", {})
        if spec not in timers:
            self.encoder(spec)  # refusals and construction failures come from here, as usual
            timers[spec] = construct(self.cls, self.vocab(spec), timeout=self.build_timeout, spec=spec)
            timers[spec].timeout = self.call_timeout
        budget = min(self.call_timeout or 30.0, 30.0) / 10
        size = len(data) // 16
        predicted = float("inf")
        for shorter in range(3):
            start = time.perf_counter()
            timers[spec].encode(data[: size - shorter])
            predicted = min(predicted, (time.perf_counter() - start) * 256)
            if predicted <= budget:
                return None
        return f"{len(data)} bytes could take {predicted:.1f} s (more than a tenth of the call limit)"

    def encoder(self, spec: str) -> GuardedEncoder:
        enc = self._encoders.pop(spec, None)
        if enc is not None:
            self._encoders[spec] = enc  # the most recently used last: the oldest is evicted first
        else:
            vocab = self.vocab(spec)
            reason = refusal(self.cls, vocab)
            if reason is not None:
                raise VocabularyRefused(f"{getattr(self.cls, 'name', '') or self.cls.__qualname__} refuses"
                                        f" vocabulary {vocab.name}: {reason}")
            if len(self._encoders) >= self._cache_size:
                self._encoders.pop(next(iter(self._encoders)))
            enc = construct(self.cls, vocab, timeout=self.build_timeout, probe=self.probe, spec=spec)
            enc.timeout = self.call_timeout
            self._encoders[spec] = enc
        return enc


# ----------------------------------------------------------------------------- payload codec
def payload_to_json(payload: dict) -> str:
    """JSON with bytes as ``{"hex": ...}`` (compact, for reproduction commands)."""

    def enc(x):
        if isinstance(x, (bytes, bytearray)):
            return {"hex": bytes(x).hex()}
        if isinstance(x, (list, tuple)):
            return [enc(i) for i in x]
        if isinstance(x, dict):
            return {k: enc(v) for k, v in x.items()}
        return x

    return json.dumps(enc(payload), separators=(",", ":"), ensure_ascii=True)


def payload_from_json(text: str) -> dict:
    def dec(x):
        if isinstance(x, dict):
            if set(x) == {"hex"}:
                return bytes.fromhex(x["hex"])
            return {k: dec(v) for k, v in x.items()}
        if isinstance(x, list):
            return [dec(i) for i in x]
        return x

    return dec(json.loads(text))


def main_bytes(payload: dict) -> bytes | None:
    """The bytes a report shows as "the counterexample"."""
    if isinstance(payload.get("data"), bytes):
        return payload["data"]
    if isinstance(payload.get("text"), str):
        return payload["text"].encode("utf-8", "surrogatepass")
    if isinstance(payload.get("unit"), bytes):
        return boundary_data(payload)
    if isinstance(payload.get("pieces"), list):
        return b"".join(payload["pieces"])
    ops = payload.get("ops")
    if ops:
        return adapters.text_after(ops, payload.get("direction", "append"))
    return None


# ----------------------------------------------------------------------------- helpers
def _bytes_payload(kind: str, max_size: int = 64) -> st.SearchStrategy[dict]:
    return vocabulary_and_input(kind, max_size=max_size, disorder=True).map(lambda p: {"vocab": p[0], "data": p[1]})


def _pinned_bytes(kind: str) -> list[dict]:
    return [{"vocab": v, "data": d} for v, d in PINNED] if kind == RANDOM else []


def _pinned_chunking(kind: str) -> list[dict]:
    """The issue's case: mistral_v1's prefix counts go 2, 3, 2 over ``****``, ``*****``, ``******``
    (so ``'******0'`` splits at 2 tokens after ``'******'``, and ``'******'`` is 2 tokens however
    many its prefixes have)."""
    if kind == "mistral_v1":
        return [{"vocab": kind, "text": text, "n": 2, "pipeline": True, "allowed": []} for text in ("******0", "******")]
    return []


def _is_tiktoken_real(kind: str) -> str | None:
    if kind == RANDOM:
        return "needs a tiktoken vocabulary (cl100k_base, o200k_base)"
    if not oracles.tiktoken_ranked(resolve(kind)):
        return f"{kind} is not a tiktoken rank vocabulary"
    return None


# ----------------------------------------------------------------------------- the checks
def check_output_types(ctx: Context, p: dict) -> None:
    enc = ctx.encoder(p["vocab"])
    enc.encode(p["data"])
    enc.count(p["data"])
    if enc.encode(b"") != []:
        raise CheckFailed(f"encode(b'') returned {enc.encode(b'')!r}, expected []")
    if enc.count(b"") != 0:
        raise CheckFailed(f"count(b'') returned {enc.count(b'')}, expected 0")


def check_round_trip(ctx: Context, p: dict) -> None:
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    ids = enc.encode(data)
    back = enc.vocab.decode_bytes(ids)
    if back != data:
        raise CheckFailed(f"decode(encode({shown(data)})) = {shown(back)}")


def check_count_consistent(ctx: Context, p: dict) -> None:
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    ids = enc.encode(data)
    n = enc.count(data)
    if n != len(ids):
        raise CheckFailed(f"count({shown(data)}) = {n} but encode gives {len(ids)} tokens")
    cut = min(p.get("cut", len(data) // 2), len(data))
    pieces = [data[:cut], data[cut:]]
    joined = enc.encode_pieces(pieces)
    separate = enc.encode(pieces[0]) + enc.encode(pieces[1])
    if joined != separate:
        raise mismatch(f"encode_pieces({[shown(x, 24) for x in pieces]}) differs from encoding each piece",
                       enc.vocab, joined, separate, ("encode_pieces", "each piece"))


def _payload_with_cut(kind: str) -> st.SearchStrategy[dict]:
    return st.tuples(_bytes_payload(kind), st.integers(0, 64)).map(lambda t: {**t[0], "cut": t[1]})


def check_equals_naive(ctx: Context, p: dict) -> None:
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    ids = enc.encode(data)
    expected = oracles.reference(enc.vocab, data)
    if ids != expected:
        raise mismatch(f"encode({shown(data)})", enc.vocab, ids, expected)


def check_token_bytes(ctx: Context, p: dict) -> None:
    """Every token's own bytes encode as BPE does (one token when it is reachable).

    Without ``data`` in the payload, all tokens of a small vocabulary are tried (for
    a large one the 100 longest and 300 drawn with ``seed``); the failure names the
    token's bytes.
    """
    enc = ctx.encoder(p["vocab"])
    vocab = enc.vocab
    if "data" in p:
        candidates = [p["data"]]
    else:
        ids = range(len(vocab.tokens))
        if len(vocab.tokens) > 400:
            rng = random.Random(p.get("seed", 0))
            longest = sorted(ids, key=lambda i: len(vocab.tokens[i]))[-100:]
            ids = sorted(set(rng.sample(ids, 300)) | set(longest))
        candidates = [vocab.tokens[i] for i in ids if vocab.tokens[i] and i not in vocab.excluded]
    for data in candidates:
        got = enc.encode(data)
        expected = oracles.reference(vocab, data)
        if got != expected:
            raise mismatch(f"the token {shown(data)} encodes as", vocab, got, expected, data=data)


def check_valid_output(ctx: Context, p: dict) -> None:
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    ids = enc.encode(data)
    again = oracles.reference(enc.vocab, enc.vocab.decode_bytes(ids))
    if again != ids:
        raise mismatch(f"encode({shown(data)}) is not a valid encoding (re-encoding its bytes gives another)",
                       enc.vocab, ids, again, ("encoder", "re-encoded"))


@st.composite
def _long_payload(draw, kind: str) -> dict:
    vocab = resolve(kind)
    token = st.integers(0, len(vocab.tokens) - 1).map(lambda i: vocab.tokens[i])
    unit = draw(st.one_of(
        st.lists(token, min_size=1, max_size=300).map(b"".join),
        st.text(min_size=1, max_size=40).map(lambda s: s.encode("utf-8")),
        st.sampled_from([b"a", b" ", b"0", b"\xe4\xb8\xad", b"ab", b"\n\t"]),
        st.binary(min_size=1, max_size=64),
    ))
    repeat = draw(st.integers(1, max(1, 4096 // len(unit))))
    data = (unit * repeat)[:4096]
    start = draw(st.integers(0, min(3, len(data))))
    return {"vocab": kind, "data": data[start:]}


def check_long_inputs(ctx: Context, p: dict) -> None:
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    ids = enc.encode(data)
    if not data or enc.vocab.token_id(data) in set(enc.vocab.unreachable.tolist()):
        # tiktoken panics on an empty piece, and looks whole pieces up (wrong for unreachable tokens)
        expected = oracles.reference(enc.vocab, data)
    else:
        expected = oracles.tiktoken_single_piece(enc.vocab, data)
    if ids != expected:
        first = next((i for i, (a, b) in enumerate(zip(ids, expected)) if a != b), min(len(ids), len(expected)))
        raise CheckFailed(f"encode of {len(data)} bytes differs from tiktoken's BPE at token {first}:"
                          f" {tokens_text(enc.vocab, ids[first:first + 4])} vs {tokens_text(enc.vocab, expected[first:first + 4])}",
                          details=side_by_side(enc.vocab, ids, expected, ("encoder", "tiktoken")))


class _AsEncoder(Encoder):
    """A GuardedEncoder seen through the Encoder interface (so a Tokenizer can use it)."""

    name = "under-test"

    def __init__(self, guarded: GuardedEncoder) -> None:
        super().__init__(guarded.vocab)
        self.guarded = guarded

    def encode(self, data: bytes) -> list[int]:
        return self.guarded.encode(bytes(data))

    def count(self, data: bytes) -> int:
        return self.guarded.count(bytes(data))

    def encode_pieces(self, pieces) -> list[int]:
        return self.guarded.encode_pieces(pieces)


class _AsApproximateEncoder(_AsEncoder):
    """The same for an approximate encoder: callers such as ``chunking`` must not take the
    exact-BPE shortcuts for it (they would measure BPE's counts, not the encoder's)."""

    capabilities = frozenset({"approximate"})


def _as_encoder(ctx: Context, guarded: GuardedEncoder) -> _AsEncoder:
    exact = "exact" in getattr(ctx.cls, "capabilities", ())
    return _AsEncoder(guarded) if exact else _AsApproximateEncoder(guarded)


def check_pipeline(ctx: Context, p: dict) -> None:
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    enc, text = ctx.encoder(p["vocab"]), p["text"]
    peer_name, peer = adapters.peer_for(enc.vocab)
    tokenizer = Tokenizer(enc.vocab, algorithm=_as_encoder(ctx, enc))
    ids = guarded_call(f"Tokenizer.encode_ordinary({text[:40]!r})", tokenizer.encode_ordinary, text,
                       timeout=None)
    expected = peer(text)
    if ids != expected:
        raise mismatch(f"Tokenizer.encode_ordinary({text[:60]!r})", enc.vocab, ids, expected,
                       ("bpebench", peer_name))


def _pipeline_applies(kind: str) -> str | None:
    if kind == RANDOM:
        return "needs a real vocabulary with a peer library"
    name, peer = adapters.peer_for(resolve(kind))
    return None if peer is not None else f"no peer library encodes {kind}"


def check_interval(ctx: Context, p: dict) -> None:
    """Every interval of a short text (``queries`` when given) counts as its slice encodes."""
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    counter = adapters.interval_counter(enc, data)
    queries = p.get("queries")
    if queries is None:
        queries = [(i, j) for i in range(len(data) + 1) for j in range(i, len(data) + 1)]
    for start, end in queries:
        start, end = min(start, len(data)), min(end, len(data))
        start, end = min(start, end), max(start, end)
        got = counter(start, end)
        expected = len(oracles.long_reference(enc.vocab, data[start:end]))
        if got != expected:
            raise CheckFailed(f"interval count [{start}:{end}] of {shown(data)} = {got},"
                              f" the slice {shown(data[start:end])} has {expected} tokens", data)


@st.composite
def _interval_payload(draw, kind: str) -> dict:
    """Short texts get every interval checked; longer ones drawn queries; with the
    ``long-sequences`` feature, sometimes a text of several hundred bytes."""
    long = FEATURES["long-sequences"] and draw(st.integers(0, 3)) == 0
    p = draw(_bytes_payload(kind, max_size=40))
    if long and p["data"]:
        size = draw(st.sampled_from([300, 600, 900]))
        p = {**p, "data": (p["data"] * (size // len(p["data"]) + 1))[:size]}
    n = len(p["data"])
    if n <= 20:
        return p
    queries = draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), min_size=1, max_size=24))
    return {**p, "queries": [list(q) for q in queries]}


class _Chunking:
    """Run a chunking function with the encoder under test, compare with the definition, and say
    whose fault a difference is.

    The definition is brute force over every character boundary, with the reference's counts
    (``naive``, or a Tokenizer on ``naive``) for an exact encoder and the encoder's own counts for an
    approximate one. When the result differs, every encoder call the chunking made is compared
    with the reference on the same input: a call that differs makes it the encoder's failure;
    otherwise it is a fault of the chunking itself, reported as such.
    """

    def __init__(self, ctx: Context, p: dict) -> None:
        from bpebench.algorithms.pipeline.tokenizer import Tokenizer

        self.ctx, self.p = ctx, p
        self.enc = ctx.encoder(p["vocab"])
        self.vocab = self.enc.vocab
        self.exact = "exact" in getattr(ctx.cls, "capabilities", ())
        self.pipeline = bool(p.get("pipeline"))
        self.allowed = p.get("allowed") or frozenset()
        if self.allowed != "all":
            self.allowed = frozenset(self.allowed)
        self.text = p["text"] if self.pipeline else (p["data"] if "data" in p else p["text"].encode("utf-8"))
        self.user = Tokenizer(self.vocab, algorithm=_as_encoder(ctx, self.enc)) if self.pipeline else \
            _as_encoder(ctx, self.enc)
        if self.pipeline and self.exact:
            self.reference = Tokenizer(self.vocab, algorithm="naive")

    def count(self, prefix) -> int:
        """The definition's count: the reference's (exact encoders) or the encoder's own."""
        if not self.pipeline:
            if self.exact:
                return len(oracles.reference(self.vocab, bytes(prefix)))
            return self.enc.count(bytes(prefix))
        tokenizer = self.reference if self.exact else self.user
        if self.allowed:
            return len(tokenizer.encode(prefix, allowed_special=self.allowed, disallowed_special=()))
        return tokenizer.count(prefix)

    def boundaries(self) -> list[int]:
        if isinstance(self.text, str):
            return list(range(len(self.text) + 1))
        data = self.text
        return [0] + [i for i in range(1, len(data) + 1) if i == len(data) or (data[i] & 0xC0) != 0x80]

    def run(self, what: str, fn):
        """``fn()`` with the encoder's calls recorded: (result, recorded calls)."""
        self.enc.record = calls = []
        try:
            result = guarded_call(what, fn, timeout=None)
        finally:
            self.enc.record = None
        return result, calls

    def blame(self, calls, message: str) -> CheckFailed:
        """The failure: the encoder's (a recorded call that differs from the reference) or the chunking's."""
        if self.exact:
            for method, arg, result in calls:
                expected = _reference_result(self.vocab, method, arg)
                if expected is not None and result != expected:
                    return CheckFailed(f"{message}; the encoder is wrong on a call the chunking made: "
                                       f"{_call_text(method, arg)} = {_shown_result(self.vocab, result)}, the reference"
                                       f" gives {_shown_result(self.vocab, expected)}", _call_bytes(method, arg))
        return CheckFailed(f"chunking fault (not the encoder's: every one of its {len(calls)} encoder calls agrees"
                           f" with the reference): {message}")


def _reference_result(vocab: Vocabulary, method: str, arg):
    if method == "encode":
        return oracles.reference(vocab, arg)
    if method == "count":
        return len(oracles.reference(vocab, arg))
    if method == "encode_pieces":
        return [t for piece in arg for t in oracles.reference(vocab, piece)]
    return None


def _call_text(method: str, arg) -> str:
    if method == "encode_pieces":
        return f"encode_pieces({[shown(x, 24) for x in arg[:6]]}{'...' if len(arg) > 6 else ''})"
    return f"{method}({shown(arg) if isinstance(arg, bytes) else arg})"


def _call_bytes(method: str, arg) -> bytes | None:
    if isinstance(arg, bytes):
        return arg
    if method == "encode_pieces":
        return b"".join(arg)
    return None


def _shown_result(vocab: Vocabulary, result) -> str:
    return tokens_text(vocab, result) if isinstance(result, list) else repr(result)


def check_split_at_n(ctx: Context, p: dict) -> None:
    """``chunking.split_at_tokens(text, n)`` with this encoder equals the definition: the longest
    prefix on a character boundary whose own encoding has at most ``n`` tokens (counts need not
    grow with the prefix). Raw bytes (``data``) or, with ``pipeline``, a Tokenizer on a ``text``
    (``allowed`` special tokens carved)."""
    from bpebench.algorithms.pipeline.chunking import split_at_tokens

    run = _Chunking(ctx, p)
    n, text = p["n"], run.text
    what = f"split_at_tokens({text[:40]!r}, {n})"
    got, calls = run.run(what, lambda: split_at_tokens(text, n, encoder_or_tokenizer=run.user,
                                                        allowed_special=run.allowed))
    if type(got) is not type(text) or not text.startswith(got):
        raise run.blame(calls, f"{what} = {got!r} is not a prefix of the text")
    counts = {end: run.count(text[:end]) for end in run.boundaries()}
    best = max(end for end, c in counts.items() if c <= n)
    if len(got) != best:
        used = counts.get(len(got))
        why = "does not end on a character boundary" if used is None else f"has {used} tokens"
        raise run.blame(calls, f"{what} = {got!r}, which {why}; the longest prefix with <= {n} tokens is"
                               f" {text[:best]!r} ({counts[best]} tokens)")


def check_count_till_limit(ctx: Context, p: dict) -> None:
    """``chunking.count_till_limit(text, limit)`` is the count when it is at most ``limit``, else None."""
    from bpebench.algorithms.pipeline.chunking import count_till_limit

    run = _Chunking(ctx, p)
    limit, text = p["n"], run.text
    what = f"count_till_limit({text[:40]!r}, {limit})"
    got, calls = run.run(what, lambda: count_till_limit(text, limit, encoder_or_tokenizer=run.user,
                                                         allowed_special=run.allowed))
    total = run.count(text)
    expected = total if total <= limit else None
    if got != expected:
        raise run.blame(calls, f"{what} = {got!r}, but the text has {total} tokens (expected {expected!r})")


@st.composite
def _chunking_payload(draw, kind: str) -> dict:
    """Raw bytes on drawn vocabularies, or text through a whole pipeline: a drawn one (pattern,
    normalizer, special tokens whose literals occur in the text) or a real vocabulary's."""
    n = draw(st.integers(0, 12))
    if kind == RANDOM and draw(st.booleans()):
        spec, data = draw(vocabulary_and_input(kind, max_size=40, disorder=True))
        return {"vocab": spec, "data": data, "n": n}
    spec = draw(pipeline_vocabulary_specs()) if kind == RANDOM else kind
    literals = list(resolve(spec).special_tokens)[:3]
    text = draw(pipeline_texts(max_size=24 if kind == RANDOM else 30, extra=literals))
    allowed = draw(st.sampled_from([[], "all"])) if literals else []
    return {"vocab": spec, "text": text, "n": n, "pipeline": True, "allowed": allowed}


def check_minimal_bound(ctx: Context, p: dict) -> None:
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    n = enc.count(data)
    bpe = len(oracles.reference(enc.vocab, data))
    if n > bpe:
        raise CheckFailed(f"count({shown(data)}) = {n} but BPE needs only {bpe} tokens")


def _minimal_applies(cls: type) -> str | None:
    if "minimal" in cls.capabilities:
        return None
    return "only for minimal-count encoders (capability 'minimal')"


def check_incremental(ctx: Context, p: dict) -> None:
    """Replay push/truncate operations; after each, the counter equals a fresh count."""
    adapters.replay_incremental(ctx.encoder(p["vocab"]), p["ops"], p.get("direction", "append"),
                                lambda vocab, data: len(oracles.reference(vocab, data)))


# ----------------------------------------------------------------------------- the rest of the interface
def check_decode(ctx: Context, p: dict) -> None:
    """The encoder's own ``decode`` gives the tokens' bytes (special tokens their literal), for
    BPE's encoding of ``data`` or for any ``ids``."""
    enc = ctx.encoder(p["vocab"])
    vocab = enc.vocab
    ids = list(p["ids"]) if "ids" in p else oracles.reference(vocab, p["data"])
    got = enc.decode(ids)
    expected = vocab.decode_bytes(ids)
    if got != expected:
        raise CheckFailed(f"decode({tokens_text(vocab, ids)}) = {shown(got)}, the tokens' bytes are {shown(expected)}",
                          expected)


@st.composite
def _decode_payload(draw, kind: str) -> dict:
    if draw(st.booleans()):
        return draw(_bytes_payload(kind))
    spec = draw(vocabulary_specs(kind, disorder=True))
    vocab = resolve(spec)
    every = list(range(len(vocab.tokens))) + sorted(vocab.special_tokens.values())
    ids = draw(st.lists(st.sampled_from(every), max_size=16))
    return {"vocab": spec, "ids": ids}


def _decode_applies(cls: type) -> str | None:
    return None if callable(getattr(cls, "decode", None)) else "the encoder has no decode()"


#: input lengths around the sizes an index or a length field overflows at, and long inputs
BOUNDARY_LENGTHS = (255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 65535, 65536, 65537)


def boundary_data(p: dict) -> bytes:
    """``unit`` repeated, from offset ``start``, cut to ``length`` bytes (payloads stay small)."""
    unit, length, start = p["unit"], p["length"], p.get("start", 0)
    return (unit * ((length + start) // len(unit) + 1))[start : start + length]


def check_boundary_lengths(ctx: Context, p: dict) -> None:
    """``encode`` and ``count`` of inputs of 255/256, 1023/1024, 4095/4096, 65535/65536 bytes
    (one byte on either side too): runs of one byte, repeated tokens, repeated text. An input
    the encoder could not do well within the call limit (timed on its first sixteenth,
    extrapolated as n^2) is skipped, and the message says so."""
    enc = ctx.encoder(p["vocab"])
    data = boundary_data(p)
    slow = ctx.too_slow(p["vocab"], data)
    if slow:
        raise VocabularyRefused(f"skipped: {slow}")
    expected = oracles.long_reference(enc.vocab, data)
    ids = enc.encode(data)
    if ids != expected:
        raise mismatch(f"encode of {len(data)} bytes ({shown(data, 40)})", enc.vocab, ids, expected, data=data)
    n = enc.count(data)
    if n != len(expected):
        raise CheckFailed(f"count of {len(data)} bytes ({shown(data, 40)}) = {n}, BPE gives {len(expected)} tokens",
                          data)


@st.composite
def _boundary_payload(draw, kind: str) -> dict:
    spec = draw(vocabulary_specs(kind, disorder=True))
    vocab = resolve(spec)
    alphabet = alphabet_of(vocab)
    ids = producible_ids(vocab)
    token = st.integers(0, len(ids) - 1).map(lambda i: vocab.tokens[int(ids[i])])
    unit = draw(st.one_of(
        st.sampled_from(list(alphabet)).map(lambda b: bytes([b])),  # a run of one byte
        st.lists(token, min_size=1, max_size=3).map(b"".join),
        inputs(vocab, max_size=48).filter(bool),
    ))
    return {"vocab": spec, "unit": unit, "length": draw(st.sampled_from(BOUNDARY_LENGTHS)),
            "start": draw(st.integers(0, 3))}


def check_encode_pieces(ctx: Context, p: dict) -> None:
    """``encode_pieces`` of no piece is ``[]``, of one piece ``encode`` of it, of many pieces (empty
    ones too, hundreds of them) the concatenation of each piece's BPE."""
    enc = ctx.encoder(p["vocab"])
    pieces = list(p["pieces"])
    got = enc.encode_pieces(pieces)
    expected = [t for piece in pieces for t in oracles.reference(enc.vocab, piece)]
    if got != expected:
        raise mismatch(f"encode_pieces of {len(pieces)} pieces ({sum(map(len, pieces))} bytes)", enc.vocab, got,
                       expected, ("encode_pieces", "naive"), b"".join(pieces))


@st.composite
def _pieces_payload(draw, kind: str) -> dict:
    """A drawn text cut into 0, 1, a few or hundreds of pieces (empty ones too) at seeded places:
    few choices for hypothesis to shrink, however many pieces."""
    spec = draw(vocabulary_specs(kind, disorder=True))
    vocab = resolve(spec)
    how_many = draw(st.sampled_from([0, 1, 2, 3, 40, 300]))
    if how_many < 4:
        return {"vocab": spec, "pieces": draw(st.lists(inputs(vocab, max_size=16), min_size=how_many,
                                                       max_size=how_many))}
    base = draw(inputs(vocab, max_size=64).filter(bool))
    text = base * (8 * how_many // len(base) + 1)
    rng = random.Random(draw(st.integers(0, 2**16)))
    cuts = sorted(rng.randrange(len(text) + 1) for _ in range(how_many - 1))
    return {"vocab": spec, "pieces": [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]}


def check_raw_specials(ctx: Context, p: dict) -> None:
    """Raw encoding never carves special tokens: text holding their literals encodes as BPE of
    its bytes (carving is the Tokenizer's job, and only for allowed ones)."""
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    ids = enc.encode(data)
    expected = oracles.reference(enc.vocab, data)
    if ids != expected:
        raise mismatch(f"raw encode({shown(data)}) (it holds special-token literals)", enc.vocab, ids, expected,
                       data=data)
    if enc.count(data) != len(expected):
        raise CheckFailed(f"raw count({shown(data)}) = {enc.count(data)}, BPE gives {len(expected)}", data)


@st.composite
def _specials_payload(draw, kind: str) -> dict:
    with_specials = trained_specs(disorder=True).filter(lambda s: bool(resolve(s).special_tokens))
    spec = draw(with_specials if kind == RANDOM else st.just(kind))
    vocab = resolve(spec)
    literal = st.sampled_from(sorted(vocab.special_tokens)).map(lambda s: s.encode("utf-8"))
    parts = draw(st.lists(st.one_of(literal, inputs(vocab, max_size=12)), min_size=1, max_size=6))
    return {"vocab": spec, "data": b"".join(parts) + draw(literal)}


def _specials_apply(kind: str) -> str | None:
    if kind == RANDOM:
        return None if FEATURES["specials"] else "drawn vocabularies have no special tokens (feature off)"
    return None if resolve(kind).special_tokens else f"{kind} has no special tokens"


def check_unencodable_bytes(ctx: Context, p: dict) -> None:
    """A byte that is not a token of the vocabulary cannot be encoded: ``encode`` and ``count``
    must raise, never return ids that leave it out or stand for something else."""
    enc, data = ctx.encoder(p["vocab"]), p["data"]
    missing = next(b for b in data if enc.vocab.byte_token[b] < 0)
    for method in ("encode", "count"):
        what = f"{method}({shown(data)})"
        try:
            out = enc.call(what, getattr(enc.raw, method), data, probe_data=data)
        except CallTimeout:
            raise
        except CheckFailed:
            continue  # it refused the input: right
        raise CheckFailed(f"{what} returned {out!r} although byte 0x{missing:02x} is not a token of the vocabulary"
                          f" (it must raise)", data)


@st.composite
def _unencodable_payload(draw, kind: str) -> dict:
    spec = draw(trained_specs(alphabet="text", disorder=True))
    vocab = resolve(spec)
    outside = [b for b in range(256) if vocab.byte_token[b] < 0]
    data = bytearray(draw(inputs(vocab, max_size=24)))
    data.insert(draw(st.integers(0, len(data))), draw(st.sampled_from(outside)))
    return {"vocab": spec, "data": bytes(data)}


def _random_only(kind: str) -> str | None:
    return None if kind == RANDOM else "real vocabularies have every byte as a token"


# ----------------------------------------------------------------------------- registry of checks
@dataclass(frozen=True)
class Check:
    """One conformance check (see the table in the module docstring)."""

    id: str
    title: str
    run: Callable[[Context, dict], None]
    payloads: Callable[[str], st.SearchStrategy[dict]] | None = None
    exactness: bool = False
    needs: frozenset[str] = frozenset()
    pinned: Callable[[str], list[dict]] = _pinned_bytes
    #: kind -> reason the check cannot run on that vocabulary kind, or None
    kind_applies: Callable[[str], str | None] = lambda kind: None
    #: encoder class -> reason it does not apply, or None
    class_applies: Callable[[type], str | None] = lambda cls: None
    #: fraction of the profile's examples on a real (large) vocabulary
    real_fraction: float = 0.3
    #: "append" / "prepend" for the stateful incremental checks
    stateful: str | None = None
    #: run only when asked for by name (``--exhaustive``), never as part of the default plan
    explicit: bool = False

    def applies(self, cls: type, kind: str) -> str | None:
        missing = self.needs - set(getattr(cls, "capabilities", ()))
        if missing:
            return f"encoder does not declare {', '.join(sorted(missing))}"
        return self.class_applies(cls) or self.kind_applies(kind)


CHECKS: dict[str, Check] = {c.id: c for c in [
    Check("output-types", "encode returns a list of token ids, count an int; b'' encodes to []",
          check_output_types, _bytes_payload),
    Check("round-trip", "decode(encode(x)) == x", check_round_trip, _bytes_payload),
    Check("count-consistent", "count(x) == len(encode(x)); encode_pieces concatenates",
          check_count_consistent, _payload_with_cut),
    Check("equals-naive", "Corollary I: equals the reference naive encoder", check_equals_naive,
          _bytes_payload, exactness=True),
    Check("token-bytes", "every token's own bytes encode as naive does", check_token_bytes,
          lambda kind: st.tuples(vocabulary_specs(kind, disorder=True), st.integers(0, 2**16)).map(
              lambda t: {"vocab": t[0], "seed": t[1]}), exactness=True,
          pinned=lambda kind: [{"vocab": "seed"}] if kind == RANDOM else [], real_fraction=0.1),
    Check("valid-output", "the output is a valid encoding (decode + re-encode gives it back)",
          check_valid_output, _bytes_payload, exactness=True),
    Check("long-inputs", "kB-long pieces equal tiktoken's BPE", check_long_inputs,
          lambda kind: _long_payload(kind), exactness=True, kind_applies=_is_tiktoken_real,
          real_fraction=0.2, pinned=lambda kind: []),
    Check("pipeline", "Tokenizer with this encoder equals the peer library on text", check_pipeline,
          lambda kind: pipeline_texts().map(lambda t: {"vocab": kind, "text": t}), exactness=True,
          kind_applies=_pipeline_applies, real_fraction=0.5, pinned=lambda kind: []),
    Check("appending", "appending counter (push / truncate) equals a fresh count after every step",
          check_incremental, None, needs=frozenset({"appending"}), stateful="append",
          pinned=lambda kind: [], real_fraction=0.2),
    Check("prepending", "prepending counter equals a fresh count after every step",
          check_incremental, None, needs=frozenset({"prepending"}), stateful="prepend",
          pinned=lambda kind: [], real_fraction=0.2),
    Check("interval", "interval counts equal the count of the slice", check_interval,
          lambda kind: _interval_payload(kind), needs=frozenset({"interval"}), pinned=lambda kind: []),
    Check("split-at-n", "chunking.split_at_tokens: the longest prefix with <= n tokens (brute force)",
          check_split_at_n, lambda kind: _chunking_payload(kind), pinned=lambda kind: _pinned_chunking(kind),
          real_fraction=0.3),
    Check("count-till-limit", "chunking.count_till_limit: the count if <= limit, else None",
          check_count_till_limit, lambda kind: _chunking_payload(kind), pinned=lambda kind: _pinned_chunking(kind),
          real_fraction=0.3),
    Check("minimal-bound", "never more tokens than BPE", check_minimal_bound, _bytes_payload,
          class_applies=_minimal_applies),
    Check("decode", "the encoder's own decode gives the tokens' bytes", check_decode,
          lambda kind: _decode_payload(kind), class_applies=_decode_applies),
    Check("boundary-lengths", "encode and count at 255/256 ... 65535/65536 bytes equal BPE", check_boundary_lengths,
          lambda kind: _boundary_payload(kind), exactness=True, pinned=lambda kind: [], real_fraction=0.3),
    Check("encode-pieces", "encode_pieces of 0, 1 and hundreds of pieces", check_encode_pieces,
          lambda kind: _pieces_payload(kind), exactness=True, pinned=lambda kind: []),
    Check("raw-specials", "raw encode of special-token literals is plain BPE (no carving)", check_raw_specials,
          lambda kind: _specials_payload(kind), exactness=True, kind_applies=_specials_apply,
          pinned=lambda kind: []),
    Check("unencodable-bytes", "a byte that is not a token makes encode and count raise", check_unencodable_bytes,
          lambda kind: _unencodable_payload(kind), kind_applies=_random_only, pinned=lambda kind: []),
    Check("exhaustive", "every input up to a length over a small vocabulary's alphabet (a proof)",
          check_exhaustive, None, exactness=True, explicit=True),
]}


# ----------------------------------------------------------------------------- approximate encoders
_SAMPLE_TEXT = (b"the quick brown fox jumps over the lazy dog; the dog sleeps. "
                b"aaaa abab abcabc \xe4\xb8\xad\xe6\x96\x87 1234567890 ")


def approximate_report(ctx: Context, kind: str, *, n: int = 100, seed: int = 0) -> str:
    """How often the encoder's output is invalid / differs from naive on a fixed sample.

    Deterministic (seeded): token concatenations and slices of them on the kind's
    vocabulary (for ``random``, two fixed trained vocabularies).
    """
    specs = ([trained_spec([_SAMPLE_TEXT], merges=60, rule="ranks", alphabet="all", shuffle=0),
              trained_spec([_SAMPLE_TEXT], merges=60, rule="merges", alphabet="text", shuffle=1)]
             if kind == RANDOM else [kind])
    rng = random.Random(seed)
    invalid = differ = total = 0
    for spec in specs:
        vocab = resolve(spec)
        enc = ctx.encoder(spec)
        ids_pool = producible_ids(vocab)
        alphabet = alphabet_of(vocab)
        for _ in range(n):
            if rng.random() < 0.5:
                data = b"".join(vocab.tokens[int(ids_pool[rng.randrange(len(ids_pool))])]
                                for _ in range(rng.randint(1, 8)))
                data = data[rng.randint(0, 2):]
            else:
                data = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))
            try:
                ids = enc.encode(data)
            except CheckFailed:
                invalid += 1
                differ += 1
                total += 1
                continue
            reference = oracles.reference(vocab, data)
            total += 1
            differ += ids != reference
            invalid += ids != reference and not oracles.is_valid(vocab, ids)
    return f"invalid output on {invalid}/{total} sampled inputs, differs from naive on {differ}/{total}"
