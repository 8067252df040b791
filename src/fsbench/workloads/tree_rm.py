"""tree-rm: drop caches, then `rm -rf` of `trees` trees + sync (ext4-vs-xfs: 3 trees)."""

from __future__ import annotations

from typing import ClassVar

from fsbench import proc
from fsbench.errors import TrialFailed
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
class TreeRm(_trees.OnTrees):
    name: ClassVar[str] = "tree-rm"
    summary: ClassVar[str] = "rm -rf of N trees, caches dropped first, + sync"
    params_model: ClassVar[type[Params]] = _trees.TreesParams
    scale_defaults = _trees.with_tree_defaults({})
    cache: ClassVar[CacheState] = CacheState.COLD
    flush: ClassVar[Flush] = Flush.SYNC
    headline: ClassVar[tuple[str, ...]] = ("seconds", "files_per_s")

    def run(self, ctx: TrialContext, params: Params) -> list[Metric]:
        assert self._src is not None
        res = proc.run(["rm", "-rf", *(str(t) for t in self._trees)], timeout=7200)
        if not res.ok:
            raise TrialFailed(f"rm -rf failed: {res.output.splitlines()[0]}", res.output[-4000:])
        src, trees = _trees.state(ctx)
        _trees.save_state(ctx, self._src, [t for t in trees if t not in self._trees])
        return [Metric("files", self._src.files * len(self._trees), "count", Better.HIGHER)]

    def derive(self, params: Params, metrics: dict[str, float]) -> list[Metric]:
        seconds = metrics.get("seconds", 0.0)
        if not seconds:
            return []
        return [Metric("files_per_s", metrics["files"] / seconds, "files/s", Better.HIGHER)]
