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
    crossner-hf build-corpora --dataset_dir mydata --wikipedia_dump enwiki.xml.bz2 --output_dir OUT
        # the pages of your train entities and of their categories (OUT/seeds.md says which)
    crossner-hf build-corpora --wikipedia_dump enwiki.xml.bz2 --list_categories rock   # categories, page counts
    crossner-hf build-corpora --wikipedia_dump enwiki.xml.bz2 --titles "The Beatles" "Abbey Road"
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
                "says otherwise). With --wikipedia_dump and --dataset_dir it defaults to the data's name."})
    list_categories: str | None = field(default=None, metadata={
        "nargs": "?", "const": "",
        "help": "Print the categories of --wikipedia_dump with their article and sub-category counts, most "
                "articles first (those whose name holds WORD when given), and build nothing."})
    titles: list[str] | None = field(default=None, metadata={
        "help": "Print the categories of these page titles (through redirects) in --wikipedia_dump, and build "
                "nothing."})

    @property
    def listing(self) -> bool:
        return self.list_categories is not None or bool(self.titles)

    def __post_init__(self):
        if self.listing:
            if not self.wikipedia_dump:
                raise ValueError("--list_categories / --titles read a dump: pass --wikipedia_dump DUMP.")
            return
        if not self.domain and not (self.wikipedia_dump and (self.dataset_dir or self.entity_list_from_dataset
                                                             or self.entity_list)):
            raise ValueError("build-corpora needs --domain: a CrossNER domain or your domain's name (a "
                             "--wikipedia_dump build from --dataset_dir takes the data's name).")
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


def _list(args: BuildCorporaArguments) -> int:
    """The dump's categories (``--list_categories``) and those of ``--titles``, printed: the command's output."""
    import tempfile

    from crossner_hf.wikipedia.build import WikipediaSourceArguments
    from crossner_hf.wikipedia.categories import (
        format_categories, format_title_categories, index_dump, list_categories, title_categories,
    )

    with tempfile.TemporaryDirectory(prefix="crossner-categories-") as scratch:
        # the index is kept in --work_dir (or OUTPUT_DIR.work) for a later build; otherwise it is thrown away
        work_dir = args.work_dir or (f"{args.output_dir.rstrip('/')}.work" if args.output_dir else scratch)
        source = WikipediaSourceArguments(dump=args.wikipedia_dump, index=args.wikipedia_index, ontology=None,
                                          instance_types=None, output_dir=args.output_dir or scratch,
                                          work_dir=work_dir, executor=args.executor, workers=args.workers)
        work = index_dump(source)
        if args.list_categories is not None:
            print(format_categories(list_categories(work, args.list_categories or None)), flush=True)
        if args.titles:
            print(format_title_categories(title_categories(work, args.titles)), flush=True)
    return 0


def main(args: BuildCorporaArguments) -> int:
    from crossner_hf.corpora.build import build_corpora

    if args.listing:
        return _list(args)

    build_corpora(CorporaConfig.from_arguments(args), text_column=args.text_column_name,
                  label_column=args.label_column_name, strict=args.strict)
    return 0
