"""One shape for a study run on the grid: ``reproduce`` (a paper's experiment) and ``adapt`` (the methods on a user's
domain) are two clients of it, and each step is written once here.

- plan: typed cells (:class:`~crossner_hf.grid.cells.Cell`), their settings checked by each command's own parser
  before any cell runs (:func:`check_settings`: a misspelt setting fails the plan in one line), written whole to
  ``OUT/plan.json`` (:func:`write_plan`);
- dry run and estimate: every cell with its cost, resources, dependencies, missing inputs and command line
  (:func:`cell_lines`), priced from this machine's finished and running cells (:func:`price`);
- run and lock: :func:`crossner_hf.grid.run_grid` under ``OUT``'s grid lock;
- status: the cells started and not finished with their saved progress (``step 190 of 722``) and why a stopped or
  skipped one stopped (:func:`started_lines`), the counts and the minutes left (:func:`counts_line`);
- result: each cell's own results file read through :func:`crossner_hf.results.read_results`
  (``reproduce``'s :func:`~crossner_hf.reproduce.tables.read_score`), the study's own a
  :class:`~crossner_hf.results.WorkflowResult` (``ExperimentResult``, ``AdaptResult``).
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from crossner_hf.grid.cells import (Cell, Status, progress_note, render_flags, run_seconds, saved_step, shown,
                                    stop_reason, topological)
from crossner_hf.grid.costs import Estimate, cost_key, disk_mb, estimate, read_progress

ParserOf = Callable[[str], Any]
"""``parser_of(command)``: the command's own argparse parser (``crossner_hf.cli.command_parser(command)[1]``)."""

_HARNESS_FLAGS = frozenset({"--output_dir", "--output", "--resume_from_checkpoint"})
"""What the grid itself adds to a cell's command line (:meth:`Cell.command_line`)."""


def check_settings(cells: Iterable[Cell], parser_of: ParserOf) -> None:
    """Refuse, in one line and before any cell runs, a cell whose settings its command does not take: a flag its
    parser has no option for (``--max_step``: did you mean ``--max_steps``?), a value outside the option's choices,
    more values than it takes, or one its type refuses (``--max_steps 2O``). The checks that need the run (a file
    that a dependency writes) stay in the cell; a cell running a program of its own (``Cell.program``) is not
    checked. ``parser_of`` is built once a command."""
    parsers: dict[str, Any] = {}
    for cell in cells:
        if cell.program:
            continue
        if cell.command not in parsers:
            parsers[cell.command] = parser_of(cell.command)
        options = getattr(parsers[cell.command], "_option_string_actions", {})
        for name, value in cell.settings.items():
            if value is None:
                continue
            flag = f"--{name}"
            action = options.get(flag)
            if action is None or flag in _HARNESS_FLAGS:
                known = [o for o in options if o.startswith("--") and o not in _HARNESS_FLAGS]
                near = difflib.get_close_matches(flag, known, n=1)
                hint = f" (did you mean {near[0]}?)" if near else ""
                why = "is set by the grid itself" if flag in _HARNESS_FLAGS else "has no such flag"
                raise ValueError(f"cell {shown(cell.name)}: crossner-hf {cell.command} {why}: {flag}{hint}; fix the "
                                 "plan's settings (no cell has run).")
            shown_values = render_flags({name: value})[1:]  # the strings the cell's own parser will be given
            if action.choices is not None:
                wrong = [v for v in shown_values if v not in {str(c) for c in action.choices}]
                if wrong:
                    raise ValueError(f"cell {shown(cell.name)}: crossner-hf {cell.command} {flag} {wrong[0]}: choose "
                                     f"one of {', '.join(map(str, action.choices))}; fix the plan's settings (no cell "
                                     "has run).")
            _check_values(cell, flag, action, shown_values)


def _check_values(cell: Cell, flag: str, action: Any, values: Sequence[str]) -> None:
    """``values`` as the cell's parser will read them: as many as the option takes, each one its ``type`` accepts
    (``--max_steps 2O``, ``--learning_rate 3e-5x``): argparse's own conversion, run now instead of in the cell."""
    if action.nargs in (None, "?") and len(values) > 1:
        raise ValueError(f"cell {shown(cell.name)}: crossner-hf {cell.command} {flag} takes one value, the plan gives "
                         f"{len(values)}; fix the plan's settings (no cell has run).")
    if not callable(action.type):
        return
    for value in values:
        try:
            action.type(value)
        except (ValueError, TypeError, argparse.ArgumentTypeError) as err:
            kind = getattr(action.type, "__name__", "its type")
            why = " ".join(str(err).split())[:120] or type(err).__name__
            raise ValueError(f"cell {shown(cell.name)}: crossner-hf {cell.command} {flag} {shown(value)[:80]}: not "
                             f"a valid {kind} ({why}); fix the plan's settings (no cell has run).") from None


def price(cells: Sequence[Cell], out: str | Path, model: str = "",
          probed: Mapping[str, float] | None = None) -> Estimate:
    """The study's cost: its finished cells measured, its started ones by their own pace, the others priced from
    them, from ``probed`` (cell name -> minutes from a probe on this machine: :mod:`crossner_hf.grid.probe`) or the
    packaged table (:func:`crossner_hf.grid.costs.estimate`); disk at one model copy a cell. A started cell's
    progress is its ``progress.json``, else its saved step (:func:`saved_progress`)."""
    kinds = {cost_key(c) for c in cells}
    return estimate(cells, out, disk={k: disk_mb(k, model) for k in kinds} if model else None, model=model or None,
                    progress=lambda cell: saved_progress(cell, out), probed=probed)


def saved_progress(cell: Cell, out: str | Path) -> dict[str, Any] | None:
    """A started cell's progress record for the estimate: its ``progress.json`` (written as it trains), else, for a
    cell that ran without one, the share its last complete checkpoint saved and the seconds its runs took."""
    record = read_progress(cell.folder(out))
    if record is not None:
        return record
    saved = saved_step(cell, out)
    seconds = run_seconds(cell, out)
    if saved is None or not saved[1] or saved[2] == "source" or not seconds:  # a source stage: not the run's share
        return None
    return {"share": saved[0] / saved[1], "seconds": seconds}


def cell_lines(cells: Sequence[Cell], out: str | Path, priced: Estimate, status: Mapping[str, str]) -> list[str]:
    """The dry run's listing: each cell (dependencies first) with its cost (done and what it took, or the minutes
    left of it), its CPUs and GPUs, what it runs after, its missing inputs and its command line."""
    lines = []
    for cell in topological(cells):
        deps = f"  after {', '.join(shown(d) for d in cell.deps)}" if cell.deps else ""
        missing = [p for p in cell.inputs if not Path(p).exists()]
        need = f"  MISSING INPUT {', '.join(missing)}" if missing else ""
        if status.get(cell.name) == Status.DONE:
            took = priced.measured.get(cell.name)
            cost = "done" + (f", took {took:.1f} min" if took is not None else "")
        else:
            note = progress_note(cell, out)
            cost = f"~{priced.per_cell.get(cell.name, cell.minutes):.1f} min" + (f" left, at {note}" if note else "")
        lines.append(f"{shown(cell.name)}  ({cost}, {cell.cpus} CPU, {cell.gpus} GPU){deps}{need}\n"
                     f"    {shown(cell.shell_line(Path(out).resolve()))}")
    return lines


def started_lines(cells: Sequence[Cell], out: str | Path, status: Mapping[str, str]) -> list[str]:
    """Each cell started and not finished, with its saved progress and why it stopped: ``politics/joint/seed-1:
    stopped at step 190 of 722 (behind the leader)``; a skipped cell with its reason."""
    lines = []
    for cell in topological(cells):
        state = status.get(cell.name)
        if state in (Status.DONE, Status.FAILED, Status.CHANGED, Status.BLOCKED, Status.MISSING_INPUT):
            continue
        note, reason = progress_note(cell, out), stop_reason(cell, out)
        if not note and state != Status.SKIPPED:
            continue
        at = f" at {note}" if note else ""
        why = f" ({reason})" if reason and state in (Status.STOPPED, Status.SKIPPED) else ""
        lines.append(shown(f"{cell.name}: {state}{at}{why}"))
    return lines


def counts_line(status: Mapping[str, str], priced: Estimate) -> str:
    """``cells: 3 done, 1 stopped, 2 waiting (of 6); ~12.5 min of runs left one after another`` (the minutes count
    what the started cells saved)."""
    counts = {s: sum(1 for v in status.values() if v == s) for s in dict.fromkeys(status.values())}
    return ("cells: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + f" (of {len(status)}); "
            f"~{priced.minutes_left:.1f} min of runs left one after another")


def write_plan(out: str | Path, record: Mapping[str, Any], cells: Iterable[Cell]) -> Path:
    """``OUT/plan.json``: the study's own record and every cell (secrets as ``***``), whole or absent (``--status``
    may write it beside a running grid)."""
    from crossner_hf.outputs import atomic_output

    path = Path(out) / "plan.json"
    with atomic_output(path) as tmp:
        tmp.write_text(json.dumps({**record, "cells": [c.to_dict() for c in cells]}, indent=2, default=str))
    return path


def read_plan_cells(out: str | Path) -> tuple[dict[str, Any], list[Cell]]:
    """``OUT/plan.json`` back: the study's record and its cells; one line naming the file when it is not there."""
    from crossner_hf.outputs import read_json

    path = Path(out) / "plan.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no plan here; --status reads a folder a study ran in (its --output_dir).")
    record = read_json(path, "rerun the study's command to write it again")
    return record, [Cell.from_dict(c) for c in record.get("cells", [])]
