"""Checkpoints that count only once complete, and the state a resume must restore beyond the Trainer's.

``transformers.Trainer`` writes a ``checkpoint-N/`` file by file; a run killed in the middle leaves a folder
that ``get_last_checkpoint`` picks and ``Trainer.train`` then fails on ("Can't find a valid checkpoint"), with
the whole previous checkpoint beside it unused. The model here is datatrove's completion markers:

- :class:`CompletionMarker` (a callback, registered last) writes ``checkpoint_complete.json`` into the
  checkpoint after everything else (``on_save`` runs after the Trainer's own save has returned);
- :func:`last_complete_checkpoint` resumes from the newest checkpoint holding the marker, says which
  incomplete ones it skipped and removes them (the leftovers of the killed run).

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

logger = logging.getLogger(__name__)

COMPLETE = "checkpoint_complete.json"
COLLATOR_RNG = "collator_rng_{rank}.pt"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def _checkpoint_dir(args: Any, state: Any) -> Path:
    return Path(args.output_dir) / f"checkpoint-{state.global_step}"


class CompletionMarker(TrainerCallback):
    """Writes :data:`COMPLETE` into each checkpoint once the Trainer has saved it whole."""

    def on_save(self, args, state, control, **kwargs):
        folder = _checkpoint_dir(args, state)
        if args.process_index == 0 and folder.is_dir():
            from crossner_hf.outputs import atomic_output

            with atomic_output(folder / COMPLETE) as tmp:
                tmp.write_text(json.dumps({"global_step": state.global_step}))
        return control


class CollatorRNG(TrainerCallback):
    """A seeded collator's generator, saved with each checkpoint as it stood before the batch the next step uses.

    Wrap the collator (``data_collator=rng.wrap(collator)``): the wrapper records the generator's state before
    each batch it collates. The state after step ``N`` is not the one to save, because the data loader collates
    a batch ahead (accelerate looks one batch ahead to find the last one), so ``on_save`` saves the state from
    before batch ``N * gradient_accumulation_steps`` and :meth:`restore` puts it back.
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
        saved = self.before.get(state.global_step * args.gradient_accumulation_steps)
        if saved is not None and folder.is_dir():
            torch.save({"calls": state.global_step * args.gradient_accumulation_steps, "state": saved},
                       folder / COLLATOR_RNG.format(rank=args.process_index))
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


def last_complete_checkpoint(folder: str | Path, *, clean: bool = True) -> str | None:
    """The newest ``checkpoint-N`` of ``folder`` holding :data:`COMPLETE` (``None`` if there is none); newer ones
    without it (a kill while they were written) are logged and, with ``clean``, removed."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in folder.iterdir()
                    if p.is_dir() and (m := _CHECKPOINT.match(p.name))), reverse=True)
    for step, path in found:
        if (path / COMPLETE).is_file():
            return str(path)
        logger.warning("Skipping %s: incomplete (the run was stopped while writing it)%s.", path,
                       "; removing it" if clean else "")
        if clean:
            shutil.rmtree(path, ignore_errors=True)
    return None
