"""What the RNN commands (``bilstm-crf``, ``cdlm``, ``multicell``) add to their recipe's config: the data.

Each command's arguments are its recipe's config (:mod:`crossner_hf.training.rnn.recipes`,
:mod:`crossner_hf.training.rnn.multicell`) plus :class:`~crossner_hf.data.target.LabeledDataArguments` (the data
flags every command shares); its ``run_*`` loads the target and CoNLL-2003 the flags name, reads the text files,
and calls the runner with the config part alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.data.labels import DOMAINS


def load_data(args: Any, with_source: bool = True) -> tuple[Any, Any]:
    """``(target, source)``: the :class:`~crossner_hf.data.target.TargetData` the flags name (no domain stands in
    for a user's dataset: one must be named) and CoNLL-2003 from ``--data_dir`` (``None`` unless
    ``with_source``: a target-only run needs no CrossNER files)."""
    from crossner_hf.data.labels import SOURCE_DOMAIN
    from crossner_hf.data.target import load_target

    if not args.dataset_dir and args.domain not in DOMAINS:
        given = f"--domain {args.domain} is the source, not a target" if args.domain else "no target given"
        raise ValueError(f"name the target ({given}): --dataset_dir SOURCE (your data: a CoNLL folder, JSON Lines / "
                         f"CSV / Parquet files, a Hub id) or --domain (a CrossNER domain: {', '.join(DOMAINS)}).")
    target = args.load_target()
    return target, load_target(SOURCE_DOMAIN, data_dir=args.data_dir) if with_source else None


def read_texts(paths: list[str] | None) -> list[list[str]] | None:
    """Sentences (word lists) of text files, one a line, or ``FOLDER:CONFIG`` dataset folders; ``None`` without."""
    if not paths:
        return None
    from crossner_hf.training.rnn.common import text_examples

    return [e.tokens for e in text_examples(paths)]


def print_summary(result: Any) -> None:
    """The run's selection and test figures, as the RNN commands print them."""
    import json

    results = result.results
    print(json.dumps({"best_epoch": results["dev"]["epoch"], "dev_f1": results["dev"]["overall_f1"],
                      "epochs": results["epochs"], "test_f1": results["test"]["overall_f1"]}, indent=2))


@dataclass
class WordVectorsArguments:
    """What an RNN command starts from besides the data: the runner's ``model`` argument or keyword, never the
    config's (``--word_vectors`` keeps its name)."""

    word_vectors: str | None = field(
        default=None, metadata={"help": "GloVe-format text file of word vectors (the papers: GloVe 6B, 100d for "
                                "lample/CDLM, 300d for crossner); default: random vectors, fine-tuned."})
