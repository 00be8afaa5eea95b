"""Statistics of the CrossNER data: the paper's Table 1 and the vocabulary overlap (Figure 1).

Usage:
    crossner-hf stats --data_dir ../shared/data/crossner --output_dir crossner_stats
    crossner-hf stats --configs politics music --top_k 1000

Prints sentences and entities per type per split, and the intersection over union (%) of
the configs' top-K lower-cased words (scikit-learn's English stopwords and letterless
tokens excluded); writes ``stats.json`` and ``vocabulary_overlap.png`` to ``--output_dir``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.data.labels import CONFIGS
from crossner_hf.commands import make_command_parser


@dataclass
class StatsArguments:
    data_dir: str | None = field(
        default=None, metadata={"help": "CrossNER raw files (default: $CROSSNER_DATA_DIR)."}
    )
    configs: list[str] = field(
        default_factory=lambda: list(CONFIGS), metadata={"help": "Configs to describe.", "choices": list(CONFIGS)}
    )
    top_k: int = field(default=5000, metadata={"help": "Vocabulary size per config for the overlap."})
    output_dir: str = field(default="crossner_stats", metadata={"help": "Where the PNG and JSON go."})


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "stats", (StatsArguments,), prog="crossner-hf stats",
        help="print Table 1 and the vocabulary overlap, draw the heatmap", description=__doc__,
    )


def main(args: StatsArguments) -> int:
    from crossner_hf.outputs import atomic_output, check_writable

    check_writable(args.output_dir, "--output_dir", folder=True)
    from crossner_hf.data.target import load_crossner
    from crossner_hf.evaluation.plots import plot_vocabulary_overlap
    from crossner_hf.data.stats import entity_counts, format_overlap, format_table1, sentence_counts, vocabulary_overlap

    data = {c: load_crossner(c, args.data_dir) for c in args.configs}
    sentences = {c: sentence_counts(d) for c, d in data.items()}
    entities = {c: entity_counts(d, c) for c, d in data.items()}
    corpora = {c: [t for split in d.values() for t in split["tokens"]] for c, d in data.items()}
    overlap = vocabulary_overlap(corpora, top_k=args.top_k)
    print(format_table1(sentences, entities))
    print(f"Vocabulary overlap (%): IoU of top-{args.top_k} words, stopwords excluded")
    print(format_overlap(overlap))
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = plot_vocabulary_overlap(overlap, out / "vocabulary_overlap.png", top_k=args.top_k)
    with atomic_output(out / "stats.json") as tmp:
        tmp.write_text(json.dumps({"sentences": sentences, "entities": entities, "vocabulary_overlap": overlap},
                                  indent=2))
    print(f"Wrote {png} and {out / 'stats.json'}")
    return 0
