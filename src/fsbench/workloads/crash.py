"""crash: what each config loses when the power goes (VM target only).

In the guest, an application pattern (the VM target's crash patterns: an fsync()ed log, replace
by rename with and without fsync, an untarred tree then sync(), SQLite commits in WAL
mode) runs on a fresh filesystem of the config and acknowledges each operation to the
host over a virtio serial port as it happens; the host kills QEMU at a seeded moment,
boots the guest again on the same disk, runs the read-only fsck, mounts (journal
recovery, timed) and checks the files against the acknowledgements. One trial is
`crashes` power cuts; every metric is a count over them, never one lucky run. The VM
target does the work (its crash host); the runner never runs this workload itself.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fsbench.system.errors import Unsupported
from fsbench.workloads.base import Params, Scale, TrialContext, Workload
from fsbench.workloads.metric import Metric

Pattern = Literal[
    "fsync-append", "replace-rename", "replace-rename-fsync", "create-tree", "sqlite-commit"
]


class CrashParams(Params):
    pattern: Pattern = Field(
        default="fsync-append",
        description="the application pattern the power cuts: fsync-append, replace-rename, "
        "replace-rename-fsync, create-tree or sqlite-commit",
    )
    crashes: Annotated[int, Field(gt=0, description="power cuts per trial")]
    files: Annotated[int, Field(gt=0, description="files replaced, or untarred")] = 16
    window: Annotated[float, Field(gt=0, description="seconds: the latest moment of the cut")]
    seed: int = Field(default=1, description="the seed each crash's own seed derives from")
    replay: int = Field(
        default=0, description="a kept case's seed: every crash replays that case (0: off)"
    )
    volatile_cache: bool = Field(
        default=True,
        description="also check a state a disk with a volatile cache could leave "
        "(dm-log-writes: a flush point + some later writes)",
    )


class Crash(Workload[CrashParams]):
    name = "crash"
    summary = "power cuts during an application pattern: what survives (VM target)"
    # ext4's journal commits every 5 s: a window past it lets renames reach the journal.
    scale_defaults = {
        Scale.TINY: {"crashes": 3, "window": 7.0},
        Scale.QUICK: {"crashes": 20, "window": 10.0},
        Scale.FULL: {"crashes": 50, "window": 30.0, "files": 64},
    }
    # Every count reads with its N: "2 (5 crashes)" (the trial's provenance "over").
    headline = (
        "damaged_crashes",
        "acked_lost",
        "files_empty",
        "files_mixed",
        "fsck_errors",
        "cache_damaged",
    )
    vm_only = True
    # The N crashes inside a trial are the repetitions; each boots fresh guests, so a
    # warm-up round would only cost time.
    default_reps = 1
    warms = False

    @classmethod
    def missing(cls) -> str | None:
        from fsbench.system.qemu import qemu_missing

        return qemu_missing()

    def run(self, ctx: TrialContext, params: CrashParams) -> list[Metric]:
        raise Unsupported("crash runs on the VM target only: --target vm")
