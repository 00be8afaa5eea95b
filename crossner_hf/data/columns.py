"""Token-classification data as it comes: columns found as ``run_ner.py`` finds them, string or ClassLabel tags,
one rule for orphan ``I-`` tags, whatever the source.

:func:`normalize_splits` turns the ``train`` / ``validation`` / ``test`` splits of any dataset (a folder or Hub id
``load_dataset`` opens: JSON Lines, CSV, Parquet, Arrow; or a ``DatasetDict`` in memory) into this project's
features (``id``, ``tokens``, ``ner_tags`` as a ``ClassLabel``):

- **columns**: ``text_column`` if given, else ``tokens``, else the first column; ``label_column`` if given, else
  ``ner_tags``, else the second column (transformers' ``run_ner.py``; the commands' ``--text_column_name`` /
  ``--label_column_name``);
- **tags**: a ``Sequence(ClassLabel)`` keeps its names in id order; string tags give the list given by
  ``--label_list`` or the folder's ``labels.json`` if any, else ``O``, then ``B-``/``I-`` of each entity type in
  the order the types first appear in train, then validation, then test (the order
  :func:`crossner_hf.data.conll.conll_folder_labels` uses for CoNLL folders), so every run on the data builds the
  same head and a model's ids are the data's; BIO tags are required (``not BIO: `x_lang` at js/train.jsonl:2;
  tags are O, B-type, I-type``), a type holding a TAB or line break is refused (its CoNLL line could not be read
  back), a long tag is quoted by its start;
- **cells**: a list, or (a CSV cell) a string holding a JSON list or a Python-literal list as pandas' ``to_csv``
  writes one (``"['Popular', 'approaches']"``), read with ``json.loads`` / ``ast.literal_eval`` (literals only);
  anything else is one line saying what a cell must hold;
- **places**: every message names where the row is: ``file:line`` (1-based) for files, ``SPLIT row N`` (1-based)
  for data in memory;
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

import ast
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crossner_hf.data.labels import SHOWN, check_label_list, labels_for, orphan_rule, shown_tag, tag_problem

logger = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")

TEXT_COLUMN_HELP = "The words column (default: tokens, else the first)."
LABEL_COLUMN_HELP = "The tags column (default: ner_tags, else the second)."
STRICT_HELP = "Refuse an orphan I-x (after O or another type); false reads it as B-x, as conlleval does."
"""The help of the labeled-data flags, shared by ``train`` (``TrainArguments``) and the evaluation
commands (``crossner_hf.commands``): one wording for one rule."""


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


def column_values(ds: Any, name: str) -> list:
    """A ``datasets.Dataset`` column as a Python list in one read: iterating ``ds[name]`` formats row by row, six
    to ten times slower (the 15,000-type check of ``benchmarks/data_types.py`` spent most of its time there)."""
    return ds.with_format("arrow")[name].to_pylist()


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


CELL_EXAMPLE = "['Popular', 'approaches'] as pandas' to_csv writes it, or [\"Popular\", \"approaches\"] as JSON"


def cell_list(value: Any, *, place: str, column: str, what: str, named: bool) -> list:
    """The list a cell holds: a list as it is, or a string holding a JSON or Python-literal list (a CSV cell, as
    pandas' ``to_csv`` writes a list). Anything else is a one-line ``ValueError`` saying what a cell must hold;
    ``named``: the column was named by the user, so the message does not suggest naming another one."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: a list nested thousands deep
            try:
                parsed = ast.literal_eval(value.strip())  # literals only: never runs code
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                parsed = None
        if isinstance(parsed, list):
            return parsed
    shown = repr(value) if len(repr(value)) <= 48 else repr(value)[:45] + "..."
    hint = "" if named else (f"; if {column!r} is not the {what} column, name it with "
                             f"{'--text_column_name' if what == 'words' else '--label_column_name'}")
    raise ValueError(f"{place}: the {column!r} cell holds {shown} ({type(value).__name__}); a cell must hold a list "
                     f"of {what}: {CELL_EXAMPLE}{hint}.")


def is_bio(tag: str) -> bool:
    """``O``, ``B-type`` or ``I-type``, the type without a TAB or line break (:func:`tag_problem`)."""
    return tag_problem(tag) is None


def not_bio_message(tag: str, place: str) -> str:
    """The one message for a tag that cannot be one, naming where it is; a long tag is quoted by its start."""
    if isinstance(tag, str) and (tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2)):
        return f"{place}: {tag_problem(tag)}"  # BIO, but its type cannot be written to a CoNLL line
    shown = (tag if len(tag) <= SHOWN else f"{tag[:SHOWN]}... ({len(tag):,} characters)") if isinstance(tag, str) \
        else repr(tag)[:SHOWN]
    return (f"not BIO: `{shown}` at {place}; tags are O, B-type, I-type (convert IOBES or other schemes to BIO "
            "first)")


def _listed(labels: Sequence[str], limit: int = 12) -> str:
    """A tag list in a message: its first ``limit`` tags, then how many more."""
    head = ", ".join(shown_tag(t) for t in labels[:limit])
    return f"[{head}{f', ... {len(labels) - limit} more' if len(labels) > limit else ''}]"


def string_tag_list(tag_rows: Sequence[Sequence[str]]) -> list[str]:
    """``O``, then ``B-``/``I-`` of each entity type in first-seen order (the documented order for string tags)."""
    types: dict[str, None] = {}
    for row in tag_rows:
        for tag in row:
            if tag != "O":
                types.setdefault(tag[2:], None)
    return ["O", *(f"{prefix}-{kind}" for kind in types for prefix in ("B", "I"))]


def check_bio(labels: Sequence[str], where: str) -> None:
    """A ``ClassLabel``'s names (or any tag list) are BIO with ``O`` among them; a one-line ``ValueError`` else."""
    bad = [t for t in labels if not is_bio(t)]
    if bad:
        raise ValueError(not_bio_message(bad[0], where))
    if not labels or "O" not in labels:
        raise ValueError(f"{where}: the tags {_listed(list(labels), 6)} have no O; tags are O, B-type, I-type.")


def row_place(source: str, split: str) -> Callable[[int], str]:
    """Where row ``i`` of a split is, for data with no file lines (a ``DatasetDict`` in memory): 1-based."""
    return lambda i: f"{source} {split} row {i + 1}"


class _Collector:
    """Raise the first problem (loading), or keep every one and skip its row (``problems`` given: checking)."""

    def __init__(self, problems: list[str] | None):
        self.problems = problems

    def __call__(self, message: str) -> None:
        if self.problems is None:
            raise ValueError(message)
        self.problems.append(message)


def _row(i: int, words_cell: Any, tags_cell: Any, names: list[str] | None, *, place: str, text: str, label: str,
         named: tuple[bool, bool], problem: _Collector) -> tuple[list[str], list[str]] | None:
    """One row's words and string tags, or ``None`` (after saying why) when it cannot be read."""
    try:
        if words_cell is None:
            raise ValueError(f"{place}: no {text!r} value; every row needs its words.")
        words = cell_list(words_cell, place=place, column=text, what="words", named=named[0])
        odd = next((w for w in words if not isinstance(w, str)), None)
        if odd is not None:
            raise ValueError(f"{place}: the {text!r} cell holds {type(odd).__name__}s; a cell must hold a list of "
                             f"words: {CELL_EXAMPLE}.")
        if tags_cell is None:
            raise ValueError(f"{place}: no {label!r} value; every row needs its tags.")
        tags = cell_list(tags_cell, place=place, column=label, what="tags", named=named[1])
        if names is not None:
            wrong = next((t for t in tags if not isinstance(t, int) or not 0 <= t < len(names)), None)
            if wrong is not None:  # names[-1] would read an unlabeled word (-1) as the list's last tag
                unlabeled = (" (-1 marks an unlabeled word, as a Hub dataset's hidden test split does: label it or "
                             "leave the split out)" if wrong == -1 else "")
                raise ValueError(f"{place}: tag id {str(wrong)[:SHOWN]} is not one of its ClassLabel's ids "
                                 f"0-{len(names) - 1}{unlabeled}.")
            tags = [names[t] for t in tags]
        elif not all(isinstance(t, str) for t in tags):
            raise ValueError(f"{place}: the {label!r} tags are {type(tags[0]).__name__}s without names; give string "
                             "tags (B-person) or a Sequence(ClassLabel) column.")
        bad = next((t for t in tags if not is_bio(t)), None)
        if bad is not None:
            raise ValueError(not_bio_message(bad, place))
        if len(words) != len(tags):
            raise ValueError(f"{place}: {len(words)} words but {len(tags)} tags; give one tag per word.")
    except ValueError as err:
        problem(str(err))
        return None
    return words, tags


def normalize_splits(splits: Mapping[str, Any], *, source: str, text_column: str | None = None,
                     label_column: str | None = None, strict: bool = True,
                     places: Mapping[str, Callable[[int], str]] | None = None,
                     problems: list[str] | None = None, label_list: Sequence[str] | None = None,
                     label_origin: str = "--label_list") -> tuple[list[str], Any]:
    """``(labels, DatasetDict)`` with this project's features from ``splits`` (see the module docstring).

    ``splits`` maps ``train`` / ``validation`` / ``test`` to ``datasets.Dataset`` objects (others are ignored).
    ``source`` names the data in messages; ``places[split](i)`` says where row ``i`` is (``js/train.jsonl:2``;
    default ``SOURCE SPLIT row i+1``). Without ``problems`` the first problem raises a one-line ``ValueError``;
    with a list, every problem is appended to it (the data check) and the rows without one are kept.
    ``label_list``: the tag list in id order (``--label_list`` or the folder's ``labels.json``, named by
    ``label_origin`` in messages), in place of the ``ClassLabel``'s names or the first-seen order.
    """
    from datasets import Dataset, DatasetDict

    problem = _Collector(problems)
    missing = [s for s in SPLITS if s not in splits]
    if missing and not problems:  # when checking, an unreadable file already said why its split is missing
        problem(f"{source} lacks the splits {', '.join(missing)} (it has {sorted(splits)}); name them train, "
                "validation (or dev / valid) and test.")
    present = [s for s in SPLITS if s in splits]
    words: dict[str, list[list[str]]] = {}
    tags: dict[str, list[list[str]]] = {}
    rows: dict[str, list[int]] = {}  # each kept row's index in its split, for its place in messages
    class_names: list[str] | None = None
    for split in present:
        ds = splits[split]
        place = (places or {}).get(split) or row_place(source, split)
        text, label = find_columns(ds.column_names, text_column, label_column, where=f"{source} {split}")
        names = _class_names(ds.features[label])
        if split == present[0]:
            class_names = names
            if names is not None:
                check_bio(names, f"{source} {split} (its ClassLabel names)")
                if names[0] != "O":
                    raise ValueError(f"{source}: its ClassLabel names start with {names[0]!r}; 'O' must be id 0.")
        words[split], tags[split], rows[split] = [], [], []
        for i, (w, t) in enumerate(zip(column_values(ds, text), column_values(ds, label))):
            row = _row(i, w, t, names, place=place(i), text=text, label=label,
                       named=(text_column is not None, label_column is not None), problem=problem)
            if row is not None:
                words[split].append(row[0])
                tags[split].append(row[1])
                rows[split].append(i)
    if label_list is not None:
        labels = check_label_list(list(label_list), label_origin)
        origin, fix = label_origin, f"add them to {label_origin}"
    else:
        labels = class_names if class_names is not None else string_tag_list(
            [row for split in present for row in tags[split]])
        origin, fix = ("its ClassLabel names" if class_names is not None else "the train split's tag list",
                       "use the same tags in every split")
    index = {t: i for i, t in enumerate(labels)}
    out = {}
    repaired = 0
    for split in present:
        ids, kept = [], []
        place = (places or {}).get(split) or row_place(source, split)
        for i, row in enumerate(tags[split]):
            try:
                fixed, n = orphan_rule(row, strict=strict, where=place(rows[split][i]), tokens=words[split][i])
                unknown = [t for t in fixed if t not in index]
                if unknown:
                    raise ValueError(f"{place(rows[split][i])}: tags {_listed(unknown, 3)} are not in "
                                     f"{origin} {_listed(labels)}; {fix}.")
            except ValueError as err:
                problem(str(err))
                continue
            repaired += n
            ids.append([index[t] for t in fixed])
            kept.append(words[split][i])
        out[split] = Dataset.from_dict({"id": [str(i) for i in range(len(ids))], "tokens": kept, "ner_tags": ids},
                                       features=features_for(labels))
    if repaired:
        logger.warning("%s: repaired %d orphan I- tag(s) to B- (strict=False).", source, repaired)
    return labels, DatasetDict(out)
