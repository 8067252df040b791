"""The decision rule proven through the real repetition loop: each scenario is a plan run by
`execute/loop.py` (its decide path, budget and all) on a replayed machine
(executors/replay.py: values drawn per cell, trial times per cell on a simulated clock),
and judged by the report's own decisions (reports/source.py). Nothing here re-implements
the rule.

    .venv/bin/python bench/decide_simulated.py [--draws N] [--only NAME ...]

Writes bench/results/decide_simulated.json: per scenario its seed, draws, the rate it
measures with its Monte-Carlo standard error, and what it must stay within.
tests/unit/test_decide_simulated.py runs the first draws of every scenario again and
holds the rates to these figures within their Monte-Carlo error.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fsbench.analysis.decisions import Decision  # noqa: E402
from fsbench.execute import loop  # noqa: E402
from fsbench.execute.executors.replay import (  # noqa: E402
    LOGNORMAL,
    NORMAL,
    CellModel,
    MetricModel,
    ReplayExecutor,
    StepModel,
)
from fsbench.plan import model as planning  # noqa: E402
from fsbench.plan.model import Cell, FsConfig, Plan, WorkloadSpec  # noqa: E402
from fsbench.plan.presets import load_preset  # noqa: E402
from fsbench.reports import source  # noqa: E402
from fsbench.store.results import Store  # noqa: E402
from fsbench.workloads.base import Scale  # noqa: E402

Models = Callable[[Sequence[Cell]], dict[str, CellModel]]


@dataclass(frozen=True)
class Outcome:
    """What one simulated run showed, as its report decides it."""

    decisions: list[Decision]  # the headline comparisons
    flagged: set[tuple[str, ...]]  # comparisons with a bimodal row
    seconds: float  # simulated
    reps: int  # the most counted repetitions of any cell


@dataclass(frozen=True)
class Scenario:
    """A plan, a machine to replay, and what is counted of each run."""

    name: str
    what: str  # the claim in words
    plan: Callable[[int], Plan]
    models: Models
    count: Callable[[Outcome], tuple[int, int]]  # (events, trials) of one run
    bound: float  # the rate may not exceed it (or, for power, fall below it)
    direction: str = "at most"  # at most | at least
    draws: int = 1000
    test_draws: int = 200
    extra: dict[str, Any] = field(default_factory=dict)


def fs_mark_plan(k: int, max_reps: int = 10, budget: float | None = None) -> Callable[[int], Plan]:
    def make(seed: int) -> Plan:
        return Plan(
            fs=[FsConfig(type="ext4", label=f"c{i}") for i in range(k)],
            workload=[WorkloadSpec(name="fs_mark")],
            scale=Scale.TINY,
            seed=seed,
            max_reps=max_reps,
            budget=budget,
        )

    return make


def one_metric(
    means: Sequence[float],
    cvs: Sequence[float],
    law: str = NORMAL,
    slow_share: float = 0.0,
    slow_factor: float = 1.0,
) -> Models:
    """Each config (in plan order) one rate metric of its own mean and CV."""

    def models(cells: Sequence[Cell]) -> dict[str, CellModel]:
        out = {}
        for i, cell in enumerate(cells):
            metric = MetricModel(
                "files_per_s", "files/s", "higher", means[i], cvs[i], law, slow_share, slow_factor
            )
            out[cell.key] = CellModel(4.0, (StepModel("fs_mark", (metric,), ("files_per_s",)),))
        return out

    return models


def quick_shape(cells: Sequence[Cell]) -> dict[str, CellModel]:
    """The quick preset's groups at a 2-core machine's trial times (what each slot cost the
    stored run bench/results/quick_replay.json models), every timing metric alike across
    configs (A/A) and every count different (exact orders)."""

    def m(name: str, unit: str, better: str, mean: float, cv: float = 0.0) -> MetricModel:
        return MetricModel(name, unit, better, mean, cv, LOGNORMAL)

    out = {}
    for cell in cells:
        f = {"ext4": 0, "xfs": 1, "btrfs": 2}[cell.config.type]
        counts = (
            m("fragments", "count", "lower", (16, 8, 12)[f]),
            m("extents", "count", "lower", (17, 9, 13)[f]),
        )
        if cell.workload == "alloc":
            if cell.params["method"] == "write-4k":
                metrics = (m("seconds", "s", "lower", 4.0, 0.05), *counts)
                out[cell.key] = CellModel(
                    4.2, (StepModel("alloc", metrics, ("seconds", "fragments", "extents")),)
                )
            else:
                metrics = (m("seconds", "s", "lower", 0.01, 0.1), *counts)
                out[cell.key] = CellModel(
                    0.1, (StepModel("alloc", metrics, ("fragments", "extents")),)
                )
        elif cell.workload == "untar+tree-read":
            untar = (
                m("seconds", "s", "lower", 5.0, 0.06),
                m("mb_per_s", "MB/s", "higher", 120.0, 0.06),
                m("frag_pct_fragmented", "%", "lower", 0.0),
            )
            read = (
                m("seconds", "s", "lower", 3.0, 0.08),
                m("mb_per_s", "MB/s", "higher", 200.0, 0.08),
            )
            out[cell.key] = CellModel(
                9.5,
                (
                    StepModel("untar", untar, ("seconds", "mb_per_s", "frag_pct_fragmented")),
                    StepModel("tree-read", read, ("seconds", "mb_per_s")),
                ),
            )
        elif cell.workload == "fs_mark":
            out[cell.key] = CellModel(
                2.8,
                (
                    StepModel(
                        "fs_mark",
                        (m("files_per_s", "files/s", "higher", 1000.0, 0.15),),
                        ("files_per_s",),
                    ),
                ),
            )
        elif cell.workload == "fio":
            fio = (
                m("write_mib_s", "MiB/s", "higher", 900.0, 0.2),
                m("write_iops", "IOPS", "higher", 230000.0, 0.2),
                m("write_clat_p99_us", "us", "lower", 3000.0, 0.3),
            )
            out[cell.key] = CellModel(8.5, (StepModel("fio", fio, tuple(x.name for x in fio)),))
        elif cell.workload == "fileserver":
            fs = (
                m("ops_per_s", "ops/s", "higher", 150000.0, 0.08),
                m("mb_per_s", "MB/s", "higher", 1500.0, 0.08),
                m("lat_p99_us", "us", "lower", 900.0, 0.15),
            )
            out[cell.key] = CellModel(
                9.3, (StepModel("fileserver", fs, tuple(x.name for x in fs)),)
            )
    return out


def quick_plan(budget: float | None | str = "preset") -> Callable[[int], Plan]:
    """The quick preset with this seed, within its own budget or the one given."""

    def make(seed: int) -> Plan:
        update: dict[str, Any] = {"seed": seed}
        if budget != "preset":
            update["budget"] = budget
        return load_preset("quick").model_copy(update=update)

    return make


def run_once(scenario: Scenario, seed: int, workdir: Path) -> Outcome:
    """One run of the scenario's plan through the real loop, judged by its report."""
    plan = scenario.plan(seed)
    cells = planning.expand(plan)
    store = Store(workdir / f"{scenario.name}-{seed}.db")
    executor = ReplayExecutor(plan, cells, scenario.models(cells), seed=seed)
    outcome = loop.run(
        plan,
        cells,
        store,
        argv=["simulated"],
        overrides={},
        executor=executor,
        clock=executor.clock,
    )
    report = source.load(store, outcome.run_id)
    headline = [d for d in report.decisions.values() if d.headline]
    flagged = {
        d.key
        for d in headline
        for r in report.rows
        if "bimodal" in r.flags and r.metric == d.metric and r.workload == d.key[1]
    }
    reps = max((t.rep for t in report.trials), default=0)
    store.close()
    (workdir / f"{scenario.name}-{seed}.db").unlink(missing_ok=True)
    return Outcome(headline, flagged, executor.clock.now, reps)


# What is counted of a run -----------------------------------------------------------


def false_orders_per_comparison(o: Outcome) -> tuple[int, int]:
    timing = [
        d for d in o.decisions if d.family_p is not None or any(p.test == "Welch" for p in d.pairs)
    ]
    return sum(1 for d in timing if d.kind == "order"), len(timing)


def any_false_order(o: Outcome) -> tuple[int, int]:
    timing = [d for d in o.decisions if any(p.test == "Welch" for p in d.pairs)]
    return int(any(p.kind == "order" and p.test == "Welch" for d in timing for p in d.pairs)), 1


def unflagged_false_orders(o: Outcome) -> tuple[int, int]:
    orders = [d for d in o.decisions if d.kind == "order" and d.key not in o.flagged]
    return int(bool(orders)), 1


def ordered_right(o: Outcome) -> tuple[int, int]:
    (d,) = o.decisions
    return int(d.kind == "order" and d.best == "c1"), 1


def called_equivalent(o: Outcome) -> tuple[int, int]:
    (d,) = o.decisions
    return int(any(p.kind == "equivalent" for p in d.pairs)), 1


SCENARIOS = [
    Scenario(
        "aa_pair",
        "two identical configs (CV 5%, normal), looks from n = 3 to 10: false orders",
        fs_mark_plan(2),
        one_metric((1000.0, 1000.0), (0.05, 0.05)),
        false_orders_per_comparison,
        0.05,
        draws=2000,
        test_draws=150,
    ),
    Scenario(
        "aa_three",
        "three identical configs (CV 5%, normal), n = 3 to 10: any false order",
        fs_mark_plan(3),
        one_metric((1000.0,) * 3, (0.05,) * 3),
        false_orders_per_comparison,
        0.05,
        draws=2000,
        test_draws=150,
    ),
    Scenario(
        "aa_unequal_noise",
        "equal means, CV 5% against 20% (normal), n = 3 to 10: false orders",
        fs_mark_plan(2),
        one_metric((1000.0, 1000.0), (0.05, 0.20)),
        false_orders_per_comparison,
        0.07,
        draws=2000,
        test_draws=150,
    ),
    Scenario(
        "bimodal_aa_three",
        "three identical configs, a quarter of trials 1.4x slower (CV 5% around each), "
        "n = 3 to 10: runs with an order and no bimodal flag on its rows",
        fs_mark_plan(3),
        one_metric((1000.0,) * 3, (0.05,) * 3, LOGNORMAL, 0.25, 1 / 1.4),
        unflagged_false_orders,
        0.05,
        draws=1000,
        test_draws=100,
    ),
    Scenario(
        "quick_shape_aa",
        "the quick preset's shape (6 count comparisons, 12 timing comparisons all A/A), "
        "no budget (looks to n = 10): runs with any false order",
        quick_plan(None),
        quick_shape,
        any_false_order,
        0.05,
        draws=400,
        test_draws=20,
    ),
    Scenario(
        "quick_shape_aa_budget",
        "the same within the quick preset's budget: runs with any false order",
        quick_plan(),
        quick_shape,
        any_false_order,
        0.05,
        draws=400,
        test_draws=20,
    ),
    Scenario(
        "power_pair_10pct",
        "a true 10% difference at CV 5%, n = 3 to 10: ordered the right way",
        fs_mark_plan(2),
        one_metric((1000.0, 1100.0), (0.05, 0.05)),
        ordered_right,
        0.90,
        "at least",
        draws=2000,
        test_draws=150,
    ),
    Scenario(
        "tost_at_margin",
        "a true difference at the margin (ratio 1.05, CV 5%), n = 3 to 10: called equivalent",
        fs_mark_plan(2),
        one_metric((1000.0, 1050.0), (0.05, 0.05)),
        called_equivalent,
        0.05,
        draws=2000,
        test_draws=150,
    ),
]


def measure(scenario: Scenario, draws: int, first_seed: int = 1) -> dict[str, Any]:
    """The scenario's rate over `draws` runs (seeds first_seed...), with its Monte-Carlo
    standard error, the mean simulated seconds and the mean of the most repetitions."""
    events = trials = 0
    seconds = reps = 0.0
    with tempfile.TemporaryDirectory(prefix="fsbench-sim-", dir=_tmp()) as tmp:
        for seed in range(first_seed, first_seed + draws):
            o = run_once(scenario, seed, Path(tmp))
            e, t = scenario.count(o)
            events, trials = events + e, trials + t
            seconds += o.seconds
            reps += o.reps
    rate = events / trials if trials else 0.0
    return {
        "what": scenario.what,
        "seed": first_seed,
        "draws": draws,
        "events": events,
        "trials": trials,
        "rate": rate,
        "se": math.sqrt(max(rate * (1 - rate), 1e-12) / trials) if trials else None,
        "bound": scenario.bound,
        "direction": scenario.direction,
        "mean_seconds": round(seconds / draws, 1),
        "mean_reps": round(reps / draws, 2),
    }


def _tmp() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() else None


def main() -> None:
    from results_file import save

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, help="runs per scenario (default: each its own)")
    parser.add_argument("--only", nargs="*", help="scenario names")
    args = parser.parse_args()
    started = datetime.now(UTC)
    results = {}
    for scenario in SCENARIOS:
        if args.only and scenario.name not in args.only:
            continue
        found = measure(scenario, args.draws or scenario.draws)
        results[scenario.name] = found
        counted = f"{found['events']}/{found['trials']}"
        print(f"{scenario.name}: {found['rate']:.4f} ± {found['se']:.4f} ({counted})")
    save("decide_simulated", results, started)


if __name__ == "__main__":
    main()
