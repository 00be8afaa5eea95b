"""Running an experiment: ``run_experiment(plan(..., out), executor=ExecutorOptions(...)) -> ExperimentResult`` runs
the grid's cells, in the folder the plan was made for, on the chosen executor and writes the table and the figure;
:func:`dry_run_text` describes a plan without running it. Plan, dry run, estimate, status and lock are the grid
study's (:mod:`crossner_hf.grid.study`), shared with ``adapt``. The ``reproduce`` command translates its flags into
these calls."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from crossner_hf.executors import ExecutorOptions
from crossner_hf.reproduce.experiments import Plan
from crossner_hf.grid import Cell, Status, grid_lock, grid_lock_if_free, grid_status, run_grid
from crossner_hf.grid.study import cell_lines, price, started_lines, write_plan
from crossner_hf.results import WorkflowResult, shared_record
from crossner_hf.reproduce.tables import FIGURES, write_figure, write_tables

logger = logging.getLogger(__name__)

STATUS_DIR = ".status"
"""Where ``--status`` beside a live run writes the table so far (the run writes ``OUT/table.md`` itself)."""


def dry_run_text(cells: list[Cell], out: str | Path) -> str:
    """Each cell with its cost, command line, dependencies and missing inputs (the grid study's listing), the cells
    started and not finished with their saved progress; then the total. A resumed experiment is priced on its cells
    left, from the finished and started ones' measured seconds first."""
    status = grid_status(cells, out)
    priced = price(cells, out)
    started = started_lines(cells, out, status)
    return "\n".join([*cell_lines(cells, out, priced, status),
                      *(["started and not finished:", *(f"  {line}" for line in started)] if started else []),
                      priced.text()])


def _output_dir(grid: Plan, output_dir: str | Path | None) -> Path:
    """The experiment's folder: the plan's, which ``output_dir`` may repeat but not contradict."""
    planned = grid.output_dir
    if output_dir is None:
        if planned is None:
            raise ValueError("run_experiment: the plan names no output folder; make it with plan(experiment, scale, "
                             "out) or pass output_dir.")
        return Path(planned)
    if planned is not None and Path(output_dir).resolve() != Path(planned).resolve():
        raise ValueError(f"run_experiment: output_dir {output_dir} is not the folder the plan was made for "
                         f"({planned}), where its cells' command lines write; drop output_dir or plan again with "
                         f"plan(..., {str(output_dir)!r}).")
    return Path(output_dir)


@dataclass(frozen=True, repr=False)
class ExperimentResult(WorkflowResult):
    """What running (or refreshing) an experiment gives back, a :class:`~crossner_hf.results.WorkflowResult`
    (``workflow`` "reproduce"; its ``results`` hold the experiment, scale, each cell's status and the cells' summed
    seconds; no dev or test F1 of its own: those are the table's): each cell's status, the table (Markdown and
    CSV) and the figure (figure experiments)."""

    status: dict[str, str] = field(default_factory=dict)
    table: Path | None = None
    table_csv: Path | None = None
    figure: Path | None = None

    workflow: ClassVar[str | None] = "reproduce"

    @property
    def failed(self) -> list[str]:
        return [name for name, state in self.status.items() if state == Status.FAILED]


def run_experiment(grid: Plan, output_dir: str | Path | None = None, executor: ExecutorOptions | None = None, *,
                   run: bool = True, prune: bool = False, time_budget: float | None = None) -> ExperimentResult:
    """Run ``grid``'s cells (those not done; ``run=False`` only reads what is done) on ``executor`` (default:
    local, one after another), then write ``table.md`` / ``table.csv`` (ours beside the paper's) and the figure.

    ``prune`` (``--prune on``) races the method rows within each column, ``time_budget`` (minutes) ends the run
    with what finished by then (:mod:`crossner_hf.reproduce.racing`; local executor only). Both off by default: a
    paper's table needs every cell.

    ``grid`` comes from :func:`~crossner_hf.reproduce.experiments.plan`, which was given the output folder: the
    cells run in their own folders under it; a rerun resumes (done cells are kept, a killed one continues from its
    checkpoint). ``output_dir`` need not be given again; when it is, it must be the plan's folder (the cells'
    command lines name folders under that one).
    """
    import time

    from crossner_hf.outputs import check_writable

    started = time.time()
    out = _output_dir(grid, output_dir)
    check_writable(out, "--output_dir", folder=True)
    if grid.experiment in (*FIGURES, "nerbert-fig3"):
        from crossner_hf.extras import require

        require("matplotlib", "plots")  # the figure is drawn at the end: say so now, not after the runs
        if grid.experiment == "nerbert-fig3":
            require("sklearn", "plots")  # the plot-entities cells need it
    if not run:  # --status: reads what is done; writes the plan and the table only when no run holds the folder
        with grid_lock_if_free(out) as ours:
            if ours:
                _write_plan(grid, out)
                return _tables(grid, out)
            # a live run writes OUT's table itself, last: a snapshot taken now must not overwrite its final one
            logger.info("a run holds %s: the table so far is in %s (the run writes %s when it ends)", out,
                        out / STATUS_DIR, out / "table.md")
            return _tables(grid, out, dest=out / STATUS_DIR)
    with grid_lock(out):  # one run per folder, from the plan to the table
        _write_plan(grid, out)
        from crossner_hf.reproduce.budgets import default_model

        # the smoke grid's own encoder (not one the caller named): made here when absent
        if grid.scale == "smoke" and grid.model == default_model("smoke", out) and not Path(grid.model).exists():
            from crossner_hf.testing import make_tiny_bert

            # the smoke grid's encoder: a tiny random BERT whose vocabulary holds its domains' words
            make_tiny_bert(grid.model, _smoke_words(grid.cells))
        from crossner_hf.reproduce.racing import race_controller

        options = executor or ExecutorOptions()
        controller = race_controller(grid.cells, out, options, prune=prune, time_budget=time_budget, started=started)
        run_grid(grid.cells, out, options, controller=controller)
        return _tables(grid, out)


def _smoke_words(cells: list[Cell]) -> list[str]:
    """The words of every split of the CrossNER domains the cells train on (``--domain``, and CoNLL-2003 for the
    schedules that read it), lower-cased, for the smoke encoder's vocabulary: a word it lacked would be cut into
    characters, and each smoke cell's evaluation then scored sentences several times longer. None where the files
    cannot be read (the cells will say so themselves)."""
    from crossner_hf.data.labels import CONFIGS, SOURCE_DOMAIN
    from crossner_hf.data.target import load_target

    domains: set[str] = set()
    for cell in cells:
        flags = cell.flags()
        domains |= {flags[i + 1] for i, flag in enumerate(flags[:-1]) if flag == "--domain" and flags[i + 1] in CONFIGS}
        if any(flag == "--schedule" and value != "direct" for flag, value in zip(flags, flags[1:])):
            domains.add(SOURCE_DOMAIN)
    words: set[str] = set()
    for domain in sorted(domains):
        try:
            target = load_target(domain)
        except (OSError, ValueError) as err:  # no files here: the cells fail on it in their own words
            logger.info("the smoke encoder's vocabulary lacks %s: %s", domain, err)
            continue
        for split in target.dataset.values():
            words.update(w.lower() for row in split["tokens"] for w in row)
    return sorted(words)


def _write_plan(grid: Plan, out: Path) -> None:
    write_plan(out, {"experiment": grid.experiment, "scale": grid.scale, "model": grid.model}, grid.cells)


def _tables(grid: Plan, out: Path, dest: Path | None = None) -> ExperimentResult:
    """The table (and figure) from what is done, into ``out`` (``dest``: a snapshot's folder, and no figure)."""
    if dest is not None:
        dest.mkdir(exist_ok=True)
    from crossner_hf.reproduce.racing import race_note

    raced = race_note(out)  # what the last run's race or time budget cut, said in the table
    md, csv_path = write_tables(grid.experiment, grid.cells, out, scale=grid.scale, model=grid.model,
                                notes=(*grid.notes, *([raced] if raced else [])), unplanned=grid.unplanned, dest=dest)
    figure = write_figure(grid.experiment, grid.cells, out, model=grid.model) if dest is None else None
    if figure is not None:
        logger.info("figure: %s", figure)
    status = grid_status(grid.cells, out)
    from crossner_hf.grid.costs import cell_seconds

    seconds = sum(cell_seconds(c, out) or 0.0 for c in grid.cells if status[c.name] == Status.DONE)
    seeds = sorted({c.seed for c in grid.cells if c.seed is not None})
    results = {**shared_record("reproduce", model=grid.model, dataset=grid.experiment, seeds=seeds, dev=None,
                               test=None, seconds=round(seconds, 3)),
               "experiment": grid.experiment, "scale": grid.scale, "status": {k: str(v) for k, v in status.items()}}
    return ExperimentResult(out, results, status=dict(status), table=md, table_csv=csv_path, figure=figure)
