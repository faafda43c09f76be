"""Timing stages: load / short / long / decode, scaling, throughput, worst case.

* ``load``: per vocabulary, loading it and compiling its tables; per subject,
  building it, its first call (numba compilation or cache load), a short input,
  a long input and decoding the long input's ids (pipeline: pre-tokenizer + BPE).
* ``scaling``: raw BPE (no pre-tokenizer) on growing slices of random-token text:
  runtime vs length, whose log-log slope is the scaling exponent.
* ``throughput``: the whole pipeline on each text corpus (MB/s, tokens/s).
* ``worst_case``: the pipeline on growing unsplittable inputs (adversarial corpora),
  where pre-tokenization cannot keep BPE inputs small.

Series over growing sizes stop early (a "skipped" row) once the extrapolated cost
of the next size exceeds the plan's cap. Every row is one ``measure`` call.
"""

from __future__ import annotations

import math
import time
from typing import Callable

from bpebench.algorithms.kernels.compiled import compile_vocabulary
from bpebench.algorithms.formats import BUILTIN, load_path

from .inputs import TEXT_CATEGORIES, Source, is_unsplittable
from .subjects import Subject
from .tasks import RunContext, Task, stage
from .timing import measure

#: extrapolation exponent used while only one size of a series is known
PESSIMISTIC_EXPONENT = 2.0


def _timing_key(stage_name: str, vocab: str, subject: Subject | str, kind: str, corpus: str,
                operation: str, size: int) -> dict:
    name = subject.name if isinstance(subject, Subject) else subject
    return {"stage": stage_name, "vocab": vocab, "subject": name, "kind": kind, "corpus": corpus,
            "operation": operation, "size_bytes": size}


def predicted_seconds(points: list[tuple[int, float]], size: int) -> float:
    """Extrapolate the cost at ``size`` from measured (size, seconds) points of the same series:
    the slope of the last two points clamped to [1, 2] (slopes between small sizes are noisy; the
    encoders worth stopping are quadratic), else quadratic."""
    if not points:
        return 0.0
    points = sorted(points)
    (s1, t1) = points[-1]
    exponent = PESSIMISTIC_EXPONENT
    if len(points) >= 2:
        (s0, t0) = points[-2]
        if s1 > s0 > 0 and t1 > 0 and t0 > 0:
            exponent = min(max(math.log(t1 / t0) / math.log(s1 / s0), 1.0), 2.0)
    return t1 * (size / max(s1, 1)) ** exponent


def series_task(ctx: RunContext, key: dict, label: str, call: Callable[[], object]) -> Task:
    """A timed task in a growing-size series, skipped when its extrapolated cost exceeds the cap."""
    series = (key["stage"], key["vocab"], key["subject"], key["corpus"], key["operation"])

    def run() -> dict:
        points = ctx.series_points.setdefault(series, [])
        expected = predicted_seconds(points, key["size_bytes"])
        if expected > ctx.plan.cap_s:
            return {"note": f"skipped: about {expected:.3g} s per call expected, above the {ctx.plan.cap_s:g} s cap"}
        timing = measure(call, repeats=ctx.plan.repeats, budget_s=ctx.plan.budget_s)
        return {**timing.row(), "tokens": _length(timing.result)}  # the runner adds the point to the series

    return Task("timings.csv", key, label, run)


def _length(result) -> int | None:
    try:
        return len(result)
    except TypeError:
        return int(result) if isinstance(result, int) else None


def _first_text_source(ctx: RunContext, vocab_name: str, prefer: tuple[str, ...]) -> Source | None:
    sources = ctx.sources(vocab_name, TEXT_CATEGORIES)
    for category in prefer:
        for source in sources:
            if source.category == category:
                return source
    return sources[0] if sources else None


# ----------------------------------------------------------------------------- load / short / long / decode
@stage("load", "Load, short input, long input, decode")
def load_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    for vocab_name in ctx.vocab_names:
        tasks += _vocabulary_load_tasks(ctx, vocab_name)
        source = _first_text_source(ctx, vocab_name, ("natural", "code", "random"))
        if source is None:
            ctx.note("load", f"{vocab_name}: no text corpus for the short / long inputs")
            continue
        for subject in ctx.subjects(vocab_name):
            if subject.pipeline is None:
                ctx.note("load", f"{subject.name}: no pipeline encode; left out of the load table")
                continue
            tasks += _subject_load_tasks(ctx, vocab_name, source, subject)
    return tasks


def _fresh_vocabulary(name: str):
    builtin = BUILTIN.get(name)
    return builtin.load() if builtin is not None else load_path(name)


def _vocabulary_load_tasks(ctx: RunContext, vocab_name: str) -> list[Task]:
    def load() -> dict:
        timing = measure(lambda: _fresh_vocabulary(vocab_name), warmup=0, repeats=3, budget_s=ctx.plan.budget_s)
        return {**timing.row(), "tokens": len(timing.result.tokens)}

    def tables() -> dict:
        vocab = _fresh_vocabulary(vocab_name)
        started = time.perf_counter()
        compile_vocabulary(vocab)
        return _single(time.perf_counter() - started)

    return [
        Task("timings.csv", _timing_key("load", vocab_name, "(vocabulary)", "vocabulary", "", "load", 0),
             f"{vocab_name} load", load),
        Task("timings.csv", _timing_key("load", vocab_name, "(vocabulary)", "vocabulary", "", "tables", 0),
             f"{vocab_name} tables", tables),
    ]


def _single(seconds: float, **extra) -> dict:
    return {"repeats": 1, "median_s": seconds, "q1_s": seconds, "q3_s": seconds, "min_s": seconds,
            "max_s": seconds, **extra}


def _subject_load_tasks(ctx: RunContext, vocab_name: str, source: Source, subject: Subject) -> list[Task]:
    plan = ctx.plan
    short = ctx.text(vocab_name, source, plan.short_bytes)
    long_text = ctx.text(vocab_name, source, plan.long_bytes)
    short_size, long_size = len(short.encode("utf-8")), len(long_text.encode("utf-8"))
    key = lambda op, size: _timing_key("load", vocab_name, subject, subject.kind, source.name, op, size)  # noqa: E731
    label = f"{vocab_name} {subject.name}"

    def first_call() -> dict:
        started = time.perf_counter()
        ids = subject.pipeline(short)
        return _single(time.perf_counter() - started, tokens=len(ids))

    def decode() -> dict:
        if subject.decode is None:
            return {"note": "no decode"}
        ids = subject.pipeline(long_text)
        timing = measure(lambda: subject.decode(ids), repeats=plan.repeats, budget_s=plan.budget_s)
        return {**timing.row(), "tokens": len(ids)}

    def timed(text: str) -> Callable[[], dict]:
        def run() -> dict:
            timing = measure(lambda: subject.pipeline(text), repeats=plan.repeats, budget_s=plan.budget_s)
            return {**timing.row(), "tokens": len(timing.result)}
        return run

    return [
        Task("timings.csv", key("build", 0), f"{label} build", lambda: _single(subject.build_seconds)),
        Task("timings.csv", key("first_call", short_size), f"{label} first call", first_call),
        Task("timings.csv", key("short", short_size), f"{label} short", timed(short)),
        Task("timings.csv", key("long", long_size), f"{label} long", timed(long_text)),
        Task("timings.csv", key("decode", long_size), f"{label} decode", decode),
    ]


# ----------------------------------------------------------------------------- scaling
@stage("scaling", "Runtime vs input length (raw BPE, no pre-tokenizer)")
def scaling_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    sizes = sorted(ctx.plan.scaling_sizes)
    for vocab_name in ctx.vocab_names:
        source = _first_text_source(ctx, vocab_name, ("random", "natural", "code"))
        if source is None:
            continue
        data = ctx.data(vocab_name, source, sizes[-1])
        for subject in ctx.subjects(vocab_name):
            if subject.raw is None:
                ctx.note("scaling", f"{subject.name}: always pre-tokenizes (no raw BPE entry point); "
                                    "see the throughput and worst-case sections")
                continue
            for size in sizes:
                piece = data[:size]
                key = _timing_key("scaling", vocab_name, subject, subject.kind, source.name, "encode_raw", len(piece))
                tasks.append(series_task(ctx, key, f"{vocab_name} {subject.name} {size} B",
                                         _bind(subject.raw, piece)))
    return tasks


def _bind(func: Callable, argument) -> Callable[[], object]:
    return lambda: func(argument)


# ----------------------------------------------------------------------------- throughput
@stage("throughput", "Throughput per corpus (pre-tokenizer + BPE)")
def throughput_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    plan = ctx.plan
    for vocab_name in ctx.vocab_names:
        for source in ctx.sources(vocab_name, TEXT_CATEGORIES):
            text = ctx.text(vocab_name, source, plan.throughput_bytes)
            size = len(text.encode("utf-8", "surrogatepass"))
            for subject in ctx.subjects(vocab_name):
                if subject.pipeline is None:
                    continue
                key = _timing_key("throughput", vocab_name, subject, subject.kind, source.name,
                                  "encode_pipeline", size)
                tasks.append(series_task(ctx, key, f"{vocab_name} {source.name} {subject.name}",
                                         _bind(subject.pipeline, text)))
    return tasks


# ----------------------------------------------------------------------------- worst case
@stage("worst_case", "Worst case: unsplittable pieces")
def worst_case_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    sizes = sorted(ctx.plan.worst_case_sizes)
    for vocab_name in ctx.vocab_names:
        vocab = ctx.vocab(vocab_name)
        sources = ctx.sources(vocab_name, ("adversarial",), keep=lambda s, v=vocab: is_unsplittable(v, s))
        if not sources:
            ctx.note("worst_case", f"{vocab_name}: no adversarial corpus that its pre-tokenizer leaves in one piece")
        for source in sources:
            for subject in ctx.subjects(vocab_name):
                if subject.pipeline is None:
                    continue
                for size in sizes:
                    key = _timing_key("worst_case", vocab_name, subject, subject.kind, source.name,
                                      "encode_pipeline", size)
                    text_of = _lazy_text(ctx, vocab_name, source, size)
                    tasks.append(series_task(ctx, key, f"{vocab_name} {source.name} {subject.name} {size} B",
                                             lambda f=subject.pipeline, t=text_of: f(t())))
    return tasks


def _lazy_text(ctx: RunContext, vocab_name: str, source: Source, size: int) -> Callable[[], str]:
    # Built on first use (big adversarial inputs are only generated if some subject gets that far).
    return lambda: ctx.text(vocab_name, source, size)
