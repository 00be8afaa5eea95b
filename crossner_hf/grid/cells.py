"""The cells of an experiment grid: what each runs, where, after what, and how far it got.

A :class:`Cell` is one run of an existing ``crossner-hf`` command (``train``, ``dapt``,
``bilstm-crf``, ...) writing into its own folder ``OUT/cells/<name>``; the harness adds
``--output_dir`` and nothing else, so there is no second copy of training code. A cell is
**done** when its result file (``results.json``, ``dapt_results.json``) exists: the commands
move model, results and card into place together (:func:`crossner_hf.outputs.staged_outputs`),
so that file's presence means the run finished. Rerunning a grid skips done cells.

Status files in the cell folder (so any executor, on any node, reports the same table):
``.running`` (host and pid, written when the run starts), ``.failed`` (the last line of the
command's stderr); the command's whole output is in ``log.txt``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crossner_hf.executors import ExecutorOptions

logger = logging.getLogger(__name__)

RESUMABLE = frozenset({"train", "dapt", "nerbert", "bilstm-crf", "cdlm", "multicell"})
"""The commands that checkpoint and take ``--resume_from_checkpoint`` (a grid cell of one resumes after a kill)."""

STATUSES = ("done", "running", "failed", "blocked", "missing input", "waiting")
"""blocked: a dependency failed or is missing its input; missing input: a file or folder it reads is absent."""


@dataclass(frozen=True)
class Cell:
    """One run of a ``crossner-hf`` command in the grid."""

    name: str
    """Unique within the experiment; also the folder under ``OUT/cells/`` (``politics/direct/seed-555``)."""
    command: str
    """The ``crossner-hf`` subcommand."""
    argv: tuple[str, ...]
    """Its flags, ``--output_dir`` excepted (the harness adds the cell's folder)."""
    row: str
    """The table row (or curve) the cell's score goes to."""
    column: str
    """The table column (a domain, or an x value of a figure)."""
    seed: int | None = None
    result_file: str = "results.json"
    deps: tuple[str, ...] = ()
    """Names of the cells whose outputs this one reads (they run first)."""
    inputs: tuple[str, ...] = ()
    """Paths outside the grid the cell reads; absent ones make it 'missing input', never silently dropped."""
    cpus: int = 1
    gpus: int = 0
    minutes: float = 1.0
    """Estimated wall time at this scale (for --dry_run and Slurm time limits)."""
    score: bool = True
    """Whether the cell's result is a table entry (a DAPT cell only feeds the fine-tuning after it)."""
    meta: Mapping[str, str] = field(default_factory=dict)
    output_file: str | None = None
    """For a command that writes one file (``plot-entities --output``): its name in the cell folder,
    passed as ``--output``; otherwise the folder is passed as ``--output_dir``."""

    def folder(self, out: str | Path) -> Path:
        return Path(out) / "cells" / self.name

    def command_line(self, out: str | Path) -> list[str]:
        target = (["--output", str(self.folder(out) / self.output_file)] if self.output_file
                  else ["--output_dir", str(self.folder(out))])
        # a cell killed mid-run continues from its last complete checkpoint when the grid runs it again (a fresh
        # folder has none, so the first run starts at step 0; the run-identity check refuses changed settings)
        resume = (["--resume_from_checkpoint", "true"]
                  if self.command in RESUMABLE and "--resume_from_checkpoint" not in self.argv else [])
        return [sys.executable, "-m", "crossner_hf.cli", self.command, *self.argv, *resume, *target]

    def to_dict(self) -> dict:
        return asdict(self)


def topological(cells: Iterable[Cell]) -> list[Cell]:
    """The cells, every dependency before its dependants (stable: the given order otherwise)."""
    cells = list(cells)
    by_name = {c.name: c for c in cells}
    if len(by_name) != len(cells):
        raise ValueError("two cells share a name; cell names must be unique within an experiment.")
    ordered: list[Cell] = []
    state: dict[str, int] = {}

    def visit(cell: Cell, path: tuple[str, ...]) -> None:
        if state.get(cell.name) == 2:
            return
        if state.get(cell.name) == 1:
            raise ValueError(f"cells depend on each other in a cycle: {' -> '.join(path + (cell.name,))}.")
        state[cell.name] = 1
        for dep in cell.deps:
            if dep not in by_name:
                raise ValueError(f"cell {cell.name} depends on {dep}, which is not in the grid.")
            visit(by_name[dep], path + (cell.name,))
        state[cell.name] = 2
        ordered.append(cell)

    for cell in cells:
        visit(cell, ())
    return ordered


def cell_status(cell: Cell, out: str | Path) -> str:
    """done / running / failed / missing input / waiting, from the cell's folder (dependencies not consulted)."""
    folder = cell.folder(out)
    if (folder / cell.result_file).is_file():
        return "done"
    if (folder / ".failed").is_file():
        return "failed"
    if (folder / ".running").is_file() and _still_running(folder / ".running"):
        return "running"
    if any(not Path(p).exists() for p in cell.inputs):
        return "missing input"
    return "waiting"


def _still_running(marker: Path) -> bool:
    """False for a run of this host whose process is gone (a killed grid); True otherwise (another host: trust it)."""
    try:
        owner = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    if owner.get("host") != socket.gethostname():
        return True
    from crossner_hf.executors import pid_alive

    return pid_alive(int(owner["pid"]))


def grid_status(cells: Iterable[Cell], out: str | Path) -> dict[str, str]:
    """Every cell's status; a cell whose dependency failed or lacks input is 'blocked'."""
    status: dict[str, str] = {}
    for cell in topological(cells):
        own = cell_status(cell, out)
        if own in ("waiting", "running") and any(status[d] in ("failed", "blocked", "missing input") for d in cell.deps):
            own = "blocked"
        status[cell.name] = own
    return status


def run_grid(cells: Iterable[Cell], out: str | Path, options: ExecutorOptions | None = None) -> dict[str, str]:
    """Run every cell that is not done on ``options.executor`` (:mod:`crossner_hf.executors`: local, Ray, Slurm),
    dependencies first; returns each cell's final status."""
    from functools import partial

    from crossner_hf.executors import ExecutorOptions, run_tasks

    return run_tasks(topological(cells), options or ExecutorOptions(), run=partial(run_cell, out=str(out)),
                     status=partial(cell_status, out=out), log_dir=Path(out) / "slurm")


def _submit_cells(executor: Any, cells: list[Cell], out: str | Path, options: ExecutorOptions,
                  status: dict[str, str]) -> dict[str, Any]:
    """The old ``submit_cells`` (warns through :mod:`crossner_hf._moved`): :func:`crossner_hf.executors.submit_tasks`
    over the cells."""
    from functools import partial

    from crossner_hf.executors import submit_tasks

    return submit_tasks(executor, list(cells), options, status, run=partial(run_cell, out=str(out)),
                        status=partial(cell_status, out=out))


def status_table(cells: Iterable[Cell], out: str | Path) -> str:
    """The grid as a text table: one line per cell, then the counts per status."""
    cells = list(cells)
    status = grid_status(cells, out)
    width = max((len(c.name) for c in cells), default=4)
    lines = [f"{'cell':<{width}}  {'status':<13}  command"]
    for cell in topological(cells):
        note = ""
        if status[cell.name] == "failed":
            note = "  " + (cell.folder(out) / ".failed").read_text().strip()[:200]
        elif status[cell.name] == "missing input":
            note = "  needs " + ", ".join(p for p in cell.inputs if not Path(p).exists())
        lines.append(f"{cell.name:<{width}}  {status[cell.name]:<13}  {cell.command}{note}")
    counts = {s: sum(1 for v in status.values() if v == s) for s in STATUSES}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) + f" (of {len(cells)})")
    return "\n".join(lines)


def run_cell(cell: Cell, out: str | Path, env: Mapping[str, str] | None = None) -> str:
    """Run one cell's command unless it is done; returns its status afterwards ('done' or 'failed').

    The command's output goes to ``log.txt`` in the cell folder; a failure writes ``.failed`` with
    the last line of its standard error (the commands print one line for user errors).
    """
    folder = cell.folder(out)
    if (folder / cell.result_file).is_file():
        return "done"
    missing = [p for p in cell.inputs if not Path(p).exists()]
    if missing:
        return "missing input"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".failed").unlink(missing_ok=True)
    (folder / ".running").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
    logger.info("cell %s: %s", cell.name, " ".join(cell.command_line(out)[2:]))
    log_path = folder / "log.txt"
    with open(log_path, "a", encoding="utf-8") as log:
        log.write("$ " + " ".join(cell.command_line(out)) + "\n")
        log.flush()
        start = log.tell()
        # both streams go to the log as they come, so `tail -f log.txt` shows a long run's progress
        proc = subprocess.run(cell.command_line(out), stdout=log, stderr=subprocess.STDOUT,
                              env=dict(env) if env is not None else None)
    (folder / ".running").unlink(missing_ok=True)
    if proc.returncode == 0 and (folder / cell.result_file).is_file():
        return "done"
    with open(log_path, encoding="utf-8", errors="replace") as log:
        log.seek(start)
        # the commands print their one-line error last; progress bars end in carriage returns
        lines = [line.split("\r")[-1] for line in log.read().splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit code {proc.returncode}"
    if proc.returncode == 0:
        last = f"the command succeeded but wrote no {cell.result_file}"
    (folder / ".failed").write_text(last + "\n")
    logger.warning("cell %s failed: %s (log: %s)", cell.name, last, folder / "log.txt")
    return "failed"


def read_score(cell: Cell, out: str | Path, category: str | None = None, metric: str = "f1") -> float | None:
    """The cell's score from its result file, or None when it has none.

    Test F1 in percent (overall, or of one entity ``category``: the mean over the run's seeds)
    for ``train``, ``bilstm-crf``, ``cdlm`` and ``multicell`` (``metric`` precision or recall: the overall ones,
    CDLM's Table 4), read by :func:`crossner_hf.results.read_results` (any results schema); the silhouette (-1..1, overall or of
    ``category``) for ``plot-entities``. A category the run did not score gives None.
    """
    path = cell.folder(out) / cell.result_file
    if not cell.score or not path.is_file():
        return None
    from crossner_hf.outputs import read_json
    from crossner_hf.results import read_results

    raw = read_json(path)
    if "silhouette" in raw:  # crossner-hf plot-entities: not a workflow's results
        scores = raw["silhouette"]
        return scores["overall"] if category is None else scores["per_category"].get(category)
    result = read_results(path)  # any schema this version reads: the shared keys say where the scores are
    test = result["test"] or {}
    if category is None:
        return 100 * (result.test_f1 if metric == "f1" else test[f"overall_{metric}"])
    if result["workflow"] == "finetune":  # the mean over the seeds that scored the type
        per_seed = [s["test"]["per_type"].get(category, {}).get("f1") for s in result["per_seed"]]
        per_seed = [f for f in per_seed if f is not None]
        return 100 * sum(per_seed) / len(per_seed) if per_seed else None
    f1 = test.get("per_type", {}).get(category, {}).get("f1")
    return None if f1 is None else 100 * f1


def read_counts(cell: Cell, out: str | Path) -> dict[str, tuple[int, int]] | None:
    """``{entity type: (correctly recognised, gold)}`` on the test split of an RNN recipe's cell (``bilstm-crf``,
    ``cdlm``, ``multicell``), or None when it has no result file. Correct = recall x gold, the true positives of
    the conlleval count the run reported (CDLM's Table 5 counts them per type)."""
    path = cell.folder(out) / cell.result_file
    if not cell.score or not path.is_file():
        return None
    from crossner_hf.outputs import read_json

    per_type = (read_json(path).get("test") or {}).get("per_type")
    if per_type is None:
        raise ValueError(f"{path}: no test.per_type scores (a bilstm-crf, cdlm or multicell result file has them).")
    return {t: (round(s["recall"] * s["support"]), int(s["support"])) for t, s in per_type.items()}
