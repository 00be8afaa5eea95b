"""The Wikipedia stages as datatrove pipelines: dump -> sentences with anchors -> typed anchors.

Two paths over a *work folder*; everything global (the redirect map, the corpus-level filtering
and balancing) runs between and after the pipelines in the calling process, on files.

The NER-BERT corpus (:func:`run_redirects`, then :func:`run_typed_extract`):

1. ``redirects`` (one task per shard of the fixed manifest): the redirect pages, found by a byte-level
   scan of the page heads that parses no page and decodes no text (:class:`RedirectReader`), to
   ``stage0/redirect/<rank>.parquet``; the XML it decompressed is kept, zstd-compressed, in ``kept_xml/`` for
   the extract stage (the bz2 dump is decompressed once), and removed after it. Then merged into
   ``redirects.sqlite`` by :func:`build_redirects`.
2. ``extract-typed``: read pages (:class:`WikipediaPageReader`), turn each article into text and
   anchors, type every anchor through the redirect map and the DBpedia lookup, and split into
   sentences of words only what can enter the corpus: sentences holding a typed anchor
   (:class:`TypedArticleExtractor`), to ``nerbert/typed/<rank>.parquet``.

The domain corpora, which need every sentence of a domain's pages (:func:`run_page_index`, then
:func:`run_domain_extract`):

1. ``index``: no parsing, the cheap reading pass (:class:`PageIndexer`): redirect rows, category
   pages with their parent categories, and each article's id, title and declared categories, to
   ``index/{redirect,category,page}/<rank>.parquet``; the redirect map is merged from
   ``index/redirect/*``. The domain's pages are chosen from these tables
   (:func:`~crossner_hf.wikipedia.domains.domain_pages`) and saved as a sorted id array.
2. ``extract-<domain>-<digest>``: only those pages are parsed, split into sentences of words and
   their anchors typed as they are read (:class:`DomainArticleExtractor`), every sentence kept, to
   ``domain/<domain>-<digest>/typed/<rank>.parquet`` (the digest is that of the page set, so
   another seed list or depth never reuses a stale extraction; the index is shared by every domain
   and the NER-BERT builder's redirect map is the same file).

Resume and integrity
    The manifest (``manifest.json``: every task's dump units) is written once and reused,
    so a task always reads the same pages and the number of tasks never changes between a
    run and its resume. datatrove marks a task complete only after its writers closed;
    a rerun skips completed tasks and redoes the others from the start, overwriting their
    shards. The next stage, and the final dataset, start only when every task of a stage
    is complete (:func:`require_complete`), so a shard truncated by a kill is never read.

Executors (:mod:`.executors`)
    ``local`` (default): ``LocalPipelineExecutor`` over all cores. ``ray``: the same
    pipeline under ``RayPipelineExecutor`` (``pip install crossner_hf[ray]``; a local
    instance is started when none is running). ``slurm``: ``SlurmPipelineExecutor``,
    submitted with ``sbatch`` (``--slurm_partition``, ``--slurm_time``). The builder must
    run under ``if __name__ == "__main__":``: the local executor starts its workers with
    forkserver.

Memory
    One page at a time per worker; stage-1 writers flush every ``batch_size`` rows; the
    lookups are SQLite files opened read-only in each worker. Peak memory does not grow
    with the dump.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from crossner_hf.extras import require

require("datatrove", "wikipedia")  # one line naming the extra instead of an ImportError traceback
from datatrove.data import Document, DocumentsPipeline  # noqa: E402
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.parquet import ParquetWriter
from datatrove.utils.logging import logger as task_logger  # loguru: reaches the console and each task's log

from crossner_hf.executors import ExecutorOptions  # noqa: F401 - the builders' names
from crossner_hf.stages import require_complete, run_stage  # noqa: F401 - the builders' names
from crossner_hf.wikipedia.dump import (ARTICLE_NAMESPACE, CATEGORY_NAMESPACE, DumpUnit, iter_unit_pages,
                                        iter_unit_redirects, plan_units, quiet_user_errors)
from crossner_hf.wikipedia.sentences import anchor_sentences, require_punkt
from crossner_hf.wikipedia.wikitext import is_disambiguation, page_categories, wikitext_to_text

logger = logging.getLogger(__name__)


MANIFEST = "manifest.json"

SCHEMAS: dict[str, pa.Schema] = {
    "sentence": pa.schema([
        ("page_id", pa.int64()), ("title", pa.string()), ("sentence", pa.int32()),
        ("tokens", pa.list_(pa.string())),
        ("span_start", pa.list_(pa.int32())), ("span_end", pa.list_(pa.int32())),
        ("span_target", pa.list_(pa.string())),
    ]),
    "page": pa.schema([
        ("page_id", pa.int64()), ("title", pa.string()), ("categories", pa.list_(pa.string())),
        ("sentences", pa.int32()), ("wikitext_bytes", pa.int64()),
    ]),
    "redirect": pa.schema([("title", pa.string()), ("target", pa.string())]),
    "category": pa.schema([("page_id", pa.int64()), ("title", pa.string()), ("parents", pa.list_(pa.string()))]),
    "skipped": pa.schema([("page_id", pa.int64()), ("title", pa.string()), ("reason", pa.string())]),
}
"""Row tables by kind, one folder each (``<stage>/<kind>/<rank>.parquet``): the extractors' sentences,
pages and skipped pages, the index stage's redirects, category pages and pages."""

TYPED_SCHEMA = SCHEMAS["sentence"].append(pa.field("span_category", pa.list_(pa.string()))).append(
    pa.field("span_coarse", pa.list_(pa.string())))
"""Stage 2: the sentence table plus each span's category (the lower-cased most specific DBpedia
class, or ENTITY) and its 4-type category (person, location, organisation or ENTITY)."""


# --------------------------------------------------------------------------- manifest


def make_manifest(work_dir: str | Path, dumps: Sequence[str], indexes: Sequence[str] | None = None,
                  *, unit_bytes: int = 64 << 20, units_per_task: int = 1,
                  multiple_of: int = 1) -> list[list[DumpUnit]]:
    """The tasks' dump units, written to ``work_dir/manifest.json`` once and reused after.

    A rerun with other dumps (paths or sizes) is refused, so a resume can never mix pages.
    ``multiple_of`` (the tasks that run at once) evens the last round: see :func:`.dump.plan_units`.
    """
    work = Path(work_dir)
    path = work / MANIFEST
    identity = [{"path": str(Path(d).resolve()), "bytes": os.path.getsize(d)} for d in dumps]
    if path.is_file():
        saved = json.loads(path.read_text())
        if saved["dumps"] != identity:
            raise ValueError(
                f"{path} was made for other dumps ({[d['path'] for d in saved['dumps']]}); pass the same --dump "
                "files to resume, or a new --work_dir to start over."
            )
        return [[DumpUnit(**u) for u in task] for task in saved["tasks"]]
    units = plan_units([d["path"] for d in identity], indexes=indexes, unit_bytes=unit_bytes,
                       multiple_of=multiple_of)
    tasks = [units[i:i + units_per_task] for i in range(0, len(units), units_per_task)]
    work.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"dumps": identity, "tasks": [[u.to_dict() for u in t] for t in tasks]}, indent=1))
    os.replace(tmp, path)
    return tasks


# --------------------------------------------------------------------------- steps


class WikipediaPageReader(PipelineStep):
    """Reads the pages of this task's manifest entry (articles and category pages)."""

    name = "Wikipedia pages"
    type = "📖 - READER"

    def __init__(self, work_dir: str, log_every: float = 10.0,
                 namespaces: tuple[int, ...] = (ARTICLE_NAMESPACE, CATEGORY_NAMESPACE), kept_xml: bool = False):
        super().__init__()
        self.work_dir = str(work_dir)
        self.log_every = log_every
        self.namespaces = tuple(namespaces)
        self.kept_xml = kept_xml
        """Read a unit's XML from what the redirect stage kept (:func:`kept_xml_path`) when it is there."""

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        quiet_user_errors()
        tasks = json.loads((Path(self.work_dir) / MANIFEST).read_text())["tasks"]
        if world_size != len(tasks):
            raise ValueError(f"the manifest has {len(tasks)} tasks but the executor runs {world_size}.")
        start = last = time.monotonic()
        pages = 0
        read_bytes = 0
        for number, unit in enumerate(DumpUnit(**u) for u in tasks[rank]):
            cached = kept_xml_path(self.work_dir, rank, number) if self.kept_xml else None
            for page in iter_unit_pages(unit, namespaces=self.namespaces, cached=cached):
                pages += 1
                self.stat_update("pages")
                read_bytes += len(page.wikitext)
                now = time.monotonic()
                if now - last >= self.log_every:
                    task_logger.info(f"task {rank}: {pages} pages, {pages / (now - start):.1f} pages/s, "
                                     f"{read_bytes / 1e6 / (now - start):.2f} MB wikitext/s")
                    last = now
                yield Document(text=page.wikitext, id=str(page.id), metadata={
                    "title": page.title, "namespace": page.namespace, "redirect": page.redirect})
        elapsed = max(time.monotonic() - start, 1e-9)
        task_logger.info(f"task {rank} done: {pages} pages in {elapsed:.1f} s ({pages / elapsed:.1f} pages/s)")


KEPT_XML = "kept_xml"
"""The redirect stage's copy of each bz2 unit's XML (zstd), read by the extract stage, removed after it."""


def kept_xml_path(work_dir: str | Path, rank: int, number: int) -> Path:
    """Where the redirect stage keeps the XML of task ``rank``'s ``number``-th unit."""
    return Path(work_dir) / KEPT_XML / f"{rank:05d}-{number:04d}.xml.zst"


class _PageTimeout(Exception):
    pass


class ArticleExtractor(PipelineStep):
    """Page -> rows: each article one ``page`` row and its ``sentence`` rows (``metadata['kind']``).

    Redirects and category pages are counted and passed over (the index stage,
    :class:`PageIndexer`, owns their rows), disambiguation pages skipped. A page whose parsing
    raises, runs longer than ``page_timeout`` seconds or is longer than ``max_page_chars``
    becomes a ``skipped`` row (id, title, reason) and is counted: no page can stall a worker.
    The builders run its typed subclasses; this class gives the untyped sentences.
    """

    name = "Articles to sentences"
    type = "🔨 - EXTRACTOR"

    def __init__(self, nltk_data: str | None = None, page_timeout: float = 60.0,
                 max_page_chars: int = 4_000_000):
        super().__init__()
        self.nltk_data = nltk_data
        self.page_timeout = page_timeout
        self.max_page_chars = max_page_chars

    def _rows(self, doc: Document, counts: Counter) -> Iterator[Document]:
        title, page_id = doc.metadata["title"], int(doc.id)
        wikitext = doc.text
        text, anchors = wikitext_to_text(wikitext)
        sentences = anchor_sentences(text, anchors, nltk_data=self.nltk_data, counts=counts)
        yield Document(text="", id=doc.id, metadata={"kind": "page", "page_id": page_id, "title": title,
                                                       "categories": page_categories(wikitext),
                                                       "sentences": len(sentences),
                                                       "wikitext_bytes": len(wikitext.encode("utf-8"))})
        for sentence in sentences:
            yield Document(text="", id=f"{doc.id}-{sentence.number}", metadata={
                "kind": "sentence", "page_id": page_id, "title": title, "sentence": sentence.number,
                "tokens": sentence.words,
                "span_start": [s for s, _, _ in sentence.spans], "span_end": [e for _, e, _ in sentence.spans],
                "span_target": [t for _, _, t in sentence.spans],
            })

    def _with_timeout(self, doc: Document, counts: Counter) -> list[Document]:
        use_alarm = self.page_timeout > 0 and threading.current_thread() is threading.main_thread()
        if not use_alarm:
            return list(self._rows(doc, counts))

        def expire(signum, frame):
            raise _PageTimeout

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, self.page_timeout)
        try:
            return list(self._rows(doc, counts))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        require_punkt(self.nltk_data)
        counts: Counter = Counter()
        for doc in data:
            meta = doc.metadata
            title = meta["title"]
            if meta["redirect"] is not None:
                if meta["namespace"] == ARTICLE_NAMESPACE:
                    self.stat_update("redirects")
                continue
            if meta["namespace"] == CATEGORY_NAMESPACE:
                self.stat_update("category_pages")
                continue
            if is_disambiguation(title, doc.text):
                self.stat_update("disambiguation_pages")
                continue
            reason = None
            if len(doc.text) > self.max_page_chars:
                reason = f"longer than --max_page_chars ({len(doc.text)} characters)"
            else:
                try:
                    with self.track_time():
                        rows = self._with_timeout(doc, counts)
                except _PageTimeout:
                    reason = f"took longer than --page_timeout {self.page_timeout} s"
                except (ValueError, IndexError, KeyError, TypeError, RecursionError) as err:
                    reason = f"{type(err).__name__}: {err}"[:300]
            if reason is not None:
                self.stat_update("skipped_pages")
                task_logger.warning(f"skipped page {doc.id} ({title!r}): {reason}")
                yield Document(text="", id=doc.id, metadata={"kind": "skipped", "page_id": int(doc.id),
                                                             "title": title, "reason": reason})
                continue
            self.stat_update("articles")
            for row in rows:
                if row.metadata["kind"] in ("sentence", "typed"):
                    self.stat_update("sentences")
                    self.stat_update("tokens", value=len(row.metadata["tokens"]))
                    self.stat_update("anchors", value=len(row.metadata["span_start"]))
                yield row
        for key, value in counts.items():
            if key != "anchors":
                self.stat_update(key, value=value)


class TypedArticleExtractor(ArticleExtractor):
    """The NER-BERT builder's extract stage: anchors typed while the page is read, and only the sentences
    that hold a typed anchor split into words and written (``typed`` rows, :data:`TYPED_SCHEMA`).

    Each anchor's target goes through the redirect map (``redirects.sqlite``, built by the
    redirect stage before this one) and the DBpedia lookup, both opened read-only in each worker.
    A sentence whose anchors are all untyped can never enter the corpus (step 2 drops it), so it
    is not split into words, and a line without a typed anchor not even into sentences (the two
    costly steps of extraction). Sentence numbers depend on their own line only
    (:func:`~crossner_hf.wikipedia.sentences.anchor_sentences`), so the rows written are the typed
    rows the domain corpora's extractor (every sentence kept, :attr:`keep_all`) gives for those
    sentences, numbers included, and the corpus is the same.
    """

    name = "Articles to typed sentences"
    keep_all = False
    """Keep every sentence (the domain corpora) instead of those holding a typed anchor (NER-BERT)."""

    def __init__(self, work_dir: str, types_db: str, nltk_data: str | None = None, page_timeout: float = 60.0,
                 max_page_chars: int = 4_000_000):
        super().__init__(nltk_data=nltk_data, page_timeout=page_timeout, max_page_chars=max_page_chars)
        self.work_dir = str(work_dir)
        self.types_db = str(types_db)
        self._lookups = None

    def _typing(self):
        from crossner_hf.wikipedia.dbpedia import DBpediaTypes
        from crossner_hf.wikipedia.redirects import Redirects

        if self._lookups is None:  # per worker: SQLite connections do not cross process boundaries
            self._lookups = Redirects(Path(self.work_dir) / "redirects.sqlite"), DBpediaTypes(self.types_db)
        return self._lookups

    def _rows(self, doc: Document, counts: Counter) -> Iterator[Document]:
        from crossner_hf.wikipedia.dbpedia import ENTITY

        title, page_id = doc.metadata["title"], int(doc.id)
        text, anchors = wikitext_to_text(doc.text)
        redirects, types = self._typing()
        targets = list(dict.fromkeys(t for _, _, t in anchors))
        resolved = redirects.resolve_many(targets)
        typed = {target: (final, *categories)
                 for target, final, categories in zip(targets, resolved, types.both_categories(resolved))}
        untyped = sum(1 for _, _, t in anchors if typed[t][1] == ENTITY)
        counts["typed_anchors"] += len(anchors) - untyped
        counts["untyped_anchors"] += untyped
        keep = None if self.keep_all else (lambda inside: any(typed[t][1] != ENTITY for _, _, t in inside))
        sentences = anchor_sentences(text, anchors, nltk_data=self.nltk_data, counts=counts, keep=keep)
        for sentence in sentences:
            spans = [(first, end, *typed[t]) for first, end, t in sentence.spans]
            if not self.keep_all and all(category == ENTITY for *_, category, _ in spans):
                continue  # its typed anchor lost its words to an overlapping one
            yield Document(text="", id=f"{doc.id}-{sentence.number}", metadata={
                "kind": "typed", "page_id": page_id, "title": title, "sentence": sentence.number,
                "tokens": sentence.words, "span_start": [span[0] for span in spans],
                "span_end": [span[1] for span in spans], "span_target": [span[2] for span in spans],
                "span_category": [span[3] for span in spans], "span_coarse": [span[4] for span in spans],
            })


class RedirectReader(PipelineStep):
    """The redirect stage's reader: this task's article-namespace redirect pages -> ``redirect`` rows
    (title, target), from a byte-level scan of the page heads (:func:`~.dump.iter_unit_redirects`): no page
    is parsed and no wikitext decoded, so the pre-scan costs about the decompression alone."""

    name = "Redirects"
    type = "🔀 - REDIRECTS"

    def __init__(self, work_dir: str):
        super().__init__()
        self.work_dir = str(work_dir)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        quiet_user_errors()
        tasks = json.loads((Path(self.work_dir) / MANIFEST).read_text())["tasks"]
        if world_size != len(tasks):
            raise ValueError(f"the manifest has {len(tasks)} tasks but the executor runs {world_size}.")
        for number, unit in enumerate(DumpUnit(**u) for u in tasks[rank]):
            keep = kept_xml_path(self.work_dir, rank, number)
            keep.parent.mkdir(parents=True, exist_ok=True)
            for title, target in iter_unit_redirects(unit, keep_xml=keep):
                self.stat_update("redirects")
                yield Document(text="", id=title, metadata={"kind": "redirect", "title": title, "target": target})


class PageIndexer(PipelineStep):
    """The index stage of the domain corpora: what choosing a domain's pages needs, without parsing.

    Article-namespace redirects become ``redirect`` rows, category pages ``category`` rows (their
    parent categories), and every other article but disambiguation pages a ``page`` row (id, title,
    declared categories): the rows the extract stage's side tables gave, from two regular
    expressions per page instead of a parse.
    """

    name = "Page index"
    type = "🗂 - INDEX"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            meta = doc.metadata
            if meta["redirect"] is not None:
                if meta["namespace"] == ARTICLE_NAMESPACE:
                    self.stat_update("redirects")
                    yield Document(text="", id=doc.id, metadata={"kind": "redirect", "title": meta["title"],
                                                                 "target": meta["redirect"]})
            elif meta["namespace"] == CATEGORY_NAMESPACE:
                self.stat_update("category_pages")
                yield Document(text="", id=doc.id, metadata={
                    "kind": "category", "page_id": int(doc.id), "title": meta["title"].split(":", 1)[-1],
                    "parents": page_categories(doc.text)})
            elif is_disambiguation(meta["title"], doc.text):
                self.stat_update("disambiguation_pages")
            else:
                self.stat_update("articles")
                yield Document(text="", id=doc.id, metadata={"kind": "page", "page_id": int(doc.id),
                                                             "title": meta["title"],
                                                             "categories": page_categories(doc.text)})


class DomainArticleExtractor(TypedArticleExtractor):
    """The domain corpora's extract stage: the pages of one domain (ids in ``members_file``, a sorted
    int64 ``.npy`` array) as typed sentences, every sentence kept (the domain level is all of its text).

    Other pages pass without being parsed: the index stage already chose the domain's pages, so the
    parse, the sentence and word splitting, the costly steps, run on those alone.
    """

    name = "Domain articles to typed sentences"
    keep_all = True

    def __init__(self, work_dir: str, types_db: str, members_file: str, nltk_data: str | None = None,
                 page_timeout: float = 60.0, max_page_chars: int = 4_000_000):
        super().__init__(work_dir, types_db, nltk_data=nltk_data, page_timeout=page_timeout,
                         max_page_chars=max_page_chars)
        self.members_file = str(members_file)

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import numpy as np

        members = np.load(self.members_file)  # sorted: 8 bytes a page, one search per page

        def member(doc: Document) -> bool:
            if doc.metadata["redirect"] is not None or doc.metadata["namespace"] != ARTICLE_NAMESPACE:
                return False
            page_id = int(doc.id)
            at = int(np.searchsorted(members, page_id))
            return at < len(members) and int(members[at]) == page_id

        yield from super().run((doc for doc in data if member(doc)), rank, world_size)


def _row_adapter(self, document: Document) -> dict:
    return document.metadata


class KindParquetWriter(PipelineStep):
    """Documents routed by ``metadata['kind']`` to one datatrove ``ParquetWriter`` per kind.

    Each writer gets its kind's explicit schema (datatrove's public ``schema`` argument) and the
    output name ``<kind>/<rank>.parquet``, so empty lists and missing kinds never make a schema up
    from a first row; only public writer API is used (``write`` and the context manager).
    """

    name = "📒 Parquet by kind"
    type = "💽 - WRITER"

    def __init__(self, output_folder: str, schemas: dict[str, pa.Schema], batch_size: int = 1000):
        super().__init__()
        self.output_folder, self.schemas, self.batch_size = output_folder, schemas, batch_size

    def _writer(self, kind: str) -> ParquetWriter:
        return ParquetWriter(self.output_folder, output_filename=f"{kind}/${{rank}}.parquet", adapter=_row_adapter,
                             schema=self.schemas[kind], batch_size=self.batch_size, max_file_size=-1,
                             use_content_defined_chunking=False, compression="zstd")

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from contextlib import ExitStack

        writers: dict[str, ParquetWriter] = {}
        with ExitStack() as stack:
            for document in data:
                kind = document.metadata["kind"]
                if kind not in writers:
                    writers[kind] = stack.enter_context(self._writer(kind))
                writers[kind].write(document, rank)
                self.stat_update(kind)
                yield document


# --------------------------------------------------------------------------- running

INDEX_SCHEMAS: dict[str, pa.Schema] = {
    "redirect": SCHEMAS["redirect"], "category": SCHEMAS["category"],
    "page": pa.schema([("page_id", pa.int64()), ("title", pa.string()), ("categories", pa.list_(pa.string()))]),
}
"""The index stage's tables (``index/<kind>/<rank>.parquet``)."""


def run_page_index(work_dir: str | Path, tasks: list[list[DumpUnit]], *, options: ExecutorOptions) -> None:
    """The index stage of the domain corpora (:class:`PageIndexer`) over every task to ``index/``."""
    work = Path(work_dir)
    pipeline = [WikipediaPageReader(str(work)), PageIndexer(), KindParquetWriter(str(work / "index"), INDEX_SCHEMAS)]
    run_stage(pipeline, len(tasks), work / "logs" / "index", "index", options, before=quiet_user_errors)


def run_domain_extract(work_dir: str | Path, tasks: list[list[DumpUnit]], types_db: str | Path,
                       members_file: str | Path, *, nltk_data: str | None, options: ExecutorOptions,
                       page_timeout: float = 60.0, max_page_chars: int = 4_000_000) -> str:
    """The domain corpora's extract stage (:class:`DomainArticleExtractor`) for the pages in
    ``members_file``, to ``<its folder>/typed``; needs ``redirects.sqlite`` (:func:`run_page_index`
    then :func:`build_redirects` with ``stage="index"``). Returns the stage's name (its logs folder)."""
    work, members_file = Path(work_dir), Path(members_file)
    require_punkt(nltk_data)
    stage = f"extract-{members_file.parent.name}"
    pipeline = [
        WikipediaPageReader(str(work), namespaces=(ARTICLE_NAMESPACE,)),
        DomainArticleExtractor(str(work), str(types_db), str(members_file), nltk_data=nltk_data,
                               page_timeout=page_timeout, max_page_chars=max_page_chars),
        KindParquetWriter(str(members_file.parent), {"typed": TYPED_SCHEMA, "skipped": SCHEMAS["skipped"]}),
    ]
    run_stage(pipeline, len(tasks), work / "logs" / stage, stage, options, before=quiet_user_errors)
    return stage


def run_redirects(work_dir: str | Path, tasks: list[list[DumpUnit]], *, options: ExecutorOptions) -> None:
    """The redirect stage of the NER-BERT builder: every task's redirect pages to ``stage0/redirect``."""
    work = Path(work_dir)
    pipeline = [RedirectReader(str(work)), KindParquetWriter(str(work / "stage0"), {"redirect": SCHEMAS["redirect"]})]
    run_stage(pipeline, len(tasks), work / "logs" / "redirects", "redirects", options, before=quiet_user_errors)


def run_typed_extract(work_dir: str | Path, tasks: list[list[DumpUnit]], types_db: str | Path, *,
                      nltk_data: str | None, options: ExecutorOptions, page_timeout: float = 60.0,
                      max_page_chars: int = 4_000_000) -> None:
    """The NER-BERT builder's extract stage (:class:`TypedArticleExtractor`) to ``nerbert/typed``; needs
    ``redirects.sqlite`` (:func:`run_redirects` then :func:`build_redirects` with ``stage="stage0"``)."""
    work = Path(work_dir)
    require_punkt(nltk_data)
    pipeline = [
        WikipediaPageReader(str(work), kept_xml=True),
        TypedArticleExtractor(str(work), str(types_db), nltk_data=nltk_data, page_timeout=page_timeout,
                              max_page_chars=max_page_chars),
        KindParquetWriter(str(work / "nerbert"), {"typed": TYPED_SCHEMA, "skipped": SCHEMAS["skipped"]}),
    ]
    run_stage(pipeline, len(tasks), work / "logs" / "extract-typed", "extract-typed", options,
              before=quiet_user_errors)


def build_redirects(work_dir: str | Path, stage: str) -> Path:
    """Merge every task's redirect rows (``work_dir/<stage>/redirect``) into ``work_dir/redirects.sqlite``."""
    import pyarrow.parquet as pq

    from crossner_hf.wikipedia.redirects import build_redirects_db

    work = Path(work_dir)

    def pairs() -> Iterator[tuple[str, str]]:
        for path in sorted((work / stage / "redirect").glob("*.parquet")):
            table = pq.read_table(path)
            yield from zip(table.column("title").to_pylist(), table.column("target").to_pylist())

    return build_redirects_db(pairs(), work / "redirects.sqlite")


def stage_stats(work_dir: str | Path, stage: str) -> dict[str, Any]:
    """datatrove's merged per-step statistics of a stage (``extract`` or ``type``), as totals."""
    totals: dict[str, Any] = {}
    for path in sorted((Path(work_dir) / "logs" / stage / "stats").glob("*.json")):
        for step in json.loads(path.read_text()):
            for key, value in step.get("stats", {}).items():
                if isinstance(value, dict) and "total" in value:
                    totals[key] = totals.get(key, 0) + value["total"]
                elif isinstance(value, (int, float)):
                    totals[key] = totals.get(key, 0) + value
    return totals
