"""The package's import contract: no import cycle between files, subpackages import only downwards,
no module over 600 lines.

Every import counts, the ones inside functions too (a lazy import is still a dependency). The
layers, lowest first: the flat modules of ``crossner_hf`` (data, modeling, training, inference,
evaluation), then ``rnn`` and ``wikipedia``, then ``corpora`` (which reads the Wikipedia domain
corpora), then ``report`` and ``reproduce``, then ``commands`` and ``cli``. A flat module may reach
a subpackage only lazily and never ``commands``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crossner_hf"

ALLOWED = {
    "rnn": set(),
    "wikipedia": set(),
    "corpora": {"wikipedia"},
    "report": set(),
    "reproduce": set(),  # it runs the commands as processes; it never imports them
    "seqeval_metric": set(),
    "commands": {"rnn", "wikipedia", "corpora", "report", "reproduce"},
}
"""Which other subpackages each subpackage may import (the flat modules below them: always)."""


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, anywhere in its body."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:  # `from . import x` names a module; `from .m import f` the module m
                    full = f"{target}.{alias.name}"
                    if full in modules and full != name:
                        graph[name].add(full)
                    elif target in modules and target != name:
                        graph[name].add(target)
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in modules and a.name != name}
    return graph


def _layer(module: str) -> str:
    parts = module.split(".")
    path = _modules()[module]
    if len(parts) > 2 or (len(parts) == 2 and path.name == "__init__.py"):
        return parts[1]
    return "cli" if module == "crossner_hf.cli" else "flat"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_files():
    assert _cycles(import_graph()) == []
    # the check can fail: a two-module loop is found
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_subpackages_import_only_downwards():
    graph = import_graph()
    wrong = []
    for module, targets in graph.items():
        source = _layer(module)
        for target in targets:
            layer = _layer(target)
            if layer in ("flat", source):
                continue
            if source == "cli" or (source == "flat" and layer not in ("commands", "cli")):
                continue  # the CLI imports the commands; flat modules reach subpackages lazily
            if layer not in ALLOWED.get(source, set()):
                wrong.append(f"{module} -> {target}")
    assert wrong == [], "imports against the layering: " + "; ".join(sorted(wrong))


def test_no_module_over_600_lines():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}, f"split these modules (one job each, at most 600 lines): {long}"
