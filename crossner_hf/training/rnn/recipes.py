"""The two recipes, each a config and a runner: BiLSTM-CRF (joint CoNLL-2003 + upsampled target, target only,
source only, FINETUNE, SELF-TRAIN, DANN) and CDLM (supervised or zero-shot).

``train_bilstm_crf(model, target, BiLSTMCRFTrainingConfig(...), source=, target_text=)`` and ``train_cdlm(model,
target, CDLMTrainingConfig(...), source=, source_text=, target_text=)`` take what they start from (``None`` or a
word vectors file) and the data as arguments (a :class:`~crossner_hf.data.target.TargetData`; CoNLL-2003 as
``source``, loaded from ``$CROSSNER_DATA_DIR`` when not given) and return an :class:`RNNResult`, the shape of
every runner (:mod:`crossner_hf.training.runs`). The configs hold only the recipe's settings; the commands
``crossner-hf bilstm-crf`` and ``crossner-hf cdlm`` add the data flags and translate them
(:mod:`crossner_hf.commands.bilstm_crf`, :mod:`crossner_hf.commands.cdlm`).

LM text (CDLM) and unlabelled target text (SELF-TRAIN, DANN): sentences, as strings (split on white space) or
word lists; without them the LM reads the target splits named by ``lm_splits`` and the source's training
sentences, as the released supervised code did (the default ``train`` keeps dev/test text out).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import torch

from crossner_hf.arguments import WorkflowConfig
from crossner_hf.data.labels import SOURCE_DOMAIN, check_label_map, head_labels_with_source, labels_for
from crossner_hf.data.source import source_domain, source_in_target_space
from crossner_hf.data.target import TargetData, draw_rows, draw_texts, few_shot_target, share
from crossner_hf.modeling.rnn.bilstm_crf import ARCHITECTURES, BiLSTMCRFConfig, BiLSTMCRFForTokenClassification
from crossner_hf.modeling.rnn.cdlm import SOURCE, TARGET, CDLMConfig, CDLMForTokenClassification
from crossner_hf.modeling.rnn.vocab import WordCharVocab, load_char_ngram_vectors
from crossner_hf.training.rnn.common import (PretrainedInputs, RNNResult, examples_of, finish_run, held_out_words,
                                             runner_call, sentences_as_examples, tags_forbidden, vocab_and_vectors)
from crossner_hf.outputs import held_output_dir
from crossner_hf.training.rnn.loop import Example, Stream, evaluate, make_optimizer_factory, run_loop, tensors
from crossner_hf.results import read_results

logger = logging.getLogger(__name__)


@dataclass
class RNNTaggerConfig(WorkflowConfig):
    """The settings every RNN recipe shares (no data: the runners take it as arguments). Fields left at ``None``
    take the recipe's (or architecture's, or mode's) default in ``__post_init__``, so a value given is never
    overridden."""

    few_shot: int | None = field(default=None, metadata={
        "help": "Train on this many target train sentences, drawn with --seed (CDLM Figure 6 varies it, "
                "004:1053-1062); cdlm's target LM still reads the whole training text (004:754-755)."})
    output_dir: str | None = field(default=None, metadata={
        "help": "Where the model, results.json and card go (default: outputs/<dataset>-<recipe>, e.g. "
                "outputs/politics-bilstm-crf)."})
    word_dim: int | None = field(default=None, metadata={"help": "Word embedding size (default: 100; crossner 300)."})
    char_dim: int = field(default=30, metadata={"help": "Character embedding size (character CNN)."})
    char_filters: int = field(default=50, metadata={"help": "Character CNN filters (kernel 3, max-pooled)."})
    hidden_size: int | None = field(default=None, metadata={"help": "LSTM units per direction (default: 100; "
                                                              "crossner 256)."})
    dropout: float = field(default=0.5, metadata={"help": "Dropout on characters, word representations, LSTM output."})
    min_count: int = field(default=2, metadata={"help": "LM-text words seen more than this many times join the vocabulary."})
    vocab_splits: list[str] = field(default_factory=lambda: ["train", "validation", "test"], metadata={
        "help": "Labeled splits (target, and CoNLL-2003 where it is trained on) whose words join the vocabulary: "
                "train, validation and test as both releases (every test word keeps its pre-trained vector; its "
                "labels are never read), or train alone (words seen only in dev/test become <unk>).",
        "choices": ["train", "validation", "test"]})
    num_train_epochs: int | None = field(default=None, metadata={"help": "Maximum epochs (default: 100, the CDLM "
                                                                  "release; crossner 300)."})
    early_stopping_patience: int | None = field(default=None, metadata={
        "help": "Stop after this many epochs without a better dev F1 (0: never; default 10, crossner 8 as its release)."})
    max_steps: int = field(default=-1, metadata={"help": "Stop after this many optimiser steps in all (> 0), "
                                                 "then evaluate and finish; budget runs and tests."})
    max_steps_per_epoch: int | None = field(default=None, metadata={"help": "Cap steps per epoch (budget runs, tests)."})
    initial_optimizer: str | None = field(default=None, metadata={
        "help": "Optimiser to start with (default: sgd as NCRF++; crossner adam; CDLM zero-shot rmsprop).",
        "choices": ["sgd", "adam", "rmsprop"]})
    learning_rate: float | None = field(default=None, metadata={"help": "SGD or Adam learning rate (default: SGD 0.015 "
                                                                 "as NCRF++; crossner Adam 1e-3)."})
    lr_decay: float = field(default=0.05, metadata={"help": "SGD only: lr / (1 + decay x epoch)."})
    weight_decay: float | None = field(default=None, metadata={"help": "Weight decay (default: 1e-8 as NCRF++; "
                                                                "crossner 0)."})
    max_grad_norm: float | None = field(default=None, metadata={
        "help": "Gradient norm clipping, 0: off (default: off as both releases; lample 5.0 as Lample et al.)."})
    batch_size: int | None = field(default=None, metadata={"help": "Sentences per batch (source NER, and text streams)."})
    loss_reduction: str | None = field(default=None, metadata={
        "help": "CRF loss over a batch: sum (NCRF++, the default) or mean (crossner).", "choices": ["sum", "mean"]})
    source_subsample: int | None = field(default=None, metadata={"help": "Use only this many CoNLL-2003 sentences."})
    seed: int = field(default=42, metadata={"help": "Random seed."})
    use_cpu: bool = field(default=False, metadata={"help": "Run on the CPU even when a GPU is present."})
    mixed_precision: str = field(default="no", metadata={
        "help": "Accelerate's mixed precision: no, fp16 (GPU) or bf16 (GPU, or a CPU that supports it).",
        "choices": ["no", "fp16", "bf16"]})
    resume_from_checkpoint: bool = field(default=False, metadata={"help": "Continue from OUT/checkpoint (refused, in one "
                                                                          "line, if OUT holds a run made with other settings)."})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "Start afresh in an --output_dir that holds another run (its checkpoint is removed)."})
    rmsprop_learning_rate: float = field(default=1e-3, metadata={"help": "RMSprop learning rate (zero-shot start)."})

    def training_target(self, target: TargetData) -> TargetData:
        """``target`` with its train split cut to ``few_shot`` sentences drawn with ``seed`` (unchanged without):
        :func:`crossner_hf.data.target.few_shot_target`, the one home of draws."""
        return few_shot_target(target, self.seed, few_shot=self.few_shot)

    def _fill(self, defaults: dict[str, Any]) -> None:
        for name, value in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, value)


# training settings per BiLSTM-CRF architecture (the network shapes are in rnn.bilstm_crf.ARCHITECTURES)
BILSTM_TRAINING: dict[str, dict[str, Any]] = {
    # Lample et al. 2016 as NCRF++ runs it: SGD 0.015 decayed, batch 10, clipping 5
    "lample": {"initial_optimizer": "sgd", "learning_rate": 0.015, "weight_decay": 1e-8, "batch_size": 10,
               "max_grad_norm": 5.0, "oversample_factor": 100, "early_stopping_patience": 10, "num_train_epochs": 100},
    # the CrossNER release (main.py --bilstm --usechar, src/trainer.py): Adam 1e-3, batch 32, target x10 + CoNLL
    "crossner": {"initial_optimizer": "adam", "learning_rate": 1e-3, "weight_decay": 0.0, "batch_size": 32,
                 "max_grad_norm": 0.0, "oversample_factor": 10, "early_stopping_patience": 8, "num_train_epochs": 300},
    # Coach as the CrossNER release runs it (README.md: main.py --coach --lr 1e-4 --dropout 0.5, batch 32 default)
    "coach": {"initial_optimizer": "adam", "learning_rate": 1e-4, "weight_decay": 0.0, "batch_size": 32,
              "max_grad_norm": 0.0, "oversample_factor": 10, "early_stopping_patience": 8, "num_train_epochs": 300},
}


@dataclass
class BiLSTMCRFTrainingConfig(RNNTaggerConfig):
    """The BiLSTM-CRF / Coach recipe's settings (:func:`train_bilstm_crf`)."""

    architecture: str = field(default="lample", metadata={
        "help": "lample: words (100d) ++ character CNN, 1 x 100 BiLSTM, SGD (Lample et al. 2016, NCRF++); crossner: "
                "words (GloVe 300d) ++ character n-grams (100d), 2 x 256 BiLSTM, Adam 1e-3 (the CrossNER paper's "
                "baseline); coach: Coach (Liu et al. 2020) as CrossNER ran it, the crossner network detecting O/B/I "
                "spans, a span encoder typing them, Adam 1e-4. Flags left unset take the architecture's values.",
        "choices": list(ARCHITECTURES)})
    schedule: str = field(default="joint", metadata={
        "help": "joint: CoNLL-2003 + the upsampled target (the CrossNER paper's baseline); target: the target alone "
                "(CDLM's STM-TARGET, 004:846-848); source: CoNLL-2003 alone, selected on its dev set, tested on the "
                "target (STM-SOURCE, 004:1087-1090); pretrain-finetune: source, then the target with a new output "
                "layer and CRF (FINETUNE, 004:848-851, 004:866-868; the source model is kept in OUT/source); "
                "self-train and dann: CDLM's zero-shot baselines SELF-TRAIN and DANN (004:1087-1094; "
                "crossner_hf.training.rnn.adaptation).",
        "choices": ["joint", "target", "source", "pretrain-finetune", "self-train", "dann"]})
    self_train_rounds: int = field(default=3, metadata={"help": "self-train: rounds after the source model."})
    self_train_fraction: float = field(default=0.2, metadata={
        "help": "self-train: share of the target text added per round (round k keeps the k x share most confident "
                "sentences)."})
    self_train_epochs: int = field(default=5, metadata={"help": "self-train: epochs of each round after the first."})
    dann_weight: float = field(default=1.0, metadata={
        "help": "dann: strength of the gradient reversal at the end of training (Ganin et al.'s schedule rises to it)."})
    domain_classifier_hidden: int = field(default=100, metadata={
        "help": "dann: hidden units of the domain classifier (Ganin et al. 2016's MLP)."})
    oversample_factor: int | None = field(default=None, metadata={
        "help": "joint: copies of the target per epoch, by index (default: 100; crossner 10 as its release)."})
    source_label_map: dict[str, str] | str | None = field(default=None, metadata={
        "help": "joint and the schedules that read CoNLL-2003: its types trained as yours, e.g. "
                "person=x_person,organisation=x_organisation (a dict in Python), instead of extra classes learnt from "
                "the source alone (as crossner-hf train's flag)."})
    num_layers: int | None = field(default=None, metadata={"help": "BiLSTM layers (default: 1; crossner 2)."})
    char_ngram_dim: int = field(default=100, metadata={
        "help": "crossner: size of the character n-gram embedding; 0: words alone (CrossNER's 'BiLSTM-CRF (word)' row)."})

    def __post_init__(self):
        from crossner_hf.data.labels import parse_label_map

        self.source_label_map = parse_label_map(self.source_label_map)
        shape = ARCHITECTURES[self.architecture]
        self._fill({k: shape[k] for k in ("word_dim", "hidden_size", "num_layers", "loss_reduction")})
        self._fill(BILSTM_TRAINING[self.architecture])
        if self.architecture == "coach" and (self.word_dim + self.char_ngram_dim) % 2:
            raise ValueError(f"--architecture coach: word_dim + char_ngram_dim ({self.word_dim} + "
                             f"{self.char_ngram_dim}) must be even: the span encoder's two directions meet the "
                             "type vectors of that size.")
        if self.architecture == "coach" and self.schedule in ("pretrain-finetune", "self-train", "dann"):
            raise ValueError(f"--schedule {self.schedule} works on a BiLSTM-CRF's output layer and CRF; Coach's "
                             "typing stage has no such layer: use --architecture lample or crossner.")
        if not 0 < self.self_train_fraction <= 1 or self.self_train_rounds < 0:
            raise ValueError(f"--self_train_fraction {self.self_train_fraction} must be in (0, 1] and "
                             f"--self_train_rounds {self.self_train_rounds} at least 0.")
        check_char_ngrams(self.architecture, self.char_ngram_dim, None)


def check_char_ngrams(architecture: str, char_ngram_dim: int, char_ngram_vectors: str | None) -> None:
    """The character n-gram settings and file agree (checked where the flags are read, and by the runner)."""
    if char_ngram_vectors and architecture == "lample":
        raise ValueError("--char_ngram_vectors belongs to --architecture crossner or coach (lample uses a "
                         "character CNN).")
    if char_ngram_dim < 0 or (char_ngram_dim == 0 and char_ngram_vectors):
        raise ValueError(f"--char_ngram_dim {char_ngram_dim}: give a positive size, or 0 (words alone) "
                         "without --char_ngram_vectors.")


# CDLM loss weights in our order (LM-source, NER-source, LM-target, NER-target), from the two releases
CDLM_WEIGHTS_SHARED_TEXT = [1.0, 1.0, 1.0, 2.0]   # supervised_domain_adaptation/main.py: LM on the NER sentences
CDLM_WEIGHTS_RAW_TEXT = [0.5, 0.8, 0.5, 1.0]      # combined_SDA_and_UDA/main.py, supervised: raw domain corpora
CDLM_WEIGHTS_ZERO_SHOT = [1.0, 1.0, 1.0, 0.0]     # combined_SDA_and_UDA/main.py, unsupervised: no target NER


@dataclass
class CDLMTrainingConfig(RNNTaggerConfig):
    """The CDLM recipe's settings (:func:`train_cdlm`)."""

    mode: str = field(default="supervised", metadata={"help": "supervised (target NER labels used) or zero-shot "
                                                      "(never reads target labels).", "choices": ["supervised", "zero-shot"]})
    loss_weights: list[float] | None = field(default=None, metadata={
        "help": "Weights of LM-source, NER-source, LM-target, NER-target (default: the release's: 1 1 1 2 when the LM "
                "reads the NER sentences; 0.5 0.8 0.5 1 when raw source / target text is given; zero-shot 1 1 1 0)."})
    loss_form: str = field(default="release", metadata={
        "help": "release: the release's four weights (--loss_weights), which Eq. 9 cannot express (1 1 1 2 weighs the "
                "target LM at half its NER but the source LM at its NER's weight, where Eq. 9 has one task weight); "
                "eq9: the paper's lambda_d (L_ner + lambda_t L_lm) (004:639), lambda_d from --domain_weights, "
                "lambda_t from --task_weight.", "choices": ["release", "eq9"]})
    domain_weights: list[float] = field(default_factory=lambda: [1.0, 1.0], metadata={
        "help": "--loss_form eq9: the domain weights lambda_src lambda_tgt (the paper states none: 1 1)."})
    task_weight: float = field(default=1.0, metadata={
        "help": "--loss_form eq9: the task weight lambda_t of the LM losses (the paper states none: 1)."})
    target_batch_size: int = field(default=30, metadata={"help": "Target NER batch (the target set is cycled)."})
    lm_negatives: int = field(default=50, metadata={"help": "Sampled-softmax negatives: distinct ids, log-uniform."})
    lm_loss_reduction: str = field(default="word", metadata={
        "help": "LM loss per word (this project: keeps the LM from swamping the NER losses) or per sentence (summed "
                "over words, divided by sentences: the release's ave_batch_loss).", "choices": ["word", "sentence"]})
    source_text_fraction: float = field(default=1.0, metadata={
        "help": "Use this share of the source LM text, drawn with --seed (CDLM Figure 8 varies it, 004:1147-1196)."})
    target_text_fraction: float = field(default=1.0, metadata={
        "help": "Use this share of the target LM text, drawn with --seed (CDLM Figure 8, 004:1147-1196)."})
    equal_text_fraction: float | None = field(default=None, metadata={
        "help": "Both LMs read the same number of sentences, this share of the smaller LM text, each drawn with "
                "--seed (CDLM Figure 8's both-varying line: an equal amount of source and target text, "
                "004:1154-1156); not with --source_text_fraction / --target_text_fraction."})
    lm_splits: list[str] = field(default_factory=lambda: ["train"], metadata={
        "help": "CrossNER splits whose sentences serve as LM text when no file is given.",
        "choices": ["train", "validation", "test"]})
    sgd_switch_f1: float = field(default=0.72, metadata={"help": "zero-shot: switch RMSprop -> SGD at this source dev F1."})
    variant: str = field(default="final", metadata={
        "help": "The paper's model (final) or one of its baselines / ablations of Table 3 (004:897-904): "
                "co-lm (target NER + target LM, parameters by task), co-ner (source + target NER, parameters by "
                "domain), mix-data (both LMs read source + target text), multitask-ner-lm (one shared LSTM for the "
                "four streams), multitask-ner (one shared LSTM, the two NER streams).",
        "choices": ["final", "co-lm", "co-ner", "mix-data", "multitask-ner-lm", "multitask-ner"]})

    def __post_init__(self):
        zero_shot = self.mode == "zero-shot"
        self._fill({"word_dim": 100, "hidden_size": 100, "loss_reduction": "sum", "num_train_epochs": 100,
                    "early_stopping_patience": 10, "learning_rate": 0.015, "weight_decay": 1e-8,
                    "max_grad_norm": 0.0,  # the release clips nothing
                    # the release's zero-shot run: batch 10, RMSprop until source dev F1 passes the switch
                    "batch_size": 10 if zero_shot else 30, "initial_optimizer": "rmsprop" if zero_shot else "sgd"})
        if self.loss_form == "eq9":
            if len(self.domain_weights) != 2:
                raise ValueError(f"--domain_weights takes 2 numbers (lambda_src lambda_tgt), got {self.domain_weights}.")
            (src, tgt), task = self.domain_weights, self.task_weight
            eq9 = [src * task, src, tgt * task, 0.0 if zero_shot else tgt]  # zero-shot: no target NER term
            if self.loss_weights is not None and list(self.loss_weights) != eq9:
                raise ValueError(f"--loss_weights {self.loss_weights} and --loss_form eq9 (which gives {eq9}) both set "
                                 "the weights: drop one.")
            self.loss_weights = eq9
        if zero_shot and self.loss_weights is None:
            self.loss_weights = list(CDLM_WEIGHTS_ZERO_SHOT)
        if self.loss_weights is not None and len(self.loss_weights) != 4:
            raise ValueError(f"--loss_weights takes 4 numbers (LM-src NER-src LM-tgt NER-tgt), got {self.loss_weights}.")
        if self.equal_text_fraction is not None and (
                not 0 < self.equal_text_fraction <= 1 or (self.source_text_fraction, self.target_text_fraction) != (1, 1)):
            raise ValueError(f"--equal_text_fraction {self.equal_text_fraction}: give a share in (0, 1], without "
                             "--source_text_fraction / --target_text_fraction (it sets both texts' size).")
        if zero_shot and self.variant != "final":
            raise ValueError(f"--variant {self.variant} is a supervised baseline (004, Table 3); zero-shot runs the "
                             "paper's model: drop --variant or use --mode supervised.")

    def weights(self, raw_text: bool) -> list[float]:
        """The loss weights: the given ones (or Eq. 9's, ``--loss_form eq9``), else the release's for this mode and
        whether raw text is read."""
        if self.loss_weights is not None:
            return list(self.loss_weights)
        return list(CDLM_WEIGHTS_RAW_TEXT if raw_text else CDLM_WEIGHTS_SHARED_TEXT)


CDLM_VARIANTS = {
    "final": ("domain-task", ("source_ner", "source_text", "target_text", "target_ner")),
    "co-lm": ("task", ("target_text", "target_ner")),
    "co-ner": ("domain", ("source_ner", "target_ner")),
    "mix-data": ("domain-task", ("source_ner", "source_text", "target_text", "target_ner")),
    "multitask-ner-lm": ("shared", ("source_ner", "source_text", "target_text", "target_ner")),
    "multitask-ner": ("shared", ("source_ner", "target_ner")),
}
"""variant -> (how the generator conditions the LSTM's parameters, the streams trained)
(004:856-868, 004:989-995, 004:1013-1028)."""


Texts = Sequence[str] | Sequence[Sequence[str]]
"""Unlabelled sentences: strings (split on white space) or word lists."""


def train_bilstm_crf(model: str | Path | None, target: TargetData, config: BiLSTMCRFTrainingConfig | None = None, *,
                     source: TargetData | None = None, target_text: Texts | None = None,
                     source_text: Texts | None = None, char_ngram_vectors: str | None = None,
                     source_model: str | Path | None = None) -> RNNResult:
    """Train a BiLSTM-CRF (or Coach) on ``target`` under ``config.schedule``: with CoNLL-2003 (``source``) and the
    upsampled target (joint), the target alone, CoNLL-2003 alone (source tags mapped into the target's label list
    by name), CoNLL-2003 then the target (pretrain-finetune), or the zero-shot SELF-TRAIN / DANN, which read
    ``target_text`` (default: the target's training sentences, their labels unused). DANN's domain classifier
    also reads ``source_text``, the source domain's raw text (004:1100-1103; default: CoNLL-2003's training
    sentences, the batches the CRF loss reads).

    ``model``: the word vectors the run starts from, a GloVe-format file, or ``None`` (random). ``source_model``
    (pretrain-finetune): an earlier source run's folder, continued instead of training the source stage.
    ``char_ngram_vectors``: the crossner / coach architectures' character n-gram vectors file. A target whose
    types CoNLL-2003 lacks is taken as ``finetune`` takes it: the schedules that train on the source learn its
    other types too, and the saved model never decodes them."""
    target, config, inputs = runner_call("train_bilstm_crf", model, target, config, BiLSTMCRFTrainingConfig,
                                         "bilstm-crf", model_is="word_vectors", char_ngram_vectors=char_ngram_vectors,
                                         source_model=source_model)
    check_char_ngrams(config.architecture, config.char_ngram_dim, inputs.char_ngram_vectors)
    if inputs.source_model and config.schedule != "pretrain-finetune":
        raise ValueError(f"train_bilstm_crf: source_model {inputs.source_model} is an earlier run's folder, which "
                         "only --schedule pretrain-finetune continues from.")
    if source_text and config.schedule != "dann":
        raise ValueError(f"source_text (--source_text) is read by --schedule dann only (its domain classifier), not "
                         f"by {config.schedule}: drop it or use --schedule dann.")
    with held_output_dir(config.output_dir, overwrite=config.overwrite_output_dir):  # until its outputs are written
        return RNNResult.of(config.output_dir, _train_bilstm_crf(target, config, source, target_text, source_text,
                                                                 inputs))


def _train_bilstm_crf(target_data: TargetData, args: BiLSTMCRFTrainingConfig, given_source: TargetData | None,
                      target_text: Texts | None, source_text: Texts | None = None,
                      inputs: PretrainedInputs = PretrainedInputs()) -> dict[str, Any]:
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    target_data = args.training_target(target_data)
    target, labels = target_data.dataset, target_data.labels
    if args.schedule == "pretrain-finetune":
        return _finetune_from_source(args, target_data, given_source, started, inputs)
    train = examples_of(target["train"])
    source: list[Example] = []
    conll = None
    zero_shot = args.schedule in ("source", "self-train", "dann")
    if args.schedule in ("joint", "source"):  # the target's types, then the source's it lacks (never decoded)
        labels = head_labels_with_source(labels, labels_for(SOURCE_DOMAIN), args.source_label_map)
        if len(labels) > len(target_data.labels) and args.architecture == "coach":
            raise ValueError(f"--architecture coach: {target_data.name} lacks CoNLL-2003's "
                             f"{', '.join(labels[len(target_data.labels):])}, which Coach's typing stage cannot "
                             "leave out at prediction; use --architecture lample or crossner, or --schedule target.")
    forbidden = list(range(len(target_data.labels), len(labels)))
    if args.schedule == "joint" or zero_shot:
        conll = source_domain(given_source)
        check_label_map(args.source_label_map, conll.labels, target_data.labels, conll.name, target_data.name)
        source = examples_of(source_in_target_space(labels, conll, args.source_subsample, args.seed,
                                                    label_map=args.source_label_map))
    # references repeated in the joint stream; the sentences are not copied
    train_stream = source + train * args.oversample_factor if args.schedule == "joint" else train if \
        args.schedule == "target" else source
    held_out = held_out_words(args, target, *([conll.dataset] if conll is not None else []))
    # the source schedule's vocabulary holds the target's training words too, as the model is tested there and
    # FINETUNE continues from it
    text: list[Example] = []
    if args.schedule in ("self-train", "dann"):  # the target's raw text: its words join the vocabulary as LM text does
        text = sentences_as_examples(target_text) if target_text else [Example(e.tokens, None) for e in train]
    # DANN's source side: the source domain's raw text when given (004:1100-1103), its words joining as the target's
    src_text = sentences_as_examples(source_text) if source_text else []
    vocab, vectors = vocab_and_vectors(args, [e.tokens for e in source + train] + held_out,
                                        [e.tokens for e in text + src_text], word_vectors=inputs.word_vectors,
                                        uniform_init=args.architecture == "lample")
    shape = ARCHITECTURES[args.architecture]
    common = dict(vocab_size=len(vocab), char_vocab_size=len(vocab.chars), word_dim=args.word_dim,
                  char_dim=args.char_dim, char_filters=args.char_filters, hidden_size=args.hidden_size,
                  dropout=args.dropout, loss_reduction=args.loss_reduction, num_layers=args.num_layers,
                  char_encoder=shape["char_encoder"], char_ngram_dim=args.char_ngram_dim,
                  dropout_after_lstm=shape["dropout_after_lstm"], num_labels=len(labels),
                  domain_classifier_hidden=args.domain_classifier_hidden if args.schedule == "dann" else 0,
                  id2label=dict(enumerate(labels)), label2id={t: i for i, t in enumerate(labels)})
    model_cls: type = BiLSTMCRFForTokenClassification
    if args.architecture == "coach":
        from crossner_hf.modeling.rnn.coach import CoachConfig, CoachForTokenClassification

        model_cls = CoachForTokenClassification
        model = model_cls(CoachConfig(entity_hidden_size=(args.word_dim + args.char_ngram_dim) // 2, **common))
    else:
        model = model_cls(BiLSTMCRFConfig(**common))
    model.embed.words.weight.data.copy_(vectors)
    if model.config.char_encoder == "ngram" and args.char_ngram_dim > 0:
        model.embed.ngrams.weight.data.copy_(load_char_ngram_vectors(inputs.char_ngram_vectors, vocab,
                                                                     args.char_ngram_dim, seed=args.seed))
    if args.architecture == "coach":
        from crossner_hf.modeling.rnn.coach import type_vectors

        ngrams = model.embed.ngrams.weight.data if model.embed.ngrams is not None else None
        model.type_vectors.copy_(type_vectors(model.types, vocab, model.embed.words.weight.data, ngrams, args.seed))
    # the zero-shot schedules never read target labels: the model is selected on CoNLL-2003's dev set (as CDLM's)
    dev = examples_of(source_in_target_space(labels, conll, split="validation", label_map=args.source_label_map)
                      if zero_shot
                      else target["validation"])
    test = examples_of(target["test"])
    data = {"dataset": target_data.record(), **inputs.record()}
    if args.schedule in ("self-train", "dann"):
        from crossner_hf.training.rnn import adaptation

        if args.schedule == "dann":
            return adaptation.dann(args, model, vocab, labels, source, text, dev, test, started, data,
                                   source_text=src_text or None)
        return adaptation.self_train(args, model, vocab, labels, source, text, dev, test, started, data)
    return _train_tagger(args, model, vocab, labels, train_stream, dev, test, started, data, forbidden=forbidden,
                         dev_forbidden=forbidden if args.schedule == "joint" else ())


def _train_tagger(args, model, vocab, labels, train_stream, dev, test, started, data, extra=None, *,
                  forbidden: Sequence[int] = (), dev_forbidden: Sequence[int] = ()) -> dict[str, Any]:
    """One BiLSTM-CRF or Coach run over ``train_stream``, selected on ``dev``, scored on ``test``; ``data``: the
    dataset record (results.json's ``dataset``, part of the run's identity). ``forbidden``: tag ids the saved model
    never decodes (the source's types the target lacks); ``dev_forbidden``: those masked when ``dev`` is scored
    (the target's dev set; the source's keeps them)."""
    stream = Stream(train_stream, args.batch_size, args.seed)
    out = Path(args.output_dir)

    def step(m, batches, device):
        return m(**tensors(vocab, batches["train"], device)).loss

    def dev_eval(m) -> float:
        with tags_forbidden(m, dev_forbidden):
            return evaluate(m, vocab, dev, labels)["overall_f1"]

    state = run_loop(model=model, vocab=vocab, streams={"train": stream}, step_losses=step,
                     make_optimizer=make_optimizer_factory(args), args=args, identity=data,
                     dev_eval=dev_eval if dev_forbidden else lambda m: evaluate(m, vocab, dev, labels)["overall_f1"],
                     output_dir=out, steps_per_epoch=stream.batches_per_pass())
    return finish_run(type(model), args, vocab, labels, test, out, state, started,
                      {"model": "coach" if args.architecture == "coach" else "bilstm-crf",
                       "n_train_sentences": len(train_stream), **data, **(extra or {})}, forbidden=forbidden)


def _finetune_from_source(args: BiLSTMCRFTrainingConfig, target: TargetData, source: TargetData | None,
                          started: float, inputs: PretrainedInputs = PretrainedInputs()) -> dict[str, Any]:
    """FINETUNE (004:848-851): the ``source`` schedule's model (run into ``OUT/source``, or reused when its results
    exist; or ``inputs.source_model``, an earlier run's folder), then the target with the output layer and CRF
    drawn anew, as the two label sets do not share them (004:866-868): the target's alone, whatever source types
    the source stage learnt beside them."""
    from dataclasses import replace

    out = Path(args.output_dir)
    folder = Path(inputs.source_model) if inputs.source_model else out / "source"
    phase = replace(args, schedule="source", output_dir=str(out / "source"), resume_from_checkpoint=True,
                    few_shot=None)
    if not inputs.source_model and not (out / "source" / "results.json").is_file():
        _train_bilstm_crf(target, phase, source, None, inputs=replace(inputs, source_model=None))
    source_results = read_results(folder).results  # an earlier run's folder may be of an older schema
    model = BiLSTMCRFForTokenClassification.from_pretrained(folder)
    vocab = WordCharVocab.load(folder)
    torch.manual_seed(args.seed)
    labels = list(target.labels)
    if model.config.num_labels != len(labels):  # the source stage's head had the source's extra types
        model.classifier = torch.nn.Linear(model.classifier.in_features, len(labels))
        model.crf = type(model.crf)(len(labels))
        model.config.num_labels = len(labels)
        model.config.id2label, model.config.label2id = dict(enumerate(labels)), {t: i for i, t in enumerate(labels)}
    else:
        model.classifier.reset_parameters()
        model.crf.reset_parameters()
    data = target.dataset
    return _train_tagger(args, model, vocab, labels, examples_of(data["train"]),
                         examples_of(data["validation"]), examples_of(data["test"]), started,
                         {"dataset": target.record(), **inputs.record()},
                         {"source_phase": {"dev_f1": source_results["dev"]["overall_f1"],
                                           "test_f1": source_results["test"]["overall_f1"]}})


def _share(texts: list, fraction: float, seed: int, flag: str) -> list:
    """``fraction`` of ``texts`` drawn with ``seed``: :func:`crossner_hf.data.target.share`, the one home of draws."""
    return share(texts, fraction, seed, flag)


def _draw(texts: list, n: int, seed: int) -> list:
    """``n`` of ``texts`` drawn with ``seed``, in their order: :func:`crossner_hf.data.target.draw_texts`."""
    return draw_texts(texts, n, seed)


def train_cdlm(model: str | Path | None, target: TargetData, config: CDLMTrainingConfig | None = None, *,
               source: TargetData | None = None, source_text: Texts | None = None,
               target_text: Texts | None = None) -> RNNResult:
    """Train CDLM on ``target``: supervised (the four streams: source and target NER and LM) or zero-shot (no
    target labels; the target tagged with theta(target, NER)). ``model``: ``None`` (random word vectors) or a
    GloVe-format file of word vectors. ``source``: CoNLL-2003 (default: CrossNER's copy); ``source_text`` /
    ``target_text``: the LMs' raw text (default: the source's training sentences and the target's ``lm_splits``).
    Supervised CDLM has a head and CRF per domain, so a target with its own types trains as it is."""
    target, config, inputs = runner_call("train_cdlm", model, target, config, CDLMTrainingConfig, "cdlm",
                                         model_is="word_vectors")
    with held_output_dir(config.output_dir, overwrite=config.overwrite_output_dir):  # until its outputs are written
        return RNNResult.of(config.output_dir, _train_cdlm(target, config, source, source_text, target_text, inputs))


def _train_cdlm(target_data: TargetData, args: CDLMTrainingConfig, given_source: TargetData | None,
                given_source_text: Texts | None, given_target_text: Texts | None,
                inputs: PretrainedInputs = PretrainedInputs()) -> dict[str, Any]:
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    zero_shot = args.mode == "zero-shot"
    # the LM reads the whole training text whatever --few_shot keeps of the labels (004:754-755): Figure 6 varies
    # the labelled sentences only, and its nearly unsupervised end still has the target's text (004:1048-1050)
    full_target = target_data.dataset
    target_data = args.training_target(target_data)
    target = target_data.dataset
    source = source_domain(given_source).dataset
    src_train = source["train"]
    if args.source_subsample is not None:
        src_train = draw_rows(src_train, args.source_subsample, args.seed)  # the one home of draws
    source_ner = examples_of(src_train)
    source_text = sentences_as_examples(given_source_text) if given_source_text else [
        Example(e.tokens, None) for e in source_ner]
    if given_target_text:
        target_text = sentences_as_examples(given_target_text)
    else:
        target_text = [Example(list(t), None) for split in args.lm_splits for t in full_target[split]["tokens"]]
    source_text = _share(source_text, args.source_text_fraction, args.seed, "--source_text_fraction")
    target_text = _share(target_text, args.target_text_fraction, args.seed + 1, "--target_text_fraction")
    if args.equal_text_fraction is not None:  # Figure 8's both-varying line: equal amounts (004:1154-1156)
        n = max(1, round(args.equal_text_fraction * min(len(source_text), len(target_text))))
        source_text, target_text = _draw(source_text, n, args.seed), _draw(target_text, n, args.seed + 1)
    lm_sizes = {"lm_text_sentences": {"source": len(source_text), "target": len(target_text)}}  # results.json's
    weights = args.weights(raw_text=bool(given_source_text or given_target_text))
    target_ner = [] if zero_shot else examples_of(target["train"])
    ner_words = [e.tokens for e in source_ner + target_ner] + held_out_words(args, target, source)
    vocab, vectors = vocab_and_vectors(args, ner_words, [e.tokens for e in source_text + target_text],
                                        word_vectors=inputs.word_vectors)
    src_labels, tgt_labels = labels_for(SOURCE_DOMAIN), target_data.labels
    config = CDLMConfig(vocab_size=len(vocab), char_vocab_size=len(vocab.chars), word_dim=args.word_dim,
                        char_dim=args.char_dim, char_filters=args.char_filters, hidden_size=args.hidden_size,
                        dropout=args.dropout, loss_reduction=args.loss_reduction, lm_negatives=args.lm_negatives,
                        lm_loss_reduction=args.lm_loss_reduction, generator=CDLM_VARIANTS[args.variant][0],
                        num_labels=len(src_labels), id2label=dict(enumerate(src_labels)),
                        label2id={t: i for i, t in enumerate(src_labels)}, target_num_labels=len(tgt_labels),
                        target_id2label=dict(enumerate(tgt_labels)))
    model = CDLMForTokenClassification(config)
    model.embed.words.weight.data.copy_(vectors)
    if args.variant == "mix-data":  # both LMs read the same mixed text: no domain contrast (004:1025-1028, 004:1035-1040)
        source_text = target_text = source_text + target_text
    streams = {"source_ner": Stream(source_ner, args.batch_size, args.seed),
               "source_text": Stream(source_text, args.batch_size, args.seed + 1),
               "target_text": Stream(target_text, args.batch_size, args.seed + 2)}
    if not zero_shot:
        streams["target_ner"] = Stream(target_ner, args.target_batch_size, args.seed + 3)
    kept = CDLM_VARIANTS[args.variant][1]
    # an epoch is a pass over the source NER data, or over the target's when the variant has no source NER
    epoch_stream = streams["source_ner" if "source_ner" in kept else "target_ner"]
    streams = {name: stream for name, stream in streams.items() if name in kept}
    from crossner_hf.training.rnn.loop import cdlm_step

    out = Path(args.output_dir)
    if zero_shot:  # selection on source dev: no target labels exist
        dev, dev_labels, dev_domain = examples_of(source["validation"]), src_labels, SOURCE
    else:
        dev, dev_labels, dev_domain = examples_of(target["validation"]), tgt_labels, TARGET

    def switch(name: str, f1: float) -> str:
        return "sgd" if zero_shot and name == "rmsprop" and f1 > args.sgd_switch_f1 else name

    data = {"dataset": target_data.record(), **inputs.record(), "loss_weights": weights,
            "raw_text": {"source": given_source_text is not None, "target": given_target_text is not None}}
    state = run_loop(model=model, vocab=vocab, streams=streams,
                     step_losses=cdlm_step(weights, zero_shot, vocab), make_optimizer=make_optimizer_factory(args),
                     args=args, identity=data, dev_eval=lambda m: evaluate(m, vocab, dev, dev_labels, domain=dev_domain,
                                                                           crf_domain=dev_domain)["overall_f1"],
                     output_dir=out, steps_per_epoch=epoch_stream.batches_per_pass(), switch_optimizer=switch)
    test = examples_of(target["test"])
    if zero_shot:
        # the target tagged by theta(target, NER) with the source head and CRF: source label names
        return finish_run(CDLMForTokenClassification, args, vocab, _zero_shot_names(src_labels, tgt_labels), test, out,
                          state, started, {"model": "cdlm", "mode": "zero-shot", **data, **lm_sizes}, domain=TARGET,
                          crf_domain=SOURCE, gold_names=tgt_labels)
    return finish_run(CDLMForTokenClassification, args, vocab, tgt_labels, test, out, state, started,
                      {"model": "cdlm", "mode": "supervised", "variant": args.variant, **data, **lm_sizes},
                      domain=TARGET, crf_domain=TARGET)


def _zero_shot_names(src_labels: list[str], tgt_labels: list[str]) -> list[str]:
    """Source tag ids -> names, checking that they exist in the target list (CoNLL types do in every domain)."""
    missing = [t for t in src_labels if t not in tgt_labels]
    if missing:
        raise ValueError(f"Zero-shot tagging predicts source tags {missing} that the target label list lacks.")
    return src_labels
