"""One offline HTML page that shows where a NER model errs: ``build_report`` / ``write_report``.

Sections: overall and per-type scores with bootstrap 95% intervals (micro and macro; beyond
:data:`~crossner_hf.evaluation.hierarchy.MAX_TYPES` types the less frequent ones share one "other types" row
and column of the per-type table and the matrix, and the page says so); the
four SemEval-2013 schemes from ``nervaluate``; an entity-level confusion matrix with a
"no entity" row and column whose cells link to their examples; every sentence with an
error, gold and prediction aligned, each error marked by kind with a pattern as well as a
colour and a tooltip, filterable by kind and type; fine- and coarse-level scores and the
share of type errors inside one branch of :data:`crossner_hf.evaluation.hierarchy.COARSE_TYPES`;
buckets by entity length, seen/unseen in train and sentence length; a comparison with a
second model; sentences labelled differently in different places of the data; and
ready-to-paste ``model-index`` YAML. Styles, script and data are inlined; the page reads
fine with JavaScript off (filters are an enhancement) and carries stable ``data-testid``s.

Example:
    >>> html = build_report([["B-person", "O"]], [["B-person", "O"]], tokens=[["Ann", "sang"]])
    >>> 'data-testid="overall-f1"' in html
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from crossner_hf.evaluation.hierarchy import COARSE_TYPES, ERROR_KINDS, NO_ENTITY, OTHER_TYPES, entity_confusion
from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.evaluation.report import analysis


def build_report(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    tokens: Sequence[Sequence[str]],
    train_tokens: Sequence[Sequence[str]] | None = None,
    train_tags: Sequence[Sequence[str]] | None = None,
    compare_pred: Sequence[Sequence[str]] | None = None,
    compare_name: str = "other model",
    suspect_sentences: Sequence[tuple[Sequence[str], Sequence[str], str]] | None = None,
    model_name: str = "model",
    config: str = "custom",
    split: str = "test",
    decoding: str = "bio-viterbi",
    n_boot: int = 1000,
    seed: int = 0,
) -> str:
    """The report page as one HTML string (see the module docstring)."""
    import jinja2

    if not len(gold) == len(pred) == len(tokens):
        raise ValueError(f"build_report: {len(tokens)} sentences, {len(gold)} gold and {len(pred)} predicted rows.")
    if compare_pred is not None and len(compare_pred) != len(gold):
        raise ValueError(f"build_report: compare_pred has {len(compare_pred)} rows for {len(gold)} sentences.")
    overall = analysis.scores_with_ci(gold, pred, n_boot=n_boot, seed=seed)
    seqeval = compute_ner_metrics(gold, pred)
    # a page bounded whatever the number of types: the top types one by one, the rest folded into "other types"
    per_type = analysis.per_type_scores(gold, pred, n_boot=n_boot, seed=seed, kept=analysis.top_types(gold, pred))
    confusion = entity_confusion(gold, pred).capped()
    cells = confusion.cells()
    order = {name: i for i, name in enumerate(confusion.types())}
    train_surfaces = (analysis.entity_surfaces(train_tokens, train_tags)
                      if train_tokens is not None and train_tags is not None else None)
    data: dict[str, Any] = {
        "title": f"NER evaluation: {model_name} on {config} {split}",
        "model_name": model_name, "config": config, "split": split, "decoding": decoding,
        "n_sentences": len(gold), "n_boot": n_boot,
        "overall": overall,
        "accuracy": seqeval["overall_accuracy"],
        "macro": analysis.macro_scores(gold, pred),  # over every type, the folded ones too
        "per_type": per_type, "folded": confusion.folded, "OTHER_TYPES": OTHER_TYPES,
        "schemes": analysis.nervaluate_schemes(gold, pred),
        "confusion_types": confusion.types(),
        "confusion": {f"{g}|{p}": n for (g, p), n in confusion.counts.items()},
        "row_pct": {f"{g}|{p}": v for (g, p), v in confusion.row_percentages().items()},
        # every cell holding an error links to its examples (boundary errors of one type sit on the diagonal),
        # listed in the matrix's reading order (row by row) so the lists follow the table
        "cells": {f"{g}|{p}": [{"sentence": i.sentence, "kind": i.kind} for i in items if i.kind != "correct"]
                  for (g, p), items in sorted(cells.items(), key=lambda kv: _matrix_position(kv[0], order))
                  if any(i.kind != "correct" for i in items)},
        "errors": _fold_types(analysis.error_sentences(tokens, gold, pred), set(confusion.folded)),
        "kinds": ERROR_KINDS,
        "hierarchy": analysis.hierarchy_scores(gold, pred, n_boot=n_boot, seed=seed),
        "coarse_map": sorted(COARSE_TYPES.items(), key=lambda kv: (kv[1], kv[0])),
        "buckets": analysis.buckets(tokens, gold, pred, train_surfaces, n_boot=n_boot, seed=seed),
        "compare": (analysis.compare(gold, pred, compare_pred, n_boot=n_boot, seed=seed)
                    if compare_pred is not None else None),
        "compare_name": compare_name,
        "suspects": analysis.suspect_labels(suspect_sentences) if suspect_sentences is not None else None,
        "model_index": analysis.model_index_yaml(overall, model_name=model_name, config=config, split=split,
                                                 decoding=decoding),
        "tokens": tokens, "gold": gold, "pred": pred, "NO_ENTITY": NO_ENTITY,
    }
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.2f}"
    env.filters["slug"] = lambda v: "".join(c if c.isalnum() else "-" for c in str(v))
    template = env.from_string(_template())
    return template.render(**data)


def write_report(path: str | Path, gold, pred, **kwargs: Any) -> Path:
    """Write :func:`build_report`'s page to ``path``; returns the path."""
    from crossner_hf.outputs import atomic_output

    page = build_report(gold, pred, **kwargs)
    with atomic_output(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return Path(path)


def _fold_types(errors: list[dict[str, Any]], folded: set[str]) -> list[dict[str, Any]]:
    """The error sentences with their folded types named :data:`OTHER_TYPES`, as the type filter lists them."""
    for error in errors if folded else ():
        error["types"] = sorted({OTHER_TYPES if t in folded else t for t in error["types"]})
    return errors


def _matrix_position(cell: tuple[str, str], order: dict[str, int]) -> tuple[int, int]:
    """(row, column) of a (gold, predicted) cell in the confusion table."""
    gold, predicted = cell
    return order.get(gold, len(order)), order.get(predicted, len(order))


def _template() -> str:
    try:
        return resources.files("crossner_hf.evaluation.report").joinpath("templates/report.html.j2").read_text("utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return (Path(__file__).parent / "templates" / "report.html.j2").read_text("utf-8")


__all__ = ["build_report", "write_report"]
