"""HF ``tokenizers``' Unicode tables, where they disagree with Python's ``unicodedata``.

HF's components use Unicode data of different ages (normalization and StripAccents from
``unicode-normalization-alignments``, about Unicode 11; BertNormalizer and Punctuation from
``unicode_categories``; Lowercase and Digits from Rust's standard library, Unicode 16),
while Python 3.11 has Unicode 14. ``hf_unicode.json`` (written by
``tests/golden/make_hf_unicode.py`` from the real components, every code point probed)
lists only the disagreements, and the helpers here apply them on top of ``unicodedata``:

* :func:`normalize`: characters HF's normalization tables do not know are left alone and
  act as starters (Unicode's stability policy keeps the decompositions of every other
  character the same in both tables, so cutting the text at them is exact);
* :func:`lowercase`, :func:`strips_accent`, :func:`bert_removes`, :func:`bert_nonspacing`,
  :func:`is_numeric`, :func:`is_punctuation`: the per-character verdicts, corrected.

Complexity: one regex search per text for the common case (no such character), then
linear. Exact for the ``tokenizers`` release the table was made with.
"""

from __future__ import annotations

import bisect
import json
import string
import unicodedata
from functools import lru_cache
from pathlib import Path

import regex

TABLE = Path(__file__).with_name("hf_unicode.json")


class CharRanges:
    """Membership in sorted [first, last] code point ranges."""

    def __init__(self, ranges: list[list[int]]) -> None:
        self.starts = [a for a, _ in ranges]
        self.ends = [b for _, b in ranges]
        body = "".join(f"{regex.escape(chr(a))}-{regex.escape(chr(b))}" for a, b in ranges)
        self.regex = regex.compile(f"[{body}]") if ranges else None
        #: no ASCII character is in a range: ASCII text needs no search (one pass in C against 30-50 ms
        #: per MB for the class's search)
        self.ascii_free = not ranges or ranges[0][0] > 127

    def __contains__(self, c: str) -> bool:
        cp = ord(c)
        k = bisect.bisect_right(self.starts, cp) - 1
        return k >= 0 and cp <= self.ends[k]

    def search(self, text: str) -> bool:
        if self.regex is None or (self.ascii_free and text.isascii()):
            return False
        return self.regex.search(text) is not None


@lru_cache(maxsize=1)
def _tables() -> dict:
    data = json.loads(TABLE.read_text(encoding="utf-8"))

    def sets(value):
        if isinstance(value, list):
            return CharRanges(value)
        return {k: sets(v) for k, v in value.items()} if isinstance(value, dict) else value

    tables = {k: sets(v) for k, v in data.items() if k not in ("lowercase", "mapped")}
    tables["lowercase"] = data["lowercase"]
    tables["lowercase_keys"] = CharRanges(sorted([[ord(c), ord(c)] for c in data["lowercase"]]))
    return tables


def normalize(form: str, text: str) -> str:
    """``unicodedata.normalize(form, text)`` as HF's tables normalize it."""
    inert = _tables()["inert"][form]
    if not inert.search(text):
        return unicodedata.normalize(form, text)
    parts = inert.regex.split(text)
    marks = inert.regex.findall(text)
    out = [unicodedata.normalize(form, parts[0])]
    for mark, part in zip(marks, parts[1:]):
        out.append(mark)
        out.append(unicodedata.normalize(form, part))
    return "".join(out)


def lowercase(c: str) -> str:
    """Rust's ``char::to_lowercase`` of one character."""
    return _tables()["lowercase"].get(c) or c.lower()


def has_lowercase_exception(text: str) -> bool:
    return _tables()["lowercase_keys"].search(text)


def strips_accent(c: str) -> bool:
    """Whether HF's StripAccents removes ``c``."""
    table = _tables()["strip_accents"]
    if unicodedata.category(c).startswith("M"):
        return c not in table["keep"]
    return c in table["remove"]


@lru_cache(maxsize=1)
def stripped_accents() -> "re.Pattern":
    """A class of every character :func:`strips_accent` removes (made once: a pass over all code
    points, 0.2 s)."""
    import re

    table = _tables()["strip_accents"]
    category = unicodedata.category
    marks = (c for c in map(chr, range(0x110000)) if category(c)[0] == "M" and c not in table["keep"])
    removed = (chr(cp) for a, b in zip(table["remove"].starts, table["remove"].ends) for cp in range(a, b + 1))
    from .text_pieces import character_class

    return re.compile(character_class({ord(c) for c in (*marks, *removed)} - set(range(0xD800, 0xE000))))


def bert_removes(c: str) -> bool:
    """Whether BertNormalizer's clean_text removes ``c`` (NUL, U+FFFD and 'other' characters)."""
    if c == "\0" or c == "\ufffd":
        return True
    table = _tables()["bert_other"]
    if c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs"):
        return c not in table["keep"]
    return c in table["remove"]


def bert_nonspacing(c: str) -> bool:
    """Whether BertNormalizer's strip_accents removes ``c`` (a nonspacing mark)."""
    table = _tables()["bert_nonspacing"]
    if unicodedata.category(c) == "Mn":
        return c not in table["keep"]
    return c in table["remove"]


def is_numeric(c: str) -> bool:
    """Rust's ``char::is_numeric`` (Digits)."""
    table = _tables()["numeric"]
    if unicodedata.category(c) in ("Nd", "Nl", "No"):
        return c not in table["no"]
    return c in table["yes"]


def is_punctuation(c: str) -> bool:
    """HF's Punctuation test: ASCII punctuation or a Unicode punctuation category."""
    table = _tables()["punctuation"]
    if unicodedata.category(c).startswith("P") or (c.isascii() and c in string.punctuation):
        return c not in table["no"]
    return c in table["yes"]


@lru_cache(maxsize=None)
def char_class(test: str) -> str:
    """A ``regex`` character class of exactly the code points that HF's Digits (``test="numeric"``,
    :func:`is_numeric`) or Punctuation (``"punctuation"``, :func:`is_punctuation`) test accepts, as
    ranges of ``\\U`` escapes: a ``Split`` step that reads as the component does. Making it tests
    every code point (0.4 s), so it is kept under the cache root, keyed by the test, Python's
    Unicode version and the tables; a fresh process reads it back."""
    import hashlib

    from ..cache.files import CacheDamaged, cache_root, discard, read_checked, write_checked

    digest = hashlib.sha256(f"{test} {unicodedata.unidata_version} {string.punctuation}".encode())
    digest.update(TABLE.read_bytes())
    path = cache_root() / "patterns" / f"char_class_{digest.hexdigest()[:24]}.txt"
    try:
        payload = read_checked(path)
        if payload is not None:
            return payload.decode("ascii")
    except (CacheDamaged, UnicodeDecodeError) as exc:
        discard(path, str(exc))
    made = _char_class(test)
    write_checked(path, made.encode("ascii"))
    return made


def _char_class(test: str) -> str:
    accepts = {"numeric": is_numeric, "punctuation": is_punctuation}[test]
    categories = {"numeric": "N", "punctuation": "P"}[test]
    table = _tables()[test]["yes"]
    extra = {cp for a, b in zip(table.starts, table.ends) for cp in range(a, b + 1)}
    extra |= {ord(c) for c in string.punctuation} if test == "punctuation" else set()
    category = unicodedata.category
    points = sorted(cp for cp in range(0x110000) if (category(chr(cp))[0] == categories or cp in extra)
                    and accepts(chr(cp)))
    ranges: list[list[int]] = []
    for cp in points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "[" + "".join(f"\\U{a:08X}" + (f"-\\U{b:08X}" if b > a else "") for a, b in ranges) + "]"
