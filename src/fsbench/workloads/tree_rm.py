"""tree-rm: drop caches, then `rm -rf` of `trees` trees + sync (ext4-vs-xfs: 3 trees)."""

from __future__ import annotations

from fsbench.system import proc
from fsbench.system.errors import TrialFailed
from fsbench.workloads import _trees
from fsbench.workloads.base import CacheState, Flush, TrialContext
from fsbench.workloads.metric import FILES_PER_S, Better, Metric


class TreeRm(_trees.OnTrees):
    name = "tree-rm"
    summary = "rm -rf of N trees, caches dropped first, + sync"
    cache = CacheState.COLD
    flush = Flush.SYNC
    headline = ("seconds", "files_per_s")
    rates = (FILES_PER_S,)

    def run(self, ctx: TrialContext, params: _trees.TreesParams) -> list[Metric]:
        res = proc.run(["rm", "-rf", *(str(t) for t in self._trees)], timeout=7200)
        if not res.ok:
            raise TrialFailed(f"rm -rf failed: {res.output.splitlines()[0]}", res.output[-4000:])
        _src, trees = _trees.state(ctx)
        _trees.save_state(ctx, self.source, [t for t in trees if t not in self._trees])
        files = self.source.files * len(self._trees)
        return [Metric("files", files, "count", Better.HIGHER, resolution=1)]
