"""A few rounds of the kill -9 campaign in every test run (the full 20: bench/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaign import run_campaign

pytestmark = pytest.mark.integration


def test_kill_9_campaign_loses_nothing_and_leaks_nothing(workdir: Path) -> None:
    summary = run_campaign(workdir, attempts=5, seed=7)
    print(summary.line())
    assert summary.refusals == 2
    assert summary.crashes >= 1
    assert summary.trials_lost == 0
    assert summary.duplicates == 0
    assert summary.leaked == []
    assert summary.finished_runs >= 1
