"""A grid cell killed (SIGKILL) after its first complete checkpoint continues from it when the same command runs
again, in ``adapt`` and in ``reproduce`` (issue 54): its steps go on from the checkpoint's (it does not start at
0), and its result is the uninterrupted run's to the digit.

Where the kill lands is made certain, not raced: in the first run every process loads a ``sitecustomize`` (put
first on ``PYTHONPATH``) that holds a training process right after it wrote its first complete checkpoint, until
the test kills it: in ``adapt`` the cell's process alone (as the out-of-memory killer would), in ``reproduce`` the
whole job (the grid and its cell). The rerun and the uninterrupted run load nothing extra.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DAPT_ROW = "pretrain-finetune / DAPT span / integrated"

HOLD = '''
"""Holds a training process after its first complete checkpoint (tests/test_grid_resume.py's first run)."""
import sys
import threading
from importlib.abc import MetaPathFinder
from importlib.machinery import PathFinder

MODULE = "crossner_hf.training.checkpoints"


class _Hold(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            written = module.CompletionMarker.on_save

            def on_save(self, args, state, control, **kwargs):
                result = written(self, args, state, control, **kwargs)  # the marker is written: it is complete
                threading.Event().wait()  # held until the test's SIGKILL
                return result

            module.CompletionMarker.on_save = on_save

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Hold())
'''


def _env(tmp_path: Path, crossner_data_dir: Path, hold: bool) -> dict[str, str]:
    path = [str(ROOT)]
    if hold:
        folder = tmp_path / "hold"
        folder.mkdir(exist_ok=True)
        (folder / "sitecustomize.py").write_text(HOLD)
        path.insert(0, str(folder))
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "CROSSNER_DATA_DIR": str(crossner_data_dir), "CROSSNER_HF_CACHE": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join(path)}


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_process_left():
    """A failed test leaves no grid behind (a held cell would wait for its kill forever)."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:  # only a live one: an ended one's pid may be another process's now
            _kill_tree(proc)


def _kill_tree(proc: subprocess.Popen) -> int:
    """SIGKILL ``proc`` and every process under it (its cells), the grid first so it marks nothing failed, as a
    ``kill -9`` of the job would; returns how many processes were killed."""
    import psutil

    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for process in tree:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(tree, timeout=60)
    proc.wait()
    return len(tree)


def _crossner_hf(args: list, env: dict[str, str]) -> subprocess.Popen:
    """``crossner-hf ARGS`` in its own session, its output into a file (``proc.output``): a pipe nobody reads
    while the test waits could fill and stop it."""
    output = Path(env["CROSSNER_HF_CACHE"]).parent / f"output-{time.monotonic_ns()}.txt"
    with open(output, "w", encoding="utf-8") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "crossner_hf.cli", *map(str, args)], stdout=sink,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    proc.output = output  # type: ignore[attr-defined]
    _STARTED.append(proc)
    return proc


def _finish(args: list | subprocess.Popen, env: dict[str, str] | None = None) -> None:
    """Run the grid to its end (or wait for one started already) and check it succeeded."""
    proc = args if isinstance(args, subprocess.Popen) else _crossner_hf(args, env)
    proc.wait(timeout=900)
    assert proc.returncode == 0, proc.output.read_text(errors="replace")[-3000:]


def _kill_after_first_checkpoint(args: list, env: dict[str, str], pattern: str, folder: Path, *,
                                 cell_only: bool = False) -> int:
    """Start the grid, wait for the first complete checkpoint under ``folder`` (``pattern``: its glob) and SIGKILL
    the grid and every process under it, or with ``cell_only`` the cell's process alone (as the kernel's
    out-of-memory killer would; the grid then ends by itself); returns the checkpoint's step."""
    import psutil

    proc = _crossner_hf(args, env)
    deadline = time.monotonic() + 600
    while not (complete := sorted(folder.glob(pattern))):  # the condition, not a sleep
        if proc.poll() is not None:
            raise AssertionError(f"the grid ended before its first checkpoint: {proc.output.read_text()[-3000:]}")
        assert time.monotonic() < deadline, "no complete checkpoint within 10 minutes"
        time.sleep(0.2)
    if cell_only:  # the training process: the pid its cell's `.running` marker names, under the grid's
        # (a cold cell's parent is the grid, a warm one's the grid's zygote: both under the grid)
        markers = [m for d in complete[0].parents if (m := d / ".running").is_file()]
        assert markers, f"no .running marker above {complete[0]}"
        cell_pid = json.loads(markers[0].read_text())["cell_pid"]
        assert cell_pid in {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
        psutil.Process(cell_pid).send_signal(signal.SIGKILL)
        proc.wait(timeout=600)
    else:
        assert _kill_tree(proc) > 1, "no cell process was running under the grid"
    assert len(complete) == 1, complete  # the cell was held at its first checkpoint
    return int(complete[0].parent.name.rpartition("-")[2])


def _runs(log: Path) -> list[str]:
    """What the cell's log holds of its first and second run (the grid writes ``$ <command>`` before each)."""
    runs = log.read_text(encoding="utf-8", errors="replace").split("\n$ ")
    assert len(runs) == 2, f"{log}: {len(runs)} runs of the cell, not 2"
    # the first run, given --resume_from_checkpoint true in a folder with no checkpoint, started at step 0
    assert "--resume_from_checkpoint true" in runs[0].splitlines()[0] and "starting from the beginning" in runs[0]
    return runs


@pytest.fixture
def mydata(tmp_path, crossner_data_dir) -> Path:
    """A user's folder of 4 train sentences (one step an epoch at the smoke batch of 4: a checkpoint every step),
    8 dev and 8 test (politics)."""
    from crossner_hf.data.conll import read_conll

    folder = tmp_path / "mydata"
    folder.mkdir()
    for split, name, n in (("train", "train", 4), ("dev", "validation", 8), ("test", "test", 8)):
        rows = read_conll(crossner_data_dir / "politics" / f"{split}.txt", None)[:n]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps({"tokens": r["tokens"], "ner_tags": r["ner_tags"]})
                                                      + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.mark.slow  # three searches of one 3-step cell (about a minute on 2 cores)
def test_adapt_cell_killed_after_its_first_checkpoint_continues_from_it(mydata, tiny_bert_dir, crossner_data_dir,
                                                                        tmp_path):
    def args(out: Path) -> list:
        return ["adapt", "--dataset_dir", mydata, "--model_name_or_path", tiny_bert_dir, "--budget", "smoke",
                "--max_steps", 3, "--methods", "direct", "--output_dir", out]

    full, out = tmp_path / "full", tmp_path / "out"
    uninterrupted = _crossner_hf(args(full), _env(tmp_path, crossner_data_dir, hold=False))  # beside the others
    cell = out / "cells" / "direct" / "seed-1"
    # the cell alone is killed (as the out-of-memory killer would): the search ends without it
    step = _kill_after_first_checkpoint(args(out), _env(tmp_path, crossner_data_dir, hold=True),
                                        "seed-1/checkpoint-*/checkpoint_complete.json", cell, cell_only=True)
    assert step == 1 and not (cell / "results.json").exists()
    _finish(args(out), _env(tmp_path, crossner_data_dir, hold=False))
    _finish(uninterrupted)
    _, rerun = _runs(cell / "log.txt")
    assert f"continuing from {cell / 'seed-1' / 'checkpoint-1'} (step 1)" in rerun, rerun[-3000:]
    # one step an epoch: the rerun trained epochs 2 and 3 only, where the first run left off
    assert re.findall(r"\{'loss': [^}]*'epoch': '([\d.]+)'", rerun) == ["2", "3"], rerun[-3000:]
    a = json.loads((full / "cells" / "direct" / "seed-1" / "results.json").read_text())["per_seed"][0]
    b = json.loads((cell / "results.json").read_text())["per_seed"][0]
    assert b["global_step"] == a["global_step"] == 3
    assert a["test"] == b["test"] and a["dev"] == b["dev"] and a["test_loss"] == b["test_loss"]
    rows = [json.loads((folder / "adapt.json").read_text())["rows"][0] for folder in (full, out)]
    assert (rows[0]["dev_f1"], rows[0]["test_f1"]) == (rows[1]["dev_f1"], rows[1]["test_f1"])


@pytest.mark.slow  # three grids of a 2-step DAPT cell and the fine-tuning after it (about a minute on 2 cores)
def test_reproduce_cell_killed_after_its_first_checkpoint_continues_from_it(tiny_bert_dir, crossner_data_dir,
                                                                            tmp_path):
    from datasets import Dataset
    from safetensors.torch import load_file

    from crossner_hf.grid import grid_status
    from crossner_hf.reproduce.tables import read_score
    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder
    from crossner_hf.reproduce.experiments import plan
    from crossner_hf.reproduce.tables import build_table

    # 60 sentences: an epoch of several steps, longer than the smoke budget of 2 steps, which therefore
    # checkpoints every step (dapt.checkpoint_within_budget; at epochs' ends, its only checkpoint was its last)
    sentences = [" ".join(line.split("\t")[0] for line in block.splitlines()) for block in
                 (crossner_data_dir / "politics" / "train.txt").read_text().split("\n\n") if block.strip()][:60]
    corpora = tmp_path / "corpora"
    write_hub_dataset_folder({"politics-integrated": Dataset.from_dict({"text": sentences})}, corpora)

    def args(out: Path) -> list:
        return ["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics", "--rows", DAPT_ROW,
                "--model", tiny_bert_dir, "--corpora", corpora, "--output_dir", out]

    full, out = tmp_path / "full", tmp_path / "out"
    uninterrupted = _crossner_hf(args(full), _env(tmp_path, crossner_data_dir, hold=False))  # beside the others
    dapt, finetune = plan("crossner-table2", "smoke", out, domains=["politics"], model=tiny_bert_dir,
                          corpora=str(corpora), rows=[DAPT_ROW]).cells
    assert dapt.command == "dapt" and finetune.deps == (dapt.name,)
    step = _kill_after_first_checkpoint(args(out), _env(tmp_path, crossner_data_dir, hold=True),
                                        "checkpoint-*/checkpoint_complete.json", dapt.folder(out))
    assert step == 1 and not (dapt.folder(out) / dapt.result_file).exists()
    # a killed grid is not shown as running: its cell's .running marker names processes that are gone
    assert grid_status([dapt, finetune], out) == {dapt.name: "waiting", finetune.name: "waiting"}
    _finish(args(out), _env(tmp_path, crossner_data_dir, hold=False))
    _finish(uninterrupted)
    _, rerun = _runs(dapt.folder(out) / "log.txt")
    assert f"continuing from {dapt.folder(out) / 'checkpoint-1'} (step 1)" in rerun, rerun[-3000:]
    record = json.loads((dapt.folder(out) / dapt.result_file).read_text())
    assert record["global_step"] == 2 and record["epochs"] < 1  # the kill and the resume fell within one epoch
    # the resumed DAPT's weights are the uninterrupted run's to the bit, and so is the fine-tuning's score from them
    a, b = (load_file(dapt.folder(folder) / "model.safetensors") for folder in (full, out))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    assert read_score(finetune, out) == read_score(finetune, full) is not None
    # the table's numbers are the cells' results.json numbers, beside the paper's
    records = {(r["row"], r["column"]): r for r in build_table("crossner-table2", [dapt, finetune], out)}
    results = json.loads((finetune.folder(out) / "results.json").read_text())
    ours = records[(DAPT_ROW, "politics")]["ours"]
    assert ours == f"{100 * results['test']['overall_f1']:.2f}" and records[(DAPT_ROW, "politics")]["paper"] == "72.05"
    assert f"| {DAPT_ROW} | {ours} / " in (out / "table.md").read_text()
    assert f"{DAPT_ROW},politics," in (out / "table.csv").read_text()
    assert records[(DAPT_ROW, "average")]["ours"] == "incomplete (1/5 columns)"  # one domain of five: no average
    # the same command once more: every cell is done, none runs again
    finished = {cell.name: (cell.folder(out) / cell.result_file).stat().st_mtime_ns for cell in (dapt, finetune)}
    _finish(args(out), _env(tmp_path, crossner_data_dir, hold=False))
    assert finished == {cell.name: (cell.folder(out) / cell.result_file).stat().st_mtime_ns for cell in (dapt, finetune)}
    assert [(cell.folder(out) / "log.txt").read_text().count("\n$ ") for cell in (dapt, finetune)] == [1, 0]


class _Racer:
    """A fake controller (``run_grid(controller=)``): holds ``held`` forever, stops ``stopped`` at its first
    complete checkpoint, and ends the grid once ``ended`` has one too. Its decisions wait on the cells' files
    (conditions), never on time."""

    def __init__(self, out: Path, held: str, stopped: str, ended: str):
        self.out, self.held, self.stopped, self.ended = out, held, stopped, ended
        self.asked_to_stop = False
        self.offered: list[list[str]] = []

    def _checkpointed(self, name: str) -> bool:
        return any((self.out / "cells" / name).glob("seed-*/checkpoint-*/checkpoint_complete.json"))

    def ready(self, cells_ready):
        self.offered.append([c.name for c in cells_ready])
        return [c for c in cells_ready if c.name != self.held]

    def poll(self, out):
        assert out == self.out
        if not self.asked_to_stop and self._checkpointed(self.stopped):
            self.asked_to_stop = True
            return [(self.stopped, "behind the leader at dev check 1")]
        return []

    def skipped(self):
        return {self.held: "cannot win any more"}

    def done(self):
        return self.asked_to_stop and self._checkpointed(self.ended)


@pytest.mark.slow  # four 3-step fine-tunings of a tiny BERT (about a minute on 2 cores)
def test_a_controller_holds_stops_and_ends_a_grid_and_the_rerun_continues_its_cells(mydata, tiny_bert_dir,
                                                                                       crossner_data_dir, tmp_path,
                                                                                       monkeypatch):
    """The grid's Controller hook on real cells: a held cell never starts (skipped, with the controller's reason), a
    cell the controller stops keeps its checkpoint and reads 'stopped' with its reason, done() ends the grid with
    the running cell stopped too; a rerun continues both from their checkpoints to the uninterrupted result, and a
    resumed cell's seconds are the sum of its runs."""
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid import Cell, Status, grid_status, run_grid, run_seconds, status_table
    from crossner_hf.grid import run as grid_run
    from crossner_hf.reproduce.budgets import train_settings

    def cell(name: str, seed: int) -> Cell:
        settings = {**train_settings("smoke", "direct", str(crossner_data_dir), few_shot=False), "max_steps": 3,
                    "model_name_or_path": tiny_bert_dir, "dataset_dir": str(mydata), "seeds": seed}
        return Cell(name, "train", "direct", "mydata", seed=seed, settings=settings)

    env = _env(tmp_path, crossner_data_dir, hold=False)
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TOKENIZERS_PARALLELISM", "CROSSNER_DATA_DIR",
                "CROSSNER_HF_CACHE", "PYTHONPATH"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setattr(grid_run, "POLL_SECONDS", 0.2)
    cells = [cell("stopped", 1), cell("ended", 2), cell("held", 3)]
    full = tmp_path / "full"
    assert run_grid(cells[:2], full, ExecutorOptions(workers=2)) == {"stopped": "done", "ended": "done"}

    out = tmp_path / "out"
    monkeypatch.setenv("PYTHONPATH", _env(tmp_path, crossner_data_dir, hold=True)["PYTHONPATH"])
    racer = _Racer(out, held="held", stopped="stopped", ended="ended")
    final = run_grid(cells, out, ExecutorOptions(workers=2), controller=racer)
    assert final == {"stopped": Status.STOPPED, "ended": Status.STOPPED, "held": Status.SKIPPED}
    assert ["stopped", "ended", "held"] in [sorted(o, key=["stopped", "ended", "held"].index) for o in racer.offered]
    assert not (out / "cells" / "held").exists()  # never started
    assert grid_status(cells, out) == final
    table = status_table(cells, out)
    assert "behind the leader at dev check 1" in table and "stopped when the search ended" in table
    assert "cannot win any more" in table
    for name in ("stopped", "ended"):
        assert sorted(p.parent.name for p in (out / "cells" / name).glob("seed-*/checkpoint-*/checkpoint_complete.json")
                      ) == ["checkpoint-1"]

    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    first = {name: run_seconds(c, out) for name, c in (("stopped", cells[0]), ("ended", cells[1]))}
    assert run_grid(cells, out, ExecutorOptions(workers=2)) == {n: "done" for n in ("stopped", "ended", "held")}
    for c in cells[:2]:
        rerun = (c.folder(out) / "log.txt").read_text().split("\n$ ")[-1]
        assert f"continuing from {c.folder(out) / f'seed-{c.seed}' / 'checkpoint-1'} (step 1)" in rerun, rerun[-2000:]
        a, b = (json.loads((c.folder(folder) / "results.json").read_text())["per_seed"][0] for folder in (full, out))
        assert a["test"] == b["test"] and a["dev"] == b["dev"] and b["global_step"] == 3
        runs = [json.loads(line) for line in (c.folder(out) / "runs.jsonl").read_text().splitlines()]
        assert [r["status"] for r in runs] == ["stopped", "done"]
        assert run_seconds(c, out) == pytest.approx(sum(r["seconds"] for r in runs))
        assert run_seconds(c, out) > first[c.name] > 0
