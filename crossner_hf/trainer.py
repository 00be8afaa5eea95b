"""``Trainer`` subclasses for cross-domain NER. Each override says why it exists.

- :class:`CrossNERTrainer` evaluates at the **word** level, as the paper does: model outputs
  of all windows of a sentence are stitched so every word gets exactly one prediction
  (long sentences and words with no sub-word included), then scored with seqeval in the
  conlleval convention. It also gives the fresh classification layer its own learning rate.
- :class:`JointTrainer` draws each target sentence ``oversample_factor`` times per epoch
  through :class:`OversamplingSampler`, a sampler over indices: the data is never copied.

The datasets these trainers take come from :func:`crossner_hf.tokenization.tokenize_dataset`
plus a ``word_tags`` column (the sentence's gold tag ids, repeated on each of its windows),
which :func:`crossner_hf.schedules.prepare_split` adds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Sampler
from transformers import Trainer

from .decoding import DECODINGS, decode
from .metrics import compute_ner_metrics
from .tokenization import stitch_word_predictions

logger = logging.getLogger(__name__)

HEAD_PREFIXES = ("classifier.", "score.")


class CrossNERTrainer(Trainer):
    """A ``Trainer`` whose evaluation is exact word-level entity F1.

    ``compute_metrics`` defaults to :meth:`word_level_metrics`; the evaluation datasets
    must keep their ``word_ids``, ``example_index`` and ``word_tags`` columns (they are
    dropped only from the batches, by ``remove_unused_columns``).
    """

    def __init__(
        self, *args, head_learning_rate: float | None = None, decoding: str = "bio-viterbi", **kwargs
    ):
        if decoding not in DECODINGS:
            raise ValueError(f"decoding={decoding!r}: choose one of {', '.join(DECODINGS)}.")
        kwargs.setdefault("preprocess_logits_for_metrics", _log_softmax)
        super().__init__(*args, **kwargs)
        self.decoding = decoding
        if self.compute_metrics is None:
            self.compute_metrics = self.word_level_metrics
        self.head_learning_rate = head_learning_rate
        self._active_eval_dataset = None
        self.last_eval_details: dict[str, dict] = {}

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval"):
        # Overridden to remember which dataset is being scored: word_level_metrics needs its
        # word_ids/example_index/word_tags columns, which EvalPrediction does not carry.
        if isinstance(eval_dataset if eval_dataset is not None else self.eval_dataset, dict):
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        self._active_eval_dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        self._active_prefix = metric_key_prefix
        try:
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        finally:
            self._active_eval_dataset = None

    def _get_eval_sampler(self, eval_dataset):
        # Overridden because the default length-grouped eval sampler shuffles rows, and the
        # stitching in word_level_metrics needs predictions in dataset order. Rows are
        # sorted by length when the split is prepared, so padding stays small anyway.
        if self.args.world_size <= 1:
            return torch.utils.data.SequentialSampler(eval_dataset)
        return None

    def word_level_metrics(self, eval_pred) -> dict[str, float]:
        """Entity-level scores with one prediction per word (see the module docstring)."""
        dataset = self._active_eval_dataset
        if dataset is None or not {"word_ids", "example_index", "word_tags"} <= set(dataset.column_names):
            raise ValueError(
                "CrossNERTrainer evaluation needs a dataset with word_ids, example_index and word_tags "
                "columns; build it with crossner_hf.schedules.prepare_split."
            )
        preds = eval_pred.predictions
        if isinstance(preds, tuple):
            preds = preds[0]
        if len(preds) != len(dataset):
            raise ValueError(f"Got {len(preds)} prediction rows for an evaluation set of {len(dataset)} rows.")
        id2label = self.model.config.id2label
        names = [id2label[i] for i in range(len(id2label))]
        word_ids = dataset["word_ids"]
        example_index = dataset["example_index"]
        word_tags = dataset["word_tags"]
        n_examples = max(example_index) + 1 if example_index else 0
        gold: list[list[str]] = [[] for _ in range(n_examples)]
        for ex, tags in zip(example_index, word_tags):
            if not gold[ex]:
                gold[ex] = [names[t] for t in tags]
        stitched = stitch_word_predictions(
            [row[: len(w)] for row, w in zip(preds, word_ids)], word_ids, example_index,
            [len(g) for g in gold],
        )
        word_scores = [np.asarray(s, dtype=np.float32).reshape(len(s), len(names)) for s in stitched]
        scores = compute_ner_metrics(gold, _tags(decode(word_scores, names, self.decoding), names))
        # the other decoding, reported alongside so the paper's argmax figure is never lost
        other = "argmax" if self.decoding == "bio-viterbi" else "bio-viterbi"
        other_scores = compute_ner_metrics(gold, _tags(decode(word_scores, names, other), names))
        scores["decoding"] = self.decoding
        scores[f"{other.replace('-', '_')}_overall_f1"] = other_scores["overall_f1"]
        self.last_eval_details[getattr(self, "_active_prefix", "eval")] = scores
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
        # Overridden only to give the randomly initialised classification layer its own
        # learning rate (--head_learning_rate); everything else is Trainer's default.
        if self.head_learning_rate is None or self.optimizer is not None:
            return super().create_optimizer(model)
        opt_model = self.model if model is None else model
        decay = set(self.get_decay_parameter_names(opt_model))
        groups: dict[tuple[bool, bool], list] = {}
        for name, param in opt_model.named_parameters():
            if param.requires_grad:
                is_head = name.startswith(HEAD_PREFIXES)
                groups.setdefault((is_head, name in decay), []).append(param)
        optimizer_cls, optimizer_kwargs = self.get_optimizer_cls_and_kwargs(self.args, opt_model)
        self.optimizer = optimizer_cls(
            [
                {
                    "params": params,
                    "weight_decay": self.args.weight_decay if decays else 0.0,
                    "lr": self.head_learning_rate if is_head else self.args.learning_rate,
                }
                for (is_head, decays), params in groups.items()
            ],
            **optimizer_kwargs,
        )
        return self.optimizer


def _log_softmax(logits, labels):
    # Normalised scores are what constrained decoding compares across words.
    if isinstance(logits, tuple):
        logits = logits[0]
    return torch.log_softmax(logits.float(), dim=-1)


def _tags(ids: list[list[int]], names: Sequence[str]) -> list[list[str]]:
    return [[names[i] for i in sent] for sent in ids]


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

