"""tree-read: the tree(s) in place, remount and drop caches, then read every byte of
every file (`tar cf - TREES | cat > /dev/null`). Valid only if the device really read
the data: the runner flags the trial `not-cold` otherwise."""

from __future__ import annotations

from collections.abc import Mapping

from fsbench.workloads import _trees
from fsbench.workloads.base import CacheState, Flush, TrialContext
from fsbench.workloads.metric import MB_PER_S, Better, Metric


class TreeRead(_trees.OnTrees):
    name = "tree-read"
    summary = "read every file of the tree(s) cold, after remount"
    cache = CacheState.COLD_REMOUNT
    flush = Flush.NONE
    headline = ("seconds", "mb_per_s")
    rates = (MB_PER_S,)

    def run(self, ctx: TrialContext, params: _trees.TreesParams) -> list[Metric]:
        _trees.read_trees(ctx, self._trees)
        return [Metric("data_bytes", self.source.bytes * len(self._trees), "B", Better.HIGHER)]

    def expected_read_bytes(
        self, params: _trees.TreesParams, metrics: Mapping[str, float]
    ) -> float | None:
        return metrics.get("data_bytes")
