"""The encoder registry with outside plugins: origins, never a plugin as default, broken
plugins named with their import error, and discovery that is safe from many threads.

Each test installs a fake distribution (a ``.dist-info`` folder with an entry-point file, and
the plugin modules) on ``PYTHONPATH`` and runs bpebench in a fresh process, so that the
registry discovers it from scratch.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

PLUGINS = {
    "fakeplug_fast.py": """
        import sys
        from bpebench.algorithms.naive import NaiveEncoder

        class FastPlug(NaiveEncoder):
            name = "fastplug"
            summary = "a plugin that says it is the fastest exact encoder"
            speed_rank = -1000

            def encode(self, data):
                print("fastplug encodes", file=sys.stderr)
                return super().encode(data)
        """,
    "fakeplug_broken.py": """
        import nonexistent_dependency_xyz
        """,
    "fakeplug_slow.py": """
        import time
        from bpebench.algorithms.naive import NaiveEncoder

        time.sleep(1.0)  # a slow import: other threads ask for encoders meanwhile

        class SlowPlug(NaiveEncoder):
            name = "slowplug"
        """,
}
ENTRY_POINTS = """
    [bpebench.encoders]
    fastplug = fakeplug_fast:FastPlug
    brokenplug = fakeplug_broken:Nothing
    slowplug = fakeplug_slow:SlowPlug
    """


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugins")
    info = root / "fakeplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    for name, body in PLUGINS.items():
        (root / name).write_text(textwrap.dedent(body))
    return str(root)


def run(plugin_path, *args, code: str | None = None):
    env = {**os.environ, "PYTHONPATH": plugin_path + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "bpebench", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)


def test_list_shows_where_each_encoder_comes_from(plugin_path):
    proc = run(plugin_path, "list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.split()[:3] == ["backtracking", "exact", "built-in"] for line in lines), proc.stdout
    assert any(line.split()[:3] == ["fastplug", "exact", "plugin"] for line in lines), proc.stdout
    assert "from entry point fastplug (fakeplug_fast:FastPlug) of fakeplug 0.1" in proc.stdout
    assert "entry point brokenplug (fakeplug_broken:Nothing) of fakeplug 0.1: ModuleNotFoundError" in proc.stdout


def test_a_plugin_never_becomes_the_default_but_is_used_when_named(plugin_path):
    proc = run(plugin_path, code=(
        "from bpebench.algorithms.core.registry import default_encoder_name, encoder_names\n"
        "from bpebench.algorithms.pipeline.tokenizer import Tokenizer\n"
        "names = encoder_names()\n"
        "assert names[0] == 'fastplug', names  # it does sort first by its speed_rank\n"
        "print(default_encoder_name(), Tokenizer('cl100k_base').encoder.name)\n"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["backtracking", "backtracking"]
    default = run(plugin_path, "encode", "hello qzxqzxq")
    assert default.returncode == 0 and "fastplug" not in default.stderr, default.stderr
    named = run(plugin_path, "encode", "-a", "fastplug", "hello qzxqzxq")
    assert named.returncode == 0 and "fastplug encodes" in named.stderr, named.stderr
    assert named.stdout == default.stdout  # the plugin is exact: the same ids


def test_verify_of_a_plugin_that_failed_to_import_says_the_import_error(plugin_path):
    proc = run(plugin_path, "verify", "brokenplug")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "encoder 'brokenplug'" in lines[0] and "failed to import" in lines[0]
    assert "ModuleNotFoundError: No module named 'nonexistent_dependency_xyz'" in lines[0]


def test_concurrent_first_use_of_the_registry_waits_for_the_whole_discovery(plugin_path):
    """Issue 25: eight threads asking at once while a plugin takes a second to import; before,
    the first thread marked discovery done on entry and the others saw a partial registry
    ("unknown algorithm ...; known: (none)")."""
    proc = run(plugin_path, code=(
        "import threading\n"
        "from bpebench.algorithms.core import registry\n"
        "barrier, errors, found = threading.Barrier(8), [], []\n"
        "def ask(name):\n"
        "    barrier.wait()\n"
        "    try:\n"
        "        found.append(registry.get_encoder_class(name).name)\n"
        "    except Exception as exc:\n"
        "        errors.append(str(exc))\n"
        "threads = [threading.Thread(target=ask, args=(n,)) for n in ['slowplug', 'backtracking'] * 4]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(sorted(found), errors)\n"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{['backtracking'] * 4 + ['slowplug'] * 4} []", proc.stdout


def test_the_default_order_is_the_registry_ranking_of_the_built_in_exact_encoders():
    """``default_encoder_name`` imports encoder modules one at a time in ``DEFAULT_ORDER``; that order
    must be the one the whole registry gives (speed rank, then name), and the first choice the same,
    for a vocabulary whose merges run in order and for one whose merges do not."""
    code = (
        "from bpebench.algorithms.core import registry\n"
        "from bpebench.algorithms.formats import load_vocabulary\n"
        "from bpebench.properties.vocabularies import as_merge_list, break_merge_order\n"
        "v = load_vocabulary('cl100k_base')\n"
        "shaped = break_merge_order(as_merge_list(v), 0.02, seed=1)\n"
        "fast = [registry.default_encoder_name(x) for x in (None, v, shaped)]\n"
        "assert not registry._builtins_imported\n"
        "registry._import_builtin_modules()\n"
        "full = [registry.default_encoder_name(x) for x in (None, v, shaped)]\n"
        "exact = sorted((n for n, c in registry._REGISTRY.items() if c.is_exact() and registry.is_builtin(n)),\n"
        "               key=lambda n: (registry._REGISTRY[n].speed_rank, n))\n"
        "print(fast, full, exact == [n for n, _ in registry.DEFAULT_ORDER])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["['backtracking',", "'backtracking',", "'heap']",
                                   "['backtracking',", "'backtracking',", "'heap']", "True"], proc.stdout
