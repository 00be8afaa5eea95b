"""The modeling layer: the decoding and provenance a model carries, and the RNN models.

Modules: ``decoding`` (BIO repair and Viterbi over BIO constraints), ``heads`` (token-classification heads and the provenance a model carries),
``rnn`` (BiLSTM-CRF, CDLM, Coach: configs and models, registered with the Auto classes).
Imports only ``data``."""

from __future__ import annotations

from typing import Any

from crossner_hf._lazy import lazy_attribute, lazy_dir

_LAZY = {
    "PROVENANCE_ATTRIBUTE": "crossner_hf.modeling.heads",
    "DEFAULT_DECODING": "crossner_hf.modeling.heads",
    "HEAD_PREFIXES": "crossner_hf.modeling.heads",
    "read_provenance": "crossner_hf.modeling.heads",
    "record_decoding": "crossner_hf.modeling.heads",
    "record_head": "crossner_hf.modeling.heads",
    "record_pretraining": "crossner_hf.modeling.heads",
    "model_decoding": "crossner_hf.modeling.heads",
    "token_classifier_from_pretrained": "crossner_hf.modeling.heads",
    "load_checked": "crossner_hf.modeling.heads",
}
"""Names ``crossner_hf.modeling`` had when it was one module (kept so old imports work)."""


def __getattr__(name: str) -> Any:
    """A lazy name's object, imported from its module on first use."""
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(_LAZY)
