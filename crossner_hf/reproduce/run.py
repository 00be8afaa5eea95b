"""``crossner-hf reproduce``: plan the grid, run it on the chosen executor, write the tables."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from crossner_hf.reproduce.executors import GridExecutorOptions, run_grid
from crossner_hf.reproduce.experiments import plan
from crossner_hf.reproduce.grid import grid_status, status_table, topological
from crossner_hf.reproduce.tables import FIGURES, write_figure, write_tables

logger = logging.getLogger(__name__)


def dry_run_text(cells, out) -> str:
    """Each cell with its command line, dependencies, missing inputs and estimated minutes; then the total."""
    lines = []
    for cell in topological(cells):
        deps = f"  after {', '.join(cell.deps)}" if cell.deps else ""
        missing = [p for p in cell.inputs if not Path(p).exists()]
        need = f"  MISSING INPUT {', '.join(missing)}" if missing else ""
        lines.append(f"{cell.name}  (~{cell.minutes:g} min, {cell.cpus} CPU, {cell.gpus} GPU){deps}{need}\n"
                     f"    crossner-hf {' '.join(cell.command_line(out)[3:])}")
    total = sum(c.minutes for c in cells)
    lines.append(f"{len(cells)} cells, ~{total:g} min of runs one after another ({total / 60:.1f} h)")
    return "\n".join(lines)


def reproduce(args: Any) -> int:
    """Run (or with ``dry_run``/``status`` only describe) ``args.experiment``; 1 when a cell failed."""
    from crossner_hf.outputs import check_writable

    out = Path(args.output_dir)
    grid = plan(args.experiment, args.scale, out, domains=args.domains, seeds=args.seeds, model=args.model,
                corpora=args.corpora, data_dir=args.data_dir, rows=args.rows,
                nerbert_corpus=args.nerbert_corpus, datasets=args.datasets, raw_text=args.raw_text)
    if args.dry_run:
        print(dry_run_text(grid.cells, out))
        for row, reason in grid.unplanned:
            print(f"paper row not planned: {row}: {reason}")
        if grid.notes:
            print("What --scale cpu cuts against the paper:\n" + "\n".join(f"- {n}" for n in grid.notes))
        return 0
    check_writable(out, "--output_dir", folder=True)
    if grid.experiment in (*FIGURES, "nerbert-fig3"):
        from crossner_hf.extras import require

        require("matplotlib", "plots")  # the figure is drawn at the end: say so now, not after the runs
        if grid.experiment == "nerbert-fig3":
            require("sklearn", "plots")  # the plot-entities cells need it
    (out / "plan.json").write_text(json.dumps({"experiment": grid.experiment, "scale": grid.scale, "model": grid.model,
                                               "cells": [c.to_dict() for c in grid.cells]}, indent=2))
    if not args.status:
        if args.scale == "smoke" and args.model is None and not Path(grid.model).exists():
            from crossner_hf.testing import make_tiny_bert

            make_tiny_bert(grid.model)  # the smoke grid's encoder: a tiny random BERT with a vocabulary
        options = GridExecutorOptions(executor=args.executor, ray_address=args.ray_address,
                                  slurm_partition=args.slurm_partition, slurm_cluster=args.slurm_cluster,
                                  slurm_account=args.slurm_account)
        run_grid(grid.cells, out, options)
    md, _ = write_tables(grid.experiment, grid.cells, out, scale=grid.scale, model=grid.model, notes=grid.notes,
                         unplanned=grid.unplanned)
    figure = write_figure(grid.experiment, grid.cells, out, model=grid.model)
    if figure is not None:
        logger.info("figure: %s", figure)
    print(status_table(grid.cells, out), file=sys.stderr)
    print(md.read_text())
    return 1 if "failed" in grid_status(grid.cells, out).values() else 0
