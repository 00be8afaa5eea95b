"""The clock before any cell has run: how long one optimiser step of this encoder takes on this machine, measured in
a short probe, times the steps each cell plans.

:func:`step_cost` builds the cell's model (a token-classification head, or the masked-LM head for a DAPT cell) from
its folder, timing the load and the optimizer's creation (the fixed start-up cost of a cell), then runs one untimed
forward + backward + AdamW step and :data:`WARM_STEPS` timed ones at the cell's threads and batch shape (batch size,
sequence length; at most :data:`PROBE_ROWS` rows at once, the rest of the batch counted at their pace) and takes
their median; a fine-tuning probe also times a forward pass without gradients, the unit
of a dev check. The figures are cached as JSON under ``$CROSSNER_HF_CACHE/probe/`` (default
``~/.cache/crossner_hf/probe/``) by the model's path and its ``config.json``'s hash, the threads, the batch, the
sequence length, the device, the torch version and the CPU model, so a second dry run builds no model.

:func:`probe_minutes` turns them into each cell's minutes: the steps its settings plan (``max_steps``, else its
epochs times the batches of its train rows: a joint cell's target drawn ``oversample_factor`` times beside its
source sentences, a pretrain-finetune cell's source stage first), its dev checks, one last dev and test pass, and
the start-up. Early stopping ends most fine-tunings sooner than their epoch cap: the figure is an upper bound for
them, and the dry run says so. Corpus and RNN cells, and a DAPT cell without ``max_steps``, are not probed (the
table prices them). ``--probe off`` or ``CROSSNER_HF_PROBE=off`` skips the probe.

This module imports no ``crossner_hf`` layer above the grid: torch and transformers directly, on first use.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PROBE_ENV = "CROSSNER_HF_PROBE"
"""``off`` skips the probe (as ``--probe off`` does)."""
CACHE_ENV = "CROSSNER_HF_CACHE"
WARM_STEPS = 3
"""Timed steps after the untimed first one (its allocations and lazy initialisation are not a step's cost)."""
PROBE_ROWS = 4
"""Rows a probe runs forward and backward at once: a larger batch is timed as that many rows' share of it (its
forward and backward passes scale with its rows, as gradient accumulation's do) plus one optimizer step, so that a
DAPT cell's 16 x 128 batch costs the probe a quarter of its seconds (measured on MiniLM, 2 cores: 0.98 s for 4 rows
against 4.3 s for 16)."""
EVAL_BATCH = 8
"""Sentences per dev-check batch: the Trainer's ``per_device_eval_batch_size`` default, which no budget changes."""
PROBED = ("direct", "pretrain-finetune", "joint", "train", "dapt")
"""The kinds of cells the probe prices; the others (corpus levels, RNN recipes) keep the table."""


@dataclass(frozen=True)
class StepCost:
    """Seconds of one cell's pieces on this machine: a training step, a forward pass of a dev batch (0 for a masked
    LM probe), the model's load and optimizer's creation; ``cached``: read from the cache (no model built)."""

    step_s: float
    eval_s: float
    startup_s: float
    cached: bool = False


@dataclass(frozen=True)
class DataSize:
    """What the planned steps depend on: the target's rows per split and the padded sub-word length of a training
    batch (:func:`batch_length`)."""

    train: int
    dev: int
    test: int
    seq_len: int


def enabled(setting: str | None = None) -> bool:
    """Whether to probe: ``setting`` (``--probe``) when given, else ``$CROSSNER_HF_PROBE``, else on."""
    value = (setting if setting is not None else os.environ.get(PROBE_ENV, "on")).strip().lower()
    if value not in ("on", "off"):
        raise ValueError(f"--probe {value!r} (or ${PROBE_ENV}): choose on or off.")
    return value == "on"


def cache_dir() -> Path:
    """``$CROSSNER_HF_CACHE/probe`` (default ``~/.cache/crossner_hf/probe``): the project's one cache root."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "crossner_hf")) / "probe"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else the platform's): a probe from another machine is not reused."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def probe_key(path: str, *, mlm: bool, threads: int, batch: int, seq_len: int, device: str) -> str:
    """The cache key of one probe: everything its figures depend on (the model by its folder and config's hash)."""
    config = Path(path) / "config.json"
    config_hash = hashlib.sha256(config.read_bytes()).hexdigest() if config.is_file() else ""
    try:
        torch_version = metadata.version("torch")  # no import: a cache hit costs nothing
    except metadata.PackageNotFoundError:
        torch_version = ""
    fields = {"path": str(Path(path).resolve()), "config": config_hash, "mlm": mlm, "threads": threads,
              "batch": batch, "seq_len": seq_len, "device": device, "torch": torch_version, "cpu": cpu_model()}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


def step_cost(path: str, *, mlm: bool = False, threads: int = 1, batch: int = 8, seq_len: int = 64,
              device: str = "cpu", num_labels: int = 9, fp16: bool = False) -> StepCost:
    """The seconds of a training step of the model in folder ``path`` at ``batch`` x ``seq_len`` on ``threads``
    threads, from the cache or measured now (and cached)."""
    key = probe_key(path, mlm=mlm, threads=threads, batch=batch, seq_len=seq_len, device=device)
    cached = cache_dir() / f"{key}.json"
    try:
        record = json.loads(cached.read_text(encoding="utf-8"))
        return StepCost(float(record["step_s"]), float(record["eval_s"]), float(record["startup_s"]), cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, or unreadable: measure again
    cost = _measure(path, mlm=mlm, threads=threads, batch=batch, seq_len=seq_len, device=device,
                    num_labels=num_labels, fp16=fp16)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(cost)), encoding="utf-8")
        os.replace(tmp, cached)  # whole or absent: two dry runs at once never read half a file
    except OSError as err:  # a cache that cannot be written costs the next dry run a probe, never this one
        logger.warning("%s: probe not cached (%s)", cached, err)
    return cost


def _measure(path: str, *, mlm: bool, threads: int, batch: int, seq_len: int, device: str, num_labels: int,
             fp16: bool) -> StepCost:
    import contextlib

    import torch
    import transformers

    before_threads, before_verbosity = torch.get_num_threads(), transformers.logging.get_verbosity()
    bar = transformers.utils.logging.is_progress_bar_enabled()
    torch.set_num_threads(max(1, threads))
    transformers.logging.set_verbosity_error()  # "newly initialized head" is what a fine-tuning starts from
    transformers.utils.logging.disable_progress_bar()  # a dry run's listing, not a loading bar
    try:
        start = time.perf_counter()
        if mlm:
            model = transformers.AutoModelForMaskedLM.from_pretrained(path)
        else:
            model = transformers.AutoModelForTokenClassification.from_pretrained(path, num_labels=num_labels)
        model.to(device).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        startup = time.perf_counter() - start
        generator = torch.Generator().manual_seed(0)
        rows = min(batch, PROBE_ROWS)
        ids = torch.randint(0, model.config.vocab_size, (rows, seq_len), generator=generator)
        if mlm:  # the loss on the masked share only, as the collator sets it
            labels = torch.where(torch.rand(rows, seq_len, generator=generator) < 0.15, ids, -100)
        else:
            labels = torch.randint(0, num_labels, (rows, seq_len), generator=generator)
        inputs = {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device),
                  "labels": labels.to(device)}
        autocast = (torch.autocast(device_type="cuda", dtype=torch.float16) if fp16 and device.startswith("cuda")
                    else contextlib.nullcontext())

        def sync() -> None:
            if device.startswith("cuda"):
                torch.cuda.synchronize()

        def train_step() -> tuple[float, float]:
            began = time.perf_counter()
            with autocast:
                loss = model(**inputs).loss
            loss.backward()
            sync()
            passes = time.perf_counter()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            sync()
            return passes - began, time.perf_counter() - passes

        train_step()
        timed = [train_step() for _ in range(WARM_STEPS)]
        step_s = (statistics.median(t[0] for t in timed) * batch / rows  # the batch's passes, at the rows' pace
                  + statistics.median(t[1] for t in timed))               # one optimizer step a batch
        eval_s = 0.0
        if not mlm:
            model.eval()

            def eval_step() -> float:
                began = time.perf_counter()
                with torch.no_grad(), autocast:
                    model(**inputs)
                sync()
                return time.perf_counter() - began

            eval_step()
            eval_s = statistics.median(eval_step() for _ in range(2)) * EVAL_BATCH / rows
        logger.info("probe %s (%s, %d threads, batch %d x %d, %s): %.3f s a step, %.3f s a dev batch, %.1f s to "
                    "start", path, "masked LM" if mlm else "token classification", threads, batch, seq_len, device,
                    step_s, eval_s, startup)
        return StepCost(step_s, eval_s, startup)
    finally:
        torch.set_num_threads(before_threads)
        transformers.logging.set_verbosity(before_verbosity)
        if bar:
            transformers.utils.logging.enable_progress_bar()


def batch_length(path: str, sentences: Sequence[Sequence[str]], batch: int, cap: int = 512) -> int:
    """The padded sub-word length of a training batch of ``sentences`` (word lists) under the tokenizer in
    ``path``: the mean over batches of their longest sentence (a batch is padded to its longest), rounded up to a
    multiple of 8 (so that nearby data share a cached probe), at most ``cap``."""
    from transformers import AutoTokenizer

    if not sentences:
        return 8
    tokenizer = AutoTokenizer.from_pretrained(path)
    lengths = [len(ids) for ids in tokenizer([list(s) for s in sentences], is_split_into_words=True,
                                             truncation=True, max_length=cap)["input_ids"]]
    maxima = [max(lengths[i:i + batch]) for i in range(0, len(lengths), max(1, batch))]
    return min(cap, 8 * math.ceil(statistics.fmean(maxima) / 8))


def _number(settings: Mapping[str, Any], name: str, default: float) -> float:
    value = settings.get(name)
    try:
        return float(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def planned_work(settings: Mapping[str, Any], kind: str, data: DataSize) -> tuple[int, int] | None:
    """(optimiser steps, dev checks) one cell of ``kind`` plans under ``settings`` on ``data``; None where the
    settings do not say (a DAPT cell without ``max_steps``: its corpus's size is not known before it is built). A
    pretrain-finetune cell's steps are its source stage's plus its target's."""
    batch = max(1, int(_number(settings, "per_device_train_batch_size", 8)))
    max_steps = int(_number(settings, "max_steps", -1))
    if kind == "dapt":
        return (max_steps, 0) if max_steps > 0 else None
    epochs = _number(settings, "num_train_epochs", 3)
    rows = data.train
    if kind == "joint":
        rows = data.train * int(_number(settings, "oversample_factor", 1)) + int(_number(settings, "source_subsample",
                                                                                          0))
    per_epoch = max(1, math.ceil(rows / batch))
    steps = max_steps if max_steps > 0 else per_epoch * max(1, math.ceil(epochs))
    every = _number(settings, "eval_steps", 0)
    if str(settings.get("eval_strategy") or "epoch") == "steps" and every > 0:
        checks = round(1 / every) if every < 1 else steps // max(1, int(every))
    else:
        checks = math.ceil(steps / per_epoch)
    if kind == "pretrain-finetune":
        source_steps = int(_number(settings, "source_max_steps", -1))
        if source_steps <= 0:
            source_steps = (math.ceil(int(_number(settings, "source_subsample", 1000)) / batch)
                            * max(1, math.ceil(_number(settings, "source_epochs", 1))))
        steps += source_steps
    return steps, checks


def cell_device(settings: Mapping[str, Any]) -> str:
    """The device a cell trains on: the CPU when its settings say ``use_cpu``, else the GPU where there is one."""
    if settings.get("use_cpu") in (True, "true", "True"):
        return "cpu"
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def probe_minutes(cells: Iterable[Any], model_path: str, data: DataSize, *, kind_of: Any,
                  num_labels: int = 9, skip: Iterable[str] = ()) -> dict[str, float]:
    """Each probed cell's whole minutes on this machine (see the module's text), by cell name; ``kind_of(cell)``:
    its cost kind; ``skip``: names not to price (finished cells). Cells whose settings plan no countable steps are
    left out, and so is every cell when ``model_path`` is not a model folder (nothing to probe)."""
    if not (Path(model_path) / "config.json").is_file():
        return {}
    skipped = set(skip)
    minutes: dict[str, float] = {}
    for cell in cells:
        kind = kind_of(cell)
        if cell.name in skipped or kind not in PROBED or getattr(cell, "program", None):
            continue
        settings = dict(getattr(cell, "settings", {}) or {})
        work = planned_work(settings, kind, data)
        if work is None:
            continue
        steps, checks = work
        mlm = kind == "dapt"
        batch = max(1, int(_number(settings, "per_device_train_batch_size", 8)))
        seq_len = int(_number(settings, "block_size", 128)) if mlm else data.seq_len
        cost = step_cost(model_path, mlm=mlm, threads=max(1, int(getattr(cell, "cpus", 1) or 1)), batch=batch,
                         seq_len=seq_len, device=cell_device(settings), num_labels=num_labels,
                         fp16=settings.get("fp16") in (True, "true", "True"))
        dev_batches = math.ceil(data.dev / EVAL_BATCH)
        passes = (checks + 1) * dev_batches + math.ceil(data.test / EVAL_BATCH)  # the checks, then dev and test
        seeds = len([s for s in str(settings.get("seeds") or "1").split(",") if s]) or 1
        minutes[cell.name] = seeds * (cost.startup_s + steps * cost.step_s + (0 if mlm else passes * cost.eval_s)) / 60
    return minutes
