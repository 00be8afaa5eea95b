"""A user's own domain as it comes: JSON Lines with columns `words` / `labels`, string BIO tags and types CrossNER
never had, through Python and the CLI with the same figures; and the defects of issue 38 this part mends."""

from __future__ import annotations

import json
import logging

import pytest

from crossner_hf.cli import main as cli_main
from crossner_hf.data.conll import ConllFormatError, read_conll
from crossner_hf.data.target import load_target

pytestmark = pytest.mark.xdist_group("own-domain")

TYPES = {"politician": "investigator", "country": "lab", "politicalparty": "fundingbody"}  # renamed: unknown to CrossNER


def _jsonl_folder(crossner_data_dir, folder, *, orphan: bool = False):
    """politics as a user's JSON Lines folder: `words`, `labels` (strings), the types renamed, other types dropped."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, name in (("train", "train"), ("dev", "validation"), ("test", "test")):
        rows = []
        for s in read_conll(crossner_data_dir / "politics" / f"{split}.txt", None):
            tags = [t if t == "O" else (f"{t[:2]}{TYPES[t[2:]]}" if t[2:] in TYPES else "O") for t in s["ner_tags"]]
            rows.append({"words": s["tokens"], "labels": tags})
        if orphan and split == "train":
            rows[0]["labels"][0] = "I-lab"
        (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def mydata(crossner_data_dir, tmp_path_factory):
    return _jsonl_folder(crossner_data_dir, tmp_path_factory.mktemp("own") / "mydata")


def test_jsonl_with_string_tags_and_other_column_names_loads(mydata):
    target = load_target(str(mydata))  # no tokens / ner_tags: the first and second columns, as run_ner.py
    assert target.name == "mydata"
    assert target.labels[0] == "O" and set(target.labels[1:]) == {f"{p}-{t}" for t in TYPES.values() for p in "BI"}
    explicit = load_target(str(mydata), text_column="words", label_column="labels")
    assert explicit.labels == target.labels and explicit["test"]["ner_tags"] == target["test"]["ner_tags"]
    assert [len(target[s]) for s in ("train", "validation", "test")] == [200, 541, 651]
    with pytest.raises(ValueError, match="--label_column_name"):
        load_target(str(mydata), label_column="tags")
    with pytest.raises(ValueError, match="are not BIO"):  # columns swapped: one line naming the fix, no TypeError
        load_target(str(mydata), text_column="labels", label_column="words")


def test_one_orphan_rule_and_message_for_every_source(crossner_data_dir, tmp_path, caplog):
    jsonl = _jsonl_folder(crossner_data_dir, tmp_path / "orphans", orphan=True)
    with pytest.raises(ValueError) as from_jsonl:
        load_target(str(jsonl))
    conll = tmp_path / "conll"
    conll.mkdir()
    for name in ("train", "dev", "test"):
        (conll / f"{name}.txt").write_text("Geneva\tI-lab\nrocks\tO\n", encoding="utf-8")
    with pytest.raises(ConllFormatError) as from_conll:
        load_target(str(conll))
    tail = "use 'B-lab', or read it as 'B-lab' as conlleval does with strict=False (--strict false)."
    assert str(from_jsonl.value).endswith(tail) and str(from_conll.value).endswith(tail)
    assert "train row 0, word 0" in str(from_jsonl.value)
    with caplog.at_level(logging.WARNING):
        repaired = load_target(str(jsonl), strict=False)
    assert repaired["train"].features["ner_tags"].feature.int2str(repaired["train"][0]["ner_tags"][0]) == "B-lab"
    assert sum("repaired 1 orphan" in r.getMessage() for r in caplog.records) == 1  # said once, not per read


def test_a_misspelled_folder_says_no_such_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such folder or file .*as a Hub dataset id it was not looked up"):
        load_target("mydata_cnll")
    assert cli_main(["report", "--model", "x", "--dataset_dir", "mydata_cnll", "--output", "r.html"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such folder" in err[0] and "Couldn't reach" not in err[0]


def test_a_string_where_words_are_expected_is_refused(tiny_bert_dir, tmp_path):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.inference.tagger import Tagger

    model = AutoModelForTokenClassification.from_pretrained(tiny_bert_dir, num_labels=3,
                                                            id2label={0: "O", 1: "B-lab", 2: "I-lab"})
    model.save_pretrained(tmp_path / "m")
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(tmp_path / "m")
    tagger = Tagger.from_pretrained(tmp_path / "m")
    with pytest.raises(ValueError, match="sentence 0 is a str .* tag raw text with tag_texts"):
        tagger.tag(["Hinton works at Google ."])
    with pytest.raises(ValueError, match="got one str"):
        tagger.tag("Hinton works at Google .")
    assert len(tagger.tag([["Hinton", "works"]])[0]) == 2


def test_types_without_a_hierarchy_skip_the_branch_analyses(tmp_path):
    from crossner_hf.evaluation.entity_analysis import confusion_table
    from crossner_hf.evaluation.plots import plot_entity_confusion
    from crossner_hf.evaluation.report.analysis import hierarchy_scores

    gold = [["B-lab", "O", "B-investigator", "I-investigator"]]
    pred = [["B-investigator", "O", "B-lab", "I-lab"]]
    table = confusion_table(gold, pred)
    assert table.type_errors == 2 and table.in_branch_share is None
    assert "skipped (none of these types is in the CrossNER" in table.format()
    assert hierarchy_scores(gold, pred, n_boot=10)["skipped"] is True
    assert hierarchy_scores([["B-politician"]], [["B-person"]], n_boot=10)["skipped"] is False
    pytest.importorskip("matplotlib")
    for given in (table, table.to_dict()):  # the table whole or its JSON form, not only rows/columns/counts
        assert plot_entity_confusion(given, tmp_path / "c.png").is_file()


@pytest.mark.slow
def test_own_domain_through_the_cli_with_the_figures_python_gives(mydata, tiny_bert_dir, tmp_path, capsys):
    from crossner_hf.evaluation.metrics import compute_ner_metrics
    from crossner_hf.inference.tagger import Tagger

    out = tmp_path / "run"
    rc = cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(mydata),
                   "--text_column_name", "words", "--label_column_name", "labels", "--output_dir", str(out),
                   "--max_steps", "30", "--per_device_train_batch_size", "16", "--learning_rate", "3e-3",
                   "--seeds", "5", "--disable_tqdm", "true", "--use_cpu", "true"])
    assert rc == 0
    results = json.loads((out / "results.json").read_text())
    assert results["domain"] == "mydata"
    card = (out / "README.md").read_text()
    assert "**mydata** (your own dataset" in card and "of CrossNER" not in card and "- crossner\n" not in card
    target = load_target(str(mydata))
    names = target.labels
    gold = [[names[i] for i in row] for row in target["test"]["ner_tags"]]
    pred = Tagger.from_pretrained(out).tag(list(target["test"]["tokens"]))
    assert {t[2:] for row in pred for t in row if t != "O"} <= set(TYPES.values())
    f1 = compute_ner_metrics(gold, pred)["overall_f1"]
    assert f1 == pytest.approx(results["test_overall_f1_mean"], abs=1e-9)
    capsys.readouterr()
    html = tmp_path / "mine.html"
    assert cli_main(["report", "--model", str(out), "--dataset_dir", str(mydata), "--output", str(html),
                     "--n_boot", "20"]) == 0
    page = html.read_text()
    assert 'data-testid="hierarchy-skipped"' in page and "CrossNER mydata" not in page
    assert cli_main(["confusion", "--model", str(out), "--dataset_dir", str(mydata),
                     "--output_dir", str(tmp_path / "conf")]) == 0
    record = json.loads((tmp_path / "conf" / "confusion.json").read_text())
    assert record["source"]["dataset"] == "mydata" and record["in_branch_share"] is None


def test_decoding_never_chooses_excluded_labels():
    import numpy as np

    from crossner_hf.modeling.decoding import decode

    names = ["O", "B-lab", "I-lab", "B-person", "I-person"]
    scores = [np.log(np.array([[0.05, 0.05, 0.05, 0.8, 0.05], [0.05, 0.05, 0.05, 0.05, 0.8]]))]
    for decoding in ("bio-viterbi", "argmax"):
        assert decode(scores, names, decoding) == [[3, 4]]
        assert all(names[i] in ("O", "B-lab", "I-lab") for i in decode(scores, names, decoding, ["B-person", "I-person"])[0])


@pytest.mark.slow
def test_joint_answers_in_the_users_schema(mydata, tiny_bert_dir, tmp_path):
    """Joint training adds CoNLL-2003's person / organisation / location / misc to the head; the saved model
    records the user's labels, and every predictor masks the rest, even a head that prefers them."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.inference.tagger import Tagger
    from crossner_hf.modeling.heads import PROVENANCE_ATTRIBUTE, excluded_labels

    out = tmp_path / "joint"
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(mydata),
                     "--schedule", "joint", "--source_subsample", "64", "--oversample_factor", "2",
                     "--output_dir", str(out), "--max_steps", "12", "--per_device_train_batch_size", "16",
                     "--seeds", "5", "--disable_tqdm", "true", "--use_cpu", "true"]) == 0
    model = AutoModelForTokenClassification.from_pretrained(out)
    target = load_target(str(mydata))
    assert model.config.num_labels > len(target.labels)  # the head holds the source's extra types
    assert model.config.crossner_provenance["output_labels"] == target.labels
    assert set(excluded_labels(model)) == {f"{p}-{t}" for t in ("person", "organisation", "location", "misc")
                                           for p in "BI"}
    with torch.no_grad():  # a head that prefers a source-only type for every word
        model.classifier.bias[model.config.label2id["B-person"]] = 50.0
    forced = tmp_path / "forced"
    model.save_pretrained(forced)
    AutoTokenizer.from_pretrained(out).save_pretrained(forced)
    words = list(target["test"]["tokens"])[:20]
    pred = Tagger.from_pretrained(forced).tag(words)
    assert all(t == "O" or t[2:] in TYPES.values() for row in pred for t in row)
    texts = Tagger.from_pretrained(forced).tag_texts(["Hinton works at Google in London ."])
    assert all(e["entity_group"] in TYPES.values() for e in texts[0]["entities"])
    # the union stays available: without the recorded schema the head's preference shows
    raw = json.loads((forced / "config.json").read_text())
    raw[PROVENANCE_ATTRIBUTE]["output_labels"] = None
    (forced / "config.json").write_text(json.dumps(raw))
    assert any(t == "B-person" for row in Tagger.from_pretrained(forced).tag(words) for t in row)
