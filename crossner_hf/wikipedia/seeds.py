"""A domain's Wikipedia pages found from the user's own train entities, not from hand-picked categories.

CrossNER grows each domain corpus from Wikipedia categories chosen by hand (``SEED_CATEGORIES``). A user
with a labeled folder already holds better seeds: the entities of their train split, many of which are
page titles. From the index stage's tables (``index/{page,redirect,category}``, no parsing):

1. **match** (:func:`match_entities`): each entity surface to an article of the dump, by the article's
   title, else a redirect's title (followed to its end), else, for the surfaces still unmatched, the text
   of the dump's links (``[[The Beatles|Fab Four]]``: the most frequent target of links showing that
   text; one more reading pass over the dump, a datatrove stage, resumable, skipped when every surface
   matched). Surfaces are compared without spaces and with the first letter upper-cased, so the
   Treebank words of ``Guns N ' Roses`` meet the title ``Guns N' Roses``;
2. **seeds** (:func:`choose_seeds`): the categories of the matched pages; one is a seed when the pages of
   at least ``min_entities`` distinct entities are in it and they are at least ``min_share`` of its pages
   in the dump (so ``Living people`` or ``1942 births``, holding a few entities among very many pages,
   are left out while ``English rock music groups`` is kept);
3. **pages**: the seeds expanded down the category graph (:func:`~crossner_hf.wikipedia.domains.domain_pages`,
   ``depth``) plus the matched pages themselves.

Only the entities handed in are used: ``build-corpora`` hands in those of the train split alone, so no
dev or test entity chooses pre-training text (what would leak the evaluation into DAPT).
:func:`write_seed_report` writes what was matched and chosen (``seeds.json``, ``seeds.md``) for review;
``--seed_categories`` pins the categories instead.

Example:
    >>> surface_key("Guns N ' Roses"), surface_key("guns_N'_Roses")
    ("GunsN'Roses", "GunsN'Roses")
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from crossner_hf.extras import require

require("datatrove", "wikipedia")  # one line naming the extra instead of an ImportError traceback
from datatrove.data import Document, DocumentsPipeline  # noqa: E402
from datatrove.pipeline.base import PipelineStep  # noqa: E402

from crossner_hf.wikipedia.domains import index_rows  # noqa: E402
from crossner_hf.wikipedia.titles import normalise_title  # noqa: E402

logger = logging.getLogger(__name__)

_LINK = re.compile(r"\[\[([^\[\]|]+)\|([^\[\]|]+)\]\]")
"""A piped link ``[[target|shown text]]`` (a plain ``[[Title]]`` shows its title, which step 1 matches)."""


def surface_key(text: str) -> str:
    """The key an entity surface, a title and a link's text meet in: the title spelling without spaces."""
    return normalise_title(text.replace("'''", "").replace("''", "")).replace(" ", "")


@dataclass
class EntityMatch:
    """One train entity and the article found for it (``how``: ``title``, ``redirect`` or ``anchor``)."""

    surface: str
    type: str
    page: str
    page_id: int
    how: str
    links: int = 0
    """``anchor`` matches: how many links showing the surface point to the page."""


@dataclass
class SeedReport:
    """What the entity seeding matched and chose, written as ``seeds.json`` / ``seeds.md``."""

    entities: int
    matches: list[EntityMatch]
    unmatched: list[str]
    categories: list[dict[str, Any]]
    """The matched pages' categories: ``name``, ``entities`` (surfaces), ``pages_in_dump``, ``seed``."""
    seeds: list[str]
    pinned: bool = False
    reached: list[dict[str, Any]] = field(default_factory=list)
    """Every category walked to: ``name``, ``depth``, ``pages`` chosen through it, ``sentences`` of those."""
    pages: int = 0
    sentences: int = 0


def _pages_by_key(work: Path, keys: set[str]) -> dict[str, tuple[int, str, list[str]]]:
    """``key -> (page_id, title, categories)`` of the articles whose title has one of ``keys``."""
    found: dict[str, tuple[int, str, list[str]]] = {}
    for row in index_rows(work, "page", ["page_id", "title", "categories"]):
        key = surface_key(row["title"])
        if key in keys and key not in found:
            found[key] = (row["page_id"], row["title"], row["categories"])
    return found


def _anchor_targets(work: Path, keys: set[str], source_args: Any) -> dict[str, Counter]:
    """``key -> Counter(target title)`` of the dump's links whose shown text has one of ``keys`` (a datatrove
    stage over the dump's articles, named by the keys so a rerun with the same entities resumes)."""
    from crossner_hf.wikipedia.build import _work_setup
    from crossner_hf.wikipedia.dump import ARTICLE_NAMESPACE, quiet_user_errors
    from crossner_hf.wikipedia.pipeline import KindParquetWriter, WikipediaPageReader
    from crossner_hf.stages import run_stage
    import pyarrow.parquet as pq

    ordered = sorted(keys)
    digest = hashlib.sha1("\n".join(ordered).encode()).hexdigest()[:10]
    folder = work / "seeds" / f"anchors-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    keys_file = folder / "keys.json"
    keys_file.write_text(json.dumps(ordered))
    _, _, options, tasks, _ = _work_setup(source_args)
    pipeline = [WikipediaPageReader(str(work), namespaces=(ARTICLE_NAMESPACE,)), AnchorScanner(str(keys_file)),
                KindParquetWriter(str(folder), {"anchor": ANCHOR_SCHEMA})]
    stage = f"anchors-{digest}"
    run_stage(pipeline, len(tasks), work / "logs" / stage, stage, options, before=quiet_user_errors)
    targets: dict[str, Counter] = defaultdict(Counter)
    for path in sorted((folder / "anchor").glob("*.parquet")):
        table = pq.read_table(path, columns=["key", "target"])
        for key, target in zip(table.column("key").to_pylist(), table.column("target").to_pylist()):
            targets[key][target] += 1
    return targets


def match_entities(work_dir: str | Path, entities: Mapping[str, str], *, source_args: Any = None,
                   anchors: bool = True) -> tuple[list[EntityMatch], list[str], dict[int, list[str]]]:
    """Each entity ``surface -> type`` matched to an article of the index in ``work_dir`` (title, then
    redirect, then, with ``anchors`` and ``source_args`` (the build's :class:`~crossner_hf.wikipedia.build.
    WikipediaSourceArguments`), link text). Returns the matches, the unmatched surfaces and the matched
    pages' categories (``page_id -> categories``)."""
    from crossner_hf.wikipedia.redirects import Redirects

    work = Path(work_dir)
    by_key: dict[str, list[str]] = defaultdict(list)
    for surface in entities:
        if key := surface_key(surface):
            by_key[key].append(surface)
    redirected: dict[str, str] = {}  # key -> the title a redirect of that key leads to
    for row in index_rows(work, "redirect", ["title", "target"]):
        key = surface_key(row["title"])
        if key in by_key and key not in redirected:
            redirected[key] = normalise_title(row["target"])
    ends = Redirects(work / "redirects.sqlite").resolve_many(list(redirected.values()))
    redirected = dict(zip(redirected, ends))
    pages = _pages_by_key(work, set(by_key) | {surface_key(t) for t in redirected.values()})
    chosen: dict[str, tuple[str, tuple[int, str, list[str]], int]] = {}
    for key in by_key:
        if key in pages:
            chosen[key] = ("title", pages[key], 0)
        elif key in redirected and surface_key(redirected[key]) in pages:
            chosen[key] = ("redirect", pages[surface_key(redirected[key])], 0)
    left = set(by_key) - set(chosen)
    if anchors and left and source_args is not None:
        targets = _anchor_targets(work, left, source_args)
        every = {t for counter in targets.values() for t in counter}
        resolved = dict(zip(every, Redirects(work / "redirects.sqlite").resolve_many(sorted(every))))
        target_pages = _pages_by_key(work, {surface_key(t) for t in resolved.values()})
        for key, counter in targets.items():
            counts: Counter = Counter()
            for target, n in counter.items():
                counts[surface_key(resolved[target])] += n
            ranked = sorted(((-n, k) for k, n in counts.items() if k in target_pages))
            if ranked:
                chosen[key] = ("anchor", target_pages[ranked[0][1]], -ranked[0][0])
    matches = [EntityMatch(surface, entities[surface], page[1], page[0], how, links)
               for key, (how, page, links) in chosen.items() for surface in by_key[key]]
    matches.sort(key=lambda m: m.surface)
    unmatched = sorted(s for key in set(by_key) - set(chosen) for s in by_key[key])
    categories = {page[0]: page[2] for _, page, _ in chosen.values()}
    by_how = Counter(m.how for m in matches)
    logger.info("%d of %d entities matched a page (%s); %d unmatched", len(matches), len(entities),
                ", ".join(f"{how} {n}" for how, n in sorted(by_how.items())) or "none", len(unmatched))
    return matches, unmatched, categories


def choose_seeds(work_dir: str | Path, matches: Sequence[EntityMatch], page_categories: Mapping[int, list[str]],
                 *, min_entities: int = 2, min_share: float = 0.01) -> list[dict[str, Any]]:
    """The matched pages' categories, each with its entities, its pages in the dump and whether it is a seed
    (at least ``min_entities`` distinct entities' pages, and those at least ``min_share`` of its pages);
    seeds first, then by entities."""
    holders: dict[str, set[str]] = defaultdict(set)
    matched_pages: dict[str, set[int]] = defaultdict(set)
    for match in matches:
        for category in page_categories.get(match.page_id, ()):
            holders[category].add(match.surface)
            matched_pages[category].add(match.page_id)
    sizes: Counter = Counter()
    for row in index_rows(Path(work_dir), "page", ["categories"]):
        sizes.update(c for c in row["categories"] if c in holders)
    rows = []
    for name, surfaces in holders.items():
        size = max(sizes[name], len(matched_pages[name]))
        seed = len(surfaces) >= min_entities and len(matched_pages[name]) / size >= min_share
        rows.append({"name": name, "entities": sorted(surfaces), "pages_in_dump": size, "seed": seed})
    rows.sort(key=lambda r: (not r["seed"], -len(r["entities"]), r["pages_in_dump"], r["name"]))
    return rows


def count_sentences(typed_dir: str | Path) -> Counter:
    """Sentences per page id in the extract's typed shards."""
    import pyarrow.parquet as pq

    counts: Counter = Counter()
    for path in sorted(Path(typed_dir).glob("*.parquet")):
        counts.update(pq.read_table(path, columns=["page_id"]).column("page_id").to_pylist())
    return counts


def fill_counts(report: SeedReport, reached: Mapping[str, int], members: Mapping[int, list[str]],
                sentences: Mapping[int, int]) -> None:
    """The pages and sentences each reached category gave (a page in two categories counts in both), and the
    totals; the matched pages outside every reached category are the row ``(entity pages)``."""
    pages: Counter = Counter()
    lines: Counter = Counter()
    for page_id, categories in members.items():
        for category in categories or ["(entity pages)"]:
            pages[category] += 1
            lines[category] += sentences.get(page_id, 0)
    report.reached = [{"name": name, "depth": reached.get(name), "pages": pages[name], "sentences": lines[name]}
                      for name in sorted(pages, key=lambda n: (reached.get(n, -1), -pages[n], n))]
    report.pages, report.sentences = len(members), sum(sentences.get(p, 0) for p in members)


def write_seed_report(report: SeedReport, folder: str | Path) -> tuple[Path, Path]:
    """``seeds.json`` and ``seeds.md`` in ``folder``: the matches, the categories and what each gave."""
    folder = Path(folder)
    data = asdict(report)
    json_path = folder / "seeds.json"
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    lines = [f"# Domain text from {report.entities} train entities", "",
             f"{len(report.matches)} matched a page, {len(report.unmatched)} did not; "
             f"{report.pages} pages, {report.sentences} sentences. Pin other categories with "
             "`--seed_categories`.", "", "| entity | type | page | matched by |", "|---|---|---|---|"]
    lines += [f"| {m.surface} | {m.type} | {m.page} | {m.how}{f' ({m.links} links)' if m.links else ''} |"
              for m in report.matches]
    lines += ["", "## Categories of the matched pages" + (" (seeds pinned by --seed_categories)" if report.pinned
                                                          else ""), "",
              "| category | seed | entities | pages in the dump |", "|---|---|---|---:|"]
    lines += [f"| {c['name']} | {'yes' if c['seed'] else 'no'} | {', '.join(c['entities'])} | {c['pages_in_dump']} |"
              for c in report.categories]
    lines += ["", "## What each category gave", "", "| category | depth | pages | sentences |", "|---|---:|---:|---:|"]
    lines += [f"| {r['name']} | {'' if r['depth'] is None else r['depth']} | {r['pages']} | {r['sentences']} |"
              for r in report.reached]
    if report.unmatched:
        lines += ["", "Unmatched: " + ", ".join(report.unmatched)]
    md_path = folder / "seeds.md"
    md_path.write_text("\n".join(lines) + "\n")
    return json_path, md_path


# --------------------------------------------------------------------------- the link-text stage

ANCHOR_SCHEMA = pa.schema([("key", pa.string()), ("target", pa.string())])
"""The link-text stage's rows: a surface key and the normalised target of one link showing it."""


class AnchorScanner(PipelineStep):
    """Articles -> ``anchor`` rows for the piped links whose shown text has one of the keys in ``keys_file``
    (a JSON list): two regular expressions per page, no parse."""

    name = "Link texts of the entities"
    type = "🔗 - ANCHORS"

    def __init__(self, keys_file: str):
        super().__init__()
        self.keys_file = keys_file

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        keys = set(json.loads(Path(self.keys_file).read_text()))
        for doc in data:
            if doc.metadata["redirect"] is not None:
                continue
            for target, text in _LINK.findall(doc.text):
                key = surface_key(text)
                if key in keys and (target := normalise_title(target)):
                    self.stat_update("links")
                    yield Document(text="", id=doc.id, metadata={"kind": "anchor", "key": key, "target": target})
