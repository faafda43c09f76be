"""How much a report run measures: the ``--quick`` and ``--full`` presets.

A :class:`SweepPlan` lists the input sizes, sample counts and time limits of every
stage. ``cap_s`` keeps slow encoders (the O(n^2) reference, quadratic peers on
unsplittable input) from stalling a run: before each size the cost is
extrapolated from the previous size and the measurement is skipped, and the skip
recorded, when it would exceed the cap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class SweepPlan:
    preset: str
    #: raw BPE (no pre-tokenizer) on slices of random-token text
    scaling_sizes: tuple[int, ...]
    #: pipeline throughput on this many bytes of each corpus
    throughput_bytes: int
    #: pipeline on one unsplittable piece of these sizes
    worst_case_sizes: tuple[int, ...]
    #: agreement with naive: this many slices of this many bytes per corpus
    agreement_inputs: int
    agreement_input_bytes: int
    #: short / long inputs of the load table
    short_bytes: int
    long_bytes: int
    #: incremental (appending) and interval counting sizes
    incremental_sizes: tuple[int, ...]
    interval_text_bytes: int
    interval_lengths: tuple[int, ...]
    #: conformance kit: examples per check; also on the report's vocabularies (else only on small
    #: trained ones); in a worker process (survives hangs) or in this one (no start-up cost)
    conformance_examples: int
    conformance_real_vocabularies: bool
    conformance_isolated: bool
    #: corpora per category (None: all)
    corpora_per_category: int | None
    #: timing: samples per measurement, seconds of sampling per measurement
    repeats: int
    budget_s: float
    #: skip a measurement predicted to take longer than this (seconds per call)
    cap_s: float

    def with_overrides(self, **changes) -> "SweepPlan":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


QUICK = SweepPlan(
    preset="quick",
    scaling_sizes=(100, 1_000, 10_000, 100_000),
    throughput_bytes=100_000,
    worst_case_sizes=(1_000, 10_000, 100_000),
    agreement_inputs=6,
    agreement_input_bytes=512,
    short_bytes=100,
    long_bytes=200_000,
    incremental_sizes=(100, 1_000, 10_000),
    interval_text_bytes=20_000,
    interval_lengths=(10, 100, 1_000, 10_000),
    conformance_examples=10,
    conformance_real_vocabularies=False,
    conformance_isolated=False,
    corpora_per_category=1,
    repeats=5,
    budget_s=0.4,
    cap_s=3.0,
)

FULL = SweepPlan(
    preset="full",
    scaling_sizes=(10, 100, 1_000, 10_000, 100_000, 1_000_000),
    throughput_bytes=1_000_000,
    worst_case_sizes=(1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000),
    agreement_inputs=24,
    agreement_input_bytes=2_048,
    short_bytes=100,
    long_bytes=2_000_000,
    incremental_sizes=(10, 100, 1_000, 10_000, 100_000),
    interval_text_bytes=100_000,
    interval_lengths=(10, 100, 1_000, 10_000, 100_000),
    conformance_examples=100,
    conformance_real_vocabularies=True,
    conformance_isolated=True,
    corpora_per_category=None,
    repeats=9,
    budget_s=2.0,
    cap_s=30.0,
)

#: the smallest plan that still exercises every stage (used by the tests)
TINY = SweepPlan(
    preset="tiny",
    scaling_sizes=(50, 500),
    throughput_bytes=2_000,
    worst_case_sizes=(100, 1_000),
    agreement_inputs=2,
    agreement_input_bytes=128,
    short_bytes=50,
    long_bytes=2_000,
    incremental_sizes=(50, 200),
    interval_text_bytes=500,
    interval_lengths=(10, 100),
    conformance_examples=3,
    conformance_real_vocabularies=False,
    conformance_isolated=False,
    corpora_per_category=1,
    repeats=3,
    budget_s=0.05,
    cap_s=0.5,
)

PRESETS = {p.preset: p for p in (QUICK, FULL, TINY)}
