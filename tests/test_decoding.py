"""BIO-constrained Viterbi against brute force, and the argmax path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crossner_hf.modeling.decoding import bio_viterbi, decode, viterbi_batch


def _valid(tags: list[str]) -> bool:
    prev = "O"
    for t in tags:
        if t.startswith("I-") and (prev == "O" or prev[2:] != t[2:]):
            return False
        prev = t
    return True


NAMES = ["O", "B-per", "I-per", "B-loc", "I-loc"]


@pytest.mark.parametrize("seed", range(40))
def test_viterbi_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    scores = np.log(rng.dirichlet(np.ones(len(NAMES)) * 0.5, size=n))
    best = max(
        (seq for seq in itertools.product(range(len(NAMES)), repeat=n) if _valid([NAMES[i] for i in seq])),
        key=lambda seq: sum(scores[t, i] for t, i in enumerate(seq)),
    )
    assert bio_viterbi(scores, NAMES) == list(best)


@pytest.mark.parametrize("ties", [False, True])
def test_the_batched_viterbi_gives_each_sentences_own_path(ties):
    """decode's Viterbi runs many sentences at once, in chunks, longest first: every path is bio_viterbi's, ties
    included (scores rounded to one decimal tie often), for sentences of every length in any order, empty ones too,
    and a chunk boundary between sentences of equal length."""
    from crossner_hf.data.labels import LABELS

    names = LABELS["politics"]
    rng = np.random.default_rng(7)
    sentences = []
    for _ in range(150):
        n = int(rng.choice([0, 1, 2, 3, 7, 7, 20, 41]))
        s = np.log(rng.dirichlet(np.ones(len(names)) * 0.3, size=n))
        sentences.append(np.round(s, 1) if ties else s)
    expected = [bio_viterbi(s, names) for s in sentences]
    assert viterbi_batch(sentences, names, chunk=16) == expected
    assert decode(sentences, names, "bio-viterbi") == expected
    assert viterbi_batch([], names) == []
    with pytest.raises(ValueError, match="shape"):
        viterbi_batch([np.zeros((2, 3))], names)


def test_fixes_orphans_and_type_changes():
    # argmax reads O I-per B-per I-loc: an orphan and a type change
    probs = np.array([[0.9, 0.02, 0.03, 0.03, 0.02], [0.45, 0.05, 0.5, 0.0, 0.0],
                      [0.0, 0.9, 0.05, 0.05, 0.0], [0.1, 0.0, 0.4, 0.0, 0.5]]) + 1e-6
    scores = np.log(probs)
    assert [NAMES[i] for i in decode([scores], NAMES, "argmax")[0]] == ["O", "I-per", "B-per", "I-loc"]
    assert [NAMES[i] for i in bio_viterbi(scores, NAMES)] == ["O", "O", "B-per", "I-per"]


def test_errors_and_empty():
    assert bio_viterbi(np.zeros((0, 5)), NAMES) == []
    with pytest.raises(ValueError, match="shape"):
        bio_viterbi(np.zeros((2, 3)), NAMES)
    with pytest.raises(ValueError, match="decoding='beam'"):
        decode([np.zeros((1, 5))], NAMES, "beam")


def test_predict_tags_viterbi_gives_valid_sequences(tiny_bert_dir):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.data.labels import LABELS
    from crossner_hf.inference.predict import predict_tags

    names = LABELS["politics"]
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, num_labels=len(names), id2label=dict(enumerate(names)))
    tok = AutoTokenizer.from_pretrained(tiny_bert_dir)
    sents = [["the", "senate", "of", "france", "voted"] * k for k in range(1, 8)]
    argmax = predict_tags(model, tok, sents)
    viterbi = predict_tags(model, tok, sents, decoding="bio-viterbi")
    assert [len(s) for s in viterbi] == [len(s) for s in sents]
    assert all(_valid(s) for s in viterbi)
    assert not all(_valid(s) for s in argmax)  # a random head emits orphans: the test can fail
