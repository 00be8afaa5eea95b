"""``Trainer`` subclasses for cross-domain NER. Each override says why it exists.

- :class:`CrossNERTrainer` evaluates at the **word** level, as the paper does: model outputs
  of all windows of a sentence are stitched so every word gets exactly one prediction
  (long sentences and words with no sub-word included), then scored with seqeval in the
  conlleval convention. It also gives the fresh classification layer its own learning rate.
- :class:`JointTrainer` draws each target sentence ``oversample_factor`` times per epoch
  through :class:`OversamplingSampler`, a sampler over indices: the data is never copied.

The features these trainers take come from :func:`crossner_hf.data.tokenization.prepare_split`;
evaluation also takes the labeled sentences they were made from (``eval_examples``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Sampler
from transformers import Trainer

from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.inference.predict import decode_tags, log_probabilities
from crossner_hf.modeling.heads import HEAD_PREFIXES
from crossner_hf.data.tokenization import stitch_word_predictions

logger = logging.getLogger(__name__)


def checkpoint_step(checkpoint: str | None) -> int | None:
    """The step of a ``checkpoint-<step>`` folder (None for None)."""
    if not checkpoint:
        return None
    return int(Path(checkpoint).name.rsplit("-", 1)[-1])


class SequentialEvalMixin:
    """Evaluation in dataset order, for word-level scoring that stitches windows back to sentences."""

    def _get_eval_sampler(self, eval_dataset):
        # Overridden because with group_by_length Trainer shuffles evaluation rows too, while the
        # word-level scoring needs them in dataset order (rows are already length-sorted when a
        # split is prepared, so padding stays small). Several processes: accelerate shards
        # sequentially and gather_for_metrics restores the order.
        if self.args.world_size <= 1:
            return torch.utils.data.SequentialSampler(eval_dataset)
        return None


@contextmanager
def _full_precision_forward(model: Any) -> Iterator[None]:
    """Run ``model`` without the autocast wrapper accelerate puts on its ``forward`` under mixed precision.

    With ``--bf16`` / ``--fp16`` accelerate replaces ``model.forward`` by an autocast version (keeping the
    original as ``_original_forward``), and evaluation would run in half precision, while the saved model
    is used in full precision by ``Tagger``, ``predict`` and ``report``: measured on a GPU, the recorded test
    F1 then differed from what the shipped model gives by 0.01-0.02. Scoring with the original forward makes
    ``results.json`` and the card state the figure users get. The weights themselves are fp32 under
    mixed precision, so nothing is cast. (``--bf16_full_eval`` / ``--fp16_full_eval``, which cast the model
    itself, are left as the user asked.)
    """
    original = getattr(model, "_original_forward", None)
    wrapped = model.__dict__.get("forward")
    if original is None or wrapped is None:
        yield
        return
    model.forward = original
    try:
        yield
    finally:
        model.forward = wrapped


class CrossNERTrainer(SequentialEvalMixin, Trainer):
    """A ``Trainer`` whose evaluation is exact word-level entity F1.

    As transformers' ``QuestionAnsweringTrainer`` does, evaluation takes the *examples*
    (the labeled sentences: ``ner_tags``) next to the *features* the model sees (windows
    from :func:`crossner_hf.data.tokenization.prepare_split`, which keep their ``word_ids`` and
    ``example_index`` columns): ``evaluate(features, eval_examples=sentences)``, with the
    pair given at construction (``eval_dataset=``, ``eval_examples=``) used during training.
    The scores of the last evaluation per metric prefix, per type and with both decodings,
    are in :attr:`last_eval_details`.
    """

    def __init__(
        self, *args, eval_examples=None, head_learning_rate: float | None = None,
        decoding: str = "bio-viterbi", excluded_labels: Sequence[str] = (), **kwargs,
    ):
        # decoding: FinetuneConfig checked it (a value given here directly is checked at the first evaluation)
        # labels of the head that predictions must not use (the source's extra types under joint /
        # pretrain-finetune): evaluation masks them as every predictor of the saved model will
        self.excluded_labels = tuple(excluded_labels)
        kwargs.setdefault("preprocess_logits_for_metrics", _log_softmax)
        training_args = args[1] if len(args) > 1 else kwargs.get("args")
        if training_args is not None and getattr(training_args, "output_dir", "") is None:
            raise ValueError("CrossNERTrainer needs args.output_dir: a config without one leaves it to the runner "
                             "(finetune names it outputs/<dataset>-<schedule>); give one, e.g. "
                             "FinetuneConfig(output_dir='out').")
        super().__init__(*args, **kwargs)
        self.eval_examples = eval_examples
        self.decoding = decoding
        self.head_learning_rate = head_learning_rate
        self.last_eval_details: dict[str, dict] = {}
        # the tag ids each sentence got in the last evaluation per prefix (the run decoding's), which a run
        # records beside its scores so its readers need not tag the split again
        self.last_eval_predictions: dict[str, list[list[int]]] = {}

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval", eval_examples=None):
        # Overridden (1) to score at the word level: the metric needs the examples behind the features,
        # which EvalPrediction does not carry, so it is bound to them for this call; (2) to score in full
        # precision under --bf16 / --fp16, see _full_precision_forward.
        with _full_precision_forward(self.model):
            return self._evaluate_at_word_level(eval_dataset, ignore_keys, metric_key_prefix, eval_examples)

    def _evaluate_at_word_level(self, eval_dataset, ignore_keys, metric_key_prefix: str, eval_examples):
        if self.compute_metrics is not None or isinstance(eval_dataset, dict):
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        features = self.eval_dataset if eval_dataset is None else eval_dataset
        examples = eval_examples if eval_examples is not None else (
            self.eval_examples if eval_dataset is None else None)
        if examples is None:
            raise ValueError(
                "CrossNERTrainer.evaluate needs eval_examples (the labeled sentences with ner_tags) for the "
                "features it scores; pass evaluate(features, eval_examples=sentences)."
            )
        self.compute_metrics = functools.partial(
            self.word_level_metrics, features=features, examples=examples, prefix=metric_key_prefix
        )
        try:
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        finally:
            self.compute_metrics = None

    def word_level_metrics(self, eval_pred, *, features, examples, prefix: str = "eval") -> dict[str, float]:
        """Entity-level scores with one prediction per word (see the module docstring)."""
        if not {"word_ids", "example_index"} <= set(features.column_names):
            raise ValueError(
                "CrossNERTrainer evaluation needs features with word_ids and example_index columns; build "
                "them with crossner_hf.data.tokenization.prepare_split."
            )
        preds = eval_pred.predictions
        if isinstance(preds, tuple):
            preds = preds[0]
        if len(preds) != len(features):
            raise ValueError(f"Got {len(preds)} prediction rows for an evaluation set of {len(features)} rows.")
        id2label = self.model.config.id2label
        names = [id2label[i] for i in range(len(id2label))]
        word_ids = features["word_ids"][:]  # one read of the column, not one per row
        gold = [[names[t] for t in tags] for tags in examples["ner_tags"][:]]
        stitched = stitch_word_predictions(
            [row[: len(w)] for row, w in zip(preds, word_ids)], word_ids, features["example_index"],
            [len(g) for g in gold],
        )
        word_scores = [np.asarray(s, dtype=np.float32).reshape(len(s), len(names)) for s in stitched]
        # the Tagger's own decoding step (inference.predict.decode_tags): the figure recorded is the one users get
        predicted = decode_tags(word_scores, names, self.decoding, self.excluded_labels)
        index = {name: i for i, name in enumerate(names)}
        self.last_eval_predictions[prefix] = [[index[t] for t in sentence] for sentence in predicted]
        scores = compute_ner_metrics(gold, predicted)
        # the other decoding, reported alongside so the release's argmax figure is never lost
        other = "argmax" if self.decoding == "bio-viterbi" else "bio-viterbi"
        other_scores = compute_ner_metrics(gold, decode_tags(word_scores, names, other, self.excluded_labels))
        scores["decoding"] = self.decoding
        scores[f"{other.replace('-', '_')}_overall_f1"] = other_scores["overall_f1"]
        scores[f"{other.replace('-', '_')}_overall_precision"] = other_scores["overall_precision"]
        scores[f"{other.replace('-', '_')}_overall_recall"] = other_scores["overall_recall"]
        self.last_eval_details[prefix] = scores
        flat = {
            "overall_precision": scores["overall_precision"],
            "overall_recall": scores["overall_recall"],
            "overall_f1": scores["overall_f1"],
            "overall_accuracy": scores["overall_accuracy"],
            "strict_overall_f1": scores["strict_overall_f1"],
            f"{other.replace('-', '_')}_overall_f1": other_scores["overall_f1"],
        }
        flat.update({f"f1_{t}": v["f1"] for t, v in scores["per_type"].items()})
        return flat

    def create_optimizer(self, model=None):
        # Extended, not replaced: Trainer builds the optimizer (factories, optimizer_cls_and_kwargs,
        # its weight-decay groups); then each group is split so the randomly initialised
        # classification layer trains at --head_learning_rate. The scheduler, created next,
        # takes each group's learning rate as its base.
        optimizer = super().create_optimizer(model)
        if self.head_learning_rate is None:
            return optimizer
        opt_model = self.model if model is None else model
        head = {id(p) for name, p in opt_model.named_parameters() if name.startswith(HEAD_PREFIXES)}
        if not head:
            raise ValueError(
                f"head_learning_rate is set but the model has no parameters under {HEAD_PREFIXES}; "
                "unset --head_learning_rate for this model."
            )
        inner = getattr(optimizer, "optimizer", optimizer)
        groups = []
        for group in inner.param_groups:
            body = [p for p in group["params"] if id(p) not in head]
            top = [p for p in group["params"] if id(p) in head]
            groups.extend(g for g in (
                {**group, "params": body},
                {**group, "params": top, "lr": self.head_learning_rate},
            ) if g["params"])
        inner.param_groups = groups
        return optimizer


def _log_softmax(logits, labels):
    # Normalised scores are what constrained decoding compares across words: the Tagger's (inference.predict).
    return log_probabilities(logits[0] if isinstance(logits, tuple) else logits)


class OversamplingSampler(Sampler[int]):
    """Source rows once and target rows ``factor`` times per epoch, shuffled, by index.

    Rows ``[0, n_source)`` are source and ``[n_source, n_source + n_target)`` target (as
    ``concatenate_datasets([source, target])`` lays them out). The order is a function of
    ``seed`` and the epoch (``set_epoch``, which ``Trainer`` calls), so a resumed run sees
    exactly the batches an uninterrupted one would.

    Example:
        >>> s = OversamplingSampler(n_source=3, n_target=2, factor=4, seed=0)
        >>> len(s), sorted(s).count(3)
        (11, 4)
    """

    def __init__(self, n_source: int, n_target: int, factor: int, seed: int = 0):
        if factor < 1 or n_target < 1:
            raise ValueError(f"OversamplingSampler needs factor >= 1 and a non-empty target (got {factor}, {n_target}).")
        self.n_source, self.n_target, self.factor, self.seed = n_source, n_target, factor, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n_source + self.n_target * self.factor

    def __iter__(self) -> Iterator[int]:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        target = torch.arange(self.n_source, self.n_source + self.n_target).repeat(self.factor)
        indices = torch.cat([torch.arange(self.n_source), target])
        return iter(indices[torch.randperm(len(indices), generator=g)].tolist())


class JointTrainer(CrossNERTrainer):
    """Joint source+target training with the target oversampled by a sampler."""

    def __init__(self, *args, n_source: int, oversample_factor: int = 100, **kwargs):
        super().__init__(*args, **kwargs)
        self.n_source = n_source
        self.oversample_factor = oversample_factor

    def _get_train_sampler(self, train_dataset=None):
        # Overridden to oversample the target split without copying it (see OversamplingSampler).
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        return OversamplingSampler(
            self.n_source, len(dataset) - self.n_source, self.oversample_factor,
            seed=self.args.data_seed if self.args.data_seed is not None else self.args.seed,
        )

