"""The NER-BERT corpus from typed Wikipedia sentences: filtering, balancing, split, report.

Liu et al. (2021, NER-BERT, section 2). Every anchor is an entity whose category is the
lower-cased most specific DBpedia class of its link target, or ``ENTITY`` when the
target is untyped. Then, with the paper's values as defaults:

1. categories with fewer than ``min_category_entities`` (10) entities become ``ENTITY``
   (the entity stays an entity; its class is too rare to learn);
2. sentences with no entity, or only ``ENTITY`` entities, are dropped;
3. a sentence whose entities all belong to the ``top_categories`` (20) most frequent
   categories (``ENTITY`` counted among them) and that has 3 / 4 / more than 4 ``ENTITY``
   mentions is dropped with probability 0.3 / 0.5 / 0.7;
4. balancing, as in XLM: category E should be drawn with probability proportional to
   |E|^alpha (alpha 0.7, |E| its entity count after step 3). A sentence is kept with
   probability max over its typed categories of r_E = (|E| / |E_min|)^(alpha - 1): the
   rarest category keeps every sentence, a category 10^4 times larger keeps 6% of its
   sentences at alpha 0.7 (a sentence is kept if *any* of its rarer categories needs it);
5. a ``validation_fraction`` (10%) of the sentences forms the validation split.

Every random draw is a hash of ``(seed, step, page id, sentence number)``: the corpus is
the same for a seed whatever the number of tasks, their order, or an interrupted run.

The ``4types`` config (NER-BERT-4types) has the same sentences; each entity is
``person`` (class under dbo:Person), ``location`` (dbo:Place), ``organisation``
(dbo:Organisation) or ``ENTITY``.

Passes over the typed shards stream one Parquet batch at a time, so memory does not grow
with the corpus; the final folder is written through ``datasets`` (memory-mapped Arrow).
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .dbpedia import ENTITY
from .sentences import bio_tags

logger = logging.getLogger(__name__)

CONFIGS = ("all", "4types")
COARSE_TYPES = ("location", "organisation", "person")


@dataclass
class CorpusOptions:
    """The paper's filtering and balancing parameters (its values are the defaults)."""

    min_category_entities: int = 10
    top_categories: int = 20
    drop_probabilities: tuple[float, float, float] = (0.3, 0.5, 0.7)
    alpha: float = 0.7
    validation_fraction: float = 0.1
    seed: int = 42
    balance: bool = True

    def __post_init__(self) -> None:
        if len(self.drop_probabilities) != 3 or not all(0 <= p <= 1 for p in self.drop_probabilities):
            raise ValueError(
                f"--drop_probabilities takes three probabilities in [0, 1] (3 / 4 / more than 4 ENTITY mentions), "
                f"got {list(self.drop_probabilities)}."
            )
        if not 0 < self.alpha <= 1:
            raise ValueError(f"--alpha must be in (0, 1] (1 = no balancing), got {self.alpha}.")
        if not 0 <= self.validation_fraction < 1:
            raise ValueError(f"--validation_fraction must be in [0, 1), got {self.validation_fraction}.")


def uniform(seed: int, step: str, page_id: int, sentence: int) -> float:
    """A reproducible draw in [0, 1) for one sentence and one step."""
    digest = hashlib.blake2b(f"{seed}:{step}:{page_id}:{sentence}".encode(), digest_size=8).digest()
    return struct.unpack("<Q", digest)[0] / 2**64


@dataclass
class StepCounts:
    sentences: int = 0
    tokens: int = 0
    entities: int = 0
    categories: Counter = field(default_factory=Counter)

    def add(self, tokens: int, categories: Sequence[str]) -> None:
        self.sentences += 1
        self.tokens += tokens
        self.entities += len(categories)
        self.categories.update(categories)

    def row(self, step: str) -> dict[str, Any]:
        return {"step": step, "sentences": self.sentences, "tokens": self.tokens, "entities": self.entities,
                "categories": len([c for c in self.categories if c != ENTITY]),
                "entity_mentions": self.categories.get(ENTITY, 0)}


def typed_shards(work_dir: str | Path) -> list[Path]:
    return sorted((Path(work_dir) / "stage2" / "typed").glob("*.parquet"))


def _rows(shards: Sequence[Path]) -> Iterator[dict[str, Any]]:
    for path in shards:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            yield from batch.to_pylist()


def _fine(categories: Sequence[str], rare: set[str] | frozenset[str] = frozenset()) -> list[str]:
    return [ENTITY if c in rare else c for c in categories] if rare else list(categories)


@dataclass
class _Decision:
    keep: bool
    categories: list[str]
    reason: str = ""


class CorpusBuilder:
    """Counts, filters, balances and splits the typed sentences of a work folder."""

    def __init__(self, work_dir: str | Path, options: CorpusOptions):
        self.work_dir = Path(work_dir)
        self.options = options
        self.shards = typed_shards(work_dir)
        if not self.shards:
            raise ValueError(f"{self.work_dir}/stage2/typed has no shards: run the extract and type stages first.")
        self.steps: list[dict[str, Any]] = []
        self.rare: set[str] = set()
        self.top: set[str] = set()
        self.rates: dict[str, float] = {}
        self.before_balancing: Counter = Counter()
        self.after_balancing: Counter = Counter()

    # the decision for one sentence, given the counts of the earlier passes
    def _filter(self, row: dict[str, Any]) -> _Decision:
        categories = _fine(row["span_category"], self.rare)
        if not categories or all(c == ENTITY for c in categories):
            return _Decision(False, categories, "no typed entity")
        n_entity = categories.count(ENTITY)
        if n_entity >= 3 and all(c in self.top for c in categories):
            p = self.options.drop_probabilities[min(n_entity, 5) - 3]
            if uniform(self.options.seed, "frequent", row["page_id"], row["sentence"]) < p:
                return _Decision(False, categories, "frequent categories, many ENTITY")
        return _Decision(True, categories)

    def _balanced(self, row: dict[str, Any], categories: list[str]) -> bool:
        if not self.options.balance:
            return True
        rate = max((self.rates[c] for c in categories if c != ENTITY), default=1.0)
        return uniform(self.options.seed, "balance", row["page_id"], row["sentence"]) < rate

    def count(self) -> None:
        """Passes 1 and 2: the counts of steps 1-3, rare and top categories, balancing rates."""
        raw = StepCounts()
        for row in _rows(self.shards):
            raw.add(len(row["tokens"]), _fine(row["span_category"]))
        self.steps.append(raw.row("typed sentences (every anchor an entity)"))
        self.rare = {c for c, n in raw.categories.items() if c != ENTITY and n < self.options.min_category_entities}
        relabelled = Counter()
        for category, n in raw.categories.items():
            relabelled[ENTITY if category in self.rare else category] += n
        self.steps.append({**raw.row(f"1. categories with < {self.options.min_category_entities} entities -> ENTITY"),
                           "categories": len([c for c in relabelled if c != ENTITY]),
                           "entity_mentions": relabelled.get(ENTITY, 0)})
        # the most frequent categories, ENTITY counted, after rare ones became ENTITY
        self.top = {c for c, _ in sorted(relabelled.items(), key=lambda kv: (-kv[1], kv[0]))
                    [: self.options.top_categories]}
        with_entity, filtered = StepCounts(), StepCounts()
        for row in _rows(self.shards):
            categories = _fine(row["span_category"], self.rare)
            if not categories or all(c == ENTITY for c in categories):
                continue
            with_entity.add(len(row["tokens"]), categories)
            if self._filter(row).keep:
                filtered.add(len(row["tokens"]), categories)
        self.steps.append(with_entity.row("2. sentences with at least one typed entity"))
        self.steps.append(filtered.row(
            f"3. ENTITY-heavy sentences of the top-{self.options.top_categories} categories dropped "
            f"(p = {' / '.join(str(p) for p in self.options.drop_probabilities)})"))
        self.before_balancing = Counter(filtered.categories)
        typed = {c: n for c, n in filtered.categories.items() if c != ENTITY}
        smallest = min(typed.values(), default=1)
        self.rates = {c: (n / smallest) ** (self.options.alpha - 1.0) for c, n in typed.items()}

    def _tags(self, row: dict[str, Any], categories: list[str], coarse: bool) -> list[str]:
        if coarse:
            categories = row["span_coarse"]
        return bio_tags(len(row["tokens"]), list(zip(row["span_start"], row["span_end"], categories)))

    def select(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Pass 3: ``(split, row)`` for every kept sentence, with ``tags_all`` and ``tags_4types``."""
        if not self.rates and not self.steps:
            self.count()
        balanced = StepCounts()
        splits = {"train": StepCounts(), "validation": StepCounts()}
        for row in _rows(self.shards):
            decision = self._filter(row)
            if not decision.keep or not self._balanced(row, decision.categories):
                continue
            balanced.add(len(row["tokens"]), decision.categories)
            draw = uniform(self.options.seed, "split", row["page_id"], row["sentence"])
            split = "validation" if draw < self.options.validation_fraction else "train"
            splits[split].add(len(row["tokens"]), decision.categories)
            yield split, {"tokens": row["tokens"], "title": row["title"],
                          "tags_all": self._tags(row, decision.categories, coarse=False),
                          "tags_4types": self._tags(row, decision.categories, coarse=True)}
        self.steps.append(balanced.row(f"4. balanced (alpha {self.options.alpha})" if self.options.balance
                                       else "4. balancing off"))
        for name, counts in splits.items():
            self.steps.append(counts.row(f"5. {name} split"))
        self.after_balancing = balanced.categories


def label_names(categories: Sequence[str]) -> list[str]:
    """``O``, then ``B-``/``I-`` per category, categories in alphabetical order."""
    names = ["O"]
    for category in sorted(categories):
        names += [f"B-{category}", f"I-{category}"]
    return names


def write_selection(builder: CorpusBuilder, folder: Path) -> dict[str, dict[str, Path]]:
    """Stream the kept sentences into ``folder/<config>/<split>.parquet`` (tags as strings)."""
    schema = pa.schema([("tokens", pa.list_(pa.string())), ("ner_tags", pa.list_(pa.string())),
                        ("title", pa.string())])
    paths = {config: {split: folder / config / f"{split}.parquet" for split in ("train", "validation")}
             for config in CONFIGS}
    writers = {}
    buffers: dict[tuple[str, str], list[dict]] = {}
    try:
        for config in CONFIGS:
            for split, path in paths[config].items():
                path.parent.mkdir(parents=True, exist_ok=True)
                writers[config, split] = pq.ParquetWriter(path, schema)
                buffers[config, split] = []
        for split, row in builder.select():
            for config in CONFIGS:
                buffer = buffers[config, split]
                buffer.append({"tokens": row["tokens"], "ner_tags": row[f"tags_{config}"], "title": row["title"]})
                if len(buffer) >= 4096:
                    writers[config, split].write_batch(pa.RecordBatch.from_pylist(buffer, schema=schema))
                    buffer.clear()
        for key, buffer in buffers.items():
            if buffer:
                writers[key].write_batch(pa.RecordBatch.from_pylist(buffer, schema=schema))
    finally:
        for writer in writers.values():
            writer.close()
    return paths


def to_datasets(paths: dict[str, dict[str, Path]], cache_dir: str | None = None) -> dict[str, Any]:
    """The selection as ``DatasetDict`` s with ``ner_tags`` as a ClassLabel sequence per config."""
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    out = {}
    for config, splits in paths.items():
        datasets = {split: Dataset.from_parquet(str(path), cache_dir=cache_dir) for split, path in splits.items()}
        tags: set[str] = set()
        for ds in datasets.values():
            for batch in ds.select_columns(["ner_tags"]).iter(batch_size=10_000):
                for sentence in batch["ner_tags"]:
                    tags.update(t[2:] for t in sentence if t != "O")
        names = label_names(tags)
        features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names)),
                             "title": Value("string")})
        index = {name: i for i, name in enumerate(names)}
        out[config] = DatasetDict({
            split: ds.map(lambda b: {"ner_tags": [[index[t] for t in s] for s in b["ner_tags"]]}, batched=True,
                          features=features, desc=f"{config} {split}: tags to ids")
            for split, ds in datasets.items() if len(ds)
        })
    return out


def write_report(builder: CorpusBuilder, folder: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """``report.json``, ``report.md`` (the per-step table) and ``categories.png`` (Figure 8)."""
    from ..plots import plot_category_counts

    report = {"options": asdict(builder.options), "steps": builder.steps, **extra,
              "rare_categories": sorted(builder.rare), "top_categories": sorted(builder.top),
              "entities_per_category": {"before_balancing": dict(builder.before_balancing.most_common()),
                                        "after_balancing": dict(builder.after_balancing.most_common())}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=1))
    (folder / "report.md").write_text(format_steps(builder.steps) + "\n")
    plot_category_counts(builder.before_balancing, builder.after_balancing, folder / "categories.png")
    return report


def format_steps(steps: Sequence[dict[str, Any]]) -> str:
    lines = ["| step | sentences | tokens | entities | categories | ENTITY mentions |", "|---|---:|---:|---:|---:|---:|"]
    for s in steps:
        lines.append(f"| {s['step']} | {s['sentences']:,} | {s['tokens']:,} | {s['entities']:,} | "
                     f"{s['categories']:,} | {s['entity_mentions']:,} |")
    return "\n".join(lines)
