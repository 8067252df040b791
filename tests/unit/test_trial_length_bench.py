"""bench/trial_length.py, the information-per-second bench that sizes the quick preset's
trials: its plan is the preset's workloads at three lengths each (the shipped length one
of them), a CV that falls as the square root of the trial's length has a slope of -0.5,
and the length it picks is the one with the most information per second among those
whose every timed step lasts 2 s or more in every config."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fsbench.plan import model as planning
from fsbench.plan.presets import load_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import trial_length  # noqa: E402


def test_the_plan_is_the_presets_workloads_at_three_lengths_the_shipped_one_among_them() -> None:
    quick = load_preset("quick")
    plan = planning.load_toml(trial_length.plan_toml(["ext4", "xfs"], 4, []), "bench")
    cells = planning.expand(plan)
    assert plan.reps == 4 and [c.type for c in plan.fs] == ["ext4", "xfs"]
    assert {w.name for w in plan.workloads} == {w.name for w in quick.workloads}
    for name, (knob, values) in trial_length.LENGTHS.items():
        assert trial_length.shipped(name, knob) in values, name
        mine = [c for c in cells if c.workload == name]
        assert {c.params[knob] for c in mine} == set(values), name
        assert len(mine) == 2 * len(values)  # each length once per filesystem
    only = planning.load_toml(trial_length.plan_toml(["btrfs"], 3, ["fio"]), "bench")
    assert [w.name for w in only.workloads] == ["fio"]


def test_a_cv_falling_as_the_square_root_of_length_has_slope_minus_a_half() -> None:
    lengths = [2.0, 4.0, 8.0]
    assert abs(trial_length.slope(lengths, [0.1 * x**-0.5 for x in lengths]) + 0.5) < 1e-12
    assert abs(trial_length.slope(lengths, [0.05, 0.05, 0.05])) < 1e-12


def _cell(
    config: str, files: int, slot: float, step: float, values: list[float], short: int = 0
) -> Any:
    return {
        "workload": "fs_mark",
        "config": config,
        "files": files,
        "slot_s": [slot] * len(values),
        "steps_s": {"fs_mark": [step] * len(values)},
        "metrics": {"fs_mark.files_per_s": values},
        "short_steps": short,
    }


def test_the_best_length_is_the_most_information_per_second_among_those_long_enough() -> None:
    noisy, calm, calmest = [90.0, 100.0, 110.0], [99.0, 100.0, 101.0], [99.9, 100.0, 100.1]
    half, once, twice = trial_length.LENGTHS["fs_mark"][1]
    cells = [
        # Half the files: the most information per second, but its step lasts under 2 s.
        _cell("ext4", half, 1.9, 1.8, calmest),
        _cell("xfs", half, 1.9, 1.8, calmest),
        _cell("ext4", once, 3.0, 2.9, calm),
        _cell("xfs", once, 3.0, 2.9, calm),
        _cell("ext4", twice, 6.0, 5.9, noisy),
        _cell("xfs", twice, 6.0, 5.9, calm),
    ]
    found = trial_length.per_workload([trial_length.summarize(c) for c in cells])["fs_mark"]
    by_files = {row["files"]: row for row in found["lengths"]}
    assert not by_files[half]["long_enough"] and by_files[once]["long_enough"]
    assert by_files[half]["info_per_s"] > by_files[once]["info_per_s"]
    assert by_files[once]["info_per_s"] > by_files[twice]["info_per_s"]
    assert found["best"] == once
    # Information per second: 1 / (CV^2 x slot seconds), here CV = 1% over a 3 s slot.
    assert abs(by_files[once]["info_per_s"] - 1 / (0.01**2 * 3.0)) < 1e-6
    assert set(found["configs"]) == {"ext4", "xfs"}
    assert found["configs"]["ext4"]["cv_slope"]["fs_mark.files_per_s"] > 0  # twice is noisy


def test_a_length_whose_timed_phase_the_runner_flagged_short_is_not_long_enough() -> None:
    """A step's wall time (sync and unmount in it) can pass the floor while the phase the
    runner timed does not: 40k files extracted in 1.5 s inside a 2.7 s step."""
    calm = [99.0, 100.0, 101.0]
    half, once, twice = trial_length.LENGTHS["fs_mark"][1]
    cells = [
        _cell("ext4", half, 3.0, 2.7, calm, short=3),
        _cell("ext4", once, 5.0, 4.7, calm),
        _cell("ext4", twice, 9.0, 8.7, calm),
    ]
    found = trial_length.per_workload([trial_length.summarize(c) for c in cells])["fs_mark"]
    by_files = {row["files"]: row for row in found["lengths"]}
    assert not by_files[half]["long_enough"] and by_files[once]["long_enough"]
    assert found["best"] == once  # the half length buys more per second, and is too short
