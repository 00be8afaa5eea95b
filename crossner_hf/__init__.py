"""crossner_hf: cross-domain NER for the Hugging Face ecosystem.

The public names below are imported lazily so that ``import crossner_hf`` stays cheap
(no torch import until a model-facing name is used).
"""

from __future__ import annotations

import importlib
from typing import Any

from .labels import CONFIGS, DOMAINS, LABELS, MERGED_LABELS, SOURCE_DOMAIN

__version__ = "0.1.0"

_LAZY = {
    "ConllFormatError": "crossner_hf.conll",
    "read_conll": "crossner_hf.conll",
    "load_crossner": "crossner_hf.data",
    "compute_ner_metrics": "crossner_hf.metrics",
    "DataCollatorForSpanAdjacentMasking": "crossner_hf.masking",
}

__all__ = ["CONFIGS", "DOMAINS", "LABELS", "MERGED_LABELS", "SOURCE_DOMAIN", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'crossner_hf' has no attribute {name!r}")
