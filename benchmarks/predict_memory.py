"""Benchmark: `crossner-hf predict` memory as its input grows (issue 39: it must stay flat).

Run: python benchmarks/predict_memory.py [--sizes_mb 2 20] [--model FOLDER] [--data_dir ../shared/data/crossner]

Each input is CrossNER politics sentences repeated to the size, one a line; each row runs `crossner-hf
predict --input_file IN --output OUT` in a fresh process and reports its peak resident memory (ru_maxrss of
the child), the wall time and the output's lines. Beside it, the same input read whole before tagging (the
`predict` of before issue 39, reproduced by tagging every line in one call): the peer whose memory grew with
the input. The model defaults to a tiny random BERT token classifier (memory, not accuracy, is measured;
the model's own memory is a constant that a larger model only shifts).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

WHOLE = """
import sys, json
from crossner_hf.inference.tagger import Tagger
tagger = Tagger.from_pretrained(sys.argv[1])
lines = open(sys.argv[2], encoding="utf-8").read().split("\\n")[:-1]
with open(sys.argv[3], "w", encoding="utf-8") as out:
    for t in tagger.tag_texts(lines, batch_size=32):
        out.write(json.dumps({"text": t["text"], "entities": t["entities"]}) + "\\n")
"""

MEASURE = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
           "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)")


def _tiny_model(folder: Path, data_dir: Path) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    from crossner_hf.data.labels import LABELS
    from crossner_hf.testing import make_tiny_bert

    words = {w.lower() for line in (data_dir / "politics" / "train.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() for w in line.split("\t")[:1]}
    base = make_tiny_bert(folder / "base", sorted(words))
    labels = LABELS["politics"]
    config = BertConfig.from_pretrained(base, num_labels=len(labels), id2label=dict(enumerate(labels)),
                                        label2id={t: i for i, t in enumerate(labels)})
    model = BertForTokenClassification.from_pretrained(base, config=config)
    model.save_pretrained(folder / "model")
    AutoTokenizer.from_pretrained(base).save_pretrained(folder / "model")
    return folder / "model"


def _input(path: Path, mb: float, data_dir: Path) -> int:
    from crossner_hf.data.conll import read_conll

    sentences = [" ".join(s["tokens"]) for s in read_conll(data_dir / "politics" / "train.txt", None)]
    target, written, n = int(mb * 1_000_000), 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            line = sentences[n % len(sentences)] + "\n"
            f.write(line)
            written += len(line.encode("utf-8"))
            n += 1
    return n


def _run(argv: list[str]) -> tuple[float, float]:
    res = subprocess.run([sys.executable, "-c", MEASURE, *argv], check=True, capture_output=True, text=True)
    kb, seconds = res.stdout.split()
    return int(kb) / 1024, float(seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes_mb", type=float, nargs="+", default=[2, 20], help="input sizes (MB)")
    parser.add_argument("--model", default=None, help="a trained folder (default: a tiny random BERT)")
    parser.add_argument("--data_dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "crossner"))
    parser.add_argument("--skip_whole", action="store_true", help="only the streaming predict")
    args = parser.parse_args(argv)
    data_dir = Path(args.data_dir)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = Path(args.model) if args.model else _tiny_model(tmp, data_dir)
        for mb in args.sizes_mb:
            src = tmp / f"in-{mb}.txt"
            n = _input(src, mb, data_dir)
            out = tmp / f"out-{mb}.jsonl"
            peak, seconds = _run([sys.executable, "-m", "crossner_hf.cli", "predict", "--model", str(model),
                                  "--input_file", str(src), "--output", str(out)])
            lines = sum(1 for _ in open(out, encoding="utf-8"))
            rows.append({"input_mb": mb, "lines": n, "runner": "crossner-hf predict (streaming)",
                         "peak_rss_mb": round(peak), "seconds": round(seconds, 1), "output_lines": lines})
            if not args.skip_whole:
                peak, seconds = _run([sys.executable, "-c", WHOLE, str(model), str(src), str(tmp / "whole.jsonl")])
                rows.append({"input_mb": mb, "lines": n, "runner": "read whole, then tag (before)",
                             "peak_rss_mb": round(peak), "seconds": round(seconds, 1), "output_lines": n})
            print(json.dumps(rows[-2:] if not args.skip_whole else rows[-1:]), flush=True)
    print(f"\n{'input MB':>8}  {'lines':>7}  {'runner':<34}  {'peak RSS MB':>11}  {'seconds':>8}")
    for r in rows:
        print(f"{r['input_mb']:>8g}  {r['lines']:>7}  {r['runner']:<34}  {r['peak_rss_mb']:>11}  {r['seconds']:>8}")
    stream = [r for r in rows if r["runner"].startswith("crossner")]
    if len(stream) >= 2:
        print(f"\nstreaming peak, largest / smallest input: {stream[-1]['peak_rss_mb'] / stream[0]['peak_rss_mb']:.2f}x "
              f"for {stream[-1]['input_mb'] / stream[0]['input_mb']:g}x the input")


if __name__ == "__main__":
    main()
