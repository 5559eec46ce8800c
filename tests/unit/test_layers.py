"""The package's import structure (docs/architecture.md, "Layers"): the folders of mptcplab/
import each other without a loop, the longest chain of imports is at most 12 folders deep,
and the core (value types, lab schema, record model, checks) never imports a plug-in package
(traffic kinds, probes, controllers), which it finds by name (mptcplab/plugins.py).

Read from the source, type-only imports included (a type is a dependency too); a top-level
module of mptcplab/ counts as a folder of its own."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "mptcplab"
MAX_LAYERS = 12
#: the core: what the plug-ins build on
CORE = ("values", "lab", "record", "checks", "units", "errors", "metricdecl", "plugins")
PLUGINS = ("traffic", "probes", "controllers")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The project modules ``path`` imports (any level, type-only imports included)."""
    here = _module(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                cand = f"{target}.{alias.name}"
                out.add(cand if cand in modules else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("mptcplab.")}


def _folder(module: str) -> str:
    return module.split(".")[1]


@cache
def folder_graph() -> dict[str, frozenset[str]]:
    files = list(PKG.rglob("*.py"))
    modules = {_module(p) for p in files}
    graph: dict[str, set[str]] = {}
    for p in files:
        if p.parent == PKG and p.name == "__init__.py":
            continue
        src = _folder(_module(p))
        graph.setdefault(src, set()).update(_folder(m) for m in _imports(p, modules) if m.count(".") >= 1)
    return {k: frozenset(v - {k}) for k, v in graph.items()}


def _loop(graph: dict[str, frozenset[str]]) -> list[str] | None:
    """One import loop between folders, if there is one."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m):], m]
            if m not in state and (found := visit(m)):
                return found
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_no_import_loop_between_folders() -> None:
    loop = _loop(folder_graph())
    assert loop is None, "an import loop between folders: " + " -> ".join(loop or [])


def test_at_most_twelve_layers() -> None:
    graph = folder_graph()

    @cache
    def depth(n: str) -> int:
        return 1 + max((depth(m) for m in graph.get(n, ())), default=0)

    deepest = max(graph, key=depth)
    assert depth(deepest) <= MAX_LAYERS, f"{deepest}/ stands on {depth(deepest)} layers of imports"


@pytest.mark.parametrize("core", CORE)
def test_the_core_imports_no_plugin_package(core: str) -> None:
    assert not folder_graph().get(core, frozenset()) & set(PLUGINS), \
        f"{core} imports {sorted(folder_graph()[core] & set(PLUGINS))}: find them through mptcplab/plugins.py"


def test_the_scan_sees_a_loop() -> None:
    """The loop finder is not blind."""
    assert _loop({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"})}) == ["a", "b", "c", "a"]
    assert _loop({"a": frozenset({"b"}), "b": frozenset()}) is None
