"""The clock of a grid (:mod:`crossner_hf.grid.costs`) and the progress each cell writes as it trains
(:mod:`crossner_hf.training.progress`): a running cell priced at its own pace, the kinds none finished priced from the
running ones, the wall time on the workers, the disk's peak; a pretrain-finetune cell's source stage placed at its
share of the whole run, and a continued cell's seconds summed over its runs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from crossner_hf.grid.costs import PROGRESS, estimate, read_progress


@dataclass
class FakeCell:
    name: str
    minutes: float
    kind: str
    deps: tuple[str, ...] = ()
    command: str = "train"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.meta = {"cost": self.kind}

    def folder(self, out):
        return Path(out) / "cells" / self.name

    def result_path(self, out):
        return self.folder(out) / "results.json"


def _progress(cell: FakeCell, out: Path, share: float, seconds: float) -> None:
    cell.folder(out).mkdir(parents=True, exist_ok=True)
    (cell.folder(out) / PROGRESS).write_text(json.dumps({"share": share, "seconds": seconds, "dev": []}))


def test_a_running_cell_prices_itself_and_its_kind_and_the_table_is_a_labelled_prior(tmp_path):
    running = FakeCell("joint/seed-1", 6.0, "joint")
    waiting = FakeCell("joint/seed-2", 6.0, "joint")
    other = FakeCell("direct/seed-1", 3.0, "direct")
    _progress(running, tmp_path, share=0.25, seconds=300)  # 5 min for a quarter: 20 min in all here
    priced = estimate([running, waiting, other], tmp_path)
    assert priced.per_cell["joint/seed-1"] == pytest.approx(15.0)  # what is left of it at its own pace
    assert priced.per_cell["joint/seed-2"] == pytest.approx(20.0)  # its kind's pace, measured while running
    assert priced.priced_from == {"joint": "running (1)", "direct": "table x3.33"}
    assert priced.per_cell["direct/seed-1"] == pytest.approx(3.0 * 300 / 60 / (6.0 * 0.25))  # the table x the speed
    assert "this machine's running cells: joint (1)" in priced.text() and "the packaged prior x3.33" in priced.text()
    # a cell too early in its run (the model's load) says nothing yet: the table prices it, said so
    _progress(running, tmp_path, share=0.01, seconds=30)
    assert estimate([running, waiting], tmp_path).priced_from == {"joint": "table"}
    assert "the packaged prior: joint" in estimate([running, waiting], tmp_path).text()


def test_wall_time_on_the_workers_and_the_disks_peak(tmp_path):
    a, b = FakeCell("a", 2.0, "direct"), FakeCell("b", 2.0, "direct")
    c = FakeCell("c", 2.0, "direct", deps=("a",))
    priced = estimate([a, b, c], tmp_path, disk={"direct": 100.0}, model="m-minilm")
    assert priced.wall_minutes(1)[0] == pytest.approx(6.0)
    assert priced.wall_minutes(2)[0] == pytest.approx(4.0)  # a and b together, then c after a
    assert priced.wall_minutes(3)[0] == pytest.approx(4.0)  # c waits for a whatever the workers
    one, peak_one = priced.wall_minutes(1)
    two, peak_two = priced.wall_minutes(2)
    checkpoints = priced.running_mb["a"]
    assert checkpoints == pytest.approx(92.0 * 2.83 * 2)  # two checkpoints of a MiniLM cell
    assert peak_one == pytest.approx(200.0 + checkpoints)  # the last cell running beside the two finished
    assert peak_two == pytest.approx(max(2 * checkpoints, 200.0 + checkpoints))
    assert priced.disk_mb == pytest.approx(300.0) and peak_two > priced.disk_mb
    line = priced.clock_text(2)
    assert "on 2 workers at once: ~4.0 min" in line and "300 MB when done" in line and "at its peak" in line


def _state(step: int, max_steps: int) -> SimpleNamespace:
    return SimpleNamespace(global_step=step, max_steps=max_steps, is_world_process_zero=True)


def test_progress_places_the_source_stage_in_the_whole_run_and_sums_a_continued_cells_seconds(tmp_path,
                                                                                                monkeypatch):
    from crossner_hf.training import progress as module
    from crossner_hf.training.progress import ProgressCallback, progress_callbacks

    assert progress_callbacks(tmp_path / "seed-1") == []  # not a grid cell: no file
    (tmp_path / "cell.json").write_text("{}")
    assert isinstance(progress_callbacks(tmp_path / "seed-1" / "source")[0], ProgressCallback)  # the cell's
    now = [100.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    args = SimpleNamespace(metric_for_best_model="overall_f1")
    source = ProgressCallback(tmp_path / PROGRESS, stage="source", after_steps=300)  # the target stage plans 300
    source.on_train_begin(args, _state(0, 100), None)
    now[0] += 50
    source.on_train_end(args, _state(100, 100), None)
    record = read_progress(tmp_path)
    assert record["share"] == pytest.approx(0.25) and record["stage_share"] == [0.0, 0.25]
    assert record["seconds"] == pytest.approx(50) and record["dev"] == []
    target = ProgressCallback(tmp_path / PROGRESS, stage="target")
    target.on_train_begin(args, _state(0, 300), None)
    for step, f1 in ((60, 0.4), (120, 0.5), (180, 0.55)):
        now[0] += 10
        target.on_evaluate(args, _state(step, 300), None, metrics={"eval_overall_f1": f1})
    record = read_progress(tmp_path)
    assert record["share"] == pytest.approx(0.7)  # (100 + 180) / 400: the clock's share of the whole run
    # the dev checks at their share of the stage that checks dev (step / 300), the race's axis
    assert record["dev"] == [[0.2, 0.4], [0.4, 0.5], [0.6, 0.55]] and record["dev_stage"] == "target"
    assert record["seconds"] == pytest.approx(80) and record["step"] == 180 and record["max_steps"] == 300
    # killed, then continued from its checkpoint at step 120 in a new process: the checks after it go, the
    # seconds of both runs add up
    monkeypatch.setattr(module.os, "getpid", lambda: -1)
    again = ProgressCallback(tmp_path / PROGRESS, stage="target")
    again.on_train_begin(args, _state(120, 300), None)
    now[0] += 5
    again.on_save(args, _state(130, 300), None)
    record = read_progress(tmp_path)
    assert record["dev"] == [[0.2, 0.4], [0.4, 0.5]] and record["runs"] == 2
    assert record["seconds"] == pytest.approx(85)


def test_an_rnn_recipes_epochs_write_the_same_progress(tmp_path):
    from crossner_hf.training.progress import write_epoch_progress

    history = [{"epoch": 1, "dev_f1": 0.2, "seconds": 10.0}, {"epoch": 2, "dev_f1": 0.3, "seconds": 12.0}]
    write_epoch_progress(tmp_path / "run", history, step=40, max_steps=200)
    assert read_progress(tmp_path / "run") is None and read_progress(tmp_path) is None  # not a grid cell: nothing
    (tmp_path / "cell.json").write_text("{}")
    write_epoch_progress(tmp_path, history, step=40, max_steps=200)
    record = read_progress(tmp_path)
    assert record["dev"] == [[0.1, 0.2], [0.2, 0.3]] and record["share"] == 0.2 and record["seconds"] == 22.0
    assert (record["step"], record["max_steps"]) == (40, 200)


def test_pricing_order_finished_then_running_then_probe_then_the_table(tmp_path):
    done = FakeCell("direct/seed-1", 3.0, "direct")
    direct = FakeCell("direct/seed-2", 3.0, "direct")
    running = FakeCell("joint/seed-1", 6.0, "joint")
    joint = FakeCell("joint/seed-2", 6.0, "joint")
    dapt = FakeCell("dapt/domain", 3.0, "dapt")
    corpus = FakeCell("corpora/domain", 0.5, "corpora")
    _progress(running, tmp_path, share=0.5, seconds=240)  # 8 min in all at its pace
    probed = {c.name: 11.0 for c in (direct, running, joint, dapt)}  # the probe prices every model cell it can
    priced = estimate([done, direct, running, joint, dapt, corpus], tmp_path, done=lambda c: c is done,
                      seconds=lambda c: 120.0, probed=probed)
    assert priced.per_cell["direct/seed-2"] == pytest.approx(2.0)  # a finished cell of its kind: measured
    assert priced.per_cell["joint/seed-2"] == pytest.approx(8.0)   # a running one: its pace
    assert priced.per_cell["dapt/domain"] == pytest.approx(11.0)   # neither: the probe
    assert priced.priced_from == {"direct": "measured (1)", "joint": "running (1)", "dapt": "probe",
                                  "corpora": f"table x{priced_speed(done, running):.2f}"}
    assert "a probe on this machine (steps planned x seconds a step: an upper bound" in priced.text()
    # before any cell ran, the probe prices what it can and the table the rest, each labelled
    fresh = estimate([direct, joint, dapt, corpus], tmp_path / "empty", probed=probed)
    assert fresh.priced_from == {"direct": "probe", "joint": "probe", "dapt": "probe", "corpora": "table"}
    assert fresh.minutes_left == pytest.approx(33.0 + 0.5)


def priced_speed(done: FakeCell, running: FakeCell) -> float:
    """This machine's speed against the table: 2 measured minutes of a 3-minute direct, 4 of half a 6-minute joint."""
    return (2.0 + 4.0) / (done.minutes + running.minutes * 0.5)


def test_a_folders_size_skips_a_file_removed_while_it_is_walked(tmp_path, monkeypatch):
    """A running cell removes its `.running` mark or an old checkpoint while the clock sizes its folder: the file is
    skipped, not the search ended (a raced search's driver died of the FileNotFoundError)."""
    from crossner_hf.grid import costs

    (tmp_path / "weights.bin").write_bytes(b"x" * 2_000_000)
    walk = os.walk

    def walk_with_a_vanished_file(folder):
        for root, dirs, files in walk(folder):
            yield root, dirs, [*files, ".running"]  # listed, then gone before its lstat

    monkeypatch.setattr(costs.os, "walk", walk_with_a_vanished_file)
    assert costs.folder_mb(tmp_path) == pytest.approx(2.0, rel=0.05)
