"""Runs for `fsbench history` tests: a series of grid runs of one cell (ext4, fs_mark),
each with a warm-up and `reps` counted repetitions drawn around a mean, as records in
memory (what the store hands history) or written into a real store."""

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
                provenance={"headline": [METRIC]},
                metrics=[
                    MetricRecord(METRIC, value, "files/s", "higher"),
                    MetricRecord("seconds", 300 / value, "s", "lower"),
                ],
            )  # fmt: skip
        )
    return out


def host(spec: RunSpec) -> Host:
    return Host.write({"hostname": "h1", "kernel": spec.kernel, "cpu": "x", "cpus": 2,
                       "python": "3.11.7", "fsbench_version": spec.fsbench,
                       "tools": dict(spec.tools)})  # fmt: skip


def draw(spec: RunSpec, rng: random.Random, cv: float, reps: int, lognormal: bool) -> list[float]:
    if lognormal:
        import math

        sigma = math.sqrt(math.log(1 + cv * cv))
        mu = math.log(spec.mean) - sigma * sigma / 2
        return [rng.lognormvariate(mu, sigma) for _ in range(reps)]
    return [rng.gauss(spec.mean, spec.mean * cv) for _ in range(reps)]


def in_memory(
    specs: list[RunSpec], seed: int, cv: float = 0.05, reps: int = 3, lognormal: bool = False
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
        out.append((run, trials(spec, draw(spec, rng, cv, reps, lognormal))))
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
