"""``evaluate`` module for CrossNER's entity-level NER metric.

It wraps :func:`crossner_hf.evaluation.metrics.compute_ner_metrics`, so ``evaluate`` and the rest
of ``crossner_hf`` report identical numbers: conlleval-convention micro precision /
recall / F1 (seqeval default mode, as in the CrossNER paper), token accuracy, per-type
scores, and strict IOB2 figures under ``strict_`` keys.

``evaluate`` copies this file into its module cache before importing it, so the script
imports the installed ``crossner_hf`` package instead of relative files.

Example (offline; no Hub access is needed for a local script):
    >>> import evaluate
    >>> from crossner_hf.evaluation.metrics import EVALUATE_MODULE_PATH
    >>> metric = evaluate.load(EVALUATE_MODULE_PATH)
    >>> metric.compute(predictions=[["B-person", "O"]], references=[["B-person", "O"]])["overall_f1"]
    1.0
"""

import datasets
import evaluate

from crossner_hf.evaluation.metrics import compute_ner_metrics

from crossner_hf.citations import CITATIONS

_CITATION = CITATIONS["crossner"] + """
@misc{seqeval,
  title={{seqeval}: A Python framework for sequence labeling evaluation},
  author={Hiroki Nakayama},
  year={2018},
  url={https://github.com/chakki-works/seqeval}
}
"""

_DESCRIPTION = """\
Entity-level NER evaluation as used by the CrossNER paper: micro precision, recall and
F1 over entities in the conlleval convention (an I- tag after O, or after another type,
opens a new entity), computed with seqeval's default mode; token accuracy; per-type
precision/recall/F1/support; and strict IOB2 scores (seqeval mode="strict") under
`strict_` keys.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of predicted tag sequences, one list of strings per sentence.
    references: list of gold tag sequences, one list of strings per sentence, with the
        same length as the matching prediction.
Returns:
    overall_precision, overall_recall, overall_f1, overall_accuracy: floats in [0, 1].
    per_type: {type: {"precision", "recall", "f1", "support"}}.
    strict_overall_precision, strict_overall_recall, strict_overall_f1, strict_per_type.
    n_sentences, n_tokens, n_gold_entities, n_pred_entities.
Examples:
    >>> from crossner_hf.evaluation.metrics import EVALUATE_MODULE_PATH
    >>> metric = evaluate.load(EVALUATE_MODULE_PATH)
    >>> out = metric.compute(predictions=[["O", "I-person"]], references=[["O", "B-person"]])
    >>> out["overall_f1"], out["strict_overall_f1"]
    (1.0, 0.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SeqevalCrossner(evaluate.Metric):
    """CrossNER's conlleval-convention entity metric (with strict IOB2 figures alongside)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string", id="label"), id="sequence"),
                    "references": datasets.Sequence(datasets.Value("string", id="label"), id="sequence"),
                }
            ),
            reference_urls=["https://github.com/zliucr/CrossNER", "https://github.com/chakki-works/seqeval"],
        )

    def _compute(self, predictions, references):
        return compute_ner_metrics(references, predictions)
