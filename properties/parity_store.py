"""Durable results of a parity run: one directory, one JSON line per finished partition.

Files::

    run.json          what the run compares (vocabulary fingerprint, library and version,
                      algorithm, inputs, partitioning): written atomically before any row
    partitions.jsonl  one row per finished partition, appended as it finishes

Guarantees, and how they are kept (the file primitives are the report's,
:mod:`bpebench.reports.durable`):

* *append-only, written whole*: each row is one ``os.write`` of a complete line on an
  ``O_APPEND`` descriptor, then ``fsync``; a write that fails part-way (a full disk) is cut
  back to the previous end of file before the one-line error is raised, so the file only
  ever holds whole rows;
* *repaired on resume*: a partial last line (the process was killed inside a write, or the
  machine went down) is cut off, and a line that does not parse as a row is dropped with
  a warning; its partition is simply computed again;
* *resume never mixes runs*: ``--resume`` refuses a directory whose ``run.json`` describes
  another comparison.

The summary is always rebuilt from ``partitions.jsonl``, never from memory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bpebench.errors import BpebenchError
from bpebench.reports.durable import append_whole, cut_partial_last_line, write_atomically

RESULTS = "partitions.jsonl"
META = "run.json"
#: keys every stored row has (a line without them is not a row of this format)
ROW_KEYS = frozenset({"partition", "digest", "docs", "bytes", "matched", "failed", "mismatches", "seconds"})
FORMAT = 1


class ParityStore:
    """The results directory of one parity run."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.results = self.directory / RESULTS
        self.meta_path = self.directory / META
        self.repaired: list[str] = []  # what resuming had to repair, one line each

    # ------------------------------------------------------------------ lifecycle
    def start(self, meta: dict, *, resume: bool) -> dict[int, dict]:
        """Prepare the directory; returns the rows already stored (only when resuming)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BpebenchError(f"cannot create {self.directory}: {exc.strerror or exc}") from None
        meta = json.loads(json.dumps({"format": FORMAT, **meta}))  # as it reads back (lists, not tuples)
        if resume and self.meta_path.exists():
            previous = self.read_meta()
            if previous != meta:
                changed = sorted(k for k in set(previous) | set(meta) if previous.get(k) != meta.get(k))
                raise BpebenchError(f"{self.directory} holds another parity run (it differs in"
                                    f" {', '.join(changed)}); rerun without --resume or choose another --out")
            return {row["partition"]: row for row in self.rows(repair=True)}
        for path in (self.results, self.meta_path):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise BpebenchError(f"cannot remove {path}: {exc.strerror or exc}") from None
        write_atomically(self.meta_path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
        return {}

    # ------------------------------------------------------------------ reading
    def read_meta(self) -> dict:
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BpebenchError(f"{self.meta_path}: unreadable ({exc}); rerun without --resume") from None
        if not isinstance(meta, dict):
            raise BpebenchError(f"{self.meta_path}: not a parity run description; rerun without --resume")
        return meta

    def rows(self, *, repair: bool = False) -> list[dict]:
        """The stored rows, one per partition (the first if one were stored twice).

        With ``repair``, a partial last line is cut off the file and lines that are not rows
        are removed from it (each noted in :attr:`repaired`); without, they are only skipped.
        """
        if repair:
            cut = cut_partial_last_line(self.results)
            if cut:
                self.repaired.append(f"cut a partial last row ({cut} bytes) off {self.results.name}")
        try:
            data = self.results.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise BpebenchError(f"{self.results}: cannot read ({exc.strerror or exc})") from None
        data = data[: data.rfind(b"\n") + 1]  # a partial last row, when not repairing, is not read
        rows: dict[int, dict] = {}
        kept: list[bytes] = []
        bad = repeated = 0
        for line in data.splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict) or not ROW_KEYS <= row.keys() or not isinstance(row["partition"], int):
                bad += 1
                continue
            if row["partition"] in rows:
                repeated += 1
                continue
            rows[row["partition"]] = row
            kept.append(line)
        if (bad or repeated) and repair:
            write_atomically(self.results, b"".join(line + b"\n" for line in kept))
            self.repaired.append(f"dropped {bad} damaged and {repeated} repeated row(s) from {self.results.name}")
        return list(rows.values())

    # ------------------------------------------------------------------ writing
    def append(self, row: dict) -> None:
        """Store one finished partition: one whole line, synced before returning."""
        append_whole(self.results, (json.dumps(row, separators=(",", ":")) + "\n").encode("ascii"))
