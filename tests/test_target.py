"""crossner_hf.data.target and its neighbours: the one labeled loader, the one home of seeded draws (in
crossner_hf.data.target since issue 55), and the draws every seed made before they moved there."""

from __future__ import annotations

import json
import tempfile

import pytest

from crossner_hf.data.target import TargetData, draw_rows, few_shot_target, load_target, share

# The indices each workflow drew on main 612c7ef (before the draws moved to data/sampling.py), from a 40-row toy
# target / corpus whose row i holds i. They must never change: every figure of the README and docs that uses
# few-shot or a corpus share was measured on these draws.
PINNED_FINETUNE_FEW_SHOT_7_SEED_555 = [0, 27, 35, 25, 15, 22, 13]
PINNED_FINETUNE_FRACTION_025_SEED_1 = [9, 23, 17, 28, 0, 7, 6, 22, 15, 16]
PINNED_RNN_FEW_SHOT_5_SEED_9 = [22, 34, 21, 2, 31]
PINNED_RNN_TEXT_SHARE_025_SEED_3 = [0, 4, 8, 15, 23, 30, 34, 36, 37, 38]
PINNED_DAPT_SHARE_025_SEED_42 = [32, 7, 39, 18, 4, 37, 16, 5, 25, 28]


@pytest.fixture(scope="module")
def toy() -> TargetData:
    from datasets import Dataset, DatasetDict

    rows = {"id": [str(i) for i in range(40)], "tokens": [[f"w{i}"] for i in range(40)], "ner_tags": [[0]] * 40}
    return TargetData("toy", ["O"], DatasetDict({s: Dataset.from_dict(rows) for s in ("train", "validation", "test")}))


def _ids(target) -> list[int]:
    return [int(i) for i in target["train"]["id"]]


def test_the_few_shot_draws_are_the_ones_each_seed_made_before(toy):
    assert _ids(few_shot_target(toy, 555, few_shot=7)) == PINNED_FINETUNE_FEW_SHOT_7_SEED_555
    assert _ids(few_shot_target(toy, 1, fraction=0.25)) == PINNED_FINETUNE_FRACTION_025_SEED_1
    assert _ids(few_shot_target(toy, 9, few_shot=5)) == PINNED_RNN_FEW_SHOT_5_SEED_9
    assert few_shot_target(toy, 9) is toy  # no setting: the target as it is
    assert [int(i) for i in draw_rows(toy["train"], 100, 555)["id"]][:7] == PINNED_FINETUNE_FEW_SHOT_7_SEED_555


def test_the_workflows_draw_through_the_one_home(toy):
    """Fine-tuning's seed_target and the RNN recipes' training_target give the pinned draws (they call data/)."""
    from crossner_hf.training.rnn.recipes import RNNTaggerConfig
    from crossner_hf.training.schedules import seed_target
    from crossner_hf.training.training_args import FinetuneConfig

    out = tempfile.mkdtemp()
    assert [int(i) for i in seed_target(FinetuneConfig(output_dir=out, few_shot=7), 555, toy)["train"]["id"]] \
        == PINNED_FINETUNE_FEW_SHOT_7_SEED_555
    assert [int(i) for i in seed_target(FinetuneConfig(output_dir=out, few_shot_fraction=0.25), 1, toy)["train"]
            ["id"]] == PINNED_FINETUNE_FRACTION_025_SEED_1
    assert _ids(RNNTaggerConfig(output_dir=out, few_shot=5, seed=9).training_target(toy)) \
        == PINNED_RNN_FEW_SHOT_5_SEED_9


def test_corpus_shares_are_the_ones_each_seed_drew_before():
    from datasets import Dataset

    assert share(list(range(40)), 0.25, 3, "--source_text_fraction") == PINNED_RNN_TEXT_SHARE_025_SEED_3
    corpus = Dataset.from_dict({"text": [str(i) for i in range(40)]})
    assert [int(t) for t in share(corpus, 0.25, 42)["text"]] == PINNED_DAPT_SHARE_025_SEED_42
    # nested: the smaller share is inside the larger one of the same seed
    assert set(share(list(range(40)), 0.1, 3)) <= set(share(list(range(40)), 0.25, 3))
    assert share(corpus, 1.0, 42) is corpus
    with pytest.raises(ValueError, match=r"--target_text_fraction 1.5: give a share in \(0, 1\]"):
        share([1, 2], 1.5, 0, "--target_text_fraction")


def test_too_many_few_shot_sentences_is_one_line(toy):
    with pytest.raises(ValueError, match="--few_shot 41: toy train has 40 sentences; give 1 to that many"):
        few_shot_target(toy, 0, few_shot=41)


def test_load_target_takes_a_datasetdict_with_dev_named_dev():
    from datasets import Dataset, DatasetDict

    rows = {"words": [["Ada", "wrote"]], "labels": [["B-x_person", "O"]]}
    data = DatasetDict({s: Dataset.from_dict(rows) for s in ("train", "dev", "test")})
    target = load_target(data, name="mine")
    assert target.name == "mine" and target.labels == ["O", "B-x_person", "I-x_person"]
    assert len(target["validation"]) == 1 and target.source is None


@pytest.fixture(scope="module")
def politics_model(tmp_path_factory, tiny_bert_dir):
    """A tiny token classifier with the politics labels (an untrained head: the commands' data paths are tested)."""
    from transformers import AutoTokenizer

    from crossner_hf.data.labels import LABELS
    from crossner_hf.modeling.heads import token_classifier_from_pretrained

    out = tmp_path_factory.mktemp("politics") / "model"
    token_classifier_from_pretrained(tiny_bert_dir, LABELS["politics"]).save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    return out


def _first_sentences(crossner_data_dir, out, n: int = 40):
    """A CrossNER-layout folder holding the first ``n`` sentences of each politics file: what ``--domain`` reads
    is the same, and four evaluations of 40 sentences instead of 541 keep this test short."""
    folder = out / "politics"
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        blocks = (crossner_data_dir / "politics" / f"{split}.txt").read_text(encoding="utf-8").split("\n\n")
        (folder / f"{split}.txt").write_text("\n\n".join(blocks[:n]) + "\n", encoding="utf-8")
    return out


def test_every_evaluation_command_takes_domain(politics_model, tmp_path, crossner_data_dir, capsys):
    from crossner_hf.cli import main
    from crossner_hf.data.labels import LABELS

    small = _first_sentences(crossner_data_dir, tmp_path / "crossner")
    data = ["--data_dir", str(small), "--split", "validation"]
    assert main(["report", "--model", str(politics_model), "--domain", "politics", *data, "--n_boot", "5",
                 "--output", str(tmp_path / "r.html")]) == 0
    assert "F1" in capsys.readouterr().out
    assert main(["confusion", "--model", str(politics_model), "--domain", "politics", *data, "--output_dir",
                 str(tmp_path / "c")]) == 0
    record = json.loads((tmp_path / "c" / "confusion.json").read_text())
    assert record["source"]["dataset"] == "politics" and record["sentences"] == 40
    with pytest.raises(SystemExit):  # --domain takes CrossNER configs only; a folder goes to --dataset_dir
        main(["confusion", "--model", str(politics_model), "--domain", "mydata"])
    # predict takes the same flags (its --config stays the YAML file of flags, as for every other command)
    assert main(["predict", "--model", str(politics_model), "--domain", "politics", *data, "--output",
                 str(tmp_path / "p.conll")]) == 0
    first = (tmp_path / "p.conll").read_text().splitlines()[0].split("\t")
    assert len(first) == 3 and first[1] in LABELS["politics"]


def test_the_commands_share_one_declaration_of_the_data_flags():
    import dataclasses

    from crossner_hf.data.target import LabeledDataArguments
    from crossner_hf.cli import command_parser

    flags = {f.name for f in dataclasses.fields(LabeledDataArguments)}
    for command in ("train", "bilstm-crf", "cdlm", "multicell", "report", "confusion", "plot-entities", "predict",
                    "export", "build-corpora", "data"):
        module, _ = command_parser(command)
        dtype = next(v for k, v in vars(module).items() if k.endswith("Arguments") and isinstance(v, type)
                     and issubclass(v, LabeledDataArguments) and v.__module__ == module.__name__)
        fields = {f.name: f for f in dataclasses.fields(dtype)}
        assert flags <= set(fields), (command, flags - set(fields))
        inherited = {name for name in flags if fields[name].metadata is
                     next(f for f in dataclasses.fields(LabeledDataArguments) if f.name == name).metadata}
        assert inherited >= flags - {"domain"}, (command, flags - inherited)  # declared once (build-corpora: its
        # --domain names the corpus's domain, not a labeled target, so it keeps its own help)


def test_build_corpora_and_export_take_the_data_flags(politics_model, tmp_path):
    """Issue 48: build-corpora and export read a user's CSV through the same flags as train and report."""
    import pandas as pd

    from crossner_hf.cli import main

    rows = [(["Ada", "Lovelace", "met", "Babbage", "in", "London", "."], ["B-x_person", "I-x_person", "O",
                                                                          "B-x_person", "O", "B-x_city", "O"]),
            (["London", "rains", "."], ["B-x_city", "O", "O"])]
    folder = tmp_path / "mycsv"
    folder.mkdir()
    frame = pd.DataFrame({"sentence_tokens": [w for w, _ in rows], "ner_labels": [t for _, t in rows]})
    for split in ("train", "validation", "test"):
        frame.to_csv(folder / f"{split}.csv", index=False)
    columns = ["--text_column_name", "sentence_tokens", "--label_column_name", "ner_labels"]
    raw = tmp_path / "raw.txt"
    raw.write_text("Ada Lovelace lived in London .\nBabbage met Ada Lovelace in London .\n", encoding="utf-8")
    assert main(["build-corpora", "--domain", "mine", "--text_file", str(raw), "--dataset_dir", str(folder),
                 *columns, "--k", "1", "--output_dir", str(tmp_path / "corpora")]) == 0
    assert "3 entities from the labeled train split(s) of mycsv" in (tmp_path / "corpora" / "README.md").read_text()
    assert main(["export", "--model", str(politics_model), "--output_dir", str(tmp_path / "onnx"), "--dataset_dir",
                 str(folder), *columns, "--threads", "1"]) == 0
    record = json.loads((tmp_path / "onnx" / "config.json").read_text())
    assert "mycsv" in json.dumps(record) and "sentence_tokens" not in json.dumps(record)


def test_the_data_is_named_by_its_card_or_a_telling_folder_not_a_generic_word(tmp_path):
    """A literature set in `literature/data/`: named `literature`, not `data`; a dataset card's pretty_name names it
    first; `--data_name` (load_target's name) outright."""
    import json

    from crossner_hf.data.target import load_target

    folder = tmp_path / "literature" / "data"
    folder.mkdir(parents=True)
    for split in ("train", "validation", "test"):
        rows = [{"tokens": ["Tolstoy", "wrote", "."], "ner_tags": ["B-writer", "O", "O"]}]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_target(str(folder)).name == "literature"
    assert load_target(str(folder), name="novels").name == "novels"
    (folder / "README.md").write_text("---\npretty_name: Russian novels NER\nlicense: mit\n---\n# My data\n")
    assert load_target(str(folder)).name == "Russian novels NER"
    own = tmp_path / "novels"
    own.mkdir()
    for split in ("train", "validation", "test"):
        (own / f"{split}.jsonl").write_text((folder / f"{split}.jsonl").read_text())
    assert load_target(str(own)).name == "novels"
