"""crossner_hf.results: one result base, one results.json schema (the envelope and one body), one reader that also
reads results/1 and each workflow's 0.1.0 file."""

from __future__ import annotations

import json
import sys

import pytest

from crossner_hf.results import DUPLICATES, RESULT_FILES, SCHEMA, SHARED_KEYS, WorkflowResult, read_results

# each workflow's results.json as crossner_hf 0.1.0 wrote it (git show 5350a64:crossner_hf/schedules.py summarize,
# rnn/recipes.py, dapt.py, nerbert.py), with short values: no schema, the body alone
OLD_TRAIN = {"domain": "music", "schedule": "direct", "model_name_or_path": "bert-base-cased", "labels": ["O"],
             "seeds": [555, 666], "test_overall_f1_mean": 0.6, "test_overall_f1_std": 0.01, "dev_overall_f1_mean": 0.62,
             "dev_overall_f1_std": 0.02, "decoding": "argmax",
             "test_mean": {"argmax": {"precision": 0.5, "recall": 0.7, "f1": 0.6, "f1_std": 0.01}},
             "best_seed": 666, "world_size": 1, "per_seed": [], "total_seconds": 12.5,
             "config": {"learning_rate": 1e-5, "domain": "music"}}
OLD_RNN = {"args": {"seed": 3, "domain": "politics", "mode": "supervised"}, "best_epoch": 4, "best_dev_f1": 0.4,
           "epochs": 5, "steps": 50, "test": {"overall_f1": 0.35, "per_type": {}}, "history": [{"dev_f1": 0.4}],
           "total_seconds": 7.0, "model": "bilstm-crf", "n_train_sentences": 100}
OLD_DAPT = {"model_name_or_path": "bert-base-cased", "corpus": "music.txt", "corpus_level": "integrated",
            "corpus_fraction": 1.0, "n_texts": 3, "n_examples": 2, "mode": "blocks", "block_size": 64,
            "masking": "token", "mlm_probability": 0.15, "global_step": 10, "world_size": 1, "epochs": 1.0,
            "train_loss": 2.5, "seconds": 3.0, "eval_loss": 2.0, "perplexity": 7.39}
OLD_NERBERT = {"kind": "nerbert", "model_name_or_path": "tiny", "corpus": {"path": "corpus", "config": None,
                                                                          "train_sentences": 8},
               "best_validation": {"f1": 0.3, "step": 20, "precision": 0.4, "recall": 0.25},
               "best_checkpoint": None, "validation_history": [], "global_step": 40, "epochs": 1.0,
               "train_loss": 1.0, "train_seconds": 8.0, "seconds": 9.0}


@pytest.mark.parametrize("old, name, workflow, model, dataset, seeds, dev, test", [
    (OLD_TRAIN, "results.json", "finetune", "bert-base-cased", "music", [555, 666], 0.62, 0.6),
    (OLD_RNN, "results.json", "rnn", "bilstm-crf", "politics", [3], 0.4, 0.35),
    (OLD_DAPT, "dapt_results.json", "dapt", "bert-base-cased", "music.txt", [], None, None),
    (OLD_NERBERT, "results.json", "nerbert", "tiny", "corpus", [], 0.3, None),
])
def test_a_0_1_0_results_file_of_each_workflow_reads_in_this_schemas_shape(tmp_path, old, name, workflow, model,
                                                                         dataset, seeds, dev, test):
    (tmp_path / name).write_text(json.dumps(old))
    result = read_results(tmp_path)
    assert set(SHARED_KEYS) <= set(result.results) and result["schema"] == SCHEMA
    assert (result["workflow"], result.model, result.dataset, result.seeds) == (workflow, model, dataset, seeds)
    assert (result.dev_f1, result.test_f1, result.output_dir) == (dev, test, tmp_path)
    duplicates = set(DUPLICATES.get(workflow, ()))
    assert not duplicates & set(result.results)  # one body: what the envelope holds is not repeated
    assert all(result[k] == v for k, v in old.items() if k not in {*SHARED_KEYS, *duplicates, "args"})  # the body
    # what a 0.2 reader of results/1 files saw, then, is in the envelope: the same values
    seconds = old.get("total_seconds", old.get("seconds"))
    assert result.seconds == seconds
    if workflow == "dapt":
        assert result["dataset"]["level"] == "integrated" and result["dev"] == {"loss": 2.0, "perplexity": 7.39}
    if workflow == "rnn":
        assert result["dev"]["epoch"] == 4 and result["args"] == {"seed": 3, "mode": "supervised"}


def test_a_results_1_file_reads_without_its_0_1_body(tmp_path):
    """crossner_hf.results/1 (written before 0.3.0): the envelope beside the whole 0.1 body; it reads as /2."""
    envelope = {"schema": "crossner_hf.results/1", "workflow": "finetune", "model": "bert-base-cased",
                "dataset": {"name": "music"}, "seeds": [555, 666], "dev": {"overall_f1": 0.62},
                "test": {"overall_f1": 0.6, "overall_f1_std": 0.01}, "seconds": 12.5}
    (tmp_path / "results.json").write_text(json.dumps({**envelope, **{k: v for k, v in OLD_TRAIN.items()
                                                                      if k not in envelope}}))
    result = read_results(tmp_path)
    assert result["schema"] == SCHEMA == "crossner_hf.results/2" and result.test_f1 == 0.6
    assert not set(DUPLICATES["finetune"]) & set(result.results) and result["best_seed"] == 666
    bare = {"schema": "crossner_hf.results/1", "workflow": "dapt", "model": "m", "seeds": [1], "dev": None,
            "test": None, "seconds": 100.0}  # a results/1 envelope is read as it is, never guessed from its body
    (tmp_path / "results.json").write_text(json.dumps(bare))
    assert read_results(tmp_path).results == {**bare, "schema": SCHEMA, "dataset": None}


@pytest.mark.parametrize("name", ["adapt.json", "compare.json"])
def test_read_results_finds_every_file_this_library_writes(tmp_path, name):
    record = {"schema": SCHEMA, "workflow": name.split(".")[0], "model": "m", "dataset": {"name": "mine"},
              "seeds": [1], "dev": {"overall_f1": 0.5}, "test": {"overall_f1": 0.25}, "seconds": 4.0, "rows": []}
    (tmp_path / name).write_text(json.dumps(record))
    result = read_results(tmp_path)
    assert (result["workflow"], result.dev_f1, result.test_f1, result["rows"]) == (name.split(".")[0], 0.5, 0.25, [])
    assert RESULT_FILES == ("results.json", "adapt.json", "compare.json")  # one name per kind


def test_old_train_file_keeps_its_precision_and_recall(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(OLD_TRAIN))
    test = read_results(tmp_path / "results.json")["test"]
    assert (test["overall_precision"], test["overall_recall"], test["overall_f1_std"]) == (0.5, 0.7, 0.01)


def test_result_prints_a_short_summary_and_reads_like_a_dict(tmp_path):
    result = WorkflowResult(tmp_path, OLD_RNN)
    assert str(result) == repr(result) == ("WorkflowResult(rnn bilstm-crf on politics: dev F1 40.00, test F1 35.00, "
                                           f"{tmp_path})")
    assert "epochs" in result and result["epochs"] == 5 and result.get("missing", 1) == 1
    assert len(str(WorkflowResult(tmp_path, {**OLD_TRAIN, "per_seed": [{"x": "y" * 10_000}]}))) < 200


def test_reader_refuses_what_it_cannot_read_in_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results.json or adapt.json or compare.json or dapt_results.json"):
        read_results(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"schema": "crossner_hf.results/9"}))
    with pytest.raises(ValueError, match="newer than this crossner_hf reads"):
        read_results(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"silhouette": {}}))
    with pytest.raises(ValueError, match="not a crossner_hf results file"):
        read_results(tmp_path)


def test_subclass_reads_only_its_workflow(tmp_path):
    from crossner_hf.training.rnn.common import RNNResult
    from crossner_hf.training.schedules import ScheduleResult

    (tmp_path / "results.json").write_text(json.dumps(OLD_TRAIN))
    result = ScheduleResult.read(tmp_path)
    assert isinstance(result, WorkflowResult) and (result.best_seed, result.schedule) == (666, "direct")
    assert result.dataset == "music"
    with pytest.raises(ValueError, match="a finetune run's results, not rnn"):
        RNNResult.read(tmp_path)
    assert RNNResult(tmp_path, OLD_RNN).dev_f1 == 0.4


def test_a_dapt_cell_an_older_version_finished_stays_done(tmp_path):
    """A grid started before 0.3 holds DAPT cells with ``dapt_results.json``: done, measured, never run again."""
    from crossner_hf.grid import Cell, grid_status, run_cell
    from crossner_hf.grid.costs import cell_seconds

    old, new = (Cell(name=f"dapt/{n}", command="dapt", row="r", column="c", score=False,
                     program=(sys.executable, "-c", "raise SystemExit(3)")) for n in ("old", "new"))
    old.folder(tmp_path).mkdir(parents=True)
    (old.folder(tmp_path) / "dapt_results.json").write_text(json.dumps(OLD_DAPT))
    assert old.result_file == "results.json" and old.result_path(tmp_path).name == "dapt_results.json"
    assert grid_status([old, new], tmp_path) == {"dapt/old": "done", "dapt/new": "waiting"}
    assert run_cell(old, tmp_path) == "done" and not (old.folder(tmp_path) / "log.txt").exists()  # not run again
    assert cell_seconds(old, tmp_path) == OLD_DAPT["seconds"]
    assert read_results(old.folder(tmp_path))["workflow"] == "dapt"  # and its folder reads
