"""crossner_hf: cross-domain NER for the Hugging Face ecosystem.

The public names below (what a user calls: loaders, runners with their configs and results, ``Tagger``,
``evaluate_tagger``, ``plan`` / ``run_experiment``) are imported lazily so that ``import crossner_hf`` stays
cheap (no torch import until a model-facing name is used).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"

_LAZY = {
    # data
    "load_target": "crossner_hf.data.target",
    "TargetData": "crossner_hf.data.target",
    "load_preset": "crossner_hf.arguments",
    # the runners, their configs, and the one result base they share
    "finetune": "crossner_hf.training.schedules",
    "FinetuneConfig": "crossner_hf.training.training_args",
    "dapt": "crossner_hf.training.dapt",
    "DAPTConfig": "crossner_hf.training.dapt",
    "pretrain_nerbert": "crossner_hf.training.nerbert",
    "NERBERTConfig": "crossner_hf.training.nerbert",
    "train_bilstm_crf": "crossner_hf.training.rnn.recipes",
    "BiLSTMCRFTrainingConfig": "crossner_hf.training.rnn.recipes",
    "train_cdlm": "crossner_hf.training.rnn.recipes",
    "CDLMTrainingConfig": "crossner_hf.training.rnn.recipes",
    "train_multicell": "crossner_hf.training.rnn.multicell",
    "MultiCellTrainingConfig": "crossner_hf.training.rnn.multicell",
    "WorkflowResult": "crossner_hf.results",
    # which of them suits the user's domain: all run, chosen on dev, the best shipped
    "adapt": "crossner_hf.selection.run",
    "AdaptConfig": "crossner_hf.selection.config",
    # tagging and scoring
    "Tagger": "crossner_hf.inference.tagger",
    "evaluate_tagger": "crossner_hf.evaluation.scoring",
    "Evaluation": "crossner_hf.evaluation.scoring",
    # corpora and the papers' grids
    "build_corpus_levels": "crossner_hf.corpora",
    "plan": "crossner_hf.reproduce.experiments",
    "run_experiment": "crossner_hf.reproduce.run",
}
"""What a user calls, at most 25 names; everything else is imported from its subpackage (0.3.0 removed the
names this facade held before 0.2 and the old module paths: CHANGELOG.md lists each with its replacement)."""

__all__ = [*_LAZY]



def __getattr__(name: str) -> Any:
    """A lazy name's object, imported from its module on first use (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    # an old name's user learns where the new one is
    raise AttributeError(f"module 'crossner_hf' has no attribute {name!r} (0.3.0 removed the 0.1 and 0.2 names; "
                         "CHANGELOG.md lists each with its replacement)")


def __dir__() -> list[str]:
    return sorted(_LAZY)
