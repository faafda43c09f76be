"""What a report stage is made of: the :class:`Task` (one measurement), the
:class:`RunContext` stages share, and the ``@stage`` registry the runner reads.

The stage modules (``stages_*.py``) register here; :mod:`.sweep` imports them and runs
their tasks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from bpebench.algorithms.formats import load_vocabulary
from bpebench.algorithms.formats.vocabulary import Vocabulary

from .inputs import Source, corpus_sources
from .plan import SweepPlan
from .store import ResultStore
from .subjects import Subject, encoder_subject, is_outside, peer_subjects, select_encoders


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
    #: outside encoders (not part of bpebench): built and measured in forked children
    isolated: set[str] = field(default_factory=set)
    #: subject -> "crashed" / "hung" / "too much memory": its remaining tasks are skipped
    failed: dict[str, str] = field(default_factory=dict)
    isolation_timeout: float = 600.0
    isolation_memory: int = 4 * 2**30

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
                if is_outside(name):
                    self.isolated.add(name)
                    if not self._builds_in_a_child(name, vocab, vocab_name):
                        continue
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

    def _builds_in_a_child(self, name: str, vocab: Vocabulary, vocab_name: str) -> bool:
        """An outside encoder is first built in a forked child: one that crashes, hangs or eats the
        memory there is left out with a note instead of taking the run down."""
        from .isolation import run_isolated

        status, detail = run_isolated(lambda: encoder_subject(name, vocab) and None,
                                      timeout=self.isolation_timeout, memory=self.isolation_memory)
        if status in ("ok", "error"):
            return True  # an exception is reported by the in-process build below
        self.failed[name] = status
        self.note("summary", f"{name} {status} while being built for {vocab_name} ({detail}); left out")
        return False

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
