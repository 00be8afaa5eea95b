"""Build the NER-BERT entity-tagging corpus from Wikipedia dumps and DBpedia types.

Wikipedia anchors are entities, typed by the DBpedia Ontology class of their link target
(``ENTITY`` when untyped); the paper's filtering and balancing follow, and the corpus is
written as a Hub-ready dataset folder with two configs, ``all`` (every category) and
``4types`` (person / location / organisation / ENTITY), splits ``train`` and
``validation``, features ``tokens``, ``ner_tags`` (ClassLabel: ``O``, then ``B-``/``I-``
per category) and ``title`` (the source page).

The work runs in datatrove pipelines over a work folder (``--work_dir``, default
``OUTPUT_DIR.work``): rerun the same command after an interruption and completed tasks
are skipped; the dataset is assembled only once every task has completed.

Usage (``crossner-hf build-nerbert-corpus`` is the same command):
    python dataset_scripts/nerbert_wikipedia.py \\
        --dump enwiki-latest-pages-articles-multistream.xml.bz2 \\
        --index enwiki-latest-pages-articles-multistream-index.txt.bz2 \\
        --ontology dbpedia_2016-10.owl --instance_types instance_types_en.ttl.bz2 \\
        --output_dir nerbert-corpus
    python dataset_scripts/nerbert_wikipedia.py --config build.yaml       # flags as keys
    python dataset_scripts/nerbert_wikipedia.py ... --executor ray         # on a Ray cluster
    python dataset_scripts/nerbert_wikipedia.py ... --executor slurm --slurm_partition cpu

Then ``load_dataset(OUTPUT_DIR, "all")`` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crossner_hf.arguments import make_command_parser
from crossner_hf.wikipedia.build import NERBERTCorpusConfig


@dataclass
class NERBERTCorpusArguments(NERBERTCorpusConfig):
    """The ``build-nerbert-corpus`` command's flags: :class:`~crossner_hf.wikipedia.build.NERBERTCorpusConfig`,
    handed down as that config alone (:func:`main`)."""


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "build-nerbert-corpus", (NERBERTCorpusArguments,), prog="dataset_scripts/nerbert_wikipedia.py",
        help="build the NER-BERT entity-tagging corpus (configs all, 4types) from Wikipedia + DBpedia",
        description=__doc__,
    )


def main(args: NERBERTCorpusArguments) -> int:
    from crossner_hf.wikipedia.build import build_nerbert_corpus

    build_nerbert_corpus(NERBERTCorpusConfig.from_arguments(args))
    return 0
