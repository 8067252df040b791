"""Bringing runs from one store into another, keeping their provenance.

A run is the same run in every store by its uid; a trial is the same trial by its run and
slot (seq, step). Merging adds the runs DEST lacks, and to a run it already has, the
trials it lacks (a fleet host's store fetched again after a resume), then takes the
source's status, end and convergence when the source got further. Merging the same store
twice adds nothing. Integer ids are per store: they change, the uid stays.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlalchemy import update

from fsbench.schema import runs
from fsbench.store import RunRecord, Store, TrialRecord

# How far a run got: a merge never moves a run back.
_PROGRESS = {"running": 0, "interrupted": 1, "failed": 1, "finished": 2}


@dataclass
class MergeResult:
    runs_added: list[str] = field(default_factory=list)  # uids
    runs_updated: list[str] = field(default_factory=list)
    trials_added: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "runs_added": len(self.runs_added),
            "runs_updated": len(self.runs_updated),
            "trials_added": self.trials_added,
            "uids": [*self.runs_added, *self.runs_updated],
        }


def merge_store(src: Store, dest: Store) -> MergeResult:
    result = MergeResult()
    for run in src.list_runs():
        mine = dest.run_by_uid(run.uid)
        trials = src.get_trials(run.id)
        for trial in trials:
            if trial.id is not None:
                trial.samples = src.get_samples(trial.id)
        if mine is None:
            run_id = _copy_run(run, dest)
            have: set[tuple[int, int]] = set()
            result.runs_added.append(run.uid)
        else:
            run_id = mine.id
            have = {(t.seq, t.step) for t in dest.get_trials(run_id)}
        new = [t for t in trials if (t.seq, t.step) not in have]
        # One cell's steps together, as the run stored them.
        by_seq: dict[int, list[TrialRecord]] = {}
        for trial in new:
            by_seq.setdefault(trial.seq, []).append(trial)
        for records in by_seq.values():
            dest.record_trials(run_id, records)
        result.trials_added += len(new)
        if mine is not None and (new or _further(run, mine)):
            _take_state(run, mine, dest)
            result.runs_updated.append(run.uid)
    return result


def _further(src: RunRecord, dest: RunRecord) -> bool:
    return _PROGRESS.get(src.status, 0) > _PROGRESS.get(dest.status, 0)


def _copy_run(run: RunRecord, dest: Store) -> int:
    run_id = dest.create_run(
        name=run.name,
        fsbench_version=run.fsbench_version,
        argv=run.argv,
        plan=run.plan,
        overrides=run.overrides,
        schedule=run.schedule,
        host=run.host,
        target=run.target,
        kind=run.kind,
        workloads=run.workloads,
        features=run.features,
        uid=run.uid,
        fleet_uid=run.fleet_uid,
        fleet_host=run.fleet_host,
        fleet_groups=run.fleet_groups,
    )
    _restore(dest, run_id, run)
    return run_id


def _restore(dest: Store, run_id: int, run: RunRecord) -> None:
    """The source's status, times and convergence, as they were."""
    with dest.engine.begin() as conn:
        conn.execute(
            update(runs)
            .where(runs.c.id == run_id)
            .values(
                status=run.status,
                created_at=run.created_at,
                finished_at=run.finished_at,
                convergence=json.dumps(run.convergence),
                target=json.dumps(run.target),
            )
        )


def _take_state(src: RunRecord, mine: RunRecord, dest: Store) -> None:
    if _PROGRESS.get(src.status, 0) >= _PROGRESS.get(mine.status, 0):
        _restore(dest, mine.id, src)
        with dest.engine.begin() as conn:  # the creation time stays the first one
            conn.execute(
                update(runs).where(runs.c.id == mine.id).values(created_at=mine.created_at)
            )
