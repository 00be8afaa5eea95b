"""Token-classification data as it comes: columns found as ``run_ner.py`` finds them, string or ClassLabel tags,
one rule for orphan ``I-`` tags, whatever the source.

:func:`normalize_splits` turns the ``train`` / ``validation`` / ``test`` splits of any dataset (a folder or Hub id
``load_dataset`` opens: JSON Lines, CSV, Parquet, Arrow; or a ``DatasetDict`` in memory) into this project's
features (``id``, ``tokens``, ``ner_tags`` as a ``ClassLabel``):

- **columns**: ``text_column`` if given, else ``tokens``, else the first column; ``label_column`` if given, else
  ``ner_tags``, else the second column (transformers' ``run_ner.py``; the commands' ``--text_column_name`` /
  ``--label_column_name``);
- **tags**: a ``Sequence(ClassLabel)`` keeps its names in id order; string tags give the list
  ``O``, then ``B-``/``I-`` of each entity type in the order the types first appear in train, then validation,
  then test (the order :func:`crossner_hf.data.target.conll_folder_labels` uses for CoNLL folders), so every run
  on the data builds the same head; BIO tags are required;
- **orphan** ``I-x`` tags (after ``O`` or another type): the one rule of :func:`crossner_hf.data.labels.orphan_rule`:
  ``strict=True`` (the default everywhere, ``--strict true``) refuses them naming the split, row and word;
  ``strict=False`` reads them as ``B-x``, as conlleval does, and says how many it repaired.

Example:
    >>> from datasets import Dataset, DatasetDict
    >>> rows = {"words": [["Hinton", "works", "at", "Google"]], "labels": [["B-researcher", "O", "O", "B-org"]]}
    >>> data = DatasetDict({s: Dataset.from_dict(rows) for s in ("train", "validation", "test")})
    >>> labels, out = normalize_splits(data, source="mydata")
    >>> labels
    ['O', 'B-researcher', 'I-researcher', 'B-org', 'I-org']
    >>> out["train"][0]["ner_tags"]
    [1, 0, 0, 3]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from crossner_hf.data.labels import labels_for, orphan_rule

logger = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")

TEXT_COLUMN_HELP = "The words column of --dataset_dir (default: tokens, else the first column)."
LABEL_COLUMN_HELP = "The tags column of --dataset_dir (default: ner_tags, else the second column)."
STRICT_HELP = ("Refuse an orphan I- tag (I-x after O or another type) naming where it is; false reads it as B-x, "
               "as conlleval does, and says how many.")
"""The help of the labeled-data flags, shared by ``train`` (``CrossNERTrainingArguments``) and the evaluation
commands (``crossner_hf.commands.data_args``): one wording for one rule."""


def features_for(config: str | Sequence[str]):
    """The ``datasets.Features`` of a config (a CrossNER config name or a label list): ``id``, ``tokens``,
    ``ner_tags`` (ClassLabel)."""
    from datasets import ClassLabel, Features, List, Value

    labels = labels_for(config) if isinstance(config, str) else list(config)
    return Features(
        {
            "id": Value("string"),
            "tokens": List(Value("string")),
            "ner_tags": List(ClassLabel(names=labels)),
        }
    )


def find_columns(column_names: Sequence[str], text_column: str | None = None, label_column: str | None = None,
                 *, where: str = "the dataset") -> tuple[str, str]:
    """``(words column, tags column)`` by ``run_ner.py``'s rule; a one-line ``ValueError`` naming the flags."""
    names = list(column_names)
    text = text_column or ("tokens" if "tokens" in names else (names[0] if names else None))
    label = label_column or ("ner_tags" if "ner_tags" in names else (names[1] if len(names) > 1 else None))
    for flag, value in (("--text_column_name", text), ("--label_column_name", label)):
        if value is None or value not in names:
            raise ValueError(f"{where}: no column {value!r} for {flag} (its columns are {names}); pass "
                             f"{flag} NAME (text_column= / label_column= in Python).")
    if text == label:
        raise ValueError(f"{where}: words and tags are both the column {text!r}; pass --text_column_name and "
                         "--label_column_name.")
    return text, label


def _class_names(feature: Any) -> list[str] | None:
    inner = getattr(feature, "feature", None)
    names = getattr(inner, "names", None)
    return list(names) if names is not None else None


def _tag_strings(dataset: Any, label_column: str, names: list[str] | None, where: str) -> list[list[str]]:
    rows = dataset[label_column]
    out = []
    for i, row in enumerate(rows):
        if row is None:
            raise ValueError(f"{where} row {i}: no {label_column!r} value; every row needs its tags.")
        if names is not None:
            out.append([names[t] for t in row])
        elif all(isinstance(t, str) for t in row):
            out.append(list(row))
        else:
            raise ValueError(f"{where} row {i}: the {label_column!r} tags are {type(row[0]).__name__}s without "
                             "names; give string tags (B-person) or a Sequence(ClassLabel) column.")
    return out


def string_tag_list(tag_rows: Sequence[Sequence[str]]) -> list[str]:
    """``O``, then ``B-``/``I-`` of each entity type in first-seen order (the documented order for string tags)."""
    types: dict[str, None] = {}
    for row in tag_rows:
        for tag in row:
            if tag != "O":
                types.setdefault(tag[2:], None)
    return ["O", *(f"{prefix}-{kind}" for kind in types for prefix in ("B", "I"))]


def check_bio(labels: Sequence[str], where: str) -> None:
    bad = [t for t in labels if t != "O" and (t[:2] not in ("B-", "I-") or len(t) < 3)]
    if bad or not labels or "O" not in labels:
        raise ValueError(f"{where}: tags {list(bad or labels)[:6]} are not BIO; use O, B-<type> and I-<type> "
                         "(convert IOBES or other schemes to BIO first).")


def normalize_splits(splits: Mapping[str, Any], *, source: str, text_column: str | None = None,
                     label_column: str | None = None, strict: bool = True) -> tuple[list[str], Any]:
    """``(labels, DatasetDict)`` with this project's features from ``splits`` (see the module docstring).

    ``splits`` maps ``train`` / ``validation`` / ``test`` to ``datasets.Dataset`` objects (others are ignored).
    ``source`` names the data in messages.
    """
    from datasets import Dataset, DatasetDict

    missing = [s for s in SPLITS if s not in splits]
    if missing:
        raise ValueError(f"{source} lacks the splits {', '.join(missing)} (it has {sorted(splits)}); name them "
                         "train, validation (or dev / valid) and test.")
    words: dict[str, list[list[str]]] = {}
    tags: dict[str, list[list[str]]] = {}
    class_names: list[str] | None = None
    for split in SPLITS:
        ds = splits[split]
        where = f"{source} {split}"
        text, label = find_columns(ds.column_names, text_column, label_column, where=where)
        names = _class_names(ds.features[label])
        if split == "train":
            class_names = names
        words[split] = []
        for i, row in enumerate(ds[text]):
            if row is None:
                raise ValueError(f"{where} row {i}: no {text!r} value; every row needs its words.")
            if not isinstance(row, (list, tuple)) or not all(isinstance(w, str) for w in row):
                raise ValueError(f"{where} row {i}: the {text!r} column must hold a list of words (str); name the "
                                 "words column with --text_column_name (text_column= in Python).")
            words[split].append(list(row))
        tags[split] = _tag_strings(ds, label, names, where)
        for i, (w, t) in enumerate(zip(words[split], tags[split])):
            if len(w) != len(t):
                raise ValueError(f"{where} row {i}: {len(w)} words but {len(t)} tags.")
    labels = class_names if class_names is not None else string_tag_list(
        [row for split in SPLITS for row in tags[split]])
    check_bio(labels, source)
    if class_names is not None and labels[0] != "O":
        raise ValueError(f"{source}: its ClassLabel names start with {labels[0]!r}; 'O' must be id 0.")
    index = {t: i for i, t in enumerate(labels)}
    out = {}
    repaired = 0
    for split in SPLITS:
        ids = []
        for i, row in enumerate(tags[split]):
            fixed, n = orphan_rule(row, strict=strict, where=f"{source} {split} row {i}", tokens=words[split][i])
            repaired += n
            unknown = [t for t in fixed if t not in index]
            if unknown:
                raise ValueError(f"{source} {split} row {i}: tags {unknown} are not in the train split's tag list "
                                 f"{labels}; use the same tags in every split.")
            ids.append([index[t] for t in fixed])
        out[split] = Dataset.from_dict({"id": [str(i) for i in range(len(ids))], "tokens": words[split],
                                        "ner_tags": ids}, features=features_for(labels))
    if repaired:
        logger.warning("%s: repaired %d orphan I- tag(s) to B- (strict=False).", source, repaired)
    return labels, DatasetDict(out)
