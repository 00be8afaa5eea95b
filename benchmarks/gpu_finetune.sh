#!/usr/bin/env bash
# The GPU check of docs/inference.md: fine-tune politics (the demo's recipe: MiniLM, direct, seed 555) with
# --bf16 and with --fp16 under `accelerate launch` on one GPU, then tag the test split through Tagger on the
# GPU (F1, sentences/s). Prepared for a lent GPU machine with no network (the device tool of this workplace):
#   .gpu/minilm   the packaged all-MiniLM-L6-v2 saved in fp16 (45 MB; restored to fp32 before training)
#   .gpu/crossner the CrossNER politics files (labels.json + politics/)
#   .whl/         wheels the machine lacks: datasets, evaluate, seqeval, nltk, dill, multiprocess, defusedxml, and
#                 crossner_hf itself (`pip wheel --no-deps -w .whl .`: the cards are package data of the install)
# Writes $OUT/gpu_results.json and $OUT/log. Usage there: bash benchmarks/gpu_finetune.sh
set -euo pipefail
source "$(dirname "$0")/gpu_setup.sh"
for precision in bf16 fp16; do
  start=$(date +%s)
  accelerate launch --num_processes 1 --num_machines 1 --mixed_precision "$precision" --dynamo_backend no \
    trainer_recipes/finetune.py --config trainer_recipes/configs/politics_direct_minilm.yaml \
    --model_name_or_path /tmp/minilm --output_dir "/tmp/gpu-$precision" --seeds 555 --use_cpu false \
    "--$precision" true --dataloader_num_workers 0 > "$OUT/train-$precision.log" 2>&1 \
    || { tail -40 "$OUT/train-$precision.log"; exit 1; }
  echo "$precision trained in $(( $(date +%s) - start )) s"
  echo "$(( $(date +%s) - start ))" > "/tmp/gpu-$precision/train_seconds"
done
python3 - <<'PY'
import json, os, statistics, time, torch
from pathlib import Path
from crossner_hf import Tagger
from crossner_hf.data.target import load_target
from crossner_hf.evaluation.metrics import compute_ner_metrics
data = load_target("politics").dataset["test"]
names = data.features["ner_tags"].feature.names
words = list(data["tokens"]); gold = [[names[i] for i in r] for r in data["ner_tags"]]
out = {"gpu": Path(os.environ["OUT"], "gpu.txt").read_text().strip(), "torch": torch.__version__, "runs": []}
for precision in ("bf16", "fp16"):
    folder = Path(f"/tmp/gpu-{precision}")
    res = json.loads((folder / "results.json").read_text())
    tagger = Tagger.from_pretrained(folder, device="cuda")
    for batch in (32, 128):
        tagger.tag(words[:64], batch_size=batch); torch.cuda.synchronize()
        times = []
        for _ in range(5):
            t = time.perf_counter(); pred = tagger.tag(words, batch_size=batch); torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        f1 = compute_ner_metrics(gold, pred)["overall_f1"]
        out["runs"].append({"precision": precision, "batch_size": batch, "test_f1_tagger": round(100 * f1, 2),
                            "test_f1_results_json": round(100 * res["test_mean"][res["decoding"]]["f1"], 2),
                            "dev_f1": round(100 * res["dev"]["overall_f1"], 2),
                            "train_seconds": int((folder / "train_seconds").read_text()),
                            "sentences_per_s_median_of_5": round(len(words) / statistics.median(times), 1)})
        print(out["runs"][-1])
Path(os.environ["OUT"], "gpu_results.json").write_text(json.dumps(out, indent=2))
PY
