"""SpanMarker on a CrossNER split, run inside the peers benchmark's own virtual environment.

SpanMarker (tomaarsen/SpanMarkerNER) pins ``transformers<5``, so ``benchmarks/peers.py`` runs this
file with a separate interpreter; it reads the split from a JSON file (words and tags, written by
the benchmark from ``crossner_hf.data.target.load_target``) and writes word-level BIO predictions of the
test split, training seconds and prediction seconds to a JSON file. Scoring happens in the
benchmark, with this project's metric, on the same words.

Usage (by benchmarks/peers.py): python spanmarker_run.py SPLIT.json ENCODER OUT.json --seed 555 --epochs 10
"""

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("split")
    parser.add_argument("encoder")
    parser.add_argument("output")
    parser.add_argument("--seed", type=int, default=555)
    parser.add_argument("--epochs", type=float, default=10)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--max_steps", type=int, default=-1)
    args = parser.parse_args()

    import torch
    from datasets import Dataset
    from span_marker import SpanMarkerModel, Trainer
    from transformers import TrainingArguments, set_seed

    torch.set_num_threads(torch.get_num_threads())
    data = json.load(open(args.split))
    labels = data["labels"]
    set_seed(args.seed)
    train = Dataset.from_dict({"tokens": data["train"]["tokens"],
                               "ner_tags": [[labels.index(t) for t in s] for s in data["train"]["tags"]]})
    model = SpanMarkerModel.from_pretrained(args.encoder, labels=labels, model_max_length=256, entity_max_length=8)
    training_args = TrainingArguments(
        output_dir="spanmarker-out", learning_rate=args.learning_rate, per_device_train_batch_size=args.batch_size,
        num_train_epochs=args.epochs, max_steps=args.max_steps, warmup_ratio=0.1, weight_decay=0.01,
        save_strategy="no", eval_strategy="no", logging_strategy="epoch", report_to="none", seed=args.seed,
        use_cpu=True, disable_tqdm=True)
    trainer = Trainer(model=model, args=training_args, train_dataset=train)
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start

    model.eval()
    sentences = data["test"]["tokens"]
    start = time.perf_counter()
    spans = model.predict(sentences, batch_size=32, show_progress_bar=False)
    predict_seconds = time.perf_counter() - start
    predictions = []
    for words, found in zip(sentences, spans):
        tags = ["O"] * len(words)
        for entity in sorted(found, key=lambda e: -e["score"]):  # higher-scoring spans win overlaps
            lo, hi = entity["word_start_index"], entity["word_end_index"]
            if all(t == "O" for t in tags[lo:hi]):
                tags[lo:hi] = [f"B-{entity['label']}"] + [f"I-{entity['label']}"] * (hi - lo - 1)
        predictions.append(tags)
    json.dump({"predictions": predictions, "train_seconds": train_seconds, "predict_seconds": predict_seconds,
               "versions": {"span_marker": __import__("span_marker").__version__,
                            "transformers": __import__("transformers").__version__}}, open(args.output, "w"))


if __name__ == "__main__":
    main()
