"""The one labeled-data loader, :func:`load_target`, where the CrossNER files come from, every seeded draw of the
data (a few-shot training set: :func:`few_shot_target`; a corpus share: :func:`share`), and the data flags every
command that reads labeled data takes (:class:`LabeledDataArguments`).

The raw files are found, in order: an explicit ``data_dir`` argument, the environment
variable ``CROSSNER_DATA_DIR``, or a download of the upstream files pinned to commit
``2e7ba2a`` of zliucr/CrossNER, checked against SHA-256 sums. Offline (``HF_HUB_OFFLINE``
or ``HF_DATASETS_OFFLINE`` set, or no network), the download fails at once with a message
naming ``CROSSNER_DATA_DIR``.

Parsed splits are cached as Arrow under ``$CROSSNER_HF_CACHE`` (default
``~/.cache/crossner_hf``), keyed by a hash of the source files' bytes and of the label
schema, so a warm load memory-maps the cache instead of re-parsing and a changed file is
noticed.

Example:
    >>> politics = load_target("politics", data_dir="../shared/data/crossner")  # doctest: +SKIP
    >>> politics.labels[:3], len(politics["train"])                            # doctest: +SKIP
    (['O', 'B-country', 'B-politician'], 200)
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import re
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from crossner_hf.data.columns import LABEL_COLUMN_HELP, STRICT_HELP, TEXT_COLUMN_HELP
from crossner_hf.data.columns import features_for
from crossner_hf.data.files import SPLIT_ALIASES, load_splits
from crossner_hf.data.conll import SPLIT_FILES, check_conll_folder, conll_folder_labels, is_conll_folder, read_conll
from crossner_hf.encoders import hub_offline
from crossner_hf.data.labels import CONFIGS, LABELS_FILE, labels_for, parse_label_list, read_label_file

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "CROSSNER_DATA_DIR"
CACHE_ENV = "CROSSNER_HF_CACHE"
UPSTREAM_COMMIT = "2e7ba2a"
UPSTREAM_URL = "https://raw.githubusercontent.com/zliucr/CrossNER/{commit}/ner_data/{path}"
DOWNLOAD_TIMEOUT_S = 2.0

SHA256: dict[str, str] = {
    "conll2003/train.txt": "098791b165293cac55aa60ea5395b48ed441bc962c00278aa4789dce68624bf8",
    "conll2003/dev.txt": "c8869cec4f419e7b635843aae285990581bf4685b7193c81696d87e1939f0c63",
    "conll2003/test.txt": "18d9d738defc506ebc5d6748cb580245327ef5c4357b026d7d9ba7c6e55fe841",
    "politics/train.txt": "1d8be31abb58463349496fe21b13d70114cf015294a9ff9cce77af9b83e8aa84",
    "politics/dev.txt": "4f1f30eb832f4c5fe474f67ca45e875d863bddf0bbe432262d272ef13639fa8f",
    "politics/test.txt": "05cadc5e129d394f7f92b4a052cf4b6ea4c60878d32a833e500cf046c297455f",
    "science/train.txt": "8f6a26096cc7be6790b5790bf5f5b5c8928d8b73d4632e7d45dc8bffad0504ac",
    "science/dev.txt": "87ec141c7b41b3b52ec861737c4030d65c6e53954ed3d8106baca8603bbf8f24",
    "science/test.txt": "3616d59d4d2b9dbf4c1126f8d8ba47ff97886223c95f93649bfd527343e64ced",
    "music/train.txt": "3774c38e0ebbeb4b98dbfae137071e4911e8764cdb7f247599009841f68d9fb5",
    "music/dev.txt": "e256f1949df52a61a3bb60095a0f41c1060843f1014b0f3d22d8371611b72e78",
    "music/test.txt": "c66e345f959ac65593f76c6b1bd8c6d75f2a6f0bc197389b2e6700d101fd094c",
    "literature/train.txt": "0647e403a85040742c2f4041cf002146a81aa2e13adda19d0e82a8bcd493c18b",
    "literature/dev.txt": "99281a51943cf7e3c2a58b3dc45c0e5ab6d329624ebf2ba6b4801c428396162f",
    "literature/test.txt": "77267f8b3e8afe993865c64cfc605f65671f6a0ac9cba65de970f12180fed20e",
    "ai/train.txt": "484217a660f52927bd5157507c22fc103b36306364329f62f80fc8acb897b187",
    "ai/dev.txt": "b47ffda6de5901a454a873feac1bebe782e54ce7edf9deb729cab3d769212eee",
    "ai/test.txt": "7595ad386e0a98067100fe47f86811b38867a236011fee97cfaa90f778c37bcf",
}

EXPECTED_COUNTS: dict[str, tuple[int, int, int]] = {
    "politics": (200, 541, 651),
    "science": (200, 450, 543),
    "music": (100, 380, 465),
    "literature": (100, 400, 416),
    "ai": (100, 350, 431),
    "conll2003": (14041, 3250, 3453),
}
"""Sentences per (train, validation, test) split in the upstream files at ``2e7ba2a``."""


class CrossNERDataNotFound(FileNotFoundError):
    """The raw files are neither given, nor in ``$CROSSNER_DATA_DIR``, nor downloadable."""


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "crossner_hf"))


def _check_dir(data_dir: Path, config: str, origin: str) -> Path:
    missing = [f for f in SPLIT_FILES.values() if not (data_dir / config / f).is_file()]
    if missing:
        raise CrossNERDataNotFound(
            f"{origin} {data_dir} has no {config}/{', '.join(missing)}; it must hold "
            f"<config>/train.txt, dev.txt and test.txt for configs {', '.join(CONFIGS)} "
            f"(pass --data_dir DIR on the command line, or set {DATA_DIR_ENV})."
        )
    return data_dir / config


def _file_sha256(path: Path) -> str | None:
    """``path``'s SHA-256, read in blocks (``None`` if it is not there)."""
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(config: str) -> Path:
    target = cache_root() / "raw" / UPSTREAM_COMMIT
    # a cached file is used only while it still has its pinned hash (a disk error, a hand edit, or a copy cut short
    # by an older version that wrote in place is downloaded again)
    stale = [name for name in SPLIT_FILES.values()
             if _file_sha256(target / config / name) != SHA256[f"{config}/{name}"]]
    if not stale:
        return target / config
    for name in stale:
        if (target / config / name).is_file():
            logger.warning("%s: not the pinned file (SHA-256 differs); downloading it again.", target / config / name)
    hint = (
        f"Set {DATA_DIR_ENV} to a folder holding <config>/{{train,dev,test}}.txt "
        f"(the ner_data/ folder of zliucr/CrossNER at commit {UPSTREAM_COMMIT}), "
        "or pass --data_dir DIR on the command line (data_dir=... in Python)."
    )
    if hub_offline(datasets_too=True):
        raise CrossNERDataNotFound(
            f"CrossNER data for {config!r} is not available locally (or its cached copy in {target / config} "
            "is damaged) and offline mode is on "
            f"(HF_HUB_OFFLINE/HF_DATASETS_OFFLINE). {hint}"
        )
    (target / config).mkdir(parents=True, exist_ok=True)
    for name in stale:
        rel = f"{config}/{name}"
        url = UPSTREAM_URL.format(commit=UPSTREAM_COMMIT, path=rel)
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
                data = response.read()
        except (urllib.error.URLError, OSError) as err:
            raise CrossNERDataNotFound(f"Could not download {url}: {err}. {hint}") from err
        digest = hashlib.sha256(data).hexdigest()
        if digest != SHA256[rel]:
            raise CrossNERDataNotFound(
                f"Checksum mismatch for {url}: got {digest}, expected {SHA256[rel]}. {hint}"
            )
        from crossner_hf.outputs import atomic_output

        with atomic_output(target / rel) as tmp:  # a kill mid-write leaves no file that looks downloaded
            tmp.write_bytes(data)
    return target / config


def resolve_data_dir(config: str, data_dir: str | Path | None = None) -> Path:
    """The folder holding ``train.txt``, ``dev.txt`` and ``test.txt`` for ``config``."""
    labels_for(config)  # a clear error for an unknown config name, before any I/O
    if data_dir is not None:
        return _check_dir(Path(data_dir), config, "data_dir")
    if os.environ.get(DATA_DIR_ENV):
        return _check_dir(Path(os.environ[DATA_DIR_ENV]), config, f"${DATA_DIR_ENV}")
    return _download(config)


def _fingerprint(labels: Sequence[str], folder: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update("\n".join(labels).encode())
    for name in SPLIT_FILES.values():
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return h.hexdigest()


def build_split(path: Path, config: str | Sequence[str], strict: bool = True):
    """Parse one raw file into a ``datasets.Dataset`` with the config's features (a config name or a label list)."""
    from datasets import Dataset

    labels = labels_for(config) if isinstance(config, str) else list(config)
    index = {tag: i for i, tag in enumerate(labels)}
    sentences = read_conll(path, labels, strict=strict)
    return Dataset.from_dict(
        {
            "id": [str(i) for i in range(len(sentences))],
            "tokens": [s["tokens"] for s in sentences],
            "ner_tags": [[index[t] for t in s["ner_tags"]] for s in sentences],
        },
        features=features_for(labels),
    )


def _crossner(config: str, data_dir: str | Path | None, strict: bool):
    """A CrossNER config's splits from ``data_dir``, ``$CROSSNER_DATA_DIR`` or the pinned download, cached as
    Arrow (the cache key hashes the files, so edits are noticed)."""
    folder = resolve_data_dir(config, data_dir)
    return _parsed(folder, config, labels_for(config), strict)


def _parsed(folder: Path, name: str, labels: Sequence[str], strict: bool):
    """The three splits of ``folder`` as a ``DatasetDict``, from the Arrow cache when the files are unchanged."""
    from datasets import DatasetDict

    key = f"{name}-{'strict' if strict else 'repair'}-{_fingerprint(labels, folder)}"
    cached = cache_root() / "arrow" / key
    if (cached / "dataset_dict.json").is_file():
        logger.debug("Loading %s from cache %s", name, cached)
        return DatasetDict.load_from_disk(str(cached))
    logger.info("Parsing %s from %s", name, folder)
    splits = DatasetDict(
        {split: build_split(folder / file, labels, strict) for split, file in SPLIT_FILES.items()}
    )
    cached.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the final place, then rename: a crash never leaves a half cache behind.
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cached.parent))
    try:
        splits.save_to_disk(str(tmp))
        try:
            tmp.rename(cached)
        except OSError:  # another process finished first: keep its copy
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return DatasetDict.load_from_disk(str(cached))


# ----------------------------------------------------------------------------- any CoNLL folder


def _conll_folder(folder: str | Path, strict: bool, label_list: Sequence[str] | None = None):
    path = check_conll_folder(folder)
    return _parsed(path, path.name, label_list or conll_folder_labels(path), strict)


# ----------------------------------------------------------------------------- any token-classification dataset

GENERIC_FOLDER_NAMES = frozenset({
    "data", "dataset", "datasets", "corpus", "files", "input", "inputs", "ner", "labeled", "labelled", "annotations",
    "annotated", "raw", "processed", "splits", "csv", "json", "jsonl", "parquet", "conll", "tmp", "temp",
})
"""Folder names that say nothing about the data (``projects/literature/data``): the name comes from the data's card
or the folder above instead."""


def target_name(source: str | Path) -> str:
    """The column / run name of a target source: the ``pretty_name`` of a local folder's dataset card (its
    ``README.md``), else the folder's name (the folder above's when it is a generic word such as ``data``), a Hub
    id's last part (``tner/btc`` -> ``btc``). ``--data_name`` names it outright."""
    if is_conll_folder(source):
        return _folder_name(check_conll_folder(source).resolve())
    path = Path(source)
    if not path.exists() and str(source).startswith(("/", ".", "~")):  # a local path, not a Hub id: say what is wrong
        check_conll_folder(source)
    return _folder_name(path.resolve()) if path.exists() else str(source).rstrip("/").rsplit("/", 1)[-1]


def _folder_name(path: Path) -> str:
    folder = path if path.is_dir() else path.parent  # a file's name (rows.csv, train.jsonl) names a split at most
    pretty = _card_pretty_name(folder / "README.md")
    if pretty:
        return pretty
    if folder.name.lower() in GENERIC_FOLDER_NAMES and folder.parent.name:
        return folder.parent.name  # projects/literature/data -> literature (one level up, never a home folder)
    return folder.name or "custom"


def _card_pretty_name(card: Path) -> str | None:
    """``pretty_name`` from a dataset card's YAML header (the first 64 kB: a card, not a data file)."""
    if not card.is_file():
        return None
    with open(card, encoding="utf-8", errors="replace") as f:
        head = f.read(65536)
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", head, flags=re.S)
    if not match:
        return None
    import yaml

    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return None
    name = meta.get("pretty_name") if isinstance(meta, dict) else None
    return " ".join(str(name).split())[:80] or None if name else None


def given_labels(source: str | Path, label_list: str | Sequence[str] | None) -> tuple[list[str] | None, str]:
    """The tag list the user gave for ``source`` and where it came from: ``--label_list``, else the local folder's
    ``labels.json`` (:data:`~crossner_hf.data.labels.LABELS_FILE`), else ``(None, "")``: the data's own order."""
    parsed = parse_label_list(label_list)
    if parsed is not None:
        return parsed, "--label_list"
    path = Path(str(source)).expanduser()
    if path.is_dir() and (path / LABELS_FILE).is_file():
        return read_label_file(path / LABELS_FILE), str(Path(str(source)) / LABELS_FILE)
    return None, ""


def _normalized(source: str | Path, text_column: str | None, label_column: str | None, strict: bool,
                problems: list[str] | None = None, label_list: str | Sequence[str] | None = None):
    from crossner_hf.data.columns import normalize_splits

    labels, origin = given_labels(source, label_list)
    splits, places, _ = load_splits(source, problems)
    return normalize_splits(splits, source=str(source), text_column=text_column, label_column=label_column,
                            strict=strict, places=places, problems=problems, label_list=labels,
                            label_origin=origin or "--label_list")


def target_source(dataset_dir: str | Path | None, domain: str) -> str | Path:
    """The one rule every recipe follows for its target: ``--dataset_dir`` when given, else the CrossNER
    ``--domain``. Pass the result to :func:`load_target` or :func:`target_labels_of`.

    >>> target_source(None, "politics"), target_source("my-folder", "politics")
    ('politics', 'my-folder')
    """
    if not dataset_dir:
        return domain
    # a folder in the working directory named like a CrossNER domain is the folder the flag names
    return Path(dataset_dir).resolve() if str(dataset_dir) in CONFIGS and Path(dataset_dir).exists() else dataset_dir


def target_labels_of(source: str | Path, *, text_column: str | None = None, label_column: str | None = None,
                     strict: bool = True, label_list: str | Sequence[str] | None = None) -> list[str]:
    """The tag list of a target source: a CrossNER domain's, a CoNLL folder's (:func:`conll_folder_labels`) or
    that of a dataset ``load_dataset`` opens (a Hub id, a folder of JSON Lines / CSV / Parquet / Arrow files): its
    ``ClassLabel`` names, or for string tags the order :mod:`crossner_hf.data.columns` documents (``label_list``:
    ``--label_list``)."""
    if str(source) in CONFIGS:
        return labels_for(str(source))
    if is_conll_folder(source):
        return parse_label_list(label_list) or conll_folder_labels(source)
    return _normalized(source, text_column, label_column, strict, label_list=label_list)[0]


@dataclass(frozen=True)
class TargetData:
    """A target domain ready to train on: its name, its tag list in id order and its splits.

    ``data["train"]`` is ``data.dataset["train"]``; the features are this project's (``id``,
    ``tokens``, ``ner_tags`` as a ``ClassLabel`` over ``labels``).
    """

    name: str
    labels: list[str]
    dataset: Any  # datasets.DatasetDict with train / validation / test
    source: str | None = None
    """Where it came from, as a model card's ``datasets:`` names it: ``crossner`` for a CrossNER domain, the Hub
    id of a Hub dataset; ``None`` for local files and data in memory (never a local path: cards are published)."""

    columns: tuple[str | None, str | None] = (None, None)
    """The words and tags columns as the user named them (``--text_column_name`` / ``--label_column_name``), for
    the command lines a card shows; None where they were found by default."""

    label_list: tuple[str, ...] | None = None
    """The tag list given by ``--label_list`` (a card's command line repeats it); None where the data gave it."""

    def record(self) -> dict[str, Any]:
        """results.json's ``dataset``: the name, the source as a card's ``datasets:`` names it, the data flags a
        command line names it with (a local folder as ``YOUR_DATA``: a card never carries a local path) and an
        example sentence of the train split (a card's usage example, in the user's own domain) and the tag list in
        id order (a card tells the data's tags from those a schedule with CoNLL-2003 added after them)."""
        if self.source == "crossner":
            flags = ["--domain", self.name]
        else:
            flags = ["--dataset_dir", self.source or "YOUR_DATA"]
            for flag, column in zip(("--text_column_name", "--label_column_name"), self.columns):
                flags += [flag, column] if column else []
            flags += ["--label_list", ",".join(self.label_list)] if self.label_list else []
        return {"name": self.name, "source": self.source, "flags": flags, "example": self.example(),
                "labels": list(self.labels)}

    def example(self, max_words: int = 40) -> str | None:
        """The first train sentence with an entity, of at most ``max_words`` words (None if there is none)."""
        if "train" not in self.dataset:
            return None
        for row in self.dataset["train"].select(range(min(200, len(self.dataset["train"])))):
            if any(self.labels[tag] != "O" for tag in row["ner_tags"]) and len(row["tokens"]) <= max_words:
                return " ".join(row["tokens"])
        return None

    def __getitem__(self, split: str):
        return self.dataset[split]


def load_target(source: str | Path | Any, *, data_dir: str | Path | None = None, name: str | None = None,
                text_column: str | None = None, label_column: str | None = None, strict: bool = True,
                label_list: str | Sequence[str] | None = None) -> TargetData:
    """The one labeled-data loader: a target from a CrossNER domain name (``politics``; ``data_dir`` or
    ``$CROSSNER_DATA_DIR`` holds the files), a CoNLL folder, any token-classification dataset ``load_dataset``
    opens (a Hub id, a folder of JSON Lines / CSV / Parquet / Arrow files; CSV cells may hold lists as pandas
    writes them), or a ``DatasetDict`` already in memory. Columns are found as ``run_ner.py`` finds them
    (``text_column`` / ``label_column`` to name them), tags may be strings or ``ClassLabel``, and ``strict`` is
    the one rule for orphan ``I-`` tags (:mod:`crossner_hf.data.columns`). A malformed file is one ``ValueError``
    line naming ``file:line``; :func:`crossner_hf.data.check.check_dataset` lists every problem at once.

    The tag list, in id order, is the model's: ``label_list`` (``--label_list``: ``O,B-x,I-x``, a JSON list or a
    JSON file), else the folder's ``labels.json``, else a ``ClassLabel``'s names as they are, else ``O`` and the
    types in the order they first appear. A model trained on the data has ``id2label`` in this order (a schedule
    with CoNLL-2003 appends its unmapped types after it).

    >>> from crossner_hf.data.target import load_target
    >>> politics = load_target("politics")           # doctest: +SKIP
    >>> politics.labels[:3], len(politics["train"])  # doctest: +SKIP
    (['O', 'B-country', 'B-politician'], 200)
    """
    from datasets import DatasetDict

    from crossner_hf.data.columns import normalize_splits

    given = parse_label_list(label_list) if label_list is not None else None
    if isinstance(source, DatasetDict):
        splits = {split: source[found] for split, aliases in SPLIT_ALIASES.items()
                  for found in [next((a for a in aliases if a in source), None)] if found is not None}
        labels, dataset = normalize_splits(splits, source=name or "the DatasetDict", text_column=text_column,
                                           label_column=label_column, strict=strict, label_list=given)
        return TargetData(name or "custom", labels, dataset, label_list=tuple(given) if given else None)
    if str(source) in CONFIGS:
        if given is not None:
            raise ValueError(f"--label_list: {source} is a CrossNER domain, whose tags keep the release's order; "
                             "drop --label_list (it orders your own data's tags).")
        dataset = _crossner(str(source), data_dir, strict)
    elif is_conll_folder(source):
        dataset = _conll_folder(source, strict, given)
    else:
        labels, dataset = _normalized(source, text_column, label_column, strict, label_list=given)
    labels = list(dataset["train"].features["ner_tags"].feature.names)  # set from the source's tag list there
    if str(source) in CONFIGS:
        return TargetData(name or str(source), labels, dataset, "crossner")
    local = Path(str(source)).expanduser().exists()
    return TargetData(name or target_name(source), labels, dataset, None if local else str(source),
                      (text_column, label_column), tuple(given) if given else None)


# ----------------------------------------------------------------------------- every seeded draw
# The one home of the data's seeded draws, each the rule its workflow has always used, so a seed keeps drawing the
# sentences it drew before (tests/test_target.py pins the indices): draw_rows, n rows of a Dataset (shuffle(seed),
# the first n: numpy's default_rng(seed).permutation), is every few-shot training set (few_shot_target; fine-tuning's
# few_shot / few_shot_fraction, the RNN recipes' few_shot) and every source subsample; share, a fraction of a text
# corpus, is nested (under one seed the 10% corpus is inside the 25% one): a Dataset (DAPT's corpus) drawn by
# draw_rows in the draw's order, a list (the RNN recipes' LM text) by draw_texts (random.Random(seed)) in its own.


def draw_rows(rows: Any, n: int, seed: int) -> Any:
    """``n`` rows of the ``datasets.Dataset`` ``rows`` drawn with ``seed`` (all of them, shuffled, when ``n`` is
    larger)."""
    return rows.shuffle(seed=seed).select(range(min(n, len(rows))))


def few_shot_count(size: int, *, few_shot: int | None = None, fraction: float | None = None) -> int | None:
    """How many training sentences a few-shot setting keeps of ``size``: ``fraction`` of them (at least one)
    when given, else ``few_shot``; ``None`` (keep all) without either."""
    if fraction is not None:
        return max(1, round(fraction * size))
    return few_shot


def few_shot_target(target: TargetData, seed: int, *, few_shot: int | None = None,
                    fraction: float | None = None) -> TargetData:
    """``target`` (a :class:`TargetData`) with its train split cut to ``few_shot``
    sentences, or to ``fraction`` of them, drawn with ``seed`` by :func:`draw_rows`; the same object without
    either. A count larger than the train split is refused in one line."""
    from datasets import DatasetDict

    train = target.dataset["train"]
    keep = few_shot_count(len(train), few_shot=few_shot, fraction=fraction)
    if keep is None:
        return target
    if not 0 < keep <= len(train):
        raise ValueError(f"--few_shot {keep}: {target.name} train has {len(train)} sentences; give 1 to that many.")
    data = DatasetDict({**target.dataset, "train": draw_rows(train, keep, seed)})
    return replace(target, dataset=data)


def share(texts: Any, fraction: float, seed: int, flag: str = "--corpus_fraction") -> Any:
    """``fraction`` of ``texts`` drawn with ``seed`` (the two draws: this section's comment); ``texts``
    itself at 1. ``flag`` names the setting in the one-line error for a share outside (0, 1].

    >>> share(list(range(8)), 0.5, seed=3, flag="--target_text_fraction")
    [1, 3, 4, 6]
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"{flag} {fraction}: give a share in (0, 1], e.g. 0.25.")
    if fraction == 1:
        return texts
    keep = max(1, round(fraction * len(texts)))
    if hasattr(texts, "shuffle"):  # a datasets.Dataset: DAPT's corpus
        logger.info("%s %g: %d of the corpus's %d texts", flag, fraction, keep, len(texts))
        return draw_rows(texts, keep, seed)
    return draw_texts(texts, keep, seed)


def draw_texts(texts: list, n: int, seed: int) -> list:
    """``n`` of the list ``texts`` drawn with ``random.Random(seed)``, kept in their order (all of them when ``n``
    is their number or more); the first ``n`` of one permutation, so the draws of one seed are nested."""
    if n >= len(texts):
        return texts
    chosen = sorted(random.Random(seed).sample(range(len(texts)), len(texts))[:n])
    return [texts[i] for i in chosen]


# ----------------------------------------------------------------------------- the data flags
# Every command that reads labeled data takes these flags (crossner_hf.commands), declared here once beside the
# loader they feed, so a source opens, fails and is named the same way whatever the command.

SPLITS = ("train", "validation", "test")

DOMAIN_HELP = "A CrossNER config, or give --dataset_dir."
DATASET_DIR_HELP = "Your data: a CoNLL folder, JSON Lines / CSV / Parquet files, a Hub id (docs/own_domain.md)."
LABEL_LIST_HELP = ("Your tags in id order, O first: O,B-x,I-x or a JSON file (default: the folder's labels.json, else "
                   "a ClassLabel's names, else the order the tags first appear).")


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
    label_list: str | None = field(default=None, metadata={"help": LABEL_LIST_HELP})

    def __post_init__(self):
        parent = getattr(super(), "__post_init__", None)  # cooperative: a config may follow (adapt's)
        if parent is not None:
            parent()

    def target_source(self, default: str | None = None) -> str | Path | None:
        """``--dataset_dir`` when given, else ``--domain``, else ``default``
        (:func:`target_source`'s one rule)."""
        domain = self.domain or default
        if not self.dataset_dir and domain is None:
            return None
        return target_source(self.dataset_dir, str(domain))

    def load_target(self, default: str | None = None) -> TargetData:
        """The :class:`TargetData` the flags name, through :func:`load_target`; one line naming both flags when
        neither is given."""
        source = self.target_source(default)
        if source is None:
            raise ValueError("name the data: --dataset_dir SOURCE (your data: a CoNLL folder, JSON Lines / CSV / "
                             f"Parquet files, a Hub id) or --domain (a CrossNER config: {', '.join(CONFIGS)}).")
        return load_target(source, data_dir=self.data_dir, strict=self.strict, text_column=self.text_column_name,
                           label_column=self.label_column_name, name=self.data_name, label_list=self.label_list)


@dataclass
class SplitDataArguments(LabeledDataArguments):
    """:class:`LabeledDataArguments` plus the split a command tags or scores (``predict``)."""

    split: str = field(default="test", metadata={"help": "The split to score.", "choices": list(SPLITS)})
