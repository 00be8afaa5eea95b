"""Command-line parsing shared by every script and recipe: ``HfArgumentParser`` + YAML.

``--config x.yaml`` supplies defaults; flags given on the command line win over it, as in
TRL's scripts. Unknown YAML keys are an error that names them, so a typo never passes
silently.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Args:
    ...     domain: str = field(default="politics", metadata={"help": "CrossNER domain."})
    >>> parse_args((Args,), ["--domain", "music"])[0].domain
    'music'
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml


def load_yaml_config(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--config {path}: no such file.")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: expected a mapping of flag names to values.")
    return data


def parse_args(
    dataclass_types: Sequence[type], argv: Sequence[str] | None = None
) -> tuple[Any, ...]:
    """Parse ``argv`` into instances of ``dataclass_types``, honouring ``--config FILE.yaml``."""
    from transformers import HfArgumentParser

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known, rest = pre.parse_known_args(argv)
    parser = HfArgumentParser(dataclass_types)
    parser.add_argument(
        "--config", default=None, help="YAML file of flag values; command-line flags override it."
    )
    if known.config:
        defaults = load_yaml_config(known.config)
        dests = {action.dest for action in parser._actions}
        unknown = sorted(set(defaults) - dests)
        if unknown:
            raise ValueError(f"--config {known.config}: unknown keys {unknown}.")
        parser.set_defaults(**defaults)
        for action in parser._actions:
            if action.dest in defaults:
                action.required = False  # the YAML file supplies it
    outputs = parser.parse_args_into_dataclasses(args=list(rest), return_remaining_strings=False)
    return tuple(outputs[: len(dataclass_types)])
