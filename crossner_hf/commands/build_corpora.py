"""Build the CrossNER DAPT corpus levels of one domain as a Hub-ready dataset folder.

From a domain-level text corpus (one sentence or paragraph a line) and one way of
finding entity mentions (an entity-list TSV, an entity list taken from the CrossNER
labeled data, or a trained NER model), this writes four configs, ``<domain>-domain``,
``<domain>-entity``, ``<domain>-task`` and ``<domain>-integrated``, as Parquet plus a
``README.md`` dataset card that records how each level was built.

Usage (``crossner-hf build-corpora`` is the same command):
    python dataset_scripts/crossner_corpora.py --domain politics --text_file corpus.txt \\
        --entity_list ents.tsv --output_dir politics_corpora
    python dataset_scripts/crossner_corpora.py --domain music --text_file a.txt b.txt \\
        --entity_list_from_crossner ../shared/data/crossner --output_dir OUT --push_to_hub user/music-dapt
    python dataset_scripts/crossner_corpora.py --domain politics --text_file corpus.txt \\
        --ner_model runs/politics-ner --output_dir OUT
    python dataset_scripts/crossner_corpora.py --config build.yaml   # flags as keys

Then ``load_dataset(OUT, "politics-integrated")`` (or the Hub repo id) reads a level.
"""

from __future__ import annotations

from typing import Any

from crossner_hf.corpora.build import CorporaArguments
from crossner_hf.commands import make_command_parser


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "build-corpora", (CorporaArguments,), prog="dataset_scripts/crossner_corpora.py",
        help="build a domain's DAPT corpus levels (domain/entity/task/integrated) as a dataset folder",
        description=__doc__,
    )


def main(args: CorporaArguments) -> int:
    from crossner_hf.corpora.build import build_corpora

    build_corpora(args)
    return 0
