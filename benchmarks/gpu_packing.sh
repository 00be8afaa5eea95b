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
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export CROSSNER_DATA_DIR=$PWD/.gpu/crossner CROSSNER_HF_CACHE=/tmp/crossner-cache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
python3 - <<'PY'
import json, shutil, torch
from pathlib import Path
from safetensors.torch import load_file, save_file
src, dst = Path(".gpu/minilm"), Path("/tmp/minilm")
shutil.copytree(src, dst, dirs_exist_ok=True)
sd = load_file(src / "model.safetensors")
save_file({k: v.float().contiguous() for k, v in sd.items()}, dst / "model.safetensors", metadata={"format": "pt"})
print("torch", torch.__version__, "cuda", torch.cuda.is_available())
PY
# Run outside the checkout: its crossner_hf/ folder would shadow the installed package (and its package data).
REPO=$PWD; mkdir -p /tmp/bench-cwd; cd /tmp/bench-cwd
python3 "$REPO/benchmarks/grid_packing.py" --data_dir "$REPO/.gpu/crossner" --out /tmp/bench-gpu --domain politics --model /tmp/minilm --budget gpu \
  --methods direct pretrain-finetune joint --seeds 555 666 777 --max_steps "${MAX_STEPS:-100}" \
  --workers 9 --cells_per_gpu 9 --packed_first --json "$OUT/packing.json" 2>&1 | tee "$OUT/packing.txt"
