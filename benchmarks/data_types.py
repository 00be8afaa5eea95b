"""``crossner-hf data`` (``check_dataset`` and its printed summary) on a folder of many entity types: its time should
grow with the types, not their square (issue 66: 5,000 types took 22.7 s, 15,000 took 66 s, in the sort of the
per-type table by ``list.index``). Side by side: the same summary's type sort as it was (a ``list.index`` per type).

Usage:
    python benchmarks/data_types.py [--types 1500,15000] [--repeats 3]

Each folder is JSON Lines with two sentences per type in train, one in validation and test; the check is timed
whole (reading, the checks, the summary printed to a string), medians over ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def write_folder(folder: Path, n_types: int) -> Path:
    """``n_types`` types (``t0`` ... ``tN``), each in every split: train 2 sentences a type, validation and test 1."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, per_type in (("train", 2), ("validation", 1), ("test", 1)):
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for i in range(n_types):
                row = {"tokens": ["Ada", "met", f"w{i}", "today"], "ner_tags": ["O", "O", f"B-t{i}", "O"]}
                f.write((json.dumps(row) + "\n") * per_type)
    return folder


def old_sort(check) -> float:
    """Seconds of the per-type sort as it was before issue 66 (``labels.index`` for each type)."""
    started = time.perf_counter()
    sorted({t for per in check.types.values() for t in per}, key=lambda t: check.labels.index(f"B-{t}")
           if f"B-{t}" in check.labels else len(check.labels))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--types", default="1500,15000")
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args(argv)

    import datasets

    from crossner_hf.data.check import check_dataset

    datasets.disable_progress_bars()
    sizes = [int(n) for n in opts.types.split(",")]
    times: dict[int, float] = {}
    print(f"{'types':>7} {'check s (median)':>17} {'summary sort s':>15} {'old sort s':>11}")
    with tempfile.TemporaryDirectory() as root:
        for n in sizes:
            folder = write_folder(Path(root) / f"types-{n}", n)
            runs, sorts = [], []
            for _ in range(opts.repeats):
                started = time.perf_counter()
                check = check_dataset(folder)
                text = str(check)
                runs.append(time.perf_counter() - started)
                assert check.ok and len(check.labels) == 2 * n + 1, text[-500:]
                started = time.perf_counter()
                str(check)
                sorts.append(time.perf_counter() - started)
            times[n] = statistics.median(runs)
            old = old_sort(check) if n <= 20_000 else float("nan")
            print(f"{n:>7} {times[n]:>17.2f} {statistics.median(sorts):>15.3f} {old:>11.2f}")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        print(f"{large:,} types / {small:,} types: {times[large] / times[small]:.1f}x the time for "
              f"{large / small:.0f}x the types")


if __name__ == "__main__":
    main()
