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
    results = {"args": {"domain": "politics", "mode": "supervised", "word_vectors": None}, "test": {"overall_f1": 0.4182},
               "best_epoch": 4, "epochs": 4, "model": "cdlm"}
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
