"""Where a bench of fsbench itself keeps what it measured: `bench/results/<name>.json`,
committed, so that every figure the README and the guides quote from a bench can be traced
to a file that says which invocation measured it, on which machine and code, and when
(bench/figures.py ties each published figure to its key in such a file).

**One invocation writes one file**, and the file says so (`"invocations": 1`), with that
invocation's provenance beside what it measured:

    {"bench": "monitor_overhead", "invocations": 1,
     "date": "2026-11-25T23:40:00+00:00", "finished": "...", "argv": [...],
     "machine": {"cpu": ..., "cpus": 2, "memory_gib": ..., "kernel": ...},
     "load_average": {"at_start": [1, 5, 15 min], "at_end": [...]},
     "fsbench": {"commit": "<sha>", "dirty": false, "version": "0.1.0"},
     "engine": {...},          # benches that run fsbench-engine: its version, commit, sha256
     "tools": {"fio": "fio 3.33-1", ...},   # the versions of the tools the bench runs
     "results": {...}}

A bench with trials gives each its conditions (`trial_conditions()`: the load average
before and after it). A bench that legitimately combines invocations (engine_vs_filebench
`--resume` adds rounds to its file; two files of one bench merged with `--merge`) keeps each
invocation's provenance under `"parts"` and says how many (`"invocations": N`):

    python3 bench/results_file.py --merge -o OUT.json PART.json PART.json ...

The parts' trial lists are concatenated; their other results must agree (the bench's own
summary, e.g. `engine_vs_filebench.py --summarize`, is then made again from the trials).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
# When and under what load the bench started (this module is imported at its start): on a
# shared machine the numbers move with the load.
_STARTED = datetime.now(UTC)
_LOAD_AT_START = os.getloadavg()
# The keys of one invocation's provenance (a part of a merged file keeps these).
PROVENANCE = (
    "date",
    "finished",
    "argv",
    "machine",
    "load_average",
    "fsbench",
    "engine",
    "tools",
)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """The facts of this machine that a bench's numbers depend on."""
    cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    meminfo = Path("/proc/meminfo").read_text()
    mem_kib = re.search(r"^MemTotal:\s*(\d+)", meminfo, re.MULTILINE)
    virt = subprocess.run(
        ["systemd-detect-virt"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu": model.group(1).strip() if model else platform.processor(),
        "cpus": os.cpu_count(),
        "memory_gib": round(int(mem_kib.group(1)) / (1 << 20), 1) if mem_kib else None,
        "kernel": platform.release(),
        "virtualization": virt or "none",
        "python": platform.python_version(),
    }


def _git(*args: str) -> str | None:
    res = subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )
    return res.stdout.strip() if res.returncode == 0 else None


def code_state(*paths: str) -> dict[str, Any]:
    """The fsbench commit this bench runs, and whether the tree (or `paths` of it) had
    changes not committed; the bench's own results/ do not count."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no", "--", *(paths or (".",)))
    changed = [line[3:] for line in (status or "").splitlines() if "bench/results/" not in line[3:]]
    return {"commit": commit, "dirty": bool(changed) if status is not None else None}


# The checkout's commit and state as the bench started.
_CODE_AT_START = code_state()


def fsbench_state() -> dict[str, Any]:
    """The fsbench checkout the bench ran: its commit as the bench started (this module is
    imported at its start; a commit made while a long bench runs is not the code it ran),
    whether the tree was dirty then, and the version."""
    sys.path.insert(0, str(REPO / "src"))
    from fsbench import __version__

    return {**_CODE_AT_START, "version": __version__}


def engine_state(binary: Path) -> dict[str, Any]:
    """What fsbench-engine binary the bench ran: its version, its sha256 and, when it is
    the build of this checkout's engine/, the commit and whether engine/ had changes."""
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    out: dict[str, Any] = {
        "binary": str(binary),
        "version": version,
        "sha256": hashlib.sha256(binary.read_bytes()).hexdigest(),
    }
    if binary.resolve().is_relative_to(REPO / "engine"):
        out |= code_state("engine")
    return out


def tool_versions(
    workloads: Iterable[str] = (),
    filesystems: Iterable[str] = (),
    commands: dict[str, list[str]] | None = None,
) -> dict[str, str | None]:
    """The versions of the tools a bench runs: those of fsbench's workloads and
    filesystems (as a trial records them), and `commands` (name -> a version command)."""
    sys.path.insert(0, str(REPO / "src"))
    from fsbench import workloads as registry
    from fsbench.system import hostfacts, proc

    packages = registry.tool_packages(workloads)
    tools: dict[str, str | None] = dict(hostfacts.host(list(filesystems), packages).tools or {})
    for name, argv in (commands or {}).items():
        tools[name] = proc.tool_version(argv)
    return tools


def provenance(
    bench: str,
    *,
    engine: Path | None = None,
    workloads: Iterable[str] = (),
    filesystems: Iterable[str] = (),
    commands: dict[str, list[str]] | None = None,
    started: datetime | None = None,
) -> dict[str, Any]:
    """One invocation's provenance, as the file starts; `finish` completes it."""
    doc: dict[str, Any] = {
        "bench": bench,
        "invocations": 1,
        "date": (started or _STARTED).isoformat(timespec="seconds"),
        "argv": [_script(sys.argv[0]), *sys.argv[1:]],
        "machine": machine(),
        "load_average": {"at_start": [round(x, 2) for x in _LOAD_AT_START]},
        "fsbench": fsbench_state(),
    }
    if engine is not None:
        doc["engine"] = engine_state(engine)
    doc["tools"] = tool_versions(workloads, filesystems, commands)
    return doc


def _script(path: str) -> str:
    """The bench's script, relative to the checkout when it is in it."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return path


def finish(doc: dict[str, Any]) -> dict[str, Any]:
    """The end of an invocation: when, and the load average then."""
    doc["finished"] = now()
    doc.setdefault("load_average", {})["at_end"] = load_average()
    return doc


def kept_dir(keep: Path | None, scratch: str) -> Path:
    """Where a bench writes the stores it makes: `--keep DIR` (made if missing), else its
    scratch directory (removed with it)."""
    where = keep or Path(scratch)
    where.mkdir(parents=True, exist_ok=True)
    return where


@contextmanager
def trial_conditions() -> Iterator[dict[str, Any]]:
    """The conditions of one trial, for the bench to keep with it: when it started and the
    load average (1, 5, 15 min) before and after it.

        with trial_conditions() as conditions:
            value = run_one()
        runs.append({"value": value, **conditions})
    """
    conditions: dict[str, Any] = {"started": now(), "load_before": load_average()}
    try:
        yield conditions
    finally:
        conditions["load_after"] = load_average()


def save(
    bench: str,
    results: Any,
    started: datetime | None = None,
    *,
    path: Path | None = None,
    engine: Path | None = None,
    workloads: Iterable[str] = (),
    filesystems: Iterable[str] = (),
    commands: dict[str, list[str]] | None = None,
) -> Path:
    """Write bench/results/<bench>.json (or `path`): this invocation and its results."""
    path = path or RESULTS / f"{bench}.json"
    doc = provenance(
        bench,
        engine=engine,
        workloads=workloads,
        filesystems=filesystems,
        commands=commands,
        started=started,
    )
    doc["results"] = results
    write(path, finish(doc))
    print(f"results: {path}", file=sys.stderr)
    return path


def write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def part_of(doc: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The provenance of one invocation, as a part of a merged file."""
    part = {k: doc[k] for k in PROVENANCE if k in doc}
    if name:
        part["file"] = name
    return part


def add_part(doc: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`doc` continued by another invocation (`new`: its provenance): both under
    `parts`, the count in `invocations`."""
    parts = doc.get("parts") or [part_of(doc)]
    doc["parts"] = [*parts, part_of(new)]
    doc["invocations"] = len(doc["parts"])
    for key in ("argv", "finished", "fsbench", "engine", "tools", "load_average"):
        doc.pop(key, None)  # each part's own, under parts
    return doc


def _results(doc: dict[str, Any]) -> dict[str, Any]:
    if "results" in doc:
        return dict(doc["results"])
    skip = {*PROVENANCE, "bench", "invocations", "parts", "merged", "summary", "note"}
    return {k: v for k, v in doc.items() if k not in skip}


def concatenate(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The parts' results together: lists (trials, runs) concatenated, the rest equal in
    every part (parameters, bounds) or an error."""
    out: dict[str, Any] = {}
    for doc in docs:
        for key, value in _results(doc).items():
            if key not in out:
                out[key] = value
            elif isinstance(value, list) and key in ("trials", "runs"):
                out[key] = [*out[key], *value]
            elif out[key] != value:
                raise SystemExit(
                    f"--merge: the parts differ in {key!r}: merge by the bench, which "
                    "knows how to combine it"
                )
    return out


def merge(
    paths: list[Path],
    combine: Callable[[list[dict[str, Any]]], dict[str, Any]] = concatenate,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """One file of several invocations of one bench: each part's provenance under
    `parts`, in order, and their results combined."""
    docs = [json.loads(p.read_text()) for p in paths]
    benches = {d.get("bench") for d in docs}
    if len(benches) != 1:
        raise SystemExit(f"--merge: parts of different benches: {sorted(map(str, benches))}")
    parts: list[dict[str, Any]] = []
    for path, doc in zip(paths, docs, strict=True):
        parts += doc["parts"] if "parts" in doc else [part_of(doc, path.name)]
    combined = combine(docs)
    layout = {"results": combined} if all("results" in d for d in docs) else combined
    return {
        "bench": benches.pop(),
        "invocations": len(parts),
        "date": min(p["date"] for p in parts if p.get("date")),
        "merged": {"date": now(), "argv": ["bench/results_file.py", *(argv or sys.argv[1:])]},
        "machine": docs[0].get("machine"),
        "parts": parts,
        **layout,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Merge result files of several invocations.")
    ap.add_argument("--merge", nargs="+", type=Path, required=True, metavar="PART")
    ap.add_argument("-o", "--output", type=Path, required=True)
    args = ap.parse_args(argv)
    write(args.output, merge(args.merge, argv=argv))
    print(f"results: {args.output} ({len(args.merge)} files merged)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
