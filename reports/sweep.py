"""The report runner: build the subjects, run every stage's tasks, store each result at once.

A stage turns the plan into a list of :class:`Task` (one measurement each, cheap
closures); the runner skips tasks whose key is already stored (``--resume``),
runs the rest in order under a progress bar, and appends each result row to the
store before starting the next. Ctrl-C therefore loses at most the measurement in
flight. A task that raises records the error in its row and the run goes on (a
broken encoder is a finding, not a crash).

Cost: the sum of the measurements; building the subjects is done once per
vocabulary and timed (it appears in the load table).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from typing import Iterable

from . import stages_checks, stages_incremental, stages_timing, stages_trie  # noqa: F401  (they register their stages)
from .environment import describe_environment, describe_vocabulary
from .progress import Progress
from .tasks import STAGES, RunContext, Task


#: run order: ``load`` first, so that its first-call timings see encoders nothing has used yet
STAGE_ORDER = ("load", "scaling", "throughput", "worst_case", "agreement", "conformance", "incremental", "interval")


def stage_names() -> list[str]:
    return sorted(STAGES, key=lambda n: (STAGE_ORDER.index(n) if n in STAGE_ORDER else len(STAGE_ORDER), n))


def _error_row(exc: BaseException) -> dict:
    text = f"error: {type(exc).__name__}: {exc}".replace("\n", " ")
    return {"note": text[:500]}


def _record_point(ctx: RunContext, row: dict) -> None:
    """A measured timing extends its series, from which later sizes' costs are predicted."""
    if not row.get("median_s") or not row.get("size_bytes"):
        return
    key = (row["stage"], row["vocab"], row["subject"], row["corpus"], row["operation"])
    ctx.series_points.setdefault(key, []).append((int(float(row["size_bytes"])), float(row["median_s"])))


_GAVE_UP = ("crashed", "hung", "too much memory")


def _prime_from_store(ctx: RunContext) -> None:
    """On resume, the cost extrapolation continues from the stored rows, and a subject that crashed,
    hung or took too much memory before is not run again."""
    for table in ("timings.csv", "agreement.csv"):
        for row in ctx.store.rows(table):
            if table == "timings.csv":
                _record_point(ctx, row)
            status = next((s for s in _GAVE_UP if row.get("note", "").startswith(f"{s}:")), None)
            if status and row.get("subject"):
                ctx.failed[row["subject"]] = status


def run_tasks(ctx: RunContext, stage_name: str, tasks: Iterable[Task]) -> int:
    """Run the tasks not stored yet; returns how many ran. Tasks of an outside encoder run in a
    forked child (:mod:`.isolation`); once one of its calls crashes, hangs or takes too much
    memory, its remaining tasks are recorded as skipped rather than run."""
    tasks = list(tasks)
    todo = [t for t in tasks if not ctx.store.done(t.table, t.key)]
    ran = 0
    with Progress(stage_name, len(tasks), quiet=ctx.quiet) as bar:
        bar.step("resumed" if len(todo) < len(tasks) else "", advance=len(tasks) - len(todo))
        for task in todo:
            if _INTERRUPTED.is_set():  # a Ctrl-C that something swallowed stops the run here
                raise KeyboardInterrupt
            bar.step(task.label, advance=0)
            subject = task.key.get("subject")
            if subject in ctx.failed:
                columns = {"note": f"skipped: {subject} {ctx.failed[subject]} earlier in this run"}
            elif subject in ctx.isolated:
                columns = _run_isolated_task(ctx, stage_name, task)
            else:
                try:
                    columns = task.run()
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as exc:  # recorded in the row: the report shows it
                    columns = _error_row(exc)
                    _log_error(ctx, stage_name, task, traceback.format_exc())
            row = {**task.key, **columns}
            ctx.store.append(task.table, row)
            if task.table == "timings.csv":
                _record_point(ctx, row)
            ran += 1
            bar.step(task.label)
    return ran


def _run_isolated_task(ctx: RunContext, stage_name: str, task: Task) -> dict:
    from .isolation import run_isolated

    status, value = run_isolated(task.run, timeout=ctx.isolation_timeout, memory=ctx.isolation_memory)
    if status == "ok":
        return value
    if status == "error":
        _log_error(ctx, stage_name, task, value)
        return {"note": f"error: {value}"[:500]}
    subject = task.key.get("subject")
    ctx.failed[subject] = status
    ctx.note("summary", f"{subject} {status} on {task.label} ({value}); its remaining measurements were skipped")
    return {"note": f"{status}: {value}"[:500]}


def _log_error(ctx: RunContext, stage_name: str, task: Task, text: str) -> None:
    if ctx.store.directory.exists():
        with (ctx.store.directory / "errors.log").open("a", encoding="utf-8") as log:
            log.write(f"--- {stage_name} {task.key}\n{text}\n")


#: set by :func:`interrupts_recorded`'s handler: Ctrl-C was pressed during the run
_INTERRUPTED = threading.Event()


@contextmanager
def interrupts_recorded():
    """Ctrl-C raises KeyboardInterrupt as usual and is also remembered, so that one swallowed where
    it landed (a destructor's "Exception ignored", numba's and llvmlite's among them) still stops the
    run at the next task; yields a function that says whether one came. Only in the main thread
    (elsewhere nothing is installed)."""
    _INTERRUPTED.clear()

    def record(signum, frame):
        _INTERRUPTED.set()
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, record)
    except ValueError:  # not the main thread: signals are the main thread's
        previous = None
    try:
        yield _INTERRUPTED.is_set
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def run_sweep(ctx: RunContext, *, stages: list[str] | None = None, resume: bool = False) -> dict:
    """Run the stages (all by default) into ``ctx.store``; returns the meta written to ``meta.json``."""
    ctx.store.create(resume=resume)
    meta = ctx.store.read_meta() if resume else {}
    meta.update({
        "environment": describe_environment(),
        "plan": ctx.plan.__dict__,
        "vocabularies": ctx.vocab_names,
        "algorithms_filter": ctx.algorithms,
        "source": "bpebench report (in-process sweep)",
        "completed_stages": meta.get("completed_stages", []) if resume else [],
    })
    meta.setdefault("started", time.strftime("%Y-%m-%d %H:%M:%S"))
    ctx.store.write_meta(meta)
    if resume:
        _prime_from_store(ctx)
    elapsed_before = float(meta.get("elapsed_s", 0.0)) if resume else 0.0
    started = time.perf_counter()
    for name in stages or stage_names():
        title, make_tasks = STAGES[name]
        if not ctx.quiet:  # building a stage's subjects (encoders, peers, compiled code) can take a while
            print(f"{name:<12} preparing: {title.lower()}", file=sys.stderr, flush=True)
        run_tasks(ctx, name, make_tasks(ctx))
        if name not in meta["completed_stages"]:
            meta["completed_stages"].append(name)
        meta["notes"] = ctx.notes
        meta["vocabulary_details"] = _vocab_details(ctx)
        meta["subjects"] = _subject_details(ctx)
        meta["elapsed_s"] = elapsed_before + time.perf_counter() - started
        ctx.store.write_meta(meta)
    return meta


def _vocab_details(ctx: RunContext) -> dict:
    return {name: describe_vocabulary(vocab) for name, vocab in ctx._vocabs.items()}


def _subject_details(ctx: RunContext) -> dict:
    out: dict[str, dict] = {}
    for vocab_name, subjects in ctx._subjects.items():
        for s in subjects:
            entry = out.setdefault(s.name, {"kind": s.kind, "declared_exact": s.declared_exact,
                                            "summary": s.summary, "capabilities": sorted(s.capabilities),
                                            "vocabularies": [], "raw": s.raw is not None,
                                            "pipeline": s.pipeline is not None, "fused": s.fused})
            if vocab_name not in entry["vocabularies"]:
                entry["vocabularies"].append(vocab_name)
    return out
