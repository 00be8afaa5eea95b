"""Entity-level metrics: conlleval convention, strict IOB2, per-type table, Trainer hook, evaluate module."""

from __future__ import annotations

import pytest

from crossner_hf.evaluation.metrics import (
    EVALUATE_MODULE_PATH,
    compute_ner_metrics,
)
from crossner_hf.results import format_per_type_table

# Gold: person(0-1), location(3); org(0), misc(2-3).
GOLD = [
    ["B-person", "I-person", "O", "B-location", "O"],
    ["B-organisation", "O", "B-misc", "I-misc"],
]
# Pred: person(0-1) correct, location(3) missed; org(0) correct, misc(2) too short,
# spurious location(1).
PRED = [
    ["B-person", "I-person", "O", "O", "O"],
    ["B-organisation", "B-location", "B-misc", "O"],
]


def test_hand_computed_precision_recall_f1_and_accuracy():
    m = compute_ner_metrics(GOLD, PRED)
    # 4 gold, 4 predicted, 2 correct (person, organisation).
    assert m["overall_precision"] == pytest.approx(2 / 4)
    assert m["overall_recall"] == pytest.approx(2 / 4)
    assert m["overall_f1"] == pytest.approx(0.5)
    # Token accuracy: sentence 1 wrong at position 3; sentence 2 wrong at 1 and 3 -> 6/9.
    assert m["overall_accuracy"] == pytest.approx(6 / 9)
    assert (m["n_gold_entities"], m["n_pred_entities"], m["n_tokens"], m["n_sentences"]) == (4, 4, 9, 2)


def test_per_type_scores_and_support():
    per_type = compute_ner_metrics(GOLD, PRED)["per_type"]
    assert sorted(per_type) == ["location", "misc", "organisation", "person"]
    assert per_type["person"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert per_type["organisation"]["support"] == 1
    # location: 1 gold (missed), 1 spurious prediction.
    assert per_type["location"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert per_type["misc"]["support"] == 1 and per_type["misc"]["f1"] == 0.0


def test_type_only_predicted_has_zero_support():
    m = compute_ner_metrics([["O", "B-person"]], [["B-location", "B-person"]])
    assert m["per_type"]["location"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert m["overall_precision"] == pytest.approx(0.5) and m["overall_recall"] == 1.0


def test_inside_after_outside_opens_an_entity_in_conlleval_mode_but_not_in_strict():
    gold = [["O", "B-person", "I-person", "O"]]
    pred = [["O", "I-person", "I-person", "O"]]
    m = compute_ner_metrics(gold, pred)
    assert m["overall_f1"] == 1.0  # conlleval: I-person after O starts the person entity
    assert m["strict_overall_precision"] == 0.0 and m["strict_overall_f1"] == 0.0
    assert m["strict_overall_recall"] == 0.0


def test_type_change_inside_a_run_opens_a_new_entity():
    gold = [["B-person", "I-person"]]
    pred = [["B-person", "I-location"]]
    m = compute_ner_metrics(gold, pred)
    # Pred has two entities, person(0) and location(1); neither matches person(0-1).
    assert m["n_pred_entities"] == 2
    assert m["overall_precision"] == 0.0 and m["overall_recall"] == 0.0
    assert m["per_type"]["location"]["support"] == 0
    # Strict IOB2: the stray I-location is no entity, so only person(0) is predicted.
    assert m["strict_per_type"].get("location") is None
    assert m["strict_per_type"]["person"]["precision"] == 0.0


def test_no_warning_when_no_entity_is_found():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = compute_ner_metrics([["I-person", "O"]], [["O", "O"]])
    assert m["strict_per_type"] == {} and m["strict_overall_f1"] == 0.0
    assert m["per_type"]["person"]["support"] == 1 and m["overall_recall"] == 0.0


def test_strict_and_conlleval_agree_on_valid_iob2():
    m = compute_ner_metrics(GOLD, PRED)
    for k in ("precision", "recall", "f1"):
        assert m[f"strict_overall_{k}"] == pytest.approx(m[f"overall_{k}"])


def test_perfect_prediction_scores_one_and_empty_prediction_zero():
    perfect = compute_ner_metrics(GOLD, GOLD)
    assert perfect["overall_precision"] == perfect["overall_recall"] == perfect["overall_f1"] == 1.0
    assert perfect["overall_accuracy"] == 1.0 and perfect["strict_overall_f1"] == 1.0
    empty = compute_ner_metrics(GOLD, [["O"] * len(s) for s in GOLD])
    assert empty["overall_precision"] == empty["overall_recall"] == empty["overall_f1"] == 0.0
    assert empty["strict_overall_f1"] == 0.0
    assert all(v["support"] >= 1 and v["f1"] == 0.0 for v in empty["per_type"].values())


def test_fractions_lie_in_unit_interval():
    m = compute_ner_metrics(GOLD, PRED)
    for key, value in m.items():
        if key.startswith(("overall_", "strict_overall_")):
            assert 0.0 <= value <= 1.0, key


def test_length_mismatch_names_sentence_and_lengths():
    with pytest.raises(ValueError, match=r"Sentence 1: gold has 4 tags but pred has 3"):
        compute_ner_metrics(GOLD, [PRED[0], PRED[1][:3]])
    with pytest.raises(ValueError, match=r"gold has 2 sentences but pred has 1"):
        compute_ner_metrics(GOLD, PRED[:1])


def test_non_string_tags_and_empty_corpus_are_rejected():
    with pytest.raises(ValueError, match="non-string tag"):
        compute_ner_metrics([["O", "B-person"]], [[0, 1]])
    with pytest.raises(ValueError, match="no tokens"):
        compute_ner_metrics([], [])


def test_tuples_are_accepted_like_lists():
    m = compute_ner_metrics([tuple(s) for s in GOLD], [tuple(s) for s in PRED])
    assert m["overall_accuracy"] == pytest.approx(6 / 9)


def test_per_type_table_lists_types_sorted_with_overall_row():
    table = format_per_type_table(compute_ner_metrics(GOLD, PRED))
    lines = table.splitlines()
    assert lines[0].split() == ["type", "precision", "recall", "f1", "support"]
    assert [line.split()[0] for line in lines[1:]] == [
        "location",
        "misc",
        "organisation",
        "person",
        "overall",
    ]
    assert lines[-1].split() == ["overall", "50.00", "50.00", "50.00", "4"]
    assert lines[4].split() == ["person", "100.00", "100.00", "100.00", "1"]
    strict = format_per_type_table(compute_ner_metrics([["I-person"]], [["I-person"]]), strict=True)
    assert strict.splitlines()[-1].split() == ["overall", "0.00", "0.00", "0.00", "0"]
    with pytest.raises(ValueError, match="compute_ner_metrics"):
        format_per_type_table({"overall_f1": 1.0})


def test_evaluate_module_loads_offline_and_matches(tmp_path, monkeypatch):
    import evaluate

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    metric = evaluate.load(EVALUATE_MODULE_PATH, cache_dir=str(tmp_path), keep_in_memory=True)
    direct = compute_ner_metrics(GOLD, PRED)
    assert metric.compute(predictions=PRED, references=GOLD) == direct
    # Incremental use (add_batch) yields the same numbers.
    for g, p in zip(GOLD, PRED):
        metric.add_batch(predictions=[p], references=[g])
    assert metric.compute() == direct


def test_scores_equal_seqevals_own_scorers_to_the_last_bit():
    """compute_ner_metrics extracts each corpus's entities once (the strict ones read off the conlleval ones);
    every figure must still be seqeval's."""
    import random
    import warnings

    from seqeval.metrics import accuracy_score
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support
    from seqeval.metrics.v1 import classification_report
    from seqeval.scheme import IOB2

    tags = ["O", "B-a", "I-a", "B-b", "I-b", "B-long-type", "I-long-type"]
    rng = random.Random(0)
    for _ in range(300):
        gold = [[rng.choice(tags) for _ in range(rng.randint(0, 9))] for _ in range(rng.randint(1, 6))]
        gold[0].append("B-a")  # at least one token
        pred = [[rng.choice(tags) for _ in sentence] for sentence in gold]
        m = compute_ner_metrics(gold, pred)
        p, r, f, _ = precision_recall_fscore_support(gold, pred, average="micro", zero_division=0)
        assert (m["overall_precision"], m["overall_recall"], m["overall_f1"]) == (p, r, f)
        ps, rs, fs, ss = precision_recall_fscore_support(gold, pred, average=None, zero_division=0)
        assert [(v["precision"], v["recall"], v["f1"], v["support"]) for _, v in sorted(m["per_type"].items())] \
            == list(zip(ps, rs, fs, ss))
        assert m["overall_accuracy"] == accuracy_score(gold, pred)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = classification_report(gold, pred, output_dict=True, zero_division=0, scheme=IOB2)
        micro = report.pop("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0})
        assert (m["strict_overall_precision"], m["strict_overall_recall"], m["strict_overall_f1"]) == \
            (micro["precision"], micro["recall"], micro["f1-score"])
        assert m["strict_per_type"] == {
            t: {"precision": v["precision"], "recall": v["recall"], "f1": v["f1-score"], "support": v["support"]}
            for t, v in report.items() if not t.endswith(" avg")}


def test_tags_outside_iob2_meet_seqevals_own_strict_check():
    from seqeval.metrics.v1 import classification_report
    from seqeval.scheme import IOB2

    gold, pred = [["B-a", "E-a", "O"]], [["S-a", "O", "O"]]
    with pytest.raises(ValueError, match="Invalid token") as ours:
        compute_ner_metrics(gold, pred)
    with pytest.raises(ValueError) as theirs:
        classification_report(gold, pred, output_dict=True, zero_division=0, scheme=IOB2)
    assert str(ours.value) == str(theirs.value)


def test_entity_spans_read_any_scheme_as_seqeval_does():
    """One sentence's entities (reports, confusion, plots): IOB2 read in numpy, IOBES by seqeval; both equal
    seqeval's get_entities."""
    import random

    from seqeval.metrics.sequence_labeling import get_entities

    from crossner_hf.data.entities import entity_spans

    rng = random.Random(1)
    for tags in (["O", "B-a", "I-a", "B-b", "I-b"], ["O", "B-a", "I-a", "E-a", "S-a", "S-b"]):
        for _ in range(300):
            sentence = [rng.choice(tags) for _ in range(rng.randint(0, 10))]
            assert entity_spans(sentence) == get_entities(sentence)
