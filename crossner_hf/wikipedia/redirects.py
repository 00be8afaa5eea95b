"""The dump's redirect map, built once into SQLite that every worker opens read-only.

A redirect page ``AfghanistanHistory -> History of Afghanistan`` means a link to the first
is a link to the second. Chains (``A -> B -> C``) are resolved to their end when the map
is built, so a lookup is one query; a cycle (``A -> B -> A``) cannot be resolved, is
reported (logged with its titles and stored in the ``cycles`` table) and its titles map
to themselves. English Wikipedia has about 10 million redirects, so the map lives in a
file, not in a dict copied into each worker.

Example:
    >>> import tempfile, os
    >>> path = build_redirects_db([("A", "B"), ("B", "C"), ("X", "Y"), ("Y", "X")],
    ...                           os.path.join(tempfile.mkdtemp(), "r.sqlite"))
    >>> redirects = Redirects(path)
    >>> redirects.resolve("A"), redirects.resolve("Q"), redirects.cycles
    ('C', 'Q', [['X', 'Y']])
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from crossner_hf.wikipedia.titles import normalise_title

logger = logging.getLogger(__name__)

MAX_CHAIN = 32
"""Longer chains than this are treated as cycles (MediaWiki itself follows one hop)."""


def build_redirects_db(pairs: Iterable[tuple[str, str]], path: str | os.PathLike) -> Path:
    """Write ``(title, target)`` pairs, chains resolved, to an SQLite file (atomically)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    db.executescript(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
        "CREATE TABLE raw(title TEXT PRIMARY KEY, target TEXT) WITHOUT ROWID;"
        "CREATE TABLE cycles(id INTEGER, title TEXT);"
    )
    batch: list[tuple[str, str]] = []
    for title, target in pairs:
        title, target = normalise_title(title), normalise_title(target)
        if title and target and title != target:
            batch.append((title, target))
        if len(batch) >= 100_000:
            db.executemany("INSERT OR REPLACE INTO raw VALUES (?, ?)", batch)
            batch.clear()
    db.executemany("INSERT OR REPLACE INTO raw VALUES (?, ?)", batch)
    # Follow chains in SQL, one hop per round, until nothing moves (few rounds in practice).
    db.execute("CREATE TABLE redirects AS SELECT title, target FROM raw")
    for _ in range(MAX_CHAIN):
        moved = db.execute(
            "UPDATE redirects SET target = (SELECT raw.target FROM raw WHERE raw.title = redirects.target) "
            "WHERE target IN (SELECT title FROM raw) AND target != title"
        ).rowcount
        if not moved:
            break
    cyclic = [row[0] for row in db.execute(
        "SELECT title FROM redirects WHERE target IN (SELECT title FROM raw) ORDER BY title")]
    cycles = _group_cycles(db, cyclic)
    for number, members in enumerate(cycles):
        db.executemany("INSERT INTO cycles VALUES (?, ?)", [(number, t) for t in members])
        logger.warning("redirect cycle, left unresolved: %s", " -> ".join(members))
    db.execute("DELETE FROM redirects WHERE target IN (SELECT title FROM raw)")
    db.executescript(
        "CREATE TABLE final(title TEXT PRIMARY KEY, target TEXT) WITHOUT ROWID;"
        "INSERT INTO final SELECT title, target FROM redirects;"
        "DROP TABLE redirects; DROP TABLE raw; ALTER TABLE final RENAME TO redirects;"
    )
    db.commit()
    db.close()
    os.replace(tmp, path)
    return path


def _group_cycles(db: sqlite3.Connection, titles: list[str]) -> list[list[str]]:
    raw = dict(db.execute(
        f"SELECT title, target FROM raw WHERE title IN ({','.join('?' * len(titles))})", titles)) if titles else {}
    seen: set[str] = set()
    groups = []
    for title in titles:
        if title in seen:
            continue
        chain, node = [], title
        while node in raw and node not in chain and len(chain) <= MAX_CHAIN:
            chain.append(node)
            node = raw[node]
        seen.update(chain)
        groups.append(sorted(chain))
    return groups


class Redirects:
    """Read-only lookups in a redirect file; picklable (each process opens its own connection)."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        if not Path(self.path).is_file():
            raise FileNotFoundError(f"redirect map {self.path} not found; build it with build_redirects_db.")
        self._db: sqlite3.Connection | None = None

    def __getstate__(self) -> dict:
        return {"path": self.path, "_db": None}

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        return self._db

    def resolve(self, title: str) -> str:
        row = self.db.execute("SELECT target FROM redirects WHERE title = ?", (title,)).fetchone()
        return row[0] if row else title

    def resolve_many(self, titles: list[str]) -> list[str]:
        """Batched :meth:`resolve` (one query per 900 distinct titles)."""
        distinct = list(dict.fromkeys(titles))
        found: dict[str, str] = {}
        for start in range(0, len(distinct), 900):
            chunk = distinct[start:start + 900]
            found.update(self.db.execute(
                f"SELECT title, target FROM redirects WHERE title IN ({','.join('?' * len(chunk))})", chunk))
        return [found.get(t, t) for t in titles]

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM redirects").fetchone()[0]

    @property
    def cycles(self) -> list[list[str]]:
        groups: dict[int, list[str]] = {}
        for number, title in self.db.execute("SELECT id, title FROM cycles ORDER BY id, title"):
            groups.setdefault(number, []).append(title)
        return list(groups.values())
