"""crossner_hf.inference.tagger: the one inference door. Tagger is abstract (a kind implements tag_with_scores),
tag / tag_texts are written once on top of it, and every tagging path (predict, report, evaluate_tagger, the
pipeline class, the corpus builder's mention finder, the RNN recipes' evaluation) goes through it."""

from __future__ import annotations

import json
import typing
from collections.abc import Sequence

import numpy as np
import pytest

from crossner_hf.cli import main as cli_main
from crossner_hf.inference.tagger import Tagger, TransformerTagger


class CapitalTagger(Tagger):
    """A kind with no model: a capitalised word is B-thing, a capitalised word after one is I-thing."""

    labels = ["O", "B-thing", "I-thing"]
    gold_labels = labels
    decoding = "rule"
    runtime = "python"

    def __init__(self) -> None:
        self.calls: list[int] = []

    @classmethod
    def from_folder(cls, path, *, device=None, decoding=None, threads=None) -> CapitalTagger:
        return cls()

    def tag_with_scores(self, sentences: Sequence[Sequence[str]], *, batch_size: int = 64, progress: bool = False):
        self.calls.append(len(sentences))
        tags = []
        for words in sentences:
            row = []
            for i, w in enumerate(words):
                cap = w[:1].isupper()
                row.append("O" if not cap else ("I-thing" if i and row[-1] != "O" else "B-thing"))
            tags.append(row)
        return tags, None


def test_tagger_is_abstract_and_from_pretrained_is_typed():
    with pytest.raises(TypeError, match="abstract"):
        Tagger()

    class Half(Tagger):  # no tag_with_scores: not a tagger
        @classmethod
        def from_folder(cls, path, **kwargs):
            return cls()

    with pytest.raises(TypeError, match="tag_with_scores"):
        Half()
    assert Tagger.__abstractmethods__ == {"tag_with_scores", "from_folder"}
    hints = typing.get_type_hints(Tagger.from_pretrained)
    assert hints["return"] is Tagger


def test_tag_texts_is_written_once_over_tag_with_scores():
    tagger = CapitalTagger()
    texts = ["Ada Lovelace met Charles Babbage in London.", "", "nothing here"]
    out = tagger.tag_texts(texts, nltk_data=None)
    assert tagger.calls == [2]  # every sentence of every input in one run (the empty text has none)
    assert [t["text"] for t in out] == texts
    first = out[0]
    assert [w for w, _, _ in first["words"]][:3] == ["Ada", "Lovelace", "met"]
    assert [(e["word"], e["entity_group"], e["score"]) for e in first["entities"]] == [
        ("Ada Lovelace", "thing", 1.0), ("Charles Babbage", "thing", 1.0), ("London", "thing", 1.0)]
    assert all(texts[0][e["start"]:e["end"]] == e["word"] for e in first["entities"])
    assert out[1] == {"text": "", "words": [], "tags": [], "entities": []} and out[2]["entities"] == []
    # a word list is one sentence, shown joined by the delimiter; tag() refuses a string
    words = tagger.tag_texts([["Grace", "Hopper", "wrote", "COBOL"]], delimiter="_")[0]
    assert words["text"] == "Grace_Hopper_wrote_COBOL" and words["entities"][0]["word"] == "Grace_Hopper"
    with pytest.raises(ValueError, match="got one str"):
        tagger.tag("Grace Hopper")


def _head(tiny_bert_dir, folder, labels, favourite):
    """A tiny BERT whose head says ``favourite`` for every word (zero weights, one large bias)."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    model = AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={t: i for i, t in enumerate(labels)})
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[labels.index(favourite)] = 5.0
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(folder)
    return folder


def test_the_pipeline_class_and_the_mention_finder_tag_through_tagger(tiny_bert_dir, tmp_path, monkeypatch):
    from crossner_hf.corpora.model_mentions import ModelMentionFinder
    from crossner_hf.inference.pipelines import load_pipeline

    folder = _head(tiny_bert_dir, tmp_path / "m", ["O", "B-x", "I-x"], "B-x")
    calls = []
    original = TransformerTagger.tag_with_scores

    def counted(self, sentences, **kwargs):
        calls.append(len(sentences))
        return original(self, sentences, **kwargs)

    monkeypatch.setattr(TransformerTagger, "tag_with_scores", counted)
    text = "Ada met Charles ."
    expected = Tagger.from_pretrained(folder).tag_texts([text])[0]["entities"]
    assert [e["word"] for e in expected] == ["Ada", "met", "Charles", "."]  # every word B-x
    assert load_pipeline(str(folder))(text) == expected
    mentions = ModelMentionFinder(str(folder))([text, ""])
    assert [m.surface for m in mentions[0]] == ["Ada", "met", "Charles", "."] and mentions[1] == []
    assert calls == [1, 1, 1]  # one Tagger run each: tag_texts, the pipeline, the finder (the empty text skipped)


def test_rnn_evaluation_tags_through_the_rnn_tagger():
    import torch

    from crossner_hf.inference.rnn_tagger import RNNTagger
    from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFConfig, BiLSTMCRFForTokenClassification
    from crossner_hf.modeling.rnn.vocab import WordCharVocab
    from crossner_hf.training.rnn.loop import Example, evaluate

    sentences = [["Ada", "met", "Charles"], ["London", "."]]
    vocab = WordCharVocab.build(sentences)
    labels = ["O", "B-x", "I-x"]
    torch.manual_seed(0)
    model = BiLSTMCRFForTokenClassification(BiLSTMCRFConfig(
        num_labels=3, id2label=dict(enumerate(labels)), vocab_size=len(vocab.words),
        char_vocab_size=len(vocab.chars), word_dim=8, char_dim=4, char_filters=4, hidden_size=8))
    model.train()
    tagger = RNNTagger.from_model(model, vocab, labels)
    assert isinstance(tagger, Tagger) and tagger.decoding == "crf-viterbi"
    tags, scores = tagger.tag_with_scores(sentences)
    assert scores is None and [len(t) for t in tags] == [3, 2] and model.training  # training flag restored
    examples = [Example(list(s), [0] * len(s)) for s in sentences]
    assert evaluate(model, vocab, examples, labels)["predictions"] == tags


def test_predict_tags_is_a_thin_wrapper_of_the_tagger(tiny_bert_dir, tmp_path):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crossner_hf.inference import predict

    folder = _head(tiny_bert_dir, tmp_path / "m", ["O", "B-x", "I-x"], "B-x")
    model = AutoModelForTokenClassification.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert predict.predict_tags(model, tokenizer, [["Ada", "met"]]) == [["B-x", "B-x"]]
    assert TransformerTagger(model, tokenizer).tag([["Ada", "met"]]) == [["B-x", "B-x"]]


def _jsonl_folder(folder):
    """A user's JSON Lines folder: columns `sentence_tokens` / `ner_labels`, their own types."""
    rows = {"train": [(["Ada", "met", "Charles", "."], ["B-scholar", "O", "B-scholar", "O"]),
                      (["Visit", "London", "now"], ["O", "B-town", "O"])],
            "validation": [(["Hello", "Paris"], ["O", "B-town"])],
            "test": [(["Ada", "Lovelace", "lives", "in", "London"], ["B-scholar", "I-scholar", "O", "O", "B-town"]),
                     (["Charles", "sleeps"], ["B-scholar", "O"]),
                     (["Rome", "and", "Paris", "."], ["B-town", "O", "B-town", "O"])]}
    folder.mkdir()
    for split, items in rows.items():
        (folder / f"{split}.jsonl").write_text("".join(json.dumps({"sentence_tokens": w, "ner_labels": t}) + "\n"
                                                       for w, t in items), encoding="utf-8")
    return folder


def test_predict_dataset_dir_prints_the_scores_of_report_and_evaluate_tagger(tiny_bert_dir, tmp_path, capsys):
    from crossner_hf.data.target import load_target
    from crossner_hf.evaluation.scoring import evaluate_tagger

    data = _jsonl_folder(tmp_path / "mydata")
    columns = ["--text_column_name", "sentence_tokens", "--label_column_name", "ner_labels"]
    target = load_target(str(data), text_column="sentence_tokens", label_column="ner_labels")
    model = _head(tiny_bert_dir, tmp_path / "model", target.labels, "B-town")  # every word a town
    evaluation = evaluate_tagger(Tagger.from_pretrained(model), target, "test")
    assert 0 < evaluation.f1 < 1 and "town" in evaluation.per_type  # partly right: the figures say something
    capsys.readouterr()
    assert cli_main(["predict", "--model", str(model), "--dataset_dir", str(data), *columns, "--split", "test"]) == 0
    printed = capsys.readouterr()
    assert evaluation.summary() in printed.err
    assert f"F1 {100 * evaluation.f1:.2f} (conlleval)" in printed.err
    assert printed.out == ""  # the scores, not a line a word, unless the tags are asked for
    tags = tmp_path / "tags.conll"
    assert cli_main(["predict", "--model", str(model), "--dataset_dir", str(data), *columns, "--split", "test",
                     "--output", str(tags)]) == 0
    assert evaluation.summary() in capsys.readouterr().err
    rows = [line.split("\t") for line in tags.read_text().splitlines() if line]
    assert [r[2] for r in rows] == [t for sent in evaluation.pred for t in sent]  # word, gold, predicted
    assert cli_main(["report", "--model", str(model), "--dataset_dir", str(data), *columns, "--output",
                     str(tmp_path / "r.html"), "--n_boot", "10"]) == 0
    assert evaluation.summary() in capsys.readouterr().out
    # the data flags are checked as the other commands check them
    assert cli_main(["predict", "--model", str(model), "--dataset_dir", str(data), "--pretokenized"]) == 2
    assert "already word-split" in capsys.readouterr().err


def test_confusion_says_no_type_errors_only_when_its_count_is_zero(tiny_bert_dir, tmp_path, capsys):
    """Types outside the CrossNER hierarchy have no in-branch share; the line must follow the wrong-type count."""
    from crossner_hf.data.target import load_target

    data = _jsonl_folder(tmp_path / "mydata")
    columns = ["--text_column_name", "sentence_tokens", "--label_column_name", "ner_labels"]
    labels = load_target(str(data), text_column="sentence_tokens", label_column="ner_labels").labels
    for favourite, type_errors in (("B-town", True), ("O", False)):
        model = _head(tiny_bert_dir, tmp_path / f"model-{favourite}", labels, favourite)
        out = tmp_path / f"conf-{favourite}"
        capsys.readouterr()
        assert cli_main(["confusion", "--model", str(model), "--dataset_dir", str(data), *columns,
                         "--output_dir", str(out)]) == 0
        printed = capsys.readouterr().out
        record = json.loads((out / "confusion.json").read_text())
        assert (record["type_errors"] > 0) is type_errors and record["in_branch_share"] is None
        assert ("no type errors" in printed) is (not type_errors)
        assert ("wrong-type 0" in printed) is (not type_errors)
