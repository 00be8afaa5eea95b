"""The inference layer: one ``Tagger`` for every trained folder, with the model's own decoding.

Modules: ``tagger`` (``Tagger``, the one door: ``from_pretrained``, ``tag``, ``tag_texts``; the transformer
kind, PyTorch or ONNX), ``predict`` (word-level scores over sliding windows, decoding, entities), ``pipelines``
(the ``transformers`` pipeline class, over ``Tagger``), ``rnn_tagger`` (the BiLSTM-CRF / CDLM / Coach / multi-cell
kind), ``onnx_runtime`` (exported folders). Imports ``data`` and ``modeling``."""

from __future__ import annotations

from typing import Any

from crossner_hf._lazy import lazy_attribute, lazy_dir

from crossner_hf.inference import rnn_tagger  # noqa: F401 - a Tagger kind registers itself when defined

_LAZY = {
    "label_names": "crossner_hf.inference.predict",
    "load_token_classifier": "crossner_hf.inference.predict",
    "predict_word_scores": "crossner_hf.inference.predict",
    "run_windows": "crossner_hf.inference.predict",
    "predict_tags": "crossner_hf.inference.predict",
    "Span": "crossner_hf.inference.predict",
    "split_input": "crossner_hf.inference.predict",
    "decode_entities": "crossner_hf.inference.predict",
    "entities_from_tags": "crossner_hf.inference.predict",
}
"""Names ``crossner_hf.inference`` had when it was one module (kept so old imports work)."""


def __getattr__(name: str) -> Any:
    """A lazy name's object, imported from its module on first use."""
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(_LAZY)
