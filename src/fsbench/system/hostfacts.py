"""Host provenance kept beside every run: what machine, kernel and tools made the numbers,
collected here; what each key is, in the registry (hostkeys.py)."""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from fsbench import __version__
from fsbench.system import cpu_latency, filesystems, proc
from fsbench.system.hostkeys import Host


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _meminfo_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


VIRTIO_ID_BALLOON = 0x5
VIRTIO_BALLOON_F_REPORTING = 5


def free_page_reporting(virtio: Path = Path("/sys/bus/virtio/devices")) -> bool:
    """Whether a virtio balloon reports the guest's free memory to the host: memory that
    is freed (a trial's page cache, at umount) goes back to the host and costs a fault to
    use again, so buffered I/O's speed depends on how long ago the last trial freed it."""
    for device in virtio.glob("virtio*"):
        kind, features = _read(str(device / "device")), _read(str(device / "features"))
        if kind is None or features is None or not (device / "driver").exists():
            continue
        if int(kind, 16) == VIRTIO_ID_BALLOON and features[VIRTIO_BALLOON_F_REPORTING:][:1] == "1":
            return True
    return False


def _git_commit() -> str | None:
    src = Path(__file__).resolve().parents[3]  # the checkout: system/ fsbench/ src/ root
    if not (src / ".git").exists():
        return None
    res = proc.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], timeout=10)
    return res.stdout.strip() if res.ok else None


def package_version(package: str) -> str | None:
    res = proc.run(["dpkg-query", "-W", "-f", "${Version}", package], timeout=20)
    return f"{package} {res.stdout.strip()}" if res.ok and res.stdout.strip() else None


def _cpu_latency_us() -> int | None:
    try:
        return cpu_latency.requested_us()
    except OSError:  # no such device, not root
        return None


def host(fs_types: list[str], tool_packages: Mapping[str, str]) -> Host:
    """This host's facts, with the versions of these filesystems' tools and of the tools
    given as command -> Debian package (the workloads': `workloads.tool_packages`)."""
    tools: dict[str, str | None] = {}
    for name in fs_types:
        fs = filesystems.get(name)
        if fs.version:
            tools[fs.version[0]] = proc.tool_version(fs.version)
    for command, package in tool_packages.items():
        # From the package database: several tools have no --version (postmark reads
        # commands from stdin, fs_mark rejects it).
        tools[command] = package_version(package)
    mem = _meminfo_kib("MemTotal")
    return Host.write(
        {
            "hostname": socket.gethostname(),
            "kernel": platform.release(),
            "kernel_version": platform.version(),
            "machine": platform.machine(),
            "cpu": _cpu_model(),
            "cpus": os.cpu_count(),
            "memory_bytes": mem * 1024 if mem else None,
            "cpufreq_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "cpuidle_driver": _read("/sys/devices/system/cpu/cpuidle/current_driver") or None,
            "cpu_latency_us": _cpu_latency_us(),
            "dirty_ratio": _read("/proc/sys/vm/dirty_ratio"),
            "dirty_background_ratio": _read("/proc/sys/vm/dirty_background_ratio"),
            "free_page_reporting": free_page_reporting(),
            "python": sys.version.split()[0],
            "fsbench_version": __version__,
            "fsbench_commit": _git_commit(),
            "tools": tools,
        }
    )
