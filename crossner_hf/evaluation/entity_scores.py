"""Entity-level validation scores of a large tagging corpus, in numpy (entities from
:mod:`crossner_hf.data.entities`): micro precision / recall / F1 (the conlleval convention, equal to
:func:`crossner_hf.evaluation.metrics.compute_ner_metrics`), and the ``Trainer`` hooks that use them (NER-BERT
pre-training scores 315 categories at every evaluation, where building tag strings word by word is slow).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from crossner_hf.data.entities import extract_entities, iob2_scheme
from crossner_hf.data.tokenization import IGNORE_INDEX


def entity_scores(
    gold: np.ndarray, pred: np.ndarray, sentence_ids: np.ndarray, label_names: Sequence[str]
) -> dict[str, float]:
    """Entity-level micro precision/recall/F1 (conlleval convention) and word accuracy, in numpy.

    ``gold``/``pred`` are flat word-level label ids, ``sentence_ids`` one id per word. The
    figures equal :func:`crossner_hf.evaluation.metrics.compute_ner_metrics`' ``overall_*`` on the same
    tags (tests check it); this path avoids building tag strings word by word, which is
    what makes per-evaluation scoring of a 315-category corpus cheap.
    """
    gold, pred = np.asarray(gold, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    sentence_ids = np.asarray(sentence_ids)
    if not gold.shape == pred.shape == sentence_ids.shape or gold.ndim != 1:
        raise ValueError(f"gold {gold.shape}, pred {pred.shape} and sentence_ids {sentence_ids.shape} must be "
                         "flat arrays with one entry per word.")
    prefix, types, _ = iob2_scheme(label_names)
    (gs, ge, gt), (ps, pe, pt) = (extract_entities(ids, sentence_ids, prefix, types) for ids in (gold, pred))
    # entities of one sequence never overlap, so a start position identifies at most one per side
    _, gi, pi = np.intersect1d(gs, ps, assume_unique=True, return_indices=True)
    tp = int(np.count_nonzero((ge[gi] == pe[pi]) & (gt[gi] == pt[pi])))
    n_gold, n_pred = len(gs), len(ps)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "accuracy": float((gold == pred).mean()) if len(gold) else 0.0,
            "n_gold_entities": n_gold, "n_pred_entities": n_pred}


def argmax_logits(logits: Any, labels: Any) -> torch.Tensor:
    """``preprocess_logits_for_metrics``: keep label ids, not (rows x tokens x labels) logits, per batch."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)


def make_compute_metrics(example_index: Sequence[int], label_names: Sequence[str]) -> Callable[[Any], dict]:
    """``compute_metrics`` for validation rows from :func:`crossner_hf.data.tokenization.prepare_split`.

    Those rows label exactly one position per word (its first sub-word, in the window that
    owns it) and keep a sentence's windows adjacent and in order, so ``labels != -100``
    picks every word once, in sentence order; ``example_index`` gives each row's sentence.
    """
    example_index = np.asarray(example_index, dtype=np.int64)

    def compute_metrics(eval_pred) -> dict[str, float]:
        preds = eval_pred.predictions[0] if isinstance(eval_pred.predictions, tuple) else eval_pred.predictions
        labels = np.asarray(eval_pred.label_ids)
        if labels.shape[0] != len(example_index):
            raise ValueError(f"Got {labels.shape[0]} validation rows, expected {len(example_index)}.")
        mask = labels != IGNORE_INDEX
        sentences = np.repeat(example_index, mask.sum(axis=1))
        return entity_scores(labels[mask], np.asarray(preds)[mask], sentences, label_names)

    return compute_metrics
