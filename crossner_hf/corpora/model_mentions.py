"""Finding entity mentions with a trained NER model instead of an entity list.

The CrossNER appendix builds the entity- and task-level corpora by tagging the domain
corpus with a NER model. ``ModelMentionFinder`` is a ``MentionFn`` for ``build_corpus_levels``:
given a trained folder it tags through :class:`crossner_hf.inference.tagger.Tagger`, the one tagging
path (any folder kind: a PyTorch model, its ONNX export, a BiLSTM-CRF; whole words, windows instead of
truncation, the decoding the model records), so the corpus levels see the entities ``predict`` would
print. A loaded ``Tagger``, or a ``transformers`` token-classification pipeline (its model and tokenizer, tagged
by the same ``Tagger``), is accepted too. Mention types are the model's label names without ``B-``/``I-``.

Example:
    >>> finder = ModelMentionFinder("path/to/politics-ner-model")          # doctest: +SKIP
    >>> finder(["Boris Yeltsin led Russia ."])                             # doctest: +SKIP
    [[EntityMention(start=0, end=13, surface='Boris Yeltsin', type='politician'),
      EntityMention(start=18, end=24, surface='Russia', type='country')]]
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossner_hf.corpora.matcher import EntityMention
from crossner_hf.data.labels import tag_type

logger = logging.getLogger(__name__)


def _load_tagger(model: str | Path, device: int | str | None, threads: int | None) -> Any:
    from crossner_hf.inference.tagger import Tagger

    path = Path(model)
    if not (path / "config.json").is_file():
        raise ValueError(
            f"ModelMentionFinder: {model} is not a local model folder (no config.json); pass "
            "the folder of a trained token-classification model or a ready pipeline."
        )
    torch_device = None if device in (None, -1) else (f"cuda:{device}" if isinstance(device, int) else device)
    return Tagger.from_pretrained(path, device=torch_device, threads=threads)


def _folder_fingerprint(folder: Path, min_score: float) -> str:
    """A cache key for a folder's predictions: its files' names, sizes and times stand for the weights."""
    digest = hashlib.sha256(f"tagger|{min_score}|{folder.resolve()}".encode())
    for file in sorted(folder.iterdir()):
        if file.is_file():
            stat = file.stat()
            digest.update(f"{file.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def _memory_fingerprint(tagger: Any, min_score: float) -> str:
    """A cache key for the predictions of a tagger handed in loaded: it may hold weights changed in memory since
    loading, so its parameters themselves are hashed (about a second for BERT-base); an ONNX graph is its file's
    recorded SHA-256."""
    model = tagger.model
    digest = hashlib.sha256()
    digest.update(f"{type(tagger).__name__}|{tagger.decoding}|{min_score}|{tagger.labels}".encode())
    record = getattr(model, "record", None)
    if record is not None and not hasattr(model, "state_dict"):  # an OnnxTokenClassifier
        digest.update(str(record.get("sha256")).encode())
        return digest.hexdigest()[:32]
    import torch

    digest.update(model.config.to_json_string().encode())
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:32]


class ModelMentionFinder:
    """A ``MentionFn`` that tags texts with a token-classification model, through ``Tagger.tag_texts``.

    Args:
        model: a local trained folder (opened by ``Tagger.from_pretrained``: any folder kind, its recorded
            decoding), a loaded ``Tagger``, or a ``transformers`` token-classification pipeline (its model and
            tokenizer are tagged by a ``TransformerTagger``: whole words, the model's decoding).
        batch_size: windows per forward pass.
        aggregation_strategy: kept for pipelines built with one; the tagger always gives whole-word entities, so
            only ``"simple"`` (the default) is accepted.
        min_score: drop spans whose score (the mean probability of their tags) is below this.
        stride: the window overlap in tokens for texts beyond the model's length (default 32).
        device: torch device of a folder's model (default CPU).
        threads: CPU threads of an ONNX folder's runtime.
    """

    def __init__(
        self,
        model: str | Path | Any,
        *,
        batch_size: int = 32,
        aggregation_strategy: str = "simple",
        min_score: float = 0.0,
        stride: int | None = None,
        device: int | str | None = None,
        threads: int | None = None,
    ) -> None:
        from transformers import TokenClassificationPipeline

        from crossner_hf.inference.tagger import Tagger, TransformerTagger

        if str(getattr(aggregation_strategy, "value", aggregation_strategy)).lower() != "simple":
            raise ValueError(f"ModelMentionFinder: aggregation_strategy={aggregation_strategy!r}: the tagger gives "
                             "whole-word entities (like 'simple'); drop the argument.")
        if batch_size < 1:
            raise ValueError(f"ModelMentionFinder: batch_size={batch_size} must be at least 1.")
        if isinstance(model, (str, Path)):
            self.tagger = _load_tagger(model, device, threads)
            self.name = str(model)
            self.fingerprint = _folder_fingerprint(Path(model), min_score)
        elif isinstance(model, (Tagger, TokenClassificationPipeline)):
            self.tagger = (TransformerTagger(model.model, model.tokenizer)
                           if isinstance(model, TokenClassificationPipeline) else model)
            self.name = str(getattr(self.tagger.model, "name_or_path", type(self.tagger).__name__))
            self.fingerprint = _memory_fingerprint(self.tagger, min_score)
        else:
            raise ValueError(
                f"ModelMentionFinder: model must be a local folder, a Tagger or a token-classification "
                f"pipeline, got {type(model).__name__}."
            )
        if stride is not None and isinstance(self.tagger, TransformerTagger):
            self.tagger.stride = stride
        self.batch_size = batch_size
        self.min_score = min_score

    @property
    def entity_types(self) -> list[str]:
        """The types this model can predict: its labels without ``B-``/``I-``, first-seen order."""
        types: list[str] = []
        for label in self.tagger.labels:
            name = _strip_prefix(label)
            if name != "O" and name not in types:
                types.append(name)
        return types

    def __repr__(self) -> str:
        return f"ModelMentionFinder({self.name!r}, batch_size={self.batch_size})"

    def __call__(self, texts: Sequence[str]) -> list[list[EntityMention]]:
        texts = list(texts)
        if not texts:
            return []
        todo = [i for i, text in enumerate(texts) if text.strip()]  # empty texts have no mentions
        tagged = self.tagger.tag_texts([texts[i] for i in todo], batch_size=self.batch_size) if todo else []
        found: list[list[EntityMention]] = [[] for _ in texts]
        for i, record in zip(todo, tagged, strict=True):
            found[i] = self._to_mentions(texts[i], record["entities"])
        return found

    def _to_mentions(self, text: str, spans: list[dict[str, Any]]) -> list[EntityMention]:
        mentions = []
        for span in spans:
            start, end = span["start"], span["end"]
            if span["score"] < self.min_score:
                continue
            etype = _strip_prefix(span["entity_group"])
            if etype and etype != "O":  # the tagger's entities start and end on words: no spaces to trim
                mentions.append(EntityMention(int(start), int(end), text[start:end], etype))
        mentions.sort(key=lambda m: (m.start, -m.end))
        return mentions


def find_mentions_with_model(
    texts: Sequence[str],
    model_path_or_pipeline: str | Path | Any,
    *,
    batch_size: int = 32,
    **kwargs: Any,
) -> list[list[EntityMention]]:
    """Tag ``texts`` with a NER model; one mention list per text (see ``ModelMentionFinder``).

    For corpus levels over many texts, build a ``ModelMentionFinder`` once and pass it to
    ``build_corpus_levels`` instead; it is batched and cached there.
    """
    return ModelMentionFinder(model_path_or_pipeline, batch_size=batch_size, **kwargs)(texts)


def _strip_prefix(label: str) -> str:
    # labels are tags ("B-person"), entity groups are types ("person"); types are what we keep
    return (tag_type(label) or "O") if label[:2] in ("B-", "I-") or label == "O" else label
