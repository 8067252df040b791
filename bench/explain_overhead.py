"""What does each tracer of `fsbench explain` cost the workload? The same fs_mark cell
(ext4, every file fsync'ed) through the real runner on a fresh loop image, with the
sampler alone and with the sampler and one tracer (block-trace, offcpu, profile) or all
three, interleaved round by round; prints each variant's files/s with its 95% CI and its
ratio to the sampler alone, and keeps them in bench/results/explain_overhead.json (with
the machine, the load and the date).

    .venv/bin/python bench/explain_overhead.py [--reps 6] [--files 1000] [--no-save]
Needs root (loop devices, bpftrace). Its figures depend on the machine's load: run it on a
quiet machine."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from results_file import save, trial_conditions  # noqa: E402

from fsbench.analysis.stats import summarize, welch  # noqa: E402
from fsbench.execute import explain, runner  # noqa: E402
from fsbench.execute.targets.loop import LoopImage  # noqa: E402
from fsbench.plan.model import Cell, FsConfig  # noqa: E402
from fsbench.system import monitors  # noqa: E402
from fsbench.workloads import get as workload  # noqa: E402
from fsbench.workloads.base import Scale  # noqa: E402

METRIC = "files_per_s"
BASE = "sampler"
VARIANTS: dict[str, tuple[str, ...]] = {
    BASE: monitors.DEFAULT,
    **{name: (*monitors.DEFAULT, name) for name in explain.TRACERS},
    "all": (*monitors.DEFAULT, *explain.TRACERS),
}


def one(target: LoopImage, work: Path, names: tuple[str, ...], files: int) -> float:
    params = {
        k: v[0] if isinstance(v, list) else v
        for k, v in workload("fs_mark").defaults(Scale.TINY).items()
    }
    params["files"] = files
    run = runner.Runner(
        target, runner.mount_root(work), Scale.TINY, work / "cache", 600,
        monitor_names=names, instrumented=names != monitors.DEFAULT,
    )  # fmt: skip
    (record,) = run.run_cell(1, 1, Cell(FsConfig(type="ext4"), "fs_mark", params))
    if record.status != "ok":
        raise SystemExit(f"{names}: {record.status}: {record.message}")
    return next(m.value for m in record.metrics if m.name == METRIC)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--no-save", action="store_true", help="no bench/results file")
    args = parser.parse_args()
    started = datetime.now(UTC)
    work = Path(tempfile.mkdtemp(prefix="fsbench-explain-", dir="/var/tmp"))
    values: dict[str, list[float]] = {name: [] for name in VARIANTS}
    conditions: dict[str, list[dict[str, object]]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    with LoopImage(work, 1 << 30) as target:
        assert isinstance(target, LoopImage)
        for rep in range(args.reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:  # rotate
                with trial_conditions() as cond:
                    values[name].append(one(target, work, VARIANTS[name], args.files))
                conditions[name].append(cond)
    base = summarize(values[BASE]).mean
    kept: dict[str, object] = {"workload": "fs_mark", "files": args.files, "reps": args.reps}
    for name, got in values.items():
        s = summarize(got)
        w = welch(got, values[BASE]) if name != BASE else None
        ratio = s.mean / base if base else None
        print(
            f"{name:12} {s.mean:8.1f} ± {s.half_width or 0:.1f} {METRIC} (n={s.n})"
            + (f"  ratio {ratio:.3f}, Welch p = {w.p:.2f}" if w and ratio else "")
        )
        kept[name] = {
            METRIC: got,
            "mean": s.mean,
            "ci95_half": s.half_width,
            "ratio_to_sampler": ratio,
            "welch_p": w.p if w else None,
            "conditions": conditions[name],
        }
    shutil.rmtree(work, ignore_errors=True)
    if not args.no_save:
        save("explain_overhead", kept, started, filesystems=["ext4"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
