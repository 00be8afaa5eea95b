"""Where work runs: local processes, Ray or Slurm, for the papers' grids and the Wikipedia builders alike.

One :class:`ExecutorOptions` (``--executor local|ray|slurm`` and its knobs) and two kinds of work:

- **A graph of tasks** (:func:`run_tasks`): the grid's cells (:mod:`crossner_hf.grid`), each with a
  ``name``, ``deps``, ``cpus``, ``gpus`` and ``minutes``, run by a ``run(task, env=None) -> status`` the caller
  passes. A done task is skipped, a task runs only after its dependencies are done, a failed task is
  reported and the others go on (its dependants are 'blocked'), and rerunning resumes.

  - ``local``: the tasks in dependency order on this machine.
  - ``ray``: each task a Ray task asking for its CPUs/GPUs; a dependency is passed as the upstream task's
    result, so Ray starts a task when its inputs are ready. Joins the cluster named by ``RAY_ADDRESS`` (or
    ``ray_address``), else starts a local one.
  - ``slurm``: each task a submitit job; dependencies become ``--dependency=afterok:<job ids>``
    (:func:`slurm_parameters`). ``slurm_cluster="local"`` runs the same path through submitit's local
    executor (which has no job dependencies: a task is submitted when its dependencies finished).

- **A datatrove stage** (:func:`run_stage`): the Wikipedia builders' pipelines, ``tasks`` shards wide; it
  returns once every task wrote its completion marker (on Slurm it waits for the job array,
  :func:`wait_for_slurm`), else raises naming the tasks to rerun (:func:`require_complete`).

:func:`pid_alive` is the one liveness check of a process of this host (a grid cell's ``.running`` marker, the
leftovers of a killed writer). This module sits in the base layer so that the grid (``reproduce``) and the
builders (``wikipedia``) share it; it imports Ray, submitit and datatrove only when they run something.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

EXECUTORS = ("local", "ray", "slurm")
"""Where work can run (``--executor``)."""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is running (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


@dataclass
class ExecutorOptions:
    """Where the work runs and how wide (see the module docstring); each kind of work reads the fields it needs."""

    executor: str = "local"
    workers: int = -1
    """Datatrove stages: tasks at the same time (-1: this machine's cores; on Slurm, the cluster's limit)."""
    ray_address: str | None = None
    slurm_partition: str | None = None
    slurm_cluster: str | None = None
    """Grids: submitit's cluster; None picks Slurm when ``sbatch`` exists, ``local`` for a machine without Slurm."""
    slurm_account: str | None = None
    slurm_time: str = "24:00:00"
    slurm_cpus_per_task: int = 1
    slurm_mem_per_cpu_gb: int = 4
    slurm_poll_seconds: float = 30.0
    """How often a datatrove stage on Slurm is checked (completion markers, then ``squeue``)."""

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"--executor {self.executor!r}: choose one of {', '.join(EXECUTORS)}.")

    def at_once(self) -> int:
        """How many datatrove tasks run at the same time: ``workers``, else this machine's cores (local, Ray
        started here); 1 on Slurm without a limit, where the cluster decides and no round can be planned."""
        if self.workers > 0:
            return self.workers
        return 1 if self.executor == "slurm" else os.cpu_count() or 1


# ------------------------------------------------------------------------------------------- graphs of tasks

RunTask = Callable[..., str]
"""``run(task, env=None) -> status`` (``"done"``, ``"failed"``, ...): runs one task; ``env`` is the driver's
environment, which Ray workers of a joined cluster do not inherit."""


def run_tasks(tasks: Sequence[Any], options: ExecutorOptions, *, run: RunTask, status: Callable[[Any], str],
              log_dir: str | Path) -> dict[str, str]:
    """Run every task that is not done, dependencies first (``tasks`` in topological order); returns each task's
    final status. ``status(task)`` reads a task's status from its outputs (``"done"`` skips it); ``log_dir``
    holds submitit's job folders."""
    runner = {"local": _run_local, "ray": _run_ray, "slurm": _run_slurm}[options.executor]
    return runner(list(tasks), options, run, status, Path(log_dir))


def _run_local(tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], str],
               log_dir: Path) -> dict[str, str]:
    done: dict[str, str] = {}
    for i, task in enumerate(tasks, 1):
        if any(done.get(dep) != "done" for dep in task.deps):
            done[task.name] = "blocked"
            continue
        done[task.name] = run(task)
        logger.info("[%d/%d] %s: %s", i, len(tasks), task.name, done[task.name])
    return done


def _ray_task(run: RunTask, task: Any, env: dict[str, str], *dep_status: str) -> str:
    if any(s != "done" for s in dep_status):
        return "blocked"
    return run(task, env=env)


def _run_ray(tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], str],
             log_dir: Path) -> dict[str, str]:
    from crossner_hf.extras import require

    ray = require("ray", "ray")
    address = options.ray_address or os.environ.get("RAY_ADDRESS")
    # a connection this call opens is closed when it returns (a caller's own ray.init is left as it was), so a
    # Python caller (adapt in a notebook, a test) can run another grid, or ray.init, afterwards
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:  # a local cluster of this machine's cores
            ray.init(include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(_ray_task)
        env = dict(os.environ)  # Ray workers of a joined cluster do not inherit the driver's environment
        refs: dict[str, Any] = {}
        for task in tasks:
            deps = [refs[d] for d in task.deps]
            refs[task.name] = remote.options(num_cpus=task.cpus, num_gpus=task.gpus, name=task.name,
                                             max_retries=0).remote(run, task, env, *deps)
        return dict(zip(refs, ray.get(list(refs.values()))))
    finally:
        if started:
            ray.shutdown()


def slurm_parameters(task: Any, dependency_job_ids: Sequence[str], options: ExecutorOptions) -> dict[str, Any]:
    """submitit parameters of a task's Slurm job: its resources, time limit and ``afterok`` dependencies."""
    params: dict[str, Any] = {
        "slurm_job_name": "crossner-" + task.name.replace("/", "-"),
        "cpus_per_task": task.cpus,
        "timeout_min": max(10, int(task.minutes * 2)),  # twice the estimate: slow nodes do not lose finished work
        "slurm_additional_parameters": {},
    }
    if task.gpus:
        params["gpus_per_node"] = task.gpus
    if options.slurm_partition:
        params["slurm_partition"] = options.slurm_partition
    if options.slurm_account:
        params["slurm_additional_parameters"]["account"] = options.slurm_account
    if dependency_job_ids:
        params["slurm_additional_parameters"]["dependency"] = "afterok:" + ":".join(dependency_job_ids)
        # a dependant of a failed task is cancelled by Slurm rather than left pending forever
        params["slurm_additional_parameters"]["kill-on-invalid-dep"] = "yes"
    return params


def _run_slurm(tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], str],
               log_dir: Path) -> dict[str, str]:
    from crossner_hf.extras import require

    submitit = require("submitit", "slurm")
    executor = submitit.AutoExecutor(folder=str(log_dir / "%j"), cluster=options.slurm_cluster)
    done: dict[str, str] = {}
    jobs = submit_tasks(executor, tasks, options, done, run=run, status=status)
    for name in jobs:
        _job_result(jobs, name, tasks, status, done)
    return {task.name: done.get(task.name, "blocked") for task in tasks}


def _job_result(jobs: dict[str, Any], name: str, tasks: list[Any], status: Callable[[Any], str],
                done: dict[str, str]) -> str:
    """Wait for a task's job and record its status."""
    if name not in done:
        try:
            done[name] = jobs[name].result()
        except Exception as err:  # noqa: BLE001 - submitit's job errors (failed, cancelled, never ran)
            logger.warning("job of %s ended without a result: %s", name, str(err).splitlines()[0] if str(err) else err)
            task = next(t for t in tasks if t.name == name)
            done[name] = "failed" if status(task) == "failed" else "blocked"
    return done[name]


def submit_tasks(executor: Any, tasks: list[Any], options: ExecutorOptions, done: dict[str, str], *,
                 run: RunTask, status: Callable[[Any], str]) -> dict[str, Any]:
    """Submit every task that is not done through a submitit executor; returns the jobs by task name.

    On Slurm every job is submitted at once, a dependant with ``afterok`` on its dependencies' jobs.
    submitit's local executor has no job dependencies, so there a task is submitted once its
    dependencies' jobs have finished (and marked 'blocked' if one did not succeed).
    """
    on_slurm = executor.cluster == "slurm"
    jobs: dict[str, Any] = {}
    for task in tasks:
        if status(task) == "done":
            done[task.name] = "done"
            continue
        if not on_slurm and any(_job_result(jobs, d, tasks, status, done) != "done" for d in task.deps):
            done[task.name] = "blocked"
            continue
        if on_slurm and any(done.get(d) not in (None, "done") for d in task.deps):
            done[task.name] = "blocked"
            continue
        dep_ids = [jobs[d].job_id for d in task.deps if d in jobs] if on_slurm else []
        params = slurm_parameters(task, dep_ids, options)
        if not on_slurm:  # parameters the local executor does not know
            params = {k: v for k, v in params.items() if not k.startswith("slurm_") and k != "gpus_per_node"}
        executor.update_parameters(**params)
        jobs[task.name] = executor.submit(run, task)
        logger.info("submitted %s as job %s", task.name, jobs[task.name].job_id)
    return jobs


# ------------------------------------------------------------------------------------------ datatrove stages


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


from crossner_hf._moved import renamed_attributes  # noqa: E402 - the two old executor modules' names, with the warning

__getattr__ = renamed_attributes(__name__)
