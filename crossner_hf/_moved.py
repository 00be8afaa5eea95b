"""Old module paths (before the package was layered) as aliases of the modules that replaced them.

``import crossner_hf.trainer`` keeps working and gives the very module object of
``crossner_hf.training.trainer`` (one module, so ``isinstance`` and monkeypatching agree across
both names). ``crossner_hf.data``, ``crossner_hf.modeling`` and ``crossner_hf.inference`` were
modules and are now packages; their old names are lazy attributes of those packages.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

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


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.target}; the old name is an alias",
                      DeprecationWarning, stacklevel=3)
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
