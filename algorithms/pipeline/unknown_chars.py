"""Unknown characters of a character-level vocabulary, after byte-level BPE: helper ids made into
the model's byte-fallback tokens or its unknown token.

A character-level model (SentencePiece BPE, HF byte-fallback BPE) mapped onto bytes
(``formats/char_units.py``) gets helper tokens: every single byte, and the first bytes of each
multi-byte character that is a token, assembled by merges that run before any real one. Over a
text, a known character always assembles into its token; an unknown one stays one or more helpers
(a helper starts at a lead byte and grows only inside one character, and no real merge takes a
helper), so its neighbours never merge across it, as HF and sentencepiece cut the text there.
Byte-level BPE of the whole text is then the model's ids but for each unknown character, which
comes out as helpers where the model writes:

* its bytes' ``<0xXX>`` tokens (``byte_fallback``, all 256 of them in the vocabulary);
* else the unknown token, once per character, or once per run of unknown characters
  (``fuse_unk``).

:class:`UnknownCharacters` rewrites an id array that way. A model with neither (an unknown
character dropped, its neighbours merging) cannot be rewritten: :meth:`UnknownCharacters.of` is
None.

Complexity: O(ids), one compiled pass (one comparison an id when no helper is there: text the
vocabulary covers). Exact, as argued above (tested against the component pipeline).
"""

from __future__ import annotations

import numpy as np

from ..kernels.jit import njit


class UnknownCharacters:
    """What each helper id of a vocabulary becomes (the ids at or above :attr:`first_helper` are
    the helpers; ``formats/char_units.py`` appends them after the real vocabulary)."""

    def __init__(self, first_helper: int, replacements: list[list[int]], fuse: bool) -> None:
        self.first_helper = first_helper
        self.fuse = fuse
        counts = np.array([len(r) for r in replacements], dtype=np.int64)
        #: for helper ``first_helper + j``: its replacement ids ``flat[start[j]:start[j] + count[j]]``
        self.count = counts
        self.start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.flat = np.array([i for r in replacements for i in r], dtype=np.int32)

    @classmethod
    def of(cls, vocabulary) -> "UnknownCharacters | None":
        """The rewriting of ``vocabulary``'s helpers, or None when it has none, they are not all after
        its real ids, or its model drops unknown characters."""
        hidden = vocabulary.hidden
        if not hidden:
            return None
        first = min(hidden)
        if len(hidden) != len(vocabulary.tokens) - first:
            return None
        model = (vocabulary.pipeline or {}).get("model") or {}
        fallback = vocabulary.byte_fallback or {}
        helpers = vocabulary.tokens[first:]
        if model.get("byte_fallback") and len(fallback) == 256:
            return cls(first, [[fallback[b] for b in data] for data in helpers], fuse=False)
        unk = model.get("unk_token")
        unk_id = None
        if unk is not None:
            from .bpe_model import token_texts

            texts = token_texts(vocabulary, model.get("token_text", "byte_level"))
            unk_id = next((i for i, t in enumerate(texts[:first]) if t == unk), None)
        if unk_id is None or model.get("byte_fallback"):
            # a partial byte fallback sends a character with a missing byte to the unknown token:
            # not rewritten here (rare; the component pipeline does it)
            return None
        # one unknown token per character: on the helper that starts it (a lead byte or ASCII)
        return cls(first, [[unk_id] if not 0x80 <= data[0] < 0xC0 else [] for data in helpers],
                   fuse=bool(model.get("fuse_unk")))

    def rewrite(self, ids: np.ndarray, offsets: np.ndarray | None = None):
        """``ids`` (int32) with every helper replaced, or None when none is there. With ``offsets``
        (int64 bounds of texts in ``ids``): ``(ids, new offsets)``, no run of unknown characters
        fused across two texts."""
        bounds = np.zeros(2, dtype=np.int64) if offsets is None else offsets
        if offsets is None:
            bounds[1] = len(ids)
        out = np.empty(4 * len(ids), dtype=np.int32)  # a helper stands for at most 4 bytes
        new_bounds = np.empty(len(bounds), dtype=np.int64)
        m = rewrite_helpers(ids, bounds, self.first_helper, self.count, self.start, self.flat, self.fuse,
                            out, new_bounds)
        if m < 0:
            return None
        return out[:m] if offsets is None else (out[:m], new_bounds)


@njit(cache=True, nogil=True)
def rewrite_helpers(ids, bounds, first_helper, count, start, flat, fuse, out, new_bounds):
    """Writes ``ids`` into ``out`` with each helper replaced by its ids (a run of helpers within one
    text by the first one's with ``fuse``), and the texts' new ``bounds`` into ``new_bounds``;
    returns how many ids were written, or -1 (nothing written) when there is no helper."""
    n = ids.shape[0]
    found = False
    for i in range(n):
        if ids[i] >= first_helper:
            found = True
            break
    if not found:
        return -1
    m = 0
    new_bounds[0] = 0
    for t in range(bounds.shape[0] - 1):
        previous_helper = False
        for i in range(bounds[t], bounds[t + 1]):
            token = ids[i]
            if token < first_helper:
                out[m] = token
                m += 1
                previous_helper = False
                continue
            if not (fuse and previous_helper):
                j = token - first_helper
                for k in range(start[j], start[j] + count[j]):
                    out[m] = flat[k]
                    m += 1
            previous_helper = True
        new_bounds[t + 1] = m
    return m
