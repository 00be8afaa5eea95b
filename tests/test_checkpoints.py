"""crossner_hf.training.checkpoints: a checkpoint counts once complete, and a seeded collator's generator is saved
with it and restored on resume (the end-to-end resumes are in tests/test_safety.py and tests/test_recipes.py)."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import torch

import pytest

from crossner_hf.outputs import CHECKPOINT_COMPLETE, CHECKPOINT_STARTED
from crossner_hf.training.checkpoints import COLLATOR_RNG, CollatorRNG, CompletionMarker, last_complete_checkpoint


def _checkpoint(folder, step, complete, ours=True):
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    if ours:  # the marker CompletionMarker writes before the Trainer saves
        (path / CHECKPOINT_STARTED).write_text(json.dumps({"global_step": step}))
    (path / "model.safetensors").write_bytes(b"weights")
    if complete:
        (path / CHECKPOINT_COMPLETE).write_text(json.dumps({"global_step": step}))
    return path


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_plain_trainer_checkpoint_is_resumed_never_deleted(tmp_path, caplog):
    """A checkpoint without our markers (a plain Trainer's, or this library's before them) survives a resume: the
    Trainer finished it (trainer_state.json, written last, and weights) so it is resumed from; an unfinished one is a
    one-line refusal, and every file is left as it was."""
    ours = _checkpoint(tmp_path, 2, complete=True)
    plain = _checkpoint(tmp_path, 4, complete=False, ours=False)
    (plain / "trainer_state.json").write_text(json.dumps({"global_step": 4}))
    before = _tree(tmp_path)
    from crossner_hf.training.runs import resume_point

    with caplog.at_level(logging.INFO):  # what --resume_from_checkpoint true does in every runner
        assert resume_point("true", tmp_path) == str(plain)
    assert _tree(tmp_path) == before and "without crossner_hf's marker" in caplog.text
    unfinished = _checkpoint(tmp_path, 6, complete=False, ours=False)  # no trainer_state.json: not finished
    before = _tree(tmp_path)
    with pytest.raises(FileExistsError, match=r"checkpoint-6 is unfinished .* not deleted") as err:
        resume_point("true", tmp_path)
    assert "\n" not in str(err.value) and _tree(tmp_path) == before and ours.is_dir()


def test_the_newest_complete_checkpoint_is_resumed_and_torn_ones_are_removed(tmp_path, caplog):
    old = _checkpoint(tmp_path, 2, complete=True)
    newer = _checkpoint(tmp_path, 10, complete=True)
    torn = _checkpoint(tmp_path, 12, complete=False)  # ours, killed while the Trainer wrote it
    (tmp_path / "checkpoint-x").mkdir()  # not a checkpoint name: ignored
    with caplog.at_level(logging.WARNING):
        assert last_complete_checkpoint(tmp_path, clean=False) == str(newer)
    assert torn.is_dir() and "Skipping" in caplog.text and "removing" not in caplog.text
    assert last_complete_checkpoint(tmp_path) == str(newer)  # 10 sorts after 2 as a number, not as text
    assert not torn.exists() and old.is_dir()
    assert last_complete_checkpoint(tmp_path / "absent") is None
    empty = tmp_path / "only-torn"
    _checkpoint(empty, 4, complete=False)
    assert last_complete_checkpoint(empty) is None and not (empty / "checkpoint-4").exists()


def test_the_marker_is_written_by_the_main_process_into_the_saved_checkpoint(tmp_path):
    folder = _checkpoint(tmp_path, 6, complete=False)
    state = SimpleNamespace(global_step=6)
    CompletionMarker().on_save(SimpleNamespace(output_dir=str(tmp_path), process_index=1), state, None)
    assert not (folder / CHECKPOINT_COMPLETE).exists()  # another process: the main one writes it
    CompletionMarker().on_save(SimpleNamespace(output_dir=str(tmp_path), process_index=0), state, None)
    assert json.loads((folder / CHECKPOINT_COMPLETE).read_text()) == {"global_step": 6}
    assert last_complete_checkpoint(tmp_path) == str(folder)
    # a step with no checkpoint folder (save skipped) writes nothing
    CompletionMarker().on_save(SimpleNamespace(output_dir=str(tmp_path), process_index=0),
                               SimpleNamespace(global_step=7), None)
    assert not (tmp_path / "checkpoint-7").exists()


class _Seeded:
    """A collator with its own seeded generator, as the masking collators have."""

    def __init__(self, seed: int):
        self.seed, self.generator = seed, None

    def create_rng(self) -> None:
        self.generator = torch.Generator().manual_seed(self.seed)

    def __call__(self, examples):
        return torch.rand(len(examples), generator=self.generator)


def test_the_collators_generator_resumes_where_the_saved_step_left_it(tmp_path):
    args = SimpleNamespace(output_dir=str(tmp_path), process_index=0, gradient_accumulation_steps=2)
    through = _Seeded(7)
    rng = CollatorRNG(through)
    collate = rng.wrap(through)
    batches = [collate([0, 1]) for _ in range(7)]  # the loader runs a batch ahead of the step that saves
    folder = _checkpoint(tmp_path, 2, complete=True)
    rng.on_save(args, SimpleNamespace(global_step=2), None)  # step 2 x 2 accumulation: the 5th batch is next
    saved = torch.load(folder / COLLATOR_RNG.format(rank=0), weights_only=True)
    assert saved["calls"] == 4

    resumed = _Seeded(7)
    again = CollatorRNG(resumed)
    again.restore(folder, process_index=0)
    assert again.calls == 4
    collate_again = again.wrap(resumed)
    assert all(torch.equal(collate_again([0, 1]), b) for b in batches[4:])  # the same draws as the run that went on
    again.restore(None, 0)  # nothing to restore: a fresh run
    again.restore(tmp_path / "checkpoint-9", 0)
    assert again.calls == 7


def test_a_save_at_an_epochs_end_keeps_the_generator_as_it_stands(tmp_path):
    """At an epoch's end nothing is collated ahead (DAPT saves there by default): the generator's state now is the
    one before the next batch, saved so a run resumed there draws the masks the uninterrupted run draws (without it
    a DAPT cell killed and resumed in a grid ended with other weights)."""
    args = SimpleNamespace(output_dir=str(tmp_path), process_index=0, gradient_accumulation_steps=1)
    through = _Seeded(7)
    rng = CollatorRNG(through)
    collate = rng.wrap(through)
    for _ in range(3):  # an epoch of 3 batches, saved at its end: step 3, the 4th batch is next
        collate([0, 1])
    folder = _checkpoint(tmp_path, 3, complete=False)
    rng.on_save(args, SimpleNamespace(global_step=3), None)
    following = [collate([0, 1]) for _ in range(2)]  # the next epoch of the run that went on

    resumed = _Seeded(7)
    again = CollatorRNG(resumed)
    again.restore(folder, process_index=0)
    assert again.calls == 3
    collate_again = again.wrap(resumed)
    assert all(torch.equal(collate_again([0, 1]), b) for b in following)


def test_the_started_marker_comes_before_the_save_and_the_files_are_readable(tmp_path):
    """Before the Trainer saves (the flow callback set should_save), the main process marks the folder as ours; after,
    the checkpoint's files get the usual mode, not the 0600 save_pretrained leaves."""
    import os

    args = SimpleNamespace(output_dir=str(tmp_path), process_index=0)
    marker = CompletionMarker()
    marker.on_step_end(args, SimpleNamespace(global_step=3), SimpleNamespace(should_save=False))
    assert not (tmp_path / "checkpoint-3").exists()
    marker.on_step_end(args, SimpleNamespace(global_step=4), SimpleNamespace(should_save=True))
    folder = tmp_path / "checkpoint-4"
    assert (folder / CHECKPOINT_STARTED).is_file() and not (folder / CHECKPOINT_COMPLETE).exists()
    (folder / "model.safetensors").write_bytes(b"w")
    (folder / "model.safetensors").chmod(0o600)
    marker.on_save(args, SimpleNamespace(global_step=4), None)
    umask = os.umask(0)
    os.umask(umask)
    assert (folder / "model.safetensors").stat().st_mode & 0o777 == 0o666 & ~umask
    assert (folder / CHECKPOINT_COMPLETE).is_file()


def test_a_dapt_run_of_few_epochs_checkpoints_every_sixth_of_its_steps():
    """A step budget ending within the first epoch (the grids' DAPT cells on a large corpus; the pretrain-finetune
    source stage's one epoch) saved only at its end: a kill anywhere before restarted it from step 0. Runs whose
    epochs end often enough keep their epoch saves."""
    from transformers import TrainingArguments

    from crossner_hf.training.training_args import checkpoint_within_budget

    def cadence(n_rows, **kw):
        args = TrainingArguments("out", save_strategy="epoch", per_device_train_batch_size=16, use_cpu=True, **kw)
        checkpoint_within_budget(args, n_rows)
        return args.save_strategy.value, args.save_steps if args.save_strategy.value == "steps" else None

    assert cadence(50_000, max_steps=60) == ("steps", 10)  # 3,125 steps an epoch: 6 checkpoints within the 60
    assert cadence(16_000, num_train_epochs=1) == ("steps", 167)  # one epoch of 1,000 steps
    assert cadence(480, max_steps=60) == ("steps", 10)  # 30 steps an epoch: 2 epoch saves, too few
    assert cadence(160, max_steps=60) == ("epoch", None)  # 10 steps an epoch: a save every tenth of the run
    assert cadence(16 * 60, num_train_epochs=15) == ("epoch", None)  # the paper's 15 epochs: a save each
    assert cadence(50_000, max_steps=60, eval_strategy="epoch", load_best_model_at_end=True) == ("epoch", None)
