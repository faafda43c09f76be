"""Run one call of code the project does not own in a forked child, with a wall clock and a memory cap.

An outside encoder (a plugin) that segfaults, sleeps forever or builds a 300M-element list
must not take the report down with it. ``run_isolated(fn)`` forks: the child inherits the
whole state of the run (vocabularies, the subject, its inputs: nothing is pickled), caps its
address space (``RLIMIT_AS``), runs ``fn()`` and sends the JSON of its result back through a
pipe; the parent waits up to ``timeout`` seconds of wall clock. The outcome is one of:

* ``("ok", value)``;
* ``("error", "TypeError: ...")``: ``fn`` raised, as it would in-process;
* ``("crashed", "killed by signal 11 (SIGSEGV)")``: the child died without answering;
* ``("hung", "no answer after 600 s")``: the child was killed at the deadline;
* ``("too much memory", "...")``: the child hit the memory cap (MemoryError, or a crash
  with the cap reached).

Timings taken inside the child are as good as in-process ones: the child is a copy of the
parent, its tables already built and warm. Cost: one ``fork`` per call (milliseconds for
a process of a few hundred MB). Where ``fork`` does not exist, ``fn`` runs in-process.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from typing import Any, Callable

#: wall-clock seconds one isolated call may take before it counts as hung
DEFAULT_TIMEOUT = 600.0
#: address space an isolated call may add to what the process already uses
DEFAULT_MEMORY = 4 * 2**30


def available() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def _address_space() -> int:
    """The bytes of virtual memory this process maps now (Linux), or 0."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_isolated(fn: Callable[[], Any], *, timeout: float = DEFAULT_TIMEOUT,
                 memory: int = DEFAULT_MEMORY) -> tuple[str, Any]:
    """``fn()`` in a forked child (see the module docstring); its result must be JSON-serialisable."""
    if not available():
        try:
            return "ok", fn()
        except MemoryError:
            return "too much memory", "MemoryError"
        except Exception as exc:  # noqa: BLE001 - the caller records it
            return "error", f"{type(exc).__name__}: {exc}"
    limit = _address_space() + memory
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    # a Ctrl-C that lands inside fork's own callbacks would be swallowed ("Exception ignored"):
    # hold it back until fork has returned; the child leaves Ctrl-C to the parent, which kills it
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    if pid == 0:  # the child: never returns into the caller's code
        os.close(read_end)
        code = 0
        try:
            try:
                import resource

                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ImportError, ValueError, OSError):
                pass
            try:
                answer = {"status": "ok", "value": fn()}
            except MemoryError:
                answer = {"status": "too much memory", "value": "MemoryError"}
            except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
                answer = {"status": "error", "value": f"{type(exc).__name__}: {exc}"}
            try:
                payload = json.dumps(answer, default=str).encode("utf-8")
            except MemoryError:
                payload = b'{"status": "too much memory", "value": "MemoryError while answering"}'
            view = memoryview(payload)
            while view:
                view = view[os.write(write_end, view):]
        except BaseException:  # noqa: BLE001
            code = 70
        finally:
            os._exit(code)  # no atexit handlers, no flushing of the parent's buffers twice
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    hung = answered = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                hung = True
                break
            ready, _, _ = select.select([read_end], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        answered = not hung
    finally:
        os.close(read_end)
        if not answered:  # hung, or this process is being interrupted: the child must not outlive it
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    if hung:
        return "hung", f"no answer after {timeout:g} s (killed)"
    if chunks:
        try:
            answer = json.loads(b"".join(chunks))
            return answer["status"], answer["value"]
        except (ValueError, KeyError):
            pass
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        return "crashed", f"killed by signal {sig} ({name})"
    return "crashed", f"exited with code {os.WEXITSTATUS(status)} without an answer"
