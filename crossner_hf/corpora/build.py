"""Building a domain's DAPT corpus levels (domain / entity / task / integrated) as a dataset folder.

From text files plus an entity list (or a NER model), or from a Wikipedia dump through the
category graph and DBpedia types. ``crossner-hf build-corpora``
(:mod:`crossner_hf.commands.build_corpora`) parses :class:`CorporaConfig` (plus the data flags) and calls
:func:`build_corpora`.
"""


from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.corpora.entity_list import entity_list_from_conll, load_entity_list, save_entity_list
from crossner_hf.corpora.levels import build_corpus_levels, specialised_types
from crossner_hf.corpora.matcher import EntityMatcher
from crossner_hf.corpora.model_mentions import ModelMentionFinder
from crossner_hf.corpora.text import load_text_corpus
from crossner_hf.arguments import WorkflowConfig
from crossner_hf.data.conll import SPLIT_FILES as DATA_SPLIT_FILES
from crossner_hf.data.labels import DOMAINS, LABELS
from crossner_hf.outputs import check_ours
from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder
from crossner_hf.wikipedia.build import timed_step, timings_file, write_timings

logger = logging.getLogger(__name__)

SPLIT_FILES = {**DATA_SPLIT_FILES, "dev": DATA_SPLIT_FILES["validation"]}  # the release's split name too


@dataclass
class CorporaConfig(WorkflowConfig):
    """What :func:`build_corpora` builds and from what (the ``build-corpora`` command adds the data flags)."""

    domain: str | None = field(default=None, metadata={
        "help": "The domain's name: a CrossNER domain (its types decide the task level), or your own (letters, "
                "digits, - _ .; the task level then takes every type of the entity list unless --specialised_types "
                "says otherwise). With --wikipedia_dump and labeled data it defaults to the data's name."})
    output_dir: str = field(default=None, metadata={"help": "Folder to write the Parquet files and README.md to "
                                                           "(required)."})
    overwrite_output_dir: bool = field(default=False, metadata={
        "help": "Write into an --output_dir that holds files crossner_hf did not write (the entries this command "
                "writes, such as data/ and README.md, replace those of the same name; the rest stay)."})
    text_file: list[str] | None = field(
        default=None,
        metadata={"help": "Domain-level corpus: text files (or globs), one sentence or paragraph a line. "
                  "Or build it from Wikipedia with --wikipedia_dump."},
    )
    wikipedia_dump: list[str] | None = field(
        default=None,
        metadata={"help": "Wikipedia pages-articles dump(s): the domain corpus is the pages of the domain's "
                  "categories (and sub-categories). With an entity source (--dataset_dir, --entity_list, "
                  "--entity_list_from_crossner) the categories are found from the train entities' own pages and "
                  "the mentions are those entities; otherwise the categories are --seed_categories (or the "
                  "domain's built-in ones) and the mentions the anchors typed through DBpedia."},
    )
    wikipedia_index: list[str] | None = field(
        default=None, metadata={"help": "Multistream index file(s), one per --wikipedia_dump."}
    )
    ontology: str | None = field(default=None, metadata={"help": "DBpedia Ontology OWL/TSV (with --wikipedia_dump)."})
    instance_types: list[str] | None = field(
        default=None, metadata={"help": "DBpedia instance-types N-Triples/Turtle file(s) (with --wikipedia_dump)."}
    )
    seed_categories: list[str] | None = field(
        default=None, metadata={"help": "Wikipedia categories the domain grows from (default: the domain's "
                                "built-in list, crossner_hf.wikipedia.domains.SEED_CATEGORIES)."}
    )
    seed_min_entities: int = field(default=2, metadata={
        "help": "Entity seeding: a category of the entities' pages is a seed when the pages of at least this many "
                "distinct train entities are in it."})
    seed_min_share: float = field(default=0.01, metadata={
        "help": "Entity seeding: ... and those pages are at least this share of its pages in the dump (leaves out "
                "'Living people' and '1942 births', which hold a few entities among very many pages)."})
    match_anchors: bool = field(default=True, metadata={
        "help": "Entity seeding: match the entities no title or redirect names against the text of the dump's "
                "links (one more reading pass over the dump; skipped when every entity matched)."})
    category_depth: int = field(
        default=2, metadata={"help": "Sub-category levels walked below the seed categories (breadth-first)."}
    )
    category_links: list[str] | None = field(
        default=None, metadata={"help": "categorylinks table(s): the MySQL dump (.sql/.sql.gz) or child<TAB>parent "
                                "TSV, added to the category graph of the dump's category pages."}
    )
    work_dir: str | None = field(
        default=None, metadata={"help": "Wikipedia work folder (resume state); default OUTPUT_DIR.work"}
    )
    nltk_data: str | None = field(default=None, metadata={"help": "Folder holding tokenizers/punkt_tab."})
    executor: str = field(default="local", metadata={"help": "datatrove executor for the Wikipedia stages.",
                                                     "choices": ["local", "ray", "slurm"]})
    workers: int = field(default=-1, metadata={"help": "Wikipedia tasks run at once, and processes building the "
                                                       "domain level from them (-1: all cores)."})
    entity_list: str | None = field(
        default=None, metadata={"help": "Entity list TSV, one 'surface<TAB>type' a line."}
    )
    entity_list_from_crossner: str | None = field(
        default=None,
        metadata={"help": "CrossNER data folder (<domain>/{train,dev,test}.txt) to take the entity list "
                  "from the labeled spans of --crossner_splits."},
    )
    entity_list_from_dataset: str | None = field(
        default=None,
        metadata={"help": "Your labeled data (what train's --dataset_dir takes: a CoNLL folder, JSON Lines / CSV / "
                  "Parquet files, a Hub id) to take the entity list from the labeled spans of --crossner_splits."},
    )
    crossner_splits: list[str] = field(
        default_factory=lambda: ["train"],
        metadata={"help": "Labeled splits for --entity_list_from_crossner / --entity_list_from_dataset. The default "
                  "'train' keeps dev/test entities out of pre-training data selection.",
                  "choices": ["train", "dev", "validation", "test"]},
    )
    ner_model: str | None = field(
        default=None,
        metadata={"help": "Local token-classification model folder: tag the corpus with it instead of "
                  "an entity list (the paper's appendix variant)."},
    )
    ner_batch_size: int = field(default=32, metadata={"help": "Texts per forward pass with --ner_model."})
    k: int = field(default=2, metadata={"help": "Entity level: minimum number of mentions in a sentence."})
    specialised_types: list[str] | None = field(
        default=None,
        metadata={"help": "Task-level types. Default: the domain's types found in no other CrossNER domain."},
    )
    case_insensitive: bool = field(
        default=False, metadata={"help": "Match the entity list ignoring case (default: case-sensitive)."}
    )
    seed: int = field(default=42, metadata={"help": "Shuffle seed of the integrated level."})
    num_proc: int | None = field(default=None, metadata={"help": "Processes for mention finding."})
    license: str | None = field(
        default=None, metadata={"help": "License of the corpus text for the card (e.g. cc-by-sa-3.0)."}
    )
    push_to_hub: str | None = field(
        default=None, metadata={"help": "Dataset repo id (user/name) to upload the folder to."}
    )
    private: bool = field(default=False, metadata={"help": "Create the Hub repository as private."})


def entity_seeded(args: CorporaConfig) -> bool:
    """A Wikipedia build whose pages are found from the entities of the user's labeled data (or entity list)
    rather than from categories: ``--wikipedia_dump`` with an entity source."""
    return bool(args.wikipedia_dump) and any(
        getattr(args, n) for n in ("entity_list", "entity_list_from_crossner", "entity_list_from_dataset"))


def _mention_source(args: CorporaConfig, text_column: str | None = None, label_column: str | None = None,
                    strict: bool = True) -> tuple[Any, str, str]:
    """The mention finder, a sentence describing it for the card, and the name of its source (a dataset's
    name, an entity list's stem: the domain's name when none is given)."""
    if args.wikipedia_dump and not entity_seeded(args):
        return None, "the anchors of the pages, typed by their link targets' DBpedia classes", args.domain
    given = [n for n in ("entity_list", "entity_list_from_crossner", "entity_list_from_dataset", "ner_model")
             if getattr(args, n)]
    if len(given) != 1:
        raise ValueError(
            f"crossner_corpora: pass exactly one of --entity_list, --entity_list_from_crossner, "
            f"--entity_list_from_dataset, --ner_model (got {', '.join('--' + g for g in given) or 'none'})."
        )
    if args.ner_model:
        finder = ModelMentionFinder(args.ner_model, batch_size=args.ner_batch_size)
        return finder, (
            f"mentions predicted by the NER model `{Path(args.ner_model).name}` "
            f"(types: {', '.join(finder.entity_types)})"
        ), Path(args.ner_model).name
    name = args.domain
    if args.entity_list:
        entities = load_entity_list(args.entity_list)
        origin = f"the entity list `{Path(args.entity_list).name}`"
        name = Path(args.entity_list).stem
    elif args.entity_list_from_dataset:
        entities, name = _entities_from_dataset(args.entity_list_from_dataset, args.crossner_splits,
                                                text_column=text_column, label_column=label_column,
                                                strict=strict)
        origin = f"the labeled {','.join(args.crossner_splits)} split(s) of {name}"
    else:
        if args.domain not in DOMAINS:
            raise ValueError(f"--entity_list_from_crossner: {args.domain!r} is not a CrossNER domain; take the "
                             "entities of your labeled data with --entity_list_from_dataset SOURCE.")
        entities = _entities_from_crossner(Path(args.entity_list_from_crossner), args.domain, args.crossner_splits)
        origin = f"the labeled CrossNER {args.domain} {','.join(args.crossner_splits)} split(s)"
    matcher = EntityMatcher(entities, case_sensitive=not args.case_insensitive)
    case = "case-insensitive" if args.case_insensitive else "case-sensitive"
    return matcher, f"{len(entities)} entities from {origin}, matched {case} on word boundaries", name


def _entities_from_crossner(data_dir: Path, domain: str, splits: list[str]) -> dict[str, str]:
    from crossner_hf.data.conll import read_conll

    sentences: list[dict] = []
    for split in splits:
        path = data_dir / domain / SPLIT_FILES[split]
        if not path.is_file():
            raise ValueError(f"--entity_list_from_crossner: {path} not found; pass the CrossNER data folder.")
        sentences.extend(read_conll(path, LABELS[domain], strict=True))
    return entity_list_from_conll(sentences)


def _entities_from_dataset(source: str, splits: list[str], *, text_column: str | None = None,
                           label_column: str | None = None, strict: bool = True) -> tuple[dict[str, str], str]:
    """``surface -> type`` from the labeled spans of ``splits`` of any source :func:`load_target` opens (its columns
    and orphan rule as the data flags say)."""
    from crossner_hf.data.target import load_target

    target = load_target(source, text_column=text_column, label_column=label_column, strict=strict)
    rows = [row for split in splits for row in target["validation" if split == "dev" else split]]
    return entity_list_from_conll(rows, label_names=target.labels), target.name


def _wikipedia_levels(args: CorporaConfig, types: list[str]) -> tuple[Any, str, Path, dict[str, float]]:
    """The levels from a Wikipedia dump: domain pages by category, anchors as mentions. Also returns the
    work folder and the wall seconds of each step so far."""
    from crossner_hf.corpora.levels import select_levels
    from crossner_hf.wikipedia.dbpedia import DBpediaTypes
    from crossner_hf.wikipedia.domains import domain_corpus, domain_pages
    from crossner_hf.wikipedia.build import WikipediaSourceArguments, prepare_domain_sentences

    if not (args.ontology and args.instance_types):
        raise ValueError("--wikipedia_dump needs --ontology and --instance_types (DBpedia) to type the anchors.")
    source_args = WikipediaSourceArguments(
        dump=args.wikipedia_dump, index=args.wikipedia_index, ontology=args.ontology,
        instance_types=args.instance_types, output_dir=args.output_dir, work_dir=args.work_dir,
        nltk_data=args.nltk_data, executor=args.executor, workers=args.workers,
    )
    reached: dict[str, int] = {}

    def choose_pages(work: Path) -> set[int]:
        members, found = domain_pages(work, args.domain, depth=args.category_depth, seeds=args.seed_categories,
                                      category_links=args.category_links or ())
        if not members:
            raise ValueError(
                f"no page of the dump is in a {args.domain} category within depth {args.category_depth} of the "
                f"seeds {args.seed_categories or 'built in'}; pass --seed_categories, a larger --category_depth or "
                "--category_links."
            )
        reached.update(found)
        return members

    work, stats = prepare_domain_sentences(source_args, args.domain, choose_pages)
    timings = stats["timings"]
    types_db = DBpediaTypes(stats["types_db"])
    ontology = types_db.ontology
    class_of = {cls.lower(): cls for cls in ontology.classes}
    with timed_step(timings, "domain_corpus"):
        annotated = domain_corpus(stats["typed_dir"], args.domain, ontology.ancestors, class_of,
                                  cache_dir=str(work / "hf_cache"),
                                  workers=args.workers if args.workers > 0 else os.cpu_count() or 1)
    source = (f"the anchors of {stats['pages']} pages in {len(reached)} {args.domain} categories (depth "
              f"{args.category_depth}), typed by their link targets' DBpedia classes and mapped to CrossNER types "
              "(crossner_hf.wikipedia.domains.CLASS_TO_TYPE)")
    with timed_step(timings, "levels"):
        levels = select_levels(annotated, types, k=args.k, seed=args.seed)
    return levels, source, work, timings


def _seeded_levels(args: CorporaConfig, matcher: Any, mentions: str,
                   types: list[str]) -> tuple[Any, str, Path, dict[str, float], Any]:
    """The levels from a Wikipedia dump whose pages are found from the entity list's own pages
    (:mod:`crossner_hf.wikipedia.seeds`), the mentions that entity list matched in the pages' sentences. Also
    returns the work folder, the wall seconds of each step and the seeding's report."""
    from crossner_hf.wikipedia.build import WikipediaSourceArguments, prepare_domain_sentences
    from crossner_hf.wikipedia.dbpedia import Ontology, build_types_db
    from crossner_hf.wikipedia.domains import domain_pages, domain_text
    from crossner_hf.wikipedia.seeds import (
        SeedReport, choose_seeds, count_sentences, fill_counts, match_entities,
    )

    entities = matcher.entities
    if args.ontology or args.instance_types:
        logger.warning("--ontology / --instance_types are not used when the pages are found from your entities: the "
                       "mentions are those entities, matched in the pages' sentences.")
    # no typing: the mentions are the entity list's; an empty lookup makes every anchor untyped. It lives in the
    # work folder the builders use (OUTPUT_DIR.work by default), apart from a DBpedia lookup built there
    work_dir = Path(args.work_dir or f"{args.output_dir.rstrip('/')}.work")
    untyped = work_dir / "untyped.sqlite"
    if not untyped.is_file():
        work_dir.mkdir(parents=True, exist_ok=True)
        empty = work_dir / "untyped.nt"
        empty.write_text("")
        build_types_db(empty, Ontology({}), untyped, progress=False)
    source_args = WikipediaSourceArguments(
        dump=args.wikipedia_dump, index=args.wikipedia_index, ontology=None, instance_types=None,
        output_dir=args.output_dir, work_dir=str(work_dir), types_db=str(untyped), nltk_data=args.nltk_data,
        executor=args.executor, workers=args.workers,
    )
    found: dict[str, Any] = {}

    def choose_pages(work: Path) -> set[int]:
        matches, unmatched, categories = match_entities(work, entities, source_args=source_args,
                                                        anchors=args.match_anchors)
        rows = choose_seeds(work, matches, categories, min_entities=args.seed_min_entities,
                            min_share=args.seed_min_share)
        if args.seed_categories:  # pinned: the user's list, the found ones shown beside it
            seeds = list(args.seed_categories)
            rows = [{**row, "seed": row["name"] in seeds} for row in rows]
        else:
            seeds = [row["name"] for row in rows if row["seed"]]
        report = SeedReport(len(entities), matches, unmatched, rows, seeds, pinned=bool(args.seed_categories))
        for match in matches[:20]:
            logger.info("entity %r (%s) -> page %r by its %s", match.surface, match.type, match.page, match.how)
        if len(matches) > 20:
            logger.info("... %d more matches (all in OUTPUT_DIR/seeds.md)", len(matches) - 20)
        for row in rows:
            if row["seed"] or args.seed_categories:
                logger.info("seed category %r: %d entities (%s), %d pages in the dump", row["name"],
                            len(row["entities"]), ", ".join(row["entities"][:5]), row["pages_in_dump"])
        members: dict[int, list[str]] = {}
        reached: dict[str, int] = {}
        if seeds:
            _, reached = domain_pages(work, args.domain, depth=args.category_depth, seeds=seeds,
                                      category_links=args.category_links or (), page_categories=members)
        for match in matches:  # the entities' own pages, whatever their categories
            members.setdefault(match.page_id, [])
        if not members:
            raise ValueError(
                f"none of the {len(entities)} entities matched a page of the dump by title, redirect or link text, "
                f"and no seed category was reached; check the dump, or pin categories with --seed_categories (list "
                f"them: crossner-hf build-corpora --wikipedia_dump {args.wikipedia_dump[0]} --list_categories WORD).")
        found.update(report=report, members=members, reached=reached)
        return set(members)

    work, stats = prepare_domain_sentences(source_args, args.domain, choose_pages)
    timings, report = stats["timings"], found["report"]
    fill_counts(report, found["reached"], found["members"], count_sentences(stats["typed_dir"]))
    for row in report.reached[:20]:
        logger.info("category %r (depth %s): %d pages, %d sentences", row["name"], row["depth"], row["pages"],
                    row["sentences"])
    logger.info("%d pages, %d sentences from %d seed categories (depth %d) and %d entity pages", report.pages,
                report.sentences, len(report.seeds), args.category_depth, len(report.matches))
    with timed_step(timings, "levels"):
        corpus = domain_text(stats["typed_dir"], cache_dir=str(work / "hf_cache"))
        if args.text_file:  # the user's own text beside the pages' (adapt --raw_text with --wikipedia_dump)
            from datasets import concatenate_datasets

            corpus = concatenate_datasets([corpus, load_text_corpus(args.text_file, num_proc=args.num_proc)])
        levels = build_corpus_levels(corpus, matcher, args.domain, k=args.k, specialised_types=types, seed=args.seed,
                                     num_proc=args.num_proc)
    source = (f"the sentences of {report.pages} Wikipedia pages: those of {len(report.matches)} of the "
              f"{len(entities)} train entities and of {len(report.seeds)} categories holding them (depth "
              f"{args.category_depth})" + (", then the lines of the text files" if args.text_file else "")
              + f"; mentions: {mentions}")
    return levels, source, work, timings, report


def _card_body(args: CorporaConfig, counts: dict[str, int], types: list[str], source: str) -> str:
    from crossner_hf.publishing.cards import render

    levels = [
        ("domain", counts["domain"], "every non-blank line of the corpus, in source order"),
        ("entity", counts["entity"], f"lines with at least k={args.k} entity mentions, in source order"),
        ("task", counts["task"], f"lines with a mention of a specialised type ({', '.join(types)}), in source order"),
        ("integrated", counts["integrated"], f"the task level twice plus the entity level, shuffled with seed {args.seed}"),
    ]
    return render("domain_corpora", {
        "title": (f"CrossNER {args.domain}" if args.domain in DOMAINS else args.domain)
        + " corpora for domain-adaptive pre-training",
        "domain": args.domain, "files": ", ".join(f"`{Path(f).name}`" for f in (*(args.wikipedia_dump or ()),
                                                                            *(args.text_file or ()))),
        "source": source, "levels": levels, "repo": args.push_to_hub or args.output_dir,
    })


def build_corpora(args: CorporaConfig, *, text_column: str | None = None, label_column: str | None = None,
                  strict: bool = True) -> Path:
    """Build and write the four levels; returns the dataset folder. ``text_column`` / ``label_column`` / ``strict``:
    how the labeled data of ``entity_list_from_dataset`` is read (:func:`~crossner_hf.data.target.load_target`)."""
    import dataclasses
    import re

    seeded = entity_seeded(args)
    if args.domain is None and not seeded:
        raise ValueError("build-corpora needs --domain: a CrossNER domain or your domain's name (only a "
                         "--wikipedia_dump build from your labeled data takes the data's name).")
    if args.domain is not None and not re.fullmatch(r"[A-Za-z0-9][\w.-]*", args.domain):
        raise ValueError(f"--domain {args.domain!r}: a name of letters, digits, '-', '_' and '.' (it names the "
                         "dataset's configs, e.g. mydomain-integrated).")
    check_ours(args.output_dir, overwrite=args.overwrite_output_dir, claim=True)  # before minutes of matching
    if args.wikipedia_dump and not seeded and args.domain not in DOMAINS and not args.seed_categories:
        raise ValueError(f"--wikipedia_dump for {args.domain!r}, not a CrossNER domain: name the Wikipedia "
                         "categories it grows from with --seed_categories, or find them from your train entities "
                         "with --dataset_dir.")
    if seeded and set(args.crossner_splits) != {"train"}:
        raise ValueError(f"--crossner_splits {' '.join(args.crossner_splits)} with --wikipedia_dump: the pages are "
                         "chosen from the train split's entities alone (a dev or test entity choosing pre-training "
                         "text leaks the evaluation into it); drop --crossner_splits.")
    if not (args.text_file or args.wikipedia_dump) or (args.text_file and args.wikipedia_dump and not seeded):
        raise ValueError("crossner_corpora: pass either --text_file or --wikipedia_dump, not both or neither (both: "
                         "with an entity source, your text is added to the pages found from the entities).")
    mention_fn, source, name = _mention_source(args, text_column, label_column, strict)
    if args.domain is None:  # the data's own name, made a config name
        name = re.sub(r"[^\w.-]+", "-", name or "domain").strip("-._") or "domain"
        args = dataclasses.replace(args, domain=name if name[0].isalnum() else f"d{name}")
        logger.info("domain name %r (the data's; --domain names it otherwise)", args.domain)
    if args.specialised_types:
        types = list(args.specialised_types)
    elif args.domain in DOMAINS:
        types = specialised_types(args.domain)
    else:  # a user's domain: every type its mentions can have (build_corpus_levels' default, said in the card)
        from crossner_hf.corpora.levels import _default_specialised

        types = _default_specialised(args.domain, mention_fn)
    work, timings, seeds = None, {}, None
    if seeded:
        levels, source, work, timings, seeds = _seeded_levels(args, mention_fn, source, types)
    elif args.wikipedia_dump:
        levels, source, work, timings = _wikipedia_levels(args, types)
    else:
        corpus = load_text_corpus(args.text_file, num_proc=args.num_proc)
        levels = build_corpus_levels(
            corpus, mention_fn, args.domain, k=args.k, specialised_types=types, seed=args.seed,
            num_proc=args.num_proc,
        )
    counts = {level: len(ds) for level, ds in levels.items()}
    metadata: dict[str, Any] = {
        "language": ["en"],
        "task_categories": ["fill-mask"],
        "task_ids": ["masked-language-modeling"],
        "pretty_name": f"CrossNER {args.domain} DAPT corpora" if args.domain in DOMAINS else f"{args.domain} DAPT corpora",
        "tags": [*(["crossner"] if args.domain in DOMAINS else []), "crossner_hf", "domain-adaptive-pretraining",
                 args.domain],
        "crossner_corpora": {
            "domain": args.domain, "k": args.k, "specialised_types": types, "seed": args.seed,
            "case_sensitive": not args.case_insensitive, "source": source,
            "text_files": [Path(f).name for f in (*(args.wikipedia_dump or ()), *(args.text_file or ()))],
            "counts": counts,
        },
    }
    if args.license:
        metadata["license"] = args.license
    with timed_step(timings, "hub_folder"):
        folder = write_hub_dataset_folder(
            {f"{args.domain}-{level}": ds for level, ds in levels.items()},
            args.output_dir,
            metadata,
            _card_body(args, counts, types, source),
            default_config=f"{args.domain}-integrated", overwrite=args.overwrite_output_dir,
        )
    if work is not None:  # a Wikipedia build: where the time went, beside the NER-BERT build's
        write_timings(timings_file(work, args.domain), timings)
    if isinstance(mention_fn, EntityMatcher):
        # The list itself makes the selection reproducible and inspectable.
        save_entity_list(mention_fn.entities, folder / "entity_list.tsv")
    if seeds is not None:
        from crossner_hf.wikipedia.seeds import write_seed_report

        paths = write_seed_report(seeds, folder)
        logger.info("which entities matched which pages, the categories and what each gave: %s, %s", *paths)
    for level, n in counts.items():
        logger.info("%s-%s: %d rows", args.domain, level, n)
    if args.push_to_hub:
        from crossner_hf.publishing.hub import push_to_hub

        push_to_hub(folder, args.push_to_hub, repo_type="dataset", private=args.private)
    return folder
