"""A race of `fsbench tune` rebuilt from stored trials (execute/race/trials.py): the same
drops as the race fed directly, outside drops for refused and failed trials, the metric's
direction from the trials, an incomplete round left for the resumed race to finish."""

from __future__ import annotations

import numpy as np
import pytest

from fsbench.execute.race.rule import BUDGET, ONE_LEFT, UNSAFE, UNSUPPORTED, race
from fsbench.execute.race.trials import (
    FAILED,
    SafetyVerdict,
    TuneSpec,
    replay,
)
from fsbench.store.records import MetricRecord, TrialRecord
from fsbench.store.values import split_metric, value_of
from fsbench.system.errors import FsbenchError

CONFIGS = ["a", "b", "c", "d"]


def trial(
    seq: int,
    rep: int,
    config: str,
    value: float | None,
    status: str = "ok",
    metric: str = "files_per_s",
    better: str = "higher",
) -> TrialRecord:
    metrics = [] if value is None else [MetricRecord(metric, value, "files/s", better)]
    return TrialRecord(
        seq=seq,
        rep=rep,
        cell_key=f"{config}|fs_mark|{{}}",
        config=config,
        fs="ext4",
        mkfs_options=[],
        mount_options="",
        workload="fs_mark",
        params={},
        status=status,
        message="" if status == "ok" else f"{status}: the kernel said no",
        metrics=metrics,
    )


def keys() -> dict[str, str]:
    return {f"{c}|fs_mark|{{}}": c for c in CONFIGS}


def stored(values: np.ndarray, warmup: bool = True) -> list[TrialRecord]:
    """rounds x configs values as stored trials, round 0 the warm-up."""
    out: list[TrialRecord] = []
    if warmup:
        out += [trial(len(out) + i, 0, c, 100.0) for i, c in enumerate(CONFIGS)]
    for r, row in enumerate(values, start=1):
        base = len(out)
        out += [
            trial(base + i, r, c, float(v))
            for i, (c, v) in enumerate(zip(CONFIGS, row, strict=True))
        ]
    return out


def test_a_replay_drops_what_the_race_drops() -> None:
    rng = np.random.default_rng(3)
    means = np.array([100.0, 98.0, 60.0, 40.0])
    values = means * np.exp(rng.normal(0, 0.05, (8, 4)))
    spec = TuneSpec(metric="files_per_s", max_rounds=8)
    state = replay(CONFIGS, spec, stored(values), keys(), max_seq=10_000)
    got = state.finish().result()
    direct = race(
        CONFIGS,
        [dict(zip(CONFIGS, map(float, row), strict=True)) for row in values],
        spec.settings(True),
    )
    assert [(d.config, d.round, d.reason) for d in got.dropped] == [
        (d.config, d.round, d.reason) for d in direct.dropped
    ]
    assert {d.config for d in got.dropped} >= {"c", "d"}
    assert got.leader == direct.leader == "a"
    assert state.rounds[0] == {"round": 0, "alive": 4, "dropped": []}


def test_refused_and_failed_trials_drop_their_config() -> None:
    trials = stored(np.full((3, 4), 100.0))
    trials[1] = trial(1, 0, "b", None, status="unsupported")  # refused at the warm-up
    trials = [t for t in trials if not (t.config == "b" and t.rep > 0)]
    failed = next(t for t in trials if t.config == "c" and t.rep == 2)
    trials[trials.index(failed)] = trial(failed.seq, 2, "c", None, status="failed")
    spec = TuneSpec(metric="files_per_s", max_rounds=5)
    result = replay(CONFIGS, spec, trials, keys(), max_seq=10_000).finish().result()
    by = {d.config: d for d in result.dropped}
    assert by["b"].reason == UNSUPPORTED and by["b"].round == 0
    assert "kernel said no" in by["b"].detail
    assert by["c"].reason == FAILED and by["c"].round == 1
    # A refused config costs a grid one trial, as it cost the race.
    assert result.grid_trials(5) == 3 * 5 + 1


def test_an_incomplete_round_is_left_to_the_resumed_race() -> None:
    trials = stored(np.full((3, 4), 100.0))
    trials = [t for t in trials if not (t.rep == 3 and t.config in ("c", "d"))]
    state = replay(CONFIGS, TuneSpec(metric="files_per_s"), trials, keys(), max_seq=10_000)
    assert [r["round"] for r in state.rounds] == [0, 1, 2]
    assert state.race is not None and state.race.rounds == 2 and not state.done
    # A warm-up the resumed race added (seq past the schedule) belongs to no round.
    extra = trial(10_000, 0, "a", None, status="failed")
    again = replay(CONFIGS, TuneSpec(metric="files_per_s"), [*trials, extra], keys(), 10_000)
    assert again.alive == CONFIGS


def test_the_direction_is_the_metrics_and_a_stored_stop_is_kept() -> None:
    # Seconds: lower is better, as the trials say; d is 3x slower and leaves.
    values = np.array([[1.0, 1.01, 0.99, 3.0]] * 6) * np.linspace(1, 1.05, 6)[:, None]
    trials = [
        trial(t.seq, t.rep, t.config, t.metrics[0].value, metric="seconds", better="lower")
        for t in stored(values)
    ]
    spec = TuneSpec(metric="seconds", max_rounds=6)
    result = replay(CONFIGS, spec, trials, keys(), 10_000).finish().result()
    assert "d" in {d.config for d in result.dropped}
    assert result.leader != "d"
    two = replay(CONFIGS, spec.model_copy(update={"stop": BUDGET}), trials[:8], keys(), 10_000)
    assert two.finish().result().stop == BUDGET


def test_a_metric_no_trial_reports_is_an_error_naming_those_that_are() -> None:
    with pytest.raises(FsbenchError, match="no trial reports it.*files_per_s"):
        replay(CONFIGS, TuneSpec(metric="tps"), stored(np.ones((3, 4))), keys(), 10_000)


def test_a_constraint_on_a_metric_no_trial_reports_is_an_error_too() -> None:
    # It would never drop a config: the race would end as if it had been kept.
    spec = TuneSpec(metric="files_per_s", require=["lat_p99<5000"])
    with pytest.raises(FsbenchError, match="--require lat_p99<5000: no trial reports lat_p99"):
        replay(CONFIGS, spec, stored(np.ones((3, 4))), keys(), 10_000)


def test_metric_names_and_values_in_a_chain() -> None:
    assert split_metric("tree-read:seconds") == ("tree-read", "seconds")
    assert split_metric("tps") == ("", "tps")
    untar = trial(0, 1, "a", 2.0, metric="seconds")
    read = trial(0, 1, "a", 5.0, metric="seconds")
    read.workload = "tree-read"
    assert value_of([untar, read], "seconds") == 2.0
    assert value_of([untar, read], "tree-read:seconds") == 5.0
    assert value_of([untar, read], "tps") is None


def test_two_configs_one_left() -> None:
    values = np.array([[100.0, 10.0]] * 3) * np.array([[1, 1.1], [1.05, 1], [0.97, 0.93]])
    trials = []
    for r, row in enumerate(values, start=1):
        trials += [trial(2 * r, r, "a", float(row[0])), trial(2 * r + 1, r, "b", float(row[1]))]
    state = replay(["a", "b"], TuneSpec(metric="files_per_s", max_rounds=6), trials, keys(), 99)
    result = state.finish().result()
    assert result.stop == ONE_LEFT and result.leader == "a" and result.rounds == 3


def test_unsafe_configs_never_run_and_leave_with_their_crash_evidence() -> None:
    """`--require safe`: the crash tests' verdicts kept with the race. An unsafe config is
    out before the warm-up round (never run), dropped as `unsafe` with the crash evidence;
    the safe ones keep theirs in the result."""
    lost = "fsync-append: 1/1 crashes damaged; volatile cache: 1/1 states damaged"
    fine = "fsync-append: nothing lost in 1 crash; volatile cache: 1 state intact"
    spec = TuneSpec(
        metric="files_per_s",
        max_rounds=4,
        safety={
            "a": SafetyVerdict(safe=True, evidence=fine),
            "b": SafetyVerdict(safe=False, evidence=lost),
            "c": SafetyVerdict(safe=True, evidence=fine),
            "d": SafetyVerdict(safe=True, evidence=fine),
        },
    )
    state = replay(CONFIGS, spec, [], keys(), max_seq=10_000)
    assert state.alive == ["a", "c", "d"]  # what the driver runs, the warm-up included
    runs = [t for t in stored(np.full((4, 4), 100.0)) if t.config != "b"]
    state = replay(CONFIGS, spec, runs, keys(), max_seq=10_000)
    result = state.finish().result()
    (unsafe,) = result.unsafe
    assert unsafe.config == "b" and unsafe.reason == UNSAFE and unsafe.round == 0
    assert unsafe.detail == lost
    assert result.safety == {"a": fine, "b": lost, "c": fine, "d": fine}
    assert {w.config for w in result.winners} == {"a", "c", "d"}
    assert state.rounds[0] == {"round": 0, "alive": 4, "dropped": ["b"]}
