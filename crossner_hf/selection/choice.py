"""The statistics of an ``adapt`` table and the choice it ships: mean and standard deviation over seeds, the paired
bootstrap on dev between the top two, and the rule that picks a method on dev F1, never on test.

The rule (:func:`choose`): the best method is the one with the highest mean dev F1 over seeds. With more than one
seed, a cheaper method (fewer estimated minutes per seed, its DAPT included) whose mean dev F1 is within one standard
deviation of the best's is shipped instead, unless ``prefer="best"``: a 100-sentence dev set does not separate
methods closer than their own seed spread. Test F1 is reported beside and never read by the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crossner_hf.reproduce.tables import mean_std, pm


@dataclass
class Row:
    """One method's line of the table: its scores per seed (percent) and what it cost."""

    method: str
    dev: list[float] = field(default_factory=list)
    test: list[float] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    seconds: float | None = None
    minutes: float = 0.0
    status: str = "done"
    """done, or why the row has no choice: 'failed: <the run's last line>', 'needs --raw_text', 'not run'."""
    settings: str = ""
    paper_row: str | None = None
    paper_gain: float | None = None
    """The paper's average test-F1 gain of this method over direct fine-tuning (CrossNER Table 2), or None."""
    models: list[str] = field(default_factory=list)
    """The model folder of each seed (the bootstrap tags dev with them; the best one by dev is shipped)."""
    improving: list[bool | None] = field(default_factory=list)
    """Per seed: whether dev F1 still rose at the run's last dev check (None: the run recorded fewer than two)."""
    raced: str = ""
    """What the race (``--prune on``, ``--time_budget``) did to this method's seeds: how far each got and why it
    stopped or never started ('' when every seed ran in full)."""

    @property
    def still_improving(self) -> list[int]:
        """The seeds whose dev F1 rose at their last check: the budget, not early stopping, ended them."""
        return [s for s, up in zip(self.seeds, self.improving) if up]

    @property
    def end_text(self) -> str:
        """The table's 'at the end' cell: still improving (which seeds) or stopped early, or '-' unknown."""
        if self.still_improving:
            return f"still improving ({len(self.still_improving)}/{len(self.seeds)} seeds)"
        return "plateaued" if self.improving and all(up is False for up in self.improving) else "-"

    @property
    def dev_f1(self) -> float | None:
        return mean_std(self.dev)[0]

    @property
    def dev_f1_std(self) -> float | None:
        return mean_std(self.dev)[1]

    @property
    def test_f1(self) -> float | None:
        return mean_std(self.test)[0]

    @property
    def test_f1_std(self) -> float | None:
        return mean_std(self.test)[1]

    @property
    def done(self) -> bool:
        return self.status == "done" and bool(self.dev)

    def to_dict(self) -> dict[str, Any]:
        """The row as ``adapt.json`` holds it: F1 (and the paper's gain) as fractions, as in every results file;
        the row itself and the printed table are in percent."""
        return {"method": self.method, "dev_f1": _fraction(self.dev_f1), "dev_f1_std": _fraction(self.dev_f1_std),
                "test_f1": _fraction(self.test_f1), "test_f1_std": _fraction(self.test_f1_std),
                "seconds": _r(self.seconds, 1), "estimated_minutes": self.minutes, "seeds": self.seeds,
                "dev_per_seed": [_fraction(f) for f in self.dev], "test_per_seed": [_fraction(f) for f in self.test],
                "status": self.status, "settings": self.settings,
                "paper_row": self.paper_row, "paper_gain_over_direct": _fraction(self.paper_gain),
                "still_improving_seeds": self.still_improving, "at_the_end": self.end_text, "race": self.raced}


def rising_at_end(history: Sequence[float]) -> bool | None:
    """Whether the last of a run's dev F1 checks is above every earlier one (None: fewer than two checks)."""
    if len(history) < 2:
        return None
    return history[-1] > max(history[:-1])


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(float(value), digits)


def _fraction(percent: float | None) -> float | None:
    """A table's percent as the fraction files hold (to 4 digits: the table's 2 decimals of a percent)."""
    return None if percent is None else round(float(percent) / 100, 4)


@dataclass(frozen=True)
class Choice:
    chosen: str | None
    best: str | None
    """The highest mean dev F1 (the chosen one unless a cheaper one is within one standard deviation)."""
    reason: str


def choose(rows: Sequence[Row], prefer: str = "cheaper") -> Choice:
    """The method to ship, by mean dev F1 over seeds (never test), and the sentence saying why."""
    done = [r for r in rows if r.done]
    if not done:
        return Choice(None, None, "no method finished: nothing to ship (see the status column).")
    # ties go to the cheaper method: equal evidence, less to run again
    best = max(done, key=lambda r: (r.dev_f1, -r.minutes))
    head = f"{best.method} has the highest mean dev F1 ({_pm(best.dev_f1, best.dev_f1_std)})"
    if prefer == "best":
        return Choice(best.method, best.method, f"{head}; shipped as asked (--prefer best). Test F1 was not consulted.")
    if best.dev_f1_std is None:
        return Choice(best.method, best.method,
                      f"{head}; one seed gives no spread to judge noise by, so the cheaper-within-one-std rule "
                      "cannot apply (give several --seeds). Test F1 was not consulted.")
    close = [r for r in done if r.minutes < best.minutes and r.dev_f1 >= best.dev_f1 - best.dev_f1_std]
    if not close:
        return Choice(best.method, best.method, f"{head}, and no cheaper method is within one standard deviation "
                      f"({best.dev_f1_std:.2f}) of it. Test F1 was not consulted.")
    cheap = min(close, key=lambda r: (r.minutes, -r.dev_f1))
    return Choice(cheap.method, best.method,
                  f"{head}, but {cheap.method} (dev {_pm(cheap.dev_f1, cheap.dev_f1_std)}) costs less (~{cheap.minutes:g}"
                  f" vs ~{best.minutes:g} min a seed) and is within one standard deviation of it, so {cheap.method} "
                  f"is shipped (--prefer best ships {best.method}). Test F1 was not consulted.")


_pm = pm  # the tables' mean ± std, as the evidence prints it


def sentence_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> np.ndarray:
    """``(3, n)``: true positives, predicted and gold entities of each sentence (conlleval's entities)."""
    from crossner_hf.evaluation.report.analysis import sentence_counts as counts

    return np.stack(counts(gold, pred))


def paired_bootstrap(a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, n_boot: int = 1000,
                     seed: int = 0) -> dict[str, float]:
    """Dev sentences resampled with replacement, the same draw for both methods: the difference of their mean F1
    over seeds (``a`` and ``b``: each seed model's :func:`sentence_counts`), its 95% interval and how often ``a``
    stays ahead. The resampling is the report's (:func:`~crossner_hf.evaluation.report.analysis.resampled_f1`)."""
    from crossner_hf.evaluation.report.analysis import prf, resampled_f1

    def observed(models: Sequence[np.ndarray]) -> float:
        return 100 * float(np.mean([prf(*(float(x) for x in c.sum(-1)))[2] for c in models]))

    n = a[0].shape[1]
    delta = 100 * (resampled_f1([tuple(c) for c in a], n_boot=n_boot, seed=seed)
                   - resampled_f1([tuple(c) for c in b], n_boot=n_boot, seed=seed))  # the same seed: the same draws
    lo, hi = np.percentile(delta, [2.5, 97.5])
    return {"delta": observed(a) - observed(b), "low": float(lo), "high": float(hi),
            "a_ahead": float(np.mean(delta > 0)), "n_boot": n_boot, "sentences": n}


def bootstrap_sentence(first: str, second: str, result: dict[str, float]) -> str:
    """The table's line about the top two."""
    return (f"Paired bootstrap on dev ({result['n_boot']} resamples of {result['sentences']} sentences): {first} - "
            f"{second} = {result['delta']:+.2f} F1 (95% interval {result['low']:+.2f} to {result['high']:+.2f}); "
            f"{first} is ahead in {100 * result['a_ahead']:.0f}% of resamples.")
