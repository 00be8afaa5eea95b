"""Running a grid's cells: one after another here, as Ray tasks, or as Slurm jobs through submitit.

Every executor runs :func:`~crossner_hf.reproduce.grid.run_cell` (the cell's own ``crossner-hf``
command in a subprocess) and honours the same rules: a done cell is skipped, a cell runs only
after its dependencies are done, a failed cell is reported and the others go on (its dependants
are 'blocked'), and rerunning the same command resumes.

- ``local``: the cells in dependency order in this process's machine.
- ``ray``: each cell a Ray task asking for its CPUs/GPUs; a dependency is passed as the upstream
  task's result, so Ray starts a cell when its inputs are ready. Joins the cluster named by
  ``RAY_ADDRESS`` (or ``--ray_address``), else starts a local one.
- ``slurm``: each cell a submitit job; dependencies become ``--dependency=afterok:<job ids>``
  (:func:`slurm_parameters`). ``--slurm_cluster local`` runs the same path through submitit's
  local executor (which has no job dependencies: a cell is submitted when its dependencies finished).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossner_hf.reproduce.grid import Cell, cell_status, run_cell, topological

logger = logging.getLogger(__name__)

EXECUTORS = ("local", "ray", "slurm")


@dataclass
class GridExecutorOptions:
    """Where the grid's cells run (the Wikipedia builder's datatrove executors have their own
    :class:`crossner_hf.wikipedia.pipeline.ExecutorOptions`)."""

    executor: str = "local"
    ray_address: str | None = None
    slurm_partition: str | None = None
    slurm_cluster: str | None = None
    """submitit's cluster: None picks Slurm when ``sbatch`` exists; ``local`` for a machine without Slurm."""
    slurm_account: str | None = None


def run_grid(cells: Sequence[Cell], out: str | Path, options: GridExecutorOptions) -> dict[str, str]:
    """Run every cell that is not done; returns each cell's final status."""
    if options.executor not in EXECUTORS:
        raise ValueError(f"--executor {options.executor!r}: choose one of {', '.join(EXECUTORS)}.")
    cells = topological(cells)
    run = {"local": _run_local, "ray": _run_ray, "slurm": _run_slurm}[options.executor]
    return run(cells, Path(out), options)


def _blocked(cell: Cell, status: dict[str, str]) -> bool:
    return any(status.get(dep) != "done" for dep in cell.deps)


def _run_local(cells: list[Cell], out: Path, options: GridExecutorOptions) -> dict[str, str]:
    status: dict[str, str] = {}
    for i, cell in enumerate(cells, 1):
        if _blocked(cell, status):
            status[cell.name] = "blocked"
            continue
        status[cell.name] = run_cell(cell, out)
        logger.info("[%d/%d] %s: %s", i, len(cells), cell.name, status[cell.name])
    return status


def _ray_cell(cell: Cell, out: str, env: dict[str, str], *dep_status: str) -> str:
    if any(s != "done" for s in dep_status):
        return "blocked"
    return run_cell(cell, out, env=env)


def _run_ray(cells: list[Cell], out: Path, options: GridExecutorOptions) -> dict[str, str]:
    from crossner_hf.extras import require

    ray = require("ray", "ray")
    address = options.ray_address or os.environ.get("RAY_ADDRESS")
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:  # a local cluster of this machine's cores
            ray.init(include_dashboard=False, log_to_driver=False)
    task = ray.remote(_ray_cell)
    env = dict(os.environ)  # Ray workers of a joined cluster do not inherit the driver's environment
    refs: dict[str, Any] = {}
    for cell in cells:
        deps = [refs[d] for d in cell.deps]
        refs[cell.name] = task.options(num_cpus=cell.cpus, num_gpus=cell.gpus, name=cell.name,
                                       max_retries=0).remote(cell, str(out), env, *deps)
    return dict(zip(refs, ray.get(list(refs.values()))))


def slurm_parameters(cell: Cell, dependency_job_ids: Sequence[str], options: GridExecutorOptions) -> dict[str, Any]:
    """submitit parameters of a cell's Slurm job: its resources, time limit and ``afterok`` dependencies."""
    params: dict[str, Any] = {
        "slurm_job_name": "crossner-" + cell.name.replace("/", "-"),
        "cpus_per_task": cell.cpus,
        "timeout_min": max(10, int(cell.minutes * 2)),  # twice the estimate: slow nodes do not lose finished work
        "slurm_additional_parameters": {},
    }
    if cell.gpus:
        params["gpus_per_node"] = cell.gpus
    if options.slurm_partition:
        params["slurm_partition"] = options.slurm_partition
    if options.slurm_account:
        params["slurm_additional_parameters"]["account"] = options.slurm_account
    if dependency_job_ids:
        params["slurm_additional_parameters"]["dependency"] = "afterok:" + ":".join(dependency_job_ids)
        # a dependant of a failed cell is cancelled by Slurm rather than left pending forever
        params["slurm_additional_parameters"]["kill-on-invalid-dep"] = "yes"
    return params


def _run_slurm(cells: list[Cell], out: Path, options: GridExecutorOptions) -> dict[str, str]:
    from crossner_hf.extras import require

    submitit = require("submitit", "slurm")
    executor = submitit.AutoExecutor(folder=str(out / "slurm" / "%j"), cluster=options.slurm_cluster)
    status: dict[str, str] = {}
    jobs = submit_cells(executor, cells, out, options, status)
    for name in jobs:
        _job_result(jobs, name, cells, out, status)
    return {cell.name: status.get(cell.name, "blocked") for cell in cells}


def _job_result(jobs: dict[str, Any], name: str, cells: list[Cell], out: Path, status: dict[str, str]) -> str:
    """Wait for a cell's job and record its status."""
    if name not in status:
        try:
            status[name] = jobs[name].result()
        except Exception as err:  # noqa: BLE001 - submitit's job errors (failed, cancelled, never ran)
            logger.warning("job of %s ended without a result: %s", name, str(err).splitlines()[0] if str(err) else err)
            cell = next(c for c in cells if c.name == name)
            status[name] = "failed" if cell_status(cell, out) == "failed" else "blocked"
    return status[name]


def submit_cells(executor: Any, cells: list[Cell], out: Path, options: GridExecutorOptions,
                 status: dict[str, str]) -> dict[str, Any]:
    """Submit every cell that is not done through a submitit executor; returns the jobs by cell name.

    On Slurm every job is submitted at once, a dependant with ``afterok`` on its dependencies' jobs.
    submitit's local executor has no job dependencies, so there a cell is submitted once its
    dependencies' jobs have finished (and marked 'blocked' if one did not succeed).
    """
    on_slurm = executor.cluster == "slurm"
    jobs: dict[str, Any] = {}
    for cell in cells:
        if cell_status(cell, out) == "done":
            status[cell.name] = "done"
            continue
        if not on_slurm and any(_job_result(jobs, d, cells, out, status) != "done" for d in cell.deps):
            status[cell.name] = "blocked"
            continue
        if on_slurm and any(status.get(d) not in (None, "done") for d in cell.deps):
            status[cell.name] = "blocked"
            continue
        dep_ids = [jobs[d].job_id for d in cell.deps if d in jobs] if on_slurm else []
        params = slurm_parameters(cell, dep_ids, options)
        if not on_slurm:  # parameters the local executor does not know
            params = {k: v for k, v in params.items() if not k.startswith("slurm_") and k != "gpus_per_node"}
        executor.update_parameters(**params)
        jobs[cell.name] = executor.submit(run_cell, cell, str(out))
        logger.info("submitted %s as job %s", cell.name, jobs[cell.name].job_id)
    return jobs
