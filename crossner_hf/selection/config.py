"""What ``adapt`` runs at each budget: :class:`AdaptConfig` (settings only: methods, seeds, budget, preference) and
the settings each kind of cell gets at a budget, for the encoder it trains (values merged as dicts, rendered to
flags once by :func:`crossner_hf.grid.cells.render_flags`; the minutes are the grid's one cost table,
:mod:`crossner_hf.grid.costs`).

The budgets reuse the grid's settings where the grid has them (:mod:`crossner_hf.reproduce.budgets`: ``smoke``,
``cpu``, ``paper``) so a method means the same thing in ``adapt`` and in ``reproduce``, with one stopping rule for
every schedule (:data:`CHECKS`, :data:`PATIENCE`); ``gpu`` is the ``cpu`` recipe with the whole CoNLL-2003 source,
more DAPT steps and no ``--use_cpu``. The fine-tuning settings suit the encoder: the
measured MiniLM settings for MiniLM (lr 1e-4, head lr 1e-3, warm-up 0.1, batch 8, every sub-word labelled; the
``politics_direct_minilm`` preset's values) and the paper's presets for BERT-base at ``--budget paper``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.reproduce.budgets import preset_settings, rnn_settings, train_settings

BUDGETS = ("smoke", "cpu", "gpu", "paper")
SCHEDULES = ("direct", "pretrain-finetune", "joint")
LEVELS = ("domain", "entity", "task", "integrated")
PREFERENCES = ("cheaper", "best")
PRUNE = ("on", "off")

DEFAULT_SEEDS = {"smoke": [1], "cpu": [555], "gpu": [555, 666, 777], "paper": [555, 666, 777]}

BUDGET_TEXT = {
    "smoke": "smoke: 2 optimiser steps per fine-tuning (16 CoNLL-2003 sentences, 2 steps, before or beside), DAPT 2 "
             "steps of 64-token blocks; checks the plumbing, says nothing about the methods",
    "cpu": "cpu: every schedule under one stopping rule: dev F1 checked once per pass over the target's train "
           "sentences, up to 30 checks, stopped after 4 without a better one (direct and pretrain-finetune: 30 "
           "epochs; joint: 6 epochs, each drawing the target 5 times beside 1,000 CoNLL-2003 sentences; "
           "pretrain-finetune: 1 epoch on 1,000 CoNLL-2003 sentences first), DAPT 60 steps of 16 blocks of 128 "
           "tokens",
    "gpu": "gpu: as cpu with all of CoNLL-2003 as the source and DAPT 200 steps of 16 blocks of 256 tokens, fp16",
    "paper": "paper: the packaged CrossNER presets (paper/crossner_*: BERT-base settings of 002:405-418) and DAPT's "
             "(paper/crossner_dapt)",
}


@dataclass
class AdaptConfig:
    """Settings of an ``adapt`` run (the model, the data and the executor are :func:`~crossner_hf.selection.run.adapt`'s
    arguments)."""

    output_dir: str | None = field(default=None, metadata={
        "help": "Folder of the search: cells/ (one folder per run), adapt.md, adapt.json, adapt.png and best/ "
                "(the shipped model). Default outputs/adapt-<dataset>."})
    budget: str = field(default="cpu", metadata={
        "help": "How much each method trains: smoke (plumbing only, seconds), cpu (a laptop: minutes per "
                "method), gpu (one GPU), paper (the papers' settings).", "choices": list(BUDGETS)})
    methods: list[str] | None = field(default=None, metadata={
        "help": "Only these methods (names as the table prints them, or patterns: 'dapt-*/direct'); default: "
                "every candidate the inputs allow."})
    seeds: list[str] | None = field(default=None, metadata={
        "help": "Seeds of every fine-tuning (the choice is on the mean dev F1 over them); default: one at smoke "
                "(1) and at cpu (555), three at gpu and paper (555, 666, 777)."})
    models: list[str] | None = field(default=None, metadata={
        "help": "Other encoders to try beside --model_name_or_path (their three schedules, no DAPT)."})
    bilstm_crf: bool = field(default=False, metadata={
        "help": "Also train the BiLSTM-CRF floor on the target alone (random word vectors)."})
    prefer: str = field(default="cheaper", metadata={
        "help": "cheaper: when the best method by mean dev F1 is within one standard deviation (over seeds) of a "
                "cheaper method, ship the cheaper; best: always ship the best mean dev F1.",
        "choices": list(PREFERENCES)})
    max_steps: int | None = field(default=None, metadata={
        "help": "Cap every fine-tuning and DAPT run at this many optimiser steps (overrides the budget's)."})
    source_label_map: str | None = field(default=None, metadata={
        "help": "CoNLL-2003's types trained as yours by pretrain-finetune and joint (source=target pairs: "
                "'person=x_person,organisation=x_org'); default: the types whose names match yours, proposed and "
                "stated in the table; 'none': no mapping (CoNLL-2003's types stay its own)."})
    prune: str = field(default="on", metadata={
        "help": "on: race the methods: every method runs one seed first, further seeds go only to methods that can "
                "still win (the paired bootstrap on dev and the seed spread), and a training whose dev F1 trails the "
                "leader's at the same share of its own budget by more than the spread is stopped there (its "
                "checkpoint kept: a rerun with --prune off continues it); off: every method gets every seed in full.",
        "choices": list(PRUNE)})
    time_budget: float | None = field(default=None, metadata={
        "help": "Minutes the search may take: cells are ordered and raced so that a choice exists by then; at the "
                "deadline the running cells are stopped (resumable), the choice is made among the finished ones, and "
                "the table and the card say what was cut."})
    entity_k: int = field(default=2, metadata={"help": "Entity corpus level: at least k mentions in a line."})
    wikipedia_dump: list[str] | None = field(default=None, metadata={
        "help": "Wikipedia pages-articles dump(s): the DAPT methods' domain text is found in it from your train "
                "entities' pages and their categories (build-corpora --dataset_dir DATA --wikipedia_dump DUMP), built "
                "once as the search's corpora cell that every DAPT row shares; --raw_text adds your own text to it."})
    push_to_hub: str | None = field(default=None, metadata={
        "help": "Push the shipped model (OUT/best) to this Hub repo id (user/name) when the search ends."})
    private: bool = field(default=False, metadata={"help": "Create the Hub repository as private."})

    def __post_init__(self):
        if self.budget not in BUDGETS:
            raise ValueError(f"--budget {self.budget!r}: choose one of {', '.join(BUDGETS)}.")
        if self.prefer not in PREFERENCES:
            raise ValueError(f"--prefer {self.prefer!r}: choose one of {', '.join(PREFERENCES)}.")
        # "--methods direct,joint" and "--methods direct joint" mean the same
        self.methods = _split(self.methods)
        self.models = _split(self.models)
        if self.seeds is not None:
            self.seeds = [str(int(s)) for s in _split(self.seeds)]  # str: the flag takes "1,2,3" too
            if not self.seeds:
                raise ValueError("--seeds: give at least one seed.")
        if self.source_label_map is not None:
            self.source_label_map = self.source_label_map.strip()
            if self.source_label_map.lower() == "none":
                self.source_label_map = "none"
            else:  # a malformed map is one line now, not a failure in every cell later
                from crossner_hf.data.labels import format_label_map, parse_label_map

                parsed = parse_label_map(self.source_label_map)
                self.source_label_map = format_label_map(parsed) if parsed else None
        self.prune = {"true": "on", "false": "off"}.get(str(self.prune).lower(), str(self.prune).lower())
        if self.prune not in PRUNE:
            raise ValueError(f"--prune {self.prune!r}: choose on or off.")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"--time_budget {self.time_budget}: give the minutes the search may take (above 0).")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"--max_steps {self.max_steps}: give a positive number of steps.")

    def seed_list(self) -> list[int]:
        return [int(s) for s in self.seeds] if self.seeds else list(DEFAULT_SEEDS[self.budget])


def _split(values: str | list | None) -> list[str] | None:
    if values is None:
        return None
    values = [values] if isinstance(values, (str, int)) else values
    return [part for v in values for part in str(v).split(",") if part]


def is_minilm(model: str) -> bool:
    """Whether ``model`` is a MiniLM (the packaged one or a folder/Hub id named so): it gets the MiniLM settings."""
    return "minilm" in model.lower()


CHECKS, PATIENCE = 30, 4
"""The stopping rule every fine-tuning of the cpu and gpu budgets shares: dev F1 checked once per pass over the
target's train sentences, at most :data:`CHECKS` checks, stopped after :data:`PATIENCE` checks without a better one
(the best checkpoint on dev is kept). Early stopping ends a run, not the epoch cap: at the old caps (10 epochs of
direct, 3 of joint) direct and pretrain-finetune were still improving at their last epoch while joint stopped, so
the cap chose the winner."""

JOINT_DRAWS = 5
"""Times joint training draws each target sentence per epoch (beside 1,000 CoNLL-2003 sentences): one joint epoch
is :data:`JOINT_DRAWS` passes over the target, so joint checks dev every 1/JOINT_DRAWS of an epoch."""


def stopping_settings(schedule: str) -> dict[str, Any]:
    """The shared stopping rule (:data:`CHECKS`, :data:`PATIENCE`) as ``train`` settings for ``schedule``."""
    if schedule != "joint":
        return {"num_train_epochs": CHECKS, "early_stopping_patience": PATIENCE}
    every = f"{1 / CHECKS:.4f}"  # a fraction of the run's steps: one check per pass over the target
    return {"num_train_epochs": CHECKS // JOINT_DRAWS, "early_stopping_patience": PATIENCE,
            "oversample_factor": JOINT_DRAWS, "eval_strategy": "steps", "eval_steps": every,
            "save_strategy": "steps", "save_steps": every}


def train_budget_settings(budget: str, schedule: str, model: str, data_dir: str | None) -> dict[str, Any]:
    """``train``'s settings for one fine-tuning at ``budget`` (the model, the data and the seed are added by the
    plan)."""
    if budget == "paper":
        if is_minilm(model):  # the paper's BERT-base settings undertrain MiniLM: its measured ones, to convergence
            return {**train_settings("cpu", schedule, data_dir, few_shot=False), "use_cpu": None,
                    "source_subsample": None, "num_train_epochs": 30 if schedule != "joint" else 10,
                    "early_stopping_patience": 8}
        return train_settings("paper", schedule, data_dir, few_shot=False)
    settings = train_settings("cpu" if budget == "gpu" else budget, schedule, data_dir, few_shot=False)
    if budget in ("cpu", "gpu"):
        settings = {**settings, **stopping_settings(schedule)}
    if budget in ("cpu", "gpu") and not is_minilm(model):
        # the MiniLM step sizes are too large for a BERT-base-sized encoder: the paper preset's 5e-5 for all of it
        settings = {**settings, "learning_rate": "5e-5", "head_learning_rate": None}
    if budget == "gpu":  # a GPU trains on all of CoNLL-2003
        return {**settings, "use_cpu": None, "source_subsample": None, "fp16": True}
    return settings


def dapt_budget_settings(budget: str) -> dict[str, Any]:
    """``dapt``'s settings at ``budget`` (span-adjacent masking; the corpus and the model are added by the plan)."""
    return {
        "smoke": {"use_cpu": True, "disable_tqdm": True, "max_steps": 2, "per_device_train_batch_size": 4,
                  "block_size": 64},
        "cpu": {"use_cpu": True, "disable_tqdm": True, "max_steps": 60, "per_device_train_batch_size": 16,
                "block_size": 128},
        "gpu": {"disable_tqdm": True, "max_steps": 200, "per_device_train_batch_size": 16, "block_size": 256,
                "fp16": True},
        "paper": preset_settings("crossner_dapt"),
    }[budget]


def rnn_budget_settings(budget: str) -> dict[str, Any]:
    """``bilstm-crf``'s settings at ``budget`` (the target alone: the floor any encoder should beat)."""
    settings = rnn_settings({"gpu": "cpu"}.get(budget, budget), None, "crossner_bilstm_crf")
    if budget == "gpu":
        settings = {**settings, "use_cpu": None}
    return {**settings, "schedule": "target"}


def with_max_steps(settings: dict[str, Any], max_steps: int | None) -> dict[str, Any]:
    """``settings`` with ``max_steps`` set (None: unchanged): ``--max_steps`` of ``adapt`` over the budget's."""
    return settings if max_steps is None else {**settings, "max_steps": max_steps}
