"""A grid cell's progress, written as it trains: ``progress.json`` in the cell's folder, what the grid's clock, a
search's racing policy and ``--status`` read while the cell runs (:func:`crossner_hf.grid.costs.read_progress`).

:class:`ProgressCallback` (a ``transformers.TrainerCallback``) rewrites the file whole (:func:`atomic_output`) at
every dev check, every save and at most every few seconds of steps: the stage (``source`` then ``target`` for
pretrain-finetune, ``train``, ``dapt``), its step of its planned steps, the stage's share of the whole planned run
(a pretrain-finetune cell's source stage is the first part of its own budget: the clock's share), the seconds the
cell has trained, summed over its runs (a killed cell continued from its checkpoint adds its new run's seconds to the
old ones), and the dev F1 of every check as ``[share, f1]``, placed at its share of the stage that checks the
target's dev (``dev_stage``): a racing policy compares fine-tunings at equal shares of their own, never at equal
steps, and never judges a source stage or a DAPT run, which have no dev F1 on the target.

The callback is attached only to a run inside a grid cell (a folder holding ``cell.json`` at or above the run's
output folder: :func:`progress_callbacks`); an ordinary ``train`` run writes no such file.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from crossner_hf.grid.costs import PROGRESS, read_progress
from crossner_hf.outputs import atomic_output

logger = logging.getLogger(__name__)

CELL_RECORD = "cell.json"
EVERY_SECONDS = 5.0
"""Between two writes at step ends (a dev check or a save always writes): fresh enough for ``--status``."""


def cell_folder(output_dir: str | Path, levels: int = 3) -> Path | None:
    """The grid cell a run writing into ``output_dir`` belongs to: the nearest folder at or above it (``levels``
    up: a seed's and its source stage's folders are inside the cell's) holding ``cell.json``; None outside a grid."""
    folder = Path(output_dir).resolve()
    for candidate in [folder, *folder.parents][:levels + 1]:
        if (candidate / CELL_RECORD).is_file():
            return candidate
    return None


def planned_steps(args: Any, rows: int) -> int:
    """Optimiser steps a stage of ``rows`` training rows plans under ``args`` (``max_steps`` when set, else every
    epoch's batches): the later stage's size that places an earlier stage's share of the whole run."""
    if getattr(args, "max_steps", -1) and args.max_steps > 0:
        return int(args.max_steps)
    batch = max(1, args.per_device_train_batch_size * args.gradient_accumulation_steps * max(1, args.world_size))
    return max(1, math.ceil(rows / batch)) * max(1, math.ceil(args.num_train_epochs))


def progress_callbacks(output_dir: str | Path, *, stage: str = "train", after_steps: int = 0) -> list[TrainerCallback]:
    """``[ProgressCallback]`` for a run inside a grid cell, ``[]`` otherwise (see :func:`cell_folder`)."""
    folder = cell_folder(output_dir)
    return [] if folder is None else [ProgressCallback(folder / PROGRESS, stage=stage, after_steps=after_steps)]


class ProgressCallback(TrainerCallback):
    """Writes ``path`` (``progress.json``) through a run: see the module's text for what it holds.

    ``stage``: this trainer's stage of the cell's run; ``after_steps``: the steps the stages after it plan (a
    pretrain-finetune source stage: its target stage's), so that shares are of the whole planned run.
    """

    def __init__(self, path: str | Path, *, stage: str = "train", after_steps: int = 0,
                 every_seconds: float = EVERY_SECONDS):
        self.path = Path(path)
        self.stage = stage
        self.after_steps = max(0, int(after_steps))
        self.every_seconds = every_seconds
        self.record: dict[str, Any] = {}
        self.started = 0.0
        self.base_seconds = 0.0
        self.last_write = 0.0
        self.metric = "eval_overall_f1"

    # ----------------------------------------------------------------------------------------------- the file

    def _before_steps(self) -> int:
        """The planned steps of the stages that ran before this one (in the order the file records them)."""
        stages = self.record.get("stages", {})
        names = list(stages)
        mine = names.index(self.stage) if self.stage in names else len(names)
        return sum(int(stages[n].get("max_steps") or 0) for n in names[:mine])

    def _share(self, step: int, max_steps: int) -> tuple[float, float, float]:
        """(the run's share at ``step``, the stage's start share, its end share)."""
        before = self._before_steps()
        total = max(1, before + max_steps + self.after_steps)
        return (before + min(step, max_steps)) / total, before / total, (before + max_steps) / total

    @staticmethod
    def _stage_share(step: int, max_steps: int) -> float:
        """A dev check's place: the share of the stage that checks dev (the fine-tuning on the target) at ``step``.
        Not the whole run's share: a pretrain-finetune cell's first target checks placed after its source stage
        were compared with an early-plateauing direct's final F1 and cut, the method that then won on every seed
        (the gpu-budget politics race, docs/adapt.md)."""
        return min(step, max_steps) / max(1, max_steps)

    def _write(self, state: Any, *, force: bool = False) -> None:
        if not state.is_world_process_zero:
            return
        now = time.monotonic()
        if not force and now - self.last_write < self.every_seconds:
            return
        self.last_write = now
        max_steps = int(state.max_steps or 0)
        share, start, end = self._share(state.global_step, max_steps)
        self.record.setdefault("stages", {})[self.stage] = {"max_steps": max_steps, "after_steps": self.after_steps}
        self.record.update({
            "stage": self.stage, "step": int(state.global_step), "max_steps": max_steps,
            "share": round(share, 5), "stage_share": [round(start, 5), round(end, 5)],
            "planned_steps": self._before_steps() + max_steps + self.after_steps,
            "seconds": round(self.base_seconds + (now - self.started), 2), "metric": self.metric,
            "updated": time.time(),
        })
        self.record.setdefault("dev", [])
        try:
            with atomic_output(self.path) as tmp:
                tmp.write_text(json.dumps(self.record), encoding="utf-8")
        except OSError as err:  # progress is a convenience: a full disk must not end the training
            logger.warning("%s: progress not written (%s)", self.path, err)

    # ----------------------------------------------------------------------------------------- the callbacks

    def on_train_begin(self, args, state, control, **kwargs):
        # a killed cell continued, or this cell's later stage: the file's seconds so far are this run's start
        self.record = read_progress(self.path.parent) or {}
        self.base_seconds = float(self.record.get("seconds") or 0.0)
        if self.record.get("pid") != os.getpid():  # a new process: a run of its own (a later stage is not)
            self.record["runs"] = int(self.record.get("runs") or 0) + 1
            self.record["pid"] = os.getpid()
        metric = getattr(args, "metric_for_best_model", None) or "overall_f1"
        self.metric = metric if metric.startswith("eval_") else f"eval_{metric}"
        self.started = time.monotonic()
        self.record.setdefault("stages", {})[self.stage] = {"max_steps": int(state.max_steps or 0),
                                                            "after_steps": self.after_steps}
        # a resumed run replays the checks after its checkpoint: the ones recorded past it go
        share = self._stage_share(state.global_step, int(state.max_steps or 0))
        self.record["dev"] = [c for c in self.record.get("dev", []) if c[0] <= share + 1e-9] \
            if self.record.get("dev_stage") == self.stage else self.record.get("dev", [])
        self._write(state, force=True)

    def on_step_end(self, args, state, control, **kwargs):
        self._write(state)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        value = (metrics or {}).get(self.metric)
        if value is not None and state.is_world_process_zero:
            if self.record.get("dev_stage") != self.stage:  # the checks on the target's dev are one stage's
                self.record["dev"], self.record["dev_stage"] = [], self.stage
            share = self._stage_share(state.global_step, int(state.max_steps or 0))
            self.record.setdefault("dev", []).append([round(share, 5), float(value)])
        self._write(state, force=True)

    def on_save(self, args, state, control, **kwargs):
        self._write(state, force=True)

    def on_train_end(self, args, state, control, **kwargs):
        self._write(state, force=True)


def write_epoch_progress(output_dir: str | Path, history: list[dict[str, Any]], step: int, max_steps: int) -> None:
    """``progress.json`` of an RNN recipe's epoch loop (:mod:`crossner_hf.training.rnn.loop`) inside a grid cell:
    the same record :class:`ProgressCallback` writes, from the loop's history (one dev F1 an epoch, its seconds;
    the history is in the loop's checkpoint, so a continued run's seconds are both runs'). Nothing outside a cell."""
    folder = cell_folder(output_dir)
    if folder is None:
        return
    planned = max(1, int(max_steps))
    per_epoch = step / max(1, len(history))  # the steps an epoch took so far place each check on the run
    dev = [[round(min(1.0, (i + 1) * per_epoch / planned), 5), float(e["dev_f1"])]
           for i, e in enumerate(history) if e.get("dev_f1") is not None]
    record = {"stage": "train", "step": int(step), "max_steps": planned, "share": round(min(1.0, step / planned), 5),
              "stage_share": [0.0, 1.0], "planned_steps": planned, "stages": {"train": {"max_steps": planned}},
              "seconds": round(sum(float(e.get("seconds") or 0.0) for e in history), 2), "metric": "dev_f1",
              "dev": dev, "updated": time.time()}
    try:
        with atomic_output(folder / PROGRESS) as tmp:
            tmp.write_text(json.dumps(record), encoding="utf-8")
    except OSError as err:  # progress is a convenience: a full disk must not end the training
        logger.warning("%s: progress not written (%s)", folder / PROGRESS, err)
