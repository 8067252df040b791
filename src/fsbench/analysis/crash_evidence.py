"""What the power cuts of the crash workload showed, from a run's rows: per pattern, the
crashes that damaged something and what (acknowledged operations lost, files empty or
mixed, fsck errors, failed mounts), the volatile-cache states, and against a baseline
config, Fisher's exact test on the damaged crashes. The one reading of crash results:
the reports state it, the race's safety policy (execute/race/safety.py) judges by it."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.analysis import stats
from fsbench.analysis.rows import Row
from fsbench.system import numbers

CRASH = "crash"  # the workload whose trials cut the power


def _total(rows: Sequence[Row], metric: str) -> int:
    return int(sum(sum(r.values) for r in rows if r.metric == metric))


def crash_text(
    pattern: str, rows: Sequence[Row], base: Sequence[Row] = (), base_config: str = ""
) -> tuple[str, bool]:
    """'replace-rename: 7/20 crashes damaged (31 files mixed); 0/20 on ext4, Fisher
    p = 0.008', and whether any crash was damaged. `base`: the baseline config's rows of
    the same pattern, compared by Fisher's exact test on damaged crashes."""
    n = _total(rows, "crashes")
    damaged = _total(rows, "damaged_crashes")
    against = ""
    base_n, base_damaged = _total(base, "crashes"), _total(base, "damaged_crashes")
    if base and (damaged or base_damaged):
        p = stats.fisher_exact(damaged, n, base_damaged, base_n)
        against = f"; {base_damaged}/{base_n} on {base_config}, Fisher {numbers.p(p)}"
    parts = [
        f"{count} {what}"
        for what, metric in (
            ("acknowledged ops lost", "acked_lost"),
            ("files empty", "files_empty"),
            ("files mixed", "files_mixed"),
            ("fsck errors", "fsck_errors"),
            ("failed mounts", "mount_failures"),
        )
        if (count := _total(rows, metric))
    ]
    cache = _cache_text(rows)
    if not damaged and not parts:
        return f"{pattern}: nothing lost in {_n(n, 'crash')}{against}{cache}", "damaged" in cache
    detail = f" ({', '.join(parts)})" if parts else ""
    return f"{pattern}: {damaged}/{n} crashes damaged{detail}{against}{cache}", True


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "es" if noun.endswith("sh") else "s")


def _cache_text(rows: Sequence[Row]) -> str:
    """'; volatile cache: 1/20 states damaged (3 acknowledged ops lost)', or why none."""
    states = _total(rows, "cache_states")
    if not states:
        return "; volatile-cache states not tested"
    damaged = _total(rows, "cache_damaged")
    lost, fsck = _total(rows, "cache_acked_lost"), _total(rows, "cache_fsck_errors")
    parts = [f"{lost} acknowledged ops lost"] * bool(lost) + [f"{fsck} fsck errors"] * bool(fsck)
    detail = f" ({', '.join(parts)})" if parts else ""
    if not damaged and not parts:
        return f"; volatile cache: {_n(states, 'state')} intact"
    return f"; volatile cache: {damaged}/{states} states damaged{detail}"
