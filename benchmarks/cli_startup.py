"""Benchmark: how fast `crossner-hf` answers --help, side by side with what it cannot go below.

Run: python benchmarks/cli_startup.py [--repeats 7]

Rows: `crossner-hf --help` (imports no command), `crossner-hf predict --help` (its parser only:
transformers' argument parser, no torch), `crossner-hf train --help` (TrainingArguments, so
torch); the floors `python -c pass` and `import transformers.hf_argparser`; and the CLI as it
was before issue 17 (every command module imported to build the listing), reproduced by
importing them all. Wall time of a fresh interpreter each, median of the repeats.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from crossner_hf.cli import COMMANDS

ALL_MODULES = "; ".join(f"import crossner_hf.commands.{m}" for m in COMMANDS.values())
ROWS = {
    "python -c pass (floor)": [sys.executable, "-c", "pass"],
    "import transformers.hf_argparser (floor of a command's parser)": [
        sys.executable, "-c", "import transformers.hf_argparser"],
    "crossner-hf --help": [sys.executable, "-m", "crossner_hf.cli", "--help"],
    "crossner-hf predict --help": [sys.executable, "-m", "crossner_hf.cli", "predict", "--help"],
    "crossner-hf train --help": [sys.executable, "-m", "crossner_hf.cli", "train", "--help"],
    "before: every command module imported (the old listing)": [sys.executable, "-c", ALL_MODULES],
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="runs per row (median)")
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {k: [] for k in ROWS}
    for _ in range(args.repeats):  # round robin, so load changes hit every row alike
        for name, cmd in ROWS.items():
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    before = statistics.median(times["before: every command module imported (the old listing)"])
    print(f"CLI start-up, median of {args.repeats} fresh interpreters (s)")
    print(f"{'':<64}{'median':>8}{'x before':>10}")
    for name, values in times.items():
        m = statistics.median(values)
        print(f"{name:<64}{m:>8.2f}{before / m:>9.1f}x")


if __name__ == "__main__":
    main()
