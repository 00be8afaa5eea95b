"""Wikitext to plain text, keeping every anchor (linked run of words) with its span and target.

The parser is mwparserfromhell (its C tokenizer; ``mwparserfromhell.parser.use_c`` is
checked once and a warning logged if the slow pure-Python tokenizer is in use). It was
chosen over wikitextparser by measured speed on the sample dump and by its node tree,
which gives links, templates, tags and headings as objects rather than as overlapping
spans (see ``benchmarks/wikipedia.py`` for the figures).

What the text keeps and drops
    * kept: prose, the text of internal links (an *anchor*), the label of bracketed
      external links, the contents of inline HTML (``<b>``, ``<span>``, ``<small>``, ...),
      list items (one line each), a few text-producing templates (``lang``, ``nowrap``,
      ``convert``'s number and unit, dash and space templates);
    * dropped: every other template (infoboxes, citations, navboxes), tables, ``<ref>``
      references, files and images (with their captions), category links, interlanguage
      links, comments, magic words (``__NOTOC__``), ``''``/``'''`` style quotes, headings
      (a heading starts a new paragraph), and whole sections that are lists of links or
      sources rather than prose (``References``, ``External links``, ``See also``, ...).

Anchors
    ``(start, end, target)``: character offsets into the returned text and the link
    target normalised by :func:`~crossner_hf.wikipedia.titles.normalise_title` (then
    looked up in ``redirects``, when given, so a redirect points at its final page). The
    MediaWiki *link trail* is part of the anchor (``[[bus]]es`` is the anchor "buses").
    Links into other namespaces (``Wiktionary:``, ``Help:``, ``:Category:``) and links to
    a section of the same page keep their text but make no anchor.

Example:
    >>> text, anchors = wikitext_to_text("'''Lincoln''' led the [[Union (American Civil War)|Union]]"
    ...                                  " in the [[American Civil War]].{{sfn|Donald|1995}}")
    >>> text
    'Lincoln led the Union in the American Civil War.'
    >>> [(text[s:e], t) for s, e, t in anchors]
    [('Union', 'Union (American Civil War)'), ('American Civil War', 'American Civil War')]
"""

from __future__ import annotations

import bisect
import html
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from crossner_hf.extras import require

mwparserfromhell = require("mwparserfromhell", "wikipedia")

from crossner_hf.wikipedia.titles import normalise_title
from crossner_hf.wikipedia.wikitree import Entity, ExternalLink, Heading, Link, Tag, Template, parse, source, strip_code

logger = logging.getLogger(__name__)

Anchor = tuple[int, int, str]
"""``(start, end, target)`` of a linked run of text."""

SKIPPED_SECTIONS = frozenset({
    "references", "external links", "see also", "further reading", "notes", "bibliography",
    "sources", "citations", "footnotes", "notes and references", "references and notes",
    "works cited", "literature", "external sources", "primary sources", "secondary sources",
})
"""Section titles (lower-cased) whose content is lists of links or sources, not prose."""

DROPPED_TAGS = frozenset({
    "ref", "references", "table", "math", "chem", "ce", "gallery", "timeline", "imagemap",
    "syntaxhighlight", "source", "score", "graph", "mapframe", "maplink", "templatedata",
    "templatestyles", "hiero", "inputbox", "categorytree", "pre", "noinclude", "includeonly",
    "div_col", "caption", "tr", "td", "th",
})
"""Tags whose contents never become text (tables are the ``{| |}`` markup as parsed)."""

_LINE_TAGS = frozenset({"br", "li", "dd", "dt", "p", "hr"})
_IMAGE_NAMESPACES = frozenset({"file", "image", "media"})
_OTHER_NAMESPACES = frozenset({
    "category", "wikipedia", "wp", "project", "help", "template", "portal", "special", "user",
    "user talk", "talk", "draft", "module", "mediawiki", "book", "timedtext", "wiktionary", "wikt",
    "wikiquote", "q", "wikisource", "s", "wikibooks", "b", "wikinews", "n", "wikiversity", "v",
    "wikivoyage", "voy", "wikispecies", "species", "commons", "c", "meta", "m", "mw", "d",
    "wikidata", "foundation", "wmf", "google", "w", "iarchive", "doi", "arxiv", "rfc",
})
_LANGUAGE_PREFIX = re.compile(r"^[a-z]{2,3}(?:-[a-z]{2,8})*$")
_STYLE_QUOTES = re.compile(r"'{2,}")
_MAGIC_WORDS = re.compile(r"__[A-Z]+__")
_LINK_TRAIL = re.compile(r"^[a-z]+")
_NO_BREAK_SPACES = re.compile("[\u00a0\u2009\u202f]")
"""Written as plain spaces, as the HTMLEntity branch of :func:`_render` does."""
_WHITESPACE = re.compile(
    # a run of line breaks at the start (removed), and the runs that change: spaces around a line break,
    # three or more breaks; a bare "\n" or "\n\n" is left alone (it would be written back unchanged, and
    # skipping these most common runs halves the matches folded one by one below)
    # (the lookahead first lets the engine skip the other characters fast: 2.4x faster on the sample)
    r"(?=[ \t\n\u00a0\u2009\u202f(])(?:\A[ \t\u00a0\u2009\u202f]*\n[ \t\n\u00a0\u2009\u202f]*|[ \t\u00a0\u2009\u202f]+\n[ \t\n\u00a0\u2009\u202f]*"
    r"|\n(?=[ \t\u00a0\u2009\u202f]|\n[ \t\n\u00a0\u2009\u202f])[ \t\n\u00a0\u2009\u202f]*"
    r"|[ \t\u00a0\u2009\u202f]{2,}|[\t\u00a0\u2009\u202f]"
    # what removed templates leave behind: "( )", "(; born ...", " ,"
    r"| ?\((?:[ ,;]*)\)|\((?: *[,;])+ *| +(?=[,.;:]))")
_SPACE_TEMPLATES = {"nbsp": " ", "snd": " – ", "spaced ndash": " – ", "ndash": "–", "mdash": "—", "spnd": " – ",
                    "sp": " ", "space": " ", "·": " · ", "dot": " · ", "middot": "·", "en dash": "–", "em dash": "—"}
_WRAPPER_TEMPLATES = frozenset({"nowrap", "nobr", "nobreak", "small", "smaller", "big", "lang", "transl",
                                "transliteration", "lang-x", "nowiki", "em", "strong", "vr", "not a typo",
                                "sic", "as written", "linktext", "ill", "interlanguage link"})

_KEPT_TEMPLATES = frozenset(_SPACE_TEMPLATES) | _WRAPPER_TEMPLATES | {"convert", "cvt"}
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)
_REF = re.compile(r"<ref\b[^>]*?/>|<ref\b[^>]*>.*?(?:</ref\s*>|$)", re.DOTALL | re.IGNORECASE)
_BRACES = re.compile(r"(?=[{}\n \t])(?:\{\{|\}\}|(?:^|(?<=\n))[ \t]*\{\||\n[ \t]*\|\})")  # lookahead: a fast skip
_TEMPLATE_NAME = re.compile(r"\{\{\s*([^|{}<\n]*)")

_C_TOKENIZER_CHECKED = False
_normalised_title = lru_cache(maxsize=1 << 16)(normalise_title)
"""Link targets repeat within and across pages: each spelling is normalised once."""


def prestrip(wikitext: str) -> str:
    """Cut comments, references, tables and the templates that make no text before parsing.

    Templates are most of an article's nodes (citations, infoboxes, navboxes) and are all
    dropped anyway; removing them with one brace-matching scan instead of building their
    node trees more than halves the parse time. A template is cut with everything nested
    in it unless its name is one whose text is kept (``lang``, ``convert``, ...). Unbalanced
    braces stop the scan: the parser then sees the rest as it is.
    """
    wikitext = _COMMENT.sub("", wikitext)
    wikitext = _REF.sub("", wikitext)
    cuts: list[tuple[int, int]] = []
    stack: list[tuple[int, bool, bool]] = []  # (start, is_table, dropped)
    for match in _BRACES.finditer(wikitext):
        token = match.group().strip()
        if token == "{{":
            name = _TEMPLATE_NAME.match(wikitext, match.start())
            name = name.group(1).strip().lower().replace("_", " ") if name else ""
            inside_dropped = bool(stack) and stack[-1][2]
            stack.append((match.start(), False, inside_dropped or name not in _KEPT_TEMPLATES))
        elif token == "{|":
            stack.append((match.start(), True, True))
        else:
            if not stack or stack[-1][1] != (token == "|}"):
                break  # unbalanced: leave the rest to the parser
            start, _, dropped = stack.pop()
            if dropped and not (stack and stack[-1][2]):
                cuts.append((start, match.end()))
    if not cuts:
        return wikitext
    pieces, last = [], 0
    for start, end in cuts:
        pieces.append(wikitext[last:start])
        last = end
    pieces.append(wikitext[last:])
    return "".join(pieces)


def _check_tokenizer() -> None:
    global _C_TOKENIZER_CHECKED
    if not _C_TOKENIZER_CHECKED:
        _C_TOKENIZER_CHECKED = True
        if not mwparserfromhell.parser.use_c:
            logger.warning(
                "mwparserfromhell is using its pure-Python tokenizer (parser.use_c is False), several times "
                "slower; reinstall it from a wheel for your platform: pip install --force-reinstall mwparserfromhell"
            )


@dataclass
class _Builder:
    """Text pieces and anchors, with the running length so anchors get offsets as they are written."""

    resolve: Callable[[str], str]
    pieces: list[str] = field(default_factory=list)
    length: int = 0
    anchors: list[Anchor] = field(default_factory=list)

    def write(self, text: str) -> None:
        if text:
            self.pieces.append(text)
            self.length += len(text)


def _namespace_of(title: str) -> tuple[bool, str | None]:
    """``(leading_colon, namespace or interwiki prefix lower-cased, or None)``."""
    colon = title.startswith(":")
    body = title[1:].lstrip() if colon else title
    head, sep, _ = body.partition(":")
    if not sep:
        return colon, None
    prefix = head.strip().lower().replace("_", " ")
    if prefix in _IMAGE_NAMESPACES or prefix in _OTHER_NAMESPACES or _LANGUAGE_PREFIX.match(prefix):
        return colon, prefix
    return colon, None


def _plain(text: str) -> str:
    """Text without wiki style quotes and magic words (the checks skip the regexes on most text)."""
    if "''" in text:
        text = _STYLE_QUOTES.sub("", text)
    if "__" in text:
        text = _MAGIC_WORDS.sub("", text)
    return text


def _render_template(template: Template, out: _Builder) -> None:
    name = source(template.name).strip().lower().replace("_", " ")
    if name in _SPACE_TEMPLATES:
        out.write(_SPACE_TEMPLATES[name])
        return
    positional = [p for p in template.params if not p.showkey]
    if name in _WRAPPER_TEMPLATES or name.startswith("lang-"):
        if not positional:
            return
        # {{lang|fr|texte}} and {{ill|Title|fr|...}}: the text is the last (lang) or first (ill) positional
        chosen = positional[0] if name in {"ill", "interlanguage link", "nowrap", "nobr", "nobreak", "small",
                                           "smaller", "big", "em", "strong", "not a typo", "sic", "as written",
                                           "vr"} or name.startswith("lang-") else positional[-1]
        _render(list(chosen.value), out)
    elif name in {"convert", "cvt"} and len(positional) >= 2:
        out.write(f"{source(positional[0].value).strip()} {source(positional[1].value).strip()}")


def _render_link(link: Link, out: _Builder, trail: str) -> None:
    raw_title = source(link.title).strip()
    colon, namespace = _namespace_of(raw_title)
    if namespace is not None and not colon and (namespace in _IMAGE_NAMESPACES or namespace == "category"
                                                or _LANGUAGE_PREFIX.match(namespace)):
        return  # images, category membership, interlanguage links: not part of the prose
    start = out.length
    if link.text is not None and source(link.text).strip():
        _render(list(link.text), out)
    else:
        # MediaWiki shows an unlabelled link's title with its entities decoded ([[Kruskal&ndash;Wallis test]]
        # reads "Kruskal–Wallis test"), as the Entity nodes of prose and labels are below
        shown = _NO_BREAK_SPACES.sub(" ", html.unescape(raw_title.lstrip(":")))
        if link.text is not None:  # the pipe trick: [[Paris (band)|]] shows "Paris"
            shown = re.sub(r"\s*\([^)]*\)$", "", shown.split(":", 1)[-1])
        out.write(shown)
    out.write(trail)
    target = "" if namespace is not None else _normalised_title(raw_title)
    if target and out.length > start:
        out.anchors.append((start, out.length, out.resolve(target)))


def _render(nodes: list, out: _Builder) -> None:
    """Write a node list's text (``nodes`` is the caller's copy: a link trail is cut from the text after a link)."""
    skip_level = 0  # inside a skipped section: its heading level, else 0
    index, count = 0, len(nodes)
    while index < count:
        node = nodes[index]
        index += 1
        if isinstance(node, str):
            if not skip_level:
                out.write(_plain(node))
            continue
        if isinstance(node, Heading):
            title = _plain(strip_code(node.title)).strip().lower()
            if skip_level and node.level > skip_level:
                continue
            skip_level = node.level if title in SKIPPED_SECTIONS else 0
            out.write("\n\n")
            continue
        if skip_level:
            continue
        if isinstance(node, Link):
            trail = ""
            if index < count and isinstance(nodes[index], str):
                match = _LINK_TRAIL.match(nodes[index])
                if match:
                    trail = match.group()
                    nodes[index] = nodes[index][len(trail):]
            _render_link(node, out, trail)
        elif isinstance(node, Template):
            _render_template(node, out)
        elif isinstance(node, Tag):
            name = node.tag.strip().lower()
            if node.wiki_markup and name in {"table", "tr", "td", "th", "caption"}:
                continue
            if name in DROPPED_TAGS:
                continue
            if name in _LINE_TAGS:
                out.write("\n")
            if node.contents is not None and not node.self_closing:
                _render(list(node.contents), out)
            if name in {"p", "div", "blockquote", "center", "poem"}:
                out.write("\n")
        elif isinstance(node, Entity):
            value = node.value
            out.write(" " if value in "\u00a0\u2009\u202f" else value)
        elif isinstance(node, ExternalLink):
            if node.brackets and node.title is not None:
                _render(list(node.title), out)
        # Dropped (comments, template arguments): no text


def _normalise_space(text: str, anchors: list[Anchor]) -> tuple[str, list[Anchor]]:
    """Fold white space (a line break run -> one blank line at most, a space run -> one space,
    no space at line ends) and move the anchors with the text."""
    pieces: list[str] = []
    old_ends: list[int] = []  # end of each replaced run in the old text
    shifts: list[int] = []    # characters removed up to and including that run
    removed, last = 0, 0
    for match in _WHITESPACE.finditer(text):
        start, end = match.span()
        run = match.group()
        if "(" in run:
            replacement = "" if run.endswith(")") else "("
        elif "\n" in run:
            replacement = "\n\n" if run.count("\n") > 1 else "\n"
        else:
            replacement = "" if match.end() < len(text) and text[match.end()] in ",.;:" else " "
        if start == 0:
            replacement = ""
        pieces.append(text[last:start])
        pieces.append(replacement)
        removed += (end - start) - len(replacement)
        old_ends.append(end)
        shifts.append(removed)
        last = end
    pieces.append(text[last:])
    new_text = "".join(pieces)

    def move(position: int) -> int:
        at = bisect.bisect_right(old_ends, position) - 1
        return position - (shifts[at] if at >= 0 else 0)

    moved: list[Anchor] = []
    for start, end, target in anchors:
        new_start, new_end = move(start), move(end)
        segment = new_text[new_start:new_end]
        # an anchor that began or ended in folded white space loses that space, not its words
        stripped = segment.strip()
        if not stripped:
            continue
        new_start += len(segment) - len(segment.lstrip())
        moved.append((new_start, new_start + len(stripped), target))
    end_strip = len(new_text.rstrip())
    return new_text[:end_strip], [a for a in moved if a[1] <= end_strip]


def wikitext_to_text(
    wikitext: str, redirects: Mapping[str, str] | Callable[[str], str] | None = None
) -> tuple[str, list[Anchor]]:
    """Plain text of an article and its anchors ``(start, end, target)``.

    Args:
        wikitext: the article's wikitext.
        redirects: a redirect map (title -> final title) or a function doing the lookup;
            link targets are resolved through it.
    """
    _check_tokenizer()
    if redirects is None:
        resolve: Callable[[str], str] = lambda title: title  # noqa: E731
    elif callable(redirects):
        resolve = redirects
    else:
        resolve = lambda title: redirects.get(title, title)  # noqa: E731
    out = _Builder(resolve=resolve)
    _render(parse(prestrip(wikitext), skip_style_tags=True), out)
    return _normalise_space("".join(out.pieces), out.anchors)


_CATEGORY = re.compile(r"\[\[\s*[Cc]ategory\s*:\s*([^\]|\n]+)")
_DISAMBIGUATION = re.compile(
    r"\{\{\s*(?:disambiguation|disambig|dab|disamb|hndis|geodis|numberdis|letter-numbercombdisambig|"
    r"mathdab|hospitaldis|schooldis)\s*[|}]",
    re.IGNORECASE,
)


def page_categories(wikitext: str) -> list[str]:
    """The categories a page declares (``[[Category:X|sort key]]`` -> ``X``), normalised, in order."""
    seen: dict[str, None] = {}
    for match in _CATEGORY.finditer(wikitext):
        name = normalise_title(match.group(1))
        if name:
            seen.setdefault(name, None)
    return list(seen)


def is_disambiguation(title: str, wikitext: str) -> bool:
    """A disambiguation (or name-list) page: a ``(disambiguation)`` title or a disambiguation template."""
    return title.endswith("(disambiguation)") or bool(_DISAMBIGUATION.search(wikitext))
