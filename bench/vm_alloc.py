"""The VM target's acceptance check, before the CLI has `--target vm`: alloc at `tiny`
scale on the filesystems the host kernel lacks, every method, 2 reps, in one guest.

    .venv/bin/python bench/vm_alloc.py [--fs jfs,reiserfs,f2fs,nilfs2] [--reps 2] [--kernel K]
"""

from __future__ import annotations

import argparse
import time

from fsbench.execute import schedule
from fsbench.plan.model import Plan, expand, parse_fs_spec
from fsbench.vm import VmCell, VmJob, VmSpec, import_records, run_in_vm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fs", default="jfs,reiserfs,f2fs,nilfs2")
    ap.add_argument("--workload", default="alloc")
    ap.add_argument("--scale", default="tiny")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--kernel", default=None)
    args = ap.parse_args()
    plan = Plan.model_validate(
        {
            "scale": args.scale,
            "reps": args.reps,
            "fs": [c.model_dump() for c in parse_fs_spec(args.fs)],
            "workload": [{"name": args.workload}],
        }
    )
    cells = expand(plan)
    # The run's own order: a warm-up round, then balanced shuffled rounds.
    slots = schedule.build(cells, plan.planned_reps, seed=schedule.new_seed())
    job = VmJob(
        [VmCell.of(s.seq, s.rep, s.cell, s.position) for s in slots],
        plan.scale.value,
        plan.timeout,
        plan.model_dump(mode="json"),
    )
    t0 = time.monotonic()

    def log(text: str) -> None:
        print(f"[{time.monotonic() - t0:6.1f}] {text}", flush=True)

    result = run_in_vm(
        job, VmSpec(kernel=args.kernel, scratch_bytes=plan.target.image_size), log=log
    )
    log(f"ok={result.ok} console={result.console_log}")
    if result.error:
        print(result.error)
    for r in import_records(result):
        shown = ", ".join(f"{m.name}={m.value:.3g}" for m in r.metrics[:3])
        print(
            f"{r.seq:3} rep {r.rep} {r.config:10} {r.params.get('method', ''):10} {r.status:11} "
            f"{r.message[:70] or shown}"
        )
    vm = result.provenance
    print(
        f"guest kernel {vm.get('guest', {}).get('kernel')}, qemu {vm['qemu_version']}, "
        f"{vm['accel']}, boot {vm.get('boot_seconds')} s, job {vm.get('job_seconds')} s"
    )


if __name__ == "__main__":
    main()
