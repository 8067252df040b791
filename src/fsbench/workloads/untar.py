"""untar: extract a kernel source tree onto the filesystem, then sync (inside the timing).

The archive is read from a cache outside the target, already decompressed and warm in
the page cache, so only the filesystem's work is timed; `decompress = "inline"` runs
`tar xJf` on the .xz itself, reproducing the original comparisons' timing (xz costs
6.5-7 s of CPU here, more than the untar)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from fsbench import fiemap, sourcetree
from fsbench.sourcetree import SourceTree
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


class UntarParams(_trees.TreeParams):
    decompress: Literal["cache", "inline"] = "cache"


@register
class Untar(Workload):
    name: ClassVar[str] = "untar"
    summary: ClassVar[str] = "extract a kernel tree onto the filesystem + sync; fragmentation"
    params_model: ClassVar[type[Params]] = UntarParams
    scale_defaults = _trees.with_tree_defaults({})
    # The archive must be warm (it is not what is measured); the target is freshly made.
    cache: ClassVar[CacheState] = CacheState.WARM
    flush: ClassVar[Flush] = Flush.SYNC
    headline: ClassVar[tuple[str, ...]] = ("seconds", "mb_per_s", "frag_pct_fragmented")

    def __init__(self) -> None:
        self._src: SourceTree | None = None
        self._dest: Path | None = None

    def required_bytes(self, params: Params) -> int:
        assert isinstance(params, UntarParams)
        return _trees.tree_bytes_estimate(params)

    def prepare(self, ctx: TrialContext, params: Params) -> None:
        assert isinstance(params, UntarParams)
        src, trees = _trees.state(ctx)
        index = len(trees)  # in a chain after another untar, extract beside it
        self._src = _trees.source(ctx, params)
        self._dest = _trees.tree_path(ctx, index)
        inline = params.decompress == "inline" and self._src.compressed is not None
        sourcetree.warm(self._src.compressed if inline and self._src.compressed else self._src.tar)

    def run(self, ctx: TrialContext, params: Params) -> list[Metric]:
        assert isinstance(params, UntarParams) and self._src and self._dest
        _trees.untar(ctx, self._src, self._dest, inline=params.decompress == "inline")
        _src, trees = _trees.state(ctx)
        _trees.save_state(ctx, self._src, [*trees, self._dest])
        return [
            Metric("files", self._src.files, "count", Better.HIGHER),
            Metric("data_bytes", self._src.bytes, "B", Better.HIGHER),
            Metric("bytes_written", self._src.bytes, "B", Better.HIGHER),
        ]

    def derive(self, params: Params, metrics: dict[str, float]) -> list[Metric]:
        seconds = metrics.get("seconds", 0.0)
        if not seconds:
            return []
        return [
            Metric("mb_per_s", metrics["data_bytes"] / seconds / 1e6, "MB/s", Better.HIGHER),
            Metric("files_per_s", metrics["files"] / seconds, "files/s", Better.HIGHER),
        ]

    def inspect(self, ctx: TrialContext, params: Params) -> list[Metric]:
        assert self._dest is not None
        return tree_fragmentation(self._dest)


def tree_fragmentation(root: Path) -> list[Metric]:
    """FIEMAP over the tree, as filefrag counts: the same code serves alloc."""
    lay = fiemap.tree_layout(root)
    return [
        Metric("frag_mean_fragments", lay.mean_fragments, "per file", Better.LOWER),
        Metric("frag_mean_extents", lay.mean_extents, "per file", Better.LOWER),
        Metric("frag_pct_fragmented", lay.pct_fragmented, "%", Better.LOWER),
        Metric("frag_mean_gap_bytes", lay.mean_gap_bytes, "B", Better.LOWER),
    ]
