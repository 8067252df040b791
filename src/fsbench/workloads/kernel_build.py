"""kernel-build: `make defconfig && make -jN [target]` in the untarred kernel tree.

Needs the real kernel source (not the synthetic tree). The whole build is long (tens of
minutes on 2 cores), so presets run it at full scale only; `target` builds a part
(`fs/ext4/` or `init/`) for a quicker comparison."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import _trees
from fsbench.workloads.base import CacheState, Flush, Tool, TrialContext, Workload
from fsbench.workloads.metric import Metric

BUILD_TOOLS = (
    Tool("make", "make"),
    Tool("gcc", "gcc"),
    Tool("flex", "flex"),
    Tool("bison", "bison"),
    Tool("bc", "bc"),
)


class KernelBuildParams(_trees.TreeParams):
    target: str = Field(
        default="",
        description="make target: empty for the default (vmlinux and modules), or a part "
        "such as fs/ext4/",
    )
    jobs: int = Field(default=0, ge=0, le=1024, description="make -jN; 0: one per CPU")
    config: str = Field(default="defconfig", description="the configuration target made first")


def _jobs(params: KernelBuildParams) -> int:
    return params.jobs or os.cpu_count() or 1


class KernelBuild(Workload[KernelBuildParams]):
    name = "kernel-build"
    summary = "make defconfig && make -jN in the untarred kernel tree"
    scale_defaults = _trees.with_tree_defaults(
        {scale: {"source": "linux-source"} for scale in _trees.TREE_DEFAULTS}
    )
    tools = BUILD_TOOLS
    cache = CacheState.WARM
    flush = Flush.SYNC
    headline = ("seconds",)

    def __init__(self) -> None:
        self._tree: Path | None = None

    def required_bytes(self, params: KernelBuildParams) -> int:
        return _trees.tree_bytes_estimate(params) * 3  # objects: ~2x the source

    def threads(self, params: KernelBuildParams) -> int:
        return _jobs(params)

    def prepare(self, ctx: TrialContext, params: KernelBuildParams) -> None:
        src, trees = _trees.ensure_trees(ctx, params, 1)
        if src.kind != "linux-source":
            raise Unsupported("kernel-build needs the real kernel source (source=linux-source)")
        self._tree = trees[0] / src.top
        if not (self._tree / "Makefile").exists():
            raise TrialFailed(f"no Makefile in {self._tree}")

    def run(self, ctx: TrialContext, params: KernelBuildParams) -> list[Metric]:
        assert self._tree is not None, "prepare finds the tree"
        jobs = _jobs(params)
        for argv in (
            ["make", "-C", str(self._tree), params.config],
            [
                "make",
                "-C",
                str(self._tree),
                f"-j{jobs}",
                *([params.target] if params.target else []),
            ],
        ):
            res = proc.run(argv, timeout=6 * 3600)
            if not res.ok:
                tail = res.output.splitlines()[-1] if res.output else f"exit {res.returncode}"
                raise TrialFailed(
                    f"{' '.join(argv[3:]) or 'make'} failed: {tail}", res.output[-4000:]
                )
        return []
