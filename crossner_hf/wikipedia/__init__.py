"""Wikipedia dumps and DBpedia types: the NER-BERT corpus and CrossNER's domain corpora.

One module per job:

* ``dump``: reading ``pages-articles`` dumps (plain, bz2, multistream + index) page by page;
* ``wikitext``: wikitext to plain text with every anchor's span and target;
* ``titles``: the one spelling of a page title shared by links, redirects and DBpedia;
* ``redirects``: the redirect map (chains resolved, cycles reported) as an SQLite file;
* ``dbpedia``: the DBpedia Ontology and the most specific class of each entity (SQLite);
* ``sentences``: sentences and CrossNER-style words with the anchors as word spans, BIO tags;
* ``pipeline``: the datatrove stages (redirects, typed extract; page index, domain extract) with their executors and resume;
* ``nerbert_corpus``: the NER-BERT filtering, balancing, split and report;
* ``domains``: CrossNER's domain corpora from page categories and the category graph;
* ``seeds``: a domain's pages found from the user's train entities (title, redirect, link text) and their categories;
* ``categories``: a dump's categories listed with their counts, and the categories of given titles.

Example:
    >>> from crossner_hf.wikipedia import iter_pages, wikitext_to_text
    >>> page = next(iter_pages("enwiki-pages-articles.xml.bz2"))    # doctest: +SKIP
    >>> text, anchors = wikitext_to_text(page.wikitext)             # doctest: +SKIP

Names are imported lazily, so ``import crossner_hf.wikipedia`` stays cheap.
"""

from __future__ import annotations

from typing import Any

from crossner_hf._lazy import lazy_attribute, lazy_dir


_LAZY = {
    "DumpError": "dump",
    "DumpUnit": "dump",
    "Page": "dump",
    "iter_pages": "dump",
    "iter_unit_pages": "dump",
    "plan_units": "dump",
    "read_multistream_index": "dump",
    "wikitext_to_text": "wikitext",
    "page_categories": "wikitext",
    "is_disambiguation": "wikitext",
    "normalise_title": "titles",
    "Redirects": "redirects",
    "build_redirects_db": "redirects",
    "ENTITY": "dbpedia",
    "Ontology": "dbpedia",
    "load_ontology": "dbpedia",
    "build_types_db": "dbpedia",
    "DBpediaTypes": "dbpedia",
    "anchor_sentences": "sentences",
    "bio_tags": "sentences",
    "CorpusOptions": "nerbert_corpus",
    "CorpusBuilder": "nerbert_corpus",
    "NERBERTCorpusConfig": "build",
    "build_nerbert_corpus": "build",
    "prepare_domain_sentences": "build",
    "prepare_nerbert_sentences": "build",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """A lazy name's object, imported from its module on first use."""
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(_LAZY, globals())
