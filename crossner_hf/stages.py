"""The Wikipedia builders' datatrove stages on the executor ``--executor`` names (:class:`~crossner_hf.executors.
ExecutorOptions`): :func:`run_stage` runs a pipeline ``tasks`` shards wide and returns once every task wrote its
completion marker (on Slurm it waits for the job array, :func:`wait_for_slurm`), else raises naming the tasks to
rerun (:func:`require_complete`). It imports datatrove and Ray only when a stage runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crossner_hf.executors import ExecutorOptions

logger = logging.getLogger(__name__)


def datatrove_executor(pipeline: list, tasks: int, logging_dir: Path, options: ExecutorOptions) -> Any:
    """datatrove's executor of ``pipeline`` (``tasks`` shards) for ``options.executor``."""
    workers = min(tasks, options.at_once())
    if options.executor == "local":
        from datatrove.executor import LocalPipelineExecutor

        return LocalPipelineExecutor(pipeline, tasks=tasks, workers=workers, logging_dir=str(logging_dir))
    if options.executor == "ray":
        from crossner_hf.extras import require

        ray = require("ray", "ray")
        from datatrove.executor.ray import RayPipelineExecutor

        if not ray.is_initialized():
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        return RayPipelineExecutor(pipeline, tasks=tasks, workers=workers, logging_dir=str(logging_dir),
                                   cpus_per_task=1, randomize_start_duration=0)
    if not options.slurm_partition:
        raise ValueError("--executor slurm needs --slurm_partition.")
    from datatrove.executor import SlurmPipelineExecutor

    # -1 keeps datatrove's "no limit": the array runs as wide as the cluster allows, not as this node's cores
    return SlurmPipelineExecutor(pipeline, tasks=tasks, workers=options.workers, logging_dir=str(logging_dir),
                                 partition=options.slurm_partition, time=options.slurm_time,
                                 cpus_per_task=options.slurm_cpus_per_task,
                                 mem_per_cpu_gb=options.slurm_mem_per_cpu_gb, job_name="crossner-wikipedia")


def _completed(logging_dir: Path) -> int:
    return sum(1 for _ in (logging_dir / "completions").glob("*"))


def wait_for_slurm(job_id: str | int | None, logging_dir: str | Path, tasks: int, stage: str, *,
                   poll_seconds: float = 30.0) -> None:
    """Block until the stage's Slurm job array has finished (its tasks completed, or it left the queue).

    datatrove's Slurm executor submits and returns; the builder's next step reads this stage's
    shards, so the command waits on the completion markers, logging progress, and stops waiting
    as soon as ``squeue`` no longer lists the job (then :func:`require_complete` says which tasks
    failed). ``job_id`` -1 or None: nothing was submitted (every task had completed).
    """
    import subprocess

    logging_dir = Path(logging_dir)
    if job_id in (None, -1, "-1"):
        return
    logger.info("%s: waiting for Slurm job %s (%d tasks; progress in %s)", stage, job_id, tasks, logging_dir)
    last = -1
    while True:
        done = _completed(logging_dir)
        if done != last:
            logger.info("%s: %d of %d Slurm tasks completed", stage, done, tasks)
            last = done
        if done >= tasks:
            return
        queued = subprocess.run(["squeue", "-h", "-j", str(job_id)], capture_output=True, text=True)
        if queued.returncode == 0 and not queued.stdout.strip():
            return  # the job left the queue: require_complete reports what did not complete
        time.sleep(poll_seconds)


def run_stage(pipeline: list, tasks: int, logging_dir: Path, stage: str, options: ExecutorOptions, *,
              before: Callable[[], None] | None = None) -> None:
    """Run a datatrove stage on the chosen executor and return once every task has completed (else raise);
    ``before`` runs first in this process (the builders' log patcher)."""
    if before is not None:
        before()
    executor = datatrove_executor(pipeline, tasks, logging_dir, options)
    executor.run()
    if options.executor == "slurm":
        wait_for_slurm(executor.job_id, logging_dir, tasks, stage, poll_seconds=options.slurm_poll_seconds)
    require_complete(logging_dir, tasks, stage)


def require_complete(logging_dir: str | Path, tasks: int, stage: str) -> None:
    """Raise unless every task of a stage wrote its completion marker."""
    done = {p.name for p in (Path(logging_dir) / "completions").glob("*")}
    missing = [rank for rank in range(tasks) if f"{rank:05d}" not in done]
    if missing:
        raise RuntimeError(
            f"{stage}: {len(missing)} of {tasks} task(s) have not completed (first: {missing[:5]}); their shards are "
            f"incomplete and are not used. Rerun the same command to finish them (see {logging_dir}/logs)."
        )
