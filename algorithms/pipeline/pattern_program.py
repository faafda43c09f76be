"""A pre-tokenizer pattern the compiled stage cannot split by hand, turned into a small program.

The six patterns of :mod:`bpebench.algorithms.formats.patterns` have hand-written scanners;
any other pattern a vocabulary carries (a custom tiktoken pattern, an HF ``Split``) used to be
split by the ``regex`` module, 10-20 MB/s. Most such patterns share one shape: an alternation
of branches, each a sequence of quantified character classes, with optional groups of literal
alternatives (``(?i:'s|'t|'re)``), one-class look-aheads (``(?!\\S)``) and ``$``. This module
parses that shape into flat integer tables, from which
:mod:`bpebench.algorithms.pipeline.pretokenize_program` writes numba code; anything else gets
``None`` (and stays on ``regex``).

What each character class means is never interpreted here: its source text is handed back
to ``regex`` itself, which lists the code points it matches (:func:`class_table`). So
``\\p{..}``, POSIX classes, ranges and case-insensitive literals mean exactly what they mean
to ``regex``; only the structure (alternation, sequence, quantifiers, groups) is read here,
and matched with the backtracking engine's rules: branches left to right, greedy quantifiers
backing off one character at a time, lazy ones growing, possessive ones never giving back.

Refused (None): back-references, anchors other than ``$``/``\\Z``, nested groups, groups whose
alternatives are not fixed strings of single characters, repeated groups, look-behind,
inline flags other than ``i``, branches that can match the empty string, more than 32
classes. Complexity of the build: one ``regex`` scan of all code points per class.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..kernels.jit import njit

#: item kinds
CLASS, GROUP, NOT_AHEAD, AHEAD, DOLLAR, END = 0, 1, 2, 3, 4, 5
#: quantifier modes
GREEDY, LAZY, POSSESSIVE = 0, 1, 2
#: an unbounded quantifier's maximum
UNBOUNDED = 1 << 30
MAX_CLASSES = 32
_BLOCK = 256
_N_CODEPOINTS = 0x110000


class Unsupported(Exception):
    """The pattern is outside the shape this module compiles."""


class Program(NamedTuple):
    """The compiled pattern (see :mod:`.pretokenize_program` for how it runs)."""

    branches: np.ndarray  # int32[n_branches, 2]: first item, end item
    items: np.ndarray  # int32[n_items, 6]: kind, class (DOLLAR: a line feed's, or -1), min, max, mode, first alternative (GROUP)
    alternatives: np.ndarray  # int32[n_alternatives + 1]: offsets into ``alternative_classes``
    alternative_classes: np.ndarray  # int32[...]: one class per character of each alternative
    group_alternatives: np.ndarray  # int32[n_items]: how many alternatives a GROUP item has
    stage1: np.ndarray  # int32[0x110000 // 256]: block of each code point's kind
    stage2: np.ndarray  # uint16[n_blocks * 256]: each code point's kind (its set of classes)
    kind_classes: np.ndarray  # uint32[n_kinds]: bit k set = the kind's code points are in class k
    byte_classes: np.ndarray  # uint32[256]: ``kind_classes`` of the ASCII bytes (0 above 127)


# ----------------------------------------------------------------------------- the parser
class _Parser:
    """Recursive descent over the supported subset; classes are kept as source text."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0
        self.classes: list[tuple[str, bool]] = []  # (source, ignore case)

    def peek(self, k: int = 0) -> str:
        return self.text[self.at + k] if self.at + k < len(self.text) else ""

    def class_index(self, source: str, ignore_case: bool) -> int:
        key = (source, ignore_case)
        if key not in self.classes:
            self.classes.append(key)
            if len(self.classes) > MAX_CLASSES:
                raise Unsupported(f"more than {MAX_CLASSES} character classes")
        return self.classes.index(key)

    def parse(self) -> list[list[tuple]]:
        ignore_case = False
        if self.text.startswith("(?i)"):
            ignore_case = True
            self.at = 4
        branches = self.alternation(ignore_case, top=True)
        if self.at != len(self.text):
            raise Unsupported(f"unexpected {self.peek()!r} at {self.at}")
        return branches

    def alternation(self, ignore_case: bool, top: bool) -> list[list[tuple]]:
        branches = [self.sequence(ignore_case, top)]
        while self.peek() == "|":
            self.at += 1
            branches.append(self.sequence(ignore_case, top))
        return branches

    def sequence(self, ignore_case: bool, top: bool) -> list[tuple]:
        items: list[tuple] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.item(ignore_case, top))
        return items

    def item(self, ignore_case: bool, top: bool) -> tuple:
        c = self.peek()
        if c == "(":
            source = self.intersection()
            if source is not None:  # one character in two classes: a class of its own
                index = self.class_index(source, ignore_case)
                return (CLASS, index, *self.quantifier())
            if not top:
                raise Unsupported("a group inside a group")
            return self.group(ignore_case)
        if c == "$":
            self.at += 1
            try:  # the class of a line feed alone, for engines that read ``$`` a character at a time
                line_feed = self.class_index(r"\n", False)
            except Unsupported:
                line_feed = -1
            return (DOLLAR, line_feed)
        if c in "*+?{" and not (c == "{" and not self.quantifier_follows()):
            raise Unsupported(f"a quantifier with nothing to repeat at {self.at}")
        source = self.atom()
        if source == r"\Z":
            return (END,)
        index = self.class_index(source, ignore_case)
        low, high, mode = self.quantifier()
        return (CLASS, index, low, high, mode)

    def intersection(self) -> str | None:
        """``((?=A)(B))`` (or ``(?:(?=A)B)``, groups optional), A and B single classes: one character in
        both, as llama.cpp spells o200k's case classes. Its source ``(?=A)B`` is a class (a character
        matches it alone or not at all); None, with nothing read, for any other group."""
        start = self.at
        try:
            self.expect("(")
            if self.text.startswith("?:", self.at):
                self.at += 2
            self.expect("(?=")
            ahead = self.atom()
            self.expect(")")
            grouped = self.peek() == "("
            if grouped:
                self.expect("(")
            source = self.atom()
            if grouped:
                self.expect(")")
            self.expect(")")
            return f"(?={ahead}){source}"
        except Unsupported:
            self.at = start
            return None

    def expect(self, literal: str) -> None:
        if not self.text.startswith(literal, self.at):
            raise Unsupported(f"expected {literal!r} at {self.at}")
        self.at += len(literal)

    def quantifier_follows(self) -> bool:
        end = self.text.find("}", self.at)
        body = self.text[self.at + 1:end] if end > 0 else ""
        low, comma, high = body.partition(",")
        return end > 0 and (low.isdigit() or (comma and not low)) and (high.isdigit() or not high)

    def atom(self) -> str:
        """The source text of one character class: ``[...]``, an escape, ``.`` or a literal."""
        start = self.at
        c = self.peek()
        if c == "[":
            self.at += 1
            if self.peek() == "^":
                self.at += 1
            if self.peek() == "]":
                self.at += 1
            while self.peek() != "]":
                if self.peek() == "":
                    raise Unsupported("an unclosed character class")
                if self.peek() == "[":
                    raise Unsupported("a set inside a set")
                self.at += 2 if self.peek() == "\\" else 1
            self.at += 1
            return self.text[start:self.at]
        if c == "\\":
            kind = self.peek(1)
            if kind in ("p", "P"):
                if self.peek(2) == "{":
                    end = self.text.find("}", self.at)
                    if end < 0:
                        raise Unsupported("an unclosed \\p{")
                    self.at = end + 1
                else:
                    self.at += 3
            elif kind == "x":
                self.at += 4
            elif kind == "u":
                self.at += 6
            elif kind == "U":
                self.at += 10
            elif kind == "N" and self.peek(2) == "{":
                end = self.text.find("}", self.at)
                if end < 0:
                    raise Unsupported("an unclosed \\N{")
                self.at = end + 1
            elif kind == "Z":
                self.at += 2
            elif kind.isalnum() and kind not in "sSdDwWrntfva":
                raise Unsupported(f"the escape \\{kind}")  # anchors, back-references, ...
            else:
                self.at += 2
            return self.text[start:self.at]
        if c in ")|" or c == "":
            raise Unsupported(f"an empty item at {self.at}")
        if c == "^":
            raise Unsupported("the anchor ^")
        self.at += 1
        return c

    def quantifier(self) -> tuple[int, int, int]:
        c = self.peek()
        if c == "*":
            low, high = 0, UNBOUNDED
            self.at += 1
        elif c == "+":
            low, high = 1, UNBOUNDED
            self.at += 1
        elif c == "?":
            low, high = 0, 1
            self.at += 1
        elif c == "{" and self.quantifier_follows():
            end = self.text.find("}", self.at)
            body = self.text[self.at + 1:end]
            self.at = end + 1
            first, comma, last = body.partition(",")
            low = int(first) if first else 0
            high = (int(last) if last else UNBOUNDED) if comma else low
            if high < low:
                raise Unsupported("a quantifier {m,n} with n < m")
        else:
            return 1, 1, GREEDY
        mode = GREEDY
        if self.peek() == "?":
            mode = LAZY
            self.at += 1
        elif self.peek() == "+":
            mode = POSSESSIVE
            self.at += 1
        if self.peek() in ("*", "+", "?", "{") and (self.peek() != "{" or self.quantifier_follows()):
            raise Unsupported("a quantifier of a quantifier")
        return low, high, mode

    def group(self, ignore_case: bool) -> tuple:
        self.at += 1
        kind = GROUP
        if self.peek() == "?":
            head = self.text[self.at:self.at + 3]
            if head.startswith("?:"):
                self.at += 2
            elif head == "?i:":
                ignore_case = True
                self.at += 3
            elif head.startswith("?!") or head.startswith("?="):
                kind = NOT_AHEAD if head.startswith("?!") else AHEAD
                self.at += 2
            else:
                raise Unsupported(f"the group ({head}")
        if kind != GROUP:
            source = self.atom()
            if self.peek() != ")":
                raise Unsupported("a look-ahead of more than one character class")
            self.at += 1
            return (kind, self.class_index(source, ignore_case))
        alternatives = []
        for branch in self.alternation(ignore_case, top=False):
            if any(item[0] != CLASS or item[2:4] != (1, 1) for item in branch) or not branch:
                raise Unsupported("a group alternative that is not a fixed string of characters")
            alternatives.append([item[1] for item in branch])
        if self.peek() != ")":
            raise Unsupported("an unclosed group")
        self.at += 1
        low, high, mode = self.quantifier()
        if high != 1 or mode == LAZY:
            raise Unsupported("a repeated or lazy group")
        return (GROUP, alternatives, low, mode)


# ----------------------------------------------------------------------------- the class table
@lru_cache(maxsize=1)
def _all_code_points() -> str:
    """Every code point but the surrogates (UTF-8 text never holds one), in order."""
    return "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, _N_CODEPOINTS)))


#: the layout of the class-table files (part of their key)
_TABLE_FORMAT = 2
#: what a class's source text means: ``regex``'s reading (the default), or llama.cpp's
#: (:mod:`.llama_cpp_split`): ``re`` with ASCII classes over the text with every non-ASCII code point
#: collapsed to its category's placeholder, or over the code points themselves ("wide"), non-ASCII
#: whitespace read as ``\v`` in both
MEANINGS = ("regex", "llama.cpp collapsed", "llama.cpp wide")


def class_table(classes: list[tuple[str, bool]], meaning: str = "regex") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every code point's *kind* (the set of classes it is in, as ``meaning`` reads them), as a
    two-stage table of kind numbers, and each kind's class bits (bit k: class k). Kept under the cache
    root (checked bytes, keyed by the classes, the meaning and what defines it: ``regex``'s version, or
    the Unicode data and the module that collapses categories): listing costs 0.1-0.3 s."""
    import hashlib
    import json

    from ..cache.files import CacheDamaged, cache_root, discard, read_checked, write_checked

    key_parts = [_TABLE_FORMAT, meaning, _meaning_version(meaning), classes]
    key = hashlib.sha256(json.dumps(key_parts).encode()).hexdigest()[:24]
    path = cache_root() / "patterns" / f"classes_{key}.bin"
    n_blocks = _N_CODEPOINTS // _BLOCK
    try:
        payload = read_checked(path)
        if payload is not None:
            payload = bytearray(payload)  # writable arrays, as numba's compiled signature expects
            stage1 = np.frombuffer(payload, dtype=np.int32, count=n_blocks)
            n_kinds = int(np.frombuffer(payload, dtype=np.int32, count=1, offset=stage1.nbytes)[0])
            kinds = np.frombuffer(payload, dtype=np.uint32, count=n_kinds, offset=stage1.nbytes + 4)
            stage2 = np.frombuffer(payload, dtype=np.uint16, offset=stage1.nbytes + 4 + kinds.nbytes)
            if (stage2.size % _BLOCK == 0 and stage1.min() >= 0 and stage1.max() < stage2.size // _BLOCK
                    and int(stage2.max()) < n_kinds):
                return stage1, stage2, kinds
            raise CacheDamaged("tables of the wrong shape")
    except (CacheDamaged, ValueError) as exc:
        discard(path, str(exc))
    stage1, stage2, kinds = _list_classes(classes, meaning)
    write_checked(path, stage1.tobytes() + np.int32(len(kinds)).tobytes() + kinds.tobytes() + stage2.tobytes())
    return stage1, stage2, kinds


def _meaning_version(meaning: str) -> str:
    if meaning == "regex":
        import regex

        from .unicode_reference import digest

        return f"{regex.__version__} {digest()}"
    if meaning not in MEANINGS:
        raise ValueError(f"unknown class meaning {meaning!r}")
    import hashlib
    import unicodedata

    from . import llama_cpp_split

    with open(llama_cpp_split.__file__, "rb") as f:
        return f"{unicodedata.unidata_version} {hashlib.sha256(f.read()).hexdigest()[:16]}"


def _list_classes(classes: list[tuple[str, bool]], meaning: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    everything = _all_code_points()
    if meaning == "regex":
        import regex

        from .unicode_reference import reference_code_points

        # code points newer than the files' libraries' Unicode take the class those libraries read
        everything = reference_code_points(everything)

        def compiled(source: str, ignore_case: bool):
            return regex.compile(("(?i)" if ignore_case else "") + f"(?:{source})+")
    else:
        import re
        import warnings

        from .llama_cpp_split import collapsed, whitespace_as_vtab

        # each position holds what llama.cpp's regex reads there (the positions stay the code points')
        everything = collapsed(everything) if meaning == "llama.cpp collapsed" else whitespace_as_vtab(everything)

        def compiled(source: str, ignore_case: bool):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": ECMAScript reads it plainly
                return re.compile(f"(?:{source})+", re.ASCII | (re.IGNORECASE if ignore_case else 0))
    flat = np.zeros(_N_CODEPOINTS, dtype=np.uint32)
    for k, (source, ignore_case) in enumerate(classes):
        bit = np.uint32(1 << k)
        for match in compiled(source, ignore_case).finditer(everything):
            start, end = match.span()
            # positions past the surrogate gap stand for code points 0x800 higher
            lo = start if start < 0xD800 else start + 0x800
            hi = end if end <= 0xD800 else end + 0x800
            if start < 0xD800 < end:
                flat[lo:0xD800] |= bit
                flat[0xE000:hi] |= bit
            else:
                flat[lo:hi] |= bit
    return two_stage(flat)


def two_stage(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stage1, stage2, kinds) of the class bits of every code point ``flat`` (uint32[0x110000]):
    each distinct set of bits a kind (in increasing order), each 256-code-point block of kinds
    stored once (the distinct blocks in increasing lexicographic order, as ``np.unique(axis=0)``
    orders them)."""
    blocks = flat.reshape(-1, _BLOCK)
    return _two_stage_rows(blocks, np.arange(len(blocks)))


def _two_stage_rows(rows: np.ndarray, row_of_block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`two_stage` of the code points whose block ``b`` holds the bits ``rows[row_of_block[b]]``
    (uint32[n, 256], rows may repeat), without spelling out every code point. The distinct rows are
    told apart by their bytes in a dict and only they are sorted: ``np.unique`` with
    ``return_inverse`` over the code points and over the rows took 0.35-0.4 s a table, paid by
    every fresh process that merges a list of ``Split`` steps."""
    kinds = np.unique(rows)
    if len(kinds) > 1 << 16:
        raise Unsupported("more than 65536 kinds of character")
    kind_rows = np.searchsorted(kinds, rows).astype(np.uint16)
    seen: dict[bytes, int] = {}
    first_seen = np.array([seen.setdefault(row.tobytes(), len(seen)) for row in kind_rows], dtype=np.int64)
    distinct = np.frombuffer(b"".join(seen), dtype=np.uint16).reshape(-1, _BLOCK)
    order = np.lexsort(distinct.T[::-1])  # the first column the primary key
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[first_seen][row_of_block].astype(np.int32), distinct[order].ravel(), kinds.astype(np.uint32)


# ----------------------------------------------------------------------------- the program
def _min_length(branch: list[tuple]) -> int:
    total = 0
    for item in branch:
        if item[0] == CLASS:
            total += item[2]
        elif item[0] == GROUP and item[2] > 0:
            total += min(len(alternative) for alternative in item[1])
    return total


def _byte_classes(stage1: np.ndarray, stage2: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """The class bits of each byte read as a character (ASCII; bytes above 127 get none)."""
    table = np.zeros(256, dtype=np.uint32)
    table[:128] = kinds[stage2[int(stage1[0]) * _BLOCK:int(stage1[0]) * _BLOCK + 128]]
    return table


@lru_cache(maxsize=64)
def compile_pattern(pattern: str, meaning: str = "regex") -> Program | None:
    """The program of ``pattern``, or None when it is outside the supported shape; its classes read
    as ``meaning`` says (:data:`MEANINGS`)."""
    parser = _Parser(pattern)
    try:
        branches = parser.parse()
    except (Unsupported, ValueError):
        return None
    if any(_min_length(branch) == 0 for branch in branches):
        return None  # an empty match: findall's rules for those are not reproduced
    try:
        stage1, stage2, kinds = class_table(parser.classes, meaning)
    except Exception:  # noqa: BLE001 - a class regex cannot read alone: leave the pattern to regex
        return None
    rows, alternatives, alternative_classes, counts, spans = [], [0], [], [], []
    for branch in branches:
        first = len(rows)
        for item in branch:
            kind = item[0]
            if kind == CLASS:
                rows.append((CLASS, item[1], item[2], item[3], item[4], 0))
                counts.append(0)
            elif kind == GROUP:
                rows.append((GROUP, 0, item[2], 1, item[3], len(alternatives) - 1))
                counts.append(len(item[1]))
                for alternative in item[1]:
                    alternative_classes.extend(alternative)
                    alternatives.append(len(alternative_classes))
            elif kind in (NOT_AHEAD, AHEAD, DOLLAR):
                rows.append((kind, item[1], 0, 0, GREEDY, 0))
                counts.append(0)
            else:
                rows.append((kind, 0, 0, 0, GREEDY, 0))
                counts.append(0)
        spans.append((first, len(rows)))
    return Program(np.array(spans, dtype=np.int32).reshape(-1, 2), np.array(rows, dtype=np.int32).reshape(-1, 6),
                   np.array(alternatives, dtype=np.int32), np.array(alternative_classes + [0], dtype=np.int32),
                   np.array(counts, dtype=np.int32), stage1, stage2, kinds, _byte_classes(stage1, stage2, kinds))


def class_count(program: Program) -> int:
    """How many classes ``program`` has (the class bits its items and kinds may use)."""
    items = program.items
    referenced = items[np.isin(items[:, 0], (CLASS, NOT_AHEAD, AHEAD, DOLLAR)), 1]
    used = [int(np.bitwise_or.reduce(program.kind_classes.astype(np.int64))).bit_length()]
    if referenced.size:
        used.append(int(referenced.max()) + 1)
    if program.alternatives[-1] > 0:
        used.append(int(program.alternative_classes[:program.alternatives[-1]].max()) + 1)
    return max(used)


def code_point_classes(program: Program) -> np.ndarray:
    """int64[0x110000]: the class bits of every code point under ``program``."""
    # each block's row of kinds gathered whole (8x faster than indexing code point by code point)
    kind = program.stage2.reshape(-1, 256)[program.stage1].reshape(-1)
    return program.kind_classes.astype(np.int64)[kind]


def union_program(programs: list[Program], excluded: list[tuple[int, ...]]) -> Program | None:
    """One program whose branches are those of ``programs``, in order, each program's classes bits of
    their own; a code point that is in some class of a program listed in ``excluded[i]`` is in none
    of program ``i``'s classes. None past :data:`MAX_CLASSES` classes or 65,536 kinds.

    What it is for: HF ``Split`` steps run one after the other, each inside the text the ones before
    it left (``llama_cpp_program``). A step that isolates runs of one class (``\\p{N}{1,3}``) leaves
    stretches with no character of that class, so the steps after it, run in one pass over the
    whole text with its branches first, must neither take such a character nor see it in a
    look-ahead: to them it is where the stretch ends."""
    counts = [class_count(program) for program in programs]
    if sum(counts) > MAX_CLASSES:
        return None
    # worked out per 256-code-point block: the blocks that every program gives the same row share
    # one row of the union (a few hundred, against 4,352 blocks and 1.1 million code points)
    blocks, block_combination = np.unique(np.stack([program.stage1.astype(np.int64) for program in programs],
                                                    axis=1), axis=0, return_inverse=True)
    words = [program.kind_classes.astype(np.int64)[program.stage2.reshape(-1, _BLOCK)[blocks[:, i]]]
             for i, program in enumerate(programs)]
    flat = np.zeros((len(blocks), _BLOCK), dtype=np.int64)
    rows, branches, alternatives, alternative_classes, group_alternatives = [], [], [0], [], []
    class_offset = 0
    for program, own, count, outside in zip(programs, words, counts, excluded):
        for h in outside:
            own = np.where(words[h] != 0, 0, own)
        flat |= own << class_offset
        item_offset, alternative_offset = sum(len(r) for r in rows), len(alternatives) - 1
        items = program.items.astype(np.int64).copy()
        remapped = np.isin(items[:, 0], (CLASS, NOT_AHEAD, AHEAD)) | ((items[:, 0] == DOLLAR) & (items[:, 1] >= 0))
        items[remapped, 1] += class_offset
        items[items[:, 0] == GROUP, 5] += alternative_offset
        rows.append(items)
        branches.append(program.branches.astype(np.int64) + item_offset)
        n_classes = int(program.alternatives[-1])
        alternative_classes.extend((program.alternative_classes[:n_classes].astype(np.int64) + class_offset).tolist())
        alternatives.extend((program.alternatives[1:].astype(np.int64) + alternatives[-1]).tolist())
        group_alternatives.extend(program.group_alternatives.tolist())
        class_offset += count
    try:
        stage1, stage2, kinds = _two_stage_rows(flat.astype(np.uint32), block_combination.reshape(-1))
    except Unsupported:
        return None
    return Program(np.concatenate(branches).astype(np.int32), np.concatenate(rows).astype(np.int32),
                   np.array(alternatives, dtype=np.int32), np.array(alternative_classes + [0], dtype=np.int32),
                   np.array(group_alternatives, dtype=np.int32), stage1, stage2, kinds,
                   _byte_classes(stage1, stage2, kinds))


# ----------------------------------------------------------------------------- HF's Split, Isolated
_GAPS = ("(?:", ")|(?:(?!(?:", "))(?s:.))+")


def with_gaps(pattern: str) -> str | None:
    """A pattern whose ``findall`` gives the pieces of HF's ``Split`` of ``pattern`` with ``Isolated``
    behaviour (its matches, and each stretch of text between two of them as a piece of its own), or
    None where that is not certain or the program compiler cannot take ``pattern`` (the file's split
    then stays with the component pipeline).

    The second branch runs over the characters at which no match of ``pattern`` starts, so it ends
    where the next match starts, as HF's search from the end of the last match does. Exact when
    ``pattern`` cannot match the empty string (which the program compiler refuses: HF and ``findall``
    treat empty matches apart), sets no flag for the whole pattern (the copy inside the look-ahead
    would move it) and refers to no group by number or name (the program compiler refuses those).
    :func:`without_gaps` gives ``pattern`` back, for the compiled split: on text with no stretch
    between matches its pieces are the same, and a text that has one is split by ``regex``."""
    import regex

    if regex.search(r"\(\?[a-zA-Z]+\)", pattern) or compile_pattern(pattern) is None:
        return None
    covering = f"{_GAPS[0]}{pattern}{_GAPS[1]}{pattern}{_GAPS[2]}"
    try:
        regex.compile(covering)
    except (regex.error, RecursionError):
        return None
    return covering


def without_gaps(pattern: str) -> str | None:
    """The pattern :func:`with_gaps` made ``pattern`` from, or None when it did not make it."""
    head, middle, tail = _GAPS
    inner_length = (len(pattern) - len(head) - len(middle) - len(tail)) // 2
    if inner_length <= 0 or not (pattern.startswith(head) and pattern.endswith(tail)):
        return None
    inner = pattern[len(head):len(head) + inner_length]
    return inner if pattern == f"{head}{inner}{middle}{inner}{tail}" else None


# ----------------------------------------------------------------------------- reading a program
def rest_cannot_start_in_class(program, item: int, end_item: int, k: int) -> bool:
    """Whether the items after ``item`` need a first character that no character of class ``k`` is."""
    needed = start_mask(program, item + 1, end_item)
    if needed == ANY_CLASS:
        return False
    words = program.kind_classes.astype(np.int64)
    return not bool((((words >> k) & 1 != 0) & ((words & needed) != 0)).any())


def start_mask(program, first: int, end: int) -> int:
    """The classes a character must be in for the branch to start with it (a superset)."""
    mask = 0
    for item in range(first, end):
        kind, k, low = (int(x) for x in program.items[item][:3])
        if kind == CLASS:
            mask |= 1 << k
            if low > 0:
                return mask
        elif kind == GROUP:
            a0 = int(program.items[item][5])
            for j in range(int(program.group_alternatives[item])):
                mask |= 1 << int(program.alternative_classes[program.alternatives[a0 + j]])
            if low > 0:
                return mask
    return ANY_CLASS


ANY_CLASS = (1 << 32) - 1


@njit(cache=True, inline="always")
def code_point_at(data, i):
    """(the code point of the character at byte ``i`` of valid UTF-8 ``data``, its length in bytes)."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
    if b0 < 0xF0:
        return ((b0 & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F), 3
    return (((b0 & 0x07) << 18) | ((np.int64(data[i + 1]) & 0x3F) << 12)
            | ((np.int64(data[i + 2]) & 0x3F) << 6) | (np.int64(data[i + 3]) & 0x3F)), 4


@njit(cache=True)
def character_kinds(data, stage1, stage2):
    """(each character's kind, each character's first byte offset + the end) of valid UTF-8 text."""
    n_bytes = data.shape[0]
    kinds = np.empty(n_bytes, dtype=np.uint16)
    offsets = np.empty(n_bytes + 1, dtype=np.int64)
    i = 0
    k = 0
    while i < n_bytes:
        cp, length = code_point_at(data, i)
        kinds[k] = stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)]
        offsets[k] = i
        i += length
        k += 1
    offsets[k] = n_bytes
    return kinds[:k], offsets[:k + 1]
