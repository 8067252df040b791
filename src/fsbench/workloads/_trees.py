"""What the kernel-tree workloads share: their source parameters and the trees they leave
on the filesystem, so each workload runs alone (its prepare builds what it needs) or as a
step of a chain after another one built it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from fsbench.system import proc, sourcetree
from fsbench.system.errors import TrialFailed
from fsbench.system.sourcetree import SourceTree
from fsbench.workloads.base import Params, Scale, TrialContext, Workload

TREES_DIR = "trees"
MARKER = ".fsbench-trees.json"
SYNTHETIC_ON_DISK_PER_FILE = 16 << 10  # data + block rounding + inode/dirent share
KERNEL_ON_DISK = 1600 << 20  # Linux 6.1 untarred: ~1.2 GB data, ~1.5 GB on disk


class TreeParams(Params):
    source: Literal["auto", "linux-source", "synthetic"] = Field(
        default="auto",
        description="the tree: linux-source (Debian's kernel tarball), synthetic (a "
        "generated kernel-like tree), or auto (the kernel if installed, else synthetic)",
    )
    files: int = Field(
        default=sourcetree.KERNEL_LIKE_FILES,
        ge=1,
        le=10_000_000,
        description="files of the synthetic tree (ignored for the kernel source)",
    )


# tiny = a synthetic tree of a few thousand files; quick and full = the whole kernel tree.
TREE_DEFAULTS: dict[Scale, dict[str, Any]] = {
    Scale.TINY: {"source": "synthetic", "files": 3000},
    Scale.QUICK: {"source": "auto", "files": sourcetree.KERNEL_LIKE_FILES},
    Scale.FULL: {"source": "auto", "files": sourcetree.KERNEL_LIKE_FILES},
}


def with_tree_defaults(extra: dict[Scale, dict[str, Any]]) -> dict[Scale, dict[str, Any]]:
    return {scale: {**TREE_DEFAULTS[scale], **extra.get(scale, {})} for scale in Scale}


def tree_bytes_estimate(params: TreeParams) -> int:
    """Space one tree takes on the filesystem, without preparing the source."""
    if params.source == "synthetic" or (
        params.source == "auto" and sourcetree.find_kernel_tarball() is None
    ):
        return params.files * SYNTHETIC_ON_DISK_PER_FILE
    return KERNEL_ON_DISK


def source(ctx: TrialContext, params: TreeParams) -> SourceTree:
    return sourcetree.get_source(ctx.cache_dir, params.source, params.files)


def _marker(ctx: TrialContext) -> Path:
    return ctx.mountpoint / MARKER


def state(ctx: TrialContext) -> tuple[SourceTree | None, list[Path]]:
    """The source the trees on this filesystem came from, and the trees (tree-0 first)."""
    try:
        data = json.loads(_marker(ctx).read_text())
    except (OSError, ValueError):
        return None, []
    src = SourceTree(**data["source"])
    return src, [ctx.mountpoint / t for t in data["trees"]]


def save_state(ctx: TrialContext, src: SourceTree, trees: list[Path]) -> None:
    rel = [str(t.relative_to(ctx.mountpoint)) for t in trees]
    _marker(ctx).write_text(json.dumps({"source": src.as_dict(), "trees": rel}))


def tree_path(ctx: TrialContext, index: int) -> Path:
    return ctx.mountpoint / TREES_DIR / f"tree-{index}"


def untar(ctx: TrialContext, src: SourceTree, dest: Path, inline: bool = False) -> None:
    """GNU tar extracts the archive into dest (from the .xz itself when inline)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = src.compressed if inline and src.compressed else src.tar
    argv = ["tar", "-x", "-f", archive, "-C", str(dest)]
    if inline and src.compressed:
        argv.insert(1, "-J")
    res = proc.run(argv, timeout=7200)
    if not res.ok:
        raise TrialFailed(
            f"tar failed: {res.output.splitlines()[0] if res.output else ''}", res.output[-4000:]
        )


def copy_tree(src_dir: Path, dest: Path) -> None:
    res = proc.run(["cp", "-a", str(src_dir), str(dest)], timeout=7200)
    if not res.ok:
        raise TrialFailed(
            f"cp -a failed: {res.output.splitlines()[0] if res.output else ''}", res.output[-4000:]
        )


def ensure_trees(
    ctx: TrialContext, params: TreeParams, count: int
) -> tuple[SourceTree, list[Path]]:
    """At least `count` trees on the filesystem (untimed: untar, then cp -a)."""
    src, trees = state(ctx)
    if src is None or not trees:
        src = source(ctx, params)
        first = tree_path(ctx, 0)
        if first.exists():
            shutil.rmtree(first)
        untar(ctx, src, first)
        trees = [first]
    index = 1
    while len(trees) < count:
        dest = tree_path(ctx, index)
        if dest not in trees:
            copy_tree(trees[0], dest)
            trees.append(dest)
        index += 1
    save_state(ctx, src, trees)
    return src, trees[:count] if count else trees


TAR_RECORD_BLOCKS = 2048  # x 512 B = 1 MiB records


def read_trees(ctx: TrialContext, trees: list[Path]) -> None:
    """Every byte of every file: `tar cf - TREES | cat > /dev/null`. 1 MiB records
    (`-b 2048`) instead of tar's 10 KiB: the files are read in the same order with the same
    readahead, in fewer and larger writes to the pipe (over a kernel tree here: 8.7-10.5 s
    of system time instead of 12.7-13.4 s)."""
    rel = [str(t.relative_to(ctx.mountpoint)) for t in trees]
    argv = ["tar", "-c", "-b", str(TAR_RECORD_BLOCKS), "-f", "-", *rel]
    res = proc.read_through_cat(argv, cwd=str(ctx.mountpoint))
    if not res.ok:
        raise TrialFailed(
            f"tar failed reading trees: {res.output.splitlines()[0]}", res.output[-4000:]
        )


class TreesParams(TreeParams):
    trees: int = Field(
        default=1, ge=1, le=64, description="trees on the filesystem (copies of the first)"
    )


class OnTrees(Workload[TreesParams]):
    """A workload on `trees` trees already on the filesystem (tree-read, tree-rm): its
    prepare makes them, untimed, unless an earlier step of the chain did."""

    scale_defaults = with_tree_defaults({})

    def __init__(self) -> None:
        self._src: SourceTree | None = None
        self._trees: list[Path] = []

    def required_bytes(self, params: TreesParams) -> int:
        return tree_bytes_estimate(params) * params.trees

    def prepare(self, ctx: TrialContext, params: TreesParams) -> None:
        self._src, self._trees = ensure_trees(ctx, params, params.trees)

    @property
    def source(self) -> SourceTree:
        """The source of the trees (set by prepare)."""
        assert self._src is not None, "prepare sets the trees"
        return self._src
