"""Tagging with a saved BiLSTM-CRF or CDLM folder, as its test score was computed.

The recipe records in ``config.json`` how the model tags (``tagging``: the label names of the
predicted ids and the decode arguments: a CDLM tags the target with theta(target, NER) and, in
zero-shot mode, the source CRF). ``crossner-hf predict`` uses :func:`load_rnn_tagger` for these
folders, so raw text, pre-split words and ``--conll`` files work as with transformer models.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


class RNNTagger:
    """A loaded RNN tagger: ``tag(sentences) -> tags`` (Viterbi, the recorded labels and decode arguments).

    A :class:`crossner_hf.inference.tagger.Tagger` (registered there as a virtual subclass, so this module,
    which the training loop imports, does not import that one): ``Tagger.from_pretrained`` returns it for a
    BiLSTM-CRF or CDLM folder."""

    decoding = "crf-viterbi"
    runtime = "pytorch"

    def __init__(self, folder: str | Path, device: str | None = None):
        from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFForTokenClassification
        from crossner_hf.modeling.rnn.cdlm import CDLMForTokenClassification
        from crossner_hf.modeling.rnn.coach import CoachForTokenClassification
        from crossner_hf.modeling.rnn.multicell import MultiCellForTokenClassification
        from crossner_hf.modeling.rnn.vocab import WordCharVocab

        folder = Path(folder).expanduser()
        model_type = json.loads((folder / "config.json").read_text(encoding="utf-8"))["model_type"]
        cls = {"crossner_cdlm": CDLMForTokenClassification, "crossner_coach": CoachForTokenClassification,
               "crossner_multicell": MultiCellForTokenClassification}.get(
            model_type, BiLSTMCRFForTokenClassification)
        self.model = cls.from_pretrained(folder).eval()
        if device is not None:
            self.model.to(device)
        self.vocab = WordCharVocab.load(folder)
        tagging = getattr(self.model.config, "tagging", None) or {}
        self.labels = list(tagging.get("labels") or [self.model.config.id2label[i]
                                                    for i in range(self.model.config.num_labels)])
        self.decode_kwargs: dict[str, Any] = dict(tagging.get("decode") or {})
        # the tags a gold file for this model holds (zero-shot CDLM: the target's, while it predicts the source's)
        self.gold_labels = list(tagging.get("gold_labels") or self.labels)

    def tag(self, sentences: Sequence[Sequence[str]], batch_size: int = 64, progress: bool = False
            ) -> list[list[str]]:
        from crossner_hf.inference.predict import check_word_lists

        check_word_lists(sentences)
        return decode_sentences(self.model, self.vocab, sentences, self.labels, self.decode_kwargs, batch_size)

    def tag_texts(self, inputs: Sequence[str | Sequence[str]], *, pretokenized: bool = False,
                  nltk_data: str | None = None, batch_size: int = 64) -> list[dict[str, Any]]:
        """``{"text", "words", "tags", "entities"}`` per input, as :func:`crossner_hf.inference.predict.tag_texts` gives
        them (entities in the pipeline shape; ``score`` 1.0: a CRF's Viterbi path has no per-word probability)."""
        from crossner_hf.inference.predict import entities_from_tags, split_input

        split = [split_input(item, pretokenized=pretokenized, nltk_data=nltk_data) for item in inputs]
        tags = iter(self.tag([[w for w, _ in sent] for _, sents in split for sent in sents], batch_size))
        out = []
        for text, sents in split:
            record = {"text": text, "words": [], "tags": [], "entities": []}
            for sent in sents:
                sent_tags = next(tags)
                record["words"] += [(w, a, b) for w, (a, b) in sent]
                record["tags"] += sent_tags
                record["entities"] += entities_from_tags(sent_tags, [span for _, span in sent], text)
            out.append(record)
        return out


def decode_sentences(model, vocab, sentences: Sequence[Sequence[str]], label_names: Sequence[str],
                     decode_kwargs: dict[str, Any] | None = None, batch_size: int = 64) -> list[list[str]]:
    """Viterbi tags for word lists, batched by length (the one decoding loop of evaluation and prediction)."""
    import torch

    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    pred: list[list[str]] = [[] for _ in sentences]
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = [i for i in order[start:start + batch_size] if len(sentences[i])]
            if not idx:
                continue
            words, chars, mask = vocab.encode([list(sentences[i]) for i in idx])
            inputs = {"word_ids": words.to(device), "char_ids": chars.to(device), "attention_mask": mask.to(device)}
            inputs.update(model.extra_inputs([list(sentences[i]) for i in idx], device))
            for i, ids in zip(idx, model.decode(**inputs, **(decode_kwargs or {}))):
                pred[i] = [label_names[t] for t in ids]
    model.train(was_training)
    return pred


def load_rnn_tagger(folder: str | Path, device: str | None = None) -> RNNTagger:
    return RNNTagger(folder, device)
