"""The conformance kit: run the applicable checks on any encoder class and report.

>>> from properties import check_encoder
>>> results = check_encoder("naive", vocabularies=["random"], max_examples=5)   # doctest: +SKIP
>>> all(r.ok for r in results)                                                   # doctest: +SKIP
True

Which checks run is decided by the encoder's declared ``capabilities`` (see
``bpebench.properties.checks``). Each (check, vocabulary) runs as one hypothesis test; a
failure is shrunk to a minimal payload, recorded in a :class:`CheckResult` with a
``bpebench verify ... --example ...`` command that replays exactly that case.

**Hangs.** Encoders run in a worker process by default (``isolate=True``): the
parent gives every check ``check_timeout`` seconds and kills the worker when it
overruns (compiled numba loops cannot be interrupted in-thread), records that
check as failed with the input the worker was encoding (from the guard's probe
file), and starts a fresh worker for the remaining checks. Inside the worker
(and in-process) a Python-level hang, a sleep or a blocking call is cut by the
per-call wall-clock limit and shrunk like any failure. ``isolate=False`` runs in this process (used by the
pytest suite; pytest-timeout is the last resort there).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

from hypothesis import Verbosity, example, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from bpebench.errors import BpebenchError, UnknownNameError

from . import oracles
from .adapters import Incremental
from .checks import CHECKS, RANDOM, Context, approximate_report, main_bytes, payload_to_json
from .guard import CallTimeout, CheckFailed, Probe, VocabularyRefused, refusal, replay_calls, shown
from .settings import load_profile
from .strategies import FEATURES, inputs, vocabulary_specs
from .vocabularies import available, resolve, short_name

#: vocabularies ``bpebench verify`` uses by default ("random" = drawn trained vocabularies)
DEFAULT_VOCABULARIES = ("random", "cl100k_base", "o200k_base", "mistral_v1")
DEFAULT_CHECK_TIMEOUT = 180.0
DEFAULT_CALL_TIMEOUT = 30.0
DEFAULT_BUILD_TIMEOUT = 300.0
#: operations per run of an incremental state machine
STATEFUL_STEPS = 10
#: how a result the kit did not run starts its message
NOT_RUN = "not run:"
#: limits of the search for the earlier calls a failure depends on
HISTORY_TRIES, HISTORY_SECONDS = 300, 60.0


# ----------------------------------------------------------------------------- results
@dataclass
class CheckResult:
    """The outcome of one check of one encoder on one vocabulary kind.

    ``passed`` is True, False, or None when the check does not apply (the reason is
    in ``message``). ``expected_failure`` marks an exactness check that an
    approximate encoder fails by design.
    """

    check: str
    encoder: str
    vocabulary: str
    passed: bool | None
    counterexample: bytes | None = None
    reproduce: str | None = None
    message: str = ""
    seconds: float = 0.0
    expected_failure: bool = False
    example: str | None = None  # the failing payload as JSON (see checks.payload_to_json)
    hung: bool = False  # the encoder did not return within a time limit
    details: list[str] = field(default_factory=list)  # lines shown under the message (ids and bytes)

    @property
    def status(self) -> str:
        if self.passed is None:
            return "not run" if self.message.startswith(NOT_RUN) else "n/a"
        if self.passed:
            return "pass"
        return "expected failure (approximate)" if self.expected_failure else "FAIL"

    @property
    def ok(self) -> bool:
        """True unless this is a real failure."""
        return self.passed is not False or self.expected_failure

    def to_json(self) -> str:
        d = asdict(self)
        d["counterexample"] = None if self.counterexample is None else self.counterexample.hex()
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> "CheckResult":
        d = json.loads(text)
        if d.get("counterexample") is not None:
            d["counterexample"] = bytes.fromhex(d["counterexample"])
        return cls(**d)


# ----------------------------------------------------------------------------- targets
def resolve_target(target) -> tuple[type, str]:
    """``(class, target string)`` for a class, ``"module:Class"`` or a registered algorithm name."""
    if isinstance(target, type):
        spec = f"{target.__module__}:{target.__qualname__}"
        return target, spec
    text = str(target)
    if ":" not in text:
        from bpebench.algorithms.core.registry import get_encoder_class

        return get_encoder_class(text), text
    module_name, _, qualname = text.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BpebenchError(f"cannot import module {module_name!r}: {exc}") from None
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            known = sorted(n for n, v in vars(module).items() if isinstance(v, type) and hasattr(v, "encode"))
            raise UnknownNameError(f"class in {module_name}", qualname, known)
    if not isinstance(obj, type) or not callable(getattr(obj, "encode", None)):
        raise BpebenchError(f"{text} is not an encoder class (a class with encode(bytes) -> list[int])")
    return obj, text


def _importable(cls: type, spec: str) -> bool:
    if ":" not in spec:
        return True
    try:
        return resolve_target(spec)[0] is cls
    except BpebenchError:
        return False


def _is_exact(cls: type) -> bool:
    return "exact" in getattr(cls, "capabilities", ())


#: payloads longer than this go to a file the reproduce line names (``--example @FILE``)
INLINE_EXAMPLE_CHARS = 2000
EXAMPLES_DIR = ".bpebench-examples"


def reproduce_command(target: str, check_id: str, payload_json: str) -> str:
    """The command that replays one payload; a long one is written to ``.bpebench-examples/``
    (in the current directory, else the temporary one) and named as ``--example @FILE``."""
    example = payload_json
    if len(payload_json) > INLINE_EXAMPLE_CHARS:
        name = f"{check_id}-{hashlib.sha256(payload_json.encode()).hexdigest()[:12]}.json"
        for folder in (EXAMPLES_DIR, os.path.join(tempfile.gettempdir(), "bpebench-examples")):
            try:
                os.makedirs(folder, exist_ok=True)
                path = os.path.join(folder, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(payload_json)
            except OSError:
                continue
            example = "@" + path
            break
    return f"bpebench verify {shlex.quote(target)} --check {check_id} --example {shlex.quote(example)}"


# ----------------------------------------------------------------------------- one check, in-process
def _longest_tokens(vocab, n: int = 32) -> list[bytes]:
    cached = vocab.__dict__.get("_properties_longest")
    if cached is None:
        order = sorted((t for t in vocab.tokens if t), key=len, reverse=True)
        cached = vocab.__dict__["_properties_longest"] = order[:n]
    return cached


def _incremental_machine(ctx: Context, kind: str, direction: str, record, refused):
    def fresh_count(vocab, data):
        return len(oracles.long_reference(vocab, data))

    class IncrementalMachine(RuleBasedStateMachine):
        """push / truncate on the encoder's incremental counter; compare with a fresh count each step."""

        session: Incremental | None = None
        spec = ""

        def _payload(self):
            return {"vocab": self.spec, "direction": direction, "ops": [list(op) for op in self.session.ops]}

        def _guard(self, fn, *args):
            try:
                fn(*args)
            except HypothesisException:
                raise
            except CheckFailed as exc:
                record(self._payload() if self.session else {"vocab": self.spec, "direction": direction,
                                                             "ops": []}, str(exc), exc.data)
                raise

        @initialize(spec=vocabulary_specs(kind, min_merges=6, disorder=True))
        def start(self, spec):
            self.spec = spec

            def build():
                self.session = Incremental(ctx.encoder(spec), direction)

            try:
                self._guard(build)
            except VocabularyRefused as exc:
                refused.append(str(exc))
                reject()

        @rule(data=st.data())
        def push(self, data):
            chunk = data.draw(inputs(resolve(self.spec), max_size=10), label="chunk")
            self._guard(self.session.step, "push", chunk, fresh_count)

        @precondition(lambda self: self.session is not None and FEATURES["long-sequences"])
        @rule(data=st.data())
        def push_long_run(self, data):
            # texts past the sizes a buffer or an index might stop at (256 bytes, 1 kB ...)
            unit = data.draw(inputs(resolve(self.spec), max_size=32).filter(bool), label="unit")
            size = data.draw(st.sampled_from([200, 500]), label="size")
            self._guard(self.session.step, "push", (unit * (size // len(unit) + 1))[:size], fresh_count)

        @precondition(lambda self: self.session is not None and self.session.can_truncate)
        @rule(data=st.data())
        def push_long_token_then_cut_into_it(self, data):
            # the case incremental counters get wrong: a cut inside a long token
            vocab = resolve(self.spec)
            longest = _longest_tokens(vocab)
            token = data.draw(st.sampled_from(longest), label="token")
            self._guard(self.session.step, "push", token, fresh_count)
            if len(token) > 1:
                keep = data.draw(st.integers(1, len(token) - 1), label="keep")
                length = len(self.session.text) - len(token) + keep
                self._guard(self.session.step, "truncate", length, fresh_count)

        @precondition(lambda self: self.session is not None and self.session.can_truncate and self.session.text)
        @rule(data=st.data())
        def truncate(self, data):
            # cutting a byte or two off the end lands inside the last token most often; the cut is
            # drawn as a distance from the end so that it stays meaningful when the shrinker deletes
            # an earlier push (an absolute length would fall out of range and the step go inert)
            n = len(self.session.text)
            cut = data.draw(st.one_of(st.integers(0, min(3, n)), st.integers(0, n)), label="cut")
            self._guard(self.session.step, "truncate", n - cut, fresh_count)

    return IncrementalMachine


def run_check(
    cls: type,
    check_id: str,
    kind: str,
    *,
    target: str | None = None,
    max_examples: int | None = None,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    build_timeout: float | None = DEFAULT_BUILD_TIMEOUT,
    ctx: Context | None = None,
    seed: int | None = None,
) -> CheckResult:
    """Run one check on one vocabulary kind in this process (see :func:`check_encoder`)."""
    target = target or resolve_target(cls)[1]
    check = CHECKS[check_id]
    start = time.perf_counter()
    label = short_name(kind)
    encoder_name = getattr(cls, "name", "") or cls.__qualname__

    def result(**kw) -> CheckResult:
        return CheckResult(check=check_id, encoder=encoder_name, vocabulary=label,
                           seconds=round(time.perf_counter() - start, 3), **kw)

    reason = _not_applicable(cls, check_id, kind)
    if not reason and kind != RANDOM:
        try:
            reason = refusal(cls, resolve(kind))
        except CheckFailed as exc:
            return result(passed=False, message=str(exc))
    if reason:
        return result(passed=None, message=reason)
    ctx = ctx or Context(cls, call_timeout=call_timeout, build_timeout=build_timeout)
    ctx.start_check()
    n = max_examples or settings.default.max_examples
    if kind != RANDOM:
        n = max(3, int(n * check.real_fraction))
    found: dict = {}
    refused: list[str] = []  # drawn vocabularies the encoder declared it cannot encode

    def record(payload: dict, message: str, data: bytes | None = None, failure: CheckFailed | None = None) -> None:
        found["payload"], found["message"], found["data"] = payload, message, data
        found["hung"] = isinstance(failure, CallTimeout)
        found["details"] = list(getattr(failure, "details", ()) or ())
        # the calls made on the failing encoder object so far (it may be evicted and rebuilt later)
        guarded = ctx._encoders.get(payload.get("vocab", ""))
        found["history"] = list(guarded.history) if guarded is not None else []

    steps = STATEFUL_STEPS * (2 if FEATURES["long-sequences"] else 1)
    run_settings = settings(settings.default, max_examples=n, verbosity=Verbosity.quiet, stateful_step_count=steps)
    if seed is not None:  # this seed's examples, not those the database or derandomizing would give
        run_settings = settings(run_settings, derandomize=False, database=None)
    try:
        if check.stateful:
            machine = _incremental_machine(ctx, kind, check.stateful, record, refused)
            if seed is not None:
                machine._hypothesis_internal_use_seed = seed
            run_state_machine_as_test(machine, settings=run_settings)
        else:
            def prop(payload: dict) -> None:
                try:
                    check.run(ctx, payload)
                except HypothesisException:
                    raise
                except VocabularyRefused as exc:
                    refused.append(str(exc))
                    reject()
                except CheckFailed as exc:
                    if exc.data is not None and "data" not in payload and check_id == "token-bytes":
                        payload = {**payload, "data": exc.data}  # replay just the failing token
                    record(payload, str(exc), exc.data, exc)
                    raise
                except (KeyboardInterrupt, SystemExit, GeneratorExit):
                    raise
                except BaseException as exc:  # an oracle or the kit itself broke: report, do not hide
                    if type(exc).__module__.startswith("hypothesis"):
                        raise
                    record(payload, f"kit error: {type(exc).__name__}: {str(exc)[:200]}")
                    raise CheckFailed(found["message"]) from None

            prop._hypothesis_internal_add_digest = f"{target}|{check_id}|{kind}".encode()
            test = given(check.payloads(kind))(prop)
            for pinned in check.pinned(kind):
                test = example(pinned)(test)
            if seed is not None:
                test = hypothesis_seed(seed)(test)
            run_settings(test)()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        if not found:
            return result(passed=False, message=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        payload, message = found["payload"], found["message"]
        if not check.stateful and not found["hung"]:
            payload, note = _reproducible(cls, check, payload, ctx, found["history"])
            message += note
        elif isinstance(exc, Flaky):
            message += " (flaky: did not fail again on replay)"
        payload_json = payload_to_json(payload)
        expected = check.exactness and not _is_exact(cls) and not found["hung"]
        if expected:
            try:
                message += "; " + approximate_report(ctx, kind)
            except CheckFailed as inner:
                message += f"; (sample not measured: {inner})"
        # the counterexample is the payload's input: the one the reproduce line replays
        shown_bytes = main_bytes(payload)
        if shown_bytes is None:
            shown_bytes = found.get("data")
        return result(passed=False, counterexample=shown_bytes, message=message, hung=found["hung"],
                      details=found["details"], reproduce=reproduce_command(target, check_id, payload_json),
                      example=payload_json, expected_failure=expected)
    message = f"{n} examples"
    if refused:
        message += f"; {len(refused)} drawn examples skipped, e.g. {refused[0]}"
    return result(passed=True, message=message)


# ----------------------------------------------------------------------------- history-dependent failures
def _fails(cls, check, payload: dict, ctx: Context, calls=None) -> bool:
    """Does ``payload`` fail on a fresh encoder (after making ``calls`` on it first)?"""
    fresh = Context(cls, call_timeout=ctx.call_timeout, build_timeout=ctx.build_timeout)
    try:
        if calls:
            try:
                replay_calls(fresh.encoder(payload["vocab"]), calls)
            except CheckFailed:
                return False  # an earlier call failing is another failure, not this one
        check.run(fresh, payload)
    except VocabularyRefused:
        return False
    except CheckFailed:
        return True
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:  # the kit or an oracle broke on it: it does fail
        return True
    return False


def _reproducible(cls, check, payload: dict, ctx: Context, history: list) -> tuple[dict, str]:
    """``(payload, note)``: the payload unchanged when it fails on a fresh encoder; else, when
    the failure needs earlier calls on the same encoder object (a cache, a buffer, state that
    leaks between calls), the payload with the fewest of those calls found as its ``history``."""
    if _fails(cls, check, payload, ctx):
        return payload, ""
    calls = _minimal_history(cls, check, payload, ctx, history) if history else None
    if calls is None:
        return payload, " (flaky: did not fail again on replay, on a fresh encoder or after the earlier calls)"
    return {**payload, "history": [[method, arg] for method, arg, *_ in calls]}, (
        f" (depends on earlier calls: it fails after {len(calls)} earlier call(s) on the same encoder object,"
        f" not on a fresh one; the reproduce line makes them first)")


def _minimal_history(cls, check, payload: dict, ctx: Context, history: list) -> list | None:
    """A short subsequence of ``history`` after which ``payload`` still fails (None if even the
    whole does not make it fail): the shortest tail that works, then chunks dropped while it
    still fails, within :data:`HISTORY_TRIES` replays and :data:`HISTORY_SECONDS`."""
    deadline = time.monotonic() + HISTORY_SECONDS
    tries = [0]

    def fails(calls) -> bool:
        tries[0] += 1
        return _fails(cls, check, payload, ctx, calls)

    def spent() -> bool:
        return tries[0] >= HISTORY_TRIES or time.monotonic() > deadline

    if not fails(history):
        return None
    calls = history
    k = 1
    while k < len(calls) and not spent():
        if fails(calls[-k:]):
            calls = calls[-k:]
            break
        k *= 2
    chunk = len(calls) // 2
    while chunk >= 1 and not spent():
        i = 0
        while i < len(calls) and not spent():
            trial = calls[:i] + calls[i + chunk:]
            if trial != calls and fails(trial):
                calls = trial
            else:
                i += chunk
        chunk //= 2
    return calls


def replay(target, check_id: str, payload: dict, *, call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
           isolate: bool = False, check_timeout: float = DEFAULT_CHECK_TIMEOUT) -> CheckResult:
    """Run one check on exactly one payload (what a reproduction command does).

    With ``isolate=True`` it runs in a worker under the watchdog, so replaying a hang
    in compiled code reports it instead of hanging this process.
    """
    cls, target = resolve_target(target)
    if check_id not in CHECKS:
        raise UnknownNameError("check", check_id, list(CHECKS))
    if isolate:
        (r,) = _run_isolated(cls, target, [[check_id, payload.get("vocab", ""), payload_to_json(payload)]],
                             max_examples=None, check_timeout=check_timeout, call_timeout=call_timeout,
                             profile=None, on_result=None)
        return r
    return replay_here(cls, target, check_id, payload, Context(cls, call_timeout=call_timeout,
                                                                build_timeout=DEFAULT_BUILD_TIMEOUT))


def replay_here(cls, target: str, check_id: str, payload: dict, ctx: Context) -> CheckResult:
    """Run ``payload`` once; a ``history`` in it is made on a fresh encoder first."""
    check = CHECKS[check_id]
    start = time.perf_counter()
    passed, message, data, hung, details = True, "the example passes", None, False, []
    history = payload.get("history")
    shown_as = (check_id, payload)
    try:
        if history:
            ctx = Context(cls, call_timeout=ctx.call_timeout, build_timeout=ctx.build_timeout, probe=ctx.probe)
            replay_calls(ctx.encoder(payload["vocab"]), history)
        said = check.run(ctx, payload)
        if isinstance(said, str):
            message = said
    except VocabularyRefused as exc:
        passed, message = None, str(exc)
    except CheckFailed as exc:
        passed, message, data = False, str(exc), exc.data
        hung, details = isinstance(exc, CallTimeout), list(exc.details)
        shown_as = exc.replay_as or shown_as
        if history:
            message += f" (after {len(history)} earlier call(s) on the same encoder object)"
    shown_bytes = main_bytes(shown_as[1])
    example = payload_to_json(shown_as[1]) if passed is False else None
    return CheckResult(check=check_id, encoder=getattr(cls, "name", "") or cls.__qualname__,
                       vocabulary=short_name(payload.get("vocab", "")), passed=passed,
                       counterexample=shown_bytes if shown_bytes is not None else data,
                       message=message, seconds=round(time.perf_counter() - start, 3), hung=hung, details=details,
                       expected_failure=passed is False and check.exactness and not _is_exact(cls) and not hung,
                       example=example, reproduce=reproduce_command(target, shown_as[0], example) if example else None)


# ----------------------------------------------------------------------------- many checks
def plan(cls: type, vocabularies: Sequence[str], checks: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The (check id, vocabulary kind) pairs to run, in report order."""
    ids = list(checks) if checks else [c for c, check in CHECKS.items() if not check.explicit]
    unknown = [c for c in ids if c not in CHECKS]
    if unknown:
        raise UnknownNameError("check", unknown[0], list(CHECKS))
    explicit = [c for c in ids if CHECKS[c].explicit]
    if explicit:
        raise BpebenchError(f"the {explicit[0]} check runs only with its own option (--{explicit[0]})")
    return [(c, v) for c in ids for v in vocabularies]


def check_encoder(
    encoder,
    vocabularies: Sequence[str] = DEFAULT_VOCABULARIES,
    max_examples: int | None = None,
    *,
    checks: Iterable[str] | None = None,
    isolate: bool | str = "auto",
    check_timeout: float = DEFAULT_CHECK_TIMEOUT,
    call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
    profile: str | None = None,
    on_result=None,
    seed: int | None = None,
    exitfirst: bool = False,
) -> list[CheckResult]:
    """Run every applicable check on ``encoder`` (a class, ``"module:Class"`` or a registered name).

    Args:
        vocabularies: ``"random"`` (trained vocabularies drawn per example) and/or
            vocabulary specs (``cl100k_base``, ``seed``, a path...).
        max_examples: per check on ``random`` (real vocabularies get a fraction);
            default: the active hypothesis profile's.
        checks: check ids to run (default: all; inapplicable ones report ``n/a``).
        isolate: run in a worker process (True), here (False), or "auto" (a worker
            when the class can be imported by name).
        check_timeout: wall-clock seconds per check before the worker is killed.
        call_timeout: wall-clock seconds per encoder call before it counts as hanging.
        profile: hypothesis profile (default: ``HYPOTHESIS_PROFILE`` / ``CI``).
        on_result: called with each CheckResult as it arrives.
        seed: a hypothesis seed: other examples for every value (no database, not derandomized).
        exitfirst: stop at the first failing check (an expected failure of an approximate encoder
            does not count); the checks after it are reported as not run.
    """
    cls, target = resolve_target(encoder)
    profile = load_profile(profile)
    pairs = plan(cls, vocabularies, checks)
    if isolate == "auto":
        isolate = _importable(cls, target)
    if not isolate:
        ctx = Context(cls, call_timeout=call_timeout, build_timeout=DEFAULT_BUILD_TIMEOUT)
        results = []
        stopped = None
        for check_id, kind in pairs:
            if stopped is None:
                r = run_check(cls, check_id, kind, target=target, max_examples=max_examples, ctx=ctx, seed=seed)
                stopped = r if _stops(r, exitfirst) else None
            else:
                r = not_run(cls, check_id, kind, stopped)
            results.append(r)
            if on_result:
                on_result(r)
        return results
    return _run_isolated(cls, target, [[c, k, None] for c, k in pairs], max_examples=max_examples,
                         check_timeout=check_timeout, call_timeout=call_timeout, profile=profile, on_result=on_result,
                         seed=seed, exitfirst=exitfirst)


def _not_applicable(cls: type, check_id: str, kind: str) -> str | None:
    """Why the check does not apply (the vocabulary is not available here, or the check does not
    fit the encoder or the vocabulary kind), found without loading the vocabulary; else None."""
    if kind != RANDOM:
        reason = available(kind)
        if reason:
            return reason
    try:
        return CHECKS[check_id].applies(cls, kind)
    except BpebenchError as exc:
        return str(exc)


def _stops(r: CheckResult, exitfirst: bool) -> bool:
    """Whether no check runs after ``r``: the encoder hung (each further check would cost the whole
    limit), or it failed and the caller asked to stop at the first failure."""
    return r.hung or (exitfirst and r.passed is False and not r.expected_failure)


def not_run(cls, check_id: str, kind: str, stopped: CheckResult) -> CheckResult:
    """The result of a check skipped after ``stopped``: the encoder hung there (no more time on
    it), or failed there under ``exitfirst``. A check that does not apply to the encoder or the
    vocabulary says so (``n/a``) as it would have."""
    reason = _not_applicable(cls, check_id, kind)
    if not reason:
        why = "the encoder hung in" if stopped.hung else "--exitfirst stopped at the failure in"
        reason = f"{NOT_RUN} {why} {stopped.check} on {stopped.vocabulary}"
    return CheckResult(check=check_id, encoder=getattr(cls, "name", "") or cls.__qualname__,
                       vocabulary=short_name(kind), passed=None, message=reason)


# ----------------------------------------------------------------------------- worker supervision
def _reader(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker's own session: it and nothing else
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except (OSError, ValueError):
            pass


def _start_worker(job: dict, stderr_path: str) -> subprocess.Popen:
    """A worker in a session of its own (the watchdog kills it and nothing else). Its stdin stays
    open: the worker exits when it closes, i.e. when this process ends however it ends (and, on
    Linux, the kernel kills it with its parent too)."""
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "bpebench.properties.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    proc.stdin.write(json.dumps(job) + "\n")
    proc.stdin.flush()
    return proc


def _run_isolated(cls, target, items, *, max_examples, check_timeout, call_timeout, profile, on_result, seed=None,
                  exitfirst=False):
    """Run ``items`` ([check id, kind, payload JSON or None]) in worker processes, with a watchdog.

    A check that overruns ``check_timeout`` (wall clock) has its worker killed and is reported
    as hung with the input it was on; the encoder is then marked hung and the remaining checks
    are not run (a hung encoder would cost the whole limit on each)."""
    results: list[CheckResult] = []
    remaining = [list(item) + [None] * (3 - len(item)) for item in items]
    encoder_name = getattr(cls, "name", "") or cls.__qualname__

    def emit(r: CheckResult) -> None:
        results.append(r)
        if on_result:
            on_result(r)

    with tempfile.TemporaryDirectory(prefix="bpebench-kit-") as tmp:
        probe_path = os.path.join(tmp, "probe")
        stderr_path = os.path.join(tmp, "stderr")
        while remaining:
            Probe.create(probe_path)
            job = dict(target=target, items=remaining, max_examples=max_examples, call_timeout=call_timeout,
                       profile=profile, probe=probe_path, parent=os.getpid(), seed=seed)
            proc = _start_worker(job, stderr_path)
            try:
                remaining = _supervise(proc, remaining, emit, target=target, encoder_name=encoder_name,
                                       check_timeout=check_timeout, probe_path=probe_path, stderr_path=stderr_path,
                                       exitfirst=exitfirst, cls=cls)
            finally:
                _kill(proc)  # also on Ctrl-C or any error here: no worker outlives this call
    return results


def _supervise(proc, remaining, emit, *, target, encoder_name, check_timeout, probe_path, stderr_path,
               exitfirst, cls) -> list:
    """Read one worker's results; return the items still to run in a fresh worker."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    done = 0  # items of this job finished
    current, started = None, time.monotonic()
    deadline = started + check_timeout
    while True:
        try:
            line = lines.get(timeout=max(0.05, deadline - time.monotonic()))
        except queue.Empty:
            line = "TIMEOUT"
        if line is None or line == "TIMEOUT":
            if line is None:  # the worker ended: let it finish dying to read its exit code
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            _kill(proc)
            if current is None:
                raise BpebenchError(f"the kit's worker for {target} failed: {_tail(stderr_path)}")
            lost = _lost_check(target, encoder_name, remaining[done], probe_path, stderr_path,
                               hung=line == "TIMEOUT", check_timeout=check_timeout,
                               returncode=proc.returncode, seconds=time.monotonic() - started)
            emit(lost)
            if _stops(lost, exitfirst):
                for check_id, kind, _ in remaining[done + 1:]:
                    emit(not_run(cls, check_id, kind, lost))
                return []
            return remaining[done + 1:]
        tag, _, body = line.rstrip("\n").partition(" ")
        if tag == "START":
            current = json.loads(body)
            started = time.monotonic()
            deadline = started + check_timeout
        elif tag == "RESULT":
            result = CheckResult.from_json(body)
            emit(result)
            done += 1
            current = None
            if _stops(result, exitfirst):  # the caller kills the worker
                for check_id, kind, _ in remaining[done:]:
                    emit(not_run(cls, check_id, kind, result))
                return []
            if done == len(remaining):
                proc.stdin.close()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
                return []
        elif tag == "ERROR":
            raise BpebenchError(json.loads(body))


def _lost_check(target, encoder_name, item, probe_path, stderr_path, *, hung, check_timeout, returncode,
                seconds) -> CheckResult:
    """The result of a check whose worker hung (killed) or died: what it was encoding, from the probe."""
    check_id, kind, _ = item
    data, spec = Probe.read(probe_path)
    working_on = shown(data) if data is not None else "an unknown input"
    if hung:
        message = f"no result within {check_timeout:g} s: the encoder hangs (or is far too slow) on {working_on}"
    else:
        message = f"the worker process died (exit code {returncode}) on {working_on}: {_tail(stderr_path)}"
    example = reproduce = None
    if data is not None and spec:
        example = payload_to_json({"vocab": spec, "data": data})
        reproduce = reproduce_command(target, check_id if check_id in _BYTES_CHECKS else "equals-naive", example)
    return CheckResult(check=check_id, encoder=encoder_name, vocabulary=short_name(kind), passed=False,
                       counterexample=data, message=message, seconds=round(seconds, 1), example=example,
                       reproduce=reproduce, hung=hung)


#: checks whose payload is just {"vocab", "data"}: a probed input replays through them as is
_BYTES_CHECKS = {"output-types", "round-trip", "count-consistent", "equals-naive", "token-bytes", "valid-output",
                 "long-inputs", "minimal-bound"}


def _tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, errors="replace") as f:
            text = f.read().strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])[-400:] or "(no output)"


# ----------------------------------------------------------------------------- pytest helper
def parametrize_with_checks(encoders: Iterable, vocabularies: Sequence[str] = ("random", "cl100k_base"),
                            checks: Iterable[str] | None = None):
    """A ``pytest.mark.parametrize`` over (encoder, check, vocabulary), ids like ``naive-equals-naive-random``.

    Only applicable combinations become tests (vocabularies that do not load here
    are left out). The test receives ``(cls, check_id, kind)``; run it with :func:`assert_check`::

        @parametrize_with_checks(["naive", MyEncoder])
        def test_conformance(cls, check_id, kind):
            assert_check(cls, check_id, kind)
    """
    import pytest

    params = []
    usable = [v for v in vocabularies if v == RANDOM or available(v) is None]
    for enc in encoders:
        cls, target = resolve_target(enc)
        for check_id, kind in plan(cls, usable, checks):
            if CHECKS[check_id].applies(cls, kind) is not None:
                continue  # not applicable: not a test (``bpebench verify`` lists these)
            name = getattr(cls, "name", "") or cls.__qualname__
            params.append(pytest.param(cls, check_id, kind, id=f"{name}-{check_id}-{kind}"))
    return pytest.mark.parametrize(("cls", "check_id", "kind"), params)


_PYTEST_CONTEXTS: dict[type, Context] = {}


def assert_check(cls: type, check_id: str, kind: str, *, max_examples: int | None = None) -> CheckResult:
    """Run one check in-process for pytest: pass, skip (n/a), xfail (approximate by design) or fail."""
    import pytest

    ctx = _PYTEST_CONTEXTS.get(cls)
    if ctx is None:
        ctx = _PYTEST_CONTEXTS[cls] = Context(cls, call_timeout=DEFAULT_CALL_TIMEOUT,
                                              build_timeout=DEFAULT_BUILD_TIMEOUT)
    r = run_check(cls, check_id, kind, max_examples=max_examples, ctx=ctx)
    if r.passed is None:
        pytest.skip(f"not applicable: {r.message}")
    if r.expected_failure:
        pytest.xfail(f"expected failure (approximate): {r.message}")
    if not r.passed:
        details = "".join(f"\n    {line}" for line in r.details)
        pytest.fail(f"{r.check} on {r.vocabulary}: {r.message}{details}\n  counterexample: {r.counterexample!r}\n"
                    f"  reproduce: {r.reproduce}", pytrace=False)
    return r
