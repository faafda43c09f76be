"""Incremental and interval counting stages (seed 001's second and third benchmarks).

* ``incremental``: for every encoder declaring ``"appending"`` (``"prepending"``),
  the time to grow a text byte by byte at the end (front) while keeping its exact
  token count, against the fastest exact encoder encoding the whole text once (the
  paper expects a constant factor between the two).
* ``interval``: for every encoder declaring ``"interval"``, the time to count the
  tokens of a slice of a preprocessed text, against the fastest exact encoder
  encoding the slice from scratch (the paper expects about constant vs linear).

The incremental objects come from the methods the capabilities promise:
``appendable()`` (``push``), ``prependable()`` (``prepend``) and
``interval_encoding(data)`` (``count(i, j)``); an encoder that declares a
capability without the method is reported, not measured.
"""

from __future__ import annotations

from typing import Callable

from bpebench.algorithms.core.registry import default_encoder_name

from .inputs import TEXT_CATEGORIES
from .stages_timing import _timing_key, series_task
from .subjects import Subject
from .tasks import RunContext, Task, stage

#: capability -> (factory method on the encoder, growing method on what it returns, operation label)
GROWING = {
    "appending": ("appendable", "push", "append_bytes"),
    "prepending": ("prependable", "prepend", "prepend_bytes"),
}


def grow_byte_by_byte(make: Callable[[], object], grow: str, data: bytes, *, backwards: bool) -> int:
    """Feed ``data`` one byte at a time (from the end when ``backwards``); the final exact count."""
    counter = make()
    add = getattr(counter, grow)
    for byte in (reversed(data) if backwards else data):
        add(byte)
    return counter.token_count()


def _baseline(ctx: RunContext, vocab_name: str) -> Subject | None:
    wanted = default_encoder_name()
    return next((s for s in ctx.subjects(vocab_name) if s.name == wanted), None)


@stage("incremental", "Incremental (appending / prepending) counting")
def incremental_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    sizes = sorted(ctx.plan.incremental_sizes)
    for vocab_name in ctx.vocab_names:
        subjects = ctx.subjects(vocab_name)
        capable = [(s, c) for s in subjects for c in GROWING if c in s.capabilities and s.kind == "encoder"]
        if not capable:
            ctx.note("incremental", "no registered encoder declares the 'appending' or 'prepending' capability")
            continue
        sources = ctx.sources(vocab_name, TEXT_CATEGORIES)
        if not sources:
            ctx.note("incremental", f"{vocab_name}: no text corpus selected")
            continue
        source = sources[0]
        data = ctx.data(vocab_name, source, sizes[-1])
        for subject, capability in capable:
            factory, grow, operation = GROWING[capability]
            make = getattr(subject.handle, factory, None)
            if not callable(make):
                ctx.note("incremental", f"{subject.name} declares '{capability}' but has no {factory}()")
                continue
            for size in sizes:
                size = len(data[:size])
                key = _timing_key("incremental", vocab_name, subject, subject.kind, source.name, operation, size)
                tasks.append(series_task(ctx, key, f"{subject.name} {operation} {size} B",
                                         lambda m=make, g=grow, d=data[:size], b=capability == "prepending":
                                         grow_byte_by_byte(m, g, d, backwards=b)))
        baseline = _baseline(ctx, vocab_name)
        if baseline is not None:
            for size in sizes:
                size = len(data[:size])
                key = _timing_key("incremental", vocab_name, baseline, baseline.kind, source.name, "encode_once", size)
                tasks.append(series_task(ctx, key, f"{baseline.name} {size} B",
                                         lambda f=baseline.raw, d=data[:size]: f(d)))
    return tasks


@stage("interval", "Interval counting")
def interval_tasks(ctx: RunContext) -> list[Task]:
    tasks: list[Task] = []
    plan = ctx.plan
    for vocab_name in ctx.vocab_names:
        capable = [s for s in ctx.subjects(vocab_name) if "interval" in s.capabilities and s.kind == "encoder"]
        if not capable:
            ctx.note("interval", "no registered encoder declares the 'interval' capability")
            continue
        sources = ctx.sources(vocab_name, TEXT_CATEGORIES)
        if not sources:
            ctx.note("interval", f"{vocab_name}: no text corpus selected")
            continue
        source = sources[0]
        data = ctx.data(vocab_name, source, plan.interval_text_bytes)
        lengths = [n for n in sorted(plan.interval_lengths) if n <= len(data)]
        baseline = _baseline(ctx, vocab_name)
        for subject in capable:
            prepare = getattr(subject.handle, "interval_encoding", None)
            if not callable(prepare):
                ctx.note("interval", f"{subject.name} declares 'interval' but has no interval_encoding()")
                continue
            counter: dict = {}

            def count_range(n: int, prepare=prepare, counter=counter) -> int:
                if "it" not in counter:  # preprocess once (during the first warm-up), then only count
                    counter["it"] = prepare(data)
                start = (len(data) - n) // 2
                return counter["it"].count(start, start + n)

            key = _timing_key("interval", vocab_name, subject, subject.kind, source.name, "preprocess", len(data))
            tasks.append(series_task(ctx, key, f"{subject.name} preprocess", lambda p=prepare: p(data)))
            for n in lengths:
                key = _timing_key("interval", vocab_name, subject, subject.kind, source.name, "count_range", n)
                tasks.append(series_task(ctx, key, f"{subject.name} {n} B", lambda n=n, f=count_range: f(n)))
        if baseline is not None:
            for n in lengths:
                start = (len(data) - n) // 2
                key = _timing_key("interval", vocab_name, baseline, baseline.kind, source.name, "encode_slice", n)
                tasks.append(series_task(ctx, key, f"{baseline.name} {n} B",
                                         lambda f=baseline.raw, d=data[start:start + n]: f(d)))
    return tasks
