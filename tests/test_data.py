"""load_target on the CrossNER files, label schemas, the merged bridge, the build script and load_dataset."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crossner_hf.data.labels import LABELS
from crossner_hf.data.target import load_target
from crossner_hf.data.target import EXPECTED_COUNTS, CrossNERDataNotFound
from crossner_hf.data.labels import (
    ALL_TYPES,
    MERGED_LABELS,
    entity_types,
    from_merged_ids,
    to_merged_ids,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_label_lists_match_the_release_file(crossner_data_dir):
    release = json.loads((crossner_data_dir / "labels.json").read_text())
    for config, labels in LABELS.items():
        assert labels == release[config], config
    assert MERGED_LABELS == release["_merged_79"]
    assert {c: len(v) for c, v in LABELS.items()} == {
        "politics": 19, "science": 35, "music": 27, "literature": 25, "ai": 29, "conll2003": 9,
    }
    assert len(ALL_TYPES) == 39 and len(MERGED_LABELS) == 79


def test_source_types_exist_in_every_target():
    for config in LABELS:
        assert set(entity_types("conll2003")) <= set(entity_types(config))


def test_merged_mapping_round_trip_and_errors():
    for config, labels in LABELS.items():
        ids = list(range(len(labels)))
        merged = to_merged_ids(config, ids)
        assert [MERGED_LABELS[i] for i in merged] == labels
        assert from_merged_ids(config, merged) == ids
    assert MERGED_LABELS[to_merged_ids("politics", [2])[0]] == "B-politician"
    with pytest.raises(ValueError, match="no counterpart in config 'music'"):
        from_merged_ids("music", [MERGED_LABELS.index("B-politician")])
    with pytest.raises(ValueError, match="Unknown CrossNER config 'sports'"):
        to_merged_ids("sports", [0])


@pytest.mark.parametrize("config", list(EXPECTED_COUNTS))
def test_counts_features_and_label_order(crossner_data_dir, cache, config):
    ds = load_target(config, data_dir=crossner_data_dir).dataset
    assert tuple(len(ds[s]) for s in ("train", "validation", "test")) == EXPECTED_COUNTS[config]
    assert ds["train"].features["ner_tags"].feature.names == LABELS[config]
    assert set(ds["train"].column_names) == {"id", "tokens", "ner_tags"}
    first = ds["train"][0]
    assert len(first["tokens"]) == len(first["ner_tags"]) and first["id"] == "0"


def test_conll_last_sentence_kept(crossner_data_dir, cache):
    ds = load_target("conll2003", data_dir=crossner_data_dir).dataset
    last_lines = (crossner_data_dir / "conll2003" / "train.txt").read_text().rstrip("\n").split("\n")[-2:]
    assert ds["train"][-1]["tokens"][-2:] == [l.split("\t")[0] for l in last_lines]


def test_warm_load_is_cached_and_notices_changes(tmp_path, cache):
    src = tmp_path / "data"
    shutil.copytree(Path(os.environ.get("CROSSNER_SHARED_DIR", ROOT.parent / "shared")) / "data" / "crossner" / "politics", src / "politics")
    first = load_target("politics", data_dir=src).dataset
    t = time.perf_counter()
    again = load_target("politics", data_dir=src).dataset
    warm = time.perf_counter() - t
    assert again["train"].cache_files and again["train"]["tokens"] == first["train"]["tokens"]
    assert warm < 1.0  # generous: this only checks nothing is re-parsed; speed is benchmarked
    path = src / "politics" / "train.txt"
    path.write_text("Changed\tB-politician\n\n" + path.read_text())
    changed = load_target("politics", data_dir=src).dataset
    assert len(changed["train"]) == 201 and changed["train"][0]["tokens"] == ["Changed"]


def test_env_var_and_missing_data(tmp_path, cache, monkeypatch, crossner_data_dir):
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))
    assert len(load_target("ai").dataset["train"]) == 100
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(CrossNERDataNotFound, match="CROSSNER_DATA_DIR"):
        load_target("ai").dataset
    monkeypatch.delenv("CROSSNER_DATA_DIR")
    t = time.perf_counter()
    with pytest.raises(CrossNERDataNotFound, match="CROSSNER_DATA_DIR"):
        load_target("ai").dataset  # offline: no download attempt
    assert time.perf_counter() - t < 2.0


def test_unknown_config(cache):
    from crossner_hf.data.labels import labels_for

    with pytest.raises(ValueError, match="choose one of conll2003, politics"):
        labels_for("sports")  # what load_target checks a name against before reading the CrossNER files


def test_malformed_file_surfaces_through_loader(tmp_path, cache, crossner_data_dir):
    shutil.copytree(crossner_data_dir / "music", tmp_path / "music")
    (tmp_path / "music" / "dev.txt").write_text("a\tO\nb\tB-politician\n")
    from crossner_hf.data.conll import ConllFormatError

    with pytest.raises(ConllFormatError, match="dev.txt, line 2"):
        load_target("music", data_dir=tmp_path).dataset


def test_build_folder_then_load_dataset_offline(tmp_path, cache, crossner_data_dir):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "CROSSNER_HF_CACHE": str(cache), "HF_HOME": str(tmp_path / "hf")}
    out = subprocess.run(
        [sys.executable, str(ROOT / "dataset_scripts" / "crossner.py"),
         "--data_dir", str(crossner_data_dir), "--configs", "politics", "music", "conll2003"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )
    assert (tmp_path / "crossner" / "README.md").is_file(), out.stderr
    card = (tmp_path / "crossner" / "README.md").read_text()
    assert "config_name: politics" in card and "license: mit" in card and "2e7ba2a" in card
    # the user's literal call, from the folder that holds ./crossner
    code = (
        "from datasets import load_dataset; import json;"
        "d = load_dataset('crossner', 'politics');"
        "m = load_dataset('crossner', 'music');"
        "print(json.dumps([len(d['train']), len(d['validation']), len(d['test']),"
        " d['train'].features['ner_tags'].feature.names, len(m['test']), d['train'][0]]))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)
    n_train, n_dev, n_test, names, music_test, first = json.loads(res.stdout.strip().splitlines()[-1])
    assert (n_train, n_dev, n_test) == EXPECTED_COUNTS["politics"]
    assert names == LABELS["politics"] and music_test == 465
    direct = load_target("politics", data_dir=crossner_data_dir).dataset["train"][0]
    assert first == direct


def test_yaml_config_for_build_script(tmp_path, cache, crossner_data_dir):
    cfg = tmp_path / "build.yaml"
    cfg.write_text(f"data_dir: {crossner_data_dir}\nconfigs: ai\noutput_dir: {tmp_path / 'out'}\n")
    from crossner_hf.arguments import parse_args
    from crossner_hf.commands import build_dataset as script

    (args,) = parse_args((script.BuildArguments,), ["--config", str(cfg), "--configs", "ai", "music"])
    assert args.configs == ["ai", "music"] and args.output_dir == str(tmp_path / "out")
    with pytest.raises(SystemExit):  # choices are enforced by the parser
        parse_args((script.BuildArguments,), ["--configs", "sports"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("data_dri: x\n")
    with pytest.raises(ValueError, match="unknown keys \\['data_dri'\\]"):
        parse_args((script.BuildArguments,), ["--config", str(bad)])


# ----------------------------------------------------------------------------- issue 48: data as users write it

CSV_ROWS = [
    (["Popular", "approaches", "use", "Python", "."], ["O", "O", "O", "B-x_programlang", "O"]),
    (["Ada", "Lovelace", "wrote", "it", "."], ["B-x_person", "I-x_person", "O", "O", "O"]),
    (["Guido", "wrote", "Python", "in", "Amsterdam", "."], ["B-x_person", "O", "B-x_programlang", "O", "O", "O"]),
]


def _pandas_csv(folder: Path, rows=CSV_ROWS) -> Path:
    """A user's CSV folder as pandas writes it: list cells become "['Popular', 'approaches', ...]"."""
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame({"sentence_tokens": [w for w, _ in rows], "ner_labels": [t for _, t in rows]})
    for split in ("train", "validation", "test"):
        frame.to_csv(folder / f"{split}.csv", index=False)
    return folder


def test_a_pandas_written_csv_loads_and_trains(tmp_path, tiny_bert_dir, monkeypatch):
    from crossner_hf.cli import main
    from crossner_hf.data.target import load_target

    folder = _pandas_csv(tmp_path / "mycsv")
    assert "\"['Popular', 'approaches', 'use', 'Python', '.']\"" in (folder / "train.csv").read_text()
    target = load_target(str(folder), text_column="sentence_tokens", label_column="ner_labels")
    assert target["train"][1]["tokens"] == ["Ada", "Lovelace", "wrote", "it", "."]
    assert target.labels == ["O", "B-x_programlang", "I-x_programlang", "B-x_person", "I-x_person"]
    assert [target.labels[i] for i in target["train"][2]["ner_tags"]] == CSV_ROWS[2][1]
    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert main(["train", "--model_name_or_path", tiny_bert_dir, "--dataset_dir", str(folder), "--text_column_name",
                 "sentence_tokens", "--label_column_name", "ner_labels", "--output_dir", str(out), "--max_steps", "2",
                 "--per_device_train_batch_size", "2", "--seeds", "5", "--use_cpu", "true", "--disable_tqdm", "true",
                 "--eval_strategy", "steps", "--eval_steps", "2", "--save_strategy", "steps", "--save_steps", "2"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert "mycsv" in json.dumps(results) and (out / "model.safetensors").is_file()


def test_a_csv_cell_that_holds_no_list_says_what_a_cell_must_hold(tmp_path):
    from crossner_hf.data.target import load_target

    folder = tmp_path / "spaces"
    folder.mkdir()
    for split in ("train", "validation", "test"):
        (folder / f"{split}.csv").write_text("words,tags\nAda wrote,\"['B-x', 'O']\"\n", encoding="utf-8")
    with pytest.raises(ValueError) as named:
        load_target(str(folder), text_column="words", label_column="tags")
    message = str(named.value)
    assert message.startswith(f"{folder}/train.csv:2: the 'words' cell holds 'Ada wrote' (str); a cell must hold a "
                              "list of words: ['Popular', 'approaches'] as pandas' to_csv writes it")
    assert "--text_column_name" not in message  # the column was named: the message does not blame its name
    with pytest.raises(ValueError, match="if 'words' is not the words column, name it with --text_column_name"):
        load_target(str(folder))
    # JSON-style cells are read as well as pandas' Python-literal ones
    for split in ("train", "validation", "test"):
        (folder / f"{split}.csv").write_text('words,tags\n"[""Ada"", ""wrote""]","[""B-x"", ""O""]"\n',
                                             encoding="utf-8")
    assert load_target(str(folder))["test"][0]["tokens"] == ["Ada", "wrote"]


def test_the_data_check_summarises_a_folder_and_lists_every_problem(tmp_path, capsys):
    from crossner_hf.cli import main
    from crossner_hf.data.check import check_dataset

    folder = tmp_path / "js"
    folder.mkdir()
    good = [json.dumps({"tokens": w, "ner_tags": t}) for w, t in CSV_ROWS]
    (folder / "train.jsonl").write_text("\n".join([good[0], json.dumps({"tokens": ["Rust"], "ner_tags":
                                                                        ["x_programlang"]}), *good[1:]]) + "\n")
    (folder / "validation.jsonl").write_text("\n".join(good) + "\n")
    (folder / "test.jsonl").write_text("\n".join([*good, good[0][:25]]) + "\n")
    capsys.readouterr()
    assert main(["data", "--dataset_dir", str(folder)]) == 1  # a problem: exit 1, the summary still printed
    printed = capsys.readouterr().out
    for line in (f"train            3 sentences        16 words  [{folder}/train.jsonl]",
                 "tags (5, in id order): O B-x_programlang I-x_programlang B-x_person I-x_person",
                 "scheme: BIO (IOB2): O, B-type, I-type", "2 problem(s):",
                 f"not BIO: `x_programlang` at {folder}/train.jsonl:2; tags are O, B-type, I-type",
                 f"{folder}/test.jsonl:4: not a complete JSON object"):
        assert line in printed, (line, printed)
    assert "validation       3 sentences" in printed and "test       not read" in printed
    check = check_dataset(folder)
    assert not check.ok and check.types["validation"] == {"x_programlang": 2, "x_person": 2}
    assert str(check) == printed.rstrip("\n")
    for split in ("train", "test"):
        (folder / f"{split}.jsonl").write_text("\n".join(good) + "\n")
    assert main(["data", "--dataset_dir", str(folder)]) == 0 and "no problems" in capsys.readouterr().out


def test_the_data_check_of_a_conll_folder_lists_each_bad_line(tmp_path):
    from crossner_hf.data.check import check_dataset

    folder = tmp_path / "conll"
    folder.mkdir()
    (folder / "train.txt").write_text("Ada\tB-x_person\nwrote\tO\n\nRust\tx_lang\nis\tO\nfast\tI-x_lang\n")
    (folder / "dev.txt").write_text("Ada\tB-x_person\n")
    (folder / "test.txt").write_text("Ada B-x_person\n")
    check = check_dataset(folder)
    assert check.kind == "CoNLL folder" and check.sentences == {"train": 2, "validation": 1, "test": 0}
    assert [p.split(": ", 1)[0] for p in check.problems] == [f"{folder / 'train.txt'}, line 4",
                                                             f"{folder / 'train.txt'}, line 6",
                                                             f"{folder / 'test.txt'}, line 1"]
    assert "1 orphan I- tag(s)" in check.scheme and check.labels == ["O", "B-x_person", "I-x_person", "B-x_lang",
                                                                      "I-x_lang"]


def test_one_raw_text_reader_for_dapt_and_the_rnn_recipes(tmp_path, monkeypatch):
    """Issue 47: the RNN recipes' text, the dapt command's flags and dapt's corpus read raw text through
    corpora.text.load_text_corpus alone, and read the same texts."""
    import crossner_hf.corpora.text as text
    from datasets import Dataset

    from crossner_hf.commands.dapt import DAPTArguments
    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder
    from crossner_hf.training.dapt import _corpus_dataset
    from crossner_hf.training.rnn.common import text_examples

    read = []
    real = text.load_text_corpus
    monkeypatch.setattr(text, "load_text_corpus", lambda source, **kw: read.append(source) or real(source, **kw))
    raw = tmp_path / "raw.txt"
    raw.write_text("the senate voted\n\n  \nlabour won\n", encoding="utf-8")
    rnn = [e.tokens for e in text_examples([str(raw)])]
    by_runner = list(_corpus_dataset(raw, None)["text"])
    by_command = list(DAPTArguments(model_name_or_path="m", train_file=[str(raw)]).corpus()[0]["text"])
    assert by_runner == by_command == ["the senate voted", "labour won"] and rnn == [t.split() for t in by_runner]
    folder = write_hub_dataset_folder({"mine-domain": Dataset.from_dict({"text": ["a b", "c"]})}, tmp_path / "lv")
    args = DAPTArguments(model_name_or_path="m", dataset_name=str(folder), dataset_config="mine-domain")
    assert list(args.corpus()[0]["text"]) == ["a b", "c"] == [" ".join(e.tokens) for e in
                                                            text_examples([f"{folder}:mine-domain"])]
    assert len(read) == 5  # every one of them went through the one reader


class _NoSearch(list):
    """A tag list that refuses a linear search: a summary that looks each type up in it is O(types²)."""

    def index(self, *args):
        raise AssertionError("list.index: a linear search per type")

    def __contains__(self, item):
        raise AssertionError("`in` on the tag list: a linear search per type")


def test_the_data_checks_type_table_is_sorted_without_a_search_per_type():
    """Issue 66: ``crossner-hf data`` sorted 15,000 types by ``labels.index`` (66 s); the summary now finds each
    type's place in one dict, so no per-type search of the tag list happens (``benchmarks/data_types.py`` measures
    the time: 6.6x for 10x the types)."""
    from crossner_hf.data.check import DatasetCheck

    n = 2000
    types = [f"t{i}" for i in range(n)]
    labels = ["O", *(f"{p}-{t}" for t in reversed(types) for p in ("B", "I"))]  # the id order: reversed
    check = DatasetCheck("d", "d", "JSON Lines files", labels=_NoSearch(labels),
                         types={"train": {t: 1 for t in types}, "validation": {t: 1 for t in types[::2]}})
    text = str(check)
    table = [line.split()[0] for line in text.splitlines()[text.splitlines().index(next(
        line for line in text.splitlines() if line.startswith("entities per type"))) + 1:][:n]]
    assert table == list(reversed(types))  # in id order
    assert "t1 (not in validation)" in text and "t0 (not" not in text


def test_an_empty_file_a_huge_tag_and_a_tab_in_a_type_are_one_short_line_each(tmp_path):
    """Issue 66's low findings, in Python (tests/test_bad_inputs.py runs them through the CLI for JSON Lines, CSV
    and Parquet)."""
    from crossner_hf.data.check import check_dataset

    row = json.dumps({"tokens": ["Ada"], "ner_tags": ["B-person"]})
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.jsonl").write_text("\n\n")
    for split in ("validation", "test"):
        (folder / f"{split}.jsonl").write_text(row + "\n")
    with pytest.raises(ValueError, match=r"train.jsonl: no rows \(the file holds no JSON object\)"):
        load_target(str(folder))
    (folder / "train.jsonl").write_text(row + "\n" + json.dumps({"tokens": ["x"], "ner_tags": ["B-a\tb"]}) + "\n"
                                        + json.dumps({"tokens": ["x"], "ner_tags": ["Q" * 5_000_000]}) + "\n")
    check = check_dataset(folder)
    assert [len(p.splitlines()) for p in check.problems] == [1, 1] and max(map(len, check.problems)) < 400
    assert "train.jsonl:2: the type of 'B-a\\tb' holds a TAB or line break" in check.problems[0]
    assert "train.jsonl:3" in check.problems[1] and "(5,000,000 characters)" in check.problems[1]


def test_an_unlabeled_classlabel_id_is_one_line_not_the_last_tag(tmp_path):
    """A Hub-style Parquet folder whose test split is unlabeled (``-1``, as hidden test sets are): ``names[-1]`` read
    each word as the list's last tag (``I-x``, then an orphan-I complaint about a tag that is not there); it is one
    line naming the file, the row and what -1 means, in the loader and in the data check."""
    from datasets import ClassLabel, Dataset, Features, List, Value

    from crossner_hf.data.check import check_dataset

    features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=["O", "B-x", "I-x"]))})
    for split, tags in (("train", [1, 2, 0]), ("validation", [0, 1, 0]), ("test", [-1, -1, -1])):
        Dataset.from_dict({"tokens": [["a", "b", "c"]], "ner_tags": [tags]}, features=features).to_parquet(
            str(tmp_path / f"{split}.parquet"))
    expected = r"test.parquet row 1: tag id -1 is not one of its ClassLabel's ids 0-2 \(-1 marks an unlabeled word"
    with pytest.raises(ValueError, match=expected):
        load_target(str(tmp_path))
    problems = check_dataset(tmp_path).problems
    assert len(problems) == 1 and "tag id -1" in problems[0] and "I-x" not in problems[0], problems
