"""Calling an untrusted encoder: type checks, per-call time limit, and a probe of the current input.

The kit must report an encoder that raises, returns garbage or hangs as *failing a
check*, never crash. Three layers do that:

* :class:`GuardedEncoder` validates every result (a list of ints inside the
  vocabulary, an ``int`` count) and turns any exception into :class:`CheckFailed`
  with one line saying what was called on which input.
* A per-call wall-clock limit (:func:`call_time_limit`: a watchdog thread, ``SIGUSR2`` to the
  main thread): a Python-level loop that spins, or a call that sleeps or blocks, is
  interrupted with :class:`CallTimeout`, which hypothesis then shrinks like any failure.
  ``SIGALRM`` stays with pytest-timeout. The default limit is generous (a busy machine
  must not cause false alarms).
* Compiled code (numba holds the GIL and never checks signals) cannot be
  interrupted in-process. The kit therefore runs checks in a worker process
  (``bpebench.properties.worker``); before each call the guard writes the input into a
  shared :class:`Probe` file, so when the parent kills a hung worker it still knows
  which input hung.
"""

from __future__ import annotations

import ctypes
import mmap
import signal
import struct
import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterable

import numpy as np

from bpebench.algorithms.formats.vocabulary import Vocabulary


class CheckFailed(AssertionError):
    """A property does not hold; the message is one line for the report.

    ``data`` is the input of the encoder call that failed, when one did; ``details`` are
    lines shown under the message (the two id sequences side by side, say).
    """

    data: bytes | None = None
    details: tuple[str, ...] = ()
    #: (check id, payload) that reproduces this failure more directly than the check's own payload
    replay_as: tuple[str, dict] | None = None

    def __init__(self, message: str = "", data: bytes | None = None, details=()) -> None:
        super().__init__(message)
        if data is not None:
            self.data = data
        if details:
            self.details = tuple(details)


class CallTimeout(CheckFailed):
    """An encoder call ran longer than the per-call (wall-clock) time limit."""


class VocabularyRefused(Exception):
    """The encoder declares (``unsupported_reason``) that it cannot encode this vocabulary exactly.

    Not a failure: the kit draws another vocabulary (hypothesis ``reject``) and says how many
    it refused; a replayed example on such a vocabulary reports ``n/a`` with the reason."""


def refusal(cls, vocab: Vocabulary) -> str | None:
    """The one-line reason ``cls`` gives for refusing ``vocab``, or None (also for classes that
    do not declare ``unsupported_reason``)."""
    declared = getattr(cls, "unsupported_reason", None)
    if not callable(declared):
        return None
    name = getattr(cls, "__qualname__", repr(cls))
    reason = guarded_call(f"{name}.unsupported_reason({vocab.name})", declared, vocab, timeout=None)
    return None if reason is None else str(reason)


def shown(data: bytes, limit: int = 80) -> str:
    """``repr`` of bytes, shortened in the middle for one-line messages."""
    if len(data) <= limit:
        return repr(data)
    return f"{data[: limit // 2]!r}...{data[-limit // 4:]!r} ({len(data)} bytes)"


# ----------------------------------------------------------------------------- probe
class Probe:
    """A small shared file holding the input (and vocabulary spec) of the encoder call in progress.

    Layout: int64 data length, int32 spec length, the spec (UTF-8), the data.
    """

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
            f.write(struct.pack("<qi", -1, 0))
            f.truncate(cls.SIZE)

    def write(self, data: bytes, spec: str = "") -> None:
        if self._map is None:
            return
        raw_spec = spec.encode()[: self.SIZE // 2]
        data = data[: self.SIZE - 12 - len(raw_spec)]
        self._map[:8] = struct.pack("<q", -1)  # invalid while being written
        self._map[12 : 12 + len(raw_spec)] = raw_spec
        self._map[12 + len(raw_spec) : 12 + len(raw_spec) + len(data)] = data
        self._map[8:12] = struct.pack("<i", len(raw_spec))
        self._map[:8] = struct.pack("<q", len(data))

    @staticmethod
    def read(path: str) -> tuple[bytes | None, str]:
        """(data, spec) of the call in progress, or (None, "") if none was recorded."""
        try:
            with open(path, "rb") as f:
                length, spec_length = struct.unpack("<qi", f.read(12))
                if length < 0:
                    return None, ""
                spec = f.read(spec_length).decode(errors="replace")
                return f.read(length), spec
        except (OSError, struct.error):
            return None, ""


# ----------------------------------------------------------------------------- time limit
_SIGNAL = getattr(signal, "SIGUSR2", None)


class _Deadline:
    """One armed limit: when it expires and which thread it interrupts."""

    def __init__(self, seconds: float, in_main: bool) -> None:
        self.when = time.monotonic() + seconds
        self.target = threading.get_ident()
        self.in_main = in_main
        self.fired = False

    def fire(self) -> None:
        self.fired = True
        if self.in_main:
            signal.pthread_kill(self.target, _SIGNAL)
        else:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.target), ctypes.py_object(CallTimeout))


class _Watchdog:
    """One daemon thread that fires the armed deadlines (a thread per call would cost more
    than many of the calls it guards)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: set[_Deadline] = set()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, in_main: bool) -> _Deadline:
        deadline = _Deadline(seconds, in_main)
        with self._cond:
            self._armed.add(deadline)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="bpebench-call-limit", daemon=True)
                self._thread.start()
            self._cond.notify()
        return deadline

    def disarm(self, deadline: _Deadline) -> None:
        with self._cond:
            self._armed.discard(deadline)

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._armed:
                    self._cond.wait()
                    continue
                soonest = min(self._armed, key=lambda d: d.when)
                wait = soonest.when - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                self._armed.discard(soonest)
                soonest.fire()


_WATCHDOG = _Watchdog()
_armed: _Deadline | None = None  # the limit the watchdog signal may interrupt


def _interrupt(signum, frame):
    if _armed is not None and _armed.fired:
        raise CallTimeout("timed out")


@contextmanager
def call_time_limit(seconds: float | None):
    """Interrupt the body after ``seconds`` of wall-clock time.

    A watchdog thread waits for the deadline. In the main thread it sends ``SIGUSR2`` to it
    (which also wakes a ``time.sleep`` or a blocking read; the handler, installed once, raises
    :class:`CallTimeout` only for an expired limit, so a late signal is harmless); in another
    thread it raises :class:`CallTimeout` there asynchronously (Python code only). Compiled code
    that never returns to Python cannot be interrupted in-process: the kit's worker watchdog
    kills the whole worker for that.
    """
    global _armed
    if not seconds:
        yield
        return
    in_main = threading.current_thread() is threading.main_thread() and _SIGNAL is not None
    if in_main and signal.getsignal(_SIGNAL) is not _interrupt:
        signal.signal(_SIGNAL, _interrupt)
    deadline = _WATCHDOG.arm(seconds, in_main)
    previous, _armed = _armed, deadline
    try:
        yield
    finally:
        _WATCHDOG.disarm(deadline)
        _armed = previous
        if deadline.fired and not in_main:  # withdraw an exception not delivered yet
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(deadline.target), None)


# ----------------------------------------------------------------------------- guarded calls
def guarded_call(what: str, fn: Callable, *args, timeout: float | None, probe: Probe | None = None,
                 probe_data: bytes | None = None, spec: str = "") -> Any:
    """``fn(*args)``; any exception or a timeout becomes one CheckFailed line naming ``what``."""
    if probe is not None and probe_data is not None:
        probe.write(probe_data, spec)
    try:
        with call_time_limit(timeout):
            return fn(*args)
    except CallTimeout:
        raise CallTimeout(f"{what} did not return within {timeout:g} s (hangs?)",
                          probe_data) from None
    except CheckFailed:
        raise
    except RecursionError:
        raise CheckFailed(f"{what} raised RecursionError", probe_data) from None
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # BaseException too: a Rust panic (pyo3) is one
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise CheckFailed(f"{what} raised {type(exc).__name__}: {text}", probe_data) from None


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
    """An encoder whose every call is validated, time-limited, probed and remembered.

    ``history`` holds every ``encode`` / ``count`` / ``encode_pieces`` / ``decode`` call since
    construction as ``(method, argument, size)`` (the latest :attr:`HISTORY_BYTES` of arguments), so that a
    failure that depends on earlier calls can be replayed; while ``record`` is a list, each such
    call is also appended to it with its result, so that a check can compare exactly the calls
    that were made with the reference.
    """

    HISTORY_BYTES = 1 << 24

    def __init__(self, encoder, vocab: Vocabulary, *, timeout: float | None, probe: Probe | None = None) -> None:
        self.raw = encoder
        self.vocab = vocab
        self.timeout = timeout
        self.probe = probe
        self.slowest_ok = 0.0
        self.spec = ""  # the vocabulary spec, for the probe
        self.history: deque[tuple[str, Any]] = deque()
        self.history_complete = True
        self._history_bytes = 0
        self.record: list[tuple[str, Any, Any]] | None = None

    def call(self, what: str, fn: Callable, *args, probe_data: bytes | None = None) -> Any:
        start = time.perf_counter()
        try:
            out = guarded_call(what, fn, *args, timeout=self.timeout, probe=self.probe, probe_data=probe_data,
                               spec=self.spec)
        except CallTimeout:
            # Shrinking a hang re-runs many inputs that hang: once one call has hung,
            # allow later calls of this check a generous multiple of the slowest call
            # that returned, not the full limit each.
            if self.timeout:
                self.timeout = min(self.timeout, max(0.25, 20 * self.slowest_ok))
            raise
        self.slowest_ok = max(self.slowest_ok, time.perf_counter() - start)
        return out

    def reset_timeout(self, timeout: float | None) -> None:
        """Back to the full per-call limit (the kit calls this before each check)."""
        self.timeout = timeout

    def _remember(self, method: str, arg, size: int) -> None:
        """Keep the call; past :attr:`HISTORY_BYTES` of arguments the oldest ones are forgotten."""
        self.history.append((method, arg, size))
        self._history_bytes += size
        while self._history_bytes > self.HISTORY_BYTES and len(self.history) > 1:
            self._history_bytes -= self.history.popleft()[2]
            self.history_complete = False

    def _recorded(self, method: str, arg, result):
        if self.record is not None:
            self.record.append((method, arg, result))
        return result

    def encode(self, data: bytes) -> list[int]:
        what = f"encode({shown(data)})"
        self._remember("encode", data, len(data))
        try:
            ids = as_ids(what, self.call(what, self.raw.encode, data, probe_data=data), self.vocab)
        except CheckFailed as exc:
            exc.data = data
            raise
        return self._recorded("encode", data, ids)

    def count(self, data: bytes) -> int:
        what = f"count({shown(data)})"
        self._remember("count", data, len(data))
        try:
            n = as_count(what, self.call(what, self.raw.count, data, probe_data=data))
        except CheckFailed as exc:
            exc.data = data
            raise
        return self._recorded("count", data, n)

    def encode_pieces(self, pieces: Iterable[bytes]) -> list[int]:
        pieces = [bytes(p) for p in pieces]
        what = f"encode_pieces({[shown(p, 24) for p in pieces[:8]]}{'...' if len(pieces) > 8 else ''})"
        self._remember("encode_pieces", pieces, sum(map(len, pieces)) + len(pieces))
        ids = as_ids(what, self.call(what, self.raw.encode_pieces, pieces, probe_data=b"".join(pieces)),
                     self.vocab)
        return self._recorded("encode_pieces", pieces, ids)

    def decode(self, ids: list[int]) -> bytes:
        what = f"decode({ids[:12]}{'...' if len(ids) > 12 else ''})"
        self._remember("decode", list(ids), len(ids))
        out = self.call(what, self.raw.decode, list(ids))
        if not isinstance(out, (bytes, bytearray)):
            raise CheckFailed(f"{what} returned {type(out).__name__}, expected bytes")
        return self._recorded("decode", list(ids), bytes(out))


def construct(cls, vocab: Vocabulary, *, timeout: float | None, probe: Probe | None = None,
              spec: str = "") -> GuardedEncoder:
    """Build ``cls(vocab)`` and warm it up (numba compiles on the first call) under a long limit."""
    name = getattr(cls, "__qualname__", repr(cls))
    encoder = guarded_call(f"{name}({vocab.name})", cls, vocab, timeout=timeout, probe=probe, probe_data=b"",
                           spec=spec)
    guarded = GuardedEncoder(encoder, vocab, timeout=timeout, probe=probe)
    guarded.spec = spec
    alphabet = [b for b in range(256) if vocab.byte_token[b] >= 0]
    sample = bytes(alphabet[:2]) * 2
    guarded.encode(sample)
    guarded.count(sample)
    guarded.history.clear()  # the warm-up is part of construction: every replay repeats it
    return guarded


def replay_calls(guarded: GuardedEncoder, calls) -> None:
    """Make ``calls`` (``[method, argument]`` pairs, as ``GuardedEncoder.history`` holds them) on
    ``guarded``, in order; a call that fails raises CheckFailed like any guarded call."""
    for method, arg, *_ in calls:
        if method not in ("encode", "count", "encode_pieces", "decode"):
            raise CheckFailed(f"unknown call {method!r} in the history")
        getattr(guarded, method)(arg)


