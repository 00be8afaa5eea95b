"""Export a trained model folder to ONNX (fp32 or int8 weights) for fast CPU tagging with ONNX Runtime.

Usage:
    crossner-hf export --model OUT --output_dir OUT-onnx                    # fp32: the same tags as PyTorch
    crossner-hf export --model OUT --output_dir OUT-int8 --quantize int8    # int8 weights: smaller, faster
    crossner-hf predict --model OUT-int8 --threads 1 "Obama visited Berlin."

The folder written is still a model folder of ours (config with labels, decoding and the export
record; tokenizer; ``model.onnx``; a card): ``Tagger.from_pretrained``, ``predict``, ``report`` and
``confusion`` run it with the same windows, stitching and decoding as the PyTorch model. At export
the folder is scored through that path on ``--split`` of ``--dataset_dir`` (default: the dataset the
model's ``results.json`` names), beside the PyTorch model, and the card states both F1s.
Needs the onnx extra: ``pip install "crossner_hf[onnx]"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser, set_torch_threads
from crossner_hf.data.target import LabeledDataArguments


@dataclass
class ExportArguments(LabeledDataArguments):
    """The export and, through the data flags every command shares (``--domain`` / ``--dataset_dir``, the
    column flags, ``--strict``), where the card's F1 is measured (default: the dataset the model's
    ``results.json`` names)."""

    model: str = field(default=None, metadata={"help": "A trained token-classification folder (`crossner-hf train` "
                                                       "or `nerbert` output)."})
    output_dir: str = field(default=None, metadata={"help": "The ONNX folder to write (a new folder)."})
    quantize: str | None = field(
        default=None, metadata={"help": "int8: dynamic int8 weights (per channel; embeddings and classifier stay "
                                        "fp32). Default: fp32.", "choices": ["int8"]})
    split: str = field(default="test", metadata={"help": "The split of --dataset_dir scored at export."})
    no_eval: bool = field(default=False, metadata={"help": "Skip the evaluation (the card then says so)."})
    threads: int | None = field(default=None, metadata={"help": "CPU threads of ONNX Runtime (and torch) during "
                                                                "the evaluation (default: one per core)."})
    batch_size: int = field(default=32, metadata={"help": "Windows per forward pass during the evaluation."})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "Write into an --output_dir that holds files crossner_hf did not write (the entries this command "
                "writes, such as data/ and README.md, replace those of the same name; the rest stay)."})

    def __post_init__(self):
        if not self.model:
            raise ValueError("export needs --model: the output_dir of a `crossner-hf train` run.")
        if not self.output_dir:
            raise ValueError("export needs --output_dir: the ONNX folder to write.")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"--threads {self.threads}: give a positive number of CPU threads.")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "export", (ExportArguments,), prog="crossner-hf export",
        help="export a trained model to ONNX (fp32 or int8) for ONNX Runtime", description=__doc__,
    )


def main(args: ExportArguments) -> int:
    from crossner_hf.publishing.onnx_export import export_onnx

    set_torch_threads(args.threads)
    # the data flags name the evaluation (and int8 calibration) data; without them export_onnx reads the dataset
    # results.json names
    named = args.dataset_dir or args.domain
    source = args.load_target() if named and (args.quantize or not args.no_eval) else None
    result = export_onnx(args.model, args.output_dir, quantize=args.quantize, eval_source=source,
                         eval_split=args.split, data_dir=args.data_dir, evaluate=not args.no_eval,
                         threads=args.threads, batch_size=args.batch_size, overwrite=args.overwrite_output_dir)
    print(json.dumps(result.to_dict(), ensure_ascii=False))
    return 0
