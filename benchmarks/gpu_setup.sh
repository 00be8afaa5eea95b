# Sourced by the GPU benchmarks (gpu_finetune.sh, gpu_packing.sh) on a lent GPU machine with no network: installs
# the carried wheels (.whl/), sets the offline environment and CROSSNER_DATA_DIR (.gpu/crossner), records the GPU
# in $OUT/gpu.txt and restores the carried fp16 MiniLM (.gpu/minilm) to fp32 in /tmp/minilm.
set -euo pipefail
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export CROSSNER_DATA_DIR=$PWD/.gpu/crossner CROSSNER_HF_CACHE=/tmp/crossner-cache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
python3 - <<'PY'
import shutil, torch, json
from pathlib import Path
from safetensors.torch import load_file, save_file
src, dst = Path(".gpu/minilm"), Path("/tmp/minilm")
shutil.copytree(src, dst, dirs_exist_ok=True)
sd = load_file(src / "model.safetensors")
save_file({k: v.float().contiguous() for k, v in sd.items()}, dst / "model.safetensors", metadata={"format": "pt"})
cfg = json.loads((dst / "config.json").read_text()); cfg["torch_dtype"] = "float32"; cfg.pop("dtype", None)
(dst / "config.json").write_text(json.dumps(cfg, indent=2))
print("torch", torch.__version__, "cuda", torch.cuda.is_available())
PY
