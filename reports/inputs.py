"""Inputs for a report: corpora from ``bpebench.corpora`` by category.

The report never names a corpus in its code: it asks the corpus registry for the
names in each category (``natural``, ``code``, ``random`` for throughput and
agreement; ``adversarial`` for the worst case) and takes the first one of each in
``--quick``, all of them in ``--full``. Everything is seeded; O(size) per input.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bpebench.algorithms.formats.vocabulary import Vocabulary

#: categories of ordinary text (``user``: files or directories given by path with ``--corpora``)
TEXT_CATEGORIES = ("natural", "code", "random", "user")


@dataclass(frozen=True)
class Source:
    """A named input generator: ``text(size)`` returns about ``size`` bytes of text."""

    name: str
    category: str
    text: Callable[[int], str]
    description: str = ""
    why_hard: str = ""
    kind: str = "text"  # "bytes": may be invalid UTF-8 (raw stages only)
    #: how many bytes of distinct text the source holds when asked for ``size`` (None: all asked for)
    available: Callable[[int], int] | None = None

    def distinct_bytes(self, size: int) -> int:
        return size if self.available is None else min(size, self.available(size))


def corpus_sources(vocab: Vocabulary, *, categories: tuple[str, ...], per_category: int | None,
                   wanted: list[str] | None = None, keep: Callable[[Source], bool] | None = None,
                   min_bytes: int = 0) -> tuple[list[Source], str]:
    """Text sources of the given categories for ``vocab``; a note says when fallbacks were used.

    ``keep`` filters before the per-category cut, which prefers corpora that hold at least
    ``min_bytes`` of distinct text (so a short text is not repeated to size when a long one
    exists). ``wanted`` (corpus names or paths) overrides the cut.
    """
    from bpebench.corpora import registry

    sources = []
    for category in categories:
        chosen = []
        if category == "user":
            known = set(registry.names())
            for name in wanted or []:
                if name not in known:
                    source = _user_source(registry, name)
                    if keep is None or keep(source):
                        chosen.append(source)
            sources.extend(chosen)
            continue
        candidates = []
        for name in registry.names(category):
            if wanted and name not in wanted:
                continue
            source = _registry_source(registry, name, vocab)
            if source.kind != "text" or (keep is not None and not keep(source)):
                continue
            candidates.append(source)
        if not wanted and per_category is not None:
            long_enough = [s for s in candidates if s.distinct_bytes(min_bytes) >= 0.9 * min_bytes]
            candidates = (long_enough or sorted(candidates, key=lambda s: -s.distinct_bytes(min_bytes)))
            candidates = candidates[:per_category]
        sources.extend(candidates)
    return sources, ""


def is_unsplittable(vocab: Vocabulary, source: Source, *, sample_bytes: int = 2_000) -> bool:
    """True if the vocabulary's pre-tokenizer leaves a sample of ``source`` as one piece (>= 90 %)."""
    from bpebench.algorithms.pipeline.pretokenize import WholeText, pretokenizer_for

    splitter = pretokenizer_for(vocab)
    if isinstance(splitter, WholeText):
        return True
    text = source.text(sample_bytes)
    if not text:
        return False
    longest = max((len(p.encode("utf-8", "surrogatepass")) for p in splitter.split(text)), default=0)
    return longest >= 0.9 * len(text.encode("utf-8", "surrogatepass"))


def _registry_source(registry, name: str, vocab: Vocabulary) -> Source:
    spec = registry.corpus(name)
    params = spec.parameters

    def build(size: int) -> str:
        kwargs = {}
        if "size" in params:
            kwargs["size"] = int(size)
        if "vocab" in params:
            kwargs["vocab"] = vocab.name if _is_builtin(vocab.name) else params["vocab"]
        value = registry.get(name, **kwargs)
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value

    def text(size: int) -> str:
        # a corpus shorter than asked (a fixed text) is repeated to size; see ``distinct_bytes``
        return _at_least(build(size), size)

    def available(size: int) -> int:
        return len(build(size).encode("utf-8", "surrogatepass"))

    # generators with a numeric default size make any size; fixed texts (size=None) may run short
    fixed_text = params.get("size", None) is None
    return Source(name, spec.category, text, spec.description, spec.why_hard, spec.kind,
                  available if fixed_text else None)


def _user_source(registry, path: str) -> Source:
    """A file or directory given by path: its bytes (UTF-8, undecodable bytes replaced), repeated to size."""
    if not Path(path).exists():
        from bpebench.errors import UnknownNameError

        raise UnknownNameError("corpus", path, registry.names())

    def text(size: int) -> str:
        data = registry.read_user_corpus(path)
        return _at_least(data.decode("utf-8", "replace"), size)

    return Source(Path(path).name, "user", text, f"user corpus {path}",
                  available=lambda size: len(registry.read_user_corpus(path)))


def _is_builtin(name: str) -> bool:
    from bpebench.algorithms.formats import BUILTIN

    return name in BUILTIN


def _at_least(text: str, size: int) -> str:
    """Repeat (and clip) ``text`` to ``size`` UTF-8 bytes when it is shorter."""
    data = text.encode("utf-8", "surrogatepass")
    if not data or len(data) >= size:
        return text
    data = (data * (size // len(data) + 1))[:size]
    return data.decode("utf-8", "ignore")


# ----------------------------------------------------------------------------- fallbacks
def chunks(data: bytes, *, count: int, size: int) -> list[bytes]:
    """``count`` evenly spaced slices of ``size`` bytes from ``data`` (fewer if it is short)."""
    if not data:
        return []
    if len(data) <= size:
        return [data]
    step = max((len(data) - size) // max(count - 1, 1), 1)
    starts = list(range(0, len(data) - size + 1, step))[:count]
    return [data[s : s + size] for s in starts]
