"""The racing of an ``adapt`` search (``--prune``, ``--time_budget``) and its clock as it runs: the grid's controller
(:class:`crossner_hf.grid.race.RaceController` over :class:`~crossner_hf.grid.race.Race`) with adapt's evidence (each
finished cell's dev F1, each running cell's ``progress.json``, the paired bootstrap on dev between two methods'
finished seeds), the minutes each cell has left (:func:`crossner_hf.grid.costs.estimate`, for the deadline) and the
``clock:`` line logged as the estimate moves; and the sentence ``adapt.md`` and the card carry about what was cut.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crossner_hf.executors import ExecutorOptions
from crossner_hf.grid import Cell
from crossner_hf.results import WorkflowResult
from crossner_hf.selection.candidates import Method
from crossner_hf.selection.choice import paired_bootstrap
from crossner_hf.selection.config import AdaptConfig

logger = logging.getLogger(__name__)


def race_controller(methods: Sequence[Method], cells: Sequence[Cell], out: Path, config: AdaptConfig, model: str,
                    options: ExecutorOptions, started: float, *,
                    dev_counts: Callable[[str], Any] | None = None) -> Any:
    """The grid's controller that races the methods (:mod:`crossner_hf.grid.race`): ``--prune``, ``--time_budget``
    and the clock logged as the search runs; None (every cell in full) on Ray or Slurm, where the grid takes no
    controller, with a warning when racing or a time budget was asked."""
    from crossner_hf.grid.race import RACE, Race, RaceController, RacePolicy, Trial

    (out / RACE).unlink(missing_ok=True)  # this run's decisions only
    if options.executor != "local":
        if config.prune == "on" or config.time_budget:
            logger.warning("adapt: racing (--prune on) and --time_budget need the local executor; on %s every cell "
                           "runs in full", options.executor)
        return None
    trials = [Trial(c.name, m.name, i, minutes=c.minutes) for m in methods for i, c in enumerate(m.cells)]
    by_name = {c.name: c for c in cells}
    deadline = started + 60 * config.time_budget if config.time_budget else None
    policy = RacePolicy(prune=config.prune == "on", deadline=deadline)
    race = Race(trials, policy, separated=None if dev_counts is None else _separated_on_dev(methods, out, dev_counts))
    clock = _Clock(cells, out, model, options)
    clock.race = race

    def final(name: str) -> float | None:
        cell = by_name[name]
        if not cell.result_path(out).is_file():
            return None
        return 100 * (WorkflowResult.read(cell.folder(out)).dev_f1 or 0.0)

    def progress(name: str) -> dict | None:
        from crossner_hf.grid.costs import read_progress

        return read_progress(by_name[name].folder(out))

    def failed(name: str) -> bool:
        from crossner_hf.grid import cell_status

        return str(cell_status(by_name[name], out)) == "failed"

    return RaceController(race, out, final=final, progress=progress, failed=failed,
                          minutes=clock.minutes if deadline is not None else None, tick=clock.tick,
                          slots=clock.workers)


class _Clock:
    """The search's clock as it runs: each cell's minutes left priced from this machine
    (:func:`crossner_hf.grid.costs.estimate`: finished cells, then the running ones' progress), refreshed at most
    every :attr:`every` seconds, and the ETA logged when it moves."""

    every = 20.0

    def __init__(self, cells: Sequence[Cell], out: Path, model: str, options: ExecutorOptions):
        from crossner_hf.executors import plan_packing

        self.cells, self.out, self.model = list(cells), out, model
        self.workers = max(1, plan_packing(self.cells, options).workers)
        self.priced: Any = None
        self.at = 0.0
        self.said = ""
        self.running: tuple[str, ...] = ()
        self.race: Any = None
        """The race whose stopped and skipped cells are not left to run (set by :func:`race_controller`)."""

    def refresh(self) -> Any:
        from crossner_hf.grid.costs import disk_mb, estimate

        if self.priced is None or time.monotonic() - self.at > self.every:
            # the cells the race stopped or never starts are not left to run: the clock counts what will run
            dropped = set(self.race.skipped_cells) | set(self.race.stopped) if self.race is not None else set()
            cells = [c for c in self.cells if c.name not in dropped]
            kinds = {str(c.meta.get("cost") or c.command) for c in cells}
            self.priced = estimate(cells, self.out, disk={k: disk_mb(k, self.model) for k in kinds},
                                   model=self.model)
            self.at = time.monotonic()
        return self.priced

    def minutes(self, name: str) -> float:
        priced = self.refresh()
        return priced.per_cell.get(name, 0.0)

    def tick(self, running: Sequence[str]) -> None:
        if tuple(running) != self.running:  # a cell started or ended: price again now
            self.running, self.priced = tuple(running), None
        priced = self.refresh()
        wall, _ = priced.wall_minutes(self.workers, running=running)
        text = (f"clock: {priced.done} of {priced.cells} cells to run done, {len(running)} running; ETA "
                f"~{wall:.{0 if wall >= 10 else 1}f} min "
                f"at {self.workers} at once (priced from {', '.join(sorted(set(priced.priced_from.values())))})"
                if priced.left else "")
        if text and text != self.said:
            self.said = text
            logger.info("%s", text)


def _separated_on_dev(methods: Sequence[Method], out: Path, dev_counts: Callable[[str], Any]) -> Any:
    """``separated(leader, method)`` for the race: the paired bootstrap on dev between the two methods' finished
    seeds (``dev_counts(folder)``: a finished cell's per-sentence counts on dev, from its recorded predictions); a
    reason when its 95% interval excludes 0, else None."""
    cells = {m.name: m.cells for m in methods}
    cache: dict[tuple, str | None] = {}

    def separated(leader: str, method: str) -> str | None:
        folders = [[str(c.folder(out)) for c in cells[m] if c.result_path(out).is_file()] for m in (leader, method)]
        key = (leader, method, *map(tuple, folders))
        if key not in cache:
            counts = [[dev_counts(f) for f in group] for group in folders]
            result = paired_bootstrap(counts[0], counts[1])
            cache[key] = (f"paired bootstrap on dev: {leader} - {method} = {result['delta']:+.1f} F1, 95% interval "
                          f"{result['low']:+.1f} to {result['high']:+.1f} excludes 0") if result["low"] > 0 else None
        return cache[key]

    return separated


def race_text(out: Path, config: AdaptConfig, started: float) -> str | None:
    """What the race and the time budget did, for ``adapt.md`` and the card (None: every cell ran in full)."""
    from crossner_hf.grid.race import read_race

    record = read_race(out)
    if not record:
        return None
    stopped, skipped = record.get("stopped", {}), record.get("skipped", {})
    parts = []
    if config.prune == "on":
        parts.append(f"Raced (--prune on): one seed of every method first, further seeds only to methods that could "
                     f"still win, a training stopped when it trailed the leader at the same share of its own budget by "
                     f"more than the margin ({record.get('margin', 0):.1f} F1); {len(stopped)} cell(s) stopped, "
                     f"{len(skipped)} never started (see the status column; a rerun with --prune off continues them "
                     "from their checkpoints).")
    if config.time_budget:
        expired = record.get("expired")
        parts.append(f"Time budget {config.time_budget:g} min: " + (
            "reached; the cells still running were stopped (resumable) and the choice was made among the finished "
            "methods." if expired else f"the search ended within it ({(time.time() - started) / 60:.1f} min)."))
    return " ".join(parts) or None
