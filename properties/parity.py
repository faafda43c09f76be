"""Parity: bpebench's Tokenizer against the tokenizer file's own library, text by text.

:class:`ParitySpec` says what is compared: a vocabulary (built-in name or path), the
library that judges it, the bpebench algorithm and how special-token literals are read.
The library is one of

* ``tiktoken``, ``hf`` (HF ``tokenizers``), ``sentencepiece``, ``mistral-common`` (its
  ``Tekkenizer``, for ``tekken.json``): built from the same file by
  :mod:`bpebench.algorithms.peers`;
* ``golden``: llama.cpp-style golden files (:func:`bpebench.properties.parity_inputs.read_golden`),
  whose documents carry the ids llama.cpp's test expects;
* ``auto``: the file's own library by format (:func:`resolve_library`).

:func:`compare_partition` runs in whichever process does the work (this one, or a Dask
worker, which builds both sides once and keeps them): it encodes every document on both
sides and returns one plain, JSON-able row: counts, and for the first mismatches both id
lists around the first differing token with each side's decoded pieces, so that a summary
can be printed from the stored rows alone (:func:`summarize`).

Special-token literals: ``special="text"`` (the default) treats them as ordinary text on
both sides (tiktoken ``encode_ordinary``, HF with ``encode_special_tokens``, sentencepiece as
always; llama.cpp's test tokenizes with ``parse_special=false``); ``special="parse"`` lets each
side parse them (bpebench ``allowed_special="all"``, the library's own default).
"""

from __future__ import annotations

import os
import socket
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from bpebench.errors import BpebenchError

from .parity_inputs import Document, has_golden

#: ``--against`` names -> peer names in :mod:`bpebench.algorithms.peers`
LIBRARIES = {"tiktoken": "tiktoken", "hf": "hf-tokenizers", "sentencepiece": "sentencepiece",
             "mistral-common": "mistral-common"}
#: file format (as the loaders sniff it) -> its own library
OWN_LIBRARY = {"tiktoken": "tiktoken", "hf": "hf", "sentencepiece": "sentencepiece", "tekken": "mistral-common",
               "gguf": "golden"}
SPECIAL_MODES = ("text", "parse")
#: ids shown around the first difference, before it and in all
WINDOW_BEFORE, WINDOW = 3, 12
#: characters of text kept around the first difference
EXCERPT_BEFORE, EXCERPT = 40, 120


@dataclass(frozen=True)
class ParitySpec:
    """What one parity run compares (hashable: workers keep the built sides per spec)."""

    vocabulary: str  # built-in name or absolute path
    library: str  # "tiktoken" | "hf" | "sentencepiece" | "golden"
    algorithm: str | None = None
    special: str = "text"
    keep: int = 5  # mismatches kept in full per partition
    pattern: str | None = None  # pre-tokenizer for a vocabulary file that carries none (name or regex)
    kind: str | None = None  # the file's format, when not recognised by content (--format)
    instance: str = ""  # set when bpebench's side is a Tokenizer object given by the caller (this process only)


# ----------------------------------------------------------------------------- choosing the library
def source_format(vocab) -> str | None:
    """The format a vocabulary file was loaded from ('tiktoken', 'hf', 'sentencepiece', 'gguf'), as the
    peers see it."""
    from bpebench.algorithms.peers import _source_kind

    return _source_kind(vocab)


def resolve_library(vocab, against: str) -> tuple[str, str | None]:
    """``(library, golden prefix or None)`` for ``--against`` (``auto``, a library name or a golden path)."""
    if against in LIBRARIES:
        return against, None
    if against == "auto":
        kind = source_format(vocab)
        library = OWN_LIBRARY.get(kind or "")
        if library is None:
            raise BpebenchError(f"{vocab.name}: cannot tell its own library (source {vocab.source or 'unknown'});"
                                f" pass --against {'|'.join(LIBRARIES)} or a golden-file path")
        if library != "golden":
            return library, None
        if not has_golden(vocab.source):
            raise BpebenchError(
                f"{vocab.source}: GGUF files are checked against llama.cpp's golden files, and there is no"
                f" {Path(vocab.source).name}.inp/.out beside it; pass --against PATH (llama.cpp's"
                " models/ggml-vocab-NAME.gguf, whose .inp and .out it reads)"
            )
        return "golden", str(Path(vocab.source).resolve())
    if has_golden(against):
        prefix = against[:-4] if against.endswith((".inp", ".out")) else against
        return "golden", str(Path(prefix).resolve())
    raise BpebenchError(f"--against {against!r}: not auto, {', '.join(LIBRARIES)}, or llama.cpp golden files"
                        f" (no {against}.inp and {against}.out)")


def library_label(library: str) -> str:
    """The judging library's name and version ('tiktoken 0.14.0', 'llama.cpp golden files')."""
    if library == "golden":
        return "llama.cpp golden files"
    from bpebench.algorithms.peers import PEERS

    spec = PEERS[LIBRARIES[library]]
    return f"{spec.distribution} {spec.version()}"


# ----------------------------------------------------------------------------- the two sides
class Sides:
    """Both tokenizers of a spec, built once per process."""

    def __init__(self, spec: ParitySpec, tokenizer=None) -> None:
        self.spec = spec
        self.tokenizer = tokenizer if tokenizer is not None else build_tokenizer(spec)
        self.vocabulary = self.tokenizer.vocabulary
        self.peer = None
        if spec.library != "golden":
            from bpebench.algorithms.peers import make_peer

            self.peer = make_peer(LIBRARIES[spec.library], self.vocabulary, verify=False)
            if spec.special == "parse" and self.peer.encode_special_fn is None:
                raise BpebenchError(f"{self.peer.name} cannot encode with special tokens parsed here")

    def ours(self, texts: Sequence[str]) -> list[list[int] | Exception]:
        tok = self.tokenizer
        if self.spec.special == "parse":
            return [_call(lambda t: tok.encode(t, allowed_special="all"), t) for t in texts]
        try:
            return tok.encode_ordinary_batch(list(texts))
        except Exception:  # find the documents that fail, one by one
            return [_call(tok.encode_ordinary, t) for t in texts]

    def theirs(self, doc: Document) -> list[int] | Exception:
        if self.peer is None:
            return list(doc.expected or ())
        if self.spec.special == "parse":
            return _call(self.peer.encode_with_specials, doc.text)
        return _call(self.peer.encode_ordinary, doc.text)

    def our_piece(self, token_id: int) -> str:
        try:
            return render(self.vocabulary.decode_bytes([token_id]))
        except BpebenchError:
            return "(no such id)"

    def their_piece(self, token_id: int) -> str:
        if self.peer is None:  # golden ids: shown with the vocabulary they should belong to
            return self.our_piece(token_id)
        try:
            return render(self.peer.piece(token_id))
        except Exception:
            return "(no such id)"


def load(spec: ParitySpec):
    """The spec's vocabulary (``spec.kind`` forcing its format), with ``spec.pattern`` as its
    pre-tokenizer when given.

    A pattern is only for files that carry none (rank files): a file's own pre-tokenizer is
    what its library uses, and replacing it on one side would compare something else.
    """
    from bpebench.algorithms.formats import load_vocabulary

    vocab = load_vocabulary(spec.vocabulary, kind=spec.kind)
    if spec.pattern is None:
        return vocab
    if vocab.pattern:
        raise BpebenchError(f"{vocab.name} has its own pre-tokenizer; --pattern is for files that carry none")
    return load_vocabulary(spec.vocabulary, kind=spec.kind, pattern=spec.pattern)


def build_tokenizer(spec: ParitySpec):
    """bpebench's side: the Tokenizer of the spec's vocabulary and algorithm."""
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    return Tokenizer(load(spec), algorithm=spec.algorithm)


_SIDES: dict[ParitySpec, Sides] = {}


def sides(spec: ParitySpec) -> Sides:
    """The built sides of ``spec`` in this process (built on first use)."""
    built = _SIDES.get(spec)
    if built is None:
        built = _SIDES[spec] = Sides(spec)
    return built


def _call(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # a failure on one side is a result to report, not a crash of the run
        return exc


def shown(text: str) -> str:
    """``repr(text)`` with combining marks escaped too (``'e\\u0301'``, not an accented e), so that
    texts that look the same on screen read differently."""
    quoted = repr(text)
    if text.isascii():
        return quoted
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Mn", "Me") else c for c in quoted)


def render(piece: bytes | str) -> str:
    """A token for display: its text where it is valid UTF-8 (quoted, escapes visible), else its bytes."""
    if isinstance(piece, bytes):
        try:
            piece = piece.decode("utf-8")
        except UnicodeDecodeError:
            return repr(piece)
    return shown(piece)


# ----------------------------------------------------------------------------- comparing
def describe_failure(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first_line}"[:300]


def mismatch_record(doc: Document, ours: list[int] | Exception, theirs: list[int] | Exception, sd: Sides) -> dict:
    """What a reader needs to see one mismatch: both id lists around the first difference,
    the pieces side by side, the text around it."""
    record: dict = {"doc": doc.index, "label": doc.label, "chars": len(doc.text)}
    failed = [(side, r) for side, r in (("ours", ours), ("theirs", theirs)) if isinstance(r, Exception)]
    if failed:
        record["failed"] = {side: describe_failure(r) for side, r in failed}
        record["text"] = doc.text[:EXCERPT]
        record["text_start"] = 0
        for side, r in (("ours", ours), ("theirs", theirs)):
            if not isinstance(r, Exception):
                record[side] = r[:WINDOW]
                record[f"{side}_total"] = len(r)
        record["window_start"] = 0
        return record
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    start = max(0, at - WINDOW_BEFORE)
    try:  # where the agreeing prefix ends in the text (near it, when a token ends inside a character)
        char_at = min(len(sd.tokenizer.decode(ours[:at])), len(doc.text))
    except BpebenchError:
        char_at = 0
    text_start = max(0, char_at - EXCERPT_BEFORE)
    record.update(
        at_token=at, at_char=char_at, window_start=start,
        ours=ours[start:start + WINDOW], theirs=theirs[start:start + WINDOW],
        ours_total=len(ours), theirs_total=len(theirs),
        ours_pieces=[sd.our_piece(i) for i in ours[start:start + WINDOW]],
        theirs_pieces=[sd.their_piece(i) for i in theirs[start:start + WINDOW]],
        text=doc.text[text_start:text_start + EXCERPT], text_start=text_start,
    )
    return record


def compare_partition(spec: ParitySpec, index: int, docs: Sequence[Document], digest: str) -> dict:
    """Encode every document of one partition on both sides; the row stored for it."""
    start, cpu_start = time.perf_counter(), time.process_time()
    sd = sides(spec)
    ours_all = sd.ours([d.text for d in docs])
    matched = failed = ours_tokens = theirs_tokens = size = 0
    mismatches: list[dict] = []
    for doc, ours in zip(docs, ours_all):
        theirs = sd.theirs(doc)
        size += len(doc.text.encode("utf-8", "surrogatepass"))
        if isinstance(ours, Exception) or isinstance(theirs, Exception):
            failed += 1
        else:
            ours_tokens += len(ours)
            theirs_tokens += len(theirs)
            if ours == theirs:
                matched += 1
                continue
        if len(mismatches) < spec.keep:
            mismatches.append(mismatch_record(doc, ours, theirs, sd))
    return {
        "partition": index, "first_doc": docs[0].index if docs else 0, "docs": len(docs), "bytes": size,
        "digest": digest, "matched": matched, "failed": failed,
        "ours_tokens": ours_tokens, "theirs_tokens": theirs_tokens, "mismatches": mismatches,
        "seconds": round(time.perf_counter() - start, 6), "cpu_seconds": round(time.process_time() - cpu_start, 6),
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


# ----------------------------------------------------------------------------- summary
@dataclass
class Summary:
    partitions: int
    docs: int
    bytes: int
    matched: int
    failed: int
    ours_tokens: int
    theirs_tokens: int
    work_seconds: float  # wall time of the partitions, summed
    cpu_seconds: float  # CPU time of the processes that compared them, summed (the work, whatever the load)
    mismatches: list[dict]  # the first ones, in document order

    @property
    def differing(self) -> int:
        return self.docs - self.matched


def summarize(rows: Sequence[dict], show: int) -> Summary:
    """Totals over stored partition rows and the first ``show`` mismatches in document order."""
    rows = sorted(rows, key=lambda r: r["partition"])
    mismatches = [m for r in rows for m in r["mismatches"]]
    mismatches.sort(key=lambda m: m["doc"])
    return Summary(
        partitions=len(rows), docs=sum(r["docs"] for r in rows), bytes=sum(r["bytes"] for r in rows),
        matched=sum(r["matched"] for r in rows), failed=sum(r["failed"] for r in rows),
        ours_tokens=sum(r["ours_tokens"] for r in rows), theirs_tokens=sum(r["theirs_tokens"] for r in rows),
        work_seconds=sum(r["seconds"] for r in rows), cpu_seconds=sum(r.get("cpu_seconds", 0.0) for r in rows),
        mismatches=mismatches[:show],
    )


def _ids(ids: list[int], start: int, total: int) -> str:
    inner = ", ".join(map(str, ids))
    return f"[{'..., ' if start else ''}{inner}{', ...' if start + len(ids) < total else ''}]  ({total} ids)"


def format_mismatch(number: int, m: dict, ours_name: str, theirs_name: str) -> list[str]:
    """A mismatch record as lines: where, the text, both id lists, the pieces side by side."""
    lines = [f"[{number}] document {m['doc']} ({m['label']}), {m['chars']} characters"]
    text_start = m.get("text_start", 0)
    ellipsis_before = "..." if text_start else ""
    ellipsis_after = "..." if text_start + len(m["text"]) < m["chars"] else ""
    if "failed" in m:
        for side, message in m["failed"].items():
            lines.append(f"    {ours_name if side == 'ours' else theirs_name} failed: {message}")
        lines.append(f"    text: {ellipsis_before}{shown(m['text'])}{ellipsis_after}")
        return lines
    lines[0] += f": first difference at token {m['at_token']} (character {m['at_char']})"
    lines.append(f"    text: {ellipsis_before}{shown(m['text'])}{ellipsis_after}")
    width = max(len(ours_name), len(theirs_name))
    start = m["window_start"]
    lines.append(f"    {ours_name:<{width}} ids: {_ids(m['ours'], start, m['ours_total'])}")
    lines.append(f"    {theirs_name:<{width}} ids: {_ids(m['theirs'], start, m['theirs_total'])}")
    ours_col = [f"{i:>7} {p}" for i, p in zip(m["ours"], m["ours_pieces"])]
    theirs_col = [f"{i:>7} {p}" for i, p in zip(m["theirs"], m["theirs_pieces"])]
    col = max([len(c) for c in ours_col] + [len(ours_name) + 8, 24])
    col = min(col, 48)
    lines.append(f"    {'token':>6}  {ours_name:<{col}}  {theirs_name}")
    for k in range(max(len(ours_col), len(theirs_col))):
        left = ours_col[k] if k < len(ours_col) else ""
        right = theirs_col[k] if k < len(theirs_col) else ""
        differs = k >= len(m["ours"]) or k >= len(m["theirs"]) or m["ours"][k] != m["theirs"][k]
        mark = "*" if differs else " "
        if len(left) > col:
            left = left[:col - 3] + "..."
        lines.append(f"    {start + k:>6}{mark} {left:<{col}}  {right}")
    return lines
