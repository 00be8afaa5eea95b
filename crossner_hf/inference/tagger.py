"""One tagger for every trained folder: ``Tagger.from_pretrained(path)`` -> ``tag(word_lists)``, ``tag_texts(lines)``.

A folder saved by ``crossner-hf train`` / ``nerbert`` (a transformers token classifier) gives a
:class:`TransformerTagger` (windows, stitching and the decoding the model records, see
:mod:`crossner_hf.inference.predict`); the same folder exported by ``crossner-hf export`` gives a
:class:`TransformerTagger` over ONNX Runtime (:mod:`crossner_hf.inference.onnx_runtime`: fp32 or int8,
the same windows, stitching and decoding); a folder saved by ``crossner-hf bilstm-crf`` / ``cdlm`` gives
the RNN tagger (:class:`crossner_hf.inference.rnn_tagger.RNNTagger`: Viterbi over its CRF, the labels and
decode arguments the recipe recorded). Both tag word lists and raw text the same way, so
``report``, ``confusion`` and ``predict`` take any trained folder.

Example:
    >>> tagger = Tagger.from_pretrained("outputs/politics-direct")              # doctest: +SKIP
    >>> tagger.tag([["Angela", "Merkel", "visited", "Paris", "."]])              # doctest: +SKIP
    [['B-politician', 'I-politician', 'O', 'B-location', 'O']]
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossner_hf.inference.rnn_tagger import RNNTagger


class Tagger(abc.ABC):
    """What every tagger offers: ``labels``, ``decoding``, ``tag`` and ``tag_texts``.

    :class:`TransformerTagger` subclasses it and :class:`crossner_hf.inference.rnn_tagger.RNNTagger` is registered
    as one, so ``isinstance(tagger, Tagger)`` holds for every folder ``from_pretrained`` opens."""

    labels: list[str]
    gold_labels: list[str]
    decoding: str
    runtime: str

    @staticmethod
    def from_pretrained(path: str | Path, *, device: str | None = None, decoding: str | None = None,
                        threads: int | None = None) -> Any:
        """The tagger of a trained folder; ``decoding`` overrides a transformer model's recorded one (a CRF
        model always decodes with Viterbi: overriding it is refused). ``threads`` is the number of CPU
        threads an ONNX folder's runtime uses (default: one per core); for PyTorch models set
        ``torch.set_num_threads`` (the ``--threads`` flag of the commands does)."""
        from crossner_hf.inference.onnx_runtime import is_onnx_folder
        from crossner_hf.inference.rnn_tagger import is_rnn_folder

        if is_onnx_folder(path):
            return TransformerTagger.load_onnx(path, device=device, decoding=decoding, threads=threads)
        if is_rnn_folder(path):
            if decoding is not None:
                raise ValueError(f"--decoding {decoding}: {path} is a BiLSTM-CRF / CDLM folder, which decodes with its "
                                 "CRF's Viterbi path; drop --decoding.")
            return RNNTagger(path, device)
        return TransformerTagger.load(path, device=device, decoding=decoding)

    def tag(self, sentences: Sequence[Sequence[str]], batch_size: int = 64, progress: bool = False
            ) -> list[list[str]]:
        raise NotImplementedError

    def tag_texts(self, inputs: Sequence[str | Sequence[str]], *, pretokenized: bool = False,
                  nltk_data: str | None = None, batch_size: int = 64) -> list[dict[str, Any]]:
        raise NotImplementedError


class TransformerTagger(Tagger):
    """A transformers token classifier (a PyTorch model, or an exported folder run by ONNX Runtime) with its
    tokenizer and decoding."""

    def __init__(self, model: Any, tokenizer: Any, decoding: str | None = None):
        from crossner_hf.inference.predict import label_names
        from crossner_hf.modeling.heads import model_decoding

        self.model, self.tokenizer = model, tokenizer
        self.decoding = model_decoding(model, decoding)
        self.labels = label_names(model)
        self.gold_labels = self.labels  # the tags a gold file for this model holds
        self.runtime = getattr(model, "runtime", "pytorch")

    @classmethod
    def load_onnx(cls, path: str | Path, *, device: str | None = None, decoding: str | None = None,
                  threads: int | None = None) -> TransformerTagger:
        """The tagger of a folder written by ``crossner-hf export`` (ONNX Runtime, CPU)."""
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

    @classmethod
    def load(cls, path: str | Path, *, device: str | None = None, decoding: str | None = None) -> TransformerTagger:
        from crossner_hf.inference.predict import load_token_classifier

        model, tokenizer = load_token_classifier(str(path), device=device)
        return cls(model, tokenizer, decoding)

    def tag(self, sentences: Sequence[Sequence[str]], batch_size: int = 64, progress: bool = False
            ) -> list[list[str]]:
        from crossner_hf.inference.predict import check_word_lists, predict_tags

        check_word_lists(sentences)
        return predict_tags(self.model, self.tokenizer, sentences, decoding=self.decoding, batch_size=batch_size,
                            progress=progress)

    def tag_texts(self, inputs: Sequence[str | Sequence[str]], *, pretokenized: bool = False,
                  nltk_data: str | None = None, batch_size: int = 64) -> list[dict[str, Any]]:
        from crossner_hf.inference.predict import tag_texts

        return tag_texts(self.model, self.tokenizer, inputs, pretokenized=pretokenized, decoding=self.decoding,
                         nltk_data=nltk_data, batch_size=batch_size, progress=len(inputs) > 200)


Tagger.register(RNNTagger)  # the RNN folders' tagger (crossner_hf.inference.rnn_tagger) is a Tagger
