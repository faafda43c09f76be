"""The measurement protocol every speed figure of bpebench follows (the quick script, asv, the report).

Users encode long streams of new text: common pieces repeat, the text does not. So the
headline figure is **unseen**: each encoder is first warmed up on other text of the same
kind (its caches and the CPU's fill as they would in a long run), then every document of
the measured text is encoded exactly once, and the times are summed. Implementations
measured together take turns document by document, so each meets the CPU state the others
leave, as in a process that does other work between calls; the orders follow a balanced design
(:func:`balanced_orders`), so that each comes after every other equally often. (A plain rotation
keeps the cyclic order: with three or more, each always follows the same one, and one that
thrashes the caches always slows the same next one.)

Two other figures are kept apart and labelled:

* **cold**: first contact, in a fresh process (imports, loading, the first encode);
* **repeat**: the best of N encodes of one text, which rewards caches and warm CPU state
  (what most published tokenizer benchmarks report).

One-thread figures pin the process to one CPU (:func:`pin_to_one_cpu`) and ask every
library for one thread; all-core figures are measured apart.

The clock is wall time (``time.perf_counter``). On a machine shared with other busy
processes, ``BPEBENCH_BENCH_CLOCK=cpu`` (the quick script's ``--clock cpu``) counts the CPU
time of the whole process instead (``time.process_time``: every thread of it, so a library
that hands work to its own thread pool is still charged), which leaves out the time the
process waited for a CPU; cache misses caused by the neighbours still count.

The three kinds of text (:data:`KINDS`) come from :mod:`bpebench.corpora.documents`:
stdlib docstrings (prose), C code, faker text in 12 languages (multilingual).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

#: kind -> corpus of the unseen protocol
KINDS = {"prose": "prose-docstrings", "code": "code-c", "multilingual": "faker-multilingual"}
#: bytes of warm-up text, then of measured text, per kind (the rest of the corpus is unused)
WARM_BYTES = 200_000
MEASURED_BYTES = 1_100_000
#: documents are cut at blank lines to at least this size
DOCUMENT_BYTES = 8_000
#: the clock every timing here reads (see the module docstring)
clock = time.process_time if os.environ.get("BPEBENCH_BENCH_CLOCK", "wall") == "cpu" else time.perf_counter
#: environment that asks the libraries we know of for one thread
ONE_THREAD_ENV = {"RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "BPEBENCH_NUM_THREADS": "1",
                  "TOKIO_WORKER_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class Stream:
    """One kind of text cut for the unseen protocol."""

    kind: str
    corpus: str
    warm: list[str]  # warm-up documents
    measured: list[str]  # each encoded once, timed

    @property
    def measured_bytes(self) -> int:
        return sum(len(d.encode("utf-8", "surrogatepass")) for d in self.measured)


def stream(kind: str, *, warm_bytes: int = WARM_BYTES, measured_bytes: int = MEASURED_BYTES,
           document_bytes: int = DOCUMENT_BYTES) -> Stream:
    """The warm-up and measured documents of ``kind`` (a key of :data:`KINDS` or a corpus name):
    the corpus's first ``warm_bytes`` of documents, then the next ``measured_bytes``."""
    from bpebench import corpora
    from bpebench.corpora.documents import documents

    name = KINDS.get(kind, kind)
    docs = documents(corpora.get(name), document_bytes)
    warm: list[str] = []
    measured: list[str] = []
    total = 0
    for doc in docs:
        size = len(doc.encode("utf-8", "surrogatepass"))
        if total < warm_bytes:
            warm.append(doc)
        elif total < warm_bytes + measured_bytes:
            measured.append(doc)
        else:
            break
        total += size
    return Stream(kind, name, warm, measured)


def last_of_each_kind(measured_bytes: int) -> dict[str, Stream]:
    """For training on the corpora: each kind's last ``measured_bytes`` of documents measured, every
    document before them its warm-up (the caller may train on those and warm on a few)."""
    streams = {}
    for kind in KINDS:
        whole = stream(kind, warm_bytes=0, measured_bytes=1 << 40)
        total = sum(len(doc.encode("utf-8", "surrogatepass")) for doc in whole.measured)
        streams[kind] = stream(kind, warm_bytes=total - measured_bytes, measured_bytes=measured_bytes)
    return streams


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of ``n`` items (a Williams design) in which each item stands in each position equally
    often and follows every other item equally often: ``n`` orders for an even ``n``, ``2 n`` (the
    orders and their reverses) for an odd one.

    >>> balanced_orders(4)
    [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    >>> balanced_orders(2)
    [[0, 1], [1, 0]]
    """
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        if len(first) % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    orders = [[(x + i) % n for x in first] for i in range(n)]
    return orders + [order[::-1] for order in orders] if n % 2 else orders


def time_unseen(functions: dict[str, Callable[[str], object]], text_stream: Stream,
                check: Callable[[str, object, object], None] | None = None) -> dict[str, float]:
    """Seconds each function takes over ``text_stream.measured``, every document once, after one
    pass over the warm-up documents. The functions take turns per document, in the orders of
    :func:`balanced_orders`, one after the other. ``check(name, result, first_result)``, if given, runs
    outside the timed region on every result (with the first function's result of the same
    document) and may raise."""
    names = list(functions)
    for doc in text_stream.warm:
        for name in names:
            functions[name](doc)
    totals = dict.fromkeys(names, 0.0)
    orders = balanced_orders(len(names))
    for i, doc in enumerate(text_stream.measured):
        results = {}
        for k in orders[i % len(orders)]:
            name = names[k]
            fn = functions[name]
            start = clock()
            result = fn(doc)
            totals[name] += clock() - start
            results[name] = result
        if check is not None:
            for name in names:
                check(name, results[name], results[names[0]])
    return totals


def time_repeat(fn: Callable[[], object], rounds: int) -> float:
    """Best of ``rounds`` calls (after one untimed call): the *repeat* figure."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def pin_to_one_cpu(cpu: int | None = None) -> int | None:
    """Pin this process (and the threads it starts later) to one CPU, the last one by default;
    returns it (None where affinity cannot be set). Libraries that start a thread pool then
    share that CPU, so their one-thread figure cannot borrow another core."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    chosen = allowed[-1] if cpu is None or cpu not in allowed else cpu
    os.sched_setaffinity(0, {chosen})
    return chosen


def cpu_speeds(fn: Callable[[], object], rounds: int = 3) -> dict[int, float]:
    """Calls of ``fn`` per second with the calling thread pinned to each CPU this process may use in
    turn (best of ``rounds`` after one untimed call; wall clock, since the question is how fast each
    CPU runs now). Empty where affinity cannot be set. A virtual machine's CPUs need not run at one
    speed: a neighbour on the host can slow one of them for minutes, and then no number of threads
    reaches ``len(speeds)`` times the fastest CPU's speed (see :func:`thread_ceiling`)."""
    if not hasattr(os, "sched_setaffinity"):
        return {}
    allowed = os.sched_getaffinity(0)
    speeds = {}
    try:
        for cpu in sorted(allowed):
            os.sched_setaffinity(0, {cpu})
            fn()
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - start)
            speeds[cpu] = 1.0 / best if best > 0 else float("inf")
    finally:
        os.sched_setaffinity(0, allowed)
    return speeds


def thread_ceiling(speeds: dict[int, float], threads: int) -> float | None:
    """The most ``threads`` threads can give over one thread on the fastest CPU when work is shared
    perfectly: the sum of the fastest ``threads`` CPUs' speeds over the fastest one's (None without
    speeds)."""
    if not speeds:
        return None
    fastest = sorted(speeds.values(), reverse=True)[:threads]
    return sum(fastest) / fastest[0]


def mb_per_s(n_bytes: int, seconds: float) -> float:
    return n_bytes / 1e6 / seconds if seconds > 0 else float("inf")


def same_ids(a: object, b: object) -> bool:
    """Whether two results (lists, arrays, anything iterable of ints) hold the same ids."""
    return _as_list(a) == _as_list(b)


def _as_list(ids: object) -> list[int]:
    tolist = getattr(ids, "tolist", None)
    return list(tolist()) if tolist is not None else list(ids)  # type: ignore[arg-type]

