"""NER-BERT pre-training on a tiny random BERT over a tiny corpus folder in the NER-BERT schema.

The corpus is built here exactly as the Wikipedia builder writes it: configs ``all`` (8
categories) and ``4types``, splits train/validation, features ``tokens``, ``ner_tags``
(``ClassLabel``: O, then B-/I- per category) and ``title``.
"""

from __future__ import annotations

import json
import logging
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from transformers import TrainerCallback

from command_inputs import nerbert_args
from crossner_hf.commands.nerbert import NERBERTArguments, run_nerbert
from crossner_hf.evaluation.entity_scores import entity_scores
from crossner_hf.training.nerbert import NERBERTConfig, accumulation_steps

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = {"person": "person", "city": "location", "country": "location", "river": "location",
              "band": "organisation", "company": "organisation", "university": "organisation", "film": "misc"}
FOUR_TYPES = ["person", "location", "organisation", "misc"]
NAMES = {
    "person": [["angela", "merkel"], ["obama"], ["marie", "curie"]],
    "city": [["berlin"], ["paris"], ["new", "york"]],
    "country": [["germany"], ["france"], ["united", "kingdom"]],
    "river": [["rhine"], ["danube"], ["thames", "river"]],
    "band": [["queen"], ["the", "beatles"], ["abba"]],
    "company": [["siemens"], ["general", "motors"], ["nokia"]],
    "university": [["oxford", "university"], ["mit"], ["eth", "zurich"]],
    "film": [["casablanca"], ["star", "wars"], ["metropolis"]],
}
FILLER = ["the", "in", "of", "visited", "near", "and", "a", "was", "founded", "by", "with", "from", "saw", "met"]
WORDS = sorted({w for names in NAMES.values() for n in names for w in n} | set(FILLER))
N_TRAIN, N_VALIDATION = 32, 8


def _labels(types):
    return ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]


def _sentences(n: int, types: list[str], seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    names = _labels(types)
    rows = []
    for i in range(n):
        tokens, tags = [], []
        for _ in range(rng.randint(2, 4)):
            tokens += rng.sample(FILLER, rng.randint(1, 3))
            tags += ["O"] * (len(tokens) - len(tags))
            category = rng.choice(list(NAMES))
            name = rng.choice(NAMES[category])
            t = category if category in types else CATEGORIES[category]
            tokens += name
            tags += [f"B-{t}"] + [f"I-{t}"] * (len(name) - 1)
        rows.append({"tokens": tokens, "ner_tags": [names.index(x) for x in tags], "title": f"Page {i}"})
    return rows


def write_corpus(folder: Path, columns=("tokens", "ner_tags"), configs=("all", "4types")) -> Path:
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    out = {}
    for config in configs:
        types = FOUR_TYPES if config == "4types" else list(NAMES)
        rows = [{columns[0]: r["tokens"], columns[1]: r["ner_tags"], "title": r["title"]}
                for r in _sentences(N_TRAIN + N_VALIDATION, types)]
        features = Features({columns[0]: List(Value("string")), columns[1]: List(ClassLabel(names=_labels(types))),
                             "title": Value("string")})
        data = Dataset.from_list(rows, features=features)
        out[config] = DatasetDict(train=data.select(range(N_TRAIN)),
                                  validation=data.select(range(N_TRAIN, N_TRAIN + N_VALIDATION)))
    return write_hub_dataset_folder(out, folder, {"license": "cc-by-sa-3.0"}, "# Tiny NER-BERT corpus\n")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("nerbert_corpus"))


@pytest.fixture(scope="module")
def base_model(tmp_path_factory, crossner_data_dir) -> str:
    """A random tiny BERT whose vocabulary has the corpus words and the politics words (fine-tuning)."""
    from crossner_hf.testing import make_tiny_bert

    lines = (crossner_data_dir / "politics" / "train.txt").read_text(encoding="utf-8").splitlines()
    politics = sorted({line.split("\t")[0].lower() for line in lines if line.strip()})
    return make_tiny_bert(tmp_path_factory.mktemp("nerbert_base"), WORDS + politics)


def _args(base_model, corpus_dir, out, **kw) -> tuple:
    options = dict(
        output_dir=str(out), model_name_or_path=base_model, dataset_name=str(corpus_dir), dataset_config="all",
        effective_batch_size=8, per_device_train_batch_size=4, num_train_epochs=6, learning_rate=5e-3,
        eval_steps=4, save_steps=4, logging_steps=4, use_cpu=True, disable_tqdm=True, seed=7,
        dataloader_pin_memory=False,
    )
    options.update(kw)
    return nerbert_args(**options)


@pytest.fixture(scope="module")
def nerbert_run(base_model, corpus_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("nerbert_run")
    return out, run_nerbert(*_args(base_model, corpus_dir, out))


class CountSteps(TrainerCallback):
    def __init__(self):
        self.steps = 0

    def on_step_end(self, args, state, control, **kwargs):
        self.steps += 1


class KillAt(TrainerCallback):
    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt(f"killed at step {self.step}")


# ----------------------------------------------------------------------------- metric


def _random_tags(rng: np.random.Generator, n_sentences: int, n_labels: int, p_o: float):
    lengths = rng.integers(0, 12, n_sentences)
    ids = [np.where(rng.random(n) < p_o, 0, rng.integers(1, n_labels, n)) for n in lengths]
    return ids, np.repeat(np.arange(n_sentences), lengths)


@pytest.mark.parametrize("n_types, p_o", [(8, 0.5), (3, 0.2), (315, 0.7)])
def test_entity_scores_equal_seqeval(n_types, p_o):
    from crossner_hf.evaluation.metrics import compute_ner_metrics

    names = _labels([f"type{i}" for i in range(n_types)])
    rng = np.random.default_rng(n_types)
    gold, sentences = _random_tags(rng, 300, len(names), p_o)
    # predictions: gold with a third of the words replaced, so some entities match and many do not
    pred = [np.where(rng.random(len(g)) < 0.33, rng.integers(0, len(names), len(g)), g) for g in gold]
    ours = entity_scores(np.concatenate(gold), np.concatenate(pred), sentences, names)
    ref = compute_ner_metrics([[names[i] for i in g] for g in gold], [[names[i] for i in p] for p in pred])
    assert ours["n_gold_entities"] == ref["n_gold_entities"] and ours["n_pred_entities"] == ref["n_pred_entities"]
    assert 0 < ours["f1"] < 1
    for key in ("precision", "recall", "f1", "accuracy"):
        assert math.isclose(ours[key], ref[f"overall_{key}"], rel_tol=1e-12), key


def test_entity_scores_respect_sentence_boundaries_and_reject_non_iob2():
    names = ["O", "B-x", "I-x"]
    # I-x at the start of the second sentence opens a new entity (conlleval); it does not continue the first
    scores = entity_scores(np.array([1, 2, 2]), np.array([1, 2, 2]), np.array([0, 0, 1]), names)
    assert scores["n_gold_entities"] == 2 and scores["f1"] == 1.0
    assert entity_scores(np.array([1, 2]), np.array([1, 1]), np.array([0, 0]), names)["f1"] == 0.0
    with pytest.raises(ValueError, match="not IOB2"):
        entity_scores(np.array([0]), np.array([0]), np.array([0]), ["O", "S-x"])


# ------------------------------------------------------------------------- arguments


def test_effective_batch_and_accumulation_arithmetic(tmp_path):
    assert accumulation_steps(960, 32, 1) == 30 and accumulation_steps(960, 48, 2) == 10
    assert accumulation_steps(None, 32, 1, given=3) == 3 and accumulation_steps(0, 32, 2, given=4) == 4
    with pytest.raises(ValueError, match=r"--per_device_train_batch_size 50 x 1 process\(es\) = 50: set "
                                         r"--per_device_train_batch_size to a divisor of 960"):
        accumulation_steps(960, 50, 1)
    with pytest.raises(ValueError, match="multiple of 7 processes"):
        accumulation_steps(960, 8, 7)
    with pytest.raises(ValueError, match="--gradient_accumulation_steps 4 contradicts"):
        accumulation_steps(960, 32, 1, given=4)
    config = NERBERTConfig(output_dir=str(tmp_path), per_device_train_batch_size=40, use_cpu=True)
    assert config.gradient_accumulation_steps == 24 and config.learning_rate == 5e-5
    assert config.metric_for_best_model == "f1" and config.load_best_model_at_end
    with pytest.raises(ValueError, match="needs a tagged corpus"):
        NERBERTArguments()


# ------------------------------------------------------------------------------- runs


def test_run_writes_model_results_and_card(nerbert_run, base_model):
    from huggingface_hub import ModelCard
    from transformers import AutoTokenizer

    out, results = nerbert_run
    saved = json.loads((out / "results.json").read_text())
    corpus = saved["corpus"]
    assert corpus["config"] == "all" and corpus["n_categories"] == 8 and corpus["n_labels"] == 17
    assert corpus["train_sentences"] == N_TRAIN and corpus["validation_sentences"] == N_VALIDATION
    # 32 sentences / (4 per device x 2 accumulation) = 4 steps per epoch, 6 epochs
    assert saved["global_step"] == 24 and saved["gradient_accumulation_steps"] == 2
    assert saved["effective_batch_size"] == 8
    # tokens trained on: every sub-word of every train sentence (specials included) once per epoch
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    train = _sentences(N_TRAIN + N_VALIDATION, list(NAMES))[:N_TRAIN]
    per_epoch = sum(len(tokenizer(r["tokens"], is_split_into_words=True)["input_ids"]) for r in train)
    assert saved["tokens_seen"] == 6 * per_epoch
    best = saved["best_validation"]
    assert best["f1"] == max(h["f1"] for h in saved["validation_history"]) > 0.3  # it learned something
    assert Path(saved["best_checkpoint"]).name == f"checkpoint-{best['step']}"
    config = json.loads((out / "config.json").read_text())
    assert len(config["id2label"]) == 17 and config["architectures"] == ["BertForTokenClassification"]
    provenance = config["crossner_provenance"]
    assert provenance["head"] == {"trained_by": "nerbert", "labels": 17}
    (marker,) = provenance["pretraining"]
    assert marker["kind"] == "nerbert" and marker["config"] == "all" and marker["n_categories"] == 8
    assert marker["global_step"] == 24 and marker["best_validation_f1"] == best["f1"]
    assert (out / "tokenizer.json").is_file() and (out / "model.safetensors").is_file()
    card = ModelCard.load(out / "README.md")
    f1 = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert f1["f1"] == round(100 * best["f1"], 2) and card.data.eval_results[0].dataset_config == "all"
    assert "corpus-config-all" in card.data.tags and "| entity categories | 8 (17 IOB2 labels) |" in card.text
    assert "| optimisation steps | 24 (6.00 epochs) |" in card.text


def test_validation_f1_equals_seqeval_on_the_saved_model(nerbert_run, corpus_dir):
    """The recorded best F1 is what seqeval gives for the saved model's word-level argmax tags."""
    from datasets import load_dataset
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.inference.predict import predict_tags
    from crossner_hf.evaluation.metrics import compute_ner_metrics

    out, results = nerbert_run
    validation = load_dataset(str(corpus_dir), "all")["validation"]
    names = validation.features["ner_tags"].feature.names
    model = AutoModelForTokenClassification.from_pretrained(out)
    pred = predict_tags(model, AutoTokenizer.from_pretrained(out), validation["tokens"], decoding="argmax")
    ref = compute_ner_metrics([[names[i] for i in tags] for tags in validation["ner_tags"]], pred)
    best = results["best_validation"]
    assert ref["n_pred_entities"] == best["n_pred_entities"] and ref["n_gold_entities"] == best["n_gold_entities"]
    for key in ("f1", "precision", "recall"):
        assert math.isclose(best[key], ref[f"overall_{key}"], rel_tol=1e-12), key


def test_4types_config_and_custom_columns(base_model, corpus_dir, tmp_path):
    res = run_nerbert(*_args(base_model, corpus_dir, tmp_path / "4types", dataset_config="4types", max_steps=2,
                            eval_steps=2, save_steps=2))
    assert res["corpus"]["categories"] == FOUR_TYPES and res["corpus"]["n_labels"] == 9
    config = json.loads((tmp_path / "4types" / "config.json").read_text())
    assert [config["id2label"][str(i)] for i in range(9)] == _labels(FOUR_TYPES)
    assert config["crossner_provenance"]["pretraining"][-1]["config"] == "4types"
    # any ClassLabel token-classification dataset: own column names, no config name, validation subsample
    other = write_corpus(tmp_path / "other", columns=("words", "tags"), configs=("default",))
    res = run_nerbert(*_args(base_model, other, tmp_path / "other-out", dataset_config="none", tokens_column="words",
                            tags_column="tags", validation_subsample=5, max_steps=1, eval_steps=1, save_steps=1))
    assert res["corpus"]["validation_sentences"] == 5 and res["corpus"]["validation_sentences_total"] == 8
    with pytest.raises(ValueError, match="no column 'words'"):
        run_nerbert(*_args(base_model, corpus_dir, tmp_path / "bad", tokens_column="words", max_steps=1))


def test_pretraining_on_the_corpus_the_wikipedia_builder_made(sample_corpus, tmp_path):
    """A few steps on the builder's output from ``../shared/data`` (both configs), not a hand-made corpus."""
    from datasets import load_dataset

    from crossner_hf.testing import make_tiny_bert

    corpus = load_dataset(str(sample_corpus), "all")
    names = corpus["train"].features["ner_tags"].feature.names
    base = make_tiny_bert(tmp_path / "base", sorted({w for split in corpus.values() for s in split["tokens"] for w in s}))
    res = run_nerbert(*_args(base, sample_corpus, tmp_path / "all", effective_batch_size=32,
                            per_device_train_batch_size=16, max_steps=3, eval_steps=3, save_steps=3))
    assert res["global_step"] == 3 and res["gradient_accumulation_steps"] == 2
    info = res["corpus"]
    assert info["categories"] == [n[2:] for n in names[1::2]] and {"scientist", "politicalparty"} <= set(info["categories"])
    assert info["n_labels"] == len(names) and info["train_sentences"] == len(corpus["train"])
    assert info["validation_sentences"] == len(corpus["validation"])
    # every validation entity is scored: the builder writes valid IOB2, so one B- tag per entity
    b_tags = sum(names[t].startswith("B-") for tags in corpus["validation"]["ner_tags"] for t in tags)
    assert res["best_validation"]["n_gold_entities"] == b_tags > 100
    config = json.loads((tmp_path / "all" / "config.json").read_text())
    assert [config["id2label"][str(i)] for i in range(len(names))] == names
    four = run_nerbert(*_args(base, sample_corpus, tmp_path / "4types", dataset_config="4types", max_steps=1,
                             eval_steps=1, save_steps=1))
    assert four["corpus"]["categories"] == ["ENTITY", "location", "organisation", "person"]
    assert four["best_validation"]["n_gold_entities"] == b_tags  # the same entities, coarser types


@pytest.mark.slow
def test_two_cpu_processes_with_accelerate(base_model, corpus_dir, tmp_path):
    """``accelerate launch`` with two CPU processes: the effective batch counts both processes."""
    import os

    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           str(ROOT / "trainer_recipes" / "nerbert.py"), "--model_name_or_path", base_model,
           "--dataset_name", str(corpus_dir), "--effective_batch_size", "8", "--per_device_train_batch_size", "2",
           "--num_train_epochs", "2", "--eval_steps", "4", "--save_steps", "4", "--learning_rate", "5e-3",
           "--use_cpu", "true", "--disable_tqdm", "true", "--dataloader_pin_memory", "false", "--seed", "7",
           # 7 validation sentences in batches of 2: the processes get unequal shards, padded by accelerate
           "--validation_subsample", "7", "--per_device_eval_batch_size", "2", "--output_dir", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    res = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"STDOUT:\n{res.stdout[-3000:]}\nSTDERR:\n{res.stderr[-6000:]}"
    saved = json.loads((out / "results.json").read_text())
    # 2 per device x 2 processes x 2 accumulation = 8 sentences per step: 32 / 8 = 4 steps per epoch
    assert saved["world_size"] == 2 and saved["gradient_accumulation_steps"] == 2
    assert saved["effective_batch_size"] == 8 and saved["global_step"] == 8
    assert [h["step"] for h in saved["validation_history"]] == [4, 8]
    # validation is sharded over both processes and gathered back in order, padding dropped: the
    # recorded best F1 is what seqeval gives for the saved (best) model on the same 7 sentences
    from datasets import load_dataset
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.inference.predict import predict_tags
    from crossner_hf.evaluation.metrics import compute_ner_metrics

    validation = load_dataset(str(corpus_dir), "all")["validation"].shuffle(seed=7).select(range(7))
    names = validation.features["ner_tags"].feature.names
    model = AutoModelForTokenClassification.from_pretrained(out)
    pred = predict_tags(model, AutoTokenizer.from_pretrained(out), validation["tokens"], decoding="argmax")
    ref = compute_ner_metrics([[names[i] for i in tags] for tags in validation["ner_tags"]], pred)
    best = saved["best_validation"]
    assert saved["corpus"]["validation_sentences"] == 7
    assert best["n_gold_entities"] == ref["n_gold_entities"] and best["n_pred_entities"] == ref["n_pred_entities"]
    assert math.isclose(best["f1"], ref["overall_f1"], abs_tol=1e-9)
    assert (out / "model.safetensors").is_file() and (out / "README.md").is_file()


def test_resume_from_mid_run_checkpoint_matches_uninterrupted(nerbert_run, base_model, corpus_dir, tmp_path):
    from safetensors.torch import load_file

    full_dir, full = nerbert_run
    with pytest.raises(KeyboardInterrupt):
        run_nerbert(*_args(base_model, corpus_dir, tmp_path), callbacks=[KillAt(14)])
    steps = sorted(int(p.name.split("-")[1]) for p in tmp_path.glob("checkpoint-*"))
    assert steps[-1] == 12  # mid-epoch 4: the kill at step 14 leaves checkpoint-12 as the latest
    counter = CountSteps()
    resumed = run_nerbert(*_args(base_model, corpus_dir, tmp_path, resume_from_checkpoint="true"), callbacks=[counter])
    assert counter.steps == 24 - 12  # only the steps after checkpoint-12 ran
    for key in ("best_validation", "validation_history", "global_step", "tokens_seen", "best_checkpoint"):
        expected = full[key] if key != "best_checkpoint" else full[key].replace(str(full_dir), str(tmp_path))
        assert resumed[key] == expected, key
    for name in ("model.safetensors", "checkpoint-24/model.safetensors"):
        a, b = load_file(full_dir / name), load_file(tmp_path / name)
        assert a.keys() == b.keys() and all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a), name


def test_push_then_finetune_replaces_the_head_and_records_the_base(
    base_model, corpus_dir, tmp_path, fake_hub, caplog, monkeypatch, crossner_data_dir
):
    from huggingface_hub import ModelCard

    from crossner_hf.commands.train import run_train
    from command_inputs import train_args

    nerbert_dir = tmp_path / "nerbert"
    run_nerbert(*_args(base_model, corpus_dir, nerbert_dir, max_steps=2, eval_steps=2, save_steps=2,
                      push_to_hub=True, hub_model_id="user/nerbert-tiny"))
    arrived = fake_hub.files("user/nerbert-tiny")
    assert arrived["model.safetensors"] == (nerbert_dir / "model.safetensors").read_bytes()
    assert "results.json" in arrived and "README.md" in arrived
    assert not any("checkpoint-" in name for name in arrived)

    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))
    caplog.set_level(logging.WARNING, logger="crossner_hf.training.nerbert")
    out = tmp_path / "politics"
    run_train(*train_args(
        output_dir=str(out), model_name_or_path=str(nerbert_dir), domain="politics", schedule="direct",
        few_shot=8, per_device_train_batch_size=4, max_steps=2, use_cpu=True, disable_tqdm=True, seed=3,
        dataloader_pin_memory=False, eval_strategy="no", save_strategy="no", load_best_model_at_end=False,
        early_stopping_patience=0,  # dev and test are still scored once each, for the card
    )).results
    records = [r for r in caplog.records if r.name == "crossner_hf.modeling.heads"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    message = records[0].getMessage()
    assert "NER-BERT entity-tagging head `classifier` (17 labels)" in message and "19-label head" in message
    config = json.loads((out / "config.json").read_text())
    provenance = config["crossner_provenance"]
    assert len(config["id2label"]) == 19 and [s["kind"] for s in provenance["pretraining"]] == ["nerbert"]
    assert provenance["head"]["trained_by"] == "train" and provenance["decoding"] in ("argmax", "bio-viterbi")
    card = ModelCard.load(out / "README.md")
    assert card.data.base_model == "user/nerbert-tiny"  # the pushed NER-BERT output is the base
    assert "trained as an entity tagger (NER-BERT pre-training" in card.text and "(config `all`: 8 entity" in card.text


def test_help_and_one_line_errors(tmp_path, capsys, monkeypatch):
    import runpy

    from crossner_hf.cli import main

    # the recipe file as `python trainer_recipes/nerbert.py --help` runs it, in this interpreter
    monkeypatch.setattr("sys.argv", [str(ROOT / "trainer_recipes" / "nerbert.py"), "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(ROOT / "trainer_recipes" / "nerbert.py"), run_name="__main__")
    assert exit_.value.code in (0, None)
    res = capsys.readouterr()
    assert res.out.startswith("usage:") and "--effective_batch_size" in res.out and "--dataset_config" in res.out
    assert main(["nerbert", "--dataset_name", "x", "--per_device_train_batch_size", "50", "--use_cpu", "true",
                 "--output_dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("crossner-hf nerbert: error: --effective_batch_size 960")
