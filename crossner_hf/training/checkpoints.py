"""Checkpoints that count only once complete, and the state a resume must restore beyond the Trainer's.

``transformers.Trainer`` writes a ``checkpoint-N/`` file by file; a run killed in the middle leaves a folder
that ``get_last_checkpoint`` picks and ``Trainer.train`` then fails on ("Can't find a valid checkpoint"), with
the whole previous checkpoint beside it unused. The model here is datatrove's completion markers:

- :class:`CompletionMarker` (a callback, registered last) writes ``checkpoint_complete.json`` into the
  checkpoint after everything else (``on_save`` runs after the Trainer's own save has returned);
- :func:`last_complete_checkpoint` resumes from the newest checkpoint holding the marker, says which
  incomplete ones it skipped and removes them (the leftovers of the killed run). Only ours: before the Trainer
  saves, the callback writes ``checkpoint_started.json`` into the folder, so a checkpoint holding neither marker
  (a plain ``Trainer``'s, or this library's before the markers) is never deleted: it is resumed from when the
  Trainer finished it (its ``trainer_state.json``, written last, and weights are there), refused in one line
  otherwise.

:class:`CollatorRNG` keeps a seeded masking collator's generator in the checkpoint: the Trainer restores
the torch / numpy / python RNGs on resume but not a generator a collator owns, so a resumed DAPT run drew
other masks than the uninterrupted one (weights off by up to 3e-4 after a few steps).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from crossner_hf.outputs import CHECKPOINT_COMPLETE, CHECKPOINT_STARTED, ours_checkpoint

logger = logging.getLogger(__name__)

_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json",
            "adapter_model.safetensors", "adapter_model.bin")
COLLATOR_RNG = "collator_rng_{rank}.pt"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def _checkpoint_dir(args: Any, state: Any) -> Path:
    return Path(args.output_dir) / f"checkpoint-{state.global_step}"


class CompletionMarker(TrainerCallback):
    """Writes :data:`~crossner_hf.outputs.CHECKPOINT_STARTED` into each checkpoint before the Trainer saves it
    (``on_step_end`` / ``on_epoch_end`` run after the flow callback decided to save, before the save) and
    :data:`~crossner_hf.outputs.CHECKPOINT_COMPLETE` once it is saved whole, after giving its files the usual
    mode (``save_pretrained`` leaves 0600, which a teammate cannot read)."""

    def _started(self, args, state, control) -> None:
        if control.should_save and args.process_index == 0:
            folder = _checkpoint_dir(args, state)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / CHECKPOINT_STARTED).write_text(json.dumps({"global_step": state.global_step}))

    def on_step_end(self, args, state, control, **kwargs):
        self._started(args, state, control)
        return control

    def on_epoch_end(self, args, state, control, **kwargs):
        self._started(args, state, control)
        return control

    def on_save(self, args, state, control, **kwargs):
        folder = _checkpoint_dir(args, state)
        if args.process_index == 0 and folder.is_dir():
            from crossner_hf.outputs import atomic_output, usual_modes

            usual_modes(folder)
            with atomic_output(folder / CHECKPOINT_COMPLETE) as tmp:
                tmp.write_text(json.dumps({"global_step": state.global_step}))
        return control


class CollatorRNG(TrainerCallback):
    """A seeded collator's generator, saved with each checkpoint as it stood before the batch the next step uses.

    Wrap the collator (``data_collator=rng.wrap(collator)``): the wrapper records the generator's state before
    each batch it collates. The state after step ``N`` is not the one to save, because the data loader collates
    a batch ahead (accelerate looks one batch ahead to find the last one), so ``on_save`` saves the state from
    before batch ``N * gradient_accumulation_steps`` (the state it has now when nothing was collated ahead, as at
    an epoch's end) and :meth:`restore` puts it back.
    """

    def __init__(self, collator: Any):
        self.collator = collator
        self.calls = 0
        self.before: dict[int, torch.Tensor] = {}

    def wrap(self, collator: Any) -> Any:
        def collate(examples):
            if getattr(self.collator, "generator", None) is None and getattr(self.collator, "seed", None) is not None:
                self.collator.create_rng()
            generator = getattr(self.collator, "generator", None)
            if generator is not None:
                self.before[self.calls] = generator.get_state()
                for old in [k for k in self.before if k < self.calls - 64]:  # a few batches ahead at most
                    del self.before[old]
            self.calls += 1
            return collator(examples)

        return collate

    def on_save(self, args, state, control, **kwargs):
        folder = _checkpoint_dir(args, state)
        batch = state.global_step * args.gradient_accumulation_steps
        saved = self.before.get(batch)
        generator = getattr(self.collator, "generator", None)
        if saved is None and self.calls == batch and generator is not None:
            # nothing collated ahead (a save at an epoch's end, DAPT's default): the state now is the one before
            # batch N; without it a run resumed there drew other masks than the uninterrupted one
            saved = generator.get_state()
        if saved is not None and folder.is_dir():
            torch.save({"calls": batch, "state": saved}, folder / COLLATOR_RNG.format(rank=args.process_index))
        return control

    def restore(self, checkpoint: str | Path | None, process_index: int) -> None:
        path = Path(checkpoint) / COLLATOR_RNG.format(rank=process_index) if checkpoint else None
        if path is None or not path.is_file():
            return
        saved = torch.load(path, weights_only=True)
        if getattr(self.collator, "generator", None) is None:
            self.collator.create_rng()
        self.collator.generator.set_state(saved["state"])
        self.calls = int(saved["calls"])
        self.before.clear()
        logger.info("Restored the masking collator's generator from %s", path)


def trainer_complete(path: Path) -> bool:
    """Whether a checkpoint without our markers was finished by the ``Trainer``: its ``trainer_state.json`` (the
    Trainer writes it after the weights, optimizer and scheduler) reads, and weights are there."""
    try:
        json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))["global_step"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return any((path / name).is_file() for name in _WEIGHTS)


def last_complete_checkpoint(folder: str | Path, *, clean: bool = True) -> str | None:
    """The newest complete ``checkpoint-N`` of ``folder`` (``None`` if there is none): one holding
    :data:`~crossner_hf.outputs.CHECKPOINT_COMPLETE`, or without our markers one the Trainer finished
    (:func:`trainer_complete`). Newer ones of ours without that mark (a kill while they were written) are logged and, with ``clean``, removed; an unfinished one
    that is not ours is never removed: a one-line ``FileExistsError``."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in folder.iterdir()
                    if p.is_dir() and (m := _CHECKPOINT.match(p.name))), reverse=True)
    for step, path in found:
        if (path / CHECKPOINT_COMPLETE).is_file():
            return str(path)
        if not ours_checkpoint(path):
            if trainer_complete(path):
                logger.info("Resuming from %s: a Trainer checkpoint without crossner_hf's marker, finished "
                            "(trainer_state.json and weights are there).", path)
                return str(path)
            raise FileExistsError(f"--resume_from_checkpoint: {path} is unfinished (no trainer_state.json or no "
                                  f"weights) and was not written by crossner_hf, so it is not deleted; move it out "
                                  f"of {folder} or pass an earlier checkpoint folder to --resume_from_checkpoint.")
        logger.warning("Skipping %s: incomplete (the run was stopped while writing it)%s.", path,
                       "; removing it" if clean else "")
        if clean:
            shutil.rmtree(path, ignore_errors=True)
    return None
