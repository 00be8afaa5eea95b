"""`crossner-hf reproduce`: smoke grids end to end through every executor, kill and resume, and the
table's numbers against the cells' result files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from crossner_hf.reproduce.experiments import plan, select_rows
from crossner_hf.grid import Cell, grid_status, render_flags
from crossner_hf.reproduce.tables import build_table, paper_numbers, read_score
from crossner_hf.reproduce.vectors import RNNVectors

ROOT = Path(__file__).resolve().parents[1]
DAPT_ROW = "pretrain-finetune / DAPT span / integrated"
DIRECT = "direct / w/o DAPT"


@pytest.fixture(scope="module")
def corpora(tmp_path_factory, crossner_data_dir):
    """A DAPT corpora folder (config politics-integrated) from the politics training sentences."""
    from datasets import Dataset

    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    sentences = [" ".join(line.split("\t")[0] for line in block.splitlines())
                 for block in (crossner_data_dir / "politics" / "train.txt").read_text().split("\n\n") if block.strip()]
    out = tmp_path_factory.mktemp("corpora") / "corpora"
    write_hub_dataset_folder({"politics-integrated": Dataset.from_dict({"text": sentences[:60]})}, out)
    return out


def _env(tmp_path, crossner_data_dir):
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "CROSSNER_DATA_DIR": str(crossner_data_dir), "CROSSNER_HF_CACHE": str(tmp_path / "cache"),
            "PYTHONPATH": str(ROOT)}


def _reproduce(args, tmp_path, crossner_data_dir, **popen):
    return subprocess.Popen([sys.executable, "-m", "crossner_hf.cli", "reproduce", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path, crossner_data_dir), start_new_session=True, **popen)


SEEDS = {"crossner": 3, "nerbert": 5, "cdlm": 3}  # three runs (002:512), five (003:138); CDLM states none


def _groups(cells):
    groups: dict[tuple[str, str], list] = {}
    for cell in cells:
        if cell.score:
            groups.setdefault((cell.row, cell.column), []).append(cell)
    return groups


@pytest.mark.parametrize("experiment", ["crossner-table2", "crossner-table4", "nerbert-table2", "cdlm-table3",
                                        "cdlm-table4", "cdlm-table5"])
def test_paper_scale_plan_is_the_papers_table(experiment, tmp_path):
    """--scale paper plans one cell group per paper cell (its seeds), and nothing the table lacks; the paper
    rows it does not plan are named with the reason, never silently dropped."""
    from crossner_hf.reproduce.experiments import PAPER_TABLES
    from crossner_hf.reproduce.papers import paper_table

    table = paper_table(PAPER_TABLES[experiment])
    grid = plan(experiment, "paper", tmp_path)
    groups = _groups(grid.cells)
    unplanned = dict(grid.unplanned)
    assert set(unplanned) <= {r["row"] for r in table["rows"]}
    if experiment == "crossner-table4":  # settings x music categories, read from four table2 cell groups
        expected = {(r["row"], "music") for r in table["rows"]}
    elif experiment == "cdlm-table4":  # precision / recall / F1 of one dataset, CBS News
        expected = {(r["row"], "cbs_news") for r in table["rows"] if r["row"] not in unplanned}
    elif experiment == "cdlm-table5":  # entity types x (STM-SOURCE, the model): the two rows' CBS cells
        assert table["columns"][:2] == ["stm", "ours"] and {r["row"] for r in table["rows"]} == {
            "PER", "LOC", "ORG", "MISC", "Total"}
        expected = {("STM-SOURCE", "cbs_news"), ("Ours", "cbs_news")}
    else:
        expected = {(r["row"], c) for r in table["rows"] if r["row"] not in unplanned
                    for c in table["columns"] if r["cells"][c] is not None}
    assert set(groups) == expected
    assert {len(g) for g in groups.values()} == {SEEDS[table["paper"]]}
    if experiment != "cdlm-table5":
        assert all(r["row"] in unplanned or any(k[0] == r["row"] for k in groups) for r in table["rows"])
    dapts = [c for c in grid.cells if c.command in ("dapt", "nerbert")]
    assert len({c.name for c in dapts}) == len(dapts)
    for dapt in dapts:  # one pre-training, shared by every seed and setting fine-tuned from it
        users = [c for c in grid.cells if dapt.name in c.deps]
        assert len(users) == len({(c.row, c.column, c.seed) for c in users}) > 1


def test_table2_plan_counts_and_paper_settings(tmp_path, capsys):
    from crossner_hf.cli import main

    assert main(["reproduce", "crossner-table2", "--scale", "paper", "--output_dir", str(tmp_path / "t2"),
                 "--dry_run"]) == 0
    printed = capsys.readouterr().out
    assert "500 cells" in printed and printed.count("paper row not planned:") == 0
    assert "crossner-hf dapt --config paper/crossner_dapt" in printed
    grid = plan("crossner-table2", "paper", tmp_path)
    # per domain: 7 DAPT runs, 24 BERT rows x 3 seeds, 7 baseline rows x 3 seeds
    assert len(grid.cells) == 5 * (7 + 24 * 3 + 7 * 3)
    assert not grid.unplanned
    # cells are settings as values, rendered to flags by the grid: no flag list to splice (and the line printed)
    assert all(c.settings for c in grid.cells)
    assert f"crossner-hf {grid.cells[0].command} {' '.join(render_flags(grid.cells[0].settings))} " in printed
    # every seed fine-tunes the encoder (a loop variable once renamed it to a baseline's name for seeds 2 and 3)
    assert {c.flags()[c.flags().index("--model_name_or_path") + 1] for c in grid.cells
            if c.command == "train" and "wo-dapt" in c.name} == {"bert-base-cased"}
    multicell = [c for c in grid.cells if c.command == "multicell" and c.column == "music"]
    assert [c.row for c in multicell[:2]] == ["Jia and Zhang (2020)", "Jia and Zhang (2020) + DAPT (span, integrated)"]
    assert multicell[0].flags()[multicell[0].flags().index("--features_model") + 1] == "bert-base-cased"
    assert multicell[1].deps == ("music/dapt-integrated-span",) and "paper/crossner_multicell" in multicell[1].flags()
    assert multicell[1].settings["features_model"].endswith("cells/music/dapt-integrated-span")
    coach = next(c for c in grid.cells if c.row == "Coach (word)")
    assert "paper/crossner_coach" in coach.flags() and coach.flags()[coach.flags().index("--char_ngram_dim") + 1] == "0"
    cdlm = next(c for c in grid.cells if c.command == "cdlm")
    assert "music-domain" in " ".join(cdlm.flags()) or "-domain" in cdlm.settings["target_text"]
    word = next(c for c in grid.cells if c.row == "BiLSTM-CRF (word)")
    assert word.settings["char_ngram_dim"] == 0 and "paper/crossner_bilstm_crf" in word.flags()
    assert {c.flags()[c.flags().index("--config") + 1] for c in grid.cells if c.command == "train"} == {
        "paper/crossner_direct", "paper/crossner_pretrain_finetune", "paper/crossner_joint"}


def test_status_beside_a_live_run_leaves_the_runs_files_to_it(tmp_path):
    """``--status`` while another run holds OUT: the table so far goes to ``OUT/.status``, never over the files the
    run writes itself (its final table could be overwritten by an older snapshot); with no run, into OUT."""
    import threading

    from crossner_hf.grid import grid_lock
    from crossner_hf.reproduce.run import STATUS_DIR, run_experiment

    out = tmp_path / "t2"
    grid = plan("crossner-table2", "cpu", out, domains=["politics"])
    holding, release = threading.Event(), threading.Event()

    def live_run():
        with grid_lock(out):
            (out / "table.md").write_text("the run's own table")
            holding.set()
            release.wait(60)

    thread = threading.Thread(target=live_run)
    thread.start()
    try:
        assert holding.wait(60)
        snapshot = run_experiment(grid, out, run=False)
        assert snapshot.table == out / STATUS_DIR / "table.md" and "| row |" in snapshot.table.read_text()
        assert (out / "table.md").read_text() == "the run's own table" and not (out / "plan.json").exists()
    finally:
        release.set()
        thread.join()
    refreshed = run_experiment(grid, out, run=False)  # no run holds it now
    assert refreshed.table == out / "table.md" and "| row |" in refreshed.table.read_text()
    assert (out / "plan.json").is_file()


def test_figure_plans_are_the_papers_figures(tmp_path):
    from crossner_hf.reproduce.papers import paper_data

    figures = paper_data()["figures"]
    fig2 = plan("crossner-fig2", "paper", tmp_path)
    assert {c.row for c in fig2.cells if c.score} == {
        *(f"{p} / {m} masking" for p in figures["crossner/fig2"]["panels"] for m in figures["crossner/fig2"]["curves"]),
        *(f"{p} / w/o DAPT" for p in figures["crossner/fig2"]["panels"])}  # the reference (002:614-617)
    assert {c.column for c in fig2.cells if c.score} == {"0", "1", "10", "25", "50", "75", "100"}
    assert len([c for c in fig2.cells if c.command == "dapt"]) == 2 * 6  # per (masking, share), shared by the panels
    # the 100% runs and the reference are crossner-table2's cells: one output folder runs them once
    table2 = {c.name for c in plan("crossner-table2", "paper", tmp_path, domains=["music"]).cells}
    shared = {c.name for c in fig2.cells} & table2
    assert {n for n in shared if "dapt-integrated" in n and "pct" not in n} and {n for n in shared if "wo-dapt" in n}
    assert not any(c.name.endswith("-100pct") or "-100pct/" in c.name for c in fig2.cells)
    fig3 = plan("crossner-fig3", "paper", tmp_path)
    assert {c.column for c in fig3.cells if c.score} == {str(n) for n in figures["crossner/fig3"]["x"]}
    assert {c.row for c in fig3.cells if c.score} == {f"{s} / {d}" for s in figures["crossner/fig3"]["settings"]
                                                      for d in ("w/o DAPT", "DAPT token / integrated",
                                                                "DAPT span / integrated")}
    assert {c.meta["domain"] for c in fig3.cells} == {"music"} and len(_groups(fig3.cells)) == 9 * 7
    nb2 = plan("nerbert-fig2", "paper", tmp_path)
    assert {c.meta["domain"] for c in nb2.cells if c.score} == set(figures["nerbert/fig2"]["domains"])
    # five seeds (003:138), and every domain reaches the regime the figure is about (003:161): a point
    # of 10-50 training sentences and one of 50-100, by the train sizes of 003:257
    assert {c.seed for c in nb2.cells if c.score} == {555, 666, 777, 888, 999}
    from crossner_hf.reproduce.papers import paper_table

    sizes = next(r for r in paper_table("nerbert/table3")["rows"] if r["row"] == "train")["cells"]
    for domain in figures["nerbert/fig2"]["domains"]:
        n = float(sizes[domain].rstrip("K")) * (1000 if sizes[domain].endswith("K") else 1)
        points = {round(float(c.column) / 100 * n) for c in nb2.cells if c.score and c.meta["domain"] == domain}
        assert any(10 <= p <= 50 for p in points) and any(50 < p <= 100 for p in points), (domain, sorted(points))
    nb3 = plan("nerbert-fig3", "paper", tmp_path)
    assert [c.row for c in nb3.cells if c.score] == ["encoder", "NER-BERT all", "NER-BERT 4types", "NER-BERT 212types"]


def test_non_crossner_columns_take_any_dataset_and_say_what_is_missing(tmp_path):
    grid = plan("nerbert-table2", "paper", tmp_path, datasets=["twitter=tner/btc", str(tmp_path)])
    twitter = next(c for c in grid.cells if c.column == "twitter")
    assert twitter.flags()[twitter.flags().index("--dataset_dir") + 1] == "tner/btc" and twitter.inputs == ()
    status = grid_status(grid.cells, tmp_path)
    assert {status[c.name] for c in grid.cells if c.column == "finance" and not c.deps} == {"missing input"}
    assert any(c.column == tmp_path.name for c in grid.cells)  # a bare folder: one more column, named after it
    with pytest.raises(ValueError, match="is a CrossNER domain"):
        plan("nerbert-table2", "paper", tmp_path, datasets=["politics=x"])


def test_cpu_plan_says_which_rows_it_cannot_train(tmp_path, capsys):
    from crossner_hf.cli import main

    grid = plan("crossner-table2", "cpu", tmp_path, domains=["politics"])
    assert "Jia, Liang and Zhang (2019)" not in {c.row for c in grid.cells}
    assert "not trained at this scale" in dict(grid.unplanned)["Jia, Liang and Zhang (2019)"]
    assert len(grid.cells) == 7 + 24 + 4 + 2
    with pytest.raises(ValueError, match="rows are"):
        select_rows(grid.cells, ["no such row"])
    with pytest.raises(ValueError, match="choose one of crossner-table2, crossner-fig2"):
        plan("crossner-table9", "cpu", tmp_path)
    assert main(["reproduce", "crossner-table2", "--scale", "cpu", "--domains", "politics", "--output_dir",
                 str(tmp_path / "t2"), "--dry_run"]) == 0
    out = capsys.readouterr().out
    assert "37 cells" in out and "after politics/dapt-integrated-span" in out
    assert "MISSING INPUT" in out and "What this plan (--scale cpu) cuts" in out
    assert "paper row not planned: Jia, Liang and Zhang (2019)" in out
    assert not (tmp_path / "t2").exists()  # a dry run writes nothing
    # no corpora given: the DAPT cells show as missing input, and the fine-tuning after them as blocked
    finetune = next(c for c in grid.cells if c.row == DAPT_ROW)
    status = grid_status(grid.cells, tmp_path)
    assert status[finetune.deps[0]] == "missing input" and status[finetune.name] == "blocked"


def test_cpu_cuts_name_only_what_the_plan_runs(tmp_path):
    """Each plan lists the cuts of the cells it runs: no encoder or DAPT note beside RNN rows alone, the
    paper's own seed count, and the CDLM note only where a row is left out for its budget."""
    def notes(experiment, **kw):
        return "\n".join(plan(experiment, "cpu", tmp_path, domains=["politics"], **kw).notes)

    table2 = notes("crossner-table2")
    assert all(k in table2 for k in ("encoder:", "DAPT:", "BiLSTM-CRF and Coach:", "multi-cell", "CDLM", "three"))
    coach = notes("crossner-table2", rows=["Coach (word)"])
    assert coach.splitlines() == ["seeds: one (555) instead of the paper's three (002:512)",
                                  next(n for n in table2.splitlines() if n.startswith("BiLSTM-CRF and Coach:")),
                                  next(n for n in coach.splitlines() if n.startswith("word vectors: random"))]
    assert "random for the RNN rows (Coach (word)) instead" in coach and "Jia and Zhang (2020)" in table2
    cdlm = notes("cdlm-table4")
    assert "RMSprop 1e-3" in cdlm and "CDLM (Jia" in cdlm and "encoder:" not in cdlm and "DAPT" not in cdlm
    assert "states no run count" in cdlm and "paper's three" not in cdlm  # the CDLM paper gives no count
    # NER-BERT: five runs (003:138), in Table 2 and in Figure 2 alike
    assert "the paper's five (003:138)" in notes("nerbert-table2") and "the paper's five" in notes("nerbert-fig2")
    assert "seeds:" not in notes("nerbert-fig3") and "word vectors" not in notes("nerbert-table2")
    assert plan("crossner-table2", "paper", tmp_path, domains=["politics"]).notes == ()


def test_failed_cell_is_reported_and_the_rest_go_on(tmp_path, crossner_data_dir, tiny_bert_dir):
    broken = tmp_path / "broken"
    (broken / "data" / "politics-integrated").mkdir(parents=True)  # present but holds no data: DAPT fails
    out = tmp_path / "grid"
    proc = _reproduce(["crossner-table2", "--scale", "smoke", "--domains", "politics", "--rows", DIRECT,
                       DAPT_ROW, "--model", tiny_bert_dir, "--corpora", broken, "--output_dir", out],
                      tmp_path, crossner_data_dir)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 1, stderr[-3000:]
    status = grid_status(plan("crossner-table2", "smoke", out, domains=["politics"], model=tiny_bert_dir,
                              corpora=str(broken), rows=[DIRECT, DAPT_ROW]).cells, out)
    assert sorted(status.values()) == ["blocked", "done", "failed"]
    failed = next(out.rglob(".failed")).read_text()
    assert failed.startswith("crossner-hf dapt: error:") and "broken" in failed, failed  # the command's one line
    assert "failed" in stderr and f"| {DAPT_ROW} | failed / 72.05 |" in stdout


def _dapt_grid(out, model, corpora):
    return plan("crossner-table2", "smoke", out, domains=["politics"], model=model, corpora=str(corpora),
                rows=[DAPT_ROW]).cells


@pytest.mark.slow  # a grid of real runs (about 30 s on a quiet machine)
@pytest.mark.xdist_group("ray")  # one Ray cluster at a time: both on the same worker
def test_ray_executor_runs_the_grid_with_its_dependency(tmp_path, crossner_data_dir, corpora, tiny_bert_dir):
    pytest.importorskip("ray")
    out = tmp_path / "grid"
    proc = _reproduce(["crossner-table2", "--scale", "smoke", "--domains", "politics", "--rows", DAPT_ROW,
                       "--model", tiny_bert_dir, "--corpora", corpora, "--executor", "ray", "--output_dir", out],
                      tmp_path, crossner_data_dir)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    cells = _dapt_grid(out, tiny_bert_dir, corpora)
    assert set(grid_status(cells, out).values()) == {"done"} and read_score(cells[-1], out) is not None
    # the fine-tuning ran after (and from) the DAPT model
    dapt, finetune = (c.folder(out) for c in cells)
    assert (dapt / "results.json").stat().st_mtime < (finetune / "results.json").stat().st_mtime


@pytest.mark.slow  # a grid of real runs (about 30 s on a quiet machine)
def test_slurm_path_through_submitit_local_executor(tmp_path, crossner_data_dir, corpora, tiny_bert_dir, monkeypatch):
    pytest.importorskip("submitit")
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid import run_grid

    for name, value in _env(tmp_path, crossner_data_dir).items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "grid"
    cells = _dapt_grid(out, tiny_bert_dir, corpora)
    status = run_grid(cells, out, ExecutorOptions(executor="slurm", slurm_cluster="local"))
    assert set(status.values()) == {"done"}
    assert list((out / "slurm").rglob("*_submitted.pkl"))  # the cells went through submitit's jobs


def test_slurm_jobs_carry_resources_and_afterok_dependencies(tmp_path, monkeypatch):
    """On a Slurm cluster (sbatch/srun stand-ins here) the dependant's job script says afterok:<its dependency>."""
    submitit = pytest.importorskip("submitit")
    from functools import partial

    from crossner_hf.executors import ExecutorOptions, submit_tasks
    from crossner_hf.grid import cell_status, run_cell

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sbatch").write_text(
        f"#!/bin/sh\nn=$(ls {tmp_path}/scripts 2>/dev/null | wc -l); n=$((n + 11))\n"
        f"mkdir -p {tmp_path}/scripts; cp \"$1\" {tmp_path}/scripts/$n.sh\necho \"Submitted batch job $n\"\n")
    for tool in ("srun", "sbatch"):
        (bin_dir / tool).chmod((bin_dir / tool).stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    out = tmp_path / "grid"
    a = Cell("politics/dapt/seed-1", "dapt", "r", "politics", settings={"x": True}, gpus=1, minutes=60, score=False)
    b = Cell("politics/ft/seed-1", "train", "r", "politics", settings={"y": True}, deps=(a.name,), gpus=1, minutes=30)
    executor = submitit.AutoExecutor(folder=str(out / "slurm" / "%j"), cluster="slurm")
    jobs = submit_tasks(executor, [a, b], ExecutorOptions(executor="slurm", slurm_partition="gpu"), {},
                        run=partial(run_cell, out=str(out)), status=partial(cell_status, out=out))
    assert [jobs[c.name].job_id for c in (a, b)] == ["11", "12"]
    first, second = ((tmp_path / "scripts" / f"{n}.sh").read_text() for n in (11, 12))
    assert "#SBATCH --partition=gpu" in first and "#SBATCH --gpus-per-node=1" in first
    assert "#SBATCH --time=120" in first and "dependency" not in first
    assert "#SBATCH --dependency=afterok:11" in second and "#SBATCH --kill-on-invalid-dep=yes" in second


@pytest.mark.slow  # one grid: a NER-BERT pre-training and two fine-tunings from it (about 30 s on a quiet machine)
def test_nerbert_table2_pretrains_once_and_finetunes_from_it_on_any_conll_folder(tmp_path, crossner_data_dir,
                                                                                sample_corpus, tiny_bert_dir,
                                                                                monkeypatch):
    """nerbert-table2: the NER-BERT encoder is pre-trained once and every column fine-tunes from it, a CrossNER
    domain and a CoNLL folder of the user's (its own tag names) alike."""
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.grid import run_grid
    from crossner_hf.testing import make_renamed_conll_folder

    for name, value in _env(tmp_path, crossner_data_dir).items():
        monkeypatch.setenv(name, value)
    folder = make_renamed_conll_folder(crossner_data_dir / "politics", tmp_path / "speeches", {"person": "speaker"})
    out = tmp_path / "grid"
    grid = plan("nerbert-table2", "smoke", out, domains=["politics"], model=tiny_bert_dir,
                nerbert_corpus=str(sample_corpus), datasets=[str(folder)], rows=["direct / NER-BERT"])
    assert [c.name for c in grid.cells] == ["nerbert-all", "politics/ner-bert-all-direct/seed-1",
                                            "speeches/ner-bert-all-direct/seed-1"]
    assert grid.cells[2].flags()[grid.cells[2].flags().index("--dataset_dir") + 1] == str(folder)
    assert set(run_grid(grid.cells, out, ExecutorOptions()).values()) == {"done"}
    records = {r["column"]: r["ours"] for r in build_table("nerbert-table2", grid.cells, out)
               if r["row"] == "direct / NER-BERT"}
    assert records["average"] == "incomplete (1/11 columns)"  # averaged only when every column is there
    for cell in grid.cells[1:]:
        results = json.loads((cell.folder(out) / "results.json").read_text())
        assert results["model"] == grid.cells[0].folder(out).name  # the NER-BERT cell (by name: published)
        assert records[cell.column] == f"{100 * results['test']['overall_f1']:.2f}"
    assert "B-speaker" in json.loads((grid.cells[2].folder(out) / "results.json").read_text())["labels"]
    full = plan("nerbert-table2", "cpu", out, domains=["politics"])
    assert {c.row for c in full.cells if c.score} == {f"{s} / {e}" for e in ("BERT", "NER-BERT", "NER-BERT 4types",
                                                                          "NER-BERT 212types")
                                                      for s in ("direct", "pretrain-finetune")}
    assert grid_status(full.cells, out)["nerbert-4types"] == "missing input"
    # a folder that is not there is a missing input, shown as such; other experiments refuse --datasets
    gone = plan("nerbert-fig2", "smoke", tmp_path / "g2", domains=["politics"], model=tiny_bert_dir,
                datasets=[str(tmp_path / "nowhere")], nerbert_corpus=str(tmp_path / "c"))
    assert {grid_status(gone.cells, tmp_path / "g2")[c.name] for c in gone.cells if c.column == "1"
            and "nowhere" in c.name} == {"missing input"}
    with pytest.raises(ValueError, match="--datasets: crossner-table2 runs on CrossNER domains only"):
        plan("crossner-table2", "cpu", out, datasets=[str(folder)])


def test_fig3_table_and_curve_from_the_cells_results(tmp_path):
    """The table and the figure read the cells' results.json: mean ± std over seeds, partial seeds said so."""
    pytest.importorskip("matplotlib")
    from crossner_hf.reproduce.tables import write_curve_figure, write_tables

    out = tmp_path / "fig3"
    grid = plan("crossner-fig3", "cpu", out, seeds=[1, 2], rows=[DIRECT])
    scores = {}
    for i, cell in enumerate(grid.cells):
        if cell.column == "100" and cell.seed == 2:
            continue  # one seed of n=100 not done yet
        cell.folder(out).mkdir(parents=True)
        scores[cell.name] = 0.40 + 0.01 * i
        (cell.folder(out) / "results.json").write_text(json.dumps({"test_overall_f1_mean": scores[cell.name]}))
    md, csv_path = write_tables("crossner-fig3", grid.cells, out, scale="cpu", model="m")
    records = {r["column"]: r for r in build_table("crossner-fig3", grid.cells, out)}
    import statistics

    ten = [100 * scores[c.name] for c in grid.cells if c.column == "10"]
    assert records["10"]["ours"] == f"{statistics.fmean(ten):.2f} ± {statistics.stdev(ten):.2f}"
    assert records["100"]["ours"] == "waiting (1/2 seeds)" and records["10"]["paper"] == "not transcribed"
    assert "its points are read off a plot" in md.read_text()
    assert write_curve_figure("crossner-fig3", grid.cells, out, xlabel="n", model="m").stat().st_size > 1000


def _train_results(per_type: dict[str, float], overall: float) -> dict:
    """A train results.json as `crossner-hf train` writes it for one seed (only the fields the tables read)."""
    return {"test_overall_f1_mean": overall,
            "per_seed": [{"seed": 1, "test": {"overall_f1": overall,
                                              "per_type": {t: {"f1": f1} for t, f1 in per_type.items()}}}]}


def test_table4_reads_each_category_from_the_table2_cells(tmp_path):
    """crossner-table4 is the table2 cells of three rows (same folders), read per entity category."""
    from crossner_hf.data.labels import entity_types

    out = tmp_path / "t4"
    grid = plan("crossner-table4", "cpu", out, corpora=str(tmp_path / "corpora"))
    assert {c.row for c in grid.cells if c.score} == {DIRECT, "direct / DAPT span / integrated",
                                                      "pretrain-finetune / w/o DAPT", DAPT_ROW}
    table2 = {c.name for c in plan("crossner-table2", "cpu", out, domains=["music"]).cells}
    assert {c.name for c in grid.cells} <= table2  # a shared --output_dir runs them once
    types = entity_types("music")
    written = {}
    for i, cell in enumerate(c for c in grid.cells if c.score):
        cell.folder(out).mkdir(parents=True)
        written[cell.row] = {t: 0.01 * (i + 1) * (j + 1) for j, t in enumerate(types[:-1])}  # last type: not scored
        (cell.folder(out) / "results.json").write_text(json.dumps(_train_results(written[cell.row], 0.5 + i / 10)))
    for dapt in (c for c in grid.cells if c.command == "dapt"):
        dapt.folder(out).mkdir(parents=True, exist_ok=True)
        (dapt.folder(out) / "results.json").write_text("{}")
    records = {(r["row"], r["column"]): r["ours"] for r in build_table("crossner-table4", grid.cells, out)}
    for setting, per_type in written.items():
        for t, f1 in per_type.items():
            assert records[(t, setting)] == f"{100 * f1:.2f}"
        assert records[(types[-1], setting)] == "n/a"  # a category the run did not score is said, not zero
    assert records[("overall", DIRECT)] == "50.00"
    assert [r for r, _ in records][:4] == [types[0]] * 4  # categories down, the four settings across
    paper = {(r["row"], r["column"]): r["paper"] for r in build_table("crossner-table4", grid.cells, out)}
    assert paper[("song", DAPT_ROW)] == "58.67" and paper[("musicalinstrument", DIRECT)] == "not in the paper"


def test_nerbert_fig2_trains_on_shares_of_the_train_split(tmp_path, crossner_data_dir):
    from crossner_hf.training.schedules import seed_target

    grid = plan("nerbert-fig2", "cpu", tmp_path, domains=["politics"], nerbert_corpus=str(tmp_path / "c"))
    runs = [c for c in grid.cells if c.command == "train"]
    assert {c.column for c in runs} == {"0.5", "1", "2", "3", "5", "10", "25", "50", "100"}
    assert {c.row for c in runs} == {"BERT (politics)", "NER-BERT (politics)"}
    assert all(c.deps == ("nerbert-all",) for c in runs if c.row.startswith("NER-BERT"))
    assert all("--dataset_dir" not in c.flags() for c in runs)  # a CrossNER column reads --data_dir
    assert all("--few_shot" not in c.flags() and "--few_shot_fraction" in c.flags() for c in runs)
    from crossner_hf.data.target import load_target
    from crossner_hf.training.training_args import FinetuneConfig

    politics = load_target("politics", data_dir=crossner_data_dir)
    tenth = FinetuneConfig(output_dir=str(tmp_path / "o"), few_shot_fraction=0.1)
    full = seed_target(FinetuneConfig(output_dir=str(tmp_path / "o")), 1, politics)
    assert len(seed_target(tenth, 1, politics)["train"]) == round(0.1 * len(full["train"]))
    with pytest.raises(ValueError, match="pass one"):
        FinetuneConfig(output_dir=str(tmp_path / "o"), few_shot=8, few_shot_fraction=0.5)
    with pytest.raises(ValueError, match=r"must be in \(0, 1\]"):
        FinetuneConfig(output_dir=str(tmp_path / "o"), few_shot_fraction=1.5)


@pytest.mark.slow  # DAPT and fine-tuning runs (about a minute on a quiet machine)
def test_fig2_dapt_reads_its_share_of_the_corpus(tmp_path, crossner_data_dir, corpora, tiny_bert_dir, monkeypatch):
    """crossner-fig2: each DAPT cell trains on --corpus_fraction of the integrated corpus, then fine-tunes."""
    pytest.importorskip("matplotlib")
    for name, value in _env(tmp_path, crossner_data_dir).items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "fig2"
    proc = _reproduce(["crossner-fig2", "--scale", "smoke", "--domains", "politics", "--rows",
                       "pretrain-finetune / span masking", "--model", tiny_bert_dir, "--corpora", corpora,
                       "--output_dir", out], tmp_path, crossner_data_dir)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    grid = plan("crossner-fig2", "smoke", out, domains=["politics"], model=tiny_bert_dir, corpora=str(corpora),
                rows=["pretrain-finetune / span masking"])
    texts = {}
    for cell in grid.cells:
        if cell.command == "dapt":
            texts[cell.name] = json.loads((cell.folder(out) / "results.json").read_text())["n_texts"]
    # of the fixture's 60 sentences; one DAPT run per share, whichever panels fine-tune from it
    assert texts == {"politics/dapt-integrated-span-10pct": 6, "politics/dapt-integrated-span-25pct": 15}
    records = {r["column"]: r["ours"] for r in build_table("crossner-fig2", grid.cells, out)}
    for cell in grid.cells:
        if cell.score:
            assert records[cell.column] == f"{read_score(cell, out):.2f}"
    assert (out / "figure.png").stat().st_size > 1000
    assert "| pretrain-finetune / span masking |" in (out / "table.md").read_text()


@pytest.mark.slow  # a NER-BERT pre-training and two plot-entities runs (about 40 s on a quiet machine)
def test_nerbert_fig3_silhouettes_and_panel(tmp_path, crossner_data_dir, sample_corpus, tiny_bert_dir, monkeypatch):
    pytest.importorskip("sklearn")
    for name, value in _env(tmp_path, crossner_data_dir).items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "fig3"
    args = ["nerbert-fig3", "--scale", "smoke", "--rows", "encoder", "NER-BERT all", "--model", tiny_bert_dir,
            "--nerbert_corpus", sample_corpus, "--output_dir", out]
    proc = _reproduce(args, tmp_path, crossner_data_dir)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    grid = plan("nerbert-fig3", "smoke", out, model=tiny_bert_dir, nerbert_corpus=str(sample_corpus),
                rows=["encoder", "NER-BERT all"])
    assert [c.name for c in grid.cells] == ["nerbert-all", "politics/tsne-encoder", "politics/tsne-ner-bert-all"]
    records = {(r["row"], r["column"]): r["ours"] for r in build_table("nerbert-fig3", grid.cells, out)}
    for cell in grid.cells[1:]:
        scores = json.loads((cell.folder(out) / "entities.json").read_text())["silhouette"]
        assert records[(cell.row, "overall")] == f"{scores['overall']:.3f}"
        assert records[(cell.row, "election")] == f"{scores['per_category']['election']:.3f}"
        assert json.loads((cell.folder(out) / "entities.json").read_text())["model"].endswith(
            "nerbert-all" if "NER-BERT" in cell.row else Path(tiny_bert_dir).name)
    assert (out / "figure.png").stat().st_size > 1000
    assert "| encoder |" in stdout and "/ not transcribed" not in stdout  # the paper shows plots, not numbers


def test_cdlm_tables_plan_every_row_or_say_why(tmp_path):
    """CDLM Tables 3 and 4: each paper row a configuration of bilstm-crf or cdlm, or listed with its reason; at
    paper scale the paper's columns only (004:895, 004:1115-1130), to fill with --datasets; CrossNER domains are
    an extension, planned when --domains names them and marked so."""
    grid = plan("cdlm-table3", "paper", tmp_path)
    rows = {"STM-TARGET", "FINETUNE", "MULTITASK(NER+LM)", "MULTITASK(NER)", "CO-LM", "CO-NER", "MIX-DATA", "FINAL"}
    assert {c.row for c in grid.cells} == rows and set(dict(grid.unplanned)) == {"Crichton et al. (2017)", "STM+ELMO"}
    assert set(paper_numbers("cdlm-table3")["rows"]) == rows | set(dict(grid.unplanned))
    assert {c.column for c in grid.cells} == {"bionlp13pc", "bionlp13cg"}
    assert len(grid.cells) == 2 * 8 * 3 and not any(c.meta.get("extension") for c in grid.cells)
    extended = plan("cdlm-table3", "paper", tmp_path, domains=["politics", "bionlp13pc"])
    assert {c.column for c in extended.cells} == {"politics", "bionlp13pc"}
    assert all(bool(c.meta.get("extension")) == (c.column == "politics") for c in extended.cells)
    t4 = plan("cdlm-table4", "paper", tmp_path)
    assert {c.column for c in t4.cells} == {"cbs_news"} and len(t4.cells) == 4 * 3
    status = grid_status(grid.cells, tmp_path)
    assert {status[c.name] for c in grid.cells if c.column == "bionlp13pc"} == {"missing input"}
    final = next(c for c in grid.cells if c.row == "FINAL")
    assert final.flags()[final.flags().index("--variant") + 1] == "final" and "paper/cdlm_supervised" in final.flags()
    finetune = next(c for c in grid.cells if c.row == "FINETUNE")
    assert finetune.flags()[finetune.flags().index("--schedule") + 1] == "pretrain-finetune"

    folder = tmp_path / "cbs"
    folder.mkdir()
    grid = plan("cdlm-table4", "cpu", tmp_path / "t4", datasets=[f"cbs_news={folder}"])
    assert {c.row for c in grid.cells} == {"STM-SOURCE", "SELF-TRAIN", "DANN"}
    assert "not trained at this scale" in dict(grid.unplanned)["Ours"] and "ELMo" in dict(grid.unplanned)["STM+ELMO"]
    assert {c.column for c in grid.cells} == {"politics", "cbs_news"}
    cbs = next(c for c in grid.cells if c.column == "cbs_news" and c.row == "DANN")
    assert cbs.flags()[cbs.flags().index("--dataset_dir") + 1] == str(folder.resolve())


def test_cdlm_table4_reads_precision_recall_and_f1(tmp_path):
    folder = tmp_path / "cbs"
    folder.mkdir()
    out = tmp_path / "t4"
    raw = [tmp_path / "reuters.txt", tmp_path / "cbs.txt"]
    for path in raw:
        path.write_text("One sentence .\n")
    grid = plan("cdlm-table4", "cpu", out, datasets=[f"cbs_news={folder}"],
                raw_text=[f"source={raw[0]}", f"cbs_news={raw[1]}"])
    dann = next(c for c in grid.cells if c.column == "cbs_news" and c.row == "DANN")
    assert dann.flags()[dann.flags().index("--target_text") + 1] == str(raw[1].resolve())  # never a fallback text
    # DANN's classifier trains over source- and target-domain raw data (004:1100-1103): the Reuters file too
    assert dann.flags()[dann.flags().index("--source_text") + 1] == str(raw[0].resolve())
    assert str(raw[0].resolve()) in dann.inputs
    self_train = next(c for c in grid.cells if c.column == "cbs_news" and c.row == "SELF-TRAIN")
    assert "--source_text" not in self_train.flags()  # target raw text alone (004:1092-1094)
    politics = next(c for c in grid.cells if c.column == "politics" and c.row == "DANN")
    assert "--source_text" not in politics.flags()  # an extension column: CoNLL-2003's sentences as source text
    for i, cell in enumerate(c for c in grid.cells if c.row == "STM-SOURCE"):
        cell.folder(out).mkdir(parents=True)
        test = {"overall_precision": 0.6 + i / 100, "overall_recall": 0.7, "overall_f1": 0.65}
        (cell.folder(out) / "results.json").write_text(json.dumps({"test": test}))
    records = {(r["row"], r["column"]): r for r in build_table("cdlm-table4", grid.cells, out, grid.unplanned)}
    assert records[("STM-SOURCE", "precision")]["paper"] == "63.87"  # CBS News: the paper's column (004:1116)
    assert records[("STM-SOURCE", "recall")]["ours"] == "70.00"
    assert records[("STM-SOURCE", "f1")]["difference"] == f"{65 - 67.37:+.2f}"
    assert records[("STM-SOURCE", "politics f1")]["paper"] == "not in the paper"
    assert records[("STM+ELMO", "f1")]["ours"].startswith("cannot run here")
    assert records[("DANN", "precision")]["ours"] == "waiting"


def test_cdlm_zero_shot_cbs_cells_need_the_raw_corpora(tmp_path):
    """CBS has no train split (004:807): its LMs read the paper's raw corpora (004:737-739, 004:772-774). Without
    them the cells that read them are 'missing input' naming --raw_text, never a silent fallback."""
    folder = tmp_path / "cbs"
    folder.mkdir()
    glove = _vectors_file(tmp_path / "glove.6B.100d.txt", 100)  # the word vectors given: only the raw text lacks
    grid = plan("cdlm-table4", "paper", tmp_path / "o", datasets=[f"cbs_news={folder}"],
                vectors=RNNVectors.from_flags("paper", word_vectors=str(glove)))
    status = grid_status(grid.cells, tmp_path / "o")
    by_row = {c.row: c for c in grid.cells if c.seed == 555}
    assert status[by_row["STM-SOURCE"].name] == "waiting"  # reads no target text
    for row in ("SELF-TRAIN", "DANN", "Ours"):
        assert status[by_row[row].name] == "missing input"
        assert any("--raw_text cbs_news=FILE" in i and "398,990" in i for i in by_row[row].inputs)
    for row in ("DANN", "Ours"):  # the two that read the source raw text too
        assert any("--raw_text source=FILE" in i and "377,592" in i for i in by_row[row].inputs)
        assert "--source_text" in by_row[row].flags()
    assert not any("--raw_text source=FILE" in i for i in by_row["SELF-TRAIN"].inputs)
    given = plan("cdlm-table4", "paper", tmp_path / "g", datasets=[f"cbs_news={folder}"],
                 raw_text=[f"cbs_news={folder}"])  # the CBS text alone: DANN still lacks Reuters
    dann = next(c for c in given.cells if c.row == "DANN" and c.seed == 555)
    assert grid_status(given.cells, tmp_path / "g")[dann.name] == "missing input"
    with pytest.raises(ValueError, match="--raw_text: only the zero-shot CBS column"):
        plan("cdlm-table3", "paper", tmp_path, raw_text=["source=x"])


def test_cdlm_figures_6_and_8_plan_the_papers_design(tmp_path):
    """Figure 6 (004:1053-1062): STM-TARGET vs the model over target NER sizes up to 3,000 (the text's end), on
    13CG; Figure 8 (004:1147-1196): three lines of raw-text shares on CBS, whose raw corpora are inputs."""
    from crossner_hf.reproduce.papers import paper_data

    figures = paper_data()["figures"]
    fig6 = plan("cdlm-fig6", "paper", tmp_path)
    assert {c.row for c in fig6.cells} == set(figures["cdlm/fig6"]["settings"])
    assert sorted({int(c.column) for c in fig6.cells}) == figures["cdlm/fig6"]["x"] and {c.meta["domain"] for c in
                                                                                          fig6.cells} == {"bionlp13cg"}
    assert all(c.flags()[c.flags().index("--few_shot") + 1] == c.column for c in fig6.cells)
    assert {a for c in fig6.cells for a in c.flags() if a.startswith("paper/")} == {"paper/cdlm_bilstm_crf",
                                                                                "paper/cdlm_supervised"}  # 100 epochs
    fig8 = plan("cdlm-fig8", "paper", tmp_path, datasets=[f"cbs_news={tmp_path}"])
    assert {c.row for c in fig8.cells} == set(figures["cdlm/fig8"]["curves"])
    assert sorted({float(c.column) for c in fig8.cells}) == figures["cdlm/fig8"]["x"]
    status = grid_status(fig8.cells, tmp_path)
    assert {status[c.name] for c in fig8.cells} == {"missing input"}  # the raw corpora, never a fallback
    fixed = next(c for c in fig8.cells if c.row == "SRC: 100%; TGT: varying" and c.column == "10")
    assert fixed.flags()[fixed.flags().index("--source_text_fraction") + 1] == "1"
    assert fixed.flags()[fixed.flags().index("--target_text_fraction") + 1] == "0.1"
    assert "--equal_text_fraction" not in fixed.flags()
    # both varying: an equal amount of source and target text at each point (004:1154-1156), not a share of each
    both = [c for c in fig8.cells if c.row == "SRC: varying; TGT: varying"]
    assert both and all(c.flags()[c.flags().index("--equal_text_fraction") + 1] == f"{float(c.column) / 100:g}" and
                        "--source_text_fraction" not in c.flags() and "--target_text_fraction" not in c.flags()
                        for c in both)
    assert len({c.name for c in fig8.cells}) == len(fig8.cells)


def test_cdlm_text_fractions_and_few_shot_draw_nested_subsets():
    from crossner_hf.training.rnn.recipes import _share

    texts = list(range(100))
    quarter, half = _share(texts, 0.25, 3, "--x"), _share(texts, 0.5, 3, "--x")
    assert len(quarter) == 25 and set(quarter) <= set(half) and _share(texts, 1.0, 3, "--x") == texts
    with pytest.raises(ValueError, match="--x 1.5"):
        _share(texts, 1.5, 3, "--x")


def test_cdlm_table5_counts_correct_entities_per_type_from_table4s_cells(tmp_path):
    """Table 5 (004:1163-1175): STM-SOURCE vs the model on CBS, correctly recognised entities per type and the
    growth in % of the type's gold entities; the cells are cdlm-table4's (same names, run once)."""
    folder = tmp_path / "cbs"
    folder.mkdir()
    raw = [tmp_path / "reuters.txt", tmp_path / "cbs.txt"]
    for path in raw:
        path.write_text("One sentence .\n")
    kwargs = dict(datasets=[f"cbs_news={folder}"], raw_text=[f"source={raw[0]}", f"cbs_news={raw[1]}"])
    out = tmp_path / "o"
    t5, t4 = plan("cdlm-table5", "paper", out, **kwargs), plan("cdlm-table4", "paper", out, **kwargs)
    assert {c.row for c in t5.cells} == {"STM-SOURCE", "Ours"} and {c.column for c in t5.cells} == {"cbs_news"}
    assert {c.name: c.flags() for c in t5.cells} == {c.name: c.flags() for c in t4.cells
                                                     if c.row in ("STM-SOURCE", "Ours")}
    assert len(t5.cells) == 2 * 3 and not t5.unplanned
    assert plan("cdlm-table5", "cpu", out, **kwargs).unplanned[0][0] == "Ours"  # not trained at CPU scale: said so

    gold = {"PER": 1658, "LOC": 629, "ORG": 1352, "MISC": 497}
    correct = {"STM-SOURCE": {"PER": 1500, "LOC": 470, "ORG": 940, "MISC": 134},
               "Ours": {"PER": 1570, "LOC": 510, "ORG": 1050, "MISC": 193}}
    for cell in t5.cells:
        bump = 1 if cell.seed == 666 else 0  # one seed recognises one more PER: the mean moves by a third
        per_type = {t: {"recall": (correct[cell.row][t] + (bump if t == "PER" else 0)) / n, "support": n,
                        "precision": 0.5, "f1": 0.5} for t, n in gold.items()}
        cell.folder(out).mkdir(parents=True)
        (cell.folder(out) / "results.json").write_text(json.dumps({"test": {"overall_f1": 0.5, "per_type": per_type}}))
    records = {(r["row"], r["column"]): r for r in build_table("cdlm-table5", t5.cells, out, t5.unplanned)}
    assert records[("PER", "stm")]["ours"].startswith("1500.3 ± 0.6") and records[("PER", "stm")]["paper"] == "1501"
    assert records[("ORG", "ours")]["ours"] == "1050.0 ± 0.0" and records[("ORG", "ours")]["difference"] == "+0.0"
    assert records[("MISC", "delta")]["ours"] == f"{100 * 59 / 497:+.2f}" and records[("MISC", "delta")]["paper"] == "+11.87"
    assert records[("Total", "stm")]["ours"].startswith(f"{3044 + 1 / 3:.1f}") and records[("Total", "delta")][
        "paper"] == "+6.74"
    assert records[("LOC", "delta")]["difference"] == f"{100 * 40 / 629 - 6.84:+.2f}"
    from crossner_hf.reproduce.tables import write_tables

    md, _ = write_tables("cdlm-table5", t5.cells, out, scale="paper", model="-")
    assert "Correctly recognised test entities per type" in md.read_text() and "| PER |" in md.read_text()
    # a row not done: its counts say so and no growth is computed
    (t5.cells[-1].folder(out) / "results.json").unlink()
    records = {(r["row"], r["column"]): r for r in build_table("cdlm-table5", t5.cells, out, t5.unplanned)}
    assert records[("PER", "delta")]["ours"] == "needs both rows" and "2/3 seeds" in records[("PER", "ours")]["ours"]


def test_run_experiment_is_the_python_api_of_reproduce(tmp_path):
    """plan(...) -> run_experiment(plan, out, options) -> ExperimentResult, no command object: cells whose inputs
    are missing stay so (nothing runs), the table is written from what is done, and run=False only reads."""
    from crossner_hf import plan as top_plan, run_experiment
    from crossner_hf.executors import ExecutorOptions
    from crossner_hf.reproduce.run import ExperimentResult

    assert top_plan is plan
    grid = plan("cdlm-table5", "paper", tmp_path)  # the CBS column has no source here: every cell lacks input
    result = run_experiment(grid, tmp_path, ExecutorOptions(executor="local"))
    assert isinstance(result, ExperimentResult) and set(result.status.values()) == {"missing input"}
    assert result.failed == [] and result.table.is_file() and result.table_csv.is_file() and result.figure is None
    assert "| PER |" in result.table.read_text() and (tmp_path / "plan.json").is_file()
    again = run_experiment(grid, tmp_path, run=False)
    assert again.status == result.status
    from crossner_hf.results import WorkflowResult

    # a study's result is a WorkflowResult: the shared keys, its experiment and each cell's status
    assert isinstance(result, WorkflowResult) and result["workflow"] == "reproduce" and result.model == grid.model
    assert result["experiment"] == "cdlm-table5" and result["status"] == {k: str(v) for k, v in result.status.items()}
    assert result.dev_f1 is None and result.test_f1 is None  # its scores are the table's


def test_a_misspelt_setting_fails_the_plan_in_one_line_before_any_cell_runs(tmp_path, monkeypatch, capsys):
    """Each cell's settings are checked by its own command's parser at planning: a flag the command lacks (with
    the nearest one it has) or a value outside its choices is one line, and no cell has run."""
    import dataclasses

    from crossner_hf.cli import main as cli_main
    from crossner_hf.commands.reproduce import check_plan
    from crossner_hf.reproduce import experiments

    real = experiments.plan

    def misspelt(*args, **kwargs):
        grid = real(*args, **kwargs)
        first = grid.cells[0]
        bad = dataclasses.replace(first, settings={**first.settings, "max_step": 5})
        return dataclasses.replace(grid, cells=[bad, *grid.cells[1:]])

    monkeypatch.setattr(experiments, "plan", misspelt)
    out = tmp_path / "out"
    for dry in ([], ["--dry_run"]):
        assert cli_main(["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics",
                         "--output_dir", str(out), *dry]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "has no such flag: --max_step (did you mean --max_steps?)" in err[0], err
        assert not out.exists()  # nothing planned ran, nothing was written
    cells = real("crossner-table2", "smoke", out, domains=["politics"]).cells
    check_plan(cells)  # the packaged plans pass
    train = next(c for c in cells if c.command == "train")
    with pytest.raises(ValueError, match=r"--schedule jiont: choose one of .*joint"):
        check_plan([dataclasses.replace(train, settings={**train.settings, "schedule": "jiont"})])
    with pytest.raises(ValueError, match="is set by the grid itself: --output_dir"):
        check_plan([dataclasses.replace(train, settings={**train.settings, "output_dir": "x"})])
    # a value its type refuses, or more values than the flag takes, fails the plan too, as the cell's parser would
    with pytest.raises(ValueError, match=r"--max_steps 2O: not a valid int \(invalid literal"):
        check_plan([dataclasses.replace(train, settings={**train.settings, "max_steps": "2O"})])
    with pytest.raises(ValueError, match=r"--learning_rate 3e-5x: not a valid float"):
        check_plan([dataclasses.replace(train, settings={**train.settings, "learning_rate": "3e-5x"})])
    with pytest.raises(ValueError, match=r"--max_steps takes one value, the plan gives 2"):
        check_plan([dataclasses.replace(train, settings={**train.settings, "max_steps": [2, 3]})])
    with pytest.raises(ValueError, match=r"--use_cpu maybe: not a valid string_to_bool"):
        check_plan([dataclasses.replace(train, settings={**train.settings, "use_cpu": "maybe"})])
    check_plan([dataclasses.replace(train, settings={**train.settings, "max_steps": 7, "use_cpu": True,
                                                     "learning_rate": 3e-5})])  # values the parser takes pass


def test_a_cells_command_is_checked_by_the_parser_of_the_module_the_command_table_names():
    """One table of commands (name -> module), below ``commands``: the CLI dispatches from it and a plan's cells are
    checked by the parser of the module it names. ``build-nerbert-corpus`` is ``nerbert_wikipedia`` (its name with
    ``-`` made ``_`` is no module); a command the table lacks is one line too."""
    import importlib.util

    import crossner_hf.cli as cli
    from crossner_hf.commands.reproduce import check_plan
    from crossner_hf.grid.cells import COMMAND_TABLE, RESUMABLE

    assert cli.COMMANDS == {name: module for name, (module, _) in COMMAND_TABLE.items()}
    assert RESUMABLE <= set(COMMAND_TABLE)
    for name, (module, _) in COMMAND_TABLE.items():
        assert importlib.util.find_spec(f"crossner_hf.commands.{module}") is not None, name
    check_plan([Cell("corpus", "build-nerbert-corpus", "r", "c", settings={"top_categories": 20})])
    with pytest.raises(ValueError, match=r"crossner-hf build-nerbert-corpus has no such flag: --top_categorie "):
        check_plan([Cell("corpus", "build-nerbert-corpus", "r", "c", settings={"top_categorie": 20})])
    with pytest.raises(ValueError, match=r"crossner-hf trian, which is no command: choose one of .*train"):
        check_plan([Cell("x", "trian", "r", "c")])


def test_dry_run_and_status_show_a_started_cells_saved_step(tmp_path, capsys):
    """An interrupted experiment: the dry run prices a started cell by what is left of it and shows the step its
    last complete checkpoint saved; the status table shows it too, and a stopped cell its reason."""
    from crossner_hf.grid import grid_lock, status_table
    from crossner_hf.reproduce.run import dry_run_text

    out = tmp_path / "t2"
    with grid_lock(out):  # a folder a run took (marked ours), then interrupted
        pass

    cells = plan("crossner-table2", "cpu", out, domains=["politics"]).cells
    train = next(c for c in cells if c.command == "train" and not c.deps)
    checkpoint = train.folder(out) / "seed-555" / "checkpoint-190"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 190, "max_steps": 722}))
    (checkpoint / "checkpoint_complete.json").write_text("{}")
    later = train.folder(out) / "seed-555" / "checkpoint-200"  # not complete: not what a rerun continues from
    later.mkdir()
    (later / "trainer_state.json").write_text(json.dumps({"global_step": 200, "max_steps": 722}))
    text = dry_run_text(cells, out)
    assert f"{train.name}: waiting at step 190 of 722" in text and "left, at step 190 of 722" in text
    # its runs took 60 s for 190 of 722 steps: the minutes left are what is left of it at that pace
    (train.folder(out) / "runs.jsonl").write_text(json.dumps({"seconds": 60.0, "status": "waiting"}) + "\n")
    assert f"(~{60 / (190 / 722) / 60 * (1 - 190 / 722):.1f} min left, at step 190 of 722" in dry_run_text(cells,
                                                                                                   out)
    assert "step 190 of 722" in status_table(cells, out)
    (train.folder(out) / ".stopped").write_text(json.dumps({"reason": "the time budget ended"}))
    assert "step 190 of 722 (the time budget ended)" in status_table(cells, out)
    from crossner_hf.cli import main as cli_main

    assert cli_main(["reproduce", "crossner-table2", "--scale", "cpu", "--domains", "politics", "--output_dir",
                     str(out), "--status"]) == 0
    err = capsys.readouterr().err
    assert "step 190 of 722 (the time budget ended)" in err and "1 stopped" in err and "min of runs left" in err


def _vectors_file(path: Path, width: int, key: str = "the") -> Path:
    path.write_text(f"{key} {' '.join(['0.1'] * width)}\n")
    return path


RNN = ("bilstm-crf", "cdlm", "multicell")


def test_rnn_cells_read_the_papers_vectors_or_are_missing_input(tmp_path, capsys):
    """At --scale paper every BiLSTM-CRF, Coach, CDLM and multi-cell cell reads the vectors file of its size
    (GloVe 300d + CharNGram for CrossNER's baselines, 002:429-431; GloVe 100d for CDLM, 004:835-837, and the
    multi-cell LSTM); without the file the cell is 'missing input' naming the flag, never a random start."""
    from crossner_hf.cli import main

    g100 = _vectors_file(tmp_path / "glove.6B.100d.txt", 100)
    g300 = _vectors_file(tmp_path / "glove.6B.300d.txt", 300)
    chars = _vectors_file(tmp_path / "charNgram.txt", 100, "2gram-#BEGIN#t")
    bare = plan("crossner-table2", "paper", tmp_path / "a", domains=["politics"])
    status = grid_status(bare.cells, tmp_path / "a")
    rnn = [c for c in bare.cells if c.command in RNN]
    assert len(rnn) == 7 * 3 and {status[c.name] for c in rnn} == {"missing input"}
    assert status["politics/direct-wo-dapt/seed-555"] == "waiting" and bare.notes == ()
    needs = {c.row: sorted(i.split(" FILE")[0] for i in c.inputs if i.startswith("--") and " FILE" in i)
             for c in rnn}
    assert needs == {"BiLSTM-CRF (word)": ["--word_vectors_300d"], "Coach (word)": ["--word_vectors_300d"],
                     "BiLSTM-CRF (word + char)": ["--char_ngram_vectors", "--word_vectors_300d"],
                     "Coach (word + char)": ["--char_ngram_vectors", "--word_vectors_300d"],
                     "Jia, Liang and Zhang (2019)": ["--word_vectors"], "Jia and Zhang (2020)": ["--word_vectors"],
                     "Jia and Zhang (2020) + DAPT (span, integrated)": ["--word_vectors"]}

    assert main(["reproduce", "crossner-table2", "--scale", "paper", "--domains", "politics", "--dry_run",
                 "--output_dir", str(tmp_path / "b"), "--word_vectors", str(g100), "--word_vectors_300d", str(g300),
                 "--char_ngram_vectors", str(chars)]) == 0
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if line.startswith("    crossner-hf ")]
    for line in lines:
        if " bilstm-crf " in line:
            assert f"--word_vectors {g300}" in line
            assert (f"--char_ngram_vectors {chars}" in line) == ("--char_ngram_dim 0" not in line)
        elif " cdlm " in line or " multicell " in line:
            assert f"--word_vectors {g100}" in line and "--char_ngram_vectors" not in line
        else:
            assert "_vectors" not in line
    assert sum(" bilstm-crf " in line for line in lines) == 4 * 3 and "MISSING INPUT --word" not in printed
    vectors = RNNVectors.from_flags("paper", word_vectors=str(g100), word_vectors_300d=str(g300),
                                    char_ngram_vectors=str(chars))
    given = plan("crossner-table2", "paper", tmp_path / "b", domains=["politics"], vectors=vectors)
    status = grid_status(given.cells, tmp_path / "b")
    assert {status[c.name] for c in given.cells if c.command in RNN and c.row != "Jia, Liang and Zhang (2019)"} == {
        "waiting", "blocked"}  # the + DAPT row waits for its DAPT cell, whose corpus is not given

    for experiment in ("cdlm-table3", "cdlm-table4", "cdlm-table5", "cdlm-fig6", "cdlm-fig8"):
        cells = plan(experiment, "paper", tmp_path / "c", domains=["politics"]).cells
        assert cells and all(any(i.startswith("--word_vectors FILE") for i in c.inputs) for c in cells), experiment
        cells = plan(experiment, "paper", tmp_path / "c", domains=["politics"], vectors=vectors).cells
        assert all(c.flags()[c.flags().index("--word_vectors") + 1] == str(g100) and not any(
            "_vectors FILE" in i for i in c.inputs) for c in cells), experiment


def test_random_vectors_are_an_opt_in_cut_the_table_names(tmp_path):
    """--random_vectors runs the RNN rows without the files and the notes say so; at cpu scale random vectors
    are the listed cut unless the files are given; the flags refuse a file of the wrong size, smoke scale and
    random vectors beside files, each in one line."""
    cut = RNNVectors.from_flags("paper", random_vectors=True)
    grid = plan("crossner-table2", "paper", tmp_path, domains=["politics"], rows=["Coach (word)", DIRECT],
                vectors=cut)
    assert not any("_vectors" in " ".join(c.flags()) or any("_vectors" in i for i in c.inputs) for c in grid.cells)
    assert len(grid.notes) == 1 and grid.notes[0].startswith("word vectors: random for the RNN rows (Coach (word))")
    assert "--random_vectors" in grid.notes[0] and "002:429-431" in grid.notes[0]
    assert plan("cdlm-fig6", "paper", tmp_path, vectors=cut).notes[0].startswith(
        "word vectors: random for the RNN rows (STM-TARGET, Ours)")
    g300 = _vectors_file(tmp_path / "g300.txt", 300)
    cpu = plan("crossner-table2", "cpu", tmp_path, domains=["politics"], rows=["Coach (word)"],
               vectors=RNNVectors.from_flags("cpu", word_vectors_300d=str(g300)))
    assert "--word_vectors" in cpu.cells[0].flags() and not any("word vectors" in n for n in cpu.notes)
    with pytest.raises(ValueError, match="--word_vectors .*g300.txt: its first vector has 300 values.*100-d"):
        RNNVectors.from_flags("paper", word_vectors=str(g300))
    with pytest.raises(ValueError, match="--scale smoke trains 16-d RNNs"):
        RNNVectors.from_flags("smoke", word_vectors_300d=str(g300))
    with pytest.raises(ValueError, match="--random_vectors with --word_vectors_300d"):
        RNNVectors.from_flags("paper", word_vectors_300d=str(g300), random_vectors=True)


def test_plans_follow_the_release_and_the_papers_sources(tmp_path):
    """The politics BiLSTM-CRF runs at the release's --dropout 0.3 (its README.md:93; run.sh's 0.5 elsewhere, the
    preset's); NER-BERT's borrowed CDLM row names CDLM Table 3's FINAL row for BioCG / BioPC (003:97, 004:905);
    nerbert-fig3's cells name their domain with --domain (--config is a YAML file of flags)."""
    from crossner_hf.reproduce.experiments import BORROWED

    grid = plan("crossner-table2", "paper", tmp_path, domains=["politics", "music"])
    dropout = {(c.row, c.column): c.flags()[c.flags().index("--dropout") + 1] if "--dropout" in c.flags() else None
               for c in grid.cells if c.command == "bilstm-crf"}
    assert {k: v for k, v in dropout.items() if v} == {("BiLSTM-CRF (word)", "politics"): "0.3",
                                                       ("BiLSTM-CRF (word + char)", "politics"): "0.3"}
    assert "--dropout" not in " ".join(c for cell in plan("crossner-table2", "cpu", tmp_path, domains=["politics"]
                                                          ).cells for c in cell.flags())
    borrowed = BORROWED["nerbert-table2"]["pretrain-finetune / CDLM"]
    assert "004:905" in borrowed and "cdlm-table3 row 'FINAL'" in borrowed and "crossner-table2" in borrowed
    fig3 = plan("nerbert-fig3", "cpu", tmp_path, nerbert_corpus=str(tmp_path))
    tsne = [c for c in fig3.cells if c.command == "plot-entities"]
    assert tsne and all("--config" not in c.flags() and c.flags()[c.flags().index("--domain") + 1] == "politics"
                        for c in tsne)


def _user_folder(tmp_path: Path, crossner_data_dir: Path) -> Path:
    """A user's JSON Lines folder: politics' first four sentences of each split."""
    from crossner_hf.data.conll import read_conll

    data = tmp_path / "mydata"
    data.mkdir()
    for split, name in (("train", "train"), ("dev", "validation"), ("test", "test")):
        rows = read_conll(crossner_data_dir / "politics" / f"{split}.txt", None)[:4]
        (data / f"{name}.jsonl").write_text("".join(json.dumps({"tokens": r["tokens"], "ner_tags": r["ner_tags"]})
                                                    + "\n" for r in rows), encoding="utf-8")
    return data


def test_adapt_checks_its_cells_settings_by_the_same_plan_check(tmp_path, crossner_data_dir, monkeypatch, capsys):
    """adapt and reproduce plan through one check: a misspelt setting in a search's cell fails adapt (its dry run
    too) in one line, before its data copy or any cell."""
    import dataclasses

    from crossner_hf.cli import main as cli_main
    from crossner_hf.selection import run as selection_run

    data = _user_folder(tmp_path, crossner_data_dir)
    real = selection_run.plan_search

    def misspelt(*args, **kwargs):
        methods, cells, name, folder = real(*args, **kwargs)
        bad = dataclasses.replace(cells[0], settings={**cells[0].settings, "learning_rat": "1e-4"})
        return methods, [bad, *cells[1:]], name, folder

    monkeypatch.setattr(selection_run, "plan_search", misspelt)
    out = tmp_path / "out"
    for dry in (["--dry_run"], []):
        assert cli_main(["adapt", "--dataset_dir", str(data), "--model_name_or_path", "m", "--budget", "smoke",
                         "--methods", "direct", "--output_dir", str(out), *dry]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--learning_rat (did you mean --learning_rate?)" in err[0], err
        assert not out.exists()


def test_adapt_status_of_an_interrupted_search_shows_each_started_cells_saved_step(tmp_path, crossner_data_dir,
                                                                                    capsys):
    """``adapt --status`` (the grid study's status): a stopped cell with its saved step and reason, a cell killed
    after a checkpoint with its saved step, and the minutes left."""
    from crossner_hf.cli import main as cli_main
    from crossner_hf.grid.study import write_plan
    from crossner_hf.selection.candidates import plan_record
    from crossner_hf.selection.config import AdaptConfig
    from crossner_hf.selection.run import as_target, plan_search

    data = _user_folder(tmp_path, crossner_data_dir)
    out = tmp_path / "out"
    config = AdaptConfig(budget="smoke", methods="direct,joint", output_dir=str(out))
    target = as_target(str(data))
    methods, cells, _, _ = plan_search("m", target, config, out, None, None, str(crossner_data_dir))
    record = plan_record("m", target.name, config, None, methods, cells)
    write_plan(out, {k: v for k, v in record.items() if k != "cells"}, cells)
    for cell, step, reason in ((cells[0], 1, "behind the leader at dev check 1"), (cells[1], 2, None)):
        checkpoint = cell.folder(out) / f"seed-{cell.seed}" / f"checkpoint-{step}"
        checkpoint.mkdir(parents=True)
        (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": 3}))
        (checkpoint / "checkpoint_complete.json").write_text("{}")
        if reason:
            (cell.folder(out) / ".stopped").write_text(json.dumps({"reason": reason}))
    assert cli_main(["adapt", "--status", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"- {cells[0].name}: stopped at step 1 of 3 (behind the leader at dev check 1)" in text, text
    assert f"- {cells[1].name}: waiting at step 2 of 3" in text, text
    assert "1 stopped" in text and "min of runs left" in text


def _finished(cell: Cell, out: Path, dev_f1: float) -> None:
    """A cell as a finished run leaves it: its ``cell.json`` and a results file with its dev F1."""
    from crossner_hf.results import shared_record

    folder = cell.folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cell.json").write_text(json.dumps(cell.record(out)))
    (folder / cell.result_file).write_text(json.dumps(shared_record(
        "finetune", model="m", dataset=cell.column, seeds=[cell.seed], dev={"overall_f1": dev_f1},
        test={"overall_f1": dev_f1}, seconds=1.0)))


RACED_ROWS = ["--rows", "direct / w/o DAPT", "joint / w/o DAPT", "--seeds", "1", "2"]


def test_reproduce_races_only_when_asked_and_the_default_runs_every_cell(tmp_path, monkeypatch):
    """``--prune`` is off by default: the grid gets no controller (every cell in full, as before racing existed)
    and the table names no race; ``--prune on`` hands the grid the race's controller, ``--time_budget`` too."""
    import crossner_hf.reproduce.run as run_module
    from crossner_hf.cli import main as cli_main
    from crossner_hf.grid.race import RaceController
    from crossner_hf.reproduce.racing import ColumnRace

    given = []
    monkeypatch.setattr(run_module, "run_grid", lambda cells, out, options, *, controller=None: given.append(
        controller) or {})
    out = tmp_path / "t2"
    argv = ["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics", "--model", "m", *RACED_ROWS,
            "--output_dir", str(out)]
    cli_main(argv)
    assert given == [None] and not (out / "race.json").exists()
    assert "Raced" not in (out / "table.md").read_text()
    cli_main([*argv, "--prune", "off"])
    assert given[-1] is None
    cli_main([*argv, "--prune", "on"])
    assert isinstance(given[-1], RaceController) and isinstance(given[-1].race, ColumnRace)
    assert {t.method for t in given[-1].race.trials.values()} == {"politics: direct / w/o DAPT",
                                                                  "politics: joint / w/o DAPT"}
    assert sorted(t.index for t in given[-1].race.trials.values()) == [0, 0, 1, 1]
    cli_main([*argv, "--time_budget", "30"])
    assert isinstance(given[-1], RaceController) and not given[-1].race.policy.prune
    assert given[-1].race.policy.deadline is not None


def test_reproduce_prune_on_skips_a_row_that_cannot_win_and_says_why(tmp_path, capsys):
    """A smoke experiment raced (``--prune on``): a row whose first seed trails the column's leader by more than the
    margin gets no second seed; the status table shows it skipped with the race's reason and ``table.md`` says what
    was cut. A row is compared only within its column."""
    from crossner_hf.cli import main as cli_main
    from crossner_hf.grid import Status, grid_lock, grid_status

    out = tmp_path / "t2"
    with grid_lock(out):  # a folder the grid made (ours), where earlier seeds finished
        pass
    cells = {c.name: c for c in plan("crossner-table2", "smoke", out, domains=["politics"], seeds=[1, 2],
                                     rows=["direct / w/o DAPT", "joint / w/o DAPT"]).cells}
    assert sorted(cells) == ["politics/direct-wo-dapt/seed-1", "politics/direct-wo-dapt/seed-2",
                             "politics/joint-wo-dapt/seed-1", "politics/joint-wo-dapt/seed-2"]
    _finished(cells["politics/direct-wo-dapt/seed-1"], out, 0.90)
    _finished(cells["politics/direct-wo-dapt/seed-2"], out, 0.88)
    _finished(cells["politics/joint-wo-dapt/seed-1"], out, 0.10)
    argv = ["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics", *RACED_ROWS,
            "--output_dir", str(out)]
    cli_main([*argv, "--prune", "on"])
    err = capsys.readouterr().err
    status = grid_status(list(cells.values()), out)
    assert status["politics/joint-wo-dapt/seed-2"] == Status.SKIPPED, err
    line = next(row for row in err.splitlines() if row.startswith("politics/joint-wo-dapt/seed-2"))
    assert "skipped" in line and "not run: politics: joint / w/o DAPT cannot win (10.0 vs politics: direct / " \
                                 "w/o DAPT 89.0 on dev" in line, line
    table = (out / "table.md").read_text()
    assert "Raced (--prune on)" in table and "1 never started" in table
    race = json.loads((out / "race.json").read_text())
    assert list(race["skipped"]) == ["politics/joint-wo-dapt/seed-2"] and race["prune"] is True


def test_reproduce_time_budget_ends_the_run_with_what_finished_and_says_so(tmp_path, capsys):
    """``--time_budget`` already spent when the grid starts: no cell starts, each shows why, the table says so."""
    from crossner_hf.cli import main as cli_main
    from crossner_hf.grid import Status, grid_status

    out = tmp_path / "t2"
    argv = ["reproduce", "crossner-table2", "--scale", "smoke", "--domains", "politics", *RACED_ROWS,
            "--output_dir", str(out)]
    assert cli_main([*argv, "--time_budget", "0.0001"]) == 0
    err = capsys.readouterr().err
    cells = plan("crossner-table2", "smoke", out, domains=["politics"], seeds=[1, 2],
                 rows=["direct / w/o DAPT", "joint / w/o DAPT"]).cells
    assert set(grid_status(cells, out).values()) == {Status.SKIPPED}, err
    assert err.count("not started: the run's controller ended it first; a rerun starts it") == 4, err
    assert "a time budget (--time_budget) was reached" in (out / "table.md").read_text()
    assert cli_main([*argv, "--time_budget", "0"]) == 2
    assert capsys.readouterr().err.strip().endswith("--time_budget 0: give the minutes the run may take (more than 0).")


def test_a_raced_row_is_compared_only_with_its_own_columns_rows():
    """``ColumnRace``: a row far behind another column's leader (a harder domain) still gets its second seed and is
    not stopped; behind its own column's leader by more than the margin, it gets neither."""
    from crossner_hf.grid.race import RacePolicy, Trial
    from crossner_hf.reproduce.racing import ColumnRace

    def trials(music_direct: float, history: list | None = None) -> list[Trial]:
        return [Trial("p/joint/1", "politics: joint", 0, final=90.0, history=[(0.5, 88.0), (1.0, 90.0)]),
                Trial("m/joint/1", "music: joint", 0, final=52.0, history=[(0.5, 50.0), (1.0, 52.0)]),
                Trial("m/direct/1", "music: direct", 0, final=music_direct),
                Trial("m/direct/2", "music: direct", 1, history=history or [])]

    columns = {"politics: joint": "politics", "music: joint": "music", "music: direct": "music"}
    near = ColumnRace(trials(51.0), RacePolicy(), columns)
    assert near.ready(["m/direct/2"]) == ["m/direct/2"] and near.can_win("music: direct") is None
    far = ColumnRace(trials(40.0), RacePolicy(), columns)
    assert far.ready(["m/direct/2"]) == [] and "vs music: joint 52.0" in far.skipped_cells["m/direct/2"]
    # the stop rule too: at 60% of its budget, 22.0 is judged against music's leader there (50.0), not politics'
    behind = ColumnRace(trials(51.0, [(0.4, 20.0), (0.5, 21.0), (0.6, 22.0)]), RacePolicy(), columns)
    assert "22.0 vs music: joint 50.0 at the same share" in behind.should_stop("m/direct/2")
