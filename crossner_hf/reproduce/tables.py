"""An experiment's table: our mean ± std per cell from the cells' result files, the paper's figure beside it.

The papers' numbers are transcribed once, each row with its source line, in ``paper_tables.json``
(:mod:`.papers`). A table entry is built only from the result files of done cells
(:func:`read_score`); a row/column whose cells are not all done
says what they are (``2/3 seeds``, ``failed``, ``missing input``, ``waiting``), never a partial
mean presented as complete. The average column is given only when every column of the row is
done. Paper rows no cell plans appear with the paper's numbers and the reason (not implemented,
taken from another paper, not run at this scale).
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from crossner_hf.grid import Cell, Status, grid_status
from crossner_hf.reproduce.papers import number, paper_data, paper_table, source_text


def paper_numbers(experiment: str) -> dict:
    """The transcription ``experiment`` reproduces: ``source`` (title and lines), ``measure``, ``columns``,
    ``rows`` ({label: {column: number}}); a figure's has no rows (its points are not in the text)."""
    from crossner_hf.reproduce.experiments import PAPER_TABLES

    key = PAPER_TABLES[experiment]
    data = paper_data()
    if key in data["figures"]:
        figure = data["figures"][key]
        return {"source": f"{data['papers'][key.split('/')[0]]['title']}, {key.split('/')[1]} ({figure['source']}); "
                          "its points are read off a plot, not printed, so none are transcribed", "rows": {},
                "columns": []}
    table = paper_table(key)
    rows = {r["row"]: {c: number(v) for c, v in r["cells"].items()} for r in table["rows"]}
    return {"source": source_text(key), "measure": table.get("measure", ""), "columns": table["columns"],
            "rows": rows, "average": table.get("average")}


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """The mean and sample standard deviation of per-seed figures: (None, None) without any, no std with one
    (one seed has no spread). Every table of the package (``reproduce``'s, ``adapt``'s) reads seeds through it."""
    values = list(values)
    return (statistics.fmean(values) if values else None, statistics.stdev(values) if len(values) > 1 else None)


def pm(mean: float | None, std: float | None, digits: int = 2) -> str:
    """``mean ± std`` as the tables print it (``-`` without a mean, the mean alone without a std)."""
    if mean is None:
        return "-"
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


@dataclass
class Entry:
    mean: float | None
    std: float | None
    n: int
    expected: int
    state: str
    """'ok' when every seed is done, else the first unfinished cell's status."""
    digits: int = 2

    def text(self) -> str:
        if self.state != "ok":
            return f"{self.state} ({self.n}/{self.expected} seeds)" if self.n else self.state
        return "n/a" if self.mean is None else pm(self.mean, self.std, self.digits)


def table_entries(cells: Sequence[Cell], out: str | Path, category: str | None = None, metric: str = "f1"
                  ) -> tuple[list[str], list[str], dict[tuple[str, str], Entry]]:
    """(rows, columns, entries) of the scored cells, in the grid's order (scores of one entity
    ``category`` when given, or test ``metric``, see :func:`read_score`)."""
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
        scores = [s for s in (read_score(c, out, category, metric) for c in group) if s is not None]
        pending = [status[c.name] for c in group if status[c.name] != Status.DONE]
        # a DAPT row's fine-tuning waits on its DAPT cell: show that cell's state when it is the reason
        for c in group:
            for dep in c.deps:
                if status[c.name] != Status.DONE and status.get(dep) in (Status.MISSING_INPUT, Status.FAILED):
                    pending = [status[dep]] + pending
        done = sum(1 for c in group if status[c.name] == Status.DONE)
        mean, std = mean_std(scores)
        entries[key] = Entry(
            mean=mean, std=std, n=done, expected=len(group), state="ok" if not pending else pending[0],
            digits=3 if any(c.command == "plot-entities" for c in group) else 2)
    return rows, columns, entries


def _category_records(experiment: str, cells: Sequence[Cell], out: str | Path) -> list[dict[str, str]]:
    """Per-category tables: crossner-table4 (categories down, settings across; a domain prefix when
    several) and nerbert-fig3 (encoders down, overall then each gold type across)."""
    from crossner_hf.data.labels import entity_types

    domains = list(dict.fromkeys(c.column for c in cells if c.score))
    records = []
    paper = paper_numbers(experiment)["rows"]

    def record(row: str, column: str, entry: Entry) -> dict[str, str]:
        # crossner-table4: the paper's rows are the settings, its columns the categories (002:646-652)
        theirs = paper.get(column, {}).get(row)
        diff = f"{entry.mean - theirs:+.2f}" if entry.state == "ok" and entry.mean is not None and theirs is not None \
            else ""
        return {"row": row, "column": column, "ours": entry.text(), "seeds": str(entry.n),
                "paper": f"{theirs:.2f}" if theirs is not None else "not in the paper", "difference": diff}

    for domain in domains:
        domain_cells = [c for c in cells if c.column == domain or not c.score]
        if experiment == "nerbert-fig3":
            rows, _, overall = table_entries(domain_cells, out)
            per_type = {t: table_entries(domain_cells, out, t)[2] for t in entity_types(domain)}
            for row in rows:
                records.append(record(row, "overall" if len(domains) == 1 else f"{domain} overall",
                                      overall[(row, domain)]))
                records += [record(row, t if len(domains) == 1 else f"{domain} {t}", per_type[t][(row, domain)])
                            for t in entity_types(domain)]
            continue
        for t in entity_types(domain):
            settings, _, entries = table_entries(domain_cells, out, t)
            name = t if len(domains) == 1 else f"{domain}: {t}"
            records += [record(name, setting, entries[(setting, domain)]) for setting in settings]
        settings, _, entries = table_entries(domain_cells, out)
        name = "overall" if len(domains) == 1 else f"{domain}: overall"
        records += [record(name, setting, entries[(setting, domain)]) for setting in settings]
    return records


SILHOUETTE = ("Silhouette of the gold entity types (cosine distance on the full-dimensional last-layer vectors; "
              "-1..1, higher = tighter, better separated types; the paper draws t-SNE plots and gives no numbers)")

CATEGORY_TABLES = ("crossner-table4", "nerbert-fig3")
"""Experiments whose table is per entity category (the others: rows x domains or x figure points)."""


ENCODER_COMMANDS = ("train", "dapt", "nerbert", "multicell", "plot-entities")
"""Commands whose cells use the experiment's encoder (the table names it)."""

METRIC_TABLES = {"cdlm-table4": "cbs_news"}
"""Tables whose columns are precision, recall and F1 of one dataset (named here); another dataset's columns are
prefixed with its name, and have no paper figure beside them."""


def _metric_entries(experiment: str, cells: Sequence[Cell], out: str | Path):
    """(rows, columns, entries) with the columns precision / recall / f1 of each dataset column of the cells."""
    paper_dataset = METRIC_TABLES[experiment]
    rows: list[str] = []
    columns: list[str] = []
    entries: dict[tuple[str, str], Entry] = {}
    for metric in ("precision", "recall", "f1"):
        metric_rows, datasets, found = table_entries(cells, out, metric=metric)
        rows += [r for r in metric_rows if r not in rows]
        for (row, dataset), entry in found.items():
            entries[(row, metric if dataset == paper_dataset else f"{dataset} {metric}")] = entry
    for dataset in dict.fromkeys(c.column for c in cells if c.score):
        columns += [m if dataset == paper_dataset else f"{dataset} {m}" for m in ("precision", "recall", "f1")]
    return rows, columns, entries


COUNT_TABLES = {"cdlm-table5": ("cbs_news", "STM-SOURCE", "Ours")}
"""Tables of correctly recognised entities per type: (the paper's dataset, the baseline row, the compared row);
columns ``stm`` and ``ours`` (mean counts over seeds) and ``delta`` (their difference in % of the type's gold
entities, as 004:1172-1175 defines it)."""

PAPER_TYPES = {"per": "PER", "person": "PER", "loc": "LOC", "location": "LOC", "org": "ORG", "organisation": "ORG",
               "organization": "ORG", "misc": "MISC", "miscellaneous": "MISC"}
"""A dataset's type names as the rows of CDLM's Table 5 (the CoNLL-2003 types)."""


def _count_records(experiment: str, cells: Sequence[Cell], out: str | Path) -> list[dict[str, str]]:
    """Per dataset column and entity type (then the total): the baseline's and the compared row's correct counts
    and the growth between them, the paper's beside them on its dataset."""
    paper_dataset, base, compared = COUNT_TABLES[experiment]
    paper = paper_numbers(experiment)["rows"]
    status = grid_status(cells, out)
    records = []
    for dataset in dict.fromkeys(c.column for c in cells if c.score):
        counts: dict[str, list[dict[str, tuple[int, int]]]] = {}
        state: dict[str, tuple[str, int, int]] = {}
        for row in (base, compared):
            group = [c for c in cells if c.score and c.column == dataset and c.row == row]
            found = [k for k in (read_counts(c, out) for c in group) if k is not None]
            pending = [status[c.name] for c in group if status[c.name] != Status.DONE]
            counts[row] = found
            state[row] = ("not run" if not group else pending[0] if pending else "ok", len(found), len(group))
        types = list(dict.fromkeys(t for runs in counts.values() for run in runs for t, (_, gold) in run.items()
                                   if gold))
        if not types and dataset == paper_dataset:  # nothing done yet: the paper's rows, with their numbers
            types = [row for row in paper if row != "Total"]

        def entry(row: str, total_of: Callable[[dict[str, tuple[int, int]]], float]) -> Entry:
            mean, std = mean_std([total_of(run) for run in counts[row]])  # the one mean +- std of the tables
            kind, n, expected = state[row]
            return Entry(mean=mean, std=std, n=n, expected=expected, state=kind, digits=1)

        for t in [*types, None]:
            def correct(run: dict[str, tuple[int, int]], t=t) -> float:
                return run.get(t, (0, 0))[0] if t else sum(c for c, _ in run.values())

            gold = next((run.get(t, (0, 0))[1] if t else sum(g for _, g in run.values())
                         for runs in counts.values() for run in runs), 0)
            name = "Total" if t is None else PAPER_TYPES.get(t.lower(), t)
            label = name if dataset == paper_dataset else f"{dataset}: {name if t is None else t}"
            theirs = paper.get(label, {}) if dataset == paper_dataset else {}
            ours = {column: entry(row, correct) for column, row in (("stm", base), ("ours", compared))}
            done = all(e.state == "ok" and e.mean is not None for e in ours.values())
            delta = 100 * (ours["ours"].mean - ours["stm"].mean) / gold if done and gold else None
            for column, e in ours.items():
                mine = e.mean if e.state == "ok" else None
                records.append({"row": label, "column": column, "ours": e.text(), "seeds": str(e.n),
                                "paper": f"{theirs[column]:.0f}" if column in theirs else "not in the paper",
                                "difference": f"{mine - theirs[column]:+.1f}" if mine is not None and column in theirs
                                else ""})
            records.append({"row": label, "column": "delta",
                            "ours": f"{delta:+.2f}" if delta is not None else "needs both rows",
                            "seeds": str(min(e.n for e in ours.values())),
                            "paper": f"{theirs['delta']:+.2f}" if "delta" in theirs else "not in the paper",
                            "difference": f"{delta - theirs['delta']:+.2f}" if delta is not None and "delta" in theirs
                            else ""})
    return records


def build_table(experiment: str, cells: Sequence[Cell], out: str | Path,
                unplanned: Sequence[tuple[str, str]] = ()) -> list[dict[str, str]]:
    """The table as rows of strings: ours, the paper's, the difference, seeds; one dict per (row, column).

    ``unplanned``: (row, reason) of the paper's rows no cell plans (``Plan.unplanned``), shown with the
    paper's numbers and the reason. A table with an average column gets ours only when every column
    of the row is done.
    """
    if experiment in CATEGORY_TABLES:
        return _category_records(experiment, cells, out)
    if experiment in COUNT_TABLES:
        return _count_records(experiment, cells, out)
    paper = paper_numbers(experiment)
    if experiment in METRIC_TABLES:
        rows, columns, entries = _metric_entries(experiment, cells, out)
    else:
        rows, columns, entries = table_entries(cells, out)
    records = []

    def text(value: float | None) -> str:
        return f"{value:.2f}" if value is not None else "not in the paper"

    for row in rows:
        paper_row = paper["rows"].get(row, {})
        for column in columns:
            entry = entries.get((row, column))
            if entry is None:
                continue
            theirs = paper_row.get(column)
            diff = f"{entry.mean - theirs:+.2f}" if entry.state == "ok" and entry.mean is not None and \
                theirs is not None else ""
            records.append({"row": row, "column": column, "ours": entry.text(), "seeds": str(entry.n),
                            "paper": text(theirs) if paper["rows"] else "not transcribed", "difference": diff})
        if paper.get("average"):
            row_entries = [entries.get((row, c)) for c in paper["columns"]]
            complete = all(e is not None and e.state == "ok" and e.mean is not None for e in row_entries)
            done = sum(1 for e in row_entries if e is not None and e.state == "ok")
            ours = statistics.fmean(e.mean for e in row_entries) if complete else None
            theirs = paper_row.get(paper["average"])
            records.append({"row": row, "column": "average",
                            "ours": f"{ours:.2f}" if ours is not None else f"incomplete ({done}/{len(row_entries)} "
                                                                               "columns)",
                            "seeds": "", "paper": text(theirs),
                            "difference": f"{ours - theirs:+.2f}" if ours is not None and theirs is not None else ""})
    for row, reason in unplanned:
        for column in [*columns, *(["average"] if paper.get("average") else [])]:
            theirs = paper["rows"].get(row, {}).get(column)
            # the cell says what (the text before the reason's colon); the table's notes give the whole reason
            records.append({"row": row, "column": column, "ours": reason.split(":")[0], "seeds": "0",
                            "paper": text(theirs), "difference": ""})
    return records


def write_tables(experiment: str, cells: Sequence[Cell], out: str | Path, *, scale: str, model: str,
                 notes: Sequence[str] = (), unplanned: Sequence[tuple[str, str]] = (),
                 dest: str | Path | None = None) -> tuple[Path, Path]:
    """``OUT/table.md`` (ours | paper per column, one line per row) and ``OUT/table.csv``, or the two in ``dest``
    (a folder; the cells are read from ``out`` all the same); returns both."""
    from crossner_hf.outputs import atomic_output

    out = Path(out)
    records = build_table(experiment, cells, out, unplanned)
    paper = paper_numbers(experiment)
    columns = list(dict.fromkeys(r["column"] for r in records))
    by_row: dict[str, dict[str, dict[str, str]]] = {}
    for r in records:
        by_row.setdefault(r["row"], {})[r["column"]] = r
    scores = "Test precision, recall and F1 (%)" if experiment in METRIC_TABLES else "Test F1 (%)"
    if experiment in COUNT_TABLES:
        _, base, compared = COUNT_TABLES[experiment]
        scores = (f"Correctly recognised test entities per type, {base} (stm) and {compared} (ours), and delta: "
                  f"their difference in % of the type's gold entities")
    measure = SILHOUETTE if experiment == "nerbert-fig3" else f"{scores}, mean ± standard deviation over seeds" + (
        f" (the paper: {paper['measure']})" if paper.get("measure") else "")
    transcribed = bool(paper["rows"]) or experiment == "crossner-table4"  # a figure read off a plot has none: print ours alone, not "/ n/a" each time
    layout = "each cell: ours / paper (difference)" if transcribed else "ours (the paper gives no numbers here)"
    encoder = f"Encoder: `{model}`." if any(c.command in ENCODER_COMMANDS for c in cells) else \
        "No pre-trained encoder (RNN taggers)."
    lines = [f"# {experiment} at scale {scale}", "", f"{encoder} {measure}; {layout}. Source: " + paper["source"], ""]
    lines += ["| row | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for row, cols in by_row.items():
        cells_text = []
        for column in columns:
            r = cols.get(column)
            if r is None:
                cells_text.append("")
                continue
            diff = f" ({r['difference']})" if r["difference"] else ""
            cells_text.append(f"{r['ours']} / {r['paper']}{diff}" if transcribed else r["ours"])
        lines.append(f"| {row} | " + " | ".join(cells_text) + " |")
    if unplanned:
        lines += ["", "The paper's rows not run here:", ""] + [f"- {row}: {reason}" for row, reason in unplanned]
    if notes:
        lines += ["", "What this scale cuts against the paper:", ""] + [f"- {n}" for n in notes]
    folder = Path(dest) if dest is not None else out
    md, csv_path = folder / "table.md", folder / "table.csv"
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
    from crossner_hf.evaluation.plots import plot_curves

    curves: dict[str, dict[float, list[float]]] = {}
    for cell in cells:
        score = read_score(cell, out)
        if score is not None:
            curves.setdefault(cell.row, {}).setdefault(float(cell.column), []).append(score)
    if not curves:
        return None
    # NER-BERT Fig. 2 draws NER-BERT's gain over BERT per domain on a right axis (003:128); rows "NER-BERT (d)"
    gains = {f"gain ({row[len('NER-BERT ('):-1]})": (row, "BERT" + row[len("NER-BERT"):]) for row in curves
             if experiment == "nerbert-fig2" and row.startswith("NER-BERT (")}
    return plot_curves(curves, Path(out) / "figure.png", xlabel=xlabel, gains=gains,
                       gain_label="NER-BERT - BERT (F1 points)",
                       title=f"{experiment}: {', '.join(sorted({c.meta.get('domain', '') for c in cells} - {''}))} "
                             f"({Path(model).name})")


def write_panel_figure(experiment: str, cells: Sequence[Cell], out: str | Path, *, model: str) -> Path | None:
    """``OUT/figure.png``: the done ``plot-entities`` cells' plots side by side, captioned with the
    encoder and its overall silhouette (NER-BERT Fig. 3)."""
    from crossner_hf.evaluation.plots import plot_image_panel

    images = {}
    for cell in cells:
        score = read_score(cell, out)
        if cell.command == "plot-entities" and score is not None:
            images[f"{cell.row} ({cell.column}): silhouette {score:+.3f}"] = cell.folder(out) / cell.output_file
    if not images:
        return None
    return plot_image_panel(images, Path(out) / "figure.png",
                            title=f"{experiment}: gold entities' representations ({Path(model).name} and NER-BERT)")


FIGURES = {"crossner-fig2": "% of the integrated corpus used for DAPT", "crossner-fig3": "target training sentences",
           "nerbert-fig2": "% of the target training split", "cdlm-fig6": "target NER training sentences",
           "cdlm-fig8": "% of the raw text (both varying: of the smaller corpus, equal amounts)"}
"""The curve figures and their x axis; nerbert-fig3 is a panel (:func:`write_panel_figure`)."""


def write_figure(experiment: str, cells: Sequence[Cell], out: str | Path, *, model: str) -> Path | None:
    """The experiment's figure, when it has one and a cell is done."""
    if experiment == "nerbert-fig3":
        return write_panel_figure(experiment, cells, out, model=model)
    if experiment in FIGURES:
        return write_curve_figure(experiment, cells, out, xlabel=FIGURES[experiment], model=model)
    return None


def read_score(cell: Cell, out: str | Path, category: str | None = None, metric: str = "f1") -> float | None:
    """The cell's score from its result file, or None when it has none.

    Test F1 in percent (overall, or of one entity ``category``: the mean over the run's seeds)
    for ``train``, ``bilstm-crf``, ``cdlm`` and ``multicell`` (``metric`` precision or recall: the overall ones,
    CDLM's Table 4), read by :func:`crossner_hf.results.read_results` (any results schema); the silhouette (-1..1,
    overall or of ``category``) for ``plot-entities``. A category the run did not score gives None.
    """
    path = cell.result_path(out)
    if not cell.score or not path.is_file():
        return None
    from crossner_hf.results import READ_RESULT_FILES, read_results

    if path.name not in READ_RESULT_FILES:  # crossner-hf plot-entities' entities.json: not a workflow's results
        from crossner_hf.outputs import read_json

        scores = read_json(path)["silhouette"]
        return scores["overall"] if category is None else scores["per_category"].get(category)
    result = read_results(path)  # any schema this version reads: the shared keys say where the scores are
    test = result["test"] or {}
    if category is None:
        return 100 * (result.test_f1 if metric == "f1" else test[f"overall_{metric}"])
    if result["workflow"] == "finetune":  # the mean over the seeds that scored the type
        per_seed = [s["test"]["per_type"].get(category, {}).get("f1") for s in result["per_seed"]]
        per_seed = [f for f in per_seed if f is not None]
        return 100 * sum(per_seed) / len(per_seed) if per_seed else None
    f1 = test.get("per_type", {}).get(category, {}).get("f1")
    return None if f1 is None else 100 * f1


def read_counts(cell: Cell, out: str | Path) -> dict[str, tuple[int, int]] | None:
    """``{entity type: (correctly recognised, gold)}`` on the test split of an RNN recipe's cell (``bilstm-crf``,
    ``cdlm``, ``multicell``), or None when it has no result file. Correct = recall x gold, the true positives of
    the conlleval count the run reported (CDLM's Table 5 counts them per type)."""
    path = cell.result_path(out)
    if not cell.score or not path.is_file():
        return None
    from crossner_hf.results import read_results

    per_type = (read_results(path)["test"] or {}).get("per_type")  # any schema this version reads
    if per_type is None:
        raise ValueError(f"{path}: no test.per_type scores (a bilstm-crf, cdlm or multicell result file has them).")
    return {t: (round(s["recall"] * s["support"]), int(s["support"])) for t, s in per_type.items()}
