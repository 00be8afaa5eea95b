"""The source domain every cross-domain runner reads: CoNLL-2003, and its rows with tags in a target's label space.

The fine-tuning schedules (pretrain-finetune, joint) and the RNN recipes (joint, source, pretrain-finetune, the
zero-shot baselines' model selection) train on the source with the *target's* output layer: every source tag is
re-encoded, by name after ``--source_label_map``, as an id of the target's list (the head's list, which
:func:`crossner_hf.data.labels.head_labels_with_source` extends with the source types the target lacks). One home
for that, below every runner, so none of them imports another to read the source.

Example:
    >>> rows = source_in_target_space("music", subsample=50, seed=0)  # doctest: +SKIP
    >>> rows.features["ner_tags"].feature.names[:3]                    # doctest: +SKIP
    ['O', 'B-album', 'I-album']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crossner_hf.data.labels import SOURCE_DOMAIN, labels_for, map_source_labels, map_tags_by_name
from crossner_hf.data.target import TargetData, draw_rows, load_target


def source_domain(source: TargetData | str | Path | None = None) -> TargetData:
    """CoNLL-2003, the source domain: ``source`` when it is one already, else read from the folder holding the
    CrossNER files (``None``: ``$CROSSNER_DATA_DIR``)."""
    if isinstance(source, TargetData):
        return source
    return load_target(SOURCE_DOMAIN, data_dir=source)


def source_in_target_space(
    target: str | Sequence[str], source: TargetData | str | Path | None = None, subsample: int | None = None,
    seed: int = 0, split: str = "train", label_map: dict[str, str] | None = None,
):
    """A split (train by default) of the source domain, CoNLL-2003, with its tags re-encoded as ids of the
    ``target`` label list (by name; a CrossNER domain's name or the list itself).

    ``source``: the source as a :class:`TargetData`, or the folder holding the CrossNER files (``None``:
    ``$CROSSNER_DATA_DIR``). ``subsample`` keeps that many sentences, drawn with ``seed``
    (:func:`crossner_hf.data.target.draw_rows`, the one home of the data's draws). ``label_map`` renames source
    types into target ones first (``{"person": "x_person"}``, :mod:`crossner_hf.data.labels`).
    """
    from datasets import ClassLabel, List

    source = source_domain(source)
    rows = source[split]
    if subsample is not None:
        rows = draw_rows(rows, subsample, seed)
    target_labels = labels_for(target) if isinstance(target, str) else list(target)
    names = map_tags_by_name(map_source_labels(list(source.labels), label_map), target_labels)
    remap = [target_labels.index(n) for n in names]
    features = rows.features.copy()
    features["ner_tags"] = List(ClassLabel(names=target_labels))
    return rows.map(
        lambda ex: {"ner_tags": [remap[t] for t in ex["ner_tags"]]},
        features=features, desc=f"Mapping {source.name} tags into the target's",
    )
