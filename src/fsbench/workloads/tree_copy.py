"""tree-copy: `copies` parallel `cp -a` of a warm tree already on the filesystem + sync
(the ext4-vs-xfs comparison ran 1 and 4)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pydantic import Field

from fsbench.system.errors import TrialFailed
from fsbench.system.sourcetree import SourceTree
from fsbench.workloads import _trees
from fsbench.workloads.base import CacheState, Flush, Scale, TrialContext, Workload
from fsbench.workloads.metric import MB_PER_S, Better, Metric


class TreeCopyParams(_trees.TreeParams):
    copies: int = Field(
        default=1, ge=1, le=64, description="cp -a processes copying the tree at once"
    )


class TreeCopy(Workload[TreeCopyParams]):
    name = "tree-copy"
    summary = "N parallel cp -a of a warm tree on the filesystem + sync"
    scale_defaults = _trees.with_tree_defaults(
        {
            Scale.TINY: {"copies": [1, 4]},
            Scale.QUICK: {"copies": [1, 4]},
            Scale.FULL: {"copies": [1, 4]},
        }
    )
    cache = CacheState.WARM
    flush = Flush.SYNC
    headline = ("seconds", "mb_per_s")
    rates = (MB_PER_S,)

    def __init__(self) -> None:
        self._src: SourceTree | None = None
        self._from: Path | None = None
        self._dests: list[Path] = []

    def required_bytes(self, params: TreeCopyParams) -> int:
        return _trees.tree_bytes_estimate(params) * (params.copies + 1)

    def threads(self, params: TreeCopyParams) -> int:
        return params.copies

    def prepare(self, ctx: TrialContext, params: TreeCopyParams) -> None:
        self._src, trees = _trees.ensure_trees(ctx, params, 1)
        self._from = trees[0]
        _trees.read_trees(ctx, [self._from])  # warm: the copy's reads come from memory
        base = ctx.mountpoint / _trees.TREES_DIR
        self._dests = [base / f"copy-{i}" for i in range(params.copies)]

    def run(self, ctx: TrialContext, params: TreeCopyParams) -> list[Metric]:
        assert self._src is not None and self._from is not None, "prepare sets the tree"
        procs = [
            subprocess.Popen(["cp", "-a", str(self._from), str(d)], stderr=subprocess.PIPE)
            for d in self._dests
        ]
        errors = []
        try:
            for p in procs:
                _out, err = p.communicate()
                if p.returncode != 0:
                    errors.append(err.decode("utf-8", "replace").strip())
        finally:
            for p in procs:  # a per-trial timeout or Ctrl-C: no cp left writing
                if p.poll() is None:
                    p.kill()
                    p.wait()
        if errors:
            raise TrialFailed(f"cp -a failed: {errors[0].splitlines()[0]}", "\n".join(errors))
        src, trees = _trees.state(ctx)
        _trees.save_state(ctx, self._src, [*trees, *self._dests])
        copied = self._src.bytes * len(self._dests)
        return [
            Metric("data_bytes", copied, "B", Better.HIGHER),
            Metric("bytes_written", copied, "B", Better.HIGHER),
        ]
