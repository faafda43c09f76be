r"""Split text with a pattern program in one pass of table lookups: a transducer, no backtracking.

The generated matcher of :mod:`.pretokenize_program` searches each piece with nested loops: its
time goes to the branches the CPU mispredicts (where a run ends, which alternative applies), two
or three a piece. Here the program becomes a table, built once in Python, and the text is read
one character at a time: ``state = table[state + kind]``, and the piece ends that the character
settles are written without a test (``ends[m] = ...; m += count``). No branch depends on the text.

How the table is made:

1. **An automaton of the program's matches.** The program is turned into a Thompson-style NFA
   whose choices are ordered the way the backtracking engine tries them (branches left to right,
   a greedy quantifier taking before leaving, a lazy one the other way, a group's strings in
   order, then none). The subset construction keeps each set in that priority order and drops
   every thread after one that reached the end of a branch: that match wins over all of them
   (leftmost-first, as ``regex`` does). A one-class look-ahead waits in the set for the next
   character (or the end of the text), and when it holds, the threads after it go, as for a
   match one character earlier. So from a piece's start, the last match the automaton passed
   before it dies is where ``regex`` ends that piece.
2. **A transducer of ``findall``.** Its state is (the automaton's state within the current piece,
   whether that piece has a match yet, the kinds of the characters read since its last match,
   up to :data:`MAX_DELAY` of them). When the automaton dies, the piece ends at its last match,
   and the next piece's automaton starts there: it reads again the characters since then, which
   the state holds, so the whole of it happens inside the table. The states reachable from the
   start are enumerated with every kind (a character's set of classes), breadth first, each
   transition recording the piece ends it settles as offsets back from the character just read.
3. **Overflow states.** Where a match waits longer (o200k's ``\s*[\r\n]+`` over the
   indentation after a line feed, hoping for another line feed), the state keeps only the
   automaton's state, and the split keeps the last match's position at run time; when the
   automaton dies there, the split ends the piece at that position and reads on from it. That
   branch, rare on text, is the only one that depends on it.

``$`` at a branch's end waits like a look-ahead: the end of the text passes it, and after a line
feed it becomes a match before that line feed, kept only if the text ends there (the pattern
gets a class of its own for the line feed).

Refused (``build_transducer`` returns None, and the generated matcher keeps the pattern): ``$``
before other items, a possessive quantifier that can match differently from a greedy one (no
automaton forgets the way it does; a possessive run is greedy when what follows it cannot start
with its class, can match nothing, or is only ``$`` and ``\Z``), and programs whose tables exceed
:data:`MAX_STATES` rows or :data:`MAX_ENTRIES` entries even with shorter waits kept in the state.

The split reads ASCII text two bytes a step through a second table built from the first
(``_pair_tables``: one character a step waits on a chain of dependent loads, two halve it), a long
text's two halves side by side (``_two_lanes``: two chains the CPU overlaps, meeting past the
middle in the same state), and other text character by character, decoding each as it goes (the byte offsets of the last
characters kept in a ring). Since an end is written only once
what follows cannot change it, the ends written before a text's end was read belong to every longer
text too (``split_window``): :mod:`.parallel_split` splits one long text part by part on threads.

Exact with respect to ``regex.findall`` for the programs it accepts (hypothesis, against
``regex``, for every shape of ``tests/test_pretokenize_program.py``, both engines). Build:
O(states x kinds) steps of the automaton in Python, 1-260 ms for the usual patterns (kept under
the cache root). Split: one table lookup a character (two ASCII characters), plus a piece read
again from its last match after each overflow (as the backtracking engine does); a long ASCII text
whose halves do not meet reads up to 64 characters of its second half twice and drops that half's
work (its first run then reads on alone).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .pattern_program import (AHEAD, CLASS, DOLLAR, END, GROUP, LAZY, NOT_AHEAD, POSSESSIVE, UNBOUNDED,
                              rest_cannot_start_in_class)
# the run time (re-exported: callers and generated modules import the split from here)
from .transducer_split import (_MARK_AT, _MAX_ENDS, _OFFSETS_AT, _PAIR_FIRST_AT, _PAIR_SECOND_AT,  # noqa: F401
                               FAIL, PAIR_RARE, RARE, SLOW, TWO_LANES_MIN, split_mixed, split_utf8, split_window)

#: the most characters between a piece's end and the character that settles it
MAX_DELAY = 6
#: the most transducer states (rows of the table)
MAX_STATES = 4096
#: the most table entries (states x kinds): each is a step of the automaton in Python, about 10 us,
#: so a pattern with many classes cannot make the first Tokenizer wait for long
MAX_ENTRIES = 1 << 17
#: the most automaton nodes a bounded quantifier may unroll into
_MAX_UNROLLED = 256

# NFA nodes: (kind, class bit or None, next nodes...). ``$`` waits as _DOLLAR (the end of the text
# passes it); after a line feed it becomes _LINE_FEED_END (a match before that line feed, if the
# text ends right after it)
_CHAR, _SPLIT, _LOOK, _EOI, _MATCH, _DOLLAR, _LINE_FEED_END = range(7)


class _Refused(Exception):
    """The program has a construct the transducer does not reproduce."""


class _Nfa:
    def __init__(self) -> None:
        self.kind: list[int] = []
        self.arg: list[int] = []  # CHAR, LOOK: the class; LOOK: + 32 when negated
        self.next: list[list[int]] = []

    def node(self, kind: int, arg: int, nexts: list[int]) -> int:
        self.kind.append(kind)
        self.arg.append(arg)
        self.next.append(nexts)
        if len(self.kind) > 64 * _MAX_UNROLLED:
            raise _Refused("too many automaton nodes")
        return len(self.kind) - 1


def _build_nfa(program) -> tuple[_Nfa, int]:
    """The program's NFA and its start node (a split over the branches, in order)."""
    nfa = _Nfa()
    match = nfa.node(_MATCH, 0, [])
    entries = []
    for first, end in program.branches.tolist():
        following = match
        for item in range(end - 1, first - 1, -1):
            following = _item_nodes(nfa, program, item, end, following)
        entries.append(following)
    return nfa, nfa.node(_SPLIT, 0, entries)


def _item_nodes(nfa: _Nfa, program, item: int, end: int, following: int) -> int:
    kind, k, low, high, mode, first = (int(x) for x in program.items[item])
    if mode == POSSESSIVE and not _possessive_is_greedy(program, item, end):
        raise _Refused("a possessive quantifier that gives a different match than a greedy one")
    if kind == CLASS:
        lazy = mode == LAZY
        if high >= UNBOUNDED:
            loop = nfa.node(_SPLIT, 0, [])
            take = nfa.node(_CHAR, k, [loop])
            nfa.next[loop] = [following, take] if lazy else [take, following]
            entry = loop
        else:
            if high - low > _MAX_UNROLLED:
                raise _Refused("a bounded quantifier too large to unroll")
            entry = following
            for _ in range(high - low):
                take = nfa.node(_CHAR, k, [entry])
                entry = nfa.node(_SPLIT, 0, [following, take] if lazy else [take, following])
        if low > _MAX_UNROLLED:
            raise _Refused("a bounded quantifier too large to unroll")
        for _ in range(low):
            entry = nfa.node(_CHAR, k, [entry])
        return entry
    if kind == GROUP:
        ways = []
        for j in range(int(program.group_alternatives[item])):
            a, b = int(program.alternatives[first + j]), int(program.alternatives[first + j + 1])
            entry = following
            for q in range(b - 1, a - 1, -1):
                entry = nfa.node(_CHAR, int(program.alternative_classes[q]), [entry])
            ways.append(entry)
        if low == 0:
            ways.append(following)
        return nfa.node(_SPLIT, 0, ways)
    if kind in (NOT_AHEAD, AHEAD):
        return nfa.node(_LOOK, k + (32 if kind == NOT_AHEAD else 0), [following])
    if kind == END:
        return nfa.node(_EOI, 0, [following])
    if kind == DOLLAR:
        if k < 0 or item + 1 != end:
            raise _Refused("$ before other items, or with no class of its own for the line feed")
        before_line_feed = nfa.node(_LINE_FEED_END, 0, [following])
        return nfa.node(_DOLLAR, k, [following, before_line_feed])
    raise _Refused(f"item kind {kind}")


def _possessive_is_greedy(program, item: int, end: int) -> bool:
    """Whether a possessive ``item`` matches as the greedy one would: when the rest of the branch
    matches after any first try (it can match nothing), or, for a class run, when the rest cannot
    start on a character of that class (so giving characters back never helps)."""
    rest = program.items[item + 1:end]
    if all(int(r[0]) in (CLASS, GROUP) and int(r[2]) == 0 for r in rest):
        return True
    if int(program.items[item][0]) == CLASS and len(rest) and all(int(r[0]) in (DOLLAR, END) for r in rest):
        # a run then only ``$``/``\Z``: those pass at the end of the text, or (``$``) before a final
        # line feed, so the longest run passes where a shorter one could, or none does
        return True
    return int(program.items[item][0]) == CLASS and rest_cannot_start_in_class(program, item, end, int(program.items[item][1]))


class _Automaton:
    """The leftmost-first subset automaton over kinds, built lazily (only reachable sets)."""

    def __init__(self, nfa: _Nfa, start: int, kind_words: list[int]) -> None:
        self.nfa = nfa
        self.words = kind_words
        self.ids: dict[tuple, int] = {}
        self.sets: list[tuple] = []
        self.steps: dict[tuple[int, int], tuple[int, bool]] = {}
        self.dead = self._id(())
        self.start = self._id(self._closure([start]))

    def _id(self, leaves: tuple) -> int:
        found = self.ids.get(leaves)
        if found is None:
            found = self.ids[leaves] = len(self.sets)
            self.sets.append(leaves)
        return found

    def _closure(self, nodes: list[int], out: list[int] | None = None, seen: set | None = None) -> tuple:
        """The leaves reached from ``nodes`` without reading, in priority order, cut after a match."""
        out = [] if out is None else out
        seen = set() if seen is None else seen
        kind, nexts = self.nfa.kind, self.nfa.next
        stack = list(reversed(nodes))
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if kind[node] == _SPLIT:
                stack.extend(reversed(nexts[node]))
                continue
            out.append(node)
            if kind[node] == _MATCH:
                break
        return tuple(out)

    def is_match(self, state: int) -> bool:
        leaves = self.sets[state]
        return bool(leaves) and self.nfa.kind[leaves[-1]] == _MATCH

    def step(self, state: int, kind_index: int) -> tuple[int, bool]:
        """(the state after a character of this kind, whether a match ended just before it)."""
        key = (state, kind_index)
        found = self.steps.get(key)
        if found is None:
            found = self.steps[key] = self._step(self.sets[state], self.words[kind_index])
        return found

    def _step(self, leaves: tuple, word: int) -> tuple[int, bool]:
        nfa = self.nfa
        out: list[int] = []
        seen: set = set()

        def read(pending: tuple) -> str:
            """Threads of ``pending`` read the character; 'match' when a match ended after it (all
            later threads dropped), 'before' when one ended before it, '' otherwise."""
            for leaf in pending:
                kind = nfa.kind[leaf]
                if kind == _MATCH:
                    return "before"
                if kind == _CHAR:
                    if (word >> nfa.arg[leaf]) & 1:
                        self._closure(nfa.next[leaf], out, seen)
                        if out and nfa.kind[out[-1]] == _MATCH:
                            return "match"
                elif kind == _LOOK:
                    k, negated = nfa.arg[leaf] & 31, nfa.arg[leaf] >= 32
                    if bool((word >> k) & 1) != negated:
                        # the look-ahead holds: what follows it starts before this character
                        result = read(self._closure(nfa.next[leaf]))
                        if result:
                            return result
                elif kind == _DOLLAR:
                    line_feed_end = nfa.next[leaf][1]
                    if (word >> nfa.arg[leaf]) & 1 and line_feed_end not in seen:
                        seen.add(line_feed_end)
                        out.append(line_feed_end)
                # _EOI, _LINE_FEED_END: only the end of the text passes them
            return ""

        result = read(leaves)
        # 'before': a look-ahead that holds, or the state's own match (its last leaf: the match
        # ended where the state was reached, which the caller already knows)
        return self._id(tuple(out)), result == "before"

    def end_match(self, state: int) -> int | None:
        """Where the first thread of ``state`` (in priority order) that matches at the end of the
        text ends: 0 at the end, 1 before a final line feed (``$``); None when none matches."""
        nfa = self.nfa

        def ends(pending: tuple) -> int | None:
            for leaf in pending:
                kind = nfa.kind[leaf]
                if kind == _MATCH:
                    return 0
                if (kind == _LOOK and nfa.arg[leaf] >= 32) or kind in (_EOI, _DOLLAR, _LINE_FEED_END):
                    found = ends(self._closure(nfa.next[leaf][:1]))
                    if found is not None:
                        return 1 if kind == _LINE_FEED_END else found
            return None

        return ends(self.sets[state])


class Transducer(NamedTuple):
    """The tables of :func:`split_utf8` (see the module docstring)."""

    table: np.ndarray  # uint64[states * kinds]: next row (state * kinds) | what the step settles << 32
    final: np.ndarray  # uint64[states]: the ends the end of the text settles (same packing), or a flag
    start: int  # the start state's row
    n_kinds: int
    byte_kinds: np.ndarray  # uint16[128]: the kind of each ASCII character
    # two ASCII characters a step (see :func:`_pair_tables`); empty when the table would be too large
    pairs: np.ndarray  # uint32[states << pair_shift]
    pair_shift: int
    pair_kind: np.ndarray  # uint16[1 << 16]: a pair row's column for two ASCII characters, read as one number
    to_pair: np.ndarray  # uint32[states * kinds]: at a row of ``table``, the same state's pair row
    # states whose future does not depend on the last match kept at run time (see :func:`_mark_free`)
    mark_free: np.ndarray  # uint8[states]




def build_transducer(program) -> Transducer | None:
    """The transducer of ``program``, or None when it is refused (see the module docstring)."""
    for delay in (MAX_DELAY, 3, 1):
        try:
            return _build(program, delay)
        except _TooLarge:
            continue
        except _Refused:
            return None
    return None


class _TooLarge(_Refused):
    """The tables would exceed :data:`MAX_STATES` or :data:`MAX_ENTRIES` (a shorter delay may fit)."""


def _pack(offsets: list[int], mark: int = 0) -> int:
    if len(offsets) > _MAX_ENDS or any(not 0 <= o <= 15 for o in offsets) or not 0 <= mark <= 15:
        raise _TooLarge("a step settles too much")
    packed = len(offsets) | (mark << _MARK_AT)
    if len(offsets) > 1 or mark:
        packed |= RARE
    for j, o in enumerate(offsets):
        packed |= o << (_OFFSETS_AT + 4 * j)
    return packed


def _build(program, delay: int) -> Transducer:
    nfa, start = _build_nfa(program)
    words = [int(w) for w in program.kind_classes.tolist()]
    auto = _Automaton(nfa, start, words)
    n_kinds = len(words)
    fresh = ("n", auto.start, False, ())

    def advance(state: tuple, kinds: tuple) -> tuple[tuple | None, list[int], int]:
        """Read ``kinds`` from the normal state ``state``: (the new state, None when some text
        matches no branch; the piece ends settled, as positions counted from the start of
        ``kinds``; for a new overflow state, its last match as such a position, else 0)."""
        _, d, has, tail = state
        queue = list(kinds)
        position = 0  # the tail starts at -len(tail)
        ends: list[int] = []
        while queue:
            kind = queue.pop(0)
            d2, before = auto.step(d, kind)
            if before:
                has, tail = True, ()
            tail = tail + (kind,)
            position += 1
            if d2 == auto.dead:
                if not has:
                    return None, ends, 0
                end = position - len(tail)
                ends.append(end)
                # the next piece starts at that end: read its characters again
                queue = list(tail) + queue
                position = end
                d, has, tail = auto.start, False, ()
                continue
            d = d2
            if auto.is_match(d2):
                has, tail = True, ()
            elif len(tail) > delay:
                # too long to keep: the last match's place is kept at run time from now on
                assert not queue
                return ("o", d, has), ends, position - len(tail)
        return ("n", d, has, tail), ends, 0

    def read_from_normal(state: tuple, kind: int, settled: list[int]) -> tuple[tuple | None, int]:
        """One character read from the normal ``state``, after the ends ``settled`` (offsets back
        from the position after it): (the next state or None for a failure, the packed settlement)."""
        nxt, ends, mark = advance(state, (kind,))
        if nxt is None:
            return None, 0
        offsets = settled + [1 - e for e in ends]
        return nxt, _pack(offsets, mark=1 - mark if nxt[0] == "o" and nxt[2] else 0)

    def step(state: tuple, kind: int) -> tuple[tuple | None, int]:
        """(the next state or None for a failure, the packed settlement) of one character."""
        if state[0] == "n":
            return read_from_normal(state, kind, [])
        _, d, has = state
        d2, before = auto.step(d, kind)
        if before:  # a match just before the character: a normal state again
            if d2 == auto.dead:  # the piece ends before it, and the character starts the next one
                return read_from_normal(fresh, kind, [1])
            if auto.is_match(d2):
                return ("n", d2, True, ()), _pack([])
            return ("n", d2, True, (kind,)), _pack([])
        if d2 == auto.dead:
            if not has:
                return None, 0
            return fresh, SLOW | RARE
        if auto.is_match(d2):
            return ("n", d2, True, ()), _pack([])
        return ("o", d2, has), _pack([])

    line_feed = int(program.stage2[int(program.stage1[0]) * 256 + 10])

    def finish(state: tuple) -> int:
        """The packed settlement at the end of the text (offsets back from it)."""
        ends: list[int] = []
        if state[0] == "o":
            _, d, has = state
            at_end = auto.end_match(d)
            if at_end is None:
                return SLOW if has else FAIL
            if at_end == 0:
                return _pack([0])
            state = after_line_feed(ends)
            if state is None:
                return FAIL
        _, d, has, tail = state
        while True:
            at_end = auto.end_match(d)
            if at_end == 0:
                return _pack(ends + [0])
            if at_end == 1:
                replayed = after_line_feed(ends)
                if replayed is None:
                    return FAIL
                _, d, has, tail = replayed
                continue
            if d == auto.start and not has and not tail:
                return _pack(ends)  # nothing read since the last end
            if not has:
                return FAIL
            ends.append(len(tail))  # the piece ends where the tail starts; the next one reads it
            replayed, settled, _ = advance(fresh, tail)
            if replayed is None:
                return FAIL
            if replayed[0] == "o":  # a replay of at most ``delay`` kinds fits in the state: never
                raise _TooLarge("an overflow at the end")
            ends.extend(len(tail) - e for e in settled)
            _, d, has, tail = replayed

    def after_line_feed(ends: list[int]) -> tuple | None:
        """A piece ended before the text's final line feed (``$``): that line feed read again as
        the next piece's start; its state, or None when it matches no branch."""
        ends.append(1)
        replayed, settled, _ = advance(fresh, (line_feed,))
        if replayed is None or replayed[0] == "o":
            return None
        ends.extend(1 - e for e in settled)
        return replayed

    failed = ("fail",)
    ids = {fresh: 0}
    states = [fresh]
    table: list[int] = []
    i = 0
    while i < len(states):
        state = states[i]
        i += 1
        for kind in range(n_kinds):
            nxt, packed = (None, 0) if state is failed else step(state, kind)
            if nxt is None:
                nxt, packed = failed, 0
            found = ids.get(nxt)
            if found is None:
                found = ids[nxt] = len(states)
                states.append(nxt)
                if len(states) > MAX_STATES or len(states) * n_kinds > MAX_ENTRIES:
                    raise _TooLarge("too many states")
            table.append((found * n_kinds) | (packed << 32))
    final = [FAIL if state is failed else finish(state) for state in states]
    return _transducer(np.array(table, dtype=np.uint64), np.array(final, dtype=np.uint64), 0, n_kinds,
                       _byte_kinds(program))


#: the most entries of the table of two characters a step (uint32 each); its rows must fit 21 bits
MAX_PAIR_ENTRIES = 1 << 20


def _transducer(table, final, start, n_kinds, byte_kinds) -> Transducer:
    """The transducer with its table of two ASCII characters a step (:func:`_pair_tables`)."""
    return Transducer(table, final, start, n_kinds, byte_kinds, *_pair_tables(table, len(final), n_kinds, byte_kinds),
                      _mark_free(table, final, n_kinds))


def _mark_free(table, final, n_kinds: int) -> np.ndarray:
    """uint8[states]: 1 for a state from which no step can use the last match kept at run time
    before a later step sets it again (the split's ``mark``, used by an overflow's ``SLOW`` step and
    end). Two runs over the same text that reach one of these states at the same position write the
    same ends from there on, whatever each did before (:func:`_two_lanes`). The rest: those with a
    ``SLOW`` step or end, and, until nothing changes, those with a step that keeps the mark and
    leads to one of them."""
    packed = (table >> np.uint64(32)).astype(np.int64).reshape(-1, n_kinds)
    following = ((table & np.uint64(0xFFFFFFFF)) // np.uint64(n_kinds)).astype(np.int64).reshape(-1, n_kinds)
    slow = (packed & SLOW) != 0
    keeps_mark = ~slow & (((packed >> _MARK_AT) & 15) == 0)
    uses = ((final.astype(np.int64) & SLOW) != 0) | slow.any(axis=1)
    while True:
        more = uses | (keeps_mark & uses[following]).any(axis=1)
        if (more == uses).all():
            return (~uses).astype(np.uint8)
        uses = more


def _pair_tables(table, n_states: int, n_kinds: int, byte_kinds):
    """The transducer's steps over two ASCII characters at once, for :func:`split_ascii`.

    One character a step, the split waits on its own chain of loads: the next row is in the entry
    the last one read, about five cycles a character whatever else the loop does. Two characters a
    step halve that chain. The entry at ``(state << pair_shift) + pair_kind[a | b << 8]`` holds the
    state after ``a`` and ``b`` (as its pair row) and the end each of them settles, when neither step
    is rare (several ends, an overflow's mark, an end found at run time); else only the rare flag,
    and the split takes that character alone. ``pair_kind`` is one load for both characters' column,
    indexed by the two bytes read as one number, so the chain is an add and a load (LLVM splits a
    column computed from two kinds into two additions on the chain). Empty when the table would
    exceed :data:`MAX_PAIR_ENTRIES` or a pattern has more than 256 kinds."""
    shift = max(1, int(n_kinds * n_kinds - 1).bit_length())
    kinds = np.asarray(byte_kinds, dtype=np.int64)
    if shift > 16 or n_states << shift > MAX_PAIR_ENTRIES:  # a column must fit ``pair_kind``'s 16 bits
        empty32 = np.zeros(0, dtype=np.uint32)
        return empty32, 0, np.zeros(0, dtype=np.uint16), empty32
    pairs = np.zeros(n_states << shift, dtype=np.uint32)
    _fill_pairs(table, n_states, n_kinds, shift, pairs)
    pair_kind = np.zeros((256, 256), dtype=np.uint16)  # [second byte, first byte]: little-endian order
    pair_kind[:128, :128] = (kinds[None, :] * n_kinds + kinds[:, None]).astype(np.uint16)
    pair_kind = pair_kind.ravel()
    to_pair = ((np.arange(n_states * n_kinds, dtype=np.int64) // n_kinds) << shift).astype(np.uint32)
    return pairs, shift, pair_kind, to_pair


def _fill_pairs(table, n_states: int, n_kinds: int, shift: int, pairs) -> None:
    """Fill ``pairs`` (uint32[n_states << shift]) for :func:`_pair_tables`: every (state, first kind,
    second kind) at once in numpy (at most ``MAX_PAIR_ENTRIES``: a few milliseconds, and no numba,
    which a fused pipeline that splits in its compiled call never needs otherwise)."""
    low = np.uint64(0xFFFFFFFF)
    first = table.reshape(n_states, n_kinds)
    packed = (first >> np.uint64(32)).astype(np.int64)[:, :, None]
    second = table[(first & low).astype(np.int64)[:, :, None] + np.arange(n_kinds)]  # [state, first, second]
    packed2 = (second >> np.uint64(32)).astype(np.int64)
    after = ((second & low).astype(np.int64) // n_kinds) << shift
    first_end = (15 - ((packed >> _OFFSETS_AT) & 15)) | ((packed & 1) << 4)
    second_end = (15 - ((packed2 >> _OFFSETS_AT) & 15)) | ((packed2 & 1) << 4)
    entries = after | (first_end << _PAIR_FIRST_AT) | (second_end << _PAIR_SECOND_AT)
    entries = np.where(((packed | packed2) & RARE) != 0, PAIR_RARE, entries)
    pairs.reshape(n_states, -1)[:, :n_kinds * n_kinds] = entries.reshape(n_states, -1).astype(np.uint32)


def _byte_kinds(program) -> np.ndarray:
    """The kind of each ASCII character (its code point's entry in the program's first block)."""
    first_block = int(program.stage1[0]) * 256
    return np.array(program.stage2[first_block:first_block + 128], dtype=np.uint16)


@lru_cache(maxsize=32)
def transducer_for(pattern: str, meaning: str = "regex") -> Transducer | None:
    """:func:`build_transducer` of the pattern's program (its classes read as ``meaning`` says,
    ``pattern_program.MEANINGS``), kept under the cache root (a pattern as large as o200k's takes a
    quarter of a second to build); None when it has no program or its program is refused. The
    tables depend on the program's kinds, not on which code points have them: the split takes the
    program's own ``stage1``/``stage2`` (:func:`split_arguments`)."""
    from .pattern_program import compile_pattern

    program = compile_pattern(pattern, meaning)
    return None if program is None else transducer_of(program)


def transducer_of(program) -> Transducer | None:
    """:func:`transducer_for` of a compiled program."""
    import hashlib

    from ..cache.files import CacheDamaged, cache_root, discard, read_checked, write_checked

    digest = hashlib.sha256(_own_source())
    for part in (program.branches, program.items, program.alternatives, program.alternative_classes,
                 program.group_alternatives, program.kind_classes, program.byte_classes):
        digest.update(np.ascontiguousarray(part).tobytes())
    path = cache_root() / "patterns" / f"transducer_{digest.hexdigest()[:24]}.bin"
    try:
        payload = read_checked(path)
        if payload is not None:
            return _from_bytes(bytearray(payload), program)
    except (CacheDamaged, ValueError) as exc:
        discard(path, str(exc))
    transducer = build_transducer(program)
    write_checked(path, _to_bytes(transducer))
    return transducer


@lru_cache(maxsize=1)
def _own_source() -> bytes:
    """This module's source and the run time's (whose packing of a step the tables follow)."""
    from . import transducer_split

    with open(__file__, "rb") as f, open(transducer_split.__file__, "rb") as g:
        return f.read() + g.read()


def _to_bytes(transducer: Transducer | None) -> bytes:
    if transducer is None:  # refused: remembered too, as building may take long to find out
        return np.zeros(3, dtype=np.int64).tobytes()
    header = np.array([transducer.n_kinds, len(transducer.final), transducer.start], dtype=np.int64)
    return header.tobytes() + transducer.table.tobytes() + transducer.final.tobytes()


def _from_bytes(payload: bytearray, program) -> Transducer | None:
    from ..cache.files import CacheDamaged

    n_kinds, n_states, start = (int(x) for x in np.frombuffer(payload, dtype=np.int64, count=3))
    if n_states == 0:
        return None
    table = np.frombuffer(payload, dtype=np.uint64, count=n_states * n_kinds, offset=24)
    final = np.frombuffer(payload, dtype=np.uint64, count=n_states, offset=24 + table.nbytes)
    rows = table & np.uint64(0xFFFFFFFF)
    # every row a step can reach lies inside the table: the split reads it without checks
    if (n_kinds != len(program.kind_classes) or 24 + table.nbytes + final.nbytes != len(payload)
            or int(rows.max()) >= n_states * n_kinds or (rows % np.uint64(n_kinds)).any()
            or not 0 <= start < n_states * n_kinds or start % n_kinds):
        raise CacheDamaged("transducer tables of the wrong shape")
    return _transducer(table, final, start, n_kinds, _byte_kinds(program))


def split_arguments(transducer: Transducer, program) -> tuple:
    """The arguments of :func:`split_utf8` and :func:`split_window` between ``data`` and ``ends``."""
    t = transducer
    return (t.byte_kinds, program.stage1, program.stage2, t.table, t.final, t.start, t.n_kinds, t.pairs,
            t.pair_shift, t.pair_kind, t.to_pair, t.mark_free)
