r"""Regex lists, compiled: every regex a generated numba matcher, run on the pieces of the one before.

Two kinds of file split text with a list of regexes: llama.cpp's pre-tokenizer table, and HF
``tokenizer.json`` files whose pre-tokenizer is a ``Sequence`` of ``Split`` steps with ``Isolated``
behaviour (DeepSeek-V3's and V4's; :func:`.hf_pipeline.split_list` reads them). Both keep the text
between matches as pieces and run each regex inside the pieces of the one before.

The types of llama.cpp's pre-tokenizer table that have no hand-written twin (DeepSeek-V3's,
DeepSeek-LLM's, Falcon's, StarCoder's, BLOOM's, ... :mod:`.llama_cpp_fast` has the others) were
split by the emulation of :mod:`.llama_cpp_split`: ``re`` over the collapsed text, one list of
Python spans per regex (1-8 MB/s). Here each regex of the list, as the emulation translates it,
becomes a pattern program (:mod:`.pattern_program`) whose classes are read as llama.cpp reads them
(``meaning="llama.cpp collapsed"`` or ``"llama.cpp wide"``: ``re`` with ASCII classes over each
code point's category placeholder, or over the code point itself, non-ASCII whitespace as ``\v``),
and the generated matcher of :mod:`.pretokenize_program` writes its branches. What differs from
``findall`` is the loop around them, generated here for each regex of the list:

* it runs inside each piece the regex before it left, the piece's end read as the end of the
  text (look-aheads and ``\Z`` see it there, as ``re`` sees the end of the slice);
* a position where no branch matches starts a gap, and the gap up to the next match is a piece
  of its own (llama.cpp keeps the text between matches).

A list's generated module is also compiled ahead of time (:mod:`.aot_lists`, once per list, in the
background), so later processes split without importing numba. One call per text splits it with
every regex of the list. One table gives every code point a kind
for the whole list (:func:`list_tables`: the classes it is in, for each regex; 3-28 kinds for the
lists of the table), so a text is decoded and classed once; an ASCII text's bytes are its codes,
with no pass at all. Both are one byte a character, so numba compiles each regex's matcher once. A
regex that no character of the text can start a match of (the Han runs of DeepSeek-V3's list on
English) is skipped. Leading regexes that each isolate runs of one class (DeepSeek-V3's digits and
Han runs, StarCoder's digits) run in one pass with the regex after them (:func:`_merged`): its
classes leave their characters out, so such a character ends a stretch for it, as when they run in
turn (DeepSeek-V3's list on prose: 3.9 -> 2.4 ms per MB).

llama.cpp's hand-written splitters that are no regex (Kimi-K2's, and the digit grouping of AFMoE
and tiny_aya) are ported as numba functions here (:func:`kimi_k2`, :func:`digit_groups`), from
the emulation's Python, quirks included; they read llama.cpp's categories (letter, number,
whitespace, Han: :func:`category_bits`). Not compiled (the emulation keeps them): a list with a
regex outside the program's shape (nested groups, a look-ahead of several classes: EXAONE-MoE's,
Chameleon's and SuperBPE's).

A regex that can start at most ASCII characters (a list's word regex, :func:`_mostly_starts`) also
gets a transducer (:mod:`.pretokenize_transducer`) of itself or any one character: an ASCII piece of
:data:`TRANSDUCED_MIN` characters or more is split by it with one table lookup a character, and
its one-character pieces where the regex has no match are joined into the gaps they are
(:func:`generated_source`). DeepSeek-V3's word regex on prose: 5.9 -> 3.0 ms per MB.

An HF list (:meth:`ListSplitter.of_splits`) reads its regexes as the single-``Split`` path does
(``meaning="regex"``, after :func:`.text_pieces.onig_regex`), and its reference is ``regex`` with
each step's :func:`.pattern_program.with_gaps` (:func:`_isolated_spans`).

Complexity: per regex, O(branches x piece length) for each piece (a greedy run that must give
back costs one retry per character), as the generated matcher; O(piece length) through a
transducer, plus the branches at each one-character piece that no branch surely matches. Exact with respect to the
emulation (and so to llama.cpp, as far as the emulation is): the same regexes, the same classes,
the same loop, tested on drawn text and on every type's hard strings
(``tests/test_llama_cpp_program.py``). An HF list gives HF ``tokenizers``' ids (``tests/test_hf_split_list.py``).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..formats.llama_cpp_pre import PRE_TYPES
from ..kernels.jit import njit
from .pattern_program import ANY_CLASS, CLASS, code_point_at, compile_pattern, start_mask


class Step(NamedTuple):
    """One regex of a list, compiled."""

    regex: str  # as llama.cpp writes it
    pattern: str  # as the emulation runs it (``re`` syntax); the splitter's name for a hand-written one
    meaning: str  # how its classes read (``pattern_program.MEANINGS``), or "hand-written"
    program: object  # its ``pattern_program.Program``; None for a hand-written one (it reads :func:`category_bits`)
    # (the program of the regex or any one character, its transducer), when it has one
    covering: tuple | None = None


#: the class bits of :func:`category_bits`
LETTER, NUMBER, SPACE, HAN = 1, 2, 4, 8


def compiled_steps(pre_type: str) -> tuple[Step, ...] | None:
    """The compiled regexes of llama.cpp's type ``pre_type``, or None when one of them does not
    compile (or is a hand-written splitter)."""
    spec = PRE_TYPES.get(pre_type)
    return None if spec is None else _compiled_list(spec.regexes)


def category_bits() -> np.ndarray:
    """uint32[0x110000]: every code point's llama.cpp category as class bits, the classes the
    hand-written splitters read: :data:`LETTER`, :data:`NUMBER`, :data:`SPACE` (what the emulation
    collapses to ``\v``), :data:`HAN` (``llama_cpp_split.is_han``)."""
    from .llama_cpp_split import _LETTER, _NUMBER, _VTAB, category_codes, is_han

    codes = category_codes()
    flat = ((codes == _LETTER) * LETTER | (codes == _NUMBER) * NUMBER | (codes == _VTAB) * SPACE).astype(np.uint32)
    flat[np.fromiter((is_han(c) for c in range(len(flat))), dtype=bool, count=len(flat))] |= HAN
    return flat


class ListTables(NamedTuple):
    """One kind table for all the regexes of a list: every code point's kind (the classes it is in,
    for each regex) and, for each regex, the class bits of each kind and of each ASCII byte."""

    stage1: np.ndarray  # int32[0x110000 >> 8]: block of each code point's kind
    stage2: np.ndarray  # uint8[n_blocks * 256]: each code point's kind
    ascii_seen: np.ndarray  # uint8[256]: 1 for the ASCII bytes (every kind an ASCII text may hold)
    kind_classes: tuple  # per regex, uint32[n_kinds]
    byte_classes: tuple  # per regex, uint32[256] (0 above 127)


def list_tables(steps: tuple[Step, ...]) -> ListTables:
    """The :class:`ListTables` of ``steps``: a text's kinds are read once for all its regexes (and an
    ASCII text's bytes are its codes). Kept in the cache root (0.1-0.5 s to make)."""
    import hashlib
    import unicodedata

    from ..cache.files import cache_root, read_or_make
    from . import llama_cpp_split
    from .pretokenize_program import _own_digest

    n_steps = len(steps)
    n_blocks = 0x110000 >> 8
    # what the tables are made from: the steps, the modules that class characters for them (the
    # program's, llama.cpp's categories) and this one, the Unicode data
    with open(llama_cpp_split.__file__, "rb") as f:
        categories = hashlib.sha256(f.read()).hexdigest()
    key = hashlib.sha256(repr([_own_digest(), _module_digest(), categories, unicodedata.unidata_version,
                               [(s.pattern, s.meaning) for s in steps]]).encode()).hexdigest()[:24]

    def make() -> bytes:
        points = np.arange(0x110000)
        bits = []
        combined = np.zeros(len(points), dtype=np.int64)
        for step in steps:
            table = step.program
            if table is None:
                bits.append(category_bits().astype(np.int64))
            else:
                kind = table.stage2[(table.stage1[points >> 8].astype(np.int64) << 8) | (points & 0xFF)]
                bits.append(table.kind_classes[kind].astype(np.int64))
            combined = np.unique((combined << 32) | bits[-1], return_inverse=True)[1].ravel()
        n_kinds = int(combined.max()) + 1
        if n_kinds > 256:
            raise ValueError("more than 256 kinds of character")
        kind_classes = np.zeros((n_steps, n_kinds), dtype=np.uint32)
        byte_classes = np.zeros((n_steps, 256), dtype=np.uint32)
        for j in range(n_steps):
            kind_classes[j, combined] = bits[j]
            byte_classes[j, :128] = bits[j][:128]
        blocks, stage1 = np.unique(combined.astype(np.uint8).reshape(-1, 256), axis=0, return_inverse=True)
        return (np.int32(n_kinds).tobytes() + stage1.astype(np.int32).ravel().tobytes() + kind_classes.tobytes()
                + byte_classes.tobytes() + blocks.astype(np.uint8).tobytes())

    def split(payload: bytes) -> ListTables:
        n_kinds = int(np.frombuffer(payload, dtype=np.int32, count=1)[0])
        stage1 = np.frombuffer(payload, dtype=np.int32, count=n_blocks, offset=4)
        at = 4 + stage1.nbytes
        kind_classes = np.frombuffer(payload, dtype=np.uint32, count=n_steps * n_kinds, offset=at)
        at += kind_classes.nbytes
        byte_classes = np.frombuffer(payload, dtype=np.uint32, count=n_steps * 256, offset=at)
        stage2 = np.frombuffer(payload, dtype=np.uint8, offset=at + byte_classes.nbytes)
        ascii_seen = np.zeros(256, dtype=np.uint8)
        ascii_seen[:128] = 1
        return ListTables(stage1, stage2, ascii_seen, tuple(kind_classes.reshape(n_steps, n_kinds)),
                          tuple(byte_classes.reshape(n_steps, 256)))

    def valid(payload: bytes) -> bool:
        try:
            tables = split(payload)
        except ValueError:
            return False
        return (0 < len(tables.kind_classes[0]) <= 256 and len(tables.stage2) % 256 == 0
                and int(tables.stage1.min()) >= 0 and int(tables.stage1.max()) < len(tables.stage2) // 256
                and int(tables.stage2.max()) < len(tables.kind_classes[0]))

    path = cache_root() / f"regex_list_{key}.bin"
    return split(bytearray(read_or_make(path, make, valid, "llama.cpp list table")))


@lru_cache(maxsize=None)
def _compiled_list(regexes: tuple[str, ...]) -> tuple[Step, ...] | None:
    from .llama_cpp_split import (AFMOE_DIGITS, KIMI_K2, TINY_AYA_DIGITS, collapse_regex, ecmascript_to_python,
                                  uses_categories)

    if not regexes:
        return None
    steps = []
    for regex in regexes:
        if regex in (KIMI_K2, AFMOE_DIGITS, TINY_AYA_DIGITS):
            name = "kimi_k2" if regex == KIMI_K2 else "digit_groups"
            steps.append(Step(regex, name, "hand-written", None))
            continue
        on_collapsed = uses_categories(regex)
        if on_collapsed and any(ord(c) >= 128 for c in regex):
            return None  # llama.cpp refuses it (the emulation says so)
        pattern = ecmascript_to_python(collapse_regex(regex) if on_collapsed else regex)
        meaning = "llama.cpp collapsed" if on_collapsed else "llama.cpp wide"
        program = compile_pattern(pattern, meaning)
        if program is None:
            return None
        steps.append(Step(regex, pattern, meaning, program))
    return tuple(steps)


#: the share of printable ASCII characters (and tab, line feed, carriage return) at which a step's
#: regex must be able to start for its transducer to be used: each character where it cannot is a
#: piece of the transducer's own, looked at again (``\\p{N}{1,3}`` on prose: 1.2 -> 30 ms per MB)
COVERING_SHARE = 0.75


def _sure_starts(program) -> np.ndarray:
    """uint8[128]: 1 for an ASCII character at which some branch of ``program`` surely matches: a
    branch of class items only, one of them taken exactly once and holding the character, the others
    optional and none possessive (so backtracking always finds them empty). The transducer's
    one-character pieces at such characters are matches, with no branch to run."""
    from .pattern_program import CLASS, POSSESSIVE

    sure = np.zeros(128, dtype=np.uint8)
    for first, end in program.branches.tolist():
        items = [tuple(int(x) for x in program.items[i][:5]) for i in range(first, end)]
        if not items or any(kind != CLASS or mode == POSSESSIVE for kind, _, _, _, mode in items):
            continue
        taken = [item for item in items if item[2] > 0]
        if len(taken) != 1 or taken[0][2] != 1:
            continue
        k = taken[0][1]
        sure |= ((program.byte_classes[:128].astype(np.int64) >> k) & 1).astype(np.uint8)
    return sure


def _mostly_starts(step: Step) -> bool:
    """Whether the regex of ``step`` can start at :data:`COVERING_SHARE` of ASCII text's characters."""
    codes = [9, 10, 13, *range(0x20, 0x7F)]
    mask = _start_bits(step)
    return sum((int(step.program.byte_classes[c]) & mask) != 0 for c in codes) >= COVERING_SHARE * len(codes)


def _with_covering(step: Step) -> Step:
    """``step`` with the program and transducer of its regex or any one character (``P|[\\s\\S]``),
    when the transducer takes it (:func:`generated_source` splits long pieces with it)."""
    from .pretokenize_transducer import transducer_of

    if step.program is None or not _mostly_starts(step):
        return step
    covering = compile_pattern(f"{step.pattern}|[\\s\\S]", step.meaning)
    transducer = None if covering is None else transducer_of(covering)
    return step if transducer is None else step._replace(covering=(covering, transducer))


def _isolates_one_class(step: Step) -> bool:
    """Whether ``step``'s regex is one class run that takes at least one character (``\\p{N}{1,3}``,
    ``[\\r\\n]``, ``[一-龥]+``): its matches then cover every character of its class, and nothing else."""
    program = step.program
    if program is None or len(program.branches) != 1:
        return False
    first, end = (int(x) for x in program.branches[0])
    if end - first != 1:
        return False
    kind, _, low, high = (int(x) for x in program.items[first][:4])
    return kind == CLASS and low == 1 and high >= 1


def _merged(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """``steps`` with its leading steps that isolate one class each (:func:`_isolates_one_class`)
    and the step after them run as one (:func:`_merged_step`), when they merge; else ``steps``.

    One pass instead of several: each step of a list runs inside the text the ones before it left,
    so DeepSeek-V3's digits and Han runs cost two passes before its word regex runs in the gaps
    (3.9 ms per MB of prose in all, the word regex alone 2.2). A class-run step's matches are every
    character of its class, cut into runs, so the steps after it see stretches free of that class.
    Their branches after its branch, over the whole text, with their classes taking no character of
    it, find the same pieces: a look-ahead sees such a character as the stretch's end (``(?!\\S)``
    holds, ``(?=X)`` fails), and a branch cannot run into it. ``$`` and ``\\Z`` are where a stretch
    ends as well, so a step with either is not merged."""
    from .pattern_program import DOLLAR, END

    k = 0
    while k < len(steps) and _isolates_one_class(steps[k]):
        k += 1
    follower = steps[k] if k < len(steps) else None
    if follower is not None and (follower.program is None
                                 or np.isin(follower.program.items[:, 0], (DOLLAR, END)).any()):
        follower = None
    head = steps[:k] + ((follower,) if follower is not None else ())
    merged = _merged_step(head) if len(head) > 1 else None
    return steps if merged is None else (merged, *steps[len(head):])


def _merged_step(head: tuple[Step, ...]) -> Step | None:
    """One step that splits as the steps ``head`` (class-run steps, then any step) in turn, with its
    transducer of the regex or any one character when the merged regex takes one; None when the
    merged program has too many classes or kinds."""
    from .pattern_program import compile_pattern, union_program
    from .pretokenize_transducer import transducer_of

    programs = [step.program for step in head]
    excluded = [tuple(range(i)) for i in range(len(head))]  # every class-run step before it
    program = union_program(programs, excluded)
    if program is None:
        return None
    pattern = "merged: " + " ; ".join(f"{step.meaning}: {step.pattern}" for step in head)
    step = Step(" ; ".join(s.regex for s in head), pattern, "merged", program)
    if not _mostly_starts(step):
        return step
    # its regex or any one character: the last branch takes what no other does, anywhere
    covering = union_program([*programs, compile_pattern(r"[\s\S]", "regex")], [*excluded, ()])
    transducer = None if covering is None else transducer_of(covering)
    return step if transducer is None else step._replace(covering=(covering, transducer))


@lru_cache(maxsize=None)
def _hf_list(regexes: tuple[str, ...]) -> tuple[Step, ...] | None:
    """The steps of HF ``Split`` regexes (Oniguruma's syntax, read as ``regex`` reads them once
    :func:`.text_pieces.onig_regex` has rewritten them), or None when one does not compile or has no
    ``with_gaps`` reference (a flag set for the whole pattern)."""
    from .pattern_program import with_gaps
    from .text_pieces import onig_regex

    if not regexes:
        return None
    steps = []
    for regex in regexes:
        try:
            pattern = onig_regex(regex)
        except ValueError:  # a class Oniguruma reads that ``regex`` cannot
            return None
        program = compile_pattern(pattern, "regex")
        if program is None or with_gaps(pattern) is None:
            return None
        steps.append(Step(regex, pattern, "regex", program))
    return tuple(steps)


# ----------------------------------------------------------------------------- the generated code
#: the arguments of the transducer's split (``pretokenize_transducer.split_arguments``)
_TRANSDUCER_ARGUMENTS = 12
#: a piece of at least this many characters is split by a step's transducer, a shorter one by its
#: branches (a call of the transducer costs about as much as splitting 32 characters)
TRANSDUCED_MIN = 128


def _dispatch_lines(j: int, program, indent: str) -> list[str]:
    """Lines setting ``e`` to the end of the first branch of step ``j`` that matches at ``p`` (or -1)."""
    lines = [f"{indent}w = classes[codes[p]]", f"{indent}e = -1"]
    for b, (first, end) in enumerate(program.branches.tolist()):
        guard = "" if b == 0 else "e < 0 and "
        lines += [f"{indent}if {guard}(w & {start_mask(program, first, end)}) != 0:",
                  f"{indent}    e = _r{j}_branch_{b}(codes, classes, n, p, False)"]
    return lines


def _piece_lines(j: int, program, indent: str) -> list[str]:
    """Lines splitting the piece ``a:n`` by the branches of step ``j`` into ``ends[m:]``: its matches,
    and the text between them as pieces."""
    return [f"{indent}p = a",
            f"{indent}gap = a  # where the text no match covers started",
            f"{indent}while p < n:",
            *_dispatch_lines(j, program, indent + "    "),
            f"{indent}    if e > p:",
            f"{indent}        if gap < p:",
            f"{indent}            ends[m] = p",
            f"{indent}            m += 1",
            f"{indent}        ends[m] = e",
            f"{indent}        m += 1",
            f"{indent}        p = e",
            f"{indent}        gap = e",
            f"{indent}    else:",
            f"{indent}        p += 1",
            f"{indent}if gap < n:",
            f"{indent}    ends[m] = n",
            f"{indent}    m += 1"]


def generated_source(steps: tuple[Step, ...]) -> str:
    """A module of numba functions that split as the list ``steps``: each regex's branches
    (:func:`.pretokenize_program._item_code`), a loop that runs them inside each piece keeping
    gaps, and ``split_utf8`` chaining the regexes.

    A step with a transducer (``Step.covering``: its regex or any one character, ``P|[\\s\\S]``)
    splits an ASCII piece of :data:`TRANSDUCED_MIN` characters or more with it: the pieces of that
    ``findall`` are the regex's matches and one-character pieces where it has none, which are the
    gap's characters; a one-character piece where no branch matches is joined to the gap before it.
    (On other text the transducer decodes each piece again: no faster than the branches.)
    """
    from .pretokenize_program import _item_code, _own_digest

    lines = ["# generated by bpebench.algorithms.pipeline.llama_cpp_program for a regex list",
             *(f"# {step.meaning}: {step.pattern!r}" for step in steps),
             f"# beside {_own_digest()} {_module_digest()}",
             "import numpy as np", "from numba import njit", "",
             "from bpebench.algorithms.pipeline.llama_cpp_program import decode as _decode, kinds_of as _kinds_of",
             "from bpebench.algorithms.pipeline.llama_cpp_program import present as _present",
             "from bpebench.algorithms.pipeline.llama_cpp_program import digit_groups as _digit_groups",
             "from bpebench.algorithms.pipeline.llama_cpp_program import kimi_k2 as _kimi_k2",
             "from bpebench.algorithms.pipeline.pretokenize_transducer import split_utf8 as _transduce",
             ""]
    transduced = [j for j, step in enumerate(steps) if step.covering is not None]
    for j, step in enumerate(steps):
        if step.meaning == "hand-written":
            continue
        program = step.program
        for b, (first, end) in enumerate(program.branches.tolist()):
            lines += ["", "@njit(cache=True)", f"def _r{j}_branch_{b}(codes, classes, n, s0, final_newline):",
                      *_item_code(program, first, end, 0, "    "), "    return -1", ""]
        # one piece by the branches, written out where it is used (a call a piece cost 10-20 ns)
        piece = _piece_lines(j, program, "        ")
        if j not in transduced:
            lines += ["", "@njit(cache=True)",
                      f"def _r{j}(codes, classes, ends_in, m_in, ends):",
                      "    m = 0",
                      "    a = 0",
                      "    for q in range(m_in):",
                      "        n = np.int64(ends_in[q])",
                      *piece,
                      "        a = n",
                      "    return m", ""]
            continue
        table = ", ".join(f"t{j}_{i}" for i in range(_TRANSDUCER_ARGUMENTS))
        lines += ["", "@njit(cache=True)",
                  f"def _r{j}_matches_at(codes, classes, n, p):",
                  *_dispatch_lines(j, program, "    "),
                  "    return e > p", "",
                  "", "@njit(cache=True)",
                  f"def _r{j}(codes, classes, ends_in, m_in, ends, ascii, found, sure, {table}):",
                  "    m = 0",
                  "    a = 0",
                  "    for q in range(m_in):",
                  "        n = np.int64(ends_in[q])",
                  f"        k = _transduce(codes[a:n], {table}, found) if ascii and n - a >= {TRANSDUCED_MIN} else -1",
                  "        if k < 0:  # a short piece, other text (a catch-all leaves no text unmatched)",
                  *_piece_lines(j, program, "            "),
                  "            a = n",
                  "            continue",
                  "        prev = a",
                  "        in_gap = False",
                  "        for t in range(k):",
                  "            e = a + found[t]",
                  f"            if e == prev + 1 and sure[codes[prev]] == 0 and not _r{j}_matches_at(codes, classes, n, prev):",
                  "                if in_gap:  # the gap goes on",
                  "                    ends[m - 1] = e",
                  "                else:",
                  "                    ends[m] = e",
                  "                    m += 1",
                  "                    in_gap = True",
                  "            else:",
                  "                ends[m] = e",
                  "                m += 1",
                  "                in_gap = False",
                  "            prev = e",
                  "        a = n",
                  "    return m", ""]
    classes = ", ".join(f"c{j}" for j in range(len(steps)))
    kind_classes = ", ".join(f"k{j}" for j in range(len(steps)))  # per regex, by kind
    byte_classes = ", ".join(f"b{j}" for j in range(len(steps)))  # per regex, by ASCII byte
    tables = "".join(f", s{j}" + "".join(f", t{j}_{i}" for i in range(_TRANSDUCER_ARGUMENTS)) for j in transduced)
    lines += ["", "@njit(cache=True)",
              f"def _chain(codes, points, seen, {classes}, source, target, ascii, found{tables}):",
              "    m = 1"]
    for j, step in enumerate(steps):
        starts = _start_bits(step)
        if step.meaning == "hand-written":
            call = f"_{step.pattern}(points, codes, c{j}, source, m, target)"
        elif j in transduced:
            table = ", ".join(f"t{j}_{i}" for i in range(_TRANSDUCER_ARGUMENTS))
            call = f"_r{j}(codes, c{j}, source, m, target, ascii, found, s{j}, {table})"
        else:
            call = f"_r{j}(codes, c{j}, source, m, target)"
        # a regex no character of the text can start a match of leaves every piece as it is
        lines += [f"    if (_present(seen, c{j}) & {starts}) != 0:",
                  f"        m = {call}",
                  "        source, target = target, source"]
    lines += ["    return m, source", "",
              "", "@njit(cache=True, nogil=True)",
              f"def split_utf8(data, stage1, stage2, ascii_seen, {kind_classes}, {byte_classes}, ends, scratch32,"
              f" scratch64, kinds{tables}):",
              "    n = data.shape[0]",
              "    if n == 0:",
              "        return 0",
              "    high = 0",
              "    for i in range(n):",
              "        high |= data[i]",
              "    source = scratch32[:n + 1]",
              "    target = scratch32[n + 1:2 * n + 2]",
              "    offsets = scratch64[:n + 1]",
              "    found = scratch64[n + 1:2 * n + 2]  # a transducer's ends",
              "    if high < 0x80:  # the bytes are the codes and the code points, their positions the offsets",
              "        source[0] = n",
              f"        m, last = _chain(data, data, ascii_seen, {byte_classes}, source, target, True, found{tables})",
              "        for i in range(m):",
              "            ends[i] = last[i]",
              "        return m",
              "    points = scratch32[2 * n + 2:3 * n + 2]",
              "    count = _decode(data, points, offsets)",
              "    seen = _kinds_of(points[:count], stage1, stage2, kinds)"]
    lines += ["    source[0] = count",
              f"    m, last = _chain(kinds[:count], points[:count], seen, {kind_classes}, source, target, False,"
              f" found{tables})",
              "    for i in range(m):",
              "        ends[i] = offsets[last[i]]",
              "    return m", ""]
    return "\n".join(lines)


def _start_bits(step: Step) -> int:
    """The class bits one of which a character must have for ``step`` to cut anything at it."""
    if step.meaning == "hand-written":
        return NUMBER if step.pattern == "digit_groups" else 0xFFFFFFFF
    mask = 0
    for first, end in step.program.branches.tolist():
        mask |= start_mask(step.program, first, end)
    return mask & ANY_CLASS


@lru_cache(maxsize=1)
def _module_digest() -> str:
    import hashlib

    with open(__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


@njit(cache=True)
def decode(data, points, offsets):
    """The code point of each character of valid UTF-8 ``data`` into ``points``, the byte offset of
    each character and the end into ``offsets``; returns the number of characters."""
    n_bytes = data.shape[0]
    i = 0
    k = 0
    while i < n_bytes:
        cp, length = code_point_at(data, i)
        points[k] = cp
        offsets[k] = i
        i += length
        k += 1
    offsets[k] = n_bytes
    return k


@njit(cache=True)
def kinds_of(points, stage1, stage2, kinds):
    """Each code point's kind in the list's two-stage table, written to ``kinds``; returns which kinds
    occur (uint8[256])."""
    seen = np.zeros(256, dtype=np.uint8)
    for i in range(points.shape[0]):
        cp = np.int64(points[i])
        kind = stage2[(np.int64(stage1[cp >> 8]) << 8) | (cp & 0xFF)]
        kinds[i] = kind
        seen[kind] = 1
    return seen


@njit(cache=True)
def present(seen, classes):
    """The union of the class bits of the kinds ``seen`` marks."""
    bits = 0
    for kind in range(classes.shape[0]):
        if seen[kind]:
            bits |= classes[kind]
    return bits


# ----------------------------------------------------------------------------- hand-written splitters
@njit(cache=True)
def digit_groups(points, kinds, classes, ends_in, m_in, ends):
    """llama.cpp's AFMoE digit grouping (``llama_cpp_split._split_digit_groups``): each run of numbers
    cut into a leading 1-2 and then threes, the text before a run joined to its first group."""
    m = 0
    start = 0
    for q in range(m_in):
        end = ends_in[q]
        prev = pos = start
        while pos < end:
            if (classes[kinds[pos]] & NUMBER) == 0:
                pos += 1
                continue
            run = pos
            while pos < end and (classes[kinds[pos]] & NUMBER) != 0:
                pos += 1
            cut = run + (pos - run) % 3
            if cut > run:
                ends[m] = cut
                m += 1
                prev = cut
            while cut < pos:
                cut += 3
                ends[m] = cut
                m += 1
                prev = cut
        if prev < end:
            ends[m] = end
            m += 1
        start = end
    return m


@njit(cache=True, inline="always")
def _lower(cp):
    return cp + 32 if 0x41 <= cp <= 0x5A else cp


@njit(cache=True)
def kimi_k2(points, kinds, classes, ends_in, m_in, ends):
    """llama.cpp's Kimi-K2 splitter (``llama_cpp_split._split_kimi_k2``), step by step: Han runs; an
    optional leading character and a run of non-Han letters with an optional contraction; digits in
    threes; an optional space and a run of other characters with trailing CR/LF; whitespace. (The
    tests of a character are written out: as calls, each cost 20 ns.)"""
    m = 0
    start = 0
    for q in range(m_in):
        end = np.int64(ends_in[q])
        prev = pos = start
        while pos < end:
            cp = np.int64(points[pos])
            bits = np.int64(classes[kinds[pos]])
            if (bits & HAN) != 0:
                pos += 1
                while pos < end and (classes[kinds[pos]] & HAN) != 0:
                    pos += 1
            elif (bits & (LETTER | HAN)) == LETTER or (
                    cp != 13 and cp != 10 and (bits & (LETTER | NUMBER)) == 0
                    and pos + 1 < end and (classes[kinds[pos + 1]] & (LETTER | HAN)) == LETTER):
                pos += 1  # the first letter, or the optional leading character
                while pos < end and (classes[kinds[pos]] & (LETTER | HAN)) == LETTER:
                    pos += 1
                if pos + 1 < end and points[pos] == 0x27:  # a contraction
                    following = _lower(np.int64(points[pos + 1]))
                    if following == 0x73 or following == 0x74 or following == 0x6D or following == 0x64:
                        pos += 2
                    elif pos + 2 < end:
                        after = _lower(np.int64(points[pos + 2]))
                        if ((following == 0x72 and after == 0x65) or (following == 0x76 and after == 0x65)
                                or (following == 0x6C and after == 0x6C)):
                            pos += 3
            elif (bits & NUMBER) != 0:
                run = pos
                while pos < end and (classes[kinds[pos]] & NUMBER) != 0:
                    pos += 1
                    if pos - run >= 3:
                        ends[m] = pos
                        m += 1
                        prev = run = pos
            elif ((bits & (SPACE | LETTER | NUMBER)) == 0 if cp != 0x20 else
                  pos + 1 < end and (classes[kinds[pos + 1]] & (SPACE | LETTER | NUMBER)) == 0):
                pos += 1  # the space, or the first other character
                while pos < end and (classes[kinds[pos]] & (SPACE | LETTER | NUMBER)) == 0:
                    pos += 1
                while pos < end and (points[pos] == 13 or points[pos] == 10):
                    pos += 1
            else:  # whitespace: \\s*[\\r\\n]+ | \\s+(?!\\S) | \\s+, one character when none matches
                n = 0
                last_newline = 0
                while pos + n < end and (classes[kinds[pos + n]] & SPACE) != 0:
                    if points[pos + n] == 13 or points[pos + n] == 10:
                        last_newline = pos + n + 1
                    n += 1
                if last_newline:
                    pos = last_newline
                elif n > 1 and pos + n < end:
                    pos = pos + n - 1
                else:
                    pos = pos + max(n, 1)
            if pos > prev:
                ends[m] = pos
                m += 1
            prev = pos
        start = end
    return m


# ----------------------------------------------------------------------------- the splitter
class ListSplitter:
    """Split text with a compiled regex list: llama.cpp's pre-tokenizer of one type (:meth:`of`), or
    HF's ``Sequence`` of ``Split`` pre-tokenizers (:meth:`of_splits`).

    >>> ListSplitter.of("deepseek3_llm").split("Hello 12345 世界!")
    ['Hello', ' ', '123', '45', ' ', '世界', '!']
    >>> ListSplitter.of_splits((r"\\p{N}{1,3}", r"\\s?\\p{L}+")).split("ab 1234!")
    ['ab', ' ', '123', '4', '!']
    """

    def __init__(self, name: str, steps: tuple[Step, ...], split, tables: ListTables, run: tuple[Step, ...],
                 fallback) -> None:
        self.name = name
        self.pattern = None  # no single regex: the Tokenizer must not take a compiled fast path
        self.steps = steps  # the list as the file gives it
        self.run = run  # what ``split`` runs: ``steps``, leading class runs merged (:func:`_merged`)
        # ``split(data, ends, scratch32, scratch64, kinds) -> count`` (:func:`_list_split`): the
        # ahead-of-time module's, or the generated numba function's, the list's tables bound
        self._split = split
        self._fallback = fallback  # spans of a text that has no UTF-8 (a lone surrogate)
        self._scratch = threading.local()  # each thread's working arrays, grown to the longest text
        # both code widths compiled (or loaded from numba's cache) now, not inside the first
        # text that holds a non-ASCII character
        for sample in (b"a 1.", "a \u00e9 1.".encode()):
            self.piece_ends(np.frombuffer(sample, dtype=np.uint8))

    @classmethod
    def of(cls, pre_type: str) -> "ListSplitter | None":
        """The splitter of llama.cpp's ``pre_type``, or None when its list does not compile."""
        spec = PRE_TYPES.get(pre_type)
        found = None if spec is None else _split_function(spec.regexes, "llama.cpp")
        if found is None:
            return None

        def emulated(text: str) -> list[tuple[int, int]]:
            from .llama_cpp_split import LlamaCppPretokenizer

            return LlamaCppPretokenizer(pre_type).spans(text)

        return cls(pre_type, *found, emulated)

    @classmethod
    def of_splits(cls, regexes: tuple[str, ...]) -> "ListSplitter | None":
        """The splitter of HF ``Split`` pre-tokenizers with ``Isolated`` behaviour, one after the other,
        on their regexes as a ``tokenizer.json`` writes them (Oniguruma's syntax), or None when one of
        them does not compile. One splitter per list, shared (its working arrays are per thread): the
        Tokenizer asks whether the list compiles, and its fused pipeline then splits with it."""
        return _splits_splitter(cls, tuple(regexes))

    def piece_ends(self, data: np.ndarray) -> np.ndarray:
        """Byte offsets where the pieces of the UTF-8 text ``data`` end."""
        ends = np.empty(len(data) + 1, dtype=np.int64)
        m = self._split(data, ends, *self._scratch_for(len(data)))
        return ends[:m]

    def _scratch_for(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The calling thread's working arrays for a text of ``n`` bytes: piece ends of two regexes and
        code points (int32), byte offsets and a transducer's ends (int64), kinds (uint8). Kept between calls: fresh ones
        cost their page faults in every call (a third of the split's time on a 0.5 MB text)."""
        scratch = getattr(self._scratch, "arrays", None)
        if scratch is None or len(scratch[2]) < n:
            size = max(n, 4096)
            scratch = (np.empty(3 * size + 2, dtype=np.int32), np.empty(2 * size + 2, dtype=np.int64),
                       np.empty(size, dtype=np.uint8))
            self._scratch.arrays = scratch
        return scratch

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) in characters of each piece of ``text``."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 to split, the reference reads code points
            return self._fallback(text)
        ends = self.piece_ends(np.frombuffer(data, dtype=np.uint8))
        if len(data) != len(text):
            starts = np.append(np.flatnonzero((np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80), len(data))
            ends = np.searchsorted(starts, ends)
        bounds = [0, *ends.tolist()]
        return list(zip(bounds, bounds[1:]))

    def split(self, text: str) -> list[str]:
        return [text[a:b] for a, b in self.spans(text)]

    def __repr__(self) -> str:
        return f"<ListSplitter {self.name}>"


@lru_cache(maxsize=None)
def _splits_splitter(cls, regexes: tuple[str, ...]) -> ListSplitter | None:
    found = _split_function(regexes, "hf")
    if found is None:
        return None
    steps = found[0]
    return cls(f"{len(steps)} splits", *found, lambda text: _isolated_spans(steps, text))


def _isolated_spans(steps: tuple[Step, ...], text: str) -> list[tuple[int, int]]:
    """The pieces of ``text`` under HF's ``Split`` of each step's pattern with ``Isolated`` behaviour, in
    turn, through ``regex`` (:func:`.pattern_program.with_gaps`): the reference of a compiled list."""
    import regex

    from .pattern_program import with_gaps

    spans = [(0, len(text))] if text else []
    for step in steps:
        covering = regex.compile(with_gaps(step.pattern))
        cut = []
        for a, b in spans:
            for match in covering.finditer(text[a:b]):
                cut.append((a + match.start(), a + match.end()))
        spans = cut
    return spans


@lru_cache(maxsize=None)
def _split_function(regexes: tuple[str, ...], dialect: str):
    """(the compiled steps, their split (:func:`_list_split`), the :class:`ListTables`, the steps it
    runs: :func:`_merged`) of a regex list as ``dialect`` ("llama.cpp" or "hf") reads it (the types
    that share a list share its code), or None."""
    steps = _compiled_list(regexes) if dialect == "llama.cpp" else _hf_list(regexes)
    if steps is None:
        return None
    run = tuple(step if step.meaning == "merged" else _with_covering(step) for step in _merged(steps))
    try:
        tables = list_tables(run)
    except ValueError:  # more kinds than a byte holds
        return None
    split = _list_split(generated_source(run), run, tables)
    return None if split is None else (steps, split, tables, run)


def _list_split(source: str, run: tuple[Step, ...], tables: ListTables):
    """``split(data, ends, scratch32, scratch64, kinds) -> count`` of the generated module ``source``,
    the list's tables and its transducers' arguments bound: compiled ahead of time (:mod:`.aot_lists`:
    no numba in the process), else the generated numba function; None when neither can be had."""
    from .aot_lists import split_call
    from .pretokenize_program import TextCall, load_generated
    from .pretokenize_transducer import split_arguments

    before = (tables.stage1, tables.stage2, tables.ascii_seen, *tables.kind_classes, *tables.byte_classes)
    after = tuple(argument for step in run if step.covering is not None
                  for argument in (_sure_starts(step.program), *split_arguments(step.covering[1], step.covering[0])))
    compiled = split_call(source, before, after)
    if compiled is not None:
        return compiled
    module = load_generated(source, "regex_list")
    if module is None:
        return None
    call = TextCall(module.split_utf8)

    def split(data, ends, scratch32, scratch64, kinds):
        return call(data, *before, ends, scratch32, scratch64, kinds, *after)

    return split


def list_modules(tokenizer) -> list[tuple[str, object]]:
    """(name, the directory of its ahead-of-time module, or None when it splits through numba) of each
    regex list ``tokenizer`` splits with (``bpebench compile --vocab``)."""
    from .aot_lists import BoundSplit

    found = []
    llama = getattr(tokenizer, "_llama_fused", None)  # a GGUF file's
    pipelines = (getattr(tokenizer, "_fused", None), getattr(getattr(tokenizer, "_hf", None), "fused", None),
                 getattr(llama, "pipeline", None), getattr(llama, "_listed", None))
    for fused in dict.fromkeys(p for p in pipelines if p is not None):
        splitter = getattr(fused, "splitter", None)
        if isinstance(splitter, ListSplitter):
            split = splitter._split
            found.append((splitter.name, split.directory if isinstance(split, BoundSplit) else None))
    return found


def llama_cpp_splitter(pre_type: str):
    """The fastest exact split of llama.cpp's ``pre_type``: its compiled list, else the emulation."""
    from .llama_cpp_split import LlamaCppPretokenizer

    return ListSplitter.of(pre_type) or LlamaCppPretokenizer(pre_type)
