"""A light node tree from mwparserfromhell's tokens: the parse without its Python node objects.

mwparserfromhell's C tokenizer is fast; its builder is not: every node becomes a ``Wikicode``
over a ``SmartList``, built through ``parse_anything`` (which runs four imports per call). On
the sample dump that builder took three times the tokenizer's time and was the largest single
cost of extraction. The text renderer (:mod:`crossner_hf.wikipedia.wikitext`) only reads a few
fields of each node, so :func:`parse` builds just those, with the builder's exact grouping of
tokens (the same tree shape, read from the same tokens):

* text is a plain ``str``;
* :class:`Link` ``[[title|text]]``, :class:`Template` ``{{name|params}}``, :class:`Tag` (HTML
  and wiki-markup tags; attributes are skipped: the text never uses them), :class:`Heading`,
  :class:`Entity` (its character already decoded), :class:`ExternalLink`;
* comments and ``{{{arguments}}}`` are :class:`Dropped` (they never make text).

:func:`source` gives a node list's wikitext back where the renderer needs it (a link's title);
it is exact for text, links, templates and entities, the node kinds a title or a template
parameter holds, and a non-empty stand-in for the rest.
"""

from __future__ import annotations

import html.entities
from collections.abc import Callable

from crossner_hf.extras import require

mwparserfromhell = require("mwparserfromhell", "wikipedia")
from mwparserfromhell import parser  # noqa: E402
from mwparserfromhell.parser import ParserError, tokens  # noqa: E402

Node = "str | Link | Template | Tag | Heading | Entity | ExternalLink | Dropped"


class Link:
    __slots__ = ("title", "text")

    def __init__(self, title: list, text: list | None):
        self.title, self.text = title, text


class Param:
    __slots__ = ("key", "value", "showkey")

    def __init__(self, key: list | None, value: list, showkey: bool):
        self.key, self.value, self.showkey = key, value, showkey


class Template:
    __slots__ = ("name", "params")

    def __init__(self, name: list, params: list[Param]):
        self.name, self.params = name, params


class Tag:
    __slots__ = ("tag", "contents", "wiki_markup", "self_closing")

    def __init__(self, tag: str, contents: list | None, wiki_markup: str | None, self_closing: bool):
        self.tag, self.contents, self.wiki_markup, self.self_closing = tag, contents, wiki_markup, self_closing


class Heading:
    __slots__ = ("title", "level")

    def __init__(self, title: list, level: int):
        self.title, self.level = title, level


class Entity:
    __slots__ = ("value", "raw")

    def __init__(self, value: str, raw: str):
        self.value, self.raw = value, raw  # the decoded character, and "&name;" / "&#123;" / "&#x7B;"


class ExternalLink:
    __slots__ = ("url", "title", "brackets")

    def __init__(self, url: list, title: list | None, brackets: bool):
        self.url, self.title, self.brackets = url, title, brackets


class Dropped:
    """A comment or a template argument: kept in the tree (a link's title may hold one) but never text."""

    __slots__ = ("raw",)

    def __init__(self, raw: str):
        self.raw = raw


class _Builder:
    """mwparserfromhell's ``Builder`` (parser/builder.py, 0.7) producing the light nodes above."""

    def __init__(self, token_list: list):
        token_list.reverse()
        self.tokens = token_list

    def nodes_until(self, stop: tuple[type, ...]) -> tuple[list, object]:
        """Nodes up to the next token of a ``stop`` type (returned, consumed); ``()``: to the end."""
        out: list = []
        pop, handlers = self.tokens.pop, _HANDLERS
        while self.tokens:
            token = pop()
            kind = type(token)
            if kind is tokens.Text:
                out.append(token.get("text"))  # a token is a dict: .get skips its Python __getattr__
            elif kind in stop:
                return out, token
            else:
                handler = handlers.get(kind)
                if handler is None:
                    raise ParserError(f"unexpected {kind.__name__} while building the tree")
                out.append(handler(self, token))
        if stop:
            raise ParserError(f"missed a {stop[0].__name__} token")
        return out, None

    def wikilink(self, _token) -> Link:
        title, token = self.nodes_until((tokens.WikilinkClose, tokens.WikilinkSeparator))
        if type(token) is tokens.WikilinkClose:
            return Link(title, None)
        text, _ = self.nodes_until((tokens.WikilinkClose,))
        return Link(title, text)

    def template(self, _token) -> Template:
        name, token = self.nodes_until((tokens.TemplateClose, tokens.TemplateParamSeparator))
        params: list[Param] = []
        while type(token) is tokens.TemplateParamSeparator:
            value, token = self.nodes_until((tokens.TemplateClose, tokens.TemplateParamSeparator,
                                             tokens.TemplateParamEquals))
            if type(token) is tokens.TemplateParamEquals:
                key = value
                value, token = self.nodes_until((tokens.TemplateClose, tokens.TemplateParamSeparator))
                params.append(Param(key, value, True))
            else:
                params.append(Param(None, value, False))
        return Template(name, params)

    def argument(self, _token) -> Dropped:
        nodes, token = self.nodes_until((tokens.ArgumentClose, tokens.ArgumentSeparator))
        raw = source(nodes)
        if type(token) is tokens.ArgumentSeparator:
            default, _ = self.nodes_until((tokens.ArgumentClose,))
            raw += "|" + source(default)
        return Dropped("{{{" + raw + "}}}")

    def external_link(self, token) -> ExternalLink:
        brackets = token.brackets
        url, token = self.nodes_until((tokens.ExternalLinkClose, tokens.ExternalLinkSeparator))
        if type(token) is tokens.ExternalLinkClose:
            return ExternalLink(url, None, brackets)
        title, _ = self.nodes_until((tokens.ExternalLinkClose,))
        return ExternalLink(url, title, brackets)

    def entity(self, _token) -> Entity:
        token = self.tokens.pop()
        if type(token) is tokens.HTMLEntityNumeric:
            token = self.tokens.pop()
            if type(token) is tokens.HTMLEntityHex:
                value = self.tokens.pop().text
                self.tokens.pop()  # HTMLEntityEnd
                return Entity(chr(int(value, 16)), f"&#{token.char}{value};")
            self.tokens.pop()
            return Entity(chr(int(token.text)), f"&#{token.text};")
        self.tokens.pop()
        return Entity(chr(html.entities.name2codepoint[token.text]), f"&{token.text};")

    def heading(self, token) -> Heading:
        title, _ = self.nodes_until((tokens.HeadingEnd,))
        return Heading(title, token.level)

    def comment(self, _token) -> Dropped:
        nodes, _ = self.nodes_until((tokens.CommentEnd,))
        return Dropped("<!--" + source(nodes) + "-->")

    def attribute(self) -> None:
        """Skip one attribute (its tokens up to the next attribute or the end of the open tag)."""
        stops = (tokens.TagAttrStart, tokens.TagCloseOpen, tokens.TagCloseSelfclose, tokens.TagAttrEquals,
                 tokens.TagAttrQuote)
        while True:
            _, token = self.nodes_until(stops)
            if type(token) in (tokens.TagAttrEquals, tokens.TagAttrQuote):
                continue
            self.tokens.append(token)
            return

    def tag(self, token) -> Tag:
        wiki_markup = token.wiki_markup
        stops = (tokens.TagAttrStart, tokens.TagCloseOpen, tokens.TagCloseSelfclose)
        name_nodes, token = self.nodes_until(stops)
        while type(token) is tokens.TagAttrStart:
            self.attribute()
            _, token = self.nodes_until(stops)
        name = source(name_nodes)
        if type(token) is tokens.TagCloseSelfclose:
            return Tag(name, None, wiki_markup, True)
        contents, _ = self.nodes_until((tokens.TagOpenClose,))
        self.nodes_until((tokens.TagCloseClose,))  # the closing tag's name
        return Tag(name, contents, wiki_markup, False)


_HANDLERS: dict[type, Callable] = {
    tokens.WikilinkOpen: _Builder.wikilink, tokens.TemplateOpen: _Builder.template,
    tokens.ArgumentOpen: _Builder.argument, tokens.ExternalLinkOpen: _Builder.external_link,
    tokens.HTMLEntityStart: _Builder.entity, tokens.HeadingStart: _Builder.heading,
    tokens.CommentStart: _Builder.comment, tokens.TagOpenOpen: _Builder.tag,
}


def parse(wikitext: str, skip_style_tags: bool = True) -> list:
    """The top-level node list of ``wikitext`` (mwparserfromhell's tokenizer, this module's nodes)."""
    return _Builder(_tokenizer().tokenize(wikitext, 0, skip_style_tags)).nodes_until(())[0]


def _tokenizer():
    """The C tokenizer when built (``mwparserfromhell.parser.use_c``), as ``mwparserfromhell.parse`` picks it."""
    if parser.use_c and parser.CTokenizer is not None:
        return parser.CTokenizer()
    from mwparserfromhell.parser.tokenizer import Tokenizer

    return Tokenizer()


def source(nodes: list) -> str:
    """The wikitext of a node list (exact for text, links, templates, entities, comments, arguments)."""
    parts = []
    for node in nodes:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, Link):
            parts.append("[[" + source(node.title) + ("" if node.text is None else "|" + source(node.text)) + "]]")
        elif isinstance(node, Template):
            params = "".join("|" + (source(p.key) + "=" if p.showkey else "") + source(p.value) for p in node.params)
            parts.append("{{" + source(node.name) + params + "}}")
        elif isinstance(node, (Entity, Dropped)):
            parts.append(node.raw)
        elif isinstance(node, Tag):
            inner = "" if node.contents is None else source(node.contents)
            parts.append(f"<{node.tag}>{inner}</{node.tag}>" if not node.self_closing else f"<{node.tag}/>")
        elif isinstance(node, Heading):
            parts.append("=" * node.level + source(node.title) + "=" * node.level)
        elif isinstance(node, ExternalLink):
            title = "" if node.title is None else " " + source(node.title)
            parts.append(f"[{source(node.url)}{title}]" if node.brackets else source(node.url) + title)
    return "".join(parts)


def strip_code(nodes: list) -> str:
    """The visible text of a node list, as mwparserfromhell's ``strip_code()`` gives it for a heading:
    link text (or title), entity characters, tag contents; templates, comments and arguments dropped."""
    parts = []
    for node in nodes:
        if isinstance(node, str):
            parts.append(node)
        elif isinstance(node, Link):
            parts.append(strip_code(node.text if node.text else node.title))
        elif isinstance(node, Entity):
            parts.append(node.value)
        elif isinstance(node, Tag) and node.contents is not None:
            parts.append(strip_code(node.contents))
        elif isinstance(node, ExternalLink):
            parts.append(strip_code(node.title) if node.title else source(node.url))
    return "".join(parts)
