"""An experiment's table: our mean ± std per cell from the cells' result files, the paper's figure beside it.

The papers' numbers are transcribed once, with their source, in ``paper_numbers.json`` beside
this module. A table entry is built only from the result files of done cells
(:func:`~crossner_hf.reproduce.grid.read_score`); a row/column whose cells are not all done
says what they are (``2/3 seeds``, ``failed``, ``missing input``, ``waiting``), never a partial
mean presented as complete. Rows the project does not implement appear with the paper's numbers
and "not implemented".
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .grid import Cell, grid_status, read_score


def paper_numbers(experiment: str) -> dict:
    """The transcribed figures of ``experiment`` (``source``, ``columns``, ``rows``, ``our_rows``, ...)."""
    data = json.loads(resources.files(__package__).joinpath("paper_numbers.json").read_text())
    return data[experiment]


@dataclass
class Entry:
    mean: float | None
    std: float | None
    n: int
    expected: int
    state: str
    """'ok' when every seed is done, else the first unfinished cell's status."""

    def text(self) -> str:
        if self.state != "ok":
            return f"{self.state} ({self.n}/{self.expected} seeds)" if self.n else self.state
        if self.std is None:
            return f"{self.mean:.2f}"
        return f"{self.mean:.2f} ± {self.std:.2f}"


def table_entries(cells: Sequence[Cell], out: str | Path) -> tuple[list[str], list[str], dict[tuple[str, str], Entry]]:
    """(rows, columns, entries) of the scored cells, in the grid's order."""
    status = grid_status(cells, out)
    rows: list[str] = []
    columns: list[str] = []
    grouped: dict[tuple[str, str], list[Cell]] = {}
    for cell in cells:
        if not cell.score:
            continue
        rows += [cell.row] if cell.row not in rows else []
        columns += [cell.column] if cell.column not in columns else []
        grouped.setdefault((cell.row, cell.column), []).append(cell)
    entries = {}
    for key, group in grouped.items():
        scores = [s for s in (read_score(c, out) for c in group) if s is not None]
        pending = [status[c.name] for c in group if status[c.name] != "done"]
        # a DAPT row's fine-tuning waits on its DAPT cell: show that cell's state when it is the reason
        for c in group:
            for dep in c.deps:
                if status[c.name] != "done" and status.get(dep) in ("missing input", "failed"):
                    pending = [status[dep]] + pending
        entries[key] = Entry(
            mean=statistics.fmean(scores) if scores else None,
            std=statistics.stdev(scores) if len(scores) > 1 else None,
            n=len(scores), expected=len(group), state="ok" if not pending else pending[0])
    return rows, columns, entries


def build_table(experiment: str, cells: Sequence[Cell], out: str | Path) -> list[dict[str, str]]:
    """The table as rows of strings: ours, the paper's, the difference, seeds; one dict per (row, column)."""
    paper = paper_numbers(experiment)
    rows, columns, entries = table_entries(cells, out)
    records = []
    for row in rows:
        paper_row = paper["rows"].get(paper["our_rows"].get(row, ""), {})
        for column in columns:
            entry = entries.get((row, column))
            if entry is None:
                continue
            theirs = paper_row.get(column)
            diff = f"{entry.mean - theirs:+.2f}" if entry.state == "ok" and theirs is not None else ""
            records.append({"row": row, "column": column, "ours": entry.text(), "seeds": str(entry.n),
                            "paper": f"{theirs:.2f}" if theirs is not None else "not transcribed",
                            "difference": diff})
    for row in paper.get("not_implemented", []):
        for column in columns:
            theirs = paper["rows"].get(row, {}).get(column)
            records.append({"row": row, "column": column, "ours": "not implemented", "seeds": "0",
                            "paper": f"{theirs:.2f}" if theirs is not None else "not transcribed", "difference": ""})
    return records


def write_tables(experiment: str, cells: Sequence[Cell], out: str | Path, *, scale: str, model: str,
                 notes: Sequence[str] = ()) -> tuple[Path, Path]:
    """``OUT/table.md`` (ours | paper per column, one line per row) and ``OUT/table.csv``; returns both."""
    from ..outputs import atomic_output

    out = Path(out)
    records = build_table(experiment, cells, out)
    paper = paper_numbers(experiment)
    columns = list(dict.fromkeys(r["column"] for r in records))
    by_row: dict[str, dict[str, dict[str, str]]] = {}
    for r in records:
        by_row.setdefault(r["row"], {})[r["column"]] = r
    lines = [f"# {experiment} at scale {scale}", "",
             f"Encoder: `{model}`. Test F1 (%), mean ± standard deviation over seeds; each cell: ours / paper "
             "(difference). Source of the paper's figures: " + paper["source"], ""]
    lines += ["| row | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for row, cols in by_row.items():
        cells_text = []
        for column in columns:
            r = cols.get(column)
            if r is None:
                cells_text.append("")
                continue
            diff = f" ({r['difference']})" if r["difference"] else ""
            cells_text.append(f"{r['ours']} / {r['paper']}{diff}")
        lines.append(f"| {row} | " + " | ".join(cells_text) + " |")
    if notes:
        lines += ["", "What this scale cuts against the paper:", ""] + [f"- {n}" for n in notes]
    md, csv_path = out / "table.md", out / "table.csv"
    with atomic_output(md) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["row", "column", "ours", "seeds", "paper", "difference"])
    writer.writeheader()
    writer.writerows(records)
    with atomic_output(csv_path) as tmp:
        tmp.write_text(buffer.getvalue())
    return md, csv_path


def write_curve_figure(experiment: str, cells: Sequence[Cell], out: str | Path, *, xlabel: str, model: str) -> Path | None:
    """``OUT/figure.png``: each row a curve over its (numeric) columns, mean ± std over the done seeds."""
    from ..plots import plot_curves

    curves: dict[str, dict[float, list[float]]] = {}
    for cell in cells:
        score = read_score(cell, out)
        if score is not None:
            curves.setdefault(cell.row, {}).setdefault(float(cell.column), []).append(score)
    if not curves:
        return None
    return plot_curves(curves, Path(out) / "figure.png", xlabel=xlabel,
                       title=f"{experiment}: {', '.join(sorted({c.meta.get('domain', '') for c in cells} - {''}))} "
                             f"({Path(model).name})")
