"""In-process timing: warm up, then time repeated calls with ``time.perf_counter``.

``measure(fn)`` calls ``fn`` once to warm up (numba compilation, caches, lazy
tables), then takes up to ``repeats`` samples within ``budget_s`` seconds and
reports the median and the quartiles. Calls shorter than ``min_sample_s`` are
batched (``number`` calls per sample, as ``timeit`` does) so that timer
resolution does not dominate. The garbage collector is paused inside a sample.

Cost: ``warmup`` calls plus at most ``repeats`` samples or about ``budget_s``
seconds. Exactness does not apply; the spread (``q3 - q1``) says how much to
trust a median.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Timing:
    """Seconds per call: one entry per sample; ``result`` is what the last call returned."""

    samples: tuple[float, ...]
    result: Any = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def q1(self) -> float:
        return _quantile(self.samples, 0.25)

    @property
    def q3(self) -> float:
        return _quantile(self.samples, 0.75)

    @property
    def repeats(self) -> int:
        return len(self.samples)

    def row(self) -> dict:
        """The timing columns of a ``timings.csv`` row."""
        return {
            "repeats": self.repeats, "median_s": self.median, "q1_s": self.q1, "q3_s": self.q3,
            "min_s": min(self.samples), "max_s": max(self.samples),
        }


def _quantile(samples, q: float) -> float:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _timed(fn: Callable[[], Any], number: int) -> tuple[float, Any]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            result = fn()
        elapsed = time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()
    return elapsed / number, result


def measure(
    fn: Callable[[], Any],
    *,
    warmup: int = 1,
    repeats: int = 7,
    min_repeats: int = 3,
    budget_s: float = 1.0,
    min_sample_s: float = 2e-3,
) -> Timing:
    """Time ``fn()`` (see the module docstring). Never returns fewer than one sample.

    A call that alone costs more than ``budget_s`` is sampled once (after the warm-up).
    """
    for _ in range(max(warmup, 0)):
        fn()
    per_call, result = _timed(fn, 1)
    number = 1 if per_call >= min_sample_s else max(1, int(min_sample_s / max(per_call, 1e-9)))
    samples = [per_call] if number == 1 else []
    started = time.perf_counter()
    while len(samples) < repeats:
        if per_call > budget_s and samples:
            break
        if len(samples) >= min_repeats and time.perf_counter() - started > budget_s:
            break
        sample, result = _timed(fn, number)
        samples.append(sample)
    return Timing(tuple(samples), result)


def predicted_cost(previous: tuple[int, float] | None, size: int, *, exponent: float = 2.0) -> float:
    """Seconds a call on ``size`` bytes should take, extrapolated from (size, seconds) of a
    smaller call with a pessimistic power law (quadratic unless told otherwise)."""
    if previous is None:
        return 0.0
    prev_size, prev_seconds = previous
    if prev_size <= 0:
        return prev_seconds
    return prev_seconds * (size / prev_size) ** exponent
