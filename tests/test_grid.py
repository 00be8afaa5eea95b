"""The grid at scale: cells packed on one machine, isolated on Ray, one run per folder, Ctrl-C.

The cells here run a probe program (``Cell.program``) instead of a training, so what is checked is the grid's
own behaviour: which environment and devices each cell's process gets, what runs side by side, what a second run
or a Ctrl-C does. The probe waits on files (conditions), never on time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crossner_hf.executors import ExecutorOptions, plan_packing
from crossner_hf.task_env import task_environment
from crossner_hf.grid import Cell, grid_lock, grid_status, run_grid
from processes import alive, wait_for

ROOT = Path(__file__).resolve().parents[1]

PROBE = textwrap.dedent('''
    import json, os, sys, time
    from pathlib import Path
    args = sys.argv[1:]
    out = Path(args[args.index("--output_dir") + 1])
    mode = args[args.index("--mode") + 1] if "--mode" in args else "plain"
    out.mkdir(parents=True, exist_ok=True)
    (out / "env.json").write_text(json.dumps(dict(os.environ)))
    (out / "argv.json").write_text(json.dumps(args))
    (out / "started").write_text(str(os.getpid()))
    def wait_for(path, seconds=120):
        deadline = time.monotonic() + seconds
        while not Path(path).exists():
            if time.monotonic() > deadline:
                sys.exit("timed out waiting for " + str(path))
            time.sleep(0.05)
    if mode.startswith("meet:"):  # runs only if the other cells run at the same time
        for other in mode[5:].split(","):
            wait_for(out.parent / other / "started")
    if mode == "order":  # the order the cells started in
        with open(out.parent / "order.txt", "a") as f:
            f.write(out.name + " ")
    if mode == "trap-term":  # a training that saves on SIGTERM and exits 128 + 15, as a shell would
        import signal
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        (out / "trapped").write_text("1")
        wait_for(out / "release", 600)
        sys.exit(143)  # released without a signal: the same code, now the command's own failure
    if mode == "hold":  # until the test lets it go
        wait_for(out / "release", 600)
    if mode == "model":  # a finished training's folder: a checkpoint, the model, a seed's identical copy of it
        (out / "checkpoint-5").mkdir(exist_ok=True)
        (out / "checkpoint-5" / "model.safetensors").write_bytes(b"step 5")
        (out / "checkpoint-5" / "checkpoint_complete.json").write_text("{}")  # a complete checkpoint of ours
        (out / "checkpoint-7").mkdir(exist_ok=True)  # no completion mark: not ours, never deleted
        (out / "seed-1").mkdir(exist_ok=True)
        for path in (out / "model.safetensors", out / "seed-1" / "model.safetensors"):
            path.write_bytes(b"the weights")
    if mode == "oom-beside-others":
        flag = out / "tried"
        if not flag.exists():
            flag.write_text("1")
            wait_for(out.parent / "other" / "started")
            sys.exit("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    (out / "results.json").write_text(json.dumps({"seconds": 1.0}))
''')


@pytest.fixture
def probe(tmp_path) -> tuple[str, ...]:
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return (sys.executable, str(path))


def _cell(name: str, probe: tuple[str, ...], mode: str = "plain", **kw) -> Cell:
    return Cell(name, "probe", "row", "col", program=probe, settings={"mode": mode, **kw.pop("settings", {})}, **kw)


def _env(cell: Cell, out: Path) -> dict[str, str]:
    return json.loads((cell.folder(out) / "env.json").read_text())


def test_the_environment_is_an_allow_list_and_tokens_go_only_to_pushes():
    base = {"PATH": "/bin", "HF_HOME": "/h", "HF_TOKEN": "secret", "CROSSNER_DATA_DIR": "/d", "NLTK_DATA": "/n",
            "AWS_SECRET_ACCESS_KEY": "k", "MY_PASSWORD": "p", "TOKENIZERS_PARALLELISM": "false", "RANDOM": "x",
            "CUDA_VISIBLE_DEVICES": "0,1,2"}
    env = task_environment(base, gpus=["1"], threads=3)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "3"
    assert {"PATH", "HF_HOME", "CROSSNER_DATA_DIR", "NLTK_DATA", "TOKENIZERS_PARALLELISM"} <= set(env)
    assert not {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_PASSWORD", "RANDOM"} & set(env)
    assert task_environment(base, pushes=True)["HF_TOKEN"] == "secret"
    assert task_environment({**base, "CROSSNER_CELL_ENV": "RANDOM"})["RANDOM"] == "x"
    assert "CUDA_VISIBLE_DEVICES" not in task_environment({"PATH": "/bin"})
    pushing = Cell("a", "train", "r", "c", settings={"push_to_hub": True})
    assert pushing.pushes and not Cell("a", "train", "r", "c", settings={"push_to_hub": False}).pushes


def test_cells_run_side_by_side_and_split_the_cores(tmp_path, probe, monkeypatch, caplog):
    """Two workers: each cell finishes only if the other runs at the same time; each gets cores / 2 threads; the
    log follows done / running / left with an ETA."""
    import logging

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = tmp_path / "grid"
    a, b = _cell("a", probe, "meet:b"), _cell("b", probe, "meet:a")
    after = _cell("c", probe, deps=("a", "b"))
    with caplog.at_level(logging.INFO, logger="crossner_hf.grid.run"):
        status = run_grid([a, b, after], out, ExecutorOptions(workers=2))
    assert status == {"a": "done", "b": "done", "c": "done"}
    progress = [r.getMessage() for r in caplog.records if r.getMessage().startswith("cells: ")]
    assert progress[0].startswith("cells: 0 done, 1 running, 2 left of 3; ETA ~")
    assert "cells: 0 done, 2 running, 1 left of 3; ETA ~" in " ".join(progress)
    assert progress[-1] == "cells: 3 done, 0 running, 0 left of 3; ETA ~0 min"
    threads = str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert _env(a, out)["OMP_NUM_THREADS"] == _env(b, out)["OMP_NUM_THREADS"] == threads
    assert (after.folder(out) / "started").stat().st_mtime >= (a.folder(out) / "results.json").stat().st_mtime
    assert json.loads((a.folder(out) / "cell.json").read_text())["settings"] == {"mode": "meet:b"}


def test_long_cells_and_the_heads_of_long_chains_start_first(tmp_path, probe):
    """The longest remaining path first (a cell's minutes plus the longest chain waiting for it): packed workers
    end together instead of leaving a core on a last long cell; equal cells keep the plan's order."""
    out = tmp_path / "grid"
    cells = [_cell("short", probe, "order", minutes=1), _cell("long", probe, "order", minutes=5),
             _cell("head", probe, "order", minutes=1), _cell("tail", probe, "order", minutes=9, deps=("head",)),
             _cell("same", probe, "order", minutes=1)]
    assert set(run_grid(cells, out, ExecutorOptions(workers=1)).values()) == {"done"}
    order = (cells[0].folder(out).parent / "order.txt").read_text().split()
    assert order == ["head", "tail", "long", "short", "same"]


def test_gpu_cells_get_their_own_slot_and_an_out_of_memory_cell_runs_again_alone(tmp_path, probe, monkeypatch):
    """Two GPUs, two cells a GPU: four GPU cells at once, at most two on each device; a cell that ran out of
    memory beside the others is retried with the machine to itself and finishes."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    out = tmp_path / "grid"
    options = ExecutorOptions(workers=-1, cells_per_gpu=2)
    cells = [_cell(f"g{i}", probe, "meet:g0" if i else "meet:g1", gpus=1) for i in range(4)]
    cells.append(_cell("cpu", probe))
    assert plan_packing(cells, options).workers == 4
    assert set(run_grid(cells, out, options).values()) == {"done"}
    devices = [_env(c, out)["CUDA_VISIBLE_DEVICES"] for c in cells[:4]]
    assert sorted(devices) == ["0", "0", "1", "1"]
    assert _env(cells[4], out)["CUDA_VISIBLE_DEVICES"] == ""  # a CPU cell sees no GPU

    out2 = tmp_path / "oom"
    oom, other = _cell("oom", probe, "oom-beside-others", gpus=1), _cell("other", probe, "meet:oom", gpus=1)
    assert run_grid([oom, other], out2, ExecutorOptions(cells_per_gpu=2)) == {"oom": "done", "other": "done"}
    log = (oom.folder(out2) / "log.txt").read_text()
    assert log.count("$ ") == 2 and "out of memory" in log


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
def test_ray_cells_see_only_their_own_gpu_and_only_allowed_variables(tmp_path, probe, monkeypatch):
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_of_the_driver")
    monkeypatch.setenv("CROSSNER_PROBE_SECRET_TOKEN", "x")
    monkeypatch.setenv("SOME_DRIVER_ONLY_VARIABLE", "x")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "grid"
    cells = [_cell("a", probe, "meet:b", gpus=1), _cell("b", probe, "meet:a", gpus=1), _cell("cpu", probe)]
    packed = [_cell(n, probe, "meet:" + ",".join(sorted({"x", "y", "z"} - {n})), gpus=1) for n in "xyz"]
    ray.init(num_cpus=3, num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        status = run_grid(cells, out, ExecutorOptions(executor="ray"))
        # three GPU cells at once on two GPUs: only with half a GPU each (--cells_per_gpu 2)
        assert set(run_grid(packed, tmp_path / "packed", ExecutorOptions(executor="ray", cells_per_gpu=2)
                            ).values()) == {"done"}
    finally:
        ray.shutdown()
    assert all(_env(c, tmp_path / "packed")["CUDA_VISIBLE_DEVICES"] in ("0", "1") for c in packed)
    assert set(status.values()) == {"done"}
    envs = [_env(c, out) for c in cells]
    assert sorted(e["CUDA_VISIBLE_DEVICES"] for e in envs[:2]) == ["0", "1"]  # both together, one device each
    assert envs[2]["CUDA_VISIBLE_DEVICES"] == ""
    for env in envs:
        assert env["HF_HUB_OFFLINE"] == "1"
        assert not {"HF_TOKEN", "CROSSNER_PROBE_SECRET_TOKEN", "SOME_DRIVER_ONLY_VARIABLE"} & set(env)
        from crossner_hf.task_env import ENV_NAMES, ENV_PREFIXES

        # what the process itself adds at start (Python, Ray's worker) aside, only the allow-list reaches it
        ours = {k for k in env if k in ENV_NAMES or k.startswith(ENV_PREFIXES) or k == "CUDA_VISIBLE_DEVICES"}
        assert set(env) - ours <= {"LC_CTYPE", "PWD", "SHLVL", "_"}, set(env) - ours

def _sigint_state(pid: int) -> str:
    """How process ``pid`` takes SIGINT: "blocked", "ignored" or "delivered" (Linux's /proc masks), for the failure
    messages of the Ctrl-C tests."""
    try:
        fields = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":\t" in line)
    except OSError:
        return "gone"
    bit = 1 << (signal.SIGINT - 1)
    return "blocked" if int(fields["SigBlk"], 16) & bit else "ignored" if int(fields["SigIgn"], 16) & bit else \
        "delivered"


def _parent_sigint(pid: int) -> str:
    import psutil

    try:
        return _sigint_state(psutil.Process(pid).ppid())
    except psutil.NoSuchProcess:
        return "gone"


def _as_from_a_terminal() -> None:
    """In a child before it starts: SIGINT delivered and default, as a process started from a terminal has it. A
    test worker's own mask and dispositions are inherited otherwise, and a library (Ray blocks SIGINT in the
    processes it starts, a shell ignores it in background jobs) may have changed them: Ctrl-C would not arrive."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def sigint_as_from_a_terminal():
    """This test process takes SIGINT as a terminal's process does while the test runs (so do the processes it starts,
    which inherit a blocked or ignored SIGINT); restored after."""
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def test_a_gently_cancelled_ray_task_stops_its_cell_in_order_and_leaves_it_resumable(tmp_path, probe, monkeypatch):
    """``ray.cancel(force=False)`` raises KeyboardInterrupt in the task while ``run_cell`` waits on its cell: the
    cell's process group gets SIGTERM and is waited for, and the cell is "waiting" (the rerun continues it), not
    failed."""
    from crossner_hf.grid.run import run_cell

    cell = _cell("held", probe, "hold")
    held = cell.folder(tmp_path / "grid")
    real_wait = subprocess.Popen.wait
    interrupted: list[int] = []

    def wait(self, timeout=None):
        if timeout is None and not interrupted:  # run_cell's wait on the running cell: Ray's cancel arrives
            wait_for(lambda: (held / "started").is_file(), "the cell to start")
            interrupted.append(self.pid)
            raise KeyboardInterrupt
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", wait)
    try:
        status = run_cell(cell, tmp_path / "grid")
    except KeyboardInterrupt:  # escaping it would stop the whole test session, not fail this test
        pytest.fail("run_cell let the cancel's KeyboardInterrupt out instead of stopping its cell")
    assert status == "waiting"
    assert interrupted and not alive(interrupted[0])  # stopped and reaped, not left running
    assert not (held / ".failed").exists() and not (held / ".running").exists()
    assert grid_status([cell], tmp_path / "grid")["held"] == "waiting"


def test_a_worker_ended_while_it_marks_its_cell_failed_leaves_no_empty_mark(tmp_path, monkeypatch):
    """A Ray worker cancelled by Ctrl-C can be ended while it writes its cell's ``.failed``: the mark appears whole
    or not at all (an empty one read as a failure, not as the interrupted grid's cell)."""
    from pathlib import Path as PathType

    from crossner_hf.grid.run import run_cell

    cell = _cell("bad", (sys.executable, "-c", "import sys; sys.exit(3)"))
    real_write = PathType.write_text

    def ended_mid_write(self, *args, **kwargs):
        if ".failed" in self.name:  # the mark, or the temporary file it is written through
            real_write(self, "")  # the file opened and truncated, then the worker is gone
            raise RuntimeError("the worker ended mid-write")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(PathType, "write_text", ended_mid_write)
    with pytest.raises(RuntimeError, match="mid-write"):
        run_cell(cell, tmp_path / "grid")
    monkeypatch.undo()
    assert not (cell.folder(tmp_path / "grid") / ".failed").exists()
    assert grid_status([cell], tmp_path / "grid")["bad"] == "waiting"  # the rerun runs it


GRID_SCRIPT = textwrap.dedent('''
    import sys
    from crossner_hf.cli import run_command
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid import Cell, run_grid
    out, probe = sys.argv[1], sys.argv[2:]
    cells = [Cell("held", "probe", "r", "c", program=tuple(probe), settings={"mode": "hold"}),
             Cell("after", "probe", "r", "c", program=tuple(probe), deps=("held",))]
    def main(args):
        run_grid(cells, out, ExecutorOptions(workers=1))
    class Parser:
        prog = "grid"
        def parse_args_and_config(self, argv):
            return (None,)
    sys.exit(run_command(lambda: Parser(), main, [], parser=Parser()))
''')


def test_a_second_run_is_refused_and_ctrl_c_stops_the_cells(tmp_path, probe):
    """A second run on the folder of a live one: one line naming the holder, the first run's cell untouched.
    Ctrl-C on the first: one line, exit 130, its cell's process gone, the cell resumable (not failed)."""
    script = tmp_path / "grid.py"
    script.write_text(GRID_SCRIPT)
    out = tmp_path / "grid"
    first = subprocess.Popen([sys.executable, str(script), str(out), *probe], stderr=subprocess.PIPE, text=True,
                             preexec_fn=_as_from_a_terminal)
    held = out / "cells" / "held"
    wait_for(lambda: (held / "started").is_file() and (held / ".running").is_file(), "the first run's cell")
    second = subprocess.run([sys.executable, str(script), str(out), *probe], capture_output=True, text=True,
                            timeout=300)
    assert second.returncode == 2
    error = second.stderr.strip().splitlines()
    assert len(error) == 1 and f"pid {first.pid}" in error[0] and "another run is using this folder" in error[0]
    assert not (held / ".failed").exists() and (held / ".running").is_file()
    with pytest.raises(ValueError, match=f"pid {first.pid}"):
        with grid_lock(out):
            pass

    cell_pid = json.loads((held / ".running").read_text())["cell_pid"]
    assert _sigint_state(first.pid) == "delivered"  # Ctrl-C can reach it
    first.send_signal(signal.SIGINT)
    try:
        _, err = first.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the grid did not end after Ctrl-C (its SIGINT: {_sigint_state(first.pid)})") from None
    assert first.returncode == 130
    assert err.strip().splitlines()[-1] == ("grid: interrupted: finished cells are kept; rerun the same command to "
                                            "resume")
    assert "Traceback" not in err
    wait_for(lambda: not alive(cell_pid), "the cell's process to be gone", 30)
    assert grid_status([Cell("held", "probe", "r", "c", program=tuple(probe), settings={"mode": "hold"})],
                       out)["held"] == "waiting"
    (held / "release").write_text("")
    rerun = subprocess.run([sys.executable, str(script), str(out), *probe], capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert (out / "cells" / "after" / "results.json").is_file()

@pytest.mark.parametrize("command", ["reproduce", "adapt"])
def test_adapt_and_reproduce_refuse_a_folder_another_run_holds(tmp_path, command, crossner_data_dir, tiny_bert_dir):
    """Both commands hold OUT's grid lock for their whole run: a second one is refused in one line, nothing run."""
    out = tmp_path / "out"
    command = {"reproduce": ["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics"],
               "adapt": ["adapt", "--dataset_dir", str(crossner_data_dir / "politics"), "--budget", "smoke",
                         "--methods", "direct", "--model_name_or_path", tiny_bert_dir]}[command]
    with grid_lock(out):
        run = subprocess.run([sys.executable, "-m", "crossner_hf.cli", *command, "--output_dir", str(out)],
                             capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    # the refusal is one line, the last (a cold data cache may log its parsing before it: progress, not the error)
    errors = [line for line in run.stderr.strip().splitlines() if ": error:" in line]
    assert len(errors) == 1 and run.stderr.strip().splitlines()[-1] == errors[0]
    assert f"pid {os.getpid()}" in errors[0] and "another run is using this folder" in errors[0]
    assert "Traceback" not in run.stderr and not (out / "cells").exists()


def test_slurm_packs_cells_into_one_job(tmp_path, probe, monkeypatch):
    """--cells_per_job 2 through submitit's local executor: the two cells meet (they ran side by side) in one job,
    and the cell after them runs in a second job once theirs has finished."""
    pytest.importorskip("submitit")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("HF_TOKEN", "hf_secret_of_the_driver")
    out = tmp_path / "grid"
    cells = [_cell("a", probe, "meet:b"), _cell("b", probe, "meet:a"), _cell("c", probe, deps=("a", "b"))]
    status = run_grid(cells, out, ExecutorOptions(executor="slurm", slurm_cluster="local", cells_per_job=2))
    assert status == {"a": "done", "b": "done", "c": "done"}
    assert len(list((out / "slurm").rglob("*_submitted.pkl"))) == 2
    assert "HF_TOKEN" not in _env(cells[0], out) and "HF_TOKEN" not in _env(cells[2], out)


def test_the_grid_page_runs(tmp_path, shared_dir):
    """docs/grid.md's commands (dry runs: they plan with the page's flags and print each cell's command line)."""
    import re
    import shlex

    page = (Path(__file__).resolve().parents[1] / "docs" / "grid.md").read_text(encoding="utf-8")
    commands = [line for block in re.findall(r"```bash\n(.*?)```", page, flags=re.S)
                for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    assert len(commands) == 2
    for command in commands:
        args = [str(shared_dir) + a[len("../shared"):] if a.startswith("../shared/") else a
                for a in shlex.split(command)]
        assert args[0] == "crossner-hf" and "--dry_run" in args
        run = subprocess.run([sys.executable, "-m", "crossner_hf.cli", *args[1:]], capture_output=True, text=True,
                             cwd=tmp_path, timeout=300)
        assert run.returncode == 0, run.stderr
        assert "crossner-hf train" in run.stdout


def test_a_folder_of_the_users_own_files_is_never_a_grid(tmp_path, probe):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "README.md").write_text("my notes")
    with pytest.raises(FileExistsError, match="holds files crossner_hf did not write \\(README.md\\); choose a new"):
        run_grid([_cell("a", probe)], out)
    assert (out / "README.md").read_text() == "my notes" and not (out / "cells").exists()
    ours = tmp_path / "ours"
    assert run_grid([_cell("a", probe)], ours) == {"a": "done"}
    assert run_grid([_cell("a", probe), _cell("b", probe)], ours) == {"a": "done", "b": "done"}  # a rerun is ours


def test_a_cell_of_other_settings_is_never_reused_and_a_killed_cell_names_its_signal(tmp_path, probe):
    from crossner_hf.grid import status_table

    out = tmp_path / "grid"
    first = _cell("a", probe, settings={"max_steps": 3})
    assert run_grid([first], out) == {"a": "done"}
    again = _cell("a", probe, settings={"max_steps": 5})
    assert run_grid([again, _cell("b", probe, deps=("a",))], out) == {"a": "changed", "b": "blocked"}
    assert (first.folder(out) / "log.txt").read_text().count("$ ") == 1  # neither reused nor run again
    table = status_table([again], out)
    assert "changed" in table and "--max_steps 3 (now 5)" in table and "delete" in table
    assert run_grid([first], out) == {"a": "done"}  # the same settings: the finished cell is reused
    import shutil

    inside = _cell("in", probe, settings={"data": str(out / "data")})
    assert run_grid([inside], out) == {"in": "done"}
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)  # a search moved to another folder: its own paths count relative to it
    assert run_grid([_cell("in", probe, settings={"data": str(moved / "data")})], moved) == {"in": "done"}
    assert run_grid([_cell("in", probe, settings={"data": str(tmp_path / "other")})], moved) == {"in": "changed"}

    held = _cell("held", probe, "hold")
    code = ("import json, sys; from crossner_hf.grid import Cell, run_cell; "
            "print(run_cell(Cell.from_dict(json.loads(sys.argv[1])), sys.argv[2]))")
    runner = subprocess.Popen([sys.executable, "-c", code, json.dumps(held.to_dict()), str(out)],
                              stdout=subprocess.PIPE, text=True)
    marker = held.folder(out) / ".running"
    wait_for(lambda: marker.is_file() and (held.folder(out) / "started").is_file(), "the cell to run")
    os.kill(json.loads(marker.read_text())["cell_pid"], signal.SIGKILL)  # as the out-of-memory killer would
    assert runner.communicate(timeout=300)[0].strip() == "failed"
    assert (held.folder(out) / ".failed").read_text().startswith("killed by SIGKILL (out of memory?); rerun the same")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_zombie_cell_is_not_running():
    """A killed grid's cells die with it but may stay unreaped zombies: the rerun must not take them for running."""
    from crossner_hf.executors import pid_alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])  # never waited for: a zombie once it exits

    def state() -> str:
        return Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0]

    wait_for(lambda: state() == "Z", "the child to exit", 60)
    assert not pid_alive(child.pid) and pid_alive(os.getpid())
    child.wait()


def test_a_cell_whose_worker_starts_after_ctrl_c_never_starts_its_process(tmp_path, probe):
    """Ctrl-C between a worker taking a cell and its process starting: stop_cells has already listed the live
    processes, so the cell must not start one (it would outlive the grid); it stays 'waiting' for the rerun."""
    from crossner_hf.grid import GridRun

    out = tmp_path / "grid"
    cell = _cell("late", probe)
    run = GridRun(out)
    run.stopping.set()  # what stop_all sets first on Ctrl-C
    assert run.run_cell(cell) == "waiting"
    assert not (cell.folder(out) / "started").exists() and not (cell.folder(out) / ".running").exists()
    assert grid_status([cell], out) == {"late": "waiting"}
    assert run_grid([cell], out) == {"late": "done"}  # the rerun runs it


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_sigkilled_grid_leaves_no_cell_and_no_stale_lock(tmp_path, probe, sig):
    """kill -9 of the grid's process alone (no Ctrl-C, no cleanup), or a plain kill (SIGTERM: how a search started
    with `&` from a script, which ignores Ctrl-C, is stopped): its cell's process dies with it (Linux), the folder's
    lock goes with the process, so the same command run again is not refused and finishes the cell."""
    script = tmp_path / "grid.py"
    script.write_text(GRID_SCRIPT)
    out = tmp_path / "grid"
    first = subprocess.Popen([sys.executable, str(script), str(out), *probe], stderr=subprocess.DEVNULL)
    held = out / "cells" / "held"
    wait_for(lambda: (held / "started").is_file() and (held / ".running").is_file(), "the first run's cell")
    cell_pid = json.loads((held / ".running").read_text())["cell_pid"]
    first.send_signal(sig)
    first.wait()
    if sys.platform.startswith("linux"):
        try:
            wait_for(lambda: not alive(cell_pid), "the cell's process to die with its grid", 60)
        finally:
            if alive(cell_pid):  # the failure is reported; the orphan does not outlive the test
                os.kill(cell_pid, signal.SIGKILL)
    assert (out / ".grid.lock").exists()  # the file stays; the lock on it does not
    held_cell = Cell("held", "probe", "r", "c", program=tuple(probe), settings={"mode": "hold"})
    assert grid_status([held_cell], out)["held"] == "waiting"
    (held / "release").write_text("")
    rerun = subprocess.run([sys.executable, str(script), str(out), *probe], capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert "another run is using this folder" not in rerun.stderr
    assert (out / "cells" / "after" / "results.json").is_file()


def test_a_secret_flag_reaches_the_process_but_no_log_cell_json_or_dry_run_line(tmp_path, probe, caplog):
    """A token given as a flag value (``--hub_token``, or a ``token`` setting) is the process's alone: cell.json,
    log.txt, the logged and printed command line show ``***``; a rerun is the same run (not 'changed')."""
    import logging

    out = tmp_path / "grid"
    cell = _cell("push", probe, settings={"token": "hf_setting_secret", "max_steps": 3})
    cell = Cell(cell.name, cell.command, cell.row, cell.column, program=cell.program,
                settings={**cell.settings, "hub_token": "hf_flag_secret"})
    with caplog.at_level(logging.INFO, logger="crossner_hf.grid.run"):
        assert run_grid([cell], out) == {"push": "done"}
    given = json.loads((cell.folder(out) / "argv.json").read_text())
    assert "hf_flag_secret" in given and "hf_setting_secret" in given  # the process got the values
    written = [(cell.folder(out) / name).read_text() for name in ("cell.json", "log.txt")]
    for text in (*written, cell.shell_line(out), caplog.text):
        assert "hf_flag_secret" not in text and "hf_setting_secret" not in text
    assert "--hub_token '***'" in cell.shell_line(out) and "--max_steps 3" in cell.shell_line(out)
    assert run_grid([cell], out) == {"push": "done"}  # the record without the secret is still this run


def test_a_slurm_cell_killed_at_its_time_limit_is_not_running_for_ever(tmp_path, probe, monkeypatch):
    """A cell's marker from a Slurm node (another host) whose job left the queue (squeue lists nothing): the cell
    is not 'running' and the rerun runs it; a job squeue still lists, or a marker with no job, is trusted."""
    out = tmp_path / "grid"
    from crossner_hf.outputs import OWNED

    cell = _cell("a", probe)
    cell.folder(out).mkdir(parents=True)
    (out / OWNED).touch()  # a grid's folder, as the killed run left it
    marker = cell.folder(out) / ".running"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text("#!/bin/sh\ncat \"$(dirname \"$0\")/queue\"\n")  # prints the jobs the test says are queued
    squeue.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    marker.write_text(json.dumps({"host": "node-7.cluster", "pid": 11, "cell_pid": 12, "slurm_job": "4242"}))
    (bin_dir / "queue").write_text("4242\n")
    assert grid_status([cell], out) == {"a": "running"}
    (bin_dir / "queue").write_text("")
    assert grid_status([cell], out) == {"a": "waiting"}
    marker.write_text(json.dumps({"host": "node-7.cluster", "pid": 11, "cell_pid": 12}))
    assert grid_status([cell], out) == {"a": "running"}  # no job to ask about: the other host is trusted
    marker.write_text(json.dumps({"host": "node-7.cluster", "pid": 11, "cell_pid": 12, "slurm_job": "4242"}))
    assert run_grid([cell], out) == {"a": "done"}
    assert json.loads((cell.folder(out) / "argv.json").read_text())  # it ran


def test_a_finished_cell_keeps_one_copy_of_its_model_unless_checkpoints_are_kept(tmp_path, probe):
    """docs/grid.md: a finished cell's checkpoints are removed and a seed's weights identical to the run's are one
    file (a hard link); --keep_checkpoints keeps the checkpoints."""
    out = tmp_path / "grid"
    cell = _cell("a", probe, "model")
    assert run_grid([cell], out) == {"a": "done"}
    folder = cell.folder(out)
    assert not (folder / "checkpoint-5").exists() and (folder / "checkpoint-7").is_dir()
    top, seed = folder / "model.safetensors", folder / "seed-1" / "model.safetensors"
    assert top.stat().st_ino == seed.stat().st_ino and seed.read_bytes() == b"the weights"
    kept = tmp_path / "kept"
    assert run_grid([cell], kept, ExecutorOptions(keep_checkpoints=True)) == {"a": "done"}
    assert (cell.folder(kept) / "checkpoint-5" / "model.safetensors").read_bytes() == b"step 5"


def test_packing_splits_the_cores_this_process_may_use_not_the_whole_machines(monkeypatch):
    """In a Slurm job (or under taskset, in a container's cpuset) the process may use fewer cores than the node
    has: the cells fill and split those, so N cells never oversubscribe the allocation."""
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # the node
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)  # the job's cores
    tasks = [Cell(f"c{i}", "train", "r", "c") for i in range(10)]
    packing = plan_packing(tasks, ExecutorOptions(), env={"CUDA_VISIBLE_DEVICES": ""})
    assert (packing.workers, packing.threads) == (4, 1)
    assert plan_packing(tasks, ExecutorOptions(workers=2), env={"CUDA_VISIBLE_DEVICES": ""}).threads == 2
    assert ExecutorOptions().at_once() == 4


def test_two_cells_of_one_name_are_one_line_naming_it():
    from crossner_hf.grid import topological

    with pytest.raises(ValueError, match=r"cells share a name \(politics/direct\); give each cell"):
        topological([Cell("politics/direct", "train", "r", "c"), Cell("politics/direct", "train", "r", "c"),
                     Cell("politics/joint", "train", "r", "c")])


def test_a_second_search_from_another_thread_of_the_same_process_is_refused(tmp_path):
    """The lock is re-entrant for the thread that holds it (a run, then its grid), not for the process: two
    searches on one folder from two threads (a notebook) are one run too many."""
    import threading

    out = tmp_path / "out"
    errors: list[str] = []

    def second() -> None:
        try:
            with grid_lock(out):
                errors.append("not refused")
        except ValueError as err:
            errors.append(str(err))

    with grid_lock(out):
        with grid_lock(out):  # the same thread again: nested
            thread = threading.Thread(target=second)
            thread.start()
            thread.join(60)
    assert len(errors) == 1 and "another run is using this folder" in errors[0], errors
    second()  # once the first let go, the folder is free
    assert errors[1] == "not refused"


def test_a_status_read_while_the_grid_restarts_a_failed_cell_does_not_fail(tmp_path, monkeypatch):
    """--status from another shell: the cell was 'failed' when its status was read and its .failed was gone when
    its line was (the running grid started it again): the table is printed, not a FileNotFoundError."""
    from crossner_hf.grid import cells as grid_cells
    from crossner_hf.grid import status_table

    cell = Cell("a", "train", "r", "c")
    monkeypatch.setattr(grid_cells, "grid_status", lambda cells, out: {"a": "failed"})
    assert "a  failed" in status_table([cell], tmp_path)


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
def test_ctrl_c_on_a_ray_grid_cancels_its_cells_on_a_cluster_it_joined(tmp_path, probe, monkeypatch):
    """A Ray cluster the grid joined outlives the driver: Ctrl-C cancels the cells' tasks, and the cell's process
    goes with its worker (none left running on the cluster), then the one line of an interrupted grid."""
    ray = pytest.importorskip("ray")
    from crossner_hf.grid import GridInterrupted

    out = tmp_path / "grid"
    cell = _cell("held", probe, "hold")
    started = cell.folder(out) / "started"
    real_wait = ray.wait

    marker = {}

    def ctrl_c_once_the_cell_runs(*args, **kwargs):
        wait_for(lambda: started.is_file() and (cell.folder(out) / ".running").is_file(), "the Ray cell to start")
        marker.update(json.loads((cell.folder(out) / ".running").read_text()))
        raise KeyboardInterrupt

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        monkeypatch.setattr(ray, "wait", ctrl_c_once_the_cell_runs)
        with pytest.raises(GridInterrupted):
            run_grid([cell], out, ExecutorOptions(executor="ray"))
        monkeypatch.setattr(ray, "wait", real_wait)
        assert not (cell.folder(out) / ".running").exists()  # the interrupted grid's cells are not running
        cell_pid = marker["cell_pid"]
        try:
            wait_for(lambda: not alive(cell_pid), "the Ray cell's process to stop", 120)
        finally:
            if alive(cell_pid):
                os.kill(cell_pid, signal.SIGKILL)
    finally:
        ray.shutdown()
    failed = cell.folder(out) / ".failed"
    interrupted = out / ".interrupted"
    assert grid_status([cell], out) == {"held": "waiting"}, (  # what the worker wrote, and when, if it says failed
        f".failed {failed.read_text().strip()!r} at {failed.stat().st_mtime:.3f}, .interrupted at "
        f"{interrupted.stat().st_mtime if interrupted.exists() else None}" if failed.exists() else "no .failed")


def test_ctrl_c_on_a_slurm_grid_cancels_its_jobs(tmp_path, probe, monkeypatch, sigint_as_from_a_terminal):
    """Through submitit's local executor: Ctrl-C while the driver waits for a cell's job cancels the job, and the
    cell's process ends with it (no job runs on outside the folder's lock)."""
    pytest.importorskip("submitit")
    from crossner_hf import executors
    from crossner_hf.grid import GridInterrupted

    out = tmp_path / "grid"
    cell = _cell("held", probe, "hold")
    marker = cell.folder(out) / ".running"
    owner = {}

    def ctrl_c_once_the_cell_runs(*args, **kwargs):
        wait_for(lambda: (cell.folder(out) / "started").is_file() and marker.is_file(), "the job's cell to start")
        owner.update(json.loads(marker.read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr(executors, "_job_result", ctrl_c_once_the_cell_runs)
    with pytest.raises(GridInterrupted):
        run_grid([cell], out, ExecutorOptions(executor="slurm", slurm_cluster="local"))
    cell_pid = owner["cell_pid"]
    try:
        try:
            wait_for(lambda: not alive(cell_pid), "the cancelled job's cell to stop", 120)
        except AssertionError as err:
            raise AssertionError(f"{err} (its SIGINT: {_sigint_state(cell_pid)}, its parent's: "
                                 f"{_parent_sigint(cell_pid)})") from None
    finally:
        if alive(cell_pid):
            os.kill(cell_pid, signal.SIGKILL)


def test_a_cpu_cell_is_forked_from_the_warm_interpreter_as_its_own_process(tmp_path, monkeypatch):
    """Issue 54's suite time and a CPU search's cores: the zygote imports torch and transformers once; each cell is
    forked from it with its own pid, session, environment, log and exit code. A cell whose environment differs in a
    variable read at import (a pushing cell's token), or that runs a program of its own, is not served."""
    from crossner_hf.task_env import task_environment
    from crossner_hf.grid.warm import Zygote

    env = task_environment(os.environ, threads=1)
    zygote = Zygote(env)
    try:
        cli = [sys.executable, "-m", "crossner_hf.cli"]
        assert zygote.serves([*cli, "train"], {**env, "OMP_NUM_THREADS": "2"})  # threads: applied by the cell
        assert not zygote.serves([*cli, "train"], {**env, "HF_TOKEN": "hf_x"})  # read at import: a cold process
        assert not zygote.serves([sys.executable, "probe.py"], env)  # a program of the user's own
        runs = {}
        for name, argv in (("ok", ["--help"]), ("bad", ["no-such-command"])):
            with open(tmp_path / f"{name}.log", "w") as log:
                proc = zygote.launch([*cli, *argv], {**env, "OMP_NUM_THREADS": "2"}, log.fileno())
            assert proc is not None and proc.pid not in (os.getpid(), zygote._proc.pid)
            runs[name] = proc.wait(timeout=120)
            assert proc.poll() == runs[name]
            assert proc._sock.fileno() == -1  # its connection closed once answered (no descriptor per ended cell)
        assert runs == {"ok": 0, "bad": 2}  # the command's own exit codes
        assert "usage: crossner-hf" in (tmp_path / "ok.log").read_text()  # its output went to its log
        assert "unknown command 'no-such-command'" in (tmp_path / "bad.log").read_text()
    finally:
        zygote.close()
    assert zygote._proc.poll() is not None  # the zygote is gone with the grid
    assert not os.path.exists(zygote.path)


HOLD_WARM = '''"""Holds a warm cell whose command is `hold-here` (tests/test_grid.py): the zygote loads this hook, and the
cells it forks inherit it. A forked cell runs `python -m crossner_hf.cli ARGV` as runpy.run_module (the module's
code run afresh as __main__, so a patched function of the imported module would not be the one it calls): the hold
wraps runpy.run_module itself."""
import runpy
import sys
import threading

_run_module = runpy.run_module


def run_module(name, *args, **kwargs):
    if name == "crossner_hf.cli" and sys.argv[1:2] == ["hold-here"]:
        threading.Event().wait()  # until the test's kill
    if name == "crossner_hf.cli" and sys.argv[1:2] == ["draw-here"]:  # the cell's random draws and its `ps` line
        import json, os, random
        import numpy, torch
        from datasets.fingerprint import generate_random_fingerprint
        out = sys.argv[sys.argv.index("--output_dir") + 1]
        os.makedirs(out, exist_ok=True)
        with open("/proc/self/cmdline", "rb") as cmdline:
            line = cmdline.read().replace(b"\\0", b" ").decode().strip()
        draws = {"random": random.random(), "numpy": float(numpy.random.rand()), "torch": float(torch.rand(1)),
                 "fingerprint": generate_random_fingerprint(), "cmdline": line}
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(draws, f)
        sys.exit(0)
    return _run_module(name, *args, **kwargs)


runpy.run_module = run_module
'''

DRIVER = """import json, sys
from pathlib import Path
from crossner_hf.task_env import task_environment
from crossner_hf.grid.warm import Zygote
import os
zygote = Zygote(task_environment(os.environ, threads=1))
with open(sys.argv[1] + ".log", "w") as log:
    cell = zygote.launch([sys.executable, "-m", "crossner_hf.cli", "hold-here"], task_environment(os.environ, threads=1),
                         log.fileno())
Path(sys.argv[1]).write_text(json.dumps({"zygote": zygote._proc.pid, "cell": cell.pid, "dir": zygote._dir}))
cell.wait()
"""


def test_a_warm_cell_dies_with_a_killed_grid(tmp_path):
    """docs/grid.md's claim for warm cells: the grid SIGKILLed (no clean-up runs), its zygote dies with it and the
    cell forked from the zygote dies with that (parent-death signals, Linux)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signals are Linux's")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOLD_WARM)
    (tmp_path / "driver.py").write_text(DRIVER)
    pids = tmp_path / "pids.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), str(ROOT)])}
    driver = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(pids)], env=env,
                              start_new_session=True)
    try:
        wait_for(lambda: pids.is_file() or driver.poll() is not None, "the warm cell to start", 300)
        assert driver.poll() is None, (tmp_path / "pids.json.log").read_text() if pids.is_file() else "driver ended"
        started = json.loads(pids.read_text())
        assert alive(started["zygote"]) and alive(started["cell"])
        # ps shows the forked cell's own command, not the zygote's
        title = Path(f"/proc/{started['cell']}/cmdline")  # set by the cell as it starts: waited for, not raced
        wait_for(lambda: title.read_bytes().split(b"\0")[0] == b"crossner-hf hold-here", "the cell's ps line", 60)
        os.kill(driver.pid, signal.SIGKILL)  # a kill -9 of the grid: nothing of ours runs after it
        driver.wait()
        wait_for(lambda: not alive(started["zygote"]) and not alive(started["cell"]),
                 "the zygote and its cell to die with the grid", 60)
        # the killed grid could not remove its zygote's folder: the next grid's start does
        from crossner_hf.grid.warm import clean_leftovers

        assert Path(started["dir"]).is_dir()
        assert started["dir"] in clean_leftovers() and not Path(started["dir"]).exists()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def test_a_running_marker_of_another_host_is_a_leftover_once_the_folder_is_ours(tmp_path, probe):
    """A multi-node Ray run killed with its driver leaves `.running` markers written on other hosts (no pid to check
    from here); the next run holds OUT's lock, so they are leftovers and the cells run. A Slurm job's marker stays
    until squeue says the job is gone."""
    out = tmp_path / "grid"
    ray_cell, slurm_cell = _cell("ray", probe), _cell("slurm", probe)
    assert run_grid([_cell("first", probe)], out) == {"first": "done"}  # the folder is a grid's
    for cell, owner in ((ray_cell, {"host": "node-7", "pid": 1234, "cell_pid": 1240, "slurm_job": None}),
                        (slurm_cell, {"host": "node-8", "pid": 99, "cell_pid": 100, "slurm_job": "4242"})):
        cell.folder(out).mkdir(parents=True)
        (cell.folder(out) / ".running").write_text(json.dumps(owner))
    assert grid_status([ray_cell, slurm_cell], out) == {"ray": "running", "slurm": "running"}  # read-only: trusted
    # no squeue here: the Slurm job cannot be asked, so its marker is trusted and its cell left alone
    assert run_grid([ray_cell, slurm_cell], out, ExecutorOptions(workers=1)) == {"ray": "done", "slurm": "running"}


def test_on_a_cluster_the_progress_counts_the_cells_that_run_and_prices_by_them(tmp_path, probe, caplog):
    """On Ray every submitted cell reads "running" to the executor: the progress line counts those whose process
    marked its folder, and the ETA divides the cells left by the most seen running at once, not by all cells."""
    import logging
    import socket

    from crossner_hf.grid.run import Progress

    out = tmp_path / "grid"
    cells = [_cell(f"c{i}", probe, minutes=10) for i in range(4)]
    for cell in cells[:2]:  # two run; the other two wait for the cluster's room
        cell.folder(out).mkdir(parents=True)
        (cell.folder(out) / ".running").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
    progress = Progress(cells, out, None)
    with caplog.at_level(logging.INFO, logger="crossner_hf.grid.run"):
        progress({c.name: "running" for c in cells})
    assert caplog.records[-1].getMessage() == "cells: 0 done, 2 running, 2 left of 4; ETA ~20 min"


def test_forked_cells_draw_their_own_random_numbers_and_a_dead_zygote_fails_its_cell_truly(tmp_path):
    """Two cells forked from one zygote share none of its random states (Python, numpy, torch, datasets' cache
    names) and show their own command in ps; a zygote killed under a running cell fails it with what happened,
    not "killed by SIGKILL (out of memory?)"."""
    import threading

    from crossner_hf.grid import GridRun, Status
    from crossner_hf.grid.warm import Zygote

    if not sys.platform.startswith("linux"):
        pytest.skip("forked warm cells are Linux's")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(HOLD_WARM)
    env = task_environment({**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), str(ROOT)])}, threads=1)
    out = tmp_path / "grid"
    zygote = Zygote(env)
    try:
        run = GridRun(out, zygote=zygote)
        draws = []
        for name in ("a", "b"):
            cell = Cell(name, "draw-here", "r", "c")
            assert run.run_cell(cell, env) == Status.DONE
            draws.append(json.loads((cell.folder(out) / "results.json").read_text()))
        for key in ("random", "numpy", "torch", "fingerprint"):
            assert draws[0][key] != draws[1][key], key
        assert draws[0]["cmdline"].startswith("crossner-hf draw-here --output_dir ")
        zygote_line = Path(f"/proc/{zygote._proc.pid}/cmdline").read_bytes()
        assert zygote_line.startswith(b"crossner-hf (warm interpreter of a grid) ") and b"    " not in zygote_line

        held = Cell("held", "hold-here", "r", "c")
        ended = {}
        worker = threading.Thread(target=lambda: ended.update(status=run.run_cell(held, env)))
        worker.start()
        wait_for(lambda: (held.folder(out) / ".running").is_file(), "the held cell to start")
        os.kill(zygote._proc.pid, signal.SIGKILL)
        worker.join(120)
        assert ended["status"] == Status.FAILED
        line = (held.folder(out) / ".failed").read_text()
        assert "the warm interpreter it was forked from died" in line and "out of memory" not in line
    finally:
        zygote.close()


def test_cleanup_deletes_only_complete_checkpoints_and_never_through_a_link(tmp_path):
    """issue 66: a finished cell's cleanup removes its complete checkpoints; a checkpoint-N without our mark, a
    linked one, and everything of a cell folder that links outside OUT stay."""
    from crossner_hf.grid.run import one_copy

    def checkpoint(folder: Path, step: int, complete: bool = True) -> Path:
        path = folder / f"checkpoint-{step}"
        path.mkdir(parents=True)
        (path / "model.safetensors").write_bytes(b"w")
        if complete:
            (path / "checkpoint_complete.json").write_text("{}")
        return path

    out = tmp_path / "out"
    folder = out / "cells" / "a"
    ours, foreign = checkpoint(folder / "seed-1", 4), checkpoint(folder, 5, complete=False)
    elsewhere = checkpoint(tmp_path / "elsewhere", 9)
    (folder / "checkpoint-9").symlink_to(elsewhere, target_is_directory=True)
    one_copy(folder, out)
    assert not ours.exists() and foreign.is_dir() and elsewhere.is_dir()
    outside = tmp_path / "outside"
    kept = checkpoint(outside, 3)
    (out / "cells" / "b").symlink_to(outside, target_is_directory=True)
    one_copy(out / "cells" / "b", out)
    assert kept.is_dir()


def test_one_copy_replaces_no_file_through_a_link_and_survives_a_file_system_without_hard_links(tmp_path,
                                                                                              monkeypatch):
    """A seed's weights identical to the run's become a hard link, except in a seed folder that is a link (its file
    is not ours to replace), and where the file system refuses hard links the finished cell keeps both copies
    instead of failing after its run."""
    import errno

    from crossner_hf.grid import run as grid_run

    out = tmp_path / "out"
    folder = out / "cells" / "a"
    (folder / "seed-1").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "seed-1" / "model.safetensors").write_bytes(b"weights")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "model.safetensors").write_bytes(b"weights")
    (folder / "seed-2").symlink_to(elsewhere, target_is_directory=True)

    def no_hard_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(grid_run.os, "link", no_hard_links)
    grid_run.one_copy(folder, out)  # no exception: the cell stays done
    assert (folder / "seed-1" / "model.safetensors").read_bytes() == b"weights"
    assert not list(folder.glob("seed-1/*.tmp"))
    monkeypatch.undo()
    grid_run.one_copy(folder, out)
    top = (folder / "model.safetensors").stat().st_ino
    assert (folder / "seed-1" / "model.safetensors").stat().st_ino == top  # linked where the file system allows
    assert (elsewhere / "model.safetensors").stat().st_ino != top  # never through the linked seed folder


def test_the_owner_record_keeps_no_secret_and_follows_no_planted_link(tmp_path, monkeypatch):
    out = tmp_path / "grid"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (out / ".grid.owner.json").symlink_to(victim)
    (out / ".grid.lock").symlink_to(tmp_path / "victim-lock.txt")
    (tmp_path / "victim-lock.txt").write_text("mine too")
    monkeypatch.setattr(sys, "argv", ["crossner-hf", "adapt", "--hub_token", "hf_secret", "--token=hf_two"])
    with pytest.raises(FileExistsError, match=r"\.grid\.lock is a symbolic link .*remove .*then run again"):
        with grid_lock(out):  # a planted lock link: one line, nothing opened through it
            pass
    assert (tmp_path / "victim-lock.txt").read_text() == "mine too"
    (out / ".grid.lock").unlink()
    with grid_lock(out):
        record = (out / ".grid.owner.json").read_text()
        assert "hf_secret" not in record and "hf_two" not in record and "***" in record
        assert not (out / ".grid.owner.json").is_symlink()
    assert victim.read_text() == "mine" and (tmp_path / "victim-lock.txt").read_text() == "mine too"


def test_a_copied_search_is_not_changed_and_a_terminal_escape_in_a_name_is_shown_escaped(tmp_path, probe):
    """issue 66: the cells of a search copied elsewhere, planned in the old folder or the new, read done (their
    paths count relative to their folder); a cell name holding an escape sequence reaches the table escaped."""
    import shutil

    from crossner_hf.grid import status_table

    old, new = tmp_path / "old", tmp_path / "new"

    def cell(out: Path) -> Cell:
        return _cell("a", probe, settings={"data": str(out / "data" / "x")})

    assert run_grid([cell(old)], old) == {"a": "done"}
    shutil.copytree(old, new, symlinks=True)
    assert grid_status([cell(new)], new) == {"a": "done"}
    assert grid_status([cell(old)], new) == {"a": "done"}  # a plan.json read back names the old folder
    assert grid_status([_cell("a", probe, settings={"data": "/elsewhere"})], new) == {"a": "changed"}
    odd = _cell("x\x1b[31mred", probe)
    table = status_table([odd], tmp_path / "none")
    assert "\x1b" not in table and "x\\x1b[31mred" in table


class _Releasing:
    """A controller that starts every ready cell, stops none and never ends the grid (tests override a method)."""

    def ready(self, cells_ready):
        return cells_ready

    def poll(self, out):
        return []

    def skipped(self):
        return {}

    def done(self):
        return False


def test_a_controller_runs_on_the_local_executor_only(tmp_path, probe):
    """docs/grid.md: Ray and Slurm refuse a controller in one line (they submit every cell at once), nothing run."""
    class Everything(_Releasing):
        pass

    from crossner_hf.grid import Controller

    assert isinstance(Everything(), Controller)
    cell = _cell("a", probe)
    for executor in ("ray", "slurm"):
        with pytest.raises(ValueError, match=f"--executor {executor}: a controlled grid .* runs on --executor local"):
            run_grid([cell], tmp_path / "grid", ExecutorOptions(executor=executor), controller=Everything())
    assert not (cell.folder(tmp_path / "grid") / "started").exists()
    assert run_grid([cell], tmp_path / "grid", controller=Everything()) == {"a": "done"}


def test_a_controllers_released_cells_start_in_its_order_as_workers_free_up(tmp_path, probe):
    """One worker, three cells released at once in reverse order: they run one after another in that order, each
    offered to the controller once; a held one is offered again until released."""
    class Reverse(_Releasing):
        def __init__(self):
            self.offered: list[list[str]] = []

        def ready(self, cells_ready):
            self.offered.append([c.name for c in cells_ready])
            if len(self.offered) == 1:  # the first call: release three, hold "d" once
                return [c for c in reversed(cells_ready) if c.name != "d"]
            return cells_ready

    out = tmp_path / "grid"
    cells = [_cell(name, probe, "order") for name in ("a", "b", "c", "d")]
    controller = Reverse()
    assert run_grid(cells, out, ExecutorOptions(workers=1), controller=controller) == {n: "done" for n in "abcd"}
    assert (out / "cells" / "order.txt").read_text().split() == ["c", "b", "a", "d"]
    assert controller.offered[0] == ["a", "b", "c", "d"] and all(o == ["d"] for o in controller.offered[1:])


def test_a_warm_cells_two_waiters_both_get_its_exit_code_and_its_connection_closes():
    """The cell's thread waits without a timeout while Ctrl-C's stop waits with one: whichever reads the zygote's
    answer closes the connection, and the other returns the same code instead of failing on the closed socket."""
    import socket
    import threading

    from crossner_hf.grid.warm import WarmProcess, _send

    ours, zygotes = socket.socketpair()
    proc = WarmProcess(["crossner-hf", "train"], ours, 12345)
    codes: list[int] = []
    waiter = threading.Thread(target=lambda: codes.append(proc.wait()))
    waiter.start()
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0)
    _send(zygotes, {"rc": 3})
    codes.append(proc.wait(timeout=60))
    waiter.join(timeout=60)
    assert codes == [3, 3] and proc.poll() == 3 and ours.fileno() == -1
    zygotes.close()


def test_one_status_enum_its_home_the_executors_and_no_status_literal_there():
    """The grid's statuses and the executors' are one enum, in the base layer (``executors``), used by its members:
    a status literal in the executors' code (not a docstring) would be a second spelling of one."""
    import ast
    import inspect

    import crossner_hf.executors as executors
    import crossner_hf.grid
    import crossner_hf.grid.cells

    assert crossner_hf.grid.Status is crossner_hf.grid.cells.Status is executors.Status
    values = {str(s) for s in executors.Status}
    tree = ast.parse(inspect.getsource(executors))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    enum_values = {id(n.value) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) and cls.name == "Status"
                   for n in cls.body if isinstance(n, ast.Assign)}
    literals = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in values
                and id(node) not in docstrings | enum_values]
    assert literals == [], f"crossner_hf/executors.py: status literals at lines {literals}; use Status members"


def test_progress_json_has_one_home_read_by_the_status_and_the_clock(tmp_path):
    """``progress.json``'s name lives in grid/cells.py beside ``RUNS_FILE``: the status table's saved step and the
    clock's ``read_progress`` read the one file the training's progress writer names."""
    import crossner_hf.grid.cells as cells
    import crossner_hf.grid.costs as costs

    assert costs.PROGRESS is cells.PROGRESS
    package = Path(cells.__file__).parent.parent
    spelled = [f"{p.relative_to(package)}:{n}" for p in sorted(package.rglob("*.py"))
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if '"progress.json"' in line or "'progress.json'" in line]
    assert len(spelled) == 1 and spelled[0].startswith("grid/cells.py:"), spelled
    cell = Cell("d/direct/seed-1", "train", "direct", "d", seed=1)
    folder = cell.folder(tmp_path)
    folder.mkdir(parents=True)
    (folder / cells.PROGRESS).write_text(json.dumps({"step": 7, "max_steps": 20, "stage": ""}), encoding="utf-8")
    assert cells.saved_step(cell, tmp_path) == (7, 20, "")
    assert costs.read_progress(folder)["step"] == 7


def test_a_cell_that_exits_128_plus_the_grids_signal_is_stopped_not_failed(tmp_path, probe):
    """A cell that handles the grid's SIGTERM itself and exits 143 (128 + 15) ended by that signal: waiting after
    Ctrl-C, stopped with its reason after the controller's stop. The same 143 the grid did not ask for fails."""
    import threading

    from crossner_hf.grid import GridRun, Status

    out = tmp_path / "grid"
    for stop, expected in (("ctrl-c", Status.WAITING), ("controller", Status.STOPPED), (None, Status.FAILED)):
        run = GridRun(out)
        cell = _cell(f"trap-{stop}", probe, "trap-term")
        ended = {}
        worker = threading.Thread(target=lambda: ended.update(status=run.run_cell(cell)))
        worker.start()
        wait_for(lambda: (cell.folder(out) / "trapped").is_file() and cell.name in run.running(), "the cell")
        if stop == "ctrl-c":
            run.stop_all()
        elif stop == "controller":
            assert run.stop(cell.name, "behind the leader")
        else:
            (cell.folder(out) / "release").write_text("go")
        worker.join(120)
        assert ended["status"] == expected, (stop, ended, (cell.folder(out) / "log.txt").read_text())
        assert (cell.folder(out) / ".failed").is_file() is (expected == Status.FAILED)


def test_cells_a_controller_never_offered_before_it_ended_the_grid_are_skipped_saying_why(tmp_path, probe):
    """A controller that ends the grid at once (a time budget already spent): no cell starts, and each reads
    skipped with why (not a bare 'waiting'); a rerun starts them."""
    from crossner_hf.grid import Status, status_table

    class Ended(_Releasing):
        def done(self):
            return True

    out = tmp_path / "grid"
    cells = [_cell("a", probe), _cell("b", probe, deps=("a",))]
    assert run_grid(cells, out, controller=Ended()) == {"a": Status.SKIPPED, "b": Status.SKIPPED}
    assert not (cells[0].folder(out) / "started").exists()
    assert status_table(cells, out).count("not started: the run's controller ended it first; a rerun starts it") == 2
    assert run_grid(cells, out) == {"a": Status.DONE, "b": Status.DONE}
