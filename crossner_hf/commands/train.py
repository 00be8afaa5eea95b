"""Fine-tune an encoder for CrossNER with the direct, pretrain-finetune or joint schedule.

Usage (``crossner-hf train`` is the same command; ``--model`` is short for ``--model_name_or_path``):
    # the research setting (needs the Hub for bert-base-cased)
    python trainer_recipes/finetune.py --model_name_or_path bert-base-cased --domain politics \\
        --schedule direct --seeds 555,666,777 --output_dir outputs/politics-direct

    # offline, with the pip-packaged MiniLM and its tuned defaults (your own data: --dataset_dir mydata,
    # JSON Lines / CSV / Parquet / CoNLL with any tag names; docs/own_domain.md)
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

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments
from crossner_hf.data.labels import DOMAINS
from crossner_hf.encoders import OFFLINE_ENCODER
from crossner_hf.training.training_args import FinetuneConfig


@dataclass
class TrainArguments(LabeledDataArguments):
    """The ``train`` command's model and data flags (the data flags every command shares,
    :class:`~crossner_hf.data.target.LabeledDataArguments`, whose ``load_target`` gives the target). The settings
    are a :class:`FinetuneConfig` that the same parser makes beside it, as TRL's scripts parse
    ``(ScriptArguments, SFTConfig, ModelConfig)``: the config is made once, by the parser, and goes down as it is."""

    _argument_group_name = "the model and the data"  # --help's first group, before FinetuneConfig's

    model_name_or_path: str = field(
        default="bert-base-cased",
        metadata={"help": "Encoder to fine-tune: a Hub id, a local folder (e.g. a DAPT output), or "
                  f"'{OFFLINE_ENCODER}' for the pip-packaged offline MiniLM.", "aliases": ["--model"]},
    )

    def __post_init__(self):
        if self.dataset_dir:
            from crossner_hf.data.target import target_name

            # the folder's (or Hub id's) name stands for the dataset in output names, results.json and the card
            self.domain = self.data_name or target_name(self.dataset_dir)
        elif self.domain is None:
            raise ValueError("name the target: --dataset_dir SOURCE (your data: a CoNLL folder, JSON Lines / CSV / "
                             f"Parquet files, a Hub id) or --domain (a CrossNER domain: {', '.join(DOMAINS)}).")
        elif self.domain not in DOMAINS:
            raise ValueError(f"--domain {self.domain!r}: choose one of {', '.join(DOMAINS)}, or pass your data as "
                             "--dataset_dir.")
        super().__post_init__()

    def load_source(self, schedule: str):
        """CoNLL-2003 from ``--data_dir`` when ``schedule`` trains on it, else ``None``."""
        from crossner_hf.data.labels import SOURCE_DOMAIN
        from crossner_hf.data.target import load_target

        return None if schedule == "direct" else load_target(SOURCE_DOMAIN, data_dir=self.data_dir)


def run_train(args: TrainArguments, config: FinetuneConfig, target: Any = None, callbacks: Any = ()):
    """What ``train`` does: ``finetune(model, target, config, source=)`` with the model and data the flags name
    (``target``: a ``TargetData`` in place of the one they name). Without ``--output_dir`` the runner names the
    folder (``outputs/<dataset>-<schedule>``, :func:`crossner_hf.outputs.default_output_dir`)."""
    from crossner_hf.encoders import resolve_model
    from crossner_hf.training.schedules import finetune

    model = resolve_model(args.model_name_or_path)  # once: a model that cannot be found fails before the data loads
    return finetune(model, target if target is not None else args.load_target(), config,
                    source=args.load_source(config.schedule), callbacks=callbacks)


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "train", (TrainArguments, FinetuneConfig), prog="trainer_recipes/finetune.py",
        help="fine-tune an encoder with a CrossNER schedule (direct, pretrain-finetune, joint)",
        description=__doc__,
    )


def main(args: TrainArguments, config: FinetuneConfig) -> int:
    from crossner_hf.results import format_results

    result = run_train(args, config)
    if config.process_index == 0:
        print(format_results(result.results))
        print(f"Model, results.json and card in {result.output_dir}")
    return 0
