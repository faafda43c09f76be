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

Most text holds no key: :meth:`CharsMap.screen` finds the characters at which one may start, so a
normalizer copies the text between them whole and looks up only there. It is read off the trie,
level by level over the characters that lead on from the root: a character is a stop when it is a
key that begins longer keys, or the second character of a key whose first is a key of nothing
alone (``e`` + U+0301: the key starts one character before that stop). A key of one character that
begins no other becomes its string by ``str.translate`` (a line feed, a full-width letter).

Complexity: a lookup walks at most the key's length; normalizing is O(text * longest key) at the
stops, O(text) in ``re``'s scan elsewhere. Exact (same trie walk as darts-clone).
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

import numpy as np

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

    def screen(self) -> "Screen | None":
        """Where keys may start (see the module's docstring), or None when a key ends inside a
        character (no screen: every position is looked up); made once."""
        if not hasattr(self, "_screen"):
            self._screen = _screen_of(self)
        return self._screen

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


class Screen(NamedTuple):
    """Where a charsmap key may start, for a scan by ``re``, and the characters that need no scan."""

    stops: re.Pattern  # finds each character at which, or one before which, a key may start
    seconds: frozenset  # stops at which a key would start one character before (after an ASCII one)
    table: dict  # for ``str.translate``: each character that is a key of its own and begins no other
    keys: re.Pattern  # finds ``stops`` and the characters of ``table``: every character a key may touch
    firsts: frozenset  # characters that begin keys of two characters or more but are none
    lone: frozenset  # ``seconds`` that begin no key: a stop only right after one of ``firsts``
    in_table: re.Pattern  # finds the characters of ``table``

    def translated(self, run: str) -> str:
        """``run`` with each character of ``table`` replaced by its string: ``str.translate`` for ASCII
        (a byte table), else a substitution at each one (``str.translate`` looks a mapping up for
        every character of other text: 40 ns a character)."""
        if run.isascii():
            return run.translate(self.table)
        table = self.table
        return self.in_table.sub(lambda m: table[ord(m.group())], run)

    def next_stop(self, pattern: re.Pattern, text: str, i: int) -> int:
        """Where in ``text``, from ``i`` on, the next character of ``pattern`` is (``stops`` or
        ``keys``) at which a key may start, or before which one may (``len(text)`` if none)."""
        lone, firsts = self.lone, self.firsts
        at = i
        while True:
            m = pattern.search(text, at)
            if m is None:
                return len(text)
            j = m.start()
            # the second character of a key matters after the first only (at ``i``, no key started before it)
            if text[j] not in lone or (j > i and text[j - 1] in firsts):
                return j
            at = j + 1


def _offset(units: np.ndarray) -> np.ndarray:
    return (units >> 10) << ((units & 0x200) >> 6)


def _next_chars(units: np.ndarray, nodes: np.ndarray):
    """Every character whose UTF-8 leads on from one of ``nodes``: (index of its node, code point,
    the node after it, whether a key ends with it; empty arrays for none), or None when a key ends
    inside a character."""
    owner = np.arange(len(nodes))
    pos = nodes.astype(np.int64)
    value = np.zeros(len(nodes), dtype=np.int64)
    need = np.full(len(nodes), -1, dtype=np.int64)  # continuation bytes still to read (-1: the lead)
    done = [(owner[:0], value[:0], pos[:0], np.zeros(0, dtype=bool))]
    while len(pos):
        row, label = np.nonzero(_children(units, pos))
        label = label.astype(np.int64) + 1
        at = pos[row] ^ label
        unit = units[at]
        owner, value, need = owner[row], value[row], need[row]
        pos = at ^ _offset(unit)
        leaf = ((unit >> 8) & 1) == 1
        lead = need < 0
        # a lead byte sets how many continuation bytes follow; no key starts with a continuation
        # byte at a character of valid UTF-8, so such paths are dropped
        count = np.select([label < 0x80, label >= 0xF8, label >= 0xF0, label >= 0xE0, label >= 0xC0], [0, -2, 3, 2, 1], -2)
        bits = np.select([label < 0x80, label >= 0xF0, label >= 0xE0], [label, label & 7, label & 0xF], label & 0x1F)
        keep = np.where(lead, count >= 0, (label & 0xC0) == 0x80)
        value = np.where(lead, bits, (value << 6) | (label & 0x3F))
        need = np.where(lead, count, need - 1)
        if (keep & leaf & (need > 0)).any():
            return None
        complete = keep & (need == 0)
        done.append((owner[complete], value[complete], pos[complete], leaf[complete]))
        going = keep & (need > 0)
        owner, value, need, pos = owner[going], value[going], need[going], pos[going]
    return tuple(np.concatenate(parts) for parts in zip(*done))


def _children(units: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """bool[len(nodes), 255]: whether each byte 1..255 leads on from each node."""
    labels = np.arange(1, 256, dtype=np.int64)
    at = nodes[:, None] ^ labels[None, :]
    inside = at < len(units)
    return inside & ((units[np.where(inside, at, 0)] & 0x800000FF) == labels[None, :])


def _class_of(points) -> str:
    """A character class of ``re`` for the code points ``points``. Every character past U+FFFF is in
    it when one is (a stop more is a lookup more, never a wrong one): ``re`` tests a class of BMP
    characters with one table lookup, one with a range past it range by range (117 against 8 ns a
    character)."""
    from .text_pieces import character_class

    bmp = {p for p in points if p <= 0xFFFF}
    if len(bmp) == len(points):
        return character_class(bmp)
    return "[" + (character_class(bmp)[1:-1] if bmp else "") + "\U00010000-\U0010ffff]"


def _screen_of(charsmap: CharsMap) -> Screen | None:
    units = np.array(charsmap.units, dtype=np.int64)
    # every character a key starts with (keys are whole characters), the node after it, whether it is a key
    found = _next_chars(units, _offset(units[:1]))
    if found is None:
        return None
    _, points, node, whole = found
    longer = _children(units, node).any(axis=1)
    # a character that only begins longer keys (a letter before a combining mark) is no stop: the
    # character after it, the key's second, is, and the key starts one before it
    firsts = ~whole
    after = _next_chars(units, node[firsts])
    if after is None:
        return None
    seconds = set(after[1].tolist())
    # a key of its own that begins no longer one: what it becomes depends on it alone
    table = {}
    for point, at in zip(points[whole & ~longer].tolist(), node[whole & ~longer].tolist()):
        norm = charsmap.string(int(units[at]) & 0x7FFFFFFF)
        if point not in seconds and "  " not in norm:
            table[point] = norm
    stops = set(points[~firsts].tolist()) - set(table) | seconds
    return Screen(re.compile(_class_of(stops)), frozenset(map(chr, seconds)), table,
                  re.compile(_class_of(stops | set(points[whole].tolist()))), frozenset(map(chr, points[firsts].tolist())),
                  frozenset(map(chr, seconds - set(points.tolist()))), re.compile(_class_of(set(table))))
