"""A command's parsed objects from one set of keywords, for the tests that call a command's ``run_*`` function:
``train``, ``dapt`` and ``nerbert`` parse their inputs (model, data) and their config side by side."""

from __future__ import annotations

import dataclasses
from typing import Any


def command_args(inputs: type, config: type, **kw: Any) -> tuple[Any, Any]:
    """``(inputs(...), config(...))`` as the command's parser makes them from the same flags: the keywords that are
    ``inputs``' fields go to it, the rest to the config."""
    names = {f.name for f in dataclasses.fields(inputs)}
    return (inputs(**{k: v for k, v in kw.items() if k in names}),
            config(**{k: v for k, v in kw.items() if k not in names}))


def train_args(**kw: Any) -> tuple[Any, Any]:
    """``(TrainArguments, FinetuneConfig)``."""
    from crossner_hf.commands.train import TrainArguments
    from crossner_hf.training.training_args import FinetuneConfig

    return command_args(TrainArguments, FinetuneConfig, **kw)


def dapt_args(**kw: Any) -> tuple[Any, Any]:
    """``(DAPTArguments, DAPTConfig)``."""
    from crossner_hf.commands.dapt import DAPTArguments
    from crossner_hf.training.dapt import DAPTConfig

    return command_args(DAPTArguments, DAPTConfig, **kw)


def nerbert_args(**kw: Any) -> tuple[Any, Any]:
    """``(NERBERTArguments, NERBERTConfig)``."""
    from crossner_hf.commands.nerbert import NERBERTArguments
    from crossner_hf.training.nerbert import NERBERTConfig

    return command_args(NERBERTArguments, NERBERTConfig, **kw)
