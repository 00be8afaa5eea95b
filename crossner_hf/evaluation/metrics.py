"""Entity-level NER evaluation that matches the CrossNER paper's numbers.

The paper scores with ``conlleval``: micro precision/recall/F1 over entities, where an
``I-x`` after ``O`` (or after a different type) opens a new entity. ``seqeval`` in its
default mode follows exactly that convention, so every figure here comes from
``seqeval`` rather than from a re-implementation. Strict IOB2 figures (an ``I-x`` that
does not continue a ``B-x``/``I-x`` run is not an entity) are reported alongside under
``strict_`` keys, because they are what most Hub model cards quote.

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

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any


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


def _conlleval_scores(
    gold: list[list[str]], pred: list[list[str]], types: list[str]
) -> tuple[dict[str, float], dict[str, dict[str, float | int]]]:
    """Micro P/R/F1 and per-type P/R/F1/support, seqeval default (conlleval) mode.

    ``types`` must be the sorted entity types of gold and pred: seqeval orders its
    per-type arrays that way.
    """
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

    p, r, f, _ = precision_recall_fscore_support(gold, pred, average="micro", zero_division=0)
    ps, rs, fs, supports = precision_recall_fscore_support(gold, pred, average=None, zero_division=0)
    per_type = {
        t: {
            "precision": float(ps[i]),
            "recall": float(rs[i]),
            "f1": float(fs[i]),
            "support": int(supports[i]),
        }
        for i, t in enumerate(types)
    }
    return {"precision": float(p), "recall": float(r), "f1": float(f)}, per_type


def _strict_scores(
    gold: list[list[str]], pred: list[list[str]]
) -> tuple[dict[str, float], dict[str, dict[str, float | int]]]:
    """The same figures in seqeval's strict IOB2 mode.

    ``classification_report`` is used because in strict mode it extracts the entities
    once for all averages (the strict extraction is the slow part).
    """
    from seqeval.metrics.v1 import classification_report
    from seqeval.scheme import IOB2

    with warnings.catch_warnings():
        # With no strict entity at all, the macro average is a mean of nothing; it is unused.
        warnings.simplefilter("ignore", RuntimeWarning)
        report = classification_report(gold, pred, output_dict=True, zero_division=0, scheme=IOB2)
    averages = {"micro avg", "macro avg", "weighted avg"}
    per_type = {
        t: {
            "precision": float(v["precision"]),
            "recall": float(v["recall"]),
            "f1": float(v["f1-score"]),
            "support": int(v["support"]),
        }
        for t, v in report.items()
        if t not in averages
    }
    micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0})
    overall = {
        "precision": float(micro["precision"]),
        "recall": float(micro["recall"]),
        "f1": float(micro["f1-score"]),
    }
    return overall, per_type


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
    from seqeval.metrics import accuracy_score
    from seqeval.metrics.sequence_labeling import get_entities

    gold_l, pred_l = _check_inputs(gold, pred)
    gold_entities, pred_entities = get_entities(gold_l), get_entities(pred_l)
    types = sorted({e[0] for e in gold_entities} | {e[0] for e in pred_entities})
    overall, per_type = _conlleval_scores(gold_l, pred_l, types)
    strict_overall, strict_per_type = _strict_scores(gold_l, pred_l)
    return {
        "overall_precision": overall["precision"],
        "overall_recall": overall["recall"],
        "overall_f1": overall["f1"],
        "overall_accuracy": float(accuracy_score(gold_l, pred_l)),
        "per_type": per_type,
        "strict_overall_precision": strict_overall["precision"],
        "strict_overall_recall": strict_overall["recall"],
        "strict_overall_f1": strict_overall["f1"],
        "strict_per_type": strict_per_type,
        "n_sentences": len(gold_l),
        "n_tokens": sum(len(s) for s in gold_l),
        "n_gold_entities": len(gold_entities),
        "n_pred_entities": len(pred_entities),
    }


def format_per_type_table(metrics: dict[str, Any], *, strict: bool = False) -> str:
    """A plain-text table of per-type precision/recall/F1 (percent, 2 decimals) and support.

    Rows are sorted by type name and followed by an ``overall`` (micro) row whose support
    is the total number of gold entities. ``strict=True`` tabulates the strict IOB2 figures.

    Example:
        >>> m = compute_ner_metrics([["B-person", "O"]], [["B-person", "O"]])
        >>> print(format_per_type_table(m))
        type     precision  recall      f1  support
        person      100.00  100.00  100.00        1
        overall     100.00  100.00  100.00        1
    """
    prefix = "strict_" if strict else ""
    try:
        per_type = metrics[f"{prefix}per_type"]
        overall = [metrics[f"{prefix}overall_{k}"] for k in ("precision", "recall", "f1")]
    except KeyError as err:
        raise ValueError(
            f"metrics lacks the key {err.args[0]!r}; pass the dict returned by compute_ner_metrics."
        ) from None
    rows = [
        (t, per_type[t]["precision"], per_type[t]["recall"], per_type[t]["f1"], per_type[t]["support"])
        for t in sorted(per_type)
    ]
    rows.append(("overall", *overall, sum(v["support"] for v in per_type.values())))
    width = max(len("overall"), *(len(r[0]) for r in rows))
    header = f"{'type':<{width}}  {'precision':>9}  {'recall':>6}  {'f1':>6}  {'support':>7}"
    lines = [header]
    for name, p, r, f, s in rows:
        lines.append(f"{name:<{width}}  {p * 100:>9.2f}  {r * 100:>6.2f}  {f * 100:>6.2f}  {s:>7d}")
    return "\n".join(lines)
