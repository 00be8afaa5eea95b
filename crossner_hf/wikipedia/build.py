"""Building the NER-BERT corpus from Wikipedia dumps and DBpedia types: arguments and the build itself.

:func:`prepare_domain_sentences` runs the datatrove stages of the domain corpora (an index of pages
and categories without parsing, then the extract of the chosen domain's pages alone, every
sentence typed) over a work folder; :func:`prepare_nerbert_sentences`
those of the NER-BERT corpus, which needs only the sentences holding a typed anchor: a redirect
stage first, then one extract stage that types anchors as it reads and splits into words only
those sentences (the costly part; the corpus is the same). :func:`build_nerbert_corpus` adds the
corpus steps (:mod:`.nerbert_corpus`), writes the Hub-ready dataset folder with its card and
report, and pushes it when asked. ``crossner-hf build-nerbert-corpus``
(:mod:`crossner_hf.commands.nerbert_wikipedia`) parses the arguments and calls it;
``crossner-hf build-corpora`` runs :func:`prepare_domain_sentences`.
"""


from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.arguments import WorkflowConfig
from crossner_hf.executors import EXECUTORS

logger = logging.getLogger(__name__)


@dataclass
class WikipediaSourceArguments:
    """Flags shared by the two Wikipedia builders (NER-BERT corpus, CrossNER domain corpora)."""

    dump: list[str] = field(metadata={"help": "pages-articles XML dump file(s): .xml, .xml.bz2 or multistream .bz2."})
    ontology: str = field(metadata={"help": "DBpedia Ontology: OWL (RDF/XML) file or the type/depth/parent TSV."})
    instance_types: list[str] = field(
        metadata={"help": "DBpedia instance types: N-Triples or Turtle files, plain, .bz2 or .gz."}
    )
    output_dir: str = field(metadata={"help": "Folder to write the dataset (Parquet + README.md card) to."})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "Write into an --output_dir that holds files crossner_hf did not write (the entries this command "
                "writes, such as data/ and README.md, replace those of the same name; the rest stay)."})
    index: list[str] | None = field(
        default=None,
        metadata={"help": "Multistream index file(s) (offset:page_id:title lines), one per --dump, in order; "
                  "lets several tasks share one dump file."},
    )
    work_dir: str | None = field(
        default=None, metadata={"help": "Intermediate files, logs and resume state. Default: OUTPUT_DIR.work"}
    )
    types_db: str | None = field(
        default=None,
        metadata={"help": "The DBpedia lookup file (SQLite) to build or reuse. Default: WORK_DIR/dbpedia_types.sqlite"},
    )
    nltk_data: str | None = field(
        default=None, metadata={"help": "Folder holding tokenizers/punkt_tab (default: the NLTK_DATA variable)."}
    )
    executor: str = field(
        default="local",
        metadata={"help": "Where the datatrove pipelines run: this machine, a Ray cluster, or Slurm.",
                  "choices": list(EXECUTORS)},
    )
    workers: int = field(default=-1, metadata={"help": "Tasks run at once (-1: all cores here; on Slurm, as many as the cluster runs)."})
    unit_mb: int = field(
        default=64,
        metadata={"help": "Size of one task's share of the dump in MB (multistream and plain XML); shares are cut "
                  "even, and their number rounded up to a multiple of --workers so no worker idles at the end."},
    )
    page_timeout: float = field(
        default=60.0, metadata={"help": "Seconds one page may take before it is skipped and listed (0: no limit)."}
    )
    max_page_chars: int = field(
        default=4_000_000, metadata={"help": "Longer pages are skipped and listed (characters of wikitext)."}
    )
    slurm_partition: str | None = field(default=None, metadata={"help": "Slurm partition (--executor slurm)."})
    slurm_time: str = field(default="24:00:00", metadata={"help": "Slurm time limit per job (--executor slurm)."})
    dump_date: str | None = field(
        default=None, metadata={"help": "The dump's date for the card (default: taken from the file name)."}
    )
    push_to_hub: str | None = field(
        default=None, metadata={"help": "Dataset repo id (user/name) to upload the finished folder to."}
    )
    private: bool = field(default=False, metadata={"help": "Create the Hub repository as private."})


@dataclass
class NERBERTCorpusConfig(WikipediaSourceArguments, WorkflowConfig):
    """What :func:`build_nerbert_corpus` builds and from what; the ``build-nerbert-corpus`` command's flags."""

    min_category_entities: int = field(
        default=10, metadata={"help": "Categories with fewer entities become ENTITY (paper: 10)."}
    )
    top_categories: int = field(
        default=20, metadata={"help": "How many most frequent categories (ENTITY counted) step 3 looks at (paper: 20)."}
    )
    drop_probabilities: list[float] = field(
        default_factory=lambda: [0.3, 0.5, 0.7],
        metadata={"help": "Step 3: drop probability of a top-category sentence with 3 / 4 / more than 4 ENTITY "
                  "mentions (paper: 0.3 0.5 0.7)."},
    )
    alpha: float = field(default=0.7, metadata={"help": "Balancing: category E drawn in proportion to |E|^alpha."})
    balancing: str = field(default="sample", metadata={
        "help": "sample: categories drawn from a multinomial over |E|^alpha with replacement, rare categories "
                "repeated (the paper, as XLM/mT5); downsample: sentences of frequent categories dropped, the corpus "
                "shrinks; none.", "choices": ["sample", "downsample", "none"]})
    target_size: int | None = field(default=None, metadata={
        "help": "sample: sentences after balancing (default: as many as before it)."})
    scarce_count: str = field(default="entities", metadata={
        "help": "Step 1 counts a category's distinct linked entities (the paper) or its mentions.",
        "choices": ["entities", "mentions"]})
    merged_categories: int = field(default=212, metadata={
        "help": "Build config '<N>types' with the most fine-grained categories merged into their parent class until "
                "N remain (paper section 4.3: 212); 0: no merged config. What is reachable depends on the ontology."})
    validation_fraction: float = field(default=0.1, metadata={"help": "Share of sentences in the validation split."})
    seed: int = field(default=42, metadata={"help": "Seed of every random draw (filtering, balancing, split)."})


def dump_date(args: WikipediaSourceArguments) -> str:
    if args.dump_date:
        return args.dump_date
    for dump in args.dump:
        match = re.search(r"(20\d{6})", Path(dump).name)
        if match:
            d = match.group(1)
            return f"{d[:4]}-{d[4:6]}-{d[6:]}"
    return "unknown (pass --dump_date)"


def _work_setup(args: WikipediaSourceArguments):
    """The work folder, NLTK data, executor options, manifest tasks and types-DB path of a build."""
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.wikipedia.pipeline import make_manifest

    work = Path(args.work_dir or f"{args.output_dir.rstrip('/')}.work")
    options = ExecutorOptions(executor=args.executor, workers=args.workers, slurm_partition=args.slurm_partition,
                              slurm_time=args.slurm_time)
    tasks = make_manifest(work, args.dump, args.index, unit_bytes=args.unit_mb << 20,
                          multiple_of=options.at_once())
    logger.info("%d task(s) over %d dump file(s); work folder %s", len(tasks), len(args.dump), work)
    types_db = Path(args.types_db or work / "dbpedia_types.sqlite")
    return work, args.nltk_data or os.environ.get("NLTK_DATA"), options, tasks, types_db


def _types_db(args: WikipediaSourceArguments, types_db: Path) -> None:
    from crossner_hf.wikipedia.dbpedia import build_types_db, load_ontology

    if not types_db.is_file():
        build_types_db(args.instance_types, load_ontology(args.ontology), types_db)


def _stats(extract: dict[str, Any], tasks: int, started: float, types_db: Path,
           timings: dict[str, float]) -> dict:
    """A build's stats: the extract stage's totals, their typing counts apart, and what the steps need next."""
    from crossner_hf.wikipedia.dbpedia import DBpediaTypes

    typing = {k: extract.get(k, 0) for k in ("typed_anchors", "untyped_anchors")}  # counted while extracting
    return {"extract": extract, "type": typing, "tasks": tasks, "seconds": round(time.monotonic() - started, 1),
            "types_db": str(types_db), "ontology_classes": len(DBpediaTypes(types_db).ontology),
            "timings": dict(timings)}


TIMINGS = "timings.json"
"""Wall seconds of each step of the last NER-BERT build, in the work folder: where the time goes."""


def timings_file(work: Path, domain: str | None = None) -> Path:
    """Where a build writes its step timings: ``TIMINGS`` for the NER-BERT corpus, ``timings-<domain>.json``
    for a domain's corpora (both commands may share one work folder)."""
    return work / (f"timings-{domain}.json" if domain else TIMINGS)


def write_timings(path: Path, timings: dict[str, float]) -> None:
    path.write_text(json.dumps(timings, indent=1))
    logger.info("wall seconds by step (also in %s): %s", path, ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))


@contextmanager
def timed_step(timings: dict[str, float], step: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    timings[step] = round(time.monotonic() - started, 2)


def prepare_domain_sentences(
    args: WikipediaSourceArguments, domain: str, choose_pages: Callable[[Path], set[int]],
) -> tuple[Path, dict[str, Any]]:
    """The domain corpora's stages: the index (no parsing), the domain's pages chosen from it by
    ``choose_pages(work)``, the DBpedia lookup, then the extract of those pages alone with every
    sentence typed. Returns the work folder and stats (``stats["typed_dir"]``: the typed sentences;
    ``stats["pages"]``: how many pages were chosen)."""
    import hashlib

    import numpy as np

    from crossner_hf.wikipedia.pipeline import build_redirects, run_domain_extract, run_page_index, stage_stats

    started, timings = time.monotonic(), {}
    with timed_step(timings, "setup"):
        work, nltk_data, options, tasks, types_db = _work_setup(args)
    with timed_step(timings, "index"):
        run_page_index(work, tasks, options=options)  # first: a cut or corrupt dump fails before anything else runs
        build_redirects(work, stage="index")
    with timed_step(timings, "domain_pages"):
        members = np.array(sorted(choose_pages(work)), dtype=np.int64)
    # the folder is named by the page set: other seeds or depth never reuse a stale extraction
    folder = work / "domain" / f"{domain}-{hashlib.sha1(members.tobytes()).hexdigest()[:10]}"
    folder.mkdir(parents=True, exist_ok=True)
    members_file = folder / "members.npy"
    if not members_file.is_file():
        np.save(members_file, members)
    with timed_step(timings, "dbpedia_lookup"):
        _types_db(args, types_db)
    with timed_step(timings, "extract"):
        stage = run_domain_extract(work, tasks, types_db, members_file, nltk_data=nltk_data, options=options,
                                   page_timeout=args.page_timeout, max_page_chars=args.max_page_chars)
    stats = _stats({**stage_stats(work, "index"), **stage_stats(work, stage)}, len(tasks), started, types_db, timings)
    return work, {**stats, "typed_dir": str(folder / "typed"), "pages": len(members)}


def prepare_nerbert_sentences(args: WikipediaSourceArguments) -> tuple[Path, dict[str, Any]]:
    """The NER-BERT builder's stages (redirects, DBpedia lookup, typed extract); returns the work folder
    and stats. The typed sentences go to ``work/nerbert/typed``."""
    import shutil

    from crossner_hf.wikipedia.pipeline import (KEPT_XML, build_redirects, run_redirects, run_typed_extract,
                                                stage_stats)

    started, timings = time.monotonic(), {}
    with timed_step(timings, "setup"):
        work, nltk_data, options, tasks, types_db = _work_setup(args)
    with timed_step(timings, "redirects"):
        run_redirects(work, tasks, options=options)  # first: a cut or corrupt dump fails before anything else runs
        build_redirects(work, stage="stage0")
    with timed_step(timings, "dbpedia_lookup"):
        _types_db(args, types_db)
    with timed_step(timings, "typed_extract"):
        run_typed_extract(work, tasks, types_db, nltk_data=nltk_data, options=options,
                          page_timeout=args.page_timeout, max_page_chars=args.max_page_chars)
    shutil.rmtree(work / KEPT_XML, ignore_errors=True)  # the XML the redirect stage kept for the extract stage
    return work, _stats(stage_stats(work, "extract-typed"), len(tasks), started, types_db, timings)


def build_nerbert_corpus(args: NERBERTCorpusConfig) -> Path:
    """Build (or finish) the corpus; returns the dataset folder."""
    from crossner_hf.wikipedia.nerbert_corpus import (
        CorpusBuilder, CorpusOptions, format_steps, hub_configs, selection_sizes, write_report,
        write_selection,
    )

    corpus_options = CorpusOptions(
        min_category_entities=args.min_category_entities, top_categories=args.top_categories,
        drop_probabilities=tuple(args.drop_probabilities), alpha=args.alpha,
        validation_fraction=args.validation_fraction, seed=args.seed, balancing=args.balancing,
        target_size=args.target_size, scarce_count=args.scarce_count, merged_categories=args.merged_categories,
    )
    from crossner_hf.outputs import check_ours

    check_ours(args.output_dir, overwrite=args.overwrite_output_dir, claim=True)  # before hours of extraction
    work, stats = prepare_nerbert_sentences(args)
    from crossner_hf.wikipedia.dbpedia import DBpediaTypes
    from crossner_hf.wikipedia.nerbert_corpus import TYPED_DIR

    # the corpus passes run in this command's process and its children: all local cores with -1
    workers = args.workers if args.workers > 0 else (os.cpu_count() or 1)
    builder = CorpusBuilder(work, corpus_options, ontology=DBpediaTypes(stats["types_db"]).ontology,
                            typed_dir=work / TYPED_DIR, workers=workers)
    timings = stats["timings"]
    with timed_step(timings, "corpus_count"):
        builder.count()
    with timed_step(timings, "corpus_select"):
        paths = write_selection(builder, work / "selection")
    configs = hub_configs(paths)
    out = Path(args.output_dir)
    extract = stats["extract"]
    report = write_report(builder, out, {
        "pages": {k: extract.get(k, 0) for k in ("pages", "articles", "redirects", "disambiguation_pages",
                                                  "category_pages", "skipped_pages")},
        "anchors": {k: extract.get(k, 0) for k in ("anchors", "boundary_inside_word", "sentences_joined",
                                                    "overlapping_anchors", "anchors_without_words")},
        "typing": stats["type"],
        "dump_date": dump_date(args), "dumps": [Path(d).name for d in args.dump], "tasks": stats["tasks"],
        "ontology_classes": stats["ontology_classes"], "stage_seconds": stats["seconds"],
    })
    sizes = selection_sizes(paths)
    n_categories = (len(configs["all"].features["ner_tags"].feature.names) - 1) // 2
    metadata = {
        "language": ["en"], "license": "cc-by-sa-3.0", "task_categories": ["token-classification"],
        "task_ids": ["named-entity-recognition"], "pretty_name": "NER-BERT Wikipedia entity-tagging corpus",
        "tags": ["crossner", "ner-bert", "wikipedia", "dbpedia"],
        "source_datasets": ["original"],
    }
    body = _card_body(args, report, sizes, n_categories, format_steps(report["steps"]))
    # datasets (its Features, infos and card metadata) only now, once there is a corpus: not before the first page
    from crossner_hf.publishing.dataset_folder import write_hub_folder_from_batches

    with timed_step(timings, "hub_folder"):
        write_hub_folder_from_batches(configs, out, metadata, body, default_config="all",
                                      overwrite=args.overwrite_output_dir)
    logger.info("NER-BERT corpus written to %s:\n%s", out, format_steps(report["steps"]))
    write_timings(timings_file(work), timings)
    if args.push_to_hub:
        from crossner_hf.publishing.hub import push_to_hub

        push_to_hub(out, args.push_to_hub, repo_type="dataset", private=args.private)
    return out


def _card_body(args: NERBERTCorpusConfig, report: dict[str, Any], sizes: dict, n_categories: int,
               steps_table: str) -> str:
    from crossner_hf.publishing.cards import render

    merged = ("no merged config" if not args.merged_categories else
              f"config `{args.merged_categories}types`: {report['merged_categories']} categories after merging into "
              "parent classes (table in `report.json`)")
    parameters = (f"minimum distinct entities per category {args.min_category_entities} (counted by "
                  f"{args.scarce_count}), top categories {args.top_categories}, drop probabilities "
                  f"{' / '.join(str(p) for p in args.drop_probabilities)}, alpha {args.alpha}, balancing "
                  f"`{args.balancing}`, validation fraction {args.validation_fraction}, seed {args.seed}")
    return render("nerbert_corpus", {
        "dumps": ", ".join(f"`{d}`" for d in report["dumps"]), "dump_date": report["dump_date"],
        "pages": report["pages"], "ontology": Path(args.ontology).name, "ontology_classes": report["ontology_classes"],
        "instance_types": ", ".join(f"`{Path(f).name}`" for f in args.instance_types),
        "n_categories": n_categories, "merged": merged, "steps_table": steps_table, "parameters": parameters,
        "sizes": ", ".join(f"`{c}` train {s.get('train', 0):,} / validation {s.get('validation', 0):,}"
                           for c, s in sizes.items()),
        "repo": args.push_to_hub or args.output_dir,
    })
