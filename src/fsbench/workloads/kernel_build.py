"""kernel-build: `make defconfig && make -jN [target]` in the untarred kernel tree.

Needs the real kernel source (not the synthetic tree). The whole build is long (tens of
minutes on 2 cores), so presets run it at full scale only; `target` builds a part
(`fs/ext4/` or `init/`) for a quicker comparison."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from fsbench import proc
from fsbench.errors import TrialFailed, Unsupported
from fsbench.workloads import _trees, register
from fsbench.workloads.base import (
    CacheState,
    Flush,
    Metric,
    Params,
    Tool,
    TrialContext,
    Workload,
)

BUILD_TOOLS = (
    Tool("make", "make"),
    Tool("gcc", "gcc"),
    Tool("flex", "flex"),
    Tool("bison", "bison"),
    Tool("bc", "bc"),
)


class KernelBuildParams(_trees.TreeParams):
    target: str = ""  # "" = the default target (vmlinux and modules), or e.g. "fs/ext4/"
    jobs: int = Field(default=0, ge=0, le=1024)  # 0 = one per CPU
    config: str = "defconfig"


@register
class KernelBuild(Workload):
    name: ClassVar[str] = "kernel-build"
    summary: ClassVar[str] = "make defconfig && make -jN in the untarred kernel tree"
    params_model: ClassVar[type[Params]] = KernelBuildParams
    scale_defaults = _trees.with_tree_defaults(
        {scale: {"source": "linux-source"} for scale in _trees.TREE_DEFAULTS}
    )
    tools: ClassVar[tuple[Tool, ...]] = BUILD_TOOLS
    cache: ClassVar[CacheState] = CacheState.WARM
    flush: ClassVar[Flush] = Flush.SYNC
    headline: ClassVar[tuple[str, ...]] = ("seconds",)

    def __init__(self) -> None:
        self._tree: Path | None = None

    def required_bytes(self, params: Params) -> int:
        assert isinstance(params, KernelBuildParams)
        return _trees.tree_bytes_estimate(params) * 3  # objects: ~2x the source

    def prepare(self, ctx: TrialContext, params: Params) -> None:
        assert isinstance(params, KernelBuildParams)
        src, trees = _trees.ensure_trees(ctx, params, 1)
        if src.kind != "linux-source":
            raise Unsupported("kernel-build needs the real kernel source (source=linux-source)")
        self._tree = trees[0] / src.top
        if not (self._tree / "Makefile").exists():
            raise TrialFailed(f"no Makefile in {self._tree}")

    def run(self, ctx: TrialContext, params: Params) -> list[Metric]:
        assert isinstance(params, KernelBuildParams) and self._tree is not None
        jobs = params.jobs or os.cpu_count() or 1
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
