"""What a search will cost and how far it got, without running anything: the dry run (every cell with its command
line, priced from this machine's finished cells, and the disk it will use) and ``adapt --status OUT`` (the table so
far, from another shell while the search runs). The listing, the pricing and the started cells' progress are the
grid study's (:mod:`crossner_hf.grid.study`), shared with ``reproduce``.

Pricing (:func:`crossner_hf.grid.study.price`): a started cell is priced at its own pace (its ``progress.json``,
else its saved step), a cell left to run at the measured seconds of the finished cells of its kind in OUT (direct,
joint, DAPT, ...), then its running cells' pace, then a probe of the encoder on this machine (seconds a step times
the steps it plans: :mod:`crossner_hf.grid.probe`), and a kind none of these priced at the packaged table scaled by
this machine's speed on the kinds it did; a resumed search is priced on what is left only. Disk: the finished cells'
folders as they are, the others at one copy of their model each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossner_hf.grid import Cell, Status, grid_status
from crossner_hf.grid.costs import Estimate
from crossner_hf.grid.study import cell_lines, counts_line, price, started_lines
from crossner_hf.selection.candidates import Method, read_plan, slug
from crossner_hf.selection.config import BUDGETS, AdaptConfig
from crossner_hf.selection.evidence import markdown_table
from crossner_hf.selection.run import as_target, plan_search, resolved_files, rows_of


def method_minutes(method: Method, priced: Estimate) -> float:
    """Minutes of one seed of ``method`` (its DAPT and corpus cells included): measured where its cells finished,
    priced where they did not."""
    def cell_minutes(cell: Cell) -> float:
        return priced.measured.get(cell.name, priced.per_cell.get(cell.name, cell.minutes))

    if not method.cells:
        return method.minutes
    own = sum(cell_minutes(c) for c in method.cells) / len(method.cells)
    return own + sum(cell_minutes(c) for c in method.extra_cells)


def probed_minutes(cells: list[Cell], model: str, target: Any, status: dict[str, str],
                   setting: str | None) -> dict[str, float]:
    """Each cell left's minutes from a probe of ``model`` on this machine (:mod:`crossner_hf.grid.probe`, cached),
    at the target's sizes and batch length; ``{}`` when the probe is off or every cell is done."""
    from crossner_hf.grid import probe
    from crossner_hf.grid.costs import cost_key
    from crossner_hf.encoders import resolve_model_path

    left = [c for c in cells if status.get(c.name) != Status.DONE]
    if not left or not probe.enabled(setting):
        return {}
    path = resolve_model_path(str(model), check_offline=False)
    if not (Path(path) / "config.json").is_file():
        return {}  # a Hub id or a name with no folder here: nothing to probe, the table prices it
    splits = target.dataset
    batch = max(int(c.settings.get("per_device_train_batch_size") or 8) for c in left)
    seq_len = probe.batch_length(path, splits["train"]["tokens"], batch)
    size = probe.DataSize(train=len(splits["train"]), dev=len(splits["validation"]), test=len(splits["test"]),
                          seq_len=seq_len)
    return probe.probe_minutes(left, path, size, kind_of=cost_key, num_labels=len(target.labels))


def budget_line(priced: Estimate, workers: int, minutes: float) -> str:
    """What ``--time_budget`` does to this search, as the dry run can tell: whether every cell left fits."""
    wall, _ = priced.wall_minutes(workers)
    if wall <= minutes:
        return f"--time_budget {minutes:g} min: every cell left fits (~{wall:.1f} min of wall time)"
    return (f"--time_budget {minutes:g} min: the search as planned needs ~{wall:.1f} min of wall time; first seeds "
            "run first, and at the deadline the running cells are stopped (resumable) and the choice made among the "
            "finished")


def dry_run(model: str, target: Any, config: AdaptConfig | None = None, *, raw_text: Any = None,
            entity_list: str | None = None, data_dir: str | None = None, workers: int = 1,
            probe: str | None = None) -> str:
    """The cells a search would run, with their command lines and dependencies, what is left of it and its
    estimated minutes and disk (from this machine's finished cells in OUT, then its running ones, then a probe of
    the encoder on this machine, then the packaged table), and the other budgets' table minutes; nothing is
    trained or written. ``probe``: ``on`` / ``off`` (default: ``$CROSSNER_HF_PROBE``, else on)."""
    config = config or AdaptConfig()
    target = as_target(target)
    out = Path(config.output_dir or f"outputs/adapt-{slug(target.name)}")
    raw, entities = resolved_files(raw_text), resolved_files(entity_list)
    entity = entities[0] if entities else None
    methods, cells, _, _ = plan_search(model, target, config, out, raw, entity, data_dir)
    status = grid_status(cells, out)
    priced = price(cells, out, str(model), probed=probed_minutes(cells, model, target, status, probe))
    lines = cell_lines(cells, out, priced, status)
    from crossner_hf.data.labels import describe_label_map, resolve_label_map  # the map plan_search checked, said

    lines += [f"this search: {priced.text()}", priced.clock_text(workers, raced=config.prune == "on"),
              *([budget_line(priced, workers, config.time_budget)] if config.time_budget else []),
              describe_label_map(resolve_label_map(config.source_label_map, target.labels, target.name),
                                 target.labels), "", "methods:"]
    for m in methods:
        lines.append(f"  {m.name:<28} ~{method_minutes(m, priced):.1f} min a seed  {m.status or m.settings}")
    lines.append("")
    for budget in BUDGETS:
        if budget == config.budget:
            lines.append(f"budget {budget}: {len(cells)} cells, {priced.left} left, ~{priced.minutes_left:.1f} min "
                         f"({priced.minutes_left / 60:.1f} h) one after another  <- this run")
            continue
        other = AdaptConfig(**{**config.__dict__, "budget": budget, "push_to_hub": None})
        _, budget_cells, _, _ = plan_search(model, target, other, out, raw, entity, data_dir)
        total = sum(c.minutes for c in budget_cells)
        lines.append(f"budget {budget}: {len(budget_cells)} cells, ~{total:g} min ({total / 60:.1f} h) one after "
                     "another (the packaged table)")
    return "\n".join(lines)


def status_text(out: str | Path) -> str:
    """``adapt --status OUT``: the table so far (the finished methods' rows, the others' cell statuses), the cells
    done / running / left and the minutes left, priced from the finished cells. Reads OUT only: it runs nothing and
    takes no lock, so it answers from another shell while the search runs."""
    out = Path(out)
    record, methods, cells = read_plan(out)
    status = grid_status(cells, out)
    rows = rows_of(methods, out, status, (record.get("config") or {}).get("budget", ""))
    priced = price(cells, out, str(record.get("model", "")))
    started = started_lines(cells, out, status)  # "direct/seed-1: stopped at step 190 of 722 (why)"
    head = [f"# {record.get('dataset')}: adapt search in {out} (so far)", "", counts_line(status, priced), "",
            *(["started and not finished:", *(f"- {line}" for line in started), ""] if started else [])]
    done = (out / "adapt.json").is_file()
    tail = ["", "The search finished: adapt.md holds the choice." if done else
            "No choice yet: the search chooses when its cells are done or its race or --time_budget ends it (rerun "
            "`crossner-hf adapt` with the same flags to resume one that stopped)."]
    return "\n".join([*head, markdown_table(rows), *tail])
