"""What the RNN recipes share: examples from datasets, texts and text files, the vocabulary and its vectors, the
end of a run (the best model scored on test, saved with its vocabulary, results and card) and what a runner
returns (:class:`RNNResult`)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from crossner_hf.modeling.rnn.vocab import WordCharVocab, load_word_vectors
from crossner_hf.results import WorkflowResult, shared_record
from crossner_hf.training.runs import finish_output
from crossner_hf.training.rnn.loop import Example, evaluate


def examples_of(dataset, with_tags: bool = True) -> list[Example]:
    return [Example(list(t), list(y) if with_tags else None) for t, y in zip(dataset["tokens"], dataset["ner_tags"])]


class RNNResult(WorkflowResult):
    """What an RNN runner gives back: where the kept model is, its scores (fractions, not percent: ``dev_f1`` the
    best dev F1, at ``best_epoch``; ``test_f1``), ``model`` the architecture, and the whole ``results.json``
    (``results``: per-type test scores, history, the configuration, the dataset)."""

    workflow = "rnn"

    @property
    def best_epoch(self) -> int:
        return self.results["dev"]["epoch"]

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
    """Sentences (words split at white space) from text files (one a line), or from a dataset folder this project
    builds (``FOLDER:CONFIG``, or a folder with one config: its ``text`` column, DAPT corpus levels and Wikipedia
    domain corpora, or its ``tokens`` column, labeled data with the labels unused), each read by
    :func:`crossner_hf.corpora.text.load_text_corpus`, the one raw-text reader."""
    from crossner_hf.corpora.text import load_text_corpus

    out = [Example(words, None) for spec in paths for words in (t.split() for t in load_text_corpus(spec)["text"])
           if words]
    if not out:
        raise ValueError(f"No text in {paths}.")
    return out


def held_out_words(args, *datasets) -> list[list[str]]:
    """The words of the ``--vocab_splits`` other than train of each ``DatasetDict`` (train words come with the data)."""
    return [list(t) for data in datasets for split in args.vocab_splits if split != "train"
            for t in data[split]["tokens"]]


def vocab_and_vectors(args, ner: list[list[str]], text: list[list[str]], *, word_vectors: str | None,
                      uniform_init: bool = True):
    """The vocabulary and its word-embedding matrix: ``word_vectors``' (a GloVe-format file), else random ones
    drawn as the release drew them (NCRF++: uniform in +-sqrt(3 / dim); the CrossNER release: standard normal)."""
    vocab = WordCharVocab.build(ner, text, min_count=args.min_count)
    if word_vectors:
        return vocab, load_word_vectors(word_vectors, vocab, args.word_dim, seed=args.seed)
    g = torch.Generator().manual_seed(args.seed)
    if uniform_init:
        vectors = (torch.rand(len(vocab), args.word_dim, generator=g) * 2 - 1) * (3.0 / args.word_dim) ** 0.5
    else:
        vectors = torch.randn(len(vocab), args.word_dim, generator=g)
    vectors[0] = 0
    return vocab, vectors


def finish_run(model_cls, args, vocab, label_names, test, out: Path, state, started, extra, *, domain=None,
               crf_domain=None, gold_names=None, best_dir: Path | None = None,
               forbidden: Sequence[int] = ()) -> dict[str, Any]:
    """Score the best model (``out/best``, or ``best_dir``) on ``test``, record how it tags, and save it with its
    vocabulary, results.json and card into ``out``, all or nothing. ``forbidden``: tag ids the saved model never
    decodes (the source's types a user's target lacks, see :func:`forbid_tags`)."""
    best = model_cls.from_pretrained(best_dir or out / "best")
    forbid_tags(best, forbidden)  # in the weights: every predictor of the folder masks them, as finetune's do
    test_scores = evaluate(best, vocab, test, label_names, domain=domain, crf_domain=crf_domain, gold_names=gold_names)
    # how this model tags, so `crossner-hf predict` reproduces the test score (crossner_hf.inference.rnn_tagger)
    best.config.tagging = {"labels": list(label_names), "gold_labels": list(gold_names or label_names), "decode": (
        {} if domain is None else {"domain": domain, "crf_domain": crf_domain})}
    if forbidden:  # the user's own types; the others were learnt from the source alone and are never decoded
        best.config.tagging["output_labels"] = [t for i, t in enumerate(label_names) if i not in set(forbidden)]
    seconds = time.perf_counter() - started
    shared = shared_record("rnn", model=extra["model"], dataset=extra["dataset"], seeds=[args.seed],
                           dev={"overall_f1": state.best_f1, "epoch": state.best_epoch},
                           test={k: v for k, v in test_scores.items() if k != "predictions"}, seconds=seconds)
    results = {  # the envelope, then the body: the settings with the files the run started from, the history
        **shared, "args": {**asdict(args), **PretrainedInputs.from_record(extra).as_args()}, "epochs": state.epoch,
        "steps": state.global_step, "history": state.history, **{k: v for k, v in extra.items() if k not in shared},
    }
    from crossner_hf.publishing.cards import write_rnn_model_card

    def save(stage: Path) -> None:
        best.save_pretrained(stage)
        vocab.save(stage)

    finish_output(out, results, save=save, card=lambda stage, r, repo_id: write_rnn_model_card(stage, r))
    return results


NEVER = -1e4
"""A transition score no path through a tag survives: Viterbi never decodes it (emissions are O(10))."""


def forbid_tags(model, tag_ids: Sequence[int]) -> None:
    """Make ``model``'s CRF never decode ``tag_ids`` (every way into them scores :data:`NEVER`): the source's types
    a user's target lacks, learnt from the source alone in the joint schedule, as ``finetune`` masks them."""
    if not tag_ids:
        return
    crf = getattr(model, "module", model).crf
    ids = torch.as_tensor(list(tag_ids))
    with torch.no_grad():
        crf.start_transitions[ids] = NEVER
        crf.transitions[:, ids] = NEVER


@contextmanager
def tags_forbidden(model, tag_ids: Sequence[int]) -> Iterator[None]:
    """:func:`forbid_tags` while the block runs (dev scoring during training), the CRF restored after: the
    source sentences still train those tags."""
    crf = getattr(model, "module", model).crf
    saved = {name: p.detach().clone() for name, p in crf.named_parameters()}
    forbid_tags(model, tag_ids)
    try:
        yield
    finally:
        with torch.no_grad():
            for name, p in crf.named_parameters():
                p.copy_(saved[name])


@dataclass(frozen=True)
class PretrainedInputs:
    """What an RNN run starts from besides its data: runner arguments, never config settings (the model argument
    and keywords of ``train_bilstm_crf`` / ``train_cdlm`` / ``train_multicell``). Recorded in results.json and in
    the run's identity (a resume must start from the same files)."""

    word_vectors: str | None = None
    char_ngram_vectors: str | None = None
    features_model: str | None = None
    source_model: str | None = None
    """An earlier run's folder: the source model BiLSTM-CRF's pretrain-finetune continues from."""

    def record(self) -> dict[str, dict[str, str]]:
        """``{"inputs": {...}}`` with the ones given (nothing when none is)."""
        given = {k: v for k, v in asdict(self).items() if v is not None}
        return {"inputs": given} if given else {}

    def as_args(self) -> dict[str, str | None]:
        """The 0.2 ``args`` keys (``word_vectors``, ...), which cards and older readers look up."""
        return {k: v for k, v in asdict(self).items() if k != "source_model"}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "PretrainedInputs":
        return cls(**record.get("inputs", {}))


def runner_call(runner: str, model: Any, target: Any, config: Any, config_class: type, workflow: str, *,
                model_is: str, tokenizer: Any = None, source_model: str | Path | None = None,
                **keywords: Any) -> tuple[Any, Any, PretrainedInputs]:
    """One call shape for the RNN runners, ``runner(model, target, config=None, *, ...)``: ``(target, config,
    inputs)`` with the config's defaults where none is given, its ``output_dir`` named after the data where it
    names none (``outputs/<target name>-<workflow>``, :func:`crossner_hf.outputs.default_output_dir`), and what
    the run starts from (:class:`PretrainedInputs`): the ``model`` argument is ``model_is``, one thing
    (``word_vectors``: a vectors file or None; ``features_model``: an encoder's name, folder, or object with
    ``tokenizer``); ``source_model`` an earlier source run's folder (``train_bilstm_crf``'s pretrain-finetune), the
    keywords the rest."""
    import copy

    from crossner_hf.data.target import TargetData
    from crossner_hf.outputs import default_output_dir
    from crossner_hf.encoders import model_folder

    if not isinstance(target, TargetData) or not (config is None or isinstance(config, config_class)):
        raise TypeError(f"{runner}(model, target, config): give a TargetData (load_target(...)) and a "
                        f"{config_class.__name__} or None; for a command's arguments object use the command's "
                        "run_* function (crossner_hf.commands).")
    config = copy.copy(config) if config is not None else config_class()  # the caller's config is left as it was
    values = {name: keywords[name] for name in ("word_vectors", "char_ngram_vectors", "features_model")
              if keywords.get(name) is not None}
    if config.output_dir is None:
        config.output_dir = default_output_dir(target.name, workflow)
    if model_is == "word_vectors" and model is not None and Path(str(model)).is_dir():
        raise ValueError(f"{runner}: {model} is a folder; the model is a word vectors file or None (an earlier "
                         "source run's folder is train_bilstm_crf(..., source_model=FOLDER)).")
    if model is not None:
        if values.get(model_is) is not None:
            raise ValueError(f"{runner}: the model argument is the {model_is.replace('_', ' ')}; do not pass "
                             f"{model_is}= as well.")
        if model_is == "features_model" and not isinstance(model, (str, Path)):
            model = model_folder(model, tokenizer, config.output_dir, runner)  # an object: saved once, loaded
        values[model_is] = str(model)
    return target, config, PretrainedInputs(**{k: v for k, v in values.items() if v is not None},
                                            source_model=None if source_model is None else str(source_model))
