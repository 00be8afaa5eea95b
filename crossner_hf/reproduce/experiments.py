"""The papers' experiments as grids of :class:`~crossner_hf.grid.Cell`, at three scales.

- ``smoke``: a tiny random BERT (``--model``, else one made in ``OUT/tiny-bert``), a few optimiser
  steps per run, small RNNs: exercises every path in minutes; the numbers mean nothing.
- ``cpu``: the pip-packaged all-MiniLM-L6-v2 with budgets that finish on a 2-core machine;
  :data:`CPU_CUTS` lists what it cuts against the papers (:func:`cpu_cuts`: those of a plan's cells).
- ``paper``: the paper presets in ``trainer_recipes/configs/paper/`` (``docs/fidelity.md``) and
  ``bert-base-cased``; the RNN rows read the papers' pre-trained vectors (:mod:`.vectors`: 'missing input'
  without the files, random only with ``--random_vectors``, which the notes name).

Each experiment plans exactly one table or figure of a paper (``PAPER_TABLES``; the transcription
is ``paper_tables.json``, checked against the papers' texts): one cell group per paper cell, the
papers' row labels, nothing extra. ``crossner-table2`` (002:448-512: 24 BERT rows, three settings x
without DAPT and seven DAPT runs, and the baselines), ``crossner-fig2`` (002:570-573: three panels),
``crossner-fig3`` (002:628-644: the release's sizes, three settings with and without DAPT),
``crossner-table4`` (002:646-656: four settings per music category, read from the table2 cells of
the same names), ``nerbert-table2`` (003:88-103: eleven columns, five seeds), ``nerbert-fig2``
(003:159-163: the six non-CrossNER domains) and ``nerbert-fig3`` (003:165-167). A paper cell
that no cell plans is listed in :data:`NOT_IMPLEMENTED` (or, at ``--scale cpu``, :data:`CPU_NOT_RUN`)
with the reason, and shown as such in the table. DAPT and NER-BERT pre-trainings run once and are
shared by every seed and setting that fine-tunes from them; experiments sharing an
``--output_dir`` share the cells of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crossner_hf.data.labels import DOMAINS
from crossner_hf.reproduce.budgets import (NERBERT_DOMAINS, SCALES, default_model, minutes_for, multicell_settings,
                                           nerbert_columns, preset_settings, rnn_settings, seeds_for, train_settings)
from crossner_hf.reproduce import cdlm_tables
from crossner_hf.reproduce.vectors import RNNVectors, random_vector_note, with_vectors
from crossner_hf.grid import Cell

EXPERIMENTS = ("crossner-table2", "crossner-fig2", "crossner-fig3", "crossner-table4", "nerbert-table2",
               "nerbert-fig2", "nerbert-fig3", "cdlm-table3", "cdlm-table4", "cdlm-table5", "cdlm-fig6",
               "cdlm-fig8")
DEFAULT_DOMAINS = {"crossner-fig2": ["music"], "crossner-fig3": ["music"], "crossner-table4": ["music"],
                   "nerbert-fig3": ["politics"]}
"""The domain each figure of the papers shows; the tables default to all five."""

CORPUS_LEVELS = ("domain", "entity", "task", "integrated")
MASKINGS = {"token": "token", "span": "span-adjacent"}
CORPUS_FRACTIONS = (0.01, 0.1, 0.25, 0.5, 0.75, 1.0)
"""Fig. 2's shares of the integrated corpus: the text names 1% (002:616-617) and 75% and more (002:609-610);
the other points are this project's reading of the figure."""


CPU_CUTS: tuple[tuple[str, str], ...] = (
    ("encoder", "encoder: all-MiniLM-L6-v2 (6 layers, 384 hidden, uncased) instead of bert-base-cased"),
    ("seeds", "seeds: one (555) instead of {paper_seeds}"),
    ("train", "fine-tuning: at most 10 epochs (patience 4) instead of the papers' run to early stopping"),
    ("train:pretrain-finetune", "pretrain-finetune: 1,000 CoNLL-2003 sentences for 1 source epoch instead of all "
                                "14,041 for 2 epochs"),
    ("train:joint", "joint: 1,000 CoNLL-2003 sentences with the target drawn 5 times (not 100) per epoch, 3 epochs"),
    ("dapt", "DAPT: 60 optimiser steps of 16 blocks of 128 tokens (not 512) on the corpus given by --corpora (the "
             "shared Wikipedia sample builds a few thousand sentences, not the paper's millions)"),
    ("bilstm-crf", "BiLSTM-CRF and Coach: 20 epochs of at most 100 steps (the release: 300 epochs, patience 8)"),
    ("bilstm-crf:rmsprop", "BiLSTM-CRF (CDLM's STM): RMSprop 1e-3 as the paper's STM (004:781-782), 100 epochs of "
                           "at most 20 steps, no early stopping"),
    ("not-run", "CDLM (Jia, Liang and Zhang 2019): not run, its budget cannot train it here (the table says why)"),
    ("multicell", "multi-cell compositional LSTM (Jia and Zhang 2020): frozen MiniLM features (not "
                  "bert-base-cased), 40 epochs (not 100)"),
    ("nerbert", "NER-BERT: 1 epoch of pre-training in batches of 16 (not 960) at learning rate 1e-4 on the corpus "
                "given by --nerbert_corpus (the shared sample builds about 2,300 training sentences, not the paper's "
                "16.3 million)"),
)
"""What ``--scale cpu`` cuts against the papers, each under the kind of cell it concerns: a plan lists the cuts
of the cells it runs (:func:`cpu_cuts`). Random word vectors, a cut at this scale unless the files are given, are
:func:`~crossner_hf.reproduce.vectors.random_vector_note`'s."""

PAPER_SEEDS = {"crossner": "the paper's three (002:512)", "nerbert": "the paper's five (003:138)",
               "cdlm": "the three this project runs at --scale paper (the CDLM paper states no run count; its release "
                       "one, seed 42)"}
"""What ``--scale cpu``'s one seed stands for, per paper."""

ENCODER_COMMANDS = ("train", "dapt", "nerbert", "multicell", "plot-entities")
SEEDED_COMMANDS = ("train", "bilstm-crf", "cdlm", "multicell")


def cpu_cuts(experiment: str, cells: Sequence[Cell], not_run: bool) -> tuple[str, ...]:
    """The cuts of :data:`CPU_CUTS` that concern ``cells`` (``not_run``: rows left out for their budget)."""
    kinds = {"not-run"} if not_run else set()
    for cell in cells:
        settings = cell.settings
        if cell.command in SEEDED_COMMANDS:  # the fine-tunings the papers repeat over seeds
            kinds.add("seeds")
        if cell.command in ENCODER_COMMANDS:
            kinds.add("encoder")
        if cell.command == "bilstm-crf" and settings.get("initial_optimizer") == "rmsprop":
            kinds.add("bilstm-crf:rmsprop")
        else:
            kinds.add(cell.command)
        if settings.get("schedule"):
            kinds.add(f"{cell.command}:{settings['schedule']}")
    paper_seeds = PAPER_SEEDS[experiment.split("-")[0]]
    return tuple(text.format(paper_seeds=paper_seeds) for kind, text in CPU_CUTS if kind in kinds)


@dataclass(frozen=True)
class Plan:
    """What ``reproduce`` needs to run or print an experiment."""

    experiment: str
    scale: str
    cells: list[Cell]
    model: str
    notes: tuple[str, ...] = ()
    unplanned: tuple[tuple[str, str], ...] = ()
    """(row, reason) of the paper's rows no cell plans: not implemented, borrowed, or not run at this scale."""
    output_dir: Path | None = None
    """The folder the cells were planned in (their command lines name folders under it): where
    :func:`~crossner_hf.reproduce.run.run_experiment` runs them, given once."""


def _dapt_cell(scale: str, *, domain: str, level: str, short: str, model: str, corpora: str | None, seed: int,
               fraction: float | None = None) -> Cell:
    """One DAPT run on ``domain-level`` with ``short`` masking (optionally a share of the corpus).

    One per (domain, corpus, masking[, share]), shared by every seed and schedule fine-tuned from it,
    as the release pre-trains once per corpus (002:399-405) and fine-tunes three runs from it (002:512).
    """
    part = "" if fraction is None else f"-{100 * fraction:g}pct"
    corpus_inputs = (str(Path(corpora) / "data" / f"{domain}-{level}"),) if corpora else (
        "--corpora (a folder built by crossner-hf build-corpora)",)
    budget = {"smoke": {"max_steps": 2, "per_device_train_batch_size": 4, "block_size": 64},
              "cpu": {"max_steps": 60, "per_device_train_batch_size": 16, "block_size": 128},
              "paper": {}}[scale]
    base = preset_settings("crossner_dapt") if scale == "paper" else {"use_cpu": True, "disable_tqdm": True, **budget}
    return Cell(name=f"{domain}/dapt-{level}-{short}{part}", command="dapt",
                score=False, settings={**base, "model_name_or_path": model,
                                                "dataset_name": str(corpora or "CORPORA"),
                                                "dataset_config": f"{domain}-{level}",
                                                "corpus_fraction": None if fraction is None else f"{fraction:g}",
                                                "masking": MASKINGS[short], "seed": seed},
                row=f"DAPT {short} / {level}{part}", column=domain, seed=seed, inputs=corpus_inputs,
                gpus=1 if scale == "paper" else 0, meta={"domain": domain},
                # the paper's epochs over a share of the corpus take that share of the time; cpu runs fixed steps
                minutes=minutes_for(scale, "dapt") * (fraction if scale == "paper" and fraction else 1))


def _finetune_cell(scale: str, out: str | Path, *, schedule: str, domain: str, seed: int, model: str, row: str,
                   column: str, name: str, dapt: Cell | None = None, few_shot: int | None = None,
                   data_dir: str | None = None, meta: dict[str, str] | None = None) -> Cell:
    """A ``train`` run of ``schedule`` on ``domain`` from ``model`` or from the ``dapt`` cell's output."""
    path = str(Path(out) / "cells" / dapt.name) if dapt else model
    budget = train_settings(scale, schedule, data_dir, few_shot=few_shot is None)
    if few_shot is not None:  # the cell's own training-set size, in place of the budget's
        budget = {**{k: v for k, v in budget.items() if k != "few_shot"}, "few_shot": few_shot}
    return Cell(name=name, command="train",
                settings={**budget, "model_name_or_path": path, "domain": domain, "seeds": seed},
                row=row, column=column, seed=seed, deps=(dapt.name,) if dapt else (),
                gpus=1 if scale == "paper" else 0, meta=meta or {}, minutes=minutes_for(scale, "train"),
                inputs=(model,) if scale == "smoke" and dapt is None else ())


def crossner_table2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                    model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER Table 2 (002:448-512): its 31 rows x the requested domains x seeds.

    Per domain: the seven DAPT runs (token masking on four corpus levels, span masking on three,
    002:455-465), each once; BERT without DAPT and from each DAPT run under the three settings
    (direct, pretrain-finetune, joint; 002:405-418); the baselines: BiLSTM-CRF and Coach with words and
    with words + characters, trained jointly with CoNLL-2003 (002:422-436; the release's architectures,
    ``--char_ngram_dim 0`` for words only), and Jia, Liang and Zhang (2019) with the domain-level
    corpus as the target LM text (002:438-442), and the multi-cell compositional LSTM of Jia and Zhang
    (2020) over the encoder's features and over the span / integrated DAPT encoder's (002:444-446, 509-510).
    """
    cells: list[Cell] = []
    seed_list = seeds_for(scale, seeds)
    for domain in domains:
        dapts = {(level, short): _dapt_cell(scale, domain=domain, level=level, short=short, model=model,
                                            corpora=corpora, seed=seed_list[0])
                 for short, level in TABLE2_DAPT}
        cells += dapts.values()
        for seed in seed_list:
            for schedule in SCHEDULES:
                cells.append(_finetune_cell(scale, out, schedule=schedule, domain=domain, seed=seed, model=model,
                                            row=f"{schedule} / w/o DAPT", column=domain, data_dir=data_dir,
                                            name=f"{domain}/{schedule}-wo-dapt/seed-{seed}"))
                for short, level in TABLE2_DAPT:
                    cells.append(_finetune_cell(
                        scale, out, schedule=schedule, domain=domain, seed=seed, model=model, data_dir=data_dir,
                        row=f"{schedule} / DAPT {short} / {level}", column=domain, dapt=dapts[(level, short)],
                        name=f"{domain}/{schedule}-dapt-{level}-{short}/seed-{seed}"))
            tail = {"domain": domain, "seed": seed}
            for baseline, architecture, preset, prefix in (("BiLSTM-CRF", "crossner", "crossner_bilstm_crf", "bilstm-crf"),
                                                           ("Coach", "coach", "crossner_coach", "coach")):
                # the release's only politics BiLSTM-CRF command passes --dropout 0.3 (its README.md:93); run.sh's
                # other four domains, the preset's 0.5
                dropout = ("0.3" if scale == "paper" and architecture == "crossner" and domain == "politics"
                           else None)
                for inputs, chars in (("word", 0), ("word + char", None)):
                    slug = f"{prefix}-{'word' if chars is not None else 'word-char'}"
                    cells.append(Cell(name=f"{domain}/{slug}/seed-{seed}", command="bilstm-crf",
                                      settings={**rnn_settings(scale, data_dir, preset), "architecture": architecture,
                                                "dropout": dropout, "char_ngram_dim": chars, **tail},
                                      row=f"{baseline} ({inputs})", column=domain, seed=seed,
                                      minutes=minutes_for(scale, "rnn")))
            text = str(Path(corpora) / "data" / f"{domain}-domain") if corpora else None
            cells.append(Cell(
                name=f"{domain}/cdlm/seed-{seed}", command="cdlm",
                settings={**rnn_settings(scale, data_dir, "cdlm_supervised"),
                          "lm_negatives": 10 if scale == "smoke" else None, "mode": "supervised",
                          "target_text": f"{corpora or 'CORPORA'}:{domain}-domain", **tail},
                row="Jia, Liang and Zhang (2019)", column=domain, seed=seed, minutes=minutes_for(scale, "rnn"),
                inputs=(text,) if text else ("--corpora (the domain-level corpus is CDLM's target LM text, "
                                             "002:440-442)",)))
            # Jia and Zhang (2020) on the encoder's features (002:444-446, 002:509), and on the features of the
            # span / integrated DAPT encoder (002:510, 002:558-560)
            span_integrated = dapts[("integrated", "span")]
            for features, suffix, row, deps in (
                    (model, "", "Jia and Zhang (2020)", ()),
                    (str(Path(out) / "cells" / span_integrated.name), "-dapt-integrated-span",
                     "Jia and Zhang (2020) + DAPT (span, integrated)", (span_integrated.name,))):
                cells.append(Cell(name=f"{domain}/multicell{suffix}/seed-{seed}", command="multicell",
                                  settings={**multicell_settings(scale, data_dir), "features_model": features, **tail},
                                  row=row, column=domain, seed=seed, deps=deps, minutes=minutes_for(scale, "rnn"),
                                  inputs=(model,) if scale == "smoke" and not deps else ()))
    return cells


TABLE2_DAPT = (("token", "domain"), ("token", "entity"), ("token", "task"), ("token", "integrated"),
               ("span", "entity"), ("span", "task"), ("span", "integrated"))
"""(masking, corpus level) of Table 2's DAPT rows, in its order (002:455-465): no span + domain row."""

SCHEDULES = ("direct", "pretrain-finetune", "joint")

NOT_IMPLEMENTED: dict[str, dict[str, str]] = {}
"""Rows of a paper's table that no cell plans, and why; shown in the table with the paper's numbers."""

BORROWED = {
    "nerbert-table2": {
        "direct / DAPT": "taken from CrossNER (003:103): crossner-table2 row 'direct / DAPT span / integrated'",
        "pretrain-finetune / DAPT": "taken from CrossNER (003:103): crossner-table2 row "
                                    "'pretrain-finetune / DAPT span / integrated'",
        "pretrain-finetune / CDLM": "taken from CrossNER and Jia et al. 2019 (003:103): the five CrossNER columns "
                                    "are crossner-table2 row 'Jia, Liang and Zhang (2019)', BioCG and BioPC "
                                    "(003:97) CDLM Table 3's FINAL row (004:905): cdlm-table3 row 'FINAL'"},
}
"""Rows a paper reports from another paper's runs: planned by the experiment named, not again here."""

CPU_NOT_RUN = {
    "crossner-table2": {
        "Jia, Liang and Zhang (2019)": "not trained at this scale: four objectives at ~1 s a step on 2 cores; 600 "
                                       "steps left it at 4.42 F1 and 4 epochs reached 41.54 in 73 min, against the "
                                       "release's 100 epochs (run `crossner-hf cdlm --config paper/cdlm_supervised`)"},
}
"""Rows ``--scale cpu`` leaves out because its budget cannot train them, and why."""

PAPER_TABLES = {"crossner-table2": "crossner/table2", "crossner-table4": "crossner/table4",
                "nerbert-table2": "nerbert/table2", "cdlm-table3": "cdlm/table3", "cdlm-table4": "cdlm/table4",
                "cdlm-table5": "cdlm/table5", "crossner-fig2": "crossner/fig2", "crossner-fig3": "crossner/fig3",
                "nerbert-fig2": "nerbert/fig2", "nerbert-fig3": "nerbert/fig3", "cdlm-fig6": "cdlm/fig6",
                "cdlm-fig8": "cdlm/fig8"}
"""The table or figure of ``paper_tables.json`` each experiment plans."""


def crossner_fig2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                  model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER Fig. 2 (002:570-573): DAPT on a share of the integrated corpus, token vs span masking,
    then each of the three settings (the figure's three panels); one DAPT run per (masking, share).

    The text speaks of the improvements DAPT brings (002:614-617), so each panel also has its reference
    without DAPT (x = 0). The 100% runs are ``crossner-table2``'s integrated-corpus DAPT and fine-tuning cells
    (the same names: a shared ``--output_dir`` runs them once), as is the reference (table2's w/o DAPT).
    """
    fractions = CORPUS_FRACTIONS[1:3] if scale == "smoke" else CORPUS_FRACTIONS
    seed_list = seeds_for(scale, seeds)
    cells: list[Cell] = []
    for domain in domains:
        dapts = {(short, f): _dapt_cell(scale, domain=domain, level="integrated", short=short, model=model,
                                        corpora=corpora, seed=seed_list[0], fraction=None if f == 1 else f)
                 for short in MASKINGS for f in fractions}
        cells += dapts.values()
        for seed in seed_list:
            for schedule in SCHEDULES:
                cells.append(_finetune_cell(
                    scale, out, schedule=schedule, domain=domain, seed=seed, model=model, data_dir=data_dir,
                    row=f"{schedule} / w/o DAPT", column="0", name=f"{domain}/{schedule}-wo-dapt/seed-{seed}",
                    meta={"domain": domain, "panel": schedule}))
                for (short, f), dapt in dapts.items():
                    share = "" if f == 1 else f"-{100 * f:g}pct"  # 100%: table2's cell
                    cells.append(_finetune_cell(
                        scale, out, schedule=schedule, domain=domain, seed=seed, model=model, data_dir=data_dir,
                        row=f"{schedule} / {short} masking", column=f"{100 * f:g}", dapt=dapt,
                        name=f"{domain}/{schedule}-dapt-integrated-{short}{share}/seed-{seed}",
                        meta={"domain": domain, "panel": schedule}))
    return cells


TABLE4_ROWS = ("direct / w/o DAPT", "direct / DAPT span / integrated", "pretrain-finetune / w/o DAPT",
               "pretrain-finetune / DAPT span / integrated")
"""CrossNER Table 4's four settings (002:646-656), read from the table2 cells of the same names."""


def crossner_table4(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                    model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER's per-category F1 (002:646-656): the table2 cells of :data:`TABLE4_ROWS` (same names: a
    shared ``--output_dir`` runs them once); the table reads each entity category's F1 from them."""
    cells = crossner_table2(scale, out, domains=domains, seeds=seeds, model=model, corpora=corpora,
                            data_dir=data_dir)
    return select_rows(cells, TABLE4_ROWS)


FEW_SHOT_SIZES = (10, 25, 40, 55, 70, 85, 100)
"""The release's few-shot sizes (``src/config.py:42``); the text names 10 (002:633) and 40 (002:638)."""


def crossner_fig3(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                  model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER Fig. 3 (002:628-644): F1 against the number of music training sentences, for the three
    settings without DAPT and after DAPT on the integrated corpus with token and with span masking."""
    cells: list[Cell] = []
    sizes = FEW_SHOT_SIZES[:2] if scale == "smoke" else FEW_SHOT_SIZES
    seed_list = seeds_for(scale, seeds)
    for domain in domains:
        dapts = {short: _dapt_cell(scale, domain=domain, level="integrated", short=short, model=model,
                                   corpora=corpora, seed=seed_list[0]) for short in MASKINGS}
        cells += dapts.values()
        for seed in seed_list:
            for schedule in SCHEDULES:
                for short in (None, *MASKINGS):
                    label = "w/o DAPT" if short is None else f"DAPT {short} / integrated"
                    slug = "wo-dapt" if short is None else f"dapt-integrated-{short}"
                    for n in sizes:
                        cells.append(_finetune_cell(
                            scale, out, schedule=schedule, domain=domain, seed=seed, model=model, data_dir=data_dir,
                            row=f"{schedule} / {label}", column=str(n), dapt=dapts.get(short), few_shot=n,
                            name=f"{domain}/few-shot-{n}/{schedule}-{slug}/seed-{seed}", meta={"domain": domain}))
    return cells


NERBERT_CONFIGS = ("all", "4types", "212types")


def nerbert_pretraining(scale: str, out: str | Path, *, model: str, nerbert_corpus: str | None,
                        configs: Sequence[str] = NERBERT_CONFIGS) -> tuple[list[Cell], dict[str, tuple[str, tuple]]]:
    """One NER-BERT pre-training cell per corpus config, and the encoders to compare: ``{label: (path, deps)}``.

    The cells are named alike in every NER-BERT experiment, so experiments sharing an
    ``--output_dir`` pre-train once.
    """
    cells: list[Cell] = []
    encoders: dict[str, tuple[str, tuple]] = {"encoder": (model, ())}
    for config in configs:
        name = f"nerbert-{config}"
        inputs = (str(Path(nerbert_corpus) / "data" / config),) if nerbert_corpus else (
            "--nerbert_corpus (a folder built by crossner-hf build-nerbert-corpus)",)
        budget = {"smoke": {"max_steps": 2, "per_device_train_batch_size": 4, "validation_subsample": 20,
                            "use_cpu": True, "disable_tqdm": True},
                  "cpu": {"num_train_epochs": 1, "per_device_train_batch_size": 16, "effective_batch_size": 16,
                          "learning_rate": "1e-4", "use_cpu": True, "disable_tqdm": True},
                  "paper": preset_settings("nerbert_pretrain") if scale == "paper" else {}}[scale]
        cells.append(Cell(name=name, command="nerbert", score=False, inputs=inputs, gpus=1 if scale == "paper" else 0,
                          settings={**budget, "model_name_or_path": model,
                                             "dataset_name": str(nerbert_corpus or "NERBERT_CORPUS"),
                                             "dataset_config": config},
                          row=f"NER-BERT {config}", column="(pre-training)", minutes=minutes_for(scale, "dapt") * 2))
        encoders[f"NER-BERT {config}"] = (str(Path(out) / "cells" / name), (name,))
    return cells, encoders


def nerbert_table2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                   model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None,
                   datasets: Sequence[str] | None = None) -> list[Cell]:
    """NER-BERT Table 2 (003:88-103): BERT and the three NER-BERT variants, directly fine-tuned and after
    CoNLL-2003 (003:113), on the eleven columns, five seeds (003:138).

    One NER-BERT pre-training per corpus config (``--nerbert_corpus``), shared by every column and
    seed. The DAPT and CDLM rows the paper takes from other papers (003:103) are
    :data:`BORROWED`: ``crossner-table2`` plans them.
    """
    cells, encoders = nerbert_pretraining(scale, out, model=model, nerbert_corpus=nerbert_corpus)
    labels = {"encoder": "BERT", "NER-BERT all": "NER-BERT", "NER-BERT 4types": "NER-BERT 4types",
              "NER-BERT 212types": "NER-BERT 212types"}
    for column, target, inputs in nerbert_columns(scale, domains, datasets):
        for seed in seeds_for(scale, seeds if seeds else (NERBERT_PAPER_SEEDS if scale == "paper" else None)):
            for label, (path, deps) in encoders.items():
                for schedule, short in (("direct", "direct"), ("pretrain-finetune", "conll-source")):
                    slug = label.lower().replace(" ", "-")
                    cells.append(Cell(
                        name=f"{column}/{slug}-{short}/seed-{seed}", command="train", deps=deps,
                        settings={**train_settings(scale, schedule, data_dir, preset="nerbert_finetune"),
                                  "model_name_or_path": path, **target, "seeds": seed},
                        row=f"{schedule} / {labels[label]}", column=column, seed=seed,
                        gpus=1 if scale == "paper" else 0, minutes=minutes_for(scale, "train"),
                        inputs=(*((model,) if scale == "smoke" and not deps else ()), *inputs)))
    return cells


FEW_SHOT_FRACTIONS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1.0)
"""NER-BERT Fig. 2's shares of the train split. The figure's points are not in the text, which says only that the
shares are percentages of the six domains' train splits (003:161-163) and that the gains show when the training
examples are "around or less than 50" / "around or less than 100" (003:161). The six train splits hold
611 to 6.3K sentences (003:257), so these shares (this project's choice) give every domain a point between 10 and
50 sentences and one between 50 and 100 (the test checks it against 003:257), then the curve up to the whole split."""

NERBERT_PAPER_SEEDS = (555, 666, 777, 888, 999)
"""Five seeds: every BERT / NER-BERT result of the paper is the mean of five runs with the same seeds (003:138);
the seed values are not given, these are this project's."""


def nerbert_fig2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                 model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None,
                 datasets: Sequence[str] | None = None) -> list[Cell]:
    """NER-BERT Fig. 2 (003:128, 003:159-163): BERT vs NER-BERT, direct fine-tuning on shares of the train
    split of the six non-CrossNER domains (003:161: CrossNER's are small already), five seeds at paper scale
    (003:138); ``--domains`` picks columns, CrossNER ones included."""
    cells, encoders = nerbert_pretraining(scale, out, model=model, nerbert_corpus=nerbert_corpus, configs=("all",))
    labels = {"encoder": "BERT", "NER-BERT all": "NER-BERT"}
    fractions = FEW_SHOT_FRACTIONS[:2] if scale == "smoke" else FEW_SHOT_FRACTIONS
    chosen = list(domains) if domains else list(NERBERT_DOMAINS)
    for domain, target, inputs in nerbert_columns(scale, chosen, datasets):
        for seed in seeds_for(scale, seeds if seeds else (NERBERT_PAPER_SEEDS if scale == "paper" else None)):
            for label, (path, deps) in encoders.items():
                for fraction in fractions:
                    slug = label.lower().replace(" ", "-")
                    percent = f"{100 * fraction:g}"
                    cells.append(Cell(
                        name=f"{domain}/{slug}-{percent}pct/seed-{seed}", command="train", deps=deps,
                        settings={**train_settings(scale, "direct", data_dir, few_shot=False,
                                                   preset="nerbert_finetune"),
                                  "few_shot_fraction": str(fraction), "model_name_or_path": path, **target,
                                  "seeds": seed},
                        row=f"{labels[label]} ({domain})", column=percent, seed=seed, meta={"domain": domain},
                        gpus=1 if scale == "paper" else 0, minutes=minutes_for(scale, "train"),
                        inputs=(*((model,) if scale == "smoke" and not deps else ()), *inputs)))
    return cells


def nerbert_fig3(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                 model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None
                 ) -> list[Cell]:
    """NER-BERT's t-SNE panel: the gold entities of a domain's test split under the encoder and each variant.

    One ``plot-entities`` cell per (encoder, domain): its PNG and silhouettes (cosine, full
    dimension); the table lists the silhouettes, the panel puts the four plots side by side.
    """
    cells, encoders = nerbert_pretraining(scale, out, model=model, nerbert_corpus=nerbert_corpus)
    for domain in domains:
        for label, (path, deps) in encoders.items():
            slug = label.lower().replace(" ", "-")
            cells.append(Cell(
                name=f"{domain}/tsne-{slug}", command="plot-entities", deps=deps, output_file="entities.png",
                result_file="entities.json",
                settings={"data_dir": data_dir, "max_entities": 60 if scale == "smoke" else None, "model": path,
                          "domain": domain, "seed": 0},
                row=label, column=domain, meta={"domain": domain}, minutes=minutes_for(scale, "rnn") / 2,
                inputs=(model,) if scale == "smoke" and not deps else ()))
    return cells


def select_rows(cells: list[Cell], rows: Sequence[str]) -> list[Cell]:
    """The cells of the named rows and every cell they depend on; an unknown row name is an error."""
    known = list(dict.fromkeys(c.row for c in cells))
    unknown = [r for r in rows if r not in known]
    if unknown:
        raise ValueError(f"--rows {', '.join(map(repr, unknown))}: this experiment's rows are "
                         f"{', '.join(map(repr, known))}.")
    by_name = {c.name: c for c in cells}
    keep = {c.name for c in cells if c.row in rows}
    stack = list(keep)
    while stack:
        for dep in by_name[stack.pop()].deps:
            if dep not in keep:
                keep.add(dep)
                stack.append(dep)
    return [c for c in cells if c.name in keep]


def plan(experiment: str, scale: str, out: str | Path, *, domains: Sequence[str] | None = None,
         seeds: Sequence[int] | None = None, model: str | None = None, corpora: str | None = None,
         data_dir: str | None = None, rows: Sequence[str] | None = None, nerbert_corpus: str | None = None,
         datasets: Sequence[str] | None = None, raw_text: Sequence[str] | None = None,
         vectors: RNNVectors | None = None) -> Plan:
    """The cells of ``experiment`` at ``scale``; raises ``ValueError`` naming the choices otherwise. ``vectors``:
    the RNN rows' pre-trained vectors files (:class:`~crossner_hf.reproduce.vectors.RNNVectors`; none given: at
    ``--scale paper`` those cells are 'missing input')."""
    if scale not in SCALES:
        raise ValueError(f"--scale {scale!r}: choose one of {', '.join(SCALES)}.")
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}: choose one of {', '.join(EXPERIMENTS)}.")
    dataset_grid = experiment in ("nerbert-table2", "nerbert-fig2", "cdlm-table3", "cdlm-table4", "cdlm-table5",
                                  "cdlm-fig6", "cdlm-fig8")
    domains = list(domains or ([] if dataset_grid else DEFAULT_DOMAINS.get(experiment, DOMAINS)))
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown and not dataset_grid:
        raise ValueError(f"--domains {' '.join(unknown)}: choose from {', '.join(DOMAINS)}.")
    model = model or default_model(scale, out)
    common = dict(domains=domains, seeds=seeds, model=model, corpora=corpora, data_dir=data_dir)
    if raw_text and experiment not in ("cdlm-table4", "cdlm-table5", "cdlm-fig8"):
        raise ValueError(f"--raw_text: only the zero-shot CBS column (cdlm-table4, cdlm-table5, cdlm-fig8) reads raw "
                         "corpora, not "
                         f"{experiment}.")
    if datasets and not dataset_grid:
        raise ValueError(f"--datasets: {experiment} runs on CrossNER domains only; further datasets become "
                         "columns of nerbert-table2, cdlm-table3 and cdlm-table4 and curves of nerbert-fig2.")
    if experiment in ("cdlm-fig6", "cdlm-fig8"):
        if experiment == "cdlm-fig8":
            cells = cdlm_tables.cdlm_fig8(scale, out, datasets=datasets, raw=raw_text, **common)
        else:
            cells = cdlm_tables.cdlm_fig6(scale, out, datasets=datasets, **common)
    elif experiment in cdlm_tables.PAPER_COLUMNS:
        if experiment in ("cdlm-table4", "cdlm-table5"):
            cells = cdlm_tables.cdlm_table4(scale, out, datasets=datasets, raw=raw_text, **common)
            if experiment == "cdlm-table5":  # table4's cells of the two rows compared (the same names: run once)
                cells = select_rows(cells, cdlm_tables.TABLE5_ROWS)
        else:
            cells = cdlm_tables.cdlm_table3(scale, out, datasets=datasets, **common)
    elif dataset_grid:
        build = {"nerbert-table2": nerbert_table2, "nerbert-fig2": nerbert_fig2}
        cells = build[experiment](scale, out, nerbert_corpus=nerbert_corpus, datasets=datasets, **common)
    elif experiment == "nerbert-fig3":
        cells = nerbert_fig3(scale, out, nerbert_corpus=nerbert_corpus, **common)
    else:
        build = {"crossner-table2": crossner_table2, "crossner-fig2": crossner_fig2, "crossner-fig3": crossner_fig3,
                 "crossner-table4": crossner_table4}
        cells = build[experiment](scale, out, **common)
    vectors = vectors or RNNVectors()
    cells = with_vectors(cells, scale, vectors)
    skipped = {**NOT_IMPLEMENTED.get(experiment, {}), **BORROWED.get(experiment, {}),
               **cdlm_tables.UNPLANNED.get(experiment, {}),
               **(CPU_NOT_RUN.get(experiment, {}) if scale == "cpu" else {}),
               **(cdlm_tables.CPU_NOT_RUN.get(experiment, {}) if scale == "cpu" else {})}
    if scale == "cpu":
        cells = [c for c in cells if c.row not in skipped]
    if rows:
        cells = select_rows(cells, [r for r in rows if r not in skipped])
        skipped = {r: why for r, why in skipped.items() if r in rows}
    notes = cpu_cuts(experiment, cells, any(r in skipped for r in {**CPU_NOT_RUN.get(experiment, {}),
                                                                    **cdlm_tables.CPU_NOT_RUN.get(experiment, {})})
                     ) if scale == "cpu" else ()
    notes = (*notes, *random_vector_note(cells, scale, vectors))
    return Plan(experiment, scale, cells, model, notes, tuple(skipped.items()), Path(out))
