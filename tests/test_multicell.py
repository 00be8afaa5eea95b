"""The multi-cell compositional LSTM (Jia & Zhang 2020): cells against a per-cell reference, parameter counts
against the release's, the loss, and the recipe (trains, resumes identically, predicts, reports, pushes)."""

from __future__ import annotations

import json
import os

import pytest
import torch
from torch import nn

from crossner_hf.data.labels import labels_for
from crossner_hf.modeling.rnn.cdlm import SOURCE, TARGET
from crossner_hf.modeling.rnn.multicell import (MultiCellConfig, MultiCellDirection, MultiCellForTokenClassification,
                                                domain_types)


def reference_direction(d: MultiCellDirection, x, lengths, cells, domain):
    """The release's ``MultiCell_layer`` written out cell by cell and sentence by sentence (no batching, no
    padding): each cell its own pair of linear maps, attention as a loop over cells."""
    H = d.hidden_size
    hs = torch.zeros(x.shape[0], x.shape[1], H)
    ps = torch.zeros(x.shape[0], x.shape[1], len(cells))
    for b in range(x.shape[0]):
        n = int(lengths[b])
        order = range(n - 1, -1, -1) if d.reverse else range(n)
        h, c = torch.zeros(H), torch.zeros(H)
        for t in order:
            entity = []
            for k in cells.tolist():
                net = x[b, t] @ d.cell_x[k] + d.cell_bias[k] + h @ d.cell_h[k]
                gate, cand = torch.sigmoid(net[:H]), torch.tanh(net[H:])
                entity.append(gate * cand + (1 - gate) * c)
            net = d.compose_x(x[b, t]) + d.compose_h(h)
            i, o, cand = torch.sigmoid(net[:H]), torch.sigmoid(net[H:2 * H]), torch.tanh(net[2 * H:])
            scores = torch.stack([d.v[domain] @ torch.tanh(d.query[domain](cand) + d.key[domain](e)) for e in entity])
            probs = torch.softmax(scores, 0)
            c = (1 - i) * c + i * sum(p * e for p, e in zip(probs, entity))
            h = o * torch.tanh(c)
            hs[b, t], ps[b, t] = h, probs
    return hs, ps


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("domain", [SOURCE, TARGET])
def test_vectorised_cells_equal_the_cell_by_cell_reference(reverse, domain):
    torch.manual_seed(0)
    d = MultiCellDirection(7, 5, 6, reverse=reverse)
    with torch.no_grad():  # break the identical initial copies so that a wrong cell index shows
        for p in d.parameters():
            p.add_(torch.randn_like(p))
    cells = torch.tensor([0, 2, 3] if domain == SOURCE else [0, 1, 2, 4, 5])
    x, lengths = torch.randn(3, 6, 7), torch.tensor([6, 4, 1])
    h, _, p = d(x, lengths, cells, domain)
    ref_h, ref_p = reference_direction(d, x, lengths, cells, domain)
    mask = (torch.arange(6) < lengths.unsqueeze(1)).unsqueeze(-1)
    assert torch.allclose(h * mask, ref_h, atol=1e-5) and torch.allclose(p * mask, ref_p, atol=1e-5)


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("input_size,expected", [(150, 657_700), (918, 2_424_100)])
def test_a_direction_has_the_release_parameter_count(input_size, expected):
    # counted by instantiating the release's MultiCellLSTM (SDA/model/MultiCell_LSTM_compose.py) with hidden 100
    # and 10 cells (politics ∪ CoNLL-2003): input 150 = GloVe 100 + character CNN 50; 918 = + bert-base 768
    d = MultiCellDirection(input_size, 100, 10, reverse=False)
    h, i = 100, input_size
    assert _count(d) == expected == 10 * (i * 2 * h + 2 * h + h * 2 * h) + (i * 3 * h + 3 * h + h * 3 * h) \
        + 2 * (2 * h * h * 2) + 2 * 2 * h


def _release_check():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "multicell_release.py"
    spec = importlib.util.spec_from_file_location("multicell_release_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_release_check_names_the_file_it_needs(tmp_path):
    with pytest.raises(SystemExit, match=r"SDA/model/MultiCell_LSTM_compose.py"):
        _release_check().main(["--release_dir", str(tmp_path)])


@pytest.mark.skipif(not os.environ.get("MULTICELL_RELEASE_DIR"),
                    reason="set MULTICELL_RELEASE_DIR to a jiachenwestlake/Multi-Cell_LSTM checkout (not shipped)")
def test_equal_to_the_release_module(capsys):
    """benchmarks/multicell_release.py: our direction's weights copied into the release's MultiCellLSTM give the
    same hidden states, cell states and attention, and the same parameter counts."""
    assert _release_check().main(["--release_dir", os.environ["MULTICELL_RELEASE_DIR"], "--repeats", "1"]) == 0
    assert "| 150 (GloVe 100 + char CNN 50) | 657,700 | 657,700 |" in capsys.readouterr().out


def _config(**kw) -> MultiCellConfig:
    src, tgt = labels_for("conll2003"), labels_for("politics")
    base = dict(vocab_size=50, char_vocab_size=20, word_dim=12, char_dim=6, char_filters=8, hidden_size=5,
                num_labels=len(tgt), id2label=dict(enumerate(tgt)), source_id2label=dict(enumerate(src)))
    return MultiCellConfig(**{**base, **kw})


def test_cells_are_shared_by_type_name_and_start_as_copies():
    config = _config()
    assert config.cell_types == ["O", "person", "organisation", "location", "misc", "country", "politician",
                                 "election", "politicalparty", "event"]
    model = MultiCellForTokenClassification(config)
    assert model.cells_0.tolist() == [0, 1, 2, 3, 4]  # CoNLL-2003's cells are politics' cells of the same names
    assert sorted(model.cells_1.tolist()) == list(range(10))
    assert [domain_types(labels_for("politics"))[i] for i in model.label_cell_1.tolist()] == \
        ["O" if t == "O" else t[2:] for t in labels_for("politics")]
    for weight in (model.forward_cells.cell_x, model.forward_cells.cell_h, model.type_weight):  # deepcopy of one layer
        assert all(torch.equal(weight[0], weight[k]) for k in range(1, 10))
    assert torch.equal(model.forward_cells.query[0].weight, model.forward_cells.query[1].weight)
    # the whole model: words 50 x 12, characters, two directions over 12 + 8 inputs, two tag layers and CRFs, types
    src, tgt = len(labels_for("conll2003")), len(labels_for("politics"))
    direction = _count(MultiCellDirection(20, 5, 10, reverse=False))
    assert _count(model) == 50 * 12 + 20 * 6 + (6 * 3 * 8 + 8) + 2 * direction + (10 * src + src) + (10 * tgt + tgt) \
        + (src * src + 2 * src) + (tgt * tgt + 2 * tgt) + 10 * 10 + 10


def test_loss_is_rate_times_crf_plus_type_and_attention_nll():
    torch.manual_seed(1)
    model = MultiCellForTokenClassification(_config(target_loss_rate=1.6)).eval()
    words, chars = torch.randint(3, 50, (2, 4)), torch.randint(2, 20, (2, 4, 3))
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    labels = torch.tensor([[0, 1, 2, 0], [5, 6, 0, 0]])
    out = model(words, chars, mask, labels=labels, domain=TARGET)
    assert torch.allclose(out.loss, 1.6 * out.crf_loss + out.type_loss + out.attention_loss)
    emissions, type_logits, attention = model.run(words, chars, mask, TARGET)
    crf = -model.crf[TARGET](emissions, labels, mask.bool()).sum() / 2
    gold = model.label_cell_1[labels]
    keep = mask.bool()
    types = nn.functional.cross_entropy(type_logits[keep], gold[keep], reduction="sum") / 2
    att = nn.functional.cross_entropy(attention[keep], gold[keep], reduction="sum") / 2  # log_softmax of probabilities
    assert torch.allclose(out.crf_loss, crf) and torch.allclose(out.type_loss, types)
    assert torch.allclose(out.attention_loss, att)
    source = model(words, chars, mask, labels=labels.clamp(max=8), domain=SOURCE)
    assert torch.allclose(source.loss, source.crf_loss + source.type_loss + source.attention_loss)  # rate 1


def test_the_alternating_stream_resumes_each_stream_where_it_was():
    from crossner_hf.training.rnn.loop import Example, Stream
    from crossner_hf.training.rnn.multicell import Alternating

    def make():
        return Alternating([Stream([Example([str(i)], None) for i in range(5)], 2, 0),
                            Stream([Example([str(i)], None) for i in range(7)], 3, 1)])

    full = make()
    drawn = [(k, [e.tokens for e in b]) for k, b in (full.next() for _ in range(9))]
    assert [k for k, _ in drawn] == [0, 1] * 4 + [0]
    part = make()
    part.position = 5
    assert [(k, [e.tokens for e in b]) for k, b in (part.next() for _ in range(4))] == drawn[5:]


def _args(out, crossner_data_dir, tiny_bert_dir, **kw):
    from crossner_hf.commands.multicell import MultiCellArguments

    base = dict(domain="politics", output_dir=str(out), data_dir=str(crossner_data_dir), word_dim=12, char_dim=6,
                char_filters=8, hidden_size=6, use_cpu=True, seed=3, source_subsample=40, max_steps_per_epoch=6,
                features_model=tiny_bert_dir, learning_rate=0.05)
    return MultiCellArguments(**{**base, **kw})


def test_defaults_are_the_releases():
    from crossner_hf.commands.multicell import MultiCellArguments

    a = MultiCellArguments()
    assert (a.word_dim, a.char_dim, a.char_filters, a.hidden_size, a.dropout, a.batch_size, a.initial_optimizer,
            a.learning_rate, a.lr_decay, a.weight_decay, a.max_grad_norm, a.num_train_epochs, a.target_loss_rate,
            a.finetune_features) == (100, 30, 50, 100, 0.5, 10, "sgd", 0.015, 0.03, 1e-8, 0.0, 100, 1.0, False)


def test_multicell_trains_resumes_identically_predicts_reports_and_pushes(tmp_path, crossner_data_dir, tiny_bert_dir,
                                                                          capsys, fake_hub):
    from crossner_hf.cli import main
    from crossner_hf.commands.multicell import run_multicell

    full = run_multicell(_args(tmp_path / "full", crossner_data_dir, tiny_bert_dir, num_train_epochs=3))
    losses = [h["loss"] for h in full["history"]]
    assert losses[-1] < losses[0], losses
    assert full["trainable_parameters"] < full["parameters"]  # the encoder is frozen
    run_multicell(_args(tmp_path / "part", crossner_data_dir, tiny_bert_dir, num_train_epochs=2))
    resumed = run_multicell(_args(tmp_path / "part", crossner_data_dir, tiny_bert_dir, num_train_epochs=3,
                                    resume_from_checkpoint=True))
    assert [h["loss"] for h in resumed["history"]] == losses and resumed["test"] == full["test"]
    out = tmp_path / "full"
    assert json.loads((out / "config.json").read_text())["model_type"] == "crossner_multicell"
    assert (out / "tokenizer.json").is_file() and "Multi-cell" in (out / "README.md").read_text()
    capsys.readouterr()
    assert main(["predict", "--model", str(out), "--conll", str(crossner_data_dir / "politics" / "test.txt"),
                 "--output", str(tmp_path / "p.conll")]) == 0
    assert f"F1 {100 * full['test']['overall_f1']:.2f}" in capsys.readouterr().err
    assert main(["report", "--model", str(out), "--domain", "politics", "--data_dir", str(crossner_data_dir),
                 "--output", str(tmp_path / "report.html")]) == 0
    assert "politics" in (tmp_path / "report.html").read_text()
    assert main(["push", str(out), "user/multicell"]) == 0
    assert set(fake_hub.files("user/multicell")) >= {"model.safetensors", "config.json", "vocab.json", "tokenizer.json"}
    from transformers import AutoModelForTokenClassification

    assert type(AutoModelForTokenClassification.from_pretrained(out)) is MultiCellForTokenClassification


def test_finetuned_features_take_gradients_and_words_alone_work(tmp_path, crossner_data_dir, tiny_bert_dir):
    from crossner_hf.training.rnn.multicell import build_multicell
    from crossner_hf.training.rnn.loop import Example, tensors
    from crossner_hf.modeling.rnn.vocab import WordCharVocab

    sentences = [["The", "party", "won"], ["Obama"]]
    vocab = WordCharVocab.build(sentences)
    for finetune, chars in ((True, 8), (False, 0)):
        args = _args(tmp_path, crossner_data_dir, tiny_bert_dir, finetune_features=finetune, char_filters=chars)
        model = build_multicell(args, vocab, torch.zeros(len(vocab), 12), labels_for("politics"), args.features_model)
        batch = [Example(s, [0] * len(s)) for s in sentences]
        inputs = tensors(vocab, batch, "cpu") | model.extra_inputs(sentences, "cpu")
        assert ("feature_input_ids" in inputs) == finetune and ("features" in inputs) != finetune
        model(**inputs).loss.backward()
        grads = [p.grad for p in model.feature_encoder.parameters() if p.grad is not None]
        assert bool(grads) == finetune
        assert model.embed.output_dim == 12 + chars
