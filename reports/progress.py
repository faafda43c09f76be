"""A plain-text progress bar per stage, written to stderr.

On a terminal the bar is redrawn in place (``\\r``); elsewhere (CI logs, pipes)
at most about ten lines per stage are printed, so logs stay short. O(1) per step.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24


class Progress:
    """``with Progress("scaling", total=40) as bar: bar.step("backtracking 1 kB")``."""

    def __init__(self, stage: str, total: int, *, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stage, self.total, self.done = stage, max(total, 0), 0
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_decile = -1
        self._started = time.perf_counter()

    def __enter__(self) -> "Progress":
        self._draw("starting")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(interrupted=exc_type is not None)

    def step(self, label: str = "", *, advance: int = 1) -> None:
        """Count ``advance`` finished items; ``label`` says what comes next or what just ran."""
        self.done = min(self.done + advance, self.total) if self.total else self.done + advance
        self._draw(label)

    def close(self, *, interrupted: bool = False) -> None:
        if self.quiet:
            return
        elapsed = time.perf_counter() - self._started
        state = "interrupted" if interrupted else "done"
        line = f"{self._bar()}  {state} in {elapsed:.1f} s"
        if self.interactive:
            self.stream.write("\r\x1b[K" + line + "\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _bar(self) -> str:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(round(fraction * BAR_WIDTH))
        return f"{self.stage:<12} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done:>4}/{self.total:<4}"

    def _draw(self, label: str) -> None:
        if self.quiet:
            return
        line = f"{self._bar()}  {label}"[:110]
        if self.interactive:
            self.stream.write("\r\x1b[K" + line)
        else:
            decile = int(10 * self.done / self.total) if self.total else 10
            if decile == self._last_decile:
                return
            self._last_decile = decile
            self.stream.write(line + "\n")
        self.stream.flush()
