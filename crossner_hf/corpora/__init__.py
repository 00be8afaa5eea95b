"""Unlabeled corpora for domain-adaptive pre-training (DAPT), as in CrossNER.

One module per job:

* ``matcher``: ``EntityMatcher`` (Aho-Corasick, word boundaries, leftmost-longest) and
  ``EntityMention``;
* ``entity_list``: entity lists ``surface -> type`` from TSV files or CrossNER labels;
* ``model_mentions``: ``ModelMentionFinder``, mentions from a trained NER model (through ``Tagger``);
* ``levels``: the ``domain``/``entity``/``task``/``integrated`` corpus levels;
* ``text``: loading text files and tokenising them (packed blocks or line by line);

Example:
    >>> from crossner_hf.corpora import build_corpus_levels
    >>> levels = build_corpus_levels(["Putin and Obama met .", "It rained ."],
    ...                              {"Putin": "politician", "Obama": "politician"},
    ...                              domain="politics")
    >>> {name: len(ds) for name, ds in levels.items()}
    {'domain': 2, 'entity': 1, 'task': 1, 'integrated': 3}

Names are imported lazily, so ``import crossner_hf.corpora`` does not import ``datasets``
or ``transformers`` until they are used.
"""

from __future__ import annotations

from typing import Any

from crossner_hf._lazy import lazy_attribute, lazy_dir


_LAZY = {
    "EntityMatcher": "matcher",
    "EntityMention": "matcher",
    "entity_list_from_conll": "entity_list",
    "iter_spans": "entity_list",
    "load_entity_list": "entity_list",
    "save_entity_list": "entity_list",
    "ModelMentionFinder": "model_mentions",
    "find_mentions_with_model": "model_mentions",
    "LEVELS": "levels",
    "MentionFn": "levels",
    "annotate_mentions": "levels",
    "build_corpus_levels": "levels",
    "select_levels": "levels",
    "specialised_types": "levels",
    "load_text_corpus": "text",
    "pack_sequences": "text",
    "tokenize_corpus": "text",
    "CorporaConfig": "build",
    "build_corpora": "build",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """A lazy name's object, imported from its module on first use."""
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(_LAZY, globals())
