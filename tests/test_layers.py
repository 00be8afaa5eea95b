"""The package's import contract: no import cycle between files, layers import only downwards,
no module over 600 lines.

Every import counts, the ones inside functions too (a lazy import is still a dependency). The
layers, lowest first, are :data:`LAYERS`; a module may import its own layer and the ones below.
The package's ``__init__`` (the facade of lazy names) sits above them all.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crossner_hf"

LAYERS = [
    "base",         # _lazy, extras, outputs, results, task_env, executors, stages, arguments, encoders, citations
    "grid",         # typed cells of workflows, their folders and status, run packed / on Ray / on Slurm
    "data",         # labels, CoNLL, target datasets, words, tokenisation, collators, statistics
    "modeling",     # encoders, decoding, provenance, the RNN models
    "inference",    # the one Tagger and its transformer / RNN implementations
    "evaluation",   # metrics, confusion, entity analysis, plots, the HTML report
    "publishing",   # cards, dataset folders, Hub pushes
    "wikipedia",    # the NER-BERT and domain corpora from dumps
    "corpora",      # DAPT corpus levels
    "training",     # Trainer subclasses, schedules, DAPT, NER-BERT, the RNN loop and recipes
    "testing",      # tiny models and files for tests and smoke runs
    "reproduce",    # the papers' grids and tables (runs commands as processes, never imports them)
    "selection",    # which method for a user's domain: the candidates as a grid, the choice on dev, the evidence
    "commands",     # flags -> library calls
    "cli",
]
"""The layers, lowest first."""

BASE = {"_lazy", "extras", "outputs", "results", "task_env", "executors", "stages", "arguments", "encoders",
        "citations"}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, anywhere in its body (inside functions too), and those its lazy names
    (a ``_LAZY`` table) import on first use."""
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
            elif _is_lazy_table(node) and name != "crossner_hf":
                # a subpackage's lazy names (crossner_hf._lazy), imported on first use; the facade's point at every
                # layer from above them all, and a module importing the facade is an arrow up (_upward says so)
                for value in node.value.values:
                    target = value.value if value.value.startswith("crossner_hf.") else f"{name}.{value.value}"
                    if target in modules and target != name:
                        graph[name].add(target)
    return graph


def _is_lazy_table(node: ast.AST) -> bool:
    """``_LAZY = {"name": "module", ...}``: the table a package's ``__getattr__`` imports from."""
    return (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "_LAZY"
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
            and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in node.value.values))


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "facade"
    if parts[1] in BASE:
        return "base"
    assert parts[1] in LAYERS, f"{module}: not in a layer of tests/test_layers.py LAYERS; add its layer there"
    return parts[1]


def _rank(module: str) -> int:
    """A module's height in the house: its layer's index in :data:`LAYERS`; the facade (the package's lazy names, which
    point at every layer) stands above them all."""
    layer = _layer(module)
    return len(LAYERS) if layer == "facade" else LAYERS.index(layer)


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


def _upward(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in graph.items():
        source = _layer(module)
        if source == "facade":
            continue  # the package's lazy names point at every layer
        for target in targets:
            if _rank(target) > LAYERS.index(source):
                wrong.append(f"{module} ({source}) -> {target} ({_layer(target)})")
    return sorted(wrong)


def test_layers_import_only_downwards():
    wrong = _upward(import_graph())
    assert wrong == [], "imports against the layering: " + "; ".join(wrong)
    # the check can fail: evaluation importing training is found
    assert _upward({"crossner_hf.evaluation.metrics": {"crossner_hf.training.trainer"},
                    "crossner_hf.training.trainer": set()}) != []
    # and a layer importing the facade (``from crossner_hf import __version__``) goes up too
    assert _upward({"crossner_hf.outputs": {"crossner_hf"}, "crossner_hf": set()}) == [
        "crossner_hf.outputs (base) -> crossner_hf (facade)"]


def test_every_module_has_a_layer():
    assert {_layer(m) for m in _modules()} <= {"facade", *LAYERS}
    top = {p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    flat = {n.removesuffix(".py") for n in top} - {"__init__"}
    assert flat <= BASE | set(LAYERS), f"top-level names without a layer: {sorted(flat - BASE - set(LAYERS))}"


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every package module ``start`` imports, directly or through others (lazy imports included)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


SKELETON = "crossner_hf.training.runs"
SCHEDULES = "crossner_hf.training.schedules"


def _runners_reaching_schedules(graph: dict[str, set[str]]) -> list[str]:
    runners = [m for m in graph if m in ("crossner_hf.training.dapt", "crossner_hf.training.nerbert")
               or m.startswith("crossner_hf.training.rnn")]
    return sorted(m for m in runners if SCHEDULES in _reachable(graph, m))


def test_the_run_skeleton_is_a_room_below_the_schedules():
    """Issue 64: DAPT, NER-BERT and the RNN runners claim, resume and finish a run through the skeleton
    (``training/runs.py``), never through the fine-tuning schedules, directly, lazily or by way of another module;
    the schedules stand on the skeleton, and the skeleton on no runner."""
    graph = import_graph()
    runners = [m for m in graph if m in ("crossner_hf.training.dapt", "crossner_hf.training.nerbert")
               or m.startswith("crossner_hf.training.rnn.")]
    assert len(runners) >= 6 and all(SKELETON in _reachable(graph, m) for m in runners
                                     if m.rsplit(".", 1)[-1] in ("dapt", "nerbert", "loop", "common"))
    assert _runners_reaching_schedules(graph) == []
    assert SKELETON in graph[SCHEDULES]
    assert not _reachable(graph, SKELETON) & {SCHEDULES, *runners, "crossner_hf.training.trainer"}
    # the check can fail: DAPT reaching the schedules through a lazy import of another module is found
    bent = {**graph, "crossner_hf.training.dapt": graph["crossner_hf.training.dapt"] | {"crossner_hf.data.x"},
            "crossner_hf.data.x": {SCHEDULES}}
    assert _runners_reaching_schedules(bent) == ["crossner_hf.training.dapt"]


def test_importing_the_run_skeleton_loads_neither_torch_nor_transformers():
    """Claiming and finishing a run needs no Trainer: the skeleton imports the checkpoint callbacks (torch,
    transformers) only inside :func:`resume_point`, where a checkpoint is looked for."""
    import subprocess
    import sys

    code = (f"import sys, {SKELETON}; print(sorted(m for m in ('torch', 'transformers', 'transformers.trainer') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_no_module_over_600_lines():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}, f"split these modules (one job each, at most 600 lines): {long}"


def test_a_train_run_walks_through_at_most_28_doors_between_rooms_and_none_up(tiny_bert_dir, tmp_path, monkeypatch,
                                                                              crossner_data_dir):
    """Issue 64's measure of the hallway, as ``benchmarks/train_route.py`` prints it: a tiny ``train`` run, from the
    command to the written card, calls across rooms (layers) through at most 28 pairs of functions (24 measured),
    and never into a room above the caller's. Merging modules cannot meet it: a call between two modules of one
    room crosses no door, and a call across rooms stays one."""
    import importlib.util

    from crossner_hf.data.target import load_target

    spec = importlib.util.spec_from_file_location("train_route", PACKAGE.parent / "benchmarks" / "train_route.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))
    load_target("politics")  # parsed before the trace, as the script does: a second run's route
    route = script.trace_route(["train", "--domain", "politics", "--model_name_or_path", tiny_bert_dir,
                                "--max_steps", "2", "--per_device_train_batch_size", "4", "--few_shot", "8",
                                "--use_cpu", "true", "--disable_tqdm", "true", "--output_dir", str(tmp_path / "run")])
    doors = script.crossings(route)
    assert route[0].callee == "crossner_hf.commands.train" and (tmp_path / "run" / "README.md").is_file()
    assert {"commands", "training", "data", "modeling", "publishing", "base"} <= {r for pair in doors for r in pair}
    assert script.upward(route) == [] and len(doors) <= 28, doors
    # the measure can fail: a call from the data room up into training is an arrow up, and merging two modules of
    # one room leaves the crossings as they were
    Step = script.Step
    bent = [Step("crossner_hf.data.target", "crossner_hf.training.runs", "load_target", "resume_point")]
    assert script.upward(bent) and script.crossings(bent) == [("data", "training")]
    merged = [s._replace(callee="crossner_hf.outputs") if s.callee == "crossner_hf.encoders" else s for s in route]
    assert len(script.crossings(list(dict.fromkeys(merged)))) == len(doors)  # as the tracer lists pairs: once each
