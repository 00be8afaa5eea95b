"""Cross-domain language modelling (Jia, Liang & Zhang, ACL 2019) on CrossNER, supervised or zero-shot.

Usage:
    crossner-hf cdlm --domain politics --mode supervised --output_dir outputs/cdlm-politics --use_cpu true
    crossner-hf cdlm --domain music --mode zero-shot --target_text music_corpus.txt --output_dir outputs/cdlm-zs
    crossner-hf cdlm ... --word_vectors glove.6B.100d.txt      # the paper's GloVe (random vectors otherwise)
    crossner-hf cdlm ... --resume_from_checkpoint true

A BiLSTM-CRF whose LSTM weights a parameter generation network produces per (domain, task);
each step trains LM-source, NER-source, LM-target and (supervised) NER-target. Zero-shot
never reads target labels and tags the target with theta(target, NER) and the source CRF
(so it predicts CoNLL-2003's four types). Writes the best-dev model, vocab.json,
results.json and a card. See :mod:`crossner_hf.modeling.rnn`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments
from crossner_hf.commands.rnn_args import WordVectorsArguments, load_data, print_summary, read_texts
from crossner_hf.training.rnn.recipes import CDLMTrainingConfig


@dataclass
class CDLMArguments(CDLMTrainingConfig, LabeledDataArguments, WordVectorsArguments):
    """The ``cdlm`` command's flags: :class:`CDLMTrainingConfig` plus the data and the raw text, which
    :func:`run_cdlm` turns into :func:`~crossner_hf.training.rnn.recipes.train_cdlm`'s arguments."""

    source_text: list[str] | None = field(default=None, metadata={
        "help": "Source LM text: files (a sentence a line) or FOLDER:CONFIG dataset folders (default: CoNLL sentences)."})
    target_text: list[str] | None = field(default=None, metadata={
        "help": "Target LM text: files or FOLDER:CONFIG, e.g. a DAPT corpus folder built by `crossner-hf build-corpora` "
                "(default: the domain's sentences of --lm_splits)."})

    def __post_init__(self):
        super().__post_init__()
        # the release's weights follow from whether raw corpora are read: resolved here, where the flags are seen
        self.loss_weights = self.weights(raw_text=bool(self.source_text or self.target_text))


def run_cdlm(args: CDLMArguments):
    """What ``cdlm`` does: the flags become ``train_cdlm(word_vectors, target, config, source=, source_text=,
    target_text=)``."""
    from crossner_hf.training.rnn.recipes import train_cdlm

    target, source = load_data(args)
    return train_cdlm(args.word_vectors, target, CDLMTrainingConfig.from_arguments(args), source=source,
                      source_text=read_texts(args.source_text), target_text=read_texts(args.target_text))


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "cdlm", (CDLMArguments,), prog="trainer_recipes/cdlm.py",
        help="cross-domain LM (parameter generation network), supervised or zero-shot", description=__doc__,
    )


def main(args: CDLMArguments) -> int:
    print_summary(run_cdlm(args))
    return 0
