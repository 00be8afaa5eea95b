"""The ``train`` command's two objects from one set of keywords, for the tests that call ``run_train``."""

from __future__ import annotations

import dataclasses
from typing import Any

from crossner_hf.commands.train import TrainArguments
from crossner_hf.training.training_args import FinetuneConfig


def train_args(**kw: Any) -> tuple[TrainArguments, FinetuneConfig]:
    """``(TrainArguments, FinetuneConfig)`` as the command's parser makes them from the same flags: the model and
    data keywords go to the first, the rest to the config."""
    inputs = {f.name for f in dataclasses.fields(TrainArguments)}
    return (TrainArguments(**{k: v for k, v in kw.items() if k in inputs}),
            FinetuneConfig(**{k: v for k, v in kw.items() if k not in inputs}))
