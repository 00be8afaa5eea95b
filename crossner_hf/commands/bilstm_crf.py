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

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments
from crossner_hf.commands.rnn_args import WordVectorsArguments, load_data, print_summary, read_texts
from crossner_hf.training.rnn.recipes import BiLSTMCRFTrainingConfig, check_char_ngrams


@dataclass
class BiLSTMCRFArguments(BiLSTMCRFTrainingConfig, LabeledDataArguments, WordVectorsArguments):
    """The ``bilstm-crf`` command's flags: :class:`BiLSTMCRFTrainingConfig` plus the data and the vectors, which
    :func:`run_bilstm_crf` turns into :func:`~crossner_hf.training.rnn.recipes.train_bilstm_crf`'s arguments."""

    char_ngram_vectors: str | None = field(default=None, metadata={
        "help": "crossner: a file of character n-gram vectors ('2gram-#BEGIN#a v1 ... v100' lines: torchtext's "
                "CharNGram, Hashimoto et al. 2017); default: random vectors."})

    target_text: list[str] | None = field(default=None, metadata={
        "help": "self-train and dann: the target's raw text, files (a sentence a line) or FOLDER:CONFIG dataset "
                "folders (default: the target's training sentences, their labels unused)."})
    source_text: list[str] | None = field(default=None, metadata={
        "help": "dann: the source domain's raw text its domain classifier reads against the target's (CDLM: "
                "Reuters news, 004:737-739, 004:1100-1103), files or FOLDER:CONFIG (default: CoNLL-2003's "
                "training sentences)."})

    def __post_init__(self):
        super().__post_init__()
        check_char_ngrams(self.architecture, self.char_ngram_dim, self.char_ngram_vectors)  # at parse time
        if self.source_text and self.schedule != "dann":
            raise ValueError(f"--source_text is read by --schedule dann only (its domain classifier), not by "
                             f"--schedule {self.schedule}: drop it or use --schedule dann.")


def run_bilstm_crf(args: BiLSTMCRFArguments):
    """What ``bilstm-crf`` does: the flags become ``train_bilstm_crf(word_vectors, target, config, source=,
    target_text=, source_text=, char_ngram_vectors=)``."""
    from crossner_hf.training.rnn.recipes import train_bilstm_crf

    target, source = load_data(args, with_source=args.schedule != "target")
    return train_bilstm_crf(args.word_vectors, target, BiLSTMCRFTrainingConfig.from_arguments(args), source=source,
                            target_text=read_texts(args.target_text), source_text=read_texts(args.source_text),
                            char_ngram_vectors=args.char_ngram_vectors)


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "bilstm-crf", (BiLSTMCRFArguments,), prog="trainer_recipes/bilstm_crf.py",
        help="the BiLSTM-CRF baseline (joint with CoNLL-2003, or target only)", description=__doc__,
    )


def main(args: BiLSTMCRFArguments) -> int:
    print_summary(run_bilstm_crf(args))
    return 0
