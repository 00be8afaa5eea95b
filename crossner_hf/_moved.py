"""Old names kept working for one release cycle: one mechanism, one warning, one removal version.

- **Module paths** (before the package was layered): ``import crossner_hf.trainer`` gives the very module
  object of ``crossner_hf.training.trainer`` (one module, so ``isinstance`` and monkeypatching agree across
  both names).
- **Renamed attributes** (:data:`RENAMED`): ``crossner_hf.load_tagger`` is ``load_pipeline``, the
  ``CrossNERTrainingArguments`` that mixed the model, the data and the schedule is the ``train`` command's
  ``TrainArguments`` (the library's config is :class:`~crossner_hf.training.training_args.FinetuneConfig`).

Each use warns once with a ``FutureWarning`` (shown by default, unlike ``DeprecationWarning``) that names the
new name and :data:`REMOVAL_VERSION`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

REMOVAL_VERSION = "0.3.0"
"""The release that removes every old name below."""

MOVED = {
    "crossner_hf.labels": "crossner_hf.data.labels",
    "crossner_hf.conll": "crossner_hf.data.conll",
    "crossner_hf.words": "crossner_hf.data.words",
    "crossner_hf.tokenization": "crossner_hf.data.tokenization",
    "crossner_hf.masking": "crossner_hf.data.masking",
    "crossner_hf.stats": "crossner_hf.data.stats",
    "crossner_hf.decoding": "crossner_hf.modeling.decoding",
    "crossner_hf.rnn": "crossner_hf.modeling.rnn",
    "crossner_hf.rnn.bilstm_crf": "crossner_hf.modeling.rnn.bilstm_crf",
    "crossner_hf.rnn.cdlm": "crossner_hf.modeling.rnn.cdlm",
    "crossner_hf.rnn.coach": "crossner_hf.modeling.rnn.coach",
    "crossner_hf.rnn.crf": "crossner_hf.modeling.rnn.crf",
    "crossner_hf.rnn.layers": "crossner_hf.modeling.rnn.layers",
    "crossner_hf.rnn.sampled_softmax": "crossner_hf.modeling.rnn.sampled_softmax",
    "crossner_hf.rnn.vocab": "crossner_hf.modeling.rnn.vocab",
    "crossner_hf.rnn.predict": "crossner_hf.inference.rnn_tagger",
    "crossner_hf.rnn.training": "crossner_hf.training.rnn.loop",
    "crossner_hf.rnn.recipes": "crossner_hf.training.rnn.recipes",
    "crossner_hf.pipelines": "crossner_hf.inference.pipelines",
    "crossner_hf.tagger": "crossner_hf.inference.tagger",
    "crossner_hf.metrics": "crossner_hf.evaluation.metrics",
    "crossner_hf.seqeval_metric": "crossner_hf.evaluation.seqeval_metric",
    "crossner_hf.hierarchy": "crossner_hf.evaluation.hierarchy",
    "crossner_hf.entity_analysis": "crossner_hf.evaluation.entity_analysis",
    "crossner_hf.plots": "crossner_hf.evaluation.plots",
    "crossner_hf.report": "crossner_hf.evaluation.report",
    "crossner_hf.report.analysis": "crossner_hf.evaluation.report.analysis",
    "crossner_hf.hub": "crossner_hf.publishing.hub",
    "crossner_hf.publish": "crossner_hf.publishing.dataset_folder",
    "crossner_hf.cards": "crossner_hf.publishing.cards",
    "crossner_hf.training_args": "crossner_hf.training.training_args",
    "crossner_hf.trainer": "crossner_hf.training.trainer",
    "crossner_hf.schedules": "crossner_hf.training.schedules",
    "crossner_hf.dapt": "crossner_hf.training.dapt",
    "crossner_hf.nerbert": "crossner_hf.training.nerbert",
}
"""old module name -> the module that holds its code now."""


RENAMED: dict[str, tuple[str, str]] = {
    "crossner_hf.load_tagger": ("crossner_hf.inference.pipelines", "load_pipeline"),
    "crossner_hf.inference.pipelines.load_tagger": ("crossner_hf.inference.pipelines", "load_pipeline"),
    "crossner_hf.CrossNERTrainingArguments": ("crossner_hf.commands.train", "TrainArguments"),
    "crossner_hf.training.training_args.CrossNERTrainingArguments": ("crossner_hf.commands.train", "TrainArguments"),
    "crossner_hf.run_schedule": ("crossner_hf.commands.train", "run_train"),
    "crossner_hf.training.schedules.run_schedule": ("crossner_hf.commands.train", "run_train"),
    "crossner_hf.DAPTArguments": ("crossner_hf.commands.dapt", "DAPTArguments"),
    "crossner_hf.training.dapt.DAPTArguments": ("crossner_hf.commands.dapt", "DAPTArguments"),
    "crossner_hf.training.dapt.run_dapt": ("crossner_hf.commands.dapt", "run_dapt"),
    "crossner_hf.training.nerbert.NERBERTArguments": ("crossner_hf.commands.nerbert", "NERBERTArguments"),
    "crossner_hf.training.nerbert.run_nerbert": ("crossner_hf.commands.nerbert", "run_nerbert"),
    "crossner_hf.training.rnn.recipes.RNNTaggerArguments": ("crossner_hf.training.rnn.recipes", "RNNTaggerConfig"),
    "crossner_hf.training.rnn.recipes.BiLSTMCRFArguments": ("crossner_hf.commands.bilstm_crf", "BiLSTMCRFArguments"),
    "crossner_hf.training.rnn.recipes.CDLMArguments": ("crossner_hf.commands.cdlm", "CDLMArguments"),
    "crossner_hf.training.rnn.multicell.MultiCellArguments": ("crossner_hf.commands.multicell", "MultiCellArguments"),
    "crossner_hf.data.labels.entity_spans": ("crossner_hf.data.entities", "entity_spans"),
}
"""``module.old_name`` -> (module, new name) of the object it now is."""


def warn_renamed(old: str, new: str, stacklevel: int = 3) -> None:
    """The one warning of every old name."""
    warnings.warn(f"{old} is deprecated and will be removed in crossner_hf {REMOVAL_VERSION}; use {new} "
                  "(the old name is an alias until then)", FutureWarning, stacklevel=stacklevel)


def renamed_attributes(module: str, fallback: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves the module's old names from :data:`RENAMED` (with the warning), then
    ``fallback`` (a lazy-attribute ``__getattr__``) for the rest."""

    def __getattr__(name: str) -> Any:
        moved = RENAMED.get(f"{module}.{name}")
        if moved is not None:
            warn_renamed(f"{module}.{name}", f"{moved[0]}.{moved[1]}")
            return getattr(importlib.import_module(moved[0]), moved[1])
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warn_renamed(spec.name, self.target, stacklevel=4)
        module = importlib.import_module(self.target)
        self._spec = module.__spec__  # the import system overwrites __spec__; put it back in exec_module
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        is_package = importlib.util.find_spec(MOVED[fullname]).submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(MOVED[fullname]), is_package=is_package)


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
