"""The one home of every seeded draw of the data: few-shot training sets and shares of a text corpus.

Each workflow draws with the rule it has always used, so a seed keeps drawing the same sentences it drew
before these functions moved here (``tests/test_target.py`` pins the drawn indices):

- :func:`draw_rows` — ``n`` rows of a ``datasets.Dataset``: ``shuffle(seed)`` then the first ``n``
  (``datasets`` shuffles with ``numpy.random.default_rng(seed).permutation``). Every few-shot training set
  (:func:`few_shot_target`, fine-tuning's ``few_shot`` / ``few_shot_fraction`` and the RNN recipes'
  ``few_shot``) and every source subsample is this draw.
- :func:`share` — a fraction of a text corpus, nested: under one seed a smaller share is a prefix of the same
  draw's larger one (the 10% corpus is inside the 25% one). A ``Dataset`` (DAPT's corpus) is drawn with
  :func:`draw_rows` and keeps the draw's order; a list (the RNN recipes' language-model text) is drawn with
  :func:`draw_texts` (``random.Random(seed)``) and keeps the texts' own order.

Example:
    >>> share(list(range(8)), 0.5, seed=3, flag="--target_text_fraction")
    [1, 3, 4, 6]
"""

from __future__ import annotations

import dataclasses
import logging
import random
from typing import Any

logger = logging.getLogger(__name__)


def draw_rows(rows: Any, n: int, seed: int) -> Any:
    """``n`` rows of the ``datasets.Dataset`` ``rows`` drawn with ``seed`` (all of them, shuffled, when ``n`` is
    larger)."""
    return rows.shuffle(seed=seed).select(range(min(n, len(rows))))


def few_shot_count(size: int, *, few_shot: int | None = None, fraction: float | None = None) -> int | None:
    """How many training sentences a few-shot setting keeps of ``size``: ``fraction`` of them (at least one)
    when given, else ``few_shot``; ``None`` (keep all) without either."""
    if fraction is not None:
        return max(1, round(fraction * size))
    return few_shot


def few_shot_target(target: Any, seed: int, *, few_shot: int | None = None, fraction: float | None = None) -> Any:
    """``target`` (a :class:`~crossner_hf.data.target.TargetData`) with its train split cut to ``few_shot``
    sentences, or to ``fraction`` of them, drawn with ``seed`` by :func:`draw_rows`; the same object without
    either. A count larger than the train split is refused in one line."""
    from datasets import DatasetDict

    train = target.dataset["train"]
    keep = few_shot_count(len(train), few_shot=few_shot, fraction=fraction)
    if keep is None:
        return target
    if not 0 < keep <= len(train):
        raise ValueError(f"--few_shot {keep}: {target.name} train has {len(train)} sentences; give 1 to that many.")
    data = DatasetDict({**target.dataset, "train": draw_rows(train, keep, seed)})
    return dataclasses.replace(target, dataset=data)


def share(texts: Any, fraction: float, seed: int, flag: str = "--corpus_fraction") -> Any:
    """``fraction`` of ``texts`` drawn with ``seed`` (see the module docstring for the two draws); ``texts``
    itself at 1. ``flag`` names the setting in the one-line error for a share outside (0, 1]."""
    if not 0 < fraction <= 1:
        raise ValueError(f"{flag} {fraction}: give a share in (0, 1], e.g. 0.25.")
    if fraction == 1:
        return texts
    keep = max(1, round(fraction * len(texts)))
    if hasattr(texts, "shuffle"):  # a datasets.Dataset: DAPT's corpus
        logger.info("%s %g: %d of the corpus's %d texts", flag, fraction, keep, len(texts))
        return draw_rows(texts, keep, seed)
    return draw_texts(texts, keep, seed)


def draw_texts(texts: list, n: int, seed: int) -> list:
    """``n`` of the list ``texts`` drawn with ``random.Random(seed)``, kept in their order (all of them when ``n``
    is their number or more); the first ``n`` of one permutation, so the draws of one seed are nested."""
    if n >= len(texts):
        return texts
    chosen = sorted(random.Random(seed).sample(range(len(texts)), len(texts))[:n])
    return [texts[i] for i in chosen]
