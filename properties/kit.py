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
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from hypothesis import Verbosity, example, given, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from bpebench.errors import BpebenchError, UnknownNameError

from . import oracles
from .adapters import Incremental
from .checks import CHECKS, RANDOM, Context, approximate_report, main_bytes, payload_to_json
from .guard import CheckFailed, Probe, VocabularyRefused, refusal, shown
from .settings import load_profile
from .strategies import inputs, vocabulary_specs
from .vocabularies import available, resolve, short_name

#: vocabularies ``bpebench verify`` uses by default ("random" = drawn trained vocabularies)
DEFAULT_VOCABULARIES = ("random", "cl100k_base", "o200k_base", "mistral_v1")
DEFAULT_CHECK_TIMEOUT = 180.0
DEFAULT_CALL_TIMEOUT = 30.0
DEFAULT_BUILD_TIMEOUT = 300.0
#: operations per run of an incremental state machine
STATEFUL_STEPS = 10


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

    @property
    def status(self) -> str:
        if self.passed is None:
            return "n/a"
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


def reproduce_command(target: str, check_id: str, payload_json: str) -> str:
    return f"bpebench verify {shlex.quote(target)} --check {check_id} --example {shlex.quote(payload_json)}"


# ----------------------------------------------------------------------------- one check, in-process
def _longest_tokens(vocab, n: int = 32) -> list[bytes]:
    cached = vocab.__dict__.get("_properties_longest")
    if cached is None:
        order = sorted((t for t in vocab.tokens if t), key=len, reverse=True)
        cached = vocab.__dict__["_properties_longest"] = order[:n]
    return cached


def _incremental_machine(ctx: Context, kind: str, direction: str, record, refused):
    def fresh_count(vocab, data):
        return len(oracles.reference(vocab, data))

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

        @initialize(spec=vocabulary_specs(kind, min_merges=6))
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
            # cutting a byte or two off the end lands inside the last token most often
            n = len(self.session.text)
            length = data.draw(st.one_of(st.integers(max(0, n - 3), n), st.integers(0, n)), label="length")
            self._guard(self.session.step, "truncate", length, fresh_count)

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

    if kind != RANDOM:
        reason = available(kind)
        if reason:
            return result(passed=None, message=reason)
    try:
        reason = check.applies(cls, kind)
    except BpebenchError as exc:
        reason = str(exc)
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

    def record(payload: dict, message: str, data: bytes | None = None) -> None:
        found["payload"], found["message"], found["data"] = payload, message, data

    run_settings = settings(settings.default, max_examples=n, verbosity=Verbosity.quiet,
                            stateful_step_count=STATEFUL_STEPS)
    try:
        if check.stateful:
            machine = _incremental_machine(ctx, kind, check.stateful, record, refused)
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
                    record(payload, str(exc), exc.data)
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
            run_settings(test)()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        if not found:
            return result(passed=False, message=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
        message = found["message"]
        if isinstance(exc, Flaky):
            message += " (flaky: did not fail again on replay)"
        payload_json = payload_to_json(found["payload"])
        expected = check.exactness and not _is_exact(cls)
        if expected:
            try:
                message += "; " + approximate_report(ctx, kind)
            except CheckFailed as inner:
                message += f"; (sample not measured: {inner})"
        shown_bytes = found.get("data")
        if shown_bytes is None:
            shown_bytes = main_bytes(found["payload"])
        return result(passed=False, counterexample=shown_bytes, message=message,
                      reproduce=reproduce_command(target, check_id, payload_json), example=payload_json,
                      expected_failure=expected)
    message = f"{n} examples"
    if refused:
        message += f"; {len(refused)} drawn vocabularies refused, e.g. {refused[0]}"
    return result(passed=True, message=message)


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
    check = CHECKS[check_id]
    start = time.perf_counter()
    passed, message, data = True, "the example passes", None
    try:
        check.run(ctx, payload)
    except VocabularyRefused as exc:
        passed, message = None, str(exc)
    except CheckFailed as exc:
        passed, message, data = False, str(exc), exc.data
    return CheckResult(check=check_id, encoder=getattr(cls, "name", "") or cls.__qualname__,
                       vocabulary=short_name(payload.get("vocab", "")), passed=passed,
                       counterexample=data if data is not None else main_bytes(payload),
                       message=message, seconds=round(time.perf_counter() - start, 3),
                       expected_failure=not passed and check.exactness and not _is_exact(cls),
                       example=payload_to_json(payload) if not passed else None,
                       reproduce=reproduce_command(target, check_id, payload_to_json(payload)) if not passed else None)


# ----------------------------------------------------------------------------- many checks
def plan(cls: type, vocabularies: Sequence[str], checks: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """The (check id, vocabulary kind) pairs to run, in report order."""
    ids = list(checks) if checks else list(CHECKS)
    unknown = [c for c in ids if c not in CHECKS]
    if unknown:
        raise UnknownNameError("check", unknown[0], list(CHECKS))
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
    """
    cls, target = resolve_target(encoder)
    profile = load_profile(profile)
    pairs = plan(cls, vocabularies, checks)
    if isolate == "auto":
        isolate = _importable(cls, target)
    if not isolate:
        ctx = Context(cls, call_timeout=call_timeout, build_timeout=DEFAULT_BUILD_TIMEOUT)
        results = []
        for check_id, kind in pairs:
            r = run_check(cls, check_id, kind, target=target, max_examples=max_examples, ctx=ctx)
            results.append(r)
            if on_result:
                on_result(r)
        return results
    return _run_isolated(cls, target, [[c, k, None] for c, k in pairs], max_examples=max_examples, check_timeout=check_timeout,
                         call_timeout=call_timeout, profile=profile, on_result=on_result)


# ----------------------------------------------------------------------------- worker supervision
def _reader(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker's own session: it and nothing else
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _run_isolated(cls, target, items, *, max_examples, check_timeout, call_timeout, profile, on_result):
    """Run ``items`` ([check id, kind, payload JSON or None]) in worker processes, with a watchdog."""
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
                       profile=profile, probe=probe_path)
            with open(stderr_path, "wb") as err:
                proc = subprocess.Popen([sys.executable, "-m", "bpebench.properties.worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
            proc.stdin.write(json.dumps(job))
            proc.stdin.close()
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
                    emit(_lost_check(target, encoder_name, remaining[done], probe_path, stderr_path,
                                     hung=line == "TIMEOUT", check_timeout=check_timeout,
                                     returncode=proc.returncode, seconds=time.monotonic() - started))
                    remaining = remaining[done + 1:]
                    break
                tag, _, body = line.rstrip("\n").partition(" ")
                if tag == "START":
                    current = json.loads(body)
                    started = time.monotonic()
                    deadline = started + check_timeout
                elif tag == "RESULT":
                    emit(CheckResult.from_json(body))
                    done += 1
                    current = None
                    if done == len(remaining):
                        proc.wait()
                        remaining = []
                        break
                elif tag == "ERROR":
                    _kill(proc)
                    raise BpebenchError(json.loads(body))
    return results


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
                       reproduce=reproduce)


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
        pytest.fail(f"{r.check} on {r.vocabulary}: {r.message}\n  counterexample: {r.counterexample!r}\n"
                    f"  reproduce: {r.reproduce}", pytrace=False)
    return r
