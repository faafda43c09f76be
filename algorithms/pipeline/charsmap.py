"""SentencePiece's precompiled character map: a double-array trie over UTF-8 keys plus their
normalized strings (``normalizer_spec.precompiled_charsmap``; HF's ``Precompiled`` normalizer
carries the same bytes, base64-encoded).

Layout of the blob: a little-endian uint32 ``n`` (the trie's size in bytes), ``n / 4``
uint32 trie units (darts-clone's format), then the normalized strings, each ended by NUL;
a key's value is the offset of its normalized string.

A unit packs: ``has_leaf`` (bit 8), ``value`` (low 31 bits, read at a leaf), ``label``
(low 8 bits, plus bit 31 which no byte label sets) and ``offset`` (bits 10..31,
shifted left by 8 more when bit 9 is set). Walking the trie: from node 0, XOR the
node position with the unit's offset, then with each key byte; the byte is in the trie
when the unit there has that label.

Two ways of using it exist, and both libraries are reproduced:

* SentencePiece (``normalizer.cc``): at each position the *longest* key that is a
  prefix of the rest of the text is replaced; where none is, one character is kept;
* HF (``Precompiled``): per extended grapheme cluster, if the cluster is shorter than
  6 bytes and some key is a prefix of it, the whole cluster becomes the normalized
  string of the *shortest* such key; otherwise each character is looked up alone.

Complexity: a lookup walks at most the key's length; normalizing is O(text * longest key).
Exact (same trie walk as darts-clone).
"""

from __future__ import annotations

import struct

from bpebench.errors import VocabularyError


class CharsMap:
    """A parsed precompiled charsmap."""

    def __init__(self, blob: bytes, *, where: str = "charsmap") -> None:
        if len(blob) < 4:
            raise VocabularyError(f"{where}: precompiled charsmap of {len(blob)} bytes is too short")
        (trie_bytes,) = struct.unpack_from("<I", blob, 0)
        if trie_bytes % 4 or 4 + trie_bytes > len(blob) or trie_bytes == 0:
            raise VocabularyError(f"{where}: precompiled charsmap declares a trie of {trie_bytes} bytes"
                                  f" in a blob of {len(blob)}")
        self.units = struct.unpack_from(f"<{trie_bytes // 4}I", blob, 4)
        self.normalized = blob[4 + trie_bytes :]
        self.where = where
        self._strings: dict[int, str] = {}

    def prefixes(self, data: bytes, start: int = 0) -> list[tuple[int, int]]:
        """(key length, value) of every key that is a prefix of ``data[start:]``, shortest first."""
        units = self.units
        size = len(units)
        unit = units[0]
        pos = (unit >> 10) << ((unit & 0x200) >> 6)
        found = []
        for i in range(start, len(data)):
            byte = data[i]
            if byte == 0:
                break
            pos ^= byte
            if pos >= size:
                break
            unit = units[pos]
            if (unit & 0x800000FF) != byte:
                break
            pos ^= (unit >> 10) << ((unit & 0x200) >> 6)
            if (unit >> 8) & 1:
                if pos >= size:
                    break
                found.append((i + 1 - start, units[pos] & 0x7FFFFFFF))
        return found

    def string(self, value: int) -> str:
        """The normalized string stored at ``value``."""
        text = self._strings.get(value)
        if text is None:
            end = self.normalized.find(b"\0", value)
            raw = self.normalized[value : end if end >= 0 else len(self.normalized)]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise VocabularyError(f"{self.where}: normalized string at {value} is not UTF-8") from None
            self._strings[value] = text
        return text

    def longest(self, data: bytes, start: int) -> tuple[int, str] | None:
        """SentencePiece's rule: (length, replacement) of the longest key at ``start``, or None."""
        found = self.prefixes(data, start)
        if not found:
            return None
        length, value = max(found, key=lambda lv: lv[0])
        return length, self.string(value)

    def shortest(self, chunk: str) -> str | None:
        """HF's rule: the replacement of the shortest key that is a prefix of ``chunk``, or None."""
        found = self.prefixes(chunk.encode("utf-8"))
        return self.string(found[0][1]) if found else None
