"""The kernel bisection's run kind (`fsbench bisect`, vm/bisect.py drives it): what a
bisection is given, what its run keeps (`BisectFacts`: everything a resume needs beside
the plan, and what it found), its steps and its outcome, and how it ends."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from fsbench.analysis.bisect_gate import Verdict
from fsbench.execute.session import Ended
from fsbench.store.runkinds import RunKind
from fsbench.system.errors import FsbenchError
from fsbench.vm import kconfigs
from fsbench.vm.kbuild import KBUILD_CACHE
from fsbench.vm.kconfigs import KernelConfig

KIND = "bisect"
EXIT_REFUSED, EXIT_UNDECIDED = 5, 6


class BisectFacts(BaseModel):
    """What a bisection run keeps (its kind's facts): the tree, the endpoints, the metric
    and budget, the build (everything a resume needs beside the plan); and as it goes, the
    steps, the first bad commit or why it stopped, the bisect log, the time spent."""

    model_config = ConfigDict(extra="forbid")

    linux: str
    good: str
    bad: str
    metric: str
    max_reps: int
    config: str  # a named config (kconfigs.NAMED; kconfigs.LEGACY_DEFAULT), or the .config given
    build_dir: str
    cell: str = ""  # the key of the cell bisected among its plan's ("": its plan makes one)
    chunk: int = 2
    jobs: int | None = None
    kbuild_cache: str = ""  # "" (a run stored before it was kept): KBUILD_CACHE
    recheck: bool = True
    unit: str = ""
    better: str = ""
    first_bad: dict[str, Any] | None = None
    stopped: str = ""
    range_left: list[str] = []
    confounders: list[str] = []
    steps: list[dict[str, Any]] = []
    log: str = ""
    order: list[str] = []
    seconds: float = 0.0


BISECT = RunKind(
    KIND,
    "kernel bisection of fsbench bisect",
    "fsbench bisect",
    f"{__name__}:BisectFacts",
    driver="fsbench.vm.bisect:Bisection",
    report="fsbench.reports.bisect:report",
    comparable=False,
    noun="bisection run",
)


class Refused(Ended):
    """The endpoints cannot be bisected (one line, with numbers): the run ends `refused`,
    the command exits 5."""

    run_status = "refused"
    exit_code = EXIT_REFUSED


class NoValues(FsbenchError):
    """A kernel gave no value of the metric (it did not boot, or every trial failed)."""


@dataclass(frozen=True)
class BisectArgs:
    linux: Path
    good: str
    bad: str
    metric: str | None = None
    max_reps: int = 5  # the budget: repetitions per commit at most
    chunk: int = 2  # repetitions added per guest while undecided
    config: Path | KernelConfig | None = None  # the user's .config, or a named config
    jobs: int | None = None
    kbuild_cache: Path = KBUILD_CACHE
    recheck: bool = True  # the endpoints measured again at the end

    @classmethod
    def of(cls, facts: BisectFacts) -> BisectArgs:
        """The arguments a bisection's stored facts keep."""
        return cls(
            linux=Path(facts.linux),
            good=facts.good,
            bad=facts.bad,
            metric=facts.metric,
            max_reps=facts.max_reps,
            chunk=facts.chunk,
            config=kconfigs.choose(facts.config),
            jobs=facts.jobs,
            kbuild_cache=Path(facts.kbuild_cache) if facts.kbuild_cache else KBUILD_CACHE,
            recheck=facts.recheck,
        )


@dataclass
class Step:
    """One commit tested: its role, its evidence, what it cost."""

    commit: str
    role: str  # good | bad (the endpoints), step, recheck-good, recheck-bad
    values: list[float] = field(default_factory=list)
    verdict: str = ""  # good | bad | undecided | skip
    gate: Verdict | None = None
    build_seconds: float = 0.0
    build_cpu_seconds: float = 0.0  # user + system of its make runs: the machine's load aside
    measure_seconds: float = 0.0
    error: str = ""
    seqs: list[int] = field(default_factory=list)  # its trials in the run
    kernel_of: str = ""  # the commit whose kernel it ran: they differ in unbuilt files only

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "gate": self.gate.as_dict() if self.gate else None,
            "build_seconds": round(self.build_seconds, 1),
            "build_cpu_seconds": round(self.build_cpu_seconds, 1),
            "measure_seconds": round(self.measure_seconds, 1),
        }


@dataclass
class Outcome:
    run_id: int
    first_bad: str | None = None
    range_left: list[str] = field(default_factory=list)  # undecided: the commits left
    steps: list[Step] = field(default_factory=list)
    confounders: list[str] = field(default_factory=list)
    log: str = ""  # git bisect log
    seconds: float = 0.0
    stopped: str = ""  # why the bisection stopped without a first bad commit
