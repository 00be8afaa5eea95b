"""The BiLSTM-CRF baseline (Lample et al. 2016) on CrossNER: jointly with CoNLL-2003 or on the target alone.

Usage:
    crossner-hf bilstm-crf --domain politics --schedule joint --output_dir outputs/bilstm-politics --use_cpu true
    crossner-hf bilstm-crf --domain music --schedule target --word_vectors glove.6B.100d.txt

Word embeddings (GloVe-format file, or random) ++ character CNN, a BiLSTM, a linear layer
and a CRF trained with the sentence log-likelihood and decoded with Viterbi; the joint
schedule draws each target sentence ``--oversample_factor`` times per epoch next to
CoNLL-2003 (tags mapped into the target label list by name), as the CrossNER paper's
baseline. Writes the best-dev model, vocab.json, results.json and a card.
"""

from __future__ import annotations

import json
from typing import Any

from crossner_hf.training.rnn.recipes import BiLSTMCRFArguments
from crossner_hf.commands import make_command_parser


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "bilstm-crf", (BiLSTMCRFArguments,), prog="trainer_recipes/bilstm_crf.py",
        help="the BiLSTM-CRF baseline (joint with CoNLL-2003, or target only)", description=__doc__,
    )


def main(args: BiLSTMCRFArguments) -> int:
    from crossner_hf.training.rnn.recipes import train_bilstm_crf

    results = train_bilstm_crf(args)
    print(json.dumps({k: results[k] for k in ("best_epoch", "best_dev_f1", "epochs")} |
                     {"test_f1": results["test"]["overall_f1"]}, indent=2))
    return 0
