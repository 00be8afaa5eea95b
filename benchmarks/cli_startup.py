"""Benchmark: how fast `crossner-hf` answers --help, side by side with what it cannot go below.

Run: python benchmarks/cli_startup.py [--repeats 7]

Rows: `crossner-hf --help` (imports no command); a command's bare --help, rendered by its parser (an empty help
cache each run: `predict` needs transformers' argument parser, `train` and `dapt` their TrainingArguments config,
so torch) and printed from the kept text (`crossner_hf/commands/help_cache.py`: no torch, no transformers), the
same for the shim `python trainer_recipes/finetune.py --help`; the floors `python -c pass` and
`import transformers.hf_argparser`; and the CLI as it was before issue 17 (every command module imported to build
the listing), reproduced by importing them all. Wall time of a fresh interpreter each, median of the repeats.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crossner_hf.cli import COMMANDS

ALL_MODULES = "; ".join(f"import crossner_hf.commands.{m}" for m in COMMANDS.values())
CLI = [sys.executable, "-m", "crossner_hf.cli"]
SHIM = [sys.executable, str(Path(__file__).resolve().parents[1] / "trainer_recipes" / "finetune.py")]
ROWS = {
    "python -c pass (floor)": ([sys.executable, "-c", "pass"], None),
    "import transformers.hf_argparser (floor of a command's parser)": (
        [sys.executable, "-c", "import transformers.hf_argparser"], None),
    "crossner-hf --help": ([*CLI, "--help"], None),
    "crossner-hf predict --help, rendered": ([*CLI, "predict", "--help"], "cold"),
    "crossner-hf train --help, rendered": ([*CLI, "train", "--help"], "cold"),
    "crossner-hf dapt --help, rendered": ([*CLI, "dapt", "--help"], "cold"),
    "trainer_recipes/finetune.py --help, rendered": ([*SHIM, "--help"], "cold"),
    "crossner-hf predict --help, kept": ([*CLI, "predict", "--help"], "kept"),
    "crossner-hf train --help, kept": ([*CLI, "train", "--help"], "kept"),
    "crossner-hf dapt --help, kept": ([*CLI, "dapt", "--help"], "kept"),
    "trainer_recipes/finetune.py --help, kept": ([*SHIM, "--help"], "kept"),
    "before: every command module imported (the old listing)": ([sys.executable, "-c", ALL_MODULES], None),
}
"""Row -> (command, help cache: None untouched, "cold" an empty one each run, "kept" one filled before timing)."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="runs per row (median)")
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {k: [] for k in ROWS}
    with tempfile.TemporaryDirectory() as tmp:
        kept = {**os.environ, "CROSSNER_HF_CACHE": str(Path(tmp) / "kept")}
        for cmd, cache in ROWS.values():  # the kept rows' texts, rendered once before any timing
            if cache == "kept":
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=kept)
        for run in range(args.repeats):  # round robin, so load changes hit every row alike
            for row, (name, (cmd, cache)) in enumerate(ROWS.items()):
                env = kept if cache == "kept" else {**os.environ, "CROSSNER_HF_CACHE": str(Path(tmp) / f"{run}-{row}")}
                start = time.perf_counter()
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
                times[name].append(time.perf_counter() - start)
    before = statistics.median(times["before: every command module imported (the old listing)"])
    print(f"CLI start-up, median of {args.repeats} fresh interpreters (s)")
    print(f"{'':<64}{'median':>8}{'x before':>10}")
    for name, values in times.items():
        m = statistics.median(values)
        print(f"{name:<64}{m:>8.2f}{before / m:>9.1f}x")


if __name__ == "__main__":
    main()
