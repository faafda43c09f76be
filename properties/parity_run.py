"""Running a parity comparison: in this process, or partitions spread over a Dask cluster.

:func:`execute` takes the partitions still to do and stores each finished one at once
(:class:`~bpebench.properties.parity_store.ParityStore`), in the order they finish:

* in-process: one partition after another (small inputs: starting workers would cost more
  than the work);
* Dask: a ``distributed.LocalCluster`` of worker *processes* with one thread each (the
  tokenizers hold the GIL in parts of their Python glue, and each process loads its own
  vocabulary), or the scheduler at ``--scheduler ADDRESS`` with whatever workers it has.
  At most a few partitions per worker are in flight, so memory stays bounded whatever the
  corpus size. Every worker builds both tokenizers once and keeps them.

No orphans: LocalCluster's worker processes are children of this process that exit as soon
as it is gone (``distributed`` watches a pipe from the parent, so even ``kill -9`` of the
parent ends them); Ctrl-C and SIGTERM close the cluster on the way out. On an external
cluster the scheduler drops this run's tasks when the client disconnects.

Dask is imported here only, when a run needs it: importing the CLI never imports it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import logging
import os
import signal
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from bpebench.errors import BpebenchError

from . import parity
from .parity import (_SIDES, SPECIAL_MODES, ParitySpec, Sides, Summary, compare_partition, library_label,
                     resolve_library, summarize)
from .parity_inputs import (DEFAULT_DOC_BYTES, DEFAULT_PARTITION_BYTES, HARD_STRINGS_NAME, IN_PROCESS_BYTES,
                            Document, Partition, check_source, documents, golden_documents, partitions)
from .parity_store import ParityStore

#: partitions in flight per worker
IN_FLIGHT_PER_WORKER = 3
#: seconds to wait for an external scheduler to have a worker
WAIT_FOR_WORKERS = 60
#: environment of local worker processes: one thread each, whatever the libraries would pick
WORKER_ENV = {"BPEBENCH_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# ----------------------------------------------------------------------------- resume and planning
def pending(parts: Iterable[Partition], done: dict[int, dict]) -> Iterator[Partition]:
    """The partitions not stored yet; a stored one whose input changed is an error."""
    seen = set()
    for part in parts:
        seen.add(part.index)
        row = done.get(part.index)
        if row is None:
            yield part
        elif row["digest"] != part.digest:
            raise BpebenchError(f"the input changed since the interrupted run (partition {part.index}, from"
                                f" document {part.first}, differs); rerun without --resume")
    gone = sorted(set(done) - seen)
    if gone:
        raise BpebenchError(f"the input changed since the interrupted run (it had partition {gone[0]}, now"
                            f" there are {len(seen)}); rerun without --resume")


def lookahead(parts: Iterator[Partition], limit: int) -> tuple[list[Partition], bool]:
    """Read partitions until more than ``limit`` bytes are buffered: (buffer, input exhausted)."""
    buffered: list[Partition] = []
    size = 0
    for part in parts:
        buffered.append(part)
        size += part.size
        if size > limit:
            return buffered, False
    return buffered, True


# ----------------------------------------------------------------------------- progress
class Progress:
    """Progress on stderr: a live line on a terminal, else a line every :attr:`EVERY` seconds;
    nothing when quiet."""

    EVERY = 30.0

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.live = not quiet and sys.stderr.isatty()
        self.start = self.shown = time.perf_counter()
        self.partitions = self.bytes = self.differing = 0

    def update(self, row: dict) -> None:
        self.partitions += 1
        self.bytes += row["bytes"]
        self.differing += row["docs"] - row["matched"]
        now = time.perf_counter()
        if self.quiet or not (self.live or now - self.shown >= self.EVERY):
            return
        self.shown = now
        rate = self.bytes / max(now - self.start, 1e-9) / 1e6
        line = (f"  {self.partitions} partitions, {self.bytes / 1e6:.1f} MB, {self.differing} differing,"
                f" {rate:.1f} MB/s")
        print(f"\r{line} " if self.live else line, end="" if self.live else "\n", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.live and self.partitions:
            print(file=sys.stderr)


@contextmanager
def _terminate_as_interrupt():
    """SIGTERM unwinds like Ctrl-C, so that the cluster is closed on the way out."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# ----------------------------------------------------------------------------- execution
def run_in_process(spec: ParitySpec, parts: Iterable[Partition], store: ParityStore,
                   on_row: Callable[[dict], None]) -> int:
    n = 0
    for part in parts:
        row = compare_partition(spec, part.index, part.documents, part.digest)
        store.append(row)
        on_row(row)
        n += 1
    return n


def _worker_failure(part: Partition, exc: BaseException) -> BpebenchError:
    if isinstance(exc, BpebenchError):
        return exc
    if type(exc).__name__ == "KilledWorker":
        return BpebenchError(f"partition {part.index} (from document {part.first}) killed its worker repeatedly"
                             " (a crash or out of memory in a tokenizer); finished partitions are kept, rerun"
                             " with --resume to retry")
    return BpebenchError(f"partition {part.index} failed on a worker: {parity.describe_failure(exc)}")


@contextmanager
def dask_client(*, workers: int, scheduler: str | None):
    """A ``distributed.Client`` on ``scheduler``, or on a new LocalCluster of ``workers`` processes."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise BpebenchError("running on Dask needs dask[distributed] (pip install \"dask[distributed]\","
                            " or bpebench[all]); --workers 0 runs in this process") from None
    import dask

    settings = {
        # the workers' statistical profiler samples every thread's stack every 10 ms: CPU spent
        # on a dashboard nobody looks at here
        "distributed.worker.profile.enabled": False,
        # distributed starts workers with MALLOC_TRIM_THRESHOLD_=65536 (memory handed back to the
        # system eagerly); the tokenizers allocate and free buffers all the time, and comparing
        # took 15-25% more CPU in a worker with it than without (benchmarks/parity_scaling.py)
        "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
        "logging.distributed": "error",
    }
    with dask.config.set(settings):
        if scheduler:
            try:
                client = Client(scheduler, timeout="20s")
            except (OSError, TimeoutError, ValueError) as exc:
                raise BpebenchError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
            try:
                try:
                    client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
                except (TimeoutError, OSError):
                    raise BpebenchError(f"the Dask scheduler at {scheduler} has had no worker for"
                                        f" {WAIT_FOR_WORKERS} s; start one (dask worker {scheduler})") from None
                yield client
            finally:
                client.close()
            return
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               scheduler_port=0, silence_logs=logging.ERROR, env=WORKER_ENV)
        try:
            client = Client(cluster)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()


def run_on_dask(spec: ParitySpec, parts: Iterable[Partition], store: ParityStore, on_row: Callable[[dict], None],
                *, workers: int, scheduler: str | None) -> tuple[int, float]:
    from dask.distributed import as_completed

    token = uuid.uuid4().hex[:12]
    n = 0
    start = time.perf_counter()
    with dask_client(workers=workers, scheduler=scheduler) as client:
        startup = time.perf_counter() - start
        slots = max(1, sum(client.nthreads().values()) if scheduler else workers)
        todo = iter(parts)
        by_key: dict[str, Partition] = {}

        def submit(part: Partition):
            key = f"parity-{token}-{part.index}"
            by_key[key] = part
            return client.submit(compare_partition, spec, part.index, part.documents, part.digest,
                                 key=key, pure=False, retries=0)

        running = as_completed([submit(p) for p in itertools.islice(todo, slots * IN_FLIGHT_PER_WORKER)])
        for future in running:
            part = by_key.pop(future.key)
            try:
                row = future.result()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise _worker_failure(part, exc) from None
            finally:
                future.release()
            store.append(row)
            on_row(row)
            n += 1
            following = next(todo, None)
            if following is not None:
                running.add(submit(following))
    return n, startup


def execute(spec: ParitySpec, parts: Iterable[Partition], store: ParityStore, *, mode: str, workers: int,
            scheduler: str | None = None, on_row: Callable[[dict], None] = lambda row: None) -> tuple[int, float]:
    """Compare and store every partition of ``parts``: (partitions computed, seconds to start the cluster).

    ``mode``: ``"process"`` (here) or ``"dask"`` (``scheduler``, or a LocalCluster of ``workers``).
    """
    with _terminate_as_interrupt():
        if mode == "process":
            return run_in_process(spec, parts, store, on_row), 0.0
        return run_on_dask(spec, parts, store, on_row, workers=workers, scheduler=scheduler)


# ----------------------------------------------------------------------------- a whole run
@dataclass
class ParityReport:
    """What a run compared, where its rows are, and the summary rebuilt from them."""

    spec: ParitySpec
    vocabulary_name: str
    library_label: str
    inputs: str
    directory: Path
    summary: Summary
    computed: int  # partitions computed by this run
    stored_before: int  # partitions a resumed run found done
    mode: str  # "process" or a description of the Dask cluster
    seconds: float  # comparing, storing, and starting the cluster
    startup_seconds: float  # of which starting the cluster (connecting to a scheduler)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.summary.docs > 0 and self.summary.matched == self.summary.docs


def default_directory(vocabulary_name: str, library: str, meta: dict) -> Path:
    """``parity/<vocabulary>-<library>-<hash of what is compared>`` under bpebench's cache root: a rerun with
    ``--resume`` finds the interrupted run's rows without being told where they are."""
    from bpebench.algorithms.cache.files import cache_root

    digest = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in Path(vocabulary_name).name)[:60]
    return cache_root() / "parity" / f"{safe}-{library}-{digest}"


def run_parity(vocabulary: str, *, against: str = "auto", sources: Sequence[str] = (), texts: Sequence[str] = (),
               algorithm: str | None = None, special: str = "text", out: str | os.PathLike | None = None,
               resume: bool = False, workers: int | None = None, scheduler: str | None = None,
               size: int | None = None, errors: str = "strict", doc_bytes: int = DEFAULT_DOC_BYTES,
               partition_bytes: int = DEFAULT_PARTITION_BYTES, keep: int = 5, show: int = 3,
               quiet: bool = True, pattern: str | None = None, kind: str | None = None, tokenizer=None,
               log: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> ParityReport:
    """Compare ``vocabulary`` (a built-in name or a path) with its library on the inputs.

    ``pattern`` (a pattern name or regex) pre-tokenizes a vocabulary file that carries none
    (a bare rank file), on both sides; ``kind`` forces the file's format (``--format``).
    ``sources`` are corpus names, files or directories (default: the hard-string set),
    ``texts`` single documents. ``workers``: None decides by input size (in this process
    below :data:`IN_PROCESS_BYTES`), 0 forces this process, N a LocalCluster of N processes;
    ``scheduler`` an existing Dask scheduler. ``tokenizer`` replaces bpebench's side (in this
    process only). See ``bpebench parity --help``.
    """
    from bpebench.algorithms.formats import BUILTIN

    if special not in SPECIAL_MODES:
        raise BpebenchError(f"special must be one of {', '.join(SPECIAL_MODES)}, not {special!r}")
    if errors not in ("strict", "replace"):
        raise BpebenchError(f"errors must be strict or replace, not {errors!r}")
    for name, value, low in (("--workers", workers, 0), ("--size", size, 1), ("--doc-bytes", doc_bytes, 1),
                             ("--partition-bytes", partition_bytes, 1), ("--show", show, 0)):
        if value is not None and value < low:
            raise BpebenchError(f"{name} must be at least {low}, not {value}")
    if scheduler and workers:
        raise BpebenchError("--workers sizes the local cluster; a --scheduler brings its own workers")
    if tokenizer is not None:
        if scheduler or workers:
            raise BpebenchError("a tokenizer object can only be compared in this process (workers=0)")
        workers = 0

    # a file as an absolute path, so that workers elsewhere find it; a name as given
    where = str(Path(vocabulary).resolve()) if vocabulary not in BUILTIN and Path(vocabulary).exists() else vocabulary
    if tokenizer is not None:
        vocab = tokenizer.vocabulary
    else:
        vocab = parity.load(ParitySpec(where, "", pattern=pattern, kind=kind))
    library, golden = resolve_library(vocab, against)
    if not vocab.pattern and parity.source_format(vocab) == "tiktoken":
        from bpebench.algorithms.formats.patterns import PATTERNS

        raise BpebenchError(f"{vocab.name}: a rank file carries no pre-tokenizer pattern; pass --pattern NAME_OR_REGEX"
                            f" ({', '.join(PATTERNS)} or a regex)")
    if golden and (sources or texts):
        raise BpebenchError("llama.cpp golden files bring their own texts: --corpus and --text cannot be added")
    spec = ParitySpec(where, library, algorithm, special, keep, pattern=pattern, kind=kind)
    tok = tokenizer if tokenizer is not None else parity.build_tokenizer(spec)
    spec = replace(spec, algorithm=tok.encoder.name, instance=f"object {id(tok)}" if tokenizer is not None else "")
    _SIDES[spec] = Sides(spec, tok)  # both sides built here first: either failing is one line, before any worker
    try:
        return _run(spec, vocab, library, golden, sources, texts, out=out, resume=resume, workers=workers,
                    scheduler=scheduler, size=size, errors=errors, doc_bytes=doc_bytes,
                    partition_bytes=partition_bytes, show=show, quiet=quiet, log=log)
    finally:
        if tokenizer is not None:
            del _SIDES[spec]


def _run(spec: ParitySpec, vocab, library: str, golden: str | None, sources: Sequence[str], texts: Sequence[str],
         *, out, resume: bool, workers: int | None, scheduler: str | None, size: int | None, errors: str,
         doc_bytes: int, partition_bytes: int, show: int, quiet: bool, log: Callable[[str], None]) -> ParityReport:
    if golden:
        docs: Iterable[Document] = golden_documents(golden)
        inputs = f"llama.cpp golden files {golden}.inp/.out"
        identity_inputs: dict = {"golden": golden}
    else:
        sources = [check_source(s) for s in sources] or ([] if texts else [HARD_STRINGS_NAME])
        docs = documents(sources, texts=texts, doc_bytes=doc_bytes, errors=errors, size=size)
        inputs = ", ".join([*(["--text"] * bool(texts)), *sources])
        identity_inputs = {"sources": sources, "texts": hashlib.sha256(json.dumps(list(texts)).encode()).hexdigest(),
                           "size": size, "errors": errors, "doc_bytes": doc_bytes}
    meta = {"vocabulary": spec.vocabulary, "file_format": spec.kind, "fingerprint": vocab.fingerprint,
            "pattern": spec.pattern, "library": library, "library_version": library_label(library), "algorithm": spec.algorithm,
            "special": spec.special, "partition_bytes": partition_bytes, "keep": spec.keep, **identity_inputs}
    directory = Path(out) if out is not None else default_directory(vocab.name, library, meta)

    store = ParityStore(directory)
    done = store.start(meta, resume=resume)
    for note in store.repaired:
        log(f"bpebench: parity: {note}")
    todo: Iterator[Partition] = pending(partitions(docs, max_bytes=partition_bytes), done)
    first = next(todo, None)
    todo = itertools.chain([first] if first is not None else [], todo)
    if first is None:  # all stored before: no cluster for nothing
        mode, n_workers = "process", 0
    elif scheduler:
        mode, n_workers = "dask", 0
    elif workers is not None:
        mode, n_workers = ("process" if workers == 0 else "dask"), workers
    else:
        buffered, exhausted = lookahead(todo, IN_PROCESS_BYTES)
        todo = itertools.chain(buffered, todo)
        mode, n_workers = ("process", 0) if exhausted else ("dask", cpu_count())
        if mode == "dask" and importlib.util.find_spec("distributed") is None:
            log("bpebench: parity: a large input, but dask[distributed] is not installed: running in this process")
            mode, n_workers = "process", 0
    described = ("this process" if mode == "process" else f"Dask scheduler {scheduler}" if scheduler
                 else f"a local Dask cluster of {n_workers} worker process{'es' if n_workers > 1 else ''}")
    if not quiet:
        log(f"bpebench: parity: {vocab.name} against {library_label(library)} in {described};"
            f" results in {directory}" + (f" ({len(done)} partitions stored before)" if done else ""))
    progress = Progress(quiet)
    start = time.perf_counter()
    try:
        computed, startup = execute(spec, todo, store, mode=mode, workers=n_workers, scheduler=scheduler,
                                    on_row=progress.update)
    finally:
        progress.done()
    seconds = time.perf_counter() - start
    summary = summarize(store.rows(), show)
    if summary.docs == 0:
        raise BpebenchError(f"no documents to compare in {inputs}")
    return ParityReport(spec, vocab.name, library_label(library), inputs, directory, summary, computed,
                        len(done), described, seconds, startup, store.repaired)
