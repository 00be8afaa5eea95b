"""ONNX Runtime behind the same :class:`~crossner_hf.inference.tagger.Tagger`: an exported folder tags as its model did.

An ONNX folder (written by ``crossner-hf export`` / :func:`crossner_hf.publishing.onnx_export.export_onnx`)
is still a model folder of ours: ``config.json`` (labels, the provenance record with the decoding the
reported F1 used, and an ``crossner_onnx`` record: file, precision, opset, quantisation, the file's
SHA-256), the tokenizer, ``model.onnx`` and a card. :class:`OnnxTokenClassifier` offers what the
windows loop of :mod:`crossner_hf.inference.predict` needs of a model: ``config`` and
``log_probabilities(batch)`` on numpy arrays (an int8 graph, whose activations are quantised at run time, gets
each window alone, so its tags do not depend on the batch). Windows, stitching and the BIO-constrained Viterbi are
therefore the PyTorch path's own code, not a copy.

Why ``torch.onnx`` + ``onnxruntime`` and not ``optimum``: ``optimum-onnx`` 0.1.0 (the newest on the
package index) requires ``transformers<4.58``, and this project runs on transformers 5; its
``ORTModelForTokenClassification`` would also skip the decoding our models carry.

Example:
    >>> from crossner_hf import Tagger
    >>> tagger = Tagger.from_pretrained("outputs/politics-direct-onnx", threads=1)   # doctest: +SKIP
    >>> tagger.runtime                                                                 # doctest: +SKIP
    'onnxruntime (int8)'
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

ONNX_FILE = "model.onnx"
"""The graph file of an exported folder."""

ONNX_RECORD = "crossner_onnx"
"""``config.json`` key of the export record (file, precision, opset, quantisation, sha256, measured F1)."""

PRECISIONS = ("fp32", "int8")


def is_onnx_folder(path: str | Path) -> bool:
    """Whether ``path`` is a local folder exported to ONNX (it holds ``model.onnx``)."""
    return (Path(path).expanduser() / ONNX_FILE).is_file()


def require_onnxruntime() -> Any:
    """``onnxruntime``, or a one-line :class:`~crossner_hf.extras.MissingExtraError` naming the ``onnx`` extra."""
    from crossner_hf.extras import require

    return require("onnxruntime", "onnx")


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_onnx_record(path: str | Path) -> dict[str, Any]:
    """The export record of an ONNX folder's ``config.json`` (a ``ValueError`` naming the file when unreadable)."""
    config_file = Path(path).expanduser() / "config.json"
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{config_file}: missing; an ONNX folder needs its config.json (labels, decoding): "
                                "export it again with `crossner-hf export`.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{config_file}: not valid JSON ({err}); the folder is damaged: export it again with "
                         "`crossner-hf export`.") from None
    record = raw.get(ONNX_RECORD) if isinstance(raw, dict) else None
    if not isinstance(record, dict):
        raise ValueError(f"{config_file}: no {ONNX_RECORD} record, so {ONNX_FILE} beside it was not written by "
                         "`crossner-hf export`; export the model with it.")
    return record


def session_options(threads: int | None = None) -> Any:
    """ONNX Runtime session options: ``threads`` intra-op threads (default: the runtime's, one per core),
    one inter-op thread, every graph optimisation."""
    ort = require_onnxruntime()
    options = ort.SessionOptions()
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads={threads}: give a positive number of CPU threads.")
        options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1  # one graph at a time: the windows loop feeds batches in sequence
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings of the optimiser (unused initialisers) are not the user's concern
    return options


def _runtime_errors() -> tuple[type[BaseException], ...]:
    """The exception classes ONNX Runtime raises on a file it cannot load (they share no base but ``Exception``)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    names = ("Fail", "InvalidArgument", "InvalidProtobuf", "NoSuchFile", "InvalidGraph", "RuntimeException",
             "NotImplemented")
    return (RuntimeError, *(getattr(state, n) for n in names if hasattr(state, n)))


class OnnxTokenClassifier:
    """An exported token classifier run by ONNX Runtime: ``config``, ``record`` and ``log_probabilities``.

    Built by :meth:`from_pretrained`; :class:`~crossner_hf.inference.tagger.TransformerTagger` holds
    it where it would hold a PyTorch model.
    """

    training = False

    def __init__(self, session: Any, config: Any, record: dict[str, Any], path: Path):
        self.session, self.config, self.record, self.path = session, config, record, path
        self.input_names = [i.name for i in session.get_inputs()]

    @classmethod
    def from_pretrained(cls, path: str | Path, *, threads: int | None = None, check_hash: bool = True
                        ) -> OnnxTokenClassifier:
        """Load an exported folder. Damaged files are one-line errors naming the file and the fix:
        a missing or unreadable ``config.json``, a ``model.onnx`` whose SHA-256 differs from the recorded
        one (``check_hash``), a graph the runtime cannot load."""
        from transformers import AutoConfig

        ort = require_onnxruntime()
        folder = Path(path).expanduser()
        record = read_onnx_record(folder)
        onnx_file = folder / str(record.get("file", ONNX_FILE))
        if not onnx_file.is_file():
            raise FileNotFoundError(f"{onnx_file}: missing; export the model again with `crossner-hf export`.")
        if check_hash and record.get("sha256") and file_sha256(onnx_file) != record["sha256"]:
            raise ValueError(f"{onnx_file}: its SHA-256 differs from the one config.json records (the file is "
                             "damaged or was replaced); export the model again with `crossner-hf export`.")
        try:
            config = AutoConfig.from_pretrained(str(folder))
        except (OSError, ValueError) as err:
            raise ValueError(f"{folder / 'config.json'}: not a model configuration ({str(err).splitlines()[0]}); "
                             "export the model again with `crossner-hf export`.") from None
        try:
            session = ort.InferenceSession(str(onnx_file), sess_options=session_options(threads),
                                           providers=["CPUExecutionProvider"])
        except _runtime_errors() as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValueError(f"{onnx_file}: ONNX Runtime cannot load it ({first[:200]}); export the model again "
                             "with `crossner-hf export`.") from None
        return cls(session, config, record, folder)

    @property
    def precision(self) -> str:
        return str(self.record.get("precision", "fp32"))

    @property
    def runtime(self) -> str:
        """``"onnxruntime (fp32)"`` or ``"onnxruntime (int8)"``: what cards and reports name."""
        return f"onnxruntime ({self.precision})"

    def eval(self) -> OnnxTokenClassifier:  # the PyTorch model's interface: inference only, nothing to switch
        return self

    @property
    def one_window_at_a_time(self) -> bool:
        """Whether the graph quantises its activations at run time (dynamic int8, every int8 folder so far): then
        each window runs alone and unpadded, because the scales come from the tensor the graph is given, and a
        padded batch would make a sentence's tags depend on its neighbours and on the padding."""
        quantization = self.record.get("quantization") or {}
        return self.precision == "int8" and quantization.get("method", "dynamic") == "dynamic"

    def logits(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """``(batch, tokens, labels)`` float32 scores of one padded batch (inputs the graph lacks are dropped;
        padded positions of a graph run one window at a time score 0)."""
        feed = {name: np.ascontiguousarray(inputs[name], dtype=np.int64) for name in self.input_names
                if name in inputs}
        missing = [n for n in self.input_names if n not in feed]
        if missing:
            raise ValueError(f"{self.path}: the graph needs inputs {missing} that the tokenizer did not give.")
        if not self.one_window_at_a_time:
            return self.session.run(["logits"], feed)[0]
        lengths = feed["attention_mask"].sum(axis=1)
        out: np.ndarray | None = None
        for row, length in enumerate(lengths.tolist()):
            scores = self.session.run(["logits"], {k: v[row:row + 1, :length] for k, v in feed.items()})[0]
            if out is None:
                out = np.zeros((len(lengths), feed["attention_mask"].shape[1], scores.shape[-1]), dtype=np.float32)
            out[row, :length] = scores[0]
        return out if out is not None else self.session.run(["logits"], feed)[0]

    def log_probabilities(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """``(batch, tokens, labels)`` log-softmax of :meth:`logits`, in float32 as the PyTorch path computes it."""
        scores = self.logits(inputs).astype(np.float32, copy=False)
        top = scores.max(axis=-1, keepdims=True)
        shifted = scores - top
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
