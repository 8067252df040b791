"""Validity flags: the one registry of what may make a result less trustworthy.

A flag is set on a trial (by the runner, a workload's check, or the statistics of a row)
and shown beside the result with its meaning. `timing` says whether it taints only what
the clock measured: `short` matters for seconds, MiB/s or a latency, not for a count of
fragments. Reports read the meaning
from here; the per-trial detail (numbers) stays in the store.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    name: str
    meaning: str
    timing: bool = False  # True: taints only timed metrics (times, rates, latencies)
    # True: a table footnote shows the row's own detail (which repetitions, by how much),
    # not only the meaning.
    detailed: bool = False


# The cold-read rule, once: a read that should come from the device counts as cold when
# the device read at least this fraction of the bytes the workload expected to read.
COLD_READ_FRACTION = 0.5

FLAGS: dict[str, Flag] = {
    f.name: f
    for f in (
        Flag(
            "short",
            "timed phase under 2 s: timer resolution and noise weigh more",
            timing=True,
        ),
        Flag(
            "cpu-bound",
            "fsbench and its tools kept their threads' CPUs busy most of the timed phase: "
            "the CPU, not the filesystem, may set the pace",
        ),
        Flag(
            "not-cold",
            f"the device read less than {COLD_READ_FRACTION:.0%} of the data: part of a cold "
            "read came from a cache",
        ),
        Flag(
            "not-converged",
            "the 95% CI did not reach the plan's target width within the maximum repetitions",
        ),
        Flag(
            "order-effect",
            "the results depend on the trial's place in its round, on the trial run just "
            "before or on the round (a shock that moved every config of it): the machine's "
            "state, not only the config, moved them",
            detailed=True,
        ),
        Flag(
            "outliers",
            "some repetitions are outliers by modified z-score (shown, never dropped)",
            detailed=True,
        ),
        Flag(
            "bimodal",
            "the repetitions fall in two groups far apart (a machine that is sometimes much "
            "slower): the mean describes neither, and a verdict on it is a verdict on the mix",
            detailed=True,
        ),
        Flag(
            "below-calibration",
            "the difference is smaller than what `fsbench calibrate` showed this machine can "
            "resolve for this workload",
            detailed=True,
        ),
        Flag(
            "not-steady",
            "the per-second throughput never held steady over a window (fio's ss= rule): "
            "the mean mixes ramp-up and steady state",
            timing=True,
            detailed=True,
        ),
        Flag(
            "fsck-problems",
            "the read-only check found problems on the filesystem the workload left (its "
            "words are in the detail)",
            detailed=True,
        ),
        Flag(
            "replay-mismatch",
            "the replay did not do what the recording did: calls whose results differed, "
            "bytes moved unlike the recording, or calls not replayed (counts in the detail)",
            detailed=True,
        ),
        Flag(
            "knob-restore-failed",
            "a system knob could not be restored after the trial: later trials may have run "
            "with it changed",
        ),
    )
}


def footnote(name: str, detail: str) -> str:
    """What a table footnote says of a flag: its meaning, or the row's own detail."""
    flag = FLAGS.get(name)
    if flag is not None and flag.detailed and detail:
        return f"{name}: {detail}"
    return f"{name}: {meaning(name)}"


def meaning(name: str) -> str:
    flag = FLAGS.get(name)
    return flag.meaning if flag else "see the trial's provenance"


# Units of what the timed phase measured: its duration, rates over it, latencies in it.
TIMED_UNITS = frozenset({"s", "ms", "us", "ns", "IOPS"})


def timed(unit: str | None) -> bool:
    """A metric the clock measured: a time, a rate (anything per second) or a latency."""
    return unit is not None and (unit in TIMED_UNITS or unit.endswith("/s"))


def applies(name: str, unit: str | None) -> bool:
    """Whether a flag taints a metric of this unit (a timing flag only taints what the
    clock measured, not a count of fragments or bytes)."""
    flag = FLAGS.get(name)
    return not (flag and flag.timing and not timed(unit))
