"""Pieces of text as HF ``tokenizers`` passes them between its components, and its pattern matching.

A :class:`Piece` is a stretch of (normalized) text plus what HF's ``NormalizedString``
knows about where it came from: ``start``, the offset in the original text where the
piece's original text begins (``offsets_original().0``; Metaspace's ``prepend_scheme:
first`` reads it), and optionally ``align``, per character the original offset it came
from, which slicing needs to compute the ``start`` of a sub-piece. Tracking ``align``
costs a list per piece, so the pipeline only asks for it when a component reads
``start`` (``align`` is None otherwise).

:func:`find_matches` is HF's ``Pattern::find_matches``: the whole text cut into
(start, end, is_match) spans, matches found the way Oniguruma's ``find_iter`` finds
them (an empty match right after the previous match is skipped by one character, so
``x*`` on ``"ab"`` matches at 0 and 2 but never twice at the same place), and the
text between matches kept as non-matching spans. ``regex.findall`` differs twice: it
returns capture groups instead of whole matches and drops the text between matches.

File-supplied patterns never hang: one search that backtracks catastrophically ends as a
one-line error. Short texts use the ``regex`` module's ``timeout``; texts of at least
:data:`WATCHED_MIN_CHARS` are matched without it on a worker thread that the caller waits for
with the deadline (:func:`run_watched`): ``regex`` reads the process's CPU clock, a system
call, at the start of every match when a timeout is set, which made ``findall`` 3.3x slower
on prose (20.5 against 6.5 MB/s).

Complexity: :func:`find_matches` is one regex search per match; slicing is O(piece).
Exact: the spans equal HF's for every pattern the ``regex`` module reads as Oniguruma does.
"""

from __future__ import annotations

import os
import queue
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

import regex

from bpebench.errors import BpebenchError, VocabularyError

from .unicode_reference import reference_text

#: seconds one regex search may take before the pattern is declared runaway
#: (``BPEBENCH_REGEX_TIMEOUT`` overrides it)
DEFAULT_REGEX_TIMEOUT = 10.0

#: texts at least this long are matched on a watched worker thread, without ``regex``'s timeout
WATCHED_MIN_CHARS = 4096

#: Rust's ``char::is_whitespace`` (Unicode White_Space), which HF's Strip, WhitespaceSplit
#: and added-token lstrip/rstrip use; Python's ``str.isspace`` also counts U+001C..U+001F
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def regex_timeout() -> float:
    try:
        return float(os.environ.get("BPEBENCH_REGEX_TIMEOUT", DEFAULT_REGEX_TIMEOUT))
    except ValueError:
        return DEFAULT_REGEX_TIMEOUT


class _Worker:
    """A daemon thread that runs the jobs of one calling thread (so threads keep matching in
    parallel); a job that overruns its deadline is abandoned with the worker, which the daemon flag
    keeps from holding up the interpreter's exit."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.pid = os.getpid()  # a forked child has the object but not the thread
        threading.Thread(target=self._run, name="bpebench-regex", daemon=True).start()

    def _run(self) -> None:
        while True:
            function, args, outcome, done = self.jobs.get()
            try:
                outcome.append((True, function(*args)))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                outcome.append((False, exc))
            done.set()


_workers = threading.local()


def run_watched(function, *args, seconds: float):
    """``function(*args)`` on the calling thread's worker; TimeoutError when it has not returned
    within ``seconds`` (the worker is then left to finish alone and a new one takes the next job)."""
    worker = getattr(_workers, "worker", None)
    if worker is None or worker.pid != os.getpid():
        worker = _workers.worker = _Worker()
    outcome: list = []
    done = threading.Event()
    worker.jobs.put((function, args, outcome, done))
    if not done.wait(seconds):
        _workers.worker = None
        raise TimeoutError(f"{seconds:g} s")
    ok, value = outcome[0]
    if ok:
        return value
    raise value


def exponential_risk(pattern: str) -> bool:
    """Whether ``pattern`` repeats a group that holds a repetition or an alternation (``(a|aa)+``,
    ``(?:x+)*``): the shape whose backtracking can grow exponentially. Such patterns keep
    ``regex``'s own timeout, so that a runaway search stops by itself; on the others a search
    abandoned at its deadline ends within polynomial time. A scan of the pattern's text,
    conservative: escapes and character classes are skipped, anything unclear counts as a risk."""
    groups = [[False]]  # per open group: whether it holds a repetition or an alternation
    closed = False  # the last item was a group just closed, with its flag
    closed_flag = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        repeat = None
        if c == "\\":
            if pattern.startswith(("p{", "P{"), i + 1):
                end = pattern.find("}", i)
                i = n if end < 0 else end + 1
            else:
                i += 2
            closed = False
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            closed = False
            continue
        if c == "(":
            groups.append([False])
            i += 1
            closed = False
            continue
        if c == ")":
            if len(groups) == 1:
                return True  # unbalanced: not ours to judge
            closed_flag = groups.pop()[0]
            groups[-1][0] = groups[-1][0] or closed_flag
            closed = True
            i += 1
            continue
        if c == "|":
            if len(groups) > 1:
                groups[-1][0] = True
            i += 1
            closed = False
            continue
        if c in "*+":
            repeat = True
            i += 1
        elif c == "?":
            repeat = False
            i += 1
        elif c == "{":
            end = pattern.find("}", i)
            body = pattern[i + 1:end] if end > 0 else ""
            low, comma, high = body.partition(",")
            if end > 0 and (low.strip().isdigit() or (comma and not low.strip())) and (
                    not comma or not high.strip() or high.strip().isdigit()):
                repeat = bool(comma and (not high.strip() or int(high) > 1)) or (not comma and int(low) > 1)
                i = end + 1
            else:
                i += 1  # a literal brace
                closed = False
                continue
        else:
            i += 1
            closed = False
            continue
        if i < n and pattern[i] in "?+":  # lazy or possessive: a modifier of the quantifier
            i += 1
        if repeat:
            if closed and closed_flag:
                return True
            groups[-1][0] = True
        closed = False
    return len(groups) != 1


_exponential_risk = lru_cache(maxsize=256)(exponential_risk)


def deadline(n_chars: int) -> float:
    """Seconds a whole-text split of ``n_chars`` characters may take: the per-search timeout plus
    as much again per million characters (a long text is many searches)."""
    return regex_timeout() * (1 + n_chars / 1_000_000)


def run_matching(match, n_chars: int, exponential: bool):
    """``match(timeout)`` for a text of ``n_chars`` characters: at least ``WATCHED_MIN_CHARS`` on the
    watched worker without ``regex``'s timeout (unless the pattern is an ``exponential`` risk), else
    with it. TimeoutError carries the seconds allowed when the matching overran them."""
    if n_chars >= WATCHED_MIN_CHARS and not exponential:
        seconds = deadline(n_chars)
        try:
            return run_watched(match, None, seconds=seconds)
        except TimeoutError:
            raise TimeoutError(seconds) from None
    try:
        return match(regex_timeout())
    except TimeoutError:
        raise TimeoutError(regex_timeout()) from None


@dataclass(slots=True)
class Piece:
    """Text with its origin; ``token`` is set for an added token carved out of the text."""

    text: str
    start: int = 0
    align: list[int] | None = None
    token: int | None = None

    def slice(self, a: int, b: int) -> "Piece":
        """``text[a:b]`` as a piece of its own (HF ``NormalizedString::slice``)."""
        if self.align is None:
            return Piece(self.text[a:b], self.start)
        align = self.align[a:b]
        return Piece(self.text[a:b], min(align) if align else self.start, align)

    def with_text(self, text: str, sources: list[int] | None) -> "Piece":
        """The same piece rewritten: ``sources[k]`` is the index of the old character the new
        character ``k`` comes from (ignored when alignments are not tracked)."""
        if self.align is None:
            return Piece(text, self.start)
        old = self.align
        return Piece(text, self.start, [old[k] if old else self.start for k in sources])


#: Oniguruma's ``\w`` inside a character class, and on its own (see :func:`onig_regex`)
ONIG_WORD_IN_CLASS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}"
ONIG_WORD = "[" + ONIG_WORD_IN_CLASS + r"\xb2\xb3\xb9\xbc-\xbe]"
ONIG_NOT_WORD = "[^" + ONIG_WORD_IN_CLASS + r"\xb2\xb3\xb9\xbc-\xbe]"


def onig_regex(pattern: str) -> str:
    """An Oniguruma pattern rewritten for the ``regex`` module where the two read it differently.

    Oniguruma reads ``X{2,3}+`` as "``X{2,3}``, one or more times"; ``regex`` reads a
    possessive interval. The atom is wrapped so that ``regex`` repeats it the same way:

    >>> onig_regex("[ab]{2}+|(xy){1,2}+|z{3}")
    '(?:[ab]{2})+|(?:(xy){1,2})+|z{3}'

    HF compiles with Oniguruma's default (Ruby) syntax: ``^`` and ``$`` hold at every line start and
    end, ``\\Z`` before a last line feed, ``\\z`` at the end, ``(?m)`` is dot-all, ``\\N`` any
    character but a line feed, ``\\e`` and ``\\cX`` control characters; written as ``regex`` reads
    those (a subexpression call, ``\\g<1>``, is refused).

    A class inside a class is their union in Oniguruma and a literal ``[`` to ``regex`` (BLOOM's
    ``[^(\\s|[.,!?…。，、।۔،])]`` did not compile): a nested class is written out in the outer one;
    a negated nested class, an intersection (``&&``) and a POSIX bracket (``[:digit:]``: every
    decimal digit to Oniguruma, ASCII ones to ``regex``) are refused (ValueError).

    Oniguruma's ``\\w`` is not ``regex``'s (which is Alphabetic, marks, decimal digits, connector
    punctuation and the two joiners U+200C/U+200D): on its own it also takes ``²³¹¼½¾`` and not the
    joiners; inside a class it takes neither (probed on every code point through HF ``tokenizers``'
    ``Split``, ``tests/test_oniguruma_classes.py``). Both are written out as classes, as are ``\\W``
    on its own, ``\\p{Word}``, ``\\h`` and ``\\p{XDigit}`` (ASCII hex digits) and ``\\x{HHHH}``.
    """
    if not re.search(r"\}\+|\\[wWhHzZNecg]|\\x\{|\\[pP]\{\^?(?i:word|xdigit)|\[[^\]]*\[|&&|[$^]|\(\?[imx-]", pattern):
        return pattern
    tokens: list[str] = []
    atom_start = -1  # index in tokens where the last complete atom starts
    groups: list[int] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            end = _escape_end(pattern, i, n)
            atom_start = len(tokens)
            tokens.append(_onig_escape(pattern[i:end], in_class=False))
            i = end
        elif ch == "[":
            j = _class_end(pattern, i, n)
            atom_start = len(tokens)
            tokens.append(_onig_class(pattern[i:j]))
            i = j
        elif ch == "(":
            groups.append(len(tokens))
            flags = re.match(r"\(\?[imx]*(?:-[imx]*)?[:)]", pattern[i:])
            if flags:  # Ruby's (?m) is dot-all, which is ``regex``'s (?s)
                tokens.append(flags.group().replace("m", "s"))
                i += flags.end()
                if flags.group().endswith(")"):
                    groups.pop()
                continue
            tokens.append(ch)
            i += 1
        elif ch == ")":
            tokens.append(ch)
            atom_start = groups.pop() if groups else len(tokens) - 1
            i += 1
        else:
            m = re.match(r"\{\d+(?:,\d*)?\}", pattern[i:])
            if m:
                if pattern[i + m.end() : i + m.end() + 1] == "+" and atom_start >= 0:
                    atom = "".join(tokens[atom_start:])
                    del tokens[atom_start:]
                    tokens.append(f"(?:{atom}{m.group()})+")
                    i += m.end() + 1
                else:
                    tokens.append(m.group())
                    i += m.end()
                continue
            if ch not in "|*+?":
                atom_start = len(tokens)
            tokens.append(_ONIG_ANCHORS.get(ch, ch))
            i += 1
    return "".join(tokens)


@lru_cache(maxsize=256)
def compile_pattern(pattern: str, *, literal: bool = False) -> regex.Pattern:
    """A file-supplied pattern compiled for :func:`find_matches` (one-line error if malformed)."""
    try:
        return regex.compile(regex.escape(pattern) if literal else onig_regex(pattern))
    except (regex.error, IndexError, ValueError) as exc:
        raise BpebenchError(f"bad pattern {pattern[:80]!r}: {exc}") from None
    except RecursionError:  # groups nested thousands deep: the regex parser recurses per level
        raise BpebenchError(f"bad pattern {pattern[:80]!r}: nested too deeply") from None


#: Ruby's anchors (Oniguruma's default syntax, which HF uses) are per line: ``^`` after each line feed,
#: ``$`` before each, ``\\Z`` before a last one, ``\\z`` only at the end; written as ``regex`` reads
#: them (``$`` as a one-class look-ahead, which the program compiler takes)
_ONIG_ANCHORS = {"^": "(?<![^\\n])", "$": "(?![^\\n])"}
#: escapes Oniguruma reads otherwise than ``regex``: (alone, inside a class; None: refused there)
_ONIG_ESCAPES = {
    "\\Z": ("$", None), "\\z": ("\\Z", None),
    "\\N": ("[^\\n]", None), "\\e": ("\\x1b", "\\x1b"),  # a character but a line feed; escape
    "\\w": (ONIG_WORD, ONIG_WORD_IN_CLASS), "\\W": (ONIG_NOT_WORD, None),
    "\\h": ("[0-9a-fA-F]", "0-9a-fA-F"), "\\H": ("[^0-9a-fA-F]", None),  # hex digits (``regex``: blanks)
}


def _onig_escape(escape: str, in_class: bool) -> str:
    """One escape of an Oniguruma pattern as ``regex`` reads it (alone, or ``in_class``): ``\\w``,
    ``\\h`` (a hex digit), ``\\p{Word}`` and ``\\p{XDigit}`` (ASCII's) as Oniguruma reads them,
    ``\\x{HHHH}`` as ``\\UHHHHHHHH``; ValueError for a negated one inside a class."""
    if escape.startswith("\\c") and len(escape) == 3:  # control-X: the character's low five bits
        return f"\\x{ord(escape[2]) & 0x1F:02x}"
    if escape == "\\g":
        raise ValueError("a subexpression call (\\g<...>) is not supported")
    if escape.startswith("\\x{") and escape.endswith("}"):
        try:
            return f"\\U{int(escape[3:-1], 16):08X}"
        except ValueError:
            raise ValueError(f"bad code point escape {escape!r}") from None
    if escape[1:2] in ("p", "P") and escape[2:3] == "{":
        name = escape[3:-1]
        negated = (escape[1] == "P") != name.startswith("^")
        key = re.sub(r"[\s_-]", "", name.lstrip("^")).lower()
        if key in ("word", "xdigit"):
            escape = ("\\W" if negated else "\\w") if key == "word" else ("\\H" if negated else "\\h")
    forms = _ONIG_ESCAPES.get(escape)
    if forms is None:
        return escape
    if in_class and forms[1] is None:
        raise ValueError(f"{escape} inside a class is not supported")
    return forms[1] if in_class else forms[0]


def _escape_end(text: str, i: int, limit: int) -> int:
    """Where the escape at ``text[i]`` (a backslash) ends: ``\\p{..}``, ``\\x{..}``, ``\\u{..}``,
    ``\\cX`` (a control character) or two characters; ``limit`` for a brace never closed."""
    if text[i + 1:i + 2] in ("p", "P", "x", "u") and text[i + 2:i + 3] == "{":
        return text.find("}", i) + 1 or limit
    return i + 3 if text[i + 1:i + 2] == "c" else i + 2


def _class_end(text: str, i: int, limit: int) -> int:
    """Where the class opening at ``text[i]`` ends (past its bracket), classes inside it counted; a
    ``^`` first and a ``]`` right after the opening (or the ``^``) are its own characters."""
    j = i + 1
    j += text[j:j + 1] == "^"
    j += text[j:j + 1] == "]"
    depth = 1
    while j < limit and depth:
        if text[j] == "\\":
            j += 2
            continue
        depth += {"[": 1, "]": -1}.get(text[j], 0)
        j += 1
    return j


def _onig_class(text: str) -> str:
    """One of Oniguruma's character classes (``text``, its brackets included) as ``regex`` reads it:
    ``\\w`` as Oniguruma reads it in a class, a class nested in it written out (their union);
    ValueError for a negated nested class, ``&&`` or a POSIX bracket."""
    out = ["["]
    i, end = 1, len(text) - 1  # ``end``: the closing bracket
    if text[i:i + 1] == "^":
        out.append("^")
        i += 1
    if text[i:i + 1] == "]":  # a leading "]" is a literal one
        out.append("\\]")
        i += 1
    while i < end:
        c = text[i]
        if c == "\\":
            close = _escape_end(text, i, end)
            out.append(_onig_escape(text[i:close], in_class=True))
            i = close
        elif text.startswith("[:", i) and text.find(":]", i) != -1:
            # Oniguruma's Unicode reading ([:digit:] is every decimal digit) is not ``regex``'s (ASCII)
            raise ValueError(f"a POSIX bracket ({text[i:text.find(':]', i) + 2]}) is not supported")
        elif c == "[":
            close = _class_end(text, i, end)
            inner = text[i:close]
            if inner[1:2] == "^":
                raise ValueError(f"a negated class inside a class ({inner[:20]!r}) is not supported")
            flat = _onig_class(inner)[1:-1]
            if flat.startswith("-"):
                flat = "\\" + flat
            if flat.endswith("-") and not flat.endswith("\\-"):
                flat = flat[:-1] + "\\-"
            out.append(flat)
            i = close
        elif text.startswith("&&", i):
            raise ValueError("a class intersection (&&) is not supported")
        else:
            out.append(c)
            i += 1
    out.append("]")
    return "".join(out)


def find_matches(compiled: regex.Pattern, text: str) -> list[tuple[int, int, bool]]:
    """HF ``Pattern::find_matches``: spans covering ``text``, each marked as a match or not."""
    if not text:
        return [(0, 0, False)]
    return _bounded(compiled, text, lambda timeout: _find_matches(compiled, text, timeout))


def substitute(compiled: regex.Pattern, text: str, content: str) -> str:
    """Every match of ``compiled`` in ``text`` replaced by the literal ``content`` (HF's ``Replace``
    without offsets), for a pattern that cannot match the empty string: the leftmost matches, none
    overlapping, are then the same for ``regex.sub`` as for Oniguruma (whose rule for an empty match
    right after another differs). One ``sub`` call, with the same bound on its time as a search."""
    if not text:
        return text
    if reference_text(text) is not None:  # the matches as the file's library reads the characters
        return "".join(content if matched else text[a:b] for a, b, matched in find_matches(compiled, text))
    template = content.replace("\\", "\\\\")  # the content is literal; ``sub`` reads backslashes
    return _bounded(compiled, text, lambda timeout: compiled.sub(template, text, timeout=timeout))


def _bounded(compiled: regex.Pattern, text: str, match):
    """``match(timeout)`` through :func:`run_matching`, a runaway pattern one line."""
    try:
        # the pattern is judged only for a text long enough to be watched (short ones are most calls)
        exponential = len(text) >= WATCHED_MIN_CHARS and _exponential_risk(compiled.pattern)
        return run_matching(match, len(text), exponential)
    except TimeoutError as exc:
        raise BpebenchError(
            f"pattern {compiled.pattern!r} ran longer than {exc.args[0]:g} s on a piece of {len(text)} characters"
            " (catastrophic backtracking?); set BPEBENCH_REGEX_TIMEOUT to allow more"
        ) from None


def _find_matches(compiled: regex.Pattern, text: str, timeout: float | None) -> list[tuple[int, int, bool]]:
    # code points newer than the library's Unicode are matched as their stand-ins (same positions)
    text = reference_text(text) or text
    spans: list[tuple[int, int, bool]] = []
    n = len(text)
    prev = pos = 0
    last_match_end = -1
    search = compiled.search
    while pos <= n:
        m = search(text, pos, timeout=timeout)
        if m is None:
            break
        s, e = m.span()
        if s == e and e == last_match_end:
            pos = e + 1  # Oniguruma's find_iter: no empty match right after a match
            continue
        pos = last_match_end = e
        if prev != s:
            spans.append((prev, s, False))
        spans.append((s, e, True))
        prev = e
    if prev != n:
        spans.append((prev, n, False))
    return spans


def character_class(points) -> str:
    """A character class of ``re`` holding exactly the code points ``points``, as ranges ("(?!)"
    for none)."""
    points = sorted(points)
    parts = []
    k = 0
    while k < len(points):
        j = k
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        first, last = re.escape(chr(points[k])), re.escape(chr(points[j]))
        parts.append(first if j == k else f"{first}-{last}")
        k = j + 1
    return "[" + "".join(parts) + "]" if parts else "(?!)"


def char_matches(text: str, chars) -> list[tuple[int, int, bool]]:
    """:func:`find_matches` for a character predicate (HF's ``Pattern`` for ``char`` and ``Fn(char)``)."""
    if not text:
        return [(0, 0, False)]
    spans: list[tuple[int, int, bool]] = []
    prev = 0
    for i, c in enumerate(text):
        if c in chars:
            if prev != i:
                spans.append((prev, i, False))
            spans.append((i, i + 1, True))
            prev = i + 1
    if prev != len(text):
        spans.append((prev, len(text), False))
    return spans


def build_component(spec, types: dict, kind: str, where: str):
    """The runtime object of one ``tokenizer.json`` component dict (None for null), or a
    one-line refusal naming a type that is not implemented."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise VocabularyError(f"{where}: {kind} {spec!r} is not an object")
    cls = types.get(spec.get("type"))
    if cls is None:
        raise VocabularyError(f"{where}: {kind} {spec.get('type')!r} is not supported"
                              f" (supported: {', '.join(sorted(types))})")
    return cls(spec, where)
