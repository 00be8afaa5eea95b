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

import json
from typing import Any

from crossner_hf.training.rnn.recipes import CDLMArguments
from crossner_hf.commands import make_command_parser


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "cdlm", (CDLMArguments,), prog="trainer_recipes/cdlm.py",
        help="cross-domain LM (parameter generation network), supervised or zero-shot", description=__doc__,
    )


def main(args: CDLMArguments) -> int:
    from crossner_hf.training.rnn.recipes import train_cdlm

    results = train_cdlm(args)
    print(json.dumps({k: results[k] for k in ("best_epoch", "best_dev_f1", "epochs")} |
                     {"test_f1": results["test"]["overall_f1"]}, indent=2))
    return 0
