"""What the store keeps, as Python records: a run, its trials and their metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from fsbench.system.hostkeys import Host

if TYPE_CHECKING:
    from fsbench.plan.model import Cell


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class MetricRecord:
    name: str
    value: float
    unit: str
    better: str
    resolution: float = 0.0  # the tool's smallest step for this metric; 0: none that matters


@dataclass
class FoldedRecord:
    """A map a tracer measured in a trial (system/metric.py's Folded): folded stacks or a
    histogram, kept in its own table (schema.folded)."""

    name: str
    unit: str
    values: dict[str, float]


@dataclass
class TrialRecord:
    seq: int
    rep: int
    cell_key: str
    config: str
    fs: str
    mkfs_options: list[str]
    mount_options: str
    workload: str
    params: dict[str, Any]
    status: str
    message: str = ""
    detail: str = ""
    started_at: str = ""
    finished_at: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)
    metrics: list[MetricRecord] = field(default_factory=list)
    step: int = 0
    chain: str = ""
    knobs: dict[str, str] = field(default_factory=dict)
    # The monitors' timeline of the timed phase (SAMPLE_FIELDS each), stored apart.
    samples: list[dict[str, float]] = field(default_factory=list)
    # The tracers' maps of an instrumented trial (stacks, histograms), stored apart.
    folded: list[FoldedRecord] = field(default_factory=list)
    # Where it ran in its round (1 = first; 0 = not recorded) and the cell key of the trial
    # run just before it ("" = the first of its process or guest).
    position: int = 0
    previous_cell: str = ""
    # The host (its inventory name) whose part of the run holds the trial; "" on one machine.
    # Not a column: a part says its host once (runs.part_host).
    host: str = ""
    id: int | None = None
    uid: str = ""  # the trial's identity in every store; given when it is first stored

    @property
    def warmup(self) -> bool:
        """The warm-up repetition (rep 0): run and stored, never counted."""
        return self.rep == 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialRecord:
        """A record as `dataclasses.asdict` wrote it (a guest's, a spooled one)."""
        fields = dict(data)
        fields["metrics"] = [MetricRecord(**m) for m in fields.get("metrics") or []]
        fields["folded"] = [FoldedRecord(**m) for m in fields.get("folded") or []]
        return cls(**fields)


@dataclass
class RunRecord:
    id: int
    name: str
    status: str
    created_at: str
    finished_at: str | None
    fsbench_version: str
    argv: list[str]
    plan: dict[str, Any]
    overrides: dict[str, list[str]]
    schedule: list[tuple[int, str]]
    host: Host  # the machine that made it (system/hostkeys.py: its keys, typed)
    target: dict[str, Any]
    convergence: dict[str, Any] = field(default_factory=dict)
    # The facts of its kind (store/runkinds.py): a grid's design, a race's settings, ...
    facts: dict[str, Any] = field(default_factory=dict)
    kind: str = "run"  # the command that made it (schema.runs.kind)
    # What its reports need of the code that made it (runfacts.py).
    workloads: dict[str, Any] = field(default_factory=dict)
    features: dict[str, Any] = field(default_factory=dict)
    uid: str = ""  # the run's identity in every store
    # A host's part of a run on many hosts (that run's uid, the host, its groups).
    part_of: str = ""
    part_host: str = ""
    part_groups: list[str] = field(default_factory=list)
    tag: str = ""  # the series it belongs to (fsbench run --tag)

    @property
    def seconds(self) -> float:
        """Its wall time, from its creation to its end (0 while running or unknown)."""
        try:
            began = datetime.fromisoformat(self.created_at)
            ended = datetime.fromisoformat(self.finished_at or "")
        except ValueError:
            return 0.0
        return max(0.0, (ended - began).total_seconds())


def slot_seconds(trials: list[TrialRecord]) -> dict[int, float]:
    """What each slot (a cell's steps together) cost its run, by its seq: from the end of
    the slot run before it to its own end, so that what happens between trials (mkfs,
    mount, unmount, the checks after) counts; the first slot of a run, its own span."""
    spans: dict[int, tuple[datetime, datetime]] = {}
    for t in trials:
        try:
            began, ended = (
                datetime.fromisoformat(t.started_at),
                datetime.fromisoformat(t.finished_at),
            )
        except ValueError:
            continue
        old = spans.get(t.seq)
        spans[t.seq] = (min(began, old[0]), max(ended, old[1])) if old else (began, ended)
    out: dict[int, float] = {}
    previous: datetime | None = None
    for seq, (began, ended) in sorted(spans.items(), key=lambda item: item[1][0]):
        out[seq] = (
            ended - (previous if previous is not None and previous <= began else began)
        ).total_seconds()
        previous = ended
    return out


def cell_record(cell: Cell, seq: int, rep: int, status: str, **fields: Any) -> TrialRecord:
    """A trial record of `cell`: its identity (config with its mkfs and mount options,
    workload, parameters, knobs), the status, and `fields` over them (a chain's step, its
    own workload and parameters; times, metrics)."""
    identity: dict[str, Any] = {
        "seq": seq,
        "rep": rep,
        "cell_key": cell.key,
        "config": cell.config.display,
        "fs": cell.config.type,
        "mkfs_options": list(cell.config.mkfs),
        "mount_options": cell.config.mount,
        "workload": cell.workload,
        "params": dict(cell.params),
        "knobs": dict(cell.knobs),
        "status": status,
        "started_at": now(),
    }
    return TrialRecord(**{**identity, **fields})
