"""`fsbench history --bisect N` hands a change point to fsbench bisect's own driver: the
last kernel commit before it good, the first after it bad, the same cell of the same
stored plan, the same metric. The real `Bisection` on a small git history, its builds and
guests replaced by the fakes of test_bisect_driver.py."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from fsbench.cli import planflags as pf
from fsbench.cli.app import app
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.results import Store
from tests.unit.test_bisect_driver import fakes, history  # noqa: F401 - the fixture

__all__ = ["fakes"]


def vm_runs(db: Path, shas: dict[str, str]) -> None:
    """Nightly VM runs of one cell, each booting a kernel built from the tree: 100 files/s
    up to commit `fix`, 50 from `doc2` (the `slow` commit lies between)."""
    flags = pf.PlanFlags(fs=["ext4"], workload=["fs_mark"], target_kind="vm", reps="1")
    built = pf.build(flags)
    (cell,) = built.cells
    store = Store(db)
    nights = [("base", 100.0), ("doc1", 101.0), ("fix", 99.0)] * 3 + [("doc2", 50.0),
              ("doc3", 51.0)] * 3  # fmt: skip
    for i, (name, mean) in enumerate(nights):
        rid = store.create_run(
            name="nightly", fsbench_version="0.1.0", argv=[],
            plan=built.plan.model_dump(mode="json", by_alias=True), overrides=built.overrides,
            schedule=[], host={"hostname": "h1"}, target={"kind": "vm"},
        )  # fmt: skip
        records = [
            TrialRecord(
                seq=rep,
                rep=rep,
                cell_key=cell.key,
                config=cell.config.display,
                fs="ext4",
                mkfs_options=[],
                mount_options="",
                workload="fs_mark",
                params=dict(cell.params),
                status="ok",
                knobs={"kernel": shas[name][:12]},
                metrics=[
                    MetricRecord("files_per_s", mean + (rep + i) % 3 - 1, "files/s", "higher")
                ],
                provenance={"headline": ["files_per_s"]},
            )  # fmt: skip
            for rep in range(4)
        ]
        store.record_trials(rid, records)
        store.finish_run(rid, "finished")


def test_bisect_n_bisects_between_the_commits_around_the_change(
    fakes: dict[str, float],  # noqa: F811
    tmp_path: Path,
) -> None:
    repo = tmp_path / "linux"
    shas = history(repo)
    db = tmp_path / "h.db"
    vm_runs(db, shas)
    runner = CliRunner()
    shown = runner.invoke(app, ["history", "--db", str(db), "--format", "md"])
    assert shown.exit_code == 0, shown.output
    assert "#1 worse at point 10" in shown.output and shas["fix"][:12] in shown.output
    res = runner.invoke(
        app, ["history", "--db", str(db), "--linux", str(repo), "--bisect", "1", "--max-reps", "4"]
    )
    assert res.exit_code == 0, res.output
    store = Store(db)
    (run,) = [r for r in store.list_runs() if r.kind == "bisect"]
    assert run.facts["good"] == shas["fix"] and run.facts["bad"] == shas["doc2"]
    assert run.facts["metric"] == "files_per_s"
    assert run.facts["first_bad"]["commit"] == shas["slow"]


def test_bisect_needs_commits_on_both_sides(tmp_path: Path) -> None:
    from tests.history_runs import RunSpec, stored

    db = tmp_path / "h.db"
    stored(db, [RunSpec(1000.0)] * 10 + [RunSpec(700.0)] * 5, seed=1)
    res = CliRunner().invoke(
        app, ["history", "--db", str(db), "--linux", str(tmp_path), "--bisect", "1"]
    )
    assert res.exit_code != 0
    assert "record no kernel commit on both sides" in str(res.exception)
