"""One module per ``crossner-hf`` subcommand, each with ``make_parser()`` and ``main(args)``.

The shape is TRL's (``trl/scripts/*.py``): ``make_parser(subparsers=None)`` returns a
:class:`~crossner_hf.arguments.CrossNERParser` (added to ``subparsers`` when given, so the
``crossner-hf`` CLI can list it), and ``main(args)`` runs the command on the parsed
arguments dataclass. The runnable files in ``dataset_scripts/`` and ``trainer_recipes/``
are thin shims over these modules, so a non-editable install has every command.

Each command's parser comes from :func:`crossner_hf.arguments.make_command_parser` and :func:`crossner_hf.cli.run_command`
runs it (one-line errors). What the commands share besides lives here: the labeled-data flags, declared once (:class:`LabeledDataArguments`: ``--domain`` / ``--dataset_dir SOURCE``,
``--text_column_name``, ``--label_column_name``, ``--strict``, ``--data_dir``, ``--data_name``; ``train``,
``bilstm-crf``, ``cdlm``, ``multicell`` (through :mod:`crossner_hf.commands.rnn_args`), ``export``,
``build-corpora``, ``data``, ``adapt`` and ``compare`` take it as it is; ``predict``, ``report``, ``confusion`` and
``plot-entities`` take :class:`SplitDataArguments`, the same flags plus ``--split``). Every one of them loads its
target through :func:`crossner_hf.data.target.load_target` (:meth:`LabeledDataArguments.load_target`), so a source
opens, fails and is named the same way whatever the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.data.columns import LABEL_COLUMN_HELP, STRICT_HELP, TEXT_COLUMN_HELP
from crossner_hf.data.labels import CONFIGS


# ----------------------------------------------------------------- the labeled-data flags

SPLITS = ("train", "validation", "test")

DOMAIN_HELP = "A CrossNER config, or give --dataset_dir."
DATASET_DIR_HELP = "Your data: a CoNLL folder, JSON Lines / CSV / Parquet files, a Hub id (docs/own_domain.md)."


@dataclass
class LabeledDataArguments:
    """Where the labeled data is and how to read it: the one declaration of the data flags."""

    domain: str | None = field(default=None, metadata={"help": DOMAIN_HELP, "choices": list(CONFIGS)})
    dataset_dir: str | None = field(default=None, metadata={"help": DATASET_DIR_HELP})
    text_column_name: str | None = field(default=None, metadata={"help": TEXT_COLUMN_HELP})
    label_column_name: str | None = field(default=None, metadata={"help": LABEL_COLUMN_HELP})
    strict: bool = field(default=True, metadata={"help": STRICT_HELP})
    data_dir: str | None = field(default=None, metadata={
        "help": "The CrossNER files for --domain: <config>/{train,dev,test}.txt (default: $CROSSNER_DATA_DIR)."})
    data_name: str | None = field(default=None, metadata={
        "help": "Your data's name in tables and cards (default: its card's pretty_name, else its folder's)."})

    def __post_init__(self):
        parent = getattr(super(), "__post_init__", None)  # cooperative: train's FinetuneConfig comes after this class
        if parent is not None:
            parent()

    def target_source(self, default: str | None = None) -> str | Path | None:
        """``--dataset_dir`` when given, else ``--domain``, else ``default``
        (:func:`crossner_hf.data.target.target_source`'s one rule)."""
        from crossner_hf.data.target import target_source

        domain = self.domain or default
        if not self.dataset_dir and domain is None:
            return None
        return target_source(self.dataset_dir, str(domain))

    def load_target(self, default: str | None = None) -> Any:
        """The :class:`~crossner_hf.data.target.TargetData` the flags name, through
        :func:`~crossner_hf.data.target.load_target`; one line naming both flags when neither is given."""
        from crossner_hf.data.target import load_target

        source = self.target_source(default)
        if source is None:
            raise ValueError("name the data: --dataset_dir SOURCE (your data: a CoNLL folder, JSON Lines / CSV / "
                             f"Parquet files, a Hub id) or --domain (a CrossNER config: {', '.join(CONFIGS)}).")
        return load_target(source, data_dir=self.data_dir, strict=self.strict, text_column=self.text_column_name,
                           label_column=self.label_column_name, name=self.data_name)


@dataclass
class SplitDataArguments(LabeledDataArguments):
    """:class:`LabeledDataArguments` plus the split a command tags or scores (``predict``)."""

    split: str = field(default="test", metadata={"help": "The split to score.", "choices": list(SPLITS)})


def labeled_target(args: Any, config: str | None = None) -> Any:
    """The :class:`~crossner_hf.data.target.TargetData` of ``args``' data flags: ``--dataset_dir`` when given, else
    ``--domain``, else ``config`` (a command's default target)."""
    if isinstance(args, LabeledDataArguments):
        return args.load_target(config)
    from crossner_hf.data.target import load_target, target_source  # an object with the flags' attributes

    domain = getattr(args, "domain", None) or config
    return load_target(target_source(args.dataset_dir, str(domain)), data_dir=getattr(args, "data_dir", None),
                       strict=args.strict, text_column=args.text_column_name, label_column=args.label_column_name,
                       name=getattr(args, "data_name", None))


def load_labeled(args: Any, config: str | None = None) -> tuple[str, Any]:
    """``(name, DatasetDict)`` of :func:`labeled_target`."""
    target = labeled_target(args, config)
    return target.name, target.dataset
