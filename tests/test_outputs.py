"""Atomic outputs: a failure leaves nothing that looks complete; success replaces whole, with the usual modes."""

from __future__ import annotations

import json
import os

import pytest

from crossner_hf.outputs import atomic_output, mark_ours, staged_outputs


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_staged_outputs_fail_leaves_the_folder_as_it_was(tmp_path):
    out = tmp_path / "run"
    (out / "data").mkdir(parents=True)
    (out / "data" / "old.parquet").write_bytes(b"old")
    (out / "README.md").write_text("old card")
    (out / "seed-1").mkdir()
    (out / ".outputs.json").write_text('["README.md", "data"]')  # a previous run's
    mark_ours(out)
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
    (out / ".outputs.json").write_text('["data"]')  # a previous run's
    mark_ours(out)
    mark = (out / ".crossner_hf").read_bytes()
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
                          ".outputs.json": b'["README.md", "data", "model.safetensors", "results.json"]',
                          ".crossner_hf": mark}
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
    assert order[0] == ".crossner_hf"  # the folder is marked ours before anything is written into it
    assert order[-2:] == ["results.json", "README.md"]
    assert set(order[1:4]) == {".outputs.json", "config.json", "model.safetensors"}


def test_atomic_output_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "preds.jsonl"
    target.write_text("old")
    with pytest.raises(ValueError):
        with atomic_output(target) as tmp:
            tmp.write_text("half")
            raise ValueError("stop")
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]


def test_a_users_folder_is_refused_and_left_intact(tmp_path):
    """Issue 55: the dataset writer given a folder holding a user's README.md and data/mine/rows.csv refuses it in
    one line and leaves every file as it was (no lock, no staging folder left); --overwrite_output_dir writes."""
    from datasets import Dataset

    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    out = tmp_path / "mine"
    (out / "data" / "mine").mkdir(parents=True)
    (out / "data" / "mine" / "rows.csv").write_text("text,label\nhello,O\n")
    (out / "README.md").write_text("# my notes\n")
    before = _tree(out)
    names = sorted(p.name for p in out.iterdir())
    with pytest.raises(FileExistsError, match=r"holds files crossner_hf did not write \(README.md, data\); .*"
                                              r"--overwrite_output_dir true") as err:
        write_hub_dataset_folder({"tiny": Dataset.from_dict({"text": ["a", "b"]})}, out, {}, "# Tiny\n")
    assert "\n" not in str(err.value)
    assert _tree(out) == before and sorted(p.name for p in out.iterdir()) == names
    write_hub_dataset_folder({"tiny": Dataset.from_dict({"text": ["a", "b"]})}, out, {}, "# Tiny\n", overwrite=True)
    assert (out / "data" / "tiny").is_dir() and "Tiny" in (out / "README.md").read_text()
    # now the folder is ours: a rewrite needs no flag
    write_hub_dataset_folder({"tiny": Dataset.from_dict({"text": ["c"]})}, out, {}, "# Tiny again\n")
    assert "Tiny again" in (out / "README.md").read_text()


def test_a_manifest_naming_a_path_outside_deletes_nothing(tmp_path):
    """The entries of .outputs.json are trusted only as plain names: ``../x``, ``/abs``, ``a/b`` and ``..`` delete
    nothing (outside OUT or inside it); a plain name the previous run owned and this one does not write goes."""
    beside = tmp_path / "x"
    beside.mkdir()
    (beside / "keep.txt").write_text("a neighbour's file")
    far = tmp_path / "abs"
    far.mkdir()
    (far / "keep.txt").write_text("far")
    out = tmp_path / "run"
    (out / "a").mkdir(parents=True)
    (out / "a" / "b").write_text("nested")
    (out / "old.bin").write_text("the previous run's")
    mark_ours(out)
    (out / ".outputs.json").write_text(json.dumps(["../x", str(far), "a/b", "..", ".", "", 3, "old.bin"]))
    with staged_outputs(out) as stage:
        (stage / "README.md").write_text("card")
    assert (beside / "keep.txt").read_text() == "a neighbour's file" and (far / "keep.txt").is_file()
    assert (out / "a" / "b").read_text() == "nested" and not (out / "old.bin").exists()
    assert json.loads((out / ".outputs.json").read_text()) == ["README.md"]


def test_a_finishing_file_the_previous_run_did_not_own_stays(tmp_path):
    """Only what the previous manifest owned is removed: a results.json a user put in our folder survives a
    rewrite that writes none; our own old card is replaced."""
    out = tmp_path / "run"
    with staged_outputs(out) as stage:
        (stage / "README.md").write_text("old card")
    (out / "results.json").write_text('{"mine": 1}')
    with staged_outputs(out) as stage:
        (stage / "README.md").write_text("new card")
    assert (out / "results.json").read_text() == '{"mine": 1}' and (out / "README.md").read_text() == "new card"


def test_our_folders_and_transient_entries_pass_the_ownership_check(tmp_path):
    from crossner_hf.outputs import check_ours, run_lock

    check_ours(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    check_ours(tmp_path / "empty")
    cell = tmp_path / "cell"
    cell.mkdir()
    (cell / "cell.json").write_text("{}")  # a grid cell's folder: the grid marks it, then writes its record and log
    (cell / "log.txt").write_text("$ crossner-hf train ...")
    with pytest.raises(FileExistsError, match=r"\(cell.json, log.txt\)"):  # by its name alone: not ours
        check_ours(cell)
    mark_ours(cell)
    check_ours(cell)
    locked = tmp_path / "locked"
    with run_lock(locked):
        (locked / "notes.txt").write_text("the run's own log")
    check_ours(locked)  # a folder a run took is marked as ours
    (tmp_path / "user" / ".staging-1-x").mkdir(parents=True)
    check_ours(tmp_path / "user")  # only a killed run's leftovers
    (tmp_path / "user" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        check_ours(tmp_path / "user")
    check_ours(tmp_path / "user", overwrite=True)


@pytest.mark.parametrize("name", ["plan.json", "cell.json", ".outputs.json", ".run_settings.json"])
def test_a_folder_is_ours_by_our_mark_never_by_a_file_name(tmp_path, name):
    """Issue 66: a user's folder holding a file named as one of our records (a ``plan.json`` of their own) is not
    ours: refused in one line, every file as it was; our mark records the run that took the folder."""
    from crossner_hf.outputs import check_ours, is_ours, run_id

    mine = tmp_path / "pj"
    mine.mkdir()
    (mine / "README.md").write_text("# my project\n")
    (mine / name).write_text("{}")
    before = _tree(mine)
    with pytest.raises(FileExistsError, match=r"holds files crossner_hf did not write \(.*README.md") as err:
        check_ours(mine)
    assert "\n" not in str(err.value) and _tree(mine) == before and not is_ours(mine)
    (mine / ".crossner_hf").write_text('{"written_by": "someone else"}')  # our mark's name, not our record
    assert not is_ours(mine)
    mark_ours(mine)
    mark = json.loads((mine / ".crossner_hf").read_text())
    assert mark["written_by"] == "crossner_hf" and mark["run_id"] == run_id() and len(run_id()) == 32
    assert is_ours(mine)


def test_an_older_versions_folder_is_taken_once_with_one_warning(tmp_path, caplog):
    """Decided (docs/robustness.md): a folder an older crossner_hf wrote, before the mark held a run id (its empty
    mark, or a results file carrying our schema) is ours, with one warning line, and the run that takes it marks it;
    a results.json without our schema is a user's file."""
    from crossner_hf.outputs import LEGACY_RESULT_FILES, check_ours, is_ours
    from crossner_hf.results import READ_RESULT_FILES, SCHEMA

    assert set(LEGACY_RESULT_FILES) == set(READ_RESULT_FILES)  # named twice (results imports outputs): kept equal
    old = tmp_path / "old"
    old.mkdir()
    (old / "README.md").write_text("# politics-direct\n\nTrained with crossner_hf.\n")  # our cards name us
    (old / "results.json").write_text(json.dumps({"schema": SCHEMA, "workflow": "finetune"}))
    with caplog.at_level("WARNING", logger="crossner_hf.outputs"):
        check_ours(old)
        check_ours(old)
    warned = [r.getMessage() for r in caplog.records if "older crossner_hf" in r.getMessage()]
    assert len(warned) == 1 and "results.json (crossner_hf.results/2)" in warned[0] and "\n" not in warned[0]
    with staged_outputs(old) as stage:  # the writer marks it: from now it is ours by the mark
        (stage / "README.md").write_text("a new card")
    assert json.loads((old / ".crossner_hf").read_text())["written_by"] == "crossner_hf"
    first = tmp_path / "first-build"
    first.mkdir()
    (first / "README.md").write_text("a card")
    (first / ".crossner_hf").touch()  # the first 0.3.0 builds' mark
    assert is_ours(first)
    user = tmp_path / "user"
    user.mkdir()
    (user / "results.json").write_text('{"accuracy": 0.9}')
    with pytest.raises(FileExistsError, match="results.json"):
        check_ours(user)
    (user / "results.json").write_text(json.dumps({"schema": SCHEMA}))  # a copy of ours, beside the user's README
    (user / "README.md").write_text("# my project\n")
    with pytest.raises(FileExistsError, match=r"\(README.md, results.json\)"):
        check_ours(user)


@pytest.mark.parametrize("name", [".crossner_hf", ".lock", ".grid.lock"])
def test_the_mark_and_the_lock_never_follow_a_planted_link(tmp_path, name):
    """A ``.crossner_hf``, ``.lock`` or ``.grid.lock`` planted as a symbolic link to a file elsewhere: the run (a
    grid's too) is refused in one line (with ``--overwrite_output_dir`` too) and the file it points at is untouched."""
    from crossner_hf.grid import grid_lock
    from crossner_hf.outputs import check_ours, run_lock

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(target)
    for attempt in (lambda: check_ours(out), lambda: check_ours(out, overwrite=True, claim=True),
                    lambda: run_lock(out).__enter__(), lambda: staged_outputs(out, overwrite=True).__enter__(),
                    lambda: grid_lock(out).__enter__()):
        with pytest.raises(FileExistsError, match=f"{name} is a symbolic link .*never writes through one") as err:
            attempt()
        assert "\n" not in str(err.value)
    assert target.read_text() == "keep me" and (out / name).is_symlink()


def test_a_second_thread_of_the_same_process_is_refused_the_folder(tmp_path):
    """``run_lock`` is re-entrant within the thread that holds it (a runner around its stages), never across
    threads: a second thread of the same process is refused in one line, as another process is."""
    import threading

    from crossner_hf.outputs import run_lock

    out = tmp_path / "run"
    outcome = []

    def second():
        try:
            with run_lock(out):
                outcome.append("held")
        except ValueError as err:
            outcome.append(str(err))

    with run_lock(out):
        with run_lock(out):  # the same thread: the outer hold covers it
            pass
        thread = threading.Thread(target=second)
        thread.start()
        thread.join()
    assert len(outcome) == 1 and "another run is writing into this folder now" in outcome[0]
    thread = threading.Thread(target=second)  # released: another thread may take it
    thread.start()
    thread.join()
    assert outcome[1] == "held"


def test_a_folder_is_replaced_in_one_step_where_the_system_can(tmp_path, monkeypatch):
    """``replace_folder``: on Linux the two names swap at once (the target is never missing: the old folder's inode
    is seen under the new folder's former name before it goes); elsewhere, or on a file system that cannot, two
    renames give the same result."""
    import sys

    from crossner_hf import outputs

    def folders():
        new, target = tmp_path / ".new", tmp_path / "best"
        for folder, text in ((new, "new"), (target, "old")):
            folder.mkdir(exist_ok=True)
            (folder / "weights").write_text(text)
        return new, target

    new, target = folders()
    old_inode = target.stat().st_ino
    swapped = []
    real = outputs._exchange

    def seen(a, b):
        done = real(a, b)
        swapped.append(done and a.stat().st_ino == old_inode and (b / "weights").read_text() == "new")
        return done

    monkeypatch.setattr(outputs, "_exchange", seen)
    outputs.replace_folder(new, target)
    assert (target / "weights").read_text() == "new" and not new.exists()
    if sys.platform.startswith("linux"):
        assert swapped == [True]  # one step: the old folder took the new one's name
    monkeypatch.setattr(outputs, "_exchange", lambda a, b: False)  # the fallback
    new, target = folders()
    outputs.replace_folder(new, target)
    assert (target / "weights").read_text() == "new" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]  # nothing left beside it
    new.mkdir()
    outputs.replace_folder(new, tmp_path / "fresh")  # no folder there yet: a plain rename
    assert (tmp_path / "fresh").is_dir() and not new.exists()
