"""Why one config beats another: the mechanisms the tracers measured in an instrumented
pass (an explain run), compared per pair of configs with the project's own statistics.

For every pair of configs of a comparison (its workload and parameters), each
mechanism (device bytes per byte asked, flushes per fsync, the thread time by what it
waited for...) is taken per unit of the workload's work: per operation of its headline
rate (a file of files/s, a MiB of MiB/s: the rate times the tracers' window), or per
trial for a metric that is a time or a count of a fixed job. Each is decided between the
two configs as any metric is (decisions.py: Welch on the log scale, TOST, exact counts;
the comparisons of one explain run controlled together, family.py), so that a mechanism
is named only when its difference is decided, never from one trial. The pair's
mechanisms are ranked by how far their ratio is from 1.

The account of the gap: the workload threads' time per unit of work, split into CPU user,
CPU system and off-CPU time by what it waited for (the offcpu tracer's classes; idle
waits left out). The gap is the difference of the two configs' totals; each part's
difference is its share of it, and the decided parts together are what the account
explains ("explained: 83% of 2.9 ms per file").

Pure: trials in, explanations out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fsbench.analysis.decisions import Decision, evidence
from fsbench.analysis.design import Design
from fsbench.analysis.family import control_families
from fsbench.analysis.pairs import ORDER, Side
from fsbench.store.records import TrialRecord


@dataclass(frozen=True)
class Mechanism:
    metric: str  # as the tracer stores it
    label: str  # what the report calls it
    time_part: bool = False  # a part of the thread time the account splits
    per_work: bool = True  # taken per unit of work (a ratio of two counts is not)


MECHANISMS: tuple[Mechanism, ...] = (
    Mechanism(
        "dev_bytes_per_asked_byte", "device bytes per byte the workload wrote", per_work=False
    ),
    Mechanism("flushes_per_fsync", "cache flushes and FUA writes per fsync", per_work=False),
    Mechanism("dev_write_bytes", "device bytes written"),
    Mechanism("dev_write_requests", "device write requests"),
    Mechanism("dev_flush_requests", "device cache flushes"),
    Mechanism("dev_fua_requests", "device FUA writes"),
    Mechanism("dev_sync_write_requests", "device sync writes"),
    Mechanism("dev_read_bytes", "device bytes read"),
    Mechanism("dev_busy_s", "device busy time"),
    Mechanism("journal_commits", "journal commits"),
    Mechanism("journal_commit_s", "journal commit time"),
    Mechanism("journal_blocks", "journal blocks logged"),
    Mechanism("log_forces", "log forces"),
    Mechanism("transaction_commits", "transaction commits"),
    Mechanism("lock_wait_s", "lock contention time"),
    Mechanism("workload_cpu_user_s", "CPU user", time_part=True),
    Mechanism("workload_cpu_system_s", "CPU system", time_part=True),
    Mechanism("offcpu_device_io_s", "blocked on device I/O", time_part=True),
    Mechanism("offcpu_flush_s", "blocked on cache flushes", time_part=True),
    Mechanism("offcpu_journal_s", "blocked on the journal", time_part=True),
    Mechanism("offcpu_lock_s", "blocked on locks", time_part=True),
    Mechanism("offcpu_runqueue_s", "waiting for a CPU", time_part=True),
    Mechanism("offcpu_other_s", "blocked, other", time_part=True),
)
BY_METRIC = {m.metric: m for m in MECHANISMS}
PER_TRIAL = "trial"


@dataclass(frozen=True)
class Found:
    """One mechanism compared between the pair's two configs."""

    metric: str
    label: str
    means: tuple[float, float]  # per unit of work, a then b
    ratio: float | None  # b / a
    ci: tuple[float, float] | None
    kind: str  # order | equivalent | undecided
    time_part: bool
    within_margin: bool = False  # ordered, but its interval inside the equivalence margin

    @property
    def decided(self) -> bool:
        """Named as a difference: ordered, and by more than the margin (a 0.1% difference
        in a count that barely varies is decided, and explains nothing)."""
        return self.kind == ORDER and not self.within_margin

    @property
    def verdict(self) -> str:
        """different, equivalent (within the margin, ordered or not), or undecided."""
        if self.decided:
            return "different"
        return "equivalent" if self.within_margin else self.kind

    @property
    def distance(self) -> float:
        """How far the ratio is from 1, either way (what ranks the mechanisms)."""
        if self.ratio is None or self.ratio <= 0:
            return math.inf if self.means[0] != self.means[1] else 0.0
        return abs(math.log(self.ratio))

    def as_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.metric,
            "label": self.label,
            "values": list(self.means),
            "ratio": self.ratio,
            "ci": list(self.ci) if self.ci else None,
            "verdict": self.verdict,
            "time_part": self.time_part,
        }


@dataclass
class Explanation:
    """Why the pair's configs differ: its mechanisms ranked, and the account of the gap."""

    key: tuple[str, str, str]  # chain, workload, dimensions (JSON)
    a: str
    b: str
    per: str  # the unit of work the values are per ("file", "MiB", "trial")
    headline: str  # the workload's headline metric
    n: tuple[int, int]
    mechanisms: list[Found] = field(default_factory=list)  # ranked: decided first
    gap: float | None = None  # thread seconds per unit of work, b minus a
    explained: float | None = None  # the decided time parts' share of the gap

    @property
    def named(self) -> list[Found]:
        return [m for m in self.mechanisms if m.decided]

    def as_dict(self) -> dict[str, Any]:
        chain, workload, dims = self.key
        return {
            "chain": chain,
            "workload": workload,
            "dims": json.loads(dims),
            "configs": [self.a, self.b],
            "per": self.per,
            "headline": self.headline,
            "n": list(self.n),
            "gap_s": self.gap,
            "explained": self.explained,
            "mechanisms": [m.as_dict() for m in self.mechanisms],
        }


GroupKey = tuple[str, str, str]


def group_key(t: TrialRecord) -> GroupKey:
    """The comparison a trial belongs to, as verdicts.key_of names it (without the metric)."""
    dims = {**t.params, **t.knobs}
    return (t.chain, t.workload, json.dumps(dims, sort_keys=True, default=str))


def work_of(t: TrialRecord, headline: str, window: float) -> tuple[float, str]:
    """The trial's work and its unit: its headline rate times the tracers' window (files
    of files/s), or 1 trial for a time or a count."""
    found = next((m for m in t.metrics if m.name == headline), None)
    if found is None or not found.unit.endswith("/s") or window <= 0:
        return 1.0, PER_TRIAL
    return found.value * window, found.unit.removesuffix("/s").rstrip("s") or "op"


def window_of(t: TrialRecord) -> float:
    """The tracers' window in this trial (seconds), 0 when none said."""
    said = t.provenance.get("monitors") or {}
    for facts in said.values():
        seconds = (facts.get("facts") or {}).get("window_s") if isinstance(facts, dict) else None
        if seconds:
            return float(seconds)
    return 0.0


def per_work(
    trials: Sequence[TrialRecord], headline: str
) -> tuple[dict[str, list[float]], list[int], str]:
    """Each mechanism's values per unit of work over these trials (ok, counted), with
    their repetitions and the unit."""
    values: dict[str, list[float]] = {}
    reps: list[int] = []
    unit = PER_TRIAL
    for t in trials:
        if t.status != "ok" or t.warmup:
            continue
        work, unit = work_of(t, headline, window_of(t))
        got = {m.name: m.value for m in t.metrics}
        if not any(name in got for name in BY_METRIC):
            continue
        reps.append(t.rep)
        for name, mechanism in BY_METRIC.items():
            if name in got:
                values.setdefault(name, []).append(got[name] / (work if mechanism.per_work else 1))
    return values, reps, unit


def _sides(
    a: str, b: str, by_config: Mapping[str, tuple[dict[str, list[float]], list[int], str]]
) -> dict[str, tuple[Side, Side]]:
    (va, ra, _), (vb, rb, _) = by_config[a], by_config[b]
    out = {}
    for name in BY_METRIC:
        xs, ys = va.get(name, []), vb.get(name, [])
        if xs and ys and len(xs) == len(ra) and len(ys) == len(rb):
            out[name] = (Side(a, tuple(xs), tuple(ra)), Side(b, tuple(ys), tuple(rb)))
    return out


# How a run's pairs' mechanisms are judged together: the families' control, or another
# for a simulation to compare it with (tests/unit/test_explain_control.py).
Control = Callable[[Sequence[Sequence[Decision]], float], list[list[Decision]]]


def explain(
    trials: Sequence[TrialRecord],
    headlines: Mapping[str, str],
    design: Design,
    pairs: Sequence[tuple[str, str]] | None = None,
    order: Sequence[str] = (),
    control: Control = control_families,
) -> list[Explanation]:
    """The explanations of an explain run's trials: every pair of configs of each
    comparison in `order` (the plan's; or only `pairs`, ordered as given), `headlines`
    naming each workload's headline metric. A pair's mechanisms are one family: a pair
    that differs much never lowers the bar for another's (family.control_families)."""
    rank = {c: i for i, c in enumerate(order)}
    groups: dict[GroupKey, dict[str, list[TrialRecord]]] = {}
    for t in trials:
        groups.setdefault(group_key(t), {}).setdefault(t.config, []).append(t)
    out: list[Explanation] = []
    drafts: list[list[Decision]] = []  # per explanation: its mechanisms' evidence
    for key, configs in groups.items():
        headline = headlines.get(key[1], "")
        by_config = {c: per_work(ts, headline) for c, ts in configs.items()}
        labels = sorted(
            (c for c in configs if by_config[c][1]), key=lambda c: rank.get(c, len(rank))
        )
        wanted = pairs or [(x, y) for i, x in enumerate(labels) for y in labels[i + 1 :]]
        for a, b in wanted:
            if a not in by_config or b not in by_config:
                continue
            out.append(
                Explanation(
                    key,
                    a,
                    b,
                    by_config[a][2],
                    headline,
                    (len(by_config[a][1]), len(by_config[b][1])),
                )  # fmt: skip
            )
            mechanisms = [
                evidence(sides, better="lower", metric=name, design=design, key=(*key, a, b, name))
                for name, sides in _sides(a, b, by_config).items()
            ]
            drafts.append([d for d in mechanisms if d is not None])
    for found, decisions in zip(out, control(drafts, design.alpha), strict=True):
        found.mechanisms = ranked(decisions)
        _account(found)
    return out


def ranked(decisions: Sequence[Decision]) -> list[Found]:
    """A pair's judged mechanisms, those named first, the farthest from a ratio of 1 first."""
    found = [_found(d.metric or "", d) for d in decisions]
    return sorted(found, key=lambda m: (not m.decided, -m.distance))


def _found(name: str, decision: Decision) -> Found:
    pair = decision.pairs[0]
    mechanism = BY_METRIC[name]
    a, b = decision.means
    # Ordered yet inside the margin: its interval (TOST), or a count that never varied
    # whose ratio is. A 0.15% difference of device bytes per byte asked, decided on an
    # A/A pair, is real and explains nothing.
    margin = decision.design.margin
    small = pair.equivalent or (
        pair.test == "exact" and pair.ratio is not None and abs(pair.ratio - 1) <= margin
    )
    return Found(
        name,
        mechanism.label,
        (a, b),
        pair.ratio,
        pair.ci,
        pair.kind,
        mechanism.time_part,
        within_margin=pair.kind == ORDER and small,
    )


def _account(found: Explanation) -> None:
    """The gap in the threads' time per unit of work, and the decided parts' share of it."""
    parts = [m for m in found.mechanisms if m.time_part]
    if not parts:
        return
    gap = sum(m.means[1] - m.means[0] for m in parts)
    found.gap = gap
    if gap:
        named = sum(m.means[1] - m.means[0] for m in parts if m.decided)
        found.explained = named / gap


def top_stacks(maps: Sequence[Mapping[str, float]], count: int = 5) -> list[tuple[str, float]]:
    """The heaviest folded stacks over a config's trials (each trial's map; the mean)."""
    if not maps:
        return []
    total: dict[str, float] = {}
    for values in maps:
        for stack, value in values.items():
            total[stack] = total.get(stack, 0.0) + value
    ranked = sorted(total.items(), key=lambda kv: -kv[1])[:count]
    return [(stack, value / len(maps)) for stack, value in ranked]


def top_symbols(maps: Sequence[Mapping[str, float]], count: int = 5) -> list[tuple[str, float]]:
    """The kernel functions a profile's samples were in most (the leaf frames), as shares
    of the samples over a config's trials."""
    leaves: dict[str, float] = {}
    for values in maps:
        for stack, n in values.items():
            leaf = stack.rsplit(";", 1)[-1]
            leaves[leaf] = leaves.get(leaf, 0.0) + n
    total = sum(leaves.values())
    if not total:
        return []
    return [(s, n / total) for s, n in sorted(leaves.items(), key=lambda kv: -kv[1])[:count]]


def inclusive(maps: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each kernel function's share of a config's profile samples whose stack holds it
    (perf's "children": a function and everything it called), the command's name left
    out."""
    held: dict[str, float] = {}
    total = 0.0
    for values in maps:
        for stack, n in values.items():
            total += n
            for frame in set(stack.split(";")[1:]):
                held[frame] = held.get(frame, 0.0) + n
    return {f: n / total for f, n in held.items()} if total else {}


def profile_diff(
    a: Sequence[Mapping[str, float]], b: Sequence[Mapping[str, float]], count: int = 5
) -> list[tuple[str, float, float]]:
    """The kernel functions whose share of the samples differs most between two configs'
    profiles (inclusive shares, a then b): the code one config runs and the other does
    not (btrfs_ against ext4_ and jbd2_), where the leaf symbols alone are the same
    memcpy and spin locks on both."""
    share_a, share_b = inclusive(a), inclusive(b)
    frames = set(share_a) | set(share_b)
    ranked = sorted(frames, key=lambda f: (-abs(share_b.get(f, 0.0) - share_a.get(f, 0.0)), f))
    return [(f, share_a.get(f, 0.0), share_b.get(f, 0.0)) for f in ranked[:count]]
