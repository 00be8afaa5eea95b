"""The labeled-data flags every evaluation command shares: ``--dataset_dir SOURCE`` as ``train`` takes it.

``report``, ``confusion`` and ``plot-entities`` score a model on ``--split`` of a CrossNER ``--config`` or, with
``--dataset_dir``, of any labeled source :func:`crossner_hf.data.target.load_target_dataset` opens (a CoNLL
folder, a folder of JSON Lines / CSV / Parquet files, a Hub id), its columns found as ``run_ner.py`` finds them
and orphan ``I-`` tags handled by the one ``--strict`` rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.data.columns import LABEL_COLUMN_HELP, STRICT_HELP, TEXT_COLUMN_HELP


@dataclass
class LabeledDataArguments:
    dataset_dir: str | None = field(
        default=None,
        metadata={"help": "Instead of --config: a CoNLL folder (train.txt, dev.txt, test.txt), a folder of JSON "
                          "Lines / CSV / Parquet files named by split, or a Hub dataset id; words and BIO tags "
                          "(strings or ClassLabel)."})
    text_column_name: str | None = field(default=None, metadata={"help": TEXT_COLUMN_HELP})
    label_column_name: str | None = field(default=None, metadata={"help": LABEL_COLUMN_HELP})
    strict: bool = field(default=True, metadata={"help": STRICT_HELP})


def labeled_target(args: Any, config: str | None) -> Any:
    """The :class:`~crossner_hf.data.target.TargetData` of ``--dataset_dir`` when given, else of the CrossNER
    ``config``."""
    from crossner_hf.data.target import load_target, target_source

    return load_target(target_source(args.dataset_dir, str(config)), data_dir=getattr(args, "data_dir", None),
                       strict=args.strict, text_column=args.text_column_name, label_column=args.label_column_name)


def load_labeled(args: Any, config: str | None) -> tuple[str, Any]:
    """``(name, DatasetDict)`` of :func:`labeled_target`."""
    target = labeled_target(args, config)
    return target.name, target.dataset
