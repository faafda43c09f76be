"""The kit's worker process: ``python -m bpebench.properties.worker`` runs checks sent as JSON on stdin.

Protocol (one line each, on the original stdout; the encoder's own prints go to stderr):
``START ["check-id", "kind"]`` before a check, ``RESULT {CheckResult JSON}`` after it,
``ERROR "message"`` for a user mistake (unknown class...). The parent
(``bpebench.properties.kit``) enforces the per-check time limit and kills this process
when a check overruns; the guard's probe file tells it which input was running.

The job is the first line of stdin; the parent keeps stdin open while it waits. The worker
dies with its parent: on Linux the kernel sends it SIGKILL when the parent dies
(``PR_SET_PDEATHSIG``, which also stops a hang in compiled code), and everywhere a thread
exits the process when stdin reaches its end (the parent closed it, or died). Once an encoder
hangs, the remaining checks are reported as not run.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int | None) -> None:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        except (OSError, AttributeError):
            pass
    if parent is not None and os.getppid() != parent:  # the parent died before the line above
        os._exit(3)

    def watch_stdin() -> None:
        sys.stdin.read()  # returns when the parent closes the pipe or dies
        os._exit(0)

    threading.Thread(target=watch_stdin, name="bpebench-parent-watch", daemon=True).start()


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the encoder prints (Python or C) must not corrupt the protocol
    sys.stdout = sys.stderr
    job = json.loads(sys.stdin.readline())
    _die_with_parent(job.get("parent"))

    from bpebench.errors import BpebenchError

    from .checks import Context, payload_from_json
    from .guard import Probe
    from .kit import DEFAULT_BUILD_TIMEOUT, not_run, replay_here, resolve_target, run_check
    from .settings import load_profile

    load_profile(job["profile"])
    try:
        cls, target = resolve_target(job["target"])
    except BpebenchError as exc:
        protocol.write(f"ERROR {json.dumps(str(exc))}\n")
        return 2
    ctx = Context(cls, call_timeout=job["call_timeout"], build_timeout=DEFAULT_BUILD_TIMEOUT,
                  probe=Probe(job["probe"]))
    hung = None
    for check_id, kind, payload in job["items"]:
        protocol.write(f"START {json.dumps([check_id, kind])}\n")
        if hung is not None:
            result = not_run(cls, check_id, kind, hung)
        elif payload is None:
            result = run_check(cls, check_id, kind, target=target, max_examples=job["max_examples"], ctx=ctx,
                               seed=job.get("seed"))
        else:
            ctx.start_check()
            result = replay_here(cls, target, check_id, payload_from_json(payload), ctx)
        if result.hung:
            hung = result
        protocol.write(f"RESULT {result.to_json()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
