"""Table 1 counts, vocabulary overlap and the stats command."""

from __future__ import annotations

import json

from crossner_hf.cli import main
from crossner_hf.data.stats import entity_counts, top_words, vocabulary_overlap


def test_entity_counts_by_hand():
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    from crossner_hf.data.labels import LABELS

    names = LABELS["conll2003"]
    feats = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names))})
    tags = [["B-person", "I-person", "O", "B-location"], ["B-person", "B-person", "O", "O"]]
    ds = Dataset.from_dict(
        {"tokens": [["a"] * 4] * 2, "ner_tags": [[names.index(t) for t in s] for s in tags]}, features=feats
    )
    counts = entity_counts(DatasetDict({"train": ds}), "conll2003")
    assert counts["train"] == {"person": 3, "organisation": 0, "location": 1, "misc": 0}


def test_top_words_excludes_stopwords_and_punctuation():
    words = top_words([["The", "senate", ",", "Senate", "of", "1999", "votes"]], top_k=10)
    assert words == {"senate", "votes"}


def test_vocabulary_overlap_is_iou():
    m = vocabulary_overlap({"a": [["x1", "x2", "x3"]], "b": [["x2", "x3", "x4", "x5"]]}, top_k=10)
    assert m["a"]["b"] == m["b"]["a"] == 40.0 and m["a"]["a"] == 100.0


def test_stats_command(tmp_path, crossner_data_dir, monkeypatch, capsys):
    assert main(["stats", "--data_dir", str(crossner_data_dir), "--configs", "politics", "music",
                 "--output_dir", str(tmp_path / "st")]) == 0
    out = capsys.readouterr().out
    assert "== politics ==" in out and "politician" in out
    stats = json.loads((tmp_path / "st" / "stats.json").read_text())
    assert stats["sentences"]["music"] == {"train": 100, "validation": 380, "test": 465}
    assert stats["entities"]["politics"]["train"]["politician"] > 0
    png = (tmp_path / "st" / "vocabulary_overlap.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_overlap_colours_span_off_diagonal_only():
    from crossner_hf.evaluation.plots import overlap_colour_range

    m = {"a": {"a": 100.0, "b": 20.0, "c": 35.0}, "b": {"a": 20.0, "b": 100.0, "c": 10.0},
         "c": {"a": 35.0, "b": 10.0, "c": 100.0}}
    assert overlap_colour_range(m) == (10.0, 35.0)


def test_corpus_overlap_samples_paragraphs_and_ranks_the_top_words(tmp_path, crossner_data_dir, capsys):
    """The appendix's unlabeled-corpus overlap: a seeded paragraph sample per corpus, top-K words, IoU."""
    from crossner_hf.cli import main
    from crossner_hf.data.stats import corpus_overlap, sample_paragraphs

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(f"parliament vote {i} election\n\n" for i in range(50)), encoding="utf-8")
    b.write_text("".join(f"guitar album vote song{i % 3}\n" for i in range(50)), encoding="utf-8")
    sample = sample_paragraphs([a], 10, seed=1)
    assert len(sample) == 10 and sample == sample_paragraphs([a], 10, seed=1) != sample_paragraphs([a], 10, seed=2)
    assert all(line.strip() for line in sample) and len(sample_paragraphs([a], 1000)) == 50
    m = corpus_overlap({"pol": [a], "mus": [b]}, paragraphs=20, top_k=3)
    # pol's top 3: election, parliament, vote; mus's: album, guitar, vote -> 1 shared of 5
    assert m["pol"]["mus"] == m["mus"]["pol"] == 20.0 and m["pol"]["pol"] == 100.0
    assert main(["stats", "--data_dir", str(crossner_data_dir), "--configs", "politics", "--corpora",
                 f"pol={a}", f"mus={b}", "--corpus_paragraphs", "20", "--corpus_top_k", "3",
                 "--output_dir", str(tmp_path / "st")]) == 0
    stats = json.loads((tmp_path / "st" / "stats.json").read_text())
    assert stats["corpus_overlap"]["pol"]["mus"] == 20.0 and (tmp_path / "st" / "corpus_overlap.png").is_file()
    assert stats["corpus_overlap_settings"] == {"paragraphs": 20, "top_k": 3, "seed": 0}
    assert main(["stats", "--data_dir", str(crossner_data_dir), "--configs", "politics", "--corpora", "pol",
                 "--output_dir", str(tmp_path / "st2")]) == 2
    assert "write NAME=FILE" in capsys.readouterr().err
