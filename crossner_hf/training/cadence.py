"""When a fine-tuning stage checks dev within its step budget, and the one warning when the budget is short.

``FinetuneConfig`` checks dev once per epoch, as the paper's early stopping does. A ``--max_steps`` budget can end
long before that: joint training draws every target sentence ``oversample_factor`` (100) times per epoch beside all
of CoNLL-2003, so one epoch is about 1,500 steps and a 300-step budget is a fifth of one. Dev is then scored only
at the end and the last weights are kept, not the best (issue 48: 35.34 test F1 kept at the end against 51.17 with a
dev check every 50 steps).

:func:`dev_cadence` gives the stage's ``TrainingArguments`` changes: a joint stage whose budget holds fewer than
:data:`DEV_CHECKS` epochs checks (and checkpoints) dev every ``max_steps / DEV_CHECKS`` steps, so the best checkpoint
on dev is the one kept; every schedule says in one warning when its budget ends before one epoch or before any dev
check, with the numbers and the fix.

A run without dev checks (DAPT, the source stage of pretrain-finetune) checkpoints at least six times
(:func:`checkpoint_within_budget`), so a kill loses a sixth of it at most.

Example:
    >>> steps_per_epoch(1_000, batch_size=16)
    63
"""

from __future__ import annotations

import logging
import math
from typing import Any

logger = logging.getLogger(__name__)

DEV_CHECKS = 6
"""Dev checks a joint budget shorter than this many epochs gets (300 steps: every 50, as issue 48 measured)."""


def steps_per_epoch(n_rows: int, batch_size: int, world_size: int = 1, accumulation: int = 1) -> int:
    """Optimiser steps in one pass over ``n_rows`` training rows, as ``Trainer`` counts them."""
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
