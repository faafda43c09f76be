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

import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterable

from algorithms.loaders import load_vocabulary
from algorithms.vocabulary import Vocabulary

from .environment import describe_environment
from .inputs import Source, corpus_sources
from .plan import SweepPlan
from .progress import Progress
from .store import ResultStore
from .subjects import Subject, encoder_subject, peer_subjects, select_encoders


@dataclass
class Task:
    """One measurement: ``run()`` returns the row's remaining columns."""

    table: str
    key: dict
    label: str
    run: Callable[[], dict]


@dataclass
class RunContext:
    """Everything stages share during one run (built lazily, memoised)."""

    plan: SweepPlan
    store: ResultStore
    vocab_names: list[str]
    algorithms: list[str] | None = None
    peers: list[str] | None = None
    corpora: list[str] | None = None
    quiet: bool = False
    notes: dict[str, list[str]] = field(default_factory=dict)
    _vocabs: dict[str, Vocabulary] = field(default_factory=dict)
    _subjects: dict[str, list[Subject]] = field(default_factory=dict)
    _texts: dict[tuple[str, str, int], str] = field(default_factory=dict)
    _sources: dict[tuple, list[Source]] = field(default_factory=dict)
    #: (stage, vocab, subject, corpus, operation) -> measured (size, median seconds) points of a series
    series_points: dict[tuple, list[tuple[int, float]]] = field(default_factory=dict)

    def note(self, section: str, message: str) -> None:
        messages = self.notes.setdefault(section, [])
        if message and message not in messages:
            messages.append(message)

    def vocab(self, name: str) -> Vocabulary:
        if name not in self._vocabs:
            self._vocabs[name] = load_vocabulary(name)
        return self._vocabs[name]

    def subjects(self, vocab_name: str) -> list[Subject]:
        """Encoders (registry order) then peers, built once per vocabulary."""
        if vocab_name not in self._subjects:
            vocab = self.vocab(vocab_name)
            subjects = []
            for name in select_encoders(self.algorithms):
                try:
                    subjects.append(encoder_subject(name, vocab))
                except Exception as exc:  # an encoder that cannot be built is reported, not fatal
                    self.note("summary", f"{name} could not be built for {vocab_name}: {type(exc).__name__}: {exc}")
            peers, peer_notes = peer_subjects(vocab, self.peers)
            for message in peer_notes:
                self.note("peers", message)
            subjects.extend(peers)
            self._subjects[vocab_name] = subjects
        return self._subjects[vocab_name]

    def sources(self, vocab_name: str, categories: tuple[str, ...], keep=None) -> list[Source]:
        key = (vocab_name, categories, keep)
        if key in self._sources:
            return self._sources[key]
        sources, note = corpus_sources(self.vocab(vocab_name), categories=categories, keep=keep,
                                       per_category=self.plan.corpora_per_category, wanted=self.corpora,
                                       min_bytes=self.plan.throughput_bytes)
        self._sources[key] = sources
        for source in sources:
            have = source.distinct_bytes(self.plan.throughput_bytes)
            if have < 0.9 * self.plan.throughput_bytes:
                self.note("inputs", f"{source.name} holds {have:,} bytes of text: repeated to the sizes asked "
                                    "for (repetition favours tokenizers that cache words)")
        self.note("inputs", note)
        return sources

    def text(self, vocab_name: str, source: Source, size: int) -> str:
        key = (vocab_name, source.name, size)
        if key not in self._texts:
            self._texts[key] = source.text(size)
        return self._texts[key]

    def data(self, vocab_name: str, source: Source, size: int) -> bytes:
        """Exactly ``size`` bytes (or fewer if the source is short) of the source, UTF-8 encoded."""
        return self.text(vocab_name, source, size).encode("utf-8", "surrogatepass")[:size]


#: stage name -> (title, function(ctx) -> list[Task]); filled by the stage modules
STAGES: dict[str, tuple[str, Callable[[RunContext], list[Task]]]] = {}


def stage(name: str, title: str):
    """Decorator registering a stage (run in registration order)."""

    def register(func: Callable[[RunContext], list[Task]]):
        STAGES[name] = (title, func)
        return func

    return register


def _load_stages() -> None:
    from . import stages_checks, stages_incremental, stages_timing  # noqa: F401  (they register)


#: run order: ``load`` first, so that its first-call timings see encoders nothing has used yet
STAGE_ORDER = ("load", "scaling", "throughput", "worst_case", "agreement", "conformance", "incremental", "interval")


def stage_names() -> list[str]:
    _load_stages()
    return sorted(STAGES, key=lambda n: (STAGE_ORDER.index(n) if n in STAGE_ORDER else len(STAGE_ORDER), n))


def _error_row(exc: BaseException) -> dict:
    text = f"error: {type(exc).__name__}: {exc}".replace("\n", " ")
    return {"note": text[:500]}


def _prime_series(ctx: RunContext) -> None:
    """On resume, the cost extrapolation continues from the stored rows."""
    for row in ctx.store.rows("timings.csv"):
        if not row.get("median_s"):
            continue
        key = (row["stage"], row["vocab"], row["subject"], row["corpus"], row["operation"])
        point = (int(float(row["size_bytes"] or 0)), float(row["median_s"]))
        ctx.series_points.setdefault(key, []).append(point)


def run_tasks(ctx: RunContext, stage_name: str, tasks: Iterable[Task]) -> int:
    """Run the tasks not stored yet; returns how many ran."""
    tasks = list(tasks)
    todo = [t for t in tasks if not ctx.store.done(t.table, t.key)]
    ran = 0
    with Progress(stage_name, len(tasks), quiet=ctx.quiet) as bar:
        bar.step("resumed" if len(todo) < len(tasks) else "", advance=len(tasks) - len(todo))
        for task in todo:
            bar.step(task.label, advance=0)
            try:
                columns = task.run()
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # recorded in the row: the report shows it
                columns = _error_row(exc)
                if ctx.store.directory.exists():
                    with (ctx.store.directory / "errors.log").open("a", encoding="utf-8") as log:
                        log.write(f"--- {stage_name} {task.key}\n{traceback.format_exc()}\n")
            ctx.store.append(task.table, {**task.key, **columns})
            ran += 1
            bar.step(task.label)
    return ran


def run_sweep(ctx: RunContext, *, stages: list[str] | None = None, resume: bool = False) -> dict:
    """Run the stages (all by default) into ``ctx.store``; returns the meta written to ``meta.json``."""
    _load_stages()
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
        _prime_series(ctx)
    elapsed_before = float(meta.get("elapsed_s", 0.0)) if resume else 0.0
    started = time.perf_counter()
    for name in stages or stage_names():
        title, make_tasks = STAGES[name]
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
    out = {}
    for name, vocab in ctx._vocabs.items():
        out[name] = {"tokens": len(vocab.tokens), "rule": vocab.rule, "pattern": vocab.pattern or "",
                     "source": str(vocab.source), "specials": len(vocab.special_tokens)}
    return out


def _subject_details(ctx: RunContext) -> dict:
    out: dict[str, dict] = {}
    for vocab_name, subjects in ctx._subjects.items():
        for s in subjects:
            entry = out.setdefault(s.name, {"kind": s.kind, "declared_exact": s.declared_exact,
                                            "summary": s.summary, "capabilities": sorted(s.capabilities),
                                            "vocabularies": [], "raw": s.raw is not None,
                                            "pipeline": s.pipeline is not None})
            if vocab_name not in entry["vocabularies"]:
                entry["vocabularies"].append(vocab_name)
    return out
