"""Pushing to the Hub, against a local fake Hub server: byte-identical arrival and clear failures."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def model_folder(tmp_path, tiny_bert_dir):
    from huggingface_hub import ModelCardData
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.publishing.cards import write_model_card

    out = tmp_path / "model"
    model = AutoModelForTokenClassification.from_pretrained(tiny_bert_dir, num_labels=3)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    write_model_card(out, ModelCardData(language="en", license="mit"), "# A tiny model\n")
    return out


def _cli(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "crossner_hf.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, **kw)


def _env(**extra):
    return {**os.environ, "HF_HUB_OFFLINE": "0", **extra}


def test_push_model_folder_arrives_byte_identical(fake_hub, model_folder):
    from crossner_hf.publishing.hub import push_to_hub

    url = push_to_hub(model_folder, "user/tiny-ner")
    assert url.startswith(fake_hub.url) and "/commit/" in url
    arrived = fake_hub.files("user/tiny-ner")
    local = {p.name: p.read_bytes() for p in model_folder.iterdir()}
    for name in ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json", "README.md"):
        assert arrived[name] == local[name], name
    assert set(arrived) == set(local)
    # the weights took the LFS route (batch, PUT, verify); small text files went inline
    sha = hashlib.sha256(local["model.safetensors"]).hexdigest()
    assert ("PUT", f"/lfs-upload/{sha}") in fake_hub.requests
    assert fake_hub.repos["user/tiny-ner"]["type"] == "model"


def test_cli_push_dataset_folder_and_builder_push(fake_hub, tmp_path, crossner_data_dir):
    from datasets import Dataset

    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    folder = write_hub_dataset_folder({"tiny": Dataset.from_dict({"text": ["a", "b"]})}, tmp_path / "ds",
                                      {"license": "mit"}, "# Tiny\n")
    res = _cli(["push", str(folder), "user/tiny-ds"], _env())
    assert res.returncode == 0, res.stderr[-2000:]
    arrived = fake_hub.files("user/tiny-ds")
    assert arrived["data/tiny/train-00000-of-00001.parquet"] == (
        folder / "data" / "tiny" / "train-00000-of-00001.parquet").read_bytes()
    assert fake_hub.repos["user/tiny-ds"]["type"] == "dataset"
    # --push_to_hub of the dataset builder (the script, as users run it)
    res = subprocess.run(
        [sys.executable, str(ROOT / "dataset_scripts" / "crossner.py"), "--data_dir", str(crossner_data_dir),
         "--configs", "ai", "--output_dir", str(tmp_path / "crossner"), "--push_to_hub", "user/crossner"],
        capture_output=True, text=True, timeout=300, env=_env(CROSSNER_HF_CACHE=str(tmp_path / "cache")),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    arrived = fake_hub.files("user/crossner")
    assert arrived["README.md"] == (tmp_path / "crossner" / "README.md").read_bytes()
    assert any(name.startswith("data/ai/test-") for name in arrived)


def test_training_run_pushes_its_finished_folder(fake_hub, tmp_path, tiny_bert_dir, crossner_data_dir, monkeypatch,
                                                capsys):
    from crossner_hf.cli import main as cli_main

    # the training in this process (fake_hub points it at the server): the push after it is what is tested here,
    # and the `push` command and the loading below still run as processes of their own
    monkeypatch.chdir(tmp_path)
    code = cli_main(["train", "--model", tiny_bert_dir, "--domain", "ai", "--few_shot", "8", "--max_steps", "2",
                     "--per_device_train_batch_size", "4", "--use_cpu", "true", "--disable_tqdm", "true",
                     "--data_dir", str(crossner_data_dir), "--output_dir", str(tmp_path / "ai"),
                     "--push_to_hub", "true", "--hub_model_id", "user/ai-ner"])
    assert code == 0, capsys.readouterr().err[-3000:]
    arrived = fake_hub.files("user/ai-ner")
    assert arrived["model.safetensors"] == (tmp_path / "ai" / "model.safetensors").read_bytes()
    assert arrived["results.json"] == (tmp_path / "ai" / "results.json").read_bytes()
    assert (tmp_path / "ai" / "seed-42" / "model.safetensors").is_file()
    assert not any(name.startswith("seed-") or "checkpoint-" in name for name in arrived)  # only the kept model
    assert b'Tagger.from_pretrained("user/ai-ner")' in arrived["README.md"]  # the card names the repo it lives in
    # `crossner-hf push` of the same folder uploads the same files: one ignore list for both ways
    assert list((tmp_path / "ai").rglob("training_args.bin")), "the run wrote a pickled training_args.bin"
    # ... and with Xet on (hf_xet is installed by default) against this endpoint without Xet storage,
    # the push falls back to Git LFS instead of failing with "cannot connect"
    res = _cli(["push", str(tmp_path / "ai"), "user/ai-ner-2"], _env(HF_HUB_DISABLE_XET="0"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "no Xet storage" in res.stderr and "Git LFS" in res.stderr
    assert set(fake_hub.files("user/ai-ner-2")) == set(arrived)
    assert not any(name.endswith("training_args.bin") for name in arrived)
    # files carry the usual mode, not the 0600 transformers gives model.safetensors
    assert (tmp_path / "ai" / "model.safetensors").stat().st_mode & 0o044 == 0o044
    # the pushed repo loads back from the endpoint (fresh cache) and tags exactly as the local folder
    # as the card's usage snippet says: Tagger.from_pretrained on the repo id
    # (one interpreter for both: each model is opened by Tagger.from_pretrained on its own)
    script = ("import json, sys; from crossner_hf import Tagger; "
              "text = 'The Senate of France met in Paris with Angela Merkel.'; "
              "[print(json.dumps([[e['entity_group'], e['start'], e['end']] for e in "
              "Tagger.from_pretrained(m).tag_texts([text])[0]['entities']])) for m in sys.argv[1:]]")
    res = subprocess.run([sys.executable, "-c", script, "user/ai-ner", str(tmp_path / "ai")], capture_output=True,
                         text=True, timeout=120, env=_env(HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_XET="0"))
    assert res.returncode == 0, res.stderr[-2000:]
    tagged = res.stdout.splitlines()
    assert len(tagged) == 2 and tagged[0] == tagged[1] and tagged[0].startswith("[")
    assert any(m == "GET" and p.startswith("/user/ai-ner/resolve/") and p.endswith("/model.safetensors")
               for m, p in fake_hub.requests), [r for r in fake_hub.requests if r[0] in ("GET", "HEAD")]  # from the server


@pytest.mark.parametrize("failure,verbosity", [
    *[(f, v) for f in ("server-down", "401", "500-commit") for v in ("warning", "debug")],
    # the client's own retries (inside huggingface_hub; the fake server's Retry-After keeps them to ~5 s): once, at
    # the level that must hide tracebacks
    ("500-lfs", "warning")])
def test_failed_push_is_one_line_keeps_folder_and_hides_token(fake_hub, model_folder, failure, verbosity):
    before = _hashes(model_folder)
    env = _env(HF_HUB_VERBOSITY=verbosity)
    if failure == "server-down":
        fake_hub.stop()
        expected = "cannot connect"
    elif failure == "401":
        env["HF_TOKEN"] = "hf_wrong_token_987"
        expected = "HTTP 401"
    elif failure == "500-commit":
        fake_hub.fail[("POST", "commit")] = 500
        expected = "HTTP 500"
    else:
        fake_hub.fail[("PUT", "lfs-upload")] = 500
        expected = "HTTP 500"
    res = _cli(["push", str(model_folder), "user/broken"], env)
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("crossner-hf push: error: ")]
    assert len(errors) == 1 and errors[0].startswith("crossner-hf push: error: push of ") and expected in errors[0]
    if verbosity == "warning":  # huggingface_hub's own debug log (asked for) may show its tracebacks
        assert "Traceback" not in res.stderr, res.stderr
    for secret in (fake_hub.token, env["HF_TOKEN"]):
        assert secret not in res.stdout and secret not in res.stderr
    assert _hashes(model_folder) == before


def test_push_refuses_offline_and_unknown_folders(tmp_path, monkeypatch):
    from crossner_hf.publishing.hub import PushError, detect_repo_type, push_to_hub

    (tmp_path / "README.md").write_text("# x\n")
    with pytest.raises(ValueError, match="neither a model"):
        detect_repo_type(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PushError, match="HF_HUB_OFFLINE is set"):
        push_to_hub(tmp_path, "user/x", repo_type="model")
