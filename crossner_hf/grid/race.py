"""Racing the candidates of a grid study: every method runs one seed first, further seeds go only to methods that can
still win, a training clearly behind the leader at the same share of its own budget is stopped there (its checkpoint
kept), and a time budget keeps a choice possible when it ends.

It is racing as irace / F-race use it for algorithm configuration and successive halving (ASHA in Ray Tune, Optuna's
pruners) for trials, applied to *methods*. The policy here is pure: it reads what the cells recorded (their dev F1
at each check, placed at its share of the cell's whole planned run, ``progress.json``; a finished cell's dev F1) and
answers what to launch, what to stop and why, and what never to start. It runs nothing and imports no executor:
:class:`RaceController` drives :func:`crossner_hf.grid.run_grid` through its ``controller`` hook, on any executor,
for ``adapt`` and for ``reproduce``'s method rows.

The rules (each stated in the reason the table prints):

- **one seed first**: the first seeds launch before any second seed that is ready beside them, and a method's later
  seeds wait for its first to finish (:meth:`Race.ready`);
- **more seeds only to a method that can still win**: once the leader and a method each finished a seed, the
  method gets no more seeds when its mean dev F1 trails the leader's by more than the margin (the seed spread; a
  method within it could still win, or be the cheaper choice) and, where the caller gives that evidence,
  ``separated(leader, method)`` says so too (``adapt``: the paired bootstrap on dev, whose 95% interval of the
  difference excludes 0);
- **stop a training clearly behind**: at a dev check at share ``s`` of its own budget (never before
  :attr:`RacePolicy.min_share`, never before its :attr:`RacePolicy.min_checks`-th check, never past
  :attr:`RacePolicy.max_share`, where finishing costs little more), a cell whose best dev F1
  so far is behind, by more than the margin, the best any other method's cell reached by the same share of its
  own budget (a finished cell, or a running one that has trained past that share: ASHA's rungs, by share) is
  stopped. The margin is the larger of :attr:`RacePolicy.min_margin` and twice the seed spread measured so far.
  Shares, not steps, and shares of the fine-tuning that checks the target's dev: a pretrain-finetune cell's source
  stage and a DAPT method's pre-training have no dev F1 on the target and are never judged, and its first target
  checks are compared with the others' first checks, not with their plateau (placed after the source stage, at
  their share of the whole run, they were compared with an early-plateauing direct's final F1 and cut on the gpu
  budget, where pretrain-finetune then won on every seed);
- **a time budget** (:attr:`RacePolicy.deadline`): a cell launches only if its estimate fits in the time left (the
  first seeds first, so a choice exists early); at the deadline the running cells are stopped (resumable) and the
  study chooses among what finished.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

RACE = "race.json"
"""What the race decided, in the study's folder: each stopped or skipped cell and why (``--status`` and the table
read it)."""


@dataclass
class RacePolicy:
    """The racing rule's settings."""

    prune: bool = True
    """False: every cell runs in full (the deadline still applies)."""
    min_share: float = 0.3
    """No training is stopped before this share of its own planned run (slow starters are not cut early)."""
    min_checks: int = 3
    """No training is stopped before this many dev checks of its own."""
    max_share: float = 0.9
    """A training past this share of its own run finishes: what is left costs little, and a finished seed is a row."""
    min_margin: float = 2.0
    """F1 points a training must trail the leader by (at least) to be stopped, whatever the measured spread."""
    spread_factor: float = 2.0
    """The margin is this many seed standard deviations when they are wider than :attr:`min_margin`."""
    deadline: float | None = None
    """Wall-clock time (``time.time()``) the study must choose by, or None."""


@dataclass
class Trial:
    """One cell of a method as the race sees it."""

    name: str
    method: str
    index: int
    """Its seed's place in the method's seeds (0: the first seed)."""
    minutes: float = 0.0
    """Its estimated minutes (what is left of it), for the time budget."""
    history: list[tuple[float, float]] = field(default_factory=list)
    """Dev F1 (percent) at each check, at its share of the cell's whole planned run."""
    final: float | None = None
    """Its finished dev F1 (percent), or None while it has not finished."""


def best_by(history: Sequence[tuple[float, float]], share: float) -> float | None:
    """The best dev F1 of ``history`` at checks up to ``share`` of the run (what early stopping would keep), or
    None when it has no check by then."""
    seen = [f1 for s, f1 in history if s <= share + 1e-9]
    return max(seen) if seen else None


def spread(values: Iterable[float]) -> float:
    """The sample standard deviation of ``values`` (0 with fewer than two)."""
    values = list(values)
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5


class Race:
    """The racing decisions over ``trials`` (see the module's text); ``separated(leader, method)`` returns a reason
    when the finished evidence says ``method`` cannot beat ``leader`` (a paired bootstrap), else None."""

    def __init__(self, trials: Sequence[Trial], policy: RacePolicy | None = None, *,
                 separated: Callable[[str, str], str | None] | None = None,
                 clock: Callable[[], float] = time.time):
        self.trials = {t.name: t for t in trials}
        self.policy = policy or RacePolicy()
        self.separated = separated
        self.clock = clock
        self.stopped: dict[str, str] = {}
        self.skipped_cells: dict[str, str] = {}
        self.out_of_race: dict[str, str] = {}
        """method -> why it gets no more seeds."""
        self.failed: set[str] = set()
        """Cells that ended without a result (their method's later seeds are not run on their evidence)."""

    # ---------------------------------------------------------------------------------------------- evidence

    def method_score(self, method: str) -> float | None:
        """A method's mean finished dev F1 over its finished seeds, or None."""
        finals = [t.final for t in self.trials.values() if t.method == method and t.final is not None]
        return sum(finals) / len(finals) if finals else None

    def leader(self, exclude: str | None = None) -> str | None:
        """The method with the best mean finished dev F1 (None before any finished)."""
        scores = {m: s for m in {t.method for t in self.trials.values()} if m != exclude
                  and (s := self.method_score(m)) is not None}
        return max(scores, key=lambda m: scores[m]) if scores else None

    def margin(self) -> float:
        """F1 points of noise: the larger of the floor and the pooled seed spread of the methods with several
        finished seeds."""
        spreads = []
        for method in {t.method for t in self.trials.values()}:
            finals = [t.final for t in self.trials.values() if t.method == method and t.final is not None]
            if len(finals) >= 2:
                spreads.append(spread(finals))
        seeds = max(spreads) if spreads else 0.0
        return max(self.policy.min_margin, self.policy.spread_factor * seeds)

    def ahead_at(self, method: str, share: float) -> tuple[str, float] | None:
        """The best dev F1 any other method's cell had by ``share`` of its own budget, and whose: a running or
        finished cell that trained past ``share`` (its best check by then), or one that ended before it (its final
        dev F1). A cell short of ``share``, or finished without a recorded curve, has nothing fair to compare. None
        when no other cell got that far."""
        best: tuple[str, float] | None = None
        for trial in self.trials.values():
            if trial.method == method:
                continue
            history = trial.history
            if trial.final is not None and history and history[-1][0] <= share:
                theirs = trial.final  # it ended (early stopping) before this share: what it reached
            elif history and history[-1][0] >= share:
                theirs = best_by(history, share)
            else:
                continue  # not that far yet, or finished without a recorded curve: nothing fair to compare
            if theirs is not None and (best is None or theirs > best[1]):
                best = (trial.method, theirs)
        return best

    # ---------------------------------------------------------------------------------------------- decisions

    def can_win(self, method: str) -> str | None:
        """None while ``method`` can still win; else why not (then it gets no further seed)."""
        if method in self.out_of_race:
            return self.out_of_race[method]
        if not self.policy.prune:
            return None
        leader, mine = self.leader(exclude=method), self.method_score(method)
        if leader is None or mine is None:
            return None
        ahead, margin = self.method_score(leader), self.margin()
        if ahead is None or ahead - mine <= margin:
            return None  # within the noise (or ahead): it can still win, or be the cheaper choice
        reason = f"{mine:.1f} vs {leader} {ahead:.1f} on dev, behind by more than the margin ({margin:.1f})"
        if self.separated is not None:  # the finished evidence must say so too
            separated = self.separated(leader, method)
            reason = None if separated is None else f"{reason}; {separated}"
        if reason is not None:
            self.out_of_race[method] = reason
        return reason

    def should_stop(self, name: str) -> str | None:
        """Why the running cell ``name`` should stop now, or None (see the module's text)."""
        trial = self.trials[name]
        if not self.policy.prune or trial.final is not None or not trial.history:
            return None
        share, _ = trial.history[-1]
        if share < self.policy.min_share or share > self.policy.max_share or len(trial.history) < self.policy.min_checks:
            return None
        ahead = self.ahead_at(trial.method, share)
        mine = best_by(trial.history, share)
        if ahead is None or mine is None:
            return None
        leader, theirs = ahead
        margin = self.margin()
        if theirs - mine <= margin:
            return None
        return (f"stopped at dev check {len(trial.history)} ({100 * share:.0f}% of its budget): {mine:.1f} vs "
                f"{leader} {theirs:.1f} at the same share, behind by more than the margin ({margin:.1f})")

    def fits(self, trial: Trial) -> str | None:
        """None when ``trial`` can finish before the deadline; else why it is cut."""
        if self.policy.deadline is None:
            return None
        left = (self.policy.deadline - self.clock()) / 60
        if trial.minutes <= left:
            return None
        return f"cut by --time_budget: ~{trial.minutes:.1f} min to run, {max(0.0, left):.1f} min left"

    def ready(self, names: Sequence[str], free: int | None = None) -> list[str]:
        """Of the cells whose dependencies are done, those to launch now, in order: first seeds before later ones
        (cheapest first under a deadline, so that a choice exists early), a later seed only to a method that can
        still win; a cell that cannot be launched any more is recorded in :attr:`skipped_cells`.

        ``free``: the workers free now. A later seed whose method's first seed has not finished waits for that
        evidence only while the workers have other work: into workers that would otherwise idle it is launched
        beside its first seed (a packed GPU ran the raced search 1.5x slower than the full one when they idled), and
        the race can still stop it (:meth:`should_stop`, or its method falling out of the race)."""
        launch, early = [], []
        for name in names:
            trial = self.trials.get(name)
            if trial is None:  # not a raced cell (a corpus, a DAPT run): runs as the grid plans it
                launch.append(name)
                continue
            if name in self.skipped_cells:
                continue
            behind = self.should_stop(name)  # a cell stopped before (its history saved): not started again
            if behind is not None:
                self.skipped_cells[name] = behind
                continue
            if trial.index > 0 and self.policy.prune:
                first = [t for t in self.trials.values() if t.method == trial.method and t.index == 0]
                ended = [t.name for t in first if t.name in self.stopped or t.name in self.skipped_cells
                         or t.name in self.failed]
                if ended and self.method_score(trial.method) is None:
                    self.skipped_cells[name] = f"not run: its first seed {ended[0]} was " + (
                        "stopped" if ended[0] in self.stopped else "failed" if ended[0] in self.failed else "not run")
                    continue
                if self.method_score(trial.method) is None:
                    if self.fits(trial) is None:
                        early.append(name)  # its first seed first, unless a worker would idle
                    continue
                reason = self.can_win(trial.method)
                if reason is not None:
                    self.skipped_cells[name] = f"not run: {trial.method} cannot win ({reason})"
                    continue
            cut = self.fits(trial)
            if cut is not None:
                self.skipped_cells[name] = cut
                continue
            launch.append(name)
        key = (lambda n: (self.trials[n].index if n in self.trials else -1,
                          self.trials[n].minutes if n in self.trials and self.policy.deadline is not None else 0))
        spare = 0 if free is None else max(0, free - len(launch))
        return sorted(launch, key=key) + sorted(early, key=key)[:spare]

    def out_of_race_reason(self, name: str) -> str | None:
        """Why the running later seed ``name`` should stop because its method can no longer win (it was launched
        into a free worker before its first seed finished), or None."""
        trial = self.trials[name]
        if not self.policy.prune or trial.index == 0 or trial.final is not None:
            return None
        reason = self.can_win(trial.method)
        return None if reason is None else f"stopped: {trial.method} cannot win ({reason})"

    def expired(self) -> bool:
        return self.policy.deadline is not None and self.clock() >= self.policy.deadline

    def record(self) -> dict[str, Any]:
        """``race.json``: the policy and every decision."""
        return {"prune": self.policy.prune, "deadline": self.policy.deadline, "margin": round(self.margin(), 2),
                "stopped": dict(self.stopped), "skipped": dict(self.skipped_cells),
                "out_of_race": dict(self.out_of_race), "expired": self.expired()}


def read_race(out: str | Path) -> dict[str, Any]:
    """The race's decisions in ``out`` (``race.json``), ``{}`` when it has none."""
    try:
        record = json.loads((Path(out) / RACE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def history_of(progress: Mapping[str, Any] | None) -> list[tuple[float, float]]:
    """A cell's dev checks from its ``progress.json`` record, as (share, F1 in percent)."""
    return [(float(s), 100 * float(f1)) for s, f1 in (progress or {}).get("dev", [])]


class RaceController:
    """:class:`Race` as :func:`crossner_hf.grid.run_grid`'s ``controller``: it reads each cell's progress
    (``progress.json``) and result at every poll, launches, stops and skips as the race decides, ends the grid at the
    deadline, and writes ``race.json`` at each decision.

    ``final(cell_name)``: a finished cell's dev F1 in percent (None while not finished); ``progress(cell_name)``:
    its progress record (None before it wrote one); ``minutes(cell_name)``: its estimate left, for the deadline;
    ``failed(cell_name)``: whether it ended without a result; ``tick(running)``: called at every poll with the
    cells running (the caller's clock); ``slots``: the cells the grid runs at once (its workers): no more are
    released to it than it has free, so the race's order holds for the cells that become ready later.
    """

    def __init__(self, race: Race, out: str | Path, *, final: Callable[[str], float | None],
                 progress: Callable[[str], Mapping[str, Any] | None],
                 minutes: Callable[[str], float] | None = None, failed: Callable[[str], bool] | None = None,
                 tick: Callable[[Sequence[str]], None] | None = None, slots: int | None = None):
        self.race = race
        self.out = Path(out)
        self.final = final
        self.progress = progress
        self.minutes = minutes
        self.is_failed = failed
        self.tick = tick
        self.slots = slots
        self.running: set[str] = set()
        self.launched: dict[str, Any] = {}
        self.stopping: dict[str, str] = {}
        self.launched_at: dict[str, float] = {}
        """Cells asked to stop whose process has not ended yet."""
        self._last: str | None = None

    def refresh(self, *, minutes: bool = False) -> None:
        """Read every raced cell's progress and result again (``minutes``: and its estimate left)."""
        for trial in self.race.trials.values():
            if trial.final is None:
                trial.final = self.final(trial.name)
            if trial.final is None and self.is_failed is not None and trial.name not in self.race.stopped \
                    and self.is_failed(trial.name):
                self.race.failed.add(trial.name)
            trial.history = history_of(self.progress(trial.name)) or trial.history
            if minutes and self.minutes is not None and trial.final is None:
                trial.minutes = self.minutes(trial.name)

    def ready(self, cells_ready: list[Any]) -> list[Any]:
        self.refresh(minutes=True)
        if self.race.expired():
            for cell in cells_ready:
                self.race.skipped_cells.setdefault(cell.name, "cut by --time_budget: the time was up")
            self.save()
            return []
        by_name = {c.name: c for c in cells_ready}
        free = None
        if self.slots is not None:
            # released as workers free up, never all at once: a cell that becomes ready later (the fine-tuning
            # after a DAPT run, a method's second seed) still gets its turn in the race's order
            free = max(0, self.slots - sum(1 for cell in self.launched.values() if self._alive(cell)))
        launch = [by_name[n] for n in self.race.ready(list(by_name), free)]
        if free is not None:
            launch = launch[:free]
        self.running |= {c.name for c in launch}
        self.launched.update({c.name: c for c in launch})
        self.launched_at.update({c.name: time.time() - 1.0 for c in launch})  # the file system's clock is coarse
        self.save()
        return launch

    def poll(self, out: Any = None) -> list[tuple[str, str]]:
        self.refresh()
        stop = []
        for name in sorted(self.running):
            trial = self.race.trials.get(name)
            if trial is None or trial.final is not None or trial.name in self.race.failed:
                cell = self.launched.get(name)
                if trial is not None or cell is None or cell.result_path(self.out).is_file():
                    self.running.discard(name)  # ended (a cell the race does not judge: once its result is there)
                continue
            if self.race.expired():
                reason = "stopped by --time_budget: the time was up (its checkpoint is kept; a rerun continues it)"
            else:
                reason = self.race.should_stop(name) or self.race.out_of_race_reason(name)
            if reason is not None and name not in self.race.stopped:
                self.race.stopped[name] = reason
                self.stopping[name] = reason
                self.running.discard(name)
                logger.info("race: %s %s", name, reason)
        # asked again until the cell's process has ended: a cell whose process was still starting (forked from a
        # warm interpreter not yet ready) was not the grid's to stop at the first asking
        for name, reason in list(self.stopping.items()):
            cell = self.launched.get(name)
            if cell is not None and getattr(cell, "folder", None) is not None and not self._alive(cell):
                del self.stopping[name]
            else:
                stop.append((name, reason))
        self.save()
        if self.tick is not None:
            self.tick(sorted(self.running))
        return stop

    def _alive(self, cell: Any) -> bool:
        """Whether the cell's process may still run: it has not recorded the end of a run since it was launched
        (``runs.jsonl``, which the grid appends when a cell's process ends)."""
        from crossner_hf.grid.cells import RUNS_FILE

        try:
            return (cell.folder(self.out) / RUNS_FILE).stat().st_mtime < self.launched_at.get(cell.name, 0.0)
        except OSError:
            return True

    def skipped(self) -> dict[str, str]:
        return dict(self.race.skipped_cells)

    def done(self) -> bool:
        return self.race.expired()

    def save(self) -> None:
        from crossner_hf.outputs import atomic_output

        text = json.dumps(self.race.record(), indent=1)
        if text == self._last:
            return
        self._last = text
        with atomic_output(self.out / RACE) as tmp:
            tmp.write_text(text, encoding="utf-8")
