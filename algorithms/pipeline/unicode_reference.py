"""Character classes as the files' own libraries read them, where ``regex`` reads newer Unicode.

Pre-tokenizer patterns are run with the ``regex`` module, which follows the newest Unicode (17.0
here); tiktoken's engine and HF ``tokenizers``' Oniguruma follow an older one, the same in both (16.0
here). Between the two, 4,803 code points were assigned (CJK Extension J, new scripts, letters,
marks, digits and symbols: unassigned, ``Cn``, for the libraries) and U+0295 moved from ``Ll`` to
``Lo``. A text holding one of them split differently from tiktoken (``"x \\u088f's"``: ``regex``
reads U+088F as a letter that takes the contraction; tiktoken reads an unassigned character and
splits ``'`` from ``s``).

``unicode_reference.json`` (written by ``tests/golden/make_unicode_reference.py`` from the real
libraries, every code point probed) lists those code points with the libraries' category. Each is
given a *stand-in*: a code point of the same UTF-8 length that ``regex`` reads in that category
(for ``Cn`` a code point ``regex`` leaves unassigned), which matches none of the contraction
letters case-insensitively. Then:

* the class tables of every compiled pre-tokenizer are built over the string of all code points with
  the stand-ins put in (:func:`reference_code_points`), so each of those code points gets its
  stand-in's classes;
* a split that runs ``regex`` on the text itself runs it on :func:`reference_text` (the stand-ins put
  in, positions and UTF-8 lengths unchanged) and takes the pieces from the original text
  (:func:`whole_matches`, or HF's spans in ``text_pieces``);
* an added token's ``single_word`` test reads its neighbours through :func:`reference_char`.

Complexity: linear; ``str.isascii`` (C, one pass) for ASCII text, a table lookup per character for
the rest, a ``str.translate`` only for a text that holds one of those code points. Exact for the
libraries' releases the table was made with; GGUF files keep llama.cpp's own tables.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("unicode_reference.json")
#: letters whose case-insensitive forms contraction patterns match (``(?i:'s|'t|...)``)
_CONTRACTION_LETTERS = "sdmtlvre"


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def digest() -> str:
    """A short digest of the table (part of the keys of cached class tables)."""
    import hashlib

    return hashlib.sha256(TABLE.read_bytes()).hexdigest()[:16]


def _utf8_length(cp: int) -> int:
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


@lru_cache(maxsize=1)
def translation() -> dict[int, int]:
    """Code point -> its stand-in, for every code point the table lists."""
    import regex

    fold = regex.compile(f"(?i:[{_CONTRACTION_LETTERS}])")
    differing = {cp for first, last, _ in _data()["differ"] for cp in range(first, last + 1)}
    stand_ins: dict[tuple[str, int], int] = {}

    def stand_in(category: str, length: int) -> int:
        key = (category, length)
        if key not in stand_ins:
            low = (0, 0x80, 0x800, 0x10000)[length - 1]
            high = (0x80, 0x800, 0x10000, 0x110000)[length - 1]
            pattern = regex.compile(rf"\p{{{category}}}")
            for cp in range(high - 1, low - 1, -1):  # the last ones: noncharacters for Cn
                c = chr(cp)
                if (cp not in differing and not 0xD800 <= cp <= 0xDFFF and pattern.fullmatch(c)
                        and not fold.fullmatch(c)):
                    stand_ins[key] = cp
                    break
            else:  # pragma: no cover - every length has unassigned code points
                raise RuntimeError(f"no stand-in of {length} bytes in {category}")
        return stand_ins[key]

    return {cp: stand_in(category, _utf8_length(cp))
            for first, last, category in _data()["differ"] for cp in range(first, last + 1)}


@lru_cache(maxsize=1)
def _listed():
    """bool[0x110000]: the code points the table lists."""
    import numpy as np

    listed = np.zeros(0x110000, dtype=bool)
    listed[list(translation())] = True
    return listed


@lru_cache(maxsize=1)
def _listed_chars() -> frozenset:
    return frozenset(map(chr, translation()))


def reference_text(text: str) -> str | None:
    """``text`` with each listed code point replaced by its stand-in, or None when it holds none
    (the common case: no copy). The screen reads the text as UTF-32 through a table of the listed
    code points (1.7-3.5 ms per MB; a search of their class with ``regex`` or ``re`` took 22-59)."""
    if text.isascii():
        return None
    if len(text) < 256:  # a piece: a set's look at each character costs less than the arrays
        return text.translate(translation()) if not _listed_chars().isdisjoint(text) else None
    import numpy as np

    code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not _listed()[code_points].any():
        return None
    return text.translate(translation())


def reference_char(c: str) -> str:
    """The character ``c``, or its stand-in when the table lists it."""
    return chr(translation().get(ord(c), ord(c)))


def whole_matches(compiled, text: str, **kwargs) -> list[str]:
    """The whole matches of the ``regex`` pattern ``compiled`` in ``text``, in order, the characters
    read as the libraries read them (``kwargs`` go to ``findall``/``finditer``)."""
    read = reference_text(text)
    if read is None and compiled.groups == 0:
        return compiled.findall(text, **kwargs)
    # findall would return the groups; with stand-ins in, the pieces are cut from the text itself
    return [text[m.start():m.end()] for m in compiled.finditer(read or text, **kwargs)]


def reference_code_points(everything: str) -> str:
    """``everything`` (a string of code points, as class tables are built over) with the stand-ins
    put in."""
    return everything.translate(translation())
