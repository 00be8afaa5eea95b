"""The numbers of the evaluation report, computed from gold and predicted tags (no HTML here).

Everything is entity-level in the conlleval reading (:func:`crossner_hf.data.entities.entity_spans`),
so the overall figures equal :func:`crossner_hf.evaluation.metrics.compute_ner_metrics`. Confidence
intervals are percentile bootstraps over sentences (``n_boot`` resamples, seeded),
computed from per-sentence true-positive / predicted / gold counts with NumPy, so 1,000
resamples of a 651-sentence split take milliseconds.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from crossner_hf.extras import require
from crossner_hf.evaluation.hierarchy import (MAX_TYPES, NO_ENTITY, OTHER_TYPES, coarse_type, entity_confusion,
                                              has_hierarchy, to_coarse_tags)
from crossner_hf.data.entities import entity_spans



def _entities(tags: Sequence[str]) -> frozenset[tuple[str, int, int]]:
    return _sentence_entities(tuple(tags))


@functools.lru_cache(maxsize=1 << 16)
def _sentence_entities(tags: tuple[str, ...]) -> frozenset[tuple[str, int, int]]:
    # a report scores the same sentences some twenty times (overall, per type, per bucket): each tag sequence's
    # entities are extracted once (a bounded cache: 65,536 sentences)
    return frozenset(entity_spans(tags))


def sentence_counts(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], keep=None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sentence: true positives, predicted and gold entities (``keep(entity, sentence)`` filters)."""
    tp, n_pred, n_gold = (np.zeros(len(gold), dtype=np.int64) for _ in range(3))
    for s, (g, p) in enumerate(zip(gold, pred)):
        ge, pe = _entities(g), _entities(p)
        if keep is not None:
            ge = {e for e in ge if keep(e, s, "gold")}
            pe = {e for e in pe if keep(e, s, "pred")}
        tp[s], n_pred[s], n_gold[s] = len(ge & pe), len(pe), len(ge)
    return tp, n_pred, n_gold


def prf(tp: float, n_pred: float, n_gold: float) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def bootstrap_f1(
    tp: np.ndarray, n_pred: np.ndarray, n_gold: np.ndarray, *, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of F1 when sentences are resampled with replacement."""
    if len(tp) == 0:
        return 0.0, 0.0
    lo, hi = np.percentile(resampled_f1([(tp, n_pred, n_gold)], n_boot=n_boot, seed=seed), [2.5, 97.5])
    return float(lo), float(hi)


def resampled_f1(counts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], *, n_boot: int = 1000,
                 seed: int = 0) -> np.ndarray:
    """``(n_boot,)``: F1 of each resample of the sentences (drawn with replacement), averaged over the models whose
    per-sentence ``(tp, n_pred, n_gold)`` are given; the same ``seed`` and sentence count draw the same resamples,
    which pairs two calls (the ``adapt`` bootstrap between two methods)."""
    n = len(counts[0][0])
    rng = np.random.default_rng(seed)
    f1 = np.zeros(n_boot)
    # a block of resamples at a time, so memory holds about RESAMPLE_BLOCK indices whatever n_boot x sentences is;
    # whole rows drawn in order are the same draws as one (n_boot, n) array
    step = max(1, RESAMPLE_BLOCK // max(n, 1))
    for start in range(0, n_boot, step):
        rows = min(step, n_boot - start)
        idx = rng.integers(0, n, size=(rows, n))
        for tp, n_pred, n_gold in counts:
            t, p, g = tp[idx].sum(1), n_pred[idx].sum(1), n_gold[idx].sum(1)
            prec = np.divide(t, p, out=np.zeros(rows), where=p > 0)
            rec = np.divide(t, g, out=np.zeros(rows), where=g > 0)
            f1[start:start + rows] += np.divide(2 * prec * rec, prec + rec, out=np.zeros(rows),
                                                where=(prec + rec) > 0)
    return f1 / len(counts)


RESAMPLE_BLOCK = 1 << 20
"""Sentence indices drawn at once by :func:`resampled_f1` (8 MB): its memory is flat in ``n_boot x sentences``."""


def scores_with_ci(gold, pred, keep=None, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    tp, n_pred, n_gold = sentence_counts(gold, pred, keep)
    p, r, f = prf(tp.sum(), n_pred.sum(), n_gold.sum())
    lo, hi = bootstrap_f1(tp, n_pred, n_gold, n_boot=n_boot, seed=seed)
    return {"precision": p, "recall": r, "f1": f, "f1_ci": (lo, hi), "support": int(n_gold.sum()),
            "predicted": int(n_pred.sum()), "tp": int(tp.sum())}


def top_types(*tag_sets: Sequence[Sequence[str]], top: int = MAX_TYPES) -> set[str] | None:
    """The ``top`` types of most entities over ``tag_sets`` (gold, predictions, ...), or ``None`` when there are
    at most ``top + 1`` (nothing worth folding)."""
    frequency = Counter(e[0] for tag_set in tag_sets for tags in tag_set for e in _entities(tags))
    if len(frequency) <= top + 1:
        return None
    return set(sorted(frequency, key=lambda t: (-frequency[t], t))[:top])


def per_type_scores(gold, pred, *, n_boot: int = 1000, seed: int = 0,
                    kept: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """Scores with intervals for every type found in gold or predictions (seqeval's type set); with ``kept``
    (:func:`top_types`), for those types, the others pooled in one :data:`OTHER_TYPES` row (a table, and the time
    its intervals take, bounded whatever the number of types)."""
    types = sorted({e[0] for tags in (*gold, *pred) for e in _entities(tags)})
    shown = types if kept is None else [t for t in types if t in kept]
    out = {t: scores_with_ci(gold, pred, lambda e, s, side, t=t: e[0] == t, n_boot=n_boot, seed=seed)
           for t in shown}
    if len(shown) < len(types):
        out[OTHER_TYPES] = scores_with_ci(gold, pred, lambda e, s, side: e[0] not in kept, n_boot=n_boot, seed=seed)
    return out


def macro_scores(gold, pred) -> dict[str, float]:
    """Precision, recall and F1 averaged over every type (no interval): one pass, however many types."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for g, p in zip(gold, pred):
        ge, pe = _entities(g), _entities(p)
        for e in ge & pe:
            counts[e[0]][0] += 1
        for e in pe:
            counts[e[0]][1] += 1
        for e in ge:
            counts[e[0]][2] += 1
    scores = [prf(*c) for c in counts.values()]
    return {k: (sum(s[i] for s in scores) / len(scores) if scores else 0.0)
            for i, k in enumerate(("precision", "recall", "f1"))}


def nervaluate_schemes(gold, pred) -> dict[str, dict[str, Any]]:
    """The four SemEval-2013 schemes (strict, exact, partial, type) computed by ``nervaluate``."""
    Evaluator = require("nervaluate", "report").Evaluator

    tags = sorted({e[0] for tags in list(gold) + list(pred) for e in _entities(tags)})
    if not tags:
        return {}
    evaluator = Evaluator([list(g) for g in gold], [list(p) for p in pred], tags=tags, loader="list")
    # the overall figures only, each sentence once: Evaluator.evaluate() also scores every type alone, sentence by
    # sentence, which takes minutes for thousands of types; the sums below are its own merge of the overall ones
    overall: dict[str, Any] = {}
    for index, (true_doc, pred_doc) in enumerate(zip(evaluator.true, evaluator.pred)):
        for name, strategy in evaluator.strategies.items():
            result, _ = strategy.evaluate(true_doc, pred_doc, tags, index)
            if name not in overall:
                overall[name] = result
                continue
            for count in ("correct", "incorrect", "partial", "missed", "spurious"):
                setattr(overall[name], count, getattr(overall[name], count) + getattr(result, count))
    for name, result in overall.items():
        result.compute_metrics(partial_or_type=name in ("partial", "ent_type"))
    names = {"strict": "strict", "exact": "exact boundary", "partial": "partial", "ent_type": "type"}
    out = {}
    for key, label in names.items():
        r = overall[key]
        out[label] = {k: getattr(r, k) for k in ("correct", "incorrect", "partial", "missed", "spurious",
                                                  "precision", "recall", "f1")}
    return out


def error_sentences(tokens, gold, pred) -> list[dict[str, Any]]:
    """Every sentence with an error: words, both tag rows, and per-word error marks on each row."""
    confusion = entity_confusion(gold, pred)
    by_sentence: dict[int, list] = defaultdict(list)
    for item in confusion.items:
        if item.kind != "correct":
            by_sentence[item.sentence].append(item)
    out = []
    for s in sorted(by_sentence):
        n = len(tokens[s])
        marks = {"gold": [None] * n, "pred": [None] * n}
        kinds, types = set(), set()
        for item in by_sentence[s]:
            kinds.add(item.kind)
            types.update(t for t in (item.gold_type, item.pred_type) if t != NO_ENTITY)
            title = f"{item.kind}: gold: {item.gold_type} · predicted: {item.pred_type}"
            for row, span in (("gold", item.gold_span), ("pred", item.pred_span)):
                if span is not None:
                    for w in range(span[0], span[1] + 1):
                        marks[row][w] = (item.kind, title)
        out.append({"index": s, "tokens": list(tokens[s]), "gold": list(gold[s]), "pred": list(pred[s]),
                    "marks": marks, "kinds": sorted(kinds), "types": sorted(types)})
    return out


def hierarchy_scores(gold, pred, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    confusion = entity_confusion(gold, pred)
    if not has_hierarchy(confusion.types()):  # a user's own types: coarse = fine, nothing to say
        return {"skipped": True, "fine": scores_with_ci(gold, pred, n_boot=n_boot, seed=seed),
                "type_errors": len(confusion.type_errors())}
    coarse_gold = [to_coarse_tags(g) for g in gold]
    coarse_pred = [to_coarse_tags(p) for p in pred]
    errors = confusion.type_errors()
    near = [e for e in errors if coarse_type(e.gold_type) == coarse_type(e.pred_type)]
    return {
        "skipped": False,
        "fine": scores_with_ci(gold, pred, n_boot=n_boot, seed=seed),
        "coarse": scores_with_ci(coarse_gold, coarse_pred, n_boot=n_boot, seed=seed),
        "type_errors": len(errors), "near_misses": len(near),
        "near_miss_share": (len(near) / len(errors)) if errors else None,
    }


LENGTH_BUCKETS = ((1, 1, "1 word"), (2, 2, "2 words"), (3, 3, "3 words"), (4, 10**9, "4+ words"))
SENTENCE_BUCKETS = ((1, 10, "1-10 words"), (11, 20, "11-20"), (21, 40, "21-40"), (41, 10**9, "41+"))


def buckets(tokens, gold, pred, train_surfaces: set[str] | None, *, n_boot: int = 1000, seed: int = 0):
    """F1 with intervals by entity length, seen/unseen surface in train, and sentence length."""
    out: dict[str, dict[str, Any]] = {"entity length": {}, "sentence length": {}}
    for lo, hi, name in LENGTH_BUCKETS:
        out["entity length"][name] = scores_with_ci(
            gold, pred, lambda e, s, side, lo=lo, hi=hi: lo <= e[2] - e[1] + 1 <= hi, n_boot=n_boot, seed=seed)
    for lo, hi, name in SENTENCE_BUCKETS:
        out["sentence length"][name] = scores_with_ci(
            gold, pred, lambda e, s, side, lo=lo, hi=hi: lo <= len(tokens[s]) <= hi, n_boot=n_boot, seed=seed)
    if train_surfaces is not None:
        out["in the training split"] = {}
        for name, want in (("seen", True), ("unseen", False)):
            out["in the training split"][name] = scores_with_ci(
                gold, pred,
                lambda e, s, side, want=want: (" ".join(tokens[s][e[1]:e[2] + 1]) in train_surfaces) == want,
                n_boot=n_boot, seed=seed)
    return out


def entity_surfaces(tokens, tags) -> set[str]:
    return {" ".join(words[a:b + 1]) for words, t in zip(tokens, tags) for _, a, b in _entities(t)}


def suspect_labels(sentences: Sequence[tuple[Sequence[str], Sequence[str], str]]) -> list[dict[str, Any]]:
    """Groups of identical word sequences labelled differently: ``(tokens, tags, where)`` in, groups out."""
    seen: dict[tuple[str, ...], list[tuple[tuple[str, ...], str]]] = defaultdict(list)
    for words, tags, where in sentences:
        seen[tuple(words)].append((tuple(tags), where))
    groups = []
    for words, labelled in seen.items():
        if len({tags for tags, _ in labelled}) > 1:
            groups.append({"tokens": list(words), "versions": [{"tags": list(t), "where": w} for t, w in labelled]})
    return groups


def compare(gold, pred, other, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Per-type F1 of two prediction sets and the sentences one gets right and the other not."""
    kept = top_types(gold, pred, other)  # one set for both: a row compares the same types
    base = per_type_scores(gold, pred, n_boot=n_boot, seed=seed, kept=kept)
    new = per_type_scores(gold, other, n_boot=n_boot, seed=seed, kept=kept)
    types = sorted(set(base) | set(new))
    rows = {t: {"f1": base.get(t, {}).get("f1", 0.0), "other_f1": new.get(t, {}).get("f1", 0.0)} for t in types}
    for r in rows.values():
        r["delta"] = r["other_f1"] - r["f1"]
    right = [_entities(g) == _entities(p) for g, p in zip(gold, pred)]
    right_other = [_entities(g) == _entities(p) for g, p in zip(gold, other)]
    return {
        "per_type": rows,
        "fixed": [s for s, (a, b) in enumerate(zip(right, right_other)) if not a and b],
        "broken": [s for s, (a, b) in enumerate(zip(right, right_other)) if a and not b],
    }


def model_index_yaml(scores: dict[str, Any], *, model_name: str, config: str, split: str, decoding: str) -> str:
    """``model-index`` YAML (token-classification) for the page's overall scores, via huggingface_hub."""
    from huggingface_hub import EvalResult, ModelCardData

    from crossner_hf.data.labels import CONFIGS

    crossner = config in CONFIGS  # a user's own data is named as given, never as CrossNER
    results = [
        EvalResult(task_type="token-classification", task_name="Named Entity Recognition",
                   dataset_type="crossner" if crossner else config,
                   dataset_name=f"CrossNER {config}" if crossner else config, dataset_config=config, dataset_split=split,
                   metric_type=m, metric_value=round(100 * float(scores[m]), 2), metric_config=decoding)
        # float(): numpy floats would reach the YAML dumper as !!python/object tags, not numbers
        for m in ("precision", "recall", "f1")
    ]
    data = ModelCardData(model_name=model_name, eval_results=results).to_yaml()
    return data[data.index("model-index:"):]
