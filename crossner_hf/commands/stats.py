"""Statistics of the CrossNER data: the paper's Table 1 and the vocabulary overlap (Figure 1).

Usage:
    crossner-hf stats --data_dir ../shared/data/crossner --output_dir crossner_stats
    crossner-hf stats --configs politics music --top_k 1000
    crossner-hf stats --configs politics music --corpora politics=pol.txt music=mus.txt

Prints sentences and entities per type per split, and the intersection over union (%) of
the configs' top-K lower-cased words (scikit-learn's English stopwords and letterless
tokens excluded); writes ``stats.json`` and ``vocabulary_overlap.png`` to ``--output_dir``.
With ``--corpora`` it also measures the overlap of the unlabeled domain corpora as the
appendix does (a sample of 150K paragraphs each, top-50K words), into ``corpus_overlap.png``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.data.labels import CONFIGS
from crossner_hf.arguments import make_command_parser


@dataclass
class StatsArguments:
    data_dir: str | None = field(
        default=None, metadata={"help": "CrossNER raw files (default: $CROSSNER_DATA_DIR)."}
    )
    configs: list[str] = field(
        default_factory=lambda: list(CONFIGS), metadata={"help": "Configs to describe.", "choices": list(CONFIGS)}
    )
    top_k: int = field(default=5000, metadata={"help": "Vocabulary size per config for the overlap."})
    corpora: list[str] | None = field(
        default=None, metadata={"help": "NAME=FILE[,FILE...] per unlabeled domain corpus (one paragraph a line) "
                                        "for the corpus vocabulary overlap."})
    corpus_paragraphs: int = field(
        default=150_000, metadata={"help": "Paragraphs sampled (seeded) per corpus; the CrossNER appendix's 150K."})
    corpus_top_k: int = field(default=50_000, metadata={"help": "Corpus vocabulary size; the appendix's 50K."})
    corpus_seed: int = field(default=0, metadata={"help": "Seed of the paragraph sample."})
    output_dir: str = field(default="crossner_stats", metadata={"help": "Where the PNG and JSON go."})


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "stats", (StatsArguments,), prog="crossner-hf stats",
        help="print Table 1 and the vocabulary overlap, draw the heatmap", description=__doc__,
    )


def main(args: StatsArguments) -> int:
    from crossner_hf.outputs import atomic_output, check_writable

    check_writable(args.output_dir, "--output_dir", folder=True)
    from crossner_hf.data.target import load_target
    from crossner_hf.evaluation.plots import plot_vocabulary_overlap
    from crossner_hf.data.stats import entity_counts, format_overlap, format_table1, sentence_counts, vocabulary_overlap

    from crossner_hf.data.stats import corpus_overlap

    corpus_files = _corpus_files(args.corpora or [])
    data = {c: load_target(c, data_dir=args.data_dir).dataset for c in args.configs}
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
    result = {"sentences": sentences, "entities": entities, "vocabulary_overlap": overlap}
    if corpus_files:
        result["corpus_overlap"] = corpus_overlap(corpus_files, args.corpus_paragraphs, args.corpus_top_k,
                                                  args.corpus_seed)
        result["corpus_overlap_settings"] = {"paragraphs": args.corpus_paragraphs, "top_k": args.corpus_top_k,
                                             "seed": args.corpus_seed}
        print(f"Corpus vocabulary overlap (%): IoU of top-{args.corpus_top_k} words of "
              f"{args.corpus_paragraphs} sampled paragraphs")
        print(format_overlap(result["corpus_overlap"]))
        plot_vocabulary_overlap(result["corpus_overlap"], out / "corpus_overlap.png", top_k=args.corpus_top_k,
                                title=f"Corpus vocabulary overlap (IoU %, top-{args.corpus_top_k} words)")
    with atomic_output(out / "stats.json") as tmp:
        tmp.write_text(json.dumps(result, indent=2))
    print(f"Wrote {png} and {out / 'stats.json'}")
    return 0


def _corpus_files(specs: list[str]) -> dict[str, list[str]]:
    """``NAME=FILE[,FILE...]`` items as ``{name: files}``; a malformed item or a missing file is a usage error."""
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, files = spec.partition("=")
        if not sep or not name or not files:
            raise ValueError(f"--corpora {spec!r}: write NAME=FILE[,FILE...], e.g. politics=politics_corpus.txt")
        paths = files.split(",")
        missing = [p for p in paths if not Path(p).is_file()]
        if missing:
            raise ValueError(f"--corpora {name}: no such file {missing[0]}")
        out[name] = paths
    return out
