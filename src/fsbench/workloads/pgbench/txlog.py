"""What pgbench prints at the end of a run, and its per-transaction log (-l) summed up:
latency percentiles (nearest rank), their mean, and the transactions and p99 latency of
every whole second of the run."""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Summary:
    tps: float  # without the initial connection time
    transactions: int
    failed: int | None  # PostgreSQL 15 on; None where pgbench does not print it


_TPS = re.compile(
    r"^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)",
    re.M,
)
_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)


def parse_summary(text: str) -> Summary | None:
    """The figures of pgbench's final report; None without its tps line."""
    tps, processed = _TPS.search(text), _PROCESSED.search(text)
    if tps is None or processed is None:
        return None
    failed = _FAILED.search(text)
    return Summary(
        float(tps.group(1)),
        int(processed.group(1)),
        int(failed.group(1)) if failed is not None else None,
    )


@dataclass(frozen=True)
class Tx:
    """One line of the per-transaction log: `client_id transaction_no time script_no
    time_epoch time_us [schedule_lag [retries]]`, `time` being the latency in µs or, for a
    transaction that did not succeed, `failed` (`serialization`, `deadlock` with
    --failures-detailed) or `skipped`."""

    end_us: int  # when it completed, µs since the epoch
    latency_us: int | None  # None: it did not succeed
    skipped: bool
    lag_us: int | None  # schedule lag, under a rate limit (-R)


def parse_line(line: str) -> Tx | None:
    """One log line; None for a line that is none (blank, cut short)."""
    fields = line.split()
    if len(fields) < 6:
        return None
    try:
        end_us = int(fields[4]) * 1_000_000 + int(fields[5])
        lag = int(fields[6]) if len(fields) > 6 else None
    except ValueError:
        return None
    time_field = fields[2]
    if time_field.isdigit():
        return Tx(end_us, int(time_field), False, lag)
    return Tx(end_us, None, time_field == "skipped", lag)


def percentile(counts: Mapping[int, int], p: float) -> int:
    """The nearest-rank p-th percentile of the values counted in `counts` (value -> how
    many): the smallest value that at least p% of them do not exceed."""
    n = sum(counts.values())
    if n == 0:
        raise ValueError("no values")
    rank = max(1, math.ceil(p / 100 * n))
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return value
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class TxLog:
    latencies: Counter[int]  # µs -> successful transactions that took it
    failed: int
    skipped: int
    lag_us_sum: int
    lag_n: int
    # Whole seconds from the run's start (the first transaction's start): successful
    # transactions ending in each, and the p99 latency (µs) of those (None: none ended).
    seconds: list[float]
    per_second: list[int]
    p99_per_second: list[int | None]

    @property
    def ok(self) -> int:
        return sum(self.latencies.values())

    def mean_us(self) -> float:
        return sum(v * c for v, c in self.latencies.items()) / self.ok


def _lines(paths: Iterable[Path]) -> Iterable[Tx]:
    for path in paths:
        with open(path) as f:
            for line in f:
                tx = parse_line(line)
                if tx is not None:
                    yield tx


def read_log(paths: Sequence[Path]) -> TxLog:
    """The per-transaction log (one file per pgbench thread) summed up. Read twice: first
    for where the run starts and ends, then into per-second buckets from that start; only
    whole seconds are kept (the last, cut short by -T, is not). Memory: one count per
    distinct latency, and 4 bytes per transaction for the per-second percentiles."""
    start: int | None = None
    end = 0
    for tx in _lines(paths):
        if tx.latency_us is not None:
            begun = tx.end_us - tx.latency_us
            start = begun if start is None else min(start, begun)
            end = max(end, tx.end_us)
    latencies: Counter[int] = Counter()
    failed = skipped = lag_sum = lag_n = 0
    whole = (end - start) // 1_000_000 if start is not None else 0
    buckets: dict[int, array[int]] = {}
    for tx in _lines(paths):
        if tx.lag_us is not None:
            lag_sum += tx.lag_us
            lag_n += 1
        if tx.latency_us is None:
            skipped += tx.skipped
            failed += not tx.skipped
            continue
        latencies[tx.latency_us] += 1
        assert start is not None  # a successful transaction set it
        second = (tx.end_us - start) // 1_000_000
        if second < whole:
            buckets.setdefault(second, array("i")).append(tx.latency_us)
    seconds = [float(i) for i in range(whole)]
    per_second = [len(buckets.get(i, ())) for i in range(whole)]
    p99 = [percentile(Counter(buckets[i]), 99) if buckets.get(i) else None for i in range(whole)]
    return TxLog(latencies, failed, skipped, lag_sum, lag_n, seconds, per_second, p99)
