"""Split text with a compiled pattern program (:mod:`.pattern_program`), as ``regex.findall`` does.

Every position reads its class bits (bit k: the character is in the program's class k) as
``classes[codes[position]]``: for ASCII text ``codes`` are the bytes themselves and ``classes``
a 256-entry table (no pass before the matcher); otherwise the UTF-8 is decoded into one *kind*
per character (the program's two-stage table) and ``classes`` maps kinds to class bits. numba
compiles the generated functions once for each code width. The pattern becomes a Python
module written under the cache root (:func:`generated_source`): one function per branch,
whose nested loops are a depth-first search over its items with the constants written in,
each item trying its possible ends in the backtracking engine's order (a greedy class run
longest first, a lazy one shortest first, a possessive one only its longest; a group's
alternatives in order, then, when optional, none; a look-ahead or ``$`` the position itself
or nothing). From each position the branches are tried left to right (a branch whose first
character cannot match is skipped); the first with a complete match gives the piece; the next search starts
at its end, as ``findall`` goes on. A position where no branch matches is text ``findall``
drops: the caller is told, and splits that text with ``regex`` instead.

Exact with respect to ``regex.findall`` for every pattern :func:`.pattern_program.compile_pattern`
accepts (hypothesis tests against ``regex`` for each shape, ``tests/test_pretokenize_program.py``).
Complexity: O(branches x piece length) per piece for patterns without backtracking between
items; a greedy run followed by items that fail costs one retry per character given back.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np

from .pattern_program import (AHEAD, CLASS, DOLLAR, END, GROUP, LAZY, NOT_AHEAD, POSSESSIVE, UNBOUNDED, compile_pattern,
                              start_mask)


# ----------------------------------------------------------------------------- the generated matcher
_UNBOUNDED_RUN = 1 << 62


def _mask(k: int) -> str:
    return str(1 << k)


def _run_lines(r: str, s: str, k: int, high: int, indent: str) -> list[str]:
    """Lines that set ``r`` to the length of the run of class ``k`` from ``s`` (at most ``high``),
    written out rather than called (Falcon's llama.cpp list on code: 15.0 -> 10.7 ms per MB)."""
    return [f"{indent}{r} = 0",
            f"{indent}while {r} < {high} and {s} + {r} < n and (classes[codes[{s} + {r}]] & {_mask(k)}) != 0:",
            f"{indent}    {r} += 1"]


def _item_code(program, item: int, end_item: int, depth: int, indent: str) -> list[str]:
    """Lines that match items ``item..end_item`` from ``s{depth}``; the last line of the innermost
    success is ``return s{k}``. Failure falls through to the caller's next way."""
    if item == end_item:
        return [f"{indent}return s{depth}"]
    kind, k, low, high, mode, first = (int(x) for x in program.items[item])
    s, t, r = f"s{depth}", f"s{depth + 1}", f"r{depth}"
    rest = lambda extra: _item_code(program, item + 1, end_item, depth + 1, indent + extra)  # noqa: E731
    if kind == CLASS:
        top = _UNBOUNDED_RUN if high >= UNBOUNDED else high
        if mode == LAZY:
            return [*_run_lines(r, s, k, low, indent),
                    f"{indent}if {r} >= {low}:",
                    f"{indent}    while True:",
                    f"{indent}        {t} = {s} + {r}",
                    *rest("        "),
                    f"{indent}        if {r} < {top} and {t} < n and (classes[codes[{t}]] & {_mask(k)}) != 0:",
                    f"{indent}            {r} += 1",
                    f"{indent}        else:",
                    f"{indent}            break"]
        lines = _run_lines(r, s, k, top, indent)
        if mode == POSSESSIVE:
            return lines + [f"{indent}if {r} >= {low}:", f"{indent}    {t} = {s} + {r}", *rest("    ")]
        return lines + [f"{indent}while {r} >= {low}:", f"{indent}    {t} = {s} + {r}", *rest("    "),
                        f"{indent}    {r} -= 1"]
    if kind == GROUP:
        count = int(program.group_alternatives[item])
        options = []
        for j in range(count):
            a, b = int(program.alternatives[first + j]), int(program.alternatives[first + j + 1])
            tests = " and ".join(f"(classes[codes[{s} + {q}]] & {_mask(int(program.alternative_classes[a + q]))}) != 0"
                                 for q in range(b - a))
            options.append((f"{s} + {b - a} <= n and {tests}", f"{s} + {b - a}"))
        if low == 0:
            options.append(("True", s))
        if mode == POSSESSIVE:  # the first way that matches, never another
            lines = [f"{indent}{t} = -1"]
            for j, (test, end) in enumerate(options):
                lines.append(f"{indent}{'if' if j == 0 else 'elif'} {test}:")
                lines.append(f"{indent}    {t} = {end}")
            return lines + [f"{indent}if {t} >= 0:", *rest("    ")]
        lines = [f"{indent}for {r} in range({len(options)}):", f"{indent}    {t} = -1"]
        for j, (test, end) in enumerate(options):
            lines.append(f"{indent}    {'if' if j == 0 else 'elif'} {r} == {j} and {test}:")
            lines.append(f"{indent}        {t} = {end}")
        return lines + [f"{indent}    if {t} >= 0:", *rest("        ")]
    tests = {NOT_AHEAD: f"{s} >= n or (classes[codes[{s}]] & {_mask(k)}) == 0",
             AHEAD: f"{s} < n and (classes[codes[{s}]] & {_mask(k)}) != 0",
             DOLLAR: f"{s} == n or ({s} == n - 1 and final_newline)",
             END: f"{s} == n"}
    return [f"{indent}if {tests[kind]}:", f"{indent}    {t} = {s}", *rest("    ")]


@lru_cache(maxsize=1)
def _own_digest() -> str:
    import hashlib

    from . import pattern_program

    digest = hashlib.sha256()
    for path in (__file__, pattern_program.__file__):
        with open(path, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()[:16]


def generated_source(program, pattern: str) -> str:
    """A Python module of numba functions that split like ``pattern``: one function per branch,
    each item a loop or a test with its constants written in (no interpretation at run time)."""
    lines = [f"# generated by bpebench.algorithms.pipeline.pretokenize_program for {pattern!r}",
             # numba stamps a cached function with its own file only: the digest of the modules that
             # ``_character_kinds`` and this code come from makes an edit of either a new generated file
             f"# beside {_own_digest()}",
             "import numpy as np", "from numba import njit", "",
             "from bpebench.algorithms.pipeline.pattern_program import character_kinds as _character_kinds", ""]
    for b, (first, end) in enumerate(program.branches.tolist()):
        lines += ["", "@njit(cache=True)", f"def _branch_{b}(codes, classes, n, s0, final_newline):",
                  *_item_code(program, first, end, 0, "    "), "    return -1", ""]
    lines += ["", "@njit(cache=True)", "def piece_ends(codes, classes, offsets, final_newline, ends):",
              "    n = codes.shape[0]", "    by_char = offsets.shape[0] > 0", "    p = 0", "    m = 0", "    while p < n:",
              "        w = classes[codes[p]]",
              "        e = -1"]
    for b, (first, end) in enumerate(program.branches.tolist()):
        guard = "" if b == 0 else "e < 0 and "
        lines += [f"        if {guard}(w & {start_mask(program, first, end)}) != 0:",
                  f"            e = _branch_{b}(codes, classes, n, p, final_newline)"]
    lines += ["        if e <= p:", "            return -1", "        ends[m] = offsets[e] if by_char else e",
              "        m += 1",
              "        p = e", "    return m", "",
              # one call per text from Python: the ASCII test, the decoding and the split together
              "", "@njit(cache=True, nogil=True)",
              "def split_utf8(data, byte_classes, stage1, stage2, kind_classes, no_offsets, ends):",
              "    n = data.shape[0]",
              "    final_newline = n > 0 and data[n - 1] == 10",
              "    high = 0",
              "    for i in range(n):",
              "        high |= data[i]",
              "    if high < 0x80:  # ASCII: the bytes are the codes, their positions the offsets",
              "        return piece_ends(data, byte_classes, no_offsets, final_newline, ends)",
              "    kinds, offsets = _character_kinds(data, stage1, stage2)",
              "    return piece_ends(kinds, kind_classes, offsets, final_newline, ends)", ""]
    return "\n".join(lines)


@lru_cache(maxsize=32)
def _matcher(pattern: str):
    """The generated module's ``piece_ends`` for ``pattern`` (written under the cache root, so that
    numba's cache keeps its machine code), or None when the pattern does not compile."""
    program = compile_pattern(pattern)
    if program is None:
        return None
    module = load_generated(generated_source(program, pattern), "pattern")
    return None if module is None else (program, module.split_utf8)


#: one thread at a time loads a generated module: another would find it in ``sys.modules`` half run
_LOADING = threading.RLock()


def load_generated(source: str, prefix: str):
    """The module of generated numba code ``source``, written under the cache root as
    ``<prefix>_<digest>.py`` (so that numba's cache keeps its machine code; its functions are
    guarded against a damaged cache entry), or None when the cache root cannot take it."""
    with _LOADING:
        return _load_generated(source, prefix)


def _load_generated(source: str, prefix: str):
    import hashlib
    import importlib.util
    import sys

    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    from ..cache.files import cache_root, write_atomically

    directory = cache_root() / "patterns"
    path = directory / f"{prefix}_{digest}.py"
    try:
        if not path.exists() or path.read_text() != source:
            if not write_atomically(path, source.encode()):
                raise OSError("the cache directory cannot be written")
        name = f"bpebench_{prefix}_{digest}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # numba's cache finds the module of its functions by name
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
    except (OSError, SyntaxError, ImportError):
        return None
    from ..kernels.jit import guard_disk_cache

    for name, value in vars(module).items():
        if hasattr(value, "py_func") and getattr(value, "__module__", None) == module.__name__:
            guard_disk_cache(value)
    return module


class TextCall:
    """A numba function whose first argument is a text array, called through the compiled overload
    for the array's (type, writable, contiguous) once one is known: the dispatcher types every
    argument on every call (microseconds a text). The plain function without jit."""

    def __init__(self, function) -> None:
        self.function = function
        self._entries: dict = {}

    def __call__(self, data: np.ndarray, *rest):
        key = (data.dtype.num, data.flags.writeable, data.flags.c_contiguous)
        entry = self._entries.get(key)
        if entry is not None:
            return entry(data, *rest)
        result = self.function(data, *rest)  # compiles, or loads from numba's cache
        overloads = getattr(self.function, "overloads", None)  # none with NUMBA_DISABLE_JIT=1
        compiled = overloads and overloads.get(tuple(map(self.function.typeof_pyval, (data, *rest))))
        if compiled:
            self._entries[key] = compiled.entry_point
        return result


class ProgramPretokenizer:
    """``RegexPretokenizer`` semantics through a compiled program; ``regex`` (with ``fallback``, when
    given, else ``pattern``) for a text where it drops something.

    Two engines split: the transducer (:mod:`.pretokenize_transducer`: one table lookup a
    character, no branch on the text) when the program has one, else the generated matcher.
    ``engine`` names the one in use; ``engine="backtracking"`` asks for the generated matcher."""

    def __init__(self, pattern: str, program, split_utf8=None, engine: str | None = None,
                 fallback: str | None = None) -> None:
        """``split_utf8``: the generated matcher's (:func:`_matcher`), needed unless the program has
        a transducer."""
        from .pretokenize import RegexPretokenizer
        from .pretokenize_transducer import split_arguments, split_utf8 as transduce, transducer_for

        self.pattern = fallback or pattern  # what it splits like
        self.program = program
        transducer = None if engine == "backtracking" else transducer_for(pattern)
        if engine == "transducer" and transducer is None:
            raise ValueError(f"the pattern {pattern!r} has no transducer")
        p = program
        #: the transducer's tables as ``split_utf8`` takes them (None for the generated matcher): the
        #: fused kernel splits with them in its own call (``fast_pipeline.split_tables``)
        self.transducer_arguments = None if transducer is None else split_arguments(transducer, p)
        if transducer is not None:
            self.engine = "transducer"
            self._matcher = transduce
            self._tables = self.transducer_arguments
        else:
            if split_utf8 is None:
                raise ValueError(f"the pattern {pattern!r} has no transducer and no generated matcher was given")
            self.engine = "backtracking"
            self._matcher = split_utf8
            self._tables = (p.byte_classes, p.stage1, p.stage2, p.kind_classes, _NO_OFFSETS)
        self._call = None  # made on first use (``_ready``)
        self.fallback = RegexPretokenizer(fallback or pattern)

    def split(self, text: str) -> list[str]:
        return self.fallback.split(text)

    def _ready(self) -> TextCall:
        """The compiled split, both code widths compiled (or loaded from numba's cache) at once, not
        inside the first text that holds a non-ASCII character. Not at construction: the fused
        pipeline splits with the transducer in its own compiled call, and needs this (and numba)
        only for a text the transducer refuses or a long text split part by part."""
        if self._call is None:
            call = TextCall(self._matcher)
            for sample in (b"a 1.", "a \u00e9 1.".encode()):
                call(np.frombuffer(sample, dtype=np.uint8), *self._tables,
                     np.empty(len(sample) + 1, dtype=np.int64))
            self._call = call
        return self._call

    def piece_ends(self, data: np.ndarray) -> np.ndarray | None:
        """Byte offsets where the pieces of the UTF-8 text ``data`` end, or None when some of its
        text matches no branch (then ``split`` has the answer)."""
        ends = np.empty(len(data) + 1, dtype=np.int64)
        m = (self._call or self._ready())(data, *self._tables, ends)
        return ends[:m] if m >= 0 else None

    def window_ends(self, data: np.ndarray) -> tuple[np.ndarray, int] | None:
        """(:meth:`piece_ends` of ``data``, how many of them every text that starts with ``data``
        has), or None as there; transducer engine only (it writes an end once what follows cannot
        change it; the generated matcher's matches may depend on where the text stops)."""
        from .pretokenize_transducer import split_window

        if self.engine != "transducer":
            raise ValueError("window_ends needs the transducer engine")
        ends = np.empty(len(data) + 1, dtype=np.int64)
        settled = np.zeros(1, dtype=np.int64)
        m = split_window(data, *self._tables, ends, settled)
        return (ends[:m], int(settled[0])) if m >= 0 else None


_NO_OFFSETS = np.zeros(0, dtype=np.int64)


def program_pretokenizer(pattern: str, engine: str | None = None) -> ProgramPretokenizer | None:
    """A :class:`ProgramPretokenizer` for ``pattern``, or None when it does not compile.
    ``engine``: None for the fastest that applies, "transducer" or "backtracking" to choose.
    A pattern :func:`.pattern_program.with_gaps` wrote (HF's ``Split``, ``Isolated``) is split by the
    program of the pattern it wraps, and by ``regex`` with the wrapped one where that leaves text
    between matches."""
    from .pattern_program import compile_pattern, without_gaps
    from .pretokenize_transducer import transducer_for

    own = without_gaps(pattern) or pattern
    if engine != "backtracking":
        # a transducer needs no generated module (whose import alone imports numba)
        program = compile_pattern(own)
        if program is not None and transducer_for(own) is not None:
            return ProgramPretokenizer(own, program, None, engine=engine, fallback=pattern)
    found = _matcher(own)
    return None if found is None else ProgramPretokenizer(own, *found, engine=engine, fallback=pattern)
