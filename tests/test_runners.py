"""One shape for every runner: ``runner(model, data, config=None, *, ...)`` returning a ``WorkflowResult``; one
results.json schema across train, dapt, nerbert and bilstm-crf; one meaning of resume; the RNN schedules that
read CoNLL-2003 take a target with its own types as ``finetune`` does."""

from __future__ import annotations

import importlib
import inspect
import json
import typing
from pathlib import Path

import pytest

import crossner_hf
from crossner_hf.outputs import portable
from crossner_hf.results import SCHEMA, SHARED_KEYS, WorkflowResult, read_results

RUNNERS = {"finetune", "dapt", "pretrain_nerbert", "train_bilstm_crf", "train_cdlm", "train_multicell", "adapt"}
OWN_TYPES = {"politician": "investigator", "country": "lab"}  # CoNLL-2003 has neither, nor do they match its types
SMALL = dict(word_dim=12, char_dim=6, char_filters=6, hidden_size=8, use_cpu=True, seed=3, num_train_epochs=2,
             max_steps_per_epoch=4, early_stopping_patience=0, source_subsample=40)


def _top_level_runners() -> dict[str, typing.Callable]:
    """The callables of ``crossner_hf.__all__`` that return a result (whatever names the top level keeps)."""
    runners = {}
    for name in crossner_hf.__all__:
        obj = getattr(crossner_hf, name)
        if inspect.isfunction(obj):
            returns = typing.get_type_hints(obj).get("return")
            if inspect.isclass(returns) and issubclass(returns, WorkflowResult):
                runners[name] = obj
    return runners


def test_every_top_level_runner_has_the_one_shape():
    """A runner trains or chooses for a model on data: ``runner(model, data, config=None, *, ...)``
    (docs/layout.md). A study that runs a plan (``run_experiment``) returns a ``WorkflowResult`` too but takes
    the plan first: its model and data were fixed by ``plan(experiment, scale, out, model=...)``, and asking
    for them again could only contradict the plan's cells. Every other top-level callable returning a
    ``WorkflowResult`` must have the runner's shape."""
    from crossner_hf.reproduce.experiments import Plan

    runners = _top_level_runners()
    assert RUNNERS & set(crossner_hf.__all__) <= set(runners), "a runner returns no WorkflowResult"
    assert len(runners) >= 1
    plan_runners = {name for name, runner in runners.items()
                    if typing.get_type_hints(runner).get(next(iter(inspect.signature(runner).parameters))) is Plan}
    assert plan_runners == {"run_experiment"}, plan_runners
    for name in plan_runners:
        params = list(inspect.signature(runners.pop(name)).parameters.values())
        assert params[0].kind is params[0].POSITIONAL_OR_KEYWORD and params[0].default is params[0].empty, name
        assert all(p.default is not p.empty for p in params[1:]), name  # the plan alone runs it
    assert RUNNERS & set(crossner_hf.__all__) <= set(runners)
    for name, runner in runners.items():
        params = list(inspect.signature(runner).parameters.values())
        assert params[0].name == "model" and params[0].kind is params[0].POSITIONAL_OR_KEYWORD, name
        assert params[1].kind is params[1].POSITIONAL_OR_KEYWORD and params[1].default is params[1].empty, name
        assert params[2].name == "config" and params[2].default is None, name
        assert all(p.kind is p.KEYWORD_ONLY for p in params[3:]), name


def _own_types_folder(crossner_data_dir, folder):
    """A few politics sentences as a user's JSON Lines folder whose types CoNLL-2003 lacks."""
    from crossner_hf.data.conll import read_conll

    folder.mkdir(parents=True)
    for split, name, n in (("train", "train", 40), ("dev", "validation", 20), ("test", "test", 20)):
        rows = []
        for s in read_conll(crossner_data_dir / "politics" / f"{split}.txt", None)[:n]:
            tags = [f"{t[:2]}{OWN_TYPES[t[2:]]}" if t[2:] in OWN_TYPES else "O" for t in s["ner_tags"]]
            rows.append({"words": s["tokens"], "labels": tags})
        (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def own_types(crossner_data_dir, tmp_path_factory):
    from crossner_hf.data.target import load_target

    return load_target(str(_own_types_folder(crossner_data_dir, tmp_path_factory.mktemp("own") / "mine")))


def test_results_of_train_dapt_nerbert_and_bilstm_crf_share_one_schema(tmp_path, tiny_bert_dir, own_types,
                                                                        monkeypatch):
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    import crossner_hf.encoders
    import crossner_hf.publishing.cards
    from crossner_hf import DAPTConfig, FinetuneConfig, NERBERTConfig, dapt, finetune, pretrain_nerbert
    from crossner_hf.training.rnn.recipes import BiLSTMCRFTrainingConfig, train_bilstm_crf

    resolved = []  # finetune resolves its model once; the card reads what was resolved
    real = crossner_hf.encoders.resolve_model_path
    for module in (crossner_hf.encoders, crossner_hf.publishing.cards):
        monkeypatch.setattr(module, "resolve_model_path", lambda name, **kw: resolved.append(name) or real(name, **kw))
    tiny = dict(use_cpu=True, disable_tqdm=True, dataloader_pin_memory=False, report_to="none")
    runs = {
        "finetune": finetune(tiny_bert_dir, own_types, FinetuneConfig(
            output_dir=str(tmp_path / "train"), seeds="3", num_train_epochs=1, per_device_train_batch_size=8, **tiny)),
        "dapt": dapt(tiny_bert_dir, [" ".join(t) for t in own_types["train"]["tokens"]], DAPTConfig(
            output_dir=str(tmp_path / "dapt"), max_steps=2, block_size=32, **tiny), corpus_level="domain"),
    }
    assert resolved == [tiny_bert_dir, tiny_bert_dir]  # finetune once, then dapt once
    names = ["O", "B-lab", "I-lab"]
    features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=names))})
    rows = {"tokens": [["Geneva", "rocks"]] * 8, "ner_tags": [[1, 0]] * 8}
    corpus = DatasetDict({s: Dataset.from_dict(rows, features=features) for s in ("train", "validation")})
    runs["nerbert"] = pretrain_nerbert(tiny_bert_dir, corpus, NERBERTConfig(
        output_dir=str(tmp_path / "nerbert"), effective_batch_size=4, per_device_train_batch_size=4, max_steps=2,
        eval_steps=2, save_steps=2, **tiny))
    runs["rnn"] = train_bilstm_crf(None, own_types, BiLSTMCRFTrainingConfig(
        schedule="target", output_dir=str(tmp_path / "bilstm"), **SMALL))
    for workflow, result in runs.items():
        raw = json.loads((result.output_dir / "results.json").read_text())  # one name, the envelope says the kind
        assert raw["schema"] == SCHEMA and set(SHARED_KEYS) <= set(raw) and raw["workflow"] == workflow, workflow
        assert isinstance(raw["seeds"], list) and raw["seconds"] > 0 and "name" in raw["dataset"], workflow
        again = read_results(result.output_dir)  # what was written: the results with no local path
        written = json.loads(json.dumps(portable(result.results), default=str))
        assert (type(result).read(result.output_dir).results, again.dev_f1) == (written, result.dev_f1)
        assert str(result).startswith(type(result).__name__) and len(str(result)) < 200
    assert runs["finetune"].dataset == runs["rnn"].dataset == "mine"
    assert runs["dapt"]["dataset"]["level"] == "domain" and runs["dapt"].dev_f1 is None
    assert runs["nerbert"].dataset is None  # a corpus in memory has no name
    assert runs["nerbert"].test_f1 is None and runs["nerbert"].dev_f1 == runs["nerbert"]["best_validation"]["f1"]
    assert runs["finetune"].test_f1 == runs["finetune"]["test"]["overall_f1"]
    from crossner_hf.results import DUPLICATES

    for workflow, result in runs.items():  # one body: no key repeats the envelope
        assert not set(DUPLICATES[workflow]) & set(result.results), workflow


def test_bilstm_crf_joint_and_pretrain_finetune_take_a_target_with_its_own_types(tmp_path, own_types):
    """finetune's rule for the RNN schedules: CoNLL-2003's types join the head, are learnt from the source alone,
    and the saved model never decodes them."""
    from crossner_hf import Tagger
    from crossner_hf.training.rnn.recipes import BiLSTMCRFTrainingConfig, train_bilstm_crf

    schema = list(own_types.labels)
    joint = train_bilstm_crf(None, own_types, BiLSTMCRFTrainingConfig(output_dir=str(tmp_path / "joint"), **SMALL))
    config = json.loads((tmp_path / "joint" / "config.json").read_text())
    head = [config["id2label"][str(i)] for i in range(len(config["id2label"]))]
    assert head[:len(schema)] == schema and "B-person" in head[len(schema):]  # learnt from the source
    assert config["tagging"]["output_labels"] == schema  # recorded in the model
    tags = {t for s in Tagger.from_pretrained(tmp_path / "joint").tag(list(own_types["test"]["tokens"])) for t in s}
    assert tags <= set(schema), tags - set(schema)  # never decoded
    assert 0 <= joint.test_f1 <= 1 and joint.dataset == "mine"

    staged = train_bilstm_crf(None, own_types, BiLSTMCRFTrainingConfig(
        schedule="pretrain-finetune", output_dir=str(tmp_path / "pf"), **SMALL))
    source_head = json.loads((tmp_path / "pf" / "source" / "config.json").read_text())["id2label"]
    assert len(source_head) > len(schema)  # the source stage trained the source's types too
    final = json.loads((tmp_path / "pf" / "config.json").read_text())["id2label"]
    assert [final[str(i)] for i in range(len(final))] == schema and staged["source_phase"]["test_f1"] >= 0
    # an earlier source run's folder (source_model=) is continued, without a source stage of its own; the model is
    # the word vectors only
    again = train_bilstm_crf(None, own_types, BiLSTMCRFTrainingConfig(
        schedule="pretrain-finetune", output_dir=str(tmp_path / "pf2"), **SMALL),
        source_model=tmp_path / "pf" / "source")
    with pytest.raises(ValueError, match=r"is a folder; the model is a word vectors file or None .*source_model="):
        train_bilstm_crf(tmp_path / "pf" / "source", own_types, BiLSTMCRFTrainingConfig(
            schedule="pretrain-finetune", output_dir=str(tmp_path / "pf3"), **SMALL))
    assert not (tmp_path / "pf2" / "source").exists() and again.test_f1 == staged.test_f1
    assert again["inputs"] == {"source_model": str(tmp_path / "pf" / "source")}


def test_coach_names_what_it_cannot_leave_out(tmp_path, own_types):
    from crossner_hf.training.rnn.recipes import BiLSTMCRFTrainingConfig, train_bilstm_crf

    with pytest.raises(ValueError, match="mine lacks CoNLL-2003's B-person, .* use --architecture lample or crossner"):
        train_bilstm_crf(None, own_types, BiLSTMCRFTrainingConfig(architecture="coach", output_dir=str(tmp_path),
                                                                  **SMALL))


def test_the_runner_takes_the_inputs_and_the_config_only_settings(tmp_path, tiny_bert_dir, monkeypatch):
    from crossner_hf.data.target import TargetData
    from crossner_hf.training.dapt import DAPTConfig
    from crossner_hf.training.rnn.common import PretrainedInputs, runner_call
    from crossner_hf.training.rnn.multicell import MultiCellTrainingConfig

    for config_class, moved in ((DAPTConfig, "corpus_level"), (MultiCellTrainingConfig, "features_model"),
                                (MultiCellTrainingConfig, "word_vectors")):  # runner arguments since 0.2; gone in 0.3
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{moved}'"):
            config_class(output_dir=str(tmp_path), **{moved: "x"})
    target = TargetData.__new__(TargetData)
    with pytest.raises(TypeError, match=r"train_multicell\(model, target, config\): give a TargetData"):
        runner_call("train_multicell", target, MultiCellTrainingConfig(), None, MultiCellTrainingConfig,
                    "multicell", model_is="features_model")  # the 0.2 order (target, config), removed in 0.3.0
    object.__setattr__(target, "name", "mine")  # the default folder is named after the data
    old = MultiCellTrainingConfig()
    _, config, inputs = runner_call("train_multicell", "enc", target, old, MultiCellTrainingConfig, "multicell",
                                    model_is="features_model", word_vectors="glove.txt")
    assert inputs == PretrainedInputs(word_vectors="glove.txt", features_model="enc")
    assert config.output_dir == "outputs/mine-multicell" and old.output_dir is None  # the caller's config untouched
    _, config, inputs = runner_call("train_multicell", "org/encoder", target, None, MultiCellTrainingConfig,
                                    "multicell", model_is="features_model", word_vectors="v.txt")
    assert (inputs.features_model, inputs.word_vectors, config.output_dir) == ("org/encoder", "v.txt",
                                                                               "outputs/mine-multicell")
    # an encoder object with its tokenizer: saved once into the run's folder
    from transformers import AutoModel, AutoTokenizer

    monkeypatch.chdir(tmp_path)
    encoder, tokenizer = AutoModel.from_pretrained(tiny_bert_dir), AutoTokenizer.from_pretrained(tiny_bert_dir)
    _, config, inputs = runner_call("train_multicell", encoder, target, None, MultiCellTrainingConfig, "multicell",
                                    model_is="features_model", tokenizer=tokenizer)
    assert config.output_dir == "outputs/mine-multicell"
    assert inputs.features_model == "outputs/mine-multicell/.base-model"
    assert (tmp_path / inputs.features_model / "config.json").is_file()
    with pytest.raises(ValueError, match="needs tokenizer= as well"):
        runner_call("train_multicell", encoder, target, None, MultiCellTrainingConfig, "multicell",
                    model_is="features_model")


@pytest.mark.parametrize("value, expected", [
    (False, None), (None, None), ("false", None), ("no", None), ("0", None),
    (True, "latest"), ("true", "latest"), ("latest", "latest"), ("checkpoint-2", "given"),
])
def test_one_meaning_of_resume(tmp_path, value, expected):
    from crossner_hf.outputs import CHECKPOINT_COMPLETE
    from crossner_hf.training.nerbert import NERBERTConfig, resume_checkpoint
    from crossner_hf.training.runs import resume_point, wants_resume

    for step in (2, 4):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / CHECKPOINT_COMPLETE).write_text("{}")
    if value == "checkpoint-2":
        value = str(tmp_path / "checkpoint-2")
    want = {None: None, "latest": str(tmp_path / "checkpoint-4"), "given": str(tmp_path / "checkpoint-2")}[expected]
    assert wants_resume(value) == (expected is not None)
    assert resume_point(value, tmp_path) == want
    # NER-BERT's own reading of "false" resumed (bool("false") is True); it is the one meaning now
    config = NERBERTConfig(output_dir=str(tmp_path), resume_from_checkpoint=value, use_cpu=True,
                           effective_batch_size=0)
    assert resume_checkpoint(config) == want
    with pytest.raises(ValueError, match="--resume_from_checkpoint 'nowhere': no such folder"):
        resume_point("nowhere", tmp_path)
    # a stage of several (finetune's seeds and source stage) takes a given checkpoint only when it holds it
    other = tmp_path / "seed-2"
    (other / "checkpoint-6").mkdir(parents=True)
    (other / "checkpoint-6" / CHECKPOINT_COMPLETE).write_text("{}")
    if expected == "given":
        assert resume_point(value, other, one_of_several=True) == str(other / "checkpoint-6")
        assert resume_point(value, other) == value  # a one-stage run takes it wherever it is


def test_the_experiment_folder_is_given_once(tmp_path):
    """plan() takes the folder its cells write under; run_experiment runs there, and refuses another one."""
    from crossner_hf.reproduce.experiments import plan
    from crossner_hf.reproduce.run import run_experiment

    grid = plan("cdlm-table5", "paper", tmp_path / "out")  # every cell lacks input here: nothing trains
    assert grid.output_dir == tmp_path / "out"
    result = run_experiment(grid, run=False)
    assert result.output_dir == tmp_path / "out" and (tmp_path / "out" / "plan.json").is_file()
    assert run_experiment(grid, str(tmp_path / "out"), run=False).status == result.status  # the same, repeated
    with pytest.raises(ValueError, match=r"output_dir .*elsewhere is not the folder the plan was made for"):
        run_experiment(grid, tmp_path / "elsewhere", run=False)


def test_pretrain_nerbert_takes_a_model_object_with_its_tokenizer_and_callbacks(tmp_path, tiny_bert_dir):
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value
    from transformers import AutoModelForMaskedLM, AutoTokenizer, TrainerCallback

    from crossner_hf import NERBERTConfig, pretrain_nerbert

    class Steps(TrainerCallback):
        seen = 0

        def on_step_end(self, args, state, control, **kwargs):
            Steps.seen += 1

    features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=["O", "B-lab", "I-lab"]))})
    rows = {"tokens": [["Geneva", "rocks"]] * 8, "ner_tags": [[1, 0]] * 8}
    corpus = DatasetDict({s: Dataset.from_dict(rows, features=features) for s in ("train", "validation")})
    model = AutoModelForMaskedLM.from_pretrained(tiny_bert_dir)
    config = NERBERTConfig(output_dir=str(tmp_path / "nb"), effective_batch_size=4, per_device_train_batch_size=4,
                           max_steps=2, eval_steps=2, save_steps=2, use_cpu=True, disable_tqdm=True,
                           dataloader_pin_memory=False, report_to="none")
    with pytest.raises(ValueError, match=r"pretrain_nerbert\(model=<a model object>\) needs tokenizer= as well"):
        pretrain_nerbert(model, corpus, config)
    result = pretrain_nerbert(model, corpus, config, tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir),
                              callbacks=[Steps()])
    assert Steps.seen == 2 and result["global_step"] == 2 and result.model == tiny_bert_dir
    assert not (tmp_path / "nb" / ".base-model").exists()  # the object's copy is never published
    assert json.loads((tmp_path / "nb" / "config.json").read_text())["id2label"]["1"] == "B-lab"


class _Claimed(Exception):
    """Raised where a runner claims its folder: the default folder is known, nothing has trained."""


def _folder_claimed(monkeypatch, module: str, name: str = "claimed_run") -> None:
    def claim(config_or_folder, *args, **kwargs):
        raise _Claimed(getattr(config_or_folder, "output_dir", config_or_folder))

    monkeypatch.setattr(f"{module}.{name}", claim)


def test_every_runner_and_command_given_no_folder_writes_into_outputs_data_workflow(monkeypatch, own_types,
                                                                                    tiny_bert_dir):
    """One rule: ``outputs/<data name>-<workflow or schedule>``, the data being the dataset (a corpus for DAPT
    and NER-BERT) as its card names it."""
    from datasets import ClassLabel, Dataset, DatasetDict, Features, List, Value

    from crossner_hf import DAPTConfig, FinetuneConfig, dapt, finetune, pretrain_nerbert
    from crossner_hf.training.rnn.recipes import train_bilstm_crf

    for module in ("crossner_hf.training.schedules", "crossner_hf.training.dapt", "crossner_hf.training.nerbert"):
        _folder_claimed(monkeypatch, module)
    _folder_claimed(monkeypatch, "crossner_hf.training.rnn.recipes", "held_output_dir")
    features = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=["O", "B-lab"]))})
    split = Dataset.from_dict({"tokens": [["Geneva"]], "ner_tags": [[1]]}, features=features)
    corpus = DatasetDict({"train": split, "validation": split})
    from crossner_hf.training.nerbert import as_corpus

    folders = {}
    for name, run in {
        "finetune": lambda: finetune(tiny_bert_dir, own_types),
        "dapt": lambda: dapt(tiny_bert_dir, [Path("texts/raw.txt")]),
        "nerbert": lambda: pretrain_nerbert(tiny_bert_dir, as_corpus(corpus, name="/data/tagged", config="all")),
        "bilstm-crf": lambda: train_bilstm_crf(None, own_types),
    }.items():
        with pytest.raises(_Claimed) as claimed:
            run()
        folders[name] = str(claimed.value)
    assert folders == {"finetune": "outputs/mine-direct", "dapt": "outputs/raw.txt-dapt",
                       "nerbert": "outputs/tagged-all-nerbert", "bilstm-crf": "outputs/mine-bilstm-crf"}
    # a config without a folder is named by the same rule, after its schedule (train's parser leaves it None)
    folderless = FinetuneConfig(schedule="joint")
    with pytest.raises(_Claimed) as claimed:
        finetune(tiny_bert_dir, own_types, folderless, source=own_types)
    assert str(claimed.value) == "outputs/mine-joint" and folderless.output_dir is None  # named on a copy
    # the dapt command names its corpus `corpora:politics-integrated`: dapt names the folder after it
    with pytest.raises(_Claimed) as claimed:
        dapt(tiny_bert_dir, [Path("texts/raw.txt")], DAPTConfig(), corpus_name="corpora:politics-integrated")
    assert str(claimed.value) == "outputs/corpora-politics-integrated-dapt"
    # the commands leave the folder to their runners: a config parsed without --output_dir has none
    given = {"train": ["--domain", "music"], "dapt": ["--train_file", "raw.txt"], "nerbert": ["--dataset_name", "c"]}
    for command, flags in given.items():
        parser = importlib.import_module(f"crossner_hf.commands.{command}").make_parser()
        (_, config) = parser.parse_args_and_config(flags)
        assert config.output_dir is None, command
