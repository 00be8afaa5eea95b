"""Finding entity mentions with a trained NER model instead of an entity list.

The CrossNER appendix builds the entity- and task-level corpora by tagging the domain
corpus with a NER model. ``ModelMentionFinder`` is a ``MentionFn`` for ``build_corpus_levels``:
given a trained folder it tags through :class:`crossner_hf.inference.tagger.Tagger`, the one tagging
path (any folder kind: a PyTorch model, its ONNX export, a BiLSTM-CRF; whole words, windows instead of
truncation, the decoding the model records), so the corpus levels see the entities ``predict`` would
print. A ready ``transformers`` token-classification pipeline is still accepted (its aggregation
merges B-/I- pieces into spans). Mention types are the model's label names without ``B-``/``I-``.

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


def _pipeline_fingerprint(pipe: Any, aggregation_strategy: str, min_score: float) -> str:
    """A cache key for a pipeline's predictions: it may hold weights changed in memory since loading, so its
    parameters themselves are hashed (about a second for BERT-base)."""
    import torch

    model = pipe.model
    digest = hashlib.sha256()
    digest.update(model.config.to_json_string().encode())
    digest.update(f"{aggregation_strategy}|{min_score}|{model.name_or_path}".encode())
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:32]


class ModelMentionFinder:
    """A ``MentionFn`` that tags texts with a token-classification model.

    Args:
        model: a local trained folder (tagged through ``Tagger``: any folder kind, its recorded decoding)
            or a ready ``TokenClassificationPipeline`` built with an aggregation strategy.
        batch_size: windows (a folder) or texts (a pipeline) per forward pass.
        aggregation_strategy: the span merging of a pipeline handed in; a folder is tagged as whole
            words by ``Tagger``, so only ``"simple"`` (the default) is accepted with one.
        min_score: drop spans whose score (the mean probability of their tags) is below this.
        stride: a pipeline's window overlap for texts beyond the model's length (a folder is always windowed).
        device: torch device of a folder's model or the pipeline's (default CPU).
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

        self.pipeline, self.tagger = None, None
        if isinstance(model, (str, Path)):
            if aggregation_strategy != "simple":
                raise ValueError(f"ModelMentionFinder: aggregation_strategy={aggregation_strategy!r} applies to a "
                                 "pipeline handed in; a folder is tagged as whole words by Tagger.")
            self.tagger = _load_tagger(model, device, threads)
            self.name = str(model)
        elif isinstance(model, TokenClassificationPipeline):
            self.pipeline = model
            self.name = str(model.model.name_or_path)
        else:
            raise ValueError(
                f"ModelMentionFinder: model must be a local folder or a token-classification "
                f"pipeline, got {type(model).__name__}."
            )
        if batch_size < 1:
            raise ValueError(f"ModelMentionFinder: batch_size={batch_size} must be at least 1.")
        self.batch_size = batch_size
        self.min_score = min_score
        self.stride = stride
        self.aggregation_strategy = aggregation_strategy
        self.fingerprint = (_folder_fingerprint(Path(model), min_score) if self.tagger is not None
                            else _pipeline_fingerprint(self.pipeline, aggregation_strategy, min_score))

    @property
    def entity_types(self) -> list[str]:
        """The types this model can predict: its labels without ``B-``/``I-``, first-seen order."""
        labels = self.tagger.labels if self.tagger is not None else self.pipeline.model.config.id2label.values()
        types: list[str] = []
        for label in labels:
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
        # Empty strings make the pipeline fail; they have no mentions anyway.
        todo = [i for i, text in enumerate(texts) if text.strip()]
        if self.tagger is not None:
            tagged = self.tagger.tag_texts([texts[i] for i in todo], batch_size=self.batch_size) if todo else []
            outputs = [t["entities"] for t in tagged]
        else:
            kwargs: dict[str, Any] = {"batch_size": self.batch_size}
            if self.stride is not None:
                kwargs["stride"] = self.stride
            outputs = self.pipeline([texts[i] for i in todo], **kwargs) if todo else []
        found: list[list[EntityMention]] = [[] for _ in texts]
        for i, spans in zip(todo, outputs, strict=True):
            found[i] = self._to_mentions(texts[i], spans)
        return found

    def _to_mentions(self, text: str, spans: list[dict[str, Any]]) -> list[EntityMention]:
        mentions = []
        for span in spans:
            start, end = span.get("start"), span.get("end")
            if start is None or end is None:
                raise ValueError(
                    "The token-classification pipeline gave no character offsets; it needs a "
                    "fast tokenizer (offset mapping). Save the model with a fast tokenizer."
                )
            if span.get("score", 1.0) < self.min_score:
                continue
            label = span.get("entity_group") or span.get("entity", "")
            etype = _strip_prefix(label)
            surface = text[start:end]
            # Offsets can take in a leading space of a word piece; the mention is the word.
            stripped = surface.lstrip()
            start += len(surface) - len(stripped)
            surface = stripped.rstrip()
            if surface and etype and etype != "O":
                mentions.append(EntityMention(int(start), int(start) + len(surface), surface, etype))
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
    # pipeline labels may be entity groups ("person") or tags ("B-person"); types are what we keep
    return (tag_type(label) or "O") if label[:2] in ("B-", "I-") or label == "O" else label
