"""`run --explain` reserves each instrumented trial the tracers' start this host paid in
its latest instrumented passes (analysis/costs.tracer_start): the instrumented slot's
seconds less the counted cell's median, the median over the pass's slots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fsbench.analysis import costs
from fsbench.store.records import TrialRecord

T0 = datetime(2026, 12, 7, tzinfo=UTC)


def _run(*cells: tuple[str, list[float]]) -> list[TrialRecord]:
    """A run's trials, one slot each, back to back: per cell, the seconds each took."""
    out, at = [], T0
    for key, seconds in cells:
        for s in seconds:
            end = at + timedelta(seconds=s)
            out.append(
                TrialRecord(
                    seq=len(out), rep=1, cell_key=key, config=key, fs="ext4", mkfs_options=[],
                    mount_options="", workload="fs_mark", params={}, status="ok",
                    started_at=at.isoformat(), finished_at=end.isoformat(),
                )
            )  # fmt: skip
            at = end
    return out


def test_the_tracers_start_is_what_an_instrumented_slot_cost_beyond_its_counted_twin() -> None:
    counted = _run(("a", [2.0, 2.2, 1.8]), ("b", [6.0, 6.0, 6.0]))
    assert costs.tracer_start([(_run(("a", [7.0, 8.0, 9.0])), counted)]) == 6.0  # 8 - 2
    both = _run(("a", [7.0, 8.0, 9.0]), ("b", [16.0, 16.0, 16.0]))
    # a: 5, 6, 7 more; b: 10 each: the median of the six
    assert costs.tracer_start([(both, counted)]) == 8.5
    # two passes: their slots together
    assert costs.tracer_start([(both, counted), (_run(("a", [3.0])), counted)]) == 7.0


def test_no_pass_or_no_counted_twin_learns_nothing() -> None:
    assert costs.tracer_start([]) is None
    assert costs.tracer_start([(_run(("a", [7.0])), _run(("b", [2.0])))]) is None


def test_a_pass_faster_than_its_counted_run_reserves_nothing_below_zero() -> None:
    assert costs.tracer_start([(_run(("a", [1.0])), _run(("a", [3.0])))]) == 0.0
