"""Benchmark: word-level prediction, preprocessing and metric speed on CrossNER politics.

Run: HF_HUB_OFFLINE=1 python benchmarks/tokenization.py [--repeats 3] [--hidden 256 --layers 4]
Prints a table of medians; ratios are measured side by side in the same process.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer

from crossner_hf.data import conll
from crossner_hf.data.labels import LABELS
from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.testing import make_tiny_bert
from crossner_hf.inference.predict import predict_tags
from crossner_hf.data.tokenization import tokenize_and_align

ROOT = Path(__file__).resolve().parents[1]


def read_conll(path: Path) -> tuple[list[list[str]], list[list[str]]]:
    sents = conll.read_conll(path, LABELS["politics"])
    return [s["tokens"] for s in sents], [s["ner_tags"] for s in sents]


def timed(fns: dict, repeats: int) -> dict[str, tuple[float, object]]:
    """Median seconds of each function, run round-robin so load changes hit all alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    outs: dict[str, object] = {}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            outs[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {k: (statistics.median(v), outs[k]) for k, v in times.items()}


def naive_predict(model, tokenizer, sentences, names, batch_size, padding):
    """The usual loop: batches in corpus order, truncation at 512, first sub-word argmax."""
    model.eval()
    out = []
    with torch.inference_mode():
        for start in range(0, len(sentences), batch_size):
            batch = sentences[start : start + batch_size]
            enc = tokenizer(batch, is_split_into_words=True, truncation=True, max_length=512,
                            padding=padding, return_tensors="pt")
            ids = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits.argmax(-1)
            for j, words in enumerate(batch):
                seen, tags = set(), ["O"] * len(words)  # words cut by truncation keep "O"
                for pos, w in enumerate(enc.word_ids(j)):
                    if w is not None and w not in seen:
                        seen.add(w)
                        tags[w] = names[int(ids[j, pos])]
                out.append(tags)
    return out


def hf_course_tokenize(tokenizer, sentences, tags):
    enc = tokenizer(sentences, is_split_into_words=True, truncation=True)
    labels = []
    for i, t in enumerate(tags):
        prev, row = None, []
        for w in enc.word_ids(i):
            row.append(-100 if w is None or w == prev else t[w])
            prev = w
        labels.append(row)
    enc["labels"] = labels
    return enc


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, )
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "crossner"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads; 1 keeps timings stable when other work shares the CPU")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = LABELS["politics"]
    data = Path(args.data) / "politics"
    test_words, test_tags = read_conll(data / "test.txt")
    all_words, all_tags = [], []
    for split in ("train", "dev", "test"):
        w, t = read_conll(data / f"{split}.txt")
        all_words += w
        all_tags += t
    tag_ids = [[names.index(x) for x in s] for s in all_tags]
    vocab = sorted({w.lower() for s in all_words for w in s})
    path = make_tiny_bert(tempfile.mkdtemp(), vocab, hidden_size=args.hidden, num_layers=args.layers)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForTokenClassification.from_pretrained(path, num_labels=len(names))
    n_words = sum(map(len, test_words))
    print(f"politics test: {len(test_words)} sentences, {n_words} words; BERT hidden={args.hidden} "
          f"layers={args.layers}; batch {args.batch_size}; {args.threads} thread(s); median of {args.repeats}")

    res = timed({
        "ours": lambda: predict_tags(model, tokenizer, test_words, batch_size=args.batch_size),
        "dyn": lambda: naive_predict(model, tokenizer, test_words, names, args.batch_size, True),
        "max": lambda: naive_predict(model, tokenizer, test_words, names, args.batch_size, "max_length"),
    }, args.repeats)
    (t_ours, ours), (t_dyn, dyn), (t_max, _) = res["ours"], res["dyn"], res["max"]
    agree = sum(a == b for x, y in zip(ours, dyn) for a, b in zip(x, y)) / n_words
    rows = [
        ("predict_tags (sorted, dynamic padding, windows)", t_ours, 1.0),
        ("corpus order, dynamic padding, truncation", t_dyn, t_dyn / t_ours),
        ("corpus order, pad to 512, truncation", t_max, t_max / t_ours),
    ]
    res = timed({
        "ours": lambda: tokenize_and_align({"tokens": all_words, "ner_tags": tag_ids}, tokenizer),
        "hf": lambda: hf_course_tokenize(tokenizer, all_words, tag_ids),
    }, max(args.repeats, 5))
    t_tok, t_hf = res["ours"][0], res["hf"][0]
    rows += [
        (f"tokenize_and_align, politics all splits ({len(all_words)} sent.)", t_tok, 1.0),
        ("HF-course tokenize_and_align_labels (truncation)", t_hf, t_hf / t_tok),
    ]
    rng = random.Random(0)
    noisy = [[t if rng.random() > 0.1 else rng.choice(names) for t in s] for s in test_tags]
    t_metric, m = timed({"m": lambda: compute_ner_metrics(test_tags, noisy)}, max(args.repeats, 5))["m"]
    rows.append(("compute_ner_metrics, politics test (conlleval + strict)", t_metric, 1.0))

    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'median s':>9}  {'x ours':>7}")
    for name, t, ratio in rows:
        print(f"{name:<{width}}  {t:>9.3f}  {ratio:>7.2f}")
    print(f"word-level agreement of predict_tags with the plain loop: {agree:.4f}; "
          f"noisy-prediction F1 {m['overall_f1']:.4f}")


if __name__ == "__main__":
    main()
