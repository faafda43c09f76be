"""One long text split part by part, each part on the thread that encodes it, for a pattern no
built-in scanner knows. Exact.

Where a piece of an arbitrary pattern ends may depend on text far before it, so a text cannot
simply be cut and its parts split on their own. Two facts make it possible all the same, for a
pattern with a transducer (:mod:`.pretokenize_transducer`):

* **restart**: the pattern programs have no look-behind and no anchor but ``$``/``\\Z``, so
  ``findall`` after a match that ends at ``e`` is ``findall`` of the text from ``e`` on: a split
  started at a true piece end goes on exactly as the whole text's;
* **settled ends**: the transducer writes an end only once the characters after it settle it, so
  the ends written before a window's own end was read belong to every text that starts with the
  window (``ProgramPretokenizer.window_ends``).

The text is cut at character starts near its part targets. Part ``j`` starts at a guessed piece
end ``h_j`` (:func:`part_start`): the second end of the split of :data:`PROBE_BYTES` read from its
cut, a split started in the middle of a piece that has usually fallen in step with the text's by
then. The thread that takes part ``j`` splits the text from ``h_j`` to :data:`MARGIN_BYTES` past
``h_(j+1)`` (:func:`part_ends`) and checks that ``h_(j+1)`` is one of the ends it settled. Part 0
starts at the text's start, a true end; if part ``j`` started at a true end and its check holds,
``h_(j+1)`` is a true end too (settled ends), and part ``j+1``'s split from it is the text's
(restart). So when every part's check holds, the parts' ends are the whole text's. A check fails
where the split from a cut does not fall in step within the probe (a run of digits taken in
threes across a cut) or a piece runs on past the margin; the caller then splits the text whole.

Each part's ends are made right before its pieces are encoded, on the same core, while they are in
its caches; there is no step in which one thread waits for the others' splits.

Cost: O(n + parts x (PROBE_BYTES + MARGIN_BYTES)) split work, spread over the threads.
"""

from __future__ import annotations

import numpy as np

#: bytes read from a part's cut to guess where its first whole piece starts
PROBE_BYTES = 1 << 8
#: bytes a part's split reads past its end, so that its end is settled there
MARGIN_BYTES = 1 << 12
#: the end of the probe's split a part starts at (0: the first)
_PROBE_END = 1
_NO_ENDS = np.zeros(0, dtype=np.int64)


def character_start(data: np.ndarray, at: int) -> int:
    """The first character start of the UTF-8 ``data`` at or after ``at`` (or its length)."""
    at = min(at, len(data))
    while at < len(data) and 0x80 <= data[at] < 0xC0:
        at += 1
    return at


def _trusted_ends(splitter, data: np.ndarray, start: int, stop: int) -> np.ndarray | None:
    """The ends of the split of ``data[start:stop]`` (from ``start``) that every longer text has:
    the settled ones, all of them where ``stop`` is the text's end; None when some text matches no
    branch."""
    found = splitter.window_ends(data[start:stop])
    if found is None:
        return None
    ends, settled = found
    return ends if stop == len(data) else ends[:settled]


def part_start(splitter, data: np.ndarray, cut: int) -> int | None:
    """Where the part cut at ``cut`` (a character start of ``data``) starts: the second end of the
    split of :data:`PROBE_BYTES` read from there; the text's end when the probe reaches it with no
    such end; None when the probe settles none (a piece longer than the probe) or does not split."""
    if cut <= 0:
        return 0
    stop = character_start(data, cut + PROBE_BYTES)
    ends = _trusted_ends(splitter, data, cut, stop)
    if ends is not None and len(ends) > _PROBE_END:
        return cut + int(ends[_PROBE_END])
    return len(data) if ends is not None and stop == len(data) else None


def part_ends(splitter, data: np.ndarray, start: int, stop: int) -> np.ndarray | None:
    """The piece ends of ``data[start:stop]`` (from ``start``), where ``start`` is a true piece end of
    ``data``: its split read on for :data:`MARGIN_BYTES` past ``stop``; None when ``stop`` is not one
    of the ends that split settled (nor the text's end), or when some text matches no branch."""
    if stop <= start:
        return _NO_ENDS if stop == start else None
    ends = _trusted_ends(splitter, data, start, character_start(data, stop + MARGIN_BYTES))
    if ends is None:
        return None
    last = int(np.searchsorted(ends, stop - start))
    return ends[:last + 1] if last < len(ends) and ends[last] == stop - start else None
