"""tree-read: the tree(s) in place, remount and drop caches, then read every byte of
every file (`tar cf - TREES | cat > /dev/null`). Valid only if the device really read
the data: otherwise the trial is flagged `not-cold`."""

from __future__ import annotations

from typing import ClassVar

from fsbench.units import human_bytes
from fsbench.workloads import _trees, register
from fsbench.workloads.base import (
    Better,
    CacheState,
    Flush,
    Metric,
    Params,
    TrialContext,
)


@register
class TreeRead(_trees.OnTrees):
    name: ClassVar[str] = "tree-read"
    summary: ClassVar[str] = "read every file of the tree(s) cold, after remount"
    params_model: ClassVar[type[Params]] = _trees.TreesParams
    scale_defaults = _trees.with_tree_defaults({})
    cache: ClassVar[CacheState] = CacheState.COLD_REMOUNT
    flush: ClassVar[Flush] = Flush.NONE
    headline: ClassVar[tuple[str, ...]] = ("seconds", "mb_per_s")

    def run(self, ctx: TrialContext, params: Params) -> list[Metric]:
        assert self._src is not None
        _trees.read_trees(ctx, self._trees)
        return [Metric("data_bytes", self._src.bytes * len(self._trees), "B", Better.HIGHER)]

    def derive(self, params: Params, metrics: dict[str, float]) -> list[Metric]:
        seconds = metrics.get("seconds", 0.0)
        if not seconds:
            return []
        return [Metric("mb_per_s", metrics["data_bytes"] / seconds / 1e6, "MB/s", Better.HIGHER)]

    def check(self, params: Params, metrics: dict[str, float]) -> dict[str, str]:
        want = metrics.get("data_bytes", 0.0)
        got = metrics.get("device_read_bytes")
        if got is not None and got < want:
            return {
                "not-cold": f"device read {human_bytes(got)} of {human_bytes(want)} of data: "
                "part of the tree came from a cache"
            }
        return {}
