"""Pattern programs (``pattern_program`` + ``pretokenize_program`` + ``pretokenize_transducer``):
both engines (the transducer and the generated backtracking matcher) split exactly like
``regex.findall``, for every shape they accept, and refuse the shapes they do not."""

from __future__ import annotations

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpebench import corpora
from bpebench.algorithms.formats.patterns import PATTERNS
from bpebench.algorithms.pipeline.pattern_program import compile_pattern
from bpebench.algorithms.pipeline.pretokenize_program import program_pretokenizer

#: three shipped patterns (which have hand-written scanners too: a second, independent check of
#: the generator), the shapes custom tokenizers use, and the rarer constructs the generator emits
SHAPES = {
    **{name: PATTERNS[name] for name in ("gpt2", "cl100k", "o200k")},
    "custom": r"\s?\p{L}+|\s?\p{N}{1,4}|\s?[^\s\p{L}\p{N}]+|\s+",
    "deepseek": r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
                r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "lazy": r"\p{L}+?\p{L}|\s+|\S",
    "look-ahead": r"\p{L}+(?=\s)|\S|\s+",
    "end": r"\s+\Z|\s+$|\S+|\s",
    "case-insensitive": r"(?i)[a-c]+|(?i:xy|z)?\d{2,3}|.|\n",
    "possessive group": r"(?:'s|'t)?+\w+|\W",
    # a piece whose end is settled only where a long run ends (the transducer's run-time path)
    "late end": r"\p{L}+\d|\p{L}|\s*\n|\s|\d",
    # o200k's case classes as llama.cpp spells them: one character in two classes, in groups
    "intersection": r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|(?:(?=\p{L})[^a-z])+\d"
                    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
}
#: shapes whose program the transducer refuses: a possessive group that the rest can fail after
NO_TRANSDUCER = {"possessive group"}
ALPHABET = (list("ab AZ \t\r\n.'1é中ſKßxyzXYZ\u00a0\u3000\u2019-_\u0301\u02b0sStTdD")
            + ["'s", "'T", " \n", "\n\n", "12345", " " * 9, "\n" + " " * 8, "abcdefghij"])


def _pieces(pattern: str, text: str) -> list[str]:
    compiled = regex.compile(pattern)
    return compiled.findall(text) if compiled.groups == 0 else [m.group() for m in compiled.finditer(text)]


@pytest.fixture(scope="module", params=[None, "backtracking"], ids=["fastest", "backtracking"])
def splitters(request):
    made = {name: program_pretokenizer(pattern, engine=request.param) for name, pattern in SHAPES.items()}
    assert all(made.values()), [name for name, s in made.items() if s is None]
    engines = {name: s.engine for name, s in made.items()}
    if request.param is None:
        assert engines == {name: "backtracking" if name in NO_TRANSDUCER else "transducer" for name in SHAPES}
    else:
        assert set(engines.values()) == {"backtracking"}
    return made


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_the_compiled_engines_split_like_regex(splitters, text):
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    for name, splitter in splitters.items():
        pieces = _pieces(SHAPES[name], text)
        ends = splitter.piece_ends(data)
        if ends is None:  # text the pattern leaves out: regex answers, and it must indeed drop some
            assert sum(map(len, pieces)) < len(text), (name, text)
            assert splitter.split(text) == pieces
            continue
        assert ends.tolist() == np.cumsum([len(p.encode("utf-8")) for p in pieces]).tolist(), (name, text, pieces)


@pytest.mark.parametrize("engine", ["transducer", "backtracking"])
def test_text_the_pattern_leaves_out_goes_to_regex(engine):
    splitter = program_pretokenizer(r"\p{L}+", engine=engine)
    for text in ("ab, cd", "ab,", ",ab", "ab\u00e9 \u00e9"):
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        assert splitter.piece_ends(data) is None and splitter.split(text) == regex.findall(r"\p{L}+", text)
    assert splitter.piece_ends(np.frombuffer("abc".encode(), dtype=np.uint8)).tolist() == [3]
    assert splitter.piece_ends(np.frombuffer(b"", dtype=np.uint8)).tolist() == []


@pytest.mark.parametrize("name", ["o200k", "llama3", "qwen2", "tekken", "custom", "deepseek", "gpt2", "cl100k", "end"])
def test_the_transducer_settles_long_runs_like_regex(name):
    r"""Whitespace after a line feed keeps ``\s*[\r\n]+`` alive for as long as it runs: past
    ``MAX_DELAY`` characters the piece's end is kept at run time and its text read again, in the
    middle of the text and at its end; one character may also settle several pieces."""
    from bpebench.algorithms.pipeline.pretokenize_transducer import MAX_DELAY

    pattern = SHAPES.get(name) or PATTERNS[name]
    splitter = program_pretokenizer(pattern)
    assert splitter.engine == "transducer"
    texts = [f"x\n{' ' * k}{tail}" for k in range(2 * MAX_DELAY + 3) for tail in ("y", "", "\n", " 1", "!", "\u00e9")]
    texts += ["a\n \n \n  \n   b", "'re'll'd x'", "123456789 12", "\u3000\n\u00a0\u00a0\t x", " " * 40 + "a",
              # ``$`` (gpt2's and cl100k's ``\s++$``): at the end, and before a final line feed only
              "x \n", "x  \n\n", "x \n ", "x\t\n", "\n", " \n", "x\n\n\ny", "x " + " \n" * 9]
    for text in texts:
        ends = splitter.piece_ends(np.frombuffer(text.encode(), dtype=np.uint8))
        pieces = _pieces(pattern, text)
        if sum(map(len, pieces)) < len(text):  # deepseek's pattern leaves digits out
            assert ends is None, (name, text)
            continue
        expected = np.cumsum([len(p.encode()) for p in pieces]).tolist()
        assert ends is not None and ends.tolist() == expected, (name, text)


def test_the_transducer_tables_are_kept_and_a_damaged_copy_is_built_again(tmp_path, monkeypatch):
    from bpebench.algorithms.pipeline import pretokenize_transducer

    monkeypatch.setenv("BPEBENCH_CACHE", str(tmp_path))
    pattern = SHAPES["deepseek"]
    pretokenize_transducer.transducer_for.cache_clear()
    try:
        built = pretokenize_transducer.transducer_for(pattern)
        files = list((tmp_path / "patterns").glob("transducer_*.bin"))
        assert built is not None and len(files) == 1
        pretokenize_transducer.transducer_for.cache_clear()
        read = pretokenize_transducer.transducer_for(pattern)
        assert read.table.tolist() == built.table.tolist() and read.final.tolist() == built.final.tolist()
        files[0].write_bytes(files[0].read_bytes()[:-9] + b"damaged!!")
        pretokenize_transducer.transducer_for.cache_clear()
        again = pretokenize_transducer.transducer_for(pattern)
        assert again.table.tolist() == built.table.tolist()
        # a refused program is remembered as refused
        assert pretokenize_transducer.transducer_for(SHAPES["possessive group"]) is None
        pretokenize_transducer.transducer_for.cache_clear()
        assert pretokenize_transducer.transducer_for(SHAPES["possessive group"]) is None
        assert len(list((tmp_path / "patterns").glob("transducer_*.bin"))) == 2
    finally:
        pretokenize_transducer.transducer_for.cache_clear()


def test_asking_for_a_transducer_that_does_not_exist_is_an_error():
    with pytest.raises(ValueError, match="no transducer"):
        program_pretokenizer(SHAPES["possessive group"], engine="transducer")


@pytest.mark.parametrize("pattern", [
    r"(a|aa)+", r"(?:ab)*c", r"((a)b)", r"\bword\b", r"(?<=a)b", r"(a)\1", r"x*|y", r"(?x)a b", r"^a", r"a{2,1}",
    r"[[:alpha:]]+", r"(?:a|b+)c", "(?:ab|c)??d", "a**",
])
def test_shapes_outside_the_subset_are_refused(pattern):
    """Refused means None (the pattern stays on regex), never a wrong matcher: repeated, nested or
    lazy groups, anchors, look-behind, back-references, empty matches, verbose mode, sets in sets."""
    assert compile_pattern(pattern) is None


def test_a_cache_root_that_cannot_be_written_leaves_the_generated_matcher_on_regex(tmp_path, monkeypatch):
    """The generated matcher is a module written under the cache root: without one the pattern stays
    on ``regex``. The transducer needs no file (its tables are built in memory when they cannot be
    kept), so the same pattern still splits through it, as ``regex`` does."""
    from bpebench.algorithms.pipeline import pretokenize_program, pretokenize_transducer

    pattern = r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+"
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("BPEBENCH_CACHE", str(blocked))
    pretokenize_program._matcher.cache_clear()
    pretokenize_transducer.transducer_for.cache_clear()
    try:
        assert program_pretokenizer(pattern, engine="backtracking") is None
        splitter = program_pretokenizer(pattern)
        assert splitter.engine == "transducer"
        text = "Ein Test, 42 mal.\n  ok"
        data = np.frombuffer(text.encode(), dtype=np.uint8)
        assert splitter.piece_ends(data).tolist() == np.cumsum([len(p.encode()) for p in _pieces(pattern, text)]).tolist()
    finally:
        pretokenize_program._matcher.cache_clear()
        pretokenize_transducer.transducer_for.cache_clear()


def test_a_vocabulary_with_its_own_pattern_is_fused_through_the_program():
    from bpebench.algorithms.formats import load_vocabulary
    from bpebench.algorithms.formats.vocabulary import Vocabulary
    from bpebench.algorithms.pipeline.pretokenize_program import ProgramPretokenizer
    from bpebench.algorithms.pipeline.tokenizer import Tokenizer

    base = load_vocabulary("cl100k_base")
    vocab = Vocabulary.from_ranks(list(base.tokens), name="cl100k-deepseek", pattern=SHAPES["deepseek"])
    tok = Tokenizer(vocab)
    assert isinstance(tok._fused.splitter, ProgramPretokenizer)
    text = "Hello, wörld!  x = f(12345);\n\n\tdon't 中文 stop.\n" * 50
    assert tok.encode_ordinary(text) == Tokenizer(vocab, algorithm="heap").encode_ordinary(text)


def test_a_transducer_too_large_is_refused_after_shorter_waits(monkeypatch):
    """o200k's program fits in 865 states x 28 kinds with waits of up to three characters (37 with
    one); with room for fewer entries the build tries each shorter wait, then gives up (None: the
    generated matcher keeps the pattern)."""
    from bpebench.algorithms.pipeline import pretokenize_transducer

    program = compile_pattern(PATTERNS["o200k"])
    assert pretokenize_transducer.build_transducer(program) is not None
    tried = []
    real = pretokenize_transducer._build

    def build(program, delay):
        tried.append(delay)
        return real(program, delay)

    monkeypatch.setattr(pretokenize_transducer, "_build", build)
    monkeypatch.setattr(pretokenize_transducer, "MAX_ENTRIES", 500)
    assert pretokenize_transducer.build_transducer(program) is None
    assert tried == [pretokenize_transducer.MAX_DELAY, 3, 1]


@pytest.mark.parametrize("engine", ["transducer", "backtracking"])
def test_the_compiled_split_releases_the_gil(engine):
    """The threads of a batch split their texts at the same time: both engines' entry points are
    compiled ``nogil`` (two splits of 1.6 MB on two threads took 0.68x the time of one after another,
    1.09x while the split held the GIL)."""
    splitter = program_pretokenizer(SHAPES["custom"], engine=engine)
    assert splitter._matcher.targetoptions.get("nogil") is True
    data = np.frombuffer("two threads, one text each".encode(), dtype=np.uint8)
    assert splitter.piece_ends(data).tolist() == np.cumsum([len(p) for p in _pieces(SHAPES["custom"], "two threads, one text each")]).tolist()


@settings(max_examples=100, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=30).map("".join))
def test_a_windows_settled_ends_are_those_of_every_longer_text(text):
    """``window_ends`` of each prefix of a text (at character starts): the ends it says are settled
    are the first ends of the whole text (the transducer writes an end only once what follows
    cannot change it), and all its ends are those of the prefix as a text of its own."""
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    for name, pattern in SHAPES.items():
        if name in NO_TRANSDUCER:
            continue
        splitter = program_pretokenizer(pattern, engine="transducer")
        whole = splitter.piece_ends(data)
        if whole is None:
            continue
        for cut in [i for i in range(len(data) + 1) if i == len(data) or not 0x80 <= data[i] < 0xC0]:
            found = splitter.window_ends(data[:cut])
            prefix = splitter.piece_ends(data[:cut])
            if found is None:
                assert prefix is None
                continue
            ends, settled = found
            assert ends.tolist() == prefix.tolist()
            assert ends[:settled].tolist() == whole[:settled].tolist(), (name, text, cut)
    with pytest.raises(ValueError, match="transducer"):
        program_pretokenizer(SHAPES["custom"], engine="backtracking").window_ends(data)


def _parts_ends(splitter, data: np.ndarray, cuts: list[int]) -> list[int] | None:
    """The text's piece ends as ``parallel_split`` makes them part by part from the cuts ``cuts``
    (character starts), or None when a part's check fails."""
    from bpebench.algorithms.pipeline import parallel_split

    starts = [parallel_split.part_start(splitter, data, cut) for cut in [0, *cuts]] + [len(data)]
    if None in starts:
        return None
    ends = []
    for start, stop in zip(starts, starts[1:]):
        part = parallel_split.part_ends(splitter, data, start, stop)
        if part is None:
            return None
        ends += (part + start).tolist()
    return ends


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(ALPHABET), max_size=150).map("".join), data=st.data())
def test_a_text_split_part_by_part_splits_like_the_whole(splitters, monkeypatch, text, data):
    """``parallel_split``: parts cut anywhere, each split from its guessed start to a short margin
    past the next part's (a probe and a margin of a few bytes, so that some checks fail): whenever
    every check holds, the ends are the whole text's, for every pattern with a transducer."""
    from bpebench.algorithms.pipeline import parallel_split

    encoded = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    starts = [i for i in range(1, len(encoded)) if not 0x80 <= encoded[i] < 0xC0]
    cuts = sorted(set(data.draw(st.lists(st.sampled_from(starts), max_size=6)))) if starts else []
    monkeypatch.setattr(parallel_split, "PROBE_BYTES", data.draw(st.integers(1, 12)))
    monkeypatch.setattr(parallel_split, "MARGIN_BYTES", data.draw(st.integers(1, 12)))
    for name, splitter in splitters.items():
        if splitter.engine != "transducer":
            continue
        whole = splitter.piece_ends(encoded)
        found = _parts_ends(splitter, encoded, cuts)
        if whole is None:
            assert found is None, (name, text)
        elif found is not None:
            assert found == whole.tolist(), (name, text, cuts)


def test_parts_fall_in_step_on_natural_text_and_the_checks_catch_what_does_not():
    """With the real probe and margin, parts cut every few kB of prose pass their checks and give the
    whole split; a run of digits taken in threes across a cut, or a whitespace run longer than the
    margin, fails a check rather than giving other ends."""
    from bpebench.algorithms.pipeline import parallel_split

    splitter = program_pretokenizer(SHAPES["o200k"], engine="transducer")
    text = corpora.get("prose-en", size=60_000)
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    cuts = [parallel_split.character_start(data, k) for k in range(3_000, len(data), 3_001)]
    assert _parts_ends(splitter, data, cuts) == splitter.piece_ends(data).tolist()
    digits = np.frombuffer(("x " + "1234567" * 100).encode(), dtype=np.uint8)
    assert splitter.piece_ends(digits).tolist()[:4] == [1, 2, 5, 8]  # "x", " ", "123", "456", ...
    assert parallel_split.part_start(splitter, digits, 3) == 9  # "234", "567": out of step
    assert _parts_ends(splitter, digits, [3]) is None
    spaces = np.frombuffer(("word" + " " * 3 * parallel_split.MARGIN_BYTES + "end").encode(), dtype=np.uint8)
    assert _parts_ends(splitter, spaces, [2]) is None
    assert _parts_ends(splitter, spaces, [len(spaces) - 1]) == splitter.piece_ends(spaces).tolist()


ASCII_ALPHABET = [c for c in ALPHABET if c.isascii()] + ["x\n" + " " * 12 + "y", " " * 20, "'re", "a1", "!?"]


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(ASCII_ALPHABET), max_size=60).map("".join))
def test_two_ascii_characters_a_step_split_like_one_and_like_regex(text):
    """ASCII text goes through the table of two characters a step; the same transducer without
    that table (one character a step) and ``regex`` give the same ends, rare steps included (runs
    of whitespace after a line feed overflow, several ends at once)."""
    from bpebench.algorithms.pipeline import pretokenize_transducer as t

    for name in ("custom", "deepseek", "o200k", "late end", "end", "gpt2"):
        both = t.transducer_for(SHAPES[name])
        assert both.pairs.shape[0] > 0, name
        assert _ascii_ends(name, text) == _ascii_ends(name, text, _one_character(both)) == _regex_ends(name, text), \
            (name, text)


def _ascii_ends(name: str, text: str, transducer=None) -> list[int] | None:
    """The transducer's piece ends of an ASCII text for the shape ``name`` (None: text left out)."""
    from bpebench.algorithms.pipeline import pretokenize_transducer as t

    transducer = transducer or t.transducer_for(SHAPES[name])
    ends = np.empty(len(text) + 1, dtype=np.int64)
    m = t.split_utf8(np.frombuffer(text.encode("ascii"), dtype=np.uint8),
                     *t.split_arguments(transducer, compile_pattern(SHAPES[name])), ends)
    return ends[:m].tolist() if m >= 0 else None


def _one_character(transducer):
    """The transducer without its table of two characters a step (nor, so, the two halves)."""
    return transducer._replace(pairs=transducer.pairs[:0], pair_shift=0, pair_kind=transducer.pair_kind[:0],
                               to_pair=transducer.to_pair[:0])


def _regex_ends(name: str, text: str) -> list[int] | None:
    pieces = _pieces(SHAPES[name], text)
    return np.cumsum([len(p) for p in pieces]).tolist() if sum(map(len, pieces)) == len(text) else None


@settings(max_examples=40, deadline=None)
@given(unit=st.lists(st.sampled_from(ASCII_ALPHABET), min_size=1, max_size=40).map("".join),
       lead=st.lists(st.sampled_from(ASCII_ALPHABET), max_size=12).map("".join))
def test_a_long_ascii_text_read_as_two_halves_splits_like_regex(unit, lead):
    """An ASCII text of ``TWO_LANES_MIN`` bytes or more is read as two runs side by side that meet
    past the middle; the ends equal ``regex``'s and the one-character split's (which has no halves),
    wherever the middle falls (the drawn unit repeated, shifted by a drawn lead)."""
    from bpebench.algorithms.pipeline import pretokenize_transducer as t

    text = lead + unit * (t.TWO_LANES_MIN // len(unit) + 1)
    assert len(text) >= t.TWO_LANES_MIN
    for name in ("custom", "deepseek", "o200k", "late end", "end", "gpt2"):
        one = _one_character(t.transducer_for(SHAPES[name]))
        assert _ascii_ends(name, text) == _ascii_ends(name, text, one) == _regex_ends(name, text), name


def test_halves_that_do_not_meet_leave_the_text_to_the_first_run():
    """The runs meet only in a state whose future does not depend on the last match kept at run
    time. In a long run of spaces after a line feed, o200k's pattern waits in such overflow states
    past the middle: the halves do not meet, the first run reads on alone, and the ends are still
    ``regex``'s. On prose they meet and the second run's ends are used."""
    from bpebench.algorithms.pipeline import pretokenize_transducer as t
    from bpebench.algorithms.pipeline.transducer_split import _two_lanes

    transducer = t.transducer_for(SHAPES["o200k"])
    assert 0 < transducer.mark_free.sum() < len(transducer.mark_free)
    waits = "a\n" + " " * 3000 + "b\n"
    prose = "The cat's 12 hats, she said:  fine.\n" * 80

    def reached(text: str) -> int:
        ends = np.empty(len(text) + 1, dtype=np.int64)
        tr = transducer
        return _two_lanes(np.frombuffer(text.encode(), dtype=np.uint8), tr.byte_kinds, tr.table, tr.start,
                          tr.n_kinds, tr.pairs, tr.pair_shift, tr.pair_kind, tr.to_pair, tr.mark_free, ends)[3]

    assert reached(waits) < len(waits)
    assert reached(prose) == len(prose)
    for text in (waits, prose, "x" + waits, waits + " " * 5):
        assert _ascii_ends("o200k", text) == _regex_ends("o200k", text)


def test_the_transducer_splits_without_the_jit():
    """``NUMBA_DISABLE_JIT=1``: a pattern no built-in scanner knows loads and splits as plain Python
    (the intrinsics' Python twins), a long ASCII text's halves and non-ASCII text included, equal
    to ``regex``."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np, regex\n"
        "from bpebench.algorithms.pipeline.pretokenize_program import program_pretokenizer\n"
        f"p = {SHAPES['custom']!r}\n"
        "s = program_pretokenizer(p)\n"
        "assert s.engine == 'transducer', s.engine\n"
        "for t in ['The cat\\'s 12 hats,  she said:\\n    fine.\\n' * 80, 'caf\\u00e9 12345 \\u4e2d\\u6587!']:\n"
        "    e = s.piece_ends(np.frombuffer(t.encode(), np.uint8)).tolist()\n"
        "    assert e == np.cumsum([len(x.encode()) for x in regex.findall(p, t)]).tolist(), t\n"
        "print('ok')\n"
    )
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_the_table_of_two_characters_a_step_is_left_out_when_too_large(monkeypatch):
    from bpebench.algorithms.pipeline import pretokenize_transducer as t

    program = compile_pattern(SHAPES["deepseek"])
    transducer = t.transducer_for(SHAPES["deepseek"])
    rows = len(transducer.final) << transducer.pair_shift
    assert transducer.pairs.shape[0] == rows
    monkeypatch.setattr(t, "MAX_PAIR_ENTRIES", rows - 1)
    smaller = t._transducer(transducer.table, transducer.final, transducer.start, transducer.n_kinds,
                            transducer.byte_kinds)
    assert smaller.pairs.shape[0] == 0
    # more than 256 kinds: a column of two would not fit ``pair_kind``'s 16 bits
    many = np.zeros(300, dtype=np.uint64)  # one state, every kind back to it
    assert t._pair_tables(many, 1, 300, np.zeros(128, dtype=np.uint16))[0].shape[0] == 0
    text = "x = f(y)  \n\n    return y\n"  # no digits: deepseek's pattern leaves them out
    ends = np.empty(len(text) + 1, dtype=np.int64)
    m = t.split_utf8(np.frombuffer(text.encode(), dtype=np.uint8), *t.split_arguments(smaller, program), ends)
    assert m > 0 and ends[:m].tolist() == np.cumsum([len(p) for p in _pieces(SHAPES["deepseek"], text)]).tolist()


def test_a_generated_module_loaded_by_two_threads_at_once_is_whole_in_both():
    """Two threads' first use of one generated module: the second waits for the first to finish
    running it, rather than finding it half run in ``sys.modules`` (which lost ``split_utf8`` when two
    threads made a Tokenizer's first encode at once)."""
    import threading
    import uuid

    from bpebench.algorithms.pipeline.pretokenize_program import load_generated

    source = f"import time\nNONCE = {uuid.uuid4().hex!r}\ntime.sleep(0.3)\nVALUE = 1\n"
    found = []
    threads = [threading.Thread(target=lambda: found.append(load_generated(source, "test_race"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 2 and all(module is not None and module.VALUE == 1 for module in found)


@pytest.mark.parametrize("seed", range(3))
def test_two_stage_tables_are_numpys_unique_kinds_and_blocks(seed):
    """``two_stage`` tells blocks apart by their bytes and sorts only the distinct ones: the same
    tables as ``np.unique`` over the code points' bits and over the 256-code-point blocks."""
    from bpebench.algorithms.pipeline.pattern_program import two_stage

    rng = np.random.default_rng(seed)
    flat = np.zeros(0x110000, dtype=np.uint32)
    flat[:0x3000] = rng.integers(0, 6, 0x3000)  # many distinct blocks, few kinds
    flat[rng.integers(0, 0x110000, 500)] = rng.integers(1, 1 << 30, 500)  # lone kinds far apart
    kinds, kind_of = np.unique(flat, return_inverse=True)
    blocks, stage1 = np.unique(kind_of.astype(np.uint16).reshape(-1, 256), axis=0, return_inverse=True)
    got = two_stage(flat)
    assert [a.dtype for a in got] == [np.int32, np.uint16, np.uint32]
    assert got[0].tolist() == stage1.ravel().tolist()
    assert got[1].tolist() == blocks.ravel().tolist()
    assert got[2].tolist() == kinds.tolist()
