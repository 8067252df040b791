"""Runs for `fsbench history` tests: a series of grid runs of one cell (ext4, fs_mark),
each with a warm-up and `reps` counted repetitions drawn around a mean, as records in
memory (what the store hands history) or written into a real store; and runs on many
hosts, each host's trials in a part of the run (runs.part_of), as `fsbench fleet run`
stores them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fsbench.store.records import MetricRecord, RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.system.hostkeys import Host

METRIC = "files_per_s"
START = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)


@dataclass
class RunSpec:
    mean: float
    fsbench: str = "0.1.0"
    tools: dict[str, str] = field(default_factory=lambda: {"fs_mark": "3.3-1"})
    mount: str = ""
    effective: str = ""  # the mount options the kernel reports (provenance "mount")
    kernel: str = "6.1.0-41-amd64"
    knobs: dict[str, str] = field(default_factory=dict)


def trials(spec: RunSpec, values: list[float]) -> list[TrialRecord]:
    out = []
    for rep, value in enumerate([values[0], *values]):  # rep 0: the warm-up, not counted
        out.append(
            TrialRecord(
                seq=rep,
                rep=rep,
                cell_key="c1",
                config="ext4",
                fs="ext4",
                mkfs_options=[],
                mount_options=spec.mount,
                workload="fs_mark",
                params={"files": 300},
                status="ok",
                knobs=dict(spec.knobs),
                provenance={"headline": [METRIC]}
                | ({"mount": {"effective": spec.effective}} if spec.effective else {}),
                metrics=[
                    MetricRecord(METRIC, value, "files/s", "higher"),
                    MetricRecord("seconds", 300 / value, "s", "lower"),
                ],
            )  # fmt: skip
        )
    return out


def host(spec: RunSpec, name: str = "h1") -> Host:
    return Host.write({"hostname": name, "kernel": spec.kernel, "cpu": "x", "cpus": 2,
                       "python": "3.11.7", "fsbench_version": spec.fsbench,
                       "tools": dict(spec.tools)})  # fmt: skip


def draw(
    spec: RunSpec, rng: random.Random, cv: float, reps: int, lognormal: bool, t3: bool = False
) -> list[float]:
    if t3:  # Student's t with 3 degrees of freedom (heavy tails), scaled to sd cv
        return [spec.mean * (1 + cv * _t3(rng) / 3**0.5) for _ in range(reps)]
    if lognormal:
        import math

        sigma = math.sqrt(math.log(1 + cv * cv))
        mu = math.log(spec.mean) - sigma * sigma / 2
        return [rng.lognormvariate(mu, sigma) for _ in range(reps)]
    return [rng.gauss(spec.mean, spec.mean * cv) for _ in range(reps)]


def _t3(rng: random.Random) -> float:
    chi2 = sum(rng.gauss(0, 1) ** 2 for _ in range(3))
    return rng.gauss(0, 1) / (chi2 / 3) ** 0.5


def in_memory(
    specs: list[RunSpec],
    seed: int,
    cv: float = 0.05,
    reps: int = 3,
    lognormal: bool = False,
    t3: bool = False,
) -> list[tuple[RunRecord, list[TrialRecord]]]:
    """The runs as history reads them from a store, without the store."""
    rng = random.Random(seed)
    out = []
    for i, spec in enumerate(specs, start=1):
        run = RunRecord(
            id=i, name="nightly", status="finished",
            created_at=(START + timedelta(days=i)).isoformat(), finished_at=None,
            fsbench_version=spec.fsbench, argv=[], plan={}, overrides={}, schedule=[],
            host=host(spec), target={}, tag="nightly",
        )  # fmt: skip
        out.append((run, trials(spec, draw(spec, rng, cv, reps, lognormal, t3))))
    return out


def stored(
    db: Path | str, specs: list[RunSpec], seed: int, cv: float = 0.05, tag: str = "nightly"
) -> list[int]:
    """The runs written into a real store (a SQLite path, or a store URL); their ids."""
    store = Store(db)
    ids = []
    for run, records in in_memory(specs, seed, cv):
        rid = store.create_run(
            name=run.name, fsbench_version=run.fsbench_version, argv=["fsbench", "run"],
            plan={}, overrides={}, schedule=[], host=run.host, target={}, tag=tag,
        )  # fmt: skip
        store.record_trials(rid, records)
        store.finish_run(rid, "finished")
        ids.append(rid)
    store.close()
    return ids


def stored_on_hosts(
    db: Path | str, hosts: dict[str, list[RunSpec]], seed: int, tag: str = "nightly"
) -> list[int]:
    """Runs on many hosts written into a real store, run i of each host's specs in run i:
    the run (kind `fleet`, the controller's facts, no trials of its own) and a part per
    host with that host's facts and trials. The runs' ids."""
    store = Store(db)
    rng = random.Random(seed)
    ids = []
    for i in range(len(next(iter(hosts.values())))):
        uid = f"{i + 1:032x}"
        rid = store.create_run(
            name="nightly", fsbench_version="0.1.0", argv=["fsbench", "fleet", "run"],
            plan={}, overrides={}, schedule=[], host=host(RunSpec(0.0), "controller"),
            target={}, kind="fleet", uid=uid, tag=tag,
        )  # fmt: skip
        for name, specs in hosts.items():
            spec = specs[i]
            part = store.create_run(
                name="nightly", fsbench_version=spec.fsbench, argv=["fsbench", "fleet", "member"],
                plan={}, overrides={}, schedule=[], host=host(spec, f"{name}.lab"), target={},
                part_of=uid, part_host=name, part_groups=["all"],
            )  # fmt: skip
            store.record_trials(part, trials(spec, draw(spec, rng, 0.05, 3, False)))
            store.finish_run(part, "finished")
        store.finish_run(rid, "finished")
        ids.append(rid)
    store.close()
    return ids
