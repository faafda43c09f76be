"""Inject faults into bpebench's caches, processes and plugins and count what survives (a plain script).

    python benchmarks/fault_injection.py                     # every scenario, the default counts
    python benchmarks/fault_injection.py --repeat 3 --seed 1  # more random cases of each kind
    python benchmarks/fault_injection.py --only caches,kill   # some scenarios

Every case runs the real command line in a subprocess (its own session, a wall-clock limit) and
checks the outcome against an independent oracle:

* ``caches``: a warm cache directory has one kind of derived file damaged (bit flips, truncation,
  zeroed range, empty file, random garbage): the vocabulary store (``vocabularies/*.bpv``), the
  corpora, the Unicode class tables (``unicode_classes_*``), numba's index and data files
  (``NUMBA_CACHE_DIR``) and the ahead-of-time module (``aot/``). Then ``bpebench encode`` must give
  tiktoken's ids for cl100k (ranks from bpe-openai, the cl100k pattern) and ``bpebench corpora
  --out`` the undamaged corpus bytes; the run after must need no repair (the cache healed).
* ``kill``: ``kill -9`` at a random moment of the first build of the vocabulary cache, then
  the same command again: tiktoken's ids. And ``kill -9`` during ``bpebench report``, then
  ``--resume``: it completes and every row written before the kill is still there.
* ``disk``: a full disk (a small tmpfs mounted for the case, when this machine permits mounting;
  else the scenario says it was skipped): ``report --out`` on it (one line, exit 2, no temporary
  file left; ``--resume`` on a disk with room completes) and the cache on it (right ids).
* ``plugins``: outside encoders that segfault, sleep, take 300M-element lists or lie (wrong ids)
  in ``bpebench report`` (completes; the first three recorded as crashed / hung / too much
  memory, the liar as disagreeing) and in ``bpebench verify`` (a verdict within the time limit).
* ``interrupt``: Ctrl-C (SIGINT) at a random moment of ``report``: exit 130 with one line (or a
  finished run), then ``--resume`` completes and keeps every earlier row.
* ``concurrent``: several processes use a cold cache at once, and 8 threads share one
  Tokenizer: every result is tiktoken's.

Every case also checks: no traceback, not past its time limit, not killed by a signal it was
not sent, and no process of its session left behind (orphans). Prints a Markdown table per
scenario; exit status 1 when any case failed.
"""

from __future__ import annotations

import argparse
import base64
import collections
import csv
import gzip
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
PYTHON = sys.executable
CASE_TIMEOUT = 600.0


# ============================================================================= oracle
def texts() -> list[str]:
    from bpebench.corpora.hard_strings import PIPELINE_TEXTS as HARD_STRINGS

    return [t for t in HARD_STRINGS if "<|" not in t] + ["hello world", "x" * 3000, "1234567 " * 50]


def tiktoken_ids(items: list[str]) -> list[list[int]]:
    """cl100k's ids from tiktoken itself, on the ranks bpe-openai ships and the cl100k pattern."""
    import tiktoken

    from bpebench.algorithms.formats.patterns import PATTERNS

    spec = importlib.util.find_spec("bpe_openai")
    raw = gzip.decompress((Path(list(spec.submodule_search_locations)[0]) / "data" / "cl100k_base.tiktoken.gz")
                          .read_bytes())
    ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in raw.splitlines() if line)}
    enc = tiktoken.Encoding("cl100k-oracle", pat_str=PATTERNS["cl100k"], mergeable_ranks=ranks, special_tokens={})
    return [enc.encode_ordinary(t) for t in items]


# ============================================================================= running commands
def session_processes(sid: int) -> list[int]:
    """Processes whose session id is ``sid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


class Run:
    """One command in its own session: ``start()``, optionally a signal, ``finish()``."""

    def __init__(self, argv: list[str], env: dict, stdin: str = "", cwd: Path | None = None,
                 timeout: float = CASE_TIMEOUT) -> None:
        self.argv, self.env, self.stdin, self.cwd, self.timeout = argv, env, stdin, cwd, timeout
        self.sent: int | None = None

    def start(self) -> "Run":
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=self.env, cwd=self.cwd, start_new_session=True)
        self.started = time.monotonic()
        return self

    def signal(self, sig: int, group: bool = False) -> None:
        """``sig`` to the command (``group``: to its whole process group, as Ctrl-C in a terminal)."""
        self.sent = sig
        try:
            (os.killpg if group else os.kill)(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def finish(self) -> dict:
        hung = False
        try:
            out, err = self.proc.communicate(self.stdin.encode(), timeout=self.timeout)
        except subprocess.TimeoutExpired:
            hung = True
            os.killpg(self.proc.pid, signal.SIGKILL)
            out, err = self.proc.communicate()
        time.sleep(0.2)  # let a dying child finish before looking for it
        orphans = session_processes(self.proc.pid)
        for pid in orphans:
            os.kill(pid, signal.SIGKILL)
        return {"code": self.proc.returncode, "stdout": out.decode("utf-8", "replace"),
                "stderr": err.decode("utf-8", "replace"), "hung": hung, "orphans": len(orphans),
                "sent": self.sent, "seconds": time.monotonic() - self.started}


def run(argv: list[str], env: dict, **kwargs) -> dict:
    return Run(argv, env, **kwargs).start().finish()


def bpebench(*argv: str) -> list[str]:
    return [PYTHON, "-m", "bpebench", *argv]


def problems(result: dict, *, expect_codes=(0,)) -> list[str]:
    """What is wrong with how a command ended (empty when it ended well)."""
    bad = []
    if result["hung"]:
        bad.append("hang")
    if result["orphans"]:
        bad.append(f"orphan ({result['orphans']} processes left)")
    code, sent = result["code"], result["sent"]
    if code is not None and code < 0 and -code != sent:
        bad.append(f"crash (signal {-code})")
    if "Traceback" in result["stderr"]:
        bad.append("traceback")
    if "internal error" in result["stderr"]:
        bad.append("internal error")
    if code is not None and code >= 0 and code not in expect_codes:
        bad.append(f"exit {code}: {result['stderr'].strip().splitlines()[-1:]}")
    errors = [line for line in result["stderr"].strip().splitlines() if "error" in line.lower()]
    if code == 2 and (len(errors) != 1 or errors != result["stderr"].strip().splitlines()[-1:]
                      or not errors[0].startswith("bpebench: error: ")):  # progress lines before it are fine
        bad.append(f"unclean error (not one line): {result['stderr'].strip()[-300:]!r}")
    return bad


class Tally:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, list[str]]] = []

    def add(self, scenario: str, case: str, bad: list[str]) -> None:
        self.rows.append((scenario, case, bad))
        state = "ok" if not bad else "FAILED: " + "; ".join(bad)
        print(f"  {scenario:<11} {case:<48} {state}", flush=True)


# ============================================================================= environment
class Lab:
    """A scratch directory with its own bpebench cache and numba cache, warmed once."""

    def __init__(self, scratch: Path, rng: random.Random) -> None:
        self.scratch, self.rng = scratch, rng
        self.items = texts()
        self.expected = tiktoken_ids(self.items)
        self.cache = scratch / "cache"
        self.numba = scratch / "numba"
        self.env = self.environment(self.cache)

    def environment(self, cache: Path) -> dict:
        env = dict(os.environ, BPEBENCH_CACHE=str(cache), PYTHONPATH=str(ROOT))
        if any(kind.startswith("numba") for kind in CACHE_KINDS):  # numba's cache too, to damage it
            env["NUMBA_CACHE_DIR"] = str(self.numba)
        env.pop("BPEBENCH_DEBUG", None)
        return env

    def seed_aot(self, cache: Path) -> None:
        """Copy the user's (or the lab's) ahead-of-time module so a fresh cache does not compile for minutes."""
        for source in (self.cache / "aot", Path(os.environ.get("BPEBENCH_CACHE", "/nonexistent")) / "aot"):
            if source.is_dir() and source != cache / "aot" and not (cache / "aot").exists():
                shutil.copytree(source, cache / "aot")

    def encode_argv(self) -> list[str]:
        return bpebench("encode", "--vocab", "cl100k_base", "--jsonl", "--disallowed-special", "none")

    def stdin(self) -> str:
        return "\n".join(json.dumps(t) for t in self.items) + "\n"

    def encode(self, env: dict | None = None, **kwargs) -> Run:
        return Run(self.encode_argv(), env or self.env, stdin=self.stdin(), **kwargs)

    def ids_problems(self, result: dict) -> list[str]:
        bad = problems(result)
        if not bad:
            got = [json.loads(line) for line in result["stdout"].splitlines()]
            if got != self.expected:
                bad.append("wrong ids")
        return bad

    def warm(self) -> None:
        self.cache.mkdir(parents=True, exist_ok=True)
        self.seed_aot(self.cache)
        first = self.encode(timeout=3600).start().finish()
        if self.ids_problems(first):
            raise SystemExit(f"fault_injection: the undamaged cache already fails: {self.ids_problems(first)}"
                             f" {first['stderr'][-2000:]}")
        if "corpora" in CACHE_KINDS:
            run(bpebench("corpora", "prose-en", "--out", str(self.scratch / "prose.txt")), self.env, timeout=3600)


# ============================================================================= scenarios
def damage(rng: random.Random, path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "flip" and data:
        for _ in range(rng.choice((1, 3, 8))):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif how == "flip-tail" and data:  # the end of a file (array data behind a header)
        i = len(data) - 1 - rng.randrange(min(len(data), 4096))
        data[i] ^= 1 << rng.randrange(8)
    elif how == "truncate":
        del data[rng.randrange(len(data) + 1):]
    elif how == "zero" and data:
        i = rng.randrange(len(data))
        data[i:i + 4096] = bytes(len(data[i:i + 4096]))
    elif how == "empty":
        data = bytearray()
    elif how == "garbage":
        data = bytearray(rng.randbytes(max(len(data), 16)))
    path.write_bytes(bytes(data))


DAMAGES = ("flip", "flip-tail", "truncate", "zero", "empty", "garbage")


def cache_files(lab: Lab, kind: str) -> list[Path]:
    if kind == "vocabulary":
        return sorted((lab.cache / "vocabularies").glob("*.bpv"))
    if kind == "corpora":
        return sorted(p for p in (lab.cache / "corpora").rglob("*") if p.is_file() and p.suffix != ".verified")
    if kind == "unicode":
        return sorted(lab.cache.glob("unicode_classes_*.bin"))
    if kind == "numba-index":
        return sorted(lab.numba.rglob("*.nbi"))
    if kind == "numba-data":
        return sorted(lab.numba.rglob("*.nbc"))
    if kind == "aot":
        return sorted(p for p in (lab.cache / "aot").rglob("*") if p.is_file())
    raise ValueError(kind)


CACHE_KINDS = ("vocabulary", "corpora", "unicode", "numba-index", "numba-data", "aot")


def scenario_caches(lab: Lab, tally: Tally, repeat: int) -> None:
    for kind in CACHE_KINDS:
        for how in DAMAGES:
            for _ in range(repeat):
                files = cache_files(lab, kind)
                if not files:
                    tally.add("caches", f"{kind} {how}", [f"no {kind} cache file to damage"])
                    continue
                for path in lab.rng.sample(files, min(len(files), lab.rng.choice((1, 3)))):
                    damage(lab.rng, path, how)
                if kind == "corpora":
                    out = lab.scratch / "prose-again.txt"
                    result = run(bpebench("corpora", "prose-en", "--out", str(out)), lab.env)
                    bad = problems(result)
                    if not bad and out.read_bytes() != (lab.scratch / "prose.txt").read_bytes():
                        bad.append("corpus differs from the undamaged one")
                    again = run(bpebench("corpora", "prose-en", "--out", str(out)), lab.env)
                else:
                    result = lab.encode().start().finish()
                    bad = lab.ids_problems(result)
                    again = lab.encode().start().finish()
                    bad += [f"second run: {b}" for b in lab.ids_problems(again)]
                if "warning" in again["stderr"] or "damaged" in again["stderr"]:
                    bad.append(f"not healed: {again['stderr'].strip().splitlines()[:1]}")
                told = "warned" if result["stderr"].strip() else "silent"
                tally.add("caches", f"{kind} {how} ({told})", bad)


def scenario_kill(lab: Lab, tally: Tally, repeat: int) -> None:
    # the first build of cl100k's vocabulary cache, killed at a random moment
    build = lab.scratch / "kill-probe"
    lab.seed_aot(build)
    started = time.monotonic()
    lab.encode(lab.environment(build)).start().finish()
    build_time = time.monotonic() - started
    for n in range(4 * repeat):
        cache = lab.scratch / f"kill-{n}"
        cache.mkdir()
        lab.seed_aot(cache)
        env = lab.environment(cache)
        victim = lab.encode(env).start()
        time.sleep(lab.rng.uniform(0.05, build_time))
        victim.signal(signal.SIGKILL)
        first = victim.finish()
        bad = [b for b in problems(first, expect_codes=(0,)) if not b.startswith("crash")]
        if first["code"] == 0:
            bad += lab.ids_problems(first)
        after = lab.encode(env).start().finish()
        bad += [f"after the kill: {b}" for b in lab.ids_problems(after)]
        tally.add("kill", f"-9 during the cache build at {first['seconds']:.2f} s", bad)
        shutil.rmtree(cache, ignore_errors=True)
    # a report killed at a random moment, then resumed
    for n in range(2 * repeat):
        _interrupted_report(lab, tally, "kill", signal.SIGKILL, n)


# ----------------------------------------------------------------------------- report helpers
SEED_MERGES = [b"ab", b"bc", b"abc", b"cb", b"bb", b"cbb"]

PLUGINS = """
import ctypes, sys, time
from bpebench.algorithms.core.registry import register_encoder
from bpebench.algorithms.backtracking import BacktrackingEncoder


class Segfaults(BacktrackingEncoder):
    name, summary = "zz_segfaults", "fault plugin: dereferences NULL"

    def encode(self, data):
        return ctypes.string_at(0)


class Sleeps(BacktrackingEncoder):
    name, summary = "zz_sleeps", "fault plugin: never answers"

    def encode(self, data):
        time.sleep(3600)


class Hungry(BacktrackingEncoder):
    name, summary = "zz_hungry", "fault plugin: a 300M-element list"

    def encode(self, data):
        return [0] * 300_000_000


class Lies(BacktrackingEncoder):
    name, summary = "zz_lies", "fault plugin: claims to be exact, returns one id too many"

    def encode(self, data):
        return list(super().encode(data)) + [0]


for cls in (Segfaults, Sleeps, Hungry, Lies):
    register_encoder(cls)
from bpebench.cli import main

sys.exit(main(sys.argv[1:]))
"""


def report_files(lab: Lab) -> tuple[Path, Path]:
    vocab = lab.scratch / "seed.tiktoken"
    if not vocab.exists():
        tokens = [bytes([b]) for b in range(256)] + SEED_MERGES
        vocab.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for r, t in enumerate(tokens)))
        (lab.scratch / "seed-text.txt").write_text("abacbb cbbb abacb bbcb acbb cbbb ab " * 40)
    return vocab, lab.scratch / "seed-text.txt"


def report_argv(lab: Lab, out: Path, algorithms: str = "backtracking,naive,heap", *extra: str) -> list[str]:
    vocab, corpus = report_files(lab)
    return [PYTHON, "-c", PLUGINS, "report", "--preset", "tiny", "--vocab", str(vocab), "--quiet",
            "--algorithms", algorithms, "--corpora", f"{corpus},run-char", "--stages", "load,scaling,throughput",
            "--peers", "none", "--out", str(out), *extra]


def csv_rows(directory: Path) -> dict[str, list[list[str]]]:
    out = {}
    for path in sorted(directory.glob("*.csv")):
        with path.open(newline="") as f:
            out[path.name] = list(csv.reader(f))
    return out


REPORT_SECONDS: list[float] = []


def _interrupted_report(lab: Lab, tally: Tally, scenario: str, sig: int, n: int) -> None:
    out = lab.scratch / f"report-{scenario}-{n}"
    if not REPORT_SECONDS:  # how long an uninterrupted report takes here, so the signal lands inside it
        for n_probe in range(2):  # the second run is warm, like the ones interrupted
            probe = run(report_argv(lab, lab.scratch / f"report-probe-{n_probe}"), lab.env, cwd=lab.scratch)
        REPORT_SECONDS.append(probe["seconds"])
    victim = Run(report_argv(lab, out), lab.env, cwd=lab.scratch).start()
    time.sleep(lab.rng.uniform(0.1, 0.8) * REPORT_SECONDS[0])
    victim.signal(sig, group=sig == signal.SIGINT)
    first = victim.finish()
    if first["code"] == 0:
        tally.add(scenario, f"{signal.Signals(sig).name} report: finished before the signal", ["not interrupted"])
        return
    expect = (0, 130) if sig == signal.SIGINT else (0,)
    bad = [b for b in problems(first, expect_codes=expect) if not (sig == signal.SIGKILL and b.startswith("crash"))]
    if sig == signal.SIGINT and first["code"] == 130 \
            and not first["stderr"].strip().splitlines()[-1].startswith(("bpebench: error: interrupted",
                                                                          "interrupted: ")):
        bad.append(f"Ctrl-C message: {first['stderr'].strip()[-200:]!r}")
    before = csv_rows(out) if out.exists() else {}
    resumed = run(report_argv(lab, out, "backtracking,naive,heap", "--resume"), lab.env, cwd=lab.scratch)
    bad += [f"resume: {b}" for b in problems(resumed)]
    after = csv_rows(out)
    for name, rows in before.items():
        if after.get(name, [])[:len(rows)] != rows:
            bad.append(f"lost rows of {name}")
    if not (out / "index.html").exists():
        bad.append("no index.html after --resume")
    tally.add(scenario, f"{signal.Signals(sig).name} report at {first['seconds']:.1f} s (exit {first['code']}),"
                        " then --resume", bad)
    shutil.rmtree(out, ignore_errors=True)


def scenario_interrupt(lab: Lab, tally: Tally, repeat: int) -> None:
    for n in range(3 * repeat):
        _interrupted_report(lab, tally, "interrupt", signal.SIGINT, n)


def scenario_plugins(lab: Lab, tally: Tally, repeat: int) -> None:
    out = lab.scratch / "report-plugins"
    result = run(report_argv(lab, out, "backtracking,zz_segfaults,zz_sleeps,zz_hungry,zz_lies",
                             "--isolation-timeout", "10", "--isolation-memory", "1"), lab.env, cwd=lab.scratch)
    bad = problems(result)
    if not bad:
        with (out / "timings.csv").open(newline="") as f:
            notes = collections.defaultdict(list)
            for row in csv.DictReader(f):
                notes[row["subject"]].append(row["note"])
        for subject, prefix in (("zz_segfaults", "crashed"), ("zz_sleeps", "hung"), ("zz_hungry", "too much memory")):
            if not any(n.startswith(prefix) for n in notes[subject]):
                bad.append(f"{subject} not recorded as {prefix}: {notes[subject][:2]}")
        page = (out / "index.html").read_text()
        if "zz_lies" not in page:
            bad.append("zz_lies missing from the page")
    tally.add("plugins", "report: segfault, sleep, 300M list, lies", bad)
    # verify runs its checks in worker processes: the plugins come as module:Class targets
    (lab.scratch / "fault_plugins.py").write_text(PLUGINS.split("for cls in")[0])
    env = dict(lab.env, PYTHONPATH=f"{lab.scratch}{os.pathsep}{lab.env['PYTHONPATH']}")
    for plugin in ("Segfaults", "Sleeps", "Hungry", "Lies"):
        result = run(bpebench("verify", f"fault_plugins:{plugin}", "--vocab", "seed", "--check", "equals-naive",
                              "--max-examples", "20", "--timeout", "60", "--call-timeout", "5"), env,
                     cwd=lab.scratch, timeout=900)
        bad = problems(result, expect_codes=(1,))  # a failed verdict, not an error
        tally.add("plugins", f"verify {plugin} (exit {result['code']}, {result['seconds']:.0f} s)", bad)


def scenario_disk(lab: Lab, tally: Tally, repeat: int) -> None:
    mount = lab.scratch / "tiny-disk"
    mount.mkdir()
    for n in range(2 * repeat):
        size = lab.rng.choice(("16k", "64k", "200k"))
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                          capture_output=True).returncode != 0:
            tally.add("disk", "mount a small tmpfs", ["skipped: this machine does not permit mounting"])
            return
        try:
            out = mount / "report"
            result = run(report_argv(lab, out), lab.env, cwd=lab.scratch)
            bad = problems(result, expect_codes=(0, 2))
            if result["code"] == 2 and "space" not in result["stderr"] and "full" not in result["stderr"]:
                bad.append(f"message does not name the full disk: {result['stderr'].strip()!r}")
            leftovers = [p.name for p in out.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"] \
                if out.exists() else []
            if leftovers:
                bad.append(f"temporary files left: {leftovers[:3]}")
            partial = out.exists() and result["code"] == 2
            if partial:  # room again: --resume completes from what is there
                moved = lab.scratch / f"report-disk-{n}"
                shutil.copytree(out, moved)
                resumed = run(report_argv(lab, moved, "backtracking,naive,heap", "--resume"), lab.env,
                              cwd=lab.scratch)
                bad += [f"resume: {b}" for b in problems(resumed)]
            tally.add("disk", f"report --out on a full {size} tmpfs (exit {result['code']})", bad)
            shutil.rmtree(out, ignore_errors=True)
            # the cache on a full disk: the ids must still be right (or one clean line)
            for child in mount.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
            env = lab.environment(mount / "cache")
            result = lab.encode(env).start().finish()
            bad = problems(result, expect_codes=(0, 2))
            if result["code"] == 0:
                bad += lab.ids_problems(result)
            tally.add("disk", f"BPEBENCH_CACHE on a full {size} tmpfs (exit {result['code']})", bad)
        finally:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def scenario_concurrent(lab: Lab, tally: Tally, repeat: int) -> None:
    for n in range(repeat):
        cache = lab.scratch / f"concurrent-{n}"
        cache.mkdir()
        lab.seed_aot(cache)
        env = lab.environment(cache)
        runs = [lab.encode(env).start() for _ in range(4)]
        bad = [b for r in runs for b in lab.ids_problems(r.finish())]
        tally.add("concurrent", "4 processes, first use of a cold cache", sorted(set(bad)))
        shutil.rmtree(cache, ignore_errors=True)
    script = """
import json, sys, threading
from bpebench import Tokenizer
tok = Tokenizer("cl100k_base")
items = [json.loads(line) for line in sys.stdin.read().splitlines()]
results = [None] * 8
def work(k):
    results[k] = [tok.encode_ordinary(t) for t in items]
threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps(results))
"""
    for n in range(repeat):
        result = run([PYTHON, "-c", script], lab.env, stdin=lab.stdin())
        bad = problems(result)
        if not bad and any(r != lab.expected for r in json.loads(result["stdout"])):
            bad.append("wrong ids")
        tally.add("concurrent", "8 threads sharing one Tokenizer", bad)


SCENARIOS = {"caches": scenario_caches, "kill": scenario_kill, "disk": scenario_disk, "plugins": scenario_plugins,
             "interrupt": scenario_interrupt, "concurrent": scenario_concurrent}


def main(argv: list[str] | None = None) -> int:
    global CACHE_KINDS, DAMAGES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="random cases of each kind (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--cache-kinds", default=",".join(CACHE_KINDS), help="caches scenario: these kinds only")
    parser.add_argument("--damages", default=",".join(DAMAGES), help="caches scenario: these damages only")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario {sorted(unknown)[0]!r}; known: {', '.join(SCENARIOS)}")
    CACHE_KINDS = tuple(k for k in CACHE_KINDS if k in args.cache_kinds.split(","))
    DAMAGES = tuple(d for d in DAMAGES if d in args.damages.split(","))
    scratch = Path(tempfile.mkdtemp(prefix="bpebench-faults-"))
    tally = Tally()
    try:
        lab = Lab(scratch, random.Random(args.seed))
        lab.warm()
        for name in args.only.split(","):
            SCENARIOS[name](lab, tally, args.repeat)
    finally:
        subprocess.run(["umount", "-l", str(scratch / "tiny-disk")], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    counts = collections.defaultdict(lambda: [0, 0])
    for scenario, _, bad in tally.rows:
        counts[scenario][0] += 1
        counts[scenario][1] += bool(bad)
    print("\n| scenario | cases | as expected | failed |\n|---|---|---|---|")
    for scenario, (cases, failed) in counts.items():
        print(f"| {scenario} | {cases} | {cases - failed} | {failed} |")
    total_failed = sum(f for _, f in counts.values())
    print(f"| all | {len(tally.rows)} | {len(tally.rows) - total_failed} | {total_failed} |")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
