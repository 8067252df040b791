"""What this machine can resolve: the A/A self-check of `fsbench calibrate`.

A calibration run measures the plan's workloads on one filesystem config twice, as if it
were two configs (`A` and `B`, same mkfs, same options), with the same order, warm-up and
statistics as any run. Identical configs must not get a winner; their spread is this
machine's noise. From it, per workload and metric: the coefficient of variation (pooled
over A and B), any order effect, and the smallest difference a comparison with n
repetitions per config can detect (95% confidence, 80% power). Later reports of the same
host and kernel warn where the differences they show are below that.

Pure functions of stored trials, like every report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fsbench.analysis.decisions import ORDER
from fsbench.analysis.design import design_of
from fsbench.analysis.rows import Row, build_rows
from fsbench.analysis.stats import holm, min_detectable, ratio_ci, reps_needed
from fsbench.analysis.verdicts import decide_rows
from fsbench.plan.model import Plan
from fsbench.store import runkinds
from fsbench.store.records import RunRecord, TrialRecord

KIND = runkinds.CALIBRATION.name
LABELS = ("A", "B")
# The differences the calibration screen answers for.
DIFFERENCES = (0.05, 0.10, 0.25)
ALPHA = 0.05


@dataclass(frozen=True)
class Noise:
    """One workload metric's noise on this machine, from one calibration run."""

    run_id: int
    workload: str
    params: str  # JSON of the parameters it was measured with
    metric: str
    unit: str
    cv: float  # pooled within-config coefficient of variation
    n: int  # repetitions per config
    mean_gap: float  # |mean(B) / mean(A) - 1|
    # The verdict if identical configs got a winner, else "": significant after Holm's
    # correction over every metric of the calibration (one family of A/A comparisons, so
    # that measuring more metrics does not make a false winner more likely).
    false_winner: str
    order_effect: str  # the order-effect flag's detail, else ""
    p: float | None = None  # A vs B, this metric alone (the p a run's verdict would show)
    p_family: float | None = None  # the same, Holm-adjusted over the calibration's metrics
    # B/A with its confidence interval at the calibration's family level (Bonferroni over
    # its metrics): the twins' gap must lie inside what the run itself says its noise is.
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None

    def resolvable(self, n: int | None = None) -> float | None:
        """The smallest relative difference detectable with n reps per config."""
        return min_detectable(self.cv, 1.0, n or self.n)

    def reps_for(self, difference: float) -> int | None:
        return reps_needed(self.cv, difference)


def label(display: str, which: str) -> str:
    return f"{display} ({which})"


def aa_plan(plan: Plan, reps: int | None = None) -> Plan:
    """The plan's workloads on its first filesystem config, twice, labelled A and B: two
    configs as different as two runs of the same thing can be."""
    config = plan.fs[0]
    twins = [config.model_copy(update={"label": label(config.display, w)}) for w in LABELS]
    update: dict[str, object] = {"fs": twins, "name": f"calibrate {plan.name}"}
    if reps is not None:
        update["reps"] = reps
    return plan.model_copy(update=update)


def analyze(run: RunRecord, trials: list[TrialRecord], headline_only: bool = True) -> list[Noise]:
    """Per workload, parameters and metric of a calibration run: its noise."""
    rows = build_rows(trials, run.convergence, (), run.workloads)
    pairs: dict[tuple[str, str, str, str], list[Row]] = {}
    for row in rows:
        if row.metric is None or row.status != "ok" or row.mean is None:
            continue
        if headline_only and row.headline is None:
            continue
        key = (row.workload, _params(row), json.dumps(row.knobs, sort_keys=True), row.metric)
        pairs.setdefault(key, []).append(row)
    out = []
    verdicts = []
    twins: list[tuple[Row, Row]] = []
    for (workload, params, _, metric), group in pairs.items():
        if len(group) != 2 or any(r.sd is None or not r.mean for r in group):
            continue
        a, b = group
        twins.append((a, b))
        mean = (abs(a.mean or 0) + abs(b.mean or 0)) / 2
        cv = math.sqrt(((a.sd or 0) ** 2 + (b.sd or 0) ** 2) / 2) / mean
        verdict = decide_rows([(a.config, a), (b.config, b)], design_of(run.plan))
        verdicts.append(verdict)
        out.append(
            Noise(
                run_id=run.id,
                workload=workload,
                params=params,
                metric=metric,
                unit=a.unit or "",
                cv=cv,
                n=min(a.n, b.n),
                mean_gap=abs((b.mean or 0) / (a.mean or 1) - 1),
                false_winner="",
                order_effect=a.flags.get("order-effect") or b.flags.get("order-effect") or "",
                p=verdict.pairs[0].p if verdict else None,
            )
        )
    family = holm([item.p for item in out])
    level = 1 - ALPHA / max(len(out), 1)
    for i, (a, b) in enumerate(twins):
        ratio, ci = ratio_ci(a.values, b.values, level, max(a.resolution, b.resolution))
        out[i] = replace(out[i], ratio=ratio, ratio_ci=ci)
    for i, (item, verdict, p) in enumerate(zip(out, verdicts, family, strict=True)):
        exact = verdict is not None and verdict.kind == ORDER and verdict.pairs[0].p is None
        winner = exact or (verdict is not None and p is not None and p < ALPHA)
        out[i] = replace(item, p_family=p, false_winner=verdict.text if winner and verdict else "")
    return out


def _params(row: Row) -> str:
    return json.dumps(row.params, sort_keys=True)


def matches(calibration: RunRecord, run: RunRecord) -> bool:
    """A calibration speaks for a run made on the same host and kernel, on the same kind
    of target, at the same scale (a workload's noise depends on its size)."""
    ch, rh = calibration.host, run.host
    return (
        calibration.kind == KIND
        and calibration.status == "finished"
        and ch.hostname == rh.hostname
        and ch.kernel == rh.kernel
        and calibration.target.get("kind") == run.target.get("kind")
        and calibration.plan.get("scale") == run.plan.get("scale")
    )


def flag_below(rows: Sequence[Row], noise: Sequence[Noise]) -> None:
    """Flag `below-calibration` on the rows of every comparison (one workload, parameters,
    knobs and metric; several configs) whose configs differ by less than the calibration
    says this machine resolves at the rows' n. Where calibration measured the same
    parameters, that noise; else the noisiest it measured for the workload and metric."""
    by_metric: dict[tuple[str, str], list[Noise]] = {}
    for item in noise:
        by_metric.setdefault((item.workload, item.metric), []).append(item)
    comparisons: dict[tuple[str, str, str, str, str, str], list[Row]] = {}
    for row in rows:
        if row.metric is None or row.mean is None or not row.values:
            continue
        key = (
            row.host,
            row.chain,
            row.workload,
            _params(row),
            json.dumps(row.knobs, sort_keys=True),
            row.metric,
        )
        comparisons.setdefault(key, []).append(row)
    for (_, _, workload, params, _, metric), group in comparisons.items():
        known = by_metric.get((workload, metric))
        if not known or len(group) < 2:
            continue
        same = [k for k in known if k.params == params]
        item = same[0] if same else max(known, key=lambda k: k.cv)
        n = min(r.n for r in group)
        resolvable = item.resolvable(n)
        means = [abs(r.mean or 0) for r in group]
        if resolvable is None or min(means) == 0:
            continue
        spread = max(means) / min(means) - 1
        if spread < resolvable:
            text = (
                f"configs differ by at most {spread:.1%}; calibration run {item.run_id} "
                f"shows this machine resolves {resolvable:.0%} at n={n} (CV {item.cv:.1%})"
            )
            for row in group:
                row.flags["below-calibration"] = text
