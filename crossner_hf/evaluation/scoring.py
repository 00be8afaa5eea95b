"""A tagger scored on a labeled split, in one call: :func:`evaluate_tagger` -> :class:`Evaluation`.

The numbers are the ones ``crossner-hf predict --conll`` / ``--dataset_dir`` and ``report`` print
(:meth:`Evaluation.summary`) and ``train`` records (:func:`compute_ner_metrics`,
seqeval's strict entity matching through conlleval); the same object writes the HTML report ``crossner-hf
report`` writes and gives the confusion table ``crossner-hf confusion`` writes, so Python and the commands
agree to the digit. Any :class:`~crossner_hf.inference.tagger.Tagger` (PyTorch, ONNX, RNN) and any target
:func:`~crossner_hf.data.target.load_target` opens (a CrossNER domain, your JSON Lines / CSV / Parquet / CoNLL
files, a Hub id, a ``DatasetDict``) go in.

Example:
    >>> from crossner_hf import Tagger, evaluate_tagger, load_target                      # doctest: +SKIP
    >>> scores = evaluate_tagger(Tagger.from_pretrained("out"), load_target("my_jsonl"))   # doctest: +SKIP
    >>> scores.f1, scores.per_type["investigator"]["f1"]                                   # doctest: +SKIP
    >>> scores.write_report("mine.html")                                                   # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.results import format_per_type_table

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Evaluation:
    """Gold and predicted tags of one split, with their scores (fractions, not percent)."""

    dataset: str
    split: str
    tokens: list[list[str]]
    gold: list[list[str]]
    pred: list[list[str]]
    metrics: dict[str, Any] = field(repr=False)
    decoding: str = "bio-viterbi"
    model_name: str = "model"
    target: Any = field(default=None, repr=False, compare=False)

    @property
    def f1(self) -> float:
        return self.metrics["overall_f1"]

    @property
    def precision(self) -> float:
        return self.metrics["overall_precision"]

    @property
    def recall(self) -> float:
        return self.metrics["overall_recall"]

    @property
    def per_type(self) -> dict[str, dict[str, float]]:
        """``{type: {"precision", "recall", "f1", "support"}}`` (conlleval's, as ``compute_ner_metrics`` gives them)."""
        return self.metrics["per_type"]

    def format(self) -> str:
        """The per-type table of :meth:`summary`."""
        return format_per_type_table(self.metrics)

    def summary(self) -> str:
        """The scores ``predict --conll`` / ``--dataset_dir`` and ``report`` print: one overall line (percent,
        conlleval) and the per-type table."""
        return (f"{self.dataset} {self.split}: {len(self.gold)} sentences; precision {100 * self.precision:.2f}, "
                f"recall {100 * self.recall:.2f}, F1 {100 * self.f1:.2f} (conlleval)\n{self.format()}")

    def confusion(self) -> Any:
        """The entity-level :class:`~crossner_hf.evaluation.entity_analysis.ConfusionTable` (``confusion``'s)."""
        from crossner_hf.evaluation.entity_analysis import confusion_table

        return confusion_table(self.gold, self.pred)

    def write_report(self, path: str | Path, *, compare: Evaluation | None = None, n_boot: int = 1000,
                     seed: int = 0) -> Path:
        """The offline HTML report (``crossner-hf report``'s page) of this evaluation, ``compare`` beside it."""
        from crossner_hf.evaluation.report import write_report

        data = self.target.dataset if self.target is not None else None
        names = self.target.labels if self.target is not None else None

        def tags(split: str) -> list[list[str]]:
            return [[names[i] for i in row] for row in data[split]["ner_tags"]]

        other_split = data is not None and self.split != "train"
        suspects = ([(words, t, f"{split} {i}") for split in data for i, (words, t) in
                     enumerate(zip(data[split]["tokens"], tags(split)))] if data is not None else None)
        return write_report(
            path, self.gold, self.pred, tokens=self.tokens,
            train_tokens=list(data["train"]["tokens"]) if other_split else None,
            train_tags=tags("train") if other_split else None,
            compare_pred=compare.pred if compare is not None else None,
            compare_name=compare.model_name if compare is not None else "other model",
            suspect_sentences=suspects, model_name=self.model_name, config=self.dataset, split=self.split,
            decoding=self.decoding, n_boot=n_boot, seed=seed,
        )


def evaluate_tagger(tagger: Any, target: Any, split: str = "test", *, batch_size: int = 64,
                    model_name: str | None = None) -> Evaluation:
    """Tag ``split`` of ``target`` (a :class:`~crossner_hf.data.target.TargetData`) with ``tagger`` (a
    :class:`~crossner_hf.inference.tagger.Tagger`, or a folder to open as one) and score it."""
    if isinstance(tagger, (str, Path)):
        from crossner_hf.inference.tagger import Tagger

        model_name = model_name or Path(tagger).name
        tagger = Tagger.from_pretrained(tagger)
    if split not in SPLITS:
        raise ValueError(f"--split {split!r}: choose one of {', '.join(SPLITS)}.")
    rows = target[split]
    names = list(target.labels)
    tokens = [list(t) for t in rows["tokens"]]
    gold = [[names[i] for i in row] for row in rows["ner_tags"]]
    pred = tagger.tag(tokens, batch_size=batch_size, progress=len(tokens) > 200)
    return Evaluation(target.name, split, tokens, gold, pred, compute_ner_metrics(gold, pred),
                      decoding=getattr(tagger, "decoding", "bio-viterbi"), model_name=model_name or "model",
                      target=target)
