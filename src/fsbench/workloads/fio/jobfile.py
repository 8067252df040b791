"""fio job files (`profile = "job=/path/file.fio"`): every job pointed at the filesystem
under test (its `directory=` lines replaced) or at the bare device, then run as written."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from fsbench.system.errors import TrialFailed
from fsbench.workloads.fio.parse import JobResult
from fsbench.workloads.fio.tool import Where, run_fio

# Generous: a hung fio becomes a failed trial, not a hung run.
TIMEOUT = 6 * 3600.0
_SECTION_RE = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_KEY_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:=(.*))?$")
# Where a job puts its files: replaced by the filesystem under test (or the device).
_PLACEMENT_KEYS = {"directory", "filename", "filename_format", "opendir"}


def rewrite_job_file(text: str, where: Where) -> str:
    """The job file with every job pointed at `where`: `directory=` lines dropped and the
    target's directory set at the end of every section (the last value wins); on the bare
    device every job gets `filename=<device>` and `direct=1`. Relative `filename=` values
    stay (under the new directory); absolute ones and includes are refused."""
    out = [
        "; rewritten by fsbench: placement set for the device/filesystem under test",
        "[global]",
        "group_reporting=1",
        "",
    ]
    sections = 0

    def close_section() -> None:
        if sections:
            if where.device is not None:
                out.extend([f"filename={where.device}", "direct=1"])
            else:
                out.append(f"directory={where.directory}")
            out.append("")

    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            out.append(line)
            continue
        if stripped.startswith("include "):
            raise ValueError(f"line {lineno}: `include` is not supported; inline the file")
        if _SECTION_RE.match(stripped):
            close_section()
            sections += 1
            out.append(line)
            continue
        m = _KEY_RE.match(stripped)
        key = m.group(1).lower() if m else ""
        value = (m.group(2) or "").strip() if m else ""
        if key in _PLACEMENT_KEYS:
            if where.device is not None or key in ("directory", "opendir"):
                out.append(f"; fsbench: dropped {stripped}")
                continue
            if value.startswith("/") or ".." in value.split("/"):
                raise ValueError(
                    f"line {lineno}: {key}={value} points outside the filesystem under test"
                )
        if where.device is not None and key in ("direct", "buffered"):
            out.append(f"; fsbench: dropped {stripped}")
            continue
        out.append(line)
    if not sections:
        raise ValueError("no job section ([name]) in the job file")
    close_section()
    return "\n".join(out) + "\n"


def check_job_file(path: Path) -> str | None:
    """Why fsbench cannot run this job file (unreadable, no job section, a placement
    outside the filesystem under test), or None: what `run_job_file` would refuse in
    every trial, said once before the run."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"fio job file {path}: {why}"
    try:
        rewrite_job_file(text, Where(directory=Path("/")))
    except ValueError as exc:
        return f"fio job file {path}: {exc}"
    return None


def run_job_file(path: Path, where: Where, extra: list[str]) -> list[JobResult]:
    """fio on the rewritten job file (`extra`: e.g. `--create_only=1` to lay out files)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise TrialFailed(f"fio job file {path}: {exc.strerror or exc}") from exc
    try:
        rewritten = rewrite_job_file(text, where)
    except ValueError as exc:
        raise TrialFailed(f"fio job file {path}: {exc}") from exc
    direct = where.raw or bool(re.search(r"^\s*direct\s*=\s*1", text, re.MULTILINE))
    with tempfile.TemporaryDirectory(prefix="fsbench-fio-job-") as tmp:
        job = Path(tmp) / path.name
        job.write_text(rewritten)
        return run_fio([*extra, str(job)], timeout=TIMEOUT, direct=direct)
