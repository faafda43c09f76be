"""Calling an untrusted encoder: type checks, per-call time limit, and a probe of the current input.

The kit must report an encoder that raises, returns garbage or hangs as *failing a
check*, never crash. Three layers do that:

* :class:`GuardedEncoder` validates every result (a list of ints inside the
  vocabulary, an ``int`` count) and turns any exception into :class:`CheckFailed`
  with one line saying what was called on which input.
* A per-call CPU-time limit (``setitimer(ITIMER_VIRTUAL)``, main thread only):
  a Python-level loop that spins is interrupted with :class:`CallTimeout`, which
  hypothesis then shrinks like any failure. CPU time, not wall time, so a busy
  machine does not cause false alarms; the virtual timer leaves ``SIGALRM`` to
  pytest-timeout.
* Compiled code (numba holds the GIL and never checks signals) cannot be
  interrupted in-process. The kit therefore runs checks in a worker process
  (``properties.worker``); before each call the guard writes the input into a
  shared :class:`Probe` file, so when the parent kills a hung worker it still knows
  which input hung.
"""

from __future__ import annotations

import mmap
import os
import signal
import struct
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterable

import numpy as np

from algorithms.vocabulary import Vocabulary


class CheckFailed(AssertionError):
    """A property does not hold; the message is one line for the report."""


class CallTimeout(CheckFailed):
    """An encoder call ran longer than the per-call CPU-time limit."""


def shown(data: bytes, limit: int = 80) -> str:
    """``repr`` of bytes, shortened in the middle for one-line messages."""
    if len(data) <= limit:
        return repr(data)
    return f"{data[: limit // 2]!r}...{data[-limit // 4:]!r} ({len(data)} bytes)"


# ----------------------------------------------------------------------------- probe
class Probe:
    """A small shared file holding the input of the encoder call in progress."""

    SIZE = 1 << 20

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._map = None
        if path is not None:
            with open(path, "r+b") as f:
                self._map = mmap.mmap(f.fileno(), self.SIZE)

    @classmethod
    def create(cls, path: str) -> None:
        with open(path, "wb") as f:
            f.truncate(cls.SIZE)

    def write(self, data: bytes) -> None:
        if self._map is None:
            return
        data = data[: self.SIZE - 8]
        self._map[8 : 8 + len(data)] = data
        self._map[:8] = struct.pack("<q", len(data))

    @staticmethod
    def read(path: str) -> bytes | None:
        try:
            with open(path, "rb") as f:
                head = f.read(8)
                (length,) = struct.unpack("<q", head)
                return f.read(length) if length >= 0 else None
        except (OSError, struct.error):
            return None


# ----------------------------------------------------------------------------- time limit
def _raise_timeout(signum, frame):
    raise CallTimeout("timed out")


@contextmanager
def cpu_time_limit(seconds: float | None):
    """Interrupt the body after ``seconds`` of CPU time (main thread only; else no limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "ITIMER_VIRTUAL"):
        yield
        return
    previous = signal.signal(signal.SIGVTALRM, _raise_timeout)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


# ----------------------------------------------------------------------------- guarded calls
def guarded_call(what: str, fn: Callable, *args, timeout: float | None, probe: Probe | None = None,
                 probe_data: bytes | None = None) -> Any:
    """``fn(*args)``; any exception or a timeout becomes one CheckFailed line naming ``what``."""
    if probe is not None and probe_data is not None:
        probe.write(probe_data)
    try:
        with cpu_time_limit(timeout):
            return fn(*args)
    except CallTimeout:
        raise CallTimeout(f"{what} did not return within {timeout:g} s of CPU time (hangs?)") from None
    except CheckFailed:
        raise
    except RecursionError:
        raise CheckFailed(f"{what} raised RecursionError") from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # BaseException too: a Rust panic (pyo3) is one
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise CheckFailed(f"{what} raised {type(exc).__name__}: {text}") from None


def as_ids(what: str, out: Any, vocab: Vocabulary) -> list[int]:
    """Validate an encoder's result: a list (or tuple) of ints that are token ids of ``vocab``."""
    if not isinstance(out, (list, tuple)):
        raise CheckFailed(f"{what} returned {type(out).__name__}, expected a list of token ids")
    ids = []
    n = len(vocab.tokens)
    for x in out:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise CheckFailed(f"{what} returned a list holding {type(x).__name__} {x!r}, expected ints")
        x = int(x)
        if not 0 <= x < n:
            raise CheckFailed(f"{what} returned id {x}, outside the vocabulary's ids 0..{n - 1}")
        ids.append(x)
    return ids


def as_count(what: str, out: Any) -> int:
    if isinstance(out, bool) or not isinstance(out, (int, np.integer)):
        raise CheckFailed(f"{what} returned {type(out).__name__} {out!r}, expected an int")
    if out < 0:
        raise CheckFailed(f"{what} returned a negative count {out}")
    return int(out)


class GuardedEncoder:
    """An encoder whose every call is validated, time-limited and probed."""

    def __init__(self, encoder, vocab: Vocabulary, *, timeout: float | None, probe: Probe | None = None) -> None:
        self.raw = encoder
        self.vocab = vocab
        self.timeout = timeout
        self.probe = probe

    def call(self, what: str, fn: Callable, *args, probe_data: bytes | None = None) -> Any:
        return guarded_call(what, fn, *args, timeout=self.timeout, probe=self.probe, probe_data=probe_data)

    def encode(self, data: bytes) -> list[int]:
        what = f"encode({shown(data)})"
        return as_ids(what, self.call(what, self.raw.encode, data, probe_data=data), self.vocab)

    def count(self, data: bytes) -> int:
        what = f"count({shown(data)})"
        return as_count(what, self.call(what, self.raw.count, data, probe_data=data))

    def encode_pieces(self, pieces: Iterable[bytes]) -> list[int]:
        pieces = list(pieces)
        what = f"encode_pieces({[shown(p, 24) for p in pieces]})"
        return as_ids(what, self.call(what, self.raw.encode_pieces, pieces, probe_data=b"".join(pieces)),
                      self.vocab)


def construct(cls, vocab: Vocabulary, *, timeout: float | None, probe: Probe | None = None) -> GuardedEncoder:
    """Build ``cls(vocab)`` and warm it up (numba compiles on the first call) under a long limit."""
    name = getattr(cls, "__qualname__", repr(cls))
    encoder = guarded_call(f"{name}({vocab.name})", cls, vocab, timeout=timeout, probe=probe, probe_data=b"")
    guarded = GuardedEncoder(encoder, vocab, timeout=timeout, probe=probe)
    alphabet = [b for b in range(256) if vocab.byte_token[b] >= 0]
    sample = bytes(alphabet[:2]) * 2
    guarded.encode(sample)
    guarded.count(sample)
    return guarded


def probe_path_from_env() -> str | None:
    return os.environ.get("BPEBENCH_PROBE")
