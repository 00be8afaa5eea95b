"""Check a labeled dataset before training on it: splits, sizes, tags, types per split, scheme, every problem.

Usage:
    crossner-hf data --dataset_dir mydata                        # a folder of JSON Lines / CSV / Parquet files
    crossner-hf data --dataset_dir mydata --text_column_name sentence_tokens --label_column_name ner_labels
    crossner-hf data --domain politics                           # a CrossNER domain
    crossner-hf data --dataset_dir my_conll_folder --strict false
    crossner-hf data --dataset_dir mydata --source_label_map misc=Other  # the map pretrain-finetune and joint use

It reads the data as ``train``, ``report`` and every other command do (the same flags, the same files, columns and
orphan rule) but lists every problem, each with its file and 1-based line (``js/train.jsonl:2``), instead of
stopping at the first, and loads no model. Its last lines say what becomes of CoNLL-2003's types in pretrain-finetune
and joint: yours by name, mapped (the map ``adapt`` proposes and applies, or ``--source_label_map``'s, checked), or
added after your tags. Exit status 0 when there is no problem, 1 when there is one
(:func:`crossner_hf.data.check.check_dataset` is the same in Python).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments


@dataclass
class DataCheckArguments(LabeledDataArguments):
    """The data flags every command shares, and the map of CoNLL-2003's types to check: the check needs no model."""

    source_label_map: str | None = field(default=None, metadata={
        "help": "CoNLL-2003's types as yours (person=x_person,misc=Other), checked against your tags; default: the "
                "map adapt proposes and applies, shown; 'none': no map."})

    def __post_init__(self):
        if not self.dataset_dir and not self.domain:
            raise ValueError("data needs --dataset_dir SOURCE (your data: a CoNLL folder, JSON Lines / CSV / Parquet "
                             "files, a Hub id) or --domain (a CrossNER config).")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "data", (DataCheckArguments,), prog="crossner-hf data",
        help="check a labeled dataset: splits, sizes, tags, types per split, scheme, every problem with file:line",
        description=__doc__,
    )


def main(args: DataCheckArguments) -> int:
    from crossner_hf.data.check import check_dataset

    check = check_dataset(args.target_source(), data_dir=args.data_dir, text_column=args.text_column_name,
                          label_column=args.label_column_name, strict=args.strict, label_list=args.label_list,
                          source_label_map=args.source_label_map)
    print(check)
    return 0 if check.ok else 1
