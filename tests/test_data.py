"""load_crossner, label schemas, the merged bridge, the build script and load_dataset."""

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
from crossner_hf.data.target import load_crossner
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
    ds = load_crossner(config, crossner_data_dir)
    assert tuple(len(ds[s]) for s in ("train", "validation", "test")) == EXPECTED_COUNTS[config]
    assert ds["train"].features["ner_tags"].feature.names == LABELS[config]
    assert set(ds["train"].column_names) == {"id", "tokens", "ner_tags"}
    first = ds["train"][0]
    assert len(first["tokens"]) == len(first["ner_tags"]) and first["id"] == "0"


def test_conll_last_sentence_kept(crossner_data_dir, cache):
    ds = load_crossner("conll2003", crossner_data_dir)
    last_lines = (crossner_data_dir / "conll2003" / "train.txt").read_text().rstrip("\n").split("\n")[-2:]
    assert ds["train"][-1]["tokens"][-2:] == [l.split("\t")[0] for l in last_lines]


def test_warm_load_is_cached_and_notices_changes(tmp_path, cache):
    src = tmp_path / "data"
    shutil.copytree(Path(os.environ.get("CROSSNER_SHARED_DIR", ROOT.parent / "shared")) / "data" / "crossner" / "politics", src / "politics")
    first = load_crossner("politics", src)
    t = time.perf_counter()
    again = load_crossner("politics", src)
    warm = time.perf_counter() - t
    assert again["train"].cache_files and again["train"]["tokens"] == first["train"]["tokens"]
    assert warm < 1.0  # generous: this only checks nothing is re-parsed; speed is benchmarked
    path = src / "politics" / "train.txt"
    path.write_text("Changed\tB-politician\n\n" + path.read_text())
    changed = load_crossner("politics", src)
    assert len(changed["train"]) == 201 and changed["train"][0]["tokens"] == ["Changed"]


def test_env_var_and_missing_data(tmp_path, cache, monkeypatch, crossner_data_dir):
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))
    assert len(load_crossner("ai")["train"]) == 100
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(CrossNERDataNotFound, match="CROSSNER_DATA_DIR"):
        load_crossner("ai")
    monkeypatch.delenv("CROSSNER_DATA_DIR")
    t = time.perf_counter()
    with pytest.raises(CrossNERDataNotFound, match="CROSSNER_DATA_DIR"):
        load_crossner("ai")  # offline: no download attempt
    assert time.perf_counter() - t < 2.0


def test_unknown_config(cache):
    with pytest.raises(ValueError, match="choose one of conll2003, politics"):
        load_crossner("sports")


def test_malformed_file_surfaces_through_loader(tmp_path, cache, crossner_data_dir):
    shutil.copytree(crossner_data_dir / "music", tmp_path / "music")
    (tmp_path / "music" / "dev.txt").write_text("a\tO\nb\tB-politician\n")
    from crossner_hf.data.conll import ConllFormatError

    with pytest.raises(ConllFormatError, match="dev.txt, line 2"):
        load_crossner("music", tmp_path)


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
    direct = load_crossner("politics", crossner_data_dir)["train"][0]
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
