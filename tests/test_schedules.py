"""The three schedules on a tiny random BERT: outputs, resume exactness, sampler, pipeline."""

from __future__ import annotations

import json
import math

import pytest
from transformers import TrainerCallback

from crossner_hf.data.labels import LABELS
from crossner_hf.commands.train import TrainArguments, run_train
from command_inputs import train_args
from crossner_hf.data.source import source_in_target_space


@pytest.fixture(autouse=True)
def _env(tmp_path_factory, monkeypatch, crossner_data_dir):
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))
    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path_factory.getbasetemp() / "crossner_cache"))


def _args(tiny_bert_dir, out, **kw):
    base = dict(
        output_dir=str(out), model_name_or_path=tiny_bert_dir, domain="politics", few_shot=16,
        per_device_train_batch_size=4, num_train_epochs=3, learning_rate=1e-3,
        disable_tqdm=True, use_cpu=True, seed=7, dataloader_pin_memory=False,
    )
    base.update(kw)
    return train_args(**base)


class CountSteps(TrainerCallback):
    """Counts the optimisation steps a run actually executes."""

    def __init__(self):
        self.steps = 0

    def on_step_end(self, args, state, control, **kwargs):
        self.steps += 1


class KillAt(TrainerCallback):
    """Raise at a global step of the stage whose output folder ends with ``stage``."""

    def __init__(self, step: int, stage: str):
        self.step, self.stage = step, stage

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step and args.output_dir.rstrip("/").endswith(self.stage):
            raise KeyboardInterrupt(f"killed at step {self.step}")


def test_direct_outputs_results_and_card(tiny_bert_dir, tmp_path):
    results = run_train(*_args(tiny_bert_dir, tmp_path / "out", seeds="1,2")).results
    out = tmp_path / "out"
    saved = json.loads((out / "results.json").read_text())
    assert saved["seeds"] == [1, 2] and len(saved["per_seed"]) == 2
    f1s = [r["test"]["overall_f1"] for r in saved["per_seed"]]
    assert math.isclose(saved["test"]["overall_f1"], sum(f1s) / 2)
    assert "overall_f1_std" in saved["test"] and 0 <= saved["test"]["overall_f1"] <= 1
    assert not {"test_overall_f1_mean", "domain", "model_name_or_path", "total_seconds"} & set(saved)  # one body
    per_seed = saved["per_seed"][0]
    assert set(per_seed["test"]["per_type"]) <= {t[2:] for t in LABELS["politics"] if t != "O"}
    assert per_seed["n_train_sentences"] == 16 and per_seed["global_step"] == 12
    assert (out / "model.safetensors").is_file() and (out / "seed-1" / "model.safetensors").is_file()
    assert not list((out / "seed-1").glob("checkpoint-*"))  # cleaned after a finished run
    config = json.loads((out / "config.json").read_text())
    assert [config["id2label"][str(i)] for i in range(19)] == LABELS["politics"]
    import statistics

    from huggingface_hub import ModelCard

    card = ModelCard.load(out / "README.md")
    # mean ± std of the two seeds' test F1, computed here, is the headline number of the card
    headline = f"{100 * statistics.fmean(f1s):.2f} ± {100 * statistics.stdev(f1s):.2f}"
    assert headline in card.text and math.isclose(saved["test"]["overall_f1_std"], statistics.stdev(f1s))
    f1 = {r.metric_config: r.metric_value for r in card.data.eval_results if r.metric_type == "f1"}
    assert f1["bio-viterbi"] == round(100 * statistics.fmean(f1s), 2)
    dev = [r["dev"]["overall_f1"] for r in saved["per_seed"]]
    assert results["best_seed"] == saved["per_seed"][dev.index(max(dev))]["seed"]
    assert config["crossner_provenance"]["decoding"] == "bio-viterbi"


def test_resume_after_kill_matches_uninterrupted(tiny_bert_dir, tmp_path, uninterrupted_run):
    # the killed run below has the shared uninterrupted run's settings (else the comparison proves nothing)
    killed_settings = _args(tiny_bert_dir, tmp_path, num_train_epochs=4)
    assert all(getattr(killed_settings[1], k, None) == v or getattr(killed_settings[0], k, None) == v
               for k, v in uninterrupted_run["settings"].items())
    with pytest.raises(KeyboardInterrupt):
        run_train(*_args(tiny_bert_dir, tmp_path / "killed", num_train_epochs=4), callbacks=[KillAt(10, "seed-7")]).results
    steps = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "killed" / "seed-7").glob("checkpoint-*"))
    assert steps[-1] == 8  # epochs of 4 steps: the kill at step 10 leaves checkpoint-8 as the latest
    counter = CountSteps()
    resumed = run_train(*_args(tiny_bert_dir, tmp_path / "killed", num_train_epochs=4, resume_from_checkpoint="true"),
                  callbacks=[counter]).results
    a, b = uninterrupted_run["results"], resumed["per_seed"][0]
    # the resumed run executed only the steps after checkpoint-8, and ended where the full run did
    assert counter.steps == 16 - 8
    assert a["test"] == b["test"] and a["dev"] == b["dev"]
    assert a["test_loss"] == b["test_loss"] and a["global_step"] == b["global_step"] == 16


def test_pretrain_finetune_kill_in_either_stage(tiny_bert_dir, tmp_path):
    from crossner_hf.outputs import CHECKPOINT_COMPLETE

    kw = dict(schedule="pretrain-finetune", source_subsample=32, source_epochs=1, num_train_epochs=3)
    full = run_train(*_args(tiny_bert_dir, tmp_path / "full", **kw)).results
    assert (tmp_path / "full" / "seed-7" / "source" / "final" / "stage_complete.json").is_file()
    assert not list((tmp_path / "full" / "seed-7" / "source").glob("checkpoint-*"))
    for stage, step in (("seed-7", 6), ("source", 5)):
        killed = tmp_path / f"killed-{stage}"
        with pytest.raises(KeyboardInterrupt):
            run_train(*_args(tiny_bert_dir, killed, **kw), callbacks=[KillAt(step, stage)]).results
        if stage == "source":  # one epoch of 8 steps, no dev checks: a checkpoint every 2 steps, not one at its end
            source = killed / "seed-7" / "source"
            whole = sorted(p.name for p in source.glob("checkpoint-*") if (p / CHECKPOINT_COMPLETE).is_file())
            assert whole[-1] == "checkpoint-4"
        resumed = run_train(*_args(tiny_bert_dir, killed, resume_from_checkpoint="true", **kw)).results
        a, b = full["per_seed"][0], resumed["per_seed"][0]
        assert a["test"] == b["test"] and a["test_loss"] == b["test_loss"], stage


def test_joint_runs_with_oversampling(tiny_bert_dir, tmp_path):
    res = run_train(*_args(tiny_bert_dir, tmp_path / "out", schedule="joint", source_subsample=40,
                    oversample_factor=3, num_train_epochs=1)).results
    # one epoch = 40 source + 3 x 16 target rows = 88 rows = 22 batches of 4
    assert res["per_seed"][0]["global_step"] == 22


def test_source_tags_mapped_by_name(crossner_data_dir):
    src = source_in_target_space("music", str(crossner_data_dir), subsample=50, seed=0)
    names = src.features["ner_tags"].feature.names
    assert names == LABELS["music"]
    used = {names[i] for tags in src["ner_tags"] for i in tags}
    assert used <= {"O", "B-person", "I-person", "B-organisation", "I-organisation",
                    "B-location", "I-location", "B-misc", "I-misc"}
    assert len(used) > 3


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"schedule": "together"}, "--schedule 'together'"),
        ({"seeds": "1,x"}, "comma-separated integers"),
        ({"oversample_factor": 0}, "--oversample_factor 0"),
    ],
)
def test_config_errors(tmp_path, kw, message):
    from crossner_hf.training.training_args import FinetuneConfig

    with pytest.raises(ValueError, match=message):  # the command's parser makes this same FinetuneConfig
        FinetuneConfig(**{"output_dir": str(tmp_path), **kw})


def test_the_command_names_no_domain_for_the_user(tmp_path):
    """No `domain` default: a user's dataset is never silently politics, and a misspelled domain says so."""
    with pytest.raises(ValueError, match="name the target: --dataset_dir SOURCE"):
        TrainArguments()
    with pytest.raises(ValueError, match="--domain 'sports': choose one of .* or pass your data as --dataset_dir"):
        TrainArguments(domain="sports")


def test_any_conll_folder_trains_direct_and_with_conll_source(tiny_bert_dir, tmp_path, crossner_data_dir):
    from huggingface_hub import ModelCard

    from crossner_hf.data.conll import conll_folder_labels

    from crossner_hf.testing import make_renamed_conll_folder

    folder = make_renamed_conll_folder(crossner_data_dir / "politics", tmp_path / "speeches",
                                       rename={"person": "PER", "politician": "POL"})
    labels = conll_folder_labels(folder)
    # O, then each type's B-/I- in the order train first uses it
    assert labels[0] == "O" and "B-PER" in labels and "B-person" not in labels
    assert labels.index("I-POL") == labels.index("B-POL") + 1
    direct = run_train(*_args(tiny_bert_dir, tmp_path / "direct", dataset_dir=str(folder))).results
    assert direct["dataset"]["name"] == "speeches" and direct["labels"] == labels
    config = json.loads((tmp_path / "direct" / "config.json").read_text())
    assert [config["id2label"][str(i)] for i in range(len(labels))] == labels
    card = ModelCard.load(tmp_path / "direct" / "README.md")
    assert card.data.eval_results[0].dataset_type == "custom" and "speeches NER (direct)" in card.text
    # CoNLL-2003 as source: its person tags have no counterpart, so the head gets them as well
    ptf = run_train(*_args(tiny_bert_dir, tmp_path / "ptf", dataset_dir=str(folder), schedule="pretrain-finetune",
                    source_subsample=16, source_epochs=1, num_train_epochs=1)).results
    assert ptf["labels"] == [*labels, "B-person", "I-person"]
    # a labels.json fixes the order (and a wrong one is refused, naming the file)
    (folder / "labels.json").write_text(json.dumps(["O", *sorted(labels[1:])]))
    assert conll_folder_labels(folder) == ["O", *sorted(labels[1:])]
    (folder / "labels.json").write_text(json.dumps(["B-PER", "O"]))
    with pytest.raises(ValueError, match="labels.json: expected a JSON list of tags with \"O\" first"):
        conll_folder_labels(folder)
    with pytest.raises(ValueError, match="--dataset_dir .*no train.txt, dev.txt, test.txt"):
        TrainArguments(dataset_dir=str(tmp_path / "nothing"))


def test_any_dataset_load_dataset_opens_is_a_target(tiny_bert_dir, tmp_path, crossner_data_dir):
    """A token-classification dataset as load_dataset opens it (here Parquet files in a folder, as a Hub
    dataset repository holds them): its ClassLabel names are the head, its splits the run's."""
    from crossner_hf.data.target import load_target, target_labels_of

    politics = load_target("politics", data_dir=crossner_data_dir).dataset
    folder = tmp_path / "hub-style"
    folder.mkdir()
    for split, name in (("train", "train"), ("validation", "dev"), ("test", "test")):
        part = politics[split].select(range(20)).remove_columns("id")
        part.to_parquet(str(folder / f"{name}.parquet"))
    labels = target_labels_of(folder)
    assert labels == politics["train"].features["ner_tags"].feature.names
    data = load_target(folder).dataset
    assert set(data) == {"train", "validation", "test"} and data["test"]["tokens"] == politics["test"]["tokens"][:20]
    result = run_train(*_args(tiny_bert_dir, tmp_path / "run", dataset_dir=str(folder))).results
    assert result["dataset"]["name"] == "hub-style" and result["labels"] == labels
    (folder / "dev.parquet").rename(folder / "holdout.parquet")
    with pytest.raises(ValueError, match="a validation split is needed"):
        load_target(folder)


def test_one_rule_picks_the_target_for_every_recipe(tmp_path, crossner_data_dir, monkeypatch):
    """target_source: --dataset_dir when given, else --domain; a folder in the working directory named like a
    CrossNER domain is the folder (the Transformer schedules and the RNN recipes both read it so)."""
    from crossner_hf.data.target import load_target, target_labels_of, target_source
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments
    from crossner_hf.commands.rnn_args import load_data

    monkeypatch.chdir(tmp_path)
    lines = ["Paris\tB-location", "", ""]
    (tmp_path / "politics").mkdir()
    for name in ("train.txt", "dev.txt", "test.txt"):
        (tmp_path / "politics" / name).write_text("\n".join(lines))
    assert target_source(None, "music") == "music" and target_source("", "music") == "music"
    source = target_source("politics", "music")
    assert source == tmp_path / "politics" and target_labels_of(source) == ["O", "B-location", "I-location"]
    assert load_target(source)["train"]["tokens"] == [["Paris"]]
    assert target_labels_of("music")[:2] == ["O", "B-musicgenre"]  # a name alone is the CrossNER domain
    rnn = BiLSTMCRFArguments(output_dir=str(tmp_path / "o"), dataset_dir="politics", data_dir=crossner_data_dir)
    target, conll = load_data(rnn, with_source=False)
    assert target.name == "politics" and len(target["train"]) == 1 and target.labels == target_labels_of(source)
    assert conll is None


def test_library_api_trains_an_in_memory_dataset_and_returns_typed_results(tiny_bert_dir, tmp_path):
    """load_target -> finetune -> Tagger, without the CLI: a DatasetDict built in memory (tags renamed,
    an extra column) trains like a CrossNER domain and its model tags with the recorded decoding."""
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    from crossner_hf import FinetuneConfig, Tagger, finetune, load_target
    from crossner_hf.training.schedules import ScheduleResult

    politics = load_target("politics")
    assert politics.name == "politics" and politics.labels == LABELS["politics"]
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    keep = {"B-politician": 1, "I-politician": 2, "B-country": 3, "I-country": 4}

    def split(name: str, n: int) -> Dataset:
        rows = politics[name].select(range(n))
        tags = [[keep.get(LABELS["politics"][t], 0) for t in s] for s in rows["ner_tags"]]
        features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names)),
                             "source": Value("string")})
        return Dataset.from_dict({"tokens": rows["tokens"], "ner_tags": tags, "source": ["x"] * n}, features=features)

    target = load_target(DatasetDict({"train": split("train", 16), "validation": split("validation", 8),
                                      "test": split("test", 8)}), name="people-places")
    assert target.labels == names and target["train"].column_names == ["id", "tokens", "ner_tags"]
    config = FinetuneConfig(output_dir=str(tmp_path / "out"), seeds="3", num_train_epochs=1,
                            per_device_train_batch_size=4, learning_rate=1e-3, disable_tqdm=True, use_cpu=True,
                            dataloader_pin_memory=False)
    result = finetune(tiny_bert_dir, target, config)
    assert isinstance(result, ScheduleResult) and result.seeds == [3] and result.best_seed == 3
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert result.test_f1 == saved["test"]["overall_f1"] and result.dataset == "people-places"
    assert result.output_dir == tmp_path / "out" and saved["labels"] == names
    tagger = Tagger.from_pretrained(result.output_dir)
    assert tagger.labels == names and len(tagger.tag([["Obama", "visited", "Germany"]])[0]) == 3
    # training scored dev and test with the Tagger's own log-probabilities and decoding: the saved model, tagged
    # through Tagger, gives the recorded figures (per type too)
    from crossner_hf.evaluation.scoring import evaluate_tagger

    for split_name, key in (("test", "test"), ("validation", "dev")):
        recorded = saved["per_seed"][0][key]
        scored = evaluate_tagger(tagger, target, split_name).metrics
        assert scored["overall_f1"] == pytest.approx(recorded["overall_f1"], abs=1e-9)
        assert {t: v["f1"] for t, v in scored["per_type"].items()} == pytest.approx(
            {t: v["f1"] for t, v in recorded["per_type"].items()}, abs=1e-9)
    with pytest.raises(ValueError, match="lacks the splits"):
        load_target(DatasetDict({"train": split("train", 4)}))
