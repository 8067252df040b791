"""Running fio: where its I/O goes (a directory on the filesystem under test, or the bare
device), the command with JSON output, and what its exit status, job errors and messages
mean (a refused O_DIRECT is Unsupported; anything else a TrialFailed with fio's words)."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fsbench.system import proc
from fsbench.system.errors import TrialFailed, Unsupported
from fsbench.workloads.base import TrialContext
from fsbench.workloads.fio.parse import FioOutputError, JobResult, parse_fio_json


@dataclass(frozen=True)
class Where:
    """Where the I/O goes: a directory on the filesystem under test, or the bare device."""

    directory: Path | None = None
    device: str | None = None

    @property
    def raw(self) -> bool:
        return self.device is not None


def where(ctx: TrialContext) -> Where:
    if ctx.fs_type == "raw":
        return Where(device=ctx.device)
    return Where(directory=ctx.mountpoint)


def device_size(device: str) -> int:
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def argv_options(options: Sequence[tuple[str, str]]) -> list[str]:
    return [f"--{k}={v}" for k, v in options]


def _stderr_tail(res: proc.Result, lines: int = 40) -> str:
    text = "\n".join(p for p in (res.stderr.strip(), res.stdout.strip()) if p)
    return "\n".join(text.splitlines()[-lines:])


def run_fio(args: Sequence[str], *, timeout: float, direct: bool) -> list[JobResult]:
    """Run fio with `args` (options and/or a job file); its parsed JSON. Errors: a refused
    O_DIRECT is Unsupported; anything else is TrialFailed with fio's messages."""
    with tempfile.TemporaryDirectory(prefix="fsbench-fio-") as tmp:
        out_path = Path(tmp) / "fio.json"
        # json+: json with each latency histogram's bins (logs.py completes the per-second
        # series with what fio's totals hold beyond its last logged second).
        argv = ["fio", "--output-format=json+", f"--output={out_path}", "--eta=never", *args]
        res = proc.run(argv, timeout=timeout)
        text = out_path.read_text(errors="replace") if out_path.exists() else ""
    return check_fio(res, text, direct=direct)


def check_fio(res: proc.Result, text: str, *, direct: bool) -> list[JobResult]:
    """fio's parsed JSON, or the error its exit status, job errors and messages mean."""
    detail = _stderr_tail(res)
    if res.returncode == 127:
        raise TrialFailed("fio is not installed (apt-get install fio)", detail)
    if res.returncode == 124:
        raise TrialFailed(f"fio: {res.stderr.strip()}", detail)
    try:
        results = parse_fio_json(text) if text.strip() else []
    except FioOutputError as exc:
        raise TrialFailed(f"fio: {exc}", detail + "\n" + text[-2000:]) from exc
    errors = sorted({r.error for r in results if r.error})
    # fio: "looks like your file system does not support direct=1/buffered=0", or the
    # EINVAL of the open/first I/O with O_DIRECT.
    if "does not support direct" in res.stderr or (direct and errno.EINVAL in errors):
        raise Unsupported(f"fio: O_DIRECT refused: {os.strerror(errno.EINVAL)}", detail)
    if errors or not res.ok:
        first = next(
            (ln.strip() for ln in res.stderr.splitlines() if ln.strip().startswith("fio:")),
            "",
        )
        what = ", ".join(os.strerror(e) for e in errors) or f"exit {res.returncode}"
        raise TrialFailed(f"fio failed: {what}" + (f" ({first})" if first else ""), detail)
    if not results:
        raise TrialFailed("fio reported no jobs", detail)
    return results
