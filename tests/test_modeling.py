"""The model factory and the one provenance record: appended by recipes, read by cards and predictors."""

from __future__ import annotations

import logging

import pytest
from transformers import AutoConfig, AutoModelForTokenClassification

from crossner_hf.modeling.heads import (
    PROVENANCE_ATTRIBUTE,
    model_decoding,
    read_provenance,
    record_decoding,
    record_head,
    record_pretraining,
    token_classifier_from_pretrained,
)


def test_provenance_chain_survives_save_and_load(tiny_bert_dir, tmp_path):
    model = token_classifier_from_pretrained(tiny_bert_dir, ["O", "B-x", "I-x"])
    assert read_provenance(model) == {"decoding": None, "head": None, "pretraining": [], "output_labels": None}
    assert model_decoding(model) == "argmax"  # records none: what pipeline does
    record_pretraining(model, {"kind": "dapt", "masking": "span-adjacent"})
    record_pretraining(model, {"kind": "nerbert", "config": "all"})
    record_head(model, "nerbert", labels=3)
    record_decoding(model, "bio-viterbi")
    model.save_pretrained(tmp_path / "m")
    again = read_provenance(tmp_path / "m")
    assert [s["kind"] for s in again["pretraining"]] == ["dapt", "nerbert"] and again["decoding"] == "bio-viterbi"
    assert model_decoding(AutoConfig.from_pretrained(tmp_path / "m")) == "bio-viterbi"
    assert model_decoding(model, "argmax") == "argmax"
    with pytest.raises(ValueError, match="choose one of"):
        record_decoding(model, "beam")
    with pytest.raises(ValueError, match="kind"):
        record_pretraining(model, {"corpus": "x"})


def test_head_swap_names_who_trained_the_head(tiny_bert_dir, tmp_path, caplog):
    model = token_classifier_from_pretrained(tiny_bert_dir, ["O", "B-a", "I-a", "B-b", "I-b"])
    record_head(model, "nerbert", labels=5)
    model.save_pretrained(tmp_path / "nerbert")
    with caplog.at_level(logging.WARNING, logger="crossner_hf.modeling.heads"):
        swapped = token_classifier_from_pretrained(str(tmp_path / "nerbert"), ["O", "B-x", "I-x"])
    assert "NER-BERT entity-tagging head `classifier` (5 labels)" in caplog.text
    assert read_provenance(swapped)["head"] is None  # the fresh head is nobody's yet
    caplog.clear()
    same = token_classifier_from_pretrained(str(tmp_path / "nerbert"), ["O", "B-a", "I-a", "B-b", "I-b"])
    assert caplog.text == "" and read_provenance(same)["head"]["trained_by"] == "nerbert"  # kept as it was
    record_head(same, "train", domain="music")
    same.save_pretrained(tmp_path / "ft")
    with caplog.at_level(logging.WARNING, logger="crossner_hf.modeling.heads"):
        token_classifier_from_pretrained(str(tmp_path / "ft"), ["O", "B-x", "I-x"])
    assert "dropping its token-classification head" in caplog.text  # told apart by the record, not a guess
    raw = AutoModelForTokenClassification.from_pretrained(tmp_path / "ft").config
    assert getattr(raw, PROVENANCE_ATTRIBUTE)["head"] == {"trained_by": "train", "domain": "music"}
