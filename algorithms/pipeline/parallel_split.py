"""One long text's pre-tokenizer split on several threads, for a pattern no built-in scanner knows. Exact.

Where a piece of an arbitrary pattern ends may depend on text far before it, so a text cannot
simply be cut and its parts split on their own. Two facts make it possible all the same, for a
pattern with a transducer (:mod:`.pretokenize_transducer`):

* **restart**: the pattern programs have no look-behind and no anchor but ``$``/``\\Z``, so
  ``findall`` after a match that ends at ``e`` is ``findall`` of the text from ``e`` on: a split
  started at a true piece end goes on exactly as the whole text's;
* **settled ends**: the transducer writes an end only once the characters after it settle it, so
  the ends written before a window's own end was read belong to every text that starts with the
  window (``ProgramPretokenizer.window_ends``).

The text is cut at character starts into one window per thread (at most ``parts``), each reaching
:data:`OVERLAP` bytes into the next, and split on the threads, each window from the transducer's
start (a window per part, eight for 0.66 MB on two threads, was slower than one split: the merge
cost more than the windows saved). Window 0 starts
where the text does, so its settled ends are the text's. Window ``j`` started at a guess; the first
of the ends known so far, at or after its start, that it also settled is a true end of both, and
from there on window ``j``'s settled ends are the text's (restart). The last window reaches the
text's end, so all of its ends count. When two windows share no end (a piece longer than the
overlap), the rest of the text is split on the calling thread from the last true end.

Cost: O(n + threads x OVERLAP) split work, ``threads`` windows at a time.
"""

from __future__ import annotations

import numpy as np

from .parallel import run_all

#: bytes each window reaches into the next; a piece longer than this makes the rest serial
OVERLAP = 1 << 14


def _character_start(data: np.ndarray, at: int) -> int:
    """The first character start of the UTF-8 ``data`` at or after ``at`` (or its length)."""
    while at < len(data) and 0x80 <= data[at] < 0xC0:
        at += 1
    return at


def piece_ends_on_threads(splitter, data: np.ndarray, parts: int, threads: int) -> np.ndarray | None:
    """``splitter.piece_ends(data)`` (a ``ProgramPretokenizer``), its windows split on up to ``threads``
    threads when it has a transducer (see the module docstring)."""
    n = len(data)
    if parts <= 1 or threads <= 1 or getattr(splitter, "engine", None) != "transducer" or n < 4 * OVERLAP:
        return splitter.piece_ends(data)
    parts = min(parts, threads)
    starts = sorted({0, *(_character_start(data, k * n // parts) for k in range(1, parts))} - {n})
    stops = [_character_start(data, s + OVERLAP) for s in starts[1:]] + [n]
    windows = run_all(lambda j: splitter.window_ends(data[starts[j]:stops[j]]), range(len(starts)), threads)
    if any(w is None for w in windows):  # some text matches no branch (or seemed to, at a window's end)
        return splitter.piece_ends(data)
    pieces: list[np.ndarray] = []  # the text's ends, window by window
    tail = np.zeros(0, dtype=np.int64)  # the last window's true ends, not yet cut where the next meets it
    for start, stop, (ends, settled) in zip(starts, stops, windows):
        trusted = ends + start if stop == n else ends[:settled] + start
        if start > 0:
            # the first of the ends known so far, from this window's start on, that it settled too
            candidates = tail[np.searchsorted(tail, start):]
            at = np.searchsorted(trusted, candidates)
            found = np.flatnonzero(trusted[np.minimum(at, len(trusted) - 1)] == candidates) if len(trusted) else []
            if len(found) == 0:  # no end in common: from the last true end on, on this thread
                last = int(tail[-1]) if len(tail) else (int(pieces[-1][-1]) if pieces else 0)
                rest = splitter.piece_ends(data[last:])
                return None if rest is None else np.concatenate([*pieces, tail, rest + last])
            meet = candidates[found[0]]
            pieces.append(tail[:np.searchsorted(tail, meet, side="right")])
            trusted = trusted[at[found[0]] + 1:]
        tail = trusted
    return np.concatenate([*pieces, tail])
