"""CDLM's main tables (Jia, Liang & Zhang, ACL 2019) as grids: ``cdlm-table3`` and ``cdlm-table4``.

``cdlm-table3`` (004:895-910, supervised adaptation from CoNLL-2003): STM-TARGET (the Lample BiLSTM-CRF on
the target alone, 004:846-848), FINETUNE (source, then the target with a new output layer and CRF,
004:848-851, 004:866-868), MULTITASK(NER+LM) and MULTITASK(NER) (one shared LSTM, 004:989-995, 004:852-853),
CO-LM, CO-NER and MIX-DATA (the ablations, 004:1013-1028) and FINAL, every one a configuration of
``crossner-hf bilstm-crf`` or ``crossner-hf cdlm``. ``cdlm-table4`` (004:1115-1130, zero-shot):
STM-SOURCE (004:1087-1090), the DANN and SELF-TRAIN baselines and the model in zero-shot mode. ``cdlm-table5``
(004:1163-1175): table4's STM-SOURCE and zero-shot cells (shared, not rerun), counted per entity type.

Columns: at ``--scale paper`` the paper's datasets only (BioNLP13PC and 13CG, 004:895; CBS SciTech News,
004:1115-1130) from ``--datasets NAME=SOURCE`` (a Hub id, a folder ``load_dataset`` opens or a CoNLL folder:
none ships offline). CrossNER domains are an extension, planned only when ``--domains`` names them (and, at
``smoke`` and ``cpu``, politics by default: the paper's data does not ship offline). The LM text is each
target's own sentences unless ``--corpora`` gives a CrossNER domain's domain-level corpus (as
``crossner-table2``). The zero-shot CBS column has no labelled training text (004:807): its LMs read the raw
corpora of the paper (Reuters for the source, 377,592 sentences, 004:737-739; CBS, 398,990 sentences,
004:772-774), given as ``--raw_text source=FILE cbs_news=FILE``; without them those cells are 'missing input'. Every cell here
is an RNN that starts from GloVe 100d (004:835-837): :func:`~crossner_hf.reproduce.experiments.plan` gives each
``--word_vectors`` (:mod:`.vectors`; 'missing input' at ``--scale paper`` without it). Rows that
need ELMo, and a system of another paper, are listed with the reason (:data:`UNPLANNED`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from crossner_hf.reproduce.budgets import Settings, minutes_for, nerbert_columns, preset_settings, seeds_for
from crossner_hf.grid import Cell

ELMO = ("cannot run here: ELMo needs a bidirectional LM pre-trained on the mixed raw text (allennlp weights or "
        "a biLM trainer, neither available offline; 004:858-862)")

UNPLANNED = {
    "cdlm-table3": {
        "Crichton et al. (2017)": "another paper's system: multi-task co-training with POS tagging (004:1042-1047); "
                                  "its numbers are quoted, not a configuration of this model",
        "STM+ELMO": ELMO,
    },
    "cdlm-table4": {
        "STM+ELMO(SRC)": ELMO, "STM+ELMO(TGT)": ELMO, "STM+ELMO": ELMO,
    },
}
"""Rows of the CDLM tables no cell plans, and why (shown in the table with the paper's numbers)."""

CPU_NOT_RUN = {
    "cdlm-table3": {row: "not trained at this scale: CDLM's objectives at ~1 s a step on 2 cores (see crossner-table2)"
                    for row in ("MULTITASK(NER+LM)", "MULTITASK(NER)", "CO-LM", "CO-NER", "MIX-DATA", "FINAL")},
    "cdlm-table4": {"Ours": "not trained at this scale: CDLM's objectives at ~1 s a step on 2 cores "
                            "(see crossner-table2)"},
}
CPU_NOT_RUN["cdlm-table5"] = CPU_NOT_RUN["cdlm-table4"]

TABLE3_CDLM = (("MULTITASK(NER+LM)", "multitask-ner-lm"), ("MULTITASK(NER)", "multitask-ner"), ("CO-LM", "co-lm"),
               ("CO-NER", "co-ner"), ("MIX-DATA", "mix-data"), ("FINAL", "final"))
"""Table 3's rows that are CDLM variants (``cdlm --variant``), in the table's order."""

PAPER_COLUMNS = {"cdlm-table3": ("bionlp13pc", "bionlp13cg"), "cdlm-table4": ("cbs_news",),
                 "cdlm-table5": ("cbs_news",)}

TABLE5_ROWS = ("STM-SOURCE", "Ours")
"""CDLM Table 5 (004:1163-1175) compares the correctly recognised entities of these two ``cdlm-table4`` rows."""

RAW_TEXT = {"source": "Reuters news, the source LM's raw text (377,592 sentences, 004:737-739)",
            "cbs_news": "CBS SciTech News raw text, the target LM's (398,990 sentences, 004:772-774)"}
"""The raw corpora CDLM's zero-shot column reads (``--raw_text NAME=FILE``): no labelled target text exists."""


SOURCE_TEXT_READERS = ("zero-shot", "dann")
"""The ``cdlm-table4`` runs that read the source raw text: the model's source LM and DANN's domain classifier,
trained over source- and target-domain raw data (004:1100-1103); SELF-TRAIN reads the target's alone
(004:1092-1094)."""


def raw_text(name: str, given: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    """(the flag's value, inputs) of a raw corpus: the file when given (an input the grid checks), else a
    placeholder and a 'missing input' naming the flag."""
    if name in given:
        return given[name], (given[name],)
    return f"<raw {name}>", (f"--raw_text {name}=FILE ({RAW_TEXT[name]})",)


def parse_raw_text(items: Sequence[str] | None) -> dict[str, str]:
    given = {}
    for item in items or ():
        name, sep, path = item.partition("=")
        if not sep or name not in RAW_TEXT:
            raise ValueError(f"--raw_text {item}: give NAME=FILE with NAME one of {', '.join(RAW_TEXT)}.")
        given[name] = str(Path(path).resolve())
    return given


def _bilstm_settings(scale: str, data_dir: str | None, schedule: str) -> Settings:
    """The Lample BiLSTM-CRF (STM, NCRF++) under ``schedule``."""
    if scale == "paper":
        return {**preset_settings("cdlm_bilstm_crf"), "schedule": schedule, "data_dir": data_dir}
    common = {"data_dir": data_dir, "use_cpu": True, "architecture": "lample", "schedule": schedule}
    if scale == "smoke":
        return {**common, "max_steps": 4, "word_dim": 16, "char_dim": 8, "char_filters": 8, "hidden_size": 16,
                "source_subsample": 60}
    # the paper's STM optimiser (RMSprop 1e-3, 004:781-782): SGD 0.015 left STM-TARGET at dev F1 0 for ten epochs
    # and early stopping ended it; 100 epochs of at most 20 steps, never stopped early (2,000 steps)
    return {**common, "initial_optimizer": "rmsprop", "num_train_epochs": 100, "max_steps_per_epoch": 20,
            "early_stopping_patience": 0}


def _cdlm_settings(scale: str, data_dir: str | None, mode: str) -> Settings:
    if scale == "paper":
        return {**preset_settings("cdlm_supervised" if mode == "supervised" else "cdlm_zero_shot"),
                "data_dir": data_dir}
    common = {"data_dir": data_dir, "use_cpu": True, "mode": mode}
    if scale == "smoke":
        return {**common, "max_steps": 4, "word_dim": 16, "char_dim": 8, "char_filters": 8, "hidden_size": 16,
                "source_subsample": 60, "lm_negatives": 10}
    return {**common, "num_train_epochs": 10, "max_steps_per_epoch": 60}


def _lm_text(column: str, corpora: str | None) -> Settings:
    """The target LM text: a CrossNER domain's domain-level corpus when ``--corpora`` is given, else (no flag)
    the target's own training sentences, as the release's supervised code."""
    from crossner_hf.data.labels import DOMAINS

    return {"target_text": f"{corpora}:{column}-domain"} if corpora and column in DOMAINS else {}


Row = tuple[str, str, str, Callable[[str], Settings]]
"""(row label, cell slug, command, the command's settings for a column) of one row of a CDLM table."""


def _grid(scale: str, seeds: Sequence[int] | None, columns, rows: Sequence[Row],
          extra_inputs: Callable[[str, str], tuple[str, ...]] = lambda column, row: ()) -> list[Cell]:
    """One cell per (column, seed, row), in that order; each cell's settings end with the column's target and seed.
    ``extra_inputs(column, row)``: what else a cell reads (the raw corpora of a zero-shot column)."""
    from crossner_hf.data.labels import DOMAINS

    return [Cell(name=f"{column}/{slug}/seed-{seed}", command=command,
                 settings={**settings(column), **target, "seed": seed}, row=row, column=column, seed=seed,
                 inputs=(*inputs, *extra_inputs(column, row)), minutes=minutes_for(scale, "rnn"),
                 meta={"extension": "CrossNER domain: not a column of the paper's table"} if column in DOMAINS
                 else {})
            for column, target, inputs in columns for seed in seeds_for(scale, seeds)
            for row, slug, command, settings in rows]


def cdlm_table3(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None, model: str,
                corpora: str | None, data_dir: str | None, datasets: Sequence[str] | None = None) -> list[Cell]:
    """CDLM Table 3 (004:895-910) over the requested columns x seeds."""
    rows: list[Row] = [(row, f"stm-{schedule}", "bilstm-crf",
                        lambda _, s=schedule: _bilstm_settings(scale, data_dir, s))
                       for row, schedule in (("STM-TARGET", "target"), ("FINETUNE", "pretrain-finetune"))]
    rows += [(row, f"cdlm-{variant}", "cdlm",
              lambda column, v=variant: {**_cdlm_settings(scale, data_dir, "supervised"), "variant": v,
                                         **_lm_text(column, corpora)})
             for row, variant in TABLE3_CDLM]
    columns = nerbert_columns(scale, domains, datasets, PAPER_COLUMNS["cdlm-table3"], default=["politics"],
                              crossner_in_paper=False)
    return _grid(scale, seeds, columns, rows)


def cdlm_table4(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None, model: str,
                corpora: str | None, data_dir: str | None, datasets: Sequence[str] | None = None,
                raw: Sequence[str] | None = None) -> list[Cell]:
    """CDLM Table 4 (004:1115-1130): zero-shot; precision, recall and F1 of each column's test split. SELF-TRAIN
    and DANN read the target LM text as their unlabelled target text, DANN the source raw text too (its domain
    classifier, 004:1100-1103); STM-SOURCE reads no target text. On the paper's CBS column the LMs and DANN read
    the raw corpora (``raw``: ``source=FILE``, ``cbs_news=FILE``), never a fallback: without them the cells that
    read them are 'missing input'."""
    given = parse_raw_text(raw)

    def text(column: str, schedule: str) -> Settings:
        if column not in PAPER_COLUMNS["cdlm-table4"]:
            return _lm_text(column, corpora) if schedule != "source" else {}
        if schedule == "source":
            return {}
        return {"target_text": raw_text(column, given)[0],
                "source_text": raw_text("source", given)[0] if schedule in SOURCE_TEXT_READERS else None}

    def inputs(column: str, row: str) -> tuple[str, ...]:
        if column not in PAPER_COLUMNS["cdlm-table4"] or row == "STM-SOURCE":
            return ()
        return (*raw_text(column, given)[1], *(raw_text("source", given)[1] if row in ("Ours", "DANN") else ()))

    rows: list[Row] = [(row, f"stm-{schedule}", "bilstm-crf",
                        lambda column, s=schedule: {**_bilstm_settings(scale, data_dir, s), **text(column, s)})
                       for row, schedule in (("STM-SOURCE", "source"), ("SELF-TRAIN", "self-train"), ("DANN", "dann"))]
    rows.append(("Ours", "cdlm-zero-shot", "cdlm",
                 lambda column: {**_cdlm_settings(scale, data_dir, "zero-shot"), **text(column, "zero-shot")}))
    columns = nerbert_columns(scale, domains, datasets, PAPER_COLUMNS["cdlm-table4"], default=["politics"],
                              crossner_in_paper=False)
    return _grid(scale, seeds, columns, rows, inputs)


FIG6_SIZES = {"smoke": (10, 50), "cpu": (10, 50, 100, 200), "paper": (10, 100, 500, 1000, 2000, 3000)}
"""CDLM Figure 6's target NER sentences (004:1053-1062). The text names the nearly unsupervised end and 3,000
sentences (004:1061-1062); the points between are this project's. 3,000 is BioNLP13CG's train size (004:803),
the only target of the paper that large, so the paper-scale column is 13CG (the figure does not name it)."""

FIG8_SHARES = {"smoke": (0.5, 1.0), "cpu": (0.25, 0.5, 1.0), "paper": (0.1, 0.25, 0.5, 0.75, 1.0)}
"""CDLM Figure 8's shares of the raw text (004:1147-1196); the figure's points are not in the text."""

FIG8_CURVES = (("SRC: varying; TGT: varying", True, True), ("SRC: 100%; TGT: varying", False, True),
               ("SRC: varying; TGT: 100%", True, False))
"""Figure 8's three lines (004:1151-1156, 004:1188-1193): which of the source / target raw text varies. Both
varying, each point is an equal amount of source and target text (004:1154-1156): ``--equal_text_fraction``,
a share of the smaller corpus drawn from each; a fixed line's other text is all of its corpus."""


def cdlm_fig6(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None, model: str,
              corpora: str | None, data_dir: str | None, datasets: Sequence[str] | None = None) -> list[Cell]:
    """CDLM Figure 6 (004:1053-1062): STM-TARGET against the model (supervised, FINAL) as the target's NER
    sentences grow, 100 epochs each (004:1056; the presets' value)."""
    rows: list[Row] = [("STM-TARGET", "stm-target", "bilstm-crf",
                        lambda _: _bilstm_settings(scale, data_dir, "target")),
                       ("Ours", "cdlm-final", "cdlm",
                        lambda column: {**_cdlm_settings(scale, data_dir, "supervised"), "variant": "final",
                                        **_lm_text(column, corpora)})]
    columns = nerbert_columns(scale, domains, datasets, ("bionlp13cg",), default=["politics"],
                              crossner_in_paper=False)
    cells = []
    for column, target, inputs in columns:
        for n in FIG6_SIZES[scale]:
            for seed in seeds_for(scale, seeds):
                for row, slug, command, settings in rows:
                    cells.append(Cell(name=f"{column}/fig6-{n}/{slug}/seed-{seed}", command=command,
                                      settings={**settings(column), **target, "few_shot": n, "seed": seed},
                                      row=row, column=str(n), seed=seed, inputs=inputs, meta={"domain": column},
                                      minutes=minutes_for(scale, "rnn")))
    return cells


def cdlm_fig8(scale: str, out: str | Path, *, domains: Sequence[str], seeds: Sequence[int] | None, model: str,
              corpora: str | None, data_dir: str | None, datasets: Sequence[str] | None = None,
              raw: Sequence[str] | None = None) -> list[Cell]:
    """CDLM Figure 8 (004:1147-1196): zero-shot F1 against the share of raw text, three lines: both varying (equal
    numbers of source and target sentences, 004:1154-1156), the source fixed at 100% and the target varying, the
    target fixed and the source varying. On CBS the raw
    corpora come from ``--raw_text`` (004:737-739, 004:772-774): without them the cells are 'missing input'."""
    given = parse_raw_text(raw)
    columns = nerbert_columns(scale, domains, datasets, PAPER_COLUMNS["cdlm-table4"], default=["politics"],
                              crossner_in_paper=False)
    cells = []
    for column, target, inputs in columns:
        cbs = column in PAPER_COLUMNS["cdlm-table4"]
        text = ({"target_text": raw_text(column, given)[0], "source_text": raw_text("source", given)[0]}
                if cbs else _lm_text(column, corpora))
        extra = (*raw_text(column, given)[1], *raw_text("source", given)[1]) if cbs else ()
        for row, src_varies, tgt_varies in FIG8_CURVES:
            for share in FIG8_SHARES[scale]:
                src, tgt = (share if src_varies else 1.0), (share if tgt_varies else 1.0)
                if src_varies and tgt_varies:
                    # an equal number of source and target sentences at each point (004:1154-1156): the share
                    # is of the smaller corpus, so 100% here is not the fixed lines' 100% of each
                    line, amounts = "both", {"equal_text_fraction": f"{share:g}"}
                else:
                    # the 100%/100% point ends both fixed lines; one cell per line keeps each cell on one line
                    # (and parallel executors from racing for one folder), at the price of a repeated point
                    line = "tgt" if tgt_varies else "src"
                    amounts = {"source_text_fraction": f"{src:g}", "target_text_fraction": f"{tgt:g}"}
                for seed in seeds_for(scale, seeds):
                    cells.append(Cell(
                        name=f"{column}/fig8-{line}-src{100 * src:g}-tgt{100 * tgt:g}/seed-{seed}", command="cdlm",
                        settings={**_cdlm_settings(scale, data_dir, "zero-shot"), **text, **amounts,
                                           **target, "seed": seed},
                        row=row, column=f"{100 * share:g}", seed=seed, inputs=(*inputs, *extra),
                        meta={"domain": column}, minutes=minutes_for(scale, "rnn")))
    return cells
