"""The bad-input battery: each case is one line on stderr (no traceback), exit code 2, the file named,
and no partial output left behind. Commands run as a user runs them (``python -m crossner_hf.cli``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory, tiny_bert_dir):
    """A tiny token classifier with politics labels (untrained head: enough for error paths)."""
    from crossner_hf.data.labels import LABELS
    from crossner_hf.modeling.heads import token_classifier_from_pretrained
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("ner") / "model"
    token_classifier_from_pretrained(tiny_bert_dir, LABELS["politics"]).save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, tiny_bert_dir):
    root = tmp_path_factory.mktemp("bad")
    (root / "headless").symlink_to(tiny_bert_dir)  # an encoder without a token-classification head
    (root / "empty.txt").write_text("")
    (root / "binary.txt").write_bytes(b"ab\x91\xff\x00cd\n")
    (root / "notab.txt").write_text("Obama B-politician\n\n")
    (root / "unknown.txt").write_text("Obama\tB-wizard\n\n")
    (root / "huge.txt").write_text("x" * 5_000_000 + "\n\n")  # a 5 MB line without a tab (issue 55)
    data = root / "data"
    for config in ("politics",):
        (data / config).mkdir(parents=True)
        for split in ("train.txt", "dev.txt", "test.txt"):
            (data / config / split).write_text("")
    readonly = root / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    _broken_user_folders(root)
    return root


def _broken_user_folders(root):
    """A user's folders with one defect each (issue 48): every one must be one line naming file:line."""
    import json

    import pandas as pd

    rows = [{"words": ["Popular", "approaches", "use", "Python"], "labels": ["O", "O", "O", "B-x_programlang"]},
            {"words": ["Ada", "wrote", "it"], "labels": ["B-x_person", "O", "O"]}]
    lines = [json.dumps(r) for r in rows]
    for name, train in (("trunc", [lines[0], lines[1][:30]]),  # a truncated JSON Lines line
                        ("nonbio", [lines[0], json.dumps({"words": ["Rust"], "labels": ["x_programlang"]})]),
                        ("notags", [lines[0], json.dumps({"words": ["Rust"], "labels": None})])):
        (root / name).mkdir()
        for split in ("train", "validation", "test"):
            (root / name / f"{split}.jsonl").write_text("\n".join(train if split == "train" else lines) + "\n")
    quote = root / "quote"
    quote.mkdir()
    frame = pd.DataFrame(rows)
    for split in ("train", "validation", "test"):
        frame.to_csv(quote / f"{split}.csv", index=False)
    # an unbalanced quote: the second row's words cell opens a quote it never closes
    written = (quote / "train.csv").read_text().splitlines()
    (quote / "train.csv").write_text("\n".join([*written[:2], '"' + written[2].replace('"', "")]) + "\n")
    deep = root / "deep"  # a list cell nested 5,000 levels deep (issue 55): json.loads recursed out
    deep.mkdir()
    for split in ("train", "validation", "test"):
        frame.to_csv(deep / f"{split}.csv", index=False)
    with open(deep / "train.csv", "a", encoding="utf-8") as f:
        f.write('"' + "[" * 5000 + "]" * 5000 + '","[""O""]"\n')
    (root / "emptytrain").mkdir()  # issue 66: an empty train.jsonl was a StopIteration traceback
    for split in ("train", "validation", "test"):
        (root / "emptytrain" / f"{split}.jsonl").write_text("" if split == "train" else "\n".join(lines) + "\n")
    huge = {"words": ["Rust"], "labels": ["Q" * 5_000_000]}  # issue 66: a 5 MB tag was quoted whole, 15 MB of output
    tab = {"words": ["Rust"], "labels": ["B-program\tlang"]}  # a type its CoNLL file could not hold
    for name, bad in (("bigtag", huge), ("tabtype", tab)):
        for suffix in ("jsonl", "csv", "parquet"):
            folder = root / f"{name}-{suffix}"
            folder.mkdir()
            for split in ("train", "validation", "test"):
                frame_rows = pd.DataFrame(rows + [bad] if split == "train" else rows)
                if suffix == "jsonl":
                    frame_rows.to_json(folder / f"{split}.jsonl", orient="records", lines=True)
                elif suffix == "csv":
                    frame_rows.to_csv(folder / f"{split}.csv", index=False)
                else:
                    frame_rows.to_parquet(folder / f"{split}.parquet")
    parquet = root / "parquet"
    parquet.mkdir()
    for split in ("train", "validation", "test"):
        frame.to_parquet(parquet / f"{split}.parquet")
    (parquet / "test.parquet").write_bytes((parquet / "test.parquet").read_bytes()[:40])  # cut short


def _run(args, cwd, monkeypatch=None, capsys=None):
    """The CLI as a user runs it: in a fresh interpreter, or (with pytest's fixtures) through the same
    ``crossner_hf.cli.main`` in this one, which saves an interpreter start per case."""
    if capsys is None:
        return subprocess.run([sys.executable, "-m", "crossner_hf.cli", *map(str, args)], capture_output=True,
                              text=True, timeout=300, env={**ENV, "CROSSNER_HF_CACHE": str(cwd / "cache")}, cwd=cwd)
    from crossner_hf.cli import main

    for name, value in {**ENV, "CROSSNER_HF_CACHE": str(cwd / "cache")}.items():
        if name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TOKENIZERS_PARALLELISM", "CROSSNER_HF_CACHE"):
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.out, out.err)


CASES = {
    # name: (argv builder, text the message must hold, output that must not exist afterwards)
    "predict: empty CoNLL": (lambda f, m: ["predict", "--model", m, "--conll", f / "empty.txt", "--output", f / "o1.conll"],
                             "empty.txt", "o1.conll"),
    "predict: binary input file": (lambda f, m: ["predict", "--model", m, "--input_file", f / "binary.txt",
                                                 "--output", f / "o2.jsonl"], "binary.txt", "o2.jsonl"),
    "predict: missing tab": (lambda f, m: ["predict", "--model", m, "--conll", f / "notab.txt", "--output", f / "o3"],
                             "notab.txt", "o3"),
    "predict: 5 MB line without a tab": (lambda f, m: ["predict", "--model", m, "--conll", f / "huge.txt", "--output",
                                                       f / "o6"], "huge.txt, line 1: expected exactly 2 columns", "o6"),
    "report: CSV list cell nested 5,000 deep": (lambda f, m: ["report", "--model", m, "--dataset_dir", f / "deep",
                                                              "--output", f / "r3.html"],
                                                "deep/train.csv:4: the 'words' cell holds", "r3.html"),
    "predict: unknown tag": (lambda f, m: ["predict", "--model", m, "--conll", f / "unknown.txt", "--output", f / "o4"],
                             "unknown.txt", "o4"),
    "predict: unwritable output": (lambda f, m: ["predict", "--model", m, "x", "--output", f / "readonly" / "o.jsonl"],
                                   "readonly", "readonly/o.jsonl"),
    "predict: missing model": (lambda f, m: ["predict", "--model", f / "no-such-model", "x"], "no-such-model", None),
    "predict: model without a head": (lambda f, m: ["predict", "--model", f / "headless", "x", "--output",
                                                    f / "o5.jsonl"], "headless", "o5.jsonl"),
    "reproduce: unknown row": (lambda f, m: ["reproduce", "crossner-table2", "--rows", "no such row", "--output_dir",
                                             f / "rp"], "no such row", "rp"),
    "reproduce: unwritable output": (lambda f, m: ["reproduce", "crossner-table2", "--scale", "smoke", "--output_dir",
                                                   f / "readonly" / "rp"], "readonly", "readonly/rp"),
    "push: not a model or dataset folder": (lambda f, m: ["push", f / "data", "user/x"], "data", None),
    "build-dataset: empty CoNLL": (lambda f, m: ["build-dataset", "--data_dir", f / "data", "--configs", "politics",
                                                 "--output_dir", f / "ds"], "train.txt", "ds/README.md"),
    "stats: unwritable output": (lambda f, m: ["stats", "--data_dir", f / "data", "--configs", "politics",
                                               "--output_dir", f / "readonly" / "stats"], "readonly", "readonly/stats"),
    "report: unwritable output": (lambda f, m: ["report", "--model", m, "--domain", "politics", "--output",
                                                f / "readonly" / "r.html"], "readonly", "readonly/r.html"),
    "report: truncated JSON Lines line": (lambda f, m: ["report", "--model", m, "--dataset_dir", f / "trunc",
                                                        "--output", f / "r1.html"], "trunc/train.jsonl:2: ", "r1.html"),
    "report: unbalanced CSV quote": (lambda f, m: ["report", "--model", m, "--dataset_dir", f / "quote", "--output",
                                                   f / "r2.html"], "quote/train.csv:3: ", "r2.html"),
    "train: tag without B-/I-": (lambda f, m: ["train", "--model", m, "--dataset_dir", f / "nonbio", "--output_dir",
                                               f / "t3"], "not BIO: `x_programlang` at ", "t3"),
    "confusion: row without tags": (lambda f, m: ["confusion", "--model", m, "--dataset_dir", f / "notags",
                                                  "--output_dir", f / "c4"], "notags/train.jsonl:2: no 'labels'",
                                    "c4/confusion.txt"),
    "export: broken Parquet": (lambda f, m: ["export", "--model", m, "--output_dir", f / "x5", "--dataset_dir",
                                             f / "parquet"], "parquet/test.parquet: not a readable Parquet", "x5"),
    "train: empty train.jsonl": (lambda f, m: ["train", "--model", m, "--dataset_dir", f / "emptytrain",
                                               "--output_dir", f / "t6"], "emptytrain/train.jsonl: no rows", "t6"),
    **{f"train: a 5 MB tag in {kind}": (lambda f, m, kind=kind: [
        "train", "--model", m, "--dataset_dir", f / f"bigtag-{kind}", "--output_dir", f / f"t7{kind}"],
        f"not BIO: `{'Q' * 48}... (5,000,000 characters)` at ", f"t7{kind}") for kind in ("jsonl", "csv", "parquet")},
    **{f"train: a TAB in a type name in {kind}": (lambda f, m, kind=kind: [
        "train", "--model", m, "--dataset_dir", f / f"tabtype-{kind}", "--output_dir", f / f"t8{kind}"],
        f"tabtype-{kind}/train.{kind}{':4' if kind == 'csv' else ':3' if kind == 'jsonl' else ' row 3'}: the type "
        "of 'B-program\\tlang' holds a TAB", f"t8{kind}") for kind in ("jsonl", "csv", "parquet")},
    "confusion: unwritable output": (lambda f, m: ["confusion", "--model", m, "--domain", "politics", "--output_dir",
                                                   f / "readonly" / "c"], "readonly", "readonly/c"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_and_leaves_nothing(case, bad_files, ner_model, monkeypatch, capsys):
    build, needle, leftover = CASES[case]
    if "unwritable" in case and os.geteuid() == 0:
        # root ignores folder permissions: make the "folder" a file instead, which nobody can write into
        blocker = bad_files / "blocked"
        blocker.write_text("a file where a folder should be")
        argv = [str(a).replace(str(bad_files / "readonly"), str(blocker)) for a in build(bad_files, ner_model)]
        needle, leftover = "blocked", None
    else:
        argv = build(bad_files, ner_model)
    res = _run(argv, bad_files, monkeypatch, capsys)
    assert res.returncode == 2, (case, res.returncode, res.stderr[-1500:])
    lines = [line for line in res.stderr.strip().splitlines() if line.strip() and not line.startswith("INFO ")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, (case, res.stderr[-1500:])
    assert len(lines[0]) < 2000, (case, len(lines[0]))  # a short excerpt, never the whole offending input
    assert needle in lines[0], (case, lines[0])
    if leftover:
        assert not (bad_files / leftover).exists(), (case, leftover)
    assert not list(bad_files.glob(".*.tmp")), "a temporary output was left behind"


def test_debug_shows_the_traceback(bad_files, ner_model):
    res = _run(["predict", "--model", ner_model, "--conll", bad_files / "empty.txt", "--debug"], bad_files)
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_hub_name_offline_says_so(bad_files, monkeypatch, capsys):
    res = _run(["train", "--model_name_or_path", "bert-base-cased", "--domain", "politics", "--data_dir",
                bad_files / "data", "--output_dir", bad_files / "t"], bad_files, monkeypatch, capsys)
    lines = [line for line in res.stderr.strip().splitlines() if not line.startswith(("INFO ", "WARNING "))]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-1500:]
    assert "the Hub is offline" in lines[0] and "local model folder" in lines[0]


def test_an_open_progress_bar_is_closed_before_the_error_line(capsys):
    """Issue 48: the one-line error ends the output; no bar prints its last frame after it."""
    from tqdm import tqdm

    from crossner_hf.cli import run_command
    from crossner_hf.commands.data import make_parser

    bars = []

    def failing(args):
        bars.append(tqdm(total=10, desc="Generating train split"))
        bars[0].update(3)
        raise ValueError("js/train.jsonl:2: not a complete JSON object")

    assert run_command(make_parser, failing, ["--domain", "politics"]) == 2
    err = capsys.readouterr().err.rstrip("\n").splitlines()
    assert err[-1] == "crossner-hf data: error: js/train.jsonl:2: not a complete JSON object" and bars[0].disable


def test_the_pre_scan_reads_files_as_streams(tmp_path, monkeypatch):
    """Issue 55: JSON Lines and CSV files are scanned line by line, never read whole (a read of the whole file
    fails this test), with the same rows, places and problems."""
    from pathlib import Path

    from crossner_hf.data.files import scan_file

    (tmp_path / "train.jsonl").write_text('{"tokens": ["Ada"]}\n\n{"tokens": ["Bob"]}\n{"tokens": [\n')
    (tmp_path / "train.csv").write_text('\ufefftokens,ner_tags\n"[""Ada""]","[""O""]"\n"[""a\nb""]","[""O""]"\n')
    (tmp_path / "bad.jsonl").write_bytes(b'{"tokens": ["Ada"]}\n{"tokens": ["\xff"]}\n')
    (tmp_path / "rows.json").write_text('[{"tokens": ["Ada"]}, {"tokens": ["Bob"]}]')

    def whole(*args, **kwargs):
        raise AssertionError("a file was read whole")

    monkeypatch.setattr(Path, "read_bytes", whole)
    monkeypatch.setattr(Path, "read_text", whole)
    rows, problems = scan_file(tmp_path / "train.jsonl", "js/train.jsonl")
    assert rows.lines == [1, 3] and problems == [
        'js/train.jsonl:4: not a complete JSON object (Expecting value: column 13); each line holds one object, '
        'e.g. {"tokens": ["Ada", "Lovelace"], "ner_tags": ["B-person", "I-person"]}']
    rows, problems = scan_file(tmp_path / "train.csv", "c/train.csv")
    assert rows.lines == [2, 3] and problems == []  # the second row's quoted cell spans two lines
    rows, problems = scan_file(tmp_path / "bad.jsonl", "js/bad.jsonl")
    assert problems == ["js/bad.jsonl:2: bytes b'\\xff' are not UTF-8 (invalid start byte); save the file as UTF-8"]
    assert scan_file(tmp_path / "rows.json", "rows.json")[0].count == 2


def _many_types(n_types: int, n_sentences: int):
    import random

    rng = random.Random(0)
    types = [f"t{i}" for i in range(n_types)]
    gold, pred = [], []
    for _ in range(n_sentences):
        g, p = ["O"] * 12, ["O"] * 12
        for k in range(0, 12, 3):
            t = rng.choice(types)
            g[k], p[k] = "B-" + t, "B-" + (t if rng.random() < 0.6 else rng.choice(types))
        gold.append(g)
        pred.append(p)
    return gold, pred, [[f"w{i}" for i in range(12)] for _ in gold]


def test_a_2000_type_report_and_confusion_stay_bounded():
    """Issue 55: per-type tables and matrices grow with the square of the types (400 types were 10 MB of HTML); the
    top types are shown one by one, the rest in one "other types" row and column, and the page says so."""
    import re

    from crossner_hf.evaluation.entity_analysis import confusion_table
    from crossner_hf.evaluation.hierarchy import MAX_TYPES, OTHER_TYPES
    from crossner_hf.evaluation.report import build_report

    gold, pred, tokens = _many_types(2000, 600)
    html = build_report(gold, pred, tokens=tokens, n_boot=20)
    matrix = html.split('data-testid="confusion-table"', 1)[1].split("</table>", 1)[0]
    assert matrix.count("<tr>") == MAX_TYPES + 3  # the header, the top types, "other types", "no entity"
    assert len(re.findall(r'data-testid="type-row-', html)) == MAX_TYPES + 1
    assert 'data-testid="types-folded"' in html and OTHER_TYPES in html
    assert f'data-types="{OTHER_TYPES}' in html or f'|{OTHER_TYPES}' in html  # the type filter finds folded errors
    assert len(html) < 2_000_000  # what grows is the list of sentences with an error, linear in the data
    table = confusion_table(gold, pred)
    assert len(table.rows) <= MAX_TYPES + 2 and len(table.columns) == MAX_TYPES + 2
    assert len(table.format()) < 20_000 and len(table.to_dict()["folded_types"]) > 1500
    assert table.type_errors == sum(g[k] != p[k] for g, p in zip(gold, pred) for k in range(0, 12, 3))
    few_gold, few_pred, few_tokens = _many_types(5, 40)  # a few types: nothing folded, nothing said
    assert 'data-testid="types-folded"' not in build_report(few_gold, few_pred, tokens=few_tokens, n_boot=20)


def test_the_bootstrap_memory_is_flat_and_its_draws_unchanged():
    """resampled_f1 draws its resamples a block at a time: the same draws as one (n_boot, sentences) array, in a
    peak memory that does not grow with n_boot x sentences (20,000 sentences x 1,000 resamples: 160 MB of
    indices at once before)."""
    import tracemalloc

    import numpy as np

    from crossner_hf.evaluation.report import analysis

    rng = np.random.default_rng(1)
    counts = tuple(rng.integers(0, 4, size=20_000) for _ in range(3))
    idx = np.random.default_rng(5).integers(0, 300, size=(200, 300))
    small = tuple(c[:300] for c in counts)
    t, p, g = (c[idx].sum(1) for c in small)
    prec, rec = t / p, t / g
    assert np.allclose(analysis.resampled_f1([small], n_boot=200, seed=5), 2 * prec * rec / (prec + rec))
    tracemalloc.start()
    analysis.resampled_f1([counts], n_boot=1000, seed=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 48 * 2**20, peak
