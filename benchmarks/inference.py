"""Benchmark: tagging politics test on the CPU, the stock pipeline against our Tagger on PyTorch, ONNX fp32 and int8.

Run (the demo's model, `bash .ci/demo`; any trained folder works):
    HF_HUB_OFFLINE=1 python benchmarks/inference.py --model outputs/demo-politics-direct \\
        --threads 1,2 --repeats 3 --markdown inference-table.md

One process, one model, one input: the 651 CrossNER politics test sentences. The model is exported
once (``crossner_hf.publishing.onnx_export.export_onnx``: fp32, and int8 weights) into ``--onnx_dir``.
Side by side, round-robin, medians of ``--repeats`` runs, for each thread count:

- ``transformers.pipeline("token-classification", aggregation_strategy="simple")`` on the sentences as
  text (words joined by spaces), batch 1 (its default) and batch 32; its entities are mapped back to
  words (a word inside an entity's character span takes its type) to score it;
- ``Tagger.from_pretrained(model)``: PyTorch; ``Tagger.from_pretrained(onnx)``: ONNX Runtime fp32 and
  int8. Word lists in, length-sorted batches of 32 windows, BIO-constrained Viterbi (the model's
  recorded decoding), tags out.
- the int8 graph in padded batches of 32, as the fp32 graph runs: what the Tagger's one window at a time
  (batch-independent int8 tags) costs or saves against it.

F1 is conlleval's on the test split. Load time: median of 3 loads in this process. Peak memory: the
maximum resident set of a fresh child process (forkserver) that loads the method and tags the split
once on one thread (Python, the libraries and the model included).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _words_and_gold(data_dir: str, limit: int | None) -> tuple[list[list[str]], list[list[str]]]:
    from crossner_hf.data.conll import read_conll
    from crossner_hf.data.labels import LABELS

    sents = read_conll(Path(data_dir) / "politics" / "test.txt", LABELS["politics"])[:limit]
    return [s["tokens"] for s in sents], [s["ner_tags"] for s in sents]


def pipeline_tags(words: list[str], entities: list[dict[str, Any]]) -> list[str]:
    """Word tags from the pipeline's entities over ``" ".join(words)``: a word overlapping an entity takes its type
    (B- on the first such word of the entity)."""
    starts, pos = [], 0
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    tags = ["O"] * len(words)
    for e in entities:
        inside = [i for i, s in enumerate(starts) if s < e["end"] and s + len(words[i]) > e["start"]]
        for k, i in enumerate(inside):
            tags[i] = f"{'B' if k == 0 else 'I'}-{e['entity_group']}"
    return tags


def _loaders(model: str, onnx: dict[str, str], threads: int) -> dict[str, Callable[[], Any]]:
    """Method name -> a loader returning ``tag(words) -> tags`` (each loads its model anew)."""
    from crossner_hf import Tagger

    def stock(batch: int) -> Callable[[], Any]:
        def load() -> Any:
            from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

            pipe = pipeline("token-classification", model=AutoModelForTokenClassification.from_pretrained(model),
                            tokenizer=AutoTokenizer.from_pretrained(model), aggregation_strategy="simple",
                            device=-1)

            def tag(words: list[list[str]]) -> list[list[str]]:
                texts = [" ".join(w) for w in words]
                out = pipe(texts, batch_size=batch) if batch > 1 else pipe(texts)
                return [pipeline_tags(w, e) for w, e in zip(words, out)]
            return tag
        return load

    def ours(path: str) -> Callable[[], Any]:
        def load() -> Any:
            tagger = Tagger.from_pretrained(path, threads=threads)
            return lambda words: tagger.tag(words, batch_size=32)
        return load

    def padded_int8() -> Any:
        # what the int8 graph would give in padded batches of 32, as the fp32 one runs: faster or not, its tags
        # depend on the batch (dynamic int8 takes its activation scales from the whole padded tensor), which is
        # why the Tagger feeds an int8 graph one window at a time; this row prices that choice
        tagger = Tagger.from_pretrained(onnx["int8"], threads=threads)
        tagger.model.__class__ = type("PaddedBatchInt8", (type(tagger.model),), {"one_window_at_a_time": False})
        return lambda words: tagger.tag(words, batch_size=32)

    return {
        "transformers pipeline (simple), batch 1": stock(1),
        "transformers pipeline (simple), batch 32": stock(32),
        "Tagger, PyTorch": ours(model),
        "Tagger, ONNX Runtime fp32": ours(onnx["fp32"]),
        "Tagger, ONNX Runtime int8": ours(onnx["int8"]),
        "ONNX Runtime int8 in padded batches of 32 (tags depend on the batch; not a Tagger mode)": padded_int8,
    }


def _peak_child(model: str, onnx: dict[str, str], name: str, data_dir: str, limit: int | None) -> int:
    """Peak resident memory (KiB) of this child after loading ``name`` and tagging the split on one thread."""
    import torch

    torch.set_num_threads(1)
    words, _ = _words_and_gold(data_dir, limit)
    _loaders(model, onnx, 1)[name]()(words)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(ROOT / "outputs" / "demo-politics-direct"),
                        help="a trained token-classification folder (default: the demo's, `bash .ci/demo`)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per method and thread count (median reported)")
    parser.add_argument("--threads", default="1,2", help="comma-separated CPU thread counts")
    parser.add_argument("--onnx_dir", default=None, help="where the exports go (default: a temporary folder)")
    parser.add_argument("--data_dir", default=str(ROOT.parent / "shared" / "data" / "crossner"),
                        help="CrossNER data folder")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N test sentences")
    parser.add_argument("--no_memory", action="store_true", help="skip the peak-memory children")
    parser.add_argument("--markdown", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args(argv)

    import torch

    from crossner_hf.evaluation.metrics import compute_ner_metrics
    from crossner_hf.publishing.onnx_export import export_onnx

    if not (Path(args.model) / "config.json").is_file():
        parser.error(f"--model {args.model}: no trained model folder there; run `bash .ci/demo` or pass one.")
    words, gold = _words_and_gold(args.data_dir, args.limit)
    onnx_root = Path(args.onnx_dir or tempfile.mkdtemp(prefix="bench-onnx-"))
    onnx = {}
    for precision in ("fp32", "int8"):
        folder = onnx_root / precision
        if not (folder / "README.md").is_file():
            export_onnx(args.model, folder, quantize=None if precision == "fp32" else "int8", evaluate=False)
        onnx[precision] = str(folder)
    thread_counts = [int(t) for t in args.threads.split(",")]
    rows: dict[str, dict[str, Any]] = {}
    for threads in thread_counts:
        torch.set_num_threads(threads)
        loaders = _loaders(args.model, onnx, threads)
        taggers, loads = {}, {}
        for name, load in loaders.items():
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                taggers[name] = load()
                seconds.append(time.perf_counter() - start)
            loads[name] = statistics.median(seconds)
            taggers[name](words[:16])  # warm-up: first allocations, tokenizer caches
        times: dict[str, list[float]] = {name: [] for name in taggers}
        f1: dict[str, float] = {}
        for _ in range(args.repeats):
            for name, tag in taggers.items():
                start = time.perf_counter()
                pred = tag(words)
                times[name].append(time.perf_counter() - start)
                f1[name] = compute_ner_metrics(gold, pred)["overall_f1"]
        for name in taggers:
            row = rows.setdefault(name, {"f1": f1[name], "load": loads[name], "speed": {}})
            row["speed"][threads] = len(words) / statistics.median(times[name])
    if not args.no_memory:
        ctx = multiprocessing.get_context("forkserver")
        with ctx.Pool(1, maxtasksperchild=1) as pool:
            for name in rows:
                rows[name]["peak_mib"] = pool.apply(_peak_child, (args.model, onnx, name, args.data_dir,
                                                                  args.limit)) / 1024
    stock = {t: max(rows[n]["speed"][t] for n in rows if n.startswith("transformers")) for t in thread_counts}
    header = (f"| method | test F1 | " + " | ".join(f"sent/s, {t} thread{'s' * (t > 1)} (x best pipeline)"
                                                    for t in thread_counts)
              + " | load s | peak MiB |")
    lines = [f"{len(words)} politics test sentences, model {Path(args.model).name}, median of {args.repeats} "
             f"runs per cell, torch {torch.__version__}", "", header,
             "|---|---:|" + "---:|" * len(thread_counts) + "---:|---:|"]
    for name, row in rows.items():
        speeds = " | ".join(f"{row['speed'][t]:.1f} ({row['speed'][t] / stock[t]:.2f}x)" for t in thread_counts)
        peak = f"{row['peak_mib']:.0f}" if "peak_mib" in row else "–"
        lines.append(f"| {name} | {100 * row['f1']:.2f} | {speeds} | {row['load']:.2f} | {peak} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
