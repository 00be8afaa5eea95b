"""What a cell costs: the one packaged table of minutes and disk per kind of run at each budget, and the estimate of
a grid's cells not yet run from the measured seconds and folder sizes of its finished ones.

Every grid prices its cells here (``reproduce``'s scales through :func:`crossner_hf.reproduce.budgets.minutes_for`,
``adapt``'s budgets through :mod:`crossner_hf.selection.config`), so a DAPT run costs the same in both. A cell's
kind is :func:`cost_key`: ``meta["cost"]`` where its planner set one (``direct``, ``joint``, ``dapt``, ...), else
its command.

The table is the last resort: :func:`estimate` prices a cell left to run from this machine first: the finished cells
of the same kind (their ``seconds``, their folder's size on disk), then the running ones (each cell's
``progress.json``, written as it trains by :mod:`crossner_hf.training.progress`: its seconds so far over its share of
its planned steps is what the whole cell will take here, corrected at every write), then a probe of this encoder on
this machine (:mod:`crossner_hf.grid.probe`: seconds a step times the steps the cell plans, labelled "probe"), and
only a kind none of these priced from the packaged table, scaled by how fast this machine ran the kinds it did
measure and labelled "packaged prior".
A started cell (running, or stopped with its checkpoint) is priced for what is left of it: its kind's minutes times
the share it has still to train. :meth:`Estimate.wall_minutes` packs the cells left on ``workers`` slots in
dependency order (the wall time the dry run states) and follows the disk on the way: finished folders plus the
checkpoints the running cells hold (:data:`CHECKPOINTS_KEPT` of :data:`CHECKPOINT_FACTOR` model copies each), whose
maximum is the peak.

Example:
    >>> minutes("cpu", "dapt"), minutes("paper", "train")
    (3, 30)
"""

from __future__ import annotations

import logging
import os
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.grid.cells import PROGRESS

logger = logging.getLogger(__name__)

MINUTES: dict[str, dict[str, float]] = {
    # estimated wall minutes of one cell (one seed) on the budget's machine, one cell at a time. cpu: 2 cores,
    # MiniLM, ~100 train sentences and ~400 dev sentences, up to 30 dev checks with patience 4 (issue 54 measured
    # 1.6 / 1.9 / 3.6 / 2.8-3.2 min for direct / pretrain-finetune / joint / DAPT at the old 10-epoch cap); gpu: one
    # H100 (direct 91 s, joint 210 s, DAPT 41 s measured on politics with MiniLM, issue 49); paper: BERT-base to
    # early stopping; smoke: MiniLM, 2 steps, measured (direct 0.4, joint 0.5, DAPT 0.2, two cells at a time on 2
    # cores). "train" and "rnn" are reproduce's fine-tuning and RNN-recipe cells.
    "smoke": {"direct": 0.4, "pretrain-finetune": 0.5, "joint": 0.5, "dapt": 0.3, "corpora": 0.2,
              "bilstm-crf": 0.3, "train": 0.5, "rnn": 0.5},
    "cpu": {"direct": 3, "pretrain-finetune": 3.5, "joint": 6, "dapt": 3, "corpora": 0.5, "bilstm-crf": 5,
            "train": 5, "rnn": 10},
    "gpu": {"direct": 1.5, "pretrain-finetune": 3, "joint": 3.5, "dapt": 1, "corpora": 0.5, "bilstm-crf": 2,
            "train": 2, "rnn": 4},
    "paper": {"direct": 30, "pretrain-finetune": 45, "joint": 60, "dapt": 240, "corpora": 1, "bilstm-crf": 60,
              "train": 30, "rnn": 60},
}

ENCODER_MB = {"minilm": 92.0, "base": 440.0}
"""One saved copy of an encoder, MB: the packaged MiniLM (22.7M float32 parameters, tokenizer beside) and a
BERT-base-sized one (108M). A finished fine-tuning or DAPT cell keeps one copy of its model: measured on a finished
MiniLM search, 91.8 MB a direct, joint or DAPT cell and 182.1 MB a pretrain-finetune one (its source stage's model
stays beside)."""

SMALL_MB = {"corpora": 5.0, "bilstm-crf": 10.0, "rnn": 10.0}

CHECKPOINT_FACTOR = 2.83
"""One checkpoint of a fine-tuning or DAPT run, in saved model copies: the weights, AdamW's two moments and the
scheduler and RNG states (measured: 260 MB a checkpoint of a MiniLM cell whose model is 92 MB)."""
CHECKPOINTS_KEPT = 2
"""Checkpoints a running cell holds at once: the best on dev and the latest (``save_total_limit``)."""
"""Cells whose folder holds no encoder: corpus levels, the RNN recipes' models (word vectors of the data's words)."""


def minutes(budget: str, kind: str) -> float:
    """The table's wall minutes of one ``kind`` cell at ``budget``; a one-line error naming both on a miss."""
    try:
        return MINUTES[budget][kind]
    except KeyError:
        raise KeyError(f"no cost for a {kind!r} cell at budget {budget!r} in crossner_hf/grid/costs.py MINUTES; "
                       f"budgets: {', '.join(MINUTES)}; kinds: {', '.join(MINUTES['cpu'])}.") from None


def encoder_mb(model: str) -> float:
    """MB of one saved copy of ``model``: a local folder's weight files, else by name (MiniLM or BERT-base-sized)."""
    folder = Path(model)
    if folder.is_dir():
        weights = [p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file()]
        if weights:
            return max(p.stat().st_size for p in weights) / 1e6 + 1.0  # + tokenizer and config
    return ENCODER_MB["minilm"] if "minilm" in model.lower() else ENCODER_MB["base"]


def disk_mb(kind: str, model: str) -> float:
    """The table's MB a finished ``kind`` cell keeps: one copy of its model (pretrain-finetune two: its source
    stage's model stays beside the target's, ``seed-*/source/final``); the corpus and RNN cells hold no encoder."""
    if kind in SMALL_MB:
        return SMALL_MB[kind]
    return encoder_mb(model) * (2 if kind == "pretrain-finetune" else 1)


def cost_key(cell: Any) -> str:
    """A cell's kind for pricing: its planner's ``meta["cost"]``, else its command."""
    meta = getattr(cell, "meta", None) or {}
    return str(meta.get("cost") or cell.command)


def folder_mb(folder: Path) -> float:
    """MB the files under ``folder`` take: links not followed, a hard-linked file (a seed's weights that are the
    run's, see :func:`crossner_hf.grid.run.one_copy`) counted once."""
    total, seen = 0, set()
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                stat = os.lstat(Path(root) / name)
            except FileNotFoundError:  # a running cell's marker or checkpoint removed while it is walked
                continue
            if (stat.st_dev, stat.st_ino) not in seen and not Path(root, name).is_symlink():
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total / 1e6


def read_progress(folder: str | Path) -> dict[str, Any] | None:
    """A cell's ``progress.json`` (``folder``: the cell's), or None when it has none or it cannot be read (it is
    rewritten whole, so a reader never sees half of it; a damaged one reads as none)."""
    import json

    try:
        record = json.loads((Path(folder) / PROGRESS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def checkpoint_mb(kind: str, model: str) -> float:
    """MB the checkpoints a running ``kind`` cell holds at once (none for the cells that hold no encoder)."""
    if kind in SMALL_MB:
        return SMALL_MB[kind]
    return encoder_mb(model) * CHECKPOINT_FACTOR * CHECKPOINTS_KEPT


@dataclass
class Estimate:
    """A grid's cost: what its finished cells took and what the others should take, one after another."""

    cells: int
    done: int
    minutes_left: float
    """Estimated wall minutes of the cells not done, one after another."""
    measured_minutes: float
    """The finished cells' measured minutes (their result files' ``seconds``)."""
    disk_mb: float
    """The grid's cell folders once every cell is done: the finished ones as they are, the others estimated."""
    disk_left_mb: float
    priced_from: dict[str, str] = field(default_factory=dict)
    """Each kind left to run -> 'measured (n)', 'running (n)', 'probe', 'table x<speed>' or 'table'."""
    per_cell: dict[str, float] = field(default_factory=dict)
    """Each cell left -> its estimated minutes."""
    measured: dict[str, float] = field(default_factory=dict)
    """Each finished cell that recorded its seconds -> its measured minutes."""
    started: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Each cell left that has trained part of its run -> (its share done, its seconds so far): progress.json."""
    final_mb: dict[str, float] = field(default_factory=dict)
    """Each cell -> MB its folder keeps once done (measured where done, else its kind's)."""
    running_mb: dict[str, float] = field(default_factory=dict)
    """Each cell left -> MB it holds while it runs (its checkpoints)."""
    deps: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def wall_minutes(self, workers: int = 1, running: Iterable[str] = ()) -> tuple[float, float]:
        """(wall minutes of the cells left on ``workers`` slots, the disk's peak MB on the way): each cell starts
        when a slot is free and its dependencies are done (the longest first), the cells in ``running`` at once."""
        import heapq

        workers = max(1, int(workers))
        left = dict(self.per_cell)
        done_mb = sum(mb for name, mb in self.final_mb.items() if name not in left)
        disk = done_mb + sum(self.running_mb.get(n, 0.0) for n in left if n in self.started)  # stopped: kept
        peak = disk
        clock = 0.0
        events: list[tuple[float, str]] = []
        finished: set[str] = {n for n in self.final_mb if n not in left}
        waiting = [n for n in left if n not in set(running)]
        for name in running:
            if name in left:
                heapq.heappush(events, (left[name], name))
        order = sorted(waiting, key=lambda n: -left[n])
        while order or events:
            ready = [n for n in order if all(d in finished or d not in self.deps for d in self.deps.get(n, ()))]
            while ready and len(events) < workers:
                name = ready.pop(0)
                order.remove(name)
                if name not in self.started:
                    disk += self.running_mb.get(name, 0.0)
                heapq.heappush(events, (clock + left[name], name))
            peak = max(peak, disk)
            if not events:
                break  # the rest wait on cells outside this estimate
            clock = events[0][0]
            while events and events[0][0] <= clock + 1e-9:  # every cell ending now frees its slot first
                _, name = heapq.heappop(events)
                finished.add(name)
                disk += self.final_mb.get(name, 0.0) - self.running_mb.get(name, 0.0)
            peak = max(peak, disk)
        return clock, peak

    def clock_text(self, workers: int, *, raced: bool = False) -> str:
        """One line: the wall time of the cells left on ``workers`` at once and the disk when done and at its peak
        (the checkpoints of the cells running at once)."""
        wall, peak = self.wall_minutes(workers)
        return (f"on {workers} worker{'s' if workers != 1 else ''} at once: ~{wall:.1f} min ({wall / 60:.1f} h) of wall "
                f"time for every cell in full" + (" (racing stops or skips the methods that cannot win: less)"
                                                 if raced else "")
                + (f"; disk ~{_size(self.disk_mb)} when done, ~{_size(peak)} at its peak (the checkpoints of the "
                   "cells running at once)" if self.disk_mb else ""))

    @property
    def left(self) -> int:
        return self.cells - self.done

    def text(self) -> str:
        """One line: cells left, their minutes, the disk the grid will use."""
        groups: dict[str, list[str]] = {}
        for kind, how in self.priced_from.items():
            groups.setdefault(how.split(" (")[0], []).append(kind + (f" ({how.split(' (')[1]}" if "(" in how else ""))
        names = {"measured": "this machine's finished cells", "running": "this machine's running cells",
                 "probe": "a probe on this machine (steps planned x seconds a step: an upper bound where early "
                          "stopping ends a run sooner)"}
        # the table is a prior, said so: nothing of those kinds ran here yet
        how = "; ".join(f"{names.get(h, 'the packaged prior' + h[5:])}: {', '.join(k)}" for h, k in groups.items())
        return (f"{self.cells} cells, {self.done} done, {self.left} left: ~{self.minutes_left:.1f} min "
                f"({self.minutes_left / 60:.1f} h) of runs one after another"
                + (f", priced from {how}" if how else "")
                + (f"; disk ~{_size(self.disk_mb)} when done ({_size(self.disk_left_mb)} more)" if self.disk_mb
                   else ""))  # no sizes measured and none given: nothing to say


def _size(mb: float) -> str:
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB"


def estimate(cells: Iterable[Any], out: str | Path, *, done: Callable[[Any], bool] | None = None,
             seconds: Callable[[Any], float | None] | None = None, key: Callable[[Any], str] = cost_key,
             disk: Mapping[str, float] | None = None, model: str | None = None,
             progress: Callable[[Any], dict[str, Any] | None] | None = None,
             probed: Mapping[str, float] | None = None) -> Estimate:
    """Price ``cells`` (any objects with ``name``, ``command``, ``minutes``, ``meta`` and ``result_path(out)``) from the
    finished ones under ``out``.

    A cell left to run costs the mean measured seconds of the finished cells of its kind; a kind with none costs
    the mean projection of its running cells (seconds so far over share done), else its table minutes
    (``cell.minutes``) times this machine's speed on the measured kinds (their measured minutes over their table
    minutes). A started cell costs what is left of it. ``done`` / ``seconds`` / ``progress``: whether a cell
    finished, its measured seconds and its progress record (default: its result file is there, its ``seconds``, its
    ``progress.json``). ``disk``: MB per kind for cells no finished one measured; ``model``: the encoder, for the
    checkpoints' size. ``probed``: cell name -> its whole minutes from a probe on this machine
    (:func:`crossner_hf.grid.probe.probe_minutes`), which prices a kind neither finished nor running cells
    measured, before the table.
    """
    cells = list(cells)
    model = model or ""
    done = done or (lambda c: c.result_path(out).is_file())
    seconds = seconds or (lambda c: cell_seconds(c, out))
    finished = [c for c in cells if done(c)]
    measured: dict[str, list[float]] = {}
    took_minutes: dict[str, float] = {}
    sizes: dict[str, list[float]] = {}
    table_of_measured = 0.0
    for cell in finished:
        took = seconds(cell)
        if took is not None and took > 0:
            measured.setdefault(key(cell), []).append(took / 60)
            took_minutes[cell.name] = took / 60
            table_of_measured += cell.minutes
        folder = cell.folder(out)
        if folder.is_dir():
            sizes.setdefault(key(cell), []).append(folder_mb(folder))
    measured_minutes = sum(sum(v) for v in measured.values())
    finished_names = {c.name for c in finished}
    progress = progress or (lambda c: read_progress(c.folder(out)))
    started: dict[str, tuple[float, float]] = {}
    projected: dict[str, list[float]] = {}  # kind -> whole-cell minutes projected from the started cells
    speed_minutes = measured_minutes  # this machine's minutes against the table's, what ran of started cells too
    for cell in cells:
        if cell.name in finished_names:
            continue
        record = progress(cell) or {}
        share, took = float(record.get("share") or 0.0), float(record.get("seconds") or 0.0)
        if share > 0 and took > 0:
            started[cell.name] = (min(share, 1.0), took)
            if share >= MIN_SHARE:  # the first steps (the model's load, the first batches) say little
                projected.setdefault(key(cell), []).append(took / share / 60)
                table_of_measured += cell.minutes * share
                speed_minutes += took / 60
    speed = speed_minutes / table_of_measured if table_of_measured > 0 else 1.0
    priced_from: dict[str, str] = {}
    per_cell: dict[str, float] = {}
    final_mb: dict[str, float] = {}
    running_mb: dict[str, float] = {}
    disk_left = 0.0
    for cell in cells:
        kind = key(cell)
        kind_mb = statistics.fmean(sizes[kind]) if kind in sizes else (disk or {}).get(kind, 0.0)
        if cell.name in finished_names:
            folder = cell.folder(out)
            final_mb[cell.name] = folder_mb(folder) if folder.is_dir() else kind_mb
            continue
        final_mb[cell.name] = kind_mb
        running_mb[cell.name] = checkpoint_mb(kind, model) if (disk or model) else 0.0
        if kind in measured:
            whole = statistics.fmean(measured[kind])
            priced_from[kind] = f"measured ({len(measured[kind])})"
        elif kind in projected:
            whole = statistics.fmean(projected[kind])
            priced_from[kind] = f"running ({len(projected[kind])})"
        elif cell.name in (probed or {}):
            whole = float((probed or {})[cell.name])
            priced_from[kind] = "probe"
        else:
            whole = cell.minutes * speed
            priced_from[kind] = f"table x{speed:.2f}" if table_of_measured > 0 else "table"
        share, took = started.get(cell.name, (0.0, 0.0))
        if cell.name in started and share >= MIN_SHARE:  # its own pace is the best guess of its own end
            whole = took / share / 60
        per_cell[cell.name] = max(0.0, whole * (1 - share))
        disk_left += kind_mb
    disk_done = sum(sum(v) for v in sizes.values())
    return Estimate(cells=len(cells), done=len(finished), minutes_left=sum(per_cell.values()),
                    measured_minutes=measured_minutes, disk_mb=disk_done + disk_left, disk_left_mb=disk_left,
                    priced_from=priced_from, per_cell=per_cell, measured=took_minutes, started=started,
                    final_mb=final_mb, running_mb=running_mb,
                    deps={c.name: tuple(getattr(c, "deps", ()) or ()) for c in cells})


MIN_SHARE = 0.05
"""A started cell's pace counts once it has run this share of its planned steps."""


def cell_seconds(cell: Any, out: str | Path) -> float | None:
    """The wall seconds a finished cell took (the estimate's and the grid's progress ETA's one reading of them): the
    sum of its process's runs (``runs.jsonl``: a cell stopped and resumed ran more than once), else what its result
    file records (a cell run before 0.4), or None."""
    from crossner_hf.grid.cells import run_seconds

    return run_seconds(cell, out) or measured_seconds(cell.result_path(out))


def measured_seconds(path: Path) -> float | None:
    """The wall seconds a finished run's result file records (``seconds``), or None when it records none."""
    from crossner_hf.results import READ_RESULT_FILES, read_results

    if path.name not in READ_RESULT_FILES:  # a corpus cell's entity list: no run record, the table prices it
        return None
    try:
        return float(read_results(path.parent).seconds or 0.0) or None
    except (OSError, ValueError, KeyError) as err:  # an unreadable file prices as the table, never stops a dry run
        logger.warning("%s: no measured seconds (%s); the cost table prices its kind", path, err)
        return None
