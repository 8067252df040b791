"""untar: extract a kernel source tree onto the filesystem, then sync (inside the timing).

The archive is read from a cache outside the target, already decompressed and warm in
the page cache, so only the filesystem's work is timed; `decompress = "inline"` runs
`tar xJf` on the .xz itself, reproducing the original comparisons' timing (xz costs
6.5-7 s of CPU here, more than the untar)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from fsbench.system import fiemap, sourcetree
from fsbench.system.sourcetree import SourceTree
from fsbench.workloads import _trees
from fsbench.workloads.base import CacheState, Flush, TrialContext, Workload
from fsbench.workloads.metric import FILES_PER_S, MB_PER_S, Better, Metric


class UntarParams(_trees.TreeParams):
    decompress: Literal["cache", "inline"] = Field(
        default="cache",
        description="cache: extract the decompressed tar kept warm outside the target; "
        "inline: tar xJf on the .xz itself (xz's CPU time counted, as the original tests)",
    )


class Untar(Workload[UntarParams]):
    name = "untar"
    summary = "extract a kernel tree onto the filesystem + sync; fragmentation"
    scale_defaults = _trees.with_tree_defaults({})
    # The archive must be warm (it is not what is measured); the target is freshly made.
    cache = CacheState.WARM
    flush = Flush.SYNC
    headline = ("seconds", "mb_per_s", "frag_pct_fragmented")
    rates = (MB_PER_S, FILES_PER_S)

    def __init__(self) -> None:
        self._src: SourceTree | None = None
        self._dest: Path | None = None

    def required_bytes(self, params: UntarParams) -> int:
        return _trees.tree_bytes_estimate(params)

    def prepare(self, ctx: TrialContext, params: UntarParams) -> None:
        src, trees = _trees.state(ctx)
        index = len(trees)  # in a chain after another untar, extract beside it
        self._src = _trees.source(ctx, params)
        self._dest = _trees.tree_path(ctx, index)
        inline = params.decompress == "inline" and self._src.compressed is not None
        sourcetree.warm(self._src.compressed if inline and self._src.compressed else self._src.tar)

    def run(self, ctx: TrialContext, params: UntarParams) -> list[Metric]:
        assert self._src and self._dest, "prepare sets the source and destination"
        _trees.untar(ctx, self._src, self._dest, inline=params.decompress == "inline")
        _src, trees = _trees.state(ctx)
        _trees.save_state(ctx, self._src, [*trees, self._dest])
        return [
            Metric("files", self._src.files, "count", Better.HIGHER, resolution=1),
            Metric("data_bytes", self._src.bytes, "B", Better.HIGHER),
            Metric("bytes_written", self._src.bytes, "B", Better.HIGHER),
        ]

    def inspect(self, ctx: TrialContext, params: UntarParams) -> list[Metric]:
        assert self._dest is not None, "prepare sets the destination"
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
