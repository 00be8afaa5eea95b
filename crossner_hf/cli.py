"""The ``crossner-hf`` command. Thin: it parses arguments and calls the library.

    crossner-hf stats [--data_dir DIR] [--output_dir OUT]      # Table 1 + vocabulary overlap
    crossner-hf build-dataset --data_dir DIR --output_dir OUT  # Parquet + card for load_dataset
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from .labels import CONFIGS


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

    build = sub.add_parser("build-dataset", help="run dataset_scripts/crossner.py (flags passed through)")
    build.add_argument("rest", nargs=argparse.REMAINDER)
    build.set_defaults(func=_build_dataset)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
