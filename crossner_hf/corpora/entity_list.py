"""Entity lists (``surface form -> entity type``): TSV files and lists built from labeled data.

An entity list drives the entity- and task-level corpora (see ``crossner_hf.corpora.levels``).
It is a plain ``dict[str, str]``; this module reads and writes it as ``surface<TAB>type``
lines and builds it from CrossNER's BIO-labeled sentences.

Example:
    >>> ents = entity_list_from_conll([{"tokens": ["Boris", "Yeltsin", "won"],
    ...                                 "ner_tags": ["B-politician", "I-politician", "O"]}])
    >>> ents
    {'Boris Yeltsin': 'politician'}
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from crossner_hf.data.conll import excerpt
from crossner_hf.data.entities import entity_spans

logger = logging.getLogger(__name__)


def load_entity_list(path: str | Path) -> dict[str, str]:
    """Read a ``surface<TAB>type`` file (UTF-8, one entry a line; blank and ``#`` lines skipped).

    A surface listed twice keeps its first type, with a warning naming it.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Entity list file {path} not found: pass a TSV file 'surface<TAB>type'.")
    entities: dict[str, str] = {}
    conflicts = 0
    with path.open(encoding="utf-8") as handle:
        for lineno, raw in enumerate(handle, start=1):
            line = raw.rstrip("\n\r")
            if not line.strip() or line.startswith("#"):
                continue
            surface, sep, etype = line.rpartition("\t")
            if not sep or not surface.strip() or not etype.strip():
                raise ValueError(
                    f"{path}:{lineno}: expected 'surface<TAB>type', got {excerpt(line)}; "
                    "separate the surface form and its type with one tab."
                )
            surface, etype = surface.strip(), etype.strip()
            if surface in entities and entities[surface] != etype:
                conflicts += 1
                logger.warning(
                    "%s:%d: %r listed again as %r; keeping its first type %r.",
                    path, lineno, surface, etype, entities[surface],
                )
                continue
            entities.setdefault(surface, etype)
    logger.info("Read %d entities from %s (%d conflicting duplicates).", len(entities), path, conflicts)
    return entities


def save_entity_list(entities: Mapping[str, str], path: str | Path) -> Path:
    """Write ``entities`` as a sorted ``surface<TAB>type`` file; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    bad = [s for s in entities if "\t" in s or "\n" in s]
    if bad:
        raise ValueError(f"Entity surfaces {bad[:3]} contain a tab or newline; they cannot go in a TSV.")
    lines = [f"{surface}\t{entities[surface]}\n" for surface in sorted(entities)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def iter_spans(tokens: Sequence[str], tags: Sequence[str]) -> Iterator[tuple[str, str]]:
    """``(surface, type)`` of each BIO entity span; tokens joined by single spaces.

    Spans are :func:`crossner_hf.data.entities.entity_spans` (seqeval's reading: an ``I-`` tag
    after ``O`` or after another type starts a new span).
    """
    if len(tokens) != len(tags):
        raise ValueError(f"{len(tokens)} tokens but {len(tags)} tags; they must pair up.")
    bad = sorted({t for t in tags if t != "O" and t[:2] not in ("B-", "I-")})
    if bad:
        raise ValueError(f"Tags {bad} are not BIO: expected 'O', 'B-type' or 'I-type'.")
    for etype, first, last in entity_spans(tags):
        yield " ".join(tokens[first : last + 1]), etype


def entity_list_from_conll(
    sentences: Iterable[Mapping[str, Any]],
    *,
    label_names: Sequence[str] | None = None,
    min_count: int = 1,
) -> dict[str, str]:
    """Build ``surface -> type`` from labeled sentences (dicts with ``tokens`` and ``ner_tags``).

    ``ner_tags`` are tag strings (as from ``crossner_hf.data.conll.read_conll``) or, with
    ``label_names``, label ids (as in ``load_target(...).dataset``). A surface labeled with several
    types gets its most frequent one (ties: the first seen), so ``Russia`` the country
    and ``Russia`` once tagged as an organisation end up a country. Surfaces seen fewer
    than ``min_count`` times are left out.

    Example:
        >>> entity_list_from_conll([{"tokens": ["Boris", "Yeltsin", "won"],
        ...                          "ner_tags": ["B-politician", "I-politician", "O"]}])
        {'Boris Yeltsin': 'politician'}
    """
    counts: dict[str, Counter[str]] = {}
    for number, sentence in enumerate(sentences):
        try:
            tokens, tags = sentence["tokens"], sentence["ner_tags"]
        except KeyError:
            raise ValueError(
                f"Sentence {number} has keys {sorted(sentence)}; entity_list_from_conll needs "
                "'tokens' and 'ner_tags'."
            ) from None
        if label_names is not None:
            tags = [label_names[t] if isinstance(t, int) else t for t in tags]
        elif any(not isinstance(t, str) for t in tags):
            raise ValueError(
                f"Sentence {number} has integer ner_tags: pass label_names=LABELS[config] "
                "so they can be read as tag strings."
            )
        for surface, etype in iter_spans(tokens, tags):
            counts.setdefault(surface, Counter())[etype] += 1
    entities: dict[str, str] = {}
    for surface, by_type in counts.items():
        if sum(by_type.values()) >= min_count:
            # Counter.most_common keeps insertion order among ties: the first seen type.
            entities[surface] = by_type.most_common(1)[0][0]
    return entities
