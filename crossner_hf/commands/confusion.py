"""Which gold entity types a model predicts as which: the hierarchy confusion report.

Usage:
    crossner-hf confusion --model outputs/music-direct --domain music --output_dir music-confusion
    crossner-hf confusion --predictions politics-test.conll --output_dir politics-confusion

Entities are matched as in :func:`crossner_hf.evaluation.hierarchy.entity_confusion`: a prediction on
exactly the gold words is right or a wrong type; else an overlapping one is a boundary
error, counted once in the cell (gold type, predicted type); a gold entity with no
overlapping prediction is "no entity" (missed), a prediction matching no gold entity sits
in the "no entity" row (spurious). Prints the table (counts and row percentages) and the
share of type errors that stay inside one branch of the fine-to-coarse map
(``crossner_hf.evaluation.hierarchy.COARSE_TYPES``: politician, scientist, writer, musicalartist,
researcher -> person; politicalparty, band, university, conference, magazine,
academicjournal -> organisation; country -> location; the rest their own branch), and
writes ``confusion.txt``, ``confusion.json`` and the heatmap ``confusion.png`` (colour = row
percentage) to ``--output_dir``. With ``--model`` the split is predicted with the model's
recorded decoding and the predictions are saved as ``predictions.conll``;
``--predictions FILE`` (``word<TAB>gold<TAB>predicted``, as ``crossner-hf predict --conll``
writes) needs no model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.modeling.heads import DECODINGS
from crossner_hf.arguments import make_command_parser, set_torch_threads
from crossner_hf.data.target import SplitDataArguments


@dataclass
class ConfusionArguments(SplitDataArguments):
    model: str | None = field(
        default=None, metadata={"help": "A trained token-classification model folder (or Hub id) to predict with."}
    )
    predictions: str | None = field(
        default=None,
        metadata={"help": "Instead of --model: a word<TAB>gold<TAB>predicted file from `crossner-hf predict --conll`."},
    )
    decoding: str | None = field(
        default=None, metadata={"help": "Override the model's recorded decoding.", "choices": list(DECODINGS)}
    )
    output_dir: str = field(default="confusion", metadata={"help": "Where confusion.{txt,json,png} go."})
    batch_size: int = field(default=32, metadata={"help": "Windows per forward pass."})
    device: str | None = field(default=None, metadata={"help": "torch device, e.g. cpu or cuda:0."})
    threads: int | None = field(
        default=None, metadata={"help": "CPU threads: ONNX Runtime's for an exported folder, torch's otherwise "
                                        "(default: the runtime's own choice)."})

    def __post_init__(self):
        super().__post_init__()
        if bool(self.model) == bool(self.predictions):
            raise ValueError("confusion needs exactly one of --model (a trained model folder) and --predictions "
                             "(a file written by `crossner-hf predict --conll`).")
        if self.model and not (self.domain or self.dataset_dir):
            raise ValueError("confusion --model needs --domain (a CrossNER config) or --dataset_dir (your labeled "
                             "data): the split to predict.")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "confusion", (ConfusionArguments,), prog="crossner-hf confusion",
        help="entity-level type confusion table, heatmap and in-branch share of type errors", description=__doc__,
    )


def main(args: ConfusionArguments) -> int:
    from crossner_hf.evaluation.entity_analysis import confusion_table, read_prediction_conll
    from crossner_hf.data.labels import labels_for
    from crossner_hf.evaluation.plots import plot_entity_confusion

    from crossner_hf.outputs import check_writable

    out = check_writable(args.output_dir, "--output_dir", folder=True)  # before any prediction
    if args.predictions:
        labels = labels_for(args.domain) if args.domain else None  # with --predictions, tags checked against it
        _, gold, pred = read_prediction_conll(args.predictions, labels)
        source: dict[str, Any] = {"predictions": args.predictions, "config": args.domain}
        name = Path(args.predictions).name
    else:
        gold, pred, source = _predict(args, out)
        name = f"{Path(args.model).name}, {source['dataset']} {args.split}"
    table = confusion_table(gold, pred)
    if not table.rows:
        where = args.predictions or f"{source['dataset']} {args.split}"
        raise ValueError(f"{where}: neither the gold nor the predicted tags hold an entity; nothing to tabulate.")
    out.mkdir(parents=True, exist_ok=True)
    text = table.format()
    from crossner_hf.outputs import atomic_output

    with atomic_output(out / "confusion.txt") as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")
    with atomic_output(out / "confusion.json") as tmp:
        tmp.write_text(json.dumps({"source": source, "sentences": len(gold), **table.to_dict()}, indent=2) + "\n",
                       encoding="utf-8")
    png = plot_entity_confusion(table.rows, table.columns, table.counts, out / "confusion.png",
                                title=f"Entity-level confusion: {name}")
    print(text)
    if table.type_errors == 0:  # the count, not the in-branch share: that is None without a type hierarchy too
        print("no type errors (no entity predicted with another type)")
    print(f"Wrote {out / 'confusion.txt'}, {out / 'confusion.json'} and {png}")
    return 0


def _predict(args: ConfusionArguments, out: Path) -> tuple[list[list[str]], list[list[str]], dict[str, Any]]:
    from crossner_hf.data.conll import write_conll
    from crossner_hf.evaluation.scoring import evaluate_tagger
    from crossner_hf.inference.tagger import Tagger

    target = args.load_target()
    set_torch_threads(args.threads)
    tagger = Tagger.from_pretrained(args.model, device=args.device, decoding=args.decoding, threads=args.threads)  # any trained folder
    evaluation = evaluate_tagger(tagger, target, args.split, batch_size=args.batch_size)
    out.mkdir(parents=True, exist_ok=True)
    # the same columns as `predict --conll`, so the table can be redrawn with --predictions and no model
    write_conll(out / "predictions.conll", [{"tokens": w, "gold": g, "pred": p} for w, g, p in
                                            zip(evaluation.tokens, evaluation.gold, evaluation.pred)],
                columns=("tokens", "gold", "pred"))
    source = {"model": Path(args.model).name, "dataset": target.name, "split": args.split,
              "decoding": tagger.decoding}
    return evaluation.gold, evaluation.pred, source
