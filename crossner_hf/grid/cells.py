"""The cells of a grid: what each runs, where, after what, and how far it got.

A :class:`Cell` is one typed run of a ``crossner-hf`` workflow (``train``, ``dapt``, ``bilstm-crf``, ...): the
command, its settings as values (``settings``: flag name -> value, the fields of the workflow's config and its model
and data arguments; a budget sets values there, never edits flag lists), the cells it reads (``deps``) and the
files it needs (``inputs``). It runs as its own process (the command with the settings as flags, so there is no
second copy of training code) in its own folder ``OUT/cells/<name>``, where :mod:`crossner_hf.grid.run` writes it
as ``cell.json``; the harness adds ``--output_dir`` (and ``--resume_from_checkpoint true`` for the commands that
checkpoint). A cell is **done** when its result file exists (``results.json``; in a DAPT cell an older version
finished, ``dapt_results.json``: :meth:`Cell.result_path`): the commands move model, results and card into place
together (:func:`crossner_hf.outputs.staged_outputs`), so that file's presence means the run finished.
Rerunning a grid skips done cells and continues a killed one.

Status files in the cell folder (so any executor, on any node, reports the same table):
``.running`` (host, the grid's pid and the cell process's, and the Slurm job's id in a Slurm job, written when the
run starts), ``.failed`` (the last line of the command's output), ``.stopped`` (why the grid's controller stopped
it: a raced search, a time budget; the cell is resumable); ``runs.jsonl`` has each run's seconds; the command's
whole output is in ``log.txt``. ``OUT/.skipped.json``: the cells a controller never started, with its reasons.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.executors import Status
from crossner_hf.task_env import secret_name

logger = logging.getLogger(__name__)

COMMAND_TABLE: dict[str, tuple[str, str]] = {
    "stats": ("stats", "Table 1 and the vocabulary overlap of the CrossNER files"),
    "data": ("data", "check a labeled dataset (splits, sizes, tags, types, scheme, every problem with file:line)"),
    "build-dataset": ("build_dataset", "the CrossNER datasets as Parquet + card for load_dataset"),
    "build-corpora": ("build_corpora", "a domain's DAPT corpus levels (domain / entity / task / integrated)"),
    "build-nerbert-corpus": ("nerbert_wikipedia", "the NER-BERT entity-tagging corpus from Wikipedia + DBpedia"),
    "train": ("train", "fine-tune an encoder with a CrossNER schedule (direct, pretrain-finetune, joint)"),
    "dapt": ("dapt", "domain-adaptive pre-training: masked-LM training on domain text"),
    "nerbert": ("nerbert", "NER-BERT pre-training: the encoder as an entity tagger over every corpus category"),
    "bilstm-crf": ("bilstm_crf", "the BiLSTM-CRF baseline (lample or crossner architecture)"),
    "cdlm": ("cdlm", "cross-domain LM (parameter generation network), supervised or zero-shot"),
    "multicell": ("multicell", "the multi-cell compositional LSTM (Jia & Zhang 2020), with encoder features"),
    "predict": ("predict", "tag raw text, pre-tokenised text or CoNLL files with a trained model"),
    "export": ("export", "export a trained model to ONNX (fp32 or int8) for ONNX Runtime on the CPU"),
    "report": ("report", "an offline HTML evaluation report of a trained model"),
    "confusion": ("confusion", "entity-level type confusion, with the fine-to-coarse branch share"),
    "plot-entities": ("plot_entities", "t-SNE of gold entity representations, silhouettes per type"),
    "push": ("push", "push a finished model or dataset folder to the Hub"),
    "reproduce": ("reproduce", "run a paper's experiment as a resumable grid, our numbers beside the paper's"),
    "adapt": ("adapt", "which method for my domain? run the papers' methods on your data, ship the best on dev"),
    "compare": ("compare", "compare finished runs: mean ± std over seeds, the choice on dev, a paired bootstrap"),
}
"""Subcommand name -> (module of :mod:`crossner_hf.commands`, its one line for ``crossner-hf --help``): the one list
of the ``crossner-hf`` commands. Its home is here, below ``commands``: :mod:`crossner_hf.cli` dispatches from it, and
a grid's cells (which run these commands as processes) are checked by the parser of the module it names
(``build-nerbert-corpus`` is ``nerbert_wikipedia``: a name is not its module's)."""

RESUMABLE = frozenset({"train", "dapt", "nerbert", "bilstm-crf", "cdlm", "multicell"})
"""The commands that checkpoint and take ``--resume_from_checkpoint`` (a grid cell of one resumes after a kill)."""



STATUSES = tuple(Status)
"""Every status, in the order the status table counts them."""
STOPPED_MARK = ".stopped"
SKIPPED_FILE = ".skipped.json"
RUNS_FILE = "runs.jsonl"
"""In a cell's folder: one line per run of its process (when it started, its seconds, how it ended)."""
PROGRESS = "progress.json"
"""In a running cell's folder (:mod:`crossner_hf.training.progress` writes it, :mod:`crossner_hf.grid.costs` and
:func:`saved_step` read it): stage, step of ``max_steps``, the share of its whole planned run, seconds so far (summed
over its runs), dev F1 per check."""


@dataclass(frozen=True)
class Cell:
    """One run of a ``crossner-hf`` command in the grid."""

    name: str
    """Unique within the experiment; also the folder under ``OUT/cells/`` (``politics/direct/seed-555``)."""
    command: str
    """The ``crossner-hf`` subcommand."""
    row: str
    """The table row (or curve) the cell's score goes to."""
    column: str
    """The table column (a domain, or an x value of a figure)."""
    seed: int | None = None
    result_file: str = "results.json"
    deps: tuple[str, ...] = ()
    """Names of the cells whose outputs this one reads (they run first)."""
    inputs: tuple[str, ...] = ()
    """Paths outside the grid the cell reads; absent ones make it 'missing input', never silently dropped."""
    cpus: int = 1
    gpus: int = 0
    minutes: float = 1.0
    """Estimated wall time at this scale (for --dry_run and Slurm time limits)."""
    score: bool = True
    """Whether the cell's result is a table entry (a DAPT cell only feeds the fine-tuning after it)."""
    meta: Mapping[str, str] = field(default_factory=dict)
    output_file: str | None = None
    """For a command that writes one file (``plot-entities --output``): its name in the cell folder,
    passed as ``--output``; otherwise the folder is passed as ``--output_dir``."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """The run's settings as values (flag name without ``--`` -> value), its flags (:func:`render_flags`;
    ``--output_dir`` excepted: the harness adds the cell's folder): what a budget sets."""
    program: tuple[str, ...] | None = None
    """The process to start instead of ``python -m crossner_hf.cli COMMAND`` (a step of the user's own that takes
    the same ``--output_dir``)."""

    @property
    def pushes(self) -> bool:
        """Whether the run pushes to the Hub: only then does its process get the driver's Hub token."""
        flags = self.flags()
        return "--push_to_hub" in flags and flags[flags.index("--push_to_hub") + 1:][:1] != ["false"]

    def flags(self) -> list[str]:
        """The command's flags: the ``settings`` as flags (``--output_dir`` excepted)."""
        return render_flags(self.settings)

    def folder(self, out: str | Path) -> Path:
        return Path(out) / "cells" / self.name

    def result_path(self, out: str | Path) -> Path:
        """The cell's result file: ``result_file`` in its folder, or the name an older version gave it when only
        that one is there (a DAPT cell finished before 0.3 wrote ``dapt_results.json``: it stays done)."""
        from crossner_hf.results import OLDER_RESULT_FILES

        folder = self.folder(out)
        path = folder / self.result_file
        if not path.is_file():
            for older in OLDER_RESULT_FILES.get(self.result_file, ()):
                if (folder / older).is_file():
                    return folder / older
        return path

    def command_line(self, out: str | Path) -> list[str]:
        target = (["--output", str(self.folder(out) / self.output_file)] if self.output_file
                  else ["--output_dir", str(self.folder(out))])
        # a cell killed mid-run continues from its last complete checkpoint when the grid runs it again (a fresh
        # folder has none, so the first run starts at step 0; the run-identity check refuses changed settings)
        flags = self.flags()
        resume = (["--resume_from_checkpoint", "true"]
                  if self.command in RESUMABLE and "--resume_from_checkpoint" not in flags else [])
        program = list(self.program) if self.program else [sys.executable, "-m", "crossner_hf.cli", self.command]
        return [*program, *flags, *resume, *target]

    def shell_line(self, out: str | Path) -> str:
        """The equivalent ``crossner-hf`` command line (a user reruns one cell by hand with it); a secret flag's
        value (``--hub_token``) shows as ``***``: the line is logged and printed by dry runs."""
        import shlex

        line = redact_flags(self.command_line(out))
        return shlex.join(["crossner-hf", *line[3:]] if not self.program else line)

    def to_dict(self) -> dict:
        """The cell as ``cell.json`` and ``plan.json`` hold it: a secret setting's or flag's value is ``***`` (the
        files stay in the folder and go with it; the process itself gets the value)."""
        record = asdict(self)
        record["settings"] = {k: REDACTED if secret_name(k) and v is not None else v
                              for k, v in record["settings"].items()}
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Cell:
        """A cell from its ``cell.json`` (or ``plan.json`` entry; keys starting with ``_`` are the record's own). A
        record from before 0.4 has ``argv`` (always empty where a planner wrote it): its flags join the settings."""
        tuples = ("deps", "inputs", "program")
        record = dict(record)
        argv = record.pop("argv", None) or ()
        if argv:
            record["settings"] = {**_settings_of(argv), **(record.get("settings") or {})}
        return cls(**{k: (tuple(v) if k in tuples and v is not None else v) for k, v in record.items()
                      if not k.startswith("_")})

    def record(self, out: str | Path) -> dict:
        """``cell.json``: the cell, and the grid folder it ran in (its paths are compared relative to it)."""
        return {**self.to_dict(), "_out": [str(out), str(Path(out).resolve())]}


REDACTED = "***"


def redact_flags(flags: Iterable[str]) -> list[str]:
    """``flags`` with the value of each secret flag (``--hub_token X``, ``--hub_token=X``) shown as ``***``."""
    shown: list[str] = []
    secret = False
    for flag in flags:
        if flag.startswith("--"):
            name, eq, _ = flag.partition("=")
            secret = secret_name(name) and not eq
            shown.append(f"{name}={REDACTED}" if eq and secret_name(name) else flag)
        else:
            shown.append(REDACTED if secret else flag)
    return shown


def render_flags(settings: Mapping[str, Any]) -> list[str]:
    """``{"max_steps": 60, "use_cpu": True, "seeds": [1, 2], "x": None}`` -> ``--max_steps 60 --use_cpu true
    --seeds 1 2`` (None: left out, the command's default)."""
    flags: list[str] = []
    for name, value in settings.items():
        if value is None:
            continue
        flag = f"--{name}"
        if isinstance(value, bool):
            flags += [flag, "true" if value else "false"]
        elif isinstance(value, (list, tuple)):
            flags += [flag, *(str(v) for v in value)]
        else:
            flags += [flag, str(value)]
    return flags


def critical_path_order(tasks: Sequence[Cell]) -> list[Cell]:
    """``tasks`` longest remaining path first (a task's ``minutes`` plus the longest chain waiting for it; ties in
    plan order): packed workers take long tasks and the heads of long chains first and end together.

        >>> from types import SimpleNamespace as T
        >>> [t.name for t in critical_path_order([T(name="a", minutes=1, deps=()), T(name="b", minutes=5, deps=()),
        ...     T(name="c", minutes=1, deps=()), T(name="d", minutes=9, deps=("c",))])]
        ['c', 'd', 'b', 'a']
    """
    children: dict[str, list[Any]] = {}
    for task in tasks:
        for dep in task.deps:
            children.setdefault(dep, []).append(task)
    memo: dict[str, float] = {}

    def priority(task: Any) -> float:
        if task.name not in memo:  # 0 first: a cycle (refused when planned) cannot recurse forever
            memo[task.name] = 0.0
            memo[task.name] = float(getattr(task, "minutes", 1.0) or 0.0) + max(
                (priority(child) for child in children.get(task.name, ())), default=0.0)
        return memo[task.name]

    order = {task.name: i for i, task in enumerate(tasks)}
    return sorted(tasks, key=lambda task: (-priority(task), order[task.name]))


def topological(cells: Iterable[Cell]) -> list[Cell]:
    """The cells, every dependency before its dependants (stable: the given order otherwise)."""
    cells = list(cells)
    by_name = {c.name: c for c in cells}
    if len(by_name) != len(cells):
        from collections import Counter

        shared = sorted(name for name, n in Counter(c.name for c in cells).items() if n > 1)
        raise ValueError(f"cells share a name ({', '.join(shared[:5])}); give each cell of a grid its own name (it is "
                         "its folder under OUT/cells/).")
    ordered: list[Cell] = []
    state: dict[str, int] = {}

    def visit(cell: Cell, path: tuple[str, ...]) -> None:
        if state.get(cell.name) == 2:
            return
        if state.get(cell.name) == 1:
            raise ValueError(f"cells depend on each other in a cycle: {' -> '.join(path + (cell.name,))}.")
        state[cell.name] = 1
        for dep in cell.deps:
            if dep not in by_name:
                raise ValueError(f"cell {cell.name} depends on {dep}, which is not in the grid.")
            visit(by_name[dep], path + (cell.name,))
        state[cell.name] = 2
        ordered.append(cell)

    for cell in cells:
        visit(cell, ())
    return ordered


def cell_status(cell: Cell, out: str | Path) -> Status:
    """done / running / failed / changed / stopped / missing input / skipped / waiting, from the cell's folder
    (dependencies not consulted)."""
    folder = cell.folder(out)
    if changed_settings(cell, out):
        return Status.CHANGED
    if cell.result_path(out).is_file():
        return Status.DONE
    if (folder / ".failed").is_file():
        return Status.WAITING if _stopped_by_ctrl_c(folder / ".failed", Path(out)) else Status.FAILED
    if (folder / ".running").is_file() and _still_running(folder / ".running"):
        return Status.RUNNING
    if (folder / STOPPED_MARK).is_file():
        return Status.STOPPED
    if any(not Path(p).exists() for p in cell.inputs):
        return Status.MISSING_INPUT
    if cell.name in _skipped(Path(out)):
        return Status.SKIPPED
    return Status.WAITING


def _skipped(out: Path) -> dict[str, str]:
    """The cells the last run's controller never started, with its reasons (``OUT/.skipped.json``)."""
    try:
        return {str(k): str(v) for k, v in json.loads((out / SKIPPED_FILE).read_text(encoding="utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def stop_reason(cell: Cell, out: str | Path) -> str:
    """Why a stopped cell was stopped, or why a skipped one never started ("" when neither says)."""
    try:
        return str(json.loads((cell.folder(out) / STOPPED_MARK).read_text(encoding="utf-8"))["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return _skipped(Path(out)).get(cell.name, "")


def _settings_of(flags: Iterable[str]) -> dict[str, Any]:
    """``--a 1 --b x y --c`` -> ``{"a": "1", "b": ["x", "y"], "c": "true"}`` (an old record's flags as settings)."""
    values: dict[str, list[str]] = {}
    current = None
    for token in flags:
        if token.startswith("--"):
            current = token[2:]
            values.setdefault(current, [])
        elif current is not None:
            values[current].append(token)
    return {k: (v[0] if len(v) == 1 else v if v else "true") for k, v in values.items()}


def _flag_values(flags: Iterable[str]) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    current = None
    for token in flags:
        if token.startswith("--"):
            current = token
            values.setdefault(current, [])
        elif current is not None:
            values[current].append(token)
    return {k: " ".join(v) for k, v in values.items()}


def _relative(flags: list[str], roots: list[str]) -> list[str]:
    roots = sorted({r.rstrip("/") for r in roots if r and r not in (".", "/")}, key=len, reverse=True)
    out = []
    for flag in flags:
        for root in roots:
            if flag == root or flag.startswith(root + "/"):
                flag = "OUT" + flag[len(root):]
                break
        out.append(flag)
    return out


def changed_settings(cell: Cell, out: str | Path) -> str | None:
    """What differs between ``cell`` and the run its folder's ``cell.json`` records (``--max_steps 3 (now 5)``),
    or None (the same run, or no record): a finished cell of other settings is never reused, a killed one never
    continued under new ones."""
    record = cell.folder(out) / "cell.json"
    if not record.is_file():
        return None
    try:
        raw = json.loads(record.read_text(encoding="utf-8"))
        old = Cell.from_dict(raw)
    except (OSError, ValueError, TypeError):
        return None
    # a search moved or copied to another folder is the same search: its own paths count relative to it
    # a secret's value is not in the record (``***``), nor a setting of the run: never a difference
    # (a plan read back from a copied search's plan.json names the old folder, as its cells' records do)
    roots = [str(out), str(Path(out).resolve())]
    before = _flag_values(redact_flags(_relative(old.flags(), [*(raw.get("_out") or []), *roots])))
    now = _flag_values(redact_flags(_relative(cell.flags(), [*roots, *(raw.get("_out") or [])])))
    diffs = [f"{k} {before.get(k, '(unset)')} (now {now.get(k, 'unset')})" for k in sorted(set(before) | set(now))
             if before.get(k) != now.get(k)]
    if old.command != cell.command:
        diffs.insert(0, f"command {old.command} (now {cell.command})")
    return ", ".join(diffs) or None


INTERRUPTED = ".interrupted"
"""In OUT after Ctrl-C on its grid (removed when the next run starts)."""


def _stopped_by_ctrl_c(failed: Path, out: Path) -> bool:
    """Whether a cell marked killed by a signal was stopped by Ctrl-C on its grid: a Ray worker may see its cell
    killed, and mark it, in the moment before the cancel ends the worker itself (on any host)."""
    try:
        interrupted = (out / INTERRUPTED).stat().st_mtime
        return failed.stat().st_mtime >= interrupted - 10 and failed.read_text().startswith("killed by")
    except OSError:
        return False


def _still_running(marker: Path) -> bool:
    """False for a run of this host whose process is gone (a killed grid) and for a Slurm job that left the queue
    (a job killed at its time limit leaves its marker on a node); True otherwise (another host: trust it)."""
    try:
        owner = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    from crossner_hf.executors import pid_alive, slurm_job_alive

    if owner.get("host") != socket.gethostname():
        # squeue answers for a job on any node; without it (or an answer) the other host is trusted
        return owner.get("slurm_job") is None or slurm_job_alive(str(owner["slurm_job"])) is not False

    return any(pid_alive(int(owner[key])) for key in ("pid", "cell_pid") if owner.get(key))


def shown(text: str) -> str:
    """``text`` as a terminal may show it: control characters (an escape sequence in a cell's name or a log's last
    line) escaped, never sent raw."""
    return text if text.isprintable() else "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def failed_line(cell: Cell, out: str | Path) -> str:
    """The last line a failed cell left in ``.failed``; "" once it is gone (a status read from another shell while
    the running grid starts the cell again, which removes it)."""
    try:
        return (cell.folder(out) / ".failed").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def grid_status(cells: Iterable[Cell], out: str | Path) -> dict[str, Status]:
    """Every cell's status; a cell whose dependency failed or lacks input is 'blocked'."""
    status: dict[str, Status] = {}
    for cell in topological(cells):
        own = cell_status(cell, out)
        if own in (Status.WAITING, Status.RUNNING, Status.SKIPPED) and any(
                status[d] in Status.ending_dependants() for d in cell.deps):
            own = Status.BLOCKED
        status[cell.name] = own
    return status


def status_table(cells: Iterable[Cell], out: str | Path) -> str:
    """The grid as a text table: one line per cell, then the counts per status."""
    cells = list(cells)
    status = grid_status(cells, out)
    width = max((len(shown(c.name)) for c in cells), default=4)
    lines = [f"{'cell':<{width}}  {'status':<13}  command"]
    for cell in topological(cells):
        note = ""
        if status[cell.name] == Status.FAILED:
            note = "  " + failed_line(cell, out)[:200]
        elif status[cell.name] == Status.CHANGED:
            note = f"  ran with {changed_settings(cell, out)}; delete {cell.folder(out)} to run it again"[:300]
        elif status[cell.name] == Status.MISSING_INPUT:
            note = "  needs " + ", ".join(p for p in cell.inputs if not Path(p).exists())
        elif status[cell.name] == Status.SKIPPED:
            note = "  " + stop_reason(cell, out)[:200]
        progress = progress_note(cell, out) if status[cell.name] in (Status.STOPPED, Status.WAITING,
                                                                      Status.RUNNING) else ""
        if progress:  # read once: each read walks the cell's folder for its checkpoints
            note += f"  {progress}" + (f" ({stop_reason(cell, out)[:200]})"
                                       if status[cell.name] == Status.STOPPED else "")
        elif status[cell.name] == Status.STOPPED:
            note = "  " + stop_reason(cell, out)[:200]
        lines.append(shown(f"{shown(cell.name):<{width}}  {status[cell.name]:<13}  {cell.command}{note}"))
    counts = {s: sum(1 for v in status.values() if v == s) for s in STATUSES}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) + f" (of {len(cells)})")
    return "\n".join(lines)


def run_seconds(cell: Cell, out: str | Path) -> float | None:
    """The wall seconds of every run of ``cell``'s process, summed (a cell stopped and resumed ran more than once;
    its last run alone would price it too low); None when none is recorded (a cell run before 0.4)."""
    try:
        lines = (cell.folder(out) / RUNS_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    total = 0.0
    for line in lines:
        try:
            total += float(json.loads(line)["seconds"])
        except (ValueError, KeyError, TypeError):  # a line cut by a kill mid-write
            continue
    return total or None


def saved_step(cell: Cell, out: str | Path) -> tuple[int, int, str] | None:
    """(step, of max_steps, stage) a started cell continues from: its last complete checkpoint's
    ``trainer_state.json`` (the newest, of any stage: a seed's, a source stage's), else its ``progress.json``
    (written as it trains); None when it saved neither."""
    from crossner_hf.outputs import CHECKPOINT_COMPLETE

    folder = cell.folder(out)
    newest: tuple[float, Path] | None = None
    if folder.is_dir():
        for state in folder.rglob("checkpoint-*/trainer_state.json"):
            if (state.parent / CHECKPOINT_COMPLETE).is_file() and not state.parent.is_symlink():
                mtime = state.stat().st_mtime
                if newest is None or mtime > newest[0]:
                    newest = (mtime, state)
    if newest is not None:
        try:
            record = json.loads(newest[1].read_text(encoding="utf-8"))
            stage = "source" if newest[1].parent.parent.name == "source" else ""
            return int(record["global_step"]), int(record.get("max_steps") or 0), stage
        except (OSError, ValueError, KeyError, TypeError):
            pass
    try:
        record = json.loads((folder / PROGRESS).read_text(encoding="utf-8"))
        return int(record["step"]), int(record.get("max_steps") or 0), str(record.get("stage") or "")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def progress_note(cell: Cell, out: str | Path) -> str:
    """``step 190 of 722`` (``of the source stage`` where it is that stage's) for a started cell, "" otherwise."""
    saved = saved_step(cell, out)
    if saved is None:
        return ""
    step, max_steps, stage = saved
    where = f" of its {stage} stage" if stage in ("source",) else ""
    return f"step {step}" + (f" of {max_steps}" if max_steps else "") + where
