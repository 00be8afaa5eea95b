"""Domain text found from the user's own train entities (issue 65): a labeled music folder and a small dump
holding its entities' pages, some unrelated pages, and the page of an entity found only in dev and test."""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

HEADER = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
          "  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <dbname>enwiki</dbname>\n"
          "    <namespaces>\n      <namespace key=\"0\" case=\"first-letter\" />\n"
          "      <namespace key=\"14\" case=\"first-letter\">Category</namespace>\n    </namespaces>\n"
          "  </siteinfo>\n")

# title -> wikitext; each article's sentences carry a marker word ("Beatleword") the tests look for
ARTICLES: dict[str, str] = {
    "The Beatles": "The Beatles were an English rock band formed in Liverpool. Beatleword appears in this sentence. "
                   "Its members were [[John Lennon]] and [[Paul McCartney|Macca]] among others.\n\n"
                   "[[Category:English rock music groups]]",
    "The Rolling Stones": "The Rolling Stones are an English rock band. Stoneword is said here.\n\n"
                          "[[Category:English rock music groups]]",
    "The Kinks": "The Kinks were an English rock band from London. Kinkword is their word.\n\n"
                 "[[Category:English rock music groups]]",
    "The Animals": "The Animals were a band from Newcastle. Animalword names them.\n\n"
                   "[[Category:British Invasion bands]]",
    "John Lennon": "John Lennon was an English singer and songwriter. Lennonword is his.\n\n"
                   "[[Category:English rock musicians]]\n[[Category:Living people]]",
    "Paul McCartney": "Sir Paul McCartney is an English singer. Mccartneyword is his.\n\n"
                      "[[Category:English rock musicians]]\n[[Category:Living people]]",
    "Abbey Road": "Abbey Road is an album by the Beatles. Abbeyword is on it.\n\n[[Category:1969 albums]]",
    "Let It Bleed": "Let It Bleed is an album by the Rolling Stones. Bleedword is on it.\n\n[[Category:1969 albums]]",
    "Miles Davis": "Miles Davis was an American jazz trumpeter. Milesword is his.\n\n"
                   "[[Category:American jazz trumpeters]]\n[[Category:Living people]]",
    "Kind of Blue": "Kind of Blue is an album by Miles Davis. Blueword is on it.\n\n[[Category:Miles Davis albums]]",
    "Photosynthesis": "Photosynthesis turns light into chemical energy. Photoword is here.\n\n"
                      "[[Category:Plant physiology]]",
    # "Living people" holds two train entities among 253 pages: under --seed_min_share's 1%, not a seed
    **{f"Person {i}": f"Person {i} is someone. Personword {i}.\n\n[[Category:Living people]]" for i in range(250)},
}
REDIRECTS = {"Rolling Stones": "The Rolling Stones"}
CATEGORY_PAGES = {"British Invasion bands": "[[Category:English rock music groups]]",
                  "English rock music groups": "[[Category:Rock music groups]]"}


def write_dump(path: Path) -> Path:
    """A pages-articles XML dump of :data:`ARTICLES`, :data:`REDIRECTS` and :data:`CATEGORY_PAGES`."""
    pages, page_id = [], 100

    def page(title: str, ns: int, text: str, redirect: str | None = None) -> str:
        nonlocal page_id
        page_id += 1
        target = f'    <redirect title="{escape(redirect)}" />\n' if redirect else ""
        return (f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n{target}"
                f"    <revision>\n      <id>{page_id}</id>\n      <text xml:space=\"preserve\">{escape(text)}</text>\n"
                "    </revision>\n  </page>\n")

    pages += [page(title, 0, text) for title, text in ARTICLES.items()]
    pages += [page(title, 0, f"#REDIRECT [[{target}]]", target) for title, target in REDIRECTS.items()]
    pages += [page(f"Category:{title}", 14, text) for title, text in CATEGORY_PAGES.items()]
    path.write_text(HEADER + "".join(pages) + "</mediawiki>\n")
    return path


def _conll(sentences: list[list[tuple[str, str]]]) -> str:
    return "\n\n".join("\n".join(f"{word}\t{tag}" for word, tag in sentence) for sentence in sentences) + "\n"


def _entity(words: str, kind: str) -> list[tuple[str, str]]:
    return [(word, ("B-" if i == 0 else "I-") + kind) for i, word in enumerate(words.split())]


def write_labeled(folder: Path) -> Path:
    """A music folder: train names bands, musicians and an album (one by a redirect, one by a link's text);
    dev and test name Miles Davis and Kind of Blue alone."""
    folder.mkdir(parents=True, exist_ok=True)
    o = [("played", "O"), ("with", "O")]
    train = [[*_entity("The Beatles", "band"), *o, *_entity("Rolling Stones", "band"), (".", "O")],
             [*_entity("John Lennon", "musicalartist"), ("and", "O"), *_entity("Macca", "musicalartist"),
              ("wrote", "O"), *_entity("Abbey Road", "album"), (".", "O")]]
    dev = [[*_entity("Miles Davis", "musicalartist"), ("recorded", "O"), (".", "O")]]
    test = [[*_entity("Kind of Blue", "album"), ("sold", "O"), (".", "O")]]
    for name, sentences in (("train", train), ("dev", dev), ("test", test)):
        (folder / f"{name}.txt").write_text(_conll(sentences))
    return folder


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, wiki):
    """The one-command build: labeled folder + dump, nothing else."""
    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    tmp = tmp_path_factory.mktemp("seeds")
    dump, data = write_dump(tmp / "music-pages-articles.xml"), write_labeled(tmp / "mymusic")
    out = tmp / "out"
    argv = ["--dataset_dir", str(data), "--wikipedia_dump", str(dump), "--output_dir", str(out),
            "--nltk_data", str(wiki["nltk"]), "--workers", "1"]
    assert run_command(make_parser, main, argv) == 0
    return {"out": out, "dump": dump, "data": data, "tmp": tmp, "argv": argv}


def test_the_domain_corpus_is_the_train_entities_pages_and_their_categories(seeded):
    from datasets import load_dataset

    out = seeded["out"]
    domain = load_dataset(str(out), "mymusic-domain", split="train")
    text = " ".join(domain["text"])
    # the entities' own pages: by title, by a redirect (Rolling Stones), by a link's text (Macca)
    for word in ("Beatleword", "Stoneword", "Lennonword", "Mccartneyword", "Abbeyword"):
        assert word in text, word
    # pages reached through the seed category and one of its sub-categories, though no entity names them
    assert "Kinkword" in text and "Animalword" in text
    # unrelated pages, a category holding one entity (1969 albums) and one holding a few among many (Living people)
    for word in ("Photoword", "Bleedword", "Personword"):
        assert word not in text, word
    # the dev and test entities' pages are never chosen (no test leakage)
    assert "Milesword" not in text and "Blueword" not in text
    entity = load_dataset(str(out), "mymusic-entity", split="train")
    assert all(len(m) >= 2 for m in entity["mentions"])


def test_the_report_names_matches_categories_and_what_each_gave(seeded):
    report = json.loads((seeded["out"] / "seeds.json").read_text())
    matches = {m["surface"]: (m["page"], m["how"]) for m in report["matches"]}
    assert matches == {"The Beatles": ("The Beatles", "title"), "Rolling Stones": ("The Rolling Stones", "redirect"),
                       "John Lennon": ("John Lennon", "title"), "Macca": ("Paul McCartney", "anchor"),
                       "Abbey Road": ("Abbey Road", "title")}
    assert report["entities"] == 5 and report["unmatched"] == []  # train only: Miles Davis is not even counted
    assert "Miles Davis" not in json.dumps(report) and "Kind of Blue" not in json.dumps(report)
    assert report["seeds"] == ["English rock musicians", "English rock music groups"]  # fewer pages first
    rows = {c["name"]: c for c in report["categories"]}
    assert rows["Living people"]["seed"] is False and rows["Living people"]["pages_in_dump"] == 253
    assert rows["1969 albums"]["seed"] is False and rows["1969 albums"]["entities"] == ["Abbey Road"]
    gave = {r["name"]: r for r in report["reached"]}
    assert gave["English rock music groups"]["pages"] == 3 and gave["British Invasion bands"]["depth"] == 1
    assert gave["(entity pages)"]["pages"] == 1  # Abbey Road, in no seed category
    assert all(r["sentences"] > 0 for r in report["reached"])
    assert report["pages"] == 7 and report["sentences"] == sum(r["sentences"] for r in report["reached"])
    md = (seeded["out"] / "seeds.md").read_text()
    assert "| Macca | musicalartist | Paul McCartney | anchor (1 links) |" in md
    assert "| English rock music groups | yes |" in md


def test_pinned_categories_replace_the_found_ones(seeded, tmp_path):
    from datasets import load_dataset

    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    out = tmp_path / "pinned"
    argv = [*seeded["argv"][:4], "--output_dir", str(out), *seeded["argv"][6:], "--seed_categories", "1969 albums",
            "--work_dir", str(seeded["out"]) + ".work"]
    assert run_command(make_parser, main, argv) == 0
    text = " ".join(load_dataset(str(out), "mymusic-domain", split="train")["text"])
    assert "Bleedword" in text and "Kinkword" not in text and "Beatleword" in text  # entity pages stay
    assert json.loads((out / "seeds.json").read_text())["pinned"] is True


def test_dev_or_test_entities_are_refused_as_seeds(seeded, tmp_path):
    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    argv = [*seeded["argv"][:4], "--output_dir", str(tmp_path / "leak"), *seeded["argv"][6:], "--crossner_splits",
            "train", "test"]
    assert run_command(make_parser, main, argv) == 2


def test_list_categories_and_the_categories_of_titles(seeded, capsys):
    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    dump = str(seeded["dump"])
    assert run_command(make_parser, main, ["--wikipedia_dump", dump, "--list_categories", "--workers", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "pages\tsub-categories\tcategory"
    assert lines[1] == "253\t0\tLiving people"  # most pages first
    assert "3\t1\tEnglish rock music groups" in lines and "0\t1\tRock music groups" in lines
    assert run_command(make_parser, main, ["--wikipedia_dump", dump, "--list_categories", "ROCK",
                                           "--workers", "1"]) == 0
    names = [line.split("\t")[2] for line in capsys.readouterr().out.strip().splitlines()[1:]]
    assert names == ["English rock music groups", "English rock musicians", "Rock music groups"]
    assert run_command(make_parser, main, ["--wikipedia_dump", dump, "--titles", "Rolling Stones", "Nowhere",
                                           "--workers", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Rolling Stones\tThe Rolling Stones\tEnglish rock music groups", "Nowhere\t-\t"]


def test_the_sample_dump_from_the_politics_train_split(tmp_path, wiki, shared_dir):
    """docs/corpora.md's figures: 4 of the politics train entities have a page in the sample dump, by title,
    and no category holds two of them, so the corpus is those 4 pages."""
    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    out = tmp_path / "politics"
    argv = ["--dataset_dir", str(shared_dir / "data" / "crossner" / "politics"), "--wikipedia_dump",
            str(wiki["sample"]), "--nltk_data", str(wiki["nltk"]), "--output_dir", str(out), "--workers", "1",
            "--match_anchors", "false"]
    assert run_command(make_parser, main, argv) == 0
    report = json.loads((out / "seeds.json").read_text())
    assert report["entities"] == 1082 and report["seeds"] == []
    assert {(m["surface"], m["how"]) for m in report["matches"]} == {
        ("Abraham Lincoln", "title"), ("Afghanistan", "title"), ("Alabama", "title"), ("Asia", "title")}
    assert report["pages"] == 4 and [r["name"] for r in report["reached"]] == ["(entity pages)"]
    assert (out / "data" / "politics-integrated").is_dir()


def test_own_text_is_added_to_the_pages_text(seeded, tmp_path):
    """--text_file beside --wikipedia_dump and an entity source: the user's lines follow the pages' sentences
    (what adapt --raw_text with --wikipedia_dump builds)."""
    from datasets import load_dataset

    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    own = tmp_path / "own.txt"
    own.write_text("The Beatles met John Lennon in Ownword town .\n")
    out = tmp_path / "both"
    argv = [*seeded["argv"][:4], "--output_dir", str(out), *seeded["argv"][6:], "--text_file", str(own),
            "--work_dir", str(seeded["out"]) + ".work"]
    assert run_command(make_parser, main, argv) == 0
    texts = load_dataset(str(out), "mymusic-domain", split="train")["text"]
    assert texts[-1] == "The Beatles met John Lennon in Ownword town ." and "Kinkword" in " ".join(texts)
    assert any("Ownword" in t for t in load_dataset(str(out), "mymusic-entity", split="train")["text"])


def test_without_link_texts_an_entity_no_title_names_stays_unmatched(seeded, tmp_path, caplog):
    """--match_anchors false: Macca (only a link's text) is unmatched, so English rock musicians holds one entity
    and is no seed; the log names the matches and what each category gave."""
    import logging

    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    out = tmp_path / "no-anchors"
    argv = [*seeded["argv"][:4], "--output_dir", str(out), *seeded["argv"][6:], "--match_anchors", "false",
            "--work_dir", str(seeded["out"]) + ".work"]
    with caplog.at_level(logging.INFO, logger="crossner_hf"):
        assert run_command(make_parser, main, argv) == 0
    report = json.loads((out / "seeds.json").read_text())
    assert report["unmatched"] == ["Macca"] and report["seeds"] == ["English rock music groups"]
    assert "entity 'Rolling Stones' (band) -> page 'The Rolling Stones' by its redirect" in caplog.text
    assert "category 'English rock music groups' (depth 0): 3 pages" in caplog.text


# ----------------------------------------------------------------------------- adapt --wikipedia_dump


@pytest.fixture(scope="module")
def music_bert(tmp_path_factory, seeded):
    """A tiny random BERT whose vocabulary holds the dump's and the labeled folder's words."""
    import re

    from crossner_hf.testing import make_tiny_bert

    words = {w.lower() for text in ARTICLES.values() for w in re.findall(r"\w+|[^\w\s]", text)}
    for split in ("train", "dev", "test"):
        words |= {line.split("\t")[0].lower() for line in (seeded["data"] / f"{split}.txt").read_text().splitlines()
                  if line.strip()}
    return make_tiny_bert(tmp_path_factory.mktemp("music_bert"), sorted(words))


def _adapt_argv(seeded, model: str, out: Path, *extra: str) -> list[str]:
    return ["--dataset_dir", str(seeded["data"]), "--wikipedia_dump", str(seeded["dump"]), "--model_name_or_path",
            model, "--budget", "smoke", "--output_dir", str(out), *extra]


def test_adapt_dry_run_with_a_dump_shows_the_corpus_cell(seeded, music_bert, tmp_path, capsys):
    from crossner_hf.cli import run_command
    from crossner_hf.commands.adapt import main, make_parser

    out = tmp_path / "search"
    assert run_command(make_parser, main, _adapt_argv(seeded, music_bert, out, "--dry_run")) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("corpora  ("))
    command = lines[at + 1]
    assert "build-corpora" in command and f"--wikipedia_dump {seeded['dump']}" in command
    assert "--dataset_dir" in command and "--entity_list" not in command  # the train split of the data itself
    for level in ("domain", "entity", "task", "integrated"):  # one DAPT cell per level, each after the corpus
        assert any(line.startswith(f"dapt/{level}  (") and line.endswith("after corpora") for line in lines), level
    assert "dapt-integrated/joint" in text and "needs --raw_text" not in text
    assert not out.exists()  # a dry run writes nothing


@pytest.mark.slow  # a corpus build, a DAPT run and a fine-tuning of a tiny BERT (about half a minute)
def test_adapt_with_a_dump_runs_the_corpus_cell_once(seeded, music_bert, tmp_path):
    from crossner_hf.cli import run_command
    from crossner_hf.commands.adapt import main, make_parser

    out = tmp_path / "search"
    argv = _adapt_argv(seeded, music_bert, out, "--methods", "dapt-domain/direct")
    assert run_command(make_parser, main, argv) == 0
    corpora = out / "cells" / "corpora"
    report = json.loads((corpora / "seeds.json").read_text())
    assert report["seeds"] == ["English rock musicians", "English rock music groups"]
    assert "Milesword" not in (corpora / "seeds.md").read_text()
    rows = {r["method"]: r for r in json.loads((out / "adapt.json").read_text())["rows"]}
    assert rows["dapt-domain/direct"]["status"] == "done"
    built = (corpora / "seeds.json").stat().st_mtime_ns
    assert run_command(make_parser, main, argv) == 0  # resumed: every cell done, the corpus not built again
    assert (corpora / "seeds.json").stat().st_mtime_ns == built


def test_adapt_plan_with_a_dump_and_raw_text(tmp_path):
    """Both given: one corpora cell holds the dump and the text, its mentions the entity list the runner writes from
    the train split; an entity list given is used instead."""
    from crossner_hf.selection.candidates import plan_methods
    from crossner_hf.selection.config import AdaptConfig

    config = AdaptConfig(budget="smoke", wikipedia_dump=["dump.xml"])
    methods = plan_methods("m", "data", "mydata", config, raw_text=["raw.txt"], entity_list=None, data_dir=None,
                           out=tmp_path)
    corpora = next(c for m in methods for c in m.extra_cells if c.name == "corpora")
    assert corpora.settings == {"domain": "mydata", "text_file": ["raw.txt"],
                                "wikipedia_dump": [str(Path("dump.xml").resolve())],
                                "entity_list": str(tmp_path / "entity_list.tsv"), "k": 2}
    assert all(m.cells for m in methods if m.name.startswith("dapt-"))
    given = plan_methods("m", "data", "mydata", config, raw_text=None, entity_list="ents.tsv", data_dir=None,
                         out=tmp_path)
    cell = next(c for m in given for c in m.extra_cells if c.name == "corpora")
    assert cell.settings["entity_list"] == "ents.tsv" and "dataset_dir" not in cell.settings
