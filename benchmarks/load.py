"""Cold and warm ``load_target`` times per config (medians; cold = empty Arrow cache).

Usage:
    python benchmarks/load.py [--data_dir ../shared/data/crossner] [--repeats 5] [--configs conll2003,politics]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=str(ROOT.parent / "shared" / "data" / "crossner"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--configs", default="conll2003,politics,music")
    opts = parser.parse_args(argv)

    import datasets

    from crossner_hf.data.target import load_target

    datasets.disable_progress_bars()
    print(f"{'config':<12} {'cold s':>8} {'warm s':>8} {'cold/warm':>10}")
    for config in opts.configs.split(","):
        cold, warm = [], []
        for _ in range(opts.repeats):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["CROSSNER_HF_CACHE"] = cache
                t = time.perf_counter()
                load_target(config, data_dir=opts.data_dir).dataset
                cold.append(time.perf_counter() - t)
                t = time.perf_counter()
                load_target(config, data_dir=opts.data_dir).dataset
                warm.append(time.perf_counter() - t)
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"{config:<12} {c:>8.3f} {w:>8.4f} {c / w:>9.0f}x")


if __name__ == "__main__":
    main()
