"""Fine-tune an encoder for CrossNER with the direct, pretrain-finetune or joint schedule.

Usage:
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

import logging
import sys

from crossner_hf.arguments import parse_args
from crossner_hf.schedules import format_results, run
from crossner_hf.training_args import CrossNERTrainingArguments


def main(args: CrossNERTrainingArguments) -> dict:
    results = run(args)
    if args.process_index == 0:
        print(format_results(results))
    return results


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (training_args,) = parse_args((CrossNERTrainingArguments,), sys.argv[1:])
    main(training_args)
