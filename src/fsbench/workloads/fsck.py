"""fsck: read-only check of the filesystem holding the tree, after umount (e2fsck -fn,
xfs_repair -n, btrfs check --readonly...): seconds, plus the fsck's own fragmentation
report where it gives one ("% non-contiguous"; xfs_db's fragmentation factor for xfs)."""

from __future__ import annotations

import re
from typing import ClassVar

from fsbench import filesystems, proc
from fsbench.errors import Unsupported
from fsbench.workloads import _trees, register
from fsbench.workloads.base import (
    Better,
    CacheState,
    Flush,
    Metric,
    Params,
    TrialContext,
    Workload,
)


class FsckParams(_trees.TreeParams):
    pass


@register
class Fsck(Workload):
    name: ClassVar[str] = "fsck"
    summary: ClassVar[str] = "read-only fsck of the filesystem holding the tree, unmounted"
    params_model: ClassVar[type[Params]] = FsckParams
    scale_defaults = _trees.with_tree_defaults({})
    cache: ClassVar[CacheState] = CacheState.COLD
    flush: ClassVar[Flush] = Flush.NONE
    needs_mount: ClassVar[bool] = False
    headline: ClassVar[tuple[str, ...]] = (
        "seconds",
        "noncontiguous_pct",
        "fragmentation_factor_pct",
    )

    def __init__(self) -> None:
        self._problems = ""

    def required_bytes(self, params: Params) -> int:
        assert isinstance(params, FsckParams)
        return _trees.tree_bytes_estimate(params)

    def prepare(self, ctx: TrialContext, params: Params) -> None:
        assert isinstance(params, FsckParams)
        if not filesystems.get(ctx.fs_type).fsck_readonly:
            raise Unsupported(f"no read-only fsck known for {ctx.fs_type}")
        _trees.ensure_trees(ctx, params, 1)

    def run(self, ctx: TrialContext, params: Params) -> list[Metric]:
        fs = filesystems.get(ctx.fs_type)
        res = proc.run([*fs.fsck_readonly, ctx.device], timeout=7200)
        if res.returncode == 127:
            raise Unsupported(res.output)
        metrics = [Metric("fsck_exit", res.returncode, "code", Better.LOWER)]
        if res.returncode != 0:
            # A read-only check that finds something is a result, not a crash.
            self._problems = res.output[-2000:]
        if fs.fsck_frag_regex:
            m = re.search(fs.fsck_frag_regex, res.stdout + res.stderr)
            if m:
                metrics.append(Metric("noncontiguous_pct", float(m.group(1)), "%", Better.LOWER))
        return metrics

    def inspect(self, ctx: TrialContext, params: Params) -> list[Metric]:
        fs = filesystems.get(ctx.fs_type)
        if not fs.frag_report:
            return []
        res = proc.run([*fs.frag_report, ctx.device], timeout=600)
        m = re.search(fs.frag_report_regex, res.stdout) if res.ok else None
        if not m:
            return []
        return [Metric("fragmentation_factor_pct", float(m.group(1)), "%", Better.LOWER)]

    def check(self, params: Params, metrics: dict[str, float]) -> dict[str, str]:
        if self._problems:
            return {"fsck-problems": self._problems.splitlines()[-1] if self._problems else ""}
        return {}
