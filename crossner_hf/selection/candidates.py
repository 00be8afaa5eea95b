"""The candidate methods of an ``adapt`` search and the grid cells that run them.

What the user gives decides the candidates: a labeled target always gives ``direct``, ``pretrain-finetune`` and
``joint`` (CoNLL-2003 as the source, CrossNER's three settings, 002:405-418); raw text of the domain adds DAPT with
span-adjacent masking on each corpus level (``domain`` from the text; ``entity``, ``task`` and ``integrated`` through
an entity list, by default the labeled spans of the user's train split), each DAPT run once and shared by the three
schedules fine-tuned from it (``dapt-integrated/joint``: joint training from the encoder adapted on the integrated
level). A Wikipedia dump (``--wikipedia_dump``) gives the same DAPT methods on the pages of the train split's entities
and their categories, the raw text, if any, added (one ``corpora`` cell: ``build-corpora --wikipedia_dump``).
``--models`` adds other encoders' three schedules, ``--bilstm_crf`` the BiLSTM-CRF floor. Without raw text or a dump
the DAPT methods are still listed, as "needs --raw_text or --wikipedia_dump".

Every run is a :class:`~crossner_hf.grid.Cell` (a ``crossner-hf`` command in its own folder), so the
search runs, resumes and reports as the papers' grids do, on the same executors.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.selection.config import (
    LEVELS,
    SCHEDULES,
    AdaptConfig,
    dapt_budget_settings,
    rnn_budget_settings,
    train_budget_settings,
    with_max_steps,
)
from crossner_hf.grid import Cell
from crossner_hf.grid.costs import MINUTES

NEEDS_RAW_TEXT = "needs --raw_text or --wikipedia_dump"
PLAN = "plan.json"
"""The search's plan in OUT: its settings, methods and cells (``adapt --status`` rebuilds the table from it)."""

PAPER_ROWS = {
    # (schedule, corpus level) -> the CrossNER Table 2 row of the same method (span masking; 002:448-512). The paper
    # ran span masking on three levels only (002:461-465): dapt-domain has no row of its own.
    **{(s, None): f"{s} / w/o DAPT" for s in SCHEDULES},
    **{(s, level): f"{s} / DAPT span / {level}" for s in SCHEDULES for level in ("entity", "task", "integrated")},
    ("bilstm-crf", None): "BiLSTM-CRF (word + char)",
}


@dataclass(frozen=True)
class Method:
    """One candidate: its name in the table, the cells whose scores it averages (one per seed), what it costs."""

    name: str
    schedule: str
    cells: tuple[Cell, ...] = ()
    minutes: float = 0.0
    """Estimated minutes of one seed, its DAPT included: the order of cost that "cheaper" means."""
    encoder: str = ""
    level: str | None = None
    status: str | None = None
    """Why it is not run (``needs --raw_text``), or None."""
    paper_row: str | None = None
    settings: str = ""
    extra_cells: tuple[Cell, ...] = field(default=())
    """The cells it needs that are not its own (the corpus build and DAPT run it shares)."""


def slug(name: str) -> str:
    """A model name as a folder part (``outputs/dapt`` -> ``dapt``; ``user/ner-bert`` -> ``user-ner-bert``)."""
    path = Path(name)
    # a folder (given as a path, there or not) by its last part; a Hub id keeps its owner
    text = path.name if path.exists() or path.is_absolute() or name.startswith(".") else name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def plan_methods(model: str, dataset_dir: str, name: str, config: AdaptConfig, *, raw_text: list[str] | None,
                 entity_list: str | None, data_dir: str | None, out: str | Path,
                 label_map: str | None = None) -> list[Method]:
    """Every candidate (runnable or not), before ``--methods`` narrows them. ``label_map``: CoNLL-2003's types
    that match the target's by name, as ``--source_label_map`` takes them (given to the schedules with a source)."""
    budget, seeds = config.budget, config.seed_list()
    minutes = MINUTES[budget]
    data = {"dataset_dir": dataset_dir}

    def finetune(method: str, schedule: str, encoder: str, encoder_path: str, deps: tuple[str, ...] = ()) -> tuple[Cell, ...]:
        # the budget's settings as values, the search's over them, rendered to flags once
        settings = {**with_max_steps(train_budget_settings(budget, schedule, encoder, data_dir), config.max_steps),
                    "source_label_map": label_map if label_map and schedule != "direct" else None,
                    "model_name_or_path": encoder_path, **data, "schedule": schedule}
        return tuple(Cell(name=f"{method}/seed-{seed}", command="train",
                          settings={**settings, "seeds": seed},
                          row=method, column=name, seed=seed, deps=deps, minutes=minutes[schedule],
                          gpus=1 if budget in ("gpu", "paper") else 0, meta={"method": method, "cost": schedule})
                     for seed in seeds)

    mapped = f"; CoNLL-2003 types mapped: {label_map}" if label_map else ""

    def settings(schedule: str, encoder: str, dapt: bool = False) -> str:
        return _settings(budget, schedule, encoder, dapt, config.max_steps) + (mapped if schedule != "direct" else "")

    methods = [Method(s, s, finetune(s, s, model, model), minutes[s], model, paper_row=PAPER_ROWS[(s, None)],
                      settings=settings(s, model)) for s in SCHEDULES]
    corpora = None
    dumps = [str(Path(d).resolve()) for d in config.wikipedia_dump or ()]
    if raw_text or dumps:
        # the entity list the runner derives from the train split is written before the grid runs (with raw text);
        # a dump alone reads the train split of the data itself: its entities find the domain's pages
        source = ({"dataset_dir": dataset_dir} if dumps and not raw_text and not entity_list
                  else {"entity_list": entity_list or str(Path(out) / "entity_list.tsv")})
        corpora = Cell(name="corpora", command="build-corpora", result_file="entity_list.tsv", score=False,
                       settings={"domain": name, **({"text_file": list(raw_text)} if raw_text else {}),
                                 **({"wikipedia_dump": dumps} if dumps else {}), **source, "k": config.entity_k},
                       row="corpora", column=name,
                       inputs=(*(raw_text or ()), *dumps, *([entity_list] if entity_list else [])),
                       minutes=minutes["corpora"], meta={"cost": "corpora"})
    for level in LEVELS:
        dapt = None
        if corpora is not None:
            # dapt/<level>, not dapt-<level>: the fine-tunings from it live in cells/dapt-<level>/, never inside
            # the adapted encoder's own folder
            dapt = Cell(name=f"dapt/{level}", command="dapt", score=False,
                        settings={**with_max_steps(dapt_budget_settings(budget), config.max_steps),
                                           "model_name_or_path": model, "dataset_name": str(corpora.folder(out)),
                                           "dataset_config": f"{name}-{level}", "masking": "span-adjacent",
                                           "seed": seeds[0]},
                        row=f"dapt-{level}", column=name, deps=(corpora.name,), minutes=minutes["dapt"],
                        gpus=1 if budget in ("gpu", "paper") else 0, meta={"cost": "dapt"})
        for schedule in SCHEDULES:
            method = f"dapt-{level}/{schedule}"
            common = dict(name=method, schedule=schedule, encoder=model, level=level,
                          minutes=minutes[schedule] + minutes["dapt"] + minutes["corpora"],
                          paper_row=PAPER_ROWS.get((schedule, level)), settings=settings(schedule, model, True))
            if dapt is None:
                methods.append(Method(**common, status=NEEDS_RAW_TEXT))
            else:
                methods.append(Method(**common, cells=finetune(method, schedule, model, str(dapt.folder(out)),
                                                               (dapt.name,)),
                                      extra_cells=(corpora, dapt)))
    for other in config.models or ():
        for schedule in SCHEDULES:
            method = f"{slug(other)}/{schedule}"
            methods.append(Method(method, schedule, finetune(method, schedule, other, other), minutes[schedule], other,
                                  settings=settings(schedule, other)))
    if config.bilstm_crf:
        rnn = rnn_budget_settings(budget)
        cells = tuple(Cell(name=f"bilstm-crf/seed-{seed}", command="bilstm-crf",
                           settings={**rnn, **data, "seed": seed}, row="bilstm-crf", column=name, seed=seed,
                           minutes=minutes["bilstm-crf"], meta={"method": "bilstm-crf", "cost": "bilstm-crf"})
                      for seed in seeds)
        methods.append(Method("bilstm-crf", "target", cells, minutes["bilstm-crf"], "BiLSTM-CRF (random vectors)",
                              paper_row=PAPER_ROWS[("bilstm-crf", None)],
                              settings=f"{budget}: BiLSTM-CRF on the target alone"))
    return methods


def select(methods: list[Method], patterns: list[str] | None) -> list[Method]:
    """The methods ``--methods`` names (exact names or ``fnmatch`` patterns), in plan order; a pattern matching
    nothing is one line listing the names."""
    if not patterns:
        return methods
    names = [m.name for m in methods]
    chosen: set[str] = set()
    for pattern in patterns:
        hit = {n for n in names if fnmatch.fnmatchcase(n, pattern)}
        if not hit:
            raise ValueError(f"--methods {pattern!r} names no candidate; choose among {', '.join(names)} "
                             "(or a pattern such as 'dapt-*/direct').")
        chosen |= hit
    return [m for m in methods if m.name in chosen]


def cells_of(methods: list[Method]) -> list[Cell]:
    """The cells to run for ``methods``: the shared corpus and DAPT cells once, then each method's own."""
    seen: dict[str, Cell] = {}
    for method in methods:
        if method.status is not None:
            continue
        for cell in (*method.extra_cells, *method.cells):
            seen.setdefault(cell.name, cell)
    return list(seen.values())


def _settings(budget: str, schedule: str, model: str, dapt: bool = False, max_steps: int | None = None) -> str:
    """The settings column of the table: what the budget gives this method, in a few words."""
    from crossner_hf.selection.config import is_minilm

    encoder = "MiniLM settings (lr 1e-4, head 1e-3, batch 8)" if is_minilm(model) else (
        "paper preset" if budget == "paper" else "lr 5e-5, batch 8")
    if budget == "smoke":  # the smoke budget's 2 steps, or --max_steps over them
        encoder = f"{max_steps or 2} steps"
    elif max_steps is not None:
        encoder += f", capped at {max_steps} steps"
    return f"{budget}: {schedule}, {encoder}" + (", after DAPT (span-adjacent)" if dapt else "")


def plan_record(model: str, dataset: str, config: AdaptConfig, raw_text: list[str] | None,
                methods: Sequence[Method], cells: Sequence[Cell]) -> dict[str, Any]:
    """``OUT/plan.json``: the search's settings, methods and cells, all ``--status`` needs to rebuild its table."""
    return {"model": str(model), "dataset": dataset, "config": config.__dict__, "raw_text": raw_text,
            "methods": [{"name": m.name, "schedule": m.schedule, "status": m.status, "minutes": m.minutes,
                         "encoder": m.encoder, "level": m.level, "paper_row": m.paper_row, "settings": m.settings,
                         "cells": [c.name for c in m.cells], "extra_cells": [c.name for c in m.extra_cells]}
                        for m in methods],
            "cells": [c.to_dict() for c in cells]}


def read_plan(out: str | Path) -> tuple[dict[str, Any], list[Method], list[Cell]]:
    """The plan a search wrote in ``out``: (its record, methods, cells); a one-line error when there is none."""
    path = Path(out) / PLAN
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no adapt search here (a search writes {PLAN} when it starts); give the "
                                "--output_dir of a running or finished `crossner-hf adapt`.")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        cells = [Cell.from_dict(c) for c in record["cells"]]
    except (ValueError, KeyError, TypeError) as err:  # damaged by hand or a full disk: one line, not a traceback
        raise ValueError(f"{path}: not a readable adapt plan ({type(err).__name__}: {str(err)[:80]}); rerun the "
                         "search's `crossner-hf adapt` command, which writes it again.") from None
    by_name = {c.name: c for c in cells}
    methods = [Method(name=m["name"], schedule=m.get("schedule", ""), minutes=m.get("minutes", 0.0),
                      cells=tuple(by_name[c] for c in m.get("cells", []) if c in by_name),
                      extra_cells=tuple(by_name[c] for c in m.get("extra_cells", []) if c in by_name),
                      encoder=m.get("encoder", ""), level=m.get("level"), status=m.get("status"),
                      paper_row=m.get("paper_row"), settings=m.get("settings", "")) for m in record["methods"]]
    return record, methods, cells
