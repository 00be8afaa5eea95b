"""The one inference door: ``Tagger.from_pretrained(path)`` -> ``tag(word_lists)``, ``tag_texts(lines)``.

Every tagging path of the package goes through a :class:`Tagger`: ``crossner-hf predict`` / ``report`` /
``confusion``, :func:`~crossner_hf.evaluation.scoring.evaluate_tagger`, the ONNX card's F1, the corpus builder's
``ModelMentionFinder``, the RNN recipes' evaluation and the ``transformers`` pipeline class; training's dev and
test scoring (``CrossNERTrainer``) takes the transformer kind's own steps,
:func:`~crossner_hf.inference.predict.log_probabilities` and :func:`~crossner_hf.inference.predict.decode_tags`, so a
run records the F1 its saved model gives. A kind of tagger
implements one method, :meth:`Tagger.tag_with_scores` (word lists in, tags and per-word log-probabilities out);
:meth:`Tagger.tag` and :meth:`Tagger.tag_texts` (raw text: sentences, words, tags, entities with offsets) are
written here once on top of it.

Kinds:

- :class:`TransformerTagger`: a folder saved by ``crossner-hf train`` / ``nerbert`` (a transformers token
  classifier: windows, stitching and the decoding the model records, :mod:`crossner_hf.inference.predict`), or
  the same folder exported by ``crossner-hf export`` (ONNX Runtime, :mod:`crossner_hf.inference.onnx_runtime`);
- :class:`crossner_hf.inference.rnn_tagger.RNNTagger`: a folder saved by ``crossner-hf bilstm-crf`` / ``cdlm`` /
  ``multicell`` (Viterbi over its CRF, the labels and decode arguments the recipe recorded).

A kind other than the transformer one registers itself by subclassing :class:`Tagger` with an
:meth:`~Tagger.opens` test (the package ``crossner_hf.inference`` imports every kind, so ``from_pretrained`` knows
them without importing them here, which would make an import cycle).

Example:
    >>> tagger = Tagger.from_pretrained("outputs/politics-direct")              # doctest: +SKIP
    >>> tagger.tag([["Angela", "Merkel", "visited", "Paris", "."]])              # doctest: +SKIP
    [['B-politician', 'I-politician', 'O', 'B-location', 'O']]
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np


class Tagger(abc.ABC):
    """What every tagger offers: ``labels``, ``gold_labels``, ``decoding``, ``runtime``, ``tag`` and ``tag_texts``.

    Subclasses implement :meth:`tag_with_scores` (and, to be found by :meth:`from_pretrained`, :meth:`opens` and
    :meth:`from_folder`)."""

    labels: list[str]
    """The names of the tags the model predicts."""
    gold_labels: list[str]
    """The tags a gold file for this model holds (a zero-shot CDLM predicts the source's, scored on the target's)."""
    decoding: str
    runtime: str

    _kinds: ClassVar[list[type[Tagger]]] = []
    """Folder kinds other than the transformer one (the fallback), in the order they were defined."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "opens" in cls.__dict__:
            Tagger._kinds.append(cls)

    @classmethod
    def from_pretrained(cls, path: str | Path, *, device: str | None = None, decoding: str | None = None,
                        threads: int | None = None) -> Tagger:
        """The tagger of a trained folder (or Hub id); ``decoding`` overrides a transformer model's recorded one
        (a CRF model always decodes with Viterbi: overriding it is refused). ``threads`` is the number of CPU
        threads an ONNX folder's runtime uses (default: one per core); for PyTorch models set
        ``torch.set_num_threads`` (the ``--threads`` flag of the commands does)."""
        from crossner_hf.inference.onnx_runtime import is_onnx_folder

        # an exported folder first: its config.json is ours to check (a damaged one says "export it again")
        kinds = [] if is_onnx_folder(path) else Tagger._kinds
        for kind in kinds:
            if kind.opens(path):
                return kind.from_folder(path, device=device, decoding=decoding, threads=threads)
        return TransformerTagger.from_folder(path, device=device, decoding=decoding, threads=threads)

    @classmethod
    def opens(cls, path: str | Path) -> bool:
        """Whether ``path`` is a folder of this kind (the kinds are tried in turn; the transformer one last)."""
        return False

    @classmethod
    @abc.abstractmethod
    def from_folder(cls, path: str | Path, *, device: str | None = None, decoding: str | None = None,
                    threads: int | None = None) -> Tagger:
        """Open a folder of this kind (called by :meth:`from_pretrained`, which picks the kind)."""

    @abc.abstractmethod
    def tag_with_scores(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 64, progress: bool = False
                        ) -> tuple[list[list[str]], list[np.ndarray] | None]:
        """One tag per word for every sentence, and the per-word log-probabilities (``n_words x len(labels)``)
        they were decoded from, or ``None`` for a model that has none (a CRF's Viterbi path)."""

    def tag(self, sentences: Sequence[Sequence[str]], batch_size: int = 64, progress: bool = False
            ) -> list[list[str]]:
        """One tag per word for every sentence (each a list of words)."""
        from crossner_hf.inference.predict import check_word_lists

        check_word_lists(sentences)
        return self.tag_with_scores(sentences, batch_size=batch_size, progress=progress)[0]

    def tag_texts(self, inputs: Sequence[str | Sequence[str]], *, pretokenized: bool = False, delimiter: str = " ",
                  nltk_data: str | None = None, batch_size: int = 64, progress: bool | None = None
                  ) -> list[dict[str, Any]]:
        """Tag many inputs in one length-sorted batched run: ``{"text", "words", "tags", "entities"}`` per input.

        An input is raw text (split into sentences and words the way the CrossNER files are), text of words
        separated by spaces (``pretokenized``) or a list of words (shown as ``delimiter.join(words)``). ``words``
        are ``(word, start, end)`` and ``tags`` one per word (sentences concatenated); ``entities`` as the pipeline
        returns them (``entity_group``, ``score``: the mean probability of the entity's tags, 1.0 for a model
        without probabilities, ``word``, ``start``, ``end``: offsets into ``text``)."""
        from crossner_hf.inference.predict import entities_from_tags, split_input

        split = [split_input(item, pretokenized=pretokenized, delimiter=delimiter, nltk_data=nltk_data)
                 for item in inputs]
        # every sentence of every input in one run, so batches are filled across inputs
        flat = [[w for w, _ in sent] for _, sents in split for sent in sents]
        tags, scores = self.tag_with_scores(flat, batch_size=batch_size,
                                            progress=len(inputs) > 200 if progress is None else progress)
        index = {name: i for i, name in enumerate(self.labels)}
        out, k = [], 0
        for text, sents in split:
            record: dict[str, Any] = {"text": text, "words": [], "tags": [], "entities": []}
            for sent in sents:
                record["words"] += [(w, a, b) for w, (a, b) in sent]
                record["tags"] += tags[k]
                record["entities"] += entities_from_tags(tags[k], [span for _, span in sent], text,
                                                         None if scores is None else scores[k], index)
                k += 1
            out.append(record)
        return out


class TransformerTagger(Tagger):
    """A transformers token classifier (a PyTorch model, or an exported folder run by ONNX Runtime) with its
    tokenizer and decoding; ``max_length`` / ``stride``: the windows' tokens and overlap (default: the model's
    limit, 32)."""

    def __init__(self, model: Any, tokenizer: Any, decoding: str | None = None, *, max_length: int | None = None,
                 stride: int = 32):
        from crossner_hf.inference.predict import label_names
        from crossner_hf.modeling.heads import excluded_labels, model_decoding

        self.model, self.tokenizer = model, tokenizer
        self.decoding = model_decoding(model, decoding)
        self.labels = label_names(model)
        self.gold_labels = self.labels  # the tags a gold file for this model holds
        self.excluded = excluded_labels(model)
        self.runtime = getattr(model, "runtime", "pytorch")
        self.max_length, self.stride = max_length, stride

    @classmethod
    def from_folder(cls, path: str | Path, *, device: str | None = None, decoding: str | None = None,
                    threads: int | None = None) -> TransformerTagger:
        """A PyTorch folder or Hub id (:func:`~crossner_hf.inference.predict.load_token_classifier`: one-line
        errors for a missing folder or an untrained head), or a folder written by ``crossner-hf export``
        (ONNX Runtime on the CPU, ``threads`` intra-op threads)."""
        from crossner_hf.inference.onnx_runtime import is_onnx_folder

        if is_onnx_folder(path):
            return cls._from_onnx_folder(path, device=device, decoding=decoding, threads=threads)
        from crossner_hf.inference.predict import load_token_classifier

        model, tokenizer = load_token_classifier(str(path), device=device)
        return cls(model, tokenizer, decoding)

    @classmethod
    def _from_onnx_folder(cls, path: str | Path, *, device: str | None, decoding: str | None,
                          threads: int | None) -> TransformerTagger:
        from transformers import AutoTokenizer

        from crossner_hf.inference.onnx_runtime import OnnxTokenClassifier

        if device not in (None, "cpu"):
            raise ValueError(f"--device {device}: {path} is an ONNX folder, which runs on the CPU (ONNX Runtime); "
                             "drop --device, or tag with the PyTorch folder it was exported from.")
        model = OnnxTokenClassifier.from_pretrained(path, threads=threads)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(Path(path).expanduser()))
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: its tokenizer does not load ({str(err).splitlines()[0]}); export the model "
                             "again with `crossner-hf export`.") from None
        return cls(model, tokenizer, decoding)

    def tag_with_scores(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 64, progress: bool = False
                        ) -> tuple[list[list[str]], list[np.ndarray]]:
        from crossner_hf.inference.predict import decode_tags, predict_word_scores

        scores = predict_word_scores(self.model, self.tokenizer, sentences, batch_size=batch_size,
                                     max_length=self.max_length, stride=self.stride, progress=progress)
        return decode_tags(scores, self.labels, self.decoding, self.excluded), scores
