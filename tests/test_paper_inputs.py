"""The runs read what the papers' runs read: DANN's classifier the source raw text (004:1100-1103), CDLM Figure
6's target LM the whole training text at any --few_shot (004:754-755, 004:1048-1050), Figure 8's both-varying
line equal amounts of source and target text (004:1154-1156); CDLM's loss in Eq. 9's form on request (004:639);
NER-BERT Figure 2's gains on a second axis (003:128); a `reproduce` RNN cell the GloVe file it was given
(004:835-837)."""

from __future__ import annotations

import pytest


def _small(cls, tmp_path, crossner_data_dir, **kw):
    base = dict(domain="politics", output_dir=str(tmp_path / "out"), data_dir=str(crossner_data_dir), word_dim=16,
                char_dim=8, char_filters=8, hidden_size=16, use_cpu=True, seed=3, early_stopping_patience=0)
    base.update(kw)
    return cls(**base)


def test_dann_classifier_reads_the_source_raw_text(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf
    from crossner_hf.training.rnn import adaptation

    reuters = [f"Reuters wire number {i} reports shares rose ." for i in range(12)]
    (tmp_path / "reuters.txt").write_text("\n".join(reuters) + "\n")
    seen: list[str] = []
    real = adaptation.tensors

    def spy(vocab, batch, device):
        seen.extend(" ".join(e.tokens) for e in batch)
        return real(vocab, batch, device)

    monkeypatch.setattr(adaptation, "tensors", spy)
    result = run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path, crossner_data_dir, schedule="dann", max_steps=3,
                                   source_subsample=30, batch_size=4, source_text=[str(tmp_path / "reuters.txt")]))
    assert result["n_source_text"] == 12 and result["n_target_text"] == 200
    assert len(set(seen) & set(reuters)) == 12  # three steps of 4 source-text sentences: every line once
    with pytest.raises(ValueError, match="--source_text is read by --schedule dann only"):
        BiLSTMCRFArguments(schedule="self-train", source_text=["x.txt"])
    # without the flag the classifier's source side stays CoNLL-2003's batch, and the record says so
    seen.clear()
    plain = run_bilstm_crf(_small(BiLSTMCRFArguments, tmp_path / "plain", crossner_data_dir, schedule="dann",
                                  max_steps=2, source_subsample=30, batch_size=4))
    assert plain["n_source_text"] is None and not set(seen) & set(reuters)


def test_cdlm_few_shot_keeps_the_whole_training_text_for_the_target_lm(tmp_path, crossner_data_dir, monkeypatch):
    """At 10 labelled sentences (Figure 6's nearly unsupervised end) the target LM still reads all 200 politics
    training sentences, and the NER stream reads 10."""
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm
    from crossner_hf.training.rnn import recipes

    sizes = {}

    class Recording(recipes.Stream):
        def __init__(self, examples, batch_size, seed):
            super().__init__(examples, batch_size, seed)
            sizes[seed - 3] = len(self.examples)  # 0: source NER, 1: source text, 2: target text, 3: target NER

    monkeypatch.setattr(recipes, "Stream", Recording)
    result = run_cdlm(_small(CDLMArguments, tmp_path, crossner_data_dir, few_shot=10, max_steps=1,
                             source_subsample=20, lm_negatives=5))
    assert result["lm_text_sentences"] == {"source": 20, "target": 200}
    assert sizes == {0: 20, 1: 20, 2: 200, 3: 10}


def test_cdlm_equal_text_fraction_draws_as_many_source_as_target_sentences(tmp_path, crossner_data_dir, monkeypatch):
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm

    # 60 CoNLL-2003 sentences against 200 politics ones: half of the smaller, 30, from each
    result = run_cdlm(_small(CDLMArguments, tmp_path, crossner_data_dir, mode="zero-shot", equal_text_fraction=0.5,
                             max_steps=1, source_subsample=60, lm_negatives=5))
    assert result["lm_text_sentences"] == {"source": 30, "target": 30}
    whole = run_cdlm(_small(CDLMArguments, tmp_path / "whole", crossner_data_dir, mode="zero-shot",
                            equal_text_fraction=1.0, max_steps=1, source_subsample=60, lm_negatives=5))
    assert whole["lm_text_sentences"] == {"source": 60, "target": 60}
    with pytest.raises(ValueError, match="--equal_text_fraction 0.5: give a share in"):
        CDLMArguments(equal_text_fraction=0.5, source_text_fraction=0.25)


def test_cdlm_loss_form_eq9_restores_the_papers_form():
    """The release's 1 1 1 2 (supervised_domain_adaptation/main.py:475) has no Eq. 9 form; --loss_form eq9 gives
    lambda_d (L_ner + lambda_t L_lm) (004:639)."""
    from crossner_hf.commands.cdlm import CDLMArguments

    assert CDLMArguments().loss_form == "release" and CDLMArguments().loss_weights == [1.0, 1.0, 1.0, 2.0]
    assert CDLMArguments(loss_form="eq9").loss_weights == [1.0, 1.0, 1.0, 1.0]
    eq9 = CDLMArguments(loss_form="eq9", domain_weights=[1.0, 2.0], task_weight=0.5)
    assert eq9.loss_weights == [0.5, 1.0, 1.0, 2.0]  # LM-src, NER-src, LM-tgt, NER-tgt
    assert CDLMArguments(loss_form="eq9", mode="zero-shot").loss_weights == [1.0, 1.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="both set the weights"):
        CDLMArguments(loss_form="eq9", loss_weights=[1.0, 1.0, 1.0, 2.0])
    # no lambda_t gives the release's weights: LM / NER is 1 on the source and 0.5 on the target
    release = CDLMArguments().loss_weights
    assert release[0] / release[1] != release[2] / release[3]


def test_nerbert_fig2_draws_the_gains_on_a_second_axis(tmp_path, monkeypatch):
    from crossner_hf.evaluation import plots
    from crossner_hf.reproduce.tables import write_curve_figure

    figures = []
    real = plots._save

    def keep(plt, fig, path):
        figures.append([(ax.get_ylabel(), [(l.get_linestyle(), list(l.get_xdata()), list(l.get_ydata()))
                                           for l in ax.get_lines()]) for ax in fig.axes])
        return real(plt, fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    scores = {("BERT (twitter)", "1"): [0.40, 0.44], ("NER-BERT (twitter)", "1"): [0.50, 0.52],
              ("BERT (twitter)", "10"): [0.60, 0.60], ("NER-BERT (twitter)", "10"): [0.63, 0.65]}
    cells = []

    class Done:  # what read_score needs of a cell
        def __init__(self, row, column, seed, score):
            self.row, self.column, self.seed, self.score, self.meta = row, column, seed, score, {"domain": "twitter"}

    for (row, column), values in scores.items():
        cells += [Done(row, column, seed, v) for seed, v in enumerate(values)]
    monkeypatch.setattr("crossner_hf.reproduce.tables.read_score", lambda cell, out: 100 * cell.score)
    assert write_curve_figure("nerbert-fig2", cells, tmp_path, xlabel="%", model="m").stat().st_size > 1000
    (left, right), = figures
    assert left[0] == "test F1 (%)" and "NER-BERT - BERT" in right[0]
    (_, xs, gains), = [line for line in right[1] if line[0] == "--"]  # the dashed gain line (not the zero line)
    assert xs == [1.0, 10.0] and gains == pytest.approx([100 * (0.51 - 0.42), 100 * (0.64 - 0.60)])
    # another figure keeps one axis
    figures.clear()
    write_curve_figure("crossner-fig3", cells, tmp_path, xlabel="n", model="m")
    assert len(figures[0]) == 1


def test_a_reproduce_rnn_cell_starts_from_the_given_word_vectors(tmp_path, crossner_data_dir, monkeypatch):
    """The papers' RNNs start from GloVe (004:835-837, 002:429-431): a cell `reproduce --word_vectors` planned
    loads that very file into its embedding matrix when its command line runs (here CDLM Table 3's STM-TARGET at
    cpu scale, cut to one step); without the file at --scale paper the cell never runs (test_reproduce.py)."""
    from crossner_hf.cli import main
    from crossner_hf.reproduce.experiments import plan
    from crossner_hf.reproduce.vectors import RNNVectors
    from crossner_hf.training.rnn import common

    glove = tmp_path / "glove.6B.100d.txt"
    glove.write_text("".join(f"{word} {' '.join([f'{0.25 + i / 100:g}'] * 100)}\n"
                             for i, word in enumerate(("election", "party", "parliament"))))
    grid = plan("cdlm-table3", "cpu", tmp_path / "grid", domains=["politics"], data_dir=str(crossner_data_dir),
                rows=["STM-TARGET"], vectors=RNNVectors.from_flags("cpu", word_vectors=str(glove)))
    cell = grid.cells[0]
    loaded = []
    real = common.load_word_vectors

    def spy(path, vocab, dim, seed=0):
        matrix = real(path, vocab, dim, seed=seed)
        loaded.append((path, vocab, matrix))
        return matrix

    monkeypatch.setattr(common, "load_word_vectors", spy)
    assert main([cell.command, *cell.flags(), "--output_dir", str(tmp_path / "run"), "--num_train_epochs", "1",
                 "--max_steps_per_epoch", "1"]) == 0
    (path, vocab, matrix), = loaded
    assert path == str(glove.resolve())
    assert matrix[vocab.words.index("election")].tolist() == pytest.approx([0.25] * 100)
    assert matrix[vocab.words.index("parliament")].tolist() == pytest.approx([0.27] * 100)
