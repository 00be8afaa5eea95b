"""One spelling of a Wikipedia page title, shared by link targets, redirects and DBpedia.

A link ``[[abraham_Lincoln#Early life|Lincoln]]``, the page title ``Abraham Lincoln`` and
the DBpedia resource ``<http://dbpedia.org/resource/Abraham_Lincoln>`` must meet in one
key. The key is the title as MediaWiki displays it: underscores as spaces, runs of white
space folded to one space, no leading colon, the section part (``#...``) dropped, and the
first letter upper-cased (English Wikipedia's ``case="first-letter"``). HTML entities and
percent-escapes are decoded, because both occur in link targets and DBpedia IRIs.

Example:
    >>> normalise_title("abraham_Lincoln#Early life")
    'Abraham Lincoln'
    >>> dbpedia_resource_title("<http://dbpedia.org/resource/Rock_%26_roll>")
    'Rock & roll'
"""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

_SPACES = re.compile(r"[\s_]+")
DBPEDIA_RESOURCE = "http://dbpedia.org/resource/"


def normalise_title(title: str) -> str:
    """The canonical key of a page title or link target ('' when nothing is left)."""
    if "%" in title:
        title = unquote(title)
    if "&" in title:
        title = html.unescape(title)
    title = title.split("#", 1)[0]
    title = _SPACES.sub(" ", title).strip().lstrip(":").strip()
    if not title:
        return ""
    return title[0].upper() + title[1:]


def dbpedia_resource_title(iri: str) -> str | None:
    """The page title of a DBpedia resource IRI (with or without ``<>``), else None."""
    iri = iri.strip("<>")
    if not iri.startswith(DBPEDIA_RESOURCE):
        return None
    return normalise_title(iri[len(DBPEDIA_RESOURCE):])
