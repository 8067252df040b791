"""The `profile` tracer: a sampled CPU profile of the workload's threads, by kernel stack.

`profile:hz:99` (a perf cpu-clock event on every CPU, the one this VM has: no hardware
counters) samples whatever runs; a sample of one of the workload's threads (its cgroup's,
not fsbench's helper threads) counts for its kernel stack, or for `[user]` when it ran in
user mode. Folded `thread;root;...;leaf` -> samples; at 99 Hz a sample stands for about
10 ms of one CPU. Where the kernel's CPU time goes: the account names the top kernel
symbols (the leaf frames) of each config.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.system.metric import Better, Folded, Metric
from fsbench.system.monitors import bpfout
from fsbench.system.monitors.base import Output, Site
from fsbench.system.monitors.bpftrace import BpftraceTracer, workload_filter

HZ = 99


class Profile(BpftraceTracer):
    name = "profile"
    summary = f"the workload's threads sampled at {HZ} Hz by kernel stack (bpftrace)"

    def probes(self, site: Site) -> str:
        if site.cgroup is None:
            raise ValueError("the profile tracer needs the workload's own cgroup")
        mine = workload_filter(site.cgroup)
        return f"profile:hz:{HZ} /@on && {mine}/ {{ @prof[kstack, comm] = count(); }}"

    def yields(self, site: Site, printed: bpfout.Printed, metrics: Sequence[Metric]) -> Output:
        samples: dict[str, float] = {}
        for key, n in printed.maps.get("prof", {}).items():
            stack, comm = bpfout.split_key(key, 2)
            folded = f"{comm or '?'};{bpfout.folded(stack)}"
            samples[folded] = samples.get(folded, 0.0) + n
        user = sum(n for k, n in samples.items() if k.endswith(f";{bpfout.USER}"))
        total = sum(samples.values())
        return Output(
            metrics=[
                Metric("profile_samples", total, "count", Better.LOWER, 1),
                Metric("profile_kernel_samples", total - user, "count", Better.LOWER, 1),
            ],
            folded=[Folded("profile", "samples", samples)],
            facts={"hz": HZ},
        )
