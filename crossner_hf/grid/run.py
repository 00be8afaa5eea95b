"""Running a grid: one cell as its own process, and every cell of a grid under its folder's lock.

- :func:`grid_lock`: one run per folder. ``reproduce`` and ``adapt`` hold ``OUT/.grid.lock`` for their whole run
  (an ``fcntl`` lock the system releases when the holder dies, so a killed run never leaves it stuck); a second run
  on the folder is refused in one line naming the holder (host, pid, since when). Only the holder writes a cell's
  markers.
- :func:`run_cell`: the cell's process (its environment is the executor's allow-list, its GPUs and threads), its
  output in ``log.txt``, ``.running`` while it runs, ``.failed`` with its last line when it fails (``"oom"`` when it
  ran out of GPU memory: the executor runs it again alone). A finished cell keeps one copy of its model: its
  checkpoints are removed (``keep_checkpoints`` keeps them) and a seed's weights identical to the run's are one
  file (a hard link).
- :func:`run_grid`: every cell not done, on :mod:`crossner_hf.executors` (packed on this machine, Ray, Slurm),
  with progress (done / running / left and an ETA from the finished cells' measured seconds). Ctrl-C stops the
  cells' processes and raises :class:`GridInterrupted`: the commands say so in one line and exit 130.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossner_hf.grid.cells import (INTERRUPTED, Cell, cell_status, changed_settings, critical_path_order, redact_flags,
                                    topological)
from crossner_hf.grid.costs import cell_seconds
from crossner_hf.grid.warm import Zygote, die_with_parent
from crossner_hf.outputs import atomic_output

if TYPE_CHECKING:
    from crossner_hf.executors import ExecutorOptions

logger = logging.getLogger(__name__)

GRID_LOCK = ".grid.lock"
GRID_OWNER = ".grid.owner.json"
OUT_OF_MEMORY = ("CUDA out of memory", "OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED", "HIP out of memory")
"""What a cell's log says when its GPU ran out of memory (torch's messages)."""


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C during a grid: the running cells were stopped, the finished ones kept."""

    message = "interrupted: finished cells are kept; rerun the same command to resume"


# ------------------------------------------------------------------------------------------------ the folder lock

_HELD: dict[tuple[Path, int], int] = {}
"""(folder, thread) -> how deep that thread holds the folder's lock."""
_HELD_GUARD = threading.Lock()


@contextmanager
def grid_lock(out: str | Path, flag: str = "--output_dir") -> Iterator[None]:
    """Hold ``out``'s grid lock for the whole run (re-entrant within the thread that holds it: ``reproduce``'s run
    takes it, then its grid); a second run is refused, from another process or another thread of this one."""
    from filelock import FileLock, Timeout

    out = Path(out).resolve()
    key = (out, threading.get_ident())
    with _HELD_GUARD:
        nested = key in _HELD
        if nested:
            _HELD[key] += 1
    if nested:
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD[key] -= 1
        return
    from crossner_hf.outputs import OWNED, check_ours

    check_ours(out, flag, fix=None)  # a folder of the user's own files is never a grid's
    out.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(out / GRID_LOCK), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise ValueError(f"{flag} {out}: another run is using this folder ({_holder(out)}); wait for it to end, "
                         "watch it with --status, or choose another folder.") from None
    (out / OWNED).touch()
    owner = out / GRID_OWNER
    owner.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv[1:]}))
    with _HELD_GUARD:
        _HELD[key] = 1
    try:
        yield
    finally:
        with _HELD_GUARD:
            del _HELD[key]
        owner.unlink(missing_ok=True)
        lock.release()


@contextmanager
def grid_lock_if_free(out: str | Path) -> Iterator[bool]:
    """For a reader that also writes what it derives (``--status``): ``out``'s grid lock, held for the block, when
    no run holds it (yields True); else nothing is held (False), and the reader leaves ``out``'s files to that run."""
    out = Path(out)
    with ExitStack() as stack:
        try:
            stack.enter_context(grid_lock(out))
        except ValueError:
            if not (out / GRID_LOCK).exists():  # not a grid's folder (a user's own files): grid_lock's refusal
                raise
            yield False  # a live run holds it
            return
        yield True


def _holder(out: Path) -> str:
    try:
        owner = json.loads((out / GRID_OWNER).read_text())
    except (OSError, ValueError):
        return "its holder has not written its name yet"
    return f"host {owner.get('host')}, pid {owner.get('pid')}, since {owner.get('since')}"


# ------------------------------------------------------------------------------------------------------- a cell

_LIVE: dict[int, Any] = {}
"""The cells this process started, by pid: a ``subprocess.Popen``, or a :class:`~crossner_hf.grid.warm.WarmProcess`
forked from the grid's zygote."""
_ZYGOTE: Zygote | None = None
"""The warm interpreter of the local grid now running (:func:`run_grid`), when its cells may be forked from one."""
_LIVE_GUARD = threading.Lock()


def run_cell(cell: Cell, out: str | Path, env: Mapping[str, str] | None = None, *,
             keep_checkpoints: bool = False) -> str:
    """Run one cell's process unless it is done; returns ``"done"``, ``"failed"``, ``"oom"`` (out of GPU memory),
    ``"missing input"`` or ``"running"`` (another live process runs it). ``env``: the whole environment of the
    process (:func:`crossner_hf.executors.task_environment`; None: this process's)."""
    folder = cell.folder(out)
    changed = changed_settings(cell, out)
    if changed:  # never reuse nor continue a run of other settings under this cell's name
        logger.warning("cell %s: its folder holds a run with %s; delete %s to run it again, or use another folder",
                       cell.name, changed, folder)
        return "changed"
    if cell.result_path(out).is_file():
        return "done"
    missing = [p for p in cell.inputs if not Path(p).exists()]
    if missing:
        return "missing input"
    if cell_status(cell, out) == "running":  # never mark another live run's cell
        return "running"
    if _stopping.is_set():  # Ctrl-C came while this worker was getting ready: the rerun starts it
        return "waiting"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".failed").unlink(missing_ok=True)
    with atomic_output(folder / "cell.json") as staged:  # a kill mid-write never leaves half a record to read
        staged.write_text(json.dumps(cell.record(out), indent=1, default=str))
    line = cell.command_line(out)
    logger.info("cell %s: %s", cell.name, cell.shell_line(out))
    log_path = folder / "log.txt"
    with open(log_path, "a", encoding="utf-8") as log:
        log.write("$ " + " ".join(redact_flags(line)) + "\n")  # the log is read and shared: no secret in it
        log.flush()
        start = log.tell()
        # both streams go to the log as they come, so `tail -f log.txt` shows a long run's progress
        cell_env = dict(env) if env is not None else dict(os.environ)
        zygote = _ZYGOTE
        proc = zygote.launch(line, cell_env, log.fileno()) if zygote is not None else None
        if proc is not None:
            logger.debug("cell %s: forked from the warm interpreter (pid %d)", cell.name, proc.pid)
        else:
            proc = subprocess.Popen(line, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=cell_env, start_new_session=True, preexec_fn=die_with_parent)
        with _LIVE_GUARD:
            _LIVE[proc.pid] = proc
        if _stopping.is_set():  # Ctrl-C after stop_cells listed the live cells: this one stops too, not orphaned
            _signal_group(proc, signal.SIGTERM)
        # in a Slurm job its id too: a job killed at its time limit is then seen gone from any host (squeue)
        (folder / ".running").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                                     "cell_pid": proc.pid,
                                                     "slurm_job": os.environ.get("SLURM_JOB_ID")}))
        cancelled = False
        try:
            try:
                returncode = proc.wait()
            except KeyboardInterrupt:  # a Ray task cancelled gently: stop the cell in order, not mark it failed
                cancelled = True
                returncode = _stop(proc)
        finally:
            with _LIVE_GUARD:
                _LIVE.pop(proc.pid, None)
    (folder / ".running").unlink(missing_ok=True)
    if returncode == 0 and cell.result_path(out).is_file():
        if not keep_checkpoints:
            one_copy(folder)
        return "done"
    if returncode < 0 and -returncode in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL) and \
            (_stopping.is_set() or cancelled):
        return "waiting"  # stopped by Ctrl-C on the grid: not a failure, the rerun continues it
    text = _log_tail(log_path, start)
    lines = [row.split("\r")[-1] for row in text.splitlines() if row.strip()]
    last = lines[-1][:300] if lines else f"exit code {returncode}"
    if returncode == 0:
        last = f"the command succeeded but wrote no {cell.result_file}"
    elif returncode < 0:  # a signal from outside (the out-of-memory killer, a scheduler): the log's last line is noise
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else f"signal {-returncode}"
        last = (f"killed by {name}{' (out of memory?)' if -returncode == signal.SIGKILL else ''}; rerun the same "
                "command: it continues from its last complete checkpoint")
    oom = any(marker in text for marker in OUT_OF_MEMORY)
    if oom:
        last = "ran out of GPU memory (lower its batch size, or run fewer cells a GPU: --cells_per_gpu)"
    # whole or not at all: a Ray worker cancelled by Ctrl-C can be ended mid-write, and an empty .failed read as a
    # failure where its whole line ("killed by SIGTERM") reads as the interrupted grid's (cells._stopped_by_ctrl_c)
    with atomic_output(folder / ".failed") as staged:
        staged.write_text(last + "\n")
    logger.warning("cell %s failed: %s (log: %s)", cell.name, last, log_path)
    return "oom" if oom else "failed"


def _log_tail(path: Path, start: int, limit: int = 64 * 1024) -> str:
    """The end of what the cell's run wrote (a long run's log is not read whole)."""
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(start, size - limit))
        return log.read().decode("utf-8", errors="replace")


def one_copy(folder: Path) -> None:
    """A finished cell keeps one copy of its model: its checkpoints go (the run is complete, nothing resumes from
    them), and a seed's weight file identical to the run's becomes a hard link to it (both paths still open)."""
    import filecmp
    import shutil

    for checkpoint in sorted(folder.rglob("checkpoint-*")):
        if checkpoint.is_dir() and checkpoint.name.split("-")[-1].isdigit():
            shutil.rmtree(checkpoint, ignore_errors=True)
    for top in folder.glob("*.safetensors"):
        for copy in folder.glob(f"seed-*/{top.name}"):
            same_file = copy.stat().st_ino == top.stat().st_ino
            if not same_file and copy.stat().st_size == top.stat().st_size and filecmp.cmp(top, copy, shallow=False):
                staged = copy.with_name(copy.name + ".link.tmp")
                os.link(top, staged)
                os.replace(staged, copy)


_stopping = threading.Event()


def stop_cells(grace_seconds: float = 10.0) -> None:
    """Stop every cell process this process started: SIGTERM to its process group, then SIGKILL after the grace."""
    _stopping.set()
    with _LIVE_GUARD:
        procs = list(_LIVE.values())
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for proc in procs:
        _stop(proc, max(0.0, deadline - time.monotonic()), signalled=True)


def _stop(proc: Any, grace_seconds: float = 10.0, *, signalled: bool = False) -> int:
    """SIGTERM to the cell's process group (unless ``signalled`` already), SIGKILL after the grace; its exit code."""
    if not signalled:
        _signal_group(proc, signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ----------------------------------------------------------------------------------------------------- the grid


class Progress:
    """Done / running / left and an ETA, logged once per change (and a bar on a terminal): the ETA is the cells
    left, priced at their estimates scaled by how the finished cells' measured seconds compared with theirs, over
    the cells running at once."""

    def __init__(self, cells: list[Cell], out: Path, at_once: int | None):
        self.cells = {c.name: c for c in cells}
        self.out = out
        # None (Ray, Slurm: the cluster decides): the most cells seen running at once so far
        self.at_once = max(1, at_once) if at_once is not None else None
        self.most_running = 1
        self.last: tuple | None = None
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=len(cells), desc="cells", unit="cell")

    def __call__(self, state: Mapping[str, str]) -> None:
        done = [n for n, s in state.items() if s == "done"]
        # on Ray every submitted cell reads "running" to the executor: there the cells that run are those whose
        # process marked its folder (the others wait for the cluster's room)
        running = [n for n, s in state.items() if s == "running"
                   and (self.at_once is not None or cell_status(self.cells[n], self.out) == "running")]
        ended = sum(1 for s in state.values() if s not in ("running", "waiting"))
        left = [n for n in self.cells
                if state.get(n) not in ("done", "failed", "changed", "blocked", "missing input", "oom")]
        key = (len(done), len(running), len(left))
        if key == self.last:
            return
        self.last = key
        measured = estimated = 0.0
        for name in done:
            seconds = cell_seconds(self.cells[name], self.out)
            if seconds:
                measured += seconds
                estimated += 60 * self.cells[name].minutes
        scale = measured / estimated if estimated else 1.0
        self.most_running = max(self.most_running, len(running))
        eta = scale * sum(60 * self.cells[n].minutes for n in left) / (self.at_once or self.most_running)
        logger.info("cells: %d done, %d running, %d left of %d; ETA ~%s", len(done), len(running),
                    len(left) - len(running), len(self.cells), _duration(eta) if left else "0 min")
        if self.bar is not None:
            self.bar.n = ended
            self.bar.set_postfix_str(f"{len(running)} running, ETA ~{_duration(eta)}")
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def run_grid(cells: Iterable[Cell], out: str | Path, options: ExecutorOptions | None = None) -> dict[str, str]:
    """Run every cell that is not done on ``options.executor`` (:mod:`crossner_hf.executors`: packed local
    processes, Ray, Slurm), dependencies first, under ``out``'s grid lock; returns each cell's final status.
    Ctrl-C stops the running cells and raises :class:`GridInterrupted`."""
    from functools import partial

    from crossner_hf.executors import ExecutorOptions, plan_packing, run_tasks

    options = options or ExecutorOptions()
    cells = critical_path_order(topological(cells))  # the executors start them in this order
    out = Path(out)
    with grid_lock(out):
        _stopping.clear()
        at_once = plan_packing(cells, options).workers if options.executor == "local" else None
        progress = Progress(cells, out, at_once)
        _clear_leftover_markers(cells, out)
        (out / INTERRUPTED).unlink(missing_ok=True)
        global _ZYGOTE
        _ZYGOTE = _warm_zygote(cells, out, options)
        try:
            run = partial(run_cell, out=str(out), keep_checkpoints=options.keep_checkpoints)
            return run_tasks(cells, options, run=run, status=partial(cell_status, out=out), log_dir=out / "slurm",
                             progress=progress)
        except KeyboardInterrupt:
            stop_cells()
            # the stopped cells are not running any more (local ones stopped above, Ray tasks cancelled with their
            # workers, whose markers name the worker's pid, not this one): their reruns continue them. A Ray worker
            # may see its cell killed before it dies itself and mark it failed: stopped by Ctrl-C is not a failure
            _clear_leftover_markers(cells, out)
            (out / INTERRUPTED).touch()  # when: a cell marked killed since then was stopped by this Ctrl-C
            raise GridInterrupted() from None
        finally:
            progress.close()
            zygote, _ZYGOTE = _ZYGOTE, None
            if zygote is not None:
                zygote.close()


def _warm_zygote(cells: list[Cell], out: Path, options: ExecutorOptions) -> Zygote | None:
    """The zygote the local cells are forked from (:mod:`crossner_hf.grid.warm`), when a cell is left to run and the
    machine has no GPU; started now so that its imports overlap the grid's own start."""
    from crossner_hf.executors import local_gpus, task_environment
    from crossner_hf.grid.warm import start

    if options.executor != "local":
        return None
    left = [cell for cell in cells if cell_status(cell, out) != "done"]
    if not left:
        return None
    return start(task_environment(os.environ), left, local_gpus())


def _clear_leftover_markers(cells: list[Cell], out: Path) -> None:
    """Under OUT's lock, a ``.running`` marker without a Slurm job is a leftover of a run that no longer holds the
    folder: its local cells died with their grid, its Ray cells with their driver (Ray ends an owner's tasks), even
    on another host, whose pids cannot be checked from here. A Slurm job outlives its driver: its marker stays,
    and squeue says whether it still runs."""
    for cell in cells:
        marker = cell.folder(out) / ".running"
        try:
            owner = json.loads(marker.read_text())
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            owner = {}
        if not owner.get("slurm_job"):
            logger.debug("cell %s: no longer running (marked by %s, pid %s)", cell.name, owner.get("host", "?"),
                         owner.get("cell_pid", "?"))
            marker.unlink(missing_ok=True)
