"""One trial: fresh mkfs -> mount -> prepare (untimed) -> settle -> run (timed) ->
flush (sync + umount, timed when the workload says so) -> inspect (after remount).

The runner owns the clock and every mount it makes; whatever happens, the filesystem is
unmounted before `run_trial` returns or raises.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsbench import filesystems, fsops, system, workloads
from fsbench.errors import TrialFailed, Unsupported
from fsbench.monitors import diskstats
from fsbench.plan import Cell
from fsbench.store import MetricRecord, TrialRecord, now
from fsbench.targets.base import Target
from fsbench.workloads.base import Better, CacheState, Metric, Scale

# Below this a timed phase is dominated by timer resolution and noise (DESIGN: traps).
MIN_TIMED_SECONDS = 2.0


@dataclass
class _Context:
    """The TrialContext a workload sees."""

    fs: filesystems.FsType
    device: str
    mountpoint: Path
    mount_options: str
    flags: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mounted: bool = False

    @property
    def fs_type(self) -> str:
        return self.fs.name

    def sync(self) -> None:
        system.syncfs(self.mountpoint)

    def drop_caches(self) -> None:
        system.drop_caches()

    def mount(self) -> fsops.Made:
        made = fsops.mount(self.fs, self.device, self.mountpoint, self.mount_options)
        self.mounted = True
        return made

    def umount(self) -> None:
        warning = fsops.umount(self.mountpoint)
        self.mounted = False
        if warning:
            self.notes.append(warning)

    def remount(self) -> None:
        if self.mounted:
            self.umount()
        self.mount()
        system.drop_caches()

    def flag(self, name: str, detail: str) -> None:
        self.flags[name] = detail


def _metric(m: Metric) -> MetricRecord:
    return MetricRecord(m.name, float(m.value), m.unit, str(m.better))


class Runner:
    def __init__(self, target: Target, mount_root: Path, scale: Scale) -> None:
        self.target = target
        self.mountpoint = mount_root
        self.scale = scale
        self._kernel_fs = filesystems.kernel_filesystems()

    def run_trial(self, seq: int, rep: int, cell: Cell) -> TrialRecord:
        record = TrialRecord(
            seq=seq,
            rep=rep,
            cell_key=cell.key,
            config=cell.config.display,
            fs=cell.config.type,
            mkfs_options=list(cell.config.mkfs),
            mount_options=cell.config.mount,
            workload=cell.workload,
            params=cell.params,
            status="running",
            started_at=now(),
        )
        fs = filesystems.get(cell.config.type)
        ctx = _Context(fs, self.target.device, self.mountpoint, cell.config.mount)
        prov: dict[str, Any] = {}
        try:
            metrics = self._measure(fs, cell, ctx, prov)
            record.metrics = [_metric(m) for m in metrics]
            record.status = "ok"
        except Unsupported as exc:
            record.status, record.message, record.detail = "unsupported", exc.message, exc.detail
        except TrialFailed as exc:
            record.status, record.message, record.detail = "failed", exc.message, exc.detail
        except Exception as exc:  # a workload bug or an I/O error must not end the matrix
            record.status = "failed"
            record.message = f"{type(exc).__name__}: {exc}"
            record.detail = traceback.format_exc()
        finally:
            # Also on KeyboardInterrupt: never leave a mount behind.
            if ctx.mounted or fsops.is_mounted(self.mountpoint):
                try:
                    ctx.umount()
                except Exception as exc:  # reported, and the target's close() retries
                    ctx.notes.append(f"umount failed: {exc}")
        prov["flags"] = ctx.flags
        prov["notes"] = ctx.notes
        record.provenance = prov
        record.finished_at = now()
        return record

    def _measure(
        self, fs: filesystems.FsType, cell: Cell, ctx: _Context, prov: dict[str, Any]
    ) -> list[Metric]:
        avail = filesystems.availability(fs, self._kernel_fs)
        if not avail.available:
            raise Unsupported(f"{fs.name} unavailable: {avail.reason}")
        wl_cls = workloads.get(cell.workload)
        if fs.pseudo and wl_cls.needs_filesystem:
            raise Unsupported(f"{cell.workload} needs a filesystem; {fs.name} is the bare device")
        workload = wl_cls()
        params = wl_cls.params_model.model_validate(cell.params)

        self.target.reset()
        made = fsops.mkfs(fs, list(cell.config.mkfs), ctx.device)
        prov["mkfs"] = {
            "argv": made.argv,
            "seconds": round(made.seconds, 3),
            "output": made.output,
            "kernel": made.kernel,
        }
        mounted = ctx.mount()
        entry = fsops.mount_entry(ctx.mountpoint)
        effective = entry.options if entry else []
        geometry = fsops.geometry(fs, ctx.device)
        notes = fsops.mount_option_notes(cell.config.mount, effective, mounted.kernel)
        notes += fsops.mkfs_feature_notes(fs, list(cell.config.mkfs), geometry, made.output)
        prov["mount"] = {"argv": mounted.argv, "effective": effective, "kernel": mounted.kernel}
        prov["geometry"] = geometry
        prov["option_notes"] = [n.as_dict() for n in notes]

        workload.prepare(ctx, params)

        # Settle: everything prepare wrote is on disk; caches as the workload states.
        ctx.sync()
        if wl_cls.cache == CacheState.COLD_REMOUNT:
            ctx.remount()
        elif wl_cls.cache == CacheState.COLD:
            system.drop_caches()
        prov["cache"] = str(wl_cls.cache)

        before = diskstats.read(ctx.device)
        t0 = time.monotonic()
        metrics = list(workload.run(ctx, params))
        t_run = time.monotonic()
        if wl_cls.flush_in_timing:
            ctx.sync()
            ctx.umount()
        t_end = time.monotonic()
        after = diskstats.read(ctx.device)

        elapsed = t_end - t0
        if not any(m.name == "seconds" for m in metrics):
            metrics.append(Metric("seconds", elapsed, "s", Better.LOWER))
        if wl_cls.flush_in_timing:
            metrics.append(Metric("flush_seconds", t_end - t_run, "s", Better.LOWER))
        if before is not None and after is not None:
            delta = after - before
            metrics.append(Metric("device_write_bytes", delta.write_bytes, "B", Better.LOWER))
            metrics.append(Metric("device_read_bytes", delta.read_bytes, "B", Better.LOWER))
        if elapsed < MIN_TIMED_SECONDS and self.scale != Scale.TINY:
            ctx.flag("short", f"timed phase {elapsed:.2f} s < {MIN_TIMED_SECONDS:.0f} s")

        if wl_cls.has_inspect():
            if not ctx.mounted:
                ctx.mount()
            system.drop_caches()
            metrics += workload.inspect(ctx, params)
        if ctx.mounted:
            ctx.umount()
        return metrics


def mount_root(workdir: Path, pid: int | None = None) -> Path:
    return workdir / f"mnt-{pid or os.getpid()}"
