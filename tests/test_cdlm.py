"""BiLSTM-CRF and CDLM: the CRF against brute force, the parameter generation network, zero-shot
label isolation, save/load, learning, resume."""

from __future__ import annotations

import itertools
import json
import math
import shutil

import pytest
import torch

from crossner_hf.modeling.rnn import (
    CRF,
    BiLSTMCRFConfig,
    BiLSTMCRFForTokenClassification,
    CDLMConfig,
    CDLMForTokenClassification,
    WordCharVocab,
    load_word_vectors,
)
from crossner_hf.modeling.rnn.cdlm import LM, NER, SOURCE, TARGET

SENTS = [["Obama", "met", "Merkel", "in", "Berlin", "."], ["The", "Senate", "voted", "in", "2019", "."],
         ["Labour", "won", "."]]


def _brute(crf: CRF, emissions, mask):
    """log Z and the best path of one row by enumerating every tag sequence."""
    n = int(mask.sum())
    scores = {}
    for tags in itertools.product(range(crf.num_tags), repeat=n):
        s = crf.start_transitions[tags[0]] + emissions[0, tags[0]]
        for t in range(1, n):
            s = s + crf.transitions[tags[t - 1], tags[t]] + emissions[t, tags[t]]
        scores[tags] = s + crf.end_transitions[tags[-1]]
    values = torch.stack(list(scores.values()))
    return torch.logsumexp(values, 0), max(scores, key=lambda k: float(scores[k].detach())), scores


def test_crf_matches_brute_force_with_masks():
    torch.manual_seed(0)
    crf = CRF(3)
    emissions = torch.randn(3, 4, 3)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    tags = torch.randint(0, 3, (3, 4))
    llh = crf(emissions, tags, mask)
    paths = crf.decode(emissions, mask)
    for b in range(3):
        log_z, best, scores = _brute(crf, emissions[b], mask[b])
        n = int(mask[b].sum())
        assert torch.allclose(llh[b], scores[tuple(tags[b, :n].tolist())] - log_z, atol=1e-5)
        assert tuple(paths[b]) == best
    with pytest.raises(ValueError, match="first time step"):
        crf(emissions, tags, torch.zeros(3, 4, dtype=torch.bool))


def test_crf_agrees_with_pytorch_crf():
    torchcrf = pytest.importorskip("torchcrf", reason="pytorch-crf is in the dev extra; pip install pytorch-crf")
    torch.manual_seed(1)
    ours, theirs = CRF(5), torchcrf.CRF(5, batch_first=True)
    theirs.load_state_dict(ours.state_dict())
    emissions, tags = torch.randn(4, 7, 5), torch.randint(0, 5, (4, 7))
    mask = torch.arange(7).unsqueeze(0) < torch.tensor([7, 5, 3, 1]).unsqueeze(1)
    assert torch.allclose(ours(emissions, tags, mask), theirs(emissions, tags, mask, reduction="none"), atol=1e-5)
    assert ours.decode(emissions, mask) == theirs.decode(emissions, mask)


def _vocab():
    return WordCharVocab.build(SENTS, [["the", "cat", "sat"]] * 3)


def _cdlm(vocab, **kw):
    return CDLMForTokenClassification(CDLMConfig(vocab_size=len(vocab), char_vocab_size=len(vocab.chars),
                                                 num_labels=5, target_num_labels=7, **kw))


def test_generated_lstm_has_the_shapes_and_count_of_nn_lstm():
    model = _cdlm(_vocab())
    reference = torch.nn.LSTM(150, 100, batch_first=True, bidirectional=True)
    assert model.n_lstm_params == sum(p.numel() for p in reference.parameters()) == 201_600
    generated = model.lstm_parameters(TARGET, NER)
    assert {k: tuple(v.shape) for k, v in generated.items()} == {k: tuple(v.shape) for k, v in reference.named_parameters()}
    assert tuple(model.generator.W.shape) == (8, 8, 201_600)
    # nothing in the LSTM is a free parameter of the model
    assert not any("lstm" in name for name, _ in model.named_parameters())
    # each (domain, task) pair gets its own weights
    thetas = [model.generator(d, t) for d in (SOURCE, TARGET) for t in (NER, LM)]
    for a, b in itertools.combinations(thetas, 2):
        assert not torch.allclose(a, b)


def test_gradients_reach_w_and_both_embeddings():
    vocab = _vocab()
    model = _cdlm(vocab)
    words, chars, mask = vocab.encode(SENTS)
    model(words, chars, mask, labels=torch.zeros_like(words), domain=TARGET, task=NER).loss.backward()
    g = model.generator
    assert g.W.grad.abs().sum() > 0 and g.domain.grad[TARGET].abs().sum() > 0 and g.task.grad[NER].abs().sum() > 0
    assert g.domain.grad[SOURCE].abs().sum() == 0  # only the pair used gets gradient
    model.zero_grad()
    model.train()
    model(words, chars, mask, domain=SOURCE, task=LM).loss.backward()
    assert g.task.grad[LM].abs().sum() > 0 and g.domain.grad[SOURCE].abs().sum() > 0


def test_vocab_lookup_rules_and_vectors(tmp_path):
    vocab = WordCharVocab.build([["Paris", "1999"]], [["paris"] * 3, ["rare"]], min_count=2)
    assert vocab.words[:3] == ["<pad>", "<unk>", "<s>"]
    assert vocab.word_id("2024") == vocab.word_id("0000")   # digits map to 0
    assert vocab.word_id("PARIS") == vocab.word_id("paris")  # lower-case fallback
    assert vocab.word_id("rare") == 1                        # LM words seen <= min_count times are unknown
    glove = tmp_path / "g.txt"
    glove.write_text("paris 1 2 3\n0000 4 5 6\n")
    vec = load_word_vectors(glove, vocab, 3)
    assert vec[vocab.word_id("paris")].tolist() == [1, 2, 3] and vec[vocab.word_id("1999")].tolist() == [4, 5, 6]
    assert vec[0].abs().sum() == 0
    vocab.save(tmp_path)
    assert WordCharVocab.load(tmp_path).words == vocab.words


def test_encode_pads_truncates_and_maps_like_the_lookups():
    vocab = WordCharVocab.build([["Paris", "1999", "x" * 40], ["a"]])
    sentences = [["Paris", "in", "2024"], [], ["x" * 40, "Zürich"]]
    words, chars, mask = vocab.encode(sentences)
    assert words.shape == mask.shape == (3, 3) and chars.shape == (3, 3, 30) and mask.dtype == torch.bool
    for b, sent in enumerate(sentences):  # the lookups, written out position by position
        assert mask[b].tolist() == [t < len(sent) for t in range(3)]
        for t in range(3):
            word = sent[t] if t < len(sent) else ""
            assert words[b, t] == (vocab.word_id(word) if word else 0)
            expected = [vocab.char_index.get(c, 1) for c in word[:30]]
            assert chars[b, t].tolist() == expected + [0] * (30 - len(expected))
    assert words[0, 2] == vocab.word_id("1999") and chars[2, 1, 1] == 1  # digits as 0; 'ü' unknown
    empty = vocab.encode([])
    assert [tuple(x.shape) for x in empty] == [(0, 1), (0, 1, 1), (0, 1)]


@pytest.mark.parametrize("kind", ["bilstm", "cdlm"])
def test_save_load_round_trip_gives_identical_predictions(tmp_path, kind):
    vocab = _vocab()
    if kind == "cdlm":
        model = _cdlm(vocab)
    else:
        model = BiLSTMCRFForTokenClassification(BiLSTMCRFConfig(vocab_size=len(vocab), char_vocab_size=len(vocab.chars),
                                                                num_labels=5))
    model.eval()
    words, chars, mask = vocab.encode(SENTS)
    before = model.decode(words, chars, mask)
    model.save_pretrained(tmp_path)
    again = type(model).from_pretrained(tmp_path).eval()
    assert again.decode(words, chars, mask) == before
    assert (tmp_path / "model.safetensors").is_file()
    # registered with the Auto classes, as every transformers model is
    from transformers import AutoConfig, AutoModelForTokenClassification

    assert type(AutoConfig.from_pretrained(tmp_path)) is type(model.config)
    auto = AutoModelForTokenClassification.from_pretrained(tmp_path).eval()
    assert type(auto) is type(model) and auto.decode(words, chars, mask) == before


def _small(cls, tmp_path, crossner_data_dir, **kw):
    base = dict(domain="politics", output_dir=str(tmp_path / "out"), data_dir=str(crossner_data_dir), word_dim=16,
                char_dim=8, char_filters=8, hidden_size=16, use_cpu=True, seed=3)
    base.update(kw)
    return cls(**base)


def test_bilstm_crf_loss_decreases_on_politics(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.training.rnn import loop as training
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    losses = []
    real = training.run_loop

    def spy(**kw):  # record every step's loss
        step = kw["step_losses"]

        def recording(model, batches, device):
            loss = step(model, batches, device)
            losses.append(float(loss.detach()))
            return loss

        return real(**{**kw, "step_losses": recording})

    monkeypatch.setattr("crossner_hf.training.rnn.recipes.run_loop", spy)
    results = run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, schedule="target",
                                      num_train_epochs=6, batch_size=10, early_stopping_patience=0))
    assert len(losses) == 6 * 20  # 200 sentences, batch 10
    epochs = [sum(losses[k:k + 20]) / 20 for k in range(0, 120, 20)]
    # every epoch's mean loss under the one before, the last well under the first (measured: 0.56)
    assert all(b < a for a, b in zip(epochs, epochs[1:])) and epochs[-1] < 0.65 * epochs[0], epochs
    assert 0.0 <= results["test"]["overall_f1"] <= 1.0 and (tmp_path / "out" / "vocab.json").is_file()


def test_zero_shot_never_reads_target_labels(tmp_path, crossner_data_dir, monkeypatch):
    """Two zero-shot runs, one with the target's train/dev tags scrambled: identical training."""
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm

    scrambled = tmp_path / "data"
    shutil.copytree(crossner_data_dir, scrambled)
    for split in ("train.txt", "dev.txt"):
        path = scrambled / "politics" / split
        lines = path.read_text().splitlines()
        path.write_text("\n".join(f"{l.split(chr(9))[0]}\tB-politician" if l.strip() else l for l in lines) + "\n")
    runs = []
    for i, data in enumerate((crossner_data_dir, scrambled)):
        args = _small(CDLMArguments, tmp_path / f"r{i}", data, mode="zero-shot", num_train_epochs=2,
                      max_steps_per_epoch=5, source_subsample=60, lm_negatives=10)
        runs.append(run_cdlm(args))
    a, b = runs
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]
    assert a["dev"]["overall_f1"] == b["dev"]["overall_f1"]  # selection on source dev
    wa = CDLMForTokenClassification.from_pretrained(tmp_path / "r0" / "out").state_dict()
    wb = CDLMForTokenClassification.from_pretrained(tmp_path / "r1" / "out").state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_cdlm_supervised_resume_matches_uninterrupted(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm

    kw = dict(max_steps_per_epoch=4, source_subsample=60, lm_negatives=10, early_stopping_patience=0)
    full = run_cdlm(_small(CDLMArguments, tmp_path / "full", crossner_data_dir, num_train_epochs=3, **kw))
    run_cdlm(_small(CDLMArguments, tmp_path / "part", crossner_data_dir, num_train_epochs=2, **kw))
    resumed = run_cdlm(_small(CDLMArguments, tmp_path / "part", crossner_data_dir, num_train_epochs=3,
                                resume_from_checkpoint=True, **kw))
    assert [h["loss"] for h in resumed["history"]] == [h["loss"] for h in full["history"]]
    assert resumed["test"] == full["test"] and len(resumed["history"]) == 3


def test_padded_bilstm_equals_a_packed_nn_lstm():
    from crossner_hf.modeling.rnn.layers import bilstm, lstm_template as _uni_template

    torch.manual_seed(0)
    lstm = torch.nn.LSTM(5, 4, batch_first=True, bidirectional=True)
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 4, 1])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    ref, _ = torch.nn.utils.rnn.pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=6)
    out = bilstm(x, lengths, dict(lstm.named_parameters()), _uni_template(5, 4, "cpu"))
    real = torch.arange(6)[None] < lengths[:, None]
    assert torch.allclose(out[real], ref[real], atol=1e-6)


def test_lm_text_from_files_and_corpus_folders(tmp_path):
    from datasets import Dataset

    from crossner_hf.training.rnn.common import text_examples
    from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder

    text = tmp_path / "t.txt"
    text.write_text("the senate voted\n\n  \nlabour won\n")
    assert [e.tokens for e in text_examples([str(text)])] == [["the", "senate", "voted"], ["labour", "won"]]
    folder = write_hub_dataset_folder({"politics-domain": Dataset.from_dict({"text": ["a b", "c"]})}, tmp_path / "c")
    got = text_examples([f"{folder}:politics-domain"])
    assert [e.tokens for e in got] == [["a", "b"], ["c"]] and all(e.tags is None for e in got)


def test_stacked_bilstm_equals_a_two_layer_packed_nn_lstm():
    from crossner_hf.modeling.rnn.layers import StackedBiLSTM

    torch.manual_seed(0)
    stacked = StackedBiLSTM(5, 4, num_layers=2, dropout=0.5).eval()  # dropout off in eval, as nn.LSTM's
    x, lengths = torch.randn(3, 6, 5), torch.tensor([6, 4, 1])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    ref, _ = torch.nn.utils.rnn.pad_packed_sequence(stacked.lstm(packed)[0], batch_first=True, total_length=6)
    real = torch.arange(6)[None] < lengths[:, None]
    assert torch.allclose(stacked(x, lengths)[real], ref[real], atol=1e-6)


def test_char_ngram_vectors_average_torchtext_keys(tmp_path):
    from crossner_hf.modeling.rnn.vocab import char_ngrams, load_char_ngram_vectors

    assert char_ngrams("ab") == ["2gram-#BEGIN#a", "2gram-ab", "2gram-b#END#", "3gram-#BEGIN#ab", "3gram-ab#END#",
                                 "4gram-#BEGIN#ab#END#"]
    vocab = WordCharVocab.build([["ab", "zz"]])
    path = tmp_path / "charNgram.txt"
    path.write_text("2gram-#BEGIN#a 1 0\n2gram-ab 0 2\nunrelated 5 5\n")
    m = load_char_ngram_vectors(path, vocab, dim=2)
    assert m[vocab.word_id("ab")].tolist() == [0.5, 1.0]       # the mean of the two n-grams found
    assert m[vocab.word_id("zz")].tolist() == [0.0, 0.0]       # none found: zeros, as torchtext
    with pytest.raises(ValueError, match="char_ngram_dim"):
        load_char_ngram_vectors(path, vocab, dim=3)


def test_bilstm_crf_architectures_resolve_their_settings_and_train(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    lample = BiLSTMCRFArguments()
    assert (lample.word_dim, lample.hidden_size, lample.num_layers, lample.initial_optimizer, lample.batch_size,
            lample.max_grad_norm, lample.oversample_factor) == (100, 100, 1, "sgd", 10, 5.0, 100)
    crossner = BiLSTMCRFArguments(architecture="crossner", batch_size=7)
    assert (crossner.word_dim, crossner.hidden_size, crossner.num_layers, crossner.initial_optimizer,
            crossner.learning_rate, crossner.loss_reduction, crossner.oversample_factor, crossner.batch_size,
            crossner.early_stopping_patience) == (300, 256, 2, "adam", 1e-3, "mean", 10, 7, 8)
    args = BiLSTMCRFArguments(architecture="crossner", domain="politics", schedule="joint", word_dim=12, hidden_size=8,
                              char_ngram_dim=6, output_dir=str(tmp_path / "out"), data_dir=str(crossner_data_dir),
                              source_subsample=40, max_steps=7, use_cpu=True, seed=1)
    results = run_bilstm_crf(args)
    assert sum(1 for _ in results["history"]) == 1 and results["history"][0]["optimizer"] == "adam"
    model = BiLSTMCRFForTokenClassification.from_pretrained(tmp_path / "out")
    assert model.config.num_layers == 2 and model.embed.ngrams.weight.shape[1] == 6
    assert "encoder.lstm.weight_ih_l1_reverse" in model.state_dict()
    # the vocabulary holds dev and test words as both releases build it (their labels unread) ...
    from crossner_hf.data.target import load_target
    from crossner_hf.modeling.rnn.vocab import WordCharVocab, normalize

    vocab = WordCharVocab.load(tmp_path / "out")
    politics = load_target("politics", data_dir=crossner_data_dir).dataset
    train_words = {normalize(w) for t in politics["train"]["tokens"] for w in t}
    test_only = {normalize(w) for t in politics["test"]["tokens"] for w in t} - train_words
    assert test_only and test_only <= set(vocab.words)
    # ... and train alone with --vocab_splits train; words alone (the "word" row) with --char_ngram_dim 0
    word = run_bilstm_crf(BiLSTMCRFArguments(
        architecture="crossner", domain="politics", schedule="target", word_dim=12, hidden_size=8, char_ngram_dim=0,
        vocab_splits=["train"], output_dir=str(tmp_path / "word"), data_dir=str(crossner_data_dir), max_steps=3,
        use_cpu=True, seed=1))
    assert word["steps"] == 3
    model = BiLSTMCRFForTokenClassification.from_pretrained(tmp_path / "word")
    assert model.embed.ngrams is None and model.embed.output_dim == 12
    assert not test_only & set(WordCharVocab.load(tmp_path / "word").words)


def test_max_steps_caps_the_total_and_loss_weights_follow_the_lm_text(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm

    assert CDLMArguments().loss_weights == [1.0, 1.0, 1.0, 2.0]
    assert CDLMArguments(target_text=["x.txt"]).loss_weights == [0.5, 0.8, 0.5, 1.0]
    assert CDLMArguments(mode="zero-shot").loss_weights == [1.0, 1.0, 1.0, 0.0]
    assert CDLMArguments(loss_weights=[1, 2, 3, 4], target_text=["x.txt"]).loss_weights == [1, 2, 3, 4]
    zs = CDLMArguments(mode="zero-shot", batch_size=16, initial_optimizer="sgd")  # explicit values win
    assert (zs.batch_size, zs.initial_optimizer, zs.max_grad_norm) == (16, "sgd", 0.0)
    res = run_cdlm(_small(CDLMArguments, tmp_path, crossner_data_dir, max_steps=5, num_train_epochs=5,
                            source_subsample=60, lm_negatives=10, early_stopping_patience=0))
    assert len(res["history"]) == 3 and res["steps"] == 5  # 60 sentences / batch 30: 2 + 2 + the 1 left


def test_rnn_loop_refuses_several_processes(tmp_path, crossner_data_dir, monkeypatch):
    import accelerate

    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    monkeypatch.setattr(accelerate.Accelerator, "num_processes", property(lambda self: 2))
    with pytest.raises(ValueError, match="run in one process"):
        run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, schedule="target", max_steps=1))


@pytest.mark.parametrize("kind", ["bilstm-crf", "cdlm-zero-shot"])
def test_predict_reproduces_the_rnn_test_score(kind, tmp_path, crossner_data_dir, monkeypatch, capsys):
    """`crossner-hf predict --conll` on a BiLSTM-CRF or CDLM folder gives the F1 its results.json records
    (the CLI's own main, in this interpreter)."""
    import json

    from crossner_hf.cli import main
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm

    if kind == "bilstm-crf":
        run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, schedule="target", max_steps=12))
    else:
        run_cdlm(_small(CDLMArguments, tmp_path, crossner_data_dir, mode="zero-shot", max_steps=4,
                          source_subsample=60, lm_negatives=10))
    out = tmp_path / "out"
    recorded = json.loads((out / "results.json").read_text())["test"]["overall_f1"]
    capsys.readouterr()
    assert main(["predict", "--model", str(out), "--conll", str(crossner_data_dir / "politics" / "test.txt"),
                 "--output", str(tmp_path / "p.conll")]) == 0
    assert f"F1 {100 * recorded:.2f}" in capsys.readouterr().err
    assert main(["predict", "--model", str(out), "Obama visited Berlin, Germany."]) == 0
    record = json.loads(capsys.readouterr().out)
    assert all(record["text"][e["start"]:e["end"]] == e["word"] for e in record["entities"])
    # the one Tagger: confusion and report take the RNN folder too, and tag as predict does
    data = ["--data_dir", str(crossner_data_dir)]
    assert main(["confusion", "--model", str(out), "--domain", "politics", *data, "--output_dir",
                 str(tmp_path / "cm")]) == 0
    assert (tmp_path / "cm" / "predictions.conll").read_text() == (tmp_path / "p.conll").read_text()
    assert json.loads((tmp_path / "cm" / "confusion.json").read_text())["source"]["decoding"] == "crf-viterbi"
    pytest.importorskip("nervaluate")
    assert main(["report", "--model", str(out), "--domain", "politics", *data, "--n_boot", "20",
                 "--output", str(tmp_path / "report.html")]) == 0
    assert f"{100 * recorded:.2f}" in (tmp_path / "report.html").read_text()
    assert main(["report", "--model", str(out), *data, "--decoding", "argmax", "--output",
                 str(tmp_path / "r2.html")]) == 2
    assert "decodes with its CRF's Viterbi path" in capsys.readouterr().err


@pytest.mark.parametrize("conditioning,w_shape,same", [
    ("domain-task", (8, 8, 201_600), []),
    ("task", (8, 201_600), [((SOURCE, NER), (TARGET, NER)), ((SOURCE, LM), (TARGET, LM))]),  # CO-LM
    ("domain", (8, 201_600), [((SOURCE, NER), (SOURCE, LM)), ((TARGET, NER), (TARGET, LM))]),  # CO-NER
    ("shared", (201_600,), "all"),  # MULTITASK
])
def test_generator_ablations_share_what_the_paper_says(conditioning, w_shape, same):
    """004:1000-1047: CO-LM generates by task alone, CO-NER by domain alone, MULTITASK shares one LSTM."""
    model = _cdlm(_vocab(), generator=conditioning)
    assert tuple(model.generator.W.shape) == w_shape
    n_embeddings = {"domain-task": 32, "task": 16, "domain": 16, "shared": 0}[conditioning]
    assert sum(p.numel() for p in model.generator.parameters()) == math.prod(w_shape) + n_embeddings
    pairs = [(d, t) for d in (SOURCE, TARGET) for t in (NER, LM)]
    theta = {pair: model.generator(*pair) for pair in pairs}
    for a, b in itertools.combinations(pairs, 2):
        equal = same == "all" or (a, b) in same or (b, a) in same
        assert torch.equal(theta[a], theta[b]) is equal, (conditioning, a, b)
    with pytest.raises(ValueError, match="choose one of"):
        CDLMConfig(generator="by-sentence")


@pytest.mark.parametrize("variant,streams", [
    ("co-lm", [(TARGET, LM), (TARGET, NER)]),
    ("multitask-ner", [(SOURCE, NER), (TARGET, NER)]),
    ("mix-data", [(SOURCE, NER), (SOURCE, LM), (TARGET, LM), (TARGET, NER)]),
])
def test_cdlm_variants_train_the_streams_of_their_table_row(variant, streams, tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm
    from crossner_hf.training.rnn.recipes import CDLM_VARIANTS

    calls = []
    real = CDLMForTokenClassification.forward

    def spy(self, word_ids, char_ids, attention_mask, labels=None, domain=TARGET, task=NER, **kw):
        if self.training:
            calls.append((domain, task))
        return real(self, word_ids, char_ids, attention_mask, labels=labels, domain=domain, task=task, **kw)

    monkeypatch.setattr(CDLMForTokenClassification, "forward", spy)
    from crossner_hf.training.rnn import recipes

    texts = {}  # the sentences each LM stream reads, by its seed (source text: seed + 1, target text: seed + 2)

    class Recording(recipes.Stream):
        def __init__(self, examples, batch_size, seed):
            super().__init__(examples, batch_size, seed)
            texts[seed - 3] = sorted(" ".join(e.tokens) for e in self.examples)

    monkeypatch.setattr(recipes, "Stream", Recording)
    res = run_cdlm(_small(CDLMArguments, tmp_path, crossner_data_dir, variant=variant, max_steps=2,
                            source_subsample=20, lm_negatives=5, early_stopping_patience=0))
    assert calls == streams * 2  # two steps, each over the variant's streams only, in the loop's order
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["generator"] == CDLM_VARIANTS[variant][0] and res["args"]["variant"] == variant
    if variant == "mix-data":  # both LMs read source + target text: the same mixed sentences (004:1025-1028)
        assert texts[1] == texts[2] and len(texts[1]) == 20 + 200  # CoNLL subsample + politics train
    else:
        assert texts[1] != texts[2]
    with pytest.raises(ValueError, match="supervised baseline"):
        CDLMArguments(mode="zero-shot", variant=variant)


def test_stm_source_and_finetune_schedules(tmp_path, crossner_data_dir, monkeypatch):
    """STM-SOURCE selects on CoNLL-2003 dev and never reads target training labels; FINETUNE starts from that model
    with a new output layer and CRF, the shared layers carried over."""
    import json

    from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFForTokenClassification
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    common = dict(num_train_epochs=1, max_steps_per_epoch=3, source_subsample=40, early_stopping_patience=0)
    out = tmp_path / "ft"
    result = run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, schedule="pretrain-finetune",
                                     output_dir=str(out), **common))
    source = json.loads((out / "source" / "results.json").read_text())
    assert source["args"]["schedule"] == "source" and source["n_train_sentences"] == 40
    assert result["source_phase"]["test_f1"] == source["test"]["overall_f1"]
    before = BiLSTMCRFForTokenClassification.from_pretrained(out / "source")
    after = BiLSTMCRFForTokenClassification.from_pretrained(out)
    # one epoch of 3 steps moved every layer a little; the output layer and CRF were drawn anew (far from the source's)
    shared = (after.encoder.lstm.weight_ih_l0 - before.encoder.lstm.weight_ih_l0).abs().max()
    fresh = (after.crf.transitions - before.crf.transitions).abs().max()
    assert shared < fresh
    with pytest.raises(ValueError, match="Coach's typing stage"):
        BiLSTMCRFArguments(architecture="coach", schedule="pretrain-finetune")


def test_rnn_recipes_take_any_dataset_folder(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.testing import make_renamed_conll_folder
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    folder = make_renamed_conll_folder(crossner_data_dir / "politics", tmp_path / "mydata", {"politician": "statesman"})
    result = run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, schedule="target",
                                     dataset_dir=str(folder), num_train_epochs=1, max_steps_per_epoch=2))
    assert result["dataset"]["name"] == "mydata" and "domain" not in result["args"]
    assert "B-statesman" in json.loads((tmp_path / "out" / "config.json").read_text())["label2id"]


@pytest.mark.parametrize("schedule", ["self-train", "dann"])
def test_zero_shot_baselines_never_read_target_labels(schedule, tmp_path, crossner_data_dir, monkeypatch):
    """SELF-TRAIN and DANN (CDLM Table 4) train on CoNLL-2003 and the target's text only: every target example they
    see has no tags (or the model's own), and they select on CoNLL-2003's dev set."""
    from crossner_hf.training.rnn import adaptation
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf

    gold = {tuple(t): tags for t, tags in _politics_train(crossner_data_dir)}
    seen = []
    real_tensors = adaptation.tensors

    def spy(vocab, batch, device):
        seen.extend(e for e in batch if tuple(e.tokens) in gold)
        return real_tensors(vocab, batch, device)

    monkeypatch.setattr(adaptation, "tensors", spy)
    args = _small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, architecture="lample", schedule=schedule,
                  num_train_epochs=2, max_steps_per_epoch=3, source_subsample=30, self_train_rounds=1,
                  self_train_epochs=1, self_train_fraction=0.5, early_stopping_patience=0)
    result = run_bilstm_crf(args)
    assert all(e.tags is None or e.tags != gold[tuple(e.tokens)] or not any(e.tags) for e in seen)
    if schedule == "dann":
        assert seen and all(e.tags is None for e in seen)  # the target text, untagged
        assert result["n_target_text"] == 200
    else:
        rounds = result["self_training"]
        assert [r["pseudo_labelled"] for r in rounds] == [0, 100]  # half of the 200 sentences in round 1
        assert (tmp_path / "out" / "round-1" / "best").is_dir()
    assert "test" in result and result["args"]["schedule"] == schedule


def _politics_train(crossner_data_dir):
    from crossner_hf.data.conll import read_conll

    return [(s["tokens"], s["ner_tags"]) for s in read_conll(crossner_data_dir / "politics" / "train.txt", None)]


def test_gradient_reversal_flips_and_scales_the_gradient():
    from crossner_hf.modeling.rnn.layers import reverse_gradient

    x = torch.randn(3, requires_grad=True)
    reverse_gradient(x, 0.5).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), -0.5))
