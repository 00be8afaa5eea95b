"""Entity-level NER evaluation that matches the CrossNER paper's numbers.

The paper scores with ``conlleval``: micro precision/recall/F1 over entities, where an
``I-x`` after ``O`` (or after a different type) opens a new entity. ``seqeval`` in its
default mode follows exactly that convention. Entities are read once per corpus by
:func:`crossner_hf.data.entities.corpus_entities` and counted here with seqeval's own division, so every
figure equals seqeval's scorers to the last bit (``tests/test_metrics.py`` checks it on random tags). Strict
IOB2 figures (an ``I-x`` that does not continue a ``B-x``/``I-x`` run is not an entity) are reported
alongside under ``strict_`` keys, because they are what most Hub model cards quote.

The same metric ships as an ``evaluate`` module at :data:`EVALUATE_MODULE_PATH`.

Example:
    >>> gold = [["B-person", "I-person", "O", "B-location"]]
    >>> pred = [["B-person", "I-person", "O", "O"]]
    >>> m = compute_ner_metrics(gold, pred)
    >>> round(m["overall_precision"], 4), round(m["overall_recall"], 4)
    (1.0, 0.5)
    >>> m["per_type"]["location"]["support"]
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossner_hf.data.entities import corpus_entities


EVALUATE_MODULE_PATH: str = str(Path(__file__).resolve().parent / "seqeval_metric" / "seqeval_crossner.py")
"""Path of the ``evaluate`` module script: ``evaluate.load(EVALUATE_MODULE_PATH)`` works offline."""



def _check_inputs(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]
) -> tuple[list[list[str]], list[list[str]]]:
    """Turn both corpora into lists of lists (seqeval only flattens real lists) and validate them."""
    if len(gold) != len(pred):
        raise ValueError(
            f"gold has {len(gold)} sentences but pred has {len(pred)}; pass one predicted tag "
            "sequence per gold sentence, in the same order."
        )
    gold_l: list[list[str]] = []
    pred_l: list[list[str]] = []
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(
                f"Sentence {i}: gold has {len(g)} tags but pred has {len(p)}; every word needs "
                "exactly one predicted tag (use crossner_hf.inference.predict.predict_tags for word-level "
                "predictions)."
            )
        gold_l.append(list(g))
        pred_l.append(list(p))
    for name, corpus in (("gold", gold_l), ("pred", pred_l)):
        for i, sent in enumerate(corpus):
            for tag in sent:
                if not isinstance(tag, str):
                    raise ValueError(
                        f"{name} sentence {i} holds the non-string tag {tag!r}; convert label ids "
                        "to names first (e.g. with the model's id2label)."
                    )
    if not any(gold_l):
        raise ValueError("gold holds no tokens at all, so there is nothing to score; check the input corpus.")
    return gold_l, pred_l


def _scores(gold: set[tuple], pred: set[tuple], types: list[str]) -> tuple[dict[str, float], dict[str, dict]]:
    """Micro and per-type P/R/F1/support of two entity sets (tuples whose first item is the type).

    The arithmetic is seqeval's own (its ``_prf_divide`` and F-beta with beta 1, ``zero_division=0``), in the same
    numpy operations, so the figures equal seqeval's to the last bit (``tests/test_metrics.py`` checks it).
    """
    import numpy as np

    def prf(tp: np.ndarray, n_pred: np.ndarray, n_true: np.ndarray) -> tuple[np.ndarray, ...]:
        def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
            den = den.copy()
            mask = den == 0.0
            den[mask] = 1
            out = num / den
            out[mask] = 0.0
            return out

        precision, recall = divide(tp, n_pred), divide(tp, n_true)
        denom = precision + recall
        denom[denom == 0.0] = 1
        return precision, recall, 2 * precision * recall / denom

    counts = np.zeros((3, len(types)), dtype=np.int32)  # true positives, predicted, gold, per type
    index = {t: i for i, t in enumerate(types)}
    for entity in gold & pred:
        counts[0, index[entity[0]]] += 1
    for entity in pred:
        counts[1, index[entity[0]]] += 1
    for entity in gold:
        counts[2, index[entity[0]]] += 1
    p, r, f = prf(counts[0], counts[1], counts[2])
    per_type = {t: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(counts[2, i])}
                for i, t in enumerate(types)}
    mp, mr, mf = prf(*(np.array([row.sum()]) for row in counts))
    return {"precision": float(mp[0]), "recall": float(mr[0]), "f1": float(mf[0])}, per_type


def compute_ner_metrics(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Entity-level scores of ``pred`` against ``gold`` (both: one tag list per sentence).

    Returns fractions in ``[0, 1]``:

    - ``overall_precision``, ``overall_recall``, ``overall_f1``: micro-averaged over
      entities, conlleval convention (seqeval default mode), as in the CrossNER paper;
    - ``overall_accuracy``: token accuracy;
    - ``per_type``: ``{type: {"precision", "recall", "f1", "support"}}`` (support = number
      of gold entities of that type; a type only predicted has support 0), the paper's Table 4;
    - ``strict_overall_precision``/``_recall``/``_f1`` and ``strict_per_type``: the same
      under seqeval ``mode="strict", scheme=IOB2``;
    - ``n_sentences``, ``n_tokens``, ``n_gold_entities``, ``n_pred_entities`` (conlleval).

    Raises ``ValueError`` if the corpora differ in length (naming the sentence index and
    both lengths), if a tag is not a string, or if there is no token at all.
    """
    gold_l, pred_l = _check_inputs(gold, pred)
    # each corpus's entities are read once for both modes (seqeval's scorers re-extract them for every average,
    # which made scoring a random model's 650 test sentences take seconds)
    (gold_entities, gold_strict), (pred_entities, pred_strict) = corpus_entities(gold_l), corpus_entities(pred_l)
    overall, per_type = _scores(gold_entities, pred_entities, sorted({e[0] for e in gold_entities | pred_entities}))
    n_tokens = sum(len(s) for s in gold_l)
    strict_overall, strict_per_type = _scores(gold_strict, pred_strict,
                                              sorted({e[0] for e in gold_strict | pred_strict}))
    return {
        "overall_precision": overall["precision"],
        "overall_recall": overall["recall"],
        "overall_f1": overall["f1"],
        # seqeval's accuracy_score: correct tokens over all tokens
        "overall_accuracy": sum(g == p for gs, ps in zip(gold_l, pred_l) for g, p in zip(gs, ps)) / n_tokens,
        "per_type": per_type,
        "strict_overall_precision": strict_overall["precision"],
        "strict_overall_recall": strict_overall["recall"],
        "strict_overall_f1": strict_overall["f1"],
        "strict_per_type": strict_per_type,
        "n_sentences": len(gold_l),
        "n_tokens": n_tokens,
        "n_gold_entities": len(gold_entities),
        "n_pred_entities": len(pred_entities),
    }
