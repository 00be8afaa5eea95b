"""The NER-BERT corpus from typed Wikipedia sentences: filtering, balancing, split, report.

Liu et al. (2021, NER-BERT, section 2). Every anchor is an entity whose category is the
lower-cased most specific DBpedia class of its link target, or ``ENTITY`` when the
target is untyped. Then, with the paper's values as defaults:

1. categories with fewer than ``min_category_entities`` (10) entities become ``ENTITY``
   (the entity stays an entity; its class is too rare to learn). Entities are counted as
   the paper says, as distinct linked entities (link targets); ``scarce_count="mentions"``
   counts mentions instead;
2. sentences with no entity, or only ``ENTITY`` entities, are dropped;
3. a sentence whose entities all belong to the ``top_categories`` (20) most frequent
   categories (``ENTITY`` counted among them) and that has 3 / 4 / more than 4 ``ENTITY``
   mentions is dropped with probability 0.3 / 0.5 / 0.7;
4. balancing, as in XLM / mT5 (``balancing="sample"``, the paper's): categories are drawn
   from a multinomial with q_E proportional to |E|^alpha (alpha 0.7, |E| the category's
   mentions after step 3), ``target_size`` draws in all (default: the number of sentences
   before balancing, so the corpus does not shrink), and each draw of E picks a sentence
   containing E uniformly, with replacement: rare categories are repeated, frequent ones
   thinned. Streamed, each (sentence, category) pair gets Poisson(target x q_E / m_E)
   copies (m_E: the sentences containing E), the per-sentence law of that multinomial in
   the limit, so the expected size is ``target_size`` exactly. ``balancing="downsample"``
   (this project's earlier choice) keeps a sentence with probability max over its
   categories of (|E| / |E_min|)^(alpha - 1), so the corpus only shrinks; ``"none"`` skips it;
5. a ``validation_fraction`` (10%) of the sentences forms the validation split (every copy
   of a sentence lands in the same split).

Every random draw is a hash of ``(seed, step, page id, sentence number)``: the corpus is
the same for a seed whatever the number of tasks, their order, or an interrupted run.

The ``4types`` config (NER-BERT-4types) has the same sentences; each entity is
``person`` (class under dbo:Person), ``location`` (dbo:Place), ``organisation``
(dbo:Organisation) or ``ENTITY``. The ``212types`` config (paper section 4.3; the name
follows ``merged_categories``) has the same sentences too, with the most fine-grained
categories merged into their parent class (tennis / soccer / golf tournament -> sports
tournament) until ``merged_categories`` remain: the deepest category, fewest mentions first,
joins its parent, one at a time; the merge table goes to the report.

Passes over the typed shards stream one Parquet batch at a time, so memory does not grow
with the corpus; the final folder is written through ``datasets`` (memory-mapped Arrow).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import multiprocessing
import shutil
import struct
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from crossner_hf.data.labels import NERBERT_BASE_CONFIGS as BASE_CONFIGS
from crossner_hf.data.labels import NERBERT_MERGED_CATEGORIES, nerbert_merged_config
from crossner_hf.wikipedia.dbpedia import ENTITY
from crossner_hf.wikipedia.sentences import bio_tags

logger = logging.getLogger(__name__)

_ARROW_BATCH = 65_536
BALANCING = ("sample", "downsample", "none")


@dataclass
class CorpusOptions:
    """The paper's filtering and balancing parameters (its values are the defaults)."""

    min_category_entities: int = 10
    top_categories: int = 20
    drop_probabilities: tuple[float, float, float] = (0.3, 0.5, 0.7)
    alpha: float = 0.7
    validation_fraction: float = 0.1
    seed: int = 42
    balancing: str = "sample"
    target_size: int | None = None
    scarce_count: str = "entities"
    merged_categories: int = NERBERT_MERGED_CATEGORIES

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
        if self.balancing not in BALANCING:
            raise ValueError(f"--balancing {self.balancing!r}: choose one of {', '.join(BALANCING)}.")
        if self.scarce_count not in ("entities", "mentions"):
            raise ValueError(f"--scarce_count {self.scarce_count!r}: choose entities (the paper) or mentions.")
        if self.target_size is not None and self.target_size < 1:
            raise ValueError(f"--target_size {self.target_size}: give a positive number of sentences.")
        if self.merged_categories < 0:
            raise ValueError(f"--merged_categories {self.merged_categories}: 0 (no merged config) or a positive count.")

    @property
    def configs(self) -> tuple[str, ...]:
        """The corpus configs: ``all``, ``4types`` and, unless off, ``<merged_categories>types``."""
        return BASE_CONFIGS + ((nerbert_merged_config(self.merged_categories),) if self.merged_categories else ())


def poisson_quantile(u: float, lam: float) -> int:
    """The smallest k with P(Poisson(lam) <= k) > u: a Poisson draw from one uniform number."""
    if lam <= 0:
        return 0
    if lam > 500:  # exp(-lam) underflows; the normal approximation is exact to well under one count there
        from statistics import NormalDist

        return max(0, round(NormalDist(lam, lam ** 0.5).inv_cdf(min(max(u, 1e-12), 1 - 1e-12))))
    k, p = 0, math.exp(-lam)
    cumulative = p
    while u >= cumulative and k < lam + 50 * lam ** 0.5 + 50:
        k += 1
        p *= lam / k
        cumulative += p
    return k


def merge_categories(counts: Mapping[str, int], ontology: Any, target: int) -> dict[str, str]:
    """Category -> merged category, merging the deepest (fewest mentions, then name) into its parent until
    ``target`` categories remain or every category is a root. Categories are lower-cased class names;
    ones the ontology does not know stay as they are."""
    names = {c.lower(): c for c in ontology.classes}
    current = {c: c for c in counts if c != ENTITY}
    mentions = Counter({c: n for c, n in counts.items() if c != ENTITY})
    while len(set(current.values())) > target:
        live = sorted({v for v in current.values() if v in names and ontology.parent(names[v]) is not None},
                      key=lambda c: (-ontology.depth(names[c]), mentions[c], c))
        if not live:
            logger.warning("Merging stops at %d categories: the rest are ontology roots or unknown classes.",
                           len(set(current.values())))
            break
        child = live[0]
        parent = ontology.parent(names[child]).lower()
        mentions[parent] += mentions.pop(child)
        current = {c: (parent if v == child else v) for c, v in current.items()}
    return current


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

    def merge(self, other: StepCounts) -> None:
        """Add another shard's counts (categories keep first-seen order, as one pass over both gives)."""
        self.sentences += other.sentences
        self.tokens += other.tokens
        self.entities += other.entities
        self.categories.update(other.categories)

    def row(self, step: str) -> dict[str, Any]:
        return {"step": step, "sentences": self.sentences, "tokens": self.tokens, "entities": self.entities,
                "categories": len([c for c in self.categories if c != ENTITY]),
                "entity_mentions": self.categories.get(ENTITY, 0)}


TYPED_DIR = Path("nerbert") / "typed"
"""Where the NER-BERT builder's extract stage writes the typed sentences, under the work folder."""


def typed_shards(folder: str | Path) -> list[Path]:
    return sorted(Path(folder).glob("*.parquet"))


def _batches(shards: Sequence[Path], columns: Sequence[str]) -> Iterator[tuple[pa.RecordBatch, list[dict[str, Any]],
                                                                         list[int]]]:
    """Per record batch: the batch, its ``columns`` as Python rows (only those: a pass never converts the
    token lists it does not need) and each sentence's token count (computed in Arrow)."""
    for path in shards:
        parquet = pq.ParquetFile(path)
        present = [c for c in columns if c in parquet.schema_arrow.names]
        for batch in parquet.iter_batches(batch_size=_ARROW_BATCH, columns=[*present, "tokens"]):
            lengths = pc.list_value_length(batch.column("tokens")).to_pylist()
            yield batch, batch.select(present).to_pylist(), lengths


def _rows(shards: Sequence[Path], columns: Sequence[str]) -> Iterator[tuple[dict[str, Any], int]]:
    """``(row of the given columns, token count)`` for every typed sentence."""
    for _, rows, lengths in _batches(shards, columns):
        yield from zip(rows, lengths)


def _fine(categories: Sequence[str], rare: set[str] | frozenset[str] = frozenset()) -> list[str]:
    return [ENTITY if c in rare else c for c in categories] if rare else list(categories)


@dataclass
class _Decision:
    keep: bool
    categories: list[str]
    reason: str = ""


class CorpusBuilder:
    """Counts, filters, balances and splits the typed sentences of a work folder.

    ``ontology`` (a :class:`~crossner_hf.wikipedia.dbpedia.Ontology`) is needed for the merged
    config; without one only ``all`` and ``4types`` are built. ``workers`` > 1 runs each pass over
    the typed shards in that many processes; the counts are merged in shard order, so every figure
    and the selection are the ones one process gives.
    """

    def __init__(self, work_dir: str | Path, options: CorpusOptions, ontology: Any = None,
                 typed_dir: str | Path | None = None, workers: int = 1):
        self.work_dir = Path(work_dir)
        self.workers = workers
        self.options = options
        self.ontology = ontology
        self.configs = options.configs if ontology is not None else BASE_CONFIGS
        # the builder's extract stage writes nerbert/typed; benchmarks/wikipedia_scale.py typed, stage2/typed
        folder = Path(typed_dir) if typed_dir is not None else self.work_dir / "stage2" / "typed"
        self.shards = typed_shards(folder)
        if not self.shards:
            raise ValueError(f"{folder} has no typed shards: run the extract stage first.")
        self.steps: list[dict[str, Any]] = []
        self.rare: set[str] = set()
        self.top: set[str] = set()
        self.rates: dict[str, float] = {}       # downsampling: keep probability per category
        self.poisson: dict[str, float] = {}     # sampling: expected copies per (sentence, category)
        self.merge: dict[str, str] = {}
        self.target_size = 0
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

    def _copies(self, row: dict[str, Any], categories: list[str]) -> int:
        """How many times the sentence enters the corpus (0: dropped) under the balancing option."""
        seed, page, sentence = self.options.seed, row["page_id"], row["sentence"]
        if self.options.balancing == "none":
            return 1
        typed = sorted({c for c in categories if c != ENTITY})
        if self.options.balancing == "downsample":
            rate = max((self.rates[c] for c in typed), default=1.0)
            return int(uniform(seed, "balance", page, sentence) < rate)
        return sum(poisson_quantile(uniform(seed, f"sample:{c}", page, sentence), self.poisson[c]) for c in typed)

    def _over_shards(self, function: Callable, *args: Any) -> list:
        """``function(*args, shard)`` for every shard, in shard order, in ``workers`` processes."""
        if self.workers <= 1 or len(self.shards) <= 1:
            return [function(*args, shard) for shard in self.shards]
        # spawn: the parent holds Arrow's thread pool, which a forked child must not inherit
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(self.workers, len(self.shards)), mp_context=context) as pool:
            return list(pool.map(partial(function, *args), self.shards))

    def count(self) -> None:
        """Passes 1 and 2: the counts of steps 1-3, rare and top categories, the merge table, balancing rates."""
        raw = StepCounts()
        distinct: dict[str, set[str]] = {}
        cap = self.options.min_category_entities
        for shard_raw, shard_distinct in self._over_shards(_raw_counts, cap):
            raw.merge(shard_raw)
            for category, targets in shard_distinct.items():
                seen = distinct.setdefault(category, set())
                if len(seen) < cap:  # a shard's set is capped too: at least `cap` in the union means >= cap
                    seen.update(targets)
        self.steps.append(raw.row("sentences read (every anchor an entity)"))
        if self.options.scarce_count == "mentions":
            size = raw.categories
        else:
            size = Counter({c: min(len(distinct.get(c, ())), cap) for c in raw.categories})
        self.rare = {c for c in raw.categories if c != ENTITY and size[c] < cap}
        relabelled = Counter()
        for category, n in raw.categories.items():
            relabelled[ENTITY if category in self.rare else category] += n
        unit = "distinct entities" if self.options.scarce_count == "entities" else "mentions"
        self.steps.append({**raw.row(f"1. categories with < {cap} {unit} -> ENTITY"),
                           "categories": len([c for c in relabelled if c != ENTITY]),
                           "entity_mentions": relabelled.get(ENTITY, 0)})
        if self.ontology is not None and self.options.merged_categories:
            self.merge = merge_categories(relabelled, self.ontology, self.options.merged_categories)
        # the most frequent categories, ENTITY counted, after rare ones became ENTITY
        self.top = {c for c, _ in sorted(relabelled.items(), key=lambda kv: (-kv[1], kv[0]))
                    [: self.options.top_categories]}
        with_entity, filtered = StepCounts(), StepCounts()
        sentences_with: Counter = Counter()
        for shard_with, shard_filtered, shard_sentences in self._over_shards(_filtered_counts, self):
            with_entity.merge(shard_with)
            filtered.merge(shard_filtered)
            sentences_with.update(shard_sentences)
        self.steps.append(with_entity.row("2. sentences with at least one typed entity"))
        self.steps.append(filtered.row(
            f"3. ENTITY-heavy sentences of the top-{self.options.top_categories} categories dropped "
            f"(p = {' / '.join(str(p) for p in self.options.drop_probabilities)})"))
        self.before_balancing = Counter(filtered.categories)
        typed = {c: n for c, n in filtered.categories.items() if c != ENTITY}
        smallest = min(typed.values(), default=1)
        self.rates = {c: (n / smallest) ** (self.options.alpha - 1.0) for c, n in typed.items()}
        self.target_size = self.options.target_size or filtered.sentences
        weights = {c: n ** self.options.alpha for c, n in typed.items()}
        total = sum(weights.values()) or 1.0
        self.poisson = {c: self.target_size * w / total / sentences_with[c] for c, w in weights.items()}

    def _tags(self, row: dict[str, Any], length: int, categories: list[str], config: str) -> list[str]:
        if config == "4types":
            categories = row["span_coarse"]
        elif config != "all":
            categories = [self.merge.get(c, c) for c in categories]
        return bio_tags(length, list(zip(row["span_start"], row["span_end"], categories)))

    def _balancing_step(self) -> str:
        o = self.options
        if o.balancing == "sample":
            return f"4. balanced: sampled with replacement, q_E ~ |E|^{o.alpha}, target {self.target_size:,} sentences"
        return f"4. balanced: downsampled (alpha {o.alpha})" if o.balancing == "downsample" else "4. balancing off"

    def shard_selection(self, shard: Path, balanced: StepCounts,
                        splits: dict[str, StepCounts]) -> Iterator[tuple[str, pa.Table]]:
        """Pass 3 on one shard: per record batch and split, the kept sentences (each once per copy, in
        input order) as a table of ``page_id``, ``sentence``, ``tokens``, ``title`` and ``tags:<config>``
        per config; ``balanced`` and ``splits`` count them.

        The decisions and tags are made row by row from the span columns; the token lists and titles
        are taken from the Arrow batch by index, never turned into Python objects.
        """
        columns = ["page_id", "sentence", "span_start", "span_end", "span_category", "span_coarse", "title"]
        for batch, rows, lengths in _batches([shard], columns):
            picked: dict[str, list[int]] = {"train": [], "validation": []}
            tags: dict[str, dict[str, list]] = {split: {c: [] for c in self.configs} for split in picked}
            for index, (row, length) in enumerate(zip(rows, lengths)):
                decision = self._filter(row)
                if not decision.keep:
                    continue
                copies = self._copies(row, decision.categories)
                if not copies:
                    continue
                draw = uniform(self.options.seed, "split", row["page_id"], row["sentence"])
                split = "validation" if draw < self.options.validation_fraction else "train"
                row_tags = {config: self._tags(row, length, decision.categories, config) for config in self.configs}
                for _ in range(copies):
                    balanced.add(length, decision.categories)
                    splits[split].add(length, decision.categories)
                    picked[split].append(index)
                    for config, config_tags in row_tags.items():
                        tags[split][config].append(config_tags)
            for split, indices in picked.items():
                if indices:
                    taken = pa.array(indices, pa.int64())
                    yield split, pa.table({
                        **{c: batch.column(c).take(taken) for c in ("page_id", "sentence", "tokens", "title")},
                        **{f"tags:{c}": pa.array(t, pa.list_(pa.string())) for c, t in tags[split].items()}})

    def finish_selection(self, balanced: StepCounts, splits: dict[str, StepCounts]) -> None:
        """Record steps 4-5 once pass 3 has gone over every shard."""
        self.steps.append(balanced.row(self._balancing_step()))
        for name, counts in splits.items():
            self.steps.append(counts.row(f"5. {name} split"))
        self.after_balancing = balanced.categories

    def select(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Pass 3 row by row, in this process: ``(split, {"page_id", "sentence", "tokens", "title", "tags":
        {config: tags}})`` (for inspection and small corpora; :func:`write_selection` writes shard by shard)."""
        if not self.steps:
            self.count()
        balanced, splits = StepCounts(), {"train": StepCounts(), "validation": StepCounts()}
        for shard in self.shards:
            for split, table in self.shard_selection(shard, balanced, splits):
                for row in table.to_pylist():
                    tags = {config: row.pop(f"tags:{config}") for config in self.configs}
                    yield split, {**row, "tags": tags}
        self.finish_selection(balanced, splits)


# the per-shard work of each pass, at module level so that worker processes find it by name
def _raw_counts(cap: int, shard: Path) -> tuple[StepCounts, dict[str, set[str]]]:
    """Pass 1 on one shard: sentences, tokens and mentions per category, distinct targets capped at ``cap``
    (memory stays flat on any corpus)."""
    raw = StepCounts()
    distinct: dict[str, set[str]] = {}
    for row, length in _rows([shard], ["span_category", "span_target"]):
        raw.add(length, _fine(row["span_category"]))
        for category, target in zip(row["span_category"], row.get("span_target") or ()):
            seen = distinct.setdefault(category, set())
            if len(seen) < cap:
                seen.add(target)
    return raw, distinct


def _filtered_counts(builder: CorpusBuilder, shard: Path) -> tuple[StepCounts, StepCounts, Counter]:
    """Pass 2 on one shard: steps 2 and 3, and the kept sentences per typed category."""
    with_entity, filtered = StepCounts(), StepCounts()
    sentences_with: Counter = Counter()
    for row, length in _rows([shard], ["span_category", "page_id", "sentence"]):
        categories = _fine(row["span_category"], builder.rare)
        if not categories or all(c == ENTITY for c in categories):
            continue
        with_entity.add(length, categories)
        if builder._filter(row).keep:
            filtered.add(length, categories)
            sentences_with.update({c for c in categories if c != ENTITY})
    return with_entity, filtered, sentences_with


_SELECTION_SCHEMA = pa.schema([("tokens", pa.list_(pa.string())), ("ner_tags", pa.list_(pa.string())),
                               ("title", pa.string())])


def _write_shard_selection(builder: CorpusBuilder, folder: Path, shard: Path
                           ) -> tuple[dict[str, dict[str, Path]], StepCounts, dict[str, StepCounts]]:
    """Pass 3 on one shard, written to ``folder/<config>/<split>-<shard>.parquet`` (splits it has rows for)."""
    balanced, splits = StepCounts(), {"train": StepCounts(), "validation": StepCounts()}
    writers: dict[tuple[str, str], pq.ParquetWriter] = {}
    paths: dict[str, dict[str, Path]] = {config: {} for config in builder.configs}
    try:
        for split, table in builder.shard_selection(shard, balanced, splits):
            for config in builder.configs:
                if (config, split) not in writers:
                    path = paths[config][split] = folder / config / f"{split}-{shard.stem}.parquet"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    writers[config, split] = pq.ParquetWriter(path, _SELECTION_SCHEMA)
                writers[config, split].write_table(pa.table(
                    [table.column("tokens"), table.column(f"tags:{config}"), table.column("title")],
                    schema=_SELECTION_SCHEMA))
    finally:
        for writer in writers.values():
            writer.close()
    return paths, balanced, splits


def bio_label_names(categories: Sequence[str]) -> list[str]:
    """``O``, then ``B-``/``I-`` per category, categories in alphabetical order."""
    names = ["O"]
    for category in sorted(categories):
        names += [f"B-{category}", f"I-{category}"]
    return names


def write_selection(builder: CorpusBuilder, folder: Path) -> dict[str, dict[str, list[Path]]]:
    """Pass 3 over every shard (``builder.workers`` processes): the kept sentences of each config and split
    as ``folder/<config>/<split>-<shard>.parquet`` files (tags as strings), listed in shard order."""
    if not builder.steps:
        builder.count()
    if folder.exists():
        shutil.rmtree(folder)  # a rerun must not pick up an earlier run's shard files
    balanced, splits = StepCounts(), {"train": StepCounts(), "validation": StepCounts()}
    paths: dict[str, dict[str, list[Path]]] = {c: {"train": [], "validation": []} for c in builder.configs}
    for shard_paths, shard_balanced, shard_splits in builder._over_shards(_write_shard_selection, builder, folder):
        balanced.merge(shard_balanced)
        for name, counts in shard_splits.items():
            splits[name].merge(counts)
        for config, by_split in shard_paths.items():
            for split, path in by_split.items():
                paths[config][split].append(path)
    builder.finish_selection(balanced, splits)
    return paths


def _tag_names(files: Sequence[Path]) -> list[str]:
    """``O`` and B-/I- of every category a config's selection uses (both splits), read column-wise."""
    tags: set[str] = set()
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=_ARROW_BATCH, columns=["ner_tags"]):
            tags.update(pc.unique(pc.list_flatten(batch.column("ner_tags"))).to_pylist())
    return bio_label_names({t[2:] for t in tags if t != "O"})


def _with_tag_ids(files: Sequence[Path], names: list[str]) -> Iterator[pa.Table]:
    """The selection's batches with ``ner_tags`` as ids into ``names`` (vectorised: no row becomes Python)."""
    value_set = pa.array(names)
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=_ARROW_BATCH):
            tags = batch.column("ner_tags")
            ids = pc.index_in(pc.list_flatten(tags), value_set=value_set).cast(pa.int64())
            offsets = pc.subtract(tags.offsets, tags.offsets[0])
            yield pa.Table.from_batches([batch]).set_column(
                batch.schema.get_field_index("ner_tags"), "ner_tags", pa.ListArray.from_arrays(offsets, ids))


def selection_sizes(paths: dict[str, dict[str, list[Path]]]) -> dict[str, dict[str, int]]:
    """Rows per config and non-empty split of the selection (from the Parquet footers)."""
    sizes = {config: {split: sum(pq.read_metadata(path).num_rows for path in files) for split, files in splits.items()}
             for config, splits in paths.items()}
    return {config: {split: n for split, n in splits.items() if n} for config, splits in sizes.items()}


def hub_configs(paths: dict[str, dict[str, list[Path]]]) -> dict[str, Any]:
    """The selection as :class:`~crossner_hf.publishing.dataset_folder.ConfigBatches` per config, ``ner_tags`` a ClassLabel
    sequence (``O`` then B-/I- of the config's categories in alphabetical order); empty splits left out.

    The rows stream from the selection's Parquet into the Hub folder's shards: no ``datasets`` cache,
    one batch in memory (at the paper's 16.3M sentences the Arrow cache route held ~1 GB and wrote
    two 12 GB copies per config).
    """
    from datasets import ClassLabel, Features, List, Value

    from crossner_hf.publishing.dataset_folder import ConfigBatches

    out = {}
    for config, splits in paths.items():
        names = _tag_names([path for files in splits.values() for path in files])
        features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names)),
                             "title": Value("string")})
        kept = selection_sizes({config: splits})[config]
        out[config] = ConfigBatches(features, {split: _with_tag_ids(splits[split], names) for split in kept})
    return out


def write_report(builder: CorpusBuilder, folder: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """``report.json``, ``report.md`` (the per-step table) and ``categories.png`` (Figure 8)."""
    from crossner_hf.evaluation.plots import plot_category_counts

    report = {"options": asdict(builder.options), "steps": builder.steps, **extra,
              "rare_categories": sorted(builder.rare), "top_categories": sorted(builder.top),
              "configs": list(builder.configs), "target_size": builder.target_size,
              "merge_table": {c: m for c, m in sorted(builder.merge.items()) if c != m},
              "merged_categories": len(set(builder.merge.values())),
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
