"""Atomic outputs: a failure leaves nothing that looks complete; success replaces whole, with the usual modes."""

from __future__ import annotations

import os

import pytest

from crossner_hf.outputs import atomic_output, staged_outputs


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_staged_outputs_fail_leaves_the_folder_as_it_was(tmp_path):
    out = tmp_path / "run"
    (out / "data").mkdir(parents=True)
    (out / "data" / "old.parquet").write_bytes(b"old")
    (out / "README.md").write_text("old card")
    (out / "seed-1").mkdir()
    before = _tree(out)
    with pytest.raises(RuntimeError, match="half-way"):
        with staged_outputs(out) as stage:
            (stage / "data").mkdir()
            (stage / "data" / "new.parquet").write_bytes(b"new")
            (stage / "model.safetensors").write_bytes(b"w")
            raise RuntimeError("half-way")
    assert _tree(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


def test_staged_outputs_replace_folders_whole_card_last_usual_mode(tmp_path):
    out = tmp_path / "run"
    (out / "data" / "gone").mkdir(parents=True)
    (out / "data" / "gone" / "old.parquet").write_bytes(b"old")
    (out / "checkpoint-5").mkdir()
    with staged_outputs(out) as stage:
        (stage / "README.md").write_text("card")
        (stage / "data" / "politics").mkdir(parents=True)
        (stage / "data" / "politics" / "train.parquet").write_bytes(b"new")
        (stage / "results.json").write_text("{}")
        weights = stage / "model.safetensors"
        weights.write_bytes(b"w")
        weights.chmod(0o600)  # what transformers' save_pretrained leaves
    assert _tree(out) == {"README.md": b"card", "data/politics/train.parquet": b"new", "results.json": b"{}",
                          "model.safetensors": b"w",
                          # what these outputs are, so a rewrite removes entries it no longer writes
                          ".outputs.json": b'["README.md", "data", "model.safetensors", "results.json"]'}
    assert (out / "checkpoint-5").is_dir()  # what the stage does not hold is left alone
    umask = os.umask(0)
    os.umask(umask)
    assert (out / "model.safetensors").stat().st_mode & 0o777 == 0o666 & ~umask
    assert not [p for p in out.iterdir() if p.name.startswith(".staging-")]


def test_staged_outputs_move_the_card_last(tmp_path, monkeypatch):
    import crossner_hf.outputs as outputs

    order = []
    real = os.replace
    monkeypatch.setattr(outputs.os, "replace", lambda src, dst: (order.append(os.path.basename(dst)), real(src, dst)))
    with staged_outputs(tmp_path / "run") as stage:
        for name in ("README.md", "results.json", "config.json", "model.safetensors"):
            (stage / name).write_text(name)
    assert order[-2:] == ["results.json", "README.md"]
    assert set(order[:3]) == {".outputs.json", "config.json", "model.safetensors"}


def test_atomic_output_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "preds.jsonl"
    target.write_text("old")
    with pytest.raises(ValueError):
        with atomic_output(target) as tmp:
            tmp.write_text("half")
            raise ValueError("stop")
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
