"""fio's per-second logs, read back as per-second series (bandwidth, latency percentiles).

Every fio run of a built-in profile writes two logs per job (`log_options`) into a
directory outside the target (under the run's own directory), read and removed after:

- `--write_bw_log` with `--log_avg_msec=1000`: each job's bandwidth over each second, one
  line per direction (KiB/s). Summed over the jobs: the run's MiB/s of that second.
- `--write_hist_log` with `--log_hist_msec=1000`: each job's completion-latency histogram
  of each second, in fio's own bins (1,856 of them: 64 per power of two of nanoseconds,
  the ones its JSON percentiles come from); each line holds the counts since the job's
  previous line. Merged over the jobs, a second's percentiles are computed as fio
  computes its own (`percentile`): they are percentiles of that second's I/Os, within
  fio's bin width (~1.6%).

Not `--write_lat_log` with `--log_avg_msec`: it logs each window's *mean* latency, from
which no percentile can be recovered (fio's manual says so of `log_hist_msec`).

Second k is [k, k+1) s after the job started. fio stamps a bandwidth line at the end of
its window and a histogram line at the first completion after the window ended, so a
line stamped T ms belongs to second floor(T / 1000 + 0.1) - 1 (a line up to 100 ms early
still counts for the window it ends). A second in which no I/O of a direction completed
has no percentile.

fio writes a window only once it is over: the last, partial second of a run is not in
the logs (a time-based run of N s would have N - 1 points, a run under a second none).
`add_tail` puts it back from fio's totals (its `json+` output): the bytes and the
histogram bins of the whole run less what the logged seconds hold (the bins exactly; the
bytes within the bandwidth log's rounding), as one more second over the runtime left,
when at least MIN_TAIL_S is left (else the bytes are dropped and the I/Os join the last
logged second). Every second's histogram together is then the whole run's, whose
percentiles are fio's own.

fio copies a job's whole histogram (15 KB) for every logged window and direction and
holds the copies until it ends: about 1 MB per job and direction for a minute's run, in
fio's memory (under a `mem` cap, charged to it). Where that would pass HIST_BUDGET (many
jobs for long: 64 jobs of randrw for 10 minutes would hold 1.1 GB) the histogram window
widens to whole seconds that keep it under (`hist_interval_s`), and the latency series
has a point every so many seconds; the bandwidth log costs a few bytes a second.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fsbench.system.units import parse_size
from fsbench.workloads.fio.parse import DIRECTIONS, Direction

INTERVAL_MS = 1000
PREFIX = "fsbench"  # log files: fsbench_bw.<job>.log, fsbench_clat_hist.<job>.log
# fio's histogram: FIO_IO_U_PLAT_BITS (64 bins per power of two) over 29 groups.
PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_NR = 29 * PLAT_VAL
# A line stamped up to this fraction of a window early still ends that window.
_EARLY = 0.1
# The shortest last, partial second worth a point: a rate over milliseconds says nothing.
MIN_TAIL_S = 0.2
MIB = 1 << 20
# The percentiles recorded per second (fio's JSON keys as our suffixes: parse.PERCENTILES).
SERIES_PERCENTILES: tuple[tuple[float, str], ...] = ((50.0, "p50"), (99.0, "p99"))
# What fio may hold of logged histograms in one run (HIST_ENTRY_BYTES each), and how long a
# size-based run is guessed to last (long: a slow disk) to tell.
HIST_ENTRY_BYTES = PLAT_NR * 8
HIST_BUDGET = 64 * MIB
_SLOW_BYTES_PER_S = 100 * MIB


def hist_interval_s(options: Sequence[tuple[str, str]]) -> int:
    """Seconds per logged latency histogram for a fio run of these options: 1, or as many
    as keep what fio holds of them under HIST_BUDGET."""
    opts = dict(options)
    jobs = int(opts.get("numjobs", "1"))
    directions = 2 if opts.get("rw") in ("randrw", "rw", "readwrite") else 1
    if opts.get("time_based") == "1":
        seconds = float(opts.get("runtime", "0").removesuffix("s"))
    else:
        seconds = jobs * parse_size(opts.get("size", "0")) / _SLOW_BYTES_PER_S
    held = jobs * directions * seconds * HIST_ENTRY_BYTES
    return max(1, math.ceil(held / HIST_BUDGET))


def log_options(directory: Path, hist_s: int = 1) -> tuple[tuple[str, str], ...]:
    """fio options that log each job's bandwidth every second and its latency histogram
    every `hist_s` seconds."""
    prefix = str(directory / PREFIX)
    return (
        ("write_bw_log", prefix),
        ("log_avg_msec", str(INTERVAL_MS)),
        ("write_hist_log", prefix),
        ("log_hist_msec", str(INTERVAL_MS * hist_s)),
    )


def second_of(time_ms: float, interval_s: int = 1) -> int:
    """The window (of `interval_s` seconds) a log line stamped `time_ms` closes."""
    return max(0, math.floor(time_ms / (INTERVAL_MS * interval_s) + _EARLY) - 1)


def plat_idx_to_val(idx: int) -> float:
    """The latency (ns) fio reports for its histogram bin `idx` (stat.c plat_idx_to_val):
    the middle of the bin."""
    if idx < (PLAT_VAL << 1):
        return float(idx)
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return base + (k + 0.5) * (1 << error_bits)


def bin_values(nbins: int) -> list[float]:
    """The latency (ns) of each of `nbins` logged bins: fio's own, or with
    `log_hist_coarseness` c, 2^c of them merged (the mean of their values)."""
    stride = PLAT_NR // nbins
    return [
        sum(plat_idx_to_val(i * stride + j) for j in range(stride)) / stride for i in range(nbins)
    ]


def percentile(values: Sequence[float], counts: Sequence[int], pct: float) -> float | None:
    """fio's percentile of a histogram (stat.c calc_clat_percentiles): the value of the
    first bin where the running count reaches pct% of the total. None when empty."""
    total = sum(counts)
    if total <= 0:
        return None
    want = pct / 100.0 * total
    running = 0
    for value, count in zip(values, counts, strict=True):
        running += count
        if count and running >= want:
            return value
    return values[-1]


@dataclass(frozen=True)
class HistLine:
    time_ms: int
    ddir: int
    counts: list[int]


def _fields(line: str) -> list[str]:
    return [f.strip() for f in line.split(",") if f.strip()]


def parse_bw_log(text: str) -> list[tuple[int, float, int]]:
    """(time ms, KiB/s, direction) of each line of a bandwidth log: `time, value, ddir,
    bs, offset[, prio]`."""
    out = []
    for line in text.splitlines():
        f = _fields(line)
        if len(f) >= 3:
            out.append((int(f[0]), float(f[1]), int(f[2])))
    return out


def _bins_of(n_fields: int) -> int | None:
    """How many of a histogram line's fields are bins: the rest (3, or 4 where fio logs
    a priority too) is its header; the bins are PLAT_NR / 2^coarseness."""
    for header in (3, 4):
        nbins = n_fields - header
        if nbins > 0 and PLAT_NR % nbins == 0 and (PLAT_NR // nbins).bit_count() == 1:
            return nbins
    return None


def parse_hist_log(text: str) -> list[HistLine]:
    """The lines of a histogram log: `time, ddir, bs, bin0, bin1, ...`."""
    out = []
    for line in text.splitlines():
        f = _fields(line)
        nbins = _bins_of(len(f))
        if nbins is None:
            continue
        out.append(HistLine(int(f[0]), int(f[1]), [int(x) for x in f[len(f) - nbins :]]))
    return out


@dataclass
class PerSecond:
    """What fio's logs say of each second of one run, every job together."""

    # direction -> second -> MiB/s
    mib_s: dict[str, dict[int, float]] = field(default_factory=dict)
    # direction -> window -> merged latency histogram (counts per bin)
    hist: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    bin_values: list[float] = field(default_factory=list)  # ns of each bin
    hist_s: int = 1  # seconds per histogram window

    def total_mib_s(self) -> tuple[list[float], list[float]]:
        """(t, MiB/s) of every direction together, for each second any job logged."""
        seconds = sorted({s for per in self.mib_s.values() for s in per})
        return (
            [float(s) for s in seconds],
            [sum(per.get(s, 0.0) for per in self.mib_s.values()) for s in seconds],
        )

    def add_tail(self, totals: Mapping[str, Direction]) -> None:
        """The run's last, partial second, which fio does not log, from its totals (one
        reporting group's directions): the bytes and histogram bins beyond the logged
        seconds, over the runtime left after them."""
        for ddir, d in totals.items():
            per = self.mib_s.get(ddir, {})
            tail = max(per) + 1 if per else 0
            left_s = d.runtime_ms / 1000.0 - tail
            if left_s >= MIN_TAIL_S:
                rest = d.io_bytes - sum(per.values()) * MIB  # MiB/s over 1 s each
                if rest >= 0:
                    self.mib_s.setdefault(ddir, {})[tail] = rest / left_s / MIB
            self._hist_tail(ddir, d.clat_bins, d.runtime_ms / 1000.0)

    def _hist_tail(self, ddir: str, bins: Mapping[int, int], run_s: float) -> None:
        """The I/Os no histogram line holds, as the second after the last logged one;
        those of the run's last moments (under MIN_TAIL_S) go to the last logged second."""
        if not self.bin_values:
            self.bin_values = bin_values(PLAT_NR)
        if not bins or len(self.bin_values) != PLAT_NR:
            return  # no bins, or logged coarser than fio's own: nothing to subtract from
        index = {int(v): i for i, v in enumerate(self.bin_values)}
        rest = [0] * PLAT_NR
        for value, count in bins.items():
            if value not in index:
                return  # not fio's bins as we know them
            rest[index[value]] = count
        logged = self.hist.get(ddir, {})
        for counts in logged.values():
            for i, c in enumerate(counts):
                rest[i] -= c
        if any(c < 0 for c in rest) or not any(rest):
            return
        second = max(logged) + 1 if logged else 0
        if logged and run_s - second * self.hist_s < MIN_TAIL_S:
            second -= 1
            rest = [a + b for a, b in zip(logged[second], rest, strict=True)]
        self.hist.setdefault(ddir, {})[second] = rest

    def percentile_series(self, ddir: str, pct: float) -> tuple[list[float], list[float]]:
        """(t, µs): a direction's latency percentile in each window (a second, unless
        `hist_s` says more) any of its I/O ended in; t is the window's start."""
        ts: list[float] = []
        vs: list[float] = []
        for s, counts in sorted(self.hist.get(ddir, {}).items()):
            value = percentile(self.bin_values, counts, pct)
            if value is not None:
                ts.append(float(s * self.hist_s))
                vs.append(value / 1000.0)
        return ts, vs


def _direction(ddir: int) -> str | None:
    return DIRECTIONS[ddir] if 0 <= ddir < len(DIRECTIONS) else None


def read_logs(bw_texts: Iterable[str], hist_texts: Iterable[str], hist_s: int = 1) -> PerSecond:
    """Every job's logs of one run (one text per job and kind) as seconds (histograms:
    windows of `hist_s` seconds)."""
    out = PerSecond(hist_s=hist_s)
    for text in bw_texts:
        # A job's lines of one second and direction (two if a window closed early) are
        # averaged; the jobs are summed.
        mine: dict[tuple[str, int], list[float]] = {}
        for time_ms, kib_s, ddir in parse_bw_log(text):
            name = _direction(ddir)
            if name is not None:
                mine.setdefault((name, second_of(time_ms)), []).append(kib_s)
        for (name, s), values in mine.items():
            per = out.mib_s.setdefault(name, {})
            per[s] = per.get(s, 0.0) + sum(values) / len(values) / 1024.0
    for text in hist_texts:
        for line in parse_hist_log(text):
            name = _direction(line.ddir)
            if name is None:
                continue
            if not out.bin_values:
                out.bin_values = bin_values(len(line.counts))
            if len(line.counts) != len(out.bin_values):
                continue  # another coarseness: not mergeable (fio writes one per run)
            acc = out.hist.setdefault(name, {}).setdefault(
                second_of(line.time_ms, hist_s), [0] * len(line.counts)
            )
            for i, c in enumerate(line.counts):
                if c:
                    acc[i] += c
    return out


def read_dir(directory: Path, hist_s: int = 1) -> PerSecond:
    """The logs `log_options(directory, hist_s)` made fio write, every job's."""
    bw = sorted(directory.glob(f"{PREFIX}_bw.*.log"))
    hist = sorted(directory.glob(f"{PREFIX}_clat_hist.*.log"))
    return read_logs(
        (p.read_text(errors="replace") for p in bw),
        (p.read_text(errors="replace") for p in hist),
        hist_s,
    )
