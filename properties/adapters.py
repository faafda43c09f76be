"""Adapters between the kit and the optional encoder APIs (incremental, interval, peers).

The core ``Encoder`` interface is fixed (``encode``, ``count``, ``encode_pieces``);
the optional structures are reached through the encoder's declared capabilities.
The kit accepts these spellings (the first that exists is used):

* ``"appending"``: ``encoder.appendable()`` (``bpebench.algorithms.appending``; also
  ``appender()``) returns an object with ``push(data: bytes)`` (or ``extend``),
  optionally ``truncate(length: int)`` (keep the first ``length`` bytes), and
  ``token_count() -> int`` (or ``count()``, ``len()``); when it has
  ``count_at(n)`` (count of an earlier prefix) that is checked too;
* ``"prepending"``: ``encoder.prependable()`` (also ``prepender()``), the same
  with ``prepend(data)`` (or ``push``) adding bytes in front and
  ``truncate(length)`` keeping the last ``length`` bytes;
* ``"interval"``: ``encoder.interval_encoding(data)`` (``bpebench.algorithms.interval``;
  also ``interval(data)``) returns an object with ``count(start, end) -> int``.

Every call goes through the guard (type checks, time limit, probe).
"""

from __future__ import annotations

from typing import Callable, Sequence

from .guard import CheckFailed, GuardedEncoder, as_count, shown

_FACTORIES = {
    "append": ("appendable", "appender", "appending", "new_appender"),
    "prepend": ("prependable", "prepender", "prepending", "new_prepender"),
}
_PUSH = {"append": ("push", "extend", "append"), "prepend": ("prepend", "push", "extend")}


def _first(obj, names: Sequence[str]):
    for name in names:
        attr = getattr(obj, name, None)
        if callable(attr):
            return name, attr
    return None, None


class Incremental:
    """One incremental counter of the encoder under test, and the text it should hold."""

    def __init__(self, guarded: GuardedEncoder, direction: str) -> None:
        self.guarded = guarded
        self.direction = direction
        name, factory = _first(guarded.raw, _FACTORIES[direction])
        if factory is None:
            raise CheckFailed(f"declares {direction}ing but has none of {', '.join(_FACTORIES[direction])}()")
        self.counter = guarded.call(f"{name}()", factory)
        self._push = _first(self.counter, _PUSH[direction])
        self._truncate = _first(self.counter, ("truncate",))
        self._count = _first(self.counter, ("token_count", "count", "__len__"))
        if self._push[1] is None or self._count[1] is None:
            raise CheckFailed(f"{name}() returned {type(self.counter).__name__} without push() and count()")
        self.text = b""
        self.ops: list[list] = []

    @property
    def can_truncate(self) -> bool:
        return self._truncate[1] is not None

    def _where(self) -> str:
        steps = ", ".join(f"{op}({shown(arg, 20) if isinstance(arg, bytes) else arg})" for op, arg in self.ops)
        return f"after {steps}"

    def step(self, op: str, arg, fresh_count: Callable) -> None:
        """Apply one operation, then compare the counter with a fresh count of the text."""
        self.ops.append([op, arg])
        if op == "push":
            self.guarded.call(f"{self._push[0]}({shown(arg)})", self._push[1], arg, probe_data=arg)
            self.text = self.text + arg if self.direction == "append" else arg + self.text
        elif op == "truncate":
            if not self.can_truncate:
                raise CheckFailed("truncate requested but the counter has no truncate()")
            length = min(int(arg), len(self.text))
            self.guarded.call(f"truncate({length})", self._truncate[1], length)
            self.text = self.text[:length] if self.direction == "append" else self.text[len(self.text) - length:]
        else:
            raise CheckFailed(f"unknown operation {op!r}")
        name, fn = self._count
        got = as_count(f"{name}()", self.guarded.call(f"{name}()", fn))
        expected = fresh_count(self.guarded.vocab, self.text)
        if got != expected:
            raise CheckFailed(f"{self._where()}: the counter says {got} tokens, a fresh encode of"
                              f" {shown(self.text)} gives {expected}")
        count_at = getattr(self.counter, "count_at", None)
        if self.direction == "append" and callable(count_at) and self.text:
            for n in sorted({len(self.text) // 2, len(self.text) - 1}):
                got = as_count(f"count_at({n})", self.guarded.call(f"count_at({n})", count_at, n))
                expected = fresh_count(self.guarded.vocab, self.text[:n])
                if got != expected:
                    raise CheckFailed(f"{self._where()}: count_at({n}) says {got} tokens, a fresh encode of"
                                      f" {shown(self.text[:n])} gives {expected}")


def replay_incremental(guarded: GuardedEncoder, ops, direction: str, fresh_count: Callable) -> None:
    session = Incremental(guarded, direction)
    for op, arg in ops:
        session.step(op, arg, fresh_count)


def text_after(ops, direction: str) -> bytes:
    text = b""
    for op, arg in ops:
        if op == "push":
            text = text + arg if direction == "append" else arg + text
        elif op == "truncate":
            length = min(int(arg), len(text))
            text = text[:length] if direction == "append" else text[len(text) - length:]
    return text


def interval_counter(guarded: GuardedEncoder, data: bytes) -> Callable[[int, int], int]:
    """``(start, end) -> count`` from the encoder's interval structure over ``data``."""
    name, factory = _first(guarded.raw, ("interval_encoding", "interval", "interval_counter"))
    if factory is None:
        raise CheckFailed("declares interval but has no interval(data)")
    structure = guarded.call(f"{name}({shown(data)})", factory, data, probe_data=data)
    count = getattr(structure, "count", None)
    if not callable(count):
        count = structure if callable(structure) else None
    if count is None:
        raise CheckFailed(f"{name}() returned {type(structure).__name__} without count(start, end)")

    def query(start: int, end: int) -> int:
        what = f"interval count({start}, {end})"
        return as_count(what, guarded.call(what, count, start, end, probe_data=data))

    return query


# ----------------------------------------------------------------------------- peers
def peer_for(vocab) -> tuple[str, Callable[[str], list[int]] | None]:
    """The peer library that encodes text with ``vocab`` exactly, as ``(name, text -> ids)``.

    tiktoken (built in memory from the ranks) for tiktoken vocabularies; otherwise
    sentencepiece or HF tokenizers through ``bpebench.algorithms.peers`` when they can load
    the vocabulary (None if no peer can).
    """
    from . import oracles

    if oracles.tiktoken_ranked(vocab) and vocab.pattern:
        return "tiktoken", oracles.tiktoken_encoding(vocab).encode_ordinary
    try:
        from bpebench.algorithms import peers
    except ImportError:
        return "", None
    usable = {name for name, ok, _ in peers.peer_status(vocab) if ok}
    for name in ("sentencepiece", "hf-tokenizers"):
        if name in usable:
            try:
                peer = peers.make_peer(name, vocab, verify=False)
            except Exception:
                continue
            return name, peer.encode_ordinary
    return "", None
