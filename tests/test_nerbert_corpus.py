"""The NER-BERT corpus steps on synthetic typed sentences: the paper's balancing by sampling with
replacement, scarce categories counted by distinct entities, and the merged (212types) config."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossner_hf.wikipedia.dbpedia import Ontology
from crossner_hf.wikipedia.nerbert_corpus import (
    CorpusBuilder,
    CorpusOptions,
    merge_categories,
    poisson_quantile,
    write_selection,
)
from crossner_hf.wikipedia.pipeline import TYPED_SCHEMA

COARSE = {"country": "location", "city": "location", "politician": "person", "tennistournament": "ENTITY",
          "soccertournament": "ENTITY", "golftournament": "ENTITY", "ENTITY": "ENTITY"}


def _write_typed(work: Path, sentences: list[list[tuple[str, str]]]) -> Path:
    """One shard of typed sentences; each sentence is a list of (category, link target) anchors."""
    rows = []
    for i, anchors in enumerate(sentences):
        tokens = [f"w{k}" for k in range(2 * len(anchors) + 1)]
        rows.append({"page_id": i // 10, "title": f"Page {i // 10}", "sentence": i % 10, "tokens": tokens,
                     "span_start": [2 * k for k in range(len(anchors))],
                     "span_end": [2 * k + 1 for k in range(len(anchors))],
                     "span_target": [t for _, t in anchors], "span_category": [c for c, _ in anchors],
                     "span_coarse": [COARSE[c] for c, _ in anchors]})
    folder = work / "stage2" / "typed"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=TYPED_SCHEMA), folder / "00000.parquet")
    return work


def _skewed(work: Path) -> Path:
    # country: 600 sentences (60 distinct countries); city: 15 sentences (12 cities); politician: 12 mentions of ONE
    # person (1 distinct entity)
    sentences = [[("country", f"C{i % 60}")] for i in range(600)]
    sentences += [[("city", f"Town{i % 12}")] for i in range(15)]
    sentences += [[("politician", "Abraham Lincoln")] for _ in range(12)]
    return _write_typed(work, sentences)


def _mentions(builder: CorpusBuilder) -> tuple[Counter, int]:
    counts, n = Counter(), 0
    for _, row in builder.select():
        n += 1
        counts.update(t[2:] for t in row["tags"]["all"] if t.startswith("B-"))
    return counts, n


def test_sampling_boosts_rare_categories_and_keeps_the_size(tmp_path):
    work = _skewed(tmp_path)
    builder = CorpusBuilder(work, CorpusOptions(seed=3))
    counts, n = _mentions(builder)
    before = builder.before_balancing
    assert before["city"] == 15 and before["country"] == 600
    assert counts["city"] > 2 * before["city"]          # repeated: the rare category goes up
    assert counts["country"] < before["country"]        # thinned: the frequent one goes down
    assert abs(n - 615) < 4 * 615 ** 0.5                 # the expected size is the size before balancing
    # q_E ~ |E|^0.7: the expected share of city draws
    q_city = 15 ** 0.7 / (15 ** 0.7 + 600 ** 0.7)
    assert abs(counts["city"] / n - q_city) < 0.05
    again, _ = _mentions(CorpusBuilder(work, CorpusOptions(seed=3)))
    assert again == counts                               # every draw hashed from the seed


def test_target_size_and_downsampling(tmp_path):
    work = _skewed(tmp_path)
    _, n = _mentions(CorpusBuilder(work, CorpusOptions(target_size=3000)))
    assert abs(n - 3000) < 4 * 3000 ** 0.5
    down, n_down = _mentions(CorpusBuilder(work, CorpusOptions(balancing="downsample")))
    assert n_down < 615 and down["city"] == 15           # downsampling only ever drops sentences


def test_copies_of_a_sentence_share_one_split(tmp_path):
    work = _skewed(tmp_path)
    seen: dict[tuple[int, int], list] = {}
    for split, row in CorpusBuilder(work, CorpusOptions(validation_fraction=0.3)).select():
        seen.setdefault((row["page_id"], row["sentence"]), []).append(split)
    assert any(len(splits) > 1 for splits in seen.values())  # some sentences are repeated
    assert all(len(set(splits)) == 1 for splits in seen.values())
    assert {"train", "validation"} <= {split for splits in seen.values() for split in splits}


def test_scarce_categories_are_counted_by_distinct_entities(tmp_path):
    work = _skewed(tmp_path)
    by_entity = CorpusBuilder(work, CorpusOptions())
    by_entity.count()
    assert by_entity.rare == {"politician"}             # 12 mentions, but one entity
    by_mention = CorpusBuilder(work, CorpusOptions(scarce_count="mentions"))
    by_mention.count()
    assert by_mention.rare == set()


def test_merged_config_follows_the_ontology(tmp_path):
    ontology = Ontology({"Event": None, "SportsEvent": "Event", "Tournament": "SportsEvent",
                         "SportsTournament": "Tournament", "TennisTournament": "SportsTournament",
                         "SoccerTournament": "SportsTournament", "GolfTournament": "SportsTournament",
                         "Place": None, "Country": "Place", "City": "Place", "Person": None,
                         "Politician": "Person"})
    counts = {"tennistournament": 30, "soccertournament": 50, "golftournament": 20, "country": 500, "city": 80,
              "politician": 90, "ENTITY": 1000}
    merge = merge_categories(counts, ontology, 4)
    assert {merge[c] for c in ("tennistournament", "soccertournament", "golftournament")} == {"sportstournament"}
    assert len(set(merge.values())) == 4 and merge["country"] == "country"
    # as a config of the corpus
    sentences = [[("tennistournament", f"T{i}")] for i in range(12)] + [[("golftournament", f"G{i}")] for i in range(12)]
    sentences += [[("country", f"C{i}")] for i in range(12)]
    work = _write_typed(tmp_path, sentences)
    builder = CorpusBuilder(work, CorpusOptions(merged_categories=2, balancing="none"), ontology=ontology)
    paths = write_selection(builder, tmp_path / "sel")
    assert set(paths) == {"all", "4types", "2types"}
    tags = {t for path in paths["2types"]["train"] for row in pq.read_table(path).to_pylist() for t in row["ner_tags"]}
    assert tags == {"O", "B-sportstournament", "B-country"}
    assert builder.merge == {"tennistournament": "sportstournament", "golftournament": "sportstournament",
                             "country": "country"}


@pytest.mark.parametrize("lam", [0.05, 0.8, 3.0, 40.0, 900.0])
def test_poisson_quantile_has_the_poisson_mean_and_variance(lam):
    n = 4000
    draws = [poisson_quantile((i + 0.5) / n, lam) for i in range(n)]  # a stratified grid of u
    mean = sum(draws) / n
    var = sum((d - mean) ** 2 for d in draws) / n
    assert abs(mean - lam) < 0.02 * lam + 0.01 and abs(var - lam) < 0.06 * lam + 0.02


def test_the_passes_in_two_processes_give_the_one_process_corpus(tmp_path):
    # three shards: the skewed corpus cut in three, so every pass merges shard counts (scarce categories,
    # distinct entities capped per shard, balancing rates) before the next
    work = _skewed(tmp_path / "w")
    folder = work / "stage2" / "typed"
    table = pq.read_table(folder / "00000.parquet")
    for number, start in enumerate(range(0, table.num_rows, 210)):
        pq.write_table(table.slice(start, 210), folder / f"{number:05d}.parquet")
    ontology = Ontology({"Place": None, "Country": "Place", "City": "Place", "Person": None, "Politician": "Person"})
    built = {}
    for workers in (1, 2):
        builder = CorpusBuilder(work, CorpusOptions(validation_fraction=0.2, merged_categories=2), ontology=ontology,
                                workers=workers)
        paths = write_selection(builder, tmp_path / f"sel{workers}")
        rows = {(config, split): [row for path in files for row in pq.read_table(path).to_pylist()]
                for config, splits in paths.items() for split, files in splits.items()}
        built[workers] = builder.steps, builder.rare, builder.merge, rows, [len(f) for s in paths.values()
                                                                             for f in s.values()]
    assert built[1] == built[2]
    steps, rare, _, rows, files = built[2]
    assert rare == {"politician"} and files == [3] * 6  # each shard wrote each config and split
    assert len(rows["all", "train"]) == steps[-2]["sentences"] and len(rows["all", "validation"]) == steps[-1]["sentences"]
    # the row-by-row view in this process is the same selection, in the same order
    one = CorpusBuilder(work, CorpusOptions(validation_fraction=0.2, merged_categories=2), ontology=ontology)
    by_row = [(split, row["tokens"], row["tags"]["2types"]) for split, row in one.select()]
    assert [r for r in by_row if r[0] == "train"] == [("train", r["tokens"], r["ner_tags"])
                                                      for r in rows["2types", "train"]]
