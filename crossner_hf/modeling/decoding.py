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
    return viterbi_batch(word_scores, label_names)


BACK_POINTERS = 1 << 24
"""How many back-pointers (int32: 64 MB) one chunk of :func:`viterbi_batch` holds at most."""


def viterbi_batch(word_scores: Sequence[np.ndarray], label_names: Sequence[str], chunk: int | None = None
                  ) -> list[list[int]]:
    """:func:`bio_viterbi` of every sentence, the same paths to the last tie, many sentences at a time.

    Sentences are taken longest first in chunks (``chunk`` sentences; default 256, fewer where
    :data:`BACK_POINTERS` would be exceeded), so the sentences still running at each word form a prefix of the chunk
    and one numpy step advances them all: the per-sentence loop spent most of an evaluation in Python (a thousand
    sentences: about a second). Each sentence sees exactly the additions, maxima and argmaxes :func:`bio_viterbi`
    does, so the paths (ties included: the first maximum wins) are identical; memory is one chunk's back-pointers
    (``chunk x longest x labels`` int32).
    """
    n = len(label_names)
    start, trans = allowed_transitions(label_names)
    scores = [np.asarray(s, dtype=np.float64) for s in word_scores]
    for s in scores:
        if s.ndim != 2 or s.shape[1] != n:
            raise ValueError(f"bio_viterbi: expected scores of shape (n_words, {n}), got {s.shape}.")
    paths: list[list[int]] = [[] for _ in scores]
    order = sorted((i for i, s in enumerate(scores) if len(s)), key=lambda i: -len(scores[i]))
    c = 0
    while c < len(order):
        size = chunk or max(1, min(256, BACK_POINTERS // (len(scores[order[c]]) * n)))  # 256: fastest measured
        ids = order[c:c + size]
        c += size
        lengths = np.array([len(scores[i]) for i in ids])
        longest = int(lengths[0])
        padded = np.zeros((len(ids), longest, n))
        for row, i in enumerate(ids):
            padded[row, :lengths[row]] = scores[i]
        running = [int((lengths > t).sum()) for t in range(longest)]  # a prefix: lengths are descending
        best = start + padded[:, 0]
        back = np.zeros((len(ids), longest, n), dtype=np.int32)
        for t in range(1, longest):
            k = running[t]
            candidates = best[:k, :, None] + trans  # previous label x next label, for the k sentences still going
            back[:k, t] = candidates.argmax(axis=1)
            best[:k] = candidates.max(axis=1) + padded[:k, t]
        last = best.argmax(axis=1)
        out = np.zeros((len(ids), longest), dtype=np.int64)
        out[np.arange(len(ids)), lengths - 1] = last
        current = last.copy()
        for t in range(longest - 1, 0, -1):
            k = running[t]  # sentences with a word at t: the label before it is back[t, label at t]
            current[:k] = np.where(lengths[:k] - 1 == t, last[:k], current[:k])
            current[:k] = back[np.arange(k), t, current[:k]]
            out[:k, t - 1] = current[:k]
        for row, i in enumerate(ids):
            paths[i] = out[row, :lengths[row]].tolist()
    return paths
