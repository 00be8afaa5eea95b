"""Entities of IOB2 tag sequences: the one place that reads entities off tags.

The reading is conlleval's, the one the CrossNER paper scores with and seqeval's default mode follows: an entity
starts at ``B-x``, or at an ``I-x`` after ``O``, after another type or at a sentence start, and continues over
the ``I-x`` that follow. Strict IOB2 entities (seqeval's ``mode="strict", scheme=IOB2``) are the conlleval ones
that open with a ``B-`` tag.

The extraction runs in numpy over flat tag ids: scoring a split, a report's twenty re-scorings or NER-BERT's
315-category validation need no per-token Python objects, and no import of seqeval (whose scorer imports
scikit-learn, over a second at every command's start). Tags outside IOB2 (IOBES, no prefix) are read by
seqeval itself. ``tests/test_metrics.py`` checks both readings against seqeval's own functions on random tags.

Example:
    >>> entity_spans(["B-person", "I-person", "O", "I-location"])
    [('person', 0, 1), ('location', 3, 3)]
    >>> conlleval, strict = corpus_entities([["I-person", "O", "B-city", "I-city"]])
    >>> sorted(conlleval), sorted(strict)
    ([('city', 2, 3), ('person', 0, 0)], [('city', 2, 3)])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def is_iob2(tags: set[str] | Sequence[str]) -> bool:
    """Whether every tag is ``O``, ``B-<type>`` or ``I-<type>``."""
    return all(t == "O" or (len(t) > 2 and t[:2] in ("B-", "I-")) for t in tags)


def iob2_scheme(names: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per label id: prefix (0 = O, 1 = B, 2 = I) and type index; and the type names in first-seen order.

    Example:
        >>> prefix, types, type_names = iob2_scheme(["O", "B-person", "I-person", "B-city"])
        >>> prefix.tolist(), types.tolist(), type_names
        ([0, 1, 2, 1], [-1, 0, 0, 1], ['person', 'city'])
    """
    prefix = np.zeros(len(names), dtype=np.int8)
    types = np.full(len(names), -1, dtype=np.int64)
    type_names: list[str] = []
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        if name == "O":
            continue
        if len(name) < 3 or name[:2] not in ("B-", "I-"):
            raise ValueError(
                f"Label {name!r} is not IOB2: the tag feature's ClassLabel names must be 'O', 'B-<type>' or "
                "'I-<type>' (convert IOBES/BILOU data to IOB2 first)."
            )
        prefix[i] = 1 if name[0] == "B" else 2
        types[i] = index.setdefault(name[2:], len(index))
        if types[i] == len(type_names):
            type_names.append(name[2:])
    return prefix, types, type_names


def extract_entities(
    ids: np.ndarray, sentence_ids: np.ndarray, prefix: np.ndarray, types: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entities ``(starts, ends, types)`` (inclusive word positions) of a flat tag-id sequence.

    The conlleval reading (see the module docstring). ``sentence_ids`` (one per word, equal within a
    sentence, consecutive words of a sentence adjacent) keeps entities inside sentences.
    """
    p, t = prefix[ids], types[ids]
    inside = p != 0
    new_sentence = np.ones(len(ids), dtype=bool)
    new_sentence[1:] = sentence_ids[1:] != sentence_ids[:-1]
    prev_inside = np.zeros(len(ids), dtype=bool)
    prev_inside[1:] = inside[:-1]
    prev_type = np.full(len(ids), -1, dtype=t.dtype)
    prev_type[1:] = t[:-1]
    start = inside & ((p == 1) | ~prev_inside | (prev_type != t) | new_sentence)
    # an entity ends where the next word does not continue it (every inside word either starts or continues one)
    continues_next = np.zeros(len(ids), dtype=bool)
    continues_next[:-1] = inside[1:] & ~start[1:]
    end = inside & ~continues_next
    starts, ends = np.flatnonzero(start), np.flatnonzero(end)
    return starts, ends, t[starts]


def corpus_entities(
    corpus: Sequence[Sequence[str]], *, strict: bool = True
) -> tuple[set[tuple[str, int, int]], set[tuple[str, int, int]]]:
    """Conlleval and strict IOB2 entities of a corpus (one tag list per sentence), as ``(type, start, end)``.

    Positions count words over the whole corpus (sentence after sentence), so the entities of two corpora of the
    same sentence lengths compare as sets. Tags outside IOB2 are read by seqeval: in its default mode, and (unless
    ``strict=False``, which leaves the second set empty) in strict IOB2 mode, which refuses them as seqeval does.
    """
    vocabulary = sorted({t for sentence in corpus for t in sentence})
    if not is_iob2(vocabulary):
        return _seqeval_corpus_entities(corpus, strict)
    index = {t: i for i, t in enumerate(vocabulary)}
    prefix, types, type_names = iob2_scheme(vocabulary)
    ids = np.fromiter((index[t] for sentence in corpus for t in sentence), dtype=np.int64)
    sentence_ids = np.repeat(np.arange(len(corpus)), [len(sentence) for sentence in corpus])
    starts, ends, entity_types = extract_entities(ids, sentence_ids, prefix, types)
    opens_with_b = (prefix[ids[starts]] == 1).tolist()
    conlleval = [(type_names[t], a, b) for t, a, b in zip(entity_types.tolist(), starts.tolist(), ends.tolist())]
    return set(conlleval), {e for e, b in zip(conlleval, opens_with_b) if b}


def _seqeval_corpus_entities(
    corpus: Sequence[Sequence[str]], strict: bool
) -> tuple[set[tuple[str, int, int]], set[tuple[str, int, int]]]:
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, Entities

    lists = [list(sentence) for sentence in corpus]
    offsets, total = [], 0
    for sentence in lists:
        offsets.append(total)
        total += len(sentence)
    # seqeval joins the sentences with one O between them: its position of sentence k's words is k past ours
    shift = [-k for k in range(len(lists)) for _ in range(len(lists[k]) + 1)]
    conlleval = {(t, a + shift[a], b + shift[a]) for t, a, b in get_entities(lists)}
    if not strict:
        return conlleval, set()
    return conlleval, {(e.tag, offsets[e.sent_id] + e.start, offsets[e.sent_id] + e.end - 1)
                       for sentence in Entities(lists, IOB2).entities for e in sentence}


def entity_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entities ``(type, first_word, last_word)`` (inclusive) of one sentence, in the conlleval reading: the
    entities the metric counts, in sentence order.

    Example:
        >>> entity_spans(["B-person", "I-person", "O", "I-location"])
        [('person', 0, 1), ('location', 3, 3)]
    """
    conlleval, _ = corpus_entities([tags], strict=False)
    return sorted(conlleval, key=lambda e: e[1])
