"""Old names kept working for one release cycle: one mechanism, one warning, one removal version.

- **Module paths** (before the package was layered): ``import crossner_hf.trainer`` gives the very module
  object of ``crossner_hf.training.trainer`` (one module, so ``isinstance`` and monkeypatching agree across
  both names).
- **Top-level names** (:data:`TOP_LEVEL`): the 0.1 facade's 55 names, cut to what a user calls; the others
  (``crossner_hf.LABELS``, ``crossner_hf.compute_ner_metrics``, ...) are their modules' objects.
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
    "crossner_hf.reproduce.executors": "crossner_hf.executors",
    "crossner_hf.wikipedia.executors": "crossner_hf.executors",
    "crossner_hf.corpora.tagger": "crossner_hf.corpora.model_mentions",
}
"""old module name -> the module that holds its code now."""


TOP_LEVEL: dict[str, str] = {
    "CONFIGS": "crossner_hf.data.labels",
    "DOMAINS": "crossner_hf.data.labels",
    "LABELS": "crossner_hf.data.labels",
    "MERGED_LABELS": "crossner_hf.data.labels",
    "SOURCE_DOMAIN": "crossner_hf.data.labels",
    "ConllFormatError": "crossner_hf.data.conll",
    "read_conll": "crossner_hf.data.conll",
    "load_crossner": "crossner_hf.data.target",
    "tokenize_dataset": "crossner_hf.data.tokenization",
    "tokenize_and_align": "crossner_hf.data.tokenization",
    "MASKING_CHOICES": "crossner_hf.data.masking",
    "DataCollatorForSpanAdjacentMasking": "crossner_hf.data.masking",
    "DataCollatorForSpanGeometricMasking": "crossner_hf.data.masking",
    "DataCollatorForTokenMasking": "crossner_hf.data.masking",
    "DataCollatorForWholeWordMasking": "crossner_hf.data.masking",
    "make_mlm_collator": "crossner_hf.data.masking",
    "span_adjacent": "crossner_hf.data.masking",
    "Preset": "crossner_hf.arguments",
    "compute_ner_metrics": "crossner_hf.evaluation.metrics",
    "format_per_type_table": "crossner_hf.evaluation.metrics",
    "EVALUATE_MODULE_PATH": "crossner_hf.evaluation.metrics",
    "predict_tags": "crossner_hf.inference.predict",
    "load_pipeline": "crossner_hf.inference.pipelines",
    "CrossNERTokenClassificationPipeline": "crossner_hf.inference.pipelines",
    "load_text_corpus": "crossner_hf.corpora",
    "tokenize_corpus": "crossner_hf.corpora",
    "CrossNERTrainer": "crossner_hf.training.trainer",
    "JointTrainer": "crossner_hf.training.trainer",
    "ScheduleResult": "crossner_hf.training.schedules",
    "DAPTResult": "crossner_hf.training.dapt",
    "NERBERTResult": "crossner_hf.training.nerbert",
    "load_corpus": "crossner_hf.training.nerbert",
    "RNNResult": "crossner_hf.training.rnn.common",
    "ExperimentResult": "crossner_hf.reproduce.run",
}
"""The names ``crossner_hf`` held at its top level in 0.1 and no longer exports (0.2 keeps the facade to what a
user calls): each still works as ``crossner_hf.NAME``, with the warning, and lives on in its module."""


RENAMED: dict[str, tuple[str, ...]] = {
    **{f"crossner_hf.{name}": (module, name) for name, module in TOP_LEVEL.items()},
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
    "crossner_hf.corpora.build.CorporaArguments": ("crossner_hf.corpora.build", "CorporaConfig"),
    "crossner_hf.corpora.CorporaArguments": ("crossner_hf.corpora.build", "CorporaConfig"),
    "crossner_hf.wikipedia.build.NERBERTCorpusArguments": ("crossner_hf.commands.nerbert_wikipedia",
                                                           "NERBERTCorpusArguments"),
    "crossner_hf.wikipedia.NERBERTCorpusArguments": ("crossner_hf.commands.nerbert_wikipedia",
                                                     "NERBERTCorpusArguments"),
    "crossner_hf.executors.GridExecutorOptions": ("crossner_hf.executors", "ExecutorOptions"),
    "crossner_hf.executors.run_grid": ("crossner_hf.grid.run", "run_grid"),
    "crossner_hf.executors.quiet_user_errors": ("crossner_hf.wikipedia.dump", "quiet_user_errors"),
    "crossner_hf.executors.submit_cells": ("crossner_hf.grid.run", "_submit_cells",
                                           "crossner_hf.executors.submit_tasks"),
    "crossner_hf.inference.predict.tag_texts": ("crossner_hf.inference.tagger", "_tag_texts_with_model",
                                                "Tagger.tag_texts (TransformerTagger(model, tokenizer).tag_texts)"),
    "crossner_hf.inference.rnn_tagger.decode_sentences": ("crossner_hf.inference.rnn_tagger", "_decode_sentences",
                                                          "RNNTagger.from_model(model, vocab, labels).tag"),
    "crossner_hf.inference.rnn_tagger.load_rnn_tagger": ("crossner_hf.inference.rnn_tagger", "_load_rnn_tagger",
                                                         "Tagger.from_pretrained"),
}
"""``module.old_name`` -> (module, new name) of the object it now is, and, where that object is a private wrapper
kept for the old name, what to use instead."""


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
            warn_renamed(f"{module}.{name}", moved[2] if len(moved) > 2 else f"{moved[0]}.{moved[1]}")
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
