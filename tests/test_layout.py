"""The house: one installed namespace, a package list that matches the folders, encoder
discovery without an exclusion list, and no import cycles between our modules."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import pkgutil
import sys
import tomllib
from pathlib import Path

from bpebench import algorithms
from bpebench.algorithms.core import registry

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _folders() -> dict[str, Path]:
    """Installed package name -> folder, from the build configuration."""
    return {name: REPO / folder for name, folder in PYPROJECT["tool"]["setuptools"]["package-dir"].items()}


def _our_modules() -> dict[str, Path]:
    modules = {}
    for package, folder in _folders().items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def test_one_installed_top_level_name():
    assert importlib.metadata.distribution("bpebench").read_text("top_level.txt").split() == ["bpebench"]
    for generic in ("algorithms", "corpora", "properties", "reports", "benchmarks"):
        assert generic not in sys.modules, f"a module was imported as top-level {generic!r}"


def test_every_package_folder_is_listed_for_the_build():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    found = set()
    for package, folder in _folders().items():
        for init in folder.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            parts = init.parent.relative_to(folder).parts
            found.add(".".join((package, *parts)))
    assert found == listed


def test_every_plain_module_of_algorithms_is_an_encoder():
    names = registry.encoder_names()
    by_module: dict[str, list[str]] = {}
    for name in names:
        by_module.setdefault(registry.get_encoder_class(name).__module__, []).append(name)
    plain = [m.name for m in pkgutil.iter_modules(algorithms.__path__) if not m.ispkg and not m.name.startswith("_")]
    assert plain, "no encoder modules found"
    for module in plain:
        assert by_module.get(f"{algorithms.__name__}.{module}"), f"algorithms/{module}.py registers no encoder"
    assert not registry.BROKEN


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """Our modules that ``module`` imports anywhere in its file (function-level imports too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return (found & known) - {module}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_our_modules():
    modules = _our_modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_import_bpebench_is_cheap_and_public_names_resolve():
    import subprocess

    script = ("import sys, bpebench; heavy = [m for m in ('numpy', 'numba', 'pandas', 'hypothesis') if m in sys.modules];"
              "print(heavy); print(bpebench.Tokenizer.__name__, bpebench.check_encoder.__name__, bpebench.__version__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    heavy, names = done.stdout.splitlines()
    assert heavy == "[]"
    assert names.startswith("Tokenizer check_encoder ")
    import bpebench

    for name in bpebench.__all__:
        assert getattr(bpebench, name) is not None
