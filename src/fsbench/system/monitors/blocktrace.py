"""The `block-trace` tracer: what the workload asked of the kernel and what the devices did,
from tracepoints, aggregated in the kernel by bpftrace.

- **Requests** (`block:block_rq_issue`/`complete`) on the target device (`dev_*`) and,
  for a loop image, on the disk under it (`disk_*`), each number named by its device: by
  kind from the request's flags (read, write, flush, FUA, discard, sync, metadata), bytes,
  a size histogram, the queue depth at each issue (a histogram, and 10 Hz over time), and
  the time at least one request was in flight (busy time).
- **Who submitted the writes** (`block:block_bio_queue` on the target): the workload's
  own threads (it waited for them: fsync, O_SYNC, O_DIRECT), the flusher and the
  filesystems' workqueues (kworker), the journal threads (jbd2), other kernel threads.
- **Journals and transactions**, by filesystem: jbd2 commits, their time (start to end)
  and blocks logged (ext4); log forces, log writes and transaction commits (xfs);
  transaction commits (btrfs: its tracepoint names no device, so every btrfs is counted).
- **What the workload asked**: bytes it passed to write(2)/pwrite(2)/writev(2) and the
  read calls, its fsync/fdatasync and sync/syncfs calls (its cgroup's threads), so that
  device bytes per byte asked and flushes per fsync are measured, not guessed. I/O through
  mmap, io_uring or aio is not in these counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from fsbench.system.metric import Better, Folded, Metric
from fsbench.system.monitors import bpfout, tracefs
from fsbench.system.monitors.base import Output, Site
from fsbench.system.monitors.bpftrace import BpftraceTracer, fstype, workload_filter

# The two devices a number can be of.
DEV, DISK = "dev", "disk"
OPS = "WRDFNEZ"  # a request's operation letter in rwbs (blk_fill_rwbs)
# Who submitted a write, by the submitting thread's name (the workload's by its cgroup).
SUBMITTERS = (("kworker", "writeback"), ("jbd2", "journal"))
SYSCALL_WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
SYSCALL_READS = ("read", "pread64", "readv", "preadv", "preadv2")
# Per filesystem: (tracepoint, the map it counts into, whether it carries the device).
JOURNAL_EVENTS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "xfs": (
        ("xfs:xfs_log_force", "log_forces", True),
        ("xfs:xlog_iclog_sync", "log_writes", True),
        ("xfs:xfs_trans_commit", "transaction_commits", True),
    ),
    "btrfs": (("btrfs:btrfs_transaction_commit", "transaction_commits", False),),
}
JBD2 = ("ext4", "ext3", "ext2")


@dataclass(frozen=True)
class Request:
    """A block request's kind, from its rwbs text: the operation and its flags."""

    op: str  # W write, R read, D discard, F flush, N other
    preflush: bool = False  # a cache flush before it
    fua: bool = False  # written through the device's cache
    sync: bool = False
    meta: bool = False

    @classmethod
    def of(cls, rwbs: str) -> Request:
        text = rwbs.strip()
        preflush = len(text) > 1 and text[0] == "F" and text[1] in OPS
        rest = text[1:] if preflush else text
        if not rest:
            return cls("N")
        op, flags = rest[0], rest[1:]
        return cls(op, preflush, "F" in flags, "S" in flags, "M" in flags)


def _ev(name: str) -> str:
    return f"tracepoint:{name}"


class BlockTrace(BpftraceTracer):
    name = "block-trace"
    summary = (
        "block requests by kind and size on the target and the disk under it, queue depth, "
        "busy time, who submitted the writes, journal commits and log forces, what the "
        "workload asked to write and sync (bpftrace)"
    )
    scratch: ClassVar[tuple[str, ...]] = ("inflight", "busy_t0", "jstart")

    def __init__(self) -> None:
        super().__init__()
        self.journal: list[str] = []  # the journal maps its script counts into

    def devices(self, site: Site) -> dict[str, int]:
        found = {DEV: tracefs.dev_t(site.device)}
        if site.backing:
            found[DISK] = tracefs.dev_t(site.backing)
        return found

    def probes(self, site: Site) -> str:
        devs = self.devices(site)
        target = devs[DEV]
        on_devs = " || ".join(f"args->dev == {d}" for d in devs.values())
        mine = workload_filter(site.cgroup) if site.cgroup else "0"
        depth = ", ".join(f"@inflight[{d}]" for d in devs.values())
        fields = " ".join(["%d"] * len(devs))
        out = [
            f"{_ev('block:block_rq_issue')} /@on && ({on_devs})/ {{",
            "  @req[args->dev, args->rwbs] = count();",
            "  @bytes[args->dev, args->rwbs] = sum(args->bytes);",
            "  @size[args->dev, args->rwbs] = hist(args->bytes);",
            "  @inflight[args->dev] = @inflight[args->dev] + 1;",
            "  @depth[args->dev] = lhist(@inflight[args->dev], 0, 256, 1);",
            "  if (@inflight[args->dev] == 1) { @busy_t0[args->dev] = nsecs; }",
            "}",
            f"{_ev('block:block_rq_complete')} /@on && @inflight[args->dev] > 0/ {{",
            "  @inflight[args->dev] = @inflight[args->dev] - 1;",
            "  if (@inflight[args->dev] == 0) {",
            "    @busy_ns[args->dev] = sum(nsecs - @busy_t0[args->dev]);",
            "  }",
            "}",
            f'interval:ms:100 /@on/ {{ printf("depth {fields}\\n", {depth}); }}',
            f"{_ev('block:block_bio_queue')} /@on && args->dev == {target}/ {{",
            f"  if ({mine}) {{ @bio_own[args->rwbs] = sum(args->nr_sector * 512); }}",
            "  else { @bio_kernel[comm, args->rwbs] = sum(args->nr_sector * 512); }",
            "}",
        ]
        calls: list[tuple[tuple[str, ...], str]] = [
            (SYSCALL_WRITES, "asked_write_bytes"),
            (SYSCALL_READS, "asked_read_bytes"),
        ]
        for names, into in calls:
            probes = ", ".join(
                _ev(f"syscalls:sys_exit_{n}")
                for n in names
                if tracefs.has_event("syscalls", f"sys_exit_{n}")
            )
            if probes:
                out.append(
                    f"{probes} /@on && {mine} && args->ret > 0/ {{ @{into} = sum(args->ret); }}"
                )
        calls = [(("fsync", "fdatasync"), "fsyncs"), (("sync", "syncfs"), "syncs")]
        for names, into in calls:
            probes = ", ".join(_ev(f"syscalls:sys_enter_{n}") for n in names)
            out.append(f"{probes} /@on && {mine}/ {{ @{into} = count(); }}")
        out += self._journal(site, target)
        return "\n".join(out)

    def _journal(self, site: Site, target: int) -> list[str]:
        kind = fstype(site.mountpoint)
        out: list[str] = []
        if kind in JBD2 and tracefs.has_event("jbd2", "jbd2_end_commit"):
            self.journal += ["journal_commits", "journal_commit_ns", "journal_blocks"]
            on = f"/@on && args->dev == {target}/"
            out += [
                f"{_ev('jbd2:jbd2_start_commit')} {on} {{ @jstart[args->transaction] = nsecs; }}",
                f"{_ev('jbd2:jbd2_end_commit')} {on} {{",
                "  @journal_commits = count();",
                "  $s = @jstart[args->transaction];",
                "  if ($s) {",
                "    @journal_commit_ns = sum(nsecs - $s);",
                "    delete(@jstart[args->transaction]);",
                "  }",
                "}",
                f"{_ev('jbd2:jbd2_run_stats')} {on} {{",
                "  @journal_blocks = sum(args->blocks_logged);",
                "}",
            ]
        for event, into, has_dev in JOURNAL_EVENTS.get(kind, ()):
            group, name = event.split(":")
            if tracefs.has_event(group, name):
                where = f" && args->dev == {target}" if has_dev else ""
                self.journal.append(into)
                out.append(f"{_ev(event)} /@on{where}/ {{ @{into} = count(); }}")
        return out

    def yields(self, site: Site, printed: bpfout.Printed, metrics: Sequence[Metric]) -> Output:
        devs = self.devices(site)
        out = Output()
        for role, number in devs.items():
            out.metrics += _requests(role, str(number), printed)
            out.folded += _histograms(role, str(number), printed)
        out.folded.append(_over_time(list(devs), printed.printed))
        out.metrics += _submitters(printed)
        out.metrics += _journal_metrics(self.journal, printed)
        out.metrics += _asked(printed)
        out.metrics += _per_asked(out.metrics)
        kind = fstype(site.mountpoint)
        out.facts = {
            "devices": {role: site.device if role == DEV else site.backing for role in devs},
            "filesystem": kind,
            "every_btrfs": kind == "btrfs",  # btrfs's commits name no device
        }
        return out


def _count(name: str, value: float) -> Metric:
    return Metric(name, value, "count", Better.LOWER, 1)


def _requests(role: str, number: str, printed: bpfout.Printed) -> list[Metric]:
    counts: dict[str, float] = {}
    sizes: dict[str, float] = {}
    busy = printed.value("busy_ns", number) / 1e9
    for key, n in printed.maps.get("req", {}).items():
        dev, rwbs = bpfout.split_key(key, 2)
        if dev != number:
            continue
        r = Request.of(rwbs)
        nbytes = printed.value("bytes", key)
        kinds = {"W": "write", "R": "read", "D": "discard", "F": "flush"}
        kind = kinds.get(r.op, "other")
        counts[kind] = counts.get(kind, 0.0) + n
        sizes[kind] = sizes.get(kind, 0.0) + nbytes
        for flag, name in (
            (r.preflush and r.op != "F", "flush"),  # "FF": one flush, not two
            (r.fua, "fua"),
            (r.sync and r.op == "W", "sync_write"),
            (r.meta, "meta"),
        ):
            if flag:
                counts[name] = counts.get(name, 0.0) + n
    out = [
        _count(f"{role}_{k}_requests", counts.get(k, 0.0))
        for k in ("read", "write", "flush", "fua", "discard", "sync_write", "meta")
    ]
    out += [
        Metric(f"{role}_{k}_bytes", sizes.get(k, 0.0), "B", Better.LOWER)
        for k in ("read", "write", "discard")
    ]
    out.append(Metric(f"{role}_busy_s", busy, "s", Better.LOWER))
    depth = printed.hists.get("depth", {}).get(number, {})
    issued = sum(depth.values())
    if issued:
        mean = sum(low * n for low, n in depth.items()) / issued
        out.append(Metric(f"{role}_queue_depth", mean, "requests", Better.LOWER))
    return out


def _histograms(role: str, number: str, printed: bpfout.Printed) -> list[Folded]:
    by_op: dict[str, dict[str, float]] = {"write": {}, "read": {}}
    for key, buckets in printed.hists.get("size", {}).items():
        dev, rwbs = bpfout.split_key(key, 2)
        op = {"W": "write", "R": "read"}.get(Request.of(rwbs).op)
        if dev != number or op is None:
            continue
        for low, n in buckets.items():
            by_op[op][str(low)] = by_op[op].get(str(low), 0.0) + n
    out = [Folded(f"{role}.{op}_size", "requests", v) for op, v in by_op.items() if v]
    depth = printed.hists.get("depth", {}).get(number, {})
    if depth:
        out.append(
            Folded(f"{role}.queue_depth", "requests", {str(k): float(n) for k, n in depth.items()})
        )
    return out


def _over_time(roles: list[str], lines: list[str]) -> Folded:
    """The 10 Hz in-flight counts: `role@t` -> depth (t in seconds from the start)."""
    values: dict[str, float] = {}
    depths = [line.split()[1:] for line in lines if line.startswith("depth ")]
    for i, fields in enumerate(depths):
        if len(fields) != len(roles):
            continue
        for role, depth in zip(roles, fields, strict=True):
            values[f"{role}@{(i + 1) / 10:.1f}"] = float(depth)
    return Folded("queue_depth_over_time", "requests", values)


def _submitters(printed: bpfout.Printed) -> list[Metric]:
    who: dict[str, float] = {"workload": 0.0, "writeback": 0.0, "journal": 0.0, "other": 0.0}
    for rwbs, n in printed.maps.get("bio_own", {}).items():
        if Request.of(rwbs).op == "W":
            who["workload"] += n
    for key, n in printed.maps.get("bio_kernel", {}).items():
        comm, rwbs = bpfout.split_key(key, 2)
        if Request.of(rwbs).op != "W":
            continue
        found = next((role for prefix, role in SUBMITTERS if comm.startswith(prefix)), "other")
        who[found] += n
    return [Metric(f"dev_write_bytes_by_{k}", v, "B", Better.LOWER) for k, v in who.items()]


def _journal_metrics(counted: list[str], printed: bpfout.Printed) -> list[Metric]:
    out = []
    for name in counted:
        if name == "journal_commit_ns":
            seconds = printed.value(name) / 1e9
            out.append(Metric("journal_commit_s", seconds, "s", Better.LOWER))
        else:
            out.append(_count(name, printed.value(name)))
    return out


def _per_asked(metrics: Sequence[Metric]) -> list[Metric]:
    """Counts that explain by themselves: the target's bytes written per byte the workload
    asked to write, and its cache flushes (and FUA writes) per fsync the workload called."""
    got = {m.name: m.value for m in metrics}
    out = []
    if got.get("asked_write_bytes", 0.0) > 0:
        per = got.get("dev_write_bytes", 0.0) / got["asked_write_bytes"]
        out.append(Metric("dev_bytes_per_asked_byte", per, "x", Better.LOWER))
    if got.get("fsyncs", 0.0) > 0:
        flushes = got.get("dev_flush_requests", 0.0) + got.get("dev_fua_requests", 0.0)
        out.append(Metric("flushes_per_fsync", flushes / got["fsyncs"], "x", Better.LOWER))
    return out


def _asked(printed: bpfout.Printed) -> list[Metric]:
    return [
        Metric("asked_write_bytes", printed.value("asked_write_bytes"), "B", Better.LOWER),
        Metric("asked_read_bytes", printed.value("asked_read_bytes"), "B", Better.LOWER),
        _count("fsyncs", printed.value("fsyncs")),
        _count("syncs", printed.value("syncs")),
    ]
