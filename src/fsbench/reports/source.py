"""What every report reads, read once and only from the store: the run, its trials, the
rows built from them, and the calibration of the machine it ran on.

One entry point, so that the terminal table, markdown, CSV, JSON, HTML and `compare` all
show the same rows with the same flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from fsbench.analysis import aa_check as calibration
from fsbench.analysis import verdicts
from fsbench.analysis.decisions import Decision
from fsbench.analysis.rows import Row, build_rows, convergence_key
from fsbench.plan.model import FsConfig
from fsbench.store.griddesign import GridDesign
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.runkinds import GridFacts
from fsbench.store.runkinds import design as design_of


@dataclass
class RunReport:
    run: RunRecord
    trials: list[TrialRecord]
    rows: list[Row]
    # The calibration of this host and kernel the rows were checked against (empty: none).
    noise: list[calibration.Noise] = field(default_factory=list)
    calibration_run: int | None = None

    @cached_property
    def decisions(self) -> dict[verdicts.Key, Decision]:
        """Every comparison of the run decided, under the design it ran with."""
        return verdicts.for_run(self.run.plan, self.rows)


def config_order(run: RunRecord) -> list[str]:
    """The configs' labels in the plan's order."""
    out = []
    for data in run.plan.get("fs") or []:
        try:
            out.append(FsConfig.model_validate(data).display)
        except ValueError:  # a filesystem this fsbench no longer knows
            out.append(str(data.get("label") or data.get("type")))
    return out


def rows_of(run: RunRecord, trials: list[TrialRecord]) -> list[Row]:
    n_max = design_of(run).cells
    return build_rows(trials, run.convergence, config_order(run), run.workloads, n_max)


def trials_of(store: Store, run: RunRecord) -> list[TrialRecord]:
    """A run's trials, each with the host it ran on (store.run_trials: a run made of
    parts, one per host, has its trials in its parts)."""
    return store.run_trials(run)


def convergence_of(store: Store, run: RunRecord, parts: list[RunRecord]) -> dict[str, Any]:
    """A run's convergence record; a run made of parts gathers its parts', keyed by host
    (each host converges on its own)."""
    if not parts:
        return run.convergence
    return {
        convergence_key(part.part_host, key): value
        for part in parts
        for key, value in part.convergence.items()
    }


def gathered_design(run: RunRecord, parts: list[RunRecord]) -> GridDesign:
    """A run's design record (runkinds.design); a run made of parts gathers its parts'
    last looks per cell, keyed by host (each host plans its own)."""
    if not parts:
        return design_of(run)
    cells = {
        convergence_key(part.part_host, key): value
        for part in parts
        for key, value in design_of(part).cells.items()
    }
    design = design_of(run)
    design.cells = cells
    return design


def load(store: Store, run_id: int) -> RunReport:
    run = store.get_run(run_id)
    trials = trials_of(store, run)
    parts = store.parts(run.uid)
    run.convergence = convergence_of(store, run, parts)
    gathered = GridFacts(design=gathered_design(run, parts))
    run.facts = {**run.facts, **gathered.model_dump(mode="json", exclude_unset=True)}
    report = RunReport(run, trials, rows_of(run, trials))
    if parts:
        groups = {m.part_host: m.part_groups for m in parts}
        for row in report.rows:
            row.groups = list(groups.get(row.host, []))
        # Each host's rows against that host's own calibration, where the store has one.
        for member in parts:
            cal = latest_calibration(store, member)
            if cal is not None:
                mine = [r for r in report.rows if r.host == member.part_host]
                calibration.flag_below(mine, calibration.analyze(cal, store.get_trials(cal.id)))
    elif run.kind != calibration.KIND:
        cal = latest_calibration(store, run)
        if cal is not None:
            report.calibration_run = cal.id
            report.noise = calibration.analyze(cal, store.get_trials(cal.id))
            calibration.flag_below(report.rows, report.noise)
    return report


def latest_calibration(store: Store, run: RunRecord) -> RunRecord | None:
    """The newest finished calibration of the host and kernel the run was made on."""
    found = [r for r in store.list_runs() if calibration.matches(r, run)]
    return found[-1] if found else None
