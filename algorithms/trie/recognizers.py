"""Byte-level recognizers: deterministic automata over bytes, ready for the trie traversal.

A :class:`ByteRecognizer` is a DFA whose alphabet is the 256 byte values, kept
*trimmed*: every state it can be in still reaches an accepting state, and a
transition that could not is ``-1`` (dead). So "the bytes read so far are a
prefix of some accepted string" is simply "no step returned -1", the test the mask
traversal of :mod:`.masks` makes once per trie node.

Where they come from:

* :func:`from_regex`: a regular expression (Python ``re`` syntax as far as the
  ``interegular`` library parses it: classes, alternation, repetition, groups,
  look-arounds, inline flags; no anchors, ``\\b`` or back-references, and ``\\d \\w \\s``
  are their ASCII classes, as with ``re.ASCII``) is matched against the UTF-8 bytes of
  text. ``interegular`` gives an automaton over characters; each character class
  becomes the UTF-8 byte sequences of its code points (surrogates excluded), so a
  class of thousands of characters costs a handful of byte ranges; the subset
  construction then makes it deterministic over bytes. Invalid UTF-8 is never
  accepted: a token holding half a character is allowed exactly when some
  accepted text continues with the other half.
* :func:`keywords`: a fixed set of strings, built directly as the trie of the set.
* :func:`from_table`: any transition table (states x 256), trimmed here.

:data:`BUILTIN` names the recognizers the benchmarks use (``identifier``,
``json-string``, ``digits``, ``keywords``); :func:`get_recognizer` looks a name up.

Building a regex's automaton is O(states x 256) per DFA state in plain Python
(milliseconds for the built-ins); the automaton is exact for every string the
regex syntax above covers (``tests/test_trie.py`` checks it against ``re.fullmatch``).

>>> r = from_regex(r"[a-z]+[0-9]?")
>>> r.accepts(b"abc7"), r.accepts(b"7"), r.viable(b"ab"), r.viable(b"a12")
(True, False, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from bpebench.errors import BpebenchError, UnknownNameError

#: the largest Unicode scalar value and the surrogate block UTF-8 cannot encode
MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True, eq=False)
class ByteRecognizer:
    """A trimmed DFA over bytes (see the module docstring)."""

    name: str
    transitions: np.ndarray  # int32[n_states, 256]: next state, -1 when nothing accepted can follow
    accepting: np.ndarray  # bool[n_states]
    start: int  # the initial state, -1 when the language is empty
    source: str = ""  # the regex or description it was built from

    @property
    def n_states(self) -> int:
        return len(self.accepting)

    def run(self, data: bytes, state: int | None = None) -> int:
        """The state after reading ``data`` from ``state`` (default: the start), or -1."""
        state = self.start if state is None else state
        table = self.transitions
        for b in data:
            if state < 0:
                return -1
            state = int(table[state, b])
        return state

    def viable(self, data: bytes, state: int | None = None) -> bool:
        """True when ``data`` (read from ``state``) is a prefix of some accepted string."""
        return self.run(data, state) >= 0

    def accepts(self, data: bytes, state: int | None = None) -> bool:
        end = self.run(data, state)
        return end >= 0 and bool(self.accepting[end])

    def __repr__(self) -> str:
        return f"<ByteRecognizer {self.name!r}: {self.n_states} states>"


# ----------------------------------------------------------------------------- trimming
def from_table(transitions, accepting, start: int, *, name: str = "table", source: str = "") -> ByteRecognizer:
    """A :class:`ByteRecognizer` from any DFA over bytes (``transitions[s, b]``: next state or
    -1), keeping only the states reachable from ``start`` that can still reach an accepting
    state, renumbered in breadth-first order from the start (state 0)."""
    table = np.asarray(transitions, dtype=np.int64)
    final = np.asarray(accepting, dtype=bool)
    n = len(final)
    if table.shape != (n, 256):
        raise BpebenchError(f"{name}: a byte DFA needs {n} x 256 transitions, got {table.shape}")
    if n == 0 or not 0 <= start < n:
        return _empty(name, source)
    if ((table < -1) | (table >= n)).any():
        raise BpebenchError(f"{name}: a transition leads to a state outside 0..{n - 1}")
    # live: can reach an accepting state (backwards from the accepting ones)
    live = final.copy()
    while True:
        targets = np.where(table >= 0, table, 0)
        grown = live | ((table >= 0) & live[targets]).any(axis=1)
        if (grown == live).all():
            break
        live = grown
    if not live[start]:
        return _empty(name, source)
    order = [start]
    number = {start: 0}
    for state in order:  # breadth first over live states: the renumbering
        for target in table[state]:
            target = int(target)
            if target >= 0 and live[target] and target not in number:
                number[target] = len(order)
                order.append(target)
    out = np.full((len(order), 256), -1, dtype=np.int32)
    for new, old in enumerate(order):
        row = table[old]
        for b in np.flatnonzero(row >= 0):
            target = int(row[b])
            if live[target]:
                out[new, b] = number[target]
    return ByteRecognizer(name, out, final[order].copy(), 0, source)


def _empty(name: str, source: str) -> ByteRecognizer:
    return ByteRecognizer(name, np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool), -1, source)


# ----------------------------------------------------------------------------- UTF-8
def utf8_sequences(lo: int, hi: int) -> list[tuple[tuple[int, int], ...]]:
    """The code points ``lo..hi`` (surrogates left out) as UTF-8 byte-range sequences: each
    sequence is one ``(low, high)`` byte range per byte, and a byte string is the encoding
    of a code point in the range iff it matches exactly one sequence.

    >>> utf8_sequences(0x61, 0x7A), utf8_sequences(0xE9, 0xE9)
    ([((97, 122),)], [((195, 195), (169, 169))])
    >>> utf8_sequences(0x7F, 0x80)
    [((127, 127),), ((194, 194), (128, 128))]
    """
    out: list[tuple[tuple[int, int], ...]] = []
    todo = [(lo, hi)]
    while todo:
        lo, hi = todo.pop()
        if lo > hi:
            continue
        if lo <= SURROGATES[1] and hi >= SURROGATES[0]:
            todo += [(SURROGATES[1] + 1, hi), (lo, SURROGATES[0] - 1)]
            continue
        split = next((b for b in (0x7F, 0x7FF, 0xFFFF) if lo <= b < hi), None)
        if split is not None:  # different encoded lengths
            todo += [(split + 1, hi), (lo, split)]
            continue
        length = len(chr(lo).encode())
        for i in range(1, length):
            low_bits = (1 << (6 * i)) - 1
            if lo & ~low_bits != hi & ~low_bits:
                # lo and hi differ above the last i continuation bytes: make those span 80..BF
                if lo & low_bits:
                    todo += [((lo | low_bits) + 1, hi), (lo, lo | low_bits)]
                    break
                if hi & low_bits != low_bits:
                    todo += [(hi & ~low_bits, hi), (lo, (hi & ~low_bits) - 1)]
                    break
        else:
            out.append(tuple(zip(chr(lo).encode(), chr(hi).encode())))
    return out


def _ranges(code_points: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, merged inclusive ranges of a set of code points."""
    out: list[list[int]] = []
    for c in sorted(code_points):
        if out and c == out[-1][1] + 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [(a, b) for a, b in out]


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, at = [], 0
    for a, b in ranges:
        if a > at:
            out.append((at, a - 1))
        at = b + 1
    if at <= MAX_CODE_POINT:
        out.append((at, MAX_CODE_POINT))
    return out


# ----------------------------------------------------------------------------- regex -> byte DFA
def from_regex(pattern: str, *, name: str | None = None) -> ByteRecognizer:
    """The recognizer of the UTF-8 encodings of the strings ``pattern`` matches in full."""
    try:
        import interegular
    except ImportError:
        raise BpebenchError("regex recognizers need the 'interegular' package (pip install interegular)") from None
    try:
        fsm = interegular.parse_pattern(pattern).to_fsm()
    except Exception as exc:  # interegular raises its own and built-in errors for what it cannot parse
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise BpebenchError(f"cannot build an automaton from the regex {pattern!r}: {detail}") from None
    # each alphabet symbol's code points; ``anything_else`` is every character not named
    named: set[int] = set()
    symbol_chars: dict[int, list] = {}
    for symbol, chars in fsm.alphabet.by_transition.items():
        symbol_chars[symbol] = chars
        named.update(ord(c) for c in chars if isinstance(c, str))
    symbol_ranges = {}
    for symbol, chars in symbol_chars.items():
        ranges = _ranges(ord(c) for c in chars if isinstance(c, str))
        if any(not isinstance(c, str) for c in chars):  # anything_else
            ranges = sorted(ranges + _complement(_ranges(named)))
        symbol_ranges[symbol] = [seq for a, b in ranges for seq in utf8_sequences(a, b)]
    states = sorted(fsm.states)
    index = {s: i for i, s in enumerate(states)}
    return _determinize(states, index, fsm, symbol_ranges, name or pattern, pattern)


def _determinize(states, index, fsm, symbol_ranges, name: str, source: str) -> ByteRecognizer:
    """Byte NFA (character states plus shared intermediate states inside multi-byte
    characters) -> DFA by the subset construction -> trimmed."""
    edges: list[list[tuple[int, int, int]]] = [[] for _ in states]  # per NFA state: (low, high, target)
    middle: dict[tuple, int] = {}

    def inner(rest: tuple, target: int) -> int:
        """The NFA state that reads the byte ranges ``rest`` and then stands at ``target``."""
        if not rest:
            return target
        key = (rest, target)
        if key not in middle:
            node = len(edges)
            edges.append([])
            middle[key] = node
            edges[node].append((rest[0][0], rest[0][1], inner(rest[1:], target)))
        return middle[key]

    for s in states:
        for symbol, target in fsm.map.get(s, {}).items():
            t = index[target]
            for seq in symbol_ranges[symbol]:
                edges[index[s]].append((seq[0][0], seq[0][1], inner(seq[1:], t)))
    finals = {index[s] for s in fsm.finals}

    start = frozenset({index[fsm.initial]})
    subsets = [start]
    number = {start: 0}
    rows = []
    accepting = []
    for subset in subsets:
        targets: list[set[int]] = [set() for _ in range(256)]
        for node in subset:
            for low, high, target in edges[node]:
                for b in range(low, high + 1):
                    targets[b].add(target)
        row = np.full(256, -1, dtype=np.int64)
        for b, found in enumerate(targets):
            if found:
                key = frozenset(found)
                if key not in number:
                    number[key] = len(subsets)
                    subsets.append(key)
                row[b] = number[key]
        rows.append(row)
        accepting.append(bool(subset & finals))
    return from_table(np.array(rows), np.array(accepting), 0, name=name, source=source)


# ----------------------------------------------------------------------------- keyword sets
def keywords(words: Iterable[str | bytes], *, name: str = "keywords") -> ByteRecognizer:
    """The recognizer of exactly ``words`` (strings are UTF-8 encoded): the trie of the set."""
    table: list[list[int]] = [[-1] * 256]
    accepting = [False]
    listed = []
    for word in words:
        data = word.encode() if isinstance(word, str) else bytes(word)
        listed.append(data)
        state = 0
        for b in data:
            if table[state][b] < 0:
                table[state][b] = len(table)
                table.append([-1] * 256)
                accepting.append(False)
            state = table[state][b]
        accepting[state] = True
    source = "|".join(w.decode("utf-8", "backslashreplace") for w in listed)
    return from_table(np.array(table), np.array(accepting), 0, name=name, source=source)


# ----------------------------------------------------------------------------- built-ins
#: a fixed keyword set: Python's keywords and JSON's literals
KEYWORDS = ("False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
            "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
            "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
            "yield", "true", "false", "null")

#: name -> (description, regex or None for the keyword set)
BUILTIN: dict[str, tuple[str, str | None]] = {
    "identifier": ("any identifier: a letter or _, then letters, digits or _", r"[A-Za-z_][A-Za-z0-9_]*"),
    "json-string": ("the contents of a JSON string (between the quotes; escapes included)",
                    r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*'),
    "digits": ("digits only", r"[0-9]+"),
    "keywords": (f"one of {len(KEYWORDS)} fixed keywords (Python's and JSON's literals)", None),
}

_BUILT: dict[str, ByteRecognizer] = {}


def get_recognizer(name: str) -> ByteRecognizer:
    """The built-in recognizer ``name`` (see :data:`BUILTIN`), built once."""
    if name not in BUILTIN:
        raise UnknownNameError("recognizer", name, list(BUILTIN))
    if name not in _BUILT:
        regex = BUILTIN[name][1]
        _BUILT[name] = keywords(KEYWORDS, name=name) if regex is None else from_regex(regex, name=name)
    return _BUILT[name]


def builtin_regex(name: str) -> str:
    """The regex of a built-in recognizer (the keyword set as an alternation)."""
    if name not in BUILTIN:
        raise UnknownNameError("recognizer", name, list(BUILTIN))
    regex = BUILTIN[name][1]
    return regex if regex is not None else "(?:" + "|".join(KEYWORDS) + ")"
