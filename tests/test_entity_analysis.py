"""Entity representations (t-SNE, silhouette) and the hierarchy confusion table, by hand and end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from crossner_hf.evaluation import plots
from crossner_hf.data.conll import ConllFormatError, write_conll
from crossner_hf.evaluation.entity_analysis import (
    confusion_table,
    entity_representations,
    gold_entities,
    load_encoder,
    read_prediction_conll,
    silhouette_by_category,
    tsne_plot,
    word_representations,
)
from crossner_hf.evaluation.hierarchy import NO_ENTITY, coarse_type
from crossner_hf.data.labels import LABELS

ROOT = Path(__file__).resolve().parents[1]

# One error of each kind, one sentence each (entities in the conlleval reading):
TOKENS = [
    ["Merkel", "visited", "Paris"],
    ["The", "Beatles", "played"],
    ["Germany", "won"],
    ["jazz", "is", "fun"],
    ["the", "Green", "Party", "won"],
    ["New", "York", "City"],
]
GOLD = [
    ["B-politician", "O", "B-location"],               # politician, location
    ["B-band", "I-band", "O"],                          # band
    ["B-country", "O"],                                 # country
    ["O", "O", "O"],                                    # (none)
    ["O", "B-politicalparty", "I-politicalparty", "O"],  # politicalparty "Green Party"
    ["B-location", "I-location", "I-location"],         # location "New York City"
]
PRED = [
    ["B-person", "O", "B-location"],    # politician -> person: wrong type INSIDE the person branch; Paris correct
    ["B-song", "I-song", "O"],          # band -> song: wrong type ACROSS branches (organisation vs song)
    ["O", "O"],                         # country -> no entity: missed
    ["B-musicgenre", "O", "O"],         # no entity -> musicgenre: spurious
    ["O", "O", "B-politicalparty", "O"],  # "Party" only: boundary error, right type -> diagonal cell
    ["B-country", "I-country", "O"],    # "New York": boundary error AND type, location -> country (in branch)
]
# Boundary errors count once, in (gold type, predicted type), as hierarchy.entity_confusion does:
# never as a missed plus a spurious entity. So:
#   kinds: correct 1 (Paris), wrong-type 2, wrong-boundary 2, missed 1, spurious 1  (7 matched items)
#   type errors (both sides entities, types differ): politician->person, band->song, location->country = 3
#   in one branch: politician->person (person), location->country (location) = 2 -> share 2/3
#   rows (gold types with entities, then "no entity"): band, country, location, politicalparty, politician,
#   no entity = 6; columns (all types seen, then "no entity"): band, country, location, musicgenre, person,
#   politicalparty, politician, song, no entity = 9
ROWS = ["band", "country", "location", "politicalparty", "politician", NO_ENTITY]
COLUMNS = ["band", "country", "location", "musicgenre", "person", "politicalparty", "politician", "song", NO_ENTITY]


@pytest.fixture()
def drawn(monkeypatch):
    """Every figure plots.py saves, captured before it is written (its artists survive plt.close)."""
    figures = []
    original = plots._save

    def keep(plt, fig, path):
        figures.append(fig)
        return original(plt, fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


@pytest.fixture()
def env(monkeypatch, tmp_path, crossner_data_dir):
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))


def _cell(table, gold, pred):
    return table.counts[table.rows.index(gold)][table.columns.index(pred)]


# ------------------------------------------------------------------------------- confusion


def test_coarse_map_is_the_documented_one():
    for fine in ("politician", "scientist", "writer", "musicalartist", "researcher", "person"):
        assert coarse_type(fine) == "person"
    for fine in ("politicalparty", "band", "university", "organisation"):
        assert coarse_type(fine) == "organisation"
    assert coarse_type("country") == coarse_type("location") == "location"
    # hierarchy.py also files the publishing/meeting bodies under organisation (as the README says)
    assert {coarse_type(t) for t in ("conference", "magazine", "academicjournal")} == {"organisation"}
    for kept in ("song", "album", "election", "misc", "algorithm"):
        assert coarse_type(kept) == kept


def test_confusion_table_by_hand():
    t = confusion_table(GOLD, PRED)
    assert (t.rows, t.columns) == (ROWS, COLUMNS)
    assert _cell(t, "politician", "person") == 1 and _cell(t, "band", "song") == 1
    assert _cell(t, "country", NO_ENTITY) == 1 and _cell(t, NO_ENTITY, "musicgenre") == 1
    assert _cell(t, "politicalparty", "politicalparty") == 1  # the boundary error of the right type
    assert _cell(t, "location", "location") == 1 and _cell(t, "location", "country") == 1
    assert sum(map(sum, t.counts)) == 7
    assert t.kinds == {"correct": 1, "wrong-type": 2, "wrong-boundary": 2, "missed": 1, "spurious": 1}
    assert (t.type_errors, t.in_branch) == (3, 2) and t.in_branch_share == pytest.approx(2 / 3)
    location = t.row_percentages[t.rows.index("location")]
    assert location[t.columns.index("location")] == location[t.columns.index("country")] == 50.0
    assert all(sum(row) == pytest.approx(100.0) for row in t.row_percentages)
    d = json.loads(json.dumps(t.to_dict()))
    assert d["counts"]["band"]["song"] == 1 and d["in_branch_share"] == pytest.approx(2 / 3)
    assert d["coarse_types"]["politician"] == "person" and NO_ENTITY not in d["coarse_types"]


def test_confusion_text_and_heatmap(tmp_path, drawn):
    t = confusion_table(GOLD, PRED)
    text = t.format()
    assert "type errors inside one coarse branch: 66.67% of 3" in text
    assert "entities by kind: correct 1, wrong-type 2, wrong-boundary 2, missed 1, spurious 1" in text
    assert "1 (50%)" in text and "1 (100%)" in text  # location -> location / country; country -> no entity
    png = plots.plot_entity_confusion(t.rows, t.columns, t.counts, tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ax = drawn[-1].axes[0]
    image = ax.images[0].get_array()
    assert image.shape == (6, 9)  # one cell per (gold row, predicted column)
    assert image[ROWS.index("location"), COLUMNS.index("country")] == 50.0
    assert bool(image.mask[ROWS.index(NO_ENTITY), COLUMNS.index(NO_ENTITY)])  # no such cell: grey
    assert sorted(x.get_text() for x in ax.texts) == sorted(["1\n100%"] * 5 + ["1\n50%"] * 2)  # 7 non-empty cells


def test_read_prediction_conll_errors_name_the_line(tmp_path):
    bad = tmp_path / "bad.conll"
    bad.write_text("Obama\tB-politician\tB-politician\nspoke\tO\n")
    with pytest.raises(ConllFormatError, match="bad.conll, line 2: expected 3 tab-separated columns"):
        read_prediction_conll(bad)
    bad.write_text("Obama\tB-politician\tB-band\n")
    with pytest.raises(ConllFormatError, match="line 1: tag 'B-band' is not one of the config's labels"):
        read_prediction_conll(bad, LABELS["politics"])
    with pytest.raises(FileNotFoundError, match="--predictions"):
        read_prediction_conll(tmp_path / "missing.conll")


def test_confusion_command_from_predictions(tmp_path, drawn):
    from crossner_hf.commands.confusion import main, make_parser

    conll = tmp_path / "pred.conll"
    write_conll(conll, [{"tokens": w, "gold": g, "pred": p} for w, g, p in zip(TOKENS, GOLD, PRED)],
                columns=("tokens", "gold", "pred"))
    assert read_prediction_conll(conll) == (TOKENS, GOLD, PRED)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"}
    res = subprocess.run([sys.executable, "-m", "crossner_hf.cli", "confusion", "--predictions", str(conll),
                          "--output_dir", str(tmp_path / "cli")], capture_output=True, text=True, timeout=300,
                         env=env, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "type errors inside one coarse branch: 66.67% of 3" in res.stdout
    data = json.loads((tmp_path / "cli" / "confusion.json").read_text())
    assert data["rows"] == ROWS and data["counts"]["location"]["country"] == 1 and data["type_errors"] == 3
    assert (tmp_path / "cli" / "confusion.png").is_file() and (tmp_path / "cli" / "confusion.txt").is_file()
    # the same in-process, to look at what was drawn
    (args,) = make_parser().parse_args_and_config(["--predictions", str(conll), "--output_dir", str(tmp_path / "x")])
    assert main(args) == 0
    assert drawn[-1].axes[0].images[0].get_array().shape == (len(ROWS), len(COLUMNS))
    for argv in (["--output_dir", "o"], ["--predictions", str(conll), "--model", "m"], ["--model", "m"]):
        with pytest.raises(ValueError, match="--model|--config"):
            make_parser().parse_args_and_config(argv)


@pytest.fixture(scope="module")
def music_tagger_dir(tiny_bert_dir, tmp_path_factory) -> str:
    """The tiny BERT with a random music token-classification head."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    labels = LABELS["music"]
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, id2label=dict(enumerate(labels)), label2id={t: i for i, t in enumerate(labels)}
    )
    out = tmp_path_factory.mktemp("music_tagger")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    return str(out)


def test_confusion_command_with_a_model(tmp_path, env, music_tagger_dir, drawn, capsys):
    from crossner_hf.commands.confusion import main, make_parser

    out = tmp_path / "out"
    (args,) = make_parser().parse_args_and_config(["--model", music_tagger_dir, "--domain", "music", "--split",
                                                   "train", "--output_dir", str(out)])
    assert main(args) == 0
    data = json.loads((out / "confusion.json").read_text())
    words, gold, pred = read_prediction_conll(out / "predictions.conll", LABELS["music"])
    assert len(gold) == data["sentences"] == 100
    assert data["counts"] == confusion_table(gold, pred).to_dict()["counts"]
    assert sum(data["kinds"][k] for k in ("correct", "wrong-type", "wrong-boundary", "missed")) == len(
        gold_entities(gold))
    assert drawn[-1].axes[0].images[0].get_array().shape == (len(data["rows"]), len(data["columns"]))
    assert "gold \\ predicted" in capsys.readouterr().out
    # the saved predictions redraw the same table without the model
    (again,) = make_parser().parse_args_and_config(["--predictions", str(out / "predictions.conll"),
                                                    "--domain", "music", "--output_dir", str(tmp_path / "again")])
    assert main(again) == 0
    assert json.loads((tmp_path / "again" / "confusion.json").read_text())["counts"] == data["counts"]


# ------------------------------------------------------------------------- representations


def test_encoder_from_a_token_classification_folder(music_tagger_dir):
    import torch
    from transformers import AutoModelForTokenClassification

    encoder, tokenizer = load_encoder(music_tagger_dir)
    tagger = AutoModelForTokenClassification.from_pretrained(music_tagger_dir)
    assert not hasattr(encoder, "classifier")  # the head is dropped, the trained encoder weights kept
    for name, weight in tagger.base_model.state_dict().items():
        if not name.startswith("pooler"):
            assert torch.equal(weight, encoder.state_dict()[name]), name
    # the library function also takes the model with its head: it runs base_model
    sentences = [["Bob", "Dylan", "sang"], ["Paris"]]
    a = word_representations(encoder, tokenizer, sentences)
    b = word_representations(tagger, tokenizer, sentences)
    assert all(np.allclose(x, y, atol=1e-6) for x, y in zip(a, b))
    with pytest.raises(FileNotFoundError, match="--model"):
        load_encoder(str(Path(music_tagger_dir) / "nope"))


def test_representations_batching_and_windows(tiny_bert_dir):
    encoder, tokenizer = load_encoder(tiny_bert_dir)
    sentences = [["Obama", "visited", "Berlin"], ["The", "senate", "voted", "on", "the", "bill", "today"] * 3, ["x"]]
    tags = [["B-politician", "O", "B-location"], ["O"] * 21, ["B-misc"]]
    one = word_representations(encoder, tokenizer, sentences, batch_size=1)
    many = word_representations(encoder, tokenizer, sentences, batch_size=8)
    assert [len(x) for x in one] == [3, 21, 1] and one[0].shape[1] == encoder.config.hidden_size
    assert all(np.allclose(x, y, atol=1e-5) for x, y in zip(one, many))  # padding changes nothing
    windowed = word_representations(encoder, tokenizer, sentences, max_length=16, stride=4)
    assert [len(x) for x in windowed] == [3, 21, 1] and all(np.isfinite(x).all() for x in windowed)
    vectors, categories = entity_representations(encoder, tokenizer, sentences, tags)
    assert categories == ["politician", "location", "misc"]
    assert np.allclose(vectors[1], many[0][2], atol=1e-5) and np.allclose(vectors[2], many[2][0], atol=1e-5)
    sub, cats = entity_representations(encoder, tokenizer, sentences, tags, max_entities=2, seed=1)
    assert len(sub) == len(cats) == 2 and set(cats) <= set(categories)


def test_silhouette_and_tsne_on_separated_clusters(tmp_path, drawn):
    rng = np.random.default_rng(0)
    centres = np.eye(3, 16) * 10
    vectors = np.concatenate([c + rng.normal(size=(n, 16)) for c, n in zip(centres, (12, 8, 5))])
    categories = ["politician"] * 12 + ["country"] * 8 + ["election"] * 5
    scores = silhouette_by_category(vectors, categories)
    assert scores["metric"] == "cosine" and set(scores["per_category"]) == {"politician", "country", "election"}
    assert scores["overall"] > 0.5 and all(v > 0.5 for v in scores["per_category"].values())
    assert list(scores["counts"].items()) == [("politician", 12), ("country", 8), ("election", 5)]
    points = tsne_plot(vectors, categories, tmp_path / "t.png", seed=3, scores=scores)
    assert points.shape == (25, 2)
    assert np.array_equal(points, tsne_plot(vectors, categories, tmp_path / "u.png", seed=3))  # seeded
    ax = drawn[0].axes[0]
    assert sorted(len(c.get_offsets()) for c in ax.collections) == [5, 8, 12]
    assert [t.get_text() for t in ax.get_legend().get_texts()][0].startswith("politician (12, s=+0.")
    single = silhouette_by_category(vectors[:3], ["a"] * 3)
    assert single["overall"] is None and single["per_category"] == {"a": None}


def test_plot_entities_command_on_politics_dev(tmp_path, env, tiny_bert_dir, drawn, capsys):
    from crossner_hf.commands.plot_entities import main, make_parser

    png = tmp_path / "plots" / "dev.png"
    (args,) = make_parser().parse_args_and_config([
        "--model", tiny_bert_dir, "--domain", "politics", "--split", "validation", "--max_entities", "60",
        "--seed", "1", "--output", str(png)])
    assert main(args) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    record = json.loads(png.with_suffix(".json").read_text())
    ax = drawn[-1].axes[0]
    assert sum(len(c.get_offsets()) for c in ax.collections) == record["entities"] == 60  # one point per entity
    counts = record["silhouette"]["counts"]
    assert sum(counts.values()) == 60 and len(ax.collections) == len(counts)
    assert set(record["silhouette"]["per_category"]) == set(counts) <= {t[2:] for t in LABELS["politics"] if t != "O"}
    assert -1 <= record["silhouette"]["overall"] <= 1
    out = capsys.readouterr().out
    assert "silhouette (cosine)" in out and "overall" in out
    with pytest.raises(ValueError, match="--output"):
        make_parser().parse_args_and_config(["--model", tiny_bert_dir, "--output", "x.jpg"])


def test_a_type_keeps_its_colour_in_every_plot(tmp_path, monkeypatch):
    """Two plots whose types rank differently by frequency give each type the same colour (the old
    frequency-ordered palette swapped them)."""
    from matplotlib.axes import Axes

    from crossner_hf.data.labels import ALL_TYPES
    from crossner_hf.evaluation.plots import plot_entity_scatter, type_colour

    assert len({type_colour(t) for t in ALL_TYPES}) == len(ALL_TYPES)  # every CrossNER type its own colour
    seen: list[tuple[str, tuple]] = []
    real = Axes.scatter

    def recording(self, *args, color=None, label=None, **kwargs):
        seen.append((label.split(" ")[0], tuple(color)))
        return real(self, *args, color=color, label=label, **kwargs)

    monkeypatch.setattr(Axes, "scatter", recording)
    points = [[float(i), float(i % 3)] for i in range(6)]
    plot_entity_scatter(points, ["politician"] * 5 + ["person"], tmp_path / "a.png")
    first = dict(seen)
    seen.clear()
    plot_entity_scatter(points, ["person"] * 5 + ["politician"], tmp_path / "b.png")
    assert dict(seen) == first and first["politician"] != first["person"]
