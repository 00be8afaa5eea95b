"""The inference layer: one ``Tagger`` for every trained folder, with the model's own decoding.

Modules: ``tagger`` (``Tagger``, the one door: ``from_pretrained``, ``tag``, ``tag_texts``; the transformer
kind, PyTorch or ONNX), ``predict`` (word-level scores over sliding windows, decoding, entities), ``pipelines``
(the ``transformers`` pipeline class, over ``Tagger``), ``rnn_tagger`` (the BiLSTM-CRF / CDLM / Coach / multi-cell
kind), ``onnx_runtime`` (exported folders). Imports ``data`` and ``modeling``. Each name is imported from its module
(``from crossner_hf.inference.tagger import Tagger``); the package itself names nothing."""

from crossner_hf.inference import rnn_tagger  # noqa: F401 - a Tagger kind registers itself when defined
