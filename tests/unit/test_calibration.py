"""Calibration from stored A/A trials: the noise per workload metric, the screen, and
the warning it puts on later runs of the same host and kernel."""

from __future__ import annotations

import io
import random
from pathlib import Path

from rich.console import Console

from fsbench.analysis import aa_check as calibration
from fsbench.execute import loop as matrix
from fsbench.execute import session
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.reports import source
from fsbench.reports.aa_screen import document, print_screen, resolves
from fsbench.store.results import Store
from fsbench.workloads.base import Scale
from tests.fakes import FakeExecutor, Ran


def _noisy(cv: float, seed: int, scale: dict[str, float] | None = None):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)

    def measure(ran: Ran) -> float:
        return (scale or {}).get(ran.slot.cell.config.display, 1.0) * (1 + rng.gauss(0, cv))

    return measure


def _run(store: Store, plan: Plan, measure, kind: str = "run") -> int:  # type: ignore[no-untyped-def]
    cells = planning.expand(plan)
    outcome = matrix.run(
        plan,
        cells,
        store,
        argv=["fsbench"],
        overrides={},
        executor=FakeExecutor(plan, cells, measure),
        kind=kind,
    )
    return outcome.run_id


def _base(reps: int = 5) -> Plan:
    return Plan(
        fs=[FsConfig(type="ext4"), FsConfig(type="xfs")],
        workload=[WorkloadSpec(name="alloc", params={"method": "write-4k"})],
        scale=Scale.TINY,
        reps=reps,
        seed=3,
    )


def test_the_aa_plan_is_the_first_config_twice() -> None:
    aa = calibration.aa_plan(_base())
    assert [c.display for c in aa.fs] == ["ext4 (A)", "ext4 (B)"]
    assert {c.type for c in aa.fs} == {"ext4"} and aa.fs[0].mkfs == aa.fs[1].mkfs


def test_noise_screen_and_the_warning_on_a_later_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    cal = _run(store, calibration.aa_plan(_base()), _noisy(0.05, 1), kind=calibration.KIND)
    run = store.get_run(cal)
    noise = calibration.analyze(run, store.get_trials(cal))
    assert [(n.workload, n.metric) for n in noise] == [("alloc", "seconds")]
    item = noise[0]
    assert 0.01 < item.cv < 0.15 and item.n == 5 and not item.false_winner
    assert item.resolvable(5) is not None and item.resolvable(3) > item.resolvable(5)
    assert resolves(item, 0.25, 5) == "yes"
    assert resolves(item, 0.01, 5).startswith("n=")
    out = io.StringIO()
    print_screen(Console(file=out, width=160), run, noise)
    screen = out.getvalue()
    assert "alloc" in screen and "seconds" in screen and f"{item.cv:.1%}" in screen
    assert document(run, noise)["noise"][0]["reps_for"]["0.05"] == item.reps_for(0.05)

    # ext4 vs xfs 2% apart: below what this machine resolves at n = 3 -> flagged.
    close = _run(store, _base(3), _noisy(0.05, 2, {"xfs": 1.02}))
    rows = [r for r in source.load(store, close).rows if r.metric == "seconds"]
    assert all("below-calibration" in r.flags for r in rows)
    assert f"calibration run {cal}" in rows[0].flags["below-calibration"]
    # 3x apart: clearly resolvable -> not flagged.
    far = _run(store, _base(3), _noisy(0.05, 3, {"xfs": 3.0}))
    assert not any("below-calibration" in r.flags for r in source.load(store, far).rows)


def test_identical_configs_with_an_order_trap_are_reported_as_such(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    rng = random.Random(5)

    def second_place_fast(ran: Ran) -> float:
        return (0.7 if ran.slot.position == 2 else 1.0) * (1 + rng.gauss(0, 0.01))

    plan = calibration.aa_plan(_base(reps=8))
    cal = _run(store, plan, second_place_fast, kind=calibration.KIND)
    noise = calibration.analyze(store.get_run(cal), store.get_trials(cal))
    assert noise[0].order_effect and not noise[0].false_winner


def _set_run(store: Store, run_id: int, **values: object) -> None:
    """Change what a stored run says of itself (as another host or kernel would have)."""
    import json

    from sqlalchemy import update

    from fsbench.store.schema import runs

    encoded = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in values.items()}
    with store.engine.begin() as conn:
        conn.execute(update(runs).where(runs.c.id == run_id).values(**encoded))


def test_a_calibration_speaks_only_for_its_host_kernel_and_scale(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    cal = _run(store, calibration.aa_plan(_base()), _noisy(0.05, 1), kind=calibration.KIND)
    close = _run(store, _base(3), _noisy(0.05, 2, {"xfs": 1.02}))
    assert source.load(store, close).calibration_run == cal
    quick = _run(store, _base(3).model_copy(update={"scale": Scale.QUICK}), _noisy(0.05, 2))
    assert source.load(store, quick).calibration_run is None  # calibrated at tiny only
    host = store.get_run(cal).host.stored()
    for changed in ({"kernel": "6.1.0-99-amd64"}, {"hostname": "elsewhere"}):
        _set_run(store, cal, host={**host, **changed})
        loaded = source.load(store, close)
        assert loaded.calibration_run is None
        assert not any("below-calibration" in r.flags for r in loaded.rows)
    _set_run(store, cal, host=host)
    assert source.load(store, close).calibration_run == cal


def test_false_winners_are_judged_over_the_calibrations_metrics(tmp_path: Path) -> None:
    """Identical twins: each metric's p and its Holm-adjusted p over the calibration are
    reported; a winner needs the adjusted one below 0.05, so one lucky metric of many is
    not a machine that names false winners, while a real gap still is."""
    store = Store(tmp_path / "r.db")
    cal = _run(store, calibration.aa_plan(_base(8)), _noisy(0.02, 4), kind=calibration.KIND)
    noise = calibration.analyze(store.get_run(cal), store.get_trials(cal))
    assert all(n.p is not None and n.p_family is not None and n.p_family >= n.p for n in noise)
    doc = document(store.get_run(cal), noise)["noise"][0]
    assert {"p", "p_family", "false_winner"} <= set(doc)
    twins = calibration.aa_plan(_base(8))
    biased = _run(store, twins, _noisy(0.02, 5, {twins.fs[1].display: 1.2}), kind=calibration.KIND)
    found = calibration.analyze(store.get_run(biased), store.get_trials(biased))
    assert found[0].false_winner and found[0].p_family is not None and found[0].p_family < 0.05


def test_each_fleet_host_is_checked_against_its_own_calibration(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    cal = _run(store, calibration.aa_plan(_base()), _noisy(0.05, 1), kind=calibration.KIND)
    part_of = "f" * 32
    fleet = store.create_run(
        name="fleet", fsbench_version="0", argv=[], plan=_base(3).model_dump(mode="json"),
        overrides={}, schedule=[], host={}, target={"kind": "fleet"}, kind="fleet",
        uid=part_of,
    )  # fmt: skip
    for name, seed in (("h1", 2), ("h2", 3)):
        cells = planning.expand(_base(3))
        matrix.run(
            _base(3), cells, store, argv=["fsbench"], overrides={},
            executor=FakeExecutor(_base(3), cells, _noisy(0.05, seed, {"xfs": 1.02})),
            part=session.Part(part_of, name, ("all",)),
        )  # fmt: skip
    h2 = store.part(part_of, "h2")
    assert h2 is not None
    _set_run(store, h2.id, host={**h2.host.stored(), "hostname": "another-machine"})
    rows = [r for r in source.load(store, fleet).rows if r.metric == "seconds"]
    flagged = {r.host for r in rows if "below-calibration" in r.flags}
    assert flagged == {"h1"}  # h2 ran elsewhere: this machine's calibration says nothing
    assert (
        f"calibration run {cal}"
        in next(r for r in rows if r.host == "h1").flags["below-calibration"]
    )
