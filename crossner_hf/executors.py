"""Where work runs: local processes, Ray or Slurm, for the papers' grids and the Wikipedia builders alike.

One :class:`ExecutorOptions` (``--executor local|ray|slurm`` and its knobs) and two kinds of work:

- **A graph of tasks** (:func:`run_tasks`): the grid's cells (:mod:`crossner_hf.grid`), each with a
  ``name``, ``deps``, ``cpus``, ``gpus`` and ``minutes``, run by a ``run(task, env=None) -> status`` the caller
  passes. A done task is skipped, a task runs only after its dependencies are done, a failed task is
  reported and the others go on (its dependants are 'blocked'), and rerunning resumes.

  - ``local``: the tasks in dependency order on this machine.
  - ``ray``: each task a Ray task asking for its CPUs/GPUs; a dependency is passed as the upstream task's
    result, so Ray starts a task when its inputs are ready. Joins the cluster named by ``RAY_ADDRESS`` (or
    ``ray_address``), else starts a local one. A task's environment is built on its worker, from the worker's
    own, with the driver's run settings over it (:func:`driver_settings`).
  - ``slurm``: each task a submitit job; dependencies become ``--dependency=afterok:<job ids>``
    (:func:`slurm_parameters`). ``slurm_cluster="local"`` runs the same path through submitit's local
    executor (which has no job dependencies: a task is submitted when its dependencies finished).

- **A datatrove stage**: the Wikipedia builders' pipelines, run by :mod:`crossner_hf.stages` with these options.

:func:`pid_alive` is the one liveness check of a process of this host (a grid cell's ``.running`` marker, the
leftovers of a killed writer). This module sits in the base layer so that the grid (``reproduce``) and the
builders (``wikipedia``) share it; it imports Ray, submitit and datatrove only when they run something.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossner_hf.task_env import driver_settings, task_environment

logger = logging.getLogger(__name__)

EXECUTORS = ("local", "ray", "slurm")
"""Where work can run (``--executor``)."""


class Status(enum.StrEnum):
    """A task's (a grid cell's) status, its one home: what ``run(task)`` returns and :mod:`crossner_hf.grid` reports
    (a ``str``: it compares, prints and writes to JSON as its value)."""

    DONE = "done"
    RUNNING = "running"
    FAILED = "failed"
    OOM = "oom"
    """Ran out of GPU memory beside other cells: the executor runs it again alone (reported failed if it fails)."""
    CHANGED = "changed"
    """Its folder holds a run of other settings (its ``cell.json`` differs), never reused nor continued."""
    BLOCKED = "blocked"
    """A dependency failed, changed or is missing its input."""
    MISSING_INPUT = "missing input"
    """A file or folder it reads is absent."""
    STOPPED = "stopped"
    """The grid's controller stopped it (a raced search, a time budget): its checkpoint kept, a rerun continues it."""
    SKIPPED = "skipped"
    """The grid's controller never started it (its reason in ``OUT/.skipped.json``)."""
    WAITING = "waiting"
    """Not started yet, or stopped by Ctrl-C (a rerun continues it)."""

    @classmethod
    def still_to_run(cls) -> frozenset[Status]:
        """What a grid still runs in this pass."""
        return frozenset({cls.RUNNING, cls.WAITING})

    @classmethod
    def ending_dependants(cls) -> frozenset[Status]:
        """A dependency in one of these blocks its dependants."""
        return frozenset({cls.FAILED, cls.OOM, cls.CHANGED, cls.BLOCKED, cls.MISSING_INPUT})


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is running (another user's counts as running; a zombie, dead but not yet
    reaped, does not: a killed grid's cells stay zombies where the container's first process never reaps them)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc (macOS): kill(0) is the answer
        return True


def slurm_job_alive(job_id: str) -> bool | None:
    """Whether Slurm job ``job_id`` is still queued or running (``squeue``); None when there is no answer (no
    ``squeue`` here, or it failed for another reason)."""
    import shutil
    import subprocess

    if shutil.which("squeue") is None:
        return None
    queued = subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True)
    if queued.returncode == 0:
        return bool(queued.stdout.strip())
    return False if "invalid job id" in queued.stderr.lower() else None  # a finished job Slurm has forgotten


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity (a Slurm job's allocation, ``taskset``, a container's
    cpuset), not the machine's count, so packed cells split the cores they have, not a whole node's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity call (macOS, Windows)
        return os.cpu_count() or 1


@dataclass
class ExecutorOptions:
    """Where the work runs and how wide (see the module docstring); each kind of work reads the fields it needs."""

    executor: str = "local"
    workers: int = -1
    """Tasks at the same time (-1: fill the machine: a grid's GPU cells every GPU slot, its CPU cells one a core;
    datatrove stages this machine's cores; on Slurm, the cluster's limit)."""
    cells_per_gpu: int = 1
    """Grid cells sharing one GPU (local: slots of ``CUDA_VISIBLE_DEVICES``; Ray: a fraction 1/K of a GPU each)."""
    threads_per_cell: int | None = None
    """Threads of each task's process (None: this machine's cores / the tasks running at once; Ray: its CPUs)."""
    cells_per_job: int = 1
    """Slurm: grid cells packed into one job (run there as the local executor packs them)."""
    keep_checkpoints: bool = False
    """Grids: a finished cell keeps its checkpoints (by default it keeps one copy of its model)."""
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
        for name in ("cells_per_gpu", "cells_per_job"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} {getattr(self, name)}: give a positive number of cells.")
        if self.threads_per_cell is not None and self.threads_per_cell < 1:
            raise ValueError(f"--threads_per_cell {self.threads_per_cell}: give a positive number of threads.")
        if self.workers == 0 or self.workers < -1:
            raise ValueError(f"--workers {self.workers}: give a positive number of tasks at once (-1 fills the "
                             "machine).")

    def at_once(self) -> int:
        """How many datatrove tasks run at the same time: ``workers``, else this machine's cores (local, Ray
        started here); 1 on Slurm without a limit, where the cluster decides and no round can be planned."""
        if self.workers > 0:
            return self.workers
        return 1 if self.executor == "slurm" else available_cores()


# ------------------------------------------------------------------------------------------- graphs of tasks

RunTask = Callable[..., Status]
"""``run(task, env=None) -> status`` (a :class:`Status`: ``DONE``, ``FAILED``, ``OOM``, ...): runs one task in a
process given ``env``, the whole environment that process gets (:func:`task_environment`)."""


def local_gpus(env: Mapping[str, str] | None = None) -> list[str]:
    """This machine's GPUs as ``CUDA_VISIBLE_DEVICES`` names them: that variable when set (``""``: none), else
    ``nvidia-smi -L``'s indices; ``[]`` without a GPU. No CUDA library is loaded."""
    env = os.environ if env is None else env
    if "CUDA_VISIBLE_DEVICES" in env:
        return [g.strip() for g in env["CUDA_VISIBLE_DEVICES"].split(",") if g.strip() and g.strip() != "-1"]
    import shutil
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return []
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return [str(i) for i, line in enumerate(listed.stdout.splitlines()) if line.startswith("GPU ")] \
        if listed.returncode == 0 else []


@dataclass
class Packing:
    """How one machine's cores and GPUs are shared between the tasks running at once (see :func:`plan_packing`)."""

    workers: int
    threads: int
    gpus: list[str]
    cells_per_gpu: int


def plan_packing(tasks: Sequence[Any], options: ExecutorOptions, env: Mapping[str, str] | None = None) -> Packing:
    """``options.workers`` tasks at once (-1: fill the machine: every GPU slot when the tasks use GPUs and the
    machine has some, else one task a core), each with ``cores / workers`` threads (``threads_per_cell``
    overrides), so N tasks never oversubscribe the cores."""
    cores = available_cores()
    gpus = local_gpus(env)
    uses_gpus = any(getattr(t, "gpus", 0) for t in tasks)
    if options.workers > 0:
        workers = options.workers
    elif uses_gpus and gpus:
        workers = len(gpus) * options.cells_per_gpu
    else:
        workers = cores
    workers = max(1, min(workers, len(tasks) or 1))
    threads = options.threads_per_cell or max(1, cores // workers)
    return Packing(workers, threads, gpus, options.cells_per_gpu)


def run_tasks(tasks: Sequence[Any], options: ExecutorOptions, *, run: RunTask, status: Callable[[Any], Status],
              log_dir: str | Path, progress: Callable[[dict[str, Status]], None] | None = None,
              choose: Callable[[list[Any]], list[Any]] | None = None, tick_seconds: float = 2.0) -> dict[str, Status]:
    """Run every task that is not done, dependencies first (``tasks`` in topological order); returns each task's
    final status. ``status(task)`` reads a task's status from its outputs (``Status.DONE`` skips it); ``log_dir``
    holds submitit's job folders; ``progress(statuses)`` is called after each change (a task started or ended).
    ``choose(ready)`` (local only: the grid's controller, :mod:`crossner_hf.grid.run`): of the tasks whose
    dependencies are done, those to start now, in order; called at least every ``tick_seconds`` while tasks run.
    A task never chosen ends ``Status.BLOCKED`` here (the caller says why)."""
    if choose is not None and options.executor != "local":
        raise ValueError(f"--executor {options.executor}: a controlled grid (a raced search, a time budget) runs "
                         "on --executor local; run it there, or without racing.")
    runner = {"local": _run_local, "ray": _run_ray, "slurm": _run_slurm}[options.executor]
    extra = {"choose": choose, "tick_seconds": tick_seconds} if choose is not None else {}
    with _sigterm_as_ctrl_c():
        final = runner(list(tasks), options, run, status, Path(log_dir), progress or (lambda _: None), **extra)
    return {name: Status.FAILED if state == Status.OOM else state for name, state in final.items()}


@contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """While the tasks run, SIGTERM to this driver (``kill PID``, a scheduler's stop) stops them as Ctrl-C does, in
    order: each executor's Ctrl-C branch stops its cells' processes, cancels its Ray tasks or Slurm jobs, and the
    grid says it was interrupted. A run started with ``&`` from a script ignores Ctrl-C (the shell ignores SIGINT in
    its background jobs); this is how such a run is stopped. Only in the main thread, and only where SIGTERM still
    has its default action (a caller's own handler is kept); a second SIGTERM, after the first, ends it at once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the next one is not caught: a stuck clean-up can be ended
        logger.warning("SIGTERM: stopping the running tasks as Ctrl-C does")
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _blocked(task: Any, state: Mapping[str, str]) -> bool | None:
    """True: a dependency ended without finishing; None: one has not ended yet; False: all are done."""
    ends = [state.get(d) for d in task.deps]
    if any(e not in (None, Status.DONE, Status.RUNNING) for e in ends):
        return True
    return None if any(e != Status.DONE for e in ends) else False


def _run_local(tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], Status],
               log_dir: Path, progress: Callable[[dict[str, Status]], None],
               choose: Callable[[list[Any]], list[Any]] | None = None, tick_seconds: float = 2.0) -> dict[str, Status]:
    """The tasks packed on this machine: up to ``workers`` at once as their dependencies allow, each GPU task on
    its own slot of one GPU (``CUDA_VISIBLE_DEVICES``), the cores split between them. A task that ran out of GPU
    memory beside others (``Status.OOM``) is run again alone, with the machine to itself."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    packing = plan_packing([t for t in tasks if status(t) != Status.DONE], options)
    state: dict[str, Status] = {t.name: Status.DONE for t in tasks if status(t) == Status.DONE}
    names = {t.name for t in tasks}
    # a dependency outside these tasks (a packed Slurm job's) finished before this ran: its job waited for it
    state.update({d: Status.DONE for t in tasks for d in t.deps if d not in names})
    pending = [t for t in tasks if t.name not in state]
    free = {g: packing.cells_per_gpu for g in packing.gpus}
    alone: list[Any] = []  # out of GPU memory beside others: run again with nothing beside them
    running: dict[Any, tuple[Any, list[str]]] = {}
    logger.info("running %d tasks, %d at once, %d thread(s) each%s", len(pending), packing.workers, packing.threads,
                f", {packing.cells_per_gpu} a GPU on GPUs {','.join(packing.gpus)}" if packing.gpus else "")

    def take_gpus(task: Any, exclusive: bool) -> list[str] | None:
        if not task.gpus or not packing.gpus:
            return [] if packing.gpus else None
        want = packing.cells_per_gpu if exclusive else 1
        ids = [g for g in packing.gpus if free[g] >= want][:task.gpus]
        if len(ids) < task.gpus:
            return None
        for g in ids:
            free[g] -= want
        return ids

    pool = ThreadPoolExecutor(max_workers=packing.workers, thread_name_prefix="cell")
    try:
        while pending or running or alone:
            for task in list(pending):
                if _blocked(task, state):
                    state[task.name] = Status.BLOCKED
                    pending.remove(task)
            queue = alone if (alone and not running) else [t for t in pending if _blocked(t, state) is False]
            if choose is not None and queue is not alone:
                queue = choose(queue)  # the grid's controller: which of the ready tasks start now
            for task in list(queue):
                exclusive = queue is alone
                if len(running) >= (1 if exclusive else packing.workers) or (alone and not exclusive):
                    break
                ids = take_gpus(task, exclusive)
                if ids is None and task.gpus and packing.gpus:
                    continue  # no GPU slot free now: another task may fit
                (alone if exclusive else pending).remove(task)
                state[task.name] = Status.RUNNING
                threads = (options.threads_per_cell or available_cores()) if exclusive else packing.threads
                env = task_environment(os.environ, gpus=ids if packing.gpus else None, threads=threads,
                                       pushes=getattr(task, "pushes", False))
                future = pool.submit(run, task, env=env)
                running[future] = (task, [g for g in (ids or [])], exclusive)
                progress(dict(state))
            if not running:
                for task in pending:  # nothing runs and nothing can start: their dependencies never ran
                    state[task.name] = Status.BLOCKED
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED,
                               timeout=tick_seconds if choose is not None else None)
            for future in finished:
                task, ids, exclusive = running.pop(future)
                for g in ids:
                    free[g] += packing.cells_per_gpu if exclusive else 1
                result = future.result()
                if result == Status.OOM and not exclusive and (running or packing.cells_per_gpu > 1):
                    logger.warning("%s ran out of GPU memory beside other tasks; it runs again alone", task.name)
                    alone.append(task)
                    state.pop(task.name, None)
                    continue
                state[task.name] = result
                logger.info("%s: %s", task.name, result)
                progress(dict(state))
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return {t.name: state.get(t.name, Status.BLOCKED) for t in tasks}


def _ray_task(run: RunTask, task: Any, settings: dict[str, str], threads: int, *dep_status: Status) -> Status:
    """A cell on a Ray worker: its environment built here, from the worker's own (its ``PATH``, ``HOME``, libraries,
    caches: the driver's machine may have none of them) with the driver's run settings over it."""
    if any(s != Status.DONE for s in dep_status):
        return Status.BLOCKED
    import ray

    env = task_environment(os.environ, threads=threads, pushes=getattr(task, "pushes", False), settings=settings)
    # the GPU(s) Ray assigned this task and no other: the task's process must not see the rest of the node's
    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in ray.get_gpu_ids()) if task.gpus else ""
    return run(task, env=env)


def _run_ray(tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], Status],
             log_dir: Path, progress: Callable[[dict[str, Status]], None]) -> dict[str, Status]:
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
        state = _ray_pass(ray, tasks, options, run, status, progress, {})
        oom = [t for t in tasks if state.get(t.name) == Status.OOM]
        if oom and options.cells_per_gpu > 1:  # out of memory on a shared GPU: again, each with whole GPUs
            logger.warning("%s ran out of GPU memory on a shared GPU; running again with whole GPUs",
                           ", ".join(t.name for t in oom))
            again = {t.name for t in oom}
            for task in tasks:
                if task.name in again or any(d in again for d in task.deps):
                    again.add(task.name)
            whole = ExecutorOptions(**{**options.__dict__, "cells_per_gpu": 1})
            state.update(_ray_pass(ray, [t for t in tasks if t.name in again], whole, run, status, progress,
                                   {k: v for k, v in state.items() if k not in again}))
        return state
    finally:
        if started:
            ray.shutdown()


def _ray_pass(ray: Any, tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], Status],
              progress: Callable[[dict[str, Status]], None], known: dict[str, Status]) -> dict[str, Status]:
    remote = ray.remote(_ray_task)
    refs: dict[str, Any] = {}
    state = dict(known)
    for task in tasks:
        if status(task) == Status.DONE:
            state[task.name] = Status.DONE
            continue
        deps = [refs[d] if d in refs else state.get(d, Status.DONE) for d in task.deps]
        # a fraction of a GPU packs cells_per_gpu tasks on one device; the CPUs it asks for are its threads
        gpus = task.gpus / options.cells_per_gpu if task.gpus == 1 else task.gpus
        # only the driver's run settings travel; the rest of the cell's environment is its worker's (_ray_task)
        settings = driver_settings(os.environ, pushes=getattr(task, "pushes", False))
        refs[task.name] = remote.options(num_cpus=task.cpus, num_gpus=gpus, name=task.name, max_retries=0).remote(
            run, task, settings, options.threads_per_cell or task.cpus, *deps)
        state[task.name] = Status.RUNNING
    progress(dict(state))
    names = {ref: name for name, ref in refs.items()}
    waiting = list(refs.values())
    try:
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                state[names[ref]] = ray.get(ref)
                logger.info("%s: %s", names[ref], state[names[ref]])
            progress(dict(state))
    except KeyboardInterrupt:
        # Ctrl-C: the cells' tasks are cancelled, forced (their workers end, and each cell's process with its
        # worker), also on a cluster this call joined, which outlives this driver and would run them on
        for ref in waiting:
            ray.cancel(ref, force=True)
        # until the workers are gone: none writes a cell's marker after the driver has cleaned them
        ray.wait(waiting, num_returns=len(waiting), timeout=60)
        raise
    return state


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


@dataclass
class _Unit:
    """Tasks packed into one Slurm job (``--cells_per_job``): run there side by side as the local executor packs
    them; the job asks for their CPUs and their GPUs' share, and waits for the jobs of the tasks they depend on."""

    name: str
    tasks: list[Any]
    deps: tuple[str, ...]
    cpus: int
    gpus: int
    minutes: float


def _units(tasks: list[Any], per_job: int, cells_per_gpu: int) -> list[_Unit]:
    import math

    units: list[_Unit] = []
    home: dict[str, str] = {}
    for start in range(0, len(tasks), per_job):  # topological order: a unit depends only on earlier units
        group = tasks[start:start + per_job]
        name = f"unit-{len(units):04d}"
        deps = tuple(dict.fromkeys(home[d] for t in group for d in t.deps if d in home))
        gpus = math.ceil(sum(t.gpus for t in group) / cells_per_gpu)
        # side by side they take about the longest one's time; the limit doubles the sum, so a slow node loses nothing
        units.append(_Unit(name, group, deps, sum(t.cpus for t in group), gpus, sum(t.minutes for t in group)))
        home.update({t.name: name for t in group})
    return units


def _isolated(run: RunTask, task: Any) -> Status:
    """A task in its own Slurm job: the job's environment (Slurm exports the submitting shell's) cut to the
    allow-list, its threads its CPUs; Slurm's own ``CUDA_VISIBLE_DEVICES`` names the job's GPUs."""
    return run(task, env=task_environment(os.environ, threads=task.cpus, pushes=getattr(task, "pushes", False)))


def _run_unit(unit: _Unit, run: RunTask, status: Callable[[Any], Status], options: ExecutorOptions) -> Status:
    """One Slurm job of several tasks: the local executor on the job's node (its CPUs, its CUDA_VISIBLE_DEVICES)."""
    inner = ExecutorOptions(**{**options.__dict__, "executor": "local", "workers": len(unit.tasks)})
    states = _run_local(unit.tasks, inner, run, status, Path("."), lambda _: None)
    return Status.DONE if all(s == Status.DONE for s in states.values()) else Status.FAILED


def _run_slurm(tasks: list[Any], options: ExecutorOptions, run: RunTask, status: Callable[[Any], Status],
               log_dir: Path, progress: Callable[[dict[str, Status]], None]) -> dict[str, Status]:
    from crossner_hf.extras import require

    submitit = require("submitit", "slurm")
    executor = submitit.AutoExecutor(folder=str(log_dir / "%j"), cluster=options.slurm_cluster)
    done: dict[str, Status] = {}
    jobs: dict[str, Any] = {}
    try:
        if options.cells_per_job > 1:
            from functools import partial

            units = _units(tasks, options.cells_per_job, options.cells_per_gpu)
            submit_tasks(executor, units, options, done, jobs=jobs,
                         run=partial(_run_unit, run=run, status=status, options=options),
                         status=lambda unit: Status.DONE if all(status(t) == Status.DONE for t in unit.tasks)
                         else Status.WAITING)
            for name in list(jobs):
                _job_result(jobs, name, units, lambda unit: Status.WAITING, done)
            final = {t.name: status(t) for t in tasks}
            return {name: state if state in (Status.DONE, Status.FAILED, Status.MISSING_INPUT) else Status.BLOCKED
                    for name, state in final.items()}
        submit_tasks(executor, tasks, options, done, jobs=jobs, run=run, status=status)
        for name in list(jobs):
            _job_result(jobs, name, tasks, status, done)
        return {task.name: done.get(task.name, Status.BLOCKED) for task in tasks}
    except KeyboardInterrupt:
        # Ctrl-C: the submitted jobs are cancelled (a job's end ends its cells' processes); they would run on after
        # the driver, outside the folder's lock
        for job in jobs.values():
            try:
                job.cancel(check=False)
            except Exception as err:  # noqa: BLE001 - submitit/scancel errors: the others are still cancelled
                logger.warning("could not cancel job %s: %s", job.job_id, err)
        raise


def _job_result(jobs: dict[str, Any], name: str, tasks: list[Any], status: Callable[[Any], Status],
                done: dict[str, Status]) -> Status:
    """Wait for a task's job and record its status."""
    if name not in done:
        try:
            done[name] = jobs[name].result()
        except Exception as err:  # noqa: BLE001 - submitit's job errors (failed, cancelled, never ran)
            logger.warning("job of %s ended without a result: %s", name, str(err).splitlines()[0] if str(err) else err)
            task = next(t for t in tasks if t.name == name)
            done[name] = Status.FAILED if status(task) == Status.FAILED else Status.BLOCKED
    return done[name]


def submit_tasks(executor: Any, tasks: list[Any], options: ExecutorOptions, done: dict[str, Status], *,
                 run: RunTask, status: Callable[[Any], Status], jobs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Submit every task that is not done through a submitit executor; returns the jobs by task name.

    On Slurm every job is submitted at once, a dependant with ``afterok`` on its dependencies' jobs.
    submitit's local executor has no job dependencies, so there a task is submitted once its
    dependencies' jobs have finished (and marked 'blocked' if one did not succeed).
    """
    on_slurm = executor.cluster == "slurm"
    jobs = {} if jobs is None else jobs  # the caller's dict: on Ctrl-C it cancels the jobs submitted so far
    for task in tasks:
        if status(task) == Status.DONE:
            done[task.name] = Status.DONE
            continue
        if not on_slurm and any(_job_result(jobs, d, tasks, status, done) != Status.DONE for d in task.deps):
            done[task.name] = Status.BLOCKED
            continue
        if on_slurm and any(done.get(d) not in (None, Status.DONE) for d in task.deps):
            done[task.name] = Status.BLOCKED
            continue
        dep_ids = [jobs[d].job_id for d in task.deps if d in jobs] if on_slurm else []
        params = slurm_parameters(task, dep_ids, options)
        if not on_slurm:  # parameters the local executor does not know
            params = {k: v for k, v in params.items() if not k.startswith("slurm_") and k != "gpus_per_node"}
        executor.update_parameters(**params)
        # a packed unit builds each of its tasks' environments; a lone task's job gives it the allow-list here
        jobs[task.name] = executor.submit(run, task) if isinstance(task, _Unit) else executor.submit(_isolated, run, task)
        logger.info("submitted %s as job %s", task.name, jobs[task.name].job_id)
    return jobs
