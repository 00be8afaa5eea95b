"""DBpedia Ontology types for Wikipedia link targets (NER-BERT's anchor categories).

Every Wikipedia anchor is an entity. If DBpedia types its link target with a class of the
DBpedia Ontology, its category is the most specific such class, lower-cased (``city``),
else :data:`ENTITY`. The "4types" variant (:meth:`DBpediaTypes.coarse_category`) maps a
class by ancestry to ``person`` (under dbo:Person), ``location`` (dbo:Place),
``organisation`` (dbo:Organisation), else ENTITY. Rules, so that all corpora agree:

* **Hierarchy** (:func:`load_ontology`). In the OWL file only top-level ``owl:Class``
  elements named ``http://dbpedia.org/ontology/X`` are classes. A class's parent is its
  *first* ``rdfs:subClassOf`` (document order) naming a dbo class; a class whose
  super-classes are only ``owl:Thing`` or non-dbo classes (schema.org, DUL, Wikidata) is a
  root, depth 1. The 2016-10 OWL has 760 classes, 50 roots (all ``subClassOf owl:Thing``)
  and one class with two dbo parents, ``Library`` (EducationalInstitution, then Building):
  an Organisation here, while the TSV table gives it the parent Building.
* **Instance types** (:func:`iter_type_triples`): N-Triples, or Turtle with ``@prefix``,
  ``@base``, prefixed names, ``a``, ``;`` and ``,``; plain, ``.bz2`` or ``.gz``; streamed.
  Objects outside ``http://dbpedia.org/ontology/`` are ignored, dbo classes missing from
  the ontology are counted and ignored, and subjects ending in ``__<digits>``
  (``Abraham_Lincoln__1``: DBpedia's intermediate nodes for offices, tracks...; not pages)
  are skipped *before* normalising, which would make them the title "Abraham Lincoln 1".
* **Most specific class**: the deepest known class; among equally deep ones (different
  branches, e.g. OfficeHolder and Politician, both depth 3) the lexicographically smallest
  name. Class ids are ranks by (depth descending, name), so the answer is ``MIN(class_id)``.
* **Lookup file** (:func:`build_types_db`): one self-contained SQLite file (types,
  ontology, metadata) that every worker opens read-only (:class:`DBpediaTypes`).

Example:
    >>> ontology = load_ontology("../shared/data/dbpedia/dbpedia_2016-10.owl")  # doctest: +SKIP
    >>> ontology.ancestors("Philosopher")  # doctest: +SKIP
    ['Philosopher', 'Person', 'Agent']
    >>> build_types_db(["instance_types_en.ttl.bz2"], ontology, "types.sqlite")  # doctest: +SKIP
    >>> types = DBpediaTypes("types.sqlite")  # doctest: +SKIP
    >>> types.category("aristotle"), types.coarse_category("Aristotle")  # doctest: +SKIP
    ('philosopher', 'person')
"""

from __future__ import annotations

import bz2
import functools
import json
import logging
import os
import re
import sqlite3
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from crossner_hf.data.conll import excerpt
from crossner_hf.wikipedia.titles import DBPEDIA_RESOURCE, dbpedia_resource_title, normalise_title
from crossner_hf.wikipedia.turtle import RDF_TYPE, iter_type_triples  # noqa: F401  (the instance-type files are read there)

logger = logging.getLogger(__name__)

ENTITY = "ENTITY"
DBO = "http://dbpedia.org/ontology/"
COARSE_ROOTS = {"Person": "person", "Place": "location", "Organisation": "organisation"}
DB_FORMAT = "crossner_hf.dbpedia_types/1"

_RDF = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}"
_RDFS = "{http://www.w3.org/2000/01/rdf-schema#}"
_OWL_CLASS = "{http://www.w3.org/2002/07/owl#}Class"
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_SELECT_ONE = "SELECT class_id FROM types WHERE title = ?"
_INTERMEDIATE = re.compile(r"__\d+$")
def _class_name(cls: str) -> str:
    """``OfficeHolder`` from ``OfficeHolder``, ``dbo:OfficeHolder`` or the full IRI."""
    cls = cls.strip().strip("<>")
    return cls[len(DBO):] if cls.startswith(DBO) else cls[4:] if cls.startswith("dbo:") else cls


class Ontology:
    """A single-parent class tree (roots have depth 1), checked for cycles on creation."""

    def __init__(self, parents: Mapping[str, str | None], *, source: str = "<memory>") -> None:
        self.source = source
        self._parent = {_class_name(c): (_class_name(p) if p else None) for c, p in parents.items()}
        for cls, parent in self._parent.items():
            if parent is not None and parent not in self._parent:
                raise ValueError(f"{source}: class {cls!r} has parent {parent!r}, which is not a class of "
                                 f"the ontology; declare {parent!r} or make {cls!r} a root")
        self._depth: dict[str, int] = {}
        for start in self._parent:
            path: list[str] = []
            cls: str | None = start
            while cls is not None and cls not in self._depth:
                if cls in path:
                    cycle = " -> ".join([*path[path.index(cls):], cls])
                    raise ValueError(f"{source}: rdfs:subClassOf cycle {cycle}; fix the parent of one of them")
                path.append(cls)
                cls = self._parent[cls]
            above = 0 if cls is None else self._depth[cls]
            self._depth.update((c, above + k) for k, c in enumerate(reversed(path), 1))
        self.classes: tuple[str, ...] = tuple(sorted(self._parent))

    def _check(self, cls: str) -> str:
        name = _class_name(cls)
        if name not in self._parent:
            raise KeyError(f"{cls!r} is not a class of the ontology {self.source}")
        return name

    def __contains__(self, cls: object) -> bool:
        return isinstance(cls, str) and _class_name(cls) in self._parent

    def __len__(self) -> int:
        return len(self._parent)

    def parent(self, cls: str) -> str | None:
        return self._parent[self._check(cls)]

    def depth(self, cls: str) -> int:
        return self._depth[self._check(cls)]

    def ancestors(self, cls: str, *, include_self: bool = True) -> list[str]:
        """The chain from ``cls`` (unless ``include_self=False``) up to its root."""
        name: str | None = self._check(cls)
        chain = []
        while name is not None:
            chain.append(name)
            name = self._parent[name]
        return chain if include_self else chain[1:]

    def is_a(self, cls: str, ancestor: str) -> bool:
        """True when ``ancestor`` is ``cls`` itself or one of its ancestors."""
        return _class_name(ancestor) in self.ancestors(cls)

    def coarse(self, cls: str | None) -> str:
        """The 4-type category of a class: person, location, organisation or ENTITY."""
        chain = self.ancestors(cls) if cls is not None else []
        return next((COARSE_ROOTS[name] for name in chain if name in COARSE_ROOTS), ENTITY)

    def by_specificity(self) -> list[str]:
        """Classes deepest first, equal depths by name: the order behind the tie rule."""
        return sorted(self._parent, key=lambda c: (-self._depth[c], c))

    def most_specific(self, classes: Iterable[str]) -> str | None:
        """The deepest known class of ``classes`` (ties: smallest name); None if none is known."""
        known = {_class_name(c) for c in classes} & self._parent.keys()
        return min(known, key=lambda c: (-self._depth[c], c), default=None)


def _read_owl(path: Path) -> Ontology:
    parents: dict[str, str | None] = {}
    base, level = DBO, 0
    try:
        for event, el in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                level += 1
                base = el.get(_XML_BASE, base) if level == 1 else base
                continue
            level -= 1
            if level != 1:  # nested elements are read with (and cleared with) their top-level one
                continue
            iri = urljoin(base, el.get(_RDF + "about", ""))
            if el.tag == _OWL_CLASS and iri.startswith(DBO) and iri != DBO:
                supers = []
                for sub in el.findall(_RDFS + "subClassOf"):
                    ref = sub.get(_RDF + "resource")
                    if ref is None and len(sub):  # <rdfs:subClassOf><owl:Class rdf:about="..."/>
                        ref = sub[0].get(_RDF + "about")
                    supers.append(urljoin(base, ref or ""))
                parent = next((s[len(DBO):] for s in supers if s.startswith(DBO) and s != DBO), None)
                # A class described twice keeps the first dbo parent found (RDF may split statements).
                parents[iri[len(DBO):]] = parents.get(iri[len(DBO):]) or parent
            el.clear()
    except ET.ParseError as err:
        raise ValueError(f"{path}:{err.position[0]}: not well-formed RDF/XML ({err})") from err
    if not parents:
        raise ValueError(f"{path}: no owl:Class under {DBO}; is this the DBpedia Ontology OWL file?")
    return Ontology(parents, source=str(path))


def _read_tsv(path: Path) -> Ontology:
    parents: dict[str, str | None] = {}
    stated: dict[str, tuple[int, int]] = {}
    with open(path, encoding="utf-8") as f:
        cols = [c.strip().lower() for c in f.readline().rstrip("\r\n").split("\t")]
        if "type" not in cols or "parent" not in cols:
            raise ValueError(f"{path}:1: expected a header with the columns Type, Depth, Parent; got {cols}")
        for lineno, line in enumerate(f, 2):
            fields = line.rstrip("\r\n").split("\t")
            if not line.strip():
                continue
            row = dict(zip(cols, fields))
            name, parent, depth = _class_name(row["type"]), row["parent"].strip(), row.get("depth", "0").strip()
            if len(fields) != len(cols) or not depth.isdigit() or name in parents:
                raise ValueError(f"{path}:{lineno}: expected {len(cols)} tab-separated fields (a class listed once, "
                                 f"an integer Depth), got {excerpt(line)}")
            parents[name] = _class_name(parent) if parent.startswith(("dbo:", DBO, "<" + DBO)) else None
            stated[name] = (int(depth), lineno)
    ontology = Ontology(parents, source=str(path))
    for name, (depth, lineno) in stated.items():
        if depth and ontology.depth(name) != depth:  # the parents are authoritative; the column is a cache
            logger.warning("%s:%d: %s has Depth %d but its parents give %d", path, lineno, name, depth,
                           ontology.depth(name))
    return ontology


def load_ontology(path: str | os.PathLike) -> Ontology:
    """The class tree from the OWL (``.owl``/``.rdf``/``.xml``) or the TSV table (``.tsv``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in {".owl", ".rdf", ".xml"}:
        return _read_owl(path)
    if suffix == ".tsv":
        return _read_tsv(path)
    raise ValueError(f"{path}: unknown ontology format {suffix!r}; pass the .owl file or the .tsv table")


def _subject_title(subject: str, counts: Counter) -> str | None:
    if not subject.startswith(DBPEDIA_RESOURCE):
        counts["non_resource_subjects"] += 1
        return None
    if _INTERMEDIATE.search(subject):  # before normalising, which would fold "__1" into " 1"
        counts["intermediate_subjects"] += 1
        return None
    return dbpedia_resource_title(subject) or None


def build_types_db(
    instance_type_files: str | os.PathLike | Sequence[str | os.PathLike], ontology: Ontology | str | os.PathLike,
    db_path: str | os.PathLike, *, batch_size: int = 50_000, skip_bad_lines: bool = False, cache_mb: int = 256,
    progress: bool = True,
) -> Path:
    """Build the read-only lookup file of most specific classes; returns ``db_path``.

    Memory stays bounded at any scale: triples stream into a staging table (a temporary
    SQLite file) in batches, one ``GROUP BY`` (an external sort bounded by ``cache_mb``)
    keeps ``MIN(class_id)`` per title into a ``WITHOUT ROWID`` table, and the finished
    file is renamed over ``db_path``. Counts (subjects counted once per run of lines) go
    to the ``meta`` table, see :attr:`DBpediaTypes.metadata`.
    """
    one = isinstance(instance_type_files, (str, os.PathLike))
    files = [Path(f) for f in ([instance_type_files] if one else instance_type_files)]  # type: ignore[list-item]
    if missing := [str(f) for f in files if not f.is_file()]:
        raise FileNotFoundError(f"instance types file(s) not found: {', '.join(missing)}")
    ontology = ontology if isinstance(ontology, Ontology) else load_ontology(ontology)
    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    ranked = ontology.by_specificity()
    class_id = {name: i for i, name in enumerate(ranked, 1)}
    # Next to db_path: the same file system, so the final rename is atomic.
    made = [tempfile.mkstemp(prefix=f".{db_path.name}.", suffix=s, dir=db_path.parent) for s in (".tmp", ".staging")]
    for fd, _ in made:
        os.close(fd)
    tmp, staging = (Path(name) for _, name in made)
    start = time.perf_counter()
    counts, unknown = Counter(), Counter()  # type: ignore[var-annotated]
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("ATTACH DATABASE ? AS s", (str(staging),))
        # A failed build is thrown away, so no journal and no fsync.
        conn.executescript(f"""{"".join(f"PRAGMA {db}.journal_mode=OFF; PRAGMA {db}.synchronous=OFF; "
                                        f"PRAGMA {db}.cache_size=-{cache_mb * 512};" for db in ("main", "s"))}
            CREATE TABLE classes (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
                                  parent INTEGER REFERENCES classes(id), depth INTEGER NOT NULL);
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE s.staging (title TEXT NOT NULL, class_id INTEGER NOT NULL);
            BEGIN;""")
        conn.executemany("INSERT INTO classes VALUES (?, ?, ?, ?)", [
            (class_id[c], c, class_id.get(ontology.parent(c) or ""), ontology.depth(c)) for c in ranked])
        batch: list[tuple[str, int]] = []
        size = sum(f.stat().st_size for f in files)
        from tqdm.auto import tqdm  # here: the extract workers import this module and draw no bar (50 ms each)

        with tqdm(total=size, unit="B", unit_scale=True, desc="DBpedia types", disable=not progress) as bar:
            for f in files:
                last_subject, title, best = "", None, 0
                for subject, obj in iter_type_triples(f, skip_bad_lines=skip_bad_lines, counts=counts, _bar=bar):
                    if subject != last_subject:
                        # Dumps list an entity's types on consecutive lines: stage one row per
                        # run with its best id (8.8M rows for 14.4M triples in the benchmark).
                        if best:
                            batch.append((title, best))  # type: ignore[arg-type]
                        if len(batch) >= batch_size:
                            conn.executemany("INSERT INTO s.staging VALUES (?, ?)", batch)
                            counts["staged_rows"] += len(batch)
                            batch = []
                        last_subject, best = subject, 0
                        title = _subject_title(subject, counts)
                    if title is None:
                        continue
                    if not obj.startswith(DBO):
                        counts["non_dbo_objects"] += 1
                        continue
                    cid = class_id.get(obj[len(DBO):])
                    if cid is None:
                        unknown[obj[len(DBO):]] += 1
                    elif not best or cid < best:
                        best = cid
                if best:
                    batch.append((title, best))  # type: ignore[arg-type]
        conn.executemany("INSERT INTO s.staging VALUES (?, ?)", batch)
        counts["staged_rows"] += len(batch)
        conn.execute("COMMIT")
        logger.info("staged %d rows from %d rdf:type triples; grouping by title", counts["staged_rows"],
                    counts["triples"])
        conn.execute("CREATE TABLE types (title TEXT PRIMARY KEY, class_id INTEGER NOT NULL) WITHOUT ROWID")
        conn.execute("BEGIN")
        cur = conn.execute("INSERT INTO types SELECT title, MIN(class_id) FROM s.staging GROUP BY title")
        counts["entities_typed"] = cur.rowcount
        counts["unknown_class_triples"] = sum(unknown.values())
        meta = {"format": DB_FORMAT, "sources": [{"name": f.name, "bytes": f.stat().st_size} for f in files],
                "ontology_source": Path(ontology.source).name, "counts": dict(counts),
                "unknown_classes": dict(unknown.most_common(100)), "build_seconds": time.perf_counter() - start,
                "tie_rule": "deepest class; equal depth: lexicographically smallest name"}
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE s")
        conn.close()
        os.chmod(tmp, 0o644)  # mkstemp made it private; workers of other users may read it
        os.replace(tmp, db_path)  # readers see the old file or the complete new one
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    finally:
        staging.unlink(missing_ok=True)
    if unknown:
        logger.warning("%d rdf:type triples name dbo classes missing from the ontology, e.g. %s",
                       sum(unknown.values()), ", ".join(f"{c} ({n})" for c, n in unknown.most_common(5)))
    logger.info("typed %d entities in %.1fs -> %s (%s)", counts["entities_typed"], time.perf_counter() - start,
                db_path, json.dumps(dict(counts)))
    return db_path


class DBpediaTypes:
    """Read-only, picklable lookup of link-target categories in a :func:`build_types_db` file.

    The SQLite connection is opened lazily in each process (and dropped in a forked child);
    pickling keeps only the path, so the object can be sent to ``datasets.map`` workers.
    ``cache_size`` bounds a per-process LRU cache of single-title lookups (0 disables it).
    """

    _CHUNK = 500  # parameters per IN (...) query, well under SQLite's variable limit

    def __init__(self, db_path: str | os.PathLike, *, cache_size: int = 100_000) -> None:
        self.db_path = Path(db_path)
        if not self.db_path.is_file():
            raise FileNotFoundError(f"DBpedia types DB {self.db_path} not found; build it with build_types_db()")
        self.cache_size = cache_size
        self._conn: sqlite3.Connection | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"db_path": self.db_path, "cache_size": self.cache_size, "_conn": None}  # never the connection

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._forks == _FORKS[0]:
            return self._conn
        # immutable=1: the file is only ever replaced by rename, never written in place, so
        # SQLite may skip the locks and change checks around every query (19 -> 4 µs a lookup).
        conn = sqlite3.connect(f"file:{quote(str(self.db_path.resolve()))}?mode=ro&immutable=1", uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            if row is None or json.loads(row[0]) != DB_FORMAT:
                raise ValueError(f"{self.db_path}: format {row and row[0]} is not {DB_FORMAT}")
            rows = conn.execute("SELECT id, name, parent FROM classes ORDER BY id").fetchall()
        except (sqlite3.DatabaseError, ValueError) as err:
            conn.close()
            raise ValueError(f"{self.db_path} is not a DBpedia types DB of this version ({err}); "
                             "rebuild it with build_types_db()") from err
        # Memory-mapped reads: ~30% faster lookups, and N workers share the OS page cache.
        conn.execute("PRAGMA mmap_size = 1073741824")
        names = {i: name for i, name, _ in rows}
        self._ontology = Ontology({name: names.get(p) for _, name, p in rows}, source=str(self.db_path))
        # Index 0 stands for "no dbo class", so a lookup ends in plain list indexing.
        self._names: list[str | None] = [None, *names.values()]
        self._fine = [ENTITY, *(name.lower() for name in names.values())]
        self._coarse = [ENTITY, *(self._ontology.coarse(name) for name in names.values())]
        self._cached = functools.lru_cache(self.cache_size)(self._lookup) if self.cache_size else self._lookup
        self._conn, self._forks = conn, _FORKS[0]
        return conn

    def _lookup(self, title: str) -> int:
        row = self._conn.execute(_SELECT_ONE, (normalise_title(title),)).fetchone()  # type: ignore[union-attr]
        return row[0] if row else 0

    def _id(self, title: str) -> int:
        if self._conn is None or self._forks != _FORKS[0]:
            self._connect()
        return self._cached(title)

    def _ids(self, titles: Sequence[str]) -> list[int]:
        conn = self._connect()
        keys = [normalise_title(t) for t in titles]
        unique = sorted(set(keys) - {""})  # sorted: neighbouring B-tree pages
        found: dict[str, int] = {}
        for i in range(0, len(unique), self._CHUNK):
            chunk = unique[i:i + self._CHUNK]
            sql = f"SELECT title, class_id FROM types WHERE title IN ({','.join('?' * len(chunk))})"
            found.update(conn.execute(sql, chunk).fetchall())
        return [found.get(k, 0) for k in keys]

    # Each method looks the id up before reading a table: connecting loads the tables.
    def most_specific(self, title: str) -> str | None:
        """The most specific dbo class of a page title or link target (``"OfficeHolder"``), else None."""
        i = self._id(title)
        return self._names[i]

    def category(self, title: str) -> str:
        """The lower-cased most specific class (``"officeholder"``), else ENTITY."""
        i = self._id(title)
        return self._fine[i]

    def coarse_category(self, title: str) -> str:
        """The 4-type category: person, location, organisation or ENTITY."""
        i = self._id(title)
        return self._coarse[i]

    def categories(self, titles: Sequence[str], *, coarse: bool = False) -> list[str]:
        """:meth:`category` (or :meth:`coarse_category`) of many titles, one query per chunk."""
        ids = self._ids(titles)
        table = self._coarse if coarse else self._fine
        return [table[i] for i in ids]

    def both_categories(self, titles: Sequence[str]) -> list[tuple[str, str]]:
        """``(category, coarse_category)`` of many titles from one lookup (:meth:`categories` twice, one query)."""
        ids = self._ids(titles)  # connects first, which loads the tables
        fine, coarse = self._fine, self._coarse
        return [(fine[i], coarse[i]) for i in ids]

    @property
    def ontology(self) -> Ontology:
        self._connect()
        return self._ontology

    def ancestors(self, cls: str, *, include_self: bool = True) -> list[str]:
        return self.ontology.ancestors(cls, include_self=include_self)

    @property
    def metadata(self) -> dict[str, Any]:
        """Build facts: ``sources``, ``counts`` (triples, entities_typed...), ``unknown_classes``."""
        return {k: json.loads(v) for k, v in self._connect().execute("SELECT key, value FROM meta")}

    def __len__(self) -> int:
        return int(self.metadata["counts"].get("entities_typed", 0))

    def close(self) -> None:
        if self._conn is not None and self._forks == _FORKS[0]:
            self._conn.close()
        self._conn = None


# A SQLite connection must not be used across fork(): a forked worker (datasets.map with
# num_proc, DataLoader) sees the fork count change and opens its own connection. (Calling
# os.getpid() on every lookup instead would cost 0.4 µs, a third of a cached lookup.)
_FORKS = [0]
os.register_at_fork(after_in_child=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))
