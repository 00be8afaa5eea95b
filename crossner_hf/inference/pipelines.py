"""A ``transformers`` token-classification pipeline that tags whole words the way training scored them.

The standard ``TokenClassificationPipeline`` with ``aggregation_strategy="simple"`` labels
sub-words one by one (so ``Berlin,`` can become one entity with its comma), decodes by
argmax (so ``I-x`` may follow ``O``), and truncates inputs beyond the model's maximum
length. :class:`CrossNERTokenClassificationPipeline` is the same interface over the one tagging path,
:meth:`crossner_hf.inference.tagger.Tagger.tag_texts` (a :class:`~crossner_hf.inference.tagger.TransformerTagger`
over the pipeline's model and tokenizer), so it

1. splits raw text into sentences and words as the CrossNER files do, or takes word lists
   (``is_split_into_words=True``);
2. runs every window of every sentence (long sentences are windowed with overlap and
   stitched, :mod:`crossner_hf.data.tokenization`), length-sorted in batches of ``batch_size`` windows;
3. scores each word at its first sub-word and decodes each sentence with the model's
   recorded decoding (its provenance record, :mod:`crossner_hf.modeling.heads`; BIO-constrained Viterbi for models
   trained by crossner_hf) or the ``decoding=`` argument;
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

from transformers import TokenClassificationPipeline

from crossner_hf.modeling.heads import model_decoding


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
        is_split_into_words: bool | None = None,
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
        # only what was given: the call's arguments override the ones the pipeline was built with
        given = {"is_split_into_words": is_split_into_words, "delimiter": delimiter, "stride": stride,
                 "max_length": max_length, "nltk_data": nltk_data}
        preprocess = {k: v for k, v in given.items() if v is not None}
        postprocess: dict[str, Any] = {} if ignore_labels is None else {"ignore_labels": ignore_labels}
        if decoding is not None:
            postprocess["decoding"] = model_decoding(self.model, decoding)
        return preprocess, {}, postprocess

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        """Entities of one input (a string, or a word list with ``is_split_into_words=True``) or of a list of
        them (one list of entities per input), through ``Tagger.tag_texts``; ``batch_size``: windows per forward
        pass (default 32)."""
        from crossner_hf.inference.tagger import TransformerTagger

        batch_size = kwargs.pop("batch_size", None) or getattr(self, "_batch_size", None) or 32
        for ignored in ("num_workers",):  # the parent's DataLoader options: the tagger batches by itself
            kwargs.pop(ignored, None)
        preprocess, _, postprocess = self._sanitize_parameters(**kwargs)
        preprocess = {"is_split_into_words": False, "delimiter": " ", "stride": 32, "max_length": None,
                      "nltk_data": None, **self._preprocess_params, **preprocess}
        postprocess = {"decoding": model_decoding(self.model), "ignore_labels": [], **self._postprocess_params,
                       **postprocess}
        words = preprocess["is_split_into_words"]
        single = isinstance(inputs, str) or (words and isinstance(inputs, list)
                                             and all(isinstance(w, str) for w in inputs))
        items = [inputs] if single else list(inputs)
        for item in items:
            if words and not isinstance(item, list):
                raise ValueError("With is_split_into_words=True each input must be a list of words (str).")
            if not words and not isinstance(item, str):
                raise ValueError("Inputs must be strings (or word lists with is_split_into_words=True).")
        tagger = TransformerTagger(self.model, self.tokenizer, postprocess["decoding"],
                                   max_length=preprocess["max_length"], stride=preprocess["stride"])
        skip = set(postprocess["ignore_labels"])
        tagged = tagger.tag_texts(items, delimiter=preprocess["delimiter"], nltk_data=preprocess["nltk_data"],
                                  batch_size=int(batch_size), progress=False)
        out = [[e for e in t["entities"] if e["entity_group"] not in skip] for t in tagged]
        return out[0] if single else out


def load_pipeline(model: str, *, device: str | int | None = None, **kwargs: Any) -> CrossNERTokenClassificationPipeline:
    """``pipeline("token-classification", model=..., pipeline_class=CrossNERTokenClassificationPipeline)``: the
    ``transformers`` pipeline of a model of ours, for code built around pipelines (it tags through ``Tagger``, the
    library's one tagging path).

    ``model`` is a PyTorch folder or Hub id, opened by ``Tagger.from_pretrained`` (one-line errors for a missing
    folder or an untrained head); other keyword arguments go to ``transformers.pipeline``.
    """
    from transformers import pipeline

    from crossner_hf.inference.tagger import Tagger, TransformerTagger

    tagger = Tagger.from_pretrained(model)
    if not isinstance(tagger, TransformerTagger) or tagger.runtime != "pytorch":
        raise ValueError(f"{model} is a {tagger.runtime} {type(tagger).__name__} folder, which a transformers "
                         "pipeline cannot run; use Tagger.from_pretrained(folder).tag_texts(texts).")
    return pipeline(
        "token-classification", model=tagger.model, tokenizer=tagger.tokenizer, device=device,
        pipeline_class=CrossNERTokenClassificationPipeline, **kwargs,
    )
