"""Warm cell processes: on a machine without GPUs, each ``crossner-hf`` cell of a local grid is forked from one
interpreter that has already imported torch, transformers and datasets.

Why: starting ``python -m crossner_hf.cli train`` spends 8-10 s of CPU importing those libraries before the first
step (``python -X importtime``). A GPU cell trains for minutes to hours and does not notice; a CPU search on a
laptop-sized machine runs many short cells and spent a large share of its cores on imports. The zygote imports
them once per grid run; every cell is still a process of its own (its own pid, session, environment, log and exit
code), forked from it instead of started from scratch.

When a cell starts cold instead (``subprocess.Popen`` as before):

- the machine has GPUs: a process that initialised the CUDA driver before the fork would see every GPU, not the
  ones ``CUDA_VISIBLE_DEVICES`` gives the cell, so GPU grids always start cells cold;
- the cell's environment differs from the zygote's in a variable the libraries read at import (a cell that pushes
  gets the Hub token, the zygote does not): only the thread variables (applied with ``torch.set_num_threads``) may
  differ;
- the cell runs a program of its own (``Cell.program``), not ``crossner_hf.cli``;
- ``CROSSNER_HF_COLD_CELLS=1`` is set, or the zygote could not start (then the reason is logged once).

The zygote dies with the grid (Linux ``PR_SET_PDEATHSIG``), and each cell with the zygote, so a SIGKILLed grid
leaves no orphan training, as with cold cells; the temporary folder of its socket (``crossner-warm-<pid>-*``) that
such a grid leaves is removed by the next grid that starts, once its pid is gone. The zygote is single-threaded and
never runs a torch operation, so forking it is safe. A forked cell shares no random state with the zygote or its
siblings (Python's, numpy's, torch's and ``datasets``' fingerprint generator are reseeded from the system's
entropy; the run then seeds its own from ``--seed``) and shows its own command in ``ps`` (its process title).
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

WARM_IMPORTS = (
    "datasets", "torch", "transformers", "crossner_hf.cli",
    # transformers imports these on a run's first Trainer, TrainingArguments or model: imported here, the cells
    # inherit them instead of importing ~5 s of modules each (seqeval's scorer imports scikit-learn)
    "transformers.trainer", "transformers.training_args", "transformers.modeling_utils",
    "transformers.models.bert.modeling_bert", "transformers.data.data_collator", "accelerate", "seqeval.metrics",
    "crossner_hf.commands.train",
)
"""What the zygote imports before its first cell."""

LATE_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS")
"""The only variables a warm cell's environment may change from the zygote's: the forked cell applies them itself
(torch's thread count). Every other variable may have been read at import (``HF_*`` by huggingface_hub)."""

_HEADER = struct.Struct("!I")
_PREFIX = "crossner-warm-"
_TITLE_ROOM = 4096
"""Bytes of command line the zygote is started with (a padding argument), so a forked cell can write its own
command there: what ``ps`` shows (``/proc/PID/cmdline``) is that memory."""


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up here: a forked child must not load libraries while other threads may hold locks


def die_with_parent() -> None:
    """In a cell's process before it starts (Linux): killed when the thread that started it dies, so a SIGKILLed
    grid leaves no orphan training (a cold cell's parent is the grid's thread, a warm one's the zygote, which dies
    with the grid)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _send(sock: socket.socket, message: Mapping[str, Any], fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode()
    socket.send_fds(sock, [_HEADER.pack(len(data)) + data], list(fds))


def _receive(sock: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """One message (None at end of stream) and the file descriptors that came with it."""
    buffer, fds = b"", []
    while len(buffer) < _HEADER.size or len(buffer) < _HEADER.size + _HEADER.unpack(buffer[:_HEADER.size])[0]:
        chunk, got, _, _ = socket.recv_fds(sock, 1 << 16, max_fds)
        fds += got
        if not chunk:
            return None, fds
        buffer += chunk
    return json.loads(buffer[_HEADER.size:].decode()), fds


# --------------------------------------------------------------------------------------------------- the driver


class WarmProcess:
    """A cell forked by the zygote, waited on through its connection: the part of ``subprocess.Popen`` the grid uses
    (``pid``, ``wait``, ``poll``, ``returncode``, ``args``)."""

    def __init__(self, args: list[str], sock: socket.socket, pid: int):
        self.args, self.pid, self.returncode = args, pid, None
        self.lost = False
        """The zygote died before telling how the cell ended (the cell died with it)."""
        self._sock = sock
        self._guard = threading.Lock()

    def _collect(self, timeout: float | None) -> None:
        # the cell's thread waits without a timeout while Ctrl-C's stop_cells waits with one: the lock is taken
        # only to read the answer, never while waiting for it
        if self.returncode is not None:
            return
        try:
            ready, _, _ = select.select([self._sock], [], [], timeout)
        except (ValueError, OSError):  # the other waiter read the answer and closed the connection meanwhile
            if self.returncode is not None:
                return
            raise
        if not ready:
            raise subprocess.TimeoutExpired(self.args, timeout)
        with self._guard:
            if self.returncode is None:
                message, _ = _receive(self._sock)
                # no answer: the zygote died, and its cells with it (their parent-death signal)
                self.lost = not message
                self.returncode = int(message["rc"]) if message else -signal.SIGKILL
                self._sock.close()  # answered once: a long grid's ended cells hold no descriptor each

    def wait(self, timeout: float | None = None) -> int:
        self._collect(timeout)
        return self.returncode

    def poll(self) -> int | None:
        try:
            self._collect(0)
        except subprocess.TimeoutExpired:
            return None
        return self.returncode


class Zygote:
    """The warm interpreter of one grid run (:func:`start`); :meth:`launch` forks a cell from it."""

    def __init__(self, env: Mapping[str, str]):
        self.env = dict(env)
        clean_leftovers()
        self._dir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
        self.path = str(Path(self._dir) / "zygote.sock")
        self._errors = Path(self._dir) / "stderr.txt"
        with open(self._errors, "wb") as errors:  # a file, not a pipe nobody reads while cells run
            # its own session: a terminal's Ctrl-C goes to the grid, which stops the cells in order
            self._proc = subprocess.Popen([sys.executable, "-m", "crossner_hf.grid.warm", self.path,
                                           " " * _TITLE_ROOM], env=self.env,
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
                                          start_new_session=True, preexec_fn=die_with_parent)
        self._ready: bool | None = None
        self._guard = threading.Lock()

    def ready(self) -> bool:
        """Whether the zygote has imported everything and listens (waits for it the first time)."""
        with self._guard:
            if self._ready is None:
                line = self._proc.stdout.readline()
                self._ready = line.strip() == b"ready"
                if not self._ready:
                    err = self._errors.read_text(errors="replace").strip().splitlines()
                    logger.warning("cells start cold: the warm interpreter did not start (%s)",
                                   err[-1] if err else f"exit code {self._proc.wait()}")
            return self._ready

    def serves(self, line: Sequence[str], env: Mapping[str, str]) -> bool:
        """Whether the cell ``line`` with ``env`` may be forked from this zygote (see the module's rules)."""
        if list(line[:3]) != [sys.executable, "-m", "crossner_hf.cli"]:
            return False
        keys = (set(env) | set(self.env)) - set(LATE_VARIABLES)
        return all(env.get(k) == self.env.get(k) for k in keys)

    def launch(self, line: Sequence[str], env: Mapping[str, str], log_fd: int) -> WarmProcess | None:
        """Fork the cell (``python -m crossner_hf.cli ...`` as ``line`` says) with its output on ``log_fd``; None
        when this zygote cannot (the caller starts it cold)."""
        if not self.serves(line, env) or not self.ready():
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
            _send(sock, {"argv": list(line[3:]), "env": dict(env), "cwd": os.getcwd()}, [log_fd])
            message, _ = _receive(sock)
        except OSError as err:
            sock.close()
            logger.warning("a cell starts cold: the warm interpreter did not answer (%s)", err)
            return None
        if not message:
            sock.close()
            return None
        return WarmProcess(list(line), sock, int(message["pid"]))

    def close(self) -> None:
        import shutil

        if self._proc.poll() is None:
            self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def clean_leftovers(tmp: str | None = None) -> list[str]:
    """Remove the temporary folders of zygotes whose grid is gone (a grid killed by SIGKILL cannot remove its own):
    ``crossner-warm-<pid>-*`` of this user whose pid no longer runs. Returns the folders removed."""
    import shutil

    from crossner_hf.executors import pid_alive

    removed = []
    root = Path(tmp or tempfile.gettempdir())
    for folder in root.glob(f"{_PREFIX}*"):
        pid = folder.name[len(_PREFIX):].split("-")[0]
        try:
            mine = folder.lstat().st_uid == os.getuid()
        except OSError:
            continue
        if pid.isdigit() and mine and not folder.is_symlink() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
    return removed


def start(env: Mapping[str, str], cells: Sequence[Any], gpus: Sequence[str]) -> Zygote | None:
    """A zygote for a local grid's ``cells`` with the cells' common environment ``env``; None when the cells start
    cold (GPUs on the machine, ``CROSSNER_HF_COLD_CELLS=1``, no cell runs ``crossner_hf.cli``, not POSIX)."""
    if gpus or os.environ.get("CROSSNER_HF_COLD_CELLS", "") not in ("", "0") or not hasattr(socket, "send_fds") \
            or not any(not cell.program for cell in cells) or not hasattr(os, "fork"):
        return None
    return Zygote(env)


# -------------------------------------------------------------------------------------------------- the zygote


def _serve(path: str) -> tuple[dict[str, Any], int] | None:
    """The zygote's loop; returns only in a forked cell (its job and its log's descriptor)."""
    import importlib
    import selectors

    for name in WARM_IMPORTS:
        importlib.import_module(name)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the loop through the wakeup descriptor
    # the zygote holds nothing to flush or clean up (its temporary folder is the grid's to remove): ending without
    # the interpreter's teardown of its ~4,000 modules spares the grid about 2 s of waiting in close()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    selector = selectors.DefaultSelector()
    selector.register(server, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    cells: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for key, _ in selector.select():
            if key.fileobj is server:
                conn, _ = server.accept()
                job, fds = _receive(conn, max_fds=1)
                if job is None or len(fds) != 1:
                    conn.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                zygote = os.getpid()
                pid = os.fork()
                if pid == 0:  # the cell: leave the loop with nothing of the zygote's open
                    signal.set_wakeup_fd(-1)
                    for sig in (signal.SIGCHLD, signal.SIGTERM):
                        signal.signal(sig, signal.SIG_DFL)
                    selector.close()
                    for sock in (server, conn, *cells.values()):
                        sock.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    return {**job, "zygote": zygote}, fds[0]
                os.close(fds[0])
                cells[pid] = conn
                _send(conn, {"pid": pid})
            else:
                os.read(wake_r, 4096)
                _reap(cells)


def _reap(cells: dict[int, socket.socket]) -> None:
    """Answer each finished cell's waiter with its exit code (negative: the signal that ended it)."""
    while cells:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = cells.pop(pid, None)
        if conn is not None:
            try:
                _send(conn, {"rc": os.waitstatus_to_exitcode(status)})
            except OSError:  # its waiter is gone (the grid was stopped): nothing to tell
                pass
            conn.close()


def _run_cell(job: Mapping[str, Any], log_fd: int) -> int:
    """In the forked cell: become the process ``python -m crossner_hf.cli ARGV`` would be, and run it; its exit
    code."""
    os.setsid()  # its own process group, as a cold cell's start_new_session gives: the grid signals the group
    die_with_parent()
    if os.getppid() != job["zygote"]:  # the zygote died before the line above: nobody waits for this cell
        os._exit(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for stream in (1, 2):
        os.dup2(log_fd, stream)
    os.close(log_fd)
    os.environ.clear()
    os.environ.update(job["env"])
    os.chdir(job["cwd"])
    _set_title(["crossner-hf", *job["argv"]])
    _reseed()
    threads = job["env"].get("OMP_NUM_THREADS")
    if threads and threads.isdigit():
        import torch

        torch.set_num_threads(int(threads))  # libgomp read the zygote's value when torch was imported
    import runpy

    # what `python -m crossner_hf.cli ARGV` does, by name: the grid runs cells, it never imports a command
    sys.argv = [sys.executable, *job["argv"]]
    try:
        runpy.run_module("crossner_hf.cli", run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def _reseed() -> None:
    """A forked cell's random states, drawn afresh from the system's entropy: forked, it holds the zygote's, the same
    in every cell (weights drawn before ``--seed`` applies, ``datasets``' random cache names of concurrent cells)."""
    import random

    import numpy
    import torch

    random.seed()
    numpy.random.seed(int.from_bytes(os.urandom(4), "little"))
    torch.seed()
    try:
        from datasets import fingerprint

        fingerprint.fingerprint_rng.seed()
        fingerprint._TEMP_DIR_FOR_TEMP_CACHE_FILES = None  # the zygote's temporary cache folder is not the cell's
    except (ImportError, AttributeError):  # another datasets version: its generator is named otherwise
        logger.debug("datasets' fingerprint generator not found; not reseeded")


def _set_title(argv: Sequence[str], name: bytes = b"crossner-cell") -> None:
    """``ps`` shows the cell's command, not the zygote's: the command line's memory (the zygote's arguments, padded
    with :data:`_TITLE_ROOM` bytes) is overwritten, and the thread's name set (``PR_SET_NAME``, 15 bytes)."""
    import ctypes

    if _PRCTL is not None:
        _PRCTL(15, ctypes.c_char_p(name[:15]), 0, 0, 0)  # PR_SET_NAME: what `ps -o comm` and top show
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49 of proc(5))
    except (OSError, IndexError, ValueError):
        return
    from crossner_hf.grid.cells import redact_flags

    title = " ".join(redact_flags(argv)).encode("utf-8", errors="replace")[:end - start - 1]  # ps is everyone's
    ctypes.memmove(start, title + b"\0" * (end - start - len(title)), end - start)


if __name__ == "__main__":
    _set_title(["crossner-hf", "(warm interpreter of a grid)", sys.argv[1]], b"crossner-warm")  # not the padding
    served = _serve(sys.argv[1])
    if served is not None:  # a forked cell ends as a cold process does: crossner_hf.cli.run exits it (an exception
        sys.exit(_run_cell(*served))  # ends it through the interpreter's traceback and exit code 1)
