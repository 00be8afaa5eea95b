"""Issue 39: nothing executed from a received folder, nothing lost to a kill.

The RNN loop's checkpoint loads without pickle (a planted payload is refused in one line and never runs),
is written beside and renamed (a kill during the save leaves the previous one, and resume then reaches the
uninterrupted run's weights), and its ``best/`` copy is swapped as a whole.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch

from crossner_hf.cli import main as cli_main
from processes import alive, wait_for

pytestmark = pytest.mark.xdist_group("safety")


class _Payload:
    """Unpickling this runs a shell command: what a crafted checkpoint would do."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _bilstm(out, crossner_data_dir, **kw):
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments

    base = dict(architecture="crossner", domain="politics", schedule="target", word_dim=12, hidden_size=8,
                char_ngram_dim=0, output_dir=str(out), data_dir=str(crossner_data_dir), max_steps_per_epoch=3,
                num_train_epochs=3, early_stopping_patience=0, use_cpu=True, seed=1)
    return BiLSTMCRFArguments(**{**base, **kw})


def test_a_planted_checkpoint_payload_is_refused_and_never_runs(tmp_path, crossner_data_dir, monkeypatch, capsys):
    from crossner_hf.training.rnn.loop import load_checkpoint
    from crossner_hf.commands.bilstm_crf import run_bilstm_crf

    out = tmp_path / "run"
    run_bilstm_crf(_bilstm(out, crossner_data_dir, num_train_epochs=1))
    state = out / "checkpoint" / "state.pt"
    assert load_checkpoint(state)["loop"]["epoch"] == 1  # ours loads with weights_only=True
    marker = tmp_path / "PWNED"
    with open(state, "wb") as f:
        pickle.dump({"model": _Payload(str(marker))}, f)
    rc = cli_main(["bilstm-crf", "--architecture", "crossner", "--domain", "politics", "--schedule", "target",
                   "--word_dim", "12", "--hidden_size", "8", "--char_ngram_dim", "0", "--output_dir", str(out),
                   "--data_dir", str(crossner_data_dir), "--max_steps_per_epoch", "3", "--num_train_epochs", "2",
                   "--early_stopping_patience", "0", "--seed", "1", "--use_cpu", "true",
                   "--resume_from_checkpoint", "true"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("crossner-hf bilstm-crf:")]
    assert rc == 2 and not marker.exists()
    assert len(err) == 1 and "not a checkpoint of ours" in err[0] and str(state) in err[0]


def test_a_kill_during_the_checkpoint_save_keeps_the_previous_one(tmp_path, crossner_data_dir, monkeypatch):
    """Killed while writing epoch 2's checkpoint (a partial file, then the kill): epoch 1's stays whole, resume
    continues from it, and the final weights equal the uninterrupted run's."""
    from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFForTokenClassification
    from crossner_hf.training.rnn import loop
    from crossner_hf.commands.bilstm_crf import run_bilstm_crf

    full = run_bilstm_crf(_bilstm(tmp_path / "full", crossner_data_dir))
    real_save, saves = torch.save, []

    def killed_on_second(obj, f, *a, **kw):
        saves.append(f)
        if len(saves) == 2:
            with open(f, "wb") as half:
                half.write(b"PK\x03\x04 partial")
            raise KeyboardInterrupt("killed during the save")
        return real_save(obj, f, *a, **kw)

    monkeypatch.setattr(loop.torch, "save", killed_on_second)
    with pytest.raises(KeyboardInterrupt):
        run_bilstm_crf(_bilstm(tmp_path / "part", crossner_data_dir))
    monkeypatch.setattr(loop.torch, "save", real_save)
    ckpt = tmp_path / "part" / "checkpoint"
    assert loop.load_checkpoint(ckpt / "state.pt")["loop"]["epoch"] == 1  # the previous one, whole
    assert not list(ckpt.glob(".*.tmp"))  # the partial write is gone
    resumed = run_bilstm_crf(_bilstm(tmp_path / "part", crossner_data_dir, resume_from_checkpoint=True))
    assert [h["loss"] for h in resumed["history"]] == [h["loss"] for h in full["history"]]
    a = BiLSTMCRFForTokenClassification.from_pretrained(tmp_path / "full").state_dict()
    b = BiLSTMCRFForTokenClassification.from_pretrained(tmp_path / "part").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_best_copy_is_swapped_whole_and_recovered_after_a_kill_in_the_swap(tmp_path):
    from crossner_hf.modeling.rnn.vocab import WordCharVocab
    from crossner_hf.training.rnn.loop import recover_best, save_best

    class Model:
        def __init__(self, tag: str):
            self.tag = tag

        def save_pretrained(self, folder):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "weights").write_text(self.tag)

    vocab = WordCharVocab.build([["a", "b"]])
    best = tmp_path / "best"
    save_best(Model("one"), vocab, best)
    save_best(Model("two"), vocab, best)
    assert (best / "weights").read_text() == "two" and sorted(p.name for p in tmp_path.iterdir()) == ["best"]
    best.rename(tmp_path / ".best.old")  # a kill between the swap's two renames
    recover_best(best)
    assert (best / "weights").read_text() == "two"


class KillOnSave:
    """A callback that stops the run right after the Trainer wrote checkpoint-``step`` and before the completion
    marker (registered after it) could: a kill in the middle of a checkpoint save."""

    def __new__(cls, step: int):
        from transformers import TrainerCallback

        class _Kill(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                if state.global_step == step:
                    raise KeyboardInterrupt(f"killed while saving checkpoint-{step}")

        return _Kill()


def test_train_resumes_from_the_last_complete_checkpoint(tiny_bert_dir, tmp_path, crossner_data_dir, monkeypatch,
                                                         caplog, uninterrupted_run):
    from crossner_hf.commands.train import run_train
    from crossner_hf.outputs import CHECKPOINT_COMPLETE
    from command_inputs import train_args


    def args(out, **kw):  # the shared uninterrupted run's settings: its results are what a resume must give
        return train_args(output_dir=str(out), model_name_or_path=tiny_bert_dir, data_dir=str(crossner_data_dir),
                          disable_tqdm=True, use_cpu=True, dataloader_pin_memory=False,
                          **uninterrupted_run["settings"], **kw)

    with pytest.raises(KeyboardInterrupt):
        run_train(*args(tmp_path / "killed"), callbacks=[KillOnSave(12)])
    seed_dir = tmp_path / "killed" / "seed-7"
    assert (seed_dir / "checkpoint-12").is_dir() and not (seed_dir / "checkpoint-12" / CHECKPOINT_COMPLETE).exists()
    complete = [p for p in seed_dir.glob("checkpoint-*") if (p / CHECKPOINT_COMPLETE).is_file()]
    assert complete  # an earlier whole checkpoint (the best one and/or the previous, by save_total_limit)
    resumed = run_train(*args(tmp_path / "killed", resume_from_checkpoint="true")).results
    assert "Skipping" in caplog.text and "checkpoint-12: incomplete" in caplog.text
    a, b = uninterrupted_run["results"], resumed["per_seed"][0]
    assert a["test"] == b["test"] and a["test_loss"] == b["test_loss"] and a["global_step"] == b["global_step"]


def test_dapt_resumed_after_a_kill_equals_the_uninterrupted_run(tiny_bert_dir, tmp_path, crossner_data_dir):
    """The masking collator's generator is saved with each checkpoint: resumed masks are the uninterrupted run's,
    so the weights are equal to the bit (they differed by up to 3e-4 before)."""
    from transformers import AutoModelForMaskedLM

    from crossner_hf.data.conll import read_conll
    from crossner_hf.data.labels import LABELS
    from crossner_hf.training.dapt import DAPTConfig, dapt

    texts = [" ".join(s["tokens"]) for s in read_conll(crossner_data_dir / "politics" / "train.txt",
                                                         LABELS["politics"])][:80]

    def config(out, **kw):
        return DAPTConfig(output_dir=str(out), max_steps=6, save_strategy="steps", save_steps=2, block_size=64,
                          per_device_train_batch_size=4, use_cpu=True, disable_tqdm=True, seed=3,
                          masking="span-adjacent", **kw)

    dapt(tiny_bert_dir, texts, config(tmp_path / "full"))
    with pytest.raises(KeyboardInterrupt):
        from transformers import Trainer

        original = Trainer.__init__

        def with_kill(self, *a, **kw):
            kw["callbacks"] = [KillOnSave(4), *kw.get("callbacks", [])]
            original(self, *a, **kw)

        Trainer.__init__ = with_kill
        try:
            dapt(tiny_bert_dir, texts, config(tmp_path / "part"))
        finally:
            Trainer.__init__ = original
    assert not (tmp_path / "part" / "checkpoint-4" / "checkpoint_complete.json").exists()
    dapt(tiny_bert_dir, texts, config(tmp_path / "part", resume_from_checkpoint="true"))
    a = AutoModelForMaskedLM.from_pretrained(tmp_path / "full").state_dict()
    b = AutoModelForMaskedLM.from_pretrained(tmp_path / "part").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_kill_between_the_moves_never_leaves_old_results_beside_new_weights(tmp_path, monkeypatch):
    """A finished folder rewritten by a second run killed after its first move: the folder is unfinished (no
    card, no results), not the old results and card beside the new weights; the next run cleans the leftovers
    and finishes it."""
    from crossner_hf import outputs

    out = tmp_path / "run"
    with outputs.staged_outputs(out) as stage:
        (stage / "model.safetensors").write_text("old weights")
        (stage / "results.json").write_text('{"f1": 0.44}')
        (stage / "README.md").write_text("old card")
    real_replace, moves = os.replace, []

    def killed_after_one(src, dst):
        if Path(dst).parent == out:
            moves.append(Path(dst).name)
            if Path(dst).name == "results.json":  # the weights are in, the results and card not yet
                raise KeyboardInterrupt("killed between the moves")
        return real_replace(src, dst)

    monkeypatch.setattr(outputs.os, "replace", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        with outputs.staged_outputs(out) as stage:
            (stage / "model.safetensors").write_text("new weights")
            (stage / "results.json").write_text('{"f1": 0.52}')
            (stage / "README.md").write_text("new card")
    monkeypatch.setattr(outputs.os, "replace", real_replace)
    assert (out / "model.safetensors").read_text() == "new weights"
    assert not (out / "results.json").exists() and not (out / "README.md").exists()  # unfinished, visibly
    # a killed process leaves its staging folder; a later run (another pid) removes it
    stale = out / ".staging-999999-x"
    stale.mkdir()
    (out / ".results.json.999999-y.tmp").write_text("")
    with outputs.staged_outputs(out) as stage:
        (stage / "model.safetensors").write_text("third")
        (stage / "results.json").write_text("{}")
        (stage / "README.md").write_text("card")
    assert sorted(p.name for p in out.iterdir()) == [".crossner_hf", ".outputs.json", "README.md",
                                                     "model.safetensors", "results.json"]


def test_a_resume_with_other_settings_is_refused_naming_the_flags(tiny_bert_dir, tmp_path, crossner_data_dir,
                                                                  monkeypatch, capsys):
    base = ["train", "--model_name_or_path", tiny_bert_dir, "--domain", "politics", "--data_dir",
            str(crossner_data_dir), "--few_shot", "8", "--max_steps", "2", "--per_device_train_batch_size", "4",
            "--output_dir", str(tmp_path / "run"), "--use_cpu", "true", "--disable_tqdm", "true", "--seeds", "1"]
    assert cli_main([*base, "--learning_rate", "8e-6"]) == 0
    capsys.readouterr()
    assert cli_main([*base, "--learning_rate", "1e-3", "--resume_from_checkpoint", "true"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("crossner-hf train:")]
    assert len(err) == 1 and "--learning_rate 8e-06 (now 0.001)" in err[0] and "--overwrite_output_dir" in err[0]
    # the same flags resume (here: the finished seed is reused); --overwrite_output_dir starts afresh
    assert cli_main([*base, "--learning_rate", "8e-6", "--resume_from_checkpoint", "true"]) == 0
    assert cli_main([*base, "--learning_rate", "1e-3", "--resume_from_checkpoint", "true",
                     "--overwrite_output_dir", "true"]) == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["config"]["learning_rate"] == 1e-3


def test_a_second_live_run_into_a_folder_is_refused_and_a_killed_one_frees_it(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from crossner_hf.outputs import run_lock

    out, ready = tmp_path / "out", tmp_path / "holding"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, pathlib; from crossner_hf.outputs import run_lock\n"
        "with run_lock(sys.argv[1]):\n"
        "    pathlib.Path(sys.argv[2]).write_text('x')\n"
        "    time.sleep(600)\n"), str(out), str(ready)])
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():  # wait on the condition, not a fixed time
            assert holder.poll() is None and time.monotonic() < deadline, "the lock holder did not start"
            time.sleep(0.05)
        with pytest.raises(ValueError, match="another run is writing into this folder now"):
            with run_lock(out):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with run_lock(out):  # a killed holder leaves no stuck lock
        pass


def test_published_results_carry_no_local_path(tiny_bert_dir, tmp_path, crossner_data_dir, monkeypatch):
    """What a push uploads: results.json names folders, never an absolute local path; the RNN best/ copy, the
    lock and the run records stay local."""
    from crossner_hf.publishing.hub import RUN_IGNORE_PATTERNS
    from crossner_hf.commands.bilstm_crf import run_bilstm_crf

    home = str(tmp_path)
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--domain", "politics", "--data_dir",
                     str(crossner_data_dir), "--few_shot", "8", "--max_steps", "2", "--per_device_train_batch_size",
                     "4", "--output_dir", str(tmp_path / "run"), "--use_cpu", "true", "--disable_tqdm", "true",
                     "--seeds", "1"]) == 0
    run_bilstm_crf(_bilstm(tmp_path / "rnn", crossner_data_dir, num_train_epochs=1))
    for path in (tmp_path / "run" / "results.json", tmp_path / "rnn" / "results.json",  # and the cards (issue 55)
                 tmp_path / "run" / "README.md", tmp_path / "rnn" / "README.md"):
        text = path.read_text()
        assert home not in text and str(crossner_data_dir) not in text, path
    from huggingface_hub.utils import filter_repo_objects

    files = [p.relative_to(tmp_path / "rnn").as_posix() for p in (tmp_path / "rnn").rglob("*") if p.is_file()]
    kept = set(filter_repo_objects(files, ignore_patterns=RUN_IGNORE_PATTERNS))
    assert "model.safetensors" in kept and not any(f.startswith(("best/", "checkpoint/")) for f in kept)
    assert not {".lock", ".run_settings.json", ".outputs.json", ".crossner_hf"} & kept
    assert (tmp_path / "rnn" / ".crossner_hf").is_file()  # the mark is there, and stays local
    umask = os.umask(0)
    os.umask(umask)
    for weights in (tmp_path / "run" / "seed-1" / "model.safetensors", tmp_path / "rnn" / "best" / "model.safetensors"):
        assert weights.stat().st_mode & 0o777 == 0o666 & ~umask, weights  # a teammate reads every copy, not 0600


@pytest.mark.parametrize("line, message", [
    ("max_steps: 2.7", "max_steps: 2.7 is not a whole number (--max_steps takes an int)"),
    ("few_shot: 20.5", "few_shot: 20.5 is not a whole number (--few_shot takes an int)"),
    ("learning_rate: [1, 2]", "learning_rate: [1, 2] is a list; --learning_rate takes one value"),
    ("schedule: together", "schedule: 'together' is not one of direct, pretrain-finetune, joint (--schedule)"),
    ("domain: ../../etc", "domain: '../../etc' is not one of conll2003, politics"),
    ("seeds: [555, x", "not valid YAML (line 3, column"),
])
def test_each_config_value_is_checked_at_parse_time_in_one_line(line, message, tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text(f"model_name_or_path: nowhere-model\n{line}\n" + ("" if "domain" in line else "domain: ai\n"))
    assert cli_main(["train", "--config", str(config), "--output_dir", str(tmp_path / "o")]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("crossner-hf train:")]
    assert len(err) == 1 and message in err[0] and str(config) in err[0]


def test_other_commands_check_their_config_values_too(tmp_path, capsys):
    config = tmp_path / "p.yaml"
    config.write_text("format: xml\n")
    assert cli_main(["predict", "--config", str(config), "--model", "m", "x"]) == 2
    assert "format: 'xml' is not one of" in capsys.readouterr().err


def test_damaged_records_name_their_file(tmp_path):
    from crossner_hf.outputs import read_json

    path = tmp_path / "seed_results.json"
    path.write_text('{"seed": 5, "dev": {"overall_f1": 0.4')
    with pytest.raises(ValueError, match=rf"{path}: not valid JSON \(line 1, column \d+: .*\); delete it"):
        read_json(path)


def _train_argv(tiny_bert_dir, crossner_data_dir, out):
    return ["train", "--model_name_or_path", tiny_bert_dir, "--domain", "politics", "--data_dir",
            str(crossner_data_dir), "--few_shot", "8", "--max_steps", "4", "--per_device_train_batch_size", "4",
            "--eval_strategy", "steps", "--save_strategy", "steps", "--eval_steps", "2", "--save_steps", "2",
            "--output_dir", str(out), "--use_cpu", "true", "--disable_tqdm", "true", "--seeds", "1"]


def _nothing_looks_complete(out):
    from crossner_hf.outputs import CHECKPOINT_COMPLETE

    assert not (out / "README.md").exists() and not (out / "results.json").exists()
    from safetensors.torch import load_file

    for complete in [c for c in out.rglob("checkpoint-*") if (c / CHECKPOINT_COMPLETE).is_file()]:  # what counts
        assert (complete / "trainer_state.json").is_file() and load_file(complete / "model.safetensors")


def test_a_full_disk_is_one_line_naming_the_folder(tiny_bert_dir, tmp_path, crossner_data_dir, monkeypatch, capsys):
    """Simulated: the weights' writer fails as safetensors does on a full disk (always runs)."""
    import transformers.modeling_utils
    from safetensors import SafetensorError

    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path / "cache"))

    def full(*args, **kwargs):
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: '
                              '"No space left on device" })')

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full)  # what save_pretrained calls
    out = tmp_path / "run"
    assert cli_main(_train_argv(tiny_bert_dir, crossner_data_dir, out)) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("crossner-hf train:")]
    assert len(err) == 1 and f"no space left on the device holding {out}" in err[0]
    import re

    # sizes in the unit that fits (never "up to 0 MB" for a small model's files)
    assert re.search(r"\(\d+(\.\d)? (B|KB|MB|GB|TB) free", err[0]) and " 0 MB" not in err[0], err[0]
    _nothing_looks_complete(out)


def test_a_real_full_tmpfs(tiny_bert_dir, tmp_path, crossner_data_dir):
    """On a 1 MB tmpfs where the machine allows mounting one (root); skipped with the reason otherwise."""
    import shutil
    import subprocess
    import sys

    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8); the simulated full-disk test runs instead")
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"this machine does not allow mounting a tmpfs ({res.stderr.strip()[:120]})")
    try:
        env = {**os.environ, "CROSSNER_HF_CACHE": str(tmp_path / "cache")}
        run = subprocess.run([sys.executable, "-m", "crossner_hf.cli",
                              *_train_argv(tiny_bert_dir, crossner_data_dir, mnt / "run")],
                             capture_output=True, text=True, env=env, timeout=600)
        err = [x for x in run.stderr.splitlines() if x.startswith("crossner-hf train:")]
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
        assert len(err) == 1 and "no space left on the device holding" in err[0]
        _nothing_looks_complete(mnt / "run")
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_rnn_resume_checks_identity_but_may_extend_the_budget(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.bilstm_crf import run_bilstm_crf

    run_bilstm_crf(_bilstm(tmp_path / "run", crossner_data_dir, num_train_epochs=1))
    with pytest.raises(ValueError, match=r"--learning_rate 0.001 \(now 0.01\)"):
        run_bilstm_crf(_bilstm(tmp_path / "run", crossner_data_dir, num_train_epochs=2, learning_rate=1e-2,
                                 resume_from_checkpoint=True))
    more = run_bilstm_crf(_bilstm(tmp_path / "run", crossner_data_dir, num_train_epochs=2,
                                    resume_from_checkpoint=True))  # a longer budget continues the same run
    assert len(more["history"]) == 2


def test_rnn_runners_hold_the_lock_until_their_outputs_are_written(tmp_path, crossner_data_dir, monkeypatch):
    """Issue 55: the RNN recipes, self-training included (its rounds run in OUT/round-k, so the loop's own hold is
    on those), hold OUT's lock while the model, results and card are written; a folder holding a user's file is
    refused before anything runs."""
    from filelock import FileLock, Timeout

    from crossner_hf.commands.bilstm_crf import run_bilstm_crf
    from crossner_hf.training.rnn import common

    out, held = tmp_path / "run", []
    real = common.finish_output

    def finish(folder, *args, **kwargs):
        try:
            FileLock(str(out / ".lock"), timeout=0).acquire()
        except Timeout:
            held.append(True)  # another opener (another run) cannot take it now
        return real(folder, *args, **kwargs)

    monkeypatch.setattr(common, "finish_output", finish)
    run_bilstm_crf(_bilstm(out, crossner_data_dir, num_train_epochs=1, schedule="self-train", self_train_rounds=1,
                           self_train_epochs=1))
    assert held == [True] and (out / "README.md").is_file()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.md"):
        run_bilstm_crf(_bilstm(mine, crossner_data_dir, num_train_epochs=1))
    assert sorted(p.name for p in mine.iterdir()) == ["notes.md"]


def test_crossner_downloads_are_atomic_and_rechecked_by_hash(tmp_path, crossner_data_dir, monkeypatch):
    """Issue 55: each CrossNER file is written whole or not at all, and a cached copy is used only while it has its
    pinned SHA-256 (a damaged one is downloaded again; offline, it is one line). The network is a stub here."""
    import io
    import urllib.request

    from crossner_hf.data import target as target_module

    monkeypatch.delenv("CROSSNER_DATA_DIR", raising=False)
    monkeypatch.setattr(target_module, "hub_offline", lambda **kw: False)
    fetched = []

    def urlopen(url, timeout=None):
        rel = "/".join(url.split("/")[-2:])
        fetched.append(rel)
        return io.BytesIO((crossner_data_dir / rel).read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    folder = target_module.resolve_data_dir("politics")
    assert sorted(fetched) == ["politics/dev.txt", "politics/test.txt", "politics/train.txt"]
    assert (folder / "train.txt").read_bytes() == (crossner_data_dir / "politics" / "train.txt").read_bytes()
    fetched.clear()
    assert target_module.resolve_data_dir("politics") == folder and fetched == []  # whole and pinned: reused
    (folder / "dev.txt").write_bytes((folder / "dev.txt").read_bytes()[:100])  # cut short in place
    target_module.resolve_data_dir("politics")
    assert fetched == ["politics/dev.txt"]
    assert (folder / "dev.txt").read_bytes() == (crossner_data_dir / "politics" / "dev.txt").read_bytes()

    real_write = Path.write_bytes

    def killed_mid_write(self, data):  # a kill after half the file is on disk
        real_write(self, data[: len(data) // 2])
        raise KeyboardInterrupt("killed while writing")

    (folder / "test.txt").unlink()
    monkeypatch.setattr(Path, "write_bytes", killed_mid_write)
    with pytest.raises(KeyboardInterrupt):
        target_module.resolve_data_dir("politics")
    monkeypatch.setattr(Path, "write_bytes", real_write)
    assert sorted(p.name for p in folder.iterdir()) == ["dev.txt", "train.txt"]  # no half file, no temporary one
    (folder / "train.txt").write_text("edited")
    monkeypatch.setattr(target_module, "hub_offline", lambda **kw: True)
    with pytest.raises(target_module.CrossNERDataNotFound, match="is damaged") as err:
        target_module.resolve_data_dir("politics")
    assert "\n" not in str(err.value)


def test_train_refuses_a_users_folder_in_one_line(tiny_bert_dir, tmp_path, crossner_data_dir, monkeypatch, capsys):
    """Issue 55: `train` into a folder holding the user's files stops before any training, in one line naming the
    flag that would write there; the files are as they were (no lock, no mark, no settings added)."""
    mine = tmp_path / "mine"
    (mine / "data" / "mine").mkdir(parents=True)
    (mine / "data" / "mine" / "rows.csv").write_text("text,label\n")
    (mine / "README.md").write_text("# my notes\n")
    before = sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*"))
    capsys.readouterr()
    assert cli_main(["train", "--model_name_or_path", tiny_bert_dir, "--domain", "politics", "--data_dir",
                     str(crossner_data_dir), "--few_shot", "8", "--max_steps", "2", "--output_dir", str(mine),
                     "--use_cpu", "true", "--disable_tqdm", "true", "--seeds", "1"]) == 2
    text = capsys.readouterr().err
    err = [line for line in text.splitlines() if "error:" in line]  # the data's progress bars aside
    assert len(err) == 1 and "Traceback" not in text, text[-1500:]
    assert "holds files crossner_hf did not write (README.md, data)" in err[0], err
    assert "--overwrite_output_dir true" in err[0]
    assert sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*")) == before


@pytest.mark.parametrize("record", ["plan.json", "cell.json"])
@pytest.mark.parametrize("command", ["train", "adapt", "reproduce"])
def test_a_users_folder_named_like_our_records_is_refused_by_every_command(command, record, tiny_bert_dir, tmp_path,
                                                                           crossner_data_dir, capsys):
    """Issue 66: ``mkdir pj; echo "# my project" > pj/README.md; echo '{}' > pj/plan.json``: the folder is not ours
    (only our mark says so, never a file's name), so ``train``, ``adapt`` and ``reproduce`` into it stop in one line
    before any work, README intact, nothing added."""
    pj = tmp_path / "pj"
    pj.mkdir()
    (pj / "README.md").write_text("# my project\n")
    (pj / record).write_text("{}\n")
    before = {p.name: p.read_bytes() for p in pj.iterdir()}
    argv = {"train": ["train", "--model_name_or_path", tiny_bert_dir, "--domain", "politics", "--data_dir",
                      str(crossner_data_dir), "--few_shot", "8", "--max_steps", "1", "--use_cpu", "true",
                      "--disable_tqdm", "true", "--seeds", "1"],
            "adapt": ["adapt", "--dataset_dir", str(crossner_data_dir / "politics"), "--budget", "smoke",
                      "--methods", "direct", "--model_name_or_path", tiny_bert_dir],
            "reproduce": ["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics"]}[command]
    capsys.readouterr()
    assert cli_main([*argv, "--output_dir", str(pj)]) == 2
    text = capsys.readouterr().err
    err = [line for line in text.splitlines() if "error:" in line]
    assert len(err) == 1 and "Traceback" not in text, text[-1500:]
    assert f"holds files crossner_hf did not write ({', '.join(sorted(['README.md', record]))})" in err[0], err
    assert {p.name: p.read_bytes() for p in pj.iterdir()} == before


HOLDING_PROBE = """
import os, signal, sys, time
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--output_dir") + 1])
out.mkdir(parents=True, exist_ok=True)
def stopped(signum, frame):  # the grid stops its cells in order: SIGTERM first, never a bare SIGKILL
    (out / "stopped").write_text(str(signum))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # then ended by it, as a process without a handler is
    os.kill(os.getpid(), signal.SIGTERM)
signal.signal(signal.SIGTERM, stopped)
(out / "started").write_text(str(os.getpid()))
deadline = time.monotonic() + 600
while not (out / "release").exists():
    if time.monotonic() > deadline:
        sys.exit("timed out waiting for release")
    time.sleep(0.05)
(out / "results.json").write_text("{}")
"""

BACKGROUND_GRID = """
import sys
from crossner_hf.cli import run_command
from crossner_hf.executors import ExecutorOptions
from crossner_hf.grid import Cell, run_grid
out, probe = sys.argv[1], sys.argv[2:]
cells = [Cell("held", "probe", "r", "c", program=tuple(probe))]
def main(args):
    run_grid(cells, out, ExecutorOptions(workers=1))
class Parser:
    prog = "grid"
    def parse_args_and_config(self, argv):
        return (None,)
sys.exit(run_command(lambda: Parser(), main, [], parser=Parser()))
"""


def test_sigterm_stops_a_grid_started_with_ampersand_from_a_script_in_order(tmp_path):
    """docs/grid.md: a search started from a script with ``&`` ignores Ctrl-C (the shell ignores SIGINT in its
    background jobs); SIGTERM stops it as Ctrl-C would: its cell gets SIGTERM (in order, not the SIGKILL a dead
    driver's cells get), one line, exit 130, the folder's lock free and the cell resumable, then finished by a
    rerun."""
    import shlex
    import signal
    import subprocess
    import sys

    from crossner_hf.grid import Cell, grid_lock, grid_status

    if not sys.platform.startswith("linux"):
        pytest.skip("reads the signal masks in /proc")
    (tmp_path / "probe.py").write_text(HOLDING_PROBE)
    (tmp_path / "grid.py").write_text(BACKGROUND_GRID)
    out, pid_file, rc_file, err_file = (tmp_path / n for n in ("grid", "pid", "rc", "err"))
    command = shlex.join([sys.executable, str(tmp_path / "grid.py"), str(out), sys.executable,
                          str(tmp_path / "probe.py")])
    # a script: `cmd &`, then it waits for it (bash -c has no job control: the background job ignores SIGINT)
    script = f"{command} 2>{shlex.quote(str(err_file))} & echo $! > {pid_file}; wait $!; echo $? > {rc_file}"
    shell = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    held = out / "cells" / "held"
    try:
        wait_for(lambda: (held / "started").is_file() and (held / ".running").is_file() or shell.poll() is not None,
                 "the backgrounded grid's cell to start")
        assert shell.poll() is None, err_file.read_text()[-2000:]
        driver = int(pid_file.read_text())
        ignored = int(dict(line.split(":\t", 1) for line in Path(f"/proc/{driver}/status").read_text().splitlines()
                           if ":\t" in line)["SigIgn"], 16)
        assert ignored & (1 << (signal.SIGINT - 1)), "the shell's rule: a background job ignores Ctrl-C"
        # and setsid (a session of its own) or nohup keep it ignored: SIGTERM is the way to stop such a run
        for wrapper in ("setsid", "nohup"):
            wrapped = subprocess.run(["bash", "-c", f"{wrapper} grep SigIgn /proc/self/status & wait"],
                                     capture_output=True, text=True, timeout=60).stdout.split()
            assert int(wrapped[-1], 16) & (1 << (signal.SIGINT - 1)), (wrapper, wrapped)
        cell_pid = int((held / "started").read_text())
        os.kill(driver, signal.SIGTERM)
        wait_for(lambda: rc_file.is_file() and rc_file.read_text().strip(), "the grid to stop after SIGTERM", 120)
    finally:
        if shell.poll() is None and not rc_file.is_file():
            os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()
    err = err_file.read_text()
    assert rc_file.read_text().strip() == "130", err[-2000:]
    assert err.strip().splitlines()[-1] == "grid: interrupted: finished cells are kept; rerun the same command to resume"
    assert "Traceback" not in err
    assert (held / "stopped").read_text() == str(int(signal.SIGTERM))  # stopped in order by the grid
    wait_for(lambda: not alive(cell_pid), "the cell's process to be gone", 30)
    cell = Cell("held", "probe", "r", "c", program=(sys.executable, str(tmp_path / "probe.py")))
    assert grid_status([cell], out)["held"] == "waiting"  # resumable, not failed
    with grid_lock(out):  # the lock is free
        pass
    (held / "release").write_text("")
    rerun = subprocess.run([sys.executable, str(tmp_path / "grid.py"), str(out), sys.executable,
                            str(tmp_path / "probe.py")], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert (held / "results.json").is_file()
