"""Pieces for character-level BPE with no pre-tokenizer: the text cut before each run of a marker.

SentencePiece BPE models (Llama-2's, Mistral's ``tokenizer.model``) and the HF ``tokenizer.json``
files made from them have no pre-tokenizer: BPE runs over each whole normalized stretch of text,
in which spaces are the marker ``▁``. Such a vocabulary is trained with ``split_by_whitespace``, so
none of its tokens holds the marker after another character (``"▁▁the"`` is a token shape,
``"a▁"`` is not). Then no merge can join the character before a run of markers to that run (the
merged token would hold both), and BPE of the whole stretch is BPE of its pieces, each a run of
markers with what follows it up to the next run: the pieces recur from text to text (the piece
cache and whole-token lookups apply), the stretch does not. :func:`cuts_before_marker_runs` checks
the vocabulary; a vocabulary that fails it is encoded a stretch a piece.

HF's ``Metaspace`` pre-tokenizer with ``split`` cuts before every marker instead
(``every=True``): that is its definition, whatever the vocabulary holds.

Complexity: O(n) in the text's bytes, one pass. Exact: the cuts are where BPE cannot merge across
(checked on the vocabulary), or where the pre-tokenizer itself cuts.
"""

from __future__ import annotations

import numpy as np

from ..kernels.jit import njit

#: SentencePiece's space marker (U+2581)
SPACE_MARKER = "\u2581"


def cuts_before_marker_runs(vocabulary, marker: str = SPACE_MARKER) -> bool:
    """Whether no token of ``vocabulary`` that BPE can output holds ``marker`` right after another
    character (so BPE never merges across a cut before a run of markers). Helper ids are left out:
    each lies inside one character."""
    known = vocabulary.__dict__.setdefault("_cuts_before_marker_runs", {})  # by marker
    found = known.get(marker)
    if found is None:
        hidden = vocabulary.hidden
        encoded = marker.encode("utf-8")
        found = True
        for token_id, data in enumerate(vocabulary.tokens):
            at = data.find(encoded, 1)
            if at < 0 or token_id in hidden:
                continue
            text = data.decode("utf-8", "replace")
            if any(a != marker and b == marker for a, b in zip(text, text[1:])):
                found = False
                break
        known[marker] = found
    return found


@njit(cache=True, nogil=True)
def marker_piece_ends(data, marker, every, ends):
    """Writes into ``ends`` the end of each piece of the UTF-8 ``data`` cut before each run of the
    UTF-8 ``marker`` (before each marker with ``every``) and returns how many. A marker that starts
    the text starts no empty piece."""
    n = data.shape[0]
    k = marker.shape[0]
    first = marker[0]
    m = 0
    after_marker = -1  # the position right after the last marker found
    i = 0
    while i < n:
        if data[i] == first and i + k <= n:
            same = True
            for j in range(1, k):
                if data[i + j] != marker[j]:
                    same = False
                    break
            if same:
                if i > 0 and (every or i != after_marker):
                    ends[m] = i
                    m += 1
                i += k
                after_marker = i
                continue
        i += 1
    if n > 0:
        ends[m] = n
        m += 1
    return m


class MarkerSplitter:
    """Pieces cut before each run of ``marker`` (each ``marker`` with ``every``), for the fused
    pipeline (:meth:`piece_ends`) and as ``str`` pieces (:meth:`split`)."""

    def __init__(self, marker: str = SPACE_MARKER, every: bool = False) -> None:
        self.marker = marker
        self.every = bool(every)
        #: the marker's UTF-8 (the fused kernel cuts with it in its own call: ``fast_pipeline.split_tables``)
        self.marker_bytes = np.frombuffer(marker.encode("utf-8"), dtype=np.uint8)

    def piece_ends(self, data: np.ndarray) -> np.ndarray:
        """int64 ends of the pieces of the UTF-8 bytes ``data``."""
        ends = np.empty(len(data) + 1, dtype=np.int64)
        return ends[:marker_piece_ends(data, self.marker_bytes, self.every, ends)]

    def split(self, text: str) -> list[str]:
        pieces: list[str] = []
        start = 0
        i = text.find(self.marker, 1)
        while i > 0:
            if self.every or text[i - 1] != self.marker:
                pieces.append(text[start:i])
                start = i
            i = text.find(self.marker, i + 1)
        if start < len(text):
            pieces.append(text[start:])
        return pieces

    def __repr__(self) -> str:
        return f"MarkerSplitter({self.marker!r}, every={self.every})"
