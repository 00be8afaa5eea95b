"""Build the CrossNER labeled data as a Hub-ready dataset folder, and optionally publish it.

``datasets`` no longer runs loading scripts, so this script *builds* what ``load_dataset``
reads: Parquet per config and split plus a ``README.md`` dataset card whose YAML lists the
configs and their features (ClassLabel names included).

Usage:
    python dataset_scripts/crossner.py --data_dir ../shared/data/crossner            # -> ./crossner
    python dataset_scripts/crossner.py --data_dir DIR --output_dir OUT --push_to_hub user/crossner
    python dataset_scripts/crossner.py --config build.yaml

Then, from the folder holding ``crossner/``::

    from datasets import load_dataset
    load_dataset("crossner", "politics")       # or load_dataset(OUT, "politics")
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field

from crossner_hf.arguments import parse_args
from crossner_hf.data import UPSTREAM_COMMIT, load_crossner
from crossner_hf.labels import CONFIGS
from crossner_hf.model_card import render_crossner_dataset_card
from crossner_hf.publish import push_folder, write_hub_dataset_folder

logger = logging.getLogger("crossner_hf.dataset_scripts.crossner")


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
    configs: str = field(
        default=",".join(CONFIGS),
        metadata={"help": "Comma-separated configs to build (default: all six)."},
    )
    push_to_hub: str | None = field(
        default=None, metadata={"help": "Hub repo id (user/name) to publish the folder to."}
    )
    private: bool = field(default=False, metadata={"help": "Create the Hub repo as private."})


def main(args: BuildArguments) -> str:
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    built = {config: load_crossner(config, args.data_dir) for config in configs}
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
                                      if "politics" in built else None)
    for config, n in counts.items():
        logger.info("%s: %s", config, n)
    if args.push_to_hub:
        push_folder(folder, args.push_to_hub, private=args.private)
    return str(folder)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    (build_args,) = parse_args((BuildArguments,), sys.argv[1:])
    print(main(build_args))
