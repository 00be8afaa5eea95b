"""What the RNN recipes share: examples from datasets, texts and text files, the vocabulary and its vectors, the
end of a run (the best model scored on test, saved with its vocabulary, results and card) and what a runner
returns (:class:`RNNResult`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from crossner_hf.modeling.rnn.vocab import WordCharVocab, load_word_vectors
from crossner_hf.results import WorkflowResult, old_name, shared_record
from crossner_hf.training.rnn.loop import Example, evaluate, write_results


def examples_of(dataset, with_tags: bool = True) -> list[Example]:
    return [Example(list(t), list(y) if with_tags else None) for t, y in zip(dataset["tokens"], dataset["ner_tags"])]


class RNNResult(WorkflowResult):
    """What an RNN runner gives back: where the kept model is, its scores (fractions, not percent: ``dev_f1`` the
    best dev F1, at ``best_epoch``; ``test_f1``), ``model`` the architecture, and the whole ``results.json``
    (``results``: per-type test scores, history, the configuration, the dataset)."""

    workflow = "rnn"

    @property
    def best_epoch(self) -> int:
        return self.results["best_epoch"]

    @property
    def best_dev_f1(self) -> float:
        old_name(self, "best_dev_f1", "dev_f1")
        return self.dev_f1

    @classmethod
    def of(cls, output_dir: str | Path, results: dict[str, Any]) -> "RNNResult":
        return cls(Path(output_dir), results)


def sentences_as_examples(texts: Sequence[str] | Sequence[Sequence[str]]) -> list[Example]:
    """Unlabelled sentences as examples: a string is split on white space, a word list is taken as it is."""
    out = [Example(t.split() if isinstance(t, str) else list(t), None) for t in texts]
    out = [e for e in out if e.tokens]
    if not out:
        raise ValueError("the raw text holds no sentence with a word.")
    return out


def text_examples(paths: list[str]) -> list[Example]:
    """Sentences from text files (one a line), or from a dataset folder this project builds.

    ``FOLDER:CONFIG`` (or a folder with one config) reads its ``text`` column (DAPT corpus
    levels, Wikipedia domain corpora) or its ``tokens`` column (labeled data, labels unused).
    """
    out = []
    for spec in paths:
        folder, _, config = spec.partition(":")
        if Path(folder).is_dir():
            from datasets import load_dataset

            ds = load_dataset(folder, config or None, split="train")
            if "tokens" in ds.column_names:
                out.extend(Example(list(t), None) for t in ds["tokens"] if t)
            elif "text" in ds.column_names:
                out.extend(Example(t.split(), None) for t in ds["text"] if t.split())
            else:
                raise ValueError(f"{spec}: no 'text' or 'tokens' column (columns: {ds.column_names}).")
            continue
        with open(spec, encoding="utf-8") as fh:
            out.extend(Example(line.split(), None) for line in fh if line.split())
    if not out:
        raise ValueError(f"No text in {paths}.")
    return out


def held_out_words(args, *datasets) -> list[list[str]]:
    """The words of the ``--vocab_splits`` other than train of each ``DatasetDict`` (train words come with the data)."""
    return [list(t) for data in datasets for split in args.vocab_splits if split != "train"
            for t in data[split]["tokens"]]


def vocab_and_vectors(args, ner: list[list[str]], text: list[list[str]], *, uniform_init: bool = True):
    """The vocabulary and its word-embedding matrix: a GloVe-format file's vectors, else random ones drawn as the
    release drew them (NCRF++: uniform in +-sqrt(3 / dim); the CrossNER release: standard normal)."""
    vocab = WordCharVocab.build(ner, text, min_count=args.min_count)
    if args.word_vectors:
        return vocab, load_word_vectors(args.word_vectors, vocab, args.word_dim, seed=args.seed)
    g = torch.Generator().manual_seed(args.seed)
    if uniform_init:
        vectors = (torch.rand(len(vocab), args.word_dim, generator=g) * 2 - 1) * (3.0 / args.word_dim) ** 0.5
    else:
        vectors = torch.randn(len(vocab), args.word_dim, generator=g)
    vectors[0] = 0
    return vocab, vectors


def finish_run(model_cls, args, vocab, label_names, test, out: Path, state, started, extra, *, domain=None,
               crf_domain=None, gold_names=None, best_dir: Path | None = None) -> dict[str, Any]:
    """Score the best model (``out/best``, or ``best_dir``) on ``test``, record how it tags, and save it with its
    vocabulary, results.json and card into ``out``, all or nothing."""
    best = model_cls.from_pretrained(best_dir or out / "best")
    test_scores = evaluate(best, vocab, test, label_names, domain=domain, crf_domain=crf_domain, gold_names=gold_names)
    # how this model tags, so `crossner-hf predict` reproduces the test score (crossner_hf.inference.rnn_tagger)
    best.config.tagging = {"labels": list(label_names), "gold_labels": list(gold_names or label_names), "decode": (
        {} if domain is None else {"domain": domain, "crf_domain": crf_domain})}
    seconds = time.perf_counter() - started
    results = {
        **shared_record("rnn", model=extra["model"], dataset=extra["dataset"], seeds=[args.seed],
                        dev={"overall_f1": state.best_f1, "epoch": state.best_epoch},
                        test={k: v for k, v in test_scores.items() if k != "predictions"}, seconds=seconds),
        # the dataset's name under args.domain, where cards and readers of 0.1 results look for it
        "args": {**asdict(args), "domain": extra["dataset"]["name"]}, "best_epoch": state.best_epoch, "best_dev_f1": state.best_f1, "epochs": state.epoch,
        "steps": state.global_step, "history": state.history,
        "total_seconds": seconds, **extra,
    }
    from crossner_hf.publishing.cards import write_rnn_model_card
    from crossner_hf.outputs import staged_outputs

    with staged_outputs(out) as stage:  # the model, results and card appear together or not at all
        best.save_pretrained(stage)
        vocab.save(stage)
        write_results(stage, results)
        write_rnn_model_card(stage, results)
    return results
