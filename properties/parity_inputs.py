"""What ``bpebench parity`` compares on: documents, read lazily, cut into partitions.

A *document* is one text both tokenizers encode whole: one hard string, one ``--text``,
one JSONL record, or a run of whole lines of a file or named corpus (about ``doc_bytes``
bytes, so that a large file becomes many documents and a partition never holds half a
line). Documents are numbered in reading order; *partitions* are consecutive runs of them,
cut deterministically (by bytes and count), so that a resumed run cuts the same partitions
and can check, by each partition's digest, that its input did not change.

Sources (:func:`documents`):

* ``hard-strings``: :data:`bpebench.corpora.hard_strings.HARD_STRINGS` (the default);
* a corpus name from :mod:`bpebench.corpora` (``size=`` passed to generators that take it);
* a file: ``.jsonl`` / ``.ndjson`` (one JSON string, or object with a ``"text"`` string, per
  line), anything else read as UTF-8 text in whole lines; a directory: every file under it,
  sorted by path;
* llama.cpp golden files (:func:`read_golden`): ``NAME.inp`` holds the texts, each followed by
  the marker line ``__ggml_vocab_test__``; ``NAME.out`` one line of space-separated ids per
  text (the layout llama.cpp's ``tests/test-tokenizer-0.cpp`` reads). Their documents carry
  the expected ids.

Text that is not valid UTF-8 is an error naming the file and line, unless
``errors="replace"`` (U+FFFD, as ``bytes.decode`` does).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from bpebench.errors import BpebenchError

HARD_STRINGS_NAME = "hard-strings"
#: llama.cpp's separator between the texts of a ``.inp`` file (``test-tokenizer-0.cpp``)
GOLDEN_SEPARATOR = "\n__ggml_vocab_test__\n"
JSONL_SUFFIXES = (".jsonl", ".ndjson")
DEFAULT_DOC_BYTES = 8192
DEFAULT_PARTITION_BYTES = 256 * 1024
DEFAULT_PARTITION_DOCS = 2000
#: below this many bytes still to compare, a run stays in one process (no cluster start-up:
#: see docs/parity.md for what a Dask run costs)
IN_PROCESS_BYTES = 32_000_000


@dataclass(frozen=True)
class Document:
    """One text to encode on both sides; ``expected`` holds golden ids when a file gives them."""

    index: int
    label: str
    text: str
    expected: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Partition:
    """Consecutive documents handled as one task; ``digest`` identifies their content."""

    index: int
    documents: tuple[Document, ...]
    size: int  # UTF-8 bytes of the texts
    digest: str

    @property
    def first(self) -> int:
        return self.documents[0].index


# ----------------------------------------------------------------------------- decoding
def _decode(data: bytes, errors: str, where: str) -> str:
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise BpebenchError(
            f"{where}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start});"
            " pass --errors replace to read it with U+FFFD"
        ) from None


def _line_chunks(lines: Iterable[bytes], doc_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Whole lines grouped into chunks of at least ``doc_bytes`` (the last may be shorter):
    ``(number of the chunk's first line, bytes)``. A line longer than ``doc_bytes`` is one chunk."""
    chunk: list[bytes] = []
    size = 0
    first = 1
    line_no = 0
    for line_no, line in enumerate(lines, 1):
        if not chunk:
            first = line_no
        chunk.append(line)
        size += len(line)
        if size >= doc_bytes:
            yield first, b"".join(chunk)
            chunk, size = [], 0
    if chunk:
        yield first, b"".join(chunk)


# ----------------------------------------------------------------------------- sources
def _text_file(path: Path, label: str, *, doc_bytes: int, errors: str, size: int | None) -> Iterator[tuple]:
    read = 0
    try:
        with path.open("rb") as f:
            for line_no, chunk in _line_chunks(f, doc_bytes):
                yield f"{label}:{line_no}", _decode(chunk, errors, f"{label}:{line_no}"), None
                read += len(chunk)
                if size is not None and read >= size:
                    return
    except OSError as exc:
        raise BpebenchError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _jsonl_file(path: Path, label: str, *, errors: str, size: int | None) -> Iterator[tuple]:
    read = 0
    try:
        with path.open("rb") as f:
            for line_no, raw in enumerate(f, 1):
                read += len(raw)
                where = f"{label}:{line_no}"
                line = _decode(raw, errors, where).strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BpebenchError(f"{where}: not JSON ({exc.msg})") from None
                text = record.get("text") if isinstance(record, dict) else record
                if not isinstance(text, str):
                    raise BpebenchError(f"{where}: expected a JSON string or an object with a \"text\" string")
                yield where, text, None
                if size is not None and read >= size:
                    return
    except OSError as exc:
        raise BpebenchError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _path_source(path: Path, *, doc_bytes: int, errors: str, size: int | None) -> Iterator[tuple]:
    from bpebench.corpora.registry import corpus_files

    for file in corpus_files(path):
        label = str(file)
        if file.name.endswith(JSONL_SUFFIXES):
            yield from _jsonl_file(file, label, errors=errors, size=size)
        else:
            yield from _text_file(file, label, doc_bytes=doc_bytes, errors=errors, size=size)


def _corpus_source(name: str, *, doc_bytes: int, errors: str, size: int | None) -> Iterator[tuple]:
    from bpebench import corpora

    spec = corpora.corpus(name)  # UnknownNameError lists the known names
    params = {"size": size} if size is not None and "size" in spec.defaults else {}
    value = corpora.get(name, **params)
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    for line_no, chunk in _line_chunks(io.BytesIO(data), doc_bytes):
        where = f"{name}:{line_no}"
        yield where, _decode(chunk, errors, f"corpus {where}"), None


def is_corpus_name(source: str) -> bool:
    from bpebench import corpora

    return source in corpora.names()


def check_source(source: str) -> str:
    """``source`` as it will be read (a path made absolute), or BpebenchError naming the problem."""
    if source == HARD_STRINGS_NAME or is_corpus_name(source):
        return source
    path = Path(source)
    if path.exists():
        return str(path.resolve())
    from bpebench import corpora

    raise BpebenchError(
        f"--corpus {source!r}: no such file or directory, and not a corpus name"
        f" (known: {HARD_STRINGS_NAME}, {', '.join(corpora.names())})"
    )


def documents(sources: Sequence[str], *, texts: Sequence[str] = (), doc_bytes: int = DEFAULT_DOC_BYTES,
              errors: str = "strict", size: int | None = None) -> Iterator[Document]:
    """The documents of ``texts`` (each one document) then of each source, numbered from 0."""
    index = 0
    for i, text in enumerate(texts, 1):
        # command-line bytes that are not UTF-8 arrive as surrogate escapes: the same policy as files
        try:
            data = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
            data = text.encode("utf-8", "surrogatepass")
        text = _decode(data, errors, f"--text #{i}")
        yield Document(index, f"--text #{i}", text)
        index += 1
    for source in sources:
        if source == HARD_STRINGS_NAME:
            from bpebench.corpora.hard_strings import HARD_STRINGS

            items: Iterable[tuple] = ((f"{HARD_STRINGS_NAME} #{i}", t, None) for i, t in enumerate(HARD_STRINGS))
        elif is_corpus_name(source):
            items = _corpus_source(source, doc_bytes=doc_bytes, errors=errors, size=size)
        else:
            items = _path_source(Path(source), doc_bytes=doc_bytes, errors=errors, size=size)
        for label, text, expected in items:
            yield Document(index, label, text, expected)
            index += 1


def golden_documents(prefix: str | os.PathLike) -> Iterator[Document]:
    """The texts of llama.cpp golden files with their expected ids."""
    inp, _ = golden_paths(prefix)
    for i, (text, ids) in enumerate(read_golden(prefix)):
        yield Document(i, f"{inp.name} #{i}", text, tuple(ids))


# ----------------------------------------------------------------------------- llama.cpp golden files
def golden_paths(prefix: str | os.PathLike) -> tuple[Path, Path]:
    """``(NAME.inp, NAME.out)`` for ``NAME``, ``NAME.inp`` or ``NAME.out``."""
    text = os.fspath(prefix)
    if text.endswith((".inp", ".out")):
        text = text[:-4]
    return Path(text + ".inp"), Path(text + ".out")


def has_golden(prefix: str | os.PathLike) -> bool:
    return all(p.is_file() for p in golden_paths(prefix))


def read_golden(prefix: str | os.PathLike) -> list[tuple[str, list[int]]]:
    """The ``(text, ids)`` pairs of llama.cpp golden files, in file order.

    Parsed as ``test-tokenizer-0.cpp`` does: the ``.inp`` file split at
    ``"\\n__ggml_vocab_test__\\n"`` (a final empty remainder is no text), the ``.out``
    file's lines stripped and split at spaces; both must hold the same number of entries.
    """
    inp, out = golden_paths(prefix)
    for path in (inp, out):
        if not path.is_file():
            raise BpebenchError(f"no llama.cpp golden file {path} (expected {inp.name} and {out.name} side by side)")
    try:
        raw_inp, raw_out = inp.read_bytes(), out.read_bytes()
    except OSError as exc:
        raise BpebenchError(f"{exc.filename}: cannot read ({exc.strerror or exc})") from None
    raw = _decode(raw_inp, "strict", str(inp))
    texts: list[str] = []
    pos = 0
    while pos < len(raw):
        found = raw.find(GOLDEN_SEPARATOR, pos)
        if found < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:found])
        pos = found + len(GOLDEN_SEPARATOR)
    lines = _decode(raw_out, "strict", str(out)).split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if len(lines) != len(texts):
        raise BpebenchError(f"{inp.name} holds {len(texts)} texts but {out.name} has {len(lines)} lines of ids")
    pairs = []
    for line_no, (text, line) in enumerate(zip(texts, lines), 1):
        try:
            ids = [int(token) for token in line.split()]
        except ValueError:
            bad = next(t for t in line.split() if not t.lstrip("-").isdigit())
            raise BpebenchError(f"{out}:{line_no}: {bad!r} is not a token id") from None
        pairs.append((text, ids))
    return pairs


def write_golden(prefix: str | os.PathLike, pairs: Iterable[tuple[str, Sequence[int]]]) -> tuple[Path, Path]:
    """Write ``(text, ids)`` pairs as llama.cpp golden files (the layout its tokenizer tests read)."""
    inp, out = golden_paths(prefix)
    pairs = list(pairs)
    for text, _ in pairs:
        if GOLDEN_SEPARATOR in text or text.endswith(GOLDEN_SEPARATOR[:-1]):
            raise BpebenchError(f"text {text[:40]!r} holds llama.cpp's separator line and cannot be written")
    inp.write_bytes("".join(text + GOLDEN_SEPARATOR for text, _ in pairs).encode("utf-8"))
    out.write_text("".join("".join(f" {i}" for i in ids) + "\n" for _, ids in pairs), encoding="utf-8")
    return inp, out


# ----------------------------------------------------------------------------- partitions
def partitions(docs: Iterable[Document], *, max_bytes: int = DEFAULT_PARTITION_BYTES,
               max_docs: int = DEFAULT_PARTITION_DOCS) -> Iterator[Partition]:
    """Consecutive documents, a new partition once ``max_bytes`` or ``max_docs`` is reached."""
    batch: list[Document] = []
    size = 0
    digest = hashlib.sha256()
    index = 0
    for doc in docs:
        data = doc.text.encode("utf-8", "surrogatepass")
        batch.append(doc)
        size += len(data)
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
        if doc.expected is not None:
            digest.update(repr(doc.expected).encode())
        if size >= max_bytes or len(batch) >= max_docs:
            yield Partition(index, tuple(batch), size, digest.hexdigest()[:24])
            batch, size, digest, index = [], 0, hashlib.sha256(), index + 1
    if batch:
        yield Partition(index, tuple(batch), size, digest.hexdigest()[:24])
