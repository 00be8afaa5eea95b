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
    crossner-hf build-corpora --domain mydomain --text_file raw.txt --dataset_dir mydata \\
        --text_column_name sentence_tokens --label_column_name ner_labels --output_dir OUT   # your labeled data
    python dataset_scripts/crossner_corpora.py --domain politics --text_file corpus.txt \\
        --ner_model runs/politics-ner --output_dir OUT
    python dataset_scripts/crossner_corpora.py --config build.yaml   # flags as keys

Then ``load_dataset(OUT, "politics-integrated")`` (or the Hub repo id) reads a level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.data.target import LabeledDataArguments
from crossner_hf.corpora.build import CorporaConfig


@dataclass
class BuildCorporaArguments(CorporaConfig, LabeledDataArguments):
    """:class:`CorporaConfig` plus the data flags every command shares: ``--dataset_dir SOURCE`` (with
    ``--text_column_name``, ``--label_column_name``, ``--strict``) is the labeled data the entity list is taken
    from (``--entity_list_from_dataset``, its older name, still works); ``--data_dir`` the CrossNER files
    (``--entity_list_from_crossner``'s folder)."""

    domain: str = field(default=None, metadata={
        "help": "The domain's name: a CrossNER domain (its types decide the task level), or your own (letters, "
                "digits, - _ .; the task level then takes every type of the entity list unless --specialised_types "
                "says otherwise)."})

    def __post_init__(self):
        if not self.domain:
            raise ValueError("build-corpora needs --domain: a CrossNER domain or your domain's name.")
        if not self.output_dir:
            raise ValueError("build-corpora needs --output_dir: the folder the corpus levels are written to.")
        for flag, value, old in (("--dataset_dir", self.dataset_dir, "entity_list_from_dataset"),
                                 ("--data_dir", self.data_dir, "entity_list_from_crossner")):
            if value and getattr(self, old) and getattr(self, old) != value:
                raise ValueError(f"{flag} {value} and --{old} {getattr(self, old)} name two sources; give one.")
            if value:
                setattr(self, old, value)


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "build-corpora", (BuildCorporaArguments,), prog="dataset_scripts/crossner_corpora.py",
        help="build a domain's DAPT corpus levels (domain/entity/task/integrated) as a dataset folder",
        description=__doc__,
    )


def main(args: BuildCorporaArguments) -> int:
    from crossner_hf.corpora.build import build_corpora

    build_corpora(CorporaConfig.from_arguments(args), text_column=args.text_column_name,
                  label_column=args.label_column_name, strict=args.strict)
    return 0
