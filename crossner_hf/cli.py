"""The ``crossner-hf`` command: it only dispatches to :mod:`crossner_hf.commands`.

``crossner-hf --help`` lists the commands of :data:`COMMAND_TABLE` (the one list of them) without
importing any; ``crossner-hf COMMAND --help`` lists a command's flags. Every command takes a YAML
file of flags (``--config x.yaml``, or a packaged preset by name: ``--config paper/crossner_direct``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_TABLE: dict[str, tuple[str, str]] = {
    "stats": ("stats", "Table 1 and the vocabulary overlap of the CrossNER files"),
    "data": ("data", "check a labeled dataset (splits, sizes, tags, types, scheme, every problem with file:line)"),
    "build-dataset": ("build_dataset", "the CrossNER datasets as Parquet + card for load_dataset"),
    "build-corpora": ("build_corpora", "a domain's DAPT corpus levels (domain / entity / task / integrated)"),
    "build-nerbert-corpus": ("nerbert_wikipedia", "the NER-BERT entity-tagging corpus from Wikipedia + DBpedia"),
    "train": ("train", "fine-tune an encoder with a CrossNER schedule (direct, pretrain-finetune, joint)"),
    "dapt": ("dapt", "domain-adaptive pre-training: masked-LM training on domain text"),
    "nerbert": ("nerbert", "NER-BERT pre-training: the encoder as an entity tagger over every corpus category"),
    "bilstm-crf": ("bilstm_crf", "the BiLSTM-CRF baseline (lample or crossner architecture)"),
    "cdlm": ("cdlm", "cross-domain LM (parameter generation network), supervised or zero-shot"),
    "multicell": ("multicell", "the multi-cell compositional LSTM (Jia & Zhang 2020), with encoder features"),
    "predict": ("predict", "tag raw text, pre-tokenised text or CoNLL files with a trained model"),
    "export": ("export", "export a trained model to ONNX (fp32 or int8) for ONNX Runtime on the CPU"),
    "report": ("report", "an offline HTML evaluation report of a trained model"),
    "confusion": ("confusion", "entity-level type confusion, with the fine-to-coarse branch share"),
    "plot-entities": ("plot_entities", "t-SNE of gold entity representations, silhouettes per type"),
    "push": ("push", "push a finished model or dataset folder to the Hub"),
    "reproduce": ("reproduce", "run a paper's experiment as a resumable grid, our numbers beside the paper's"),
    "adapt": ("adapt", "which method for my domain? run the papers' methods on your data, ship the best on dev"),
    "compare": ("compare", "compare finished runs: mean ± std over seeds, the choice on dev, a paired bootstrap"),
}
"""Subcommand name -> (module of :mod:`crossner_hf.commands`, its one line for ``crossner-hf --help``)."""

COMMANDS: dict[str, str] = {name: module for name, (module, _) in COMMAND_TABLE.items()}
SUMMARIES: dict[str, str] = {name: summary for name, (_, summary) in COMMAND_TABLE.items()}


DESCRIPTION = ("Cross-domain NER for the Hugging Face ecosystem (CrossNER, NER-BERT, cross-domain LM). "
               "`crossner-hf COMMAND --help` lists a command's flags; every command takes a YAML file of flags "
               "(--config FILE.yaml, or a packaged preset by name: --config paper/crossner_direct).")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: command names and summaries only (a plain argparse parser, no imports)."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False, prog="crossner-hf", description=DESCRIPTION,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        sub.add_parser(name, help=SUMMARIES[name], add_help=False)
    return parser


def command_parser(name: str) -> tuple[object, object]:
    """``(module, parser)`` of one command, its parser named ``crossner-hf NAME``; only that module is imported."""
    from crossner_hf.arguments import CrossNERParser

    module = importlib.import_module(f"crossner_hf.commands.{COMMANDS[name]}")
    holder = argparse.ArgumentParser(prog="crossner-hf", allow_abbrev=False)
    sub = holder.add_subparsers(parser_class=CrossNERParser)
    return module, module.make_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        build_parser().print_help()
        return 0 if argv else 2
    command = argv[0]
    if command not in COMMANDS:
        build_parser().error(f"unknown command {command!r}; choose one of {', '.join(COMMANDS)}.")
    from crossner_hf.commands import run_command
    from crossner_hf.extras import MissingExtraError

    try:
        module, parser = command_parser(command)
    except MissingExtraError as err:  # a command module that needs an extra at import time
        print(f"crossner-hf {command}: error: {err}", file=sys.stderr)
        return 2
    return run_command(module.make_parser, module.main, argv[1:], parser=parser)


if __name__ == "__main__":
    sys.exit(main())
