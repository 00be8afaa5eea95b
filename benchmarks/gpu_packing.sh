#!/usr/bin/env bash
# The GPU half of issue 54's packing benchmark (docs/grid.md, "Measured"): the gpu-budget `adapt` search on CrossNER
# politics given as a user's JSON Lines folder, 3 methods x 3 seeds, packed on one GPU (all nine cells at once,
# --cells_per_gpu 9) and one cell at a time, side by side in one run (benchmarks/grid_packing.py --packed_first).
# Prepared for a lent GPU machine with no network (the device tool of this workplace), like gpu_finetune.sh:
#   .gpu/minilm   the packaged all-MiniLM-L6-v2 saved in fp16 (45 MB; restored to fp32 before training)
#   .gpu/crossner the CrossNER files (labels.json, politics/, conll2003/: the source of pretrain-finetune and joint)
#   .whl/         wheels the machine lacks (datasets, evaluate, seqeval, nltk, dill, multiprocess, defusedxml) and
#                 crossner_hf itself (`pip wheel --no-deps -w .whl .`)
# MAX_STEPS (default 100) caps every training so both searches fit one lease; the figures say so.
# Writes $OUT/packing.json, $OUT/packing.txt and $OUT/gpu.txt. Usage there: bash benchmarks/gpu_packing.sh
set -euo pipefail
source "$(dirname "$0")/gpu_setup.sh"
# Run outside the checkout: its crossner_hf/ folder would shadow the installed package (and its package data).
REPO=$PWD; mkdir -p /tmp/bench-cwd; cd /tmp/bench-cwd
python3 "$REPO/benchmarks/grid_packing.py" --data_dir "$REPO/.gpu/crossner" --out /tmp/bench-gpu --domain politics --model /tmp/minilm --budget gpu \
  --methods direct pretrain-finetune joint --seeds 555 666 777 --max_steps "${MAX_STEPS:-100}" \
  --workers 9 --cells_per_gpu 9 --packed_first --json "$OUT/packing.json" 2>&1 | tee "$OUT/packing.txt"
