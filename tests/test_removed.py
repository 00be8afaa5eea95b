"""0.3.0 removed every old name (crossner_hf/_moved.py and its aliases): each fails with the plain error of a missing
module, attribute or keyword, and CHANGELOG.md's 0.3.0 section names each one's replacement, which exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import crossner_hf

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"

OLD_MODULES = [
    ("crossner_hf.labels", "crossner_hf.data.labels"),
    ("crossner_hf.conll", "crossner_hf.data.conll"),
    ("crossner_hf.words", "crossner_hf.data.words"),
    ("crossner_hf.tokenization", "crossner_hf.data.tokenization"),
    ("crossner_hf.masking", "crossner_hf.data.masking"),
    ("crossner_hf.stats", "crossner_hf.data.stats"),
    ("crossner_hf.decoding", "crossner_hf.modeling.decoding"),
    ("crossner_hf.rnn", "crossner_hf.modeling.rnn"),
    ("crossner_hf.rnn.bilstm_crf", "crossner_hf.modeling.rnn.bilstm_crf"),
    ("crossner_hf.rnn.cdlm", "crossner_hf.modeling.rnn.cdlm"),
    ("crossner_hf.rnn.coach", "crossner_hf.modeling.rnn.coach"),
    ("crossner_hf.rnn.crf", "crossner_hf.modeling.rnn.crf"),
    ("crossner_hf.rnn.layers", "crossner_hf.modeling.rnn.layers"),
    ("crossner_hf.rnn.sampled_softmax", "crossner_hf.modeling.rnn.sampled_softmax"),
    ("crossner_hf.rnn.vocab", "crossner_hf.modeling.rnn.vocab"),
    ("crossner_hf.rnn.predict", "crossner_hf.inference.rnn_tagger"),
    ("crossner_hf.rnn.training", "crossner_hf.training.rnn.loop"),
    ("crossner_hf.rnn.recipes", "crossner_hf.training.rnn.recipes"),
    ("crossner_hf.pipelines", "crossner_hf.inference.pipelines"),
    ("crossner_hf.tagger", "crossner_hf.inference.tagger"),
    ("crossner_hf.metrics", "crossner_hf.evaluation.metrics"),
    ("crossner_hf.seqeval_metric", "crossner_hf.evaluation.seqeval_metric"),
    ("crossner_hf.hierarchy", "crossner_hf.evaluation.hierarchy"),
    ("crossner_hf.entity_analysis", "crossner_hf.evaluation.entity_analysis"),
    ("crossner_hf.plots", "crossner_hf.evaluation.plots"),
    ("crossner_hf.report", "crossner_hf.evaluation.report"),
    ("crossner_hf.report.analysis", "crossner_hf.evaluation.report.analysis"),
    ("crossner_hf.hub", "crossner_hf.publishing.hub"),
    ("crossner_hf.publish", "crossner_hf.publishing.dataset_folder"),
    ("crossner_hf.cards", "crossner_hf.publishing.cards"),
    ("crossner_hf.training_args", "crossner_hf.training.training_args"),
    ("crossner_hf.trainer", "crossner_hf.training.trainer"),
    ("crossner_hf.schedules", "crossner_hf.training.schedules"),
    ("crossner_hf.dapt", "crossner_hf.training.dapt"),
    ("crossner_hf.nerbert", "crossner_hf.training.nerbert"),
    ("crossner_hf.reproduce.executors", "crossner_hf.executors"),
    ("crossner_hf.wikipedia.executors", "crossner_hf.executors"),
    ("crossner_hf.corpora.tagger", "crossner_hf.corpora.model_mentions"),
]
"""Old module path -> the module that holds its code now."""

OLD_NAMES = [
    ("crossner_hf.adapt_encoder", "crossner_hf.dapt"),
    ("crossner_hf.training.dapt.adapt_encoder", "crossner_hf.training.dapt.dapt"),
    ("crossner_hf.CONFIGS", "crossner_hf.data.labels.CONFIGS"),
    ("crossner_hf.DOMAINS", "crossner_hf.data.labels.DOMAINS"),
    ("crossner_hf.LABELS", "crossner_hf.data.labels.LABELS"),
    ("crossner_hf.MERGED_LABELS", "crossner_hf.data.labels.MERGED_LABELS"),
    ("crossner_hf.SOURCE_DOMAIN", "crossner_hf.data.labels.SOURCE_DOMAIN"),
    ("crossner_hf.ConllFormatError", "crossner_hf.data.conll.ConllFormatError"),
    ("crossner_hf.read_conll", "crossner_hf.data.conll.read_conll"),
    ("crossner_hf.load_crossner", "crossner_hf.data.target.load_crossner"),
    ("crossner_hf.tokenize_dataset", "crossner_hf.data.tokenization.tokenize_dataset"),
    ("crossner_hf.tokenize_and_align", "crossner_hf.data.tokenization.tokenize_and_align"),
    ("crossner_hf.MASKING_CHOICES", "crossner_hf.data.masking.MASKING_CHOICES"),
    ("crossner_hf.DataCollatorForSpanAdjacentMasking", "crossner_hf.data.masking.DataCollatorForSpanAdjacentMasking"),
    ("crossner_hf.DataCollatorForSpanGeometricMasking", "crossner_hf.data.masking.DataCollatorForSpanGeometricMasking"),
    ("crossner_hf.DataCollatorForTokenMasking", "crossner_hf.data.masking.DataCollatorForTokenMasking"),
    ("crossner_hf.DataCollatorForWholeWordMasking", "crossner_hf.data.masking.DataCollatorForWholeWordMasking"),
    ("crossner_hf.make_mlm_collator", "crossner_hf.data.masking.make_mlm_collator"),
    ("crossner_hf.span_adjacent", "crossner_hf.data.masking.span_adjacent"),
    ("crossner_hf.Preset", "crossner_hf.arguments.Preset"),
    ("crossner_hf.compute_ner_metrics", "crossner_hf.evaluation.metrics.compute_ner_metrics"),
    ("crossner_hf.format_per_type_table", "crossner_hf.results.format_per_type_table"),
    ("crossner_hf.EVALUATE_MODULE_PATH", "crossner_hf.evaluation.metrics.EVALUATE_MODULE_PATH"),
    ("crossner_hf.predict_tags", "crossner_hf.inference.predict.predict_tags"),
    ("crossner_hf.load_pipeline", "crossner_hf.inference.pipelines.load_pipeline"),
    ("crossner_hf.CrossNERTokenClassificationPipeline",
     "crossner_hf.inference.pipelines.CrossNERTokenClassificationPipeline"),
    ("crossner_hf.load_text_corpus", "crossner_hf.corpora.load_text_corpus"),
    ("crossner_hf.tokenize_corpus", "crossner_hf.corpora.tokenize_corpus"),
    ("crossner_hf.CrossNERTrainer", "crossner_hf.training.trainer.CrossNERTrainer"),
    ("crossner_hf.JointTrainer", "crossner_hf.training.trainer.JointTrainer"),
    ("crossner_hf.ScheduleResult", "crossner_hf.training.schedules.ScheduleResult"),
    ("crossner_hf.DAPTResult", "crossner_hf.training.dapt.DAPTResult"),
    ("crossner_hf.NERBERTResult", "crossner_hf.training.nerbert.NERBERTResult"),
    ("crossner_hf.load_corpus", "crossner_hf.training.nerbert.load_corpus"),
    ("crossner_hf.RNNResult", "crossner_hf.training.rnn.common.RNNResult"),
    ("crossner_hf.ExperimentResult", "crossner_hf.reproduce.run.ExperimentResult"),
    ("crossner_hf.load_tagger", "crossner_hf.inference.pipelines.load_pipeline"),
    ("crossner_hf.inference.pipelines.load_tagger", "crossner_hf.inference.pipelines.load_pipeline"),
    ("crossner_hf.CrossNERTrainingArguments", "crossner_hf.commands.train.TrainArguments"),
    ("crossner_hf.training.training_args.CrossNERTrainingArguments", "crossner_hf.commands.train.TrainArguments"),
    ("crossner_hf.run_schedule", "crossner_hf.commands.train.run_train"),
    ("crossner_hf.training.schedules.run_schedule", "crossner_hf.commands.train.run_train"),
    ("crossner_hf.DAPTArguments", "crossner_hf.commands.dapt.DAPTArguments"),
    ("crossner_hf.training.dapt.DAPTArguments", "crossner_hf.commands.dapt.DAPTArguments"),
    ("crossner_hf.training.dapt.run_dapt", "crossner_hf.commands.dapt.run_dapt"),
    ("crossner_hf.training.nerbert.NERBERTArguments", "crossner_hf.commands.nerbert.NERBERTArguments"),
    ("crossner_hf.training.nerbert.run_nerbert", "crossner_hf.commands.nerbert.run_nerbert"),
    ("crossner_hf.training.rnn.recipes.RNNTaggerArguments", "crossner_hf.training.rnn.recipes.RNNTaggerConfig"),
    ("crossner_hf.training.rnn.recipes.BiLSTMCRFArguments", "crossner_hf.commands.bilstm_crf.BiLSTMCRFArguments"),
    ("crossner_hf.training.rnn.recipes.CDLMArguments", "crossner_hf.commands.cdlm.CDLMArguments"),
    ("crossner_hf.training.rnn.multicell.MultiCellArguments", "crossner_hf.commands.multicell.MultiCellArguments"),
    ("crossner_hf.data.labels.entity_spans", "crossner_hf.data.entities.entity_spans"),
    ("crossner_hf.corpora.build.CorporaArguments", "crossner_hf.corpora.build.CorporaConfig"),
    ("crossner_hf.corpora.CorporaArguments", "crossner_hf.corpora.build.CorporaConfig"),
    ("crossner_hf.wikipedia.build.NERBERTCorpusArguments",
     "crossner_hf.commands.nerbert_wikipedia.NERBERTCorpusArguments"),
    ("crossner_hf.wikipedia.NERBERTCorpusArguments", "crossner_hf.commands.nerbert_wikipedia.NERBERTCorpusArguments"),
    ("crossner_hf.executors.GridExecutorOptions", "crossner_hf.executors.ExecutorOptions"),
    ("crossner_hf.executors.run_grid", "crossner_hf.grid.run.run_grid"),
    ("crossner_hf.executors.quiet_user_errors", "crossner_hf.wikipedia.dump.quiet_user_errors"),
    ("crossner_hf.executors.submit_cells", "crossner_hf.executors.submit_tasks"),
    ("crossner_hf.inference.predict.tag_texts", "TransformerTagger(model, tokenizer).tag_texts"),
    ("crossner_hf.inference.rnn_tagger.decode_sentences", "RNNTagger.from_model(model, vocab, labels).tag"),
    ("crossner_hf.inference.rnn_tagger.load_rnn_tagger", "Tagger.from_pretrained"),
]
"""Old ``module.name`` -> what to use instead."""

OLD_FIELDS = [
    ("crossner_hf.training.dapt", "DAPTConfig", "corpus_level", "dapt(..., corpus_level=)"),
    ("crossner_hf.training.rnn.recipes", "BiLSTMCRFTrainingConfig", "word_vectors",
     "train_bilstm_crf(word_vectors, target, config)"),
    ("crossner_hf.training.rnn.recipes", "BiLSTMCRFTrainingConfig", "char_ngram_vectors",
     "train_bilstm_crf(..., char_ngram_vectors=)"),
    ("crossner_hf.training.rnn.recipes", "CDLMTrainingConfig", "word_vectors",
     "train_cdlm(word_vectors, target, config)"),
    ("crossner_hf.training.rnn.multicell", "MultiCellTrainingConfig", "word_vectors",
     "train_multicell(..., word_vectors=)"),
    ("crossner_hf.training.rnn.multicell", "MultiCellTrainingConfig", "features_model",
     "train_multicell(features_model, target, config)"),
]
"""Config fields that became runner arguments: (module, config, field, the runner call that takes it)."""

OLD_RESULT_ATTRIBUTES = [
    ("crossner_hf.training.schedules", "ScheduleResult", "domain", "dataset"),
    ("crossner_hf.training.rnn.common", "RNNResult", "best_dev_f1", "dev_f1"),
    ("crossner_hf.training.nerbert", "NERBERTResult", "best_validation_f1", "dev_f1"),
]


LEFTOVERS = [
    ("crossner_hf.data.target.load_crossner", "crossner_hf.data.target.load_target"),
    ("crossner_hf.data.target.load_conll_folder", "crossner_hf.data.target.load_target"),
    ("crossner_hf.data.target.load_target_dataset", "crossner_hf.data.target.load_target"),
    ("crossner_hf.data.conll.FOLDER_LABELS_FILE", "crossner_hf.data.labels.LABELS_FILE"),
    ("crossner_hf.commands.rnn_args.RNNDataArguments", "crossner_hf.data.target.LabeledDataArguments"),
    ("crossner_hf.training.checkpoints.COMPLETE", "crossner_hf.outputs.CHECKPOINT_COMPLETE"),
    ("crossner_hf.training.checkpoints.STARTED", "crossner_hf.outputs.CHECKPOINT_STARTED"),
    *((f"crossner_hf.{package}.{name}", f"crossner_hf.{module}.{name}") for package, module, name in [
        ("data", "data.target", "load_target"), ("data", "data.target", "TargetData"),
        ("data", "data.columns", "features_for"), ("data", "data.check", "check_dataset"),
        ("data", "data.conll", "SPLIT_FILES"), ("data", "data.target", "few_shot_target"),
        ("inference", "inference.predict", "predict_tags"), ("inference", "inference.predict", "entities_from_tags"),
        ("modeling", "modeling.heads", "read_provenance"),
        ("modeling", "modeling.heads", "token_classifier_from_pretrained")]),
]
"""What 0.3.0 kept "so old imports work" and the next release removed (issue 64): the wrappers of
``load_target``, the aliases, and the 48 names the ``data``, ``inference`` and ``modeling`` packages repeated from
their modules -> the one real name."""


def _release_notes() -> str:
    """CHANGELOG.md's 0.3.0 section, its whitespace made single (a pair may wrap across lines)."""
    text = CHANGELOG.read_text(encoding="utf-8")
    section = re.search(r"^## 0\.3\.0\n(.*?)(?=^## )", text, re.S | re.M)
    assert section is not None, "CHANGELOG.md has no '## 0.3.0' section"
    return " ".join(section.group(1).split())


def test_the_alias_module_is_gone_and_the_version_is_0_3_0():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("crossner_hf._moved")
    assert crossner_hf.__version__ == "0.3.0"
    setup = (CHANGELOG.parent / "setup.cfg").read_text(encoding="utf-8")
    assert re.search(r"^version = 0\.3\.0$", setup, re.M)
    package = CHANGELOG.parent / "crossner_hf"
    wired = [str(p) for p in package.rglob("*.py") if "_moved" in p.read_text(encoding="utf-8")]
    assert not wired, wired


@pytest.mark.parametrize("old, new", OLD_MODULES)
def test_an_old_module_path_is_not_importable_and_its_home_is_named(old, new):
    with pytest.raises(ModuleNotFoundError, match="No module named .crossner_hf"):
        importlib.import_module(old)
    importlib.import_module(new)  # the replacement exists
    assert f"`{old}` → `{new}`" in _release_notes()


@pytest.mark.parametrize("old, new", OLD_NAMES)
def test_an_old_name_is_an_attribute_error_and_its_replacement_is_named(old, new):
    module, name = old.rsplit(".", 1)
    with pytest.raises(AttributeError, match=f"has no attribute {name!r}"):
        getattr(importlib.import_module(module), name)
    assert f"`{old}` → `{new}`" in _release_notes()
    new = dict(LEFTOVERS).get(new, new)  # a 0.3.0 replacement removed since: its own replacement
    if new.startswith("crossner_hf."):  # a dotted replacement: it exists
        home, attribute = new.rsplit(".", 1)
        assert getattr(importlib.import_module(home), attribute) is not None


def test_an_old_top_level_name_says_where_its_replacement_is_listed():
    with pytest.raises(AttributeError, match="no attribute 'load_crossner' .*CHANGELOG.md lists each"):
        crossner_hf.load_crossner  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'finetuning'"):
        crossner_hf.finetuning  # noqa: B018
    assert not hasattr(crossner_hf, "LABELS")


def test_the_top_level_is_small_and_every_name_resolves_without_a_warning():
    import warnings

    assert len(crossner_hf.__all__) <= 25 and len(set(crossner_hf.__all__)) == len(crossner_hf.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a current name never warns
        for name in crossner_hf.__all__:
            assert getattr(crossner_hf, name) is not None
    assert sorted(dir(crossner_hf)) == sorted(crossner_hf.__all__)
    old_top = {old.split(".")[1] for old, _ in OLD_NAMES if old.count(".") == 1}
    assert not old_top & set(crossner_hf.__all__)  # a name is current or gone, never both


@pytest.mark.parametrize("module, config, field, runner", OLD_FIELDS)
def test_an_old_config_field_is_a_type_error_and_its_runner_argument_is_named(module, config, field, runner):
    cls = getattr(importlib.import_module(module), config)
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{field}'"):
        cls(**{field: "x"})
    assert f"`{config}({field}=)` → `{runner}`" in _release_notes()


@pytest.mark.parametrize("module, result, old, new", OLD_RESULT_ATTRIBUTES)
def test_an_old_result_attribute_is_gone_and_its_replacement_is_named(module, result, old, new):
    cls = getattr(importlib.import_module(module), result)
    assert not hasattr(cls, old) and hasattr(cls, new)
    assert f"`{result}.{old}` → `{result}.{new}`" in _release_notes()


def test_the_evaluation_commands_old_config_flag_is_refused(capsys):
    from crossner_hf.cli import main

    # --config is a YAML file of flags for every command since 0.3.0
    assert main(["report", "--model", "m", "--config_file", "x.yaml"]) == 2
    assert "not used by the HfArgumentParser: ['--config_file', 'x.yaml']" in capsys.readouterr().err
    assert "`report` / `confusion` / `plot-entities --config DOMAIN` → `--domain DOMAIN`" in _release_notes()


def test_one_name_per_concept_the_old_keywords_are_gone():
    import inspect

    from crossner_hf.selection.run import adapt
    from crossner_hf.selection.status import dry_run

    for runner in (adapt, dry_run):  # `source` is the source data in every runner; the CrossNER folder is data_dir
        parameters = inspect.signature(runner).parameters
        assert "source" not in parameters and "data_dir" in parameters
    notes = _release_notes()
    assert "`adapt(..., source=)`" in notes and "`adapt(..., data_dir=)`" in notes
    assert "`train_bilstm_crf(None, target, config, source_model=FOLDER)`" in notes


@pytest.mark.parametrize("old, new", LEFTOVERS)
def test_a_leftover_kept_for_old_imports_is_gone_and_its_one_name_exists(old, new):
    module, name = old.rsplit(".", 1)
    with pytest.raises(AttributeError, match=f"has no attribute {name!r}"):
        getattr(importlib.import_module(module), name)
    home, attribute = new.rsplit(".", 1)
    assert getattr(importlib.import_module(home), attribute) is not None


def test_no_module_keeps_a_name_for_old_imports():
    """No text saying a name is kept for old code, and no public module-level alias of a name imported from another
    module (``RNNDataArguments = LabeledDataArguments``): every name has one home, and callers import it there."""
    import ast

    package = CHANGELOG.parent / "crossner_hf"
    said = re.compile(r"kept so old imports work|kept for 0\.\d code|old name stays|re-exported", re.I)
    kept, aliases = [], []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(package.parent)
        kept += [f"{where}:{n}" for n, line in enumerate(text.splitlines(), 1) if said.search(line)]
        tree = ast.parse(text)
        imported = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names}
        aliases += [f"{where}:{node.lineno} {node.targets[0].id} = {node.value.id}" for node in tree.body
                    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and not node.targets[0].id.startswith("_")  # a private name is no API kept for anyone
                    and isinstance(node.value, ast.Name) and node.value.id in imported]
    assert kept == [] and aliases == [], f"names kept for old imports: {kept + aliases}"
    for name in ("data", "inference", "modeling"):  # the packages name no object of their modules
        assert not [n for n in dir(importlib.import_module(f"crossner_hf.{name}")) if not n.startswith("_")
                    and not isinstance(getattr(importlib.import_module(f"crossner_hf.{name}"), n), type(re))]
