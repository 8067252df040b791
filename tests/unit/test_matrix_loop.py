"""The repetition loop (matrix.run) with a fake executor: order, warm-up, resume,
interrupt, adaptive repetitions and refusals, on a real SQLite store, without root."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fsbench.analysis.aa_check import label
from fsbench.analysis.decisions import Decision
from fsbench.analysis.design import Design
from fsbench.analysis.verdicts import decide_rows
from fsbench.execute import loop as matrix
from fsbench.execute.schedule import Slot
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.reports import source
from fsbench.store.results import Store
from fsbench.workloads.base import Scale
from tests.fakes import FakeExecutor, Measure, Ran, steady


def _plan(labels: tuple[str, ...] = ("A", "B"), **update: object) -> Plan:
    p = Plan(
        fs=[FsConfig(type="ext4", label=lab) for lab in labels],
        workload=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps=3,
        seed=5,
    )
    return p.model_copy(update=update)


def _run(
    store: Store, p: Plan, executor: FakeExecutor | None = None, resume: int | None = None
) -> tuple[matrix.Outcome, FakeExecutor]:
    cells = planning.expand(p)
    executor = executor or FakeExecutor(p, cells)
    outcome = matrix.run(
        p,
        cells,
        store,
        argv=["fsbench", "run"],
        overrides={},
        executor=executor,
        resume_run=resume,
    )
    return outcome, executor


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "results.db")


def _verdict(store: Store, run_id: int, metric: str = "seconds") -> Decision | None:
    rows = [r for r in source.load(store, run_id).rows if r.metric == metric]
    return decide_rows([(r.config, r) for r in rows], Design())


def slow_after_other_work(factor: float = 4.0, noise: float = 0.02) -> Measure:
    """This machine's trap: the first trial after other work (nothing, or another
    workload) runs `factor` times slower; the next ones run at full speed."""
    rng = random.Random(3)

    def measure(ran: Ran) -> float:
        base = 1.0 * (1 + rng.gauss(0, noise))
        follows_other = ran.previous is None or ran.previous.group != ran.slot.group
        return base * factor if follows_other else base

    return measure


def test_the_first_trial_after_other_work_is_a_warmup_so_aa_has_no_winner(
    store: Store,
) -> None:
    p = _plan()
    cells = planning.expand(p)
    outcome, ex = _run(store, p, FakeExecutor(p, cells, slow_after_other_work()))
    trials = store.get_trials(outcome.run_id)
    assert len(trials) == 2 * (3 + 1)
    first = min(trials, key=lambda t: t.seq)
    assert first.warmup and first.metrics[0].value > 3  # the slow one is not counted
    verdict = _verdict(store, outcome.run_id)
    assert verdict is not None and verdict.kind != "order", verdict
    rows = [r for r in source.load(store, outcome.run_id).rows if r.metric == "seconds"]
    assert all(r.n == 3 and len(r.warmup_values) == 1 for r in rows)
    means = [r.mean or 0 for r in rows]
    assert max(means) / min(means) < 1.1


def _two_workloads(labels: tuple[str, ...] = ("A", "B")) -> Plan:
    return _plan(labels).model_copy(
        update={
            "workloads": [
                WorkloadSpec(name="fs_mark"),
                WorkloadSpec(name="alloc", params={"method": "write-4k"}),
            ]
        }
    )


def test_old_order_names_a_false_winner_on_the_same_machine(store: Store) -> None:
    """The tests have teeth: the slow-first machine, with the order of the first version
    (rep 1 of every cell in plan order, then rep 2...: fs_mark A, fs_mark B, alloc A,
    alloc B), calls identical configs apart; through matrix.run it does not."""
    p = _two_workloads()
    cells = planning.expand(p)
    ex = FakeExecutor(p, cells, slow_after_other_work())
    old_order = [
        Slot(seq=rep * len(cells) + i, rep=rep + 1, position=i + 1, group=i // 2, cell=cell)
        for rep in range(3)
        for i, cell in enumerate(cells)
    ]
    run_id = store.create_run(
        name="old",
        fsbench_version="0",
        argv=[],
        plan=p.model_dump(mode="json", by_alias=True),
        overrides={},
        schedule=[],
        host={},
        target={},
    )
    ex.run(
        old_order, set(), lambda slot: None, lambda slot, recs: store.record_trials(run_id, recs)
    )
    old = decide_rows(
        [
            (r.config, r)
            for r in source.load(store, run_id).rows
            if r.metric == "seconds" and r.workload == "alloc"
        ],
        Design(),
    )
    assert old is not None and old.kind == "order" and old.best == "B"

    outcome, _ = _run(store, p, FakeExecutor(p, cells, slow_after_other_work()))
    new = decide_rows(
        [
            (r.config, r)
            for r in source.load(store, outcome.run_id).rows
            if r.metric == "seconds" and r.workload == "alloc"
        ],
        Design(),
    )
    assert new is not None and new.kind != "order"


def test_a_place_effect_is_balanced_and_flagged(store: Store) -> None:
    """Whoever runs first in a round is 20% slower: both configs pay equally often (no
    winner), and the rows say the order moved the results."""
    p = _plan(("A", "B"), reps=6)
    rng = random.Random(9)

    def first_place_slow(ran: Ran) -> float:
        return (1.2 if ran.slot.position == 1 else 1.0) * (1 + rng.gauss(0, 0.01))

    outcome, ex = _run(store, p, FakeExecutor(p, planning.expand(p), first_place_slow))
    counted = [s for s in ex.ran if not s.warmup]
    firsts = [s.cell.config.display for s in counted if s.position == 1]
    assert firsts.count("A") == firsts.count("B") == 3
    rows = [r for r in source.load(store, outcome.run_id).rows if r.metric == "seconds"]
    assert all("order-effect" in r.flags for r in rows), [r.flags for r in rows]
    verdict = _verdict(store, outcome.run_id)
    assert verdict is not None and verdict.kind != "order"


def test_no_order_effect_flag_on_a_steady_machine(store: Store) -> None:
    p = _plan(("A", "B", "C"), reps=6)
    outcome, _ = _run(store, p, FakeExecutor(p, planning.expand(p), steady(noise=0.02)))
    rows = source.load(store, outcome.run_id).rows
    assert not any("order-effect" in r.flags for r in rows)


def test_order_and_seed_are_recorded_and_replayed(store: Store) -> None:
    p = _plan(("A", "B", "C"), seed=None)
    outcome, ex = _run(store, p)
    run = store.get_run(outcome.run_id)
    seed = run.plan["seed"]
    assert isinstance(seed, int)
    assert run.schedule == [(s.rep, s.cell.key) for s in ex.ran]
    again, ex2 = _run(store, p.model_copy(update={"seed": seed}))
    assert [s.cell.key for s in ex2.ran] == [s.cell.key for s in ex.ran]
    trials = store.get_trials(outcome.run_id)
    assert {t.position for t in trials} == {1, 2, 3}
    assert all(t.previous_cell for t in trials[1:])


def test_interrupt_keeps_finished_trials_and_resume_finishes_once(store: Store) -> None:
    p = _plan(("A", "B", "C"))
    cells = planning.expand(p)
    first = FakeExecutor(p, cells, interrupt_at=5)
    outcome, _ = _run(store, p, first)
    assert outcome.interrupted
    assert first.opened == first.closed == 1  # released on the interrupt path
    run = store.get_run(outcome.run_id)
    assert run.status == "interrupted"
    assert len(store.get_trials(outcome.run_id)) == 5
    stored_plan = Plan.model_validate(run.plan)  # as `fsbench run --resume` reads it
    second = FakeExecutor(stored_plan, planning.expand(stored_plan, run.overrides))
    resumed, _ = _run(store, stored_plan, second, resume=outcome.run_id)
    assert not resumed.interrupted and resumed.run_id == outcome.run_id
    assert second.preflights == 1  # a resumed run is checked like a fresh one
    trials = store.get_trials(outcome.run_id)
    # Every scheduled slot once, and one warm-up added where the resumed run started.
    assert sorted(t.seq for t in trials) == list(range(3 * 4 + 1))
    added = next(t for t in trials if t.seq == 3 * 4)
    assert added.warmup and second.ran[0].seq == added.seq
    assert store.get_run(outcome.run_id).status == "finished"
    # The resumed slots are exactly those the first part did not run, in the same order.
    assert [s.seq for s in second.ran[1:]] == list(range(5, 12))


def test_an_error_marks_the_run_failed(store: Store) -> None:
    p = _plan()

    def broken(ran: Ran) -> float:
        raise RuntimeError("the executor broke")

    with pytest.raises(RuntimeError):
        _run(store, p, FakeExecutor(p, planning.expand(p), broken))
    assert store.get_run(store.latest_run_id() or 0).status == "failed"


def test_a_refused_config_is_asked_once(store: Store) -> None:
    p = _plan(("A", "B"))
    ex = FakeExecutor(p, planning.expand(p), refuse={"B"})
    outcome, _ = _run(store, p, ex)
    trials = store.get_trials(outcome.run_id)
    refused = [t for t in trials if t.config == "B"]
    assert len(refused) == 1 and refused[0].status == "unsupported"
    row = next(r for r in source.load(store, outcome.run_id).rows if r.config == "B")
    assert row.status == "unsupported"


def _noisy_for(config: str, noise: float) -> Measure:
    rng = random.Random(4)

    def measure(ran: Ran) -> float:
        sd = noise if ran.slot.cell.config.display == config else 0.001
        return 1.0 + rng.gauss(0, sd)

    return measure


def test_reps_auto_goes_on_while_a_cell_is_noisy(store: Store) -> None:
    p = _plan(("A", "B"), reps="auto", max_reps=6)
    outcome, ex = _run(store, p, FakeExecutor(p, planning.expand(p), _noisy_for("B", 0.3)))
    run = store.get_run(outcome.run_id)
    counted = [s for s in ex.ran if not s.warmup]
    # The group goes on together (balanced), up to max_reps.
    assert len([s for s in counted if s.cell.config.display == "A"]) == 6
    conv = run.convergence
    b = next(v for k, v in conv.items() if k.startswith("B|"))
    assert b["converged"] is False and b["reps"] == 6 and b["reason"]
    rows = source.load(store, outcome.run_id).rows
    assert "not-converged" in next(r for r in rows if r.config == "B").flags


def test_reps_auto_stops_a_steady_group_at_three(store: Store) -> None:
    p = _plan(("A", "B"), reps="auto", max_reps=6)
    outcome, ex = _run(store, p, FakeExecutor(p, planning.expand(p), steady(noise=0.001)))
    assert len([s for s in ex.ran if not s.warmup]) == 2 * 3
    conv = store.get_run(outcome.run_id).convergence
    assert all(v["converged"] and v["reps"] == 3 for v in conv.values())


def test_reps_auto_never_calls_a_cell_without_its_metric_converged(store: Store) -> None:
    """A cell whose trials report no headline metric is flagged, not silently stopped."""
    p = _plan(("A", "B"), reps="auto", max_reps=5)
    ex = FakeExecutor(p, planning.expand(p), steady(), metric="not_a_headline_metric")
    outcome, _ = _run(store, p, ex)
    conv = store.get_run(outcome.run_id).convergence
    assert conv and all(not v["converged"] for v in conv.values())
    assert all(v["reason"] == "no headline metric reported" for v in conv.values())
    rows = source.load(store, outcome.run_id).rows
    assert all("not-converged" in r.flags for r in rows)


def test_max_reps_below_three_is_refused() -> None:
    with pytest.raises(ValueError, match="max_reps 2: at least 3"):
        _plan(reps="auto").model_validate({**_plan().model_dump(by_alias=True), "max_reps": 2})


def test_calibration_labels() -> None:
    assert label("ext4", "A") == "ext4 (A)"


def test_a_resumed_run_starts_with_a_warmup_so_the_restart_counts_for_nobody(
    store: Store,
) -> None:
    """Killed mid-group and resumed: the first trial of the new process is slow (nothing
    warmed the machine); it is an added warm-up, of the cell the schedule runs just before
    the first pending slot, so the counted trials are what they would have been."""
    p = _plan(("A", "B"), reps=4)
    cells = planning.expand(p)
    first = FakeExecutor(p, cells, slow_after_other_work(), interrupt_at=5)
    outcome, _ = _run(store, p, first)
    stored_plan = Plan.model_validate(store.get_run(outcome.run_id).plan)
    second = FakeExecutor(stored_plan, cells, slow_after_other_work())
    _run(store, stored_plan, second, resume=outcome.run_id)
    schedule = {s.seq: s for s in matrix.slots_of(stored_plan, cells)}
    added = second.ran[0]
    assert added.warmup and added.seq not in schedule
    assert added.cell.key == schedule[second.ran[1].seq - 1].cell.key
    trials = store.get_trials(outcome.run_id)
    slow = [t for t in trials if t.metrics[0].value > 3]
    assert {t.seq for t in slow} == {0, added.seq} and all(t.warmup for t in slow)
    verdict = _verdict(store, outcome.run_id)
    assert verdict is not None and verdict.kind != "order", verdict
    rows = [r for r in source.load(store, outcome.run_id).rows if r.metric == "seconds"]
    assert sorted(r.n for r in rows) == [4, 4]


def test_reps_auto_in_fresh_guests_warms_each_round(store: Store) -> None:
    """An executor whose every call boots a fresh machine (the VM target): each adaptive
    round handed to it starts with a warm-up, so no round's first trial is counted."""
    p = _plan(("A", "B"), reps="auto", max_reps=6)
    cells = planning.expand(p)
    ex = FakeExecutor(p, cells, slow_after_other_work(noise=0.2), fresh=True)
    outcome, _ = _run(store, p, ex)
    trials = store.get_trials(outcome.run_id)
    counted = [t for t in trials if not t.warmup]
    assert len({t.rep for t in counted}) > 3  # the noise made it go on
    assert all(t.metrics[0].value < 3 for t in counted)  # every slow first was a warm-up
    rounds = len({t.rep for t in counted}) - 3  # the adaptive ones, each with a warm-up
    assert len([t for t in trials if t.warmup]) == 2 + rounds


def test_a_workload_that_warms_nothing_gets_no_warmup_even_on_a_fresh_start(
    store: Store,
) -> None:
    crash = WorkloadSpec(name="crash", params={"pattern": "fsync-append"})
    p = _plan(workloads=[crash], reps=2)
    cells = planning.expand(p)
    outcome, ran = _run(store, p, FakeExecutor(p, cells, fresh=True))
    assert [s.rep for s in ran.ran] == [1, 1, 2, 2]  # no warm-up round, no re-warm
    first, _ = _run(store, p, FakeExecutor(p, cells, interrupt_at=1))
    assert first.interrupted
    _, resumed = _run(store, p, FakeExecutor(p, cells), resume=first.run_id)
    assert [s.rep for s in resumed.ran] == [1, 2, 2]  # where it stopped, nothing warmed


def test_a_round_that_slows_every_config_is_flagged_by_its_round(store: Store) -> None:
    """Round 3 runs 25% slower for every config: the rows say that round moved every
    config."""
    p = _plan(("A", "B", "C"), reps=6)
    rng = random.Random(12)

    def round_three_slow(ran: Ran) -> float:
        return (1.25 if ran.slot.rep == 3 else 1.0) * (1 + rng.gauss(0, 0.01))

    outcome, _ = _run(store, p, FakeExecutor(p, planning.expand(p), round_three_slow))
    rows = [r for r in source.load(store, outcome.run_id).rows if r.metric == "seconds"]
    flags = [r.flags.get("order-effect", "") for r in rows]
    assert all(f.startswith("round 3 moved every config") for f in flags), flags
