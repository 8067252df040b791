"""`--reps decide`, the default: the repetition loop (matrix.run, a fake executor, a real
SQLite store) spends rounds where the answer is still open and stops where it is not;
and what a person sees of the run agrees with itself (banner and page counts, progress
lines, per-column notes, the order design's completeness)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fsbench.execute import loop as matrix
from fsbench.execute.hooks import Hooks
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.reports import source
from fsbench.reports.html.summary import summary_html
from fsbench.reports.tables import budget_line, build_tables, order_design_line
from fsbench.store import runkinds
from fsbench.store.griddesign import GridDesign
from fsbench.store.results import Store
from fsbench.workloads.base import Scale
from tests.fakes import FakeExecutor, Ran


def _plan(labels: tuple[str, ...], workload: str = "alloc", **update: object) -> Plan:
    params = {"method": "write-4k"} if workload == "alloc" else {}
    p = Plan(
        fs=[FsConfig(type="ext4", label=lab) for lab in labels],
        workload=[WorkloadSpec(name=workload, params=params)],
        scale=Scale.TINY,
        seed=5,
    )
    return p.model_copy(update=update)


def _run(store: Store, p: Plan, measure: object) -> int:
    cells = planning.expand(p)
    outcome = matrix.run(
        p,
        cells,
        store,
        argv=["fsbench", "run"],
        overrides={},
        executor=FakeExecutor(p, cells, measure),  # type: ignore[arg-type]
    )
    return outcome.run_id


def by_label(means: dict[str, float], cv: float, seed: int = 1) -> object:
    rng = random.Random(seed)

    def measure(ran: Ran) -> float:
        mean = means[ran.slot.cell.config.display]
        return rng.gauss(mean, cv * mean)

    return measure


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "r.db")


def counted_reps(store: Store, run_id: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in store.get_trials(run_id):
        if not t.warmup:
            out[t.config] = max(out.get(t.config, 0), t.rep)
    return out


def test_the_default_is_decide_and_a_plain_difference_stops_at_three(store: Store) -> None:
    p = _plan(("a", "b"))
    assert p.reps == "decide" and p.max_reps == 10
    run_id = _run(store, p, by_label({"a": 1.0, "b": 2.0}, 0.01))
    assert counted_reps(store, run_id) == {"a": 3, "b": 3}
    report = source.load(store, run_id)
    (decision,) = [d for d in report.decisions.values() if d.metric == "seconds"]
    assert decision.kind == "order" and decision.best == "a"


def test_an_open_question_gets_more_rounds_up_to_the_maximum(store: Store) -> None:
    p = _plan(("a", "b"), max_reps=6)
    run_id = _run(store, p, by_label({"a": 1.0, "b": 1.08}, 0.10, seed=2))
    assert counted_reps(store, run_id) == {"a": 6, "b": 6}
    report = source.load(store, run_id)
    (decision,) = report.decisions.values()
    (pair,) = decision.pairs
    if pair.kind == "undecided":
        assert pair.needed is None or pair.needed > 6


def test_exact_counts_decide_at_two(store: Store) -> None:
    """Counts that do not vary (extents read through FIEMAP): two rounds answer them."""
    p = _plan(("a", "b"))
    cells = planning.expand(p)
    values = {"a": 2.0, "b": 3.0}
    ex = FakeExecutor(p, cells, lambda ran: values[ran.slot.cell.config.display])
    ex.metric, ex.unit = "extents", "count"
    outcome = matrix.run(p, cells, store, argv=[], overrides={}, executor=ex)
    assert counted_reps(store, outcome.run_id) == {"a": 2, "b": 2}
    (decision,) = source.load(store, outcome.run_id).decisions.values()
    assert decision.kind == "order" and decision.ranking == "a < b (1.5×)"
    # The same count with a timing's unit waits for three rounds.
    other = _run(store, _plan(("a", "b")), lambda ran: values[ran.slot.cell.config.display])
    assert counted_reps(store, other) == {"a": 3, "b": 3}


def test_a_fixed_design_keeps_its_reps(store: Store) -> None:
    p = _plan(("a", "b"), reps=4)
    run_id = _run(store, p, by_label({"a": 1.0, "b": 2.0}, 0.01))
    assert counted_reps(store, run_id) == {"a": 4, "b": 4}


def test_a_budget_stops_the_rounds_of_an_open_question(store: Store) -> None:
    """No time left past the first rounds: three rounds, however open the answer."""
    p = _plan(("a", "b"), budget=1e-6)
    run_id = _run(store, p, by_label({"a": 1.0, "b": 1.08}, 0.10))
    assert counted_reps(store, run_id) == {"a": 3, "b": 3}


def test_a_lone_config_still_gets_its_timing_repetitions(store: Store) -> None:
    p = _plan(("a",))
    run_id = _run(store, p, by_label({"a": 1.0}, 0.05))
    assert counted_reps(store, run_id) == {"a": 3}


def test_the_page_counts_cells_and_trials_as_the_banner_does(store: Store) -> None:
    """A chain's steps are one cell and one trial, as `fsbench run` announces them."""
    p = _plan(("a", "b"), workload="untar+tree-read", reps=2)
    cells = planning.expand(p)
    run_id = _run(store, p, by_label({"a": 1.0, "b": 2.0}, 0.01))
    report = source.load(store, run_id)
    page = summary_html(build_tables(report.rows), report.rows, report.trials, report.decisions)
    slots = len(matrix.slots_of(p, cells))
    assert len(report.trials) == 2 * slots  # one record per step
    assert f'<div class="n">{len(cells)}</div><div class="l">cells</div>' in page
    assert f'<div class="n">{slots}</div><div class="l">trials (2 warm-up)</div>' in page


def test_a_progress_line_names_no_unset_parameter() -> None:
    p = Plan(fs=[FsConfig(type="ext4")], workload=[WorkloadSpec(name="fio")], scale=Scale.TINY)
    (cell,) = planning.expand(p)
    assert "None" not in cell.describe() and "profile=" in cell.describe()


def test_the_power_note_of_a_metric_column_is_its_own(store: Store) -> None:
    from fsbench.analysis.rows import Row
    from fsbench.analysis.stats import min_detectable, reps_needed
    from tests.unit.test_reports_ranking import make_row

    def row(config: str, values: list[float], **kw: str) -> Row:
        r = make_row(config, values, **kw)
        r.min_detectable = min_detectable(r.sd, r.mean, r.n)
        r.reps_for_5pct = reps_needed(abs(r.cv) if r.cv else None, 0.05)
        return r

    rows = [
        row("a", [1.0, 1.01, 0.99]),
        row("a", [0.0, 0.0, 0.0], metric="frag_pct", unit="%"),
        row("b", [2.0, 2.02, 1.98]),
        row("b", [0.0, 0.1, 0.0], metric="frag_pct", unit="%"),
    ]
    (table,) = build_tables(rows, all_metrics=True)
    notes = [n for n in table.footnotes if "power" in n]
    seconds = next(n for n in notes if n.startswith("seconds:"))
    assert "±3.0%" in seconds, seconds  # its own noise, not the zeros' hundreds of percent
    assert any(n.startswith("frag_pct:") for n in notes)


def test_the_header_says_whether_the_order_design_was_complete(store: Store) -> None:
    from tests.unit.test_reports_ranking import make_row

    three = [make_row(c, [1.0, 1.1, 0.9]) for c in ("a", "b", "c")]
    assert order_design_line(three).startswith("order design: incomplete in 1 of 1")
    six = [make_row(c, [1.0, 1.1, 0.9, 1.0, 1.1, 0.9]) for c in ("a", "b", "c")]
    assert order_design_line(six).startswith("order design: complete")
    pair = [make_row(c, [1.0, 1.1]) for c in ("a", "b")]
    assert order_design_line(pair).startswith("order design: complete")


def test_with_a_budget_every_group_gets_its_minimum_before_any_gets_more(
    store: Store,
) -> None:
    """The budget is shared once what every group's first rounds cost is known: the open
    group's extra rounds come after all first rounds, behind a warm-up trial of their
    own (it is taken up again after other work)."""
    p = _plan(("a", "b"), budget=3600.0, max_reps=10).model_copy(
        update={
            "workloads": [WorkloadSpec(name="alloc", params={"method": ["write-4k", "fallocate"]})]
        }
    )
    rng = random.Random(4)

    def measure(ran: Ran) -> float:
        method = ran.slot.cell.params["method"]
        base = 1.0 if ran.slot.cell.config.display == "a" else 2.0
        if method == "write-4k":  # open at n = 3: 15% apart in 6% noise
            base = 1.0 if ran.slot.cell.config.display == "a" else 1.15
            return rng.gauss(base, 0.06 * base)
        return rng.gauss(base, 0.01 * base)

    cells = planning.expand(p)
    ex = FakeExecutor(p, cells, measure)
    matrix.run(p, cells, store, argv=[], overrides={}, executor=ex)
    ran = ex.ran
    methods = [s.cell.params["method"] for s in ran]
    extra = [i for i, s in enumerate(ran) if s.rep > 3]
    assert extra, "the open group got no extra round"
    firsts = [i for i, s in enumerate(ran) if 0 < s.rep <= 3]
    assert max(firsts) < min(extra)  # every group's minimum first
    assert {methods[i] for i in extra} == {"write-4k"}  # only the open group
    before = ran[min(extra) - 1]
    assert before.warmup and before.cell.params["method"] == "write-4k"  # a warm-up first
    assert max(s.rep for s in ran if s.cell.params["method"] == "fallocate") == 3


def test_a_budget_is_not_spent_where_no_round_within_max_reps_would_settle(
    store: Store,
) -> None:
    """Identical configs in 30% noise: no n within max-reps settles them; the budget is
    kept for groups it can settle, not spent on a hopeless one."""
    p = _plan(("a", "b"), budget=3600.0, max_reps=6)
    run_id = _run(store, p, by_label({"a": 1.0, "b": 1.0}, 0.30))
    assert counted_reps(store, run_id) == {"a": 3, "b": 3}


def test_a_resumed_decided_run_keeps_the_plan_and_the_time_it_made(store: Store) -> None:
    """Interrupted after its projection and first rounds, then resumed: the looks planned
    before the first counted round stay what they were (the boundaries were computed for
    them), no projection runs again, and the time spent before counts against the budget."""
    from fsbench.execute.executors.replay import CellModel, MetricModel, ReplayExecutor, StepModel

    p = _plan(("a", "b", "c"), workload="fs_mark", budget=120.0, max_reps=8)
    cells = planning.expand(p)
    means = {"a": 1000.0, "b": 1020.0, "c": 1040.0}
    models = {
        c.key: CellModel(
            3.0,
            (
                StepModel(
                    "fs_mark",
                    (
                        MetricModel(
                            "files_per_s", "files/s", "higher", means[c.config.display], 0.05
                        ),
                    ),
                    ("files_per_s",),
                ),
            ),
        )
        for c in cells
    }
    first = ReplayExecutor(p, cells, models, seed=3)
    calls = {"n": 0}
    original = first.run

    def interrupting(slots, refused, on_start, on_records):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 6:  # projection (a warm-up a cell), warm-up, rounds 1-2: Ctrl-C
            raise KeyboardInterrupt
        return original(slots, refused, on_start, on_records)

    first.run = interrupting  # type: ignore[method-assign]
    outcome = matrix.run(p, cells, store, argv=[], overrides={}, executor=first, clock=first.clock)
    assert outcome.interrupted
    planned = runkinds.design(store.get_run(outcome.run_id))
    assert planned.cells and planned.spent_s and planned.spent_s > 0
    second = ReplayExecutor(p, cells, models, seed=4)
    second.clock.now = first.clock.now  # the machine's time goes on
    again = matrix.run(
        p,
        cells,
        store,
        argv=[],
        overrides={},
        executor=second,
        resume_run=outcome.run_id,
        clock=second.clock,
    )
    design = runkinds.design(store.get_run(again.run_id))
    assert design.cells == planned.cells and design.groups == planned.groups
    assert design.spent_s is not None and design.spent_s >= planned.spent_s
    trials = store.get_trials(again.run_id)
    warmups = {t.seq for t in trials if t.warmup}
    extra = any(t.rep > 3 for t in trials)
    # The projection's three (a cell each) and the one before the first rounds, one on
    # resume, and one before extra rounds if there were any: no second projection.
    assert len(warmups) == 5 + extra


def test_looks_the_warm_ups_overstated_are_shared_out_again_before_any_look(
    store: Store,
) -> None:
    """A first run projects from warm-up trials, slower here than counted ones (fio's three
    times). Planned from them, the budget buys the minimum only; after the minimum rounds,
    before any look, the looks are shared out again from what the rounds cost, and the run
    keeps both plans' facts."""
    from fsbench.execute.executors.replay import CellModel, MetricModel, ReplayExecutor, StepModel

    p = _plan(("a", "b", "c"), workload="fs_mark", budget=120.0, max_reps=8)
    cells = planning.expand(p)
    metric = MetricModel("files_per_s", "files/s", "higher", 1000.0, 0.05)
    step = StepModel("fs_mark", (metric,), ("files_per_s",))
    models = {c.key: CellModel(3.0, (step,), warmup_seconds=9.0) for c in cells}
    executor = ReplayExecutor(p, cells, models, seed=3)
    notes: list[str] = []

    class Noting(Hooks):
        def note(self, text: str) -> None:
            notes.append(text)

    hooks = Noting()
    outcome = matrix.run(
        p, cells, store, argv=[], overrides={}, executor=executor, clock=executor.clock,
        hooks=hooks,
    )  # fmt: skip
    design = runkinds.design(store.get_run(outcome.run_id))
    # Projected: a 9 s warm-up a config, so 27 s a round; 27 + 9 + 3 x 27 = 117 s of 120:
    # no extra look.
    assert any(line.startswith("  fs_mark (3 configs, 27 s a round): n = 3") for line in notes)
    # Measured: 27 + 9 + 3 x 9 = 63 s; 57 s left buy a warm-up and five rounds of 9 s,
    # up to max-reps.
    assert design.replanned_s == 63.0
    assert design.groups[0].round_s == 9.0 and design.groups[0].n_max == 8
    assert "re-plan after the minimum rounds: 63 s spent, 57 s left:" in notes
    # The warm-ups the re-plan counts (three for the projection, the group's two) are the
    # ones the run spent.
    assert design.warmup_trials == design.warmups_run == 5
    assert design.spent_s is not None and design.spent_s <= 120.0


def test_an_instrumented_pass_after_the_run_is_kept_from_its_budget(tmp_path: Path) -> None:
    """`run --explain` with a budget: the pass's projected cost (three instrumented trials
    a cell, each a counted trial's cost and the tracers' start) is reserved before the looks
    are shared out, at the plan and again at the re-plan; the counted rounds stay within
    what is left, and the run keeps the reservation."""
    from fsbench.analysis.budget import Instrumented
    from fsbench.execute.executors.replay import CellModel, MetricModel, ReplayExecutor, StepModel

    p = _plan(("a", "b", "c"), workload="fs_mark", budget=150.0, max_reps=8)
    cells = planning.expand(p)
    metric = MetricModel("files_per_s", "files/s", "higher", 1000.0, 0.05)
    step = StepModel("fs_mark", (metric,), ("files_per_s",))
    models = {c.key: CellModel(3.0, (step,)) for c in cells}
    notes: list[str] = []

    class Noting(Hooks):
        def note(self, text: str) -> None:
            notes.append(text)

    def designed(**options: object) -> GridDesign:
        # A store of its own: no earlier run's trials to project from.
        store = Store(tmp_path / f"{len(list(tmp_path.iterdir()))}.db")
        executor = ReplayExecutor(p, cells, models, seed=3)
        outcome = matrix.run(
            p, cells, store, argv=[], overrides={}, executor=executor, clock=executor.clock,
            hooks=Noting(), **options,
        )  # fmt: skip
        return runkinds.design(store.get_run(outcome.run_id))

    free = designed()
    notes.clear()
    kept = designed(instrumented=Instrumented(3, 5.0))
    # A round of three 3 s trials is 9 s: 3 x (9 + 3 x 5) = 72 s kept of 150.
    assert kept.reserved_s == 72.0 and free.reserved_s is None
    assert kept.planned_s is not None and kept.planned_s + kept.reserved_s <= 150.0
    # 150 - 72 - 9 s of projection (a 3 s warm-up a config) - the minimum's 30 s = 39 s: a
    # warm-up and four rounds more (n up to 7); without the pass the looks reach max-reps.
    assert (kept.groups[0].n_max, free.groups[0].n_max) == (7, 8)
    # Every warm-up counted: the projection's three and the group's two (9 + 2 x 3 s).
    assert notes[0] == "plan: budget 150 s, 5 warm-up trials (15 s, 3 of them run for the " \
        "projection), 78 s planned, 72 s reserved for the instrumented pass after it"  # fmt: skip
    assert kept.spent_s is not None and kept.spent_s <= 150.0 - 72.0
    # The report's header says it, and judges going over against what the rounds had.
    assert "150 s budget (72 s of it reserved for the instrumented pass)" in budget_line(kept)
    over = kept.model_copy(update={"spent_s": 100.0, "over_s": 22.0, "over_why": "slow"})
    assert ", 22 s (28%) over: slow" in budget_line(over)


def test_an_instrumented_pass_is_not_what_a_counted_trial_is_projected_from(
    store: Store,
) -> None:
    """The trials of an explain run (same host, same cells) cost the tracers' start too:
    the next decided run projects from its own warm-ups, not from them."""
    from fsbench.execute.executors.replay import CellModel, MetricModel, ReplayExecutor, StepModel

    p = _plan(("a", "b", "c"), workload="fs_mark", budget=600.0, max_reps=8)
    cells = planning.expand(p)
    metric = MetricModel("files_per_s", "files/s", "higher", 1000.0, 0.05)
    step = StepModel("fs_mark", (metric,), ("files_per_s",))

    def ran(plan: Plan, seconds: float) -> GridDesign:
        models = {c.key: CellModel(seconds, (step,)) for c in cells}
        executor = ReplayExecutor(plan, cells, models, seed=3)
        outcome = matrix.run(
            plan, cells, store, argv=[], overrides={}, executor=executor, clock=executor.clock
        )
        return runkinds.design(store.get_run(outcome.run_id))

    ran(p.model_copy(update={"instrumented": True, "reps": 3}), 30.0)  # the traced pass
    counted = ran(p, 3.0)
    # From its warm-up trial, which measures no noise (a projection from stored trials
    # states theirs), and the warm-up trial was run: the store's trials were passed over.
    assert counted.groups[0].noise is None and counted.warmup_s > 0


def test_time_a_settled_group_will_not_spend_raises_the_looks_of_an_open_one(
    store: Store,
) -> None:
    """Two groups of fs_mark: files=1000 far apart (settled at its minimum), files=2000 8%
    apart in 5% noise (open at n = 3). The re-plan gives each looks up to 5 from what is
    left; the settled group will spend none of its two, so the open group's looks are
    raised to the n its pairs need, it is said before any look, kept with the run, and
    the rounds are spent within the budget."""
    from fsbench.execute.executors.replay import CellModel, MetricModel, ReplayExecutor, StepModel

    p = _plan(("a", "b", "c"), workload="fs_mark", budget=120.0, max_reps=10).model_copy(
        update={"workloads": [WorkloadSpec(name="fs_mark", params={"files": [1000, 2000]})]}
    )
    cells = planning.expand(p)
    apart = {1000: 0.3, 2000: 0.08}  # each config this much faster than the one before
    cvs = {1000: 0.02, 2000: 0.05}

    def model(files: int, label: str) -> CellModel:
        mean = 1000.0 * (1 + apart[files] * "abc".index(label))
        metric = MetricModel("files_per_s", "files/s", "higher", mean, cvs[files])
        return CellModel(3.0, (StepModel("fs_mark", (metric,), ("files_per_s",)),), 3.0)

    models = {c.key: model(c.params["files"], c.config.display) for c in cells}
    executor = ReplayExecutor(p, cells, models, seed=18)
    notes: list[str] = []

    class Noting(Hooks):
        def note(self, text: str) -> None:
            notes.append(text)

    outcome = matrix.run(
        p, cells, store, argv=[], overrides={}, executor=executor, clock=executor.clock,
        hooks=Noting(),
    )  # fmt: skip
    design = runkinds.design(store.get_run(outcome.run_id))
    assert (
        "re-plan after the minimum rounds: 78 s spent, 42 s left; the looks stay as planned"
        in notes
    )
    raised = notes.index(
        "looks raised for open pairs that more rounds would settle, from the time the groups "
        "already answered will not spend:"
    )
    assert notes[raised + 1].startswith("  fs_mark files=2000 (3 configs, 9 s a round): n up to 7")
    assert [(g.n_max, g.wanted) for g in design.groups] == [(5, None), (7, 7)]
    assert design.reached is not None
    assert design.reached == [3, 7]  # past the re-plan's looks
    assert design.spent_s is not None and design.spent_s <= 120.0
    report = source.load(store, outcome.run_id)
    open_group = [d for d in report.decisions.values() if d.headline and "2000" in d.key[2]]
    assert [p.kind for d in open_group for p in d.pairs] == ["order"] * 3
