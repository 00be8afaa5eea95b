"""The scale generators of ``benchmarks/wikipedia_scale.py``: a copied dump types exactly as the sample
does, copy for copy, and generated typed shards go through the post-extraction steps."""

from __future__ import annotations

import bz2
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scale():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import wikipedia_scale
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return wikipedia_scale


def test_copy_rewires_links_titles_ids_and_redirects(scale):
    page = ("  <page>\n    <title>Abraham Lincoln</title>\n    <ns>0</ns>\n    <id>307</id>\n"
            "    <text>He led the [[Union (American Civil War)|Union]] from [[illinois]]. [[File:x.jpg|thumb]] "
            "[[Kentucky#History]]s [[:Category:Presidents]]</text>\n  </page>\n")
    copied = scale.copy_page(page, 3)
    assert "<title>Abraham Lincoln v3</title>" in copied and f"<id>{307 + 3 * scale.ID_STRIDE}</id>" in copied
    assert "[[Union (American Civil War) v3|Union]]" in copied and "[[illinois v3|illinois]]" in copied
    assert "[[Kentucky v3#History|Kentucky#History]]s" in copied  # the shown section and the link trail survive
    assert "[[File:x.jpg|thumb]]" in copied and "[[:Category:Presidents]]" in copied  # namespaces untouched
    redirect = '  <page>\n    <title>Lincoln</title>\n    <ns>0</ns>\n    <id>5</id>\n    <redirect title="Abraham Lincoln" />' \
               "\n    <text>#REDIRECT [[Abraham Lincoln]]</text>\n  </page>\n"
    assert '<redirect title="Abraham Lincoln v2" />' in scale.copy_page(redirect, 2)
    assert scale.copy_page(page, 0) == page


@pytest.mark.slow  # the builder over two copies of the sample (about a minute on a quiet machine)
def test_every_copy_of_the_dump_types_like_the_sample(scale, tmp_path, wiki):
    """Two copies, multistream with an index, a task per stream (one copy each): copy 1 yields copy 0's typed
    sentences exactly."""
    from wiki_builder import run_builder

    # the sample's first 70 articles (a sixth of its text; anchors to types, redirects and all), copied twice
    header, pages, footer = scale.sample_pages()
    source = tmp_path / "part.xml.bz2"
    with bz2.open(source, "wt", encoding="utf-8") as handle:
        handle.write(header + "".join(pages[:70]) + footer)
    per_copy_mb = sum(len(p.encode("utf-8")) for p in pages[:70]) / 1e6
    made = scale.make_scaled_dump(tmp_path / "in", 2 * per_copy_mb, source=source, pages_per_stream=70)
    assert made["copies"] == 2 and made["pages"] == 140
    titles = [line.split(":", 2)[2] for line in bz2.open(made["index"], "rt").read().splitlines()]
    assert len(titles) == len(set(titles)) == 140  # unique titles, one index line per page
    script = f"""
import sys
from crossner_hf.cli import run_command
from crossner_hf.commands.nerbert_wikipedia import main, make_parser
if __name__ == "__main__":
    sys.exit(run_command(make_parser, main, [
        "--dump", {made['dump']!r}, "--index", {made['index']!r}, "--unit_mb", "0",
        "--ontology", {str(wiki['owl'])!r}, "--instance_types", {made['instance_types']!r},
        "--output_dir", {str(tmp_path / 'out')!r}, "--nltk_data", {str(wiki['nltk'])!r}, "--workers", "1"]))
"""
    proc = run_builder(tmp_path, "build", script)
    assert proc.wait(timeout=900) == 0, (tmp_path / "build.log").read_text()[-3000:]
    assert len(json.loads((tmp_path / "out.work" / "manifest.json").read_text())["tasks"]) == 2
    per_copy: dict[int, Counter] = {0: Counter(), 1: Counter()}
    for shard in sorted((tmp_path / "out.work" / "nerbert" / "typed").glob("*.parquet")):
        for row in pq.read_table(shard).to_pylist():
            copy = row["page_id"] // scale.ID_STRIDE
            title = row["title"].removesuffix(" v1")
            per_copy[copy][(title, row["sentence"], tuple(row["tokens"]), tuple(row["span_category"]))] += 1
    assert sum(per_copy[0].values()) > 300  # the sentences with a typed anchor
    assert per_copy[0] == per_copy[1]  # same words, same anchors, same DBpedia categories
    # the post-extraction benchmark reads a builder's own work folder (nerbert/typed) and gives its dataset
    from datasets import load_dataset

    result = scale.run_post_extraction(tmp_path / "out.work")
    built = load_dataset(str(tmp_path / "out"), "all")
    assert result["sizes"]["all train"] == len(built["train"]) and result["sizes"]["all validation"] == len(
        built["validation"])


def test_typed_shards_go_through_the_post_extraction_steps(scale, tmp_path, wiki):
    from crossner_hf.wikipedia.dbpedia import ENTITY, load_ontology
    from crossner_hf.wikipedia.nerbert_corpus import CorpusBuilder, CorpusOptions
    from crossner_hf.wikipedia.pipeline import TYPED_SCHEMA

    made = scale.make_typed_shards(tmp_path, 30_000, categories=60, shard_rows=10_000)
    assert made["shards"] == 3 and abs(made["tokens"] / 30_000 - scale.WORDS_PER_SENTENCE) < 1.5
    table = pq.read_table(tmp_path / "stage2" / "typed" / "00000.parquet")
    assert table.schema.equals(TYPED_SCHEMA)
    rows = table.slice(0, 2000).to_pylist()
    for row in rows:
        ends = list(zip(row["span_start"], row["span_end"]))
        assert all(0 <= s < e <= len(row["tokens"]) for s, e in ends)
        assert all(e <= s2 for (_, e), (s2, _) in zip(ends, ends[1:]))  # no overlaps
    ontology = load_ontology(wiki["owl"])
    builder = CorpusBuilder(tmp_path, CorpusOptions(merged_categories=20), ontology=ontology)
    builder.count()
    splits: Counter = Counter()
    for split, row in builder.select():
        splits[split] += 1
        assert set(row["tags"]) == {"all", "4types", "20types"}
    assert splits["train"] > 10_000 and splits["validation"] > 1000
    assert {c for row in rows for c in row["span_coarse"]} <= {"person", "location", "organisation", ENTITY}


def test_post_extraction_benchmark_runs_every_step(scale, tmp_path):
    scale.make_typed_shards(tmp_path, 4000, categories=40, shard_rows=2000)
    result = scale.run_post_extraction(tmp_path, merged_categories=20)
    assert list(result["seconds"]) == ["count (passes 1-2)", "select and write the selection (pass 3)",
                                       "Hub folder (tags to ids, Parquet shards)"]
    assert result["sizes"]["all train"] > 2000 and set(result["sizes"]) == {
        f"{c} {s}" for c in ("all", "4types", "20types") for s in ("train", "validation")}
    assert 0 < result["anonymous_rss_mb_after"]["Hub folder (tags to ids, Parquet shards)"] <= result["peak_rss_mb"]
    # the streamed folder holds the selection, tags as ClassLabel ids of the sorted B-/I- names
    from datasets import load_dataset

    for config in ("all", "20types"):
        selection = [row for path in sorted((tmp_path / "selection" / config).glob("validation-*.parquet"))
                     for row in pq.read_table(path).to_pylist()]
        loaded = load_dataset(str(tmp_path / "dataset"), config, split="validation", cache_dir=str(tmp_path / "c"))
        names = loaded.features["ner_tags"].feature.names
        assert names[0] == "O" and names[1:] == sorted(names[1:], key=lambda n: (n[2:], n[0] == "I"))
        assert len(loaded) == len(selection) == result["sizes"][f"{config} validation"]
        assert [[names[i] for i in row] for row in loaded["ner_tags"]] == [r["ner_tags"] for r in selection]
        assert loaded["tokens"] == [r["tokens"] for r in selection]
    assert (tmp_path / "dataset" / "README.md").is_file()


@pytest.mark.slow  # WikiExtractor and both builders at 1 and 2 workers on one copy of the sample (~1.5 min)
def test_side_by_side_benchmark_runs_on_a_generated_dump(scale, tmp_path, wiki):
    """`benchmarks/wikipedia.py --dump_dir` (the at-scale table) on a dump generated from 22 of the sample's pages."""
    import os
    import subprocess

    import bz2

    pytest.importorskip("wikiextractor", reason="pip install -e .[benchmark]")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from wikipedia import DOMAIN_SEEDS
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    # the table's machinery, not its figures, is under test: the pages of the domain builder's seed categories
    # and 20 others (a tenth of the sample) keep every builder's every step at work
    header, pages, footer = scale.sample_pages()
    seeds = [p for p in pages if any(f"[[Category:{c}" in p for c in DOMAIN_SEEDS)]
    assert seeds, "the sample dump lost the domain builder's seed-category pages"
    source = tmp_path / "source.xml.bz2"
    with bz2.open(source, "wt", encoding="utf-8") as handle:
        handle.write(header + "".join(seeds + [p for p in pages if p not in seeds][:20]) + footer)
    scale.make_scaled_dump(tmp_path / "in", 0.1, source=source)
    env = {**os.environ, "NLTK_DATA": str(wiki["nltk"])}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "wikipedia.py"), "--dump_dir", str(tmp_path / "in"),
                          "--runs", "1"], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    table, nerbert, domain = out.stdout.split("\nwhole ")[0], *out.stdout.split("\nwhole ")[1:]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "MB/s" not in line]
    cores = os.cpu_count()
    assert [r.split(" | ")[0].strip("| ") for r in rows] == [
        "WikiExtractor 3.1 --links, 1 process", "whole NER-BERT builder, 1 worker",
        "whole domain-corpora builder (politics), 1 worker", f"WikiExtractor 3.1 --links, {cores} processes",
        f"whole NER-BERT builder, {cores} workers", f"whole domain-corpora builder (politics), {cores} workers"]
    assert rows[0].split(" | ")[5] == "1.00"  # the peer is the unit
    assert all(float(r.split(" | ")[-1].strip(" |")) > 10 for r in rows)  # a peak RSS per method, in MB
    assert nerbert.startswith("NER-BERT builder: scaling") and domain.startswith("domain-corpora builder")
    for section, prefix in ((nerbert, "c"), (domain, "d")):
        assert "rows over all configs and splits" in section
        assert f"Datasets identical to {prefix}1-0 (whatever the task count): 2 of 2 builds" in section
    steps = {section: {line.split(" | ")[0].strip("| ") for line in text.splitlines() if line.startswith("| ")}
             for section, text in (("nerbert", nerbert), ("domain", domain))}
    assert {"redirects", "typed_extract", "corpus_count", "corpus_select", "hub_folder", "sum"} <= steps["nerbert"]
    assert {"index", "domain_pages", "extract", "domain_corpus", "levels", "hub_folder", "sum"} <= steps["domain"]


@pytest.mark.slow
def test_peer_benchmark_interleaves_wikiextractor_and_the_builder(scale, tmp_path, wiki):
    """`benchmarks/wikipedia_scale.py peer`: both tools timed on one generated dump, the ratio, the builder's steps
    and its profile cut into stages that account for the whole run."""
    import os
    import subprocess

    import bz2

    pytest.importorskip("wikiextractor", reason="pip install -e .[benchmark]")
    header, pages, footer = scale.sample_pages()
    source = tmp_path / "source.xml.bz2"
    with bz2.open(source, "wt", encoding="utf-8") as handle:
        handle.write(header + "".join(pages[:12]) + footer)
    scale.make_scaled_dump(tmp_path / "in", 0.1, source=source)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "wikipedia_scale.py"), "peer", "--dump_dir",
                          str(tmp_path / "in"), "--runs", "1", "--profile"], capture_output=True, text=True,
                         env={**os.environ, "NLTK_DATA": str(wiki["nltk"])}, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split(" | ") for line in out.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r[0].strip("| ") for r in rows[1:3]] == ["WikiExtractor 3.1 --links, 1 process",
                                                     "whole NER-BERT builder, 1 worker"]
    assert rows[1][4] == "1.00" and float(rows[2][4]) > 0 and float(rows[2][5]) > 0  # CPU seconds
    assert "redirects" in out.stdout and "typed_extract" in out.stdout
    # the builder's start-up, CPU seconds before its first step, recorded by each timed run
    startup = re.search(r"1 worker: start-up, CPU s before its first step [^:]*: median ([\d.]+)", out.stdout)
    assert startup is not None and 0 < float(startup.group(1)) < float(rows[2][5]), out.stdout
    stages = {r[0].strip("| "): float(r[1]) for r in rows[4:]}
    assert stages["wikitext to text + anchors"] > 0 and stages["sentences (punkt) + words (Treebank)"] > 0
    assert stages["redirect pre-scan (bz2 + byte scan)"] > 0 and stages["reading pages (bz2 + XML lines)"] > 0
