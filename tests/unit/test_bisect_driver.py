"""The bisection's driver on a small git history with the kernel build and the guest
replaced by fakes: it marks commits through the gate, skips the one that does not build,
names the first bad commit, leaves the steps in `git bisect log`, refuses endpoints
within the noise before bisecting, and resumes a killed bisection from its log."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from fsbench.cli import planflags as pf
from fsbench.execute import session
from fsbench.store.results import Store
from fsbench.vm import bisect as driver
from fsbench.vm import kbuild
from tests.fake_bisect import git, history


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, float]:
    """Builds that fail where a file `broken` is; measurements of 100 files/s, or what a
    file `slow` says (the regression), with `noise` as CV."""
    knobs = {"noise": 0.03, "seed": 5}
    rngs: dict[float, random.Random] = {}

    def build(self: kbuild.KernelBuilder, commit: str) -> kbuild.Built:
        shown = subprocess.run(
            ["git", "-C", str(self.tree), "cat-file", "-e", f"{commit}:broken"],
            capture_output=True,
        )
        if shown.returncode == 0:
            return kbuild.Built(commit, False, 1.0, error="fsync.c:140:2: error: x")
        return kbuild.Built(commit, True, 1.0, tmp_path / "bzImage", "6.1.0")

    def measure(self: driver.Bisection, step: driver.Step, bzimage: Path, reps: int) -> None:
        slow = subprocess.run(
            ["git", "-C", str(self.git.tree), "show", f"{step.commit}:slow"],
            capture_output=True,
            text=True,
        )
        mean = float(slow.stdout) if slow.returncode == 0 else 100.0
        rng = rngs.setdefault(knobs["seed"], random.Random(knobs["seed"]))
        step.values += [rng.gauss(mean, mean * knobs["noise"]) for _ in range(reps)]
        self.better, self.unit = "higher", "files/s"

    monkeypatch.setattr(kbuild.KernelBuilder, "build", build)
    monkeypatch.setattr(driver.Bisection, "measure", measure)
    from fsbench.system import hostfacts
    from fsbench.system.hostkeys import Host

    monkeypatch.setattr(hostfacts, "host", lambda *a: Host.write({}))
    monkeypatch.setattr(driver.Bisection, "decide_accel", lambda self: ("tcg", {}))
    return knobs


def bisection(
    repo: Path, tmp_path: Path, good: str, bad: str, max_reps: int = 4
) -> driver.Bisection:
    flags = pf.PlanFlags(fs=["ext4"], workload=["fs_mark"], target_kind="vm", reps="1")
    built = pf.build(flags)
    args = driver.BisectArgs(repo, good, bad, max_reps=max_reps, kbuild_cache=tmp_path / "kb")
    store = Store(tmp_path / "r.db")
    return driver.Bisection(store, args, built.plan, built.cells, log=print)


def bisected(job: driver.Bisection) -> driver.Outcome:
    """The bisection lived through the session, as a library calls it."""
    session.run(job, command=False)
    assert job.outcome is not None
    return job.outcome


def test_names_the_regression_and_skips_the_broken(fakes: dict[str, float], tmp_path: Path) -> None:
    repo = tmp_path / "linux"
    shas = history(repo)
    out = bisected(bisection(repo, tmp_path, shas["base"], shas["doc3"]))
    assert out.first_bad == shas["slow"]
    log = git(repo, "bisect", "log")
    assert f"# first bad commit: [{shas['slow']}]" in log
    skipped = {s.commit for s in out.steps if s.verdict == "skip"}
    assert skipped <= {shas["broken"]}
    assert [s.role for s in out.steps[-2:]] == ["recheck-good", "recheck-bad"]
    assert all(s.verdict in ("good", "bad", "skip") for s in out.steps if s.role == "step")


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_a_modest_change_is_found_with_the_recheck(
    fakes: dict[str, float], tmp_path: Path, seed: int
) -> None:
    """A 20% drop (100 -> 80 files/s) under 4% noise: the gate's statistics, not the
    size of the change, decide each step. The planted commit is named, every step the log
    holds is one the gate judged, and both endpoints are measured again at the end."""
    fakes["noise"] = 0.04
    fakes["seed"] = seed
    repo = tmp_path / "linux"
    shas = history(repo, slow="80")
    out = bisected(bisection(repo, tmp_path, shas["base"], shas["doc3"], max_reps=6))
    assert out.first_bad == shas["slow"]
    log = git(repo, "bisect", "log").splitlines()
    assert f"git bisect start '{shas['doc3']}' '{shas['base']}'" in log
    assert f"# first bad commit: [{shas['slow']}] slow" in log
    judged = [s for s in out.steps if s.role == "step" and s.verdict in ("good", "bad")]
    for step in judged:
        assert f"git bisect {step.verdict} {step.commit}" in log
        assert step.gate is not None and step.gate.verdict == step.verdict and len(step.values) >= 3
    recheck = {s.role: s for s in out.steps[-2:]}
    assert set(recheck) == {"recheck-good", "recheck-bad"}
    assert recheck["recheck-good"].verdict == "good" and recheck["recheck-bad"].verdict == "bad"


def test_refuses_endpoints_within_noise(fakes: dict[str, float], tmp_path: Path) -> None:
    repo = tmp_path / "linux"
    shas = history(repo)
    fakes["noise"] = 0.2
    with pytest.raises(driver.Refused, match="^refusing to bisect: ") as refused:
        bisected(bisection(repo, tmp_path, shas["doc2"], shas["doc3"]))
    assert "\n" not in str(refused.value)
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert subprocess.run(["git", "-C", str(repo), "bisect", "log"]).returncode != 0


def test_undecided_step_stops_with_the_range_left(fakes: dict[str, float], tmp_path: Path) -> None:
    repo = tmp_path / "linux"
    shas = history(repo, worse=True)
    out = bisected(bisection(repo, tmp_path, shas["base"], shas["worse"]))
    assert out.first_bad is None
    assert "undecided" in out.stopped
    last = out.steps[-3]  # before the two rechecks
    assert last.verdict == "undecided" and last.gate is not None
    assert "differs from both" in last.gate.note
    assert out.range_left


def test_resume_continues_from_the_log(fakes: dict[str, float], tmp_path: Path) -> None:
    repo = tmp_path / "linux"
    shas = history(repo)
    b = bisection(repo, tmp_path, shas["base"], shas["doc3"])
    calls = {"n": 0}
    real = driver.Bisection._decide

    def dies(self: driver.Bisection, *a: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, *a)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(driver.Bisection, "_decide", dies)
        assert session.run(b, command=False).interrupted
    record = b.store.get_run(b.run_id)
    assert record.status == "interrupted"
    # From its stored facts alone: no endpoints, tree or budget given again.
    again = bisected(driver.Bisection.resume(b.store, record))
    assert again.run_id == b.run_id
    assert again.first_bad == shas["slow"]
