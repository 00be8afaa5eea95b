"""What ``adapt`` runs at each budget: :class:`AdaptConfig` (settings only: methods, seeds, budget, preference) and
the flags each kind of cell gets at a budget, for the encoder it trains.

The budgets reuse the grid's flags where the grid has them (:mod:`crossner_hf.reproduce.budgets`: ``smoke``, ``cpu``,
``paper``) so a method means the same thing in ``adapt`` and in ``reproduce``; ``gpu`` is the ``cpu`` recipe with
the whole CoNLL-2003 source, more DAPT steps and no ``--use_cpu``. The fine-tuning settings suit the encoder: the
measured MiniLM settings for MiniLM (lr 1e-4, head lr 1e-3, warm-up 0.1, batch 8, every sub-word labelled; the
``politics_direct_minilm`` preset's values) and the paper's presets for BERT-base at ``--budget paper``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crossner_hf.reproduce.budgets import preset_flags, rnn_flags, train_flags

BUDGETS = ("smoke", "cpu", "gpu", "paper")
SCHEDULES = ("direct", "pretrain-finetune", "joint")
LEVELS = ("domain", "entity", "task", "integrated")
PREFERENCES = ("cheaper", "best")

DEFAULT_SEEDS = {"smoke": [1], "cpu": [555], "gpu": [555, 666, 777], "paper": [555, 666, 777]}

MINUTES = {
    # estimated wall minutes of one cell (one seed) on the budget's machine: the dry run's figures and the order of
    # cost that "cheaper" means. cpu: 2 cores, MiniLM, ~100-200 train sentences; gpu: one H100 (direct 91 s, joint
    # 210 s, DAPT 41 s measured on politics with MiniLM, issue 49); paper: BERT-base to early stopping.
    "smoke": {"direct": 0.3, "pretrain-finetune": 0.4, "joint": 0.4, "dapt": 0.3, "corpora": 0.2, "bilstm-crf": 0.3},
    "cpu": {"direct": 6, "pretrain-finetune": 9, "joint": 12, "dapt": 4, "corpora": 0.5, "bilstm-crf": 5},
    "gpu": {"direct": 1.5, "pretrain-finetune": 3, "joint": 3.5, "dapt": 1, "corpora": 0.5, "bilstm-crf": 2},
    "paper": {"direct": 30, "pretrain-finetune": 45, "joint": 60, "dapt": 240, "corpora": 1, "bilstm-crf": 60},
}

BUDGET_TEXT = {
    "smoke": "smoke: 2 optimiser steps per fine-tuning (16 CoNLL-2003 sentences, 2 steps, before or beside), DAPT 2 "
             "steps of 64-token blocks; checks the plumbing, says nothing about the methods",
    "cpu": "cpu: up to 10 epochs with patience 4 (joint: 3 epochs, the target drawn 5 times beside 1,000 CoNLL-2003 "
           "sentences, dev checked each epoch; pretrain-finetune: 1 epoch on 1,000 CoNLL-2003 sentences first), "
           "DAPT 60 steps of 16 blocks of 128 tokens",
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
                "and cpu (555), three at gpu and paper (555, 666, 777)."})
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
    entity_k: int = field(default=2, metadata={"help": "Entity corpus level: at least k mentions in a line."})
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


def train_budget_flags(budget: str, schedule: str, model: str, data_dir: str | None) -> list[str]:
    """``train``'s flags for one fine-tuning at ``budget`` (the model, the data and the seed are added by the plan)."""
    if budget == "paper":
        if is_minilm(model):  # the paper's BERT-base settings undertrain MiniLM: its measured ones, to convergence
            flags = _drop_flag(_drop_flag(_without_cpu(train_flags("cpu", schedule, data_dir, few_shot=False)),
                                          "--num_train_epochs"), "--early_stopping_patience")
            return [*_drop_flag(flags, "--source_subsample"), "--num_train_epochs",
                    "30" if schedule != "joint" else "10", "--early_stopping_patience", "8"]
        return train_flags("paper", schedule, data_dir, few_shot=False)
    flags = train_flags("cpu" if budget == "gpu" else budget, schedule, data_dir, few_shot=False)
    if budget in ("cpu", "gpu") and not is_minilm(model):
        # the MiniLM step sizes are too large for a BERT-base-sized encoder: the paper preset's 5e-5 for all of it
        flags = [*_drop_flag(_drop_flag(flags, "--learning_rate"), "--head_learning_rate"), "--learning_rate", "5e-5"]
    if budget == "gpu":
        flags = _drop_flag(_without_cpu(flags), "--source_subsample")  # a GPU trains on all of CoNLL-2003
        return [*flags, "--fp16", "true"]
    return flags


def dapt_budget_flags(budget: str) -> list[str]:
    """``dapt``'s flags at ``budget`` (span-adjacent masking; the corpus and the model are added by the plan)."""
    return {
        "smoke": ["--use_cpu", "true", "--disable_tqdm", "true", "--max_steps", "2", "--per_device_train_batch_size",
                  "4", "--block_size", "64"],
        "cpu": ["--use_cpu", "true", "--disable_tqdm", "true", "--max_steps", "60", "--per_device_train_batch_size",
                "16", "--block_size", "128"],
        "gpu": ["--disable_tqdm", "true", "--max_steps", "200", "--per_device_train_batch_size", "16", "--block_size",
                "256", "--fp16", "true"],
        "paper": preset_flags("crossner_dapt"),
    }[budget]


def rnn_budget_flags(budget: str) -> list[str]:
    """``bilstm-crf``'s flags at ``budget`` (the target alone: the floor any encoder should beat)."""
    scale = {"gpu": "cpu"}.get(budget, budget)
    flags = [*rnn_flags(scale, None, "crossner_bilstm_crf")]
    if budget == "gpu":
        flags = _without_cpu(flags)
    return [*flags, "--schedule", "target"]


def cap_steps(flags: list[str], max_steps: int | None) -> list[str]:
    """``flags`` with ``--max_steps`` set to ``max_steps`` (None: unchanged)."""
    if max_steps is None:
        return flags
    return [*_drop_flag(flags, "--max_steps"), "--max_steps", str(max_steps)]


def _drop_flag(flags: list[str], name: str) -> list[str]:
    out, skip = [], False
    for i, flag in enumerate(flags):
        if skip:
            skip = False
            continue
        if flag == name:
            skip = i + 1 < len(flags) and not flags[i + 1].startswith("--")
            continue
        out.append(flag)
    return out


def _without_cpu(flags: list[str]) -> list[str]:
    return _drop_flag(flags, "--use_cpu")
