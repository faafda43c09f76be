"""Token masks computed by ``llguidance`` (its Rust toktrie), for parity tests and benchmarks.

``llguidance`` builds its own token trie from a list of token bytes and computes,
for a grammar, the bitmask of the tokens that may come next. With a regex grammar
that is the set :mod:`.masks` computes (tokens whose bytes are a prefix of some
match), plus the end-of-sequence token when the empty string already matches. It
runs offline: :class:`LlguidanceMasker` hands it our vocabulary's token bytes (the
same :func:`~.dfs_trie.surface_tokens`), special tokens at their ids, and our own
encoder as the tokenize function it asks for; nothing is downloaded.

Two differences from :class:`~.masks.TokenMasker`, both handled here rather than
hidden: the mask covers special ids as well (:meth:`LlguidanceMasker.mask` returns
only the ordinary ids, :attr:`eos_allowed` says whether the end-of-sequence bit was
set), and when the grammar *forces* its first bytes (one string only can start a
match, e.g. the regex ``true``) llguidance allows only the tokens of its own
tokenization of the forced bytes ("fast-forward" tokens): :meth:`forced_bytes`
tells, and the parity tests keep to recognizers that force nothing.

``slices`` is llguidance's optimisation that precomputes masks for common token
classes (``None``: its default ``general_slices()``; ``[]``: off, a plain trie walk).
Building its tokenizer costs about a second per 100k tokens (measured in
``docs/trie.md``); build one per vocabulary and reuse it.
"""

from __future__ import annotations

import numpy as np

from bpebench.errors import BpebenchError

from .dfs_trie import surface_tokens


def available() -> bool:
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return False
    return True


def _require():
    try:
        import llguidance
        import llguidance.numpy  # noqa: F401
    except ImportError:
        raise BpebenchError("llguidance is not installed (pip install llguidance, or bpebench[peers])") from None
    return llguidance


class _Tokens:
    """What ``llguidance.TokenizerWrapper`` reads: token bytes per id, special ids, the
    end-of-sequence id and a tokenize function."""

    def __init__(self, vocab) -> None:
        ordinary = surface_tokens(vocab)
        specials = dict(vocab.special_ids)
        self.n_ordinary = len(ordinary)
        if not specials:  # llguidance needs an end-of-sequence id: one past the ordinary ones
            specials = {len(ordinary): "<|end|>"}
        n = max([len(ordinary) - 1, *specials]) + 1
        tokens = [b""] * n
        for i, t in enumerate(ordinary):
            tokens[i] = t or b""
        for i, text in specials.items():
            tokens[i] = text.encode()
        self.tokens = tokens
        self.special_token_ids = sorted(specials)
        named_eos = [i for i, text in specials.items() if "end" in text.lower() or text in ("</s>", "<eos>")]
        self.eos_token_id = min(named_eos or specials)
        self.bos_token_id = None
        self._vocab = vocab
        self._encoder = None

    def __call__(self, text) -> list[int]:
        from ..core.registry import default_encoder_name, make_encoder

        if self._encoder is None:
            self._encoder = make_encoder(default_encoder_name(), self._vocab)
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        return list(self._encoder.encode(data)) if data else []


def llguidance_tokenizer(vocab, *, slices: list[str] | None = None):
    """An ``llguidance.LLTokenizer`` over ``vocab`` (memoised per vocabulary and slices)."""
    llguidance = _require()
    key = tuple(slices) if slices is not None else None
    cache = vocab.__dict__.setdefault("_llguidance_tokenizers", {})
    if key not in cache:
        wrapper = llguidance.TokenizerWrapper(_Tokens(vocab))
        try:
            cache[key] = llguidance.LLTokenizer(wrapper, slices=slices)
        except Exception as exc:  # the library raises plain Exceptions for what it refuses
            raise BpebenchError(f"llguidance refuses {vocab.name}: {exc}") from None
    return cache[key]


class LlguidanceMasker:
    """The allowed-token mask of a regex over ``vocab``, computed by llguidance."""

    def __init__(self, vocab, regex: str, *, slices: list[str] | None = None) -> None:
        llguidance = _require()
        self.tokenizer = llguidance_tokenizer(vocab, slices=slices)
        self.n_tokens = len(vocab.tokens)
        self.eos_token = int(self.tokenizer.eos_token)
        self._grammar = llguidance.LLMatcher.grammar_from_regex(regex)
        self.matcher = self._new_matcher()
        self._bitmask = llguidance.numpy.allocate_token_bitmask(1, self.tokenizer.vocab_size)
        self._fill = llguidance.numpy.fill_next_token_bitmask

    def _new_matcher(self):
        import llguidance

        matcher = llguidance.LLMatcher(self.tokenizer, self._grammar, log_level=0)
        if matcher.is_error():
            raise BpebenchError(f"llguidance: {matcher.get_error()}")
        return matcher

    def fill(self) -> np.ndarray:
        """Compute the mask into the reusable bitmask (int32 words, bit i = id i); returns it.

        A matcher keeps the mask of a state it has computed: a second call in the same state
        is a copy, not a computation (see :meth:`first_fill_seconds`)."""
        self._fill(self.matcher, self._bitmask)
        return self._bitmask

    def first_fill_seconds(self, count: int) -> list[float]:
        """Seconds of the first mask of each of ``count`` fresh matchers (built beforehand, not
        timed): llguidance's cost of computing a mask rather than returning the one it keeps.
        Its lexer builds its automaton lazily, so this includes the automaton states the walk
        needs that were not built yet (the regex's compilation is in the matcher's build)."""
        import time

        matchers = [self._new_matcher() for _ in range(count)]
        samples = []
        for matcher in matchers:
            start = time.perf_counter()
            self._fill(matcher, self._bitmask)
            samples.append(time.perf_counter() - start)
        self.matcher = matchers[-1]
        return samples

    def _bits(self) -> np.ndarray:
        words = self.fill()[0]
        return np.unpackbits(words.view(np.uint8), bitorder="little")[: self.tokenizer.vocab_size].astype(bool)

    def mask(self) -> np.ndarray:
        """bool[n_tokens]: the ordinary ids llguidance allows at the start of the regex."""
        return self._bits()[: self.n_tokens]

    @property
    def eos_allowed(self) -> bool:
        return bool(self._bits()[self.eos_token])

    def forced_bytes(self) -> bytes:
        return bytes(self.matcher.compute_ff_bytes())
