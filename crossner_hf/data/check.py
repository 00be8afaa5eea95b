"""Check a labeled dataset without training: ``crossner-hf data --dataset_dir SOURCE`` and :func:`check_dataset`.

The check reads the source the way :func:`crossner_hf.data.target.load_target` does (the same files, columns,
CSV cells and ``strict`` rule) but does not stop at the first problem: it lists every one with its file and
1-based line, then summarises what it could read: the splits and their files, sentences and words per split,
the tag list in id order, the entities of each type per split, and the tagging scheme. No model is loaded.

Example:
    >>> import tempfile, pathlib, json
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "js"
    >>> folder.mkdir()
    >>> row = {"tokens": ["Python", "rocks"], "ner_tags": ["B-lang", "O"]}
    >>> for split in ("train", "validation", "test"):
    ...     _ = (folder / f"{split}.jsonl").write_text(json.dumps(row) + "\\n")
    >>> check = check_dataset(folder)
    >>> check.ok, check.labels, check.types["train"]
    (True, ['O', 'B-lang', 'I-lang'], {'lang': 1})
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crossner_hf.data.columns import SPLITS, column_values

logger = logging.getLogger(__name__)


def human_size(n_bytes: float) -> str:
    """A size in the unit that fits: ``512 B``, ``3.4 KB``, ``12 MB``, ``1.2 GB`` (powers of 1024).

    >>> human_size(300), human_size(2_500_000), human_size(3 * 2**30)
    ('300 B', '2.4 MB', '3.0 GB')
    """
    size = float(n_bytes)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


@dataclass
class DatasetCheck:
    """What :func:`check_dataset` found: ``print(check)`` shows it; ``ok`` is True when ``problems`` is empty."""

    source: str
    name: str
    kind: str
    files: dict[str, list[str]] = field(default_factory=dict)
    sentences: dict[str, int] = field(default_factory=dict)
    words: dict[str, int] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    types: dict[str, dict[str, int]] = field(default_factory=dict)
    scheme: str = "BIO (IOB2): O, B-type, I-type"
    problems: list[str] = field(default_factory=list)
    bytes: int | None = None
    source_types: str = ""
    """What becomes of CoNLL-2003's types in pretrain-finetune and joint (the map ``adapt`` uses by default, or the
    one given): :func:`crossner_hf.data.labels.describe_label_map`."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.kind}" + (f", {human_size(self.bytes)}" if self.bytes is not None else "")
                 + (f" ({self.source})" if self.source != self.name else "")]
        for split in SPLITS:
            if split in self.sentences:
                files = f"  [{', '.join(self.files[split])}]" if self.files.get(split) else ""
                lines.append(f"  {split:<10} {self.sentences[split]:>7} sentences {self.words[split]:>9} words{files}")
            else:
                lines.append(f"  {split:<10} not read")
        lines.append(f"tags ({len(self.labels)}, in id order): {' '.join(self.labels)}")
        # each type's place in the tag list from one dict (a list.index per type was O(types²): 66 s at 15,000)
        position = {tag: i for i, tag in enumerate(self.labels)}
        types = sorted({t for per in self.types.values() for t in per},
                       key=lambda t: position.get(f"B-{t}", len(position)))
        if types:
            width = max(len(t) for t in types)
            lines.append(f"entities per type:  {'':<{width}} " + " ".join(f"{s:>10}" for s in SPLITS))
            for t in types:
                lines.append(f"                    {t:<{width}} "
                             + " ".join(f"{self.types.get(s, {}).get(t, 0):>10}" for s in SPLITS))
            missing = [f"{t} (not in {', '.join(s for s in SPLITS if s in self.types and not self.types[s].get(t))})"
                       for t in types if any(s in self.types and not self.types[s].get(t) for s in SPLITS)]
            if missing:
                lines.append(f"types absent from a split: {'; '.join(missing)}")
        lines.append(f"scheme: {self.scheme}")
        if self.source_types:
            lines.append(self.source_types)
        if self.problems:
            lines.append(f"{len(self.problems)} problem(s):")
            lines.extend(f"  {p}" for p in self.problems)
        else:
            lines.append("no problems")
        return "\n".join(lines)


def _summarise(check: DatasetCheck, dataset: Any) -> None:
    for split in SPLITS:
        if split not in dataset:
            continue
        data = dataset[split]
        names = data.features["ner_tags"].feature.names
        check.sentences[split] = len(data)
        check.words[split] = sum(len(t) for t in column_values(data, "tokens"))
        begins = [i for i, name in enumerate(names) if name[:2] == "B-"]  # B- tag ids, counted by numpy below
        ids = np.fromiter((i for row in column_values(data, "ner_tags") for i in row), dtype=np.int64)
        per_id = np.bincount(ids, minlength=len(names)) if len(ids) else np.zeros(len(names), dtype=np.int64)
        counts: Counter[str] = Counter({names[i][2:]: int(per_id[i]) for i in begins})
        check.types[split] = {t: counts[t] for t in dict.fromkeys(n[2:] for n in names if n != "O") if counts[t]}
    if dataset:
        check.labels = list(next(iter(dataset.values())).features["ner_tags"].feature.names)


def _orphans(problems: list[str]) -> int:
    return sum("does not continue an entity" in p for p in problems)


def check_dataset(source: str | Path, *, data_dir: str | Path | None = None, text_column: str | None = None,
                  label_column: str | None = None, strict: bool = True, label_list: Any = None,
                  source_label_map: Any = None) -> DatasetCheck:
    """Every problem of ``source`` (a CrossNER domain, a CoNLL folder, a folder of JSON Lines / CSV / Parquet
    files, a Hub id) with its file and 1-based line, and a summary of what could be read; see the module
    docstring. The arguments are :func:`~crossner_hf.data.target.load_target`'s; ``source_label_map``: the
    map to check against the tags (``none``: no map; default: the proposed one, which ``adapt`` applies)."""
    from datasets import DatasetDict

    from crossner_hf.data.conll import SPLIT_FILES, check_conll_folder, conll_folder_labels, is_conll_folder
    from crossner_hf.data.labels import CONFIGS, LABELS_FILE, parse_label_list
    from crossner_hf.data.target import _crossner, _normalized, resolve_data_dir, target_name

    problems: list[str] = []
    shown = str(source)
    try:
        given = parse_label_list(label_list)
    except ValueError as err:
        problems.append(" ".join(str(err).split()))
        given = None
    if shown in CONFIGS:
        check = DatasetCheck(shown, shown, "CrossNER domain")
        try:
            folder = resolve_data_dir(shown, data_dir)
            check.files = {split: [str(folder / name)] for split, name in SPLIT_FILES.items()}
            check.bytes = sum((folder / name).stat().st_size for name in SPLIT_FILES.values())
            dataset = _crossner(shown, data_dir, strict)
        except (ValueError, FileNotFoundError) as err:  # ConllFormatError, CrossNERDataNotFound
            problems.append(" ".join(str(err).split()))
            dataset = DatasetDict()
        _summarise(check, dataset)
    elif is_conll_folder(source):
        folder = check_conll_folder(source)
        check = DatasetCheck(shown, target_name(source), "CoNLL folder")
        check.files = {split: [str(Path(shown) / name)] for split, name in SPLIT_FILES.items()}
        check.bytes = sum((folder / name).stat().st_size for name in SPLIT_FILES.values())
        _check_conll(check, folder, problems, strict)
        if given is not None:
            check.labels = given
        elif (folder / LABELS_FILE).is_file():  # the folder's own tag list
            try:
                check.labels = conll_folder_labels(folder)
            except ValueError as err:
                problems.append(" ".join(str(err).split()))
        stray = sorted({f"B-{t}" for per in check.types.values() for t in per} - set(check.labels))
        if stray and (given is not None or (folder / LABELS_FILE).is_file()):
            problems.append(f"the tags {', '.join(stray[:5])} are not in "
                            f"{'--label_list' if given is not None else folder / LABELS_FILE}; add them.")
    else:
        check = DatasetCheck(shown, target_name(source), "dataset")
        try:
            labels, dataset = _normalized(source, text_column, label_column, strict, problems, label_list=given)
        except (ValueError, FileNotFoundError) as err:  # the columns or the folder itself: nothing to read
            problems.append(" ".join(str(err).split()))
            dataset = DatasetDict()
        _summarise(check, dataset)
        path = Path(shown).expanduser()
        if path.is_dir():
            from crossner_hf.data.files import split_files

            found = split_files(path.resolve()) or {}
            check.files = {s: [str(Path(shown) / p.relative_to(path.resolve())) for p in ps] for s, ps in found.items()}
            suffixes = {p.suffix.lower() for ps in found.values() for p in ps}
            check.kind = {".jsonl": "JSON Lines files", ".json": "JSON files", ".csv": "CSV files",
                          ".parquet": "Parquet files", ".arrow": "Arrow files"}.get(next(iter(suffixes), ""),
                                                                                   "dataset folder")
            check.bytes = sum(p.stat().st_size for ps in found.values() for p in ps) or None
        else:
            check.kind = "Hub dataset"
    if check.labels:
        _label_map(check, source_label_map, problems)
    check.problems = problems
    orphans = _orphans(problems)
    if orphans:
        check.scheme += (f"; {orphans} orphan I- tag(s) (I-x after O or another type, IOB1-style): refused by "
                         "--strict true, read as B-x by --strict false")
    return check


def _label_map(check: DatasetCheck, value: Any, problems: list[str]) -> None:
    """The map adapt would use (or the one given) against the tags read: a wrong one is a problem."""
    from crossner_hf.data.labels import describe_label_map, resolve_label_map

    try:
        label_map = resolve_label_map(value, check.labels, check.name)
    except ValueError as err:
        problems.append(" ".join(str(err).split()))
        return
    check.source_types = describe_label_map(label_map, check.labels)
    if value is None and label_map:
        check.source_types += " (proposed: adapt applies it, --source_label_map none turns it off)"


def _check_conll(check: DatasetCheck, folder: Path, problems: list[str], strict: bool) -> None:
    """Sentences, words and entities per split of a CoNLL folder, every malformed line into ``problems``."""
    from crossner_hf.data.conll import read_conll
    from crossner_hf.data.conll import SPLIT_FILES

    types: dict[str, None] = {}  # first-seen order: the tag list conll_folder_labels gives without a labels.json
    for split, name in SPLIT_FILES.items():
        sentences = read_conll(folder / name, None, strict=strict, warn_repairs=False, problems=problems)
        check.sentences[split] = len(sentences)
        check.words[split] = sum(len(s["tokens"]) for s in sentences)
        counts = Counter(t[2:] for s in sentences for t in s["ner_tags"] if t.startswith("B-"))
        check.types[split] = dict(counts)
        types.update(dict.fromkeys(t[2:] for s in sentences for t in s["ner_tags"] if t != "O"))
    check.labels = ["O", *(f"{prefix}-{kind}" for kind in types for prefix in ("B", "I"))]
