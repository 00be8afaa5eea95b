"""crossner_hf: cross-domain NER for the Hugging Face ecosystem.

The public names below are imported lazily so that ``import crossner_hf`` stays cheap
(no torch import until a model-facing name is used).
"""

from __future__ import annotations

from crossner_hf import _moved
from crossner_hf._lazy import lazy_attributes


from crossner_hf.data.labels import CONFIGS, DOMAINS, LABELS, MERGED_LABELS, SOURCE_DOMAIN

__version__ = "0.1.0"

_moved.install()  # old module paths (crossner_hf.trainer, crossner_hf.rnn, ...) stay importable

_LAZY = {
    "ConllFormatError": "crossner_hf.data.conll",
    "read_conll": "crossner_hf.data.conll",
    "load_crossner": "crossner_hf.data.target",
    "load_target": "crossner_hf.data.target",
    "TargetData": "crossner_hf.data.target",
    "finetune": "crossner_hf.training.schedules",
    "load_preset": "crossner_hf.arguments",
    "Preset": "crossner_hf.arguments",
    "ScheduleResult": "crossner_hf.training.schedules",
    "FinetuneConfig": "crossner_hf.training.training_args",
    "compute_ner_metrics": "crossner_hf.evaluation.metrics",
    "evaluate_tagger": "crossner_hf.evaluation.scoring",
    "Evaluation": "crossner_hf.evaluation.scoring",
    "predict_tags": "crossner_hf.inference.predict",
    "Tagger": "crossner_hf.inference.tagger",
    "load_pipeline": "crossner_hf.inference.pipelines",
    "CrossNERTokenClassificationPipeline": "crossner_hf.inference.pipelines",
    "tokenize_dataset": "crossner_hf.data.tokenization",
    "format_per_type_table": "crossner_hf.evaluation.metrics",
    "EVALUATE_MODULE_PATH": "crossner_hf.evaluation.metrics",
    "tokenize_and_align": "crossner_hf.data.tokenization",
    "MASKING_CHOICES": "crossner_hf.data.masking",
    "DataCollatorForSpanAdjacentMasking": "crossner_hf.data.masking",
    "DataCollatorForSpanGeometricMasking": "crossner_hf.data.masking",
    "DataCollatorForTokenMasking": "crossner_hf.data.masking",
    "DataCollatorForWholeWordMasking": "crossner_hf.data.masking",
    "make_mlm_collator": "crossner_hf.data.masking",
    "span_adjacent": "crossner_hf.data.masking",
    "build_corpus_levels": "crossner_hf.corpora",
    "load_text_corpus": "crossner_hf.corpora",
    "tokenize_corpus": "crossner_hf.corpora",
    "CrossNERTrainer": "crossner_hf.training.trainer",
    "JointTrainer": "crossner_hf.training.trainer",
    "DAPTConfig": "crossner_hf.training.dapt",
    "DAPTResult": "crossner_hf.training.dapt",
    "adapt_encoder": "crossner_hf.training.dapt",
    "NERBERTConfig": "crossner_hf.training.nerbert",
    "NERBERTResult": "crossner_hf.training.nerbert",
    "pretrain_nerbert": "crossner_hf.training.nerbert",
    "load_corpus": "crossner_hf.training.nerbert",
    "BiLSTMCRFTrainingConfig": "crossner_hf.training.rnn.recipes",
    "CDLMTrainingConfig": "crossner_hf.training.rnn.recipes",
    "train_bilstm_crf": "crossner_hf.training.rnn.recipes",
    "train_cdlm": "crossner_hf.training.rnn.recipes",
    "MultiCellTrainingConfig": "crossner_hf.training.rnn.multicell",
    "train_multicell": "crossner_hf.training.rnn.multicell",
    "RNNResult": "crossner_hf.training.rnn.common",
    "plan": "crossner_hf.reproduce.experiments",
    "run_experiment": "crossner_hf.reproduce.run",
    "ExperimentResult": "crossner_hf.reproduce.run",
}

__all__ = ["CONFIGS", "DOMAINS", "LABELS", "MERGED_LABELS", "SOURCE_DOMAIN", *_LAZY]

_lazy_getattr, __dir__ = lazy_attributes(__name__, _LAZY, globals())
__getattr__ = _moved.renamed_attributes(__name__, _lazy_getattr)  # old names warn (crossner_hf._moved)
