"""Compare finished runs as ``adapt`` does: mean ± std over seeds, the choice on dev, a paired bootstrap.

Usage:
    crossner-hf compare outputs/mydata-direct outputs/mydata-joint outputs/mydata-dapt-direct \\
        --dataset_dir mydata --output_dir outputs/compare

Each folder is one method (a ``train``, ``bilstm-crf``, ... output; its name is the method's): its seeds' dev and
test F1 from its results.json. With --dataset_dir (the data the runs were trained on) the two best by mean dev F1
tag the dev split and a paired bootstrap says how often the first stays ahead. The choice reads dev F1 only; with
--output_dir the table goes to compare.md / compare.json / compare.png.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments


@dataclass
class CompareArguments(LabeledDataArguments):
    folders: list[str] = field(default_factory=list, metadata={
        "positional": True, "nargs": "+", "help": "Finished run folders (each holding results.json), one method each."})
    output_dir: str | None = field(default=None, metadata={
        "help": "Write compare.md, compare.json and compare.png here (default: print only)."})
    prefer: str = field(default="cheaper", metadata={
        "help": "cheaper: a faster run within one standard deviation of the best mean dev F1 is preferred; best: "
                "the best mean dev F1.", "choices": ["cheaper", "best"]})
    data_dir: str | None = field(default=None, metadata={"help": "CrossNER data folder (default: $CROSSNER_DATA_DIR)."})

    def __post_init__(self):
        if len(self.folders) < 1:
            raise ValueError("compare: name at least one finished run folder (each holding results.json).")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "compare", (CompareArguments,), prog="crossner-hf compare",
        help="compare finished runs: mean ± std over seeds, the choice on dev, a paired bootstrap",
        description=__doc__,
    )


def main(args: CompareArguments) -> int:
    from crossner_hf.selection.run import compare

    target = args.load_target() if args.dataset_dir else None
    result = compare(args.folders, target=target, output_dir=args.output_dir, prefer=args.prefer)
    print(result.table)
    print(f"\nBy dev F1: {result.chosen}. {result.choice.reason}")
    boot = result.results.get("bootstrap")
    if boot:
        from crossner_hf.selection.choice import bootstrap_sentence

        print(bootstrap_sentence(boot["first"], boot["second"], boot))
    return 0
