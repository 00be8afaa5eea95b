"""A run's recorded predictions: the tags its scoring pass predicted on dev and test, kept beside its scores.

``train`` writes ``seed-<seed>/predictions.jsonl`` in the same pass that gives the seed's ``results.json``
figures, one line per split::

    {"split": "validation", "labels": ["O", "B-x", ...], "sentences": 30, "tokens_sha256": "...",
     "tags": [[0, 0, 1, ...], ...]}

(tag ids into ``labels``, the model head's tags). A reader of the run (``adapt``'s paired bootstrap on dev, the
shipped model's dev and test figures) takes the predictions from here instead of loading the model and tagging the
split again: the tags are the ones the run scored, so the figures are the same to the digit. ``tokens_sha256`` is
the split's words: predictions recorded on other data (a ``compare`` given another target) are never read as this
data's, and the reader tags instead (:func:`read_predictions` returns None).

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / PREDICTIONS
    >>> _ = write_predictions(path, ["O", "B-x"], {"test": ([["a", "b"]], [[1, 0]])})
    >>> read_predictions(path, "test", [["a", "b"]]), read_predictions(path, "test", [["a", "c"]])
    ([['B-x', 'O']], None)
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

PREDICTIONS = "predictions.jsonl"
"""The file a seed's folder holds its dev and test predictions in."""


def tokens_fingerprint(tokens: Sequence[Sequence[str]]) -> str:
    """sha256 of a split's words (which sentences, in which order): the data recorded predictions belong to."""
    text = json.dumps([[str(w) for w in sentence] for sentence in tokens], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_predictions(path: str | Path, labels: Sequence[str],
                      splits: Mapping[str, tuple[Sequence[Sequence[str]], Sequence[Sequence[int]]]]) -> Path:
    """Write ``{split: (its words, the predicted tag ids)}`` to ``path`` (replaced whole, never half-written)."""
    from crossner_hf.outputs import atomic_output

    lines = []
    for split, (tokens, tags) in splits.items():
        if len(tokens) != len(tags):
            raise ValueError(f"{path}: {len(tags)} predicted sentences for the {len(tokens)} of {split}.")
        lines.append(json.dumps({"split": split, "labels": list(labels), "sentences": len(tokens),
                                 "tokens_sha256": tokens_fingerprint(tokens),
                                 "tags": [[int(t) for t in sentence] for sentence in tags]}))
    path = Path(path)
    with atomic_output(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_predictions(path: str | Path, split: str, tokens: Sequence[Sequence[str]]) -> list[list[str]] | None:
    """The tags recorded in ``path`` for ``split`` of the data whose words are ``tokens``, or None: no file (a run
    made before runs recorded them), no such split, or predictions of other data."""
    path = Path(path)
    if not path.is_file():
        return None
    fingerprint = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            logger.warning("%s: unreadable line (%s); the model tags %s instead", path, err, split)
            return None
        if record.get("split") != split:
            continue
        fingerprint = fingerprint or tokens_fingerprint(tokens)
        if record.get("tokens_sha256") != fingerprint:
            logger.info("%s: its %s predictions are of other sentences than these; the model tags them instead",
                        path, split)
            return None
        names = record["labels"]
        tags = [[names[t] for t in sentence] for sentence in record["tags"]]
        if [len(t) for t in tags] != [len(s) for s in tokens]:  # the words matched: a tag a word, or not ours
            logger.warning("%s: its %s predictions do not give one tag a word; the model tags them instead", path,
                           split)
            return None
        return tags
    return None
