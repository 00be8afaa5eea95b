"""Wikipedia dumps -> the NER-BERT corpus, on the shared dump samples and DBpedia files.

Facts checked by hand in ``../shared/data`` (bzcat + grep) are asserted, not only counts.
"""

from __future__ import annotations

import bz2
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from crossner_hf.testing import make_multistream_dump
from crossner_hf.wikipedia.dump import DumpError, DumpUnit, iter_pages, iter_unit_pages, iter_unit_redirects, plan_units
from crossner_hf.wikipedia.redirects import Redirects, build_redirects_db
from crossner_hf.wikipedia.sentences import anchor_sentences, bio_tags, require_punkt
from crossner_hf.wikipedia.titles import dbpedia_resource_title, normalise_title
from crossner_hf.wikipedia.wikitext import is_disambiguation, page_categories, prestrip, wikitext_to_text
from wiki_builder import build_script, dataset_tables, run_builder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def sample_pages(wiki):
    return list(iter_pages(wiki["sample"]))


def _page(pages, title):
    return next(p for p in pages if p.title == title)


# ----------------------------------------------------------------------------- reading dumps


def test_iter_pages_reads_titles_ids_namespaces_redirects(sample_pages):
    assert len(sample_pages) == 206
    first = sample_pages[0]
    assert (first.title, first.id, first.namespace, first.redirect) == (
        "AccessibleComputing", 10, 0, "Computer accessibility")
    assert Counter(p.namespace for p in sample_pages) == {0: 205, 4: 1}
    lincoln = _page(sample_pages, "Abraham Lincoln")
    assert lincoln.redirect is None and lincoln.id == 307
    assert "'''Abraham Lincoln'''" in lincoln.wikitext and "&quot;" not in lincoln.wikitext[:2000]


def test_readme_counts_table_is_the_sample_build(sample_corpus):
    """The per-step counts docs/corpora.md shows for the sample dump are what the builder reports on it (the
    train / validation rows merged into one, as the page prints them)."""
    steps = json.loads((sample_corpus / "report.json").read_text())["steps"]
    keys = ("sentences", "tokens", "entities", "categories", "entity_mentions")
    *before, train, validation = steps
    expected = [[f"{s[k]:,}" for k in keys] for s in before] + [[f"{train[k]:,} / {validation[k]:,}" for k in keys]]
    readme = (ROOT / "docs" / "corpora.md").read_text()
    table = readme[readme.index("the corpus steps count:"):].split("\n\n")[1]
    rows = [line.strip() for line in table.splitlines() if line.strip().startswith("| ")][1:]  # not the header
    assert [[c.strip() for c in row.strip("|").split("|")][1:] for row in rows] == expected


def test_multistream_and_byte_ranges_read_the_same_pages(wiki, sample_pages, tmp_path):
    dump, index = tmp_path / "ms.xml.bz2", tmp_path / "ms-index.txt"
    assert make_multistream_dump(wiki["sample"], dump, index, pages_per_stream=100) == 5  # header, 3, trailer
    units = plan_units([dump], indexes=[index], unit_bytes=1)
    assert [u.kind for u in units] == ["streams"] * 3
    expected = [(p.title, p.id, p.namespace, p.redirect, p.wikitext) for p in sample_pages]
    got = [(p.title, p.id, p.namespace, p.redirect, p.wikitext) for u in units for p in iter_unit_pages(u)]
    assert got == expected
    plain = tmp_path / "plain.xml"
    plain.write_bytes(bz2.open(wiki["sample"]).read())
    ranges = plan_units([plain], unit_bytes=300_000)
    assert len(ranges) > 10
    assert [(p.title, p.id, p.wikitext) for u in ranges for p in iter_unit_pages(u)] == [e[:2] + e[4:] for e in expected]


def test_the_redirect_scan_finds_the_page_readers_redirects(wiki, sample_pages, tmp_path):
    # the byte-level pre-scan (no page parsed) against the page reader, on every kind of unit
    expected = [(p.title, p.redirect) for p in sample_pages if p.redirect is not None and p.namespace == 0]
    assert len(expected) == 99 and ("AccessibleComputing", "Computer accessibility") in expected
    assert list(iter_unit_redirects(DumpUnit(str(wiki["sample"])))) == expected
    dump, index = tmp_path / "ms.xml.bz2", tmp_path / "ms-index.txt"
    make_multistream_dump(wiki["sample"], dump, index, pages_per_stream=7)
    assert [r for u in plan_units([dump], indexes=[index], unit_bytes=1) for r in iter_unit_redirects(u)] == expected
    plain = tmp_path / "plain.xml"
    data = bz2.open(wiki["sample"]).read()
    plain.write_bytes(data)
    for unit_bytes in (50_000, 300_000, 10**9):  # cuts anywhere: inside page heads, texts, lines
        assert [r for u in plan_units([plain], unit_bytes=unit_bytes) for r in iter_unit_redirects(u)] == expected
    # a cut or unclosed file fails as the page reader does, naming the same page and count
    for name, cut in (("cut.xml", data[: data.index(b"<title>Abraham Lincoln</title>") + 5000]),
                      ("head.xml", data[: data.index(b"<title>Abraham Lincoln</title>") + 20]),
                      ("no_end.xml", data[: data.rindex(b"</mediawiki>")])):
        (tmp_path / name).write_bytes(cut)
        with pytest.raises(DumpError) as by_pages:
            list(iter_pages(tmp_path / name))
        with pytest.raises(DumpError) as by_scan:
            list(iter_unit_redirects(DumpUnit(str(tmp_path / name))))
        assert str(by_scan.value) == str(by_pages.value), name
    short = tmp_path / "short.xml.bz2"
    short.write_bytes(wiki["sample"].read_bytes()[:400_000])
    with pytest.raises(DumpError, match=r"short\.xml\.bz2: unreadable data"):
        list(iter_unit_redirects(DumpUnit(str(short)), keep_xml=tmp_path / "short.zst"))
    assert not list(tmp_path.glob("short.zst*"))  # a unit that fails keeps no XML
    # the XML the scan keeps is read back as the pages the bz2 data gives (then not decompressed again)
    units = plan_units([dump], indexes=[index], unit_bytes=200_000) + [DumpUnit(str(wiki["sample"]))]
    for number, unit in enumerate(units):
        kept = tmp_path / f"kept-{number}.zst"
        list(iter_unit_redirects(unit, keep_xml=kept))
        assert kept.is_file() and kept.stat().st_size < 3 * Path(unit.path).stat().st_size
        pages = [(p.title, p.id, p.namespace, p.redirect, p.wikitext) for p in iter_unit_pages(unit)]
        assert [(p.title, p.id, p.namespace, p.redirect, p.wikitext)
                for p in iter_unit_pages(unit, cached=kept)] == pages and pages


def test_units_are_even_and_a_multiple_of_the_workers(wiki, tmp_path):
    """Units are cut at the stream starts nearest to even shares (no small last unit), and their number is
    rounded up to a multiple of the tasks that run at once; every stream is read exactly once either way."""
    dump, index = tmp_path / "ms.xml.bz2", tmp_path / "ms-index.txt"
    make_multistream_dump(wiki["sample"], dump, index, pages_per_stream=4)
    starts = sorted({int(line.split(":", 1)[0]) for line in index.read_text().splitlines() if line.strip()})
    span = dump.stat().st_size - starts[0]
    for unit_bytes, multiple_of in [(span // 3 + 1, 1), (span // 3 + 1, 2), (span // 9 + 1, 2), (span // 4, 3)]:
        units = plan_units([dump], indexes=[index], unit_bytes=unit_bytes, multiple_of=multiple_of)
        assert len(units) % multiple_of == 0 and len(units) >= -(-span // unit_bytes)
        assert units[0].start == starts[0] and units[-1].end == dump.stat().st_size
        assert all(a.end == b.start for a, b in zip(units, units[1:])) and all(u.start in starts for u in units)
        sizes = [u.size for u in units]
        assert max(sizes) - min(sizes) < 2 * max(b - a for a, b in zip(starts, starts[1:]))  # within a stream or two
    plain = tmp_path / "plain.xml"
    plain.write_bytes(bz2.open(wiki["sample"]).read())
    ranges = plan_units([plain, dump], indexes=["", index], unit_bytes=plain.stat().st_size, multiple_of=4)
    # one unit each, then two extras, each to the file with the largest pieces (plain XML is 3x the bz2)
    assert [u.kind for u in ranges] == ["bytes"] * 3 + ["streams"]
    with pytest.raises(ValueError, match="multiple_of"):
        plan_units([plain], multiple_of=0)


def test_truncated_and_corrupt_dumps_name_the_file_and_pages_read(wiki, tmp_path):
    data = bz2.open(wiki["sample"]).read()
    cut = tmp_path / "cut.xml"
    cut.write_bytes(data[: data.index(b"<title>Abraham Lincoln</title>") + 5000])
    with pytest.raises(DumpError, match=r"cut\.xml: the file ends inside the page 'Abraham Lincoln'") as err:
        list(iter_pages(cut))
    assert err.value.pages_read == [p.title for p in iter_pages(wiki["sample"])].index("Abraham Lincoln")
    short = tmp_path / "short.xml.bz2"
    short.write_bytes(wiki["sample"].read_bytes()[:400_000])
    with pytest.raises(DumpError, match=r"short\.xml\.bz2: unreadable data .* after \d+ page\(s\) read"):
        list(iter_pages(short))
    corrupt = tmp_path / "corrupt.xml.bz2"
    raw = bytearray(wiki["sample"].read_bytes())
    raw[200_000:200_200] = bytes(200)
    corrupt.write_bytes(bytes(raw))
    with pytest.raises(DumpError, match="corrupt.xml.bz2"):
        list(iter_pages(corrupt))
    no_end = tmp_path / "no_end.xml"
    no_end.write_bytes(data[: data.rindex(b"</mediawiki>")])
    with pytest.raises(DumpError, match="no closing </mediawiki>"):
        list(iter_pages(no_end))


# ----------------------------------------------------------------------------- wikitext -> text


def test_lincoln_text_and_anchors(sample_pages):
    text, anchors = wikitext_to_text(_page(sample_pages, "Abraham Lincoln").wikitext)
    assert text.startswith("Abraham Lincoln (February 12, 1809 – April 15, 1865) was the 16th President")
    found = {(text[s:e], t) for s, e, t in anchors}
    assert ("Civil War", "American Civil War") in found
    assert ("Hodgenville, Kentucky", "Hodgenville, Kentucky") in found
    assert ("Whig Party leader", "Whig Party (United States)") in found
    assert ("Stephen A. Douglas", "Stephen A. Douglas") in found
    for marker in ("{{", "}}", "<ref", "[[", "]]", "'''", "Category:", "File:", "__NOTOC__"):
        assert marker not in text
    assert "External links" not in text and "\n\n\n" not in text
    for s, e, _ in anchors:
        assert text[s:e] == text[s:e].strip() and text[s:e]


def test_wikitext_rules_on_hand_made_markup():
    text, anchors = wikitext_to_text(
        "The [[bus]]es of [[Paris (France)|Paris]]<ref>{{cite web|url=x}}</ref> and "
        "[[File:Bus.jpg|thumb|A [[bus]] in Paris]][[:Category:Buses|bus list]] ran "
        "{{convert|5|km}} ({{lang|fr|autobus}}) {{Infobox bus|name=[[Bus]]}}<!-- note -->.\n"
        "== See also ==\n* [[Tram]]\n== History ==\n[[wikt:bus|Bus]] [[#History|here]] [[fr:Autobus]]"
        "[[Category:Transport]]")
    assert text == "The buses of Paris and bus list ran 5 km (autobus).\n\nBus here"
    assert [(text[s:e], t) for s, e, t in anchors] == [("buses", "Bus"), ("Paris", "Paris (France)")]
    assert prestrip("a {{x|{{y}}|[[b]]}} c\n{|\n|cell\n|}\nd") == "a  c\n\nd"


def test_redirects_disambiguation_and_categories(sample_pages, tmp_path):
    pairs = [(p.title, p.redirect) for p in sample_pages if p.redirect]
    path = build_redirects_db(pairs + [("Loop A", "Loop B"), ("Loop B", "Loop A"), ("Hop", "AmoeboidTaxa")],
                              tmp_path / "r.sqlite")
    redirects = Redirects(path)
    assert redirects.resolve("AfghanistanHistory") == "History of Afghanistan"
    assert redirects.resolve("Hop") == "Amoeba"  # a chain through the dump's AmoeboidTaxa -> Amoeba
    assert redirects.resolve("Abraham Lincoln") == "Abraham Lincoln"
    assert redirects.cycles == [["Loop A", "Loop B"]]
    _, anchors = wikitext_to_text("See [[amoeboidTaxa]].", redirects.resolve)
    assert anchors[0][2] == "Amoeba"
    austin = _page(sample_pages, "Austin (disambiguation)")
    assert is_disambiguation(austin.title, austin.wikitext)
    alien = _page(sample_pages, "Alien")
    assert is_disambiguation(alien.title, alien.wikitext)  # {{disambiguation}} without the title suffix
    assert not is_disambiguation("Abraham Lincoln", _page(sample_pages, "Abraham Lincoln").wikitext)
    assert page_categories(_page(sample_pages, "Abraham Lincoln").wikitext)[:3] == [
        "1809 births", "1865 deaths", "19th-century American politicians"]
    assert normalise_title(" abraham_lincoln#Early life") == "Abraham lincoln"
    assert dbpedia_resource_title("<http://dbpedia.org/resource/Abraham_Lincoln>") == "Abraham Lincoln"


# ----------------------------------------------------------------------------- sentences and tags


def test_sentences_words_and_bio_tags(wiki):
    nltk_data = str(wiki["nltk"])
    counts = Counter()
    text = "Lincoln was born in Kentucky. He moved to [Springfield]ian lands.\nSt. Louis grew."
    anchors = [(0, 7, "Abraham Lincoln"), (20, 28, "Kentucky"), (43, 54, "Springfield, Illinois"),
               (67, 76, "St. Louis")]
    sentences = anchor_sentences(text, anchors, nltk_data=nltk_data, counts=counts)
    assert [s.words for s in sentences] == [
        ["Lincoln", "was", "born", "in", "Kentucky", "."],
        ["He", "moved", "to", "[", "Springfield", "]", "ian", "lands", "."],
        ["St.", "Louis", "grew", "."]]
    assert sentences[0].spans == [(0, 1, "Abraham Lincoln"), (4, 5, "Kentucky")]
    assert sentences[2].spans == [(0, 2, "St. Louis")]
    assert bio_tags(6, [(0, 1, "politician"), (4, 5, "city")]) == ["B-politician", "O", "O", "O", "B-city", "O"]
    inside = Counter()
    [sentence] = anchor_sentences("The Parisian crowd.", [(4, 9, "Paris")], nltk_data=nltk_data, counts=inside)
    assert sentence.spans == [(1, 2, "Paris")] and inside["boundary_inside_word"] == 1


def test_missing_punkt_names_both_places(tmp_path, monkeypatch):
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "nowhere"))
    import nltk

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "nowhere")])
    with pytest.raises(FileNotFoundError, match=r"--nltk_data=.*NLTK_DATA="):
        require_punkt(str(tmp_path / "empty"))


def test_word_tokenizer_on_stdlib_re_is_identical_to_nltk(crossner_data_dir):
    from nltk.tokenize import NLTKWordTokenizer

    from crossner_hf.data.words import _word_tokenizer

    sentences = []
    for split in ("train", "test"):
        words = []
        for line in (crossner_data_dir / "music" / f"{split}.txt").read_text().splitlines() + [""]:
            if line:
                words.append(line.split("\t")[0])
            elif words:
                sentences.append(" ".join(words))
                words = []
    sentences += ['He said "no," then \'left\'.', "Isn't it U.S.-made (1999)?", "a -- b … «c»"]
    reference, fast = NLTKWordTokenizer(), _word_tokenizer()
    import re

    assert isinstance(fast.PUNCTUATION[0][0], re.Pattern)
    assert [list(fast.span_tokenize(s)) for s in sentences] == [list(reference.span_tokenize(s)) for s in sentences]


def test_punkt_loads_without_scipy_and_sklearn(wiki):
    # the builder's start-up: NLTK imported without its optional SciPy / scikit-learn bridges, which stay importable
    import subprocess

    code = ("import sys; from crossner_hf.wikipedia.sentences import require_punkt, anchor_sentences\n"
            f"require_punkt({str(wiki['nltk'])!r})\n"
            "print(sorted(m for m in ('scipy', 'sklearn') if m in sys.modules))\n"
            f"print(len(anchor_sentences('He left. She stayed.', [], nltk_data={str(wiki['nltk'])!r})))\n"
            "import scipy.stats, sklearn; print(scipy.stats.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["[]", "2", "scipy.stats"], out.stderr


def test_the_builders_start_up_imports_neither_transformers_torch_nor_matplotlib(tmp_path, wiki):
    """The builder reaches its first read of the dump (the redirect scan) with neither transformers' package nor torch,
    matplotlib or datasets loaded; the whole build (the 3-page dump) loads no transformers or torch, and matplotlib
    and datasets only for the card's chart and the Hub folder. ``HfArgumentParser`` is run from its file alone
    (``crossner_hf.arguments._hf_argparser``): a later ``import transformers`` names the same class."""
    import subprocess

    heavy = "sorted(m for m in ('transformers', 'torch', 'matplotlib', 'datasets') if m in sys.modules)"
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "if __name__ == '__main__':\n"
        "    import crossner_hf.wikipedia.build as build\n"
        "    step = build.timed_step\n"
        "    def timed_step(timings, name):\n"
        f"        if name == 'redirects':\n            print('FIRST', {heavy})\n"
        "        return step(timings, name)\n"
        "    build.timed_step = timed_step\n"
        "    from crossner_hf.cli import command_parser, run_command\n"
        "    module, parser = command_parser('build-nerbert-corpus')\n"
        "    code = run_command(module.make_parser, module.main, sys.argv[1:], parser=parser)\n"
        f"    print('BUILT', code, {heavy})\n"
        "    import transformers, crossner_hf.arguments\n"
        "    print('SAME', transformers.HfArgumentParser is crossner_hf.arguments.HfArgumentParser)\n")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(script), "--dump", str(wiki["tiny"]), "--ontology", str(wiki["owl"]), "--instance_types",
         str(wiki["types"]), "--output_dir", str(out), "--nltk_data", str(wiki["nltk"]), "--workers", "1"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["FIRST []", "BUILT 0 ['datasets', 'matplotlib']", "SAME True"], \
        done.stdout + done.stderr[-3000:]
    assert (out / "categories.png").is_file() and (out / "README.md").is_file()


def test_guarded_words_and_stdlib_punkt_give_nltks_output(crossner_data_dir, sample_pages):
    # the Wikipedia builder's word tokenizer skips the patterns a sentence cannot match, and its punkt runs on
    # the stdlib re engine: the same sentences, words and offsets as NLTK's
    from nltk.tokenize import NLTKWordTokenizer

    from crossner_hf.data.words import _punkt
    from crossner_hf.wikipedia.sentences import _Guarded, _guarded_word_tokenizer, _stdlib_punkt, _words_of

    sentences = []
    for domain in ("music", "politics", "science"):
        words = []
        for line in (crossner_data_dir / domain / "train.txt").read_text().splitlines() + [""]:
            if line:
                words.append(line.split("\t")[0])
            elif words:
                sentences.append(" ".join(words))
                words = []
    punkt, stdlib_punkt = _punkt(os.environ.get("NLTK_DATA")), _stdlib_punkt(os.environ.get("NLTK_DATA"))
    lines = ["Dr. Smith went to Washington D.C. He said hi... Then left!", "It cost $3.50. (See p. 5.) Ok.",
             "U.S. Army. A. B. Smith (b. 1950) was ... here? Yes."]
    for page in sample_pages:
        if page.namespace == 0 and page.redirect is None:
            lines += [line for line in wikitext_to_text(page.wikitext)[0].split("\n") if line.strip()]
    # punkt on the stdlib engine: the same sentences on every line of the sample
    spans = [list(punkt.span_tokenize(line)) for line in lines]
    assert [list(stdlib_punkt.span_tokenize(line)) for line in lines] == spans and len(lines) > 7000
    sentences += [line[a:b] for line, line_spans in zip(lines[:2000], spans) for a, b in line_spans]
    # every pattern's edge: quotes, dashes, brackets, contractions in any case, re's non-ASCII case folding
    sentences += ["GİMME that", "gımme that", "He CANNOT go", "'Tis the season", "It ' twas", "Wanna go?",
                  "“Quoted” — dash... end.", "a--b (c) [d] {e} <f> *g* $5 #1 @x 50% A&B; ok: yes, no!",
                  'He said "hi" and \'\'bye\'\' ``x``', "more'n enough, d'ye see", "Gotta lemme gonna"]
    assert len(sentences) > 3000
    guarded = _guarded_word_tokenizer()
    assert sum(isinstance(p, _Guarded) for p, _ in guarded.PUNCTUATION + guarded.ENDING_QUOTES) >= 15
    reference = NLTKWordTokenizer()
    assert [list(_words_of(s, 3)) for s in sentences] == [
        [(s[a:b], a + 3, b + 3) for a, b in reference.span_tokenize(s)] for s in sentences]


# ----------------------------------------------------------------------------- the builder


def test_corpus_folder_loads_with_the_paper_schema(sample_corpus):
    from datasets import load_dataset

    corpus = load_dataset(str(sample_corpus), "all")
    assert set(corpus) == {"train", "validation"}
    names = corpus["train"].features["ner_tags"].feature.names
    assert names[0] == "O" and names[1:3] == ["B-ENTITY", "I-ENTITY"]
    assert all(names[i][2:] == names[i + 1][2:] and names[i][:2] == "B-" for i in range(1, len(names), 2))
    four = load_dataset(str(sample_corpus), "4types")
    assert four["train"].features["ner_tags"].feature.names == [
        "O", "B-ENTITY", "I-ENTITY", "B-location", "I-location", "B-organisation", "I-organisation",
        "B-person", "I-person"]
    assert corpus["train"]["tokens"] == four["train"]["tokens"]  # the same sentences, coarser tags
    report = json.loads((sample_corpus / "report.json").read_text())
    assert report["pages"] == {"pages": 206, "articles": 98, "redirects": 99, "disambiguation_pages": 8,
                               "category_pages": 0, "skipped_pages": 0}
    steps = {s["step"].split(".")[0]: s for s in report["steps"]}
    assert report["steps"][-2]["sentences"] + report["steps"][-1]["sentences"] == steps["4"]["sentences"]
    for rare in report["rare_categories"]:
        assert f"B-{rare}" not in names
    assert (sample_corpus / "categories.png").stat().st_size > 10_000
    card = (sample_corpus / "README.md").read_text()
    assert "CC BY-SA" in card and "liu2021nerbert" in card and "configs:" in card


def test_hand_checked_entities_in_the_corpus(sample_corpus):
    from datasets import concatenate_datasets, load_dataset

    corpus = load_dataset(str(sample_corpus), "all")
    both = concatenate_datasets([corpus["train"], corpus["validation"]])
    names = both.features["ner_tags"].feature.names
    tagged = Counter()
    for row in both:
        tags = [names[i] for i in row["ner_tags"]]
        for i, (word, tag) in enumerate(zip(row["tokens"], tags)):
            if tag.startswith("B-"):
                tagged[word, tag] += 1
    # Algeria is typed Country (and Location, equivalent to Place) in the DBpedia subset
    assert tagged["Algeria", "B-country"] > 0
    # before filtering: every anchor typed through redirects and the deepest class
    typed = {}
    for path in sorted((sample_corpus.parent / "out.work" / "nerbert" / "typed").glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            for target, category, coarse in zip(row["span_target"], row["span_category"], row["span_coarse"]):
                typed[target] = (category, coarse)
    # OfficeHolder and Politician are both at depth 3 under Person: the tie goes to the smaller name
    assert typed["Abraham Lincoln"] == ("officeholder", "person")
    assert typed["Whig Party (United States)"] == ("politicalparty", "organisation")
    assert typed["Aristotle"] == ("philosopher", "person")
    assert typed["Algeria"] == ("country", "location")
    # Kentucky: AdministrativeRegion (depth 4: Place > PopulatedPlace > Region > AdministrativeRegion)
    # beats Settlement (depth 3)
    assert typed["Kentucky"] == ("administrativeregion", "location")
    assert typed["American Civil War"] == ("militaryconflict", "ENTITY")


def test_kill_and_resume_gives_the_uninterrupted_output(sample_corpus, tmp_path, wiki):
    dump, index = tmp_path / "ms.xml.bz2", tmp_path / "ms-index.txt"
    make_multistream_dump(wiki["sample"], dump, index, pages_per_stream=40)
    extra = f'"--index", {str(index)!r}, "--unit_mb", "0"'
    out = tmp_path / "out"
    proc = run_builder(tmp_path, "killed", build_script(out, dump, wiki, extra))
    marker = tmp_path / "out.work" / "logs" / "extract-typed" / "completions" / "00001"
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the build ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.name for p in marker.parent.iterdir())
    manifest = json.loads((tmp_path / "out.work" / "manifest.json").read_text())
    assert 2 <= len(done) < len(manifest["tasks"]) == 6
    assert not (out / "data").exists()  # nothing published from a partial run
    # an interrupted task's shard may be cut mid-file: make sure one is, and that it is redone
    shard = tmp_path / "out.work" / "nerbert" / "typed" / "00001.parquet"
    shard.write_bytes(shard.read_bytes()[:1000])
    (marker.parent / "00001").unlink()
    resumed = run_builder(tmp_path, "resumed", build_script(out, dump, wiki, extra))
    assert resumed.wait(timeout=600) == 0, (tmp_path / "resumed.log").read_text()[-3000:]
    log = (tmp_path / "resumed.log").read_text()
    assert "Skipping" in log and "already completed" in log
    # six multistream tasks, resumed, give exactly the one-task build of the whole file
    assert dataset_tables(out) == dataset_tables(sample_corpus)
    report, reference = (json.loads((d / "report.json").read_text()) for d in (out, sample_corpus))
    assert report["steps"] == reference["steps"]


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # one Ray cluster at a time: both on the same worker
def test_ray_executor_matches_local(tmp_path, wiki, sample_corpus):
    """The NER-BERT builder's stages (redirects, typed extract) and the domain corpora's (page index, domain
    extract) under datatrove's Ray executor, three tasks, write the rows of the local one-task builds."""
    pytest.importorskip("ray")
    import numpy as np

    from crossner_hf.wikipedia.pipeline import (
        ExecutorOptions, build_redirects, make_manifest, run_domain_extract, run_page_index, run_redirects,
        run_typed_extract,
    )

    # the sample's first 70 pages (articles 12, 303, 307 and 308 among them) in three streams: a sixth of its
    # text, so that the Ray build and the local one-task reference built here both stay small
    text = bz2.open(wiki["sample"]).read().decode("utf-8")
    first, end = text.index("  <page>"), text.rindex("</mediawiki>")
    pages = re.findall(r"  <page>.*?</page>\n", text[first:end], flags=re.DOTALL)
    part = tmp_path / "part.xml.bz2"
    part.write_bytes(bz2.compress((text[:first] + "".join(pages[:70]) + text[end:]).encode("utf-8")))
    dump, index = tmp_path / "ms.xml.bz2", tmp_path / "ms-index.txt"
    make_multistream_dump(part, dump, index, pages_per_stream=25)
    work = tmp_path / "work"
    tasks = make_manifest(work, [str(dump)], [str(index)], unit_bytes=1)
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    options = ExecutorOptions(executor="ray", workers=2)
    try:
        run_redirects(work, tasks, options=options)
        build_redirects(work, stage="stage0")
        run_typed_extract(work, tasks, sample_corpus.parent / "out.work" / "dbpedia_types.sqlite",
                          nltk_data=str(wiki["nltk"]), options=options)
        run_page_index(work, tasks, options=options)
        chosen = work / "domain" / "some-articles"
        chosen.mkdir(parents=True)
        np.save(chosen / "members.npy", np.array([12, 303, 307, 308], dtype=np.int64))
        run_domain_extract(work, tasks, sample_corpus.parent / "out.work" / "dbpedia_types.sqlite",
                           chosen / "members.npy", nltk_data=str(wiki["nltk"]), options=options)
    finally:
        ray.shutdown()

    def rows(folder):
        return [row for path in sorted(folder.glob("*.parquet")) for row in pq.read_table(path).to_pylist()]

    one = ExecutorOptions(workers=1)
    typed_work = tmp_path / "local-typed"
    typed_tasks = make_manifest(typed_work, [str(part)])
    run_redirects(typed_work, typed_tasks, options=one)
    build_redirects(typed_work, stage="stage0")
    run_typed_extract(typed_work, typed_tasks, sample_corpus.parent / "out.work" / "dbpedia_types.sqlite",
                      nltk_data=str(wiki["nltk"]), options=one)
    local = rows(typed_work / "nerbert" / "typed")
    assert len(tasks) == 3 and len(typed_tasks) == 1 and len(local) > 300 and rows(work / "nerbert" / "typed") == local
    local_work = tmp_path / "local"
    local_tasks = make_manifest(local_work, [str(part)])
    run_page_index(local_work, local_tasks, options=one)
    build_redirects(local_work, stage="index")
    (local_work / "domain" / "some-articles").mkdir(parents=True)
    np.save(local_work / "domain" / "some-articles" / "members.npy", np.load(chosen / "members.npy"))
    run_domain_extract(local_work, local_tasks, sample_corpus.parent / "out.work" / "dbpedia_types.sqlite",
                       local_work / "domain" / "some-articles" / "members.npy", nltk_data=str(wiki["nltk"]),
                       options=one)
    for kind in ("page", "category", "redirect"):
        assert rows(work / "index" / kind) == rows(local_work / "index" / kind)
    typed = rows(chosen / "typed")
    assert typed == rows(local_work / "domain" / "some-articles" / "typed")
    assert {r["page_id"] for r in typed} <= {12, 303, 307, 308} and len(typed) > 100


FAKE_SBATCH = r"""#!/bin/bash
# stand-in for sbatch: runs the job script at once, one run per array index, then prints a job id
script="${@: -1}"
for arg in "$@"; do case "$arg" in --export=ALL,*) export "${arg#--export=ALL,}";; esac; done
echo "sbatch $*" >> "$FAKE_SLURM_LOG"
grep '^#SBATCH' "$script" >> "$FAKE_SLURM_LOG"
export SLURM_JOB_ID=4242 SLURM_NODELIST=localhost SLURM_NODEID=0
range=$(sed -n 's/^#SBATCH --array=\([0-9]*-[0-9]*\).*/\1/p' "$script")
if [ -n "$range" ]; then
  for i in $(seq "${range%-*}" "${range#*-}"); do
    SLURM_ARRAY_TASK_ID=$i bash "$script" >> "$FAKE_SLURM_LOG" 2>&1 || exit 1
  done
else
  bash "$script" >> "$FAKE_SLURM_LOG" 2>&1
fi
echo "Submitted batch job 4242"
"""
FAKE_SRUN = """#!/bin/bash
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do [ "$1" = "-n" ] && shift; shift; done
exec "$@"
"""


@pytest.mark.slow
def test_slurm_executor_builds_the_local_corpus(tmp_path, wiki, sample_corpus):
    """Every stage of the NER-BERT builder through datatrove's Slurm executor (job arrays of three tasks,
    stand-in sbatch/srun/squeue running the generated job scripts here) gives the local build's corpus;
    the command waits for each stage's job before the next."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_ins = {"sbatch": FAKE_SBATCH, "srun": FAKE_SRUN, "squeue": "#!/bin/bash\nexit 0\n",
                 "scontrol": "#!/bin/bash\n[ \"$1 $2\" = \"show hostnames\" ] && echo localhost\nexit 0\n"}
    for name, text in stand_ins.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    dump, index = tmp_path / "ms.xml.bz2", tmp_path / "ms-index.txt"
    make_multistream_dump(wiki["sample"], dump, index, pages_per_stream=100)
    out = tmp_path / "out"
    extra = f'"--index", {str(index)!r}, "--unit_mb", "0", "--executor", "slurm", "--slurm_partition", "cpu"'
    env_path = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    proc = run_builder(tmp_path, "slurm", build_script(out, dump, wiki, extra),
                       env={"PATH": env_path, "FAKE_SLURM_LOG": str(tmp_path / "sbatch.log")})
    assert proc.wait(timeout=900) == 0, (tmp_path / "slurm.log").read_text()[-3000:]
    slurm_log = (tmp_path / "sbatch.log").read_text()
    assert slurm_log.count("#SBATCH --array=0-2") == 2  # the redirect and the typed-extract stages, 3 tasks each
    assert "#SBATCH --partition=cpu" in slurm_log
    assert dataset_tables(out) == dataset_tables(sample_corpus)


def test_typed_extract_gives_the_every_sentence_corpus(sample_corpus, wiki):
    """The NER-BERT builder types anchors while extracting and splits into words only the sentences with a
    typed anchor; the domain corpora's stages (page index, then every sentence of the chosen pages typed),
    with every article chosen, give the same rows for those sentences and the same corpus."""
    import numpy as np

    from crossner_hf.wikipedia.dbpedia import ENTITY, load_ontology
    from crossner_hf.wikipedia.nerbert_corpus import TYPED_DIR, CorpusBuilder, CorpusOptions
    from crossner_hf.wikipedia.pipeline import (
        ExecutorOptions, build_redirects, make_manifest, run_domain_extract, run_page_index,
    )

    work = sample_corpus.parent / "out.work"  # the domain corpora test below reuses the index
    tasks = make_manifest(work, [str(wiki["sample"])])
    options = ExecutorOptions(workers=1)
    run_page_index(work, tasks, options=options)
    build_redirects(work, stage="index")
    articles = sorted(i for path in sorted((work / "index" / "page").glob("*.parquet"))
                      for i in pq.read_table(path).column("page_id").to_pylist())
    chosen = work / "domain" / "every-article"
    chosen.mkdir(parents=True)
    np.save(chosen / "members.npy", np.array(articles, dtype=np.int64))
    run_domain_extract(work, tasks, work / "dbpedia_types.sqlite", chosen / "members.npy",
                       nltk_data=str(wiki["nltk"]), options=options)

    def rows(folder):
        return [row for path in sorted(folder.glob("*.parquet")) for row in pq.read_table(path).to_pylist()]

    every = rows(chosen / "typed")
    typed = rows(work / TYPED_DIR)
    assert len(articles) == 98 and {r["page_id"] for r in every} <= set(articles)
    assert typed == [r for r in every if any(c != ENTITY for c in r["span_category"])]
    assert 0 < len(typed) < len(every) / 5  # most sentences never needed splitting into words
    ontology = load_ontology(wiki["owl"])
    everything = CorpusBuilder(work, CorpusOptions(), ontology=ontology, typed_dir=chosen / "typed")
    one_stage = CorpusBuilder(work, CorpusOptions(), ontology=ontology, typed_dir=work / TYPED_DIR)
    assert list(everything.select()) == list(one_stage.select())
    assert everything.steps[2:] == one_stage.steps[2:]  # from step 2 on: the first rows count what was read
    # a chosen subset: the extract parses those pages alone and writes exactly their rows of the full set
    few = work / "domain" / "three-articles"
    few.mkdir(parents=True)
    np.save(few / "members.npy", np.array(articles[:3], dtype=np.int64))
    run_domain_extract(work, tasks, work / "dbpedia_types.sqlite", few / "members.npy",
                       nltk_data=str(wiki["nltk"]), options=options)
    assert rows(few / "typed") == [r for r in every if r["page_id"] in articles[:3]] != []
    # the domain level from three shards: two processes give the one-process dataset, idx counted across shards
    from crossner_hf.wikipedia.domains import domain_corpus

    table = pq.read_table(chosen / "typed")
    split = work / "domain" / "three-shards"
    split.mkdir(parents=True)
    third = table.num_rows // 3
    for rank, (start, stop) in enumerate([(0, third), (third, 2 * third), (2 * third, table.num_rows)]):
        pq.write_table(table.slice(start, stop - start), split / f"{rank:05d}.parquet")
    class_of = {cls.lower(): cls for cls in ontology.classes}
    one = domain_corpus(split, "politics", ontology.ancestors, class_of, cache_dir=str(work / "hf_one"))
    two = domain_corpus(split, "politics", ontology.ancestors, class_of, cache_dir=str(work / "hf_two"), workers=2)
    assert one["idx"] == list(range(table.num_rows)) and one.to_list() == two.to_list()
    assert sum(one["n_mentions"]) > 100


def test_page_guard_skips_and_lists_slow_pages(wiki, monkeypatch):
    from datatrove.data import Document

    from crossner_hf.wikipedia import pipeline
    from crossner_hf.wikipedia.pipeline import ArticleExtractor

    real = pipeline.wikitext_to_text

    def stalls_on_slow_pages(wikitext):  # a parser that hangs on one page, deterministically
        if wikitext.startswith("SLOW"):
            time.sleep(30)
        return real(wikitext)

    monkeypatch.setattr(pipeline, "wikitext_to_text", stalls_on_slow_pages)
    step = ArticleExtractor(nltk_data=str(wiki["nltk"]), page_timeout=2.0, max_page_chars=100_000)
    big = "[[Link]] text. " * 20_000
    docs = [Document(text=big, id="1", metadata={"title": "Big", "namespace": 0, "redirect": None}),
            Document(text="Short [[page]].", id="2", metadata={"title": "Small", "namespace": 0, "redirect": None}),
            Document(text="SLOW [[A]] b.", id="3", metadata={"title": "Slow", "namespace": 0, "redirect": None})]
    started = time.monotonic()
    rows = list(step.run(iter(docs)))
    assert time.monotonic() - started < 20  # the stalled page did not hold the worker
    skipped = {r.metadata["title"]: r.metadata["reason"] for r in rows if r.metadata["kind"] == "skipped"}
    assert "max_page_chars" in skipped["Big"] and "page_timeout" in skipped["Slow"]
    assert [r.metadata["tokens"] for r in rows if r.metadata["kind"] == "sentence"] == [["Short", "page", "."]]


# ----------------------------------------------------------------------------- domain corpora


def test_domain_class_map_uses_real_classes_and_types(wiki):
    from crossner_hf.data.labels import entity_types
    from crossner_hf.wikipedia.dbpedia import load_ontology
    from crossner_hf.wikipedia.domains import CLASS_TO_TYPE, SEED_CATEGORIES, domain_type

    ontology = load_ontology(wiki["owl"])
    for domain, mapping in CLASS_TO_TYPE.items():
        assert set(SEED_CATEGORIES) == set(CLASS_TO_TYPE)
        for cls, kind in mapping.items():
            assert cls in ontology, (domain, cls)
            assert kind in entity_types(domain) or kind in ("event", "award"), (domain, kind)
    assert domain_type("politics", "OfficeHolder", ontology.ancestors) == "politician"
    assert domain_type("politics", "Senator", ontology.ancestors) == "politician"  # Senator < Politician
    assert domain_type("music", "Single", ontology.ancestors) == "song"
    assert domain_type("music", "City", ontology.ancestors) == "location"
    assert domain_type("ai", "Award", ontology.ancestors) is None  # AI has no award type
    assert domain_type("science", "Software", ontology.ancestors) is None


def test_category_graph_walk_and_categorylinks_sql(tmp_path):
    from crossner_hf.wikipedia.domains import category_children, category_closure, read_category_links

    children = category_children([("Elections", ["Politics"]), ("US elections", ["Elections"]),
                                  ("1860 elections", ["US elections"]), ("Music", [])])
    assert category_closure(["Politics"], children, 2) == {"Politics": 0, "Elections": 1, "US elections": 2}
    sql = tmp_path / "categorylinks.sql"
    sql.write_text(
        "INSERT INTO `categorylinks` VALUES (307,'Presidents_of_the_United_States','ABRAHAM LINCOLN',"
        "'2016-01-01 00:00:00','','uppercase','page'),(9,'Politics','X','2016-01-01 00:00:00','','uppercase',"
        "'subcat'),(12345,'Unknown_page','Y','2016-01-01 00:00:00','','uppercase','page');\n")
    pairs = list(read_category_links(sql, {307: "Abraham Lincoln", 9: "Category:Elections"}))
    assert pairs == [("Abraham Lincoln", "Presidents of the United States"), ("Category:Elections", "Politics")]
    bad = tmp_path / "links.tsv"
    bad.write_text("only one column\n")
    with pytest.raises(ValueError, match=r"links\.tsv:1: expected 'child<TAB>parent category'"):
        list(read_category_links(bad, {}))


def test_domain_corpora_from_the_dump(sample_corpus, wiki, tmp_path):
    from datasets import load_dataset

    from crossner_hf.cli import run_command
    from crossner_hf.commands.build_corpora import main, make_parser

    links = tmp_path / "links.tsv"
    # Lincoln's page is in "19th-century American politicians"; Einstein is put in Politics directly
    links.write_text("Category:19th-century American politicians\tPoliticians\nAlbert Einstein\tPolitics\n")
    out = tmp_path / "politics"
    argv = ["--domain", "politics", "--wikipedia_dump", str(wiki["sample"]), "--ontology", str(wiki["owl"]),
            "--instance_types", str(wiki["types"]), "--output_dir", str(out), "--category_links", str(links),
            "--work_dir", str(sample_corpus.parent / "out.work"), "--nltk_data", str(wiki["nltk"]), "--workers", "1"]
    assert run_command(make_parser, main, argv) == 0
    domain = load_dataset(str(out), "politics-domain", split="train")
    task = load_dataset(str(out), "politics-task", split="train")
    assert 0 < len(task) < len(domain)
    assert any("Abraham Lincoln" in t for t in domain["text"]) and any("Einstein" in t for t in domain["text"])
    assert not any("Aristotle was" in t for t in domain["text"])  # not in a politics category
    mentions = [m for row in domain["mentions"] for m in row]
    assert {"surface": "Whig Party leader", "type": "politicalparty"} in [
        {"surface": m["surface"], "type": m["type"]} for m in mentions]
    for row in domain.select(range(50)):
        for m in row["mentions"]:
            assert row["text"][m["start"]:m["end"]] == m["surface"]
    assert all(set(types) & {"politician", "politicalparty", "election"} for types in task["types"])
    import json

    from crossner_hf.wikipedia.build import timings_file

    timings = json.loads(timings_file(sample_corpus.parent / "out.work", "politics").read_text())
    assert list(timings) == ["setup", "index", "domain_pages", "dbpedia_lookup", "extract", "domain_corpus",
                             "levels", "hub_folder"]
    assert all(seconds >= 0 for seconds in timings.values()) and timings["extract"] > 0
    none = run_command(make_parser, main, argv + ["--seed_categories", "No such category"])
    assert none == 2  # no page reached: a one-line error, not an empty corpus


def test_builder_on_a_truncated_dump_fails_in_one_line(tmp_path, wiki):
    data = bz2.open(wiki["sample"]).read()
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(bz2.compress(data[: data.index(b"<title>Albert Einstein</title>")]))
    proc = run_builder(tmp_path, "cut", build_script(tmp_path / "out", cut, wiki))
    assert proc.wait(timeout=300) == 2
    log = (tmp_path / "cut.log").read_text()
    last = log.strip().splitlines()[-1]
    assert "cut.xml.bz2: the file ends inside the page" in last and "page(s) read" in last
    # datatrove logs a failing task with its traceback; a user error's is dropped (issue 18, item 3)
    assert "Traceback" not in log and len(log.splitlines()) < 15, log
    import pickle

    err = pickle.loads(pickle.dumps(DumpError("x.bz2", 3, "cut")))
    assert err.pages_read == 3 and "x.bz2" in str(err)
