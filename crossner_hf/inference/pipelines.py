"""A ``transformers`` token-classification pipeline that tags whole words the way training scored them.

The standard ``TokenClassificationPipeline`` with ``aggregation_strategy="simple"`` labels
sub-words one by one (so ``Berlin,`` can become one entity with its comma), decodes by
argmax (so ``I-x`` may follow ``O``), and truncates inputs beyond the model's maximum
length. :class:`CrossNERTokenClassificationPipeline` instead

1. splits raw text into sentences and words as the CrossNER files do, or takes word lists
   (``is_split_into_words=True``), through :func:`crossner_hf.inference.predict.split_input`;
2. runs every window of every sentence (long sentences are windowed with overlap and
   stitched, :mod:`crossner_hf.data.tokenization`), one chunk per window, so batching works;
3. scores each word at its first sub-word, decodes each sentence with the model's
   recorded decoding (its provenance record, :mod:`crossner_hf.modeling.heads`; BIO-constrained Viterbi for models
   trained by crossner_hf) or the ``decoding=`` argument, through
   :func:`crossner_hf.inference.predict.decode_entities`, the step every predictor shares;
4. returns entities like ``aggregation_strategy="simple"``: ``entity_group``, ``score``
   (mean probability of the chosen tags), ``word`` and character ``start``/``end``.

Use it through ``transformers``::

    from transformers import pipeline
    from crossner_hf.inference.pipelines import CrossNERTokenClassificationPipeline
    tagger = pipeline("token-classification", model=OUT, pipeline_class=CrossNERTokenClassificationPipeline)

or in one line with :func:`load_pipeline`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from transformers import TokenClassificationPipeline

from crossner_hf.inference.predict import decode_entities, label_names, split_input
from crossner_hf.modeling.heads import excluded_labels, model_decoding
from crossner_hf.data.tokenization import resolve_max_length, stitch_word_predictions, tokenize_and_align


class CrossNERTokenClassificationPipeline(TokenClassificationPipeline):
    """Word-level, windowed, decoding-aware token classification (see the module docstring).

    Call arguments: ``decoding`` (``"bio-viterbi"`` or ``"argmax"``; default: the model's),
    ``is_split_into_words`` and ``delimiter`` (word lists; offsets refer to
    ``delimiter.join(words)``), ``stride`` (window overlap in tokens, default 32),
    ``max_length`` (tokens per window, default the model's limit), ``ignore_labels``
    (entity types to drop), ``nltk_data`` (folder with punkt for sentence splitting).
    ``aggregation_strategy`` is accepted for drop-in use but must be ``"simple"`` (or unset):
    the output is always whole entities.
    """

    def _sanitize_parameters(
        self,
        ignore_labels: list[str] | None = None,
        aggregation_strategy: Any = None,
        offset_mapping: Any = None,
        is_split_into_words: bool = False,
        stride: int | None = None,
        delimiter: str | None = None,
        decoding: str | None = None,
        max_length: int | None = None,
        nltk_data: str | None = None,
    ):
        # Overridden: this pipeline windows by itself and always aggregates whole words,
        # so the parent's tokenizer overflow options do not apply.
        if aggregation_strategy is not None and str(getattr(aggregation_strategy, "value", aggregation_strategy)).lower() != "simple":
            raise ValueError(
                f"aggregation_strategy={aggregation_strategy!r}: CrossNERTokenClassificationPipeline always "
                "returns whole entities (like 'simple'); drop the argument."
            )
        if offset_mapping is not None:
            raise ValueError("offset_mapping is not supported: pass words with is_split_into_words=True instead.")
        preprocess = {
            "is_split_into_words": is_split_into_words,
            "delimiter": " " if delimiter is None else delimiter,
            "stride": 32 if stride is None else stride,
            "max_length": max_length,
            "nltk_data": nltk_data,
        }
        postprocess = {"decoding": model_decoding(self.model, decoding), "ignore_labels": ignore_labels or []}
        return preprocess, {}, postprocess

    def __call__(self, inputs, **kwargs):
        # Overridden so one word list gives one list of entities, as one string does
        # (the parent wraps a single pre-tokenised input in an outer list).
        single = bool(kwargs.get("is_split_into_words")) and isinstance(inputs, list) and all(
            isinstance(w, str) for w in inputs)
        out = super().__call__(inputs, **kwargs)
        return out[0] if single and isinstance(out, list) and len(out) == 1 and isinstance(out[0], list) else out

    def preprocess(self, sentence, **params):  # noqa: D401 - the parent's name for one input
        import torch

        if params["is_split_into_words"] and not isinstance(sentence, list):
            raise ValueError("With is_split_into_words=True each input must be a list of words (str).")
        if not params["is_split_into_words"] and not isinstance(sentence, str):
            raise ValueError("Inputs must be strings (or word lists with is_split_into_words=True).")
        text, sentences = split_input(sentence, delimiter=params["delimiter"], nltk_data=params["nltk_data"])
        words = [[w for w, _ in sent] for sent in sentences]
        length = resolve_max_length(self.tokenizer, params["max_length"], self.model)
        enc = tokenize_and_align({"tokens": words}, self.tokenizer, max_length=length, stride=params["stride"])
        context = {"text": text, "spans": [[span for _, span in sent] for sent in sentences],
                   "n_words": [len(w) for w in words]}
        n_rows = len(enc["input_ids"])
        if n_rows == 0:  # nothing to tag: one specials-only chunk keeps batching and bookkeeping uniform
            empty = self.tokenizer("", return_tensors="pt")
            yield {**{k: v for k, v in empty.items() if k in self.tokenizer.model_input_names},
                   "row": None, "context": context, "is_last": True}
            return
        for r in range(n_rows):
            chunk = {
                "input_ids": torch.tensor([enc["input_ids"][r]]),
                "attention_mask": torch.tensor([enc["attention_mask"][r]]),
                "row": {"word_ids": enc["word_ids"][r], "example_index": enc["example_index"][r],
                        "n_tokens": len(enc["input_ids"][r])},
                "context": context if r == n_rows - 1 else None,
                "is_last": r == n_rows - 1,
            }
            if "token_type_ids" in enc:
                chunk["token_type_ids"] = torch.tensor([enc["token_type_ids"][r]])
            yield chunk

    def _forward(self, model_inputs):
        import torch

        row, context, is_last = model_inputs.pop("row"), model_inputs.pop("context"), model_inputs.pop("is_last")
        logits = self.model(**model_inputs).logits
        return {"scores": torch.log_softmax(logits.float(), dim=-1), "row": row, "context": context,
                "is_last": is_last}

    def postprocess(self, all_outputs, decoding: str = "argmax", ignore_labels: list[str] | None = None):
        context = next(o["context"] for o in all_outputs if o["context"] is not None)
        rows = [o for o in all_outputs if o["row"] is not None]
        names = label_names(self.model)
        per_window = [o["scores"][0, : o["row"]["n_tokens"]].cpu().numpy() for o in rows]
        stitched = stitch_word_predictions(
            per_window, [o["row"]["word_ids"] for o in rows], [o["row"]["example_index"] for o in rows],
            context["n_words"],
        )
        scores = [np.asarray(s, dtype=np.float32).reshape(len(s), len(names)) for s in stitched]
        _, entities = decode_entities(scores, names, decoding, context["spans"], context["text"],
                                      excluded_labels(self.model))
        skip = set(ignore_labels or ())
        return [e for e in entities if e["entity_group"] not in skip]


def load_pipeline(model: str, *, device: str | int | None = None, **kwargs: Any) -> CrossNERTokenClassificationPipeline:
    """``pipeline("token-classification", model=..., pipeline_class=CrossNERTokenClassificationPipeline)``: the
    ``transformers`` pipeline of a model of ours, for code built around pipelines (``Tagger`` is the library's
    tagging path; ``load_tagger``, this function's old name, warns until its removal).

    ``model`` is a folder or Hub id (checked by :func:`crossner_hf.inference.predict.load_token_classifier`);
    other keyword arguments go to ``transformers.pipeline``.
    """
    from transformers import pipeline

    from crossner_hf.inference.predict import load_token_classifier

    loaded, tokenizer = load_token_classifier(model)
    return pipeline(
        "token-classification", model=loaded, tokenizer=tokenizer, device=device,
        pipeline_class=CrossNERTokenClassificationPipeline, **kwargs,
    )


from crossner_hf._moved import renamed_attributes  # noqa: E402 - the old name load_tagger, with its warning

__getattr__ = renamed_attributes(__name__)
