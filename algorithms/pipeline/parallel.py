"""Every core: batches and long texts spread over threads, with the ids of one thread. Exact.

The fused kernel releases the GIL while it runs (the ahead-of-time module is built that
way, the JIT entry points are ``nogil``), and each thread keeps its own piece cache, so
threads of one process encode in parallel. Two ways to make the work:

* a **batch** is cut into contiguous groups of texts of about equal bytes, a few per thread
  (:func:`part_count`); each group is one kernel call; the groups' results are joined in order;
* a **long text** is cut into parts at *pre-token boundaries*, so each part's ids are
  exactly that stretch of the whole text's ids (BPE runs piece by piece). A boundary
  that needs no scan from the start: a line feed after a character that is not whitespace and
  followed by a letter. For the six patterns of :mod:`bpebench.algorithms.formats.patterns`
  no piece holds both (a piece with ``\\n`` is a whitespace run, or punctuation with its
  trailing ``[\\r\\n/]*``; the letter alternatives' optional prefix excludes ``\\r\\n``), so a
  piece starts at that letter; and a part that ends with that line feed splits like the whole
  text (gpt2's ``\\s++$`` would take a longer whitespace run at a part's end in one piece).
  Other patterns are never cut (:data:`CUTTABLE_PATTERNS`). A text with no such place
  near a cut stays in fewer parts.

Threads: ``num_threads`` when given, else ``BPEBENCH_NUM_THREADS``, else the CPUs this
process may run on. Work under :data:`MIN_PARALLEL_BYTES` stays on the calling thread.

Why a few parts per thread rather than one: the kernel runs without the GIL, but turning a
part's ids into Python lists needs it (a part's text becomes UTF-8 bytes without it, in the
ahead-of-time helper's ``utf8_span``, and the parts' lists are joined by moving their items,
``join_lists``: both were serial before, 11% of a two-thread call on 0.66 MB of mixed text). With one part per
thread, every thread finishes its kernel at about the same time and the list building
then runs one thread after the other (about a seventh of one thread's time on prose), so
two threads gave at most about 1.75x. With several parts handed out in turn
(:func:`run_all`), one thread builds a part's lists while the other runs its next kernel.
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

import regex

from bpebench.errors import BpebenchError

T = TypeVar("T")

#: below this many bytes of text, threads cost more than they give
MIN_PARALLEL_BYTES = 1 << 16
#: parts per thread (see the module docstring), each of at least ``MIN_PARALLEL_BYTES``
PARTS_PER_THREAD = 4
#: patterns whose pieces never hold a line feed followed by a letter (see the module docstring)
CUTTABLE_PATTERNS = frozenset({"gpt2", "cl100k", "o200k", "llama3", "qwen2", "tekken"})
#: how far from an even cut a boundary is looked for (characters, each way)
CUT_WINDOW = 1 << 16
#: a line feed between a character that is not whitespace and a letter: no piece of the six patterns
#: runs across it (the letter can take no line feed as its prefix); the character before must not be
#: whitespace for gpt2, whose ``\s++$`` would take a part's final whitespace run in one piece
#: (``"x \nA"``: ``' '``, ``'\n'`` in the whole text, ``' \n'`` at a part's end); checked for every
#: string of up to 6 characters over a dozen kinds of character
_BOUNDARY = regex.compile(r"(?<=\S)\n(?=\p{L})")

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def thread_count(num_threads: int | None = None) -> int:
    """``num_threads``, else ``$BPEBENCH_NUM_THREADS``, else the CPUs this process may use."""
    if num_threads is None:
        configured = os.environ.get("BPEBENCH_NUM_THREADS", "").strip()
        if configured:
            try:
                num_threads = int(configured)
            except ValueError:
                raise BpebenchError(f"BPEBENCH_NUM_THREADS must be a whole number, not {configured!r}") from None
        else:
            num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise BpebenchError(f"num_threads must be a whole number >= 1, not {num_threads!r}")
    return num_threads


def part_count(n_bytes: int, threads: int) -> int:
    """How many parts to cut ``n_bytes`` of work into for ``threads`` threads: up to
    ``PARTS_PER_THREAD`` per thread, none under ``MIN_PARALLEL_BYTES`` (at least ``threads``)."""
    if threads <= 1:
        return 1
    return max(threads, min(threads * PARTS_PER_THREAD, n_bytes // MIN_PARALLEL_BYTES))


def run_all(function: Callable[[T], object], items: Sequence[T], threads: int) -> list:
    """``[function(item) for item in items]``, on up to ``threads`` threads of a shared pool (the
    calling thread is one of them); each thread takes the next item when it is done with one,
    so items may outnumber threads."""
    if threads <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    results: list = [None] * len(items)
    taken = itertools.count()  # next() on it is atomic under the GIL: each index is taken once

    def work() -> None:
        for i in iter(taken.__next__, None):
            if i >= len(items):
                return
            results[i] = function(items[i])

    helpers = min(threads, len(items)) - 1
    pool = _shared_pool(helpers)
    futures = [pool.submit(work) for _ in range(helpers)]
    work()
    for future in futures:
        future.result()  # an exception in a helper is raised here
    return results


def _shared_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bpebench")
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def split_batch(sizes: Sequence[int], parts: int) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges cutting ``sizes`` into at most ``parts`` contiguous groups of
    about equal total size (none empty): group ``k`` ends right after the first text at which the
    running total reaches ``k / parts`` of the whole, unless that is the last text. The running
    totals are summed in C and each cut found by bisection (a loop over the sizes in Python cost a
    batch of one-word texts 150 ns a text).

    >>> split_batch([5, 5, 5, 5], 2)
    [(0, 2), (2, 4)]
    """
    n = len(sizes)
    if n == 0:
        return []
    if parts <= 1:
        return [(0, n)]
    running = list(itertools.accumulate(sizes))
    total = running[-1]
    groups: list[tuple[int, int]] = []
    start = 0
    for k in range(1, parts):
        # the first text from ``start`` on where running * parts >= total * k
        i = bisect.bisect_left(running, -(-total * k // parts), start)
        if i + 1 >= n:
            break
        groups.append((start, i + 1))
        start = i + 1
    groups.append((start, n))
    return groups


def cut_text(text: str, parts: int, pattern_name: str | None) -> list[str]:
    """``text`` cut into at most ``parts`` pieces at pre-token boundaries (``"".join`` gives it
    back); one piece when the pattern is not in :data:`CUTTABLE_PATTERNS`."""
    return [text[a:b] for a, b in cut_spans(text, parts, pattern_name)]


def cut_spans(text: str, parts: int, pattern_name: str | None) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of :func:`cut_text`'s pieces."""
    if parts <= 1 or pattern_name not in CUTTABLE_PATTERNS:
        return [(0, len(text))]
    cuts = []
    for k in range(1, parts):
        target = k * len(text) // parts
        match = _BOUNDARY.search(text, target, min(len(text), target + CUT_WINDOW))
        found = match.start() if match is not None else _last_boundary(text, max(0, target - CUT_WINDOW), target)
        if found is not None:
            cut = found + 1  # after the line feed: the letter starts a piece
            if (not cuts or cut > cuts[-1]) and 0 < cut < len(text):
                cuts.append(cut)
    bounds = [0, *cuts, len(text)]
    return list(zip(bounds, bounds[1:]))


def _last_boundary(text: str, start: int, end: int) -> int | None:
    last = None
    for match in _BOUNDARY.finditer(text, start, end):
        last = match.start()
    return last
