"""ONNX export behind the same Tagger: fp32 tags equal PyTorch's, int8 loads and tags and its card states the
F1 the shipped path gives, every command takes the folder, and a missing extra or a damaged file is one line."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("onnxruntime")

from crossner_hf.cli import main as cli_main  # noqa: E402
from crossner_hf.data.conll import read_conll  # noqa: E402
from crossner_hf.data.labels import LABELS  # noqa: E402
from crossner_hf.inference.tagger import Tagger  # noqa: E402

pytestmark = pytest.mark.xdist_group("onnx")


@pytest.fixture(scope="module")
def torch_folder(tiny_bert_dir, tmp_path_factory):
    """A tiny BERT with a random 19-label politics head that records bio-viterbi decoding and a results.json
    naming politics (what `crossner-hf train` leaves): random weights give varied tags to compare."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    labels = LABELS["politics"]
    torch.manual_seed(3)
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={t: i for i, t in enumerate(labels)})
    with torch.no_grad():  # a head with strong, varied preferences, so many words get entity tags
        model.classifier.weight.mul_(40)
    model.config.crossner_provenance = {"decoding": "bio-viterbi", "head": {"trained_by": "train"}, "pretraining": []}
    out = tmp_path_factory.mktemp("onnx-src") / "politics-model"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    from crossner_hf.results import shared_record

    (out / "results.json").write_text(json.dumps(shared_record(
        "finetune", model="tiny", dataset={"name": "politics", "source": "crossner"}, seeds=[1], dev=None, test=None,
        seconds=0.0)))
    return out


@pytest.fixture(scope="module")
def exported(torch_folder, crossner_data_dir, tmp_path_factory):
    """fp32 and int8 exports, each scored on politics test at export (the default: results.json's dataset)."""
    import os

    from crossner_hf.publishing.onnx_export import export_onnx

    os.environ.setdefault("CROSSNER_DATA_DIR", str(crossner_data_dir))
    root = tmp_path_factory.mktemp("onnx-out")
    fp32 = export_onnx(torch_folder, root / "fp32", threads=1)
    int8 = export_onnx(torch_folder, root / "int8", quantize="int8", threads=1)
    return {"fp32": fp32, "int8": int8}


def _test_words(crossner_data_dir):
    sents = read_conll(crossner_data_dir / "politics" / "test.txt", LABELS["politics"])
    return [s["tokens"] for s in sents], [s["ner_tags"] for s in sents]


def test_fp32_export_tags_exactly_as_pytorch(torch_folder, exported, crossner_data_dir):
    words, _ = _test_words(crossner_data_dir)
    reference = Tagger.from_pretrained(torch_folder)
    onnx = Tagger.from_pretrained(exported["fp32"].output_dir, threads=1)
    assert onnx.runtime == "onnxruntime (fp32)" and reference.runtime == "pytorch"
    assert onnx.decoding == reference.decoding == "bio-viterbi" and onnx.labels == reference.labels
    ours, theirs = onnx.tag(words, batch_size=16), reference.tag(words, batch_size=16)
    assert ours == theirs
    assert sum(t != "O" for sent in ours for t in sent) > 100  # the comparison is not of all-O outputs
    texts = ["Angela Merkel met Emmanuel Macron in Paris , France .", "The senate voted ."]
    for a, b in zip(onnx.tag_texts(texts), reference.tag_texts(texts), strict=True):
        assert a["words"] == b["words"] and a["tags"] == b["tags"]
        assert [{**e, "score": None} for e in a["entities"]] == [{**e, "score": None} for e in b["entities"]]
        assert [e["score"] for e in a["entities"]] == pytest.approx([e["score"] for e in b["entities"]], abs=1e-5)
    evaluation = exported["fp32"].evaluation
    assert evaluation["tags_identical"] is True and evaluation["f1"] == evaluation["pytorch_f1"]
    assert evaluation["sentences"] == len(words) and evaluation["dataset"] == "politics"


def test_threads_reach_the_runtime(exported):
    tagger = Tagger.from_pretrained(exported["fp32"].output_dir, threads=1)
    assert tagger.model.session.get_session_options().intra_op_num_threads == 1
    with pytest.raises(ValueError, match="positive number"):
        Tagger.from_pretrained(exported["fp32"].output_dir, threads=0)


def test_int8_export_loads_tags_and_its_card_states_what_predict_gives(exported, crossner_data_dir, capsys):
    from pathlib import Path

    folder = Path(exported["int8"].output_dir)
    config = json.loads((folder / "config.json").read_text())
    record = config["crossner_onnx"]
    assert record["precision"] == "int8" and record["quantization"]["per_channel"] is True
    assert record["quantization"]["nodes_kept_fp32"], "the classifier stays fp32"
    import onnx

    ops = {node.op_type for node in onnx.load(str(folder / "model.onnx")).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops or "DynamicQuantizeMatMul" in ops, ops
    # activations are scaled per tensor at run time: each window runs alone, so the batch cannot move the tags
    assert record["quantization"]["runs"] == "one window at a time"
    assert record["exported_from"] == "politics-model"  # a name, never an absolute local path
    tagger = Tagger.from_pretrained(folder)
    assert tagger.runtime == "onnxruntime (int8)"
    words, _ = _test_words(crossner_data_dir)
    assert [len(t) for t in tagger.tag(words[:20])] == [len(w) for w in words[:20]]
    card = (folder / "README.md").read_text()
    f1 = record["evaluation"]["f1"]
    assert "ONNX Runtime, int8" in card and f"{100 * f1:.2f}" in card
    # the figure on the card is the figure `predict --conll` prints on the shipped folder
    rc = cli_main(["predict", "--model", str(folder), "--conll", str(crossner_data_dir / "politics" / "test.txt"),
                   "--output", str(folder.parent / "pred.conll"), "--threads", "1"])
    assert rc == 0
    assert f"F1 {100 * f1:.2f} (conlleval)" in capsys.readouterr().err


def test_int8_tags_do_not_depend_on_the_batch(exported, crossner_data_dir):
    """Dynamic quantisation scales activations by the tensor it is given: batched (padding included), a
    sentence's tags, and the F1, moved with --batch_size; each window run alone gives every batch size the same
    tags."""
    tagger = Tagger.from_pretrained(exported["int8"].output_dir, threads=1)
    words, _ = _test_words(crossner_data_dir)
    one, thirty_two, sixty_four = (tagger.tag(words, batch_size=b) for b in (1, 32, 64))
    assert one == thirty_two == sixty_four
    assert sum(t != "O" for row in one for t in row) > 100  # the head tags many words: the comparison says something


def test_export_names_why_it_has_no_dataset(torch_folder, tmp_path, caplog):
    """A results.json naming local files is not 'no results.json', which is said only when there is none."""
    import logging
    import shutil

    from crossner_hf.publishing.onnx_export import export_onnx

    local = tmp_path / "local-model"
    shutil.copytree(torch_folder, local)
    from crossner_hf.results import shared_record

    (local / "results.json").write_text(json.dumps(shared_record(
        "finetune", model="tiny", dataset={"name": "mydata", "source": None}, seeds=[1], dev=None, test=None,
        seconds=0.0)))
    with caplog.at_level(logging.WARNING):
        export_onnx(local, tmp_path / "fp32", threads=1)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "names the dataset 'mydata', local files" in said and "no results.json" not in said
    (local / "results.json").unlink()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        export_onnx(local, tmp_path / "fp32-again", threads=1)
    assert "has no results.json, so it names no dataset" in caplog.text


def test_report_and_confusion_take_an_onnx_folder(exported, crossner_data_dir, tmp_path, capsys):
    folder = exported["int8"].output_dir
    html = tmp_path / "report.html"
    assert cli_main(["report", "--model", folder, "--domain", "politics", "--data_dir", str(crossner_data_dir),
                     "--output", str(html), "--n_boot", "20"]) == 0
    assert html.is_file() and "<html" in html.read_text().lower()
    assert cli_main(["confusion", "--model", folder, "--domain", "politics", "--data_dir", str(crossner_data_dir),
                     "--output_dir", str(tmp_path / "conf")]) == 0


def test_missing_extra_is_one_line(exported, torch_folder, tmp_path, monkeypatch, capsys):
    import sys

    from crossner_hf.extras import MissingExtraError

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if the onnx extra were not installed
    with pytest.raises(MissingExtraError, match=r'pip install "crossner_hf\[onnx\]"'):
        Tagger.from_pretrained(exported["fp32"].output_dir)
    assert cli_main(["export", "--model", str(torch_folder), "--output_dir", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'pip install "crossner_hf[onnx]"' in err[0]


@pytest.mark.parametrize("damage", ["truncated graph", "garbage graph, no hash", "broken config"])
def test_a_damaged_onnx_folder_is_one_line(exported, tmp_path, damage, capsys):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(exported["fp32"].output_dir, folder)
    graph, config = folder / "model.onnx", folder / "config.json"
    if damage == "truncated graph":
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
        expect = "SHA-256 differs"
    elif damage == "garbage graph, no hash":
        raw = json.loads(config.read_text())
        raw["crossner_onnx"]["sha256"] = None
        config.write_text(json.dumps(raw))
        graph.write_bytes(b"not a protobuf" * 100)
        expect = "ONNX Runtime cannot load it"
    else:
        config.write_text(config.read_text()[:40])
        expect = "not valid JSON"
    assert cli_main(["predict", "--model", str(folder), "Obama visited Berlin ."]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0] and "crossner-hf export" in err[0], err


def test_corpus_builder_tags_through_tagger_and_the_onnx_folder(torch_folder, exported):
    from crossner_hf.corpora.model_mentions import ModelMentionFinder

    texts = ["Angela Merkel met Emmanuel Macron in Paris, France.", "", "The senate voted on the budget."]
    onnx = ModelMentionFinder(exported["fp32"].output_dir, batch_size=8, threads=1)
    pytorch = ModelMentionFinder(str(torch_folder), batch_size=8)
    found = onnx(texts)
    assert found == pytorch(texts) and found[1] == [] and sum(map(len, found)) > 0
    assert onnx.entity_types == pytorch.entity_types and onnx.fingerprint != pytorch.fingerprint
    # the mentions are the entities the Tagger gives (the model's Viterbi decoding), not a bare pipeline's
    tagged = onnx.tagger.tag_texts([texts[0]])[0]["entities"]
    assert [(m.start, m.end, m.type) for m in found[0]] == [(e["start"], e["end"], e["entity_group"]) for e in tagged]
