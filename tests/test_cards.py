"""One card engine: every template in model_cards/ renders through cards.render (Jinja, strict), and
each citation comes from cards.CITATIONS once."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from crossner_hf.publishing import cards

TEMPLATES = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "model_cards").glob("*.md"))


def test_a_missing_value_is_an_error_not_a_blank():
    import jinja2

    with pytest.raises(jinja2.UndefinedError):
        cards.render("dapt_model", {})


def test_rnn_card_cites_each_paper_once(tmp_path):
    results = {"args": {"mode": "supervised", "word_vectors": None}, "test": {"overall_f1": 0.4182},
               "dataset": {"name": "politics", "source": "crossner"}, "dev": {"overall_f1": 0.5, "epoch": 4},
               "epochs": 4, "model": "cdlm"}
    text = cards.write_rnn_model_card(tmp_path, results).read_text()
    assert "Test F1 41.82" in text and text.count("@inproceedings{jia2019cross") == 1
    assert text.count("@inproceedings{liu2021crossner") == 1 and "{{" not in text


def test_every_template_is_jinja_and_no_module_pastes_bibtex():
    assert set(TEMPLATES) >= {"crossner_dataset", "dapt_model", "ner_model", "nerbert_model", "rnn_model",
                              "nerbert_corpus", "domain_corpora"}
    root = Path(cards.__file__).resolve().parents[1]
    pasted = [p for p in root.rglob("*.py") if "@inproceedings" in p.read_text() or "@article{" in p.read_text()]
    assert pasted == [root / "citations.py"]
    for name in TEMPLATES:
        text = resources.files("crossner_hf.model_cards").joinpath(f"{name}.md").read_text()
        assert re.search(r"\$\{?[a-z_]+", text) is None, name  # no string.Template placeholder left


def test_an_rnn_card_holds_no_absolute_path(tmp_path):
    """Issue 55: a card is published; the word vectors' path, and a path inside a string (an error line), reach it
    as their last part only, from the runner's finish and from the card writer alike."""
    from crossner_hf.training.runs import finish_output

    home = str(tmp_path / "home" / "me")
    results = {"args": {"mode": "supervised", "word_vectors": f"{home}/vectors/glove.txt"},
               "dataset": {"name": "politics", "source": "crossner"}, "dev": {"overall_f1": 0.5, "epoch": 4},
               "test": {"overall_f1": 0.4182}, "epochs": 4, "model": "bilstm-crf",
               "note": f"read {home}/vectors/glove.txt (line 3); see https://huggingface.co/a/b"}
    out = tmp_path / "run"
    finish_output(out, results, save=lambda stage: None, card=lambda stage, r, repo_id: cards.write_rnn_model_card(stage, r))
    text = (out / "README.md").read_text()
    assert home not in text and str(tmp_path) not in text and "glove.txt" in text, text
    assert home not in (out / "results.json").read_text()
    direct = cards.write_rnn_model_card(tmp_path / "direct", results).read_text()  # the raw results: still none
    assert str(tmp_path) not in direct


def test_an_adapt_card_with_a_failed_cell_holds_no_absolute_path(tmp_path):
    """The failed cell's last error line (which names its files by absolute path) reaches the table of adapt.md and
    the pushed best/README.md without them."""
    from crossner_hf.grid import Cell
    from crossner_hf.selection.candidates import Method
    from crossner_hf.selection.choice import choose
    from crossner_hf.selection.evidence import card_section, markdown_table
    from crossner_hf.selection.run import rows_of

    cell = Cell(name="missing-encoder/direct/seed-1", command="train", row="missing-encoder/direct",
                column="seed-1")
    (cell.folder(tmp_path) / ".failed").parent.mkdir(parents=True)
    (cell.folder(tmp_path) / ".failed").write_text(
        f"OSError: {tmp_path}/home/me/missing-encoder/config.json: no such file; see /opt/x/y.log\n")
    method = Method("missing-encoder/direct", "direct", cells=(cell,))
    rows = rows_of([method], tmp_path, {cell.name: "failed"}, "smoke")
    assert rows[0].status.startswith("failed: missing-encoder/direct/seed-1: OSError: config.json: no such file")
    card = card_section(markdown_table(rows, choose(rows, "cheaper")), choose(rows, "cheaper"), None)
    assert str(tmp_path) not in card and "/opt/x" not in card and "missing-encoder/direct" in card
