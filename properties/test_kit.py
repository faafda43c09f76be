"""Unit tests of the kit's parts: trainer, specs, codec, guard, probe, results."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings

from bpebench.algorithms.kernels.reference import bpe_reference

from .checks import CHECKS, payload_from_json, payload_to_json
from .guard import CallTimeout, CheckFailed, GuardedEncoder, Probe, as_ids, call_time_limit
from .kit import CheckResult, resolve_target
from .strategies import vocabulary_and_input
from .vocabularies import parse_trained_spec, resolve, train_bpe, trained_spec


def test_trainer_learns_the_most_frequent_pair_first():
    """Hand-worked: in ``abab abc`` the pair ``ab`` occurs 3 times, then ``ab ab`` twice."""
    v = train_bpe([b"ababab", b"abc"], merges=2, rule="ranks", alphabet="text")
    assert v.tokens == [b"a", b"b", b"c", b"ab", b"abab"]
    assert list(v.priority) == [0, 1, 2, 3, 4]
    assert [v.tokens[i] for i in bpe_reference(v, b"abababc")] == [b"abab", b"ab", b"c"]


def test_merges_rule_vocabulary_only_merges_listed_pairs():
    """``resplit`` lists ``bb`` as ``b + b`` but ``bbb`` as ``b + bb`` (not the trained ``bb + b``):
    BPE then never forms ``bbb`` from ``b b b`` (left merge first gives ``bb b``, unlisted)."""
    v = train_bpe([b"bbb"], merges=2, rule="merges", alphabet="text", resplit=1)
    merges = {(v.tokens[l], v.tokens[r]): v.tokens[m] for (l, r), (_, m) in v.merges.items()}
    assert merges == {(b"b", b"b"): b"bb", (b"b", b"bb"): b"bbb"}
    assert [v.tokens[i] for i in bpe_reference(v, b"bbb")] == [b"bb", b"b"]
    assert len(v.unreachable) == 1


def test_shuffled_ids_keep_the_priorities():
    plain = train_bpe([b"abcabc"], merges=3, rule="merges", alphabet="text")
    shuffled = train_bpe([b"abcabc"], merges=3, rule="merges", alphabet="text", shuffle=5)
    assert sorted(plain.tokens) == sorted(shuffled.tokens)
    assert any(plain.tokens[i] != shuffled.tokens[i] for i in range(len(plain.tokens)))
    data = b"abcabcab"
    assert [plain.tokens[i] for i in bpe_reference(plain, data)] == \
        [shuffled.tokens[i] for i in bpe_reference(shuffled, data)]


def test_specs_round_trip_and_rebuild_the_same_vocabulary():
    spec = trained_spec([b"\x00ab", b"zz"], merges=7, rule="merges", alphabet="all", shuffle=2, drop=1,
                        reorder=3, resplit=1, disorder=4, pattern="cl100k", normalizer="sentencepiece",
                        specials=["<a>", "zz"])
    p = parse_trained_spec(spec)
    assert p["texts"] == [b"\x00ab", b"zz"] and p["merges"] == 7 and p["drop"] == 1 and p["resplit"] == 1
    assert p["disorder"] == 4 and p["pattern"] == "cl100k" and p["specials"] == ["<a>", "zz"]
    training = {k: v for k, v in p.items() if k not in ("pattern", "normalizer", "specials")}
    vocab = resolve(spec)
    trained = train_bpe(**training)
    assert vocab.tokens == trained.tokens and vocab.merges == trained.merges
    assert list(vocab.priority) == list(trained.priority)
    assert vocab.pattern == "cl100k" and vocab.normalizer == "sentencepiece"
    assert vocab.special_tokens == {"<a>": len(vocab.tokens), "zz": len(vocab.tokens) + 1}


def test_payload_codec_round_trips_bytes_and_text():
    payload = {"vocab": "seed", "data": b"\x00\xff", "text": "é", "ops": [["push", b"ab"], ["truncate", 1]]}
    assert payload_from_json(payload_to_json(payload)) == payload


def test_check_result_json_round_trip():
    r = CheckResult("equals-naive", "x", "seed", False, b"\x80", "bpebench verify ...", "msg", 0.5, True, "{}")
    back = CheckResult.from_json(r.to_json())
    assert back == r and back.status == "expected failure (approximate)" and back.ok


@pytest.mark.parametrize("out, message", [
    (None, "returned NoneType"),
    ([1.0], "holding float"),
    ([True], "holding bool"),
    ([99], "outside the vocabulary"),
    ((0, 1), None),
])
def test_guard_validates_encoder_output(out, message):
    v = resolve("seed")
    if message is None:
        assert as_ids("encode", out, v) == [0, 1]
    else:
        with pytest.raises(CheckFailed, match=message):
            as_ids("encode", out, v)


def test_guard_turns_exceptions_into_one_line_failures_naming_the_input():
    class Raises:
        def encode(self, data):
            raise KeyError("boom")

    guarded = GuardedEncoder(Raises(), resolve("seed"), timeout=None)
    with pytest.raises(CheckFailed, match=r"encode\(b'ab'\) raised KeyError") as info:
        guarded.encode(b"ab")
    assert info.value.data == b"ab"


def test_call_time_limit_interrupts_a_python_loop():
    start = time.perf_counter()
    with pytest.raises(CallTimeout):
        with call_time_limit(0.2):
            while True:
                pass
    assert time.perf_counter() - start < 30


def test_call_time_limit_is_wall_clock_and_interrupts_a_sleep():
    """Issue 25: a CPU-time limit never fires on an encoder that sleeps or blocks."""
    start = time.perf_counter()
    with pytest.raises(CallTimeout):
        with call_time_limit(0.2):
            time.sleep(60)
    assert time.perf_counter() - start < 30


def test_call_time_limit_works_outside_the_main_thread_and_leaves_no_late_exception():
    import threading

    outcome = []

    def worker():
        try:
            with call_time_limit(0.2):
                while True:
                    pass
        except CallTimeout:
            outcome.append("timed out")
        with call_time_limit(0.05):
            pass  # returns in time: no exception may arrive later
        for _ in range(200_000):
            pass
        outcome.append("no late exception")

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(60)
    assert outcome == ["timed out", "no late exception"]


def test_probe_shares_the_current_input(tmp_path):
    path = str(tmp_path / "probe")
    Probe.create(path)
    assert Probe.read(path) == (None, "")
    Probe(path).write(b"\x00hang", "seed")
    assert Probe.read(path) == (b"\x00hang", "seed")


def test_every_check_is_documented_in_the_module_table():
    from bpebench.properties import checks as checks_module

    for check_id in CHECKS:
        assert f"``{check_id}``" in checks_module.__doc__


def test_resolve_target_accepts_classes_names_and_paths():
    from bpebench.algorithms.naive import NaiveEncoder

    assert resolve_target("naive")[0] is NaiveEncoder
    assert resolve_target("bpebench.algorithms.naive:NaiveEncoder") == (NaiveEncoder, "bpebench.algorithms.naive:NaiveEncoder")
    assert resolve_target(NaiveEncoder)[1] == "bpebench.algorithms.naive:NaiveEncoder"


def test_profiles_are_registered_and_ci_is_derandomized():
    from hypothesis import settings

    from .settings import register_profiles

    register_profiles()
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None and ci.deadline is None
    assert settings.get_profile("fuzz").max_examples > settings.get_profile("dev").max_examples


def test_split_at_n_measures_an_approximate_encoder_by_its_own_counts():
    """Regression (found by hypothesis): the check wrapped every encoder as exact, so
    ``split_at_tokens`` took BPE's counts for greedy ("aab\\0" is 2 BPE tokens, 3 greedy ones)
    and the check failed instead of checking greedy's own split."""
    from .kit import replay

    payload = payload_from_json('{"vocab": "trained:rule=ranks,merges=3,alphabet=text,shuffle=0,'
                                'text=61626364.65666768696a6b6c.616200616161616200.61",'
                                ' "text": "aab\\u0000", "n": 2, "pipeline": false}')
    vocab = resolve(payload["vocab"])
    assert len(bpe_reference(vocab, b"aab\x00")) == 2  # BPE fits the whole text in 2 tokens
    result = replay("greedy", "split-at-n", payload)
    assert result.passed, result.message


#: found by hypothesis: with ``acab`` ranked after ``cacab``, BPE forms ``cacab`` from ``c + acab``
OUT_OF_ORDER = ('{"vocab":"trained:rule=ranks,merges=9,alphabet=all,shuffle=0,reorder=1,text=616361626162626263626'
                '161626162626361636262636163616261616163636162636162636163616262636162616361626261626363616163",'
                '"seed":0,"data":{"hex":"6361636162"}}')


def test_out_of_order_vocabulary_is_refused_not_failed_and_heap_passes():
    """Regression (found by hypothesis): backtracking gave ``ca cab`` where BPE gives ``cacab``;
    the compatibility encoders now refuse that vocabulary (n/a with the reason) and heap,
    which follows the definition, passes the same example."""
    from .kit import replay, run_check

    payload = payload_from_json(OUT_OF_ORDER)
    vocab = resolve(payload["vocab"])
    assert bpe_reference(vocab, b"cacab") == [vocab.token_id(b"cacab")]
    refused = replay("backtracking", "token-bytes", payload)
    assert refused.passed is None and "out of priority order" in refused.message, refused.message
    assert replay("heap", "token-bytes", payload).passed
    # named as the vocabulary of a whole check, the refusal is n/a before anything runs
    from bpebench.algorithms.core.registry import get_encoder_class

    result = run_check(get_encoder_class("table"), "equals-naive", payload["vocab"], max_examples=5)
    assert result.passed is None and "refuses" not in result.message and "priority order" in result.message


def test_drawn_vocabularies_an_encoder_refuses_are_redrawn_and_counted():
    from bpebench.algorithms.naive import NaiveEncoder

    from .kit import run_check

    class RefusesOddSizes(NaiveEncoder):
        name = "refuses-odd"

        @classmethod
        def unsupported_reason(cls, vocabulary):
            return "odd size" if len(vocabulary.tokens) % 2 else None

        def __init__(self, vocabulary):
            assert len(vocabulary.tokens) % 2 == 0, "built on a vocabulary it refuses"
            super().__init__(vocabulary)

    result = run_check(RefusesOddSizes, "equals-naive", "random", max_examples=30, target="refuses-odd")
    assert result.passed, result.message
    assert "drawn examples skipped, e.g. refuses-odd refuses vocabulary" in result.message


def test_split_at_n_blames_the_encoder_only_for_a_call_that_differs_from_the_reference():
    """The counts the chunking asked for are wrong (leftmost-longest takes 2 tokens for ``cbbbb``,
    BPE 3): the failure names that call."""
    from .kit import replay

    result = replay("bpebench.properties.mutants:GreedyPosingAsExact", "split-at-n",
                    {"vocab": "seed", "text": "cbbbb", "n": 2, "pipeline": True})
    assert result.passed is False, result.message
    assert "the encoder is wrong on a call the chunking made: count(b'cbbbb') = 2" in result.message
    assert "chunking fault" not in result.message


def test_split_at_n_reports_a_fault_of_the_chunking_as_such(monkeypatch):
    """The reference encoder with a broken split: not the encoder's failure."""
    from bpebench.algorithms.pipeline import chunking

    from .kit import replay

    monkeypatch.setattr(chunking, "_split_bytes", lambda encoder, data, n: 0)
    result = replay("naive", "split-at-n", {"vocab": "seed", "data": b"abacbb", "n": 2})
    assert result.passed is False
    assert result.message.startswith("chunking fault (not the encoder's"), result.message
    assert "the longest prefix with <= 2 tokens is b'abacbb'" in result.message


def test_a_failure_that_needs_earlier_calls_is_replayed_with_them():
    """Issue 18 item 5: the mutant's memo gives ``abaca`` the ids of ``abcbb`` (same length, same
    first two bytes) only after ``abcbb`` was encoded. A fresh encoder passes; the kit finds the
    one earlier call that matters, says so, and the reproduction makes it first."""
    from .checks import Context
    from .kit import _reproducible, replay
    from .mutants import StaleCacheKeyedOnPrefix

    ctx = Context(StaleCacheKeyedOnPrefix, call_timeout=30, build_timeout=300)
    enc = ctx.encoder("seed")
    for data in [b"ccccc", b"abcbb", b"bbbbb", b"cbcbc"]:
        enc.encode(data)
    payload = {"vocab": "seed", "data": b"abaca"}
    check = CHECKS["equals-naive"]
    with pytest.raises(CheckFailed):
        check.run(ctx, payload)
    again, note = _reproducible(StaleCacheKeyedOnPrefix, check, payload, ctx, list(enc.history))
    assert "depends on earlier calls: it fails after 1 earlier call(s)" in note, note
    assert again["history"] == [["encode", b"abcbb"]]
    target = "bpebench.properties.mutants:StaleCacheKeyedOnPrefix"
    assert replay(target, "equals-naive", payload).passed  # alone, on a fresh encoder: passes
    replayed = replay(target, "equals-naive", payload_from_json(payload_to_json(again)))
    assert replayed.passed is False and "after 1 earlier call(s)" in replayed.message, replayed.message
    assert replayed.counterexample == b"abaca"


def test_a_long_example_goes_to_a_file_the_reproduce_line_names(tmp_path, monkeypatch, capsys):
    from bpebench.cli import main

    from .kit import reproduce_command

    monkeypatch.chdir(tmp_path)
    payload = payload_to_json({"vocab": "seed", "data": b"abc" * 2000})
    command = reproduce_command("naive", "equals-naive", payload)
    assert "--example @.bpebench-examples/equals-naive-" in command and len(command) < 200
    argv = command.split()[1:]
    assert main(argv + ["--no-isolate"]) == 0
    assert "the example passes" in capsys.readouterr().out


@settings(deadline=None)
@given(vocabulary_and_input("random", max_size=300))
def test_the_long_reference_is_the_reference(case):
    """The heap version of the definition (for kB-long inputs) against the plain one."""
    from .oracles import long_reference

    spec, data = case
    vocab = resolve(spec)
    assert long_reference(vocab, data) == bpe_reference(vocab, data)
