"""The user's label order, everywhere (issue 66): a Parquet folder whose ``ner_tags`` is a ``ClassLabel`` in an order
that is neither alphabetical nor the order the types first appear, trained through ``train`` and through a smoke
``adapt``, gives a model whose ``config.id2label`` is the ``ClassLabel``'s names (CoNLL-2003's unmapped types after
them), and plain transformers scoring against the integer ``ner_tags`` gives the project's F1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossner_hf.cli import main as cli_main
from crossner_hf.data.conll import read_conll

RENAME = {"person": "Person", "misc": "Other", "location": None}  # None: tagged O; the rest keep their names
SIZES = {"train": 24, "dev": 16, "test": 16}


def _types(crossner_data_dir: Path) -> list[str]:
    from crossner_hf.data.labels import entity_types

    kept = [RENAME.get(t, t) for t in entity_types("politics") if RENAME.get(t, t)]
    return list(reversed(kept))  # the reverse of the release's order: not alphabetical, not first appearance


@pytest.fixture(scope="module")
def parquet_folder(crossner_data_dir, tmp_path_factory) -> tuple[Path, list[str]]:
    """politics as a Hub-style Parquet folder: ``ner_tags`` a ``ClassLabel`` in :func:`_types`' order."""
    from datasets import ClassLabel, Dataset, Features, List, Value

    types = _types(crossner_data_dir)
    names = ["O", *(f"{p}-{t}" for t in types for p in ("B", "I"))]
    features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names))})
    folder = tmp_path_factory.mktemp("label_order") / "products"
    folder.mkdir()
    for split, name in (("train", "train"), ("dev", "validation"), ("test", "test")):
        rows = {"tokens": [], "ner_tags": []}
        for s in read_conll(crossner_data_dir / "politics" / f"{split}.txt", None)[:SIZES[split]]:
            tags = []
            for t in s["ner_tags"]:
                kind = None if t == "O" else RENAME.get(t[2:], t[2:])
                tags.append(0 if kind is None else names.index(f"{t[:2]}{kind}"))
            rows["tokens"].append(s["tokens"])
            rows["ner_tags"].append(tags)
        Dataset.from_dict(rows, features=features).to_parquet(str(folder / f"{name}.parquet"))
    return folder, names


def _first_appearance(folder: Path) -> list[str]:
    from datasets import load_dataset

    seen: dict[str, None] = {}
    train = load_dataset("parquet", data_files=str(folder / "train.parquet"))["train"]
    names = train.features["ner_tags"].feature.names
    for row in train["ner_tags"]:
        seen.update(dict.fromkeys(names[i][2:] for i in row if i))
    return list(seen)


def plain_transformers_f1(model_dir: Path, folder: Path, names: list[str]) -> tuple[float, list[list[str]]]:
    """The test split scored as anyone would with plain transformers: the integer ``ner_tags`` against the argmax
    of each word's first sub-word over the dataset's labels (the head's first ``len(names)`` rows: a head trained
    with CoNLL-2003 has its extra rows after them), both read through the dataset's ``ClassLabel``, never the
    model's id2label."""
    import torch
    from datasets import load_dataset
    from seqeval.metrics import f1_score
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    test = load_dataset("parquet", data_files=str(folder / "test.parquet"))["train"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
    gold, predicted = [], []
    for row in test:
        enc = tokenizer(row["tokens"], is_split_into_words=True, return_tensors="pt", truncation=True)
        with torch.no_grad():
            ids = model(**enc).logits[0, :, :len(names)].argmax(-1).tolist()
        words, seen = enc.word_ids(), set()
        tags = []
        for position, word in enumerate(words):
            if word is not None and word not in seen:
                seen.add(word)
                tags.append(names[ids[position]])
        gold.append([names[i] for i in row["ner_tags"]])
        predicted.append(tags)
    return f1_score(gold, predicted, mode=None, zero_division=0), predicted


def _project_tags(model_dir: Path, folder: Path) -> list[list[str]]:
    from crossner_hf import Tagger
    from crossner_hf.data.target import load_target

    tagger = Tagger.from_pretrained(str(model_dir), decoding="argmax")
    return tagger.tag([list(t) for t in load_target(str(folder))["test"]["tokens"]])


def _check(model_dir: Path, folder: Path, names: list[str], results: dict) -> None:
    project_f1 = (results["test"]["overall_f1"] if results["decoding"] == "argmax"
                  else results["test_mean"]["argmax"]["f1"])
    config = json.loads((model_dir / "config.json").read_text())
    id2label = [config["id2label"][str(i)] for i in range(len(config["id2label"]))]
    assert id2label[:len(names)] == names, id2label
    f1, plain = plain_transformers_f1(model_dir, folder, names)
    assert plain == _project_tags(model_dir, folder)  # word by word, whatever the names
    assert any(t != "O" for row in plain for t in row)  # a random tiny head tags entities: the check can fail
    assert f1 == pytest.approx(project_f1, abs=1e-9)


TRAIN = ["--max_steps", "2", "--per_device_train_batch_size", "8", "--seeds", "1", "--decoding", "argmax",
         "--disable_tqdm", "true", "--use_cpu", "true", "--eval_strategy", "steps", "--eval_steps", "2",
         "--save_strategy", "steps", "--save_steps", "2"]


def test_train_keeps_the_classlabel_order_and_plain_transformers_scores_the_same_f1(parquet_folder, tiny_bert_dir,
                                                                                    tmp_path):
    folder, names = parquet_folder
    assert names[1:] != sorted(names[1:])
    assert [n[2:] for n in names[1::2]] != _first_appearance(folder)  # the order strings would give differs
    out = tmp_path / "direct"
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(folder),
                     "--output_dir", str(out), *TRAIN]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == names
    _check(out, folder, names, results)


@pytest.mark.slow
def test_joint_appends_conll_types_after_the_users_and_the_card_says_why(parquet_folder, tiny_bert_dir, tmp_path):
    folder, names = parquet_folder
    out = tmp_path / "joint"
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(folder),
                     "--output_dir", str(out), "--schedule", "joint", "--source_subsample", "16",
                     "--oversample_factor", "2", "--source_label_map", "misc=Other,person=Person", *TRAIN]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["labels"] == [*names, "B-location", "I-location"]
    _check(out, folder, names, results)
    card = (out / "README.md").read_text()
    assert "`B-location`, `I-location` come from CoNLL-2003" in card and "misc=Other" in card


@pytest.mark.slow
def test_dapt_then_train_keeps_the_classlabel_order(parquet_folder, tiny_bert_dir, tmp_path):
    from crossner_hf import DAPTConfig, dapt
    from crossner_hf.data.target import load_target

    folder, names = parquet_folder
    raw = [" ".join(row) for row in load_target(str(folder))["train"]["tokens"]]
    adapted = dapt(tiny_bert_dir, raw, DAPTConfig(output_dir=str(tmp_path / "dapt"), max_steps=1, block_size=64,
                                                  per_device_train_batch_size=4, use_cpu=True, disable_tqdm=True))
    out = tmp_path / "from-dapt"
    assert cli_main(["train", "--model_name_or_path", str(adapted.output_dir), "--dataset_dir", str(folder),
                     "--output_dir", str(out), *TRAIN]) == 0
    _check(out, folder, names, json.loads((out / "results.json").read_text()))


@pytest.mark.slow
def test_a_smoke_adapt_ships_the_classlabel_order(parquet_folder, tiny_bert_dir, tmp_path):
    from crossner_hf.data.target import load_target
    from crossner_hf.selection import AdaptConfig, adapt

    folder, names = parquet_folder
    result = adapt(tiny_bert_dir, load_target(str(folder)),
                   AdaptConfig(budget="smoke", methods=["direct"], max_steps=2, output_dir=str(tmp_path / "out")))
    best = tmp_path / "out" / "best"
    assert json.loads((tmp_path / "out" / "data" / "products" / "labels.json").read_text()) == names
    _check(best, folder, names, json.loads((best / "results.json").read_text()))
    assert result.chosen == "direct"


def _jsonl_folder(folder: Path, types: list[str]) -> Path:
    rows = [{"tokens": ["Ada", "joined", "Acme", "in", "Paris", "."],
             "ner_tags": [f"B-{types[0]}", "O", f"B-{types[1]}", "O", f"B-{types[2]}", "O"]},
            {"tokens": ["Prize", "day"], "ner_tags": [f"B-{types[3]}", "O"]}] * 3
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "validation", "test"):
        (folder / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


def test_string_tags_take_the_label_list_or_the_folders_labels_json(tmp_path):
    from crossner_hf.data.target import load_target

    folder = _jsonl_folder(tmp_path / "d", ["Person", "Organization", "Location", "Other"])
    seen = ["O", "B-Person", "I-Person", "B-Organization", "I-Organization", "B-Location", "I-Location", "B-Other",
            "I-Other"]
    assert load_target(str(folder)).labels == seen  # first appearance
    mine = ["O", "B-Other", "I-Other", "B-Location", "I-Location", "B-Person", "I-Person", "B-Organization",
            "I-Organization"]
    target = load_target(str(folder), label_list=",".join(mine))
    assert target.labels == mine and target.record()["flags"][-2:] == ["--label_list", ",".join(mine)]
    assert [mine[i] for i in target["train"][1]["ner_tags"]] == ["B-Other", "O"]
    (folder / "labels.json").write_text(json.dumps(mine))
    assert load_target(str(folder)).labels == mine
    (folder / "labels.json").write_text(json.dumps(mine[:5]))  # a tag the list lacks: one line naming the file
    with pytest.raises(ValueError, match=r"train.jsonl:1: tags \['B-Person', 'B-Organization'\] are not in .*labels"):
        load_target(str(folder))
    with pytest.raises(ValueError, match="expected a list of tags with \"O\" first"):
        load_target(str(folder), label_list="B-x,O")
    with pytest.raises(ValueError, match="is a CrossNER domain"):
        load_target("politics", label_list="O,B-x,I-x")


def test_misc_is_proposed_as_other_and_a_person_s_names_are_matched():
    from crossner_hf.data.labels import propose_label_map

    conll = ["person", "organisation", "location", "misc"]
    assert propose_label_map(conll, ["Person", "Organization", "Location", "Other"]) == {
        "person": "Person", "organisation": "Organization", "location": "Location", "misc": "Other"}
    assert propose_label_map(conll, ["PER", "Org", "Place", "Miscellaneous"]) == {
        "person": "PER", "organisation": "Org", "location": "Place", "misc": "Miscellaneous"}
    assert propose_label_map(conll, ["People", "organisations", "LOC", "MISC"]) == {
        "person": "People", "organisation": "organisations", "location": "LOC", "misc": "MISC"}
    assert propose_label_map(conll, ["x_person", "Persons", "lab"]) == {"person": "Persons"}  # a name over a prefix
    assert propose_label_map(conll, ["Per", "People"]) == {}  # two could stand for person: none proposed
    assert propose_label_map(conll, ["person", "Person"]) == {}  # the target has it as it is


def test_the_data_check_and_the_dry_run_show_the_map_and_a_misspelt_one_is_one_line_before_anything(tmp_path,
                                                                                                   capsys):
    folder = _jsonl_folder(tmp_path / "d", ["Person", "Organization", "Location", "Other"])
    assert cli_main(["data", "--dataset_dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert ("CoNLL-2003's types in pretrain-finetune and joint: person=Person,organisation=Organization,"
            "location=Location,misc=Other mapped") in out and "adapt applies it" in out
    assert cli_main(["data", "--dataset_dir", str(folder), "--source_label_map", "person=Persn"]) == 1
    assert "has no type 'Persn'" in capsys.readouterr().out

    flags = ["adapt", "--dataset_dir", str(folder), "--model_name_or_path", "m", "--budget", "smoke",
             "--output_dir", str(tmp_path / "out"), "--dry_run"]
    assert cli_main(flags) == 0
    out = capsys.readouterr().out
    joint = next(line for line in out.splitlines() if "--schedule joint" in line)
    assert "--source_label_map person=Person,organisation=Organization,location=Location,misc=Other" in joint
    assert ("CoNLL-2003's types in pretrain-finetune and joint: person=Person,organisation=Organization,"
            "location=Location,misc=Other mapped") in out
    assert cli_main([*flags, "--source_label_map", "none"]) == 0
    assert "person, organisation, location, misc added after your tags" in capsys.readouterr().out
    assert cli_main([*flags, "--source_label_map", "person=Persn"]) != 0
    captured = capsys.readouterr()
    error = captured.err.strip().splitlines()
    assert len(error) == 1 and "has no type 'Persn'" in error[0] and "did you mean 'Person'?" in error[0], error
    assert "crossner-hf train" not in captured.out and not (tmp_path / "out").exists()


def test_a_run_of_adapt_refuses_a_misspelt_map_before_any_cell(tmp_path):
    from crossner_hf.selection import AdaptConfig, adapt

    folder = _jsonl_folder(tmp_path / "d", ["Person", "Organization", "Location", "Other"])
    with pytest.raises(ValueError, match="has no type 'misk'"):
        adapt("m", str(folder), AdaptConfig(budget="smoke", output_dir=str(tmp_path / "out"),
                                            source_label_map="misk=Other"))
    assert not (tmp_path / "out" / "cells").exists()


def test_a_long_label_list_on_the_command_line_is_a_list_not_a_path():
    """A comma-separated ``--label_list`` longer than a file name may be (255 bytes) is read as tags, never an
    ``OSError: File name too long`` from asking whether it names a file."""
    from crossner_hf.data.labels import parse_label_list

    tags = ["O", *(f"{p}-type{i}" for i in range(40) for p in ("B", "I"))]
    assert len(",".join(tags)) > 255
    assert parse_label_list(",".join(tags)) == tags


def test_a_source_tag_missing_from_a_large_target_list_is_one_short_line():
    """The source's tags checked against a target's list name a few of each, not 15,000 tags in one message."""
    from crossner_hf.data.labels import map_tags_by_name

    target = ["O", *(f"{p}-t{i}" for i in range(7500) for p in ("B", "I"))]
    with pytest.raises(ValueError) as raised:
        map_tags_by_name(["O", "B-person", "I-person"], target)
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and len(message) < 600, message[:300]
    assert "B-person, I-person" in message and "14981 more" in message and "--source_label_map" in message
    assert map_tags_by_name(["O", "B-t3"], target) == ["O", "B-t3"]
