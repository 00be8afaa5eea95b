"""Under --bf16 the recorded test F1 is the one the saved model gives: evaluation runs without accelerate's
autocast wrapper (crossner_hf.training.trainer._full_precision_forward), as Tagger / predict / report do."""

from __future__ import annotations

import pytest

from crossner_hf.data.conll import read_conll
from crossner_hf.data.labels import LABELS
from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.inference.tagger import Tagger


@pytest.mark.slow
def test_bf16_training_records_the_f1_the_saved_model_gives(tiny_bert_dir, crossner_data_dir, tmp_path):
    import json
    import subprocess
    import sys

    import torch

    if not torch.backends.mkldnn.is_available():  # CPU autocast in bf16 needs oneDNN
        pytest.skip("this torch build has no oneDNN, so no bf16 autocast on the CPU")
    out = tmp_path / "bf16"
    # its own process: a bf16 run fixes accelerate's process-wide AcceleratorState, which later tests in this
    # worker would then inherit
    subprocess.run([sys.executable, "-m", "crossner_hf.cli", "train", "--model_name_or_path", tiny_bert_dir,
                    "--domain", "politics", "--data_dir", str(crossner_data_dir), "--output_dir", str(out),
                    "--per_device_train_batch_size", "16", "--num_train_epochs", "6", "--learning_rate", "3e-3",
                    "--disable_tqdm", "true", "--use_cpu", "true", "--bf16", "true", "--seeds", "5",
                    "--dataloader_pin_memory", "false", "--early_stopping_patience", "0"],
                   check=True, capture_output=True)
    recorded = json.loads((out / "results.json").read_text())["per_seed"][0]["test"]["overall_f1"]
    sents = read_conll(crossner_data_dir / "politics" / "test.txt", LABELS["politics"])
    pred = Tagger.from_pretrained(out).tag([s["tokens"] for s in sents])
    got = compute_ner_metrics([s["ner_tags"] for s in sents], pred)["overall_f1"]
    assert recorded > 0.02  # an informative model, not all-O
    assert got == recorded
