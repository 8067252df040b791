"""The per-trial limit through `Runner.run_cell` on a real loop device: when it goes off
while a workload waits (a server starting), the trial is `failed` as timed out, even when
the workload's own code catches the limit on the way out and says something else (a
server stopped by it "failed": the CI of d0fad34 recorded a MariaDB trial so); a workload
that fails by itself, within the limit, keeps its own words."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pydantic import Field

from fsbench import workloads
from fsbench.plan.model import Cell, FsConfig
from fsbench.system.errors import TrialFailed
from fsbench.workloads.base import CacheState, Flush, Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Metric
from tests.runcell import Bench, loop_bench

pytestmark = pytest.mark.integration

SERVER_SAID = "server failed: Shutdown complete"


class WaitParams(Params):
    wait_s: float = Field(default=0.0, description="seconds prepare waits for its 'server'")


class _ServerStart(Workload[WaitParams]):
    """prepare waits like a server's start, and says what a stopped server says when that
    wait ends in an exception."""

    name = "test-server-start"
    summary = "test workload: a start that rewords what ended it"
    scale_defaults = {scale: {} for scale in Scale}
    cache = CacheState.WARM
    flush = Flush.NONE

    def prepare(self, ctx: TrialContext, params: WaitParams) -> None:
        try:
            time.sleep(params.wait_s)
            if params.wait_s == 0:
                raise TrialFailed("no server here", "its log")
        except TrialFailed as exc:
            raise TrialFailed(SERVER_SAID, exc.detail) from exc

    def run(self, ctx: TrialContext, params: WaitParams) -> list[Metric]:
        return []


@pytest.fixture(scope="module")
def bench() -> Iterator[Bench]:
    workloads.register(_ServerStart)
    try:
        yield from loop_bench(1 << 30)
    finally:
        workloads.REGISTRY.unregister(_ServerStart.name)


def test_the_limit_going_off_during_a_start_is_a_timeout_whatever_the_code_said(
    bench: Bench,
) -> None:
    cell = Cell(FsConfig(type="ext4"), _ServerStart.name, {"wait_s": 60.0})
    started = time.monotonic()
    (record,) = bench.runner(Scale.TINY, timeout=3).run_cell(1, 1, cell)
    assert time.monotonic() - started < 30  # the limit, not the wait, ended it
    assert record.status == "failed"
    assert record.message.startswith("timed out after 3 s"), record.message
    assert record.detail == f"then: {SERVER_SAID}"


def test_a_failure_within_the_limit_keeps_its_own_words(bench: Bench) -> None:
    (record,) = bench.trial("ext4", _ServerStart.name, wait_s=0.0)
    assert (record.status, record.message) == ("failed", SERVER_SAID)
