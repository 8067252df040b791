"""A kernel bisection without kernels: a small git history whose commits say what a
measurement of them gives, and `fsbench` run with the kernel build and the guest replaced
by fakes that read it (the rest, the session, the store, git bisect and the gate, is
fsbench's own).

    history(repo)                       # base, doc1, broken, fix, slow (the regression), ...
    python -c 'from tests.fake_bisect import main; main()' bisect --linux REPO ...

A commit that has a file `broken` does not build; a measurement gives 100 files/s, or what
a file `slow` says, with 3% noise. The fake guest stores its records like the real one;
with FSBENCH_TEST_PAUSE set to a path, the first measurement of a step writes that file
and waits there (a test interrupts it)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

WHO = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
PAUSE = "FSBENCH_TEST_PAUSE"


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(["git", "-C", str(repo), *WHO, *args], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def history(repo: Path, worse: bool = False, slow: str = "50") -> dict[str, str]:
    """The commits, by name: their shas."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "Makefile").write_text("all:\n")
    (repo / "Kconfig").write_text("")
    shas = {}
    plan = [("base", {}), ("doc1", {}), ("broken", {"broken": "1"}), ("fix", {"broken": None}),
            ("slow", {"slow": slow}), ("doc2", {}), ("doc3", {})]  # fmt: skip
    if worse:  # a second regression: the first one is halfway between the endpoints
        plan.append(("worse", {"slow": "0.01"}))
    for name, files in plan:
        (repo / "log").write_text(name)
        for f, text in files.items():
            if text is None:
                (repo / f).unlink()
            else:
                (repo / f).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", name)
        shas[name] = git(repo, "rev-parse", "HEAD").strip()
    return shas


def main() -> None:
    """`fsbench` with the fakes in place: the arguments after the interpreter's."""
    from fsbench.cli.app import main as fsbench
    from fsbench.store.records import MetricRecord, now
    from fsbench.vm import bisect, kbuild
    from fsbench.vm.records import record_for

    rng = random.Random(5)

    def build(self: kbuild.KernelBuilder, commit: str) -> kbuild.Built:
        broken = subprocess.run(
            ["git", "-C", str(self.tree), "cat-file", "-e", f"{commit}:broken"],
            capture_output=True,
        )
        if broken.returncode == 0:
            return kbuild.Built(commit, False, 1.0, error="fsync.c:140:2: error: x")
        return kbuild.Built(commit, True, 1.0, self.dir / "bzImage", "6.1.0")

    def measure(self: bisect.Bisection, step: bisect.Step, bzimage: Path, reps: int) -> None:
        said = subprocess.run(
            ["git", "-C", str(self.git.tree), "show", f"{step.commit}:slow"],
            capture_output=True,
            text=True,
        )
        mean = float(said.stdout) if said.returncode == 0 else 100.0
        pause = os.environ.get(PAUSE)
        if pause and step.role == "step" and not Path(pause).exists():
            Path(pause).write_text(step.commit)
            time.sleep(120)  # until the test interrupts
        cell, first = self._cell(step.commit), len(step.values) + 1
        records = []
        for rep in range(first, first + reps):
            value = rng.gauss(mean, mean * 0.03)
            metric = MetricRecord(self.metric, value, "files/s", "higher")
            records.append(
                record_for(cell, self.seq, rep, "ok", metrics=[metric], finished_at=now())
            )
            step.seqs.append(self.seq)
            self.seq += 1
        self.store.record_trials(self.run_id, records)
        step.values += self.values(records)

    kbuild.KernelBuilder.build = build  # type: ignore[method-assign]
    bisect.Bisection.measure = measure  # type: ignore[method-assign]
    bisect.Bisection.decide_accel = lambda self: ("tcg", {})  # type: ignore[method-assign]
    sys.argv = ["fsbench", *sys.argv[1:]]
    fsbench()
