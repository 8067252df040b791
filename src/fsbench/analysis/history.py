"""A metric over many stored runs: the series of run means per host, config and metric, the
change points in it (analysis/changepoints.py), and what else changed where it moved.

A series is one cell measured again and again: the same host, config label, workload (its
chain step), parameters and knobs (the VM target's `kernel` knob aside: a series may run
over kernels). Each run gives one point: the mean of its counted repetitions with their
95% interval. A change point names the runs on either side of it, the means before and
after, their ratio with its interval, the p of the test that found it, and every recorded
fact that changed between those two runs: a change of fsbench or of a tool there may be
the harness, not the system measured.

Pure functions of stored records: the command reads the store (cli/history.py) and the
reports show what comes out (reports/history.py).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fsbench.analysis import changepoints
from fsbench.analysis.stats import ratio_ci, summarize, t_quantile
from fsbench.store import trialfacts
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.values import counted_values
from fsbench.system import numbers

KERNEL_KNOB = "kernel"  # system/knobs.KERNEL: the VM target's kernel, a dimension
BY = ("date", "kernel", "commit", "host")
_COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
_SHORT_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
# Facts whose change means the measuring changed, not the system measured.
HARNESS = ("fsbench version", "fsbench commit", "python", "qemu", "guest fsbench")
HOST_FACTS = ("cpu", "cpus", "memory_bytes", "cpufreq_governor", "cpuidle_driver",
              "cpu_latency_us", "dirty_ratio", "dirty_background_ratio", "machine",
              "kernel")  # fmt: skip


@dataclass
class Point:
    """One run's measurement of a series' cell."""

    run: int
    created_at: str
    host: str
    kernel: str
    commit: str  # the kernel commit the run's guest booted ("" when none is recorded)
    fsbench_version: str
    tag: str
    n: int
    mean: float
    ci95: list[float] | None
    values: list[float]
    facts: dict[str, str]  # everything recorded that could change under the series
    cell_key: str = ""  # the cell of the run's plan it measured (a bisection measures it)

    def named(self) -> dict[str, Any]:
        """What a change point says of a run beside it."""
        named = {"run": self.run, "date": self.created_at}
        return named | {k: getattr(self, k) for k in NAMED_FIELDS}


# What a change point says of a run beside it, after its id and date.
NAMED_FIELDS = ("host", "kernel", "commit", "fsbench_version", "mean")


@dataclass
class ChangePoint:
    index: int  # the first point after the change
    before_run: dict[str, Any]
    after_run: dict[str, Any]
    before_mean: float
    after_mean: float
    before_runs: int
    after_runs: int
    ratio: float  # after / before
    ratio_ci95: list[float] | None
    p: float
    method: str  # e-divisive | newest-runs (changepoints.py)
    direction: str  # worse | better | changed (the metric names no better direction)
    coincident: list[dict[str, str]]  # facts that changed between the two runs
    harness: bool  # fsbench, Python, QEMU or a tool changed there too
    # The mechanisms that differ between the instrumented trials of the runs on either
    # side (each run's last explain run), when both have them (reports/explain.py `across`).
    why: str = ""

    @property
    def worse(self) -> bool:
        return self.direction == "worse"


@dataclass(frozen=True)
class Sight:
    """What a series can tell: whether it is long enough to test at all, the shortest
    series that finds a STEP at its noise, and a newest run far off that one more run like
    it would make a change."""

    runs: int
    testable: bool  # changepoints.FEWEST runs or more
    noise: float | None  # the sd of the log run means within its segments
    step_runs: int | None  # the shortest series that finds a STEP at that noise
    pending_p: float | None  # the newest run alone, when it is as far off as a change's
    pending_ratio: float | None  # that run's mean over the mean of its segment's runs


STEP = 0.20  # the step the output says a series can find, and from how many runs
STEP_MAX_RUNS = 40  # the longest series that figure looks at


@dataclass
class Series:
    host: str  # "" when hosts are compared in one series (--by host)
    config: str
    fs: str
    workload: str
    chain: str
    params: dict[str, Any]
    knobs: dict[str, str]
    metric: str
    unit: str
    better: str
    headline: bool
    points: list[Point] = field(default_factory=list)
    changes: list[ChangePoint] = field(default_factory=list)
    sight: Sight | None = None  # what the series can see (None before changes_of)

    @property
    def cell(self) -> tuple[str, str, str]:
        """Its comparison as analysis/explain.py's `group_key` names a trial's."""
        dims = {**self.params, **self.knobs}
        return (self.chain, self.workload, json.dumps(dims, sort_keys=True, default=str))

    @property
    def title(self) -> str:
        dims = [
            f"{k}={numbers.setting(v)}"
            for k, v in {**self.params, **self.knobs}.items()
            if v not in ({}, [])  # an empty table or list (a command's env) says nothing
        ]
        where = f" @ {self.host}" if self.host else ""
        return f"{self.config} · {self.workload} {' '.join(dims)} · {self.metric}{where}".replace(
            "  ", " "
        )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["title"] = self.title
        return out


@dataclass(frozen=True)
class Filters:
    workloads: tuple[str, ...] = ()  # a workload or a chain
    fs: tuple[str, ...] = ()  # a config label or a filesystem type
    sets: tuple[tuple[str, str], ...] = ()  # a parameter or knob and its value

    def take(self, t: TrialRecord) -> bool:
        if self.workloads and t.workload not in self.workloads and t.chain not in self.workloads:
            return False
        if self.fs and t.config not in self.fs and t.fs not in self.fs:
            return False
        dims = {**{k: str(v) for k, v in t.params.items()}, **t.knobs}
        return all(dims.get(k) == v for k, v in self.sets)


def host_of(run: RunRecord, trial: TrialRecord) -> str:
    return trial.host or run.host.hostname or ""


def commit_of(trial: TrialRecord) -> str:
    """The kernel commit the trial's guest booted: the `kernel` knob when it names a
    commit (fsbench bisect), else one in the guest's kernel source (a kbuild path)."""
    knob = trial.knobs.get(KERNEL_KNOB, "")
    if _SHORT_COMMIT.match(knob):
        return knob
    found = _COMMIT.search(f"{trialfacts.guest(trial.provenance).kernel_source} {knob}")
    return found.group(0) if found else ""


def kernel_of(run: RunRecord, trial: TrialRecord) -> str:
    guest = trialfacts.guest(trial.provenance)
    knob = trial.knobs.get(KERNEL_KNOB, "")
    if knob and not _SHORT_COMMIT.match(knob) and not guest.kernel:
        return knob
    return guest.kernel or run.host.kernel or ""


def facts_of(run: RunRecord, trial: TrialRecord) -> dict[str, str]:
    """Everything recorded of a run and its trial that may change along a series, flat."""
    host = run.host
    guest = trialfacts.guest(trial.provenance)
    out = {
        "fsbench version": run.fsbench_version,
        "fsbench commit": host.fsbench_commit or "",
        "python": host.python or "",
        "qemu": guest.qemu,
        "guest fsbench": guest.fsbench,
        "mkfs options": " ".join(trial.mkfs_options),
        "mount options": trial.mount_options,
        "mount effective": str(trialfacts.mount_effective(trial.provenance) or ""),
        "kernel": kernel_of(run, trial),
        "commit": commit_of(trial),
        "host": host_of(run, trial),
    }
    for name, version in sorted((host.tools or {}).items()):
        out[f"tool {name}"] = str(version or "")
    for name, value in sorted(trial.knobs.items()):
        if name != KERNEL_KNOB:
            out[f"knob {name}"] = str(value)
    for name in HOST_FACTS:
        if name != "kernel":  # kernel_of: the guest's where it ran in one
            # As stored, not as shown: a change the formatter would round away is a change.
            value = host.value(name)  # 0 is a value (cpu_latency_us), None none
            out[f"host {name}"] = "" if value is None else str(value)
    return {k: v for k, v in out.items() if v}


def harness_fact(name: str) -> bool:
    return name in HARNESS or name.startswith("tool ")


def _headline(run: RunRecord, trial: TrialRecord) -> list[str]:
    return trialfacts.headline(trial.provenance) or list(
        (run.workloads.get(trial.workload) or {}).get("headline") or []
    )


SeriesKey = tuple[str, str, str, str, str, str, str]


def build(
    runs: Iterable[tuple[RunRecord, list[TrialRecord]]],
    filters: Filters = Filters(),
    by: str = "date",
    commit_rank: Mapping[str, int] | None = None,
    all_metrics: bool = False,
) -> list[Series]:
    """The series of `runs` (each with its trials), points ordered `by` date, kernel
    version, kernel commit (`commit_rank`: a commit's place in the tree's history; points
    of commits it does not rank are left out) or date across hosts (`host`: one series
    for all hosts). Change points are found in each."""
    cells: dict[SeriesKey, dict[tuple[int, str], list[TrialRecord]]] = {}
    meta: dict[SeriesKey, tuple[RunRecord, TrialRecord]] = {}
    run_of: dict[int, RunRecord] = {}
    for run, trials in runs:
        run_of[run.id] = run
        for t in trials:
            if not filters.take(t):
                continue
            knobs = {k: v for k, v in t.knobs.items() if k != KERNEL_KNOB}
            key = (
                "" if by == "host" else host_of(run, t),
                t.config,
                t.chain,
                t.workload,
                json.dumps(t.params, sort_keys=True),
                json.dumps(knobs, sort_keys=True),
                "",
            )
            meta.setdefault(key, (run, t))
            # A point per run and kernel: a run over several kernels gives one per kernel.
            cells.setdefault(key, {}).setdefault((run.id, t.knobs.get(KERNEL_KNOB, "")), [])
            cells[key][(run.id, t.knobs.get(KERNEL_KNOB, ""))].append(t)
    out: list[Series] = []
    for key, by_point in cells.items():
        first_run, first = meta[key]
        metrics: dict[str, tuple[str, str]] = {}
        headline: set[str] = set()
        for (rid, _), trials in by_point.items():
            for t in trials:
                if t.status == "ok":
                    for m in t.metrics:
                        metrics.setdefault(m.name, (m.unit, m.better))
                    headline.update(_headline(run_of[rid], t))
        for metric, (unit, better) in metrics.items():
            if not all_metrics and metric not in headline:
                continue
            series = Series(
                host=key[0],
                config=first.config,
                fs=first.fs,
                workload=first.workload,
                chain=first.chain,
                params=dict(first.params),
                knobs={k: v for k, v in first.knobs.items() if k != KERNEL_KNOB},
                metric=metric,
                unit=unit,
                better=better,
                headline=metric in headline,
            )
            for (rid, _), trials in by_point.items():
                point = _point(run_of[rid], trials, metric)
                if point is not None:
                    series.points.append(point)
            series.points = _ordered(series.points, by, commit_rank)
            if series.points:
                series.changes = changes_of(series)
                series.sight = sight_of(series)
                out.append(series)
    return out


def _point(run: RunRecord, trials: list[TrialRecord], metric: str) -> Point | None:
    values = counted_values(trials, metric)
    if not values:
        return None
    s = summarize(values)
    assert s.mean is not None
    first = next((t for t in trials if t.status == "ok" and t.rep > 0), trials[0])
    return Point(
        run=run.id,
        created_at=run.created_at,
        host=host_of(run, first),
        kernel=kernel_of(run, first),
        commit=commit_of(first),
        fsbench_version=run.fsbench_version,
        tag=run.tag,
        n=s.n,
        mean=s.mean,
        ci95=list(s.ci95) if s.ci95 else None,
        values=values,
        facts=facts_of(run, first),
        cell_key=first.cell_key,
    )


def version_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A kernel version as it sorts: 6.1.0-41 < 6.12.0 (numbers as numbers)."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|[a-z]+", text))


def _ordered(points: list[Point], by: str, rank: Mapping[str, int] | None) -> list[Point]:
    if by == "kernel":
        return sorted(points, key=lambda p: (version_key(p.kernel), p.created_at, p.run))
    if by == "commit":
        ranks = rank or {}

        def place(p: Point) -> int | None:
            return next((r for c, r in ranks.items() if p.commit and c.startswith(p.commit)), None)

        ranked = [(place(p), p) for p in points]
        return [
            p for r, p in sorted(((r, p) for r, p in ranked if r is not None),
                                 key=lambda rp: (rp[0], rp[1].created_at))
        ]  # fmt: skip
    return sorted(points, key=lambda p: (p.created_at, p.run))


def on_scale(means: Sequence[float]) -> list[float]:
    """The run means as the detector sees them: their logarithms when all are positive (a
    change in performance is a ratio: 30x slower is as plain on a noisy fast series as on
    a quiet one), else as they are (a count that can be 0)."""
    if means and all(m > 0 for m in means):
        return [math.log(m) for m in means]
    return list(means)


def changes_of(series: Series) -> list[ChangePoint]:
    """The change points of the series' run means, each with its evidence."""
    means = [p.mean for p in series.points]
    found = changepoints.detect(on_scale(means))
    bounds = [0, *[c.at for c in found], len(means)]
    out = []
    for i, change in enumerate(found):
        lo, at, hi = bounds[i], bounds[i + 1], bounds[i + 2]
        before, after = means[lo:at], means[at:hi]
        ratio, ci = _ratio(before, after)
        a, b = series.points[at - 1], series.points[at]
        coincident = _changed_near(series.points, at)
        out.append(
            ChangePoint(
                index=at,
                before_run=a.named(),
                after_run=b.named(),
                before_mean=statistics.fmean(before),
                after_mean=statistics.fmean(after),
                before_runs=len(before),
                after_runs=len(after),
                ratio=ratio,
                ratio_ci95=ci,
                p=change.p,
                method=change.method,
                direction=direction(series.better, ratio),
                coincident=coincident,
                harness=any(harness_fact(c["what"]) for c in coincident),
            )
        )
    return out


def sight_of(series: Series) -> Sight:
    """What `series` can see: too short, or the runs a STEP needs at its own noise (the
    sd of its log run means within the segments its change points leave), and a newest
    run that one more would confirm."""
    x = on_scale([p.mean for p in series.points])
    n = len(x)
    bounds = [0, *[c.index for c in series.changes], n]
    parts = [x[lo:hi] for lo, hi in zip(bounds, bounds[1:], strict=False) if hi - lo >= 2]
    df = sum(len(part) - 1 for part in parts)
    noise = (
        math.sqrt(sum(statistics.pvariance(part) * len(part) for part in parts) / df)
        if df > 0 and all(m > 0 for m in (p.mean for p in series.points))
        else None
    )
    pending = changepoints.pending(x, bounds[-2]) if series.points else None
    last = [p.mean for p in series.points[bounds[-2] : -1]]
    ratio = series.points[-1].mean / statistics.fmean(last) if pending and last else None
    return Sight(n, n >= changepoints.FEWEST, noise, step_runs(noise), pending, ratio)


def step_runs(noise: float | None) -> int | None:
    """The shortest series (a step halfway) whose largest t reaches its critical value
    when the step is STEP at `noise` (the sd of a log run mean): where the test finds it
    about half the time. Past SHORT runs, the critical value at SHORT (the law of longer
    series costs seconds to draw, and their critical values are lower: the figure errs
    long)."""
    if noise is None:
        return None
    shift = abs(math.log(1 - STEP))
    for n in range(changepoints.FEWEST, STEP_MAX_RUNS + 1):
        half = n // 2
        t = shift / (noise * math.sqrt(1 / half + 1 / (n - half))) if noise > 0 else math.inf
        if t >= changepoints.critical_t(min(n, changepoints.SHORT)):
            return n
    return None


# A change point is placed to within a run or so (bench/history_detector.py): what changed
# between any two neighbouring runs this close to it changed "at the same place".
NEAR = 1


def _changed_near(points: Sequence[Point], at: int) -> list[dict[str, str]]:
    """The facts that changed between neighbouring runs within NEAR runs of the change
    (between points at-1-NEAR .. at+NEAR), each with the run it changed at."""
    out = []
    for j in range(max(1, at - NEAR), min(len(points), at + NEAR + 1)):
        a, b = points[j - 1].facts, points[j].facts
        for k in sorted(set(a) | set(b)):
            if a.get(k, "") != b.get(k, ""):
                out.append({"what": k, "before": a.get(k, ""), "after": b.get(k, ""),
                            "at_run": str(points[j].run)})  # fmt: skip
    return out


def direction(better: str, ratio: float) -> str:
    if better not in ("higher", "lower") or not math.isfinite(ratio) or ratio == 1:
        return "changed"
    return "worse" if (ratio < 1) == (better == "higher") else "better"


def _ratio(before: Sequence[float], after: Sequence[float]) -> tuple[float, list[float] | None]:
    """after / before with its 95% interval: Welch's delta method with two runs or more on
    each side; with one run after, that run counted as one more draw of the runs before
    (the prediction interval the newest-runs test uses)."""
    if len(after) >= 2:
        ratio, ci = ratio_ci(before, after)
        return ratio, list(ci) if ci else None
    mb, x = statistics.fmean(before), after[0]
    if mb == 0 or len(before) < 2:
        return (x / mb if mb else math.nan), None
    rel = statistics.stdev(before) / abs(mb) * math.sqrt(1 + 1 / len(before))
    half = t_quantile(len(before) - 1) * rel
    ratio = x / mb
    return ratio, [ratio * math.exp(-half), ratio * math.exp(half)]


def document(series: Sequence[Series], by: str, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON document of `fsbench history --format json`."""
    return {
        "by": by,
        "method": {
            "changes": "E-divisive means, permutation test (Matteson & James 2014); "
            f"up to {changepoints.SHORT} runs, the largest Student t over the splits",
            "alpha": changepoints.ALPHA,
            "permutations": changepoints.PERMUTATIONS,
            "short": changepoints.SHORT,
            "fewest_runs": changepoints.FEWEST,
            "newest_runs": f"Student prediction test, last {changepoints.CONFIRM}.."
            f"{changepoints.TAIL} runs each, Bonferroni",
            "newest_alpha": changepoints.TAIL_ALPHA,
            "step": STEP,
        },
        "notes": list(notes),
        "series": [s.as_dict() for s in series],
    }
