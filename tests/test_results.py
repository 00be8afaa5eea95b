"""crossner_hf.results: one result base, one results.json schema, one reader that also reads the three older files."""

from __future__ import annotations

import json

import pytest

from crossner_hf.results import SCHEMA, SHARED_KEYS, WorkflowResult, read_results

# the three schemas written before crossner_hf.results/1, cut to the keys their readers used
OLD_TRAIN = {"domain": "music", "dataset": {"name": "music", "source": "crossner"}, "schedule": "direct",
             "model_name_or_path": "bert-base-cased", "seeds": [555, 666], "test_overall_f1_mean": 0.6,
             "test_overall_f1_std": 0.01, "dev_overall_f1_mean": 0.62, "dev_overall_f1_std": 0.02,
             "decoding": "argmax", "test_mean": {"argmax": {"precision": 0.5, "recall": 0.7, "f1": 0.6}},
             "best_seed": 666, "total_seconds": 12.5, "config": {"learning_rate": 1e-5}, "per_seed": []}
OLD_RNN = {"args": {"seed": 3, "domain": "politics"}, "model": "bilstm-crf", "best_epoch": 4, "best_dev_f1": 0.4,
           "test": {"overall_f1": 0.35, "per_type": {}}, "dataset": {"name": "politics"}, "total_seconds": 7.0}
OLD_DAPT = {"model_name_or_path": "bert-base-cased", "corpus": "music.txt", "corpus_level": "integrated",
            "global_step": 10, "train_loss": 2.5, "seconds": 3.0}
OLD_NERBERT = {"kind": "nerbert", "model_name_or_path": "tiny", "corpus": {"path": "corpus", "config": None},
               "best_validation": {"f1": 0.3, "step": 20}, "global_step": 40, "seconds": 9.0}


@pytest.mark.parametrize("old, name, workflow, model, dataset, seeds, dev, test", [
    (OLD_TRAIN, "results.json", "finetune", "bert-base-cased", "music", [555, 666], 0.62, 0.6),
    (OLD_RNN, "results.json", "rnn", "bilstm-crf", "politics", [3], 0.4, 0.35),
    (OLD_DAPT, "dapt_results.json", "dapt", "bert-base-cased", "music.txt", [], None, None),
    (OLD_NERBERT, "results.json", "nerbert", "tiny", "corpus", [], 0.3, None),
])
def test_old_results_files_read_into_the_shared_keys(tmp_path, old, name, workflow, model, dataset, seeds, dev, test):
    (tmp_path / name).write_text(json.dumps(old))
    result = read_results(tmp_path)
    assert set(SHARED_KEYS) <= set(result.results) and result["schema"] == SCHEMA
    assert (result["workflow"], result.model, result.dataset, result.seeds) == (workflow, model, dataset, seeds)
    assert (result.dev_f1, result.test_f1, result.output_dir) == (dev, test, tmp_path)
    assert all(result[k] == v for k, v in old.items() if k not in SHARED_KEYS)  # the old keys stay


def test_old_train_file_keeps_its_precision_and_recall(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(OLD_TRAIN))
    test = read_results(tmp_path / "results.json")["test"]
    assert (test["overall_precision"], test["overall_recall"], test["overall_f1_std"]) == (0.5, 0.7, 0.01)


def test_result_prints_a_short_summary_and_reads_like_a_dict(tmp_path):
    result = WorkflowResult(tmp_path, OLD_RNN)
    assert str(result) == repr(result) == f"WorkflowResult(rnn bilstm-crf on politics: dev F1 40.00, test F1 35.00, {tmp_path})"
    assert "best_epoch" in result and result["best_epoch"] == 4 and result.get("missing", 1) == 1
    assert len(str(WorkflowResult(tmp_path, {**OLD_TRAIN, "per_seed": [{"x": "y" * 10_000}]}))) < 200


def test_reader_refuses_what_it_cannot_read_in_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results.json or dapt_results.json"):
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
