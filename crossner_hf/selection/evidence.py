"""The evidence of an ``adapt`` search: ``adapt.md`` (the table and the reason for the choice), ``adapt.json``
(``{"rows": [...], "chosen", "shipped": {"path", "dev_f1", "test_f1"}}``, F1 as fractions, as in every results file;
the table and the card in percent), ``adapt.png`` (dev and test
F1 per method with error bars, the chosen one marked) and the section of the shipped model's card.

Where CrossNER's Table 2 reports the same method (BERT-base, span masking, 002:448-512), its average test-F1 gain
over direct fine-tuning across the five domains stands beside ours, so a user sees whether their domain follows the
paper's average.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crossner_hf.selection.choice import Choice, Row, _pm
from crossner_hf.outputs import atomic_output
from crossner_hf.reproduce.papers import number, paper_table, table_row

logger = logging.getLogger(__name__)

PAPER_TABLE = "crossner/table2"
PAPER_DIRECT = "direct / w/o DAPT"


def paper_gains() -> dict[str, tuple[float, str]]:
    """``{Table 2 row: (its average minus direct's average, the row's file:line)}``, read by the one paper-table
    reader (:mod:`crossner_hf.reproduce.papers`)."""
    table = paper_table(PAPER_TABLE)
    direct = number(table_row(table, PAPER_DIRECT)["cells"]["average"])
    return {r["row"]: (number(r["cells"]["average"]) - direct, r["line"]) for r in table["rows"]
            if r["cells"].get("average") is not None}


def markdown_table(rows: Sequence[Row], choice: Choice | None = None) -> str:
    """The comparison as a Markdown table, best mean dev F1 first, rows without scores last."""
    gains = paper_gains()
    direct = next((r for r in rows if r.method == "direct" and r.done), None)
    ordered = sorted(rows, key=lambda r: (not r.done, -(r.dev_f1 or 0.0)))
    lines = ["| method | dev F1 | test F1 | seeds | est. min / seed | seconds | at the end | "
             "test Δ vs direct (ours) | paper Δ vs direct (Table 2 avg) | settings | status |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in ordered:
        mark = " **(chosen)**" if choice is not None and r.method == choice.chosen else ""
        ours = (f"{r.test_f1 - direct.test_f1:+.2f}" if direct is not None and r.done and r.test_f1 is not None
                else "-")
        paper = "-"
        if r.paper_row in gains:
            gain, line = gains[r.paper_row]
            paper = f"{gain:+.2f} ({line})"
        lines.append(f"| {r.method}{mark} | {_pm(r.dev_f1, r.dev_f1_std)} | {_pm(r.test_f1, r.test_f1_std)} | "
                     f"{len(r.dev) or '-'} | {r.minutes:g} | {'-' if r.seconds is None else f'{r.seconds:.0f}'} | "
                     f"{r.end_text} | {ours} | {paper} | {r.settings} | {r.status}{f'; {r.raced}' if r.raced else ''} |")
    return "\n".join(lines)


def attach_paper_gains(rows: Sequence[Row]) -> None:
    gains = paper_gains()
    for r in rows:
        r.paper_gain = gains[r.paper_row][0] if r.paper_row in gains else None


def evidence_text(rows: Sequence[Row], choice: Choice, *, dataset: str, budget: str | None, budget_text: str | None,
                  bootstrap: str | None, shipped: dict[str, Any] | None, race_text: str | None = None) -> str:
    """``adapt.md``: what was compared, the table, the choice and why, the bootstrap, what was shipped."""
    parts = [f"# Which method for {dataset}?", ""]
    if budget_text:
        parts += [f"Budget {budget_text}.", ""]
    if race_text:
        parts += [race_text, ""]
    parts += [markdown_table(rows, choice), "",
              "F1 in percent, mean ± standard deviation over seeds (conlleval entities). The choice reads dev F1 only; "
              "test F1 is shown, never used to choose. Paper Δ: CrossNER Table 2's average gain of the same method "
              "over direct fine-tuning across its five domains (BERT-base; 002:448-512).", "",
              f"**Chosen: {choice.chosen or 'none'}.** {choice.reason}", ""]
    if bootstrap:
        parts += [bootstrap, ""]
    if shipped:
        parts += [f"Shipped: `{Path(shipped['path']).name}/` (seed {shipped.get('seed')}), dev F1 "
                  f"{100 * shipped['dev_f1']:.2f}, test F1 {100 * shipped['test_f1']:.2f} through `Tagger`.", ""]
    rising = [r for r in rows if r.done and r.still_improving]
    if rising:
        parts += ["**Still improving:** " + ", ".join(f"{r.method} (seeds {', '.join(map(str, r.still_improving))})"
                                                     for r in rising)
                  + ": dev F1 rose at the last check, so the budget's cap, not early stopping, ended these runs and "
                  "their F1 is a floor; a bigger budget (or --max_steps) trains them on.", ""]
    failed = [r for r in rows if r.status.startswith("failed")]
    if failed:
        parts += ["Failed methods: " + "; ".join(f"{r.method} ({r.status})" for r in failed) + ".", ""]
    return "\n".join(parts)


def write_evidence(out: Path, rows: Sequence[Row], choice: Choice, *, dataset: str, budget: str | None = None,
                   budget_text: str | None = None, bootstrap: dict | None = None, bootstrap_line: str | None = None,
                   shipped: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
                   stem: str = "adapt", race_text: str | None = None) -> dict[str, Path]:
    """Write ``<stem>.md``, ``<stem>.json`` and ``<stem>.png`` (the PNG only with the plots extra) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    record = {"dataset": dataset, "budget": budget, "rows": [r.to_dict() for r in rows], "chosen": choice.chosen,
              "best_dev": choice.best, "reason": choice.reason, "bootstrap": bootstrap, "shipped": shipped,
              "race": race_text, **(extra or {})}
    paths = {"json": out / f"{stem}.json", "md": out / f"{stem}.md"}
    with atomic_output(paths["json"]) as tmp:
        tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    with atomic_output(paths["md"]) as tmp:
        tmp.write_text(evidence_text(rows, choice, dataset=dataset, budget=budget, budget_text=budget_text,
                                     bootstrap=bootstrap_line, shipped=shipped, race_text=race_text),
                       encoding="utf-8")
    from crossner_hf.extras import MissingExtraError

    try:
        paths["png"] = plot_methods(rows, choice, out / f"{stem}.png", title=f"{dataset}: F1 per method")
    except MissingExtraError as err:  # the table is the evidence; the figure needs the plots extra
        logger.warning("no %s.png: %s", stem, err)
    return paths


def plot_methods(rows: Sequence[Row], choice: Choice, path: Path, *, title: str) -> Path:
    """Dev and test F1 of each finished method (mean, error bar one standard deviation), the chosen one marked."""
    from crossner_hf.extras import require

    matplotlib = require("matplotlib", "plots")
    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    done = sorted((r for r in rows if r.done), key=lambda r: -(r.dev_f1 or 0.0))
    fig, ax = plt.subplots(figsize=(max(4.5, 0.8 * len(done) + 2), 3.8))
    xs = range(len(done))
    for offset, split, colour in ((-0.18, "dev", "tab:blue"), (0.18, "test", "tab:orange")):
        means = [getattr(r, f"{split}_f1") or 0.0 for r in done]
        stds = [getattr(r, f"{split}_f1_std") or 0.0 for r in done]
        bars = ax.bar([x + offset for x in xs], means, width=0.36, yerr=stds, capsize=3, color=colour,
                      label=f"{split} F1")
        for bar, r in zip(bars, done):
            if r.method == choice.chosen:  # the shipped method: outlined, and named so under its bars
                bar.set_edgecolor("black")
                bar.set_linewidth(2)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r.method}\n(chosen)" if r.method == choice.chosen else r.method for r in done],
                       rotation=30, ha="right", fontsize=8)
    for label, r in zip(ax.get_xticklabels(), done):
        if r.method == choice.chosen:
            label.set_fontweight("bold")
    ax.set_ylabel("F1 (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    with atomic_output(path) as tmp:  # never a half-written PNG under the final name
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return path


def card_section(table_md: str, choice: Choice, bootstrap_line: str | None, race_text: str | None = None, *,
                 budget_text: str | None = None, smoke: bool = False) -> str:
    """The shipped model card's section: how this method was chosen, the budget, the whole table, what the race and
    the time budget cut; a smoke search's model says first that it is one."""
    lines = ["", "## How this method was chosen (crossner-hf adapt)", ""]
    if smoke:
        lines += ["**This is a smoke model**: `crossner-hf adapt --budget smoke` trains each candidate a few steps to "
                  "check the plumbing; its figures say nothing about the methods, and it is not meant to tag text.",
                  ""]
    if budget_text:
        lines += [f"Budget {budget_text}.", ""]
    lines += [
             "This model is the method `crossner-hf adapt` shipped after running the candidates below on the same "
             "data and choosing on mean dev F1 over seeds (never test F1).", "", *([race_text, ""] if race_text else []),
             table_md, "",
             f"**Reason:** {choice.reason}", ""]
    if bootstrap_line:
        lines += [bootstrap_line, ""]
    return "\n".join(lines)
