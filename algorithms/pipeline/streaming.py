"""Encode large files into one ``.npy`` of ids, streaming, on every core (``bpebench encode --input``).

Each file is read in blocks, decoded as UTF-8 (strictly: a file that is not UTF-8 gets one
line naming it and the byte offset), and cut at pre-token boundaries (a line feed followed
by a letter, :mod:`bpebench.algorithms.pipeline.parallel`), so every block's ids are exactly
that stretch of the file's ids; the text after a block's last boundary waits for the next
block. A block is encoded by :meth:`Tokenizer.encode_to_numpy`, which spreads it over the
threads. Ids go straight to the output file as ``uint32`` (the ``.npy`` header is written
first with room for any length and rewritten at the end), so memory stays at a few blocks
whatever the input size. Special-token literals are ordinary text (``encode_ordinary``).

Files are encoded one after another and their ids concatenated in order;
``offsets`` (returned, and written beside the ids by the CLI when asked) says where each
file's ids start. A progress bar goes to stderr when it is a terminal.

Cost: O(total bytes); memory O(block size x threads); a file with no boundary at all (one
huge line) is held whole before it is encoded, and so is every file of a vocabulary whose pattern
no built-in scanner knows (its text is split whole, then its pieces encoded on the threads).
"""

from __future__ import annotations

import codecs
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from bpebench.errors import BpebenchError

#: bytes read per block
BLOCK_BYTES = 8 << 20
#: the ``.npy`` header is padded to this many bytes, room for any shape
_HEADER_BYTES = 128


@dataclass
class EncodeStats:
    files: int = 0
    bytes: int = 0
    tokens: int = 0
    seconds: float = 0.0
    offsets: list[int] = field(default_factory=lambda: [0])

    def summary(self) -> str:
        rate = self.bytes / 1e6 / self.seconds if self.seconds > 0 else float("inf")
        return (f"{self.files} file(s), {self.bytes / 1e6:.1f} MB -> {self.tokens:,} tokens in {self.seconds:.2f} s"
                f" ({rate:.1f} MB/s)")


def _npy_header(count: int) -> bytes:
    """A version 1.0 ``.npy`` header for ``uint32[count]``, padded to ``_HEADER_BYTES``."""
    text = f"{{'descr': '<u4', 'fortran_order': False, 'shape': ({count},), }}"
    body_len = _HEADER_BYTES - 10
    text = text.ljust(body_len - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", body_len) + text.encode("latin1")


def _last_cut(text: str) -> int:
    """The end of the longest prefix of ``text`` that ends at a pre-token boundary (0 if none)."""
    from .parallel import last_boundary

    position = last_boundary(text, 0, len(text))
    return 0 if position is None else position + 1


def encode_files(tokenizer, paths: Sequence[str | os.PathLike], output: str | os.PathLike, *,
                 num_threads: int | None = None, block_bytes: int = BLOCK_BYTES, progress: bool | None = None
                 ) -> EncodeStats:
    """Encode ``paths`` (in order) with ``tokenizer`` into the ``uint32`` array file ``output``."""
    from .fast_pipeline import supported_pattern
    from .parallel import CUTTABLE_PATTERNS

    files = [Path(p) for p in paths]
    for path in files:
        if not path.is_file():
            raise BpebenchError(f"{path}: no such file")
    total = sum(p.stat().st_size for p in files)
    if progress is None:
        progress = sys.stderr.isatty()
    cuttable = supported_pattern(tokenizer.vocabulary) in CUTTABLE_PATTERNS
    stats = EncodeStats()
    started = time.perf_counter()
    output = Path(output)
    try:
        out = open(output, "wb")
    except OSError as exc:
        raise BpebenchError(f"{output}: cannot write ({exc.strerror})") from None
    with out:
        out.write(_npy_header(0))

        def emit(text: str) -> None:
            if text:
                ids = tokenizer.encode_to_numpy(text, disallowed_special=(), num_threads=num_threads)
                out.write(ids.astype("<u4", copy=False).tobytes())
                stats.tokens += len(ids)

        for path in files:
            decoder = codecs.getincrementaldecoder("utf-8")("strict")
            pending = ""
            offset = 0
            with open(path, "rb") as f:
                while True:
                    block = f.read(block_bytes)
                    try:
                        pending += decoder.decode(block, final=not block)
                    except UnicodeDecodeError as exc:
                        raise BpebenchError(f"{path}: not UTF-8 (byte {offset + exc.start})") from None
                    offset += len(block)
                    stats.bytes += len(block)
                    if not block:
                        break
                    cut = _last_cut(pending) if cuttable else 0
                    if cut:
                        emit(pending[:cut])
                        pending = pending[cut:]
                    if progress:
                        _show(stats.bytes, total, time.perf_counter() - started)
            emit(pending)
            stats.files += 1
            stats.offsets.append(stats.tokens)
        out.seek(0)
        out.write(_npy_header(stats.tokens))
    stats.seconds = time.perf_counter() - started
    if progress:
        _show(stats.bytes, total, stats.seconds, end="\n")
    return stats


def _show(done: int, total: int, seconds: float, end: str = "") -> None:
    fraction = done / total if total else 1.0
    width = 30
    filled = int(width * fraction)
    rate = done / 1e6 / seconds if seconds > 0 else 0.0
    sys.stderr.write(f"\rencode [{'#' * filled}{'.' * (width - filled)}] {100 * fraction:5.1f}%"
                     f" {done / 1e6:8.1f}/{total / 1e6:.1f} MB {rate:6.1f} MB/s{end}")
    sys.stderr.flush()
