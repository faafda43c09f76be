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

Complexity: O(ids): one numpy pass when no helper is there (text the vocabulary covers), a few
when one is. Exact, as argued above (tested against the component pipeline).
"""

from __future__ import annotations

import numpy as np


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
        fused across two texts. A few numpy passes over the ids (no compiled call, so no numba)."""
        if not len(ids) or ids.max() < self.first_helper:  # the common case: text the vocabulary covers
            return None
        n = len(ids)
        helper = ids >= self.first_helper
        which = np.where(helper, ids - self.first_helper, 0)  # a helper's index (0 elsewhere, unused)
        counts = np.where(helper, self.count[which], 1)  # ids each input id becomes
        if self.fuse:  # a helper right after a helper of the same text becomes nothing
            follows = np.zeros(n, dtype=bool)
            follows[1:] = helper[1:] & helper[:-1]
            if offsets is not None:
                follows[offsets[:-1][offsets[:-1] < n]] = False
            counts[follows] = 0
        ends = np.cumsum(counts)
        owner = np.repeat(np.arange(n), counts)  # the input id each output id comes from
        within = np.arange(ends[-1]) - (ends - counts)[owner]
        out = np.where(helper[owner], self.flat[np.minimum(self.start[which[owner]] + within, len(self.flat) - 1)]
                       if len(self.flat) else 0, ids[owner]).astype(np.int32)
        if offsets is None:
            return out
        return out, np.concatenate(([0], ends))[offsets].astype(np.int64)
