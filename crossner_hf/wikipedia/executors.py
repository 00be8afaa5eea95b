"""Where the Wikipedia builder's datatrove stages run: local processes, Ray or a Slurm job array.

:class:`ExecutorOptions` says which and how wide; :func:`run_stage` runs one stage's pipeline
there and returns once every task wrote its completion marker (on Slurm it waits for the job
array, :func:`wait_for_slurm`), else raises naming the tasks to rerun (:func:`require_complete`).
A :class:`~crossner_hf.wikipedia.dump.DumpError` (a cut or corrupt dump: the user's to fix) is
logged as its one line, without datatrove's traceback (:func:`quiet_user_errors`).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

EXECUTORS = ("local", "ray", "slurm")
"""Where the stages can run (``--executor``); this module imports datatrove only when a stage runs."""


def _drop_user_error_tracebacks(record: dict) -> None:
    """loguru patcher: a :class:`DumpError` is logged by datatrove as its one-line message, no traceback.

    datatrove's executor logs every failing task with ``logger.exception`` (a 100-line traceback with
    variable dumps on the console and in the task log) before re-raising; for a cut or corrupt dump
    the message already names the file, the pages read and the fix, which the command prints last.
    Other errors (bugs) keep their tracebacks.
    """
    from crossner_hf.wikipedia.dump import DumpError

    exception = record["exception"]
    if exception is not None and isinstance(exception.value, DumpError):
        record["exception"] = None


def quiet_user_errors() -> None:
    # a patcher is global to loguru and survives datatrove's per-task sink changes; installed in the
    # main process and again in each worker (forkserver workers import this module afresh)
    from datatrove.utils.logging import logger as task_logger  # loguru: console and each task's log

    task_logger.configure(patcher=_drop_user_error_tracebacks)


@dataclass
class ExecutorOptions:
    """How the datatrove pipelines run (see the module docstring)."""

    executor: str = "local"
    workers: int = -1
    slurm_partition: str | None = None
    slurm_time: str = "24:00:00"
    slurm_cpus_per_task: int = 1
    slurm_mem_per_cpu_gb: int = 4
    slurm_poll_seconds: float = 30.0
    """How often the command checks a submitted stage (completion markers, then ``squeue``)."""

    def at_once(self) -> int:
        """How many tasks run at the same time: ``workers``, else this machine's cores (local, Ray started
        here); 1 on Slurm without a limit, where the cluster decides and no round can be planned."""
        if self.workers > 0:
            return self.workers
        return 1 if self.executor == "slurm" else os.cpu_count() or 1


def _executor(pipeline: list, tasks: int, logging_dir: Path, options: ExecutorOptions):
    quiet_user_errors()
    if options.executor not in EXECUTORS:
        raise ValueError(f"--executor {options.executor!r} is not one of {', '.join(EXECUTORS)}.")
    workers = min(tasks, options.at_once())
    if options.executor == "local":
        from datatrove.executor import LocalPipelineExecutor

        return LocalPipelineExecutor(pipeline, tasks=tasks, workers=workers, logging_dir=str(logging_dir))
    if options.executor == "ray":
        try:
            import ray
            from datatrove.executor.ray import RayPipelineExecutor
        except ImportError as err:
            raise ValueError("--executor ray needs ray: pip install 'crossner_hf[ray]'") from err
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


def run_stage(pipeline: list, tasks: int, logging_dir: Path, stage: str, options: ExecutorOptions) -> None:
    """Run a stage on the chosen executor and return once every task has completed (else raise)."""
    executor = _executor(pipeline, tasks, logging_dir, options)
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


