"""Write an offline HTML evaluation report for a trained model on a labeled split.

Usage:
    crossner-hf report --model outputs/politics-direct --domain politics --output report.html
    crossner-hf report --model A --compare B --domain music --split validation --output ab.html
    crossner-hf report --model OUT --dataset_dir mydata --split test --output mine.html   # any labeled data

The model predicts the split with the decoding it records (``--decoding`` overrides); the
page shows per-type scores with bootstrap intervals, the SemEval-2013 schemes, the entity
confusion matrix, every sentence with an error, fine and coarse scores, buckets, the
comparison with ``--compare``, sentences of the config labelled differently in different
places, and ``model-index`` YAML. See :mod:`crossner_hf.evaluation.report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.modeling.heads import DECODINGS
from crossner_hf.arguments import make_command_parser, set_torch_threads
from crossner_hf.data.target import SplitDataArguments

DEFAULT_DOMAIN = "politics"
"""The target without --domain or --dataset_dir (the default of 0.1's --config)."""


@dataclass
class ReportArguments(SplitDataArguments):
    model: str = field(default=None, metadata={"help": "A trained model folder (output_dir of `crossner-hf train`)."})
    compare: str | None = field(default=None, metadata={"help": "A second model to compare with."})
    decoding: str | None = field(
        default=None, metadata={"help": "Override the models' recorded decoding.", "choices": list(DECODINGS)}
    )
    output: str = field(default="report.html", metadata={"help": "Where to write the page."})
    n_boot: int = field(default=1000, metadata={"help": "Bootstrap resamples for the 95% intervals."})
    seed: int = field(default=0, metadata={"help": "Seed of the bootstrap."})
    batch_size: int = field(default=32, metadata={"help": "Windows per forward pass."})
    threads: int | None = field(
        default=None, metadata={"help": "CPU threads: ONNX Runtime's for an exported folder, torch's otherwise "
                                        "(default: the runtime's own choice)."})

    def __post_init__(self):
        super().__post_init__()
        if not self.model:
            raise ValueError("report needs --model: the output_dir of a `crossner-hf train` run.")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "report", (ReportArguments,), prog="crossner-hf report",
        help="write an offline HTML evaluation report (errors, confusion, hierarchy, buckets)", description=__doc__,
    )


def main(args: ReportArguments) -> int:
    from crossner_hf.evaluation.scoring import evaluate_tagger
    from crossner_hf.inference.tagger import Tagger
    from crossner_hf.outputs import check_writable

    check_writable(args.output, "--output")  # before minutes of prediction, not after
    target = args.load_target(DEFAULT_DOMAIN)
    # any trained folder: a transformers model or a BiLSTM-CRF / CDLM one (crossner_hf.inference.tagger)
    set_torch_threads(args.threads)
    tagger = Tagger.from_pretrained(args.model, decoding=args.decoding, threads=args.threads)
    evaluation = evaluate_tagger(tagger, target, args.split, batch_size=args.batch_size,
                                 model_name=Path(args.model).name)
    other = None
    if args.compare:
        other = evaluate_tagger(Tagger.from_pretrained(args.compare, decoding=args.decoding), target, args.split,
                                batch_size=args.batch_size, model_name=Path(args.compare).name)
    print(evaluation.summary())  # the scores `predict --dataset_dir` prints, from the same evaluate_tagger
    print(evaluation.write_report(args.output, compare=other, n_boot=args.n_boot, seed=args.seed))
    return 0
