"""Tagging with a trained model exactly as it was evaluated: windows, stitching, its own decoding.

A model trained by ``crossner-hf train`` records the decoding its reported F1 used in its
provenance record (:mod:`crossner_hf.modeling.heads`: ``"bio-viterbi"`` or ``"argmax"``; see
:func:`~crossner_hf.modeling.heads.model_decoding`). Everything here uses it by default, so the figure on the card is
the figure a user gets:

- :func:`predict_word_scores` / :func:`predict_tags`: word lists in, per-word
  log-probabilities / tags out (sorted by length, batched, dynamically padded; long
  sentences windowed and stitched, never truncated).
- :class:`CrossNERTokenClassificationPipeline`: a ``transformers`` token-classification
  pipeline over raw text or word lists that returns entities with character offsets and
  scores like ``aggregation_strategy="simple"``, with the model's decoding applied to
  whole words. :func:`~crossner_hf.inference.pipelines.load_pipeline` builds it in one line.
- :func:`load_token_classifier`: model + tokenizer from a folder, with one-line errors for
  a missing folder or a model without a trained token-classification head.

Example:
    >>> tagger = load_pipeline("outputs/politics-direct")                 # doctest: +SKIP
    >>> tagger("Angela Merkel met Emmanuel Macron in Paris.")           # doctest: +SKIP
    [{'entity_group': 'politician', 'score': 0.97, 'word': 'Angela Merkel', 'start': 0, 'end': 13}, ...]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from crossner_hf.modeling.decoding import decode
from crossner_hf.data.entities import entity_spans
from crossner_hf.modeling.heads import excluded_labels, model_decoding
from crossner_hf.data.tokenization import resolve_max_length, stitch_word_predictions, tokenize_and_align

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from crossner_hf.inference.onnx_runtime import OnnxTokenClassifier

logger = logging.getLogger(__name__)

_PLACEHOLDER_LABEL = re.compile(r"^LABEL_\d+$")


def label_names(model: PreTrainedModel) -> list[str]:
    id2label = {int(k): v for k, v in model.config.id2label.items()}
    return [id2label[i] for i in range(int(model.config.num_labels))]


# ----------------------------------------------------------------------------- loading


def load_token_classifier(
    name_or_path: str, device: str | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model and fast tokenizer of a trained token classifier, checked before use.

    Raises ``FileNotFoundError`` (a one-line message naming the path and what to pass) for
    a folder that does not exist when it cannot be a Hub id or the Hub is offline, and
    ``ValueError`` for a model whose labels are placeholders (``LABEL_0``...), i.e. a
    model without a trained token-classification head.
    """
    from transformers import AutoModelForTokenClassification

    from crossner_hf.modeling.heads import load_checked

    model, tokenizer = load_checked(
        name_or_path, AutoModelForTokenClassification, device=device,
        hint="pass --model the output_dir of a `crossner-hf train` run (a folder with config.json and "
             "model.safetensors) or a Hub repo id.")
    names = label_names(model)
    if all(_PLACEHOLDER_LABEL.match(n) for n in names):
        raise ValueError(
            f"{name_or_path} has no trained token-classification head (its labels are {names[0]}...{names[-1]}); "
            "pass a model fine-tuned for NER, e.g. the output_dir of `crossner-hf train`."
        )
    return model, tokenizer


# --------------------------------------------------------------------------- predicting


def predict_word_scores(
    model: PreTrainedModel | OnnxTokenClassifier,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    *,
    batch_size: int = 32,
    max_length: int | None = None,
    stride: int = 32,
    device: str | torch.device | None = None,
    progress: bool = False,
) -> list[np.ndarray]:
    """Per-word log-probabilities (``n_words x n_labels`` float32) for every sentence.

    Windows of all sentences are sorted by length and run in batches of ``batch_size``,
    padded to the longest window of the batch. A PyTorch model runs in ``eval`` mode under
    ``torch.inference_mode`` (its training flag is restored afterwards; ``device`` moves it
    there, by default its current device); an exported folder's
    :class:`~crossner_hf.inference.onnx_runtime.OnnxTokenClassifier` runs in ONNX Runtime on the
    same padded batches.
    """
    from crossner_hf.inference.onnx_runtime import OnnxTokenClassifier

    if isinstance(model, OnnxTokenClassifier):
        if device not in (None, "cpu"):
            raise ValueError(f"device={device!r}: an ONNX folder runs on the CPU (ONNX Runtime); drop --device.")
        forward = model.log_probabilities
    else:
        import torch

        if device is not None:
            model.to(device)

        def forward(inputs: dict[str, np.ndarray]) -> np.ndarray:
            return log_probabilities(model(**torch_inputs(model, inputs)).logits).cpu().numpy()

    return run_windows(model, tokenizer, sentences, forward, int(model.config.num_labels),
                       batch_size=batch_size, max_length=max_length, stride=stride, progress=progress,
                       desc="Predicting")


def log_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Per-token log-probabilities of a token classifier's logits, in float32: what decoding compares across words.
    Every tagger and ``CrossNERTrainer``'s evaluation take them from here, then :func:`decode_tags`, so the F1 a run
    records is the F1 its saved model gives (equal by construction, not by a test of two paths)."""
    import torch

    return torch.log_softmax(logits.float(), dim=-1)


def torch_inputs(model: PreTrainedModel, inputs: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """A numpy batch of :func:`run_windows` as tensors on the model's device."""
    import torch

    device = next(model.parameters()).device
    return {name: torch.from_numpy(array).to(device) for name, array in inputs.items()}


@contextmanager
def _inference_mode(model: Any) -> Iterator[None]:
    """A PyTorch model in ``eval`` mode under ``torch.inference_mode``, its training flag restored after;
    nothing for an ONNX model (it has no training mode)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        yield
        return
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


def run_windows(
    model: PreTrainedModel | OnnxTokenClassifier,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    forward: Callable[[dict[str, np.ndarray]], np.ndarray],
    width: int,
    *,
    batch_size: int = 32,
    max_length: int | None = None,
    stride: int = 32,
    progress: bool = False,
    desc: str = "Predicting",
) -> list[np.ndarray]:
    """``forward(batch) -> (batch, tokens, width)`` over every window, stitched back to words.

    The one batching loop behind :func:`predict_word_scores` (PyTorch and ONNX Runtime) and the
    entity representations of :mod:`crossner_hf.evaluation.entity_analysis`: windows of all sentences
    sorted by length, padded to the longest window of each batch and passed to ``forward`` as int64
    numpy arrays (``input_ids``, ``attention_mask``, and all-zero ``token_type_ids`` when the
    tokenizer makes them, as the Trainer's collator passes them); a PyTorch model runs in ``eval``
    mode under ``torch.inference_mode`` (the training flag is restored afterwards). Each word keeps
    the output of the window where it is most central. Returns one ``n_words x width`` float32
    array per sentence.
    """
    from tqdm.auto import tqdm

    length = resolve_max_length(tokenizer, max_length, model)
    enc = tokenize_and_align({"tokens": sentences}, tokenizer, max_length=length, stride=stride)
    n_rows = len(enc["input_ids"])
    order = sorted(range(n_rows), key=lambda r: len(enc["input_ids"][r]))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    with_types = "token_type_ids" in enc
    outputs: list[Any] = [None] * n_rows
    with _inference_mode(model):
        for start in tqdm(range(0, n_rows, batch_size), desc=desc, disable=not progress, unit="batch"):
            batch = order[start : start + batch_size]
            longest = max(len(enc["input_ids"][r]) for r in batch)
            input_ids = np.full((len(batch), longest), pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.int64)
            for j, r in enumerate(batch):
                input_ids[j, : len(enc["input_ids"][r])] = enc["input_ids"][r]
                mask[j, : len(enc["input_ids"][r])] = 1
            inputs = {"input_ids": input_ids, "attention_mask": mask}
            if with_types:
                inputs["token_type_ids"] = np.zeros_like(input_ids)
            values = forward(inputs)
            for j, r in enumerate(batch):
                outputs[r] = values[j]
    stitched = stitch_word_predictions(outputs, enc["word_ids"], enc["example_index"], [len(s) for s in sentences])
    return [np.asarray(s, dtype=np.float32).reshape(len(s), width) for s in stitched]


def decode_tags(scores: Sequence[np.ndarray], names: Sequence[str], decoding: str, excluded: Sequence[str] = ()
                ) -> list[list[str]]:
    """Tags of every sentence's per-word log-probabilities, decoded with ``decoding`` (never an ``excluded`` label)."""
    return [[names[i] for i in ids] for ids in decode(scores, names, decoding, excluded)]


def predict_tags(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    *,
    decoding: str | None = None,
    **kwargs: Any,
) -> list[list[str]]:
    """One predicted tag per word for every sentence, for a loaded model and tokenizer: a thin wrapper of
    :class:`~crossner_hf.inference.tagger.TransformerTagger`'s scoring and decoding (the one tagging path; use
    ``Tagger.from_pretrained(folder).tag(sentences)`` for a folder).

    ``decoding`` defaults to the one the model records (:func:`model_decoding`): the
    decoding its reported F1 used. Other keyword arguments go to :func:`predict_word_scores`.
    """
    scores = predict_word_scores(model, tokenizer, sentences, **kwargs)
    return decode_tags(scores, label_names(model), model_decoding(model, decoding), excluded_labels(model))


def check_word_lists(sentences: Sequence[Sequence[str]], where: str = "Tagger.tag") -> None:
    """Refuse a string where a word list is expected (iterating it would tag it one character at a time)."""
    if isinstance(sentences, str):
        raise ValueError(f"{where} takes a list of sentences, each a list of words; got one str. Pass "
                         "[text.split()] for words, or tag raw text with tag_texts([text]).")
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            shown = sentence if len(sentence) <= 40 else sentence[:37] + "..."
            raise ValueError(f"{where}: sentence {i} is a str ({shown!r}), not a list of words; pass "
                             "[s.split() for s in texts] for words, or tag raw text with tag_texts(texts).")


Span = tuple[int, int]


def split_input(
    item: str | Sequence[str], *, pretokenized: bool = False, delimiter: str = " ", nltk_data: str | None = None
) -> tuple[str, list[list[tuple[str, Span]]]]:
    """One input as ``(text, sentences)``, each sentence a list of ``(word, (start, end))`` into ``text``.

    - a list of words: one sentence, shown as ``delimiter.join(words)``;
    - a string with ``pretokenized=True``: one sentence of its white-space separated words, offsets
      into the string as given;
    - a string: sentences (NLTK punkt) and CrossNER-style words (:mod:`crossner_hf.data.words`).

    The one home of this step for :meth:`~crossner_hf.inference.tagger.Tagger.tag_texts` (``crossner-hf predict``,
    the pipeline class).
    """
    from crossner_hf.data.words import join_words, split_sentences

    if not isinstance(item, str):
        words = list(item)
        if not all(isinstance(w, str) for w in words):
            raise ValueError("A pre-split input must be a list of words (str).")
        text, spans = join_words(words, delimiter)
        return text, ([list(zip(words, spans))] if words else [])
    if pretokenized:
        sentence, pos = [], 0
        for word in item.split():
            start = item.index(word, pos)
            pos = start + len(word)
            sentence.append((word, (start, pos)))
        return item, ([sentence] if sentence else [])
    return item, [[(w, (s, e)) for w, s, e in sent] for sent in split_sentences(item, nltk_data)]


def decode_entities(
    scores: Sequence[np.ndarray], names: Sequence[str], decoding: str, spans: Sequence[Sequence[Span]], text: str,
    excluded: Sequence[str] = (),
) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """Decode each sentence's per-word log-probabilities and read its entities (offsets into ``text``).

    Returns the tags per sentence and the entities of all of them, in the ``pipeline`` shape
    (``entity_group``, ``score``, ``word``, ``start``, ``end``). The one home of this step.
    """
    index = {n: i for i, n in enumerate(names)}
    all_tags, entities = [], []
    for sent_scores, ids, sent_spans in zip(scores, decode(scores, names, decoding, excluded), spans):
        tags = [names[i] for i in ids]
        all_tags.append(tags)
        entities.extend(entities_from_tags(tags, sent_spans, text, sent_scores, index))
    return all_tags, entities


def entities_from_tags(
    tags: Sequence[str],
    spans: Sequence[tuple[int, int]],
    text: str,
    word_scores: np.ndarray | None = None,
    label_index: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Entities (``entity_group``, ``score``, ``word``, ``start``, ``end``) from per-word tags.

    Entities follow the conlleval reading of the tags (:func:`crossner_hf.data.entities.entity_spans`);
    character offsets come from the words' ``spans`` in ``text``. ``score`` is the mean
    probability of the chosen tag over the entity's words (1.0 without ``word_scores``).
    """
    out = []
    for etype, first, last in entity_spans(tags):
        start, end = spans[first][0], spans[last][1]
        if word_scores is not None and label_index is not None:
            chosen = [word_scores[w, label_index[tags[w]]] for w in range(first, last + 1)]
            score = float(np.exp(np.asarray(chosen, dtype=np.float64)).mean())
        else:
            score = 1.0
        out.append({"entity_group": etype, "score": score, "word": text[start:end], "start": start, "end": end})
    return out
