"""Every core: batches and long texts spread over threads, with the ids of one thread. Exact.

The fused kernel releases the GIL while it runs (the ahead-of-time module is built that
way, the JIT entry points are ``nogil``), and each thread keeps its own piece cache, so
threads of one process encode in parallel. Two ways to make the work:

* a **batch** is cut into contiguous groups of texts (each group one kernel call, its texts made
  UTF-8 on the thread that encodes them); the groups' results are joined in order;
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
process may run on. Work under :data:`MIN_PARALLEL_BYTES` stays on the calling thread, in one
piece.

How big the parts are (:func:`part_targets`): each part a ``1 / (2 x threads)`` share of the
work not yet cut, down to :data:`MIN_PART_BYTES` and up to :data:`MAX_PART_BYTES` (guided
self-scheduling: about 14 parts for 1 MB on two threads; a long text on one thread goes in
parts of the largest size, so its buffers stay in the caches), handed out in turn (:func:`run_all`: every thread, the caller's included,
takes the next part when it is done with one). One part per thread capped two threads at about
1.75x, since the threads then built their lists one after the other at the end; four equal parts
per thread still left one thread idle for up to a part at the end (1.2-2.7 ms of an 11 ms call on
1.1 MB, when the two CPUs ran at different speeds), while the shrinking parts end within about
0.2 ms of each other. Turning ids into Python lists needs the GIL, the kernel does not: one
thread builds a part's lists while the other runs its next kernel.
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
R = TypeVar("R")

#: below this many bytes of text, threads cost more than they give
MIN_PARALLEL_BYTES = 1 << 16
#: the smallest part a batch or a long text is cut into (bytes, or characters; see ``part_targets``)
MIN_PART_BYTES = 1 << 14
#: the largest: a part's UTF-8, ids and lists stay in the core's caches (one 3.3 MB text on one
#: thread ran 1.01-1.07x faster in parts than whole)
MAX_PART_BYTES = 1 << 18
#: patterns whose pieces never hold a line feed followed by a letter (see the module docstring)
CUTTABLE_PATTERNS = frozenset({"gpt2", "cl100k", "o200k", "llama3", "qwen2", "tekken"})
#: how far from an even cut a boundary is looked for (characters, each way)
CUT_WINDOW = 1 << 16
#: a line feed between a character that is not whitespace and a letter: no piece of the six patterns
#: runs across it (the letter can take no line feed as its prefix); the character before must not be
#: whitespace for gpt2, whose ``\s++$`` would take a part's final whitespace run in one piece
#: (``"x \nA"``: ``' '``, ``'\n'`` in the whole text, ``' \n'`` at a part's end); checked for every
#: string of up to 6 characters over a dozen kinds of character. Spelled with the line feed first,
#: so that ``regex`` scans for it (``(?<=\S)\n(?=\p{L})``, the same matches, took 1.4x as long)
_BOUNDARY = regex.compile(r"\n(?<=\S\n)(?=\p{L})")

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


def part_targets(total: int, threads: int) -> list[int]:
    """Where the parts of ``total`` units of work (bytes or characters) end, for ``threads`` threads:
    cumulative, the last one ``total``. Each part is a ``1 / (2 x threads)`` share of what is left
    (on one thread: all of it), none under :data:`MIN_PART_BYTES` but the last and none over
    :data:`MAX_PART_BYTES`, so the parts handed out last are small and a thread whose CPU runs
    slower (or whose parts are heavier) does fewer of them (module docstring).

    >>> part_targets(100_000, 2)
    [25000, 43750, 60134, 76518, 92902, 100000]
    >>> part_targets(600_000, 1)
    [262144, 524288, 600000]
    """
    if total <= 0:
        return [0]
    targets = []
    done = 0
    while total - done > MIN_PART_BYTES:
        share = (total - done) // (2 * threads) if threads > 1 else total - done
        done += max(min(share, MAX_PART_BYTES), MIN_PART_BYTES)
        targets.append(done)
    if not targets or targets[-1] < total:
        targets.append(total)
    return targets


def equal_targets(total: int, parts: int) -> list[int]:
    """The ends of ``parts`` equal shares of ``total`` (rounded up), for :func:`split_batch` and
    :func:`cut_spans`.

    >>> equal_targets(10, 3)
    [4, 7, 10]
    """
    parts = max(parts, 1)
    return [-(-total * k // parts) for k in range(1, parts + 1)]


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


def run_folded(function: Callable[[T], R | None], items: Sequence[T], threads: int,
               fold: Callable[[R, R], R]) -> R | None:
    """The results of ``function`` over ``items`` (on threads, as :func:`run_all`) folded in order,
    ``fold(fold(r0, r1), r2) ...``, each one as soon as those before it are in, so the joining of a
    long text's parts overlaps the encoding of the later ones and only the last, small parts are
    joined after the threads are done. None when there are no items or some result is None (the
    items not yet started are then skipped)."""
    lock = threading.Lock()
    waiting: dict[int, R] = {}
    state = {"next": 0, "value": None, "failed": False}

    def work(i: int) -> None:
        if state["failed"]:
            return
        result = function(items[i])
        with lock:
            if result is None:
                state["failed"] = True
                return
            waiting[i] = result
            while not state["failed"] and state["next"] in waiting:
                ready = waiting.pop(state["next"])
                state["value"] = ready if state["next"] == 0 else fold(state["value"], ready)
                state["next"] += 1

    run_all(work, range(len(items)), threads)
    return None if state["failed"] or state["next"] < len(items) else state["value"]


def split_batch(sizes: Sequence[int], targets: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges cutting ``sizes`` into contiguous groups (none empty) at the
    cumulative ``targets`` (:func:`part_targets`, :func:`equal_targets`): a group ends right after
    the first text at which the running total reaches its target, unless that is the last text.
    The running totals are summed in C and each cut found by bisection (a loop over the sizes in
    Python cost a batch of one-word texts 150 ns a text).

    >>> split_batch([5, 5, 5, 5], equal_targets(20, 2))
    [(0, 2), (2, 4)]
    """
    n = len(sizes)
    if n == 0:
        return []
    running = list(itertools.accumulate(sizes))
    groups: list[tuple[int, int]] = []
    start = 0
    for target in targets[:-1]:
        i = bisect.bisect_left(running, target, start)  # the first text from ``start`` on that reaches it
        if i + 1 >= n:
            break
        groups.append((start, i + 1))
        start = i + 1
    groups.append((start, n))
    return groups


def cut_text(text: str, targets: Sequence[int], pattern_name: str | None) -> list[str]:
    """``text`` cut at pre-token boundaries near the character positions ``targets`` (cumulative,
    :func:`part_targets`; ``"".join`` gives it back); one piece when the pattern is not in
    :data:`CUTTABLE_PATTERNS`."""
    return [text[a:b] for a, b in cut_spans(text, targets, pattern_name)]


def cut_spans(text: str, targets: Sequence[int], pattern_name: str | None) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of :func:`cut_text`'s pieces (:class:`PartSpans`, the
    empty ones left out)."""
    spans = PartSpans(text, targets, pattern_name)
    return [span for span in map(spans.span, range(len(spans))) if span[0] < span[1]]


class PartSpans:
    """A long text's parts, one per target (cumulative character positions, :func:`part_targets`),
    each cut at the first pre-token boundary at or after its target (within :data:`CUT_WINDOW`),
    else at the last one before it; a target that the cut before has passed, or with no boundary
    near it, gives an empty part. The whole text is one part when the pattern is not in
    :data:`CUTTABLE_PATTERNS`.

    The cuts are found in order as the threads take the parts (:meth:`span`, under a lock): the
    search for a part's end (tens of microseconds on code, whose lines seldom start with a letter)
    overlaps the encoding of the parts before it instead of coming before all of them."""

    def __init__(self, text: str, targets: Sequence[int], pattern_name: str | None) -> None:
        self._text = text
        self._targets = list(targets) if len(targets) > 1 and pattern_name in CUTTABLE_PATTERNS else [len(text)]
        self._ends: list[int] = []
        self._lock = threading.Lock()
        #: a target from which a search reached the end of the text and found no boundary: it and every
        #: later target give an empty part at once (each such target once cost a search to the end and
        #: one back over CUT_WINDOW characters, about 1 ms on the tail of a C file)
        self._none_from = len(text) + 1

    def __len__(self) -> int:
        return len(self._targets)

    def span(self, k: int) -> tuple[int, int]:
        """Part ``k``'s ``(start, end)``; empty when ``start == end``."""
        with self._lock:
            while len(self._ends) <= k:
                self._ends.append(self._next_end())
        return (self._ends[k - 1] if k else 0), self._ends[k]

    def _next_end(self) -> int:
        text, k = self._text, len(self._ends)
        previous = self._ends[-1] if self._ends else 0
        if k == len(self._targets) - 1:
            return len(text)
        target = self._targets[k]
        if target < previous or target >= self._none_from:
            return previous  # the cut before went past this target already, or no boundary follows it
        stop = min(len(text), target + CUT_WINDOW)
        match = _BOUNDARY.search(text, target, stop)
        if match is None and stop == len(text):
            # the last boundary before a later target is the one found below: a cut at or before this one's
            self._none_from = target
        found = match.start() if match is not None else last_boundary(text, max(0, target - CUT_WINDOW), target)
        cut = previous if found is None else found + 1  # after the line feed: the letter starts a piece
        return cut if previous < cut < len(text) else previous


def last_boundary(text: str, start: int, end: int) -> int | None:
    """Where the last match of :data:`_BOUNDARY` in ``text[start:end]`` starts (as ``regex`` matches
    with ``pos=start, endpos=end``), or None: the line feeds from the end back, a line feed before an
    ASCII character that is not a letter passed over without the regex. Every match taken in order
    (``finditer``) cost 0.5 ms over ``CUT_WINDOW`` characters of C code, ``regex``'s backward search
    (``(?r)``) 0.9 ms."""
    position = text.rfind("\n", start, end)
    while position >= 0:
        after = text[position + 1:position + 2]
        if after and (after >= "\x80" or after.isalpha()) and _BOUNDARY.match(text, position, end):
            return position
        position = text.rfind("\n", start, position)
    return None
