"""CrossNER's domain corpora from Wikipedia: pages of a domain's categories, anchors as mentions.

CrossNER (Liu et al., AAAI 2021, "Unlabeled Corpora Collection") takes the Wikipedia
pages in each domain's category and its sub-categories as the *domain-level* corpus. Here:

* membership: a page belongs to a domain when one of its categories is reached from the
  domain's seed categories (:data:`SEED_CATEGORIES`, or ``--seed_categories``) by walking
  the category graph breadth-first, parent to sub-category, up to ``depth`` steps. The graph
  comes from the dump's category pages (their own ``[[Category:...]]`` links) and, when
  given, a ``categorylinks`` table (the MySQL dump ``enwiki-*-categorylinks.sql.gz``, or a
  TSV of ``child<TAB>parent`` lines where a child category is written ``Category:Name``);
* mentions: the sentence's anchors whose DBpedia class maps to one of the domain's CrossNER
  types through :data:`CLASS_TO_TYPE`, walked from the most specific class up its
  ancestors (politics: ``OfficeHolder`` -> politician, ``PoliticalParty`` ->
  politicalparty, ``Election`` -> election, ``Country`` -> country, any other ``Place`` ->
  location, ...). Untyped anchors, and classes with no counterpart, are no mentions;
* the existing level builder (:func:`crossner_hf.corpora.select_levels`) then makes the
  entity level (k mentions or more), the task level (a mention of a specialised type) and
  the integrated level.

Example:
    >>> domain_type("politics", "OfficeHolder", lambda c: [c, "Person", "Agent"])
    'politician'
    >>> domain_type("music", "Planet", lambda c: [c, "CelestialBody", "Place"])
    'location'
"""

from __future__ import annotations

import gzip
import logging
import re
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)


def mention_features():
    """The ``datasets.Features`` of a mention table: a text, its index, its entity mentions (character
    offsets, surface, type) and their types. The domain corpora are written in it and the DAPT corpus
    levels (:mod:`crossner_hf.corpora.levels`) read it."""
    from datasets import Features, List, Value

    return Features({
        "text": Value("string"), "idx": Value("int64"), "n_mentions": Value("int32"), "types": List(Value("string")),
        "mentions": List({"start": Value("int32"), "end": Value("int32"), "surface": Value("string"),
                          "type": Value("string")}),
    })


SEED_CATEGORIES: dict[str, tuple[str, ...]] = {
    "politics": ("Politics", "Political organizations", "Political culture", "Elections", "Political parties",
                 "Politicians", "Government"),
    "science": ("Science", "Natural sciences", "Scientists", "Physics", "Chemistry", "Biology", "Astronomy",
                "Scientific theories"),
    "music": ("Music", "Musicians", "Musical groups", "Albums", "Songs", "Music genres", "Musical instruments"),
    "literature": ("Literature", "Writers", "Novels", "Poetry", "Books", "Literary awards", "Literary genres"),
    "ai": ("Artificial intelligence", "Machine learning", "Natural language processing", "Computer vision",
           "Robotics", "Computational linguistics"),
}
"""Per domain, the Wikipedia categories its corpus grows from (the paper names e.g. political
organisations and political cultures for politics)."""

_COMMON: tuple[tuple[str, str], ...] = (
    ("Country", "country"), ("Place", "location"), ("Person", "person"), ("Organisation", "organisation"),
    ("Event", "event"), ("Award", "award"),
)

CLASS_TO_TYPE: dict[str, dict[str, str]] = {
    "politics": dict((("Politician", "politician"), ("OfficeHolder", "politician"),
                      ("PoliticalParty", "politicalparty"), ("Election", "election"), *_COMMON)),
    "science": dict((("Scientist", "scientist"), ("University", "university"),
                     ("AcademicJournal", "academicjournal"), ("ChemicalElement", "chemicalelement"),
                     ("ChemicalCompound", "chemicalcompound"), ("Enzyme", "enzyme"), ("Protein", "protein"),
                     ("CelestialBody", "astronomicalobject"), ("AcademicSubject", "discipline"), *_COMMON)),
    "music": dict((("MusicalArtist", "musicalartist"), ("Band", "band"), ("Album", "album"), ("Single", "song"),
                   ("Song", "song"), ("MusicGenre", "musicgenre"), ("Instrument", "musicalinstrument"), *_COMMON)),
    "literature": dict((("Writer", "writer"), ("Poem", "poem"), ("Book", "book"), ("Magazine", "magazine"),
                        ("LiteraryGenre", "literarygenre"), *_COMMON)),
    "ai": dict((("Scientist", "researcher"), ("University", "university"), ("ProgrammingLanguage", "programlang"),
                ("Software", "product"), ("AcademicConference", "conference"), ("AcademicSubject", "field"),
                *_COMMON)),
}
"""DBpedia class -> CrossNER type per domain; a class not listed takes its nearest listed ancestor.

``event`` and ``award`` exist in every domain but AI; :func:`domain_type` drops a type that is
not in the domain's label list."""


def domain_type(domain: str, cls: str | None, ancestors: Callable[[str], list[str]]) -> str | None:
    """The CrossNER type of an entity of class ``cls`` in ``domain``, or None."""
    from crossner_hf.data.labels import entity_types

    if not cls:
        return None
    mapping = CLASS_TO_TYPE[domain]
    allowed = set(entity_types(domain))
    for name in ancestors(cls):
        if name in mapping:
            return mapping[name] if mapping[name] in allowed else None
    return None


_SQL_ROW = re.compile(r"\((\d+),'((?:[^'\\]|\\.)*)','(?:[^'\\]|\\.)*','[^']*','(?:[^'\\]|\\.)*','[^']*','(\w+)'\)")


def read_category_links(path: str | Path, page_titles: Mapping[int, str]) -> Iterator[tuple[str, str]]:
    """``(child, parent category)`` pairs from a categorylinks table.

    ``child`` is an article title or ``Category:Name``. The MySQL dump gives the child as a
    page id (``cl_from``), resolved through ``page_titles`` (ids of the dump's articles and
    category pages; rows of other pages are skipped).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    is_sql = ".sql" in path.suffixes
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if is_sql:
                if not line.startswith("INSERT INTO"):
                    continue
                for page_id, parent, kind in _SQL_ROW.findall(line):
                    child = page_titles.get(int(page_id))
                    if child is not None and kind in ("page", "subcat"):
                        yield child, parent.replace("\\'", "'").replace("_", " ")
            elif line.strip():
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 2:
                    raise ValueError(f"{path}:{number}: expected 'child<TAB>parent category', got {line.strip()[:80]!r}")
                yield parts[0], parts[1]


def category_closure(seeds: Iterable[str], children: Mapping[str, Iterable[str]], depth: int) -> dict[str, int]:
    """Every category reached from ``seeds`` within ``depth`` steps, with its distance."""
    reached = {seed: 0 for seed in seeds}
    queue = deque(reached)
    while queue:
        category = queue.popleft()
        if reached[category] >= depth:
            continue
        for child in children.get(category, ()):
            if child not in reached:
                reached[child] = reached[category] + 1
                queue.append(child)
    return reached


def category_children(parent_pairs: Iterable[tuple[str, Sequence[str]]]) -> dict[str, set[str]]:
    """``parent -> sub-categories`` from ``(category, its parents)`` pairs."""
    children: dict[str, set[str]] = defaultdict(set)
    for category, parents in parent_pairs:
        for parent in parents:
            children[parent].add(category)
    return children


def index_rows(work_dir: Path, kind: str, columns: list[str]) -> Iterator[dict]:
    """Rows of one table of the index stage (:func:`~crossner_hf.wikipedia.pipeline.run_page_index`)."""
    import pyarrow.parquet as pq

    for path in sorted((work_dir / "index" / kind).glob("*.parquet")):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=8192, columns=columns):
            yield from batch.to_pylist()


def domain_pages(
    work_dir: str | Path, domain: str, *, depth: int = 2, seeds: Sequence[str] | None = None,
    category_links: Sequence[str] = (), page_categories: dict[int, list[str]] | None = None,
) -> tuple[set[int], dict[str, int]]:
    """Page ids of ``domain`` and the categories reached (name -> distance from a seed), from the
    index stage's tables in ``work_dir``; ``page_categories``, when given, is filled with each chosen
    page's reached categories (what each category gave: the entity seeding's report)."""
    work = Path(work_dir)
    parents: dict[str, set[str]] = defaultdict(set)  # the category graph: held, it is what the walk needs
    for row in index_rows(work, "category", ["title", "parents"]):
        parents[row["title"]].update(row["parents"])
    listed: dict[int, list[str]] = defaultdict(list)  # an article's categories from --category_links
    if category_links:
        titles = {row["page_id"]: row["title"] for row in index_rows(work, "page", ["page_id", "title"])}
        titles.update({row["page_id"]: f"Category:{row['title']}"
                       for row in index_rows(work, "category", ["page_id", "title"])})
        ids = {title: page_id for page_id, title in titles.items()}
        for links in category_links:
            for child, parent in read_category_links(links, titles):
                if child.startswith("Category:"):
                    parents[child[len("Category:"):]].add(parent)
                elif child in ids:
                    listed[ids[child]].append(parent)
        del titles, ids
    reached = category_closure(seeds or SEED_CATEGORIES[domain], category_children(parents.items()), depth)
    # the articles stream past: memory holds the category graph and the members, not every page's categories
    members: set[int] = set()
    for row in index_rows(work, "page", ["page_id", "categories"]):
        held = [c for c in (*row["categories"], *listed.get(row["page_id"], ())) if c in reached]
        if held:
            members.add(row["page_id"])
            if page_categories is not None:
                page_categories[row["page_id"]] = list(dict.fromkeys(held))
    logger.info("%s: %d categories within depth %d of %d seed(s); %d pages", domain, len(reached), depth,
                len(seeds or SEED_CATEGORIES[domain]), len(members))
    return members, reached


def domain_text(typed_dir: str | Path, cache_dir: str | None = None):
    """The sentences of the extract's typed shards (``typed_dir``) as a ``Dataset`` with a ``text`` column, each
    sentence's words joined by spaces (the CrossNER files' tokenisation), in shard and row order: the domain level
    of an entity-seeded build, whose mentions an entity list finds afterwards."""
    import pyarrow.parquet as pq
    from datasets import Dataset, Features, Value

    shards = sorted(str(path) for path in Path(typed_dir).glob("*.parquet"))

    def rows(shards: list[str]) -> Iterator[dict]:
        for path in shards:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=4096, columns=["tokens"]):
                for tokens in batch.column(0).to_pylist():
                    yield {"text": " ".join(tokens)}

    return Dataset.from_generator(rows, features=Features({"text": Value("string")}), cache_dir=cache_dir,
                                  gen_kwargs={"shards": shards})


def domain_corpus(typed_dir: str | Path, domain: str, ancestors: Callable[[str], list[str]],
                  class_of: Mapping[str, str], cache_dir: str | None = None, workers: int = 1):
    """The domain-level corpus as an annotated ``Dataset`` (``text``, ``idx``, ``n_mentions``,
    ``types``, ``mentions``) ready for :func:`crossner_hf.corpora.select_levels`, from the typed
    sentences of the domain's pages (``typed_dir``: the domain extract stage's shards).

    ``text`` is the sentence's words joined by spaces (the CrossNER files' tokenisation);
    ``class_of`` maps a lower-cased category back to its DBpedia class name. ``workers`` processes
    share the shards (``idx`` is counted from each shard's first row, so the dataset is the same
    whatever the number).
    """
    import pyarrow.parquet as pq
    from datasets import Dataset


    shards = sorted(str(path) for path in Path(typed_dir).glob("*.parquet"))
    offsets, total = [], 0
    for path in shards:
        offsets.append(total)
        total += pq.ParquetFile(path).metadata.num_rows
    columns = ["tokens", "span_start", "span_end", "span_category"]

    def rows(shards: list[str], offsets: list[int]) -> Iterator[dict]:
        kinds: dict[str, str | None] = {}  # category -> CrossNER type: one ancestor walk per category
        for path, idx in zip(shards, offsets):
            for batch in pq.ParquetFile(path).iter_batches(batch_size=4096, columns=columns):
                for row in batch.to_pylist():
                    starts, pos = [], 0
                    for word in row["tokens"]:
                        starts.append(pos)
                        pos += len(word) + 1
                    text = " ".join(row["tokens"])
                    mentions = []
                    for first, end, category in zip(row["span_start"], row["span_end"], row["span_category"]):
                        if category not in kinds:
                            kinds[category] = domain_type(domain, class_of.get(category), ancestors)
                        kind = kinds[category]
                        if kind is not None:
                            s, e = starts[first], starts[end - 1] + len(row["tokens"][end - 1])
                            mentions.append({"start": s, "end": e, "surface": text[s:e], "type": kind})
                    yield {"text": text, "idx": idx, "n_mentions": len(mentions),
                           "types": sorted({m["type"] for m in mentions}), "mentions": mentions}
                    idx += 1

    num_proc = min(workers, len(shards)) if workers > 1 and len(shards) > 1 else None
    return Dataset.from_generator(rows, features=mention_features(), cache_dir=cache_dir, num_proc=num_proc,
                                  gen_kwargs={"shards": shards, "offsets": offsets})
