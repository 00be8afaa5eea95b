"""Build the CrossNER labeled data as a Hub-ready dataset folder, and optionally publish it.

``datasets`` no longer runs loading scripts, so this script *builds* what ``load_dataset``
reads: Parquet per config and split plus a ``README.md`` dataset card whose YAML lists the
configs and their features (ClassLabel names included).

Usage (``crossner-hf build-dataset`` and ``python dataset_scripts/crossner.py`` are the same command):
    crossner-hf build-dataset --data_dir ../shared/data/crossner                    # -> ./crossner
    crossner-hf build-dataset --data_dir DIR --output_dir OUT --push_to_hub user/crossner
    python dataset_scripts/crossner.py --config build.yaml

Then, from the folder holding ``crossner/``::

    from datasets import load_dataset
    load_dataset("crossner", "politics")       # or load_dataset(OUT, "politics")
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from crossner_hf.data.target import UPSTREAM_COMMIT, load_target
from crossner_hf.data.labels import CONFIGS
from crossner_hf.arguments import make_command_parser

logger = logging.getLogger(__name__)


@dataclass
class BuildArguments:
    data_dir: str | None = field(
        default=None,
        metadata={"help": "Folder with <config>/{train,dev,test}.txt. Default: $CROSSNER_DATA_DIR, "
                  "then a pinned download of upstream commit 2e7ba2a."},
    )
    output_dir: str = field(
        default="./crossner",
        metadata={"help": "Where to write the dataset folder. The default makes "
                  "load_dataset('crossner', 'politics') work from the current directory."},
    )
    configs: list[str] = field(
        default_factory=lambda: list(CONFIGS),
        metadata={"help": "Configs to build (default: all six).", "choices": list(CONFIGS)},
    )
    push_to_hub: str | None = field(
        default=None, metadata={"help": "Hub repo id (user/name) to publish the folder to."}
    )
    private: bool = field(default=False, metadata={"help": "Create the Hub repo as private."})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "Write into an --output_dir that holds files crossner_hf did not write (the entries this command "
                "writes, such as data/ and README.md, replace those of the same name; the rest stay)."})


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "build-dataset", (BuildArguments,), prog="dataset_scripts/crossner.py",
        help="build the CrossNER datasets as Parquet + card for load_dataset (and push them)",
        description=__doc__,
    )


def main(args: BuildArguments) -> int:
    from crossner_hf.publishing.cards import render_crossner_dataset_card
    from crossner_hf.outputs import check_ours
    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    check_ours(args.output_dir, overwrite=args.overwrite_output_dir, claim=True)  # before the data is read
    built = {config: load_target(config, data_dir=args.data_dir).dataset for config in args.configs}
    counts = {c: {s: len(d) for s, d in dd.items()} for c, dd in built.items()}
    card = render_crossner_dataset_card(
        counts, commit=UPSTREAM_COMMIT, repo=args.push_to_hub or "crossner"
    )
    metadata = {
        "license": "mit",
        "language": ["en"],
        "task_categories": ["token-classification"],
        "task_ids": ["named-entity-recognition"],
        "pretty_name": "CrossNER",
        "source_datasets": ["original"],
    }
    folder = write_hub_dataset_folder(built, args.output_dir, metadata, card, default_config="politics"
                                      if "politics" in built else None, overwrite=args.overwrite_output_dir)
    for config, n in counts.items():
        logger.info("%s: %s", config, n)
    if args.push_to_hub:
        from crossner_hf.publishing.hub import push_to_hub

        push_to_hub(folder, args.push_to_hub, repo_type="dataset", private=args.private)
    print(folder)
    return 0
