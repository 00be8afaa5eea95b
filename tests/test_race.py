"""The racing policy (:mod:`crossner_hf.grid.race`) on synthetic dev histories: one seed of every method first,
more seeds only to methods that can still win, a training clearly behind the leader at the same share of its own
budget stopped, a slow starter (pretrain-finetune's source stage, a DAPT method) not cut early, and the deadline."""

from __future__ import annotations

import json

from crossner_hf.grid.race import RACE, Race, RaceController, RacePolicy, Trial, best_by, read_race


def _trials(methods=("direct", "joint", "pretrain-finetune"), seeds=2, minutes=1.0):
    return [Trial(f"{m}/seed-{i}", m, i, minutes=minutes) for m in methods for i in range(seeds)]


def test_first_seeds_first_then_only_methods_that_can_still_win():
    race = Race(_trials(), RacePolicy(min_margin=2.0))
    names = list(race.trials)
    # nothing finished: every first seed launches, no second seed yet (it waits for its method's first)
    assert race.ready(names) == ["direct/seed-0", "joint/seed-0", "pretrain-finetune/seed-0"]
    race.trials["joint/seed-0"].final = 60.0
    race.trials["direct/seed-0"].final = 51.0  # 9 points behind: more than the margin
    race.trials["pretrain-finetune/seed-0"].final = 59.0  # within it: can still win
    launched = race.ready(["direct/seed-1", "joint/seed-1", "pretrain-finetune/seed-1"])
    assert launched == ["joint/seed-1", "pretrain-finetune/seed-1"]
    assert "direct cannot win" in race.skipped_cells["direct/seed-1"] and "51.0 vs joint 60.0" in \
        race.skipped_cells["direct/seed-1"]
    assert race.ready(["direct/seed-1"]) == []  # skipped once, never launched


def test_the_bootstrap_decides_when_given():
    calls = []

    def separated(leader, method):
        calls.append((leader, method))
        return "95% interval +2.1 to +9.0 excludes 0" if method == "direct" else None

    race = Race(_trials(("direct", "joint", "pretrain-finetune")), separated=separated)
    race.trials["joint/seed-0"].final = 60.0
    race.trials["direct/seed-0"].final = 59.5  # within the margin: the bootstrap is not even asked
    race.trials["pretrain-finetune/seed-0"].final = 50.0  # behind by more, but the bootstrap does not separate them
    assert race.ready(["direct/seed-1", "joint/seed-1", "pretrain-finetune/seed-1"]) == [
        "direct/seed-1", "joint/seed-1", "pretrain-finetune/seed-1"]
    assert calls == [("joint", "pretrain-finetune")]
    race.trials["direct/seed-0"].final = 50.0  # now behind by more than the margin, and separated
    assert race.ready(["direct/seed-1"]) == []
    assert "excludes 0" in race.skipped_cells["direct/seed-1"] and "50.0 vs joint 60.0" in \
        race.skipped_cells["direct/seed-1"]


def test_prune_off_runs_everything():
    race = Race(_trials(("direct", "joint")), RacePolicy(prune=False))
    race.trials["joint/seed-0"].final = 80.0
    race.trials["direct/seed-0"].final = 10.0
    race.trials["direct/seed-1"].history = [(0.1, 5.0), (0.5, 6.0), (0.9, 7.0)]
    assert race.ready(["direct/seed-1", "joint/seed-1"]) == ["direct/seed-1", "joint/seed-1"]
    assert race.should_stop("direct/seed-1") is None and not race.skipped_cells


def test_a_training_behind_at_the_same_share_is_stopped_with_its_reason():
    race = Race(_trials(("direct", "joint"), seeds=1), RacePolicy(min_share=0.3, min_checks=3, min_margin=2.0))
    joint = race.trials["joint/seed-0"]
    joint.history = [(0.1, 30.0), (0.2, 45.0), (0.4, 55.0), (0.6, 57.0), (0.8, 57.5)]
    joint.final = 57.5
    direct = race.trials["direct/seed-0"]
    direct.history = [(0.1, 20.0), (0.2, 35.0)]
    assert race.should_stop(direct.name) is None  # before 30% of its budget: never
    direct.history += [(0.4, 48.2)]
    reason = race.should_stop(direct.name)
    assert reason is not None and "dev check 3" in reason and "48.2 vs joint 55.0" in reason
    # close behind (within the margin) goes on
    direct.history[-1] = (0.4, 53.5)
    assert race.should_stop(direct.name) is None
    # past 90% of its run it finishes, however far behind: what is left costs little, a finished seed is a row
    direct.history = [(0.3, 20.0), (0.6, 21.0), (0.95, 22.0)]
    assert race.should_stop(direct.name) is None


def test_a_slow_starter_is_compared_at_its_own_share_not_cut_early():
    """pretrain-finetune's dev checks start after its source stage (which has no dev F1 on the target) and are placed
    at their share of its fine-tuning: its first checks are compared with the others' first checks, not with the
    plateau an early-stopping direct reached (the gpu-budget politics race cut two pretrain-finetune seeds that way,
    the method that then won on every seed)."""
    race = Race(_trials(("direct", "pretrain-finetune"), seeds=1), RacePolicy(min_margin=2.0))
    direct = race.trials["direct/seed-0"]
    direct.history = [(0.1, 30.0), (0.2, 50.0), (0.3, 57.0), (0.4, 58.6), (0.5, 58.0), (0.6, 58.1)]
    direct.final = 58.6
    slow = race.trials["pretrain-finetune/seed-0"]
    slow.history = [(0.1, 21.5), (0.2, 45.0), (0.3, 55.5)]  # 3 behind direct's plateau, 1.5 behind direct at 30%
    assert race.should_stop(slow.name) is None
    assert best_by(direct.history, 0.3) == 57.0
    # a genuinely bad one is still stopped
    slow.history = [(0.1, 10.0), (0.2, 20.0), (0.3, 30.0)]
    assert "30.0 vs direct 57.0" in race.should_stop(slow.name)


def test_a_later_seed_fills_a_worker_that_would_idle_and_stops_when_its_method_falls_out():
    race = Race(_trials(("direct", "joint"), seeds=2), RacePolicy(min_margin=2.0))
    names = ["direct/seed-0", "direct/seed-1", "joint/seed-0", "joint/seed-1"]
    assert race.ready(names) == ["direct/seed-0", "joint/seed-0"]  # no spare worker said: first seeds only
    assert race.ready(names, free=2) == ["direct/seed-0", "joint/seed-0"]
    assert race.ready(names, free=4) == names[0::2] + names[1::2]  # spare workers: later seeds beside them
    race.trials["direct/seed-0"].final, race.trials["joint/seed-0"].final = 40.0, 60.0
    assert race.out_of_race_reason("joint/seed-1") is None
    assert "direct cannot win" in race.out_of_race_reason("direct/seed-1")


def test_the_margin_grows_with_the_seed_spread():
    race = Race(_trials(("direct", "joint"), seeds=3), RacePolicy(min_margin=1.0, spread_factor=2.0))
    for i, f1 in enumerate((50.0, 56.0, 53.0)):
        race.trials[f"joint/seed-{i}"].final = f1
    assert abs(race.margin() - 6.0) < 1e-9  # 2 x std(50, 56, 53) = 6
    race.trials["direct/seed-0"].history = [(0.3, 40.0), (0.4, 46.0), (0.5, 49.5)]
    assert race.should_stop("direct/seed-0") is None  # 53 - 49.5 is inside 6 points


def test_the_deadline_cuts_what_cannot_finish_and_ends_the_grid():
    now = [1000.0]
    race = Race([Trial("direct/seed-0", "direct", 0, minutes=3.0), Trial("joint/seed-0", "joint", 0, minutes=12.0),
                 Trial("direct/seed-1", "direct", 1, minutes=3.0)],
                RacePolicy(deadline=1000.0 + 10 * 60), clock=lambda: now[0])
    assert race.ready(["joint/seed-0", "direct/seed-0"]) == ["direct/seed-0"]  # the cheap one first; joint cannot fit
    assert race.skipped_cells["joint/seed-0"].startswith("cut by --time_budget: ~12.0 min")
    assert not race.expired()
    now[0] += 11 * 60
    assert race.expired()


def test_the_controller_stops_skips_records_and_ends(tmp_path):
    now = [0.0]
    progress = {"direct/seed-0": {"dev": []}, "joint/seed-0": {"dev": []}}
    finals: dict[str, float] = {}
    race = Race(_trials(("direct", "joint"), seeds=2), RacePolicy(deadline=3600.0), clock=lambda: now[0])
    control = RaceController(race, tmp_path, final=finals.get, progress=progress.get, minutes=lambda n: 5.0)

    class C:  # a grid cell: its name and folder
        def __init__(self, name):
            self.name = name

        def folder(self, out):
            return tmp_path / "cells" / self.name

        def result_path(self, out):
            return self.folder(out) / "results.json"

    launched = control.ready([C(n) for n in ("direct/seed-0", "joint/seed-0", "direct/seed-1", "joint/seed-1",
                                             "dapt/domain")])
    # a DAPT run (no dev F1: not a raced trial) starts as the grid plans it, before the seeds, and is never stopped
    assert [c.name for c in launched] == ["dapt/domain", "direct/seed-0", "joint/seed-0"]
    finals["joint/seed-0"] = 70.0  # percent: the caller's `final` reads it so
    progress["joint/seed-0"] = {"dev": [[0.2, 0.5], [0.5, 0.65], [0.9, 0.7]]}
    progress["direct/seed-0"] = {"dev": [[0.2, 0.3], [0.3, 0.35], [0.4, 0.4]]}
    stops = control.poll()
    assert [name for name, _ in stops] == ["direct/seed-0"] and "40.0 vs joint 50.0 at the same share" in stops[0][1]
    assert control.poll() == stops  # asked again while its process has not ended (it may still be starting)
    ended = C("direct/seed-0").folder(tmp_path)
    ended.mkdir(parents=True)
    (ended / "runs.jsonl").write_text('{"seconds": 1.0, "status": "stopped"}\n')  # the grid's record of its end
    assert control.poll() == []  # ended: not asked again
    launched = control.ready([C("direct/seed-1"), C("joint/seed-1")])
    assert [c.name for c in launched] == ["joint/seed-1"]
    assert "first seed direct/seed-0 was stopped" in control.skipped()["direct/seed-1"]
    record = read_race(tmp_path)
    assert record == json.loads((tmp_path / RACE).read_text()) and "direct/seed-0" in record["stopped"]
    assert not control.done()
    now[0] = 3600.0
    assert control.done()
    assert [n for n, r in control.poll() if "--time_budget" in r] == ["joint/seed-1"]


def test_a_running_leader_counts_once_it_trained_past_the_same_share():
    """ASHA's rung, by share: two first seeds running side by side are compared at the share both have reached;
    a leader still short of it has nothing to compare yet."""
    race = Race(_trials(("direct", "joint"), seeds=1), RacePolicy(min_margin=2.0))
    joint, direct = race.trials["joint/seed-0"], race.trials["direct/seed-0"]
    direct.history = [(0.1, 10.0), (0.2, 12.0), (0.4, 15.0)]
    joint.history = [(0.1, 30.0), (0.3, 45.0)]  # ahead, but only to 30% of its budget
    assert race.should_stop(direct.name) is None
    joint.history.append((0.45, 50.0))  # past 40% now: its best by 40% is 45.0
    assert "15.0 vs joint 45.0 at the same share" in race.should_stop(direct.name)
    assert race.should_stop(joint.name) is None  # the one ahead is never stopped by the one behind


def test_the_controller_releases_no_more_cells_than_the_grid_has_workers(tmp_path):
    """A cell that becomes ready later (the fine-tuning after a DAPT run) still gets its turn in the race's order:
    cells are released as workers free up, never all at once."""
    race = Race(_trials(("direct", "joint", "dapt-domain/direct"), seeds=1), RacePolicy(prune=False))
    control = RaceController(race, tmp_path, final=lambda n: None, progress=lambda n: None, slots=2)

    class C:
        def __init__(self, name):
            self.name = name

        def folder(self, out):
            return tmp_path / "cells" / self.name

        def result_path(self, out):
            return self.folder(out) / "results.json"

    assert [c.name for c in control.ready([C("corpora"), C("direct/seed-0"), C("joint/seed-0")])] == [
        "corpora", "direct/seed-0"]
    assert control.ready([C("joint/seed-0")]) == []  # both workers taken
    ended = C("corpora").folder(tmp_path)
    ended.mkdir(parents=True)
    (ended / "runs.jsonl").write_text('{"seconds": 1.0, "status": "done"}\n')
    assert [c.name for c in control.ready([C("dapt/domain"), C("joint/seed-0")])] == ["dapt/domain"]
