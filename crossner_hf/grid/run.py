"""Running a grid: one cell as its own process, and every cell of a grid under its folder's lock.

- :func:`grid_lock`: one run per folder. ``reproduce`` and ``adapt`` hold ``OUT/.grid.lock`` for their whole run
  (an ``fcntl`` lock the system releases when the holder dies, so a killed run never leaves it stuck); a second run
  on the folder is refused in one line naming the holder (host, pid, since when). Only the holder writes a cell's
  markers.
- :func:`run_cell`: the cell's process (its environment is the executor's allow-list, its GPUs and threads), its
  output in ``log.txt``, ``.running`` while it runs, ``.failed`` with its last line when it fails (``"oom"`` when it
  ran out of GPU memory: the executor runs it again alone), each run's seconds in ``runs.jsonl``. A finished cell
  keeps one copy of its model: its complete checkpoints are removed (``keep_checkpoints`` keeps them) and a seed's
  weights identical to the run's are one file (a hard link).
- :func:`run_grid`: every cell not done, on :mod:`crossner_hf.executors` (packed on this machine, Ray, Slurm),
  with progress (done / running / left and an ETA from the finished cells' measured seconds). Ctrl-C stops the
  cells' processes and raises :class:`GridInterrupted`: the commands say so in one line and exit 130.
- :class:`Controller`: what a caller that decides as the grid runs (a raced search, a time budget) plugs into
  :func:`run_grid`: which ready cells start, which running ones stop (kept resumable, shown ``stopped``), which are
  never started (``skipped``), and when the grid ends.
- :class:`GridRun`: the state of one run (its live cell processes, its warm interpreter, its stop requests), one
  object per :func:`run_grid` call, never module globals.
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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from crossner_hf.grid.cells import (INTERRUPTED, RUNS_FILE, SKIPPED_FILE, STOPPED_MARK, Cell, Status, cell_status,
                                    changed_settings, critical_path_order, redact_flags, shown, topological)
from crossner_hf.grid.costs import cell_seconds
from crossner_hf.grid.warm import Zygote, die_with_parent
from crossner_hf.outputs import CHECKPOINT_COMPLETE, atomic_output, check_ours

if TYPE_CHECKING:
    from crossner_hf.executors import ExecutorOptions

logger = logging.getLogger(__name__)

GRID_LOCK = ".grid.lock"
GRID_OWNER = ".grid.owner.json"
OUT_OF_MEMORY = ("CUDA out of memory", "OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED", "HIP out of memory")
"""What a cell's log says when its GPU ran out of memory (torch's messages)."""
POLL_SECONDS = 2.0
"""How often a controlled grid asks its :class:`Controller` what to stop while cells run."""
GRACE_SECONDS = 10.0
"""A stopped cell's time to end after SIGTERM before its process group gets SIGKILL."""


class GridInterrupted(KeyboardInterrupt):
    """Ctrl-C during a grid: the running cells were stopped, the finished ones kept."""

    message = "interrupted: finished cells are kept; rerun the same command to resume"


@runtime_checkable
class Controller(Protocol):
    """Decides, as a local grid runs, what starts, what stops and when it ends (``run_grid(..., controller=)``).

    The grid calls it from its scheduling thread only (never concurrently): :meth:`ready` each time a worker is
    free or every :data:`POLL_SECONDS` while cells run, :meth:`poll` and :meth:`done` every :data:`POLL_SECONDS`
    and whenever a cell ends, :meth:`skipped` once at the end.
    """

    def ready(self, cells_ready: list[Cell]) -> list[Cell]:
        """Of the cells whose dependencies are done (and not released before), those to start, in the order to
        start them: each is launched as a worker frees up and never offered again; the others wait and are offered
        again later."""

    def poll(self, out: Path) -> Iterable[tuple[str, str]]:
        """``(cell name, reason)`` of running cells to stop now: each is stopped gracefully (SIGTERM to its
        process group), keeps its last complete checkpoint, and reads ``stopped`` with the reason; a rerun
        continues it."""

    def skipped(self) -> dict[str, str]:
        """Cell name -> why it was never started (shown ``skipped`` with the reason)."""

    def done(self) -> bool:
        """True ends the grid: no cell starts any more and the running ones are stopped (resumable)."""


# ------------------------------------------------------------------------------------------------ the folder lock


@contextmanager
def grid_lock(out: str | Path, flag: str = "--output_dir") -> Iterator[None]:
    """Hold ``out``'s grid lock for the whole run (re-entrant within the thread that holds it: ``reproduce``'s run
    takes it, then its grid); a second run is refused, from another process or another thread of this one.

    The lock is filelock's one object per path (``is_singleton``) with a count per thread: the thread that holds it
    takes it again for free, any other thread's or process's ``flock`` on its own descriptor is refused."""
    from filelock import FileLock, Timeout

    out = Path(out).resolve()
    lock = FileLock(str(out / GRID_LOCK), timeout=0, is_singleton=True)
    if lock.is_locked:  # held by this thread already (the count is the thread's own)
        lock.acquire()
        try:
            yield
        finally:
            lock.release()
        return
    # a folder of the user's own files is never a grid's, and a planted .grid.lock link is refused in one line
    # (outputs.refuse_links): filelock would truncate what it opens
    check_ours(out, flag, fix=None)
    out.mkdir(parents=True, exist_ok=True)
    try:
        lock.acquire()
    except Timeout:
        raise ValueError(f"{flag} {out}: another run is using this folder ({_holder(out)}); wait for it to end, "
                         "watch it with --status, or choose another folder.") from None
    try:
        check_ours(out, flag, fix=None, claim=True)  # the folder's mark (never written through a link)
        # replaced, never written through (a planted link to another file stays a link, untouched); the command
        # line without its secrets' values (a --hub_token is not left in the folder)
        with atomic_output(out / GRID_OWNER) as staged:
            staged.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                          "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                                          "argv": redact_flags(sys.argv[1:])}))
        yield
    finally:
        (out / GRID_OWNER).unlink(missing_ok=True)
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


# ------------------------------------------------------------------------------------------------- a grid's run


class GridRun:
    """One run of a grid in this process: its live cell processes, the warm interpreter they fork from, whether it
    is stopping (Ctrl-C, or its controller's :meth:`Controller.done`) and the cells its controller stopped.

    :func:`run_grid` makes one per call; :func:`run_cell` without one (a Ray or Slurm worker) makes its own."""

    def __init__(self, out: str | Path, *, controller: Controller | None = None, keep_checkpoints: bool = False,
                 zygote: Zygote | None = None):
        self.out = Path(out)
        self.controller = controller
        self.keep_checkpoints = keep_checkpoints
        self.zygote = zygote
        self.stopping = threading.Event()
        """Set by Ctrl-C or the controller's end: no cell starts any more."""
        self.ended = False
        """The controller ended the grid (its cells stopped are ``stopped``, not Ctrl-C's ``waiting``)."""
        self._released: list[str] = []  # cells the controller released, launched in order as workers free up
        self._live: dict[str, Any] = {}  # cell name -> its process (a Popen or a forked WarmProcess)
        self._stop_reasons: dict[str, str] = {}
        self._guard = threading.Lock()

    # ------------------------------------------------------------------ one cell

    def run_cell(self, cell: Cell, env: Mapping[str, str] | None = None) -> Status:
        """See :func:`run_cell`."""
        out = self.out
        folder = cell.folder(out)
        changed = changed_settings(cell, out)
        if changed:  # never reuse nor continue a run of other settings under this cell's name
            logger.warning("cell %s: its folder holds a run with %s; delete %s to run it again, or use another "
                           "folder", shown(cell.name), changed, folder)
            return Status.CHANGED
        if cell.result_path(out).is_file():
            return Status.DONE
        missing = [p for p in cell.inputs if not Path(p).exists()]
        if missing:
            return Status.MISSING_INPUT
        if cell_status(cell, out) == Status.RUNNING:  # never mark another live run's cell
            return Status.RUNNING
        if self.stopping.is_set():  # Ctrl-C came while this worker was getting ready: the rerun starts it
            return Status.WAITING
        # the cell's folder is the grid's (under OUT, which is ours): marked, its command writes into it as ours
        check_ours(folder, overwrite=True, claim=True)
        for mark in (".failed", STOPPED_MARK):
            (folder / mark).unlink(missing_ok=True)
        with atomic_output(folder / "cell.json") as staged:  # a kill mid-write never leaves half a record to read
            staged.write_text(json.dumps(cell.record(out), indent=1, default=str))
        line = cell.command_line(out)
        logger.info("cell %s: %s", shown(cell.name), cell.shell_line(out))
        log_path = folder / "log.txt"
        started = time.time()
        with open(log_path, "a", encoding="utf-8") as log:
            log.write("$ " + " ".join(redact_flags(line)) + "\n")  # the log is read and shared: no secret in it
            log.flush()
            start = log.tell()
            # both streams go to the log as they come, so `tail -f log.txt` shows a long run's progress
            cell_env = dict(env) if env is not None else dict(os.environ)
            proc = self.zygote.launch(line, cell_env, log.fileno()) if self.zygote is not None else None
            if proc is not None:
                logger.debug("cell %s: forked from the warm interpreter (pid %d)", shown(cell.name), proc.pid)
            else:
                proc = subprocess.Popen(line, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=cell_env, start_new_session=True, preexec_fn=die_with_parent)
            with self._guard:
                self._live[cell.name] = proc
            if self.stopping.is_set():  # Ctrl-C after stop_all listed the live cells: this one stops too
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
                with self._guard:
                    self._live.pop(cell.name, None)
                    reason = self._stop_reasons.pop(cell.name, None)
        (folder / ".running").unlink(missing_ok=True)
        finished = returncode == 0 and cell.result_path(out).is_file()
        status = self._ended(cell, folder, returncode, reason, cancelled, log_path, start, proc)
        _record_run(folder, started, time.time() - started, status)
        if finished and not self.keep_checkpoints:
            one_copy(folder, out)
        return status

    def _ended(self, cell: Cell, folder: Path, returncode: int, reason: str | None, cancelled: bool,
               log_path: Path, start: int, proc: Any) -> Status:
        """The status of a cell whose process ended (and its marks: ``.stopped`` or ``.failed``)."""
        if returncode == 0 and cell.result_path(self.out).is_file():
            return Status.DONE
        if reason is not None:  # stopped by the controller: kept resumable, shown with its reason
            with atomic_output(folder / STOPPED_MARK) as staged:
                staged.write_text(json.dumps({"reason": reason, "at": time.strftime("%Y-%m-%d %H:%M:%S")}))
            logger.info("cell %s stopped: %s", shown(cell.name), reason)
            return Status.STOPPED
        signalled = self.stopping.is_set() or cancelled  # the grid itself sent the signal (Ctrl-C, a cancelled task)
        if signalled and _signal_of(returncode, signalled) in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            return Status.WAITING  # stopped by Ctrl-C on the grid: not a failure, the rerun continues it
        text = _log_tail(log_path, start)
        lines = [row.split("\r")[-1] for row in text.splitlines() if row.strip()]
        last = lines[-1][:300] if lines else f"exit code {returncode}"
        if returncode == 0:
            last = f"the command succeeded but wrote no {cell.result_file}"
        elif getattr(proc, "lost", False):  # the warm interpreter died: nothing tells how the cell ended
            last = ("the warm interpreter it was forked from died, and the cell with it (see the driver's log); "
                    "rerun the same command: it continues from its last complete checkpoint")
        elif returncode < 0:  # a signal from outside (the OOM killer, a scheduler): the log's last line is noise
            name = (signal.Signals(-returncode).name if -returncode in signal.valid_signals()
                    else f"signal {-returncode}")
            last = (f"killed by {name}{' (out of memory?)' if -returncode == signal.SIGKILL else ''}; rerun the "
                    "same command: it continues from its last complete checkpoint")
        oom = any(marker in text for marker in OUT_OF_MEMORY)
        if oom:
            last = "ran out of GPU memory (lower its batch size, or run fewer cells a GPU: --cells_per_gpu)"
        # whole or not at all: a Ray worker cancelled by Ctrl-C can be ended mid-write, and an empty .failed read as
        # a failure where its whole line ("killed by SIGTERM") reads as the interrupted grid's
        # (cells._stopped_by_ctrl_c)
        with atomic_output(folder / ".failed") as staged:
            staged.write_text(last + "\n")
        logger.warning("cell %s failed: %s (log: %s)", shown(cell.name), shown(last), log_path)
        return Status.OOM if oom else Status.FAILED

    # ------------------------------------------------------------------ stopping

    def stop(self, name: str, reason: str, grace_seconds: float = GRACE_SECONDS) -> bool:
        """Stop running cell ``name`` gracefully (SIGTERM to its process group, SIGKILL after the grace), its reason
        recorded; False when it does not run here."""
        with self._guard:
            proc = self._live.get(name)
            if proc is None or name in self._stop_reasons:
                return proc is not None
            self._stop_reasons[name] = reason
        _signal_group(proc, signal.SIGTERM)
        timer = threading.Timer(grace_seconds, _kill_if_alive, (proc,))
        timer.daemon = True
        timer.start()
        return True

    def stop_all(self, grace_seconds: float = GRACE_SECONDS) -> None:
        """Ctrl-C: stop every cell process of this run and wait for them (SIGKILL after the grace)."""
        self.stopping.set()
        with self._guard:
            procs = list(self._live.values())
        for proc in procs:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        for proc in procs:
            _stop(proc, max(0.0, deadline - time.monotonic()), signalled=True)

    def running(self) -> list[str]:
        with self._guard:
            return list(self._live)

    # ------------------------------------------------------------------ the controller's turn

    def choose(self, ready: list[Cell]) -> list[Cell]:
        """The executor's ``choose``: the controller's stops, its end, then which of ``ready`` start now."""
        controller = self.controller
        assert controller is not None
        for name, reason in controller.poll(self.out) or ():
            if not self.stop(name, reason):
                logger.debug("controller asked to stop %s, which is not running", shown(name))
        if not self.stopping.is_set() and controller.done():
            self.stopping.set()
            self.ended = True
            for name in self.running():
                self.stop(name, "stopped when the search ended; rerun to continue it")
        if self.stopping.is_set() or not ready:
            return []
        by_name = {cell.name: cell for cell in ready}
        # a released cell is the controller's decision: launched as a worker frees up, never offered again
        self._released = [name for name in self._released if name in by_name]
        offered = [cell for cell in ready if cell.name not in self._released]
        if offered:
            for cell in controller.ready(offered) or ():
                if cell.name in by_name and cell.name not in self._released:  # only cells offered, each once
                    self._released.append(cell.name)
        return [by_name[name] for name in self._released]


def run_cell(cell: Cell, out: str | Path, env: Mapping[str, str] | None = None, *,
             keep_checkpoints: bool = False, run: GridRun | None = None) -> Status:
    """Run one cell's process unless it is done; returns its :class:`~crossner_hf.grid.cells.Status`: done,
    failed, oom (out of GPU memory), missing input, changed, stopped (its controller stopped it), waiting (Ctrl-C
    stopped it) or running (another live process runs it). ``env``: the whole environment of the process
    (:func:`crossner_hf.task_env.task_environment`; None: this process's). ``run``: the grid's run it belongs to
    (None: a run of its own, as on a Ray or Slurm worker)."""
    run = run or GridRun(out, keep_checkpoints=keep_checkpoints)
    return run.run_cell(cell, env)


def _record_run(folder: Path, started: float, seconds: float, status: Status) -> None:
    """One line in the cell's ``runs.jsonl``: a resumed cell's cost is the sum of its runs (:func:`run_seconds`)."""
    with open(folder / RUNS_FILE, "a", encoding="utf-8") as runs:
        runs.write(json.dumps({"started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
                               "seconds": round(seconds, 3), "status": str(status)}) + "\n")


def _log_tail(path: Path, start: int, limit: int = 64 * 1024) -> str:
    """The end of what the cell's run wrote (a long run's log is not read whole)."""
    with open(path, "rb") as log:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(start, size - limit))
        return log.read().decode("utf-8", errors="replace")


def one_copy(folder: Path, out: str | Path | None = None) -> None:
    """A finished cell keeps one copy of its model: its complete checkpoints go (the run is complete, nothing
    resumes from them; a ``checkpoint-N`` without our completion mark is not ours and stays), and a seed's weight
    file identical to the run's becomes a hard link to it (both paths still open). Nothing is removed through a
    link: a cell folder that resolves outside ``out``, or a linked ``checkpoint-N``, is left alone."""
    import filecmp
    import shutil

    if out is not None and not folder.resolve().is_relative_to(Path(out).resolve()):
        logger.warning("%s resolves outside %s (a link): its checkpoints are left where they are", folder, out)
        return
    for root, dirs, _ in os.walk(folder):  # links to folders are listed, never entered
        for name in list(dirs):
            path = Path(root) / name
            if name.startswith("checkpoint-") and name.split("-")[-1].isdigit():
                dirs.remove(name)
                if not path.is_symlink() and (path / CHECKPOINT_COMPLETE).is_file():
                    shutil.rmtree(path, ignore_errors=True)
    for top in folder.glob("*.safetensors"):
        for copy in folder.glob(f"seed-*/{top.name}"):
            if copy.parent.is_symlink() or copy.is_symlink():  # a linked seed folder or file: never replaced
                continue
            same_file = copy.stat().st_ino == top.stat().st_ino
            if not same_file and copy.stat().st_size == top.stat().st_size and filecmp.cmp(top, copy, shallow=False):
                staged = copy.with_name(copy.name + ".link.tmp")
                try:
                    os.link(top, staged)
                    os.replace(staged, copy)
                except OSError as err:  # a file system without hard links: the cell is done all the same, two copies
                    staged.unlink(missing_ok=True)
                    logger.info("%s: kept as a copy of %s (no hard link here: %s)", copy, top.name,
                                err.strerror or err)


def _signal_of(returncode: int, signalled: bool) -> int | None:
    """The signal that ended a cell: a negative return code's; and, when the grid itself ``signalled`` the cell, an
    exit of 128 + N, the shell's convention for a process that handles the signal itself (catches SIGTERM to save,
    exits 143). Without the grid's signal, 143 is the command's own exit code, not a stop."""
    if returncode < 0:
        return -returncode
    if signalled and 128 < returncode < 128 + signal.NSIG:
        return returncode - 128
    return None


def _kill_if_alive(proc: Any) -> None:
    if proc.poll() is None:
        _signal_group(proc, signal.SIGKILL)


def _stop(proc: Any, grace_seconds: float = GRACE_SECONDS, *, signalled: bool = False) -> int:
    """SIGTERM to the cell's process group (unless ``signalled`` already), SIGKILL after the grace; its exit code."""
    if not signalled:
        _signal_group(proc, signal.SIGTERM)
    try:
        return proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()


def _signal_group(proc: Any, sig: int) -> None:
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
        done = [n for n, s in state.items() if s == Status.DONE]
        # on Ray every submitted cell reads "running" to the executor: there the cells that run are those whose
        # process marked its folder (the others wait for the cluster's room)
        running = [n for n, s in state.items() if s == Status.RUNNING
                   and (self.at_once is not None or cell_status(self.cells[n], self.out) == Status.RUNNING)]
        ended = sum(1 for s in state.values() if s not in (Status.RUNNING, Status.WAITING))
        left = [n for n in self.cells if state.get(n) is None or Status(state[n]) in Status.still_to_run()]
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


def run_grid(cells: Iterable[Cell], out: str | Path, options: ExecutorOptions | None = None, *,
             controller: Controller | None = None) -> dict[str, Status]:
    """Run every cell that is not done on ``options.executor`` (:mod:`crossner_hf.executors`: packed local
    processes, Ray, Slurm), dependencies first, under ``out``'s grid lock; returns each cell's final status.
    Ctrl-C stops the running cells and raises :class:`GridInterrupted`.

    ``controller`` (local executor only): decides which ready cells start, which running ones stop and when the
    grid ends (:class:`Controller`); None runs every cell. Its stopped cells end ``stopped`` (resumable), the cells
    it never started ``skipped`` (with its reason) or ``waiting``."""
    from crossner_hf.executors import ExecutorOptions, plan_packing, run_tasks

    options = options or ExecutorOptions()
    cells = critical_path_order(topological(cells))  # the executors start them in this order
    out = Path(out)
    with grid_lock(out):
        at_once = plan_packing(cells, options).workers if options.executor == "local" else None
        progress = Progress(cells, out, at_once)
        _clear_leftover_markers(cells, out)
        (out / INTERRUPTED).unlink(missing_ok=True)
        (out / SKIPPED_FILE).unlink(missing_ok=True)
        run = GridRun(out, controller=controller, keep_checkpoints=options.keep_checkpoints,
                      zygote=_warm_zygote(cells, out, options))
        try:
            if options.executor == "local":
                task = run.run_cell
            else:  # pickled to a worker: a run of its own there
                from functools import partial

                task = partial(run_cell, out=str(out), keep_checkpoints=options.keep_checkpoints)
            final = run_tasks(cells, options, run=task, status=lambda cell: cell_status(cell, out),
                              log_dir=out / "slurm", progress=progress,
                              choose=run.choose if controller is not None else None, tick_seconds=POLL_SECONDS)
        except KeyboardInterrupt:
            run.stop_all()
            # the stopped cells are not running any more (local ones stopped above, Ray tasks cancelled with their
            # workers, whose markers name the worker's pid, not this one): their reruns continue them. A Ray worker
            # may see its cell killed before it dies itself and mark it failed: stopped by Ctrl-C is not a failure
            _clear_leftover_markers(cells, out)
            (out / INTERRUPTED).touch()  # when: a cell marked killed since then was stopped by this Ctrl-C
            raise GridInterrupted() from None
        finally:
            progress.close()
            if run.zygote is not None:
                run.zygote.close()
        return _final(cells, out, final, controller, ended=run.ended)


def _final(cells: list[Cell], out: Path, final: Mapping[str, str], controller: Controller | None, *,
           ended: bool = False) -> dict[str, Status]:
    """Each cell's final status: the executor's, where it says "blocked" told apart (a dependency that failed:
    blocked; never started by the controller, or not offered once it ``ended`` the grid: skipped with its reason,
    kept in ``OUT/.skipped.json``, or waiting)."""
    skipped = {name: str(reason) for name, reason in (controller.skipped() if controller is not None else {}).items()
               if name in final}
    if ended:
        skipped = {**dict.fromkeys(final, "not started: the run's controller ended it first; a rerun starts it"),
                   **skipped}
    status: dict[str, Status] = {}
    for cell in cells:  # dependencies first
        state = Status(final[cell.name])
        if state == Status.BLOCKED and not any(status.get(d) in Status.ending_dependants() for d in cell.deps):
            state = Status.SKIPPED if cell.name in skipped else Status.WAITING
        status[cell.name] = state
    kept = {name: reason for name, reason in skipped.items() if status[name] == Status.SKIPPED}
    if kept:
        with atomic_output(out / SKIPPED_FILE) as staged:
            staged.write_text(json.dumps(kept, indent=1))
    return status


def _warm_zygote(cells: list[Cell], out: Path, options: ExecutorOptions) -> Zygote | None:
    """The zygote the local cells are forked from (:mod:`crossner_hf.grid.warm`), when a cell is left to run and the
    machine has no GPU; started now so that its imports overlap the grid's own start."""
    from crossner_hf.executors import local_gpus
    from crossner_hf.task_env import task_environment
    from crossner_hf.grid.warm import start

    if options.executor != "local":
        return None
    left = [cell for cell in cells if cell_status(cell, out) != Status.DONE]
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
            logger.debug("cell %s: no longer running (marked by %s, pid %s)", shown(cell.name),
                         owner.get("host", "?"), owner.get("cell_pid", "?"))
            marker.unlink(missing_ok=True)
