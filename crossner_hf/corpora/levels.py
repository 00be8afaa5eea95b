"""The CrossNER corpus levels for domain-adaptive pre-training (DAPT).

From a domain-level text corpus (all the domain's sentences) and a way to find entity
mentions in it (an entity list, or a trained NER model), CrossNER builds four corpora
(Liu et al., AAAI 2021, section 4.1):

``domain``
    every sentence of the domain corpus, in source order;
``entity``
    sentences with at least ``k`` entity mentions (default 2), in source order;
``task``
    sentences with at least one mention of a *domain-specialised* type, in source
    order. A domain's specialised types are by default those in its label list and in
    no other CrossNER domain's (politics: politician, politicalparty, election);
``integrated``
    the task level twice plus the entity level, as a multiset (a sentence in both
    appears three times), shuffled with ``seed``. The paper found it the best one.

Every level is a ``datasets.Dataset`` with columns ``text``, ``idx`` (row in the domain
corpus), ``n_mentions``, ``types`` (sorted distinct mention types) and ``mentions``
(``start``, ``end``, ``surface``, ``type`` per mention), so a selection can be inspected
and explained.

Example:
    >>> levels = build_corpus_levels(
    ...     ["Putin met Obama in Moscow .", "The Labour Party won .", "It rained ."],
    ...     {"Putin": "politician", "Obama": "politician", "Moscow": "location",
    ...      "Labour Party": "politicalparty"},
    ...     domain="politics", k=2)
    >>> levels["entity"]["idx"][:], levels["task"]["idx"][:], sorted(levels["integrated"]["idx"])
    ([0], [0, 1], [0, 0, 0, 1, 1])
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from datasets import Dataset, DatasetDict, concatenate_datasets
from datasets.fingerprint import Hasher

from crossner_hf.data.labels import DOMAINS, entity_types
from crossner_hf.wikipedia.domains import mention_features
from crossner_hf.corpora.matcher import EntityMatcher, EntityMention

logger = logging.getLogger(__name__)

MentionFn = Callable[[list[str]], list[list[EntityMention]]]
"""Finds the mentions of each text of a batch: ``EntityMatcher`` and ``ModelMentionFinder`` are ones."""

LEVELS: tuple[str, ...] = ("domain", "entity", "task", "integrated")

MENTION_FEATURES = mention_features()
"""The mention table's columns (one home: :func:`crossner_hf.wikipedia.domains.mention_features`)."""

def specialised_types(domain: str, domains: Sequence[str] = DOMAINS) -> list[str]:
    """Entity types of ``domain`` that no other domain of ``domains`` has, in label-list order.

    Example:
        >>> specialised_types("politics")
        ['politician', 'election', 'politicalparty']
    """
    if domain not in domains:
        raise ValueError(
            f"specialised_types: domain {domain!r} is not one of {', '.join(domains)}; "
            "pass specialised_types=[...] explicitly for another domain."
        )
    elsewhere = {t for other in domains if other != domain for t in entity_types(other)}
    return [t for t in entity_types(domain) if t not in elsewhere]


def _as_mention_fn(source: Mapping[str, str] | MentionFn, case_sensitive: bool) -> MentionFn:
    if isinstance(source, Mapping):
        return EntityMatcher(source, case_sensitive=case_sensitive)
    if callable(source):
        return source
    raise ValueError(
        f"build_corpus_levels: the mention source must be an entity list (surface -> type), "
        f"an EntityMatcher or a callable texts -> mentions, got {type(source).__name__}."
    )


def _as_dataset(texts: Sequence[str] | Dataset, text_column: str) -> Dataset:
    if isinstance(texts, Dataset):
        if text_column not in texts.column_names:
            raise ValueError(
                f"The corpus dataset has columns {texts.column_names} but no {text_column!r}; "
                "pass text_column= or rename the column."
            )
        return texts
    if isinstance(texts, str):
        raise ValueError(
            "build_corpus_levels got one string as the corpus: pass a list of texts, or "
            "load a file with crossner_hf.corpora.load_text_corpus(path)."
        )
    return Dataset.from_dict({text_column: list(texts)})


def _mentions_table(texts: list[str], indices: list[int], found: list[list[EntityMention]]) -> pa.Table:
    """The annotated batch as Arrow columns: building them directly skips ``datasets``'
    per-element encoding of the nested ``mentions`` column, which dominated the run time."""
    flat = [m for mentions in found for m in mentions]
    offsets = [0]
    type_offsets = [0]
    types: list[str] = []
    for mentions in found:
        offsets.append(offsets[-1] + len(mentions))
        distinct = sorted({m.type for m in mentions})
        types.extend(distinct)
        type_offsets.append(type_offsets[-1] + len(distinct))
    structs = pa.StructArray.from_arrays(
        [
            pa.array([m.start for m in flat], pa.int32()),
            pa.array([m.end for m in flat], pa.int32()),
            pa.array([m.surface for m in flat], pa.string()),
            pa.array([m.type for m in flat], pa.string()),
        ],
        names=["start", "end", "surface", "type"],
    )
    columns = [
        pa.array(texts, pa.string()),
        pa.array(indices, pa.int64()),
        pa.array([len(m) for m in found], pa.int32()),
        pa.ListArray.from_arrays(pa.array(type_offsets, pa.int32()), pa.array(types, pa.string())),
        pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), structs),
    ]
    return pa.Table.from_arrays(columns, schema=MENTION_FEATURES.arrow_schema)


def annotate_mentions(
    dataset: Dataset,
    mention_fn: MentionFn,
    *,
    text_column: str = "text",
    batch_size: int = 1000,
    num_proc: int | None = None,
) -> Dataset:
    """Add ``idx``, ``n_mentions``, ``types`` and ``mentions`` to a text dataset.

    Runs as a batched ``Dataset.map``, so large corpora stay on disk and the result is
    cached: a ``mention_fn`` with a ``fingerprint`` attribute (``EntityMatcher``,
    ``ModelMentionFinder``) gets a cache key from it instead of from hashing the whole
    object. Columns other than ``text`` are dropped; ``text_column`` is renamed ``text``.
    """

    def annotate(texts: list[str], indices: list[int]) -> pa.Table:
        found = mention_fn(texts)
        if len(found) != len(texts):
            raise ValueError(
                f"The mention function returned {len(found)} mention lists for a batch of "
                f"{len(texts)} texts; it must return one list per text."
            )
        return _mentions_table(texts, indices, found)

    fingerprint = getattr(mention_fn, "fingerprint", None)
    new_fingerprint = None
    if fingerprint is not None and getattr(dataset, "_fingerprint", None):
        new_fingerprint = Hasher.hash(
            ["annotate_mentions/v1", dataset._fingerprint, fingerprint, text_column, batch_size]
        )
    return dataset.map(
        annotate,
        input_columns=text_column,
        batched=True,
        batch_size=batch_size,
        with_indices=True,
        remove_columns=dataset.column_names,
        features=MENTION_FEATURES,
        num_proc=num_proc,
        new_fingerprint=new_fingerprint,
        desc="Finding entity mentions",
    )


def select_levels(
    annotated: Dataset,
    specialised: Sequence[str],
    *,
    k: int = 2,
    seed: int = 42,
) -> DatasetDict:
    """The four levels from a corpus annotated by ``annotate_mentions``.

    The filters read one small column each and run in a single process: worker start-up
    would cost more than the filtering.
    """
    if k < 1:
        raise ValueError(f"select_levels: k={k} must be at least 1 (the paper uses 2).")
    missing = [c for c in MENTION_FEATURES if c not in annotated.column_names]
    if missing:
        raise ValueError(
            f"select_levels needs the columns {missing}; run annotate_mentions on the corpus first."
        )
    wanted = frozenset(specialised)
    entity = annotated.filter(
        lambda n: [x >= k for x in n],
        input_columns="n_mentions",
        batched=True,
        desc=f"Entity level (>= {k} mentions)",
    )
    task = annotated.filter(
        lambda types: [not wanted.isdisjoint(t) for t in types],
        input_columns="types",
        batched=True,
        desc="Task level (specialised types)",
    )
    if len(task) == 0:
        logger.warning(
            "The task level is empty: no mention has a specialised type %s. Check that the "
            "entity list or model uses these type names.", sorted(wanted),
        )
    shuffled = concatenate_datasets([task, task, entity]).shuffle(seed=seed)
    # Flattening in Arrow format copies record batches; the default Python format would
    # decode and re-encode every nested mention (about 8x slower).
    integrated = shuffled.with_format("arrow").flatten_indices().with_format(None)
    levels = DatasetDict({"domain": annotated, "entity": entity, "task": task, "integrated": integrated})
    for name, level in levels.items():  # each level says which it is, so DAPT's card records the level given
        level.info.config_name = name
    logger.info(
        "Corpus levels: %s (k=%d, specialised types %s, seed %d).",
        ", ".join(f"{name} {len(ds)}" for name, ds in levels.items()), k, sorted(wanted), seed,
    )
    return levels


def build_corpus_levels(
    texts: Sequence[str] | Dataset,
    mentions: Mapping[str, str] | MentionFn,
    domain: str,
    *,
    k: int = 2,
    specialised_types: Sequence[str] | None = None,
    seed: int = 42,
    case_sensitive: bool = True,
    text_column: str = "text",
    batch_size: int = 1000,
    num_proc: int | None = None,
) -> DatasetDict:
    """Build the ``domain``, ``entity``, ``task`` and ``integrated`` corpora of ``domain``.

    Args:
        texts: the domain-level corpus: a list of sentences, or a ``Dataset`` with a
            ``text_column`` (e.g. from ``load_text_corpus``).
        mentions: an entity list ``surface -> type`` (matched with ``EntityMatcher``,
            honouring ``case_sensitive``), or any ``MentionFn`` such as an
            ``EntityMatcher`` or a ``ModelMentionFinder``.
        domain: the domain's name (in logs): a CrossNER domain, or your own.

        k: minimum number of mentions for the entity level.
        specialised_types: the task level's types; default: for a CrossNER domain
            ``specialised_types(domain)``, for your own domain every type of the entity list
            (or of the NER model that finds the mentions).
        seed: shuffle seed of the integrated level.
        batch_size, num_proc: passed to the ``Dataset.map`` that finds mentions.
    """
    specialised = (
        list(specialised_types) if specialised_types is not None else _default_specialised(domain, mentions)
    )
    if not specialised:
        raise ValueError(
            f"build_corpus_levels: no specialised types for domain {domain!r}; the task level "
            "would be empty. Pass specialised_types=[...]."
        )
    mention_fn = _as_mention_fn(mentions, case_sensitive)
    dataset = _as_dataset(texts, text_column)
    logger.info("Building %s corpus levels from %d texts with %r.", domain, len(dataset), mention_fn)
    annotated = annotate_mentions(
        dataset, mention_fn, text_column=text_column, batch_size=batch_size, num_proc=num_proc
    )
    return select_levels(annotated, specialised, k=k, seed=seed)


def _default_specialised(domain: str, mentions: Any) -> list[str]:
    """A CrossNER domain's own types; for another domain every type its mentions can have (no other domain to
    tell specialised types from shared ones), logged so the choice is visible."""
    if domain in DOMAINS:
        return specialised_types(domain)  # build_corpus_levels' parameter shadows this function's name
    if isinstance(mentions, (Mapping, EntityMatcher)):
        types = list(dict.fromkeys((mentions if isinstance(mentions, Mapping) else mentions.entities).values()))
    else:
        types = list(getattr(mentions, "entity_types", None) or getattr(mentions, "types", None) or [])
    logger.info("%s is not a CrossNER domain: the task level takes every type of its mentions (%s); pass "
                "specialised_types=[...] (--specialised_types) to choose.", domain, ", ".join(types) or "none")
    return types
