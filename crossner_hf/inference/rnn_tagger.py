"""Tagging with a saved BiLSTM-CRF or CDLM folder, as its test score was computed.

The recipe records in ``config.json`` how the model tags (``tagging``: the label names of the
predicted ids and the decode arguments: a CDLM tags the target with theta(target, NER) and, in
zero-shot mode, the source CRF). :class:`RNNTagger` is the :class:`~crossner_hf.inference.tagger.Tagger` of
these folders (``Tagger.from_pretrained`` opens them), so raw text, pre-split words and ``--conll`` files work
as with transformer models, and the recipes score dev and test through it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossner_hf.inference.tagger import Tagger

RNN_MODEL_TYPES = ("crossner_bilstm_crf", "crossner_cdlm", "crossner_coach", "crossner_multicell")


def is_rnn_folder(path: str | Path) -> bool:
    """True for a folder saved by ``crossner-hf bilstm-crf`` or ``crossner-hf cdlm``."""
    config = Path(path).expanduser() / "config.json"
    if not config.is_file():
        return False
    try:
        raw = json.loads(config.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{config}: not valid JSON ({err}); the model folder is damaged: save or download it "
                         "again.") from None
    return isinstance(raw, dict) and raw.get("model_type") in RNN_MODEL_TYPES


class RNNTagger(Tagger):
    """A loaded RNN tagger: Viterbi over its CRF with the labels and decode arguments the recipe recorded.

    ``Tagger.from_pretrained`` returns it for a BiLSTM-CRF / CDLM / Coach / multi-cell folder
    (:meth:`from_folder`); the recipes' evaluation wraps the model in training in one (:meth:`from_model`), so
    dev and test F1 are computed by the tagging path ``predict`` uses."""

    decoding = "crf-viterbi"
    runtime = "pytorch"

    def __init__(self, model: Any, vocab: Any, labels: Sequence[str], decode_kwargs: dict[str, Any] | None = None,
                 gold_labels: Sequence[str] | None = None):
        self.model, self.vocab = model, vocab
        self.labels = list(labels)
        self.decode_kwargs: dict[str, Any] = dict(decode_kwargs or {})
        # the tags a gold file for this model holds (zero-shot CDLM: the target's, while it predicts the source's)
        self.gold_labels = list(gold_labels or self.labels)

    @classmethod
    def opens(cls, path: str | Path) -> bool:
        return is_rnn_folder(path)

    @classmethod
    def from_folder(cls, path: str | Path, *, device: str | None = None, decoding: str | None = None,
                    threads: int | None = None) -> RNNTagger:
        from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFForTokenClassification
        from crossner_hf.modeling.rnn.cdlm import CDLMForTokenClassification
        from crossner_hf.modeling.rnn.coach import CoachForTokenClassification
        from crossner_hf.modeling.rnn.multicell import MultiCellForTokenClassification
        from crossner_hf.modeling.rnn.vocab import WordCharVocab

        if decoding is not None:
            raise ValueError(f"--decoding {decoding}: {path} is a BiLSTM-CRF / CDLM folder, which decodes with its "
                             "CRF's Viterbi path; drop --decoding.")
        folder = Path(path).expanduser()
        model_type = json.loads((folder / "config.json").read_text(encoding="utf-8"))["model_type"]
        model_class = {"crossner_cdlm": CDLMForTokenClassification, "crossner_coach": CoachForTokenClassification,
                       "crossner_multicell": MultiCellForTokenClassification}.get(
            model_type, BiLSTMCRFForTokenClassification)
        model = model_class.from_pretrained(folder).eval()
        if device is not None:
            model.to(device)
        return cls.from_model(model, WordCharVocab.load(folder))

    @classmethod
    def from_model(cls, model: Any, vocab: Any, labels: Sequence[str] | None = None,
                   decode_kwargs: dict[str, Any] | None = None) -> RNNTagger:
        """The tagger of a model in memory: ``labels`` / ``decode_kwargs`` default to what its config records
        (``tagging``: the label names of the predicted ids, the decode arguments, the gold labels)."""
        tagging = getattr(model.config, "tagging", None) or {}
        labels = list(labels if labels is not None else (
            tagging.get("labels") or [model.config.id2label[i] for i in range(model.config.num_labels)]))
        kwargs = dict(decode_kwargs if decode_kwargs is not None else (tagging.get("decode") or {}))
        return cls(model, vocab, labels, kwargs, tagging.get("gold_labels"))

    def tag_with_scores(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 64, progress: bool = False
                        ) -> tuple[list[list[str]], None]:
        """Viterbi tags for word lists, batched by length; no per-word probabilities (a CRF's path has none)."""
        import torch

        model = self.model
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        pred: list[list[str]] = [[] for _ in sentences]
        try:
            with torch.no_grad():
                for start in range(0, len(order), batch_size):
                    idx = [i for i in order[start:start + batch_size] if len(sentences[i])]
                    if not idx:
                        continue
                    batch = [list(sentences[i]) for i in idx]
                    words, chars, mask = self.vocab.encode(batch)
                    inputs = {"word_ids": words.to(device), "char_ids": chars.to(device),
                              "attention_mask": mask.to(device)}
                    inputs.update(model.extra_inputs(batch, device))
                    for i, ids in zip(idx, model.decode(**inputs, **self.decode_kwargs)):
                        pred[i] = [self.labels[t] for t in ids]
        finally:
            model.train(was_training)  # the recipes evaluate mid-training: the model goes back as it came
        return pred, None
