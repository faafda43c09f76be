"""Read the key/value metadata of a GGUF file (the part that holds the tokenizer), bounded.

GGUF (versions 2 and 3, either byte order)::

    "GGUF" | version u32 | tensor count u64 | key/value count u64 | key/value pairs | tensor infos | data

A pair is a string key, a u32 value type and the value; a string is a u64 length
and UTF-8 bytes; an array is an element type (u32), a count (u64) and the
elements. Only the pairs are read: tensors are never touched.

Every length and count is checked against the bytes left in the file before
anything is allocated, so a damaged or hostile header cannot ask for gigabytes
(issue 25): each problem is one :class:`~bpebench.errors.VocabularyError` line that
says where the file went wrong, e.g. ``truncated in the value of
'tokenizer.ggml.tokens' (at byte 5000 of 5000)``. Linear in the metadata size.

>>> import struct, tempfile, os
>>> data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 3) + b"key" + struct.pack("<IQ", 8, 2) + b"hi"
>>> with tempfile.NamedTemporaryFile(delete=False) as f:
...     _ = f.write(data)
>>> read_gguf_metadata(f.name)
{'key': 'hi'}
>>> os.unlink(f.name)
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

import numpy as np

from bpebench.errors import VocabularyError

MAGIC = b"GGUF"
#: value type -> (struct code, size) for fixed-size scalars
_SCALARS = {0: ("B", 1), 1: ("b", 1), 2: ("H", 2), 3: ("h", 2), 4: ("I", 4), 5: ("i", 4), 6: ("f", 4),
            7: ("?", 1), 10: ("Q", 8), 11: ("q", 8), 12: ("d", 8)}
_NUMPY = {0: "u1", 1: "i1", 2: "u2", 3: "i2", 4: "u4", 5: "i4", 6: "f4", 7: "u1", 10: "u8", 11: "i8", 12: "f8"}
STRING, ARRAY = 8, 9
#: far above any real tokenizer (the largest have about 262 000 tokens) and any key count
MAX_ELEMENTS = 1 << 24
MAX_PAIRS = 1 << 20


class _Damaged(Exception):
    pass


class _Cursor:
    def __init__(self, data, order: str) -> None:
        self.data, self.order, self.pos = data, order, 0
        self.where = "the header"

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Damaged(f"truncated in {self.where} (at byte {self.pos} of {len(self.data)})")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def scalar(self, code: str, size: int):
        return struct.unpack(self.order + code, self.take(size))[0]

    def count(self, what: str, element_size: int, limit: int) -> int:
        n = self.scalar("Q", 8)
        left = len(self.data) - self.pos
        if n > limit or n * element_size > left:
            raise _Damaged(f"{what} of {n:,} in {self.where} does not fit in the {left:,} bytes left in the file")
        return n

    def string(self) -> str:
        raw = self.take(self.count("a string length", 1, 1 << 40))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _Damaged(f"a string in {self.where} is not UTF-8") from None

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            value = self.scalar(*_SCALARS[kind])
            return bool(value) if kind == 7 else value
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            element = self.scalar("I", 4)
            if element == STRING:
                return [self.string() for _ in range(self.count("an array count", 8, MAX_ELEMENTS))]
            if element in _SCALARS:
                size = _SCALARS[element][1]
                n = self.count("an array count", size, MAX_ELEMENTS)
                dtype = np.dtype(_NUMPY[element]).newbyteorder(self.order)
                array = np.frombuffer(self.take(n * size), dtype=dtype).astype(dtype.newbyteorder("="))
                return array.astype(bool) if element == 7 else array
            if element == ARRAY:
                raise _Damaged(f"{self.where} is an array of arrays (no tokenizer key has one)")
            raise _Damaged(f"unknown array element type {element} in {self.where}")
        raise _Damaged(f"unknown value type {kind} in {self.where}")


def read_gguf_metadata(path: str | Path) -> dict[str, Any]:
    """The key/value pairs of a GGUF file: str, int, float, bool, list[str] or numpy arrays."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            size = f.seek(0, 2)
            if size == 0:
                raise VocabularyError(f"{path}: empty file, not GGUF")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _read(path, data)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _read(path: Path, data) -> dict[str, Any]:
    if data[:4] != MAGIC:
        raise VocabularyError(f"{path}: not a GGUF file (it does not start with 'GGUF')")
    if len(data) < 24:
        raise VocabularyError(f"{path}: damaged GGUF file: truncated in the header ({len(data)} bytes)")
    version = struct.unpack("<I", data[4:8])[0]
    order = "<"
    if version & 0xFFFF == 0 and version:  # written on a big-endian machine
        order, version = ">", struct.unpack(">I", data[4:8])[0]
    if version == 1:
        raise VocabularyError(f"{path}: GGUF version 1 is not supported (llama.cpp reads versions 2 and 3)")
    if version not in (2, 3):
        raise VocabularyError(f"{path}: damaged GGUF file: unknown version {version}")
    cursor = _Cursor(data, order)
    cursor.pos = 8
    out: dict[str, Any] = {}
    try:
        cursor.scalar("Q", 8)  # tensor count: not needed
        pairs = cursor.count("a key/value count", 12, MAX_PAIRS)
        for index in range(pairs):
            cursor.where = f"key {index}"
            key = cursor.string()
            cursor.where = f"the value of {key!r}"
            out[key] = cursor.value(cursor.scalar("I", 4))
    except _Damaged as exc:
        raise VocabularyError(f"{path}: damaged GGUF file: {exc}") from None
    return out
