"""What the calibration of a run's host and kernel says of its rows, in words every
report uses (the rows carry the `below-calibration` flag: calibration.flag_below)."""

from __future__ import annotations

from collections.abc import Sequence

from fsbench.analysis import validity
from fsbench.analysis.rows import Row
from fsbench.system import numbers

BELOW = "below-calibration"


def below(rows: Sequence[Row]) -> dict[str, str]:
    """'workload (chain) params metric' -> the flag's detail, per comparison flagged."""
    out: dict[str, str] = {}
    for r in rows:
        if BELOW in r.flags:
            params = " ".join(f"{k}={numbers.setting(v)}" for k, v in r.params.items())
            host = f"{r.host}: " if r.host else ""
            what = f"{host}{r.workload}{f' ({r.chain})' if r.chain else ''} {params}".strip()
            out.setdefault(f"{what} {r.metric}", r.flags[BELOW])
    return out


def summary(rows: Sequence[Row], calibration_run: int | None) -> str:
    """One line for a report's header; "" when the machine was never calibrated."""
    if calibration_run is None:
        return ""
    found = below(rows)
    if not found:
        return (
            f"calibration: run {calibration_run} of this host and kernel; every difference "
            "between configs is above what it resolves"
        )
    n = len(found)
    return (
        f"calibration: run {calibration_run} of this host and kernel; in {n} "
        f"comparison{'s' if n != 1 else ''} {validity.meaning(BELOW)} "
        f"(flagged {BELOW}): read {'them' if n != 1 else 'it'} as no difference"
    )
