"""BIO-constrained decoding of per-word label scores.

A linear tagger picks each word's label on its own, so it emits sequences that no entity
reading can explain: ``I-x`` after ``O`` or at the start, or ``B-x I-y`` with ``x != y``.
conlleval then counts such fragments as extra entities. :func:`bio_viterbi` instead picks
the highest-scoring *valid* IOB2 sequence under the model's per-word log-probabilities
(a Viterbi search with forbidden transitions, no learned parameters), which is what a CRF
layer would do at test time with uniform transition scores. ``argmax`` decoding, what the
CrossNER paper used, stays available everywhere as ``decoding="argmax"``.

Example:
    >>> import numpy as np
    >>> names = ["O", "B-person", "I-person"]
    >>> scores = np.log([[0.5, 0.1, 0.4], [0.1, 0.1, 0.8]])   # argmax would say O I-person
    >>> [names[i] for i in bio_viterbi(scores, names)]
    ['B-person', 'I-person']
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from crossner_hf.data.labels import continues
from crossner_hf.modeling.heads import check_decoding

_FORBIDDEN = -1e9


def allowed_transitions(label_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(start, trans)``: 0 where allowed, a large negative number where IOB2 forbids.

    ``trans[i, j]`` scores label ``j`` following label ``i``; ``I-x`` may only follow
    ``B-x`` or ``I-x``, and may not start a sentence.
    """
    n = len(label_names)
    start = np.zeros(n)
    trans = np.zeros((n, n))
    for j, tag in enumerate(label_names):
        if tag.startswith("I-"):
            start[j] = _FORBIDDEN
            for i, prev in enumerate(label_names):
                if not continues(prev, tag):
                    trans[i, j] = _FORBIDDEN
    return start, trans


def bio_viterbi(
    log_probs: np.ndarray,
    label_names: Sequence[str],
    transitions: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[int]:
    """Label ids of the best valid IOB2 path through ``log_probs`` (``n_words x n_labels``)."""
    scores = np.asarray(log_probs, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[1] != len(label_names):
        raise ValueError(
            f"bio_viterbi: expected scores of shape (n_words, {len(label_names)}), got {scores.shape}."
        )
    if len(scores) == 0:
        return []
    start, trans = transitions if transitions is not None else allowed_transitions(label_names)
    best = start + scores[0]
    back = np.zeros(scores.shape, dtype=np.int64)
    for t in range(1, len(scores)):
        candidates = best[:, None] + trans  # previous label x next label
        back[t] = candidates.argmax(axis=0)
        best = candidates.max(axis=0) + scores[t]
    path = [int(best.argmax())]
    for t in range(len(scores) - 1, 0, -1):
        path.append(int(back[t, path[-1]]))
    return path[::-1]


def decode(
    word_scores: Sequence[np.ndarray], label_names: Sequence[str], decoding: str = "bio-viterbi",
    excluded: Collection[str] = (),
) -> list[list[int]]:
    """Decode each sentence's ``n_words x n_labels`` log-probabilities to label ids.

    ``excluded`` labels are never chosen (their scores are forbidden): a head trained with the source's extra
    types (joint, pretrain-finetune) answers in the target's schema (:func:`crossner_hf.modeling.heads.excluded_labels`).
    """
    check_decoding(decoding)
    if excluded:
        drop = [i for i, name in enumerate(label_names) if name in set(excluded)]
        masked = []
        for s in word_scores:
            s = np.array(s, dtype=np.float64, copy=True)
            if s.size:
                s[:, drop] = _FORBIDDEN
            masked.append(s)
        word_scores = masked
    if decoding == "argmax":
        return [np.asarray(s).argmax(-1).tolist() if len(s) else [] for s in word_scores]
    transitions = allowed_transitions(label_names)
    return [bio_viterbi(s, label_names, transitions) for s in word_scores]
