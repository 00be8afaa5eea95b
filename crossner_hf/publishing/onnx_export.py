"""Export a trained folder to ONNX (fp32, or int8) as a model folder of ours, with its measured F1.

``export_onnx(model_dir, output_dir, quantize="int8")`` (the ``crossner-hf export`` command) writes

- ``model.onnx``: the token classifier's graph (``torch.onnx.export``, TorchScript exporter, opset 17,
  dynamic batch and sequence axes) whose output is the logits; with ``quantize="int8"`` its weights are
  quantised and its activations at run time, one window at a time, so tags do not depend on the batch
  (:data:`INT8_SETTINGS`, chosen by measurement: see ``docs/inference.md``);
- ``config.json``: the model's own (labels, the provenance record with the decoding its F1 used) plus
  the export record ``crossner_onnx`` (file, precision, opset, quantisation, SHA-256 of the graph,
  the model it came from, and the evaluation below);
- the tokenizer, and ``README.md``: a card naming the runtime and the F1 measured *through the shipped
  path* (:class:`~crossner_hf.inference.tagger.Tagger` over ONNX Runtime: windows, stitching, the
  model's decoding) beside the PyTorch model's on the same split.

The folder is staged and moved into place with the card last (:func:`crossner_hf.outputs.staged_outputs`).
The evaluation split is ``eval_source`` (any target :func:`crossner_hf.data.target.load_target` opens, or a
``TargetData``: a CrossNER domain, a CoNLL folder, a dataset folder or Hub id), by default the dataset the
model's ``results.json`` names, scored by :func:`~crossner_hf.evaluation.scoring.evaluate_tagger` (the figure
``predict`` and ``report`` print); when none can be loaded the card says the F1 was not measured.

Why ``torch.onnx`` and not ``optimum``: see :mod:`crossner_hf.inference.onnx_runtime`.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.inference.onnx_runtime import ONNX_FILE, ONNX_RECORD, PRECISIONS, file_sha256, require_onnxruntime

logger = logging.getLogger(__name__)

OPSET = 17
"""ONNX opset of the export: fused LayerNormalization and every op BERT-style encoders need."""

QUANTIZATIONS = ("int8",)

INT8_SETTINGS: dict[str, Any] = {
    "method": "dynamic",
    "weight_type": "QInt8",
    "per_channel": True,
    "op_types": ["MatMul"],
    "keep_fp32": ["classifier"],
    "runs": "one window at a time",
}
"""How ``quantize="int8"`` quantises (measured on politics test with the demo's MiniLM, docs/inference.md):
dynamic quantisation (int8 weights, activations quantised at run time), per output channel, of the encoder's
MatMul layers; the embeddings (Gather) and the classifier stay fp32. Dynamic quantisation scales the activations
by the tensor it is given, so a padded batch would make a sentence's tags depend on its neighbours and on the
padding (the F1 moved with ``--batch_size``): the runtime gives the graph one unpadded window at a time
(``runs``, :class:`~crossner_hf.inference.onnx_runtime.OnnxTokenClassifier`), as fast as batches here. Static
quantisation with activation scales calibrated on the train split was measured as well: 1.3 F1 lower and 20%
slower (docs/inference.md)."""


@dataclass
class ExportResult:
    """What :func:`export_onnx` wrote: the folder, its precision and graph size, and the evaluation (or None)."""

    output_dir: str
    precision: str
    onnx_megabytes: float
    seconds: float
    evaluation: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _logits_module(model: Any) -> Any:
    """``model`` as a ``torch.nn.Module`` whose single output is the logits (what the graph returns)."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self, inner: Any):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kwargs["token_type_ids"] = token_type_ids
            return self.inner(**kwargs).logits

    return LogitsOnly(model).eval()


def export_graph(model: Any, tokenizer: Any, path: str | Path, *, opset: int = OPSET) -> list[str]:
    """Write ``model``'s logits graph to ``path`` (fp32, dynamic batch and sequence axes); returns its input names."""
    import warnings

    import torch

    sample = tokenizer([["an", "example", "sentence"], ["two", "words"]], is_split_into_words=True,
                       padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in sample else [])
    args = tuple(sample[n] for n in names)
    model = model.cpu()
    before = getattr(model.config, "_attn_implementation", None)
    if before is not None and hasattr(model, "set_attn_implementation"):
        # the eager attention traces to a smaller graph (19 Gather / 9 Shape nodes against 43 / 27 for SDPA's
        # masking code on MiniLM) that ONNX Runtime runs as fast or faster; the scores are the same to 1e-5
        model.set_attn_implementation("eager")
    wrapped = _logits_module(model)
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "logits"]}
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            # the TorchScript exporter warns about Python branches it folds (shapes are dynamic axes here) and
            # its own deprecation; the exported graph is checked against PyTorch by the evaluation and the tests
            warnings.simplefilter("ignore")
            torch.onnx.export(wrapped, args, str(path), input_names=names, output_names=["logits"],
                              dynamic_axes=axes, opset_version=opset, dynamo=False, do_constant_folding=True)
    finally:
        if before is not None and hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(before)  # the caller's model tags as before (the reference run)
    return names


def quantize_int8(source: str | Path, target: str | Path) -> dict[str, Any]:
    """Quantise the fp32 graph ``source`` into ``target`` with :data:`INT8_SETTINGS`; returns the settings used."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source), load_external_data=False)
    keep = [node.name for node in graph.graph.node
            if any(part in node.name for part in INT8_SETTINGS["keep_fp32"])]
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser logs every skipped tensor on the root logger
    try:
        quantize_dynamic(str(source), str(target), weight_type=getattr(QuantType, INT8_SETTINGS["weight_type"]),
                         per_channel=INT8_SETTINGS["per_channel"], op_types_to_quantize=INT8_SETTINGS["op_types"],
                         nodes_to_exclude=keep)
    finally:
        root.setLevel(level)
    return {**INT8_SETTINGS, "nodes_kept_fp32": keep}


def _default_eval_source(model_dir: Path) -> tuple[str | None, str]:
    """The dataset a trained folder's ``results.json`` names (its CrossNER domain or Hub id; local files are not
    recorded, being no path to publish: pass ``--dataset_dir`` for them), or None and why there is none."""
    results = model_dir / "results.json"
    if not results.is_file():
        return None, f"{model_dir} has no results.json, so it names no dataset"
    from crossner_hf.results import read_results

    try:
        data = read_results(results).results  # any schema this version reads
    except ValueError as err:
        return None, f"{err} So it names no dataset"
    dataset = data["dataset"]  # where the run's data came from: CrossNER, a Hub id, or local files (None)
    if dataset.get("source") == "crossner":
        return dataset.get("name"), ""
    if dataset.get("source"):
        return str(dataset["source"]), ""
    source = (data.get("config") or {}).get("dataset_dir")  # a results.json from before the dataset record
    if source:
        return str(source), ""
    if "source" not in dataset and dataset.get("name"):  # 0.1: a CrossNER domain, named alone
        return dataset["name"], ""
    return None, (f"{results} names the dataset {dataset.get('name')!r}, local files whose path it does not "
                  "record")


def _eval_target(source: str | Path | Any, data_dir: str | Path | None) -> Any:
    """``source`` as a :class:`~crossner_hf.data.target.TargetData` (one given is used as it is)."""
    from crossner_hf.data.target import TargetData, load_target

    return source if isinstance(source, TargetData) else load_target(source, data_dir=data_dir, strict=False)


def evaluate_folder(folder: str | Path, source: str | Path | Any, split: str, *, reference: Any = None,
                    data_dir: str | Path | None = None, threads: int | None = None, batch_size: int = 32
                    ) -> dict[str, Any]:
    """Score the tagger of ``folder`` on ``split`` of ``source`` (and ``reference``, a PyTorch tagger, beside it).
    ``source``: what :func:`~crossner_hf.data.target.load_target` opens, or a ``TargetData`` it gave (the export
    command's data flags: columns and ``--strict`` as every command reads them).

    Returns ``{"dataset", "split", "sentences", "decoding", "precision", "recall", "f1", "seconds"}`` plus
    ``"pytorch_f1"`` and ``"tags_identical"`` (every word's tag equal) when ``reference`` is given.
    """
    from crossner_hf.evaluation.metrics import compute_ner_metrics
    from crossner_hf.evaluation.scoring import evaluate_tagger
    from crossner_hf.inference.tagger import Tagger

    target = _eval_target(source, data_dir)
    if split not in target.dataset:
        raise ValueError(f"--split {split}: {target.name} has the splits {', '.join(target.dataset)}; choose one of "
                         "them.")
    tagger = Tagger.from_pretrained(folder, threads=threads)
    start = time.perf_counter()
    # the path predict, report and Python score with, so the card's figure is theirs
    evaluation = evaluate_tagger(tagger, target, split, batch_size=batch_size)
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "dataset": target.name, "split": split, "sentences": len(evaluation.tokens), "decoding": tagger.decoding,
        "precision": round(evaluation.precision, 6), "recall": round(evaluation.recall, 6),
        "f1": round(evaluation.f1, 6), "seconds": round(seconds, 3),
    }
    if reference is not None:
        ref = reference.tag(evaluation.tokens, batch_size=batch_size, progress=len(evaluation.tokens) > 200)
        out["pytorch_f1"] = round(compute_ner_metrics(evaluation.gold, ref)["overall_f1"], 6)
        out["tags_identical"] = ref == evaluation.pred
    return out


def export_onnx(
    model: str | Path,
    output_dir: str | Path,
    *,
    quantize: str | None = None,
    eval_source: str | Path | None = None,
    eval_split: str = "test",
    data_dir: str | Path | None = None,
    evaluate: bool = True,
    threads: int | None = None,
    batch_size: int = 32,
    opset: int = OPSET,
    overwrite: bool = False,
) -> ExportResult:
    """Export the trained folder ``model`` to an ONNX folder ``output_dir`` (see the module docstring).

    ``quantize``: ``None`` (fp32) or ``"int8"``.
    ``eval_source`` / ``eval_split``: where the card's F1 is measured (default: the dataset the model's
    ``results.json`` names, its test split); ``evaluate=False`` skips it. ``threads`` / ``batch_size``: the runtime's CPU threads and windows per batch for that run.
    A non-empty ``output_dir`` that crossner_hf did not write is refused unless ``overwrite``.
    """
    from crossner_hf.inference.predict import load_token_classifier
    from crossner_hf.inference.tagger import TransformerTagger
    from crossner_hf.outputs import check_ours, check_writable, staged_outputs

    if quantize not in (None, *QUANTIZATIONS):
        raise ValueError(f"--quantize {quantize}: choose one of {', '.join(QUANTIZATIONS)} (or leave it out for fp32).")
    require_onnxruntime()
    from crossner_hf.extras import require

    require("onnx", "onnx")
    source_dir = Path(model).expanduser()
    output = Path(output_dir).expanduser()
    if source_dir.resolve() == output.resolve():
        raise ValueError(f"--output_dir {output}: the same folder as --model; export into a new folder.")
    check_ours(output, overwrite=overwrite)  # a user's files are never replaced unasked
    check_writable(output, "--output_dir", folder=True)
    torch_model, tokenizer = load_token_classifier(str(source_dir))
    precision = "int8" if quantize else "fp32"
    start = time.perf_counter()
    source, why_none = (eval_source, "") if eval_source is not None else _default_eval_source(source_dir)
    target = _eval_target(source, data_dir) if source is not None and evaluate else None
    with (tempfile.TemporaryDirectory(prefix=".crossner-export-", dir=output) as work,
          staged_outputs(output, overwrite=overwrite) as stage):
        fp32 = Path(work) / "fp32.onnx"
        inputs = export_graph(torch_model, tokenizer, fp32, opset=opset)
        quantization = None
        if quantize:
            quantization = quantize_int8(fp32, stage / ONNX_FILE)
        else:
            shutil.move(fp32, stage / ONNX_FILE)
        record: dict[str, Any] = {
            "file": ONNX_FILE, "precision": precision, "opset": opset, "inputs": inputs, "exporter": "torch.onnx",
            "quantization": quantization, "sha256": file_sha256(stage / ONNX_FILE),
            "exported_from": _portable_name(source_dir), "evaluation": None,
        }
        _save_config(torch_model.config, stage, record)
        tokenizer.save_pretrained(stage)
        evaluation = None
        if evaluate and target is not None:
            reference = TransformerTagger(torch_model, tokenizer)
            evaluation = evaluate_folder(stage, target, eval_split, reference=reference, threads=threads,
                                         batch_size=batch_size)
            record["evaluation"] = evaluation
            _save_config(torch_model.config, stage, record)
        elif evaluate:
            logger.warning("%s; the card will say the F1 was not measured: pass --dataset_dir to measure it.",
                           why_none)
        from crossner_hf.publishing.cards import write_onnx_model_card

        write_onnx_model_card(stage, record, source_dir)
    seconds = time.perf_counter() - start
    result = ExportResult(output_dir=str(output), precision=precision,
                          onnx_megabytes=round((output / ONNX_FILE).stat().st_size / 2**20, 2),
                          seconds=round(seconds, 1), evaluation=evaluation)
    logger.info("Exported %s to %s (%s, %.1f MB)", source_dir, output, precision, result.onnx_megabytes)
    return result


def _portable_name(folder: Path) -> str:
    """The folder's name, never an absolute local path (a pushed card must not carry one)."""
    return folder.resolve().name


def _save_config(config: Any, folder: Path, record: dict[str, Any]) -> None:
    """``config.json`` = the model's configuration + the export record (the original object is left unchanged)."""
    import copy

    saved = copy.deepcopy(config)
    setattr(saved, ONNX_RECORD, record)
    saved.save_pretrained(folder)


__all__ = ["ExportResult", "INT8_SETTINGS", "OPSET", "PRECISIONS", "QUANTIZATIONS", "evaluate_folder", "export_graph",
           "export_onnx", "quantize_int8"]
