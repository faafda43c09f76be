"""What a report measures: every registered encoder and every installed peer, found, never named.

A :class:`Subject` wraps either an encoder from ``bpebench.algorithms.core.registry`` or a peer
from ``bpebench.algorithms.peers`` (every peer ``peer_status(vocab)`` says can tokenize the
vocabulary, built by ``make_peer``) behind the same few callables:

* ``raw(data: bytes) -> ids``: BPE over the bytes, no pre-tokenization (None if
  the subject cannot do that, e.g. a peer that always pre-tokenizes);
* ``pipeline(text: str) -> ids``: the whole tokenizer (pre-tokenizer + BPE,
  special tokens as text);
* ``decode(ids)``: back to text or bytes.

Peers are reached defensively: if ``bpebench.algorithms.peers`` is missing, or a peer is
not installed or fails to build, the report says so instead of failing. O(1) per lookup; building
a subject costs what building its encoder / peer costs (that is timed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from bpebench.algorithms.core.encoder import Encoder
from bpebench.algorithms.core.registry import encoder_names, get_encoder_class
from bpebench.algorithms.pipeline.tokenizer import Tokenizer
from bpebench.algorithms.formats.vocabulary import Vocabulary


@dataclass
class Subject:
    """One thing under measurement on one vocabulary."""

    name: str
    kind: str  # "encoder" or "peer"
    declared_exact: bool | None  # None: a peer (its parity is measured, not declared)
    raw: Callable[[bytes], list[int]] | None
    pipeline: Callable[[str], list[int]] | None
    decode: Callable[[list[int]], Any] | None
    build_seconds: float
    summary: str = ""
    capabilities: frozenset = frozenset()
    handle: Any = field(default=None, repr=False)  # the Encoder or peer object
    #: its pipeline runs the fused compiled kernel (pre-tokenizer and BPE in one call)
    fused: bool = False

    @property
    def is_reference(self) -> bool:
        return "reference" in self.capabilities


def encoder_subject(name: str, vocab: Vocabulary) -> Subject:
    """Build encoder ``name`` for ``vocab`` (fresh, not memoised: its construction time is reported)."""
    cls = get_encoder_class(name)
    started = time.perf_counter()
    encoder: Encoder = cls(vocab)
    built = time.perf_counter() - started
    tokenizer = Tokenizer(vocab, algorithm=encoder)
    return Subject(
        name=name, kind="encoder", declared_exact=cls.is_exact(), raw=encoder.encode,
        pipeline=tokenizer.encode_ordinary, decode=tokenizer.decode, build_seconds=built,
        summary=cls.summary, capabilities=frozenset(cls.capabilities), handle=encoder, fused=tokenizer.fused,
    )


def is_outside(name: str) -> bool:
    """True for an encoder that is not part of bpebench (an entry point or another package's class):
    the report runs its code in forked children."""
    return not get_encoder_class(name).__module__.startswith("bpebench.")


def select_encoders(wanted: list[str] | None) -> list[str]:
    """Registered encoder names, filtered to ``wanted`` (unknown names raise UnknownNameError)."""
    names = encoder_names()
    if not wanted:
        return names
    for name in wanted:
        get_encoder_class(name)  # raises with the list of known names
    return [n for n in names if n in wanted]


# ----------------------------------------------------------------------------- peers
def peer_subjects(vocab: Vocabulary, wanted: list[str] | None = None) -> tuple[list[Subject], list[str]]:
    """Every installed peer that supports ``vocab`` (or those in ``wanted``) as a Subject, and notes
    for the page: why the other known peers are absent."""
    from bpebench.algorithms.peers import make_peer, peer_status

    notes: list[str] = []
    found = []
    for name, ok, reason in peer_status(vocab):
        if wanted and name not in wanted:
            continue
        if not ok:
            notes.append(f"peer {name} left out for {vocab.name}: {reason}")
            continue
        try:
            found.append(make_peer(name, vocab))
        except Exception as exc:  # a peer that fails to build is reported, not fatal
            notes.append(f"peer {name} could not be built for {vocab.name}: {type(exc).__name__}: {exc}")
    subjects = [_peer_subject(peer) for peer in found]
    for subject in subjects:
        if subject.handle is not None and getattr(subject.handle, "same_ids", None) is False:
            notes.append(f"peer {subject.name}: its ids differ from the reference on {vocab.name} "
                         "(e.g. a bundled vocabulary with other ids); its agreement rows show it")
    if not subjects and not notes:
        notes.append(f"peers: none installed that support {vocab.name}")
    return subjects, notes


def _peer_name(peer) -> str:
    return str(getattr(peer, "name", None) or type(peer).__name__)


def _peer_subject(peer) -> Subject:
    raw = peer.encode_raw if getattr(peer, "supports_raw", False) else None
    version = getattr(peer, "library_version", "")
    note = getattr(peer, "note", "")
    return Subject(
        name=_peer_name(peer), kind="peer", declared_exact=None, raw=raw,
        pipeline=getattr(peer, "encode_ordinary", None), decode=getattr(peer, "decode", None),
        build_seconds=float(getattr(peer, "load_seconds", 0.0) or 0.0),
        summary=" ".join(x for x in (f"version {version}" if version else "", note) if x),
        capabilities=frozenset({"raw"} if raw is not None else ()), handle=peer,
    )
