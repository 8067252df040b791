"""fsck: read-only check of the filesystem holding the tree, after umount (e2fsck -fn,
xfs_repair -n, btrfs check --readonly...): seconds, plus the fsck's own fragmentation
report where it gives one ("% non-contiguous"; xfs_db's fragmentation factor for xfs).

A check that finds problems is a result (`fsck_exit`, flagged `fsck-problems`); a checker
that could not check (e2fsck's operational error 8, usage error 16, cancel 32, library
error 128; a timeout) fails the trial with its own words: its time is not a timing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from fsbench.system import filesystems, proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads import _trees
from fsbench.workloads._tools import first_error_line, tool_failed
from fsbench.workloads.base import CacheState, Flush, TrialContext, Workload
from fsbench.workloads.metric import Better, Metric

TIMEOUT = 7200.0
# The exit statuses of a check that ran to its verdict, by checker (argv[0]); any other
# status is the checker failing. fsck(8)'s convention (e2fsck, fsck.jfs, reiserfsck): the
# bits 1 (corrected), 2 (reboot) and 4 (left uncorrected) are verdicts; 8 (operational
# error), 16 (usage), 32 (cancelled) and 128 (shared library) are failures.
# xfs_repair -n and btrfs check: 0 clean, 1 problems found, but 1 as well when they could
# not check at all (a device they cannot open): their verdict follows what they print
# once they really check.
FSCK_CONVENTION = frozenset(range(8))
VERDICTS: dict[str, frozenset[int]] = {
    "xfs_repair": frozenset({0, 1}),
    "btrfs": frozenset({0, 1}),
}
CHECKING: dict[str, str] = {
    "xfs_repair": "Phase 1 - find and verify superblock",
    "btrfs": "Checking filesystem on",
}


def checker_failed(argv: list[str], res: proc.Result) -> TrialFailed | None:
    """The trial's failure when the checker itself failed (or timed out), else None."""
    tool = argv[0]
    started = CHECKING.get(tool)
    if res.returncode in VERDICTS.get(tool, FSCK_CONVENTION) and (
        res.returncode == 0 or started is None or started in res.output
    ):
        return None
    if res.returncode == 124:
        return tool_failed(tool, res, f"timed out after {TIMEOUT:.0f} s")
    why = f"the checker failed (exit status {res.returncode}): {first_error_line(res)}"
    return tool_failed(tool, res, why)


class FsckParams(_trees.TreeParams):
    pass


class Fsck(Workload[FsckParams]):
    name = "fsck"
    summary = "read-only fsck of the filesystem holding the tree, unmounted"
    scale_defaults = _trees.with_tree_defaults({})
    cache = CacheState.COLD
    flush = Flush.NONE
    needs_mount = False
    headline = ("seconds", "noncontiguous_pct", "fragmentation_factor_pct")

    def __init__(self) -> None:
        self._problems = ""

    def required_bytes(self, params: FsckParams) -> int:
        return _trees.tree_bytes_estimate(params)

    def prepare(self, ctx: TrialContext, params: FsckParams) -> None:
        if not filesystems.get(ctx.fs_type).fsck_readonly:
            raise Unsupported(f"no read-only fsck known for {ctx.fs_type}")
        _trees.ensure_trees(ctx, params, 1)

    def run(self, ctx: TrialContext, params: FsckParams) -> list[Metric]:
        fs = filesystems.get(ctx.fs_type)
        argv = [*fs.fsck_readonly, ctx.device]
        res = proc.run(argv, timeout=TIMEOUT)
        if res.returncode == 127:
            raise Unsupported(res.output)
        failed = checker_failed(argv, res)
        if failed is not None:
            raise failed
        metrics = [Metric("fsck_exit", res.returncode, "code", Better.LOWER, resolution=1)]
        if res.returncode != 0:
            # A read-only check that finds something is a result, not a crash.
            self._problems = res.output[-2000:]
        if fs.fsck_frag_regex:
            m = re.search(fs.fsck_frag_regex, res.stdout + res.stderr)
            if m:
                metrics.append(_percent("noncontiguous_pct", m.group(1)))
        return metrics

    def inspect(self, ctx: TrialContext, params: FsckParams) -> list[Metric]:
        fs = filesystems.get(ctx.fs_type)
        if not fs.frag_report:
            return []
        res = proc.run([*fs.frag_report, ctx.device], timeout=600)
        m = re.search(fs.frag_report_regex, res.stdout) if res.ok else None
        if not m:
            return []
        return [_percent("fragmentation_factor_pct", m.group(1))]

    def check(self, params: FsckParams, metrics: Mapping[str, float]) -> dict[str, str]:
        if self._problems:
            return {"fsck-problems": (self._problems.splitlines() or [""])[-1]}
        return {}


def _percent(name: str, printed: str) -> Metric:
    """A percentage as the tool printed it: its last decimal is its resolution ("3.9"
    -> 0.1, "12.34" -> 0.01, "7" -> 1)."""
    decimals = len(printed.partition(".")[2])
    return Metric(name, float(printed), "%", Better.LOWER, resolution=10.0**-decimals)
