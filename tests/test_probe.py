"""The probe (:mod:`crossner_hf.grid.probe`): seconds a step of this encoder on this machine, cached so a second dry
run builds no model; the steps each cell plans; the dry run priced from it before any cell has run."""

from __future__ import annotations

import json

import pytest

from crossner_hf.grid import probe
from crossner_hf.grid.probe import DataSize, planned_work, step_cost
from crossner_hf.testing import make_tiny_bert


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv(probe.CACHE_ENV, str(tmp_path / "cache"))
    return make_tiny_bert(tmp_path / "tiny", ["hinton", "joined", "google"])


def test_the_probe_measures_once_and_a_second_call_builds_no_model(tiny, tmp_path, monkeypatch):
    first = step_cost(tiny, threads=1, batch=4, seq_len=16)
    assert not first.cached and first.step_s > 0 and first.eval_s > 0 and first.startup_s > 0
    assert len(list((tmp_path / "cache" / "probe").glob("*.json"))) == 1

    def no_model(*args, **kwargs):
        raise AssertionError("the cache was not used: a model was built")

    monkeypatch.setattr(probe, "_measure", no_model)
    again = step_cost(tiny, threads=1, batch=4, seq_len=16)
    assert again.cached and (again.step_s, again.eval_s, again.startup_s) == (first.step_s, first.eval_s,
                                                                              first.startup_s)
    with pytest.raises(AssertionError, match="cache was not used"):  # another shape is another probe
        step_cost(tiny, threads=1, batch=4, seq_len=24)
    # a changed model (its config) is another probe too
    config = json.loads((tmp_path / "tiny" / "config.json").read_text())
    (tmp_path / "tiny" / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 1}))
    with pytest.raises(AssertionError, match="cache was not used"):
        step_cost(tiny, threads=1, batch=4, seq_len=16)


def test_a_masked_lm_probe_times_the_dapt_step(tiny):
    cost = step_cost(tiny, mlm=True, threads=1, batch=4, seq_len=32)
    assert cost.step_s > 0 and cost.eval_s == 0.0


def test_the_steps_each_cell_plans():
    data = DataSize(train=100, dev=350, test=431, seq_len=64)
    direct = {"per_device_train_batch_size": 8, "num_train_epochs": 30}
    assert planned_work(direct, "direct", data) == (13 * 30, 30)  # 13 batches an epoch, a dev check each
    assert planned_work({**direct, "max_steps": 30}, "direct", data) == (30, 3)
    joint = {"per_device_train_batch_size": 8, "num_train_epochs": 6, "oversample_factor": 5,
             "source_subsample": 1000, "eval_strategy": "steps", "eval_steps": "0.0333"}
    assert planned_work(joint, "joint", data) == (188 * 6, 30)  # 500 target draws + 1,000 CoNLL a joint epoch
    pf = {**direct, "source_epochs": 1, "source_subsample": 1000}
    assert planned_work(pf, "pretrain-finetune", data) == (13 * 30 + 125, 30)  # the source stage first
    assert planned_work({"max_steps": 60, "block_size": 128}, "dapt", data) == (60, 0)
    assert planned_work({"num_train_epochs": 1}, "dapt", data) is None  # the corpus's size is not known yet


def test_probe_off_by_flag_or_environment(monkeypatch):
    assert probe.enabled("on") and not probe.enabled("off")
    monkeypatch.setenv(probe.PROBE_ENV, "off")
    assert not probe.enabled() and probe.enabled("on")
    with pytest.raises(ValueError, match="choose on or off"):
        probe.enabled("sometimes")


def test_a_dry_run_on_a_tiny_bert_is_priced_from_the_probe_and_the_second_costs_no_probe(tiny, tmp_path,
                                                                                         monkeypatch):
    from crossner_hf.selection import AdaptConfig, dry_run

    rows = [{"tokens": ["Hinton", "joined", "Google", "."], "ner_tags": ["B-person", "O", "B-org", "O"]}] * 4
    (tmp_path / "d").mkdir()
    for split in ("train", "validation", "test"):
        (tmp_path / "d" / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    config = AdaptConfig(budget="smoke", output_dir=str(tmp_path / "out"), methods=["direct"])
    text = dry_run(tiny, str(tmp_path / "d"), config)
    assert "priced from a probe on this machine" in text and "an upper bound" in text
    monkeypatch.setattr(probe, "_measure", lambda *a, **k: pytest.fail("the second dry run probed again"))
    assert dry_run(tiny, str(tmp_path / "d"), config) == text
    assert "the packaged prior" in dry_run(tiny, str(tmp_path / "d"), config, probe="off")
