"""Aging on real loop filesystems: the `aging` workload's curves (aged and clean, every
stage), any workload on an aged filesystem, churn to a fullness, the user's own git
history, the layout score on known layouts, and a target with no second device."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import MountFactory, available_fs
from fsbench.execute.runner import Runner, cache_root, mount_root
from fsbench.execute.targets.blockdev import BlockDevice
from fsbench.plan import model as planning
from fsbench.plan.model import FsConfig, Plan, WorkloadSpec
from fsbench.store.results import Store
from fsbench.workloads.aging import measure
from fsbench.workloads.base import Scale
from tests.helpers import fsbench, ours

pytestmark = pytest.mark.integration

FS = [f for f in ("ext4", "xfs") if f in available_fs()]


def _run(workdir: Path, *args: str) -> dict:  # type: ignore[type-arg]
    res = fsbench(
        "run", *args, "--scale", "tiny", "--image-size", "1G",
        "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"), "--json",
        timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_aging_curves_aged_and_clean_at_every_stage(workdir: Path) -> None:
    doc = _run(workdir, "--fs", ",".join(FS), "--workload", "aging", "--reps", "2")
    rows = [r for r in doc["rows"] if r["n"]]
    for config in FS:
        mine = [r for r in rows if r["config"] == config]
        for at in (12.0, 24.0):  # tiny: 24 pulls in 2 stages
            for state in ("aged", "clean"):
                here = {
                    (r["params"]["read"], r["metric"])
                    for r in mine
                    if r["params"]["at"] == at and r["params"]["state"] == state
                }
                assert {
                    ("grep", "seconds"),
                    ("tar", "seconds"),
                    ("grep", "layout_score"),
                } <= here, (config, at, state)
                assert ("grep", "fsck_seconds") in here and ("grep", "mount_seconds") in here
            slow = [r for r in mine if r["metric"] == "aging_slowdown" and r["params"]["at"] == at]
            assert {r["params"]["state"] for r in slow} == {"clean"} and all(
                r["n"] == 2 for r in slow
            )
            # Each slowdown is its repetition's aged seconds over its clean seconds, of the
            # same stage and read. (Whether it exceeds 1 is not asserted: on this host's
            # cached disk a sub-second read of the tiny tree has no seek to pay, and the
            # paper's SSD runs saw ext4's aged and clean reads within 2% at 300 pulls.)
            for r in slow:
                secs = {
                    s: next(
                        x["values"]
                        for x in mine
                        if x["metric"] == "seconds" and x["params"] == {**r["params"], "state": s}
                    )
                    for s in ("aged", "clean")
                }
                ratios = [a / c for a, c in zip(secs["aged"], secs["clean"], strict=True)]
                assert sorted(r["values"]) == pytest.approx(sorted(ratios))
    scores = [v for r in rows if r["metric"] == "layout_score" for v in r["values"]]
    assert scores and all(0 < s <= 1 for s in scores)
    if "xfs" in FS:  # aged below clean: the paper's xfs ages (0.920 vs 0.954 at 300 pulls)
        for at, gap in ((12.0, 0.02), (24.0, 0.05)):
            aged, clean = (_scores(rows, "xfs", at, state) for state in ("aged", "clean"))
            assert max(aged) < min(clean) - gap, (at, aged, clean)
    if "ext4" in FS:
        assert any(r["metric"] == "free_extents" for r in rows if r["config"] == "ext4")
    store = Store(workdir / "r.db")
    trials = store.get_trials(doc["run"])
    aged = [t for t in trials if t.params.get("state") == "aged" and t.status == "ok"]
    age = aged[-1].provenance["age"]
    assert age["recipe"] == "git-pulls" and age["at"] == 24.0 and age["details"]["pulls"] == 24
    assert age["bytes_written"] > 0 and 0 < age["fullness"] < 1
    # The aged tree's reads went to the device (cold), on both filesystems of the stage.
    reads = [t for t in trials if t.params.get("read") == "grep" and t.status == "ok"]
    assert all(not (t.provenance.get("flags") or {}).get("not-cold") for t in reads)
    assert ours(workdir) == ([], [])  # the twin's loop device and mount went too
    assert not list((workdir / "work").glob("*.img"))


def _scores(rows: list, config: str, at: float, state: str) -> list[float]:  # type: ignore[type-arg]
    (row,) = [
        r
        for r in rows
        if r["config"] == config
        and r["metric"] == "layout_score"
        and r["params"]["at"] == at
        and r["params"]["state"] == state
    ]
    assert row["n"] == 2
    return row["values"]  # type: ignore[no-any-return]


def test_any_workload_on_an_aged_filesystem(workdir: Path) -> None:
    doc = _run(
        workdir,
        "--fs",
        "ext4",
        "--age",
        "none,git-pulls",
        "--workload",
        "fs_mark",
        "--reps",
        "1",
        "--warmup",
        "0",
    )
    ages = {r["knobs"].get("age") for r in doc["rows"]}
    assert ages == {"none", "git-pulls"}
    trials = Store(workdir / "r.db").get_trials(doc["run"])
    fresh = next(t for t in trials if t.knobs["age"] == "none")
    aged = next(t for t in trials if t.knobs["age"] == "git-pulls")
    assert "age" not in fresh.provenance and fresh.status == aged.status == "ok"
    age = aged.provenance["age"]
    assert age["params"]["pulls"] == 24 and age["params"]["seed"] == 1
    assert age["bytes_written"] > 1 << 20 and age["seconds"] > 0 and age["tree"] == "aging/repo"
    # The same seed, the same history: the head commit is a function of the seed.
    again = _run(
        workdir,
        "--fs",
        "ext4",
        "--age",
        "git-pulls",
        "--workload",
        "fs_mark",
        "--reps",
        "1",
        "--warmup",
        "0",
    )
    head = Store(workdir / "r.db").get_trials(again["run"])[0].provenance["age"]["details"]["head"]
    assert head == age["details"]["head"]


def test_churn_reaches_its_fullness(workdir: Path) -> None:
    doc = _run(
        workdir,
        "--fs",
        "ext4",
        "--age",
        "churn:fullness=0.6",
        "--workload",
        "fs_mark",
        "--reps",
        "1",
        "--warmup",
        "0",
    )
    (trial,) = Store(workdir / "r.db").get_trials(doc["run"])
    assert trial.status == "ok", trial.message
    age = trial.provenance["age"]
    assert age["recipe"] == "churn" and abs(age["fullness"] - 0.6) < 0.03
    size = age["details"]["filesystem_bytes"]
    assert age["details"]["written_bytes"] >= 1.5 * size * 0.99  # tiny: 1.5x the size
    assert age["bytes_written"] >= age["details"]["written_bytes"] * 0.5  # the device saw it


def test_the_users_own_history(workdir: Path) -> None:
    repo = workdir / "mine"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    commits = []
    for i in range(5):
        (repo / f"f{i}.txt").write_text(f"{i}\n" * (1000 * (i + 1)))
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"c{i}"], check=True)
        commits.append(
            subprocess.run(
                [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
            ).stdout.strip()
        )
    doc = _run(
        workdir,
        "--fs",
        "ext4",
        "--age",
        f"git-pulls:repo={repo}:pulls=3",
        "--workload",
        "fs_mark",
        "--reps",
        "1",
        "--warmup",
        "0",
    )
    (trial,) = Store(workdir / "r.db").get_trials(doc["run"])
    details = trial.provenance["age"]["details"]
    assert (details["first"], details["head"], details["pulls"]) == (commits[0], commits[3], 3)
    too_many = fsbench(
        "run", "--fs", "ext4", "--age", f"git-pulls:repo={repo}:pulls=9", "--workload", "fs_mark",
        "--scale", "tiny", "--reps", "1", "--warmup", "0", "--image-size", "1G",
        "--workdir", str(workdir / "work"), "--db", str(workdir / "r.db"), "--json",
        timeout=600,
    )  # fmt: skip
    assert too_many.returncode == 3  # unsupported: a result, with the reason
    row = json.loads(too_many.stdout)["rows"][0]
    assert "fewer than pulls=9" in row["message"]


@pytest.mark.parametrize("fs_name", FS)
def test_the_layout_score_of_known_layouts(make_fs: MountFactory, fs_name: str) -> None:
    mnt = make_fs(fs_name)
    block = os.statvfs(mnt).f_bsize
    (mnt / "seq").mkdir()
    with open(mnt / "seq" / "one", "wb") as f:
        f.write(os.urandom(8 << 20))
    os.sync()
    sequential = measure.layout(mnt / "seq", block)
    assert sequential.score is not None and sequential.score > 0.99
    (mnt / "mixed").mkdir()
    names = [mnt / "mixed" / f"f{i:02d}" for i in range(32)]
    for _ in range(8):  # 32 files growing a block each in turn, each write synced
        for name in names:
            with open(name, "ab") as f:
                f.write(os.urandom(block))
                f.flush()
                os.fsync(f.fileno())
    mixed = measure.layout(mnt / "mixed", block)
    assert mixed.score is not None and mixed.score < sequential.score - 0.2, mixed
    assert mixed.files == 32 and mixed.fragmented >= 16


def test_a_real_device_has_no_twin_for_the_clean_copy(loopdev: str, workdir: Path) -> None:
    plan = Plan(
        fs=[FsConfig(type="ext4")],
        workload=[WorkloadSpec(name="aging")],
        scale=Scale.TINY,
    )
    (cell,) = planning.expand(plan)
    target = BlockDevice(loopdev, destroy_data=True)  # fsbench labels what it makes: allowed
    with target:
        runner = Runner(target, mount_root(workdir), Scale.TINY, cache_root(workdir), 600)
        try:
            records = runner.run_cell(0, 1, cell)
        finally:
            runner.close()
    states = {(r.params["state"], r.status) for r in records}
    assert ("aged", "ok") in states and ("clean", "unsupported") in states
    clean = next(r for r in records if r.params["state"] == "clean")
    assert "needs a second device like the target" in clean.message
