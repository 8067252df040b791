"""Finding and running fsbench-engine, the native workload engine in engine/ (Rust): JSON
spec in, JSON results out, errors as one line on stderr."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported

ENGINE = "fsbench-engine"
SCHEMA = 1


def find_engine() -> Path | None:
    """$FSBENCH_ENGINE, then the checkout's release build (`make install` builds it),
    then PATH."""
    override = os.environ.get("FSBENCH_ENGINE")
    if override:
        return Path(override) if Path(override).is_file() else None
    built = Path(__file__).resolve().parents[3] / "engine" / "target" / "release" / ENGINE
    if built.is_file():
        return built
    found = proc.which(ENGINE)
    return Path(found) if found else None


def engine() -> Path:
    path = find_engine()
    if path is None:
        raise Unsupported(
            f"{ENGINE} not built: `make install` builds it (needs Rust >= 1.88: rustup)"
        )
    return path


def _call(
    argv: list[str], spec: dict[str, Any] | None, timeout: float, *, versioned: bool = True
) -> dict[str, Any]:
    """The engine's JSON answer; `versioned`: one that carries the result schema."""
    res = proc.run(
        [str(engine()), *argv],
        input_text=json.dumps(spec) if spec is not None else None,
        timeout=timeout,
    )
    if not res.ok:
        line = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.output
        if res.signal:  # killed mid-trial (the OOM killer, a crash): by what, what it said last
            line = f"killed by {res.signal}" + (f" (it said last: {line})" if line else "")
        raise TrialFailed(f"{ENGINE} {argv[0]}: {line}", res.stderr[-4000:])
    try:
        data: dict[str, Any] = json.loads(res.stdout)
    except ValueError as exc:
        raise TrialFailed(f"{ENGINE} {argv[0]}: not JSON ({exc})", res.stdout[-2000:]) from None
    if versioned and data.get("schema") != SCHEMA:
        raise TrialFailed(f"{ENGINE}: result schema {data.get('schema')}, expected {SCHEMA}")
    return data


def personality(
    name: str,
    scale: str,
    directory: Path,
    *,
    threads: int | None,
    duration: float | None,
    warmup: float | None,
    seed: int,
    fileset_bytes: int | None = None,
) -> dict[str, Any]:
    argv = ["personality", name, "--scale", scale, "--dir", str(directory), "--seed", str(seed)]
    if fileset_bytes is not None:
        argv += ["--fileset-bytes", str(fileset_bytes)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    if duration is not None:
        argv += ["--duration", str(duration)]
    if warmup is not None:
        argv += ["--warmup", str(warmup)]
    return _call(argv, None, timeout=60)


def prepare(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    return _call(["prepare", "-"], spec, timeout)


def run(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    return _call(["run", "-"], spec, timeout)


def churn(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Create and delete files toward a fullness, having written a volume (aging)."""
    return _call(["churn", "-"], spec, timeout)


# -- recorded traces (docs/replay.md) -----------------------------------------------------


def trace_refusal(trace: Path) -> str | None:
    """Why the engine will not replay this trace (truncated, another version, a path outside
    its tree...), in its one line, or None."""
    res = proc.run([str(engine()), "trace", "check", str(trace)], timeout=3600)
    if res.ok:
        return None
    return res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.output


def trace_summary(trace: Path) -> dict[str, Any]:
    """What a trace holds: calls and bytes per kind, threads, its starting tree."""
    return _call(["trace", "check", str(trace)], None, timeout=3600, versioned=False)


def strace_args() -> list[str]:
    """strace's options for a recording (the output format and the calls the engine's
    importer reads), before `-o FILE -- COMMAND`."""
    return [str(a) for a in _call(["trace", "strace-args"], None, 60, versioned=False)["argv"]]


def trace_snapshot(tree: Path, out: Path, *, with_data: bool) -> dict[str, Any]:
    """The tree as it is before a recorded command runs."""
    argv = ["trace", "snapshot", str(tree), "-o", str(out)]
    return _call([*argv, "--with-data"] if with_data else argv, None, 3600, versioned=False)


def trace_import(
    strace_out: Path,
    root: Path,
    out: Path,
    snapshot: Path,
    header: dict[str, Any],
    tracer_cost: StraceCost | None = None,
) -> dict[str, Any]:
    """strace's output of a command run in `root` -> a trace (with its starting tree);
    `tracer_cost`, measured beside the recording, is subtracted from its recorded gaps."""
    argv = ["trace", "import", "--strace", str(strace_out), "--root", str(root)]
    argv += ["-o", str(out), "--snapshot", str(snapshot), "--header", json.dumps(header)]
    if tracer_cost is not None:
        argv += ["--overhead-ns", str(tracer_cost.per_call_ns)]
        argv += ["--gap-overhead-ns", str(tracer_cost.gap_ns)]
    return _call(argv, None, timeout=3600, versioned=False)


@dataclass(frozen=True)
class StraceCost:
    """What strace adds to each call it records, on this machine at this moment: in all,
    and the part of it in the gap before the call (the rest is in its duration)."""

    per_call_ns: int
    gap_ns: int


def fstat_loop_args(directory: Path, calls: int) -> list[str]:
    """The engine's plain loop of `calls` fstats of one file in `directory`, as arguments
    after the engine's path (its JSON says the loop's own seconds)."""
    return ["trace", "fstat-loop", "--calls", str(calls), "--dir", str(directory)]


def fstat_loop(directory: Path, calls: int) -> dict[str, Any]:
    return _call(fstat_loop_args(directory, calls), None, 600, versioned=False)


def strace_gaps(strace_out: Path, calls: int) -> dict[str, Any]:
    """The mean recorded gap and duration of the loop's calls in strace's output."""
    argv = ["trace", "strace-gaps", "--strace", str(strace_out), "--calls", str(calls)]
    return _call(argv, None, 600, versioned=False)


def replay_prepare(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Check the trace, make its starting tree in the spec's dir (untimed)."""
    return _call(["replay", "prepare", "-"], spec, timeout)


def replay_run(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    return _call(["replay", "run", "-"], spec, timeout)
