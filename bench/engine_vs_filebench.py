"""fsbench-engine against filebench itself: fileserver, varmail and webserver on ext4, xfs
and btrfs at 1, 16 and 64 threads, the two tools alternating round by round on a fresh
filesystem for every trial. Reports, per cell, the ratio engine / filebench (ops/s) with
its 90% confidence interval and an equivalence-style verdict, and the engine's own CPU
per operation against the system time it causes.

    python3 bench/engine_vs_filebench.py --filebench /path/to/filebench
        [--engine PATH] [--fs ext4,xfs,btrfs] [--threads 1,16,64]
        [--personalities fileserver,varmail,webserver] [--seconds 10] [--rounds 2]
        [--image-size 8G] [--workdir /work/tmp] [-o bench/results/engine_vs_filebench.json]

Needs root (mkfs, mount, losetup, ASLR), mkfs.ext4/xfs/btrfs. Not part of the test run.

**Getting filebench** (unmaintained; 1.5-alpha3 is its last release, the master branch
has only fixes since): its public source is github.com/filebench/filebench. Then

    apt-get install bison flex autoconf automake libtool gcc make
    cd filebench && libtoolize && aclocal && autoheader && automake --add-missing \\
        && autoconf && ./configure --prefix=$PWD/inst && make -j2 && make install

and pass `--filebench $PWD/inst/bin/filebench`. The prefix matters: filebench finds its
size distributions (`cvar-gamma`, used by all three personalities) in
`<prefix>/lib/filebench`, and this bench reads the personalities from filebench's own
`<prefix>/share/filebench/workloads/*.f` (so both tools run filebench's definitions, not
a copy of them); only `$dir`, `$nthreads` and the run length are changed. filebench
needs ASLR off: the bench writes 0 to /proc/sys/kernel/randomize_va_space for each
filebench run and restores the old value after it, on every path.

**A trial**: a fresh sparse image file (fsbench's `LoopImage`: `losetup --direct-io=on`),
mkfs and mount by fsbench's catalogue and `fsops` (ext4 without lazy init), then the
tool: filebench `-f personality.f` (`create files`, `system "sync -f <mnt>"`, `run
<seconds>`; ops/s from its `IO Summary`), or the engine as fsbench drives it
(`fsbench-engine prepare`: fileset and syncfs; then `run` on the reused fileset,
`--seconds` counted from its threads' start, as filebench counts: no warm-up by default,
`--engine-warmup S` for one. Until 2026-11-26 04:00 UTC the engine ran 1 s uncounted
first, so it was measured over seconds 1-11 of its run and filebench over 0-10: not the
same window when a run's rate changes as it goes, faster at first while nothing is being
written back, slower at first while caches warm). Both so start with their fileset on disk and in
the page cache: filebench's own `run` would start with it still dirty (it never syncs),
so that its first pass over the fileset deletes files that were never written out,
much cheaper work than the engine's (ext4 at 1 thread: 42k against 33k ops/s).
`--filebench-as-shipped` runs filebench's own `run` instead, as a user would.
Then unmount, detach, delete the image. Every flowop counts as
one operation in both tools (filebench's IO Summary sums all its flowops).

**The end of the phase**: both tools count the operations that ended within their
seconds; an operation still in flight at the end is not counted (the engine since
2026-11-26 10:13 UTC; before, it counted each thread's first operation past its deadline
and stretched the phase to the last one: `--recount-to` re-counts such trials).

**Order**: round-major. In every round each cell runs both tools back to back, the
tool that goes first alternating from round to round and from cell to cell, so drift of
this shared machine hits both tools alike; rounds are spread over the whole bench.

**Verdict** per cell, on the ratio engine / filebench and its 90% CI: `ahead` (CI above
1), `equivalent` (CI inside 0.95-1.05: two one-sided tests at 5%), `not behind` (CI above
0.95 but reaching past 1.05), `behind` (CI below 1), else `undecided` (more rounds
needed at this noise). The ratio is **paired**: the two trials of a cell in one round
run back to back, so the verdict is on the geometric mean of the per-round ratios with a
t interval of their logs (n - 1 df), which cancels the slow drift of this shared machine
(other test suites come and go) that the unpaired ratio of means (`ratio_unpaired`,
delta method and Welch df, `fsbench.analysis.stats.ratio_ci`, also given) keeps as noise.

**The engine's own overhead**: the user and system CPU of the engine's process over the
measured phase, per counted operation (the engine's `cpu` result: getrusage at the end
of the warm-up and after the last thread; older engines: the child's rusage of the
whole `run`, warm-up included): the engine's own work is its user time; the
filesystem's (the kernel's) is the system time. The kernel also works for the engine in its own
threads (writeback, btrfs end-io workers, the loop device), which the engine's rusage
does not count: `machine_sys_us_per_op` is the whole machine's system + irq + softirq CPU
(/proc/stat) over the engine's `run`, per operation (warm-up included; whatever else the
kernel did then on this shared machine too). filebench's CPU is given
for its whole process (its fileset creation included), for scale only.

**CPU per operation** of each tool (user + system, from getrusage of the child:
filebench's whole process over its counted operations, its fileset creation included;
the engine's `run` process, warm-up included, over warm-up + measured time at the
measured rate) and `cpu_efficiency`, filebench's CPU per operation over the engine's,
paired per round: on this shared machine what a tool gets is its CPU share, and the CPU
it needs per operation is the steadier measure of the two tools' efficiency.

**Pooled**: the paired ratios of all cells together, and per filesystem, personality
and thread count (`pooled` in the JSON): one cell's noise here is too large for a few
rounds to decide it alone.

**Noise**: the load average before every trial and each tool's coefficient of
variation per cell are in the output; this machine is shared with other test runs.

The JSON is rewritten after every trial, so an interrupted bench keeps what it did, with
this invocation's provenance (bench/results_file.py); `--resume` runs only the trials it
lacks, as one more invocation under the file's `parts` (its argv, date, commit, load,
trials), and with `--open-only` only those of the cells not yet ahead or equivalent (more
rounds where the answer is still open; a cell so looked at again after every batch of
rounds has a larger chance than the nominal 5% of a wrong `ahead`, which the JSON's
per-cell `pairs` lets a reader weigh). filebench crashes now
and then (a worker's segfault leaves its master spinning: 1 of its first 12 runs here);
such a run is killed after `--seconds` + 240 s, kept in `trials` with its error, and made
once more.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from fsbench.system import filesystems, fsops  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results_file  # noqa: E402

from fsbench.analysis.stats import ratio_ci, t_quantile  # noqa: E402
from fsbench.execute.targets.loop import LoopImage  # noqa: E402
from fsbench.system.units import parse_size  # noqa: E402

ASLR = Path("/proc/sys/kernel/randomize_va_space")
# The engine's warm-up: 0 (--engine-warmup) measures it over the same window as
# filebench, whose count starts when its threads start; 1.0 before 2026-11-26 04:00 UTC
# (its trials without "warmup_s" had it)
WARMUP_S = 0.0
OLD_WARMUP_S = 1.0
BOUNDS = (0.95, 1.05)
CONFIDENCE = 0.90
AS_SHIPPED = False  # --filebench-as-shipped: filebench's own run, its fileset left dirty
SUMMARY = re.compile(r"IO Summary:\s+(\d+) ops\s+([\d.]+) ops/s")


def build_engine() -> Path:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo/bin/cargo")
    subprocess.run([cargo, "build", "--release", "--quiet"], cwd=REPO / "engine", check=True)
    return REPO / "engine/target/release/fsbench-engine"


def filebench_workload(
    workloads: Path, name: str, mnt: Path, threads: int, secs: int, as_shipped: bool = False
) -> str:
    """filebench's own NAME.f with only $dir, $nthreads and the run changed: the fileset
    is created, synced to disk (`sync -f`, as the engine's prepare does), then run."""
    out = []
    for line in (workloads / f"{name}.f").read_text().splitlines():
        s = line.strip()
        if s.startswith("set $dir="):
            line = f"set $dir={mnt}"
        elif s.startswith("set $nthreads="):
            line = f"set $nthreads={threads}"
        elif s.startswith("run"):
            sync = "" if as_shipped else f'create files\nsystem "sync -f {mnt}"\n'
            line = f"{sync}run {secs}"
        out.append(line)
    return "\n".join(out) + "\n"


def machine_sys() -> float:
    """System CPU seconds of the whole machine so far (all CPUs: system, irq and softirq
    from /proc/stat): the kernel's work for a tool includes its worker threads' (writeback,
    btrfs end-io, the loop device), which the tool's own rusage does not count."""
    f = Path("/proc/stat").read_text().splitlines()[0].split()
    return (int(f[3]) + int(f[6]) + int(f[7])) / os.sysconf("SC_CLK_TCK")


def child_cpu() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime, ru.ru_stime


def run_filebench(
    fb: Path, workloads: Path, name: str, mnt: Path, threads: int, secs: int, tmp: Path
) -> dict[str, Any]:
    script = tmp / f"{name}.f"
    script.write_text(filebench_workload(workloads, name, mnt, threads, secs, AS_SHIPPED))
    old = ASLR.read_text().strip()
    u0, s0 = child_cpu()
    try:
        ASLR.write_text("0")
        res = subprocess.run(
            [str(fb), "-f", str(script)], capture_output=True, text=True, timeout=secs + 240
        )
    finally:
        ASLR.write_text(old)
    u1, s1 = child_cpu()
    m = SUMMARY.search(res.stdout + res.stderr)
    if res.returncode != 0 or m is None:
        tail = (res.stdout + res.stderr).strip().splitlines()[-3:]
        raise RuntimeError(f"filebench failed (exit {res.returncode}): {' | '.join(tail)}")
    ops, rate = int(m.group(1)), float(m.group(2))
    return {
        "ops": ops,
        "ops_per_s": rate,
        "user_s": u1 - u0,
        "sys_s": s1 - s0,
        "cpu_scope": "whole process, fileset creation included",
    }


def engine_call(
    engine: Path, argv: list[str], spec: dict[str, Any] | None, timeout: float
) -> dict[str, Any]:
    res = subprocess.run(
        [str(engine), *argv],
        input=json.dumps(spec) if spec else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if res.returncode != 0:
        raise RuntimeError(f"fsbench-engine {argv[0]}: {res.stderr.strip()[-500:]}")
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def run_engine(
    engine: Path, name: str, mnt: Path, threads: int, secs: int, seed: int
) -> dict[str, Any]:
    spec = engine_call(
        engine,
        [
            "personality",
            name,
            "--dir",
            str(mnt),
            "--threads",
            str(threads),
            "--duration",
            str(secs),
            "--warmup",
            str(WARMUP_S),
            "--seed",
            str(seed),
        ],
        None,
        60,
    )
    prep = engine_call(engine, ["prepare", "-"], spec, 900)
    for f in spec["filesets"]:
        f["reuse"] = True
    u0, s0 = child_cpu()
    m0 = machine_sys()
    res = engine_call(engine, ["run", "-"], spec, secs + 900)
    m1 = machine_sys()
    u1, s1 = child_cpu()
    total = res["total"]
    ops_run = total["ops_per_s"] * (res["measured"]["duration_s"] + WARMUP_S)
    out = {
        # the kernel's whole work per operation, its threads' included (and whatever
        # else ran in the kernel then: this machine is shared)
        "machine_sys_us_per_op": 1e6 * (m1 - m0) / ops_run if ops_run else None,
        "ops": total["ops"],
        "ops_per_s": total["ops_per_s"],
        "user_s": u1 - u0,
        "sys_s": s1 - s0,
        "cpu_scope": "run process: warm-up and measured phase",
        "seconds": secs,
    }
    cpu = res.get("cpu")
    if cpu:  # the engine's own getrusage over the measured phase only
        out.update(
            {
                "user_us_per_op": cpu["user_us_per_op"],
                "sys_us_per_op": cpu["system_us_per_op"],
                "cpu_per_op_scope": "measured phase (engine's getrusage)",
            }
        )
    else:
        ops_all = total["ops_per_s"] * (res["measured"]["duration_s"] + WARMUP_S)
        out.update(
            {
                "user_us_per_op": 1e6 * (u1 - u0) / ops_all if ops_all else None,
                "sys_us_per_op": 1e6 * (s1 - s0) / ops_all if ops_all else None,
                "cpu_per_op_scope": "run process incl. warm-up (child rusage)",
            }
        )
    return {
        **out,
        "warmup_s": WARMUP_S,
        "prepare_s": prep["prepare"]["seconds"],
        "prepare_sync_s": prep["prepare"]["sync_seconds"],
        "skipped": total["skipped"],
    }


def trial(
    args: argparse.Namespace, tool: str, fs_name: str, name: str, threads: int, seed: int, tmp: Path
) -> dict[str, Any]:
    fs = filesystems.get(fs_name)
    target = LoopImage(args.workdir, args.image_size)
    t0 = time.monotonic()
    with results_file.trial_conditions() as conditions:
        out = _trial(args, target, fs, tool, name, threads, seed, tmp)
    out.update(
        {
            "tool": tool,
            "fs": fs_name,
            "personality": name,
            "threads": threads,
            "load1_before": conditions["load_before"][0],
            "wall_s": round(time.monotonic() - t0, 2),
            **conditions,
        }
    )
    return out


def _trial(
    args: argparse.Namespace,
    target: LoopImage,
    fs: filesystems.FsType,
    tool: str,
    name: str,
    threads: int,
    seed: int,
    tmp: Path,
) -> dict[str, Any]:
    try:
        target.open()
        fsops.mkfs(fs, [], target.device)
        mnt = target.mount_dir(f"evf-{tool}")
        fsops.mount(fs, target.device, mnt, "")
        try:
            if tool == "filebench":
                out = run_filebench(
                    args.filebench, args.workloads, name, mnt, threads, args.seconds, tmp
                )
            else:
                out = run_engine(args.engine, name, mnt, threads, args.seconds, seed)
        finally:
            fsops.umount(mnt)
            try:
                mnt.rmdir()
            except OSError:
                pass
    finally:
        target.close()
    return out


def recount_at_deadline(t: dict[str, Any]) -> dict[str, Any]:
    """An engine trial as the engine counts since 2026-11-26 10:13 UTC (005a0d3): the
    operations that ended by the deadline, over the nominal seconds. Before, every thread
    stopped after its first operation ending past the deadline, counted it, and the phase
    ran to the last such end (ops / ops_per_s = the phase it measured: 10.24-10.52 s for 10
    on xfs fileserver at 64 threads). Each thread counted at most one operation past the
    deadline, so (ops - threads) / seconds is at most what the engine counts now on the
    same run: a lower bound. Trials whose phase was the nominal one are unchanged."""
    if t.get("tool") != "engine" or "error" in t or not t.get("ops_per_s"):
        return t
    seconds = float(t["seconds"])
    measured = t["ops"] / t["ops_per_s"]
    if measured <= seconds * (1 + 1e-6):
        return t
    ops = t["ops"] - t["threads"]
    return t | {
        "ops": ops,
        "ops_per_s": ops / seconds,
        "ops_as_run": t["ops"],
        "ops_per_s_as_run": t["ops_per_s"],
        "measured_s_as_run": measured,
    }


def cv(xs: list[float]) -> float | None:
    return statistics.stdev(xs) / statistics.fmean(xs) if len(xs) > 1 else None


def verdict(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return "undecided"
    lo, hi = ci
    if lo > 1.0:
        return "ahead"
    if BOUNDS[0] <= lo and hi <= BOUNDS[1]:
        return "equivalent"
    if lo >= BOUNDS[0]:
        return "not behind"
    if hi < 1.0:
        return "behind"
    return "undecided"


def paired_ratio(pairs: list[tuple[float, float]]) -> tuple[float, tuple[float, float] | None]:
    """Geometric mean of engine/filebench per round, with a t CI of the log ratios."""
    logs = [math.log(e / f) for f, e in pairs if f > 0 and e > 0]
    if not logs:
        return float("nan"), None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), None
    half = t_quantile(len(logs) - 1, CONFIDENCE) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), (math.exp(mean - half), math.exp(mean + half))


def summarize(trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cells: dict[tuple[str, str, int], dict[str, list[dict[str, Any]]]] = {}
    for t in trials:
        if "error" in t:
            continue
        key = (t["fs"], t["personality"], t["threads"])
        cells.setdefault(key, {"filebench": [], "engine": []})[t["tool"]].append(t)
    rows = []
    for (fs, name, threads), by in sorted(cells.items()):
        fb = [t["ops_per_s"] for t in by["filebench"]]
        en = [t["ops_per_s"] for t in by["engine"]]
        row: dict[str, Any] = {
            "fs": fs,
            "personality": name,
            "threads": threads,
            "filebench_ops_s": fb,
            "engine_ops_s": en,
        }
        if fb and en:
            fb_round = {t["round"]: t["ops_per_s"] for t in by["filebench"]}
            pairs = [
                (fb_round[t["round"]], t["ops_per_s"])
                for t in by["engine"]
                if t["round"] in fb_round
            ]
            ratio, ci = paired_ratio(pairs)
            unpaired, uci = ratio_ci(fb, en, CONFIDENCE)
            row.update(
                {
                    "ratio": ratio,
                    "ci90": list(ci) if ci else None,
                    "verdict": verdict(ci),
                    "pairs": len(pairs),
                    "round_ratios": [e / f for f, e in pairs],
                    "ratio_unpaired": unpaired,
                    "ci90_unpaired": list(uci) if uci else None,
                    "cv_filebench": cv(fb),
                    "cv_engine": cv(en),
                }
            )
        # CPU (user + system) per operation of each tool's process: on a machine whose
        # CPUs other jobs share, how much CPU a tool needs per operation is steadier
        # than the ops/s it gets. filebench: its whole process (fileset creation
        # included) over its counted operations; engine: its run process (warm-up
        # included) over the operations of warm-up + measured time at the measured rate.
        cpu_fb = {t["round"]: 1e6 * (t["user_s"] + t["sys_s"]) / t["ops"] for t in by["filebench"]}
        cpu_en = {
            t["round"]: 1e6
            * (t["user_s"] + t["sys_s"])
            / (t["ops_per_s"] * (t.get("seconds", 10) + t.get("warmup_s", OLD_WARMUP_S)))
            for t in by["engine"]
        }
        cpu_pairs = [(cpu_en[r], cpu_fb[r]) for r in cpu_fb if r in cpu_en]
        if cpu_pairs:
            cr, cci = paired_ratio(cpu_pairs)
            row.update(
                {
                    "cpu_us_per_op_filebench": [cpu_fb[r] for r in sorted(cpu_fb)],
                    "cpu_us_per_op_engine": [cpu_en[r] for r in sorted(cpu_en)],
                    "cpu_efficiency": cr,
                    "cpu_efficiency_ci90": list(cci) if cci else None,
                }
            )
        eu = [t["user_us_per_op"] for t in by["engine"] if t.get("user_us_per_op")]
        es = [t["sys_us_per_op"] for t in by["engine"] if t.get("sys_us_per_op")]
        if eu and es:
            row["engine_user_us_per_op"] = statistics.fmean(eu)
            row["engine_sys_us_per_op"] = statistics.fmean(es)
            row["engine_user_share"] = statistics.fmean(eu) / (
                statistics.fmean(eu) + statistics.fmean(es)
            )
        ms = [t["machine_sys_us_per_op"] for t in by["engine"] if t.get("machine_sys_us_per_op")]
        if ms:
            row["machine_sys_us_per_op_engine_run"] = statistics.fmean(ms)
        rows.append(row)
    return rows


def pooled(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """Paired ratios pooled over cells: all of them, and per filesystem and personality
    (a cell's noise on this machine is too large for 3 rounds to decide it alone)."""
    by_key: dict[tuple[int, str, str, int], dict[str, float]] = {}
    for t in trials:
        if "error" not in t:
            key = (t["round"], t["fs"], t["personality"], t["threads"])
            by_key.setdefault(key, {})[t["tool"]] = t["ops_per_s"]
    pairs = {k: (v["filebench"], v["engine"]) for k, v in by_key.items() if len(v) == 2}

    def one(select: list[tuple[float, float]]) -> dict[str, Any]:
        ratio, ci = paired_ratio(select)
        return {
            "pairs": len(select),
            "ratio": ratio,
            "ci90": list(ci) if ci else None,
            "verdict": verdict(ci),
        }

    out: dict[str, Any] = {"all": one(list(pairs.values()))}
    for axis, pos in (("fs", 1), ("personality", 2), ("threads", 3)):
        for value in sorted({k[pos] for k in pairs}, key=str):
            out[f"{axis}={value}"] = one([p for k, p in pairs.items() if k[pos] == value])
    return out


def _spread(xs: list[float]) -> dict[str, float] | None:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)} if xs else None


def _cells_summary(trials: list[dict[str, Any]], cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and spreads over trials and their cells: verdicts, the load before the
    trials, each tool's CV in a cell, the engine's share of its own CPU."""
    verdicts = Counter(c.get("verdict") for c in cells if c.get("pairs"))
    cvs = [c[k] for c in cells for k in ("cv_filebench", "cv_engine") if c.get(k) is not None]
    return {
        "verdicts": {
            v: verdicts.get(v, 0)
            for v in ("ahead", "equivalent", "not behind", "undecided", "behind")
        },
        "load1_before": _spread([t["load1_before"] for t in trials if "error" not in t]),
        "cv": _spread(cvs),
        "engine_user_share": _spread(
            [c["engine_user_share"] for c in cells if c.get("engine_user_share") is not None]
        ),
        "engine_less_cpu_cells": sum(1 for c in cells if (c.get("cpu_efficiency") or 0) > 1),
    }


def derive(doc: dict[str, Any]) -> dict[str, Any]:
    """The figures a reader counts from a file, computed once from its trials and cells
    (`summary`): verdicts, spreads of load, CV and CPU share, the failed trials, how far
    engine trials ran past their deadline before 005a0d3; and the same per part of a
    merged file whose part says which rounds (and trials) it ran. Nothing is measured
    again."""
    trials = doc["trials"]
    out: dict[str, Any] = {
        "derived": "by engine_vs_filebench.py --derive from this file's trials and cells: "
        "nothing measured again",
        "cells": len(doc["cells"]),
        "failed_trials": sum(1 for t in trials if "error" in t),
        **_cells_summary(trials, doc["cells"]),
    }
    past = []
    for t in trials:
        if t.get("tool") == "engine" and "error" not in t and t.get("seconds"):
            measured = t.get("measured_s_as_run") or t["ops"] / t["ops_per_s"]
            if measured > t["seconds"] * (1 + 1e-6):
                past.append(measured - t["seconds"])
    if past:
        out["past_deadline"] = {
            "trials": len(past),
            "median_s": statistics.median(past),
            "max_s": max(past),
        }
    parts = []
    for part in doc.get("parts", []):
        lo, hi = part.get("rounds") or (None, None)
        if lo is None:
            parts.append(None)
            continue
        # the part's own trials: their index range where the part gives it (a part's
        # rounds may be those of other parts too, as in a file with copied trials)
        a, b = part.get("trials") or (0, len(trials))
        mine = [t for t in trials[a:b] if lo <= t["round"] <= hi]
        cells = summarize(mine)
        kept = ("fs", "personality", "threads", "pairs", "ratio", "ci90", "verdict")
        parts.append(
            {
                "rounds": [lo, hi],
                "cells": [{k: c[k] for k in kept} for c in cells if c.get("pairs")],
                **_cells_summary(mine, cells),
            }
        )
    if any(parts):
        out["parts"] = parts
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| fs | personality | threads | filebench ops/s | engine ops/s | ratio "
        "(90% CI) | verdict | engine user / sys us/op | machine sys us/op |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        fb = " / ".join(f"{x:,.0f}" for x in r["filebench_ops_s"])
        en = " / ".join(f"{x:,.0f}" for x in r["engine_ops_s"])
        ci = r.get("ci90")
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else "-"
        ratio += f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci else ""
        cpu = (
            f"{r['engine_user_us_per_op']:.2f} / {r['engine_sys_us_per_op']:.1f}"
            if "engine_user_us_per_op" in r
            else "-"
        )
        msys = r.get("machine_sys_us_per_op_engine_run")
        mcol = f"{msys:.1f}" if msys else "-"
        lines.append(
            f"| {r['fs']} | {r['personality']} | {r['threads']} | {fb} | {en} | "
            f"{ratio} | {r.get('verdict', '-')} | {cpu} | {mcol} |"
        )
    return "\n".join(lines)


def main() -> None:
    global AS_SHIPPED, WARMUP_S
    # SIGTERM unwinds like Ctrl-C: every finally unmounts and detaches what it made
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--filebench", type=Path, required=True)
    ap.add_argument(
        "--workloads",
        type=Path,
        help="filebench's workloads dir (default: <prefix>/share/filebench/workloads)",
    )
    ap.add_argument("--engine", type=Path)
    ap.add_argument("--fs", default="ext4,xfs,btrfs")
    ap.add_argument("--threads", default="1,16,64")
    ap.add_argument("--personalities", default="fileserver,varmail,webserver")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument(
        "--engine-warmup",
        type=float,
        default=WARMUP_S,
        help="seconds the engine runs uncounted first (0: counted from its threads' start, "
        "as filebench counts)",
    )
    ap.add_argument("--image-size", type=parse_size, default=parse_size("8G"))
    ap.add_argument("--workdir", type=Path, default=Path("/work/tmp"))
    ap.add_argument(
        "--resume", action="store_true", help="keep the trials already in --output, run the rest"
    )
    ap.add_argument(
        "--open-only",
        action="store_true",
        help="with --resume: add rounds only to the cells not yet ahead or equivalent",
    )
    ap.add_argument(
        "--filebench-as-shipped",
        action="store_true",
        help="filebench's own `run` (fileset not synced first), as a user would run it",
    )
    ap.add_argument(
        "--summarize",
        action="store_true",
        help="only recompute the cells, pooled ratios and summary of --output from its trials",
    )
    ap.add_argument(
        "--derive",
        action="store_true",
        help="only (re)compute the summary of --output (derive) from its trials and cells",
    )
    ap.add_argument(
        "--recount-to",
        type=Path,
        help="write --output's trials to this file with every engine trial re-counted to "
        "its deadline (recount_at_deadline), and their cells and pooled ratios",
    )
    ap.add_argument(
        "-o", "--output", type=Path, default=REPO / "bench/results/engine_vs_filebench.json"
    )
    args = ap.parse_args()
    if args.derive:
        doc = json.loads(args.output.read_text())
        doc["summary"] = derive(doc)
        results_file.write(args.output, doc)
        print(json.dumps(doc["summary"], indent=1))
        return
    if args.recount_to:
        doc = json.loads(args.output.read_text())
        doc["trials"] = [recount_at_deadline(t) for t in doc["trials"]]
        doc["recounted"] = {
            "from": args.output.name,
            "rule": (recount_at_deadline.__doc__ or "").split("\n\n")[0],
        }
        doc["cells"] = summarize(doc["trials"])
        doc["pooled"] = pooled(doc["trials"])
        doc["summary"] = derive(doc)
        results_file.write(args.recount_to, doc)
        print(table(doc["cells"]))
        return
    if args.summarize:
        doc = json.loads(args.output.read_text())
        doc["cells"] = summarize(doc["trials"])
        doc["pooled"] = pooled(doc["trials"])
        doc["summary"] = derive(doc)
        results_file.write(args.output, doc)
        print(table(doc["cells"]))
        for name, p in doc["pooled"].items():
            ci = p["ci90"]
            print(
                f"{name}: {p['ratio']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) {p['verdict']}, "
                f"{p['pairs']} pairs"
                if ci
                else f"{name}: {p['ratio']:.3f}"
            )
        return
    if os.geteuid() != 0:
        sys.exit("needs root (mkfs, mount, losetup, ASLR)")
    AS_SHIPPED = args.filebench_as_shipped
    WARMUP_S = args.engine_warmup
    args.filebench = args.filebench.resolve()
    if args.workloads is None:
        args.workloads = args.filebench.parent.parent / "share/filebench/workloads"
    args.engine = (args.engine or build_engine()).resolve()
    all_cells = [
        (fs, p, int(t))
        for fs in args.fs.split(",")
        for p in args.personalities.split(",")
        for t in args.threads.split(",")
    ]
    cells = list(all_cells)
    fb_version = subprocess.run(
        [str(args.filebench), "-h"], capture_output=True, text=True
    ).stdout.splitlines()
    # this invocation's provenance; a --resume adds it to the file's parts
    this = results_file.provenance(
        "engine_vs_filebench", engine=args.engine, filesystems=args.fs.split(",")
    )
    this["tools"]["filebench"] = next((v for v in fb_version if "Version" in v), None)
    doc: dict[str, Any] = {
        **this,
        "filebench": {"binary": str(args.filebench), "version": this["tools"]["filebench"]},
        "params": {
            "seconds": args.seconds,
            "engine_warmup_s": WARMUP_S,
            "rounds": args.rounds,
            "filebench_as_shipped": args.filebench_as_shipped,
            "image_size": args.image_size,
            "confidence": CONFIDENCE,
            "equivalence_bounds": BOUNDS,
        },
        "trials": [],
    }
    done: set[tuple[int, str, str, int, str]] = set()
    if args.resume and args.output.exists():
        old = json.loads(args.output.read_text())
        params = doc["params"]
        first_part = "parts" not in old
        doc = results_file.add_part(old, this)
        doc["parts"][-1]["params"] = params
        if first_part and old["trials"]:  # the first invocation's trials: all so far
            doc["parts"][0]["trials"] = [0, len(old["trials"])]
            doc["parts"][0]["rounds"] = [
                min(t["round"] for t in old["trials"]),
                max(t["round"] for t in old["trials"]),
            ]
        # kept in their order: each part's trials are an index range of them
        doc["trials"] = list(old["trials"])
        done = {
            (t["round"], t["fs"], t["personality"], t["threads"], t["tool"])
            for t in old["trials"]
            if "error" not in t
        }
        if args.open_only:
            settled = {
                (r["fs"], r["personality"], r["threads"])
                for r in summarize(old["trials"])
                if r.get("verdict") in ("ahead", "equivalent")
            }
            cells = [c for c in cells if c not in settled]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    first = len(doc["trials"])  # where this invocation's trials start
    n = len(cells) * args.rounds * 2
    i = 0
    with tempfile.TemporaryDirectory(prefix="evf-", dir=args.workdir) as tmpd:
        tmp = Path(tmpd)
        for rnd in range(args.rounds):
            for fs, name, threads in cells:
                tools = ["filebench", "engine"]
                # who goes first alternates from round to round and from cell to cell
                # (by the cell's place in the whole matrix, whichever cells run now)
                if (rnd + all_cells.index((fs, name, threads))) % 2:
                    tools.reverse()
                for tool in tools:
                    i += 1
                    if (rnd + 1, fs, name, threads, tool) in done:
                        continue
                    # filebench crashes now and then (a worker's segfault leaves its
                    # master waiting): the crash is kept, and the trial made once more
                    for _attempt in range(2):
                        try:
                            t = trial(args, tool, fs, name, threads, rnd + 1, tmp)
                        except Exception as exc:  # a failed trial is a result; go on
                            t = {
                                "tool": tool,
                                "fs": fs,
                                "personality": name,
                                "threads": threads,
                                "error": str(exc),
                            }
                        t["round"] = rnd + 1
                        doc["trials"].append(t)
                        if "error" not in t:
                            break
                    print(
                        f"[{i}/{n}] round {rnd + 1} {fs} {name} {threads}t {tool}: "
                        f"{t.get('ops_per_s', t.get('error'))}",
                        flush=True,
                    )
                    if "parts" in doc:  # this part's trials and rounds, for its summary
                        mine = doc["trials"][first:]
                        doc["parts"][-1]["trials"] = [first, len(doc["trials"])]
                        doc["parts"][-1]["rounds"] = [
                            min(t["round"] for t in mine),
                            max(t["round"] for t in mine),
                        ]
                    doc["cells"] = summarize(doc["trials"])
                    doc["pooled"] = pooled(doc["trials"])
                    doc["summary"] = derive(doc)
                    results_file.finish(doc["parts"][-1] if "parts" in doc else doc)
                    results_file.write(args.output, doc)
    print(table(doc["cells"]))
    for name, p in doc["pooled"].items():
        print(f"{name}: {p['ratio']:.3f} {p['ci90']} {p['verdict']}, {p['pairs']} pairs")


if __name__ == "__main__":
    main()
