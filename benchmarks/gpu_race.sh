#!/usr/bin/env bash
# The GPU half of issue 64's race benchmark (docs/adapt.md, "Measured"): the gpu-budget `adapt` search on CrossNER
# politics given as a user's Parquet folder (its first 100 train sentences, types renamed), 3 methods x 3 seeds packed
# on one GPU (--workers 9 --cells_per_gpu 9), raced (--prune on) and in full (--prune off), side by side in one run
# (benchmarks/adapt_race.py). Prepared for a lent GPU machine with no network (the device tool of this workplace),
# with the carried .gpu/ and .whl/ of gpu_setup.sh. MAX_STEPS (default 500) caps every training so both searches fit
# one lease; the figures say so. Writes $OUT/race.json, $OUT/race.txt and $OUT/gpu.txt.
# Usage there: bash benchmarks/gpu_race.sh
set -euo pipefail
source "$(dirname "$0")/gpu_setup.sh"
# Run outside the checkout: its crossner_hf/ folder would shadow the installed package (and its package data).
REPO=$PWD; mkdir -p /tmp/bench-cwd; cd /tmp/bench-cwd
python3 "$REPO/benchmarks/adapt_race.py" --data_dir "$REPO/.gpu/crossner" --out /tmp/bench-race --domains politics \
  --model /tmp/minilm --budget gpu --methods direct,pretrain-finetune,joint --seeds 555,666,777 --workers 9 \
  --cells_per_gpu 9 --no_raw_text --max_steps "${MAX_STEPS:-500}" --json "$OUT/race.json" 2>&1 | tee "$OUT/race.txt"
