"""Entity-level validation scores of a large tagging corpus, in numpy: the IOB2 scheme of a label list, entities
of flat tag-id arrays, micro precision / recall / F1 (the conlleval convention, equal to
:func:`crossner_hf.evaluation.metrics.compute_ner_metrics`), and the ``Trainer`` hooks that use them (NER-BERT
pre-training scores 315 categories at every evaluation, where building tag strings word by word is slow).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from crossner_hf.data.tokenization import IGNORE_INDEX


def iob2_scheme(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per label id: prefix (0 = O, 1 = B, 2 = I) and type index; and the type names in first-seen order.

    Example:
        >>> prefix, types, type_names = iob2_scheme(["O", "B-person", "I-person", "B-city"])
        >>> prefix.tolist(), types.tolist(), type_names
        ([0, 1, 2, 1], [-1, 0, 0, 1], ['person', 'city'])
    """
    prefix = np.zeros(len(names), dtype=np.int8)
    types = np.full(len(names), -1, dtype=np.int64)
    type_names: list[str] = []
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        if name == "O":
            continue
        if len(name) < 3 or name[:2] not in ("B-", "I-"):
            raise ValueError(
                f"Label {name!r} is not IOB2: the tag feature's ClassLabel names must be 'O', 'B-<type>' or "
                "'I-<type>' (convert IOBES/BILOU data to IOB2 first)."
            )
        prefix[i] = 1 if name[0] == "B" else 2
        types[i] = index.setdefault(name[2:], len(index))
        if types[i] == len(type_names):
            type_names.append(name[2:])
    return prefix, types, type_names


def extract_entities(
    ids: np.ndarray, sentence_ids: np.ndarray, prefix: np.ndarray, types: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entities ``(starts, ends, types)`` (inclusive word positions) of a flat tag-id sequence.

    The conlleval reading that seqeval's default mode uses: an entity starts at ``B-x``, at
    an ``I-x`` after ``O``, after another type or at a sentence start, and continues
    over the ``I-x`` that follow. ``sentence_ids`` (one per word, equal within a
    sentence, consecutive words of a sentence adjacent) keeps entities inside sentences.
    """
    p, t = prefix[ids], types[ids]
    inside = p != 0
    new_sentence = np.ones(len(ids), dtype=bool)
    new_sentence[1:] = sentence_ids[1:] != sentence_ids[:-1]
    prev_inside = np.zeros(len(ids), dtype=bool)
    prev_inside[1:] = inside[:-1]
    prev_type = np.full(len(ids), -1, dtype=t.dtype)
    prev_type[1:] = t[:-1]
    start = inside & ((p == 1) | ~prev_inside | (prev_type != t) | new_sentence)
    # an entity ends where the next word does not continue it (every inside word either starts or continues one)
    continues_next = np.zeros(len(ids), dtype=bool)
    continues_next[:-1] = inside[1:] & ~start[1:]
    end = inside & ~continues_next
    starts, ends = np.flatnonzero(start), np.flatnonzero(end)
    return starts, ends, t[starts]


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
