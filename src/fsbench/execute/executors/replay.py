"""An executor that runs nothing: it replays a machine. Each cell's trials are drawn from
a model of its values (a mean, a spread, a law) and take the seconds its model says on a
simulated clock, so the repetition loop (loop.py, decide.py) runs exactly as it would on
the machine, budget and all, thousands of times a minute. The simulations of the decision
rule (tests/unit/test_decide_simulated.py) and bench/quick_replay.py drive the real loop
through it; `models_from_run` builds the models from a stored run.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from fsbench.analysis.design import EXACT_UNITS
from fsbench.analysis.stats import fixed_relation
from fsbench.execute.executors.base import Executor, OnRecords, OnStart, started
from fsbench.execute.schedule import Slot
from fsbench.plan.model import Cell, Plan
from fsbench.store import trialfacts
from fsbench.store.records import MetricRecord, TrialRecord, cell_record, now, slot_seconds

NORMAL, LOGNORMAL = "normal", "lognormal"


class SimulatedClock:
    """Seconds that pass only when a replayed trial says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class MetricModel:
    """How one metric's values fall: around `mean` with coefficient of variation `cv`
    (normal or lognormal), a share of trials `slow_factor` times the value (a bimodal
    machine), rounded to `resolution`. A cv of 0 and no slow share: the same value every
    time (an exact count)."""

    name: str
    unit: str
    better: str
    mean: float
    cv: float = 0.0
    law: str = LOGNORMAL
    slow_share: float = 0.0
    slow_factor: float = 1.0
    resolution: float = 0.0
    # Drawn from another metric of the same trial instead: twin_factor x its value **
    # twin_power (-1: a reciprocal, a fixed tree's MB/s of its seconds; 1: a multiple).
    twin_of: str = ""
    twin_power: float = 0.0
    twin_factor: float = 1.0
    n: int = 0  # the values mean and cv were estimated from (0: given, not estimated)

    def plausible(self, rng: random.Random) -> MetricModel:
        """A machine as plausible as this one given the n values it was estimated from:
        the log spread drawn from its sampling law (scaled inverse chi-square, n - 1
        degrees of freedom), then the mean from its own (normal, that spread over root n).
        A replay of one run's estimates as if they were the machine's true figures is
        over-optimistic: at n = 3 a spread is known to within a factor of four or more."""
        if self.cv <= 0 or self.n < 2 or self.twin_of:
            return self
        df = self.n - 1
        # Capped at a log spread of 2 (a CV of 7): nothing that noisy is decided either
        # way, and the arithmetic stays finite.
        sigma2 = min(4.0, df * math.log1p(self.cv**2) / rng.gammavariate(df / 2, 2.0))
        shift = rng.gauss(0.0, math.sqrt(sigma2 / self.n))
        return replace(self, mean=self.mean * math.exp(shift), cv=math.sqrt(math.expm1(sigma2)))

    def draw(self, rng: random.Random) -> float:
        value = self.mean
        if self.cv > 0:
            if self.law == NORMAL:
                value = rng.gauss(self.mean, self.cv * self.mean)
            else:
                sigma = math.sqrt(math.log1p(self.cv**2))
                value = self.mean * math.exp(rng.gauss(-(sigma**2) / 2, sigma))
        if self.slow_share and rng.random() < self.slow_share:
            value *= self.slow_factor
        if self.resolution > 0:
            value = round(value / self.resolution) * self.resolution
        if self.unit in EXACT_UNITS:
            value = float(round(value))
        return value


@dataclass(frozen=True)
class StepModel:
    """One step of a cell (the cell's workload, or one of its chain): its metrics and
    which of them are headline."""

    workload: str
    metrics: tuple[MetricModel, ...]
    headline: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellModel:
    """A cell's trial: the seconds it takes and its steps; a warm-up trial of it, the
    first after other work, `warmup_seconds` (the same when None)."""

    seconds: float
    steps: tuple[StepModel, ...]
    warmup_seconds: float | None = None

    def cost(self, warmup: bool) -> float:
        """The seconds a trial of it takes: a warm-up trial's, or a counted one's."""
        if warmup and self.warmup_seconds is not None:
            return self.warmup_seconds
        return self.seconds

    def plausible(self, rng: random.Random) -> CellModel:
        """The cell with every metric drawn as plausibly as its estimate allows
        (MetricModel.plausible)."""
        steps = tuple(
            replace(step, metrics=tuple(m.plausible(rng) for m in step.metrics))
            for step in self.steps
        )
        return replace(self, steps=steps)


@dataclass
class ReplayExecutor(Executor):
    """Runs slots by drawing their values from `models` (keyed by cell key) and advancing
    `clock` by their seconds."""

    kind: ClassVar[str] = "replay"

    plan: Plan
    cells: list[Cell]
    models: Mapping[str, CellModel]
    seed: int = 1
    clock: SimulatedClock = field(default_factory=SimulatedClock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.previous: Slot | None = None

    def preflight(self) -> list[str]:
        return []

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "summary": "a replayed machine (simulated)"}

    def run(
        self, slots: Sequence[Slot], refused: set[str], on_start: OnStart, on_records: OnRecords
    ) -> None:
        for slot in started(slots, refused, on_start):
            model = self.models[slot.cell.key]
            began = now()
            self.clock.advance(model.cost(slot.warmup))
            records = [
                self._record(slot, step, index, began) for index, step in enumerate(model.steps)
            ]
            self.previous = slot
            on_records(slot, records)

    def _record(self, slot: Slot, step: StepModel, index: int, began: str) -> TrialRecord:
        cell = slot.cell
        params = cell.steps[index][1] if index < len(cell.steps) else cell.params
        return cell_record(
            cell,
            slot.seq,
            slot.rep,
            "ok",
            workload=step.workload,
            params=params,
            step=index,
            chain=cell.workload if cell.is_chain else "",
            started_at=began,
            finished_at=now(),
            metrics=[
                MetricRecord(m.name, value, m.unit, m.better, resolution=m.resolution)
                for m, value in zip(step.metrics, _draw(step.metrics, self.rng), strict=True)
            ],
            provenance={"headline": list(step.headline)} if step.headline else {},
            position=slot.position,
            previous_cell=self.previous.cell.key if self.previous else "",
        )


def _draw(metrics: Sequence[MetricModel], rng: random.Random) -> list[float]:
    """One trial's values: each drawn, or from the metric it is the twin of."""
    drawn: dict[str, float] = {}
    for m in metrics:
        twin = drawn.get(m.twin_of) if m.twin_of else None
        drawn[m.name] = m.twin_factor * twin**m.twin_power if twin is not None else m.draw(rng)
    return [drawn[m.name] for m in metrics]


def _twin(
    values: Sequence[float], earlier: Mapping[str, Sequence[float]]
) -> tuple[str, float, float] | None:
    """The earlier metric these values are, trial by trial, a fixed reciprocal or multiple
    of: its name, the power and the factor."""
    for name, other in earlier.items():
        found = fixed_relation(other, values)
        if found:
            return name, *found
    return None


def models_from_run(trials: Sequence[TrialRecord]) -> dict[str, CellModel]:
    """Models of a stored run's cells: per metric its counted values' mean and CV
    (lognormal), an exact count where it never varied, drawn from an earlier metric where
    it was that one's fixed reciprocal or multiple on every trial; per cell the median of what its
    counted slots cost the run (store.records.slot_seconds), and what a warm-up trial
    costs: the counted cost times its group's median ratio of warm-up to counted cost
    (the first trial after other work is slower here)."""
    cost = slot_seconds(list(trials))
    by_cell: dict[str, list[TrialRecord]] = {}
    for t in trials:
        if t.status == "ok" and not t.warmup:
            by_cell.setdefault(t.cell_key, []).append(t)
    counted = {
        key: statistics.median(cost[seq] for seq in {t.seq for t in records} if seq in cost)
        for key, records in by_cell.items()
    }
    slower = _warmup_factors(trials, cost, counted)
    out = {}
    for key, records in by_cell.items():
        seconds = counted[key]
        steps = []
        for index in sorted({t.step for t in records}):
            mine = [t for t in records if t.step == index]
            names = list(dict.fromkeys(m.name for t in mine for m in t.metrics))
            metrics = []
            seen: dict[str, list[float]] = {}
            for name in names:
                found = [m for t in mine for m in t.metrics if m.name == name]
                values = [m.value for m in found]
                mean = statistics.fmean(values)
                spread = statistics.stdev(values) / abs(mean) if len(values) > 1 and mean else 0.0
                twin = _twin(values, seen) if spread > 0 else None
                model = MetricModel(
                    name,
                    found[0].unit,
                    found[0].better,
                    mean,
                    spread,
                    resolution=max(m.resolution for m in found),
                    n=len(values),
                )
                if twin:
                    model = replace(model, twin_of=twin[0], twin_power=twin[1], twin_factor=twin[2])
                else:
                    seen[name] = values
                metrics.append(model)
            headline = tuple(trialfacts.headline(mine[0].provenance) or ())
            steps.append(StepModel(mine[0].workload, tuple(metrics), headline))
        factor = slower.get(_group_of(min(records, key=lambda t: t.step)))
        out[key] = CellModel(seconds, tuple(steps), seconds * factor if factor else None)
    return out


def _group_of(trial: TrialRecord) -> str:
    """The comparison group a trial's cell belongs to: its workload and parameters (of
    its first step)."""
    return f"{trial.chain or trial.workload} {sorted(trial.params.items())}"


def _warmup_factors(
    trials: Sequence[TrialRecord], cost: Mapping[int, float], counted: Mapping[str, float]
) -> dict[str, float]:
    """Per comparison group, the median ratio of a warm-up slot's cost to its cell's
    counted cost."""
    ratios: dict[str, list[float]] = {}
    seen: set[int] = set()
    for t in trials:
        if t.warmup and t.status == "ok" and t.step == 0 and t.seq not in seen and t.seq in cost:
            seen.add(t.seq)
            base = counted.get(t.cell_key)
            if base:
                ratios.setdefault(_group_of(t), []).append(cost[t.seq] / base)
    return {group: statistics.median(found) for group, found in ratios.items()}
