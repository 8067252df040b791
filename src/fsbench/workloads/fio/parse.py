"""fio's JSON output (`--output-format=json+`: json with the latency histograms' bins):
the jobs or reporting groups, and the metrics fsbench reports of them (MiB/s, IOPS, mean
latency, completion-latency percentiles, per direction)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fsbench.workloads.metric import Better, Metric, bucket_width

# fio's completion-latency histogram: 2^6 buckets per power of two (FIO_IO_U_PLAT_BITS), so
# a percentile is known to within its bucket, about 1.6% of its value.
FIO_PLAT_BITS = 6

MIB = 1 << 20
# Percentiles fio reports by default, as fio's JSON keys, and our metric suffixes.
PERCENTILES: tuple[tuple[str, str], ...] = (
    ("50.000000", "p50"),
    ("95.000000", "p95"),
    ("99.000000", "p99"),
    ("99.900000", "p99_9"),
)
DIRECTIONS = ("read", "write", "trim")


@dataclass(frozen=True)
class Direction:
    """One direction (read, write, trim) of one fio job or reporting group."""

    io_bytes: int
    bw_mib_s: float
    iops: float
    lat_mean_us: float | None
    clat_percentiles_us: dict[str, float]  # metric suffix ("p99") -> µs
    total_ios: int
    runtime_ms: int = 0  # of the direction (a group's: its longest job's)
    # The whole run's completion-latency histogram (`json+` output): ns -> I/Os.
    clat_bins: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class JobResult:
    name: str
    groupid: int
    error: int
    directions: dict[str, Direction] = field(default_factory=dict)


class FioOutputError(ValueError):
    """fio's output is not the JSON we expect."""


def parse_fio_json(text: str) -> list[JobResult]:
    """The jobs (or reporting groups) of a `fio --output-format=json` output. fio may print
    notes before the JSON object: everything before the first `{` is skipped."""
    start = text.find("{")
    if start < 0:
        raise FioOutputError("no JSON object in fio's output")
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise FioOutputError(f"fio's JSON does not parse: {exc}") from exc
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        raise FioOutputError("fio's JSON has no `jobs` list")
    results = []
    for job in jobs:
        directions = {}
        for ddir in DIRECTIONS:
            d = job.get(ddir)
            if isinstance(d, dict) and int(d.get("total_ios", 0)) > 0:
                directions[ddir] = _direction(d)
        results.append(
            JobResult(
                name=str(job.get("jobname", "")),
                groupid=int(job.get("groupid", 0)),
                error=int(job.get("error", 0)),
                directions=directions,
            )
        )
    return results


def _direction(d: dict[str, Any]) -> Direction:
    bw_bytes = d.get("bw_bytes")
    # bw_bytes appeared in fio 3.x; `bw` is KiB/s in every version.
    bw = float(bw_bytes) / MIB if bw_bytes is not None else float(d.get("bw", 0)) / 1024
    lat = d.get("lat_ns")
    lat_mean = float(lat["mean"]) / 1000 if isinstance(lat, dict) and lat.get("N") else None
    pct: dict[str, float] = {}
    clat = d.get("clat_ns")
    table = clat.get("percentile") if isinstance(clat, dict) else None
    if isinstance(table, dict):
        for key, suffix in PERCENTILES:
            if key in table:
                pct[suffix] = float(table[key]) / 1000
    bins = clat.get("bins") if isinstance(clat, dict) else None
    return Direction(
        io_bytes=int(d.get("io_bytes", 0)),
        bw_mib_s=bw,
        iops=float(d.get("iops", 0.0)),
        lat_mean_us=lat_mean,
        clat_percentiles_us=pct,
        total_ios=int(d.get("total_ios", 0)),
        runtime_ms=int(d.get("runtime", 0)),
        clat_bins={int(k): int(v) for k, v in bins.items()} if isinstance(bins, dict) else {},
    )


def rate_step(rate: float, d: Direction) -> float:
    """fio divides what it did by its runtime in whole milliseconds: a rate's step is the
    change one millisecond makes (64 MiB written in 28 or 29 ms: 2,286 or 2,207 MiB/s), so
    two identical configs of a short run can give two constants one step apart."""
    return rate / d.runtime_ms if d.runtime_ms > 0 else 0.0


def direction_metrics(prefix: str, ddir: str, d: Direction) -> list[Metric]:
    """`{prefix}{ddir}_mib_s`, `_iops`, `_lat_mean_us`, `_clat_p50_us`...: e.g. write_mib_s,
    rand_read_clat_p99_us."""
    base = f"{prefix}{ddir}"
    out = [
        Metric(f"{base}_mib_s", d.bw_mib_s, "MiB/s", Better.HIGHER, rate_step(d.bw_mib_s, d)),
        Metric(f"{base}_iops", d.iops, "IOPS", Better.HIGHER, rate_step(d.iops, d)),
    ]
    if d.lat_mean_us is not None:
        out.append(Metric(f"{base}_lat_mean_us", d.lat_mean_us, "us", Better.LOWER))
    for _, suffix in PERCENTILES:
        if suffix in d.clat_percentiles_us:
            value = d.clat_percentiles_us[suffix]
            step = bucket_width(value, FIO_PLAT_BITS, per_unit=1000)
            out.append(Metric(f"{base}_clat_{suffix}_us", value, "us", Better.LOWER, step))
    return out


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "job"


def written_bytes(results: Sequence[JobResult]) -> int:
    """What fio wrote, for the runner's write amplification (device bytes per byte)."""
    return sum(d.io_bytes for r in results for ddir, d in r.directions.items() if ddir == "write")


def job_metrics(results: Sequence[JobResult], prefix: str = "") -> list[Metric]:
    """Metrics of one fio run. One job (or reporting group): plain names; several: each
    prefixed with its job name (made unique with the group id when names repeat)."""
    if len(results) == 1:
        return [
            m
            for ddir, d in results[0].directions.items()
            for m in direction_metrics(prefix, ddir, d)
        ]
    slugs = [_slug(r.name) for r in results]
    metrics = []
    for r, slug in zip(results, slugs, strict=True):
        label = slug if slugs.count(slug) == 1 else f"{slug}_g{r.groupid}"
        for ddir, d in r.directions.items():
            metrics += direction_metrics(f"{prefix}{label}_", ddir, d)
    return metrics
