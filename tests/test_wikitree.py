"""The light tree (crossner_hf.wikipedia.wikitree) has mwparserfromhell's tree shape, node for node."""

from __future__ import annotations

import random

import mwparserfromhell
import pytest
from mwparserfromhell import nodes as mw

from crossner_hf.wikipedia import iter_pages
from crossner_hf.wikipedia import wikitree as lt
from crossner_hf.wikipedia.wikitext import prestrip


def _mw(code) -> list:
    out = []
    for node in code.nodes:
        if isinstance(node, mw.Text):
            out.append(("t", node.value))
        elif isinstance(node, mw.Wikilink):
            out.append(("l", _mw(node.title), None if node.text is None else _mw(node.text), str(node.title)))
        elif isinstance(node, mw.Template):
            out.append(("T", _mw(node.name), [(p.showkey, _mw(p.name) if p.showkey else None, _mw(p.value))
                                              for p in node.params], str(node.name)))
        elif isinstance(node, mw.Tag):
            out.append(("g", str(node.tag), node.wiki_markup, node.self_closing,
                        None if node.contents is None or node.self_closing else _mw(node.contents)))
        elif isinstance(node, mw.Heading):
            out.append(("h", node.level, _mw(node.title), node.title.strip_code().strip()))
        elif isinstance(node, mw.HTMLEntity):
            out.append(("e", node.normalize(), str(node)))
        elif isinstance(node, mw.ExternalLink):
            out.append(("x", _mw(node.url), None if node.title is None else _mw(node.title), node.brackets))
        else:
            out.append(("d", str(node)))
    return out


def _light(nodes: list) -> list:
    out = []
    for node in nodes:
        if isinstance(node, str):
            out.append(("t", node))
        elif isinstance(node, lt.Link):
            out.append(("l", _light(node.title), None if node.text is None else _light(node.text), lt.source(node.title)))
        elif isinstance(node, lt.Template):
            out.append(("T", _light(node.name), [(p.showkey, _light(p.key) if p.showkey else None, _light(p.value))
                                                 for p in node.params], lt.source(node.name)))
        elif isinstance(node, lt.Tag):
            out.append(("g", node.tag, node.wiki_markup, node.self_closing,
                        None if node.contents is None else _light(node.contents)))
        elif isinstance(node, lt.Heading):
            out.append(("h", node.level, _light(node.title), lt.strip_code(node.title).strip()))
        elif isinstance(node, lt.Entity):
            out.append(("e", node.value, node.raw))
        elif isinstance(node, lt.ExternalLink):
            out.append(("x", _light(node.url), None if node.title is None else _light(node.title), node.brackets))
        else:
            out.append(("d", node.raw))
    return out


def _texts(sample) -> list[str]:
    return [p.wikitext for p in iter_pages(sample) if p.wikitext and not p.redirect]


@pytest.mark.parametrize("stripped", [True, False], ids=["prestripped", "raw"])
def test_light_tree_matches_mwparserfromhell_on_pages_and_random_cuts(stripped, wiki):
    texts = _texts(wiki["sample"])
    rng = random.Random(7)
    cuts = []
    for _ in range(400):  # cut markup mid-construct: unbalanced links, templates, tags
        text = rng.choice(texts)
        start = rng.randrange(len(text))
        cuts.append(text[start:start + rng.choice([40, 400, 4000])])
    for text in texts + cuts:
        text = prestrip(text) if stripped else text
        expected = _mw(mwparserfromhell.parse(text, skip_style_tags=True))
        assert _light(lt.parse(text)) == expected, text[:200]


def test_source_and_strip_code_of_the_nodes_a_title_holds():
    nodes = lt.parse("[[Kruskal&ndash;Wallis test|the &#x2013; {{lang|fr|test}}]] == A [[B|c]] &amp; ==\n")
    assert lt.source(nodes[0].title) == "Kruskal&ndash;Wallis test"
    assert lt.source(nodes[0].text) == "the &#x2013; {{lang|fr|test}}"
    heading = next(n for n in lt.parse("== A [[B|c]] &amp; {{x}} <!-- n -->==\n") if isinstance(n, lt.Heading))
    assert lt.strip_code(heading.title).strip() == "A c &"
