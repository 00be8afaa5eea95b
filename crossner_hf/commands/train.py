"""Fine-tune an encoder for CrossNER with the direct, pretrain-finetune or joint schedule.

Usage (``crossner-hf train`` is the same command; ``--model`` is short for ``--model_name_or_path``):
    # the research setting (needs the Hub for bert-base-cased)
    python trainer_recipes/finetune.py --model_name_or_path bert-base-cased --domain politics \\
        --schedule direct --seeds 555,666,777 --output_dir outputs/politics-direct

    # offline, with the pip-packaged MiniLM and its tuned defaults
    python trainer_recipes/finetune.py --config trainer_recipes/configs/politics_direct_minilm.yaml \\
        --output_dir outputs/politics-direct

    # two processes (GPUs, or CPU processes with --use_cpu true)
    accelerate launch trainer_recipes/finetune.py --domain music --schedule pretrain-finetune ...

    # resume an interrupted run (every seed and stage continues from its last checkpoint)
    python trainer_recipes/finetune.py ... --resume_from_checkpoint true

Every ``TrainingArguments`` flag is accepted (``--max_steps``, ``--fp16`` on a GPU,
``--bf16 --use_cpu`` on a CPU that supports it, ...). The best seed's model lands in
``--output_dir`` (``pipeline("token-classification", model=OUT)`` loads it) with
``results.json`` and a model card; each seed's run sits in ``OUT/seed-<seed>/``.
"""

from __future__ import annotations

from typing import Any

from crossner_hf.training.training_args import CrossNERTrainingArguments
from crossner_hf.commands import make_command_parser


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "train", (CrossNERTrainingArguments,), prog="trainer_recipes/finetune.py",
        help="fine-tune an encoder with a CrossNER schedule (direct, pretrain-finetune, joint)",
        description=__doc__,
    )


def main(args: CrossNERTrainingArguments) -> int:
    from crossner_hf.training.schedules import format_results, run_schedule

    result = run_schedule(args)
    if args.process_index == 0:
        print(format_results(result.results))
        print(f"Model, results.json and card in {args.output_dir}")
    return 0
