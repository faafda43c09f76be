"""HF's BPE model step (``models::bpe::BPE::tokenize``) on one pre-tokenized piece.

HF starts a piece from its characters: each character's string (with
``continuing_subword_prefix`` in front of all but the first, ``end_of_word_suffix``
after the last) is looked up in the model vocabulary; a character that is not a token
becomes its ``<0xXX>`` byte tokens (``byte_fallback``, when all of them exist) or the
unknown token (consecutive ones fused into one with ``fuse_unk``), and is dropped when
there is no unknown token. Then the listed merges run, best rank first, leftmost on
ties. ``ignore_merges`` first emits a piece that is itself a token as that token.
SentencePiece's BPE is the same with ``fuse_unk`` on.

Two ways through, with the same ids:

* without prefix or suffix, the piece's runs of known characters go to the Tokenizer's
  :class:`~bpebench.algorithms.core.encoder.Encoder` as bytes (each character of a
  byte-level vocabulary is one byte; a multi-byte character of a character-level
  vocabulary is assembled from its bytes by helper merges that run before every real
  one, see ``formats/char_units.py``), and the unknown characters between the runs
  are emitted here. No merge involves an unknown or byte-fallback token (the loader
  checks), so the runs are independent; an unknown character that is dropped (no unknown
  token, no byte fallback) does not end a run: HF removes it and its neighbours merge;
* with a prefix or suffix, a token is no longer the concatenation of its parts'
  bytes (HF merges ``a`` + ``##b`` into ``ab``), so the characters' symbols are merged
  here, in Python, over the vocabulary's id-pair merge table. (The Tokenizer sends a
  byte-level model with a suffix to the compiled stage instead, the suffix as a byte:
  ``formats.word_suffix``.)

Complexity: the first way is the encoder's; the second O(n^2) per piece (pieces are words;
the last 10,000 pieces' ids are kept, so a repeated word costs a lookup). Exact (ids equal HF's,
the loader refuses what it cannot reproduce).
"""

from __future__ import annotations

import functools
from typing import Iterable

import regex

from bpebench.errors import VocabularyError
from ..formats.byte_alphabet import bytes_to_unicode
from ..formats.vocabulary import Vocabulary


#: how many pieces' ids the symbol-level path keeps (HF's model: 10,000 words)
WORD_CACHE = 10_000


def token_texts(vocabulary: Vocabulary, token_text: str, ids: Iterable[int] | None = None) -> list[str | None]:
    """The HF string of every token id (None for helper ids that are not in the file); of the ids
    ``ids`` only, in their order, when given."""
    # a byte-level token's string: its bytes read as Latin-1 (one character each), then each character
    # mapped to its byte's stand-in in one ``translate`` (a join over the bytes took 0.12 s for
    # DeepSeek-V4's 128k tokens)
    to_byte_level = str.maketrans({chr(b): c for b, c in bytes_to_unicode().items()})
    fallback = {token_id: value for value, token_id in (vocabulary.byte_fallback or {}).items()}
    texts: list[str | None] = []
    hidden = vocabulary.hidden
    excluded = vocabulary.excluded
    tokens = vocabulary.tokens
    for token_id, data in (enumerate(tokens) if ids is None else ((i, tokens[i]) for i in ids)):
        if token_id in hidden:
            texts.append(None)
        elif token_id in fallback:
            texts.append(f"<0x{fallback[token_id]:02X}>")
        elif token_text == "byte_level" and token_id not in excluded:
            texts.append(data.decode("latin-1").translate(to_byte_level))
        else:
            texts.append(data.decode("utf-8", "replace"))
    return texts


class BPEModel:
    """The model step of one vocabulary; ``tokenize(piece) -> ids``."""

    def __init__(self, vocabulary: Vocabulary, options: dict, encoder=None) -> None:
        self.vocabulary = vocabulary
        self.encoder = encoder
        self.token_text = options.get("token_text", "byte_level")
        self.ignore_merges = bool(options.get("ignore_merges", False))
        self.fuse_unk = bool(options.get("fuse_unk", False))
        self.byte_fallback = bool(options.get("byte_fallback", False))
        self.prefix = options.get("continuing_subword_prefix") or ""
        self.suffix = options.get("end_of_word_suffix") or ""
        unk = options.get("unk_token")
        self.unk_id = None
        if unk is not None:
            self.unk_id = self._unk_id(unk)
            if self.unk_id is None:
                raise VocabularyError(f"{vocabulary.name}: unk_token {unk!r} is not in the vocabulary")
        if self.token_text == "byte_level":
            table = bytes_to_unicode()
            self._to_latin1 = str.maketrans({c: chr(b) for b, c in table.items()})
        self.symbol_level = bool(self.prefix or self.suffix)
        #: the ids of the pieces merged in Python lately (a piece's ids depend on it alone, so this is
        #: exact; HF's model keeps such a cache too); emptied when full
        self._words: dict[str, tuple[int, ...]] = {}

    # the strings of every token and the maps made from them are built when first needed: for a
    # file the fused pipeline encodes, a Tokenizer needs them only to decode to strings, and building
    # them took 0.07 s of the 0.29 s DeepSeek-V4's file took to be ready
    @functools.cached_property
    def texts(self) -> list[str | None]:
        """Every token id's HF string (None for helper ids that are not in the file)."""
        return token_texts(self.vocabulary, self.token_text)

    @functools.cached_property
    def ids(self) -> dict[str, int]:
        """HF's model vocabulary: string -> id (tokens BPE can produce, and the byte-fallback tokens)."""
        excluded = self.vocabulary.excluded
        fallback_ids = self._fallback_ids
        ids: dict[str, int] = {}
        for token_id, text in enumerate(self.texts):
            if text is not None and (token_id not in excluded or token_id in fallback_ids):
                ids.setdefault(text, token_id)
        return ids

    def _unk_id(self, unk: str) -> int | None:
        """``unk``'s id in :attr:`ids`, else (an unknown token that is also an added token, or one the
        model leaves out, as SentencePiece's ``<unk>``) the first id whose string it is. Only the ids
        whose bytes can read as ``unk`` have their strings made: every token's took 26 ms of the
        0.12 s a SentencePiece file took to be ready."""
        if "\ufffd" in unk:  # a string decoded with replacement: any invalid token may read so
            found = self.ids.get(unk)
            return found if found is not None else next((i for i, t in enumerate(self.texts) if t == unk), None)
        # a string is its bytes in UTF-8, or (byte-level tokens) its characters' bytes, or "<0xXX>"
        spellings = {unk.encode("utf-8", "surrogatepass")}
        from_stand_in = {c: b for b, c in bytes_to_unicode().items()}
        if all(c in from_stand_in for c in unk):
            spellings.add(bytes(from_stand_in[c] for c in unk))
        fallback_ids = self._fallback_ids
        candidates = sorted({i for i, data in enumerate(self.vocabulary.tokens) if data in spellings} | fallback_ids)
        matches = [i for i, text in zip(candidates, token_texts(self.vocabulary, self.token_text, candidates))
                   if text == unk]
        excluded = self.vocabulary.excluded
        in_ids = [i for i in matches if i not in excluded or i in fallback_ids]
        return in_ids[0] if in_ids else (matches[0] if matches else None)

    @property
    def _fallback_ids(self) -> set[int]:
        return set((self.vocabulary.byte_fallback or {}).values())

    @functools.cached_property
    def byte_ids(self) -> dict[int, int | None]:
        """A byte's ``<0xXX>`` token (byte fallback only)."""
        return {b: self.ids.get(f"<0x{b:02X}>") for b in range(256)} if self.byte_fallback else {}

    @functools.cached_property
    def known(self) -> frozenset[str]:
        """The characters that are tokens themselves."""
        fallback_ids = self._fallback_ids
        return frozenset(t for t, i in self.ids.items() if len(t) == 1 and i not in fallback_ids)

    @functools.cached_property
    def _unknown(self):
        """Finds a character that is not a token."""
        known = self.known
        return regex.compile("[^" + "".join(regex.escape(c) for c in sorted(known)) + "]") if known \
            else regex.compile(r"[\s\S]")

    # ------------------------------------------------------------------ characters
    def _to_bytes(self, text: str) -> bytes:
        if self.token_text == "byte_level":
            return text.translate(self._to_latin1).encode("latin-1")
        return text.encode("utf-8", "surrogatepass")

    def _unknown_ids(self, char_text: str) -> list[int] | None:
        """Byte-fallback ids of an unknown symbol, or None when they are not all tokens."""
        if not self.byte_fallback:
            return None
        ids = [self.byte_ids.get(b) for b in char_text.encode("utf-8", "surrogatepass")]
        return None if any(i is None for i in ids) else ids

    def tokenize(self, piece: str) -> list[int]:
        if self.ignore_merges:
            whole = self.ids.get(piece)
            if whole is not None:
                return [whole]
        if self.symbol_level:
            ids = self._words.get(piece)
            if ids is None:
                ids = tuple(self._merge_word(piece))
                if len(self._words) >= WORD_CACHE:
                    self._words.clear()
                self._words[piece] = ids
            return list(ids)
        if not self._unknown.search(piece):
            return self.encoder.encode(self._to_bytes(piece))
        out: list[int] = []
        pending_unk = 0  # unknown characters waiting to be emitted (HF adds the unk lazily)
        run: list[str] = []  # known characters since the last emitted unknown
        encode = self.encoder.encode
        for c in piece:
            if c in self.known:
                if pending_unk:
                    out.extend(self._unk(pending_unk))
                    pending_unk = 0
                run.append(c)
                continue
            fallback = self._unknown_ids(c)
            if fallback is None and self.unk_id is None:
                continue  # HF drops it from the word: its neighbours meet and may merge
            if run:
                out.extend(encode(self._to_bytes("".join(run))))
                run = []
            if fallback is not None:
                out.extend(fallback)  # HF adds them at once, before a pending unk
            else:
                if pending_unk and not self.fuse_unk:
                    out.extend(self._unk(pending_unk))
                    pending_unk = 0
                pending_unk += 1
        if run:
            # a pending unk is emitted before the known characters that follow it
            out.extend(encode(self._to_bytes("".join(run))))
        if pending_unk:
            out.extend(self._unk(pending_unk))
        return out

    def _unk(self, count: int) -> list[int]:
        return [self.unk_id] if self.fuse_unk else [self.unk_id] * count

    # ------------------------------------------------------------------ symbol level
    def _merge_word(self, word: str) -> list[int]:
        """HF ``BPE::merge_word`` and ``Word::merge_all`` over ids."""
        symbols: list[int] = []
        pending_unk = 0
        last = len(word) - 1
        for i, c in enumerate(word):
            s = c
            if i and self.prefix:
                s = self.prefix + s
            if i == last and self.suffix:
                s = s + self.suffix
            token_id = self.ids.get(s)
            if token_id is not None:
                if pending_unk:
                    symbols.extend(self._unk(pending_unk))
                    pending_unk = 0
                symbols.append(token_id)
                continue
            fallback = self._unknown_ids(s)
            if fallback is not None:
                symbols.extend(fallback)
            elif self.unk_id is not None:
                if pending_unk and not self.fuse_unk:
                    symbols.extend(self._unk(pending_unk))
                    pending_unk = 0
                pending_unk += 1
        if pending_unk:
            symbols.extend(self._unk(pending_unk))
        merges = self.vocabulary.merges or {}
        while len(symbols) > 1:
            best = None
            for k in range(len(symbols) - 1):
                found = merges.get((symbols[k], symbols[k + 1]))
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], k, found[1])
            if best is None:
                break
            _, k, merged = best
            symbols[k : k + 2] = [merged]
        return symbols
