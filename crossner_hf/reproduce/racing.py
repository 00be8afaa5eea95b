"""Racing ``reproduce``'s method rows (``--prune on``, ``--time_budget MINUTES``): the grid's race
(:class:`crossner_hf.grid.race.RaceController` over :class:`~crossner_hf.grid.race.Race`, the policy ``adapt`` races
its candidates with) applied to a paper table's rows.

Off by default: a paper's table needs every cell. With ``--prune on``, within each column (a domain, a dataset, a
figure's x value) the rows that train and score (``train``, ``bilstm-crf``, ``cdlm``, ``multicell`` cells) race as
methods: one seed of every row first, further seeds only to rows that can still win on dev, a training clearly behind
the column's leader at the same share of its own budget stopped (its checkpoint kept: a rerun without ``--prune on``
continues it). A row is never compared with another column's: a domain's F1 says nothing of another's. The cells a
row's score depends on (DAPT, NER-BERT pre-training, corpora) are not raced; they run as planned. ``--time_budget``
launches a cell only while its estimate fits in the time left and stops the running ones when it is up (resumable).
The status table shows each stopped or skipped cell with its reason, and ``table.md`` says what was cut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from crossner_hf.executors import ExecutorOptions, Status
from crossner_hf.grid import Cell, cell_status
from crossner_hf.grid.race import RACE, Race, RaceController, RacePolicy, Trial, read_race

logger = logging.getLogger(__name__)

RACED_COMMANDS = frozenset({"train", "bilstm-crf", "cdlm", "multicell"})
"""The commands whose cells are a row's seeds and report a dev F1 (their ``results.json``'s ``dev``)."""

PRICE_EVERY = 20.0
"""Seconds between two pricings of the cells left (each reads every cell's folder), for the time budget."""


def method_of(cell: Cell) -> str:
    """A raced cell's method: its row within its column (``politics: joint / w/o DAPT``)."""
    return f"{cell.column}: {cell.row}"


def raced_cells(cells: Sequence[Cell]) -> list[Cell]:
    """The cells that race: a scored row's seeds of a command that reports dev F1."""
    return [c for c in cells if c.score and c.seed is not None and c.command in RACED_COMMANDS and not c.program]


class ColumnRace(Race):
    """A :class:`~crossner_hf.grid.race.Race` whose methods are the rows of a table, each compared only with the rows
    of its own column (``columns``: method -> column): the leader a row must be able to beat, and the best another
    row reached at the same share of its budget, are its column's."""

    def __init__(self, trials: Sequence[Trial], policy: RacePolicy, columns: Mapping[str, str], **kwargs: Any):
        super().__init__(trials, policy, **kwargs)
        self.columns = dict(columns)

    @contextmanager
    def _column_of(self, method: str | None) -> Iterator[None]:
        """Within the block, the race sees only ``method``'s column's trials (its evidence is that column's)."""
        every = self.trials
        if method is not None:
            column = self.columns.get(method)
            self.trials = {n: t for n, t in every.items() if self.columns.get(t.method) == column}
        try:
            yield
        finally:
            self.trials = every

    def leader(self, exclude: str | None = None) -> str | None:
        with self._column_of(exclude):
            return super().leader(exclude)

    def ahead_at(self, method: str, share: float) -> tuple[str, float] | None:
        with self._column_of(method):
            return super().ahead_at(method, share)


def race_controller(cells: Sequence[Cell], out: Path, options: ExecutorOptions, *, prune: bool,
                    time_budget: float | None, started: float | None = None) -> RaceController | None:
    """The grid's controller racing ``cells``' method rows (see the module's text); None where every cell runs in
    full: neither ``prune`` nor ``time_budget`` asked, or an executor other than local (the grid takes no controller
    there; a warning says so)."""
    (Path(out) / RACE).unlink(missing_ok=True)  # this run's decisions only: a table never reports an older race's
    if not prune and not time_budget:
        return None
    if options.executor != "local":
        logger.warning("reproduce: --prune on and --time_budget need --executor local; on %s every cell runs in full",
                       options.executor)
        return None
    from crossner_hf.executors import plan_packing
    from crossner_hf.grid.costs import read_progress
    from crossner_hf.grid.study import price
    from crossner_hf.results import WorkflowResult

    by_name = {c.name: c for c in cells}
    raced = raced_cells(cells)
    seeds: dict[str, list[int]] = {}
    for cell in raced:
        seeds.setdefault(method_of(cell), []).append(int(cell.seed))
    trials = [Trial(c.name, method_of(c), sorted(seeds[method_of(c)]).index(int(c.seed)), minutes=c.minutes)
              for c in raced]
    deadline = (started if started is not None else time.time()) + 60 * time_budget if time_budget else None
    race = ColumnRace(trials, RacePolicy(prune=prune, deadline=deadline),
                      {method_of(c): str(c.column) for c in raced})
    priced: dict[str, Any] = {"at": -PRICE_EVERY, "per_cell": {}}

    def minutes(name: str) -> float:  # this machine's estimate of what is left of the cell, for the deadline
        if time.monotonic() - priced["at"] >= PRICE_EVERY:
            priced.update(at=time.monotonic(), per_cell=price(list(cells), out).per_cell)
        return priced["per_cell"].get(name, by_name[name].minutes)

    def final(name: str) -> float | None:
        cell = by_name[name]
        if not cell.result_path(out).is_file():
            return None
        dev = WorkflowResult.read(cell.result_path(out)).dev_f1
        return 100 * (dev or 0.0)

    return RaceController(race, out, final=final, progress=lambda name: read_progress(by_name[name].folder(out)),
                          failed=lambda name: cell_status(by_name[name], out) == Status.FAILED,
                          minutes=minutes if deadline is not None else None,
                          slots=max(1, plan_packing(list(cells), options).workers))


def race_note(out: str | Path) -> str | None:
    """What the last run's race did, for ``table.md`` (None: every cell ran in full)."""
    record = read_race(out)
    if not record:
        return None
    stopped, skipped = record.get("stopped", {}), record.get("skipped", {})
    parts = []
    if record.get("prune"):
        parts.append(f"Raced (--prune on): within each column one seed of every row first, further seeds only to "
                     f"rows that could still win on dev, a training stopped when it trailed the column's leader at the "
                     f"same share of its own budget by more than the margin ({record.get('margin', 0):.1f} F1)")
    if record.get("deadline") is not None:
        parts.append("a time budget (--time_budget) " + ("was reached: the cells still running were stopped"
                                                         if record.get("expired") else "held"))
    if not stopped and not skipped:
        return "; ".join(parts) + "; every cell ran in full."
    return ("; ".join(parts) + f"; {len(stopped)} cell(s) stopped, {len(skipped)} never started (the status table "
            "says why). Their rows are not the paper's full measure; a rerun without --prune on and --time_budget "
            "continues them from their checkpoints.")
