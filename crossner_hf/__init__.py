"""crossner_hf: cross-domain NER for the Hugging Face ecosystem.

The public names below are imported lazily so that ``import crossner_hf`` stays cheap
(no torch import until a model-facing name is used).
"""

from __future__ import annotations

from crossner_hf._lazy import lazy_attributes


from .labels import CONFIGS, DOMAINS, LABELS, MERGED_LABELS, SOURCE_DOMAIN

__version__ = "0.1.0"

_LAZY = {
    "ConllFormatError": "crossner_hf.conll",
    "read_conll": "crossner_hf.conll",
    "load_crossner": "crossner_hf.data",
    "compute_ner_metrics": "crossner_hf.metrics",
    "predict_tags": "crossner_hf.inference",
    "load_tagger": "crossner_hf.pipelines",
    "CrossNERTokenClassificationPipeline": "crossner_hf.pipelines",
    "tokenize_dataset": "crossner_hf.tokenization",
    "format_per_type_table": "crossner_hf.metrics",
    "EVALUATE_MODULE_PATH": "crossner_hf.metrics",
    "tokenize_and_align": "crossner_hf.tokenization",
    "MASKING_CHOICES": "crossner_hf.masking",
    "DataCollatorForSpanAdjacentMasking": "crossner_hf.masking",
    "DataCollatorForSpanGeometricMasking": "crossner_hf.masking",
    "DataCollatorForTokenMasking": "crossner_hf.masking",
    "DataCollatorForWholeWordMasking": "crossner_hf.masking",
    "make_mlm_collator": "crossner_hf.masking",
    "span_adjacent": "crossner_hf.masking",
    "build_corpus_levels": "crossner_hf.corpora",
    "load_text_corpus": "crossner_hf.corpora",
    "tokenize_corpus": "crossner_hf.corpora",
    "CrossNERTrainingArguments": "crossner_hf.training_args",
    "CrossNERTrainer": "crossner_hf.trainer",
    "JointTrainer": "crossner_hf.trainer",
    "DAPTArguments": "crossner_hf.dapt",
}

__all__ = ["CONFIGS", "DOMAINS", "LABELS", "MERGED_LABELS", "SOURCE_DOMAIN", *_LAZY]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
