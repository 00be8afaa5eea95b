"""crossner_hf.training.trainer: word-level evaluation with the model's decoding (and the other one beside it),
masked labels, the classifier's own learning rate, sequential evaluation order and the oversampling sampler."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from crossner_hf.training.trainer import CrossNERTrainer, OversamplingSampler, checkpoint_step

LABELS = ["O", "B-x", "I-x", "B-y", "I-y"]


@pytest.fixture(scope="module")
def tiny_model(tiny_bert_dir):
    from transformers import AutoModelForTokenClassification

    return AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
        label2id={t: i for i, t in enumerate(LABELS)})


def _trainer(model, tmp_path, **kwargs):
    from transformers import TrainingArguments

    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[], learning_rate=1e-4)
    return CrossNERTrainer(model=model, args=args, **kwargs)


def _scores(tags_per_word):
    """Log-probabilities that pick ``tags_per_word`` by argmax (one row per word, special tokens around)."""
    rows = np.full((len(tags_per_word) + 2, len(LABELS)), -5.0, dtype=np.float32)
    for i, tag in enumerate(tags_per_word, 1):
        rows[i, LABELS.index(tag)] = -0.1
    return rows


def test_word_level_metrics_score_both_decodings_and_mask_excluded_labels(tiny_model, tmp_path):
    from datasets import Dataset
    from transformers import EvalPrediction

    gold = [["B-x", "I-x", "O"], ["O", "B-y"]]
    predicted = [["O", "I-x", "O"], ["O", "B-y"]]  # an orphan I-x: Viterbi and argmax read it differently
    examples = Dataset.from_dict({"ner_tags": [[LABELS.index(t) for t in g] for g in gold]})
    features = Dataset.from_dict({"word_ids": [[None, 0, 1, 2, None], [None, 0, 1, None]],
                                  "example_index": [0, 1]})
    width = max(len(p) for p in predicted) + 2
    preds = np.stack([np.pad(_scores(p), ((0, width - len(p) - 2), (0, 0))) for p in predicted])
    trainer = _trainer(tiny_model, tmp_path, decoding="argmax")
    flat = trainer.word_level_metrics(EvalPrediction(preds, None), features=features, examples=examples)
    # argmax keeps the orphan I-x, which conlleval reads as an entity on the wrong span: 1 of 2 entities right
    assert flat["overall_f1"] == pytest.approx(0.5) and flat["f1_y"] == 1.0
    assert "bio_viterbi_overall_f1" in flat and trainer.last_eval_details["eval"]["decoding"] == "argmax"
    masked = _trainer(tiny_model, tmp_path, decoding="argmax", excluded_labels=("B-y", "I-y"))
    scores = masked.word_level_metrics(EvalPrediction(preds, None), features=features, examples=examples)
    assert scores["f1_y"] == 0.0  # the masked type is never predicted
    with pytest.raises(ValueError, match="word_ids and example_index"):
        trainer.word_level_metrics(EvalPrediction(preds, None), features=examples, examples=examples)
    # a decoding given to the trainer directly (not through FinetuneConfig, which checks it) is refused at the
    # first evaluation, in one line naming the choices, before any score is made
    # a config made without output_dir (the runners name it) is refused by the trainer in one line, not deep in
    # transformers' first save
    from crossner_hf.training.training_args import FinetuneConfig

    with pytest.raises(ValueError, match="CrossNERTrainer needs args.output_dir"):
        CrossNERTrainer(model=tiny_model, args=FinetuneConfig(use_cpu=True))
    unchecked = _trainer(tiny_model, tmp_path, decoding="greedy")
    with pytest.raises(ValueError, match="decoding='greedy': choose one of bio-viterbi, argmax"):
        unchecked.word_level_metrics(EvalPrediction(preds, None), features=features, examples=examples)
    with pytest.raises(ValueError, match="needs eval_examples"):
        trainer.evaluate(features)


def test_the_classifier_trains_at_its_own_learning_rate(tiny_model, tmp_path):
    trainer = _trainer(tiny_model, tmp_path, head_learning_rate=5e-3)
    optimizer = trainer.create_optimizer()
    inner = getattr(optimizer, "optimizer", optimizer)
    head = {id(p) for n, p in tiny_model.named_parameters() if n.startswith("classifier")}
    rates = {group["lr"] for group in inner.param_groups if any(id(p) in head for p in group["params"])}
    body = {group["lr"] for group in inner.param_groups if not any(id(p) in head for p in group["params"])}
    assert rates == {5e-3} and body == {1e-4}
    assert all(not (head & {id(p) for p in g["params"]}) or {id(p) for p in g["params"]} <= head
               for g in inner.param_groups)  # no group mixes head and body


def test_no_head_with_a_head_learning_rate_is_refused(tmp_path):
    from transformers import PretrainedConfig, PreTrainedModel

    class Bare(PreTrainedModel):  # parameters, none of them a classification head
        config_class = PretrainedConfig

        def __init__(self):
            super().__init__(PretrainedConfig())
            self.body = torch.nn.Linear(2, 2)

    with pytest.raises(ValueError, match="no parameters under"):
        _trainer(Bare(), tmp_path, head_learning_rate=1e-3).create_optimizer()


def test_evaluation_keeps_dataset_order(tiny_model, tmp_path):
    from datasets import Dataset

    sampler = _trainer(tiny_model, tmp_path)._get_eval_sampler(Dataset.from_dict({"x": [3, 1, 2]}))
    assert isinstance(sampler, torch.utils.data.SequentialSampler) and list(sampler) == [0, 1, 2]


def test_checkpoint_step():
    assert checkpoint_step("out/seed-1/checkpoint-250") == 250 and checkpoint_step(None) is None


def test_oversampling_sampler_counts_and_determinism():
    s = OversamplingSampler(n_source=5, n_target=3, factor=10, seed=1)
    first = list(s)
    assert len(first) == len(s) == 35
    assert all(first.count(i) == 1 for i in range(5)) and all(first.count(i) == 10 for i in range(5, 8))
    assert list(s) == first
    s.set_epoch(1)
    assert list(s) != first and sorted(s) == sorted(first)
    with pytest.raises(ValueError, match="factor >= 1"):
        OversamplingSampler(1, 1, 0)
