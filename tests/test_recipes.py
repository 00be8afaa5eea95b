"""The recipes as users run them: python, YAML configs, accelerate with two CPU processes, DAPT -> NER.

The fine-tuning recipe under two CPU processes is the docs' own command, run (and checked) by
``tests/test_readme.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACCELERATE_2CPU = [
    sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
    "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
]


@pytest.fixture()
def env(tmp_path_factory, crossner_data_dir):
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
        "CROSSNER_DATA_DIR": str(crossner_data_dir),
        "CROSSNER_HF_CACHE": str(tmp_path_factory.getbasetemp() / "crossner_cache"),
        "OMP_NUM_THREADS": "1",
    }


def _run(cmd, env, cwd):
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}\nSTDOUT:\n{res.stdout[-3000:]}\nSTDERR:\n{res.stderr[-6000:]}"
    return res


def _finetune_flags(model, out):
    return [
        "--model_name_or_path", str(model), "--domain", "politics",
        "--few_shot", "16", "--per_device_train_batch_size", "4", "--max_steps", "6",
        "--eval_strategy", "steps", "--save_strategy", "steps", "--eval_steps", "3", "--save_steps", "3",
        "--learning_rate", "1e-3", "--use_cpu", "true", "--disable_tqdm", "true",
        "--output_dir", str(out),
    ]


def test_finetune_recipe_with_yaml_config(tiny_bert_dir, tmp_path, env, monkeypatch, capsys):
    import runpy

    cfg = tmp_path / "run.yaml"
    cfg.write_text("schedule: joint\nsource_subsample: 24\noversample_factor: 2\nseeds: 3,4\nfew_shot: 99\n")
    # `python trainer_recipes/finetune.py --config run.yaml ...`, run as that file's __main__ in this interpreter
    # (a fresh one adds 8-10 s of imports and nothing the recipe does)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TOKENIZERS_PARALLELISM", "CROSSNER_DATA_DIR",
                 "CROSSNER_HF_CACHE"):
        monkeypatch.setenv(name, env[name])
    recipe = str(ROOT / "trainer_recipes" / "finetune.py")
    monkeypatch.setattr("sys.argv", [recipe, "--config", str(cfg), *_finetune_flags(tiny_bert_dir, tmp_path / "out")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(recipe, run_name="__main__")
    out = capsys.readouterr()
    assert exit_.value.code in (0, None), out.err[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["schedule"] == "joint" and results["seeds"] == [3, 4]
    assert results["config"]["few_shot"] == 16  # the command line wins over the YAML file
    assert "test F1 (bio-viterbi decoding) over 2 seed(s): " in out.out and "overall" in out.out


def _corpus(crossner_data_dir, path):
    from crossner_hf.data.conll import read_conll
    from crossner_hf.data.labels import LABELS

    sents = read_conll(crossner_data_dir / "politics" / "train.txt", LABELS["politics"])
    path.write_text("\n".join(" ".join(s["tokens"]) for s in sents), encoding="utf-8")
    return path


@pytest.mark.slow
def test_dapt_two_cpu_processes_then_finetune(tiny_bert_dir, tmp_path, env, crossner_data_dir, monkeypatch):
    corpus = _corpus(crossner_data_dir, tmp_path / "politics.txt")
    dapt_out = tmp_path / "dapt"
    _run([*ACCELERATE_2CPU, str(ROOT / "trainer_recipes" / "dapt.py"),
          "--model_name_or_path", tiny_bert_dir, "--train_file", str(corpus), "--masking", "span-adjacent",
          "--mlm_probability", "0.2", "--block_size", "64", "--per_device_train_batch_size", "4",
          "--max_steps", "4", "--use_cpu", "true", "--disable_tqdm", "true", "--output_dir", str(dapt_out)],
         env, tmp_path)
    results = json.loads((dapt_out / "results.json").read_text())
    assert results["global_step"] == 4 and results["masking"] == "span-adjacent"
    assert results["world_size"] == 2
    assert results["mlm_probability"] == 0.2 and results["dataset"]["level"] == "custom"
    from huggingface_hub import ModelCard

    card = ModelCard.load(dapt_out / "README.md")
    assert "| optimisation steps | 4 (" in card.text and "| masking | span-adjacent |" in card.text
    assert card.data.base_model is None and "masking-span-adjacent" in card.data.tags  # a local random BERT
    # the adapted encoder plugs straight into fine-tuning (`crossner-hf train`, here through cli.main in this
    # interpreter: the recipe script as a process is test_finetune_recipe_with_yaml_config's)
    from crossner_hf.cli import main

    for name in ("CROSSNER_DATA_DIR", "CROSSNER_HF_CACHE"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(tmp_path)
    assert main(["train", *_finetune_flags(dapt_out, tmp_path / "ner")]) == 0
    # the folder by name: a published results.json carries no local path
    assert json.loads((tmp_path / "ner" / "results.json").read_text())["model"] == dapt_out.name


def test_dapt_resume_and_masking_choices(tiny_bert_dir, tmp_path, env, crossner_data_dir):
    from command_inputs import dapt_args
    from crossner_hf.commands.dapt import run_dapt

    corpus = _corpus(crossner_data_dir, tmp_path / "politics.txt")
    common = dict(model_name_or_path=tiny_bert_dir, train_file=str(corpus), block_size=64,
                  per_device_train_batch_size=4, use_cpu=True, disable_tqdm=True,
                  save_strategy="steps", save_steps=3, masking="whole-word")
    first = run_dapt(*dapt_args(output_dir=str(tmp_path / "a"), max_steps=3, **common))
    assert first.global_step == 3
    # a resume with other settings would continue this run under another name: refused, naming the flag
    with pytest.raises(ValueError, match=r"--max_steps 3 \(now 6\).*--overwrite_output_dir"):
        run_dapt(*dapt_args(output_dir=str(tmp_path / "a"), max_steps=6, resume_from_checkpoint="true", **common))
    fresh = run_dapt(*dapt_args(output_dir=str(tmp_path / "a"), max_steps=6, resume_from_checkpoint="true",
                                overwrite_output_dir=True, **common))
    assert fresh.global_step == 6 and fresh.results["n_examples"] == first.results["n_examples"]
    with pytest.raises(ValueError, match="--masking 'spans'"):
        dapt_args(output_dir=str(tmp_path / "b"), **{**common, "masking": "spans"})
    with pytest.raises(ValueError, match="exactly one corpus"):
        dapt_args(output_dir=str(tmp_path / "b"), model_name_or_path=tiny_bert_dir)


def test_dapt_from_corpus_level_folder(tiny_bert_dir, tmp_path, crossner_data_dir):
    from crossner_hf.corpora import build_corpus_levels, entity_list_from_conll
    from crossner_hf.data.conll import read_conll
    from command_inputs import dapt_args
    from crossner_hf.commands.dapt import run_dapt
    from crossner_hf.data.labels import LABELS
    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    sents = read_conll(crossner_data_dir / "politics" / "train.txt", LABELS["politics"])
    levels = build_corpus_levels([" ".join(s["tokens"]) for s in sents], entity_list_from_conll(sents),
                                 domain="politics")
    folder = write_hub_dataset_folder({f"politics-{k}": v for k, v in levels.items()}, tmp_path / "corpora")
    res = run_dapt(*dapt_args(
        output_dir=str(tmp_path / "dapt"), model_name_or_path=tiny_bert_dir, dataset_name=str(folder),
        dataset_config="politics-integrated", block_size=64, per_device_train_batch_size=4, max_steps=2,
        use_cpu=True, disable_tqdm=True, masking="token",
    ))
    assert res.results["dataset"]["level"] == "integrated" and res.results["n_texts"] == len(levels["integrated"])
    assert res.dataset == "corpora:politics-integrated"  # the folder's name, never a local path


def test_cli_train_and_predict(tiny_bert_dir, tmp_path, env, monkeypatch, capsys):
    from crossner_hf.cli import main

    for key in ("CROSSNER_DATA_DIR", "CROSSNER_HF_CACHE"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--model", tiny_bert_dir, "--domain", "music", "--few_shot", "8",
                 "--per_device_train_batch_size", "4", "--max_steps", "2", "--use_cpu", "true",
                 "--disable_tqdm", "true"]) == 0
    out = tmp_path / "outputs" / "music-direct"
    assert (out / "results.json").is_file() and "overall" in capsys.readouterr().out
    assert main(["predict", "--model", str(out), "the band played a song"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["text"] == "the band played a song"
    assert all(record["text"][e["start"]:e["end"]] == e["word"] for e in record["entities"])
