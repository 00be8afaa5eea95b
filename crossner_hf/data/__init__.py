"""The data layer: CrossNER's labels and files, CoNLL reading, target datasets, words, tokenisation, MLM collators, dataset statistics.

Modules: ``labels`` (label lists, domains, merged ids), ``entities`` (entities read off tags), ``conll`` (reading
CoNLL files with errors that name file and line; a CoNLL folder's files and tag list), ``columns`` (any dataset's
columns, cells and tags), ``files`` (JSON Lines / CSV / Parquet folders, every malformed line named file:line; any
source's splits), ``target`` (``load_target``, the one labeled-data loader: CrossNER domains, CoNLL folders and any
``load_dataset`` source; every seeded draw: few-shot sets, corpus shares; the data flags), ``check``
(``check_dataset``: every problem of a dataset, no model), ``words`` (sentence and word splitting), ``tokenization``
(sub-word alignment), ``masking`` (the DAPT collators), ``stats`` (Table 1, Figure 1). Imports nothing above it."""

from __future__ import annotations

from typing import Any

from crossner_hf._lazy import lazy_attribute, lazy_dir

_LAZY = {
    "DATA_DIR_ENV": "crossner_hf.data.target",
    "CACHE_ENV": "crossner_hf.data.target",
    "UPSTREAM_COMMIT": "crossner_hf.data.target",
    "UPSTREAM_URL": "crossner_hf.data.target",
    "SPLIT_FILES": "crossner_hf.data.conll",
    "SHA256": "crossner_hf.data.target",
    "EXPECTED_COUNTS": "crossner_hf.data.target",
    "CrossNERDataNotFound": "crossner_hf.data.target",
    "cache_root": "crossner_hf.data.target",
    "resolve_data_dir": "crossner_hf.data.target",
    "features_for": "crossner_hf.data.columns",
    "build_split": "crossner_hf.data.target",
    "load_crossner": "crossner_hf.data.target",
    "FOLDER_LABELS_FILE": "crossner_hf.data.conll",
    "check_conll_folder": "crossner_hf.data.conll",
    "conll_folder_labels": "crossner_hf.data.conll",
    "load_conll_folder": "crossner_hf.data.target",
    "SPLIT_ALIASES": "crossner_hf.data.files",
    "is_conll_folder": "crossner_hf.data.conll",
    "target_name": "crossner_hf.data.target",
    "target_labels_of": "crossner_hf.data.target",
    "target_source": "crossner_hf.data.target",
    "load_target_dataset": "crossner_hf.data.target",
    "TargetData": "crossner_hf.data.target",
    "load_target": "crossner_hf.data.target",
    "check_dataset": "crossner_hf.data.check",
    "DatasetCheck": "crossner_hf.data.check",
    "few_shot_target": "crossner_hf.data.target",
    "share": "crossner_hf.data.target",
}
"""Names ``crossner_hf.data`` had when it was one module (kept so old imports work), and the data check and draws."""


def __getattr__(name: str) -> Any:
    """A lazy name's object, imported from its module on first use."""
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(_LAZY)
