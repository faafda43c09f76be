"""The result store: one directory of CSV files that grows one row per measurement.

A report run appends every measurement to its CSV the moment it is taken (and
flushes it), so an interrupted run keeps everything measured so far; ``--resume``
reads the rows back and skips the keys already present; ``--render-only`` draws
the page from whatever is there. Files in a result directory::

    meta.json        machine, library versions, run configuration
    timings.csv      one timed operation per row (median, quartiles, repeats)
    agreement.csv    encoder x vocabulary x corpus: agreement with the naive reference
    conformance.csv  one conformance check of one encoder per row

Durability: a row is written whole or not at all. It goes to disk in one ``write`` and is
synced; if the write fails (a full disk), the file is cut back to where the row began and
the run stops with one line. A crash in the middle of a write can still leave a partial
last line; ``--resume`` cuts it off before reading. ``meta.json`` is replaced atomically.

Appending is O(1) per row; loading is O(rows). Plain ``csv`` on write (no pandas
in the measuring loop), pandas on read.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Iterable

import pandas as pd

from bpebench.errors import BpebenchError

from .durable import append_whole, cut_partial_last_line, write_atomically  # noqa: F401 (others import it from here)

#: file name -> columns; the first ``KEY_COLUMNS[file]`` columns identify a row
TABLES: dict[str, tuple[str, ...]] = {
    "timings.csv": (
        "stage", "vocab", "subject", "kind", "corpus", "operation", "size_bytes",
        "tokens", "repeats", "median_s", "q1_s", "q3_s", "min_s", "max_s", "note",
    ),
    "agreement.csv": (
        "vocab", "subject", "kind", "mode", "corpus", "declared_exact", "inputs", "exact_matches",
        "reference_tokens", "subject_tokens", "count_diffs", "invalid_inputs", "first_mismatch", "note",
    ),
    "conformance.csv": ("vocab", "subject", "check", "status", "detail", "counterexample"),
}
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "timings.csv": ("stage", "vocab", "subject", "corpus", "operation", "size_bytes"),
    "agreement.csv": ("vocab", "subject", "mode", "corpus"),
    "conformance.csv": ("vocab", "subject", "check"),
}
NUMERIC = {
    "size_bytes", "tokens", "repeats", "median_s", "q1_s", "q3_s", "min_s", "max_s",
    "inputs", "exact_matches", "reference_tokens", "subject_tokens", "invalid_inputs",
}


def row_key(table: str, row: dict) -> tuple[str, ...]:
    """The identity of a row (strings, so that rows read back from CSV compare equal)."""
    return tuple(_text(row.get(c)) for c in KEY_COLUMNS[table])


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class ResultStore:
    """Append-only CSV tables plus ``meta.json`` in one directory."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._done: dict[str, set[tuple[str, ...]]] = {}

    # ------------------------------------------------------------------ lifecycle
    def create(self, *, resume: bool) -> None:
        """Prepare the directory: keep existing rows when resuming, else start empty."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BpebenchError(f"cannot create {self.directory}: {exc.strerror or exc}") from None
        for name in (*TABLES, "errors.log"):
            path = self.directory / name
            if not resume and path.exists():
                path.unlink()
            elif resume and name in TABLES:
                cut_partial_last_line(path)
        self._done = {table: {row_key(table, r) for r in self.rows(table)} for table in TABLES}

    def has_results(self) -> bool:
        return any((self.directory / t).exists() for t in TABLES)

    # ------------------------------------------------------------------ rows
    def done(self, table: str, row: dict) -> bool:
        """True if a row with the same key was stored already (this run or a resumed one)."""
        return row_key(table, row) in self._done.setdefault(table, set())

    def append(self, table: str, row: dict) -> None:
        """Write one row now (flushed and synced: it survives Ctrl-C and crashes)."""
        columns = TABLES[table]
        unknown = set(row) - set(columns)
        if unknown:
            raise ValueError(f"{table}: unknown columns {sorted(unknown)}")
        path = self.directory / table
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=columns)
        if not path.exists() or path.stat().st_size == 0:
            writer.writeheader()
        writer.writerow({c: _cell(row.get(c)) for c in columns})
        append_whole(path, text.getvalue().encode("utf-8"))
        self._done.setdefault(table, set()).add(row_key(table, row))

    def rows(self, table: str) -> list[dict]:
        path = self.directory / table
        if not path.exists():
            return []
        with path.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def frame(self, table: str) -> pd.DataFrame:
        """The table as a DataFrame (numeric columns converted; empty frame with the columns if absent)."""
        rows = self.rows(table)
        frame = pd.DataFrame(rows, columns=list(TABLES[table]))
        for column in frame.columns:
            if column in NUMERIC:
                frame[column] = pd.to_numeric(frame[column], errors="coerce")
            else:
                frame[column] = frame[column].fillna("").astype(str)
        return frame

    def write_rows(self, table: str, rows: Iterable[dict]) -> int:
        """Append many rows (used when importing asv results); returns how many."""
        n = 0
        for row in rows:
            self.append(table, row)
            n += 1
        return n

    # ------------------------------------------------------------------ meta
    def read_meta(self) -> dict:
        path = self.directory / "meta.json"
        if not path.exists():
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BpebenchError(f"{path}: not valid JSON ({exc.msg}); delete it or rerun without --resume") from None

    def write_meta(self, meta: dict) -> None:
        path = self.directory / "meta.json"
        write_atomically(path, json.dumps(meta, indent=2, sort_keys=True, default=str).encode("utf-8"))


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return str(value)
