"""Issue 39: nothing executed from a received folder, nothing lost to a kill.

The RNN loop's checkpoint loads without pickle (a planted payload is refused in one line and never runs),
is written beside and renamed (a kill during the save leaves the previous one, and resume then reaches the
uninterrupted run's weights), and its ``best/`` copy is swapped as a whole.
"""

from __future__ import annotations

import os
import pickle

import pytest
import torch

from crossner_hf.cli import main as cli_main

pytestmark = pytest.mark.xdist_group("safety")


class _Payload:
    """Unpickling this runs a shell command: what a crafted checkpoint would do."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _bilstm(out, crossner_data_dir, **kw):
    from crossner_hf.training.rnn.recipes import BiLSTMCRFArguments

    base = dict(architecture="crossner", domain="politics", schedule="target", word_dim=12, hidden_size=8,
                char_ngram_dim=0, output_dir=str(out), data_dir=str(crossner_data_dir), max_steps_per_epoch=3,
                num_train_epochs=3, early_stopping_patience=0, use_cpu=True, seed=1)
    return BiLSTMCRFArguments(**{**base, **kw})


def test_a_planted_checkpoint_payload_is_refused_and_never_runs(tmp_path, crossner_data_dir, monkeypatch, capsys):
    from crossner_hf.training.rnn.loop import load_checkpoint
    from crossner_hf.training.rnn.recipes import train_bilstm_crf

    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    train_bilstm_crf(_bilstm(out, crossner_data_dir, num_train_epochs=1))
    state = out / "checkpoint" / "state.pt"
    assert load_checkpoint(state)["loop"]["epoch"] == 1  # ours loads with weights_only=True
    marker = tmp_path / "PWNED"
    with open(state, "wb") as f:
        pickle.dump({"model": _Payload(str(marker))}, f)
    rc = cli_main(["bilstm-crf", "--architecture", "crossner", "--domain", "politics", "--schedule", "target",
                   "--word_dim", "12", "--hidden_size", "8", "--char_ngram_dim", "0", "--output_dir", str(out),
                   "--data_dir", str(crossner_data_dir), "--max_steps_per_epoch", "3", "--num_train_epochs", "2",
                   "--use_cpu", "true", "--resume_from_checkpoint", "true"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("crossner-hf bilstm-crf:")]
    assert rc == 2 and not marker.exists()
    assert len(err) == 1 and "not a checkpoint of ours" in err[0] and str(state) in err[0]


def test_a_kill_during_the_checkpoint_save_keeps_the_previous_one(tmp_path, crossner_data_dir, monkeypatch):
    """Killed while writing epoch 2's checkpoint (a partial file, then the kill): epoch 1's stays whole, resume
    continues from it, and the final weights equal the uninterrupted run's."""
    from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFForTokenClassification
    from crossner_hf.training.rnn import loop
    from crossner_hf.training.rnn.recipes import train_bilstm_crf

    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path / "cache"))
    full = train_bilstm_crf(_bilstm(tmp_path / "full", crossner_data_dir))
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
        train_bilstm_crf(_bilstm(tmp_path / "part", crossner_data_dir))
    monkeypatch.setattr(loop.torch, "save", real_save)
    ckpt = tmp_path / "part" / "checkpoint"
    assert loop.load_checkpoint(ckpt / "state.pt")["loop"]["epoch"] == 1  # the previous one, whole
    assert not list(ckpt.glob(".*.tmp"))  # the partial write is gone
    resumed = train_bilstm_crf(_bilstm(tmp_path / "part", crossner_data_dir, resume_from_checkpoint=True))
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
