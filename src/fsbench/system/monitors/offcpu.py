"""The `offcpu` tracer: where the workload's threads waited, by kernel stack, and its CPU.

- **Off-CPU time** (`sched:sched_switch`, after Brendan Gregg's offcputime): when one of
  the workload's threads (its cgroup's, not fsbench's helper threads) is switched out, its
  kernel stack, state and the time; when it is switched back in, the time it was off the
  CPU is added to that stack. Folded `state;thread;root;...;leaf` -> seconds, the state
  `[R]` for a thread preempted while runnable (waiting for a CPU), `[D]` in an
  uninterruptible sleep (I/O, most often), `[S]` in an interruptible one. A wait that
  outlasts the timed phase counts up to its end.
- **Lock contention** (`lock:contention_begin`/`end`): time and count by the lock's kind
  (spinning, mutex, read or write side of a rwsem), and by the kernel stack that waited.
- **CPU** of the workload's cgroup (`cpu.stat`: user and system seconds, every thread of
  it) and its pressure stall times (`io.pressure`, `cpu.pressure`, `memory.pressure`: the
  time some task of it was stalled on each).

Each off-CPU stack is also classed by what it waited for (`wait_class`: the journal, a
cache flush, a lock, device I/O, a CPU, or idle: a parent waiting for its child, a poll),
and the time of each class is a metric (`offcpu_journal_s`...), which the account of the
gap (analysis/explain.py) compares across configs. Idle time is no part of the account.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from fsbench.system.metric import Better, Folded, Metric
from fsbench.system.monitors import bpfout, tracefs
from fsbench.system.monitors.base import Output, Site
from fsbench.system.monitors.bpftrace import BpftraceTracer, workload_filter

# sched_switch's prev_state: the task states it reports, and the bit it adds for a task
# preempted while runnable (TASK_REPORT_MAX, as its format prints "+").
PREEMPTED = 0x100
STATES = {1: "S", 2: "D"}
LOCK_KINDS = ((1 << 5, "mutex"), (1 << 2, "write"), (1 << 1, "read"), (1 << 0, "spin"))
PRESSURES = ("io", "cpu", "memory")
# What an off-CPU stack waited for: the first class (in this order) one of whose functions
# is a frame of it. A preempted thread ([R]) waited for a CPU whatever its stack.
RUNQUEUE, IDLE, OTHER = "runqueue", "idle", "other"
WAITS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "journal",
        frozenset(
            (
                "jbd2_log_wait_commit",
                "__jbd2_log_wait_for_space",
                "jbd2_log_do_checkpoint",
                "xlog_wait",
                "xlog_wait_on_iclog",
                "xlog_cil_force_seq",
                "btrfs_commit_transaction",
                "wait_current_trans",
                "btrfs_wait_tree_log",
            )
        ),
    ),
    ("flush", frozenset(("blkdev_issue_flush",))),
    (
        "lock",
        frozenset(
            (
                "__mutex_lock",
                "mutex_lock",
                "rwsem_down_read_slowpath",
                "rwsem_down_write_slowpath",
                "__down",
                "osq_lock",
            )
        ),
    ),
    (
        "device_io",
        frozenset(
            (
                "io_schedule",
                "io_schedule_timeout",
                "folio_wait_bit",
                "folio_wait_bit_common",
                "bit_wait_io",
                "blk_mq_get_tag",
                "submit_bio_wait",
                "__blkdev_direct_IO_simple",
                "iomap_dio_rw",
            )
        ),
    ),
    (
        IDLE,
        frozenset(
            (
                "do_wait",
                "do_sys_poll",
                "do_select",
                "ep_poll",
                "futex_wait",
                "futex_wait_queue",
                "do_nanosleep",
                "pipe_read",
                "wait_woken",
                "do_sigtimedwait",
            )
        ),
    ),
)
CLASSES = (RUNQUEUE, *(name for name, _ in WAITS), OTHER)


def state_of(prev_state: int) -> str:
    """The folded stack's root for a thread switched out in this state."""
    if prev_state == 0 or prev_state & PREEMPTED:
        return "[R]"
    return f"[{STATES.get(prev_state & 0xFF, 'other')}]"


def wait_class(folded: str) -> str:
    """What a folded off-CPU stack (`state;thread;root;...;leaf`) waited for."""
    parts = folded.split(";")
    if parts[0] == "[R]":
        return RUNQUEUE
    frames = set(parts[2:])
    return next((name for name, functions in WAITS if frames & functions), OTHER)


def lock_kind(flags: int) -> str:
    return next((name for bit, name in LOCK_KINDS if flags & bit), "other")


def cpu_stat(group: Path) -> dict[str, float]:
    """The group's cpu.stat in seconds (user_usec -> user...)."""
    out: dict[str, float] = {}
    for line in (group / "cpu.stat").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name.endswith("_usec"):
            out[name.removesuffix("_usec")] = int(value) / 1e6
    return out


def pressure(group: Path, resource: str) -> float:
    """Seconds some task of the group was stalled on `resource` (its `some total=`)."""
    try:
        text = (group / f"{resource}.pressure").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split():
                if field.startswith("total="):
                    return int(field.removeprefix("total=")) / 1e6
    return 0.0


class OffCpu(BpftraceTracer):
    name = "offcpu"
    summary = (
        "off-CPU time of the workload's threads by kernel stack and state, lock contention, "
        "the cgroup's CPU user/system and pressure stalls (bpftrace, cpu.stat)"
    )
    scratch: ClassVar[tuple[str, ...]] = ("ts", "st", "state", "lk_t", "lk_f", "lk_s")

    def __init__(self) -> None:
        super().__init__()
        self.before: dict[str, float] = {}
        self.after: dict[str, float] = {}

    def probes(self, site: Site) -> str:
        if site.cgroup is None:
            raise ValueError("the offcpu tracer needs the workload's own cgroup")
        mine = workload_filter(site.cgroup)
        out = [
            "tracepoint:sched:sched_switch {",
            f"  if (@on && {mine}) {{",
            "    @ts[tid] = nsecs; @st[tid] = kstack; @state[tid] = args->prev_state;",
            "  }",
            "  $n = args->next_pid;",
            "  $t = @ts[$n];",
            "  if ($t) {",
            "    $end = @on ? nsecs : @t0 + @window_ns;",
            "    @off[@st[$n], @state[$n], args->next_comm] = sum($end - $t);",
            "    delete(@ts[$n]); delete(@st[$n]); delete(@state[$n]);",
            "  }",
            "}",
        ]
        if tracefs.has_event("lock", "contention_begin"):
            out += [
                f"tracepoint:lock:contention_begin /@on && {mine}/ {{",
                "  @lk_t[tid] = nsecs; @lk_f[tid] = args->flags; @lk_s[tid] = kstack(16);",
                "}",
                "tracepoint:lock:contention_end /@lk_t[tid]/ {",
                "  $d = nsecs - @lk_t[tid];",
                "  @lock_ns[@lk_f[tid]] = sum($d); @lock_n[@lk_f[tid]] = count();",
                "  @lock_st[@lk_s[tid]] = sum($d);",
                "  delete(@lk_t[tid]); delete(@lk_f[tid]); delete(@lk_s[tid]);",
                "}",
            ]
        return "\n".join(out)

    def _read(self) -> dict[str, float]:
        assert self.site is not None and self.site.cgroup is not None
        found = cpu_stat(self.site.cgroup)
        found.update({f"{r}_stall": pressure(self.site.cgroup, r) for r in PRESSURES})
        return found

    def start(self) -> None:
        super().start()
        self.before = self._read()

    def stop(self) -> None:
        if self.site is not None and self.site.cgroup is not None and self.before:
            self.after = self._read()
        super().stop()

    def yields(self, site: Site, printed: bpfout.Printed, metrics: Sequence[Metric]) -> Output:
        grew = {k: self.after.get(k, 0.0) - v for k, v in self.before.items()}
        off: dict[str, float] = {}
        for key, ns in printed.maps.get("off", {}).items():
            stack, state, comm = bpfout.split_key(key, 3)
            folded = f"{state_of(int(state or 0))};{comm or '?'};{bpfout.folded(stack)}"
            off[folded] = off.get(folded, 0.0) + ns / 1e9
        locks_s: dict[str, float] = {}
        locks_n: dict[str, float] = {}
        for flags, ns in printed.maps.get("lock_ns", {}).items():
            kind = lock_kind(int(flags))
            locks_s[kind] = locks_s.get(kind, 0.0) + ns / 1e9
            locks_n[kind] = locks_n.get(kind, 0.0) + printed.value("lock_n", flags)
        by_class = dict.fromkeys(CLASSES, 0.0)
        for stack, seconds in off.items():
            by_class[wait_class(stack)] += seconds
        out = Output(
            metrics=[
                *(Metric(f"offcpu_{c}_s", s, "s", Better.LOWER) for c, s in by_class.items()),
                Metric("workload_cpu_user_s", grew.get("user", 0.0), "s", Better.LOWER),
                Metric("workload_cpu_system_s", grew.get("system", 0.0), "s", Better.LOWER),
                Metric("offcpu_s", sum(off.values()) - by_class[IDLE], "s", Better.LOWER),
                Metric("lock_wait_s", sum(locks_s.values()), "s", Better.LOWER),
                Metric("lock_waits", sum(locks_n.values()), "count", Better.LOWER, 1),
                *(
                    Metric(f"{r}_stall_s", grew.get(f"{r}_stall", 0.0), "s", Better.LOWER)
                    for r in PRESSURES
                ),
            ],
            folded=[
                Folded("offcpu", "s", off),
                Folded("locks", "s", {k: v / 1e9 for k, v in _lock_stacks(printed).items()}),
            ],
        )
        out.facts = {"lock_kinds_s": locks_s}
        return out


def _lock_stacks(printed: bpfout.Printed) -> dict[str, float]:
    return bpfout.fold_map(printed.maps.get("lock_st", {}))
