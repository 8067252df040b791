"""aging: the filesystem aged in stages on one mkfs (by the cell's age: git pulls by
default, or churn), and after each stage the tree read back cold twice (`grep -r` of a
string that is not there, and `tar` through `cat`), on the aged filesystem and on a clean
copy of the same tree on a fresh mkfs of the same config (a second device like the
target), as Conway et al. compared them (FAST'17). Each stage, state and read is a step of
the trial: `at` says how far aged (pulls, or the fraction of the volume written).

Metrics: the read's `seconds` and MB/s, `aging_slowdown` (aged seconds / clean seconds, on
the clean copy's rows), and after the first read of each state, untimed: the layout score,
the share of fragmented files, the free space's fragmentation (ext4, xfs), and the
seconds of a read-only fsck and of a mount.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field

from fsbench.system import filesystems, proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import _trees
from fsbench.workloads.aging import NONE, parse
from fsbench.workloads.aging import measure as age_measure
from fsbench.workloads.aging.apply import Ager
from fsbench.workloads.base import CacheState, Flush, Params, Scale, Tool, TrialContext, Workload
from fsbench.workloads.metric import MB_PER_S, Better, Metric

STATES = ("aged", "clean")
READS = ("grep", "tar")
ABSENT = f"fsbench-absent-{uuid.UUID(int=2017).hex}"  # in no file: grep reads every byte


class AgingParams(Params):
    steps: int = Field(
        default=3, ge=1, le=100, description="measurement stages, evenly spread over the aging"
    )
    # The stage of a step (set by `stages`, one value each).
    at: float | None = Field(
        default=None,
        description="the stage: how far aged when measured (pulls done, or the fraction of "
        "the volume written); set by the stages",
    )
    state: Literal["aged", "clean"] | None = Field(
        default=None,
        description="the stage: the aged filesystem, or a clean copy of its tree on a fresh "
        "mkfs of the same config; set by the stages",
    )
    read: Literal["grep", "tar"] | None = Field(
        default=None,
        description="the stage: the cold recursive read timed (grep -r of an absent "
        "string, or tar through cat); set by the stages",
    )


class Aging(Workload[AgingParams]):
    name = "aging"
    summary = (
        "age in stages (git pulls, churn), after each read the tree cold, aged and as a "
        "clean copy: layout score, read seconds, aging slowdown"
    )
    scale_defaults = {
        Scale.TINY: {"steps": 2},
        Scale.QUICK: {"steps": 2},
        Scale.FULL: {"steps": 10},
    }
    tools = (Tool("git", "git"), Tool("grep", "grep"), Tool("tar", "tar"), Tool("cp", "coreutils"))
    cache = CacheState.COLD_REMOUNT
    flush = Flush.NONE
    headline = ("aging_slowdown", "seconds", "layout_score")
    ages_itself = True
    default_age = "git-pulls"

    def __init__(self) -> None:
        self._ager: Ager | None = None
        self._clean: TrialContext | None = None
        self._clean_at: float | None = None
        self._bytes: dict[str, int] = {}  # tree bytes, per copy
        self._aged_seconds: dict[tuple[float, str], float] = {}

    def stages(self, params: AgingParams, age: str, scale: Scale) -> list[dict[str, object]]:
        if parse(age)[0] == NONE:
            return [{}]  # refused in prepare, with the reason
        end = Ager(age, scale).end
        whole = float(end).is_integer() and end >= params.steps  # pulls: whole numbers
        points = [end * k / params.steps for k in range(1, params.steps + 1)]
        ats = [float(round(p)) if whole else round(p, 6) for p in points]
        return [
            {"at": at, "state": state, "read": read}
            for at in dict.fromkeys(ats)
            for state in STATES
            for read in READS
        ]

    def prepare(self, ctx: TrialContext, params: AgingParams) -> None:
        if parse(ctx.age)[0] == NONE or params.at is None:
            raise Unsupported(f"{self.name} ages the filesystem itself: --age git-pulls or churn")
        if self._ager is None:
            self._ager = Ager(ctx.age, ctx.scale)
        if params.state == "aged" and self._ager.at < params.at:
            self._ager.advance(ctx, params.at)
            self._bytes["aged"] = _tree_bytes(self._ager.recipe.tree(ctx))
        if params.state == "clean" and self._clean_at != params.at:
            t0 = time.monotonic()
            self._clean = ctx.fresh_twin()
            source = self._ager.recipe.tree(ctx)
            dest = self._clean.mountpoint / source.relative_to(ctx.mountpoint)
            dest.parent.mkdir(parents=True, exist_ok=True)
            res = proc.run(["cp", "-a", str(source), str(dest)], timeout=24 * 3600)
            if not res.ok:
                raise TrialFailed(f"cp -a of the aged tree: {res.output.splitlines()[0]}")
            self._clean.sync()
            self._clean_at = params.at
            self._bytes["clean"] = _tree_bytes(dest)
            ctx.facts["clean_copy_seconds"] = round(time.monotonic() - t0, 3)
        ctx.facts["age"] = self._ager.aged(ctx).as_dict()

    def run_context(self, ctx: TrialContext, params: AgingParams) -> TrialContext:
        if params.state == "clean":
            if self._clean is None:
                raise TrialFailed("aging: the clean copy was not made")
            return self._clean
        return ctx

    def _tree(self, ctx: TrialContext) -> Path:
        assert self._ager is not None
        return ctx.mountpoint / self._ager.recipe.tree(ctx).relative_to(ctx.mountpoint)

    def run(self, ctx: TrialContext, params: AgingParams) -> list[Metric]:
        tree = self._tree(ctx)
        if params.read == "grep":
            argv = ["grep", "-r", "-a", "-F", "-q", "-e", ABSENT, str(tree)]
            res = proc.run(argv, timeout=24 * 3600)
            if res.returncode != 1:  # 1: not found, as meant; 0 cannot be; 2: an error
                said = res.output.splitlines()[0] if res.output else f"exit {res.returncode}"
                raise TrialFailed(f"grep -r: {said}")
        else:
            _trees.read_trees(ctx, [tree])
        data = self._bytes.get(params.state or "aged", 0)
        return [Metric("data_bytes", data, "B", Better.HIGHER)]

    def derive(self, params: AgingParams, metrics: Mapping[str, float]) -> list[Metric]:
        out = MB_PER_S.of(metrics)
        key = (params.at or 0.0, params.read or "")
        if params.state == "aged":
            self._aged_seconds[key] = metrics["seconds"]
        elif key in self._aged_seconds and metrics.get("seconds"):
            slowdown = self._aged_seconds[key] / metrics["seconds"]
            out.append(Metric("aging_slowdown", slowdown, "ratio", Better.LOWER))
        return out

    def expected_read_bytes(
        self, params: AgingParams, metrics: Mapping[str, float]
    ) -> float | None:
        return metrics.get("data_bytes")

    def inspect(self, ctx: TrialContext, params: AgingParams) -> list[Metric]:
        if params.read != READS[0]:  # once per state and stage
            return []
        fs = filesystems.get(ctx.fs_type)
        block = _block_size(ctx.mountpoint)
        found = age_measure.layout(self._tree(ctx), block)
        out = [
            Metric("fragmented_files_pct", found.fragmented_pct, "%", Better.LOWER),
            Metric("tree_files", found.files, "count", Better.HIGHER, resolution=1),
        ]
        if found.score is not None:
            out.append(Metric("layout_score", found.score, "ratio", Better.HIGHER))
        ctx.sync()
        free = age_measure.free_space(fs, ctx.device, block)
        if free is not None:
            out += [
                Metric("free_extents", free.extents, "count", Better.LOWER, resolution=1),
                Metric("free_extent_mean_bytes", free.mean_extent_bytes, "B", Better.HIGHER),
            ]
        out += _fsck_and_mount(ctx, fs)
        return out


def _tree_bytes(tree: Path) -> int:
    return sum(p.stat().st_size for p in age_measure.reader_order(tree))


def _block_size(path: Path) -> int:
    return os.statvfs(path).f_bsize


def _fsck_and_mount(ctx: TrialContext, fs: filesystems.FsType) -> list[Metric]:
    """Seconds of a read-only fsck of the unmounted filesystem, and of mounting it again."""
    out: list[Metric] = []
    ctx.umount()
    try:
        if fs.fsck_readonly:
            t0 = time.monotonic()
            res = proc.run([*fs.fsck_readonly, ctx.device], timeout=24 * 3600)
            if res.returncode != 127:
                out.append(Metric("fsck_seconds", time.monotonic() - t0, "s", Better.LOWER))
    finally:
        t0 = time.monotonic()
        ctx.mount()
        out.append(Metric("mount_seconds", time.monotonic() - t0, "s", Better.LOWER))
    return out
