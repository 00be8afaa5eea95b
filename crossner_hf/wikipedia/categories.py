"""A dump's categories, listed: what ``build-corpora --list_categories [WORD]`` and ``--titles`` print.

Both read the index stage's tables (``index/{page,category,redirect}``: one pass over the dump that parses
nothing, shared with the domain corpora and resumed like them), so listing a dump's categories costs one
cheap read, and a build in the same work folder reuses it.

Example:
    >>> format_categories([("Albums", 12, 3), ("Rock music groups", 4, 0)])
    'pages\\tsub-categories\\tcategory\\n12\\t3\\tAlbums\\n4\\t0\\tRock music groups'
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossner_hf.wikipedia.domains import index_rows
from crossner_hf.wikipedia.titles import normalise_title

logger = logging.getLogger(__name__)


def index_dump(source_args: Any) -> Path:
    """Run (or resume) the index stage and merge the redirect map; returns the work folder.
    ``source_args``: a :class:`~crossner_hf.wikipedia.build.WikipediaSourceArguments`."""
    from crossner_hf.wikipedia.build import _work_setup
    from crossner_hf.wikipedia.pipeline import build_redirects, run_page_index

    work, _, options, tasks, _ = _work_setup(source_args)
    run_page_index(work, tasks, options=options)
    build_redirects(work, stage="index")
    return work


def list_categories(work_dir: str | Path, word: str | None = None) -> list[tuple[str, int, int]]:
    """``(category, articles in it, sub-categories)`` for every category an article or category page of the
    index names (those whose name holds ``word``, case-insensitively, when given), most articles first."""
    work = Path(work_dir)
    wanted = word.casefold() if word else None

    def keep(name: str) -> bool:
        return wanted is None or wanted in name.casefold()

    pages: Counter = Counter()
    for row in index_rows(work, "page", ["categories"]):
        pages.update(c for c in row["categories"] if keep(c))
    subcats: Counter = Counter()
    for row in index_rows(work, "category", ["title", "parents"]):
        subcats.update(c for c in row["parents"] if keep(c))
        if keep(row["title"]):
            subcats[row["title"]] += 0  # a category page with no article or sub-category is still listed
    names = set(pages) | set(subcats)
    return sorted(((n, pages[n], subcats[n]) for n in names), key=lambda r: (-r[1], -r[2], r[0]))


def title_categories(work_dir: str | Path, titles: Sequence[str]) -> list[tuple[str, str | None, list[str]]]:
    """``(title asked, the article it leads to or None, that article's categories)`` for each title, through
    the redirect map."""
    from crossner_hf.wikipedia.redirects import Redirects

    work = Path(work_dir)
    asked = [normalise_title(t) for t in titles]
    ends = Redirects(work / "redirects.sqlite").resolve_many(asked)
    found: dict[str, list[str]] = {}
    wanted = set(ends)
    for row in index_rows(work, "page", ["title", "categories"]):
        if row["title"] in wanted:
            found.setdefault(row["title"], row["categories"])
    return [(title, end if end in found else None, found.get(end, [])) for title, end in zip(titles, ends)]


def format_categories(rows: Sequence[tuple[str, int, int]]) -> str:
    """The listing as tab-separated lines under a header."""
    return "\n".join(["pages\tsub-categories\tcategory", *(f"{n}\t{s}\t{name}" for name, n, s in rows)])


def format_title_categories(rows: Sequence[tuple[str, str | None, list[str]]]) -> str:
    """One line a title: ``title<TAB>article<TAB>category | category ...`` (``-`` for a title not in the dump)."""
    return "\n".join(f"{title}\t{end or '-'}\t{' | '.join(categories)}" for title, end, categories in rows)
