"""Coach (crossner_hf.modeling.rnn.coach): shapes against the CrossNER release, span extraction and typing against
brute-force references, training, resume, prediction and the report through the one Tagger."""

from __future__ import annotations

import json
import random

import pytest
import torch
from torch import nn

from crossner_hf.data.labels import labels_for
from crossner_hf.modeling.rnn.coach import CoachConfig, CoachForTokenClassification, spans


def _model(word_dim=300, ngram_dim=100, entity_hidden=200, labels=None) -> CoachForTokenClassification:
    labels = labels or labels_for("politics")
    torch.manual_seed(0)
    return CoachForTokenClassification(CoachConfig(
        vocab_size=50, char_vocab_size=5, word_dim=word_dim, char_ngram_dim=ngram_dim, hidden_size=256, num_layers=2,
        entity_hidden_size=entity_hidden, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={t: i for i, t in enumerate(labels)}))


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("word_dim, ngram_dim, entity_hidden", [(300, 100, 200), (300, 0, 150)])
def test_shapes_and_parameter_counts_are_the_releases(word_dim, ngram_dim, entity_hidden):
    """The release (src/model.py BiLSTMTagger with --num_tag 3, src/coach/model.py EntityPredictor, CRF with
    start/stop transitions): the same modules and counts, apart from the vocabulary-sized embeddings."""
    model = _model(word_dim, ngram_dim, entity_hidden)
    release = {"encoder": nn.LSTM(word_dim + ngram_dim, 256, num_layers=2, bidirectional=True),
               "bio": nn.Linear(512, 3), "span_encoder": nn.LSTM(512, entity_hidden, bidirectional=True)}
    for name, reference in release.items():
        assert _count(getattr(model, name)) == _count(reference), name
    assert _count(model.crf) == 3 * 3 + 3 + 3
    if (word_dim, ngram_dim) == (300, 100):  # stated in the closing note: 4,068,498 besides the embeddings
        assert _count(model) - _count(model.embed) == 2_924_544 + 1_539 + 15 + 1_142_400 == 4_068_498
    assert model.type_vectors.shape == (9, 2 * entity_hidden)  # politics' nine types, meeting the span features


def test_spans_match_conlleval_chunks():
    from seqeval.metrics.sequence_labeling import get_entities

    rng = random.Random(0)
    for _ in range(500):
        bio = [rng.choice([0, 1, 2]) for _ in range(rng.randint(0, 12))]
        tags = [["O", "B-E", "I-E"][t] for t in bio]
        assert spans(bio) == [(start, end + 1) for _, start, end in get_entities(tags)], bio


def test_span_typing_equals_a_span_by_span_reference():
    model = _model(word_dim=12, ngram_dim=4, entity_hidden=8).eval()
    model.type_vectors.normal_()
    hidden = torch.randn(2, 9, 512)
    found = [(0, 1, 4), (0, 6, 7), (1, 0, 9), (1, 3, 5)]
    batched = model.type_logits(model.span_features(hidden, found))
    for k, (b, start, end) in enumerate(found):  # one span at a time, no padding, no packing
        out, _ = model.span_encoder(hidden[b:b + 1, start:end])
        assert torch.allclose(batched[k], out.sum(dim=1)[0] @ model.type_vectors.t(), atol=1e-5)


def test_loss_is_detection_plus_typing_and_decode_writes_typed_spans():
    model = _model(word_dim=12, ngram_dim=4, entity_hidden=8)
    model.type_vectors.normal_()  # the recipe sets them from the word vectors; zeros would give no typing gradient
    labels = labels_for("politics")
    words = torch.randint(3, 50, (2, 6))
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    gold = torch.tensor([[0, labels.index("B-politician"), labels.index("I-politician"), 0, labels.index("B-country"),
                          0], [labels.index("B-election"), 0, 0, 0, 0, 0]])
    loss = model(words, None, mask, labels=gold).loss
    loss.backward()
    assert loss.item() > 0 and model.span_encoder.weight_ih_l0.grad.abs().sum() > 0  # the typing loss reaches it
    assert model.bio.weight.grad.abs().sum() > 0
    decoded = model.decode(words, None, mask)
    assert [len(row) for row in decoded] == [6, 4]
    for row in decoded:  # every span is B-t then I-t of one type
        for i, tag in enumerate(labels[t] for t in row):
            if tag.startswith("I-"):
                assert labels[row[i - 1]][2:] == tag[2:]


def _args(tmp_path, crossner_data_dir, **kw):
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments

    base = dict(architecture="coach", domain="politics", schedule="target", output_dir=str(tmp_path / "out"),
                data_dir=str(crossner_data_dir), word_dim=12, char_ngram_dim=4, hidden_size=8, use_cpu=True, seed=3,
                batch_size=10, learning_rate=1e-2, early_stopping_patience=0)
    return BiLSTMCRFArguments(**{**base, **kw})


def test_coach_trains_resumes_identically_and_predicts_its_recorded_score(tmp_path, crossner_data_dir, monkeypatch,
                                                                          capsys):
    from crossner_hf.cli import main
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    coach = BiLSTMCRFArguments(architecture="coach")
    assert (coach.word_dim, coach.hidden_size, coach.num_layers, coach.initial_optimizer, coach.learning_rate,
            coach.batch_size, coach.oversample_factor, coach.early_stopping_patience) == (300, 256, 2, "adam", 1e-4,
                                                                                        32, 10, 8)
    full = run_bilstm_crf(_args(tmp_path / "full", crossner_data_dir, num_train_epochs=3, max_steps_per_epoch=8))
    losses = [h["loss"] for h in full["history"]]
    assert losses[-1] < losses[0], losses  # detection + typing losses fall
    run_bilstm_crf(_args(tmp_path / "part", crossner_data_dir, num_train_epochs=2, max_steps_per_epoch=8))
    resumed = run_bilstm_crf(_args(tmp_path / "part", crossner_data_dir, num_train_epochs=3, max_steps_per_epoch=8,
                                     resume_from_checkpoint=True))
    assert [h["loss"] for h in resumed["history"]] == losses and resumed["test"] == full["test"]
    out = tmp_path / "full" / "out"
    assert json.loads((out / "config.json").read_text())["model_type"] == "crossner_coach"
    assert "Coach" in (out / "README.md").read_text()
    recorded = full["test"]["overall_f1"]
    capsys.readouterr()
    assert main(["predict", "--model", str(out), "--conll", str(crossner_data_dir / "politics" / "test.txt"),
                 "--output", str(tmp_path / "p.conll")]) == 0
    assert f"F1 {100 * recorded:.2f}" in capsys.readouterr().err
    assert main(["confusion", "--model", str(out), "--domain", "politics", "--data_dir", str(crossner_data_dir),
                 "--output_dir", str(tmp_path / "cm")]) == 0
    assert (tmp_path / "cm" / "predictions.conll").read_text() == (tmp_path / "p.conll").read_text()
    from transformers import AutoModelForTokenClassification

    assert type(AutoModelForTokenClassification.from_pretrained(out)) is CoachForTokenClassification
