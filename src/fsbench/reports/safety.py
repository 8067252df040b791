"""Safety beside speed: for a run that has both crash results and speed results, per
config, what it gains or loses on speed against the run's first config (the baseline),
and what it lost when the power went (the crash workload's counts over N crashes).

    ext4 data=writeback   untar: 8% faster (Welch p = 0.003)
                          replace-rename: 7/20 crashes damaged (31 files mixed)

A pure function of the rows, as every report is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fsbench.analysis.crash_evidence import CRASH, crash_text
from fsbench.analysis.decisions import EQUIVALENT, ORDER, Decision
from fsbench.analysis.design import Design
from fsbench.analysis.rows import Row
from fsbench.analysis.verdicts import Key, decide_all, key_of, label_of
from fsbench.reports.headline import headline_metrics
from fsbench.reports.tables import dims_of
from fsbench.system import numbers


@dataclass
class SafetyLine:
    config: str
    speed: list[str] = field(default_factory=list)  # against the baseline config
    crash: list[str] = field(default_factory=list)  # per pattern
    damaged: bool = False  # some crash of this config lost or damaged something
    baseline: bool = False  # the config the speed side is measured against


def speed_text(row: Row, base: Row, decision: Decision | None = None) -> str | None:
    """'untar seconds: 8% faster (Welch p = 0.003)' against the baseline's row, with the
    answer the run's tables give that pair (order, equivalent, undecided)."""
    if not (row.mean and base.mean and row.better):
        return None
    ratio = row.mean / base.mean
    gain = ratio - 1 if row.better == "higher" else 1 / ratio - 1
    word = "better" if gain >= 0 else "worse"
    if row.unit == "s" or row.metric == "seconds":
        word = "faster" if gain >= 0 else "slower"
    pair = decision.pair(label_of(row), label_of(base)) if decision else None
    if pair is None:
        evidence = "not compared"
    elif pair.kind == ORDER:
        evidence = "on every repetition" if pair.p is None else f"Welch {numbers.p(pair.p)}"
    elif pair.kind == EQUIVALENT:
        evidence = (
            f"equivalent within ±{numbers.percent(decision.design.margin)}" if decision else ""
        )
    elif pair.needed is not None:
        evidence = f"undecided; n≈{pair.needed} would decide"
    else:
        evidence = "undecided"
    what = row.workload if row.metric == "seconds" else f"{row.workload} {row.metric}"
    return f"{what}: {numbers.percent(abs(gain))} {word} ({evidence})"


def _cell(r: Row) -> tuple[str, str, str, str]:
    """A row's cell, whatever its config: compared across configs."""
    return (r.host, r.chain, r.workload, repr(sorted(dims_of(r).items())))


def safety_lines(
    rows: Sequence[Row], decisions: Mapping[Key, Decision] | None = None
) -> list[SafetyLine]:
    """One line per config when the run has crash results; [] otherwise. The speed
    answers are the run's `decisions` (decided here under a fixed design if not given)."""
    crash_rows = [r for r in rows if r.workload == CRASH and r.status == "ok"]
    if not crash_rows:
        return []
    configs = list(dict.fromkeys(r.config for r in rows))
    speed_rows = [r for r in rows if r.workload != CRASH and r.status == "ok" and r.metric]
    cells = list(dict.fromkeys(_cell(r) for r in speed_rows))
    out = []
    for config in configs:
        line = SafetyLine(config, baseline=config == configs[0])
        for cell in cells if config != configs[0] else []:
            of_cell = [r for r in speed_rows if _cell(r) == cell]
            shown = headline_metrics(of_cell)[:1]
            mine = [r for r in of_cell if r.config == config and r.metric in shown]
            base = [r for r in of_cell if r.config == configs[0] and r.metric in shown]
            if decisions is None:
                decisions = decide_all(list(rows), Design())
            verdict = decisions.get(key_of(mine[0])) if mine else None
            if mine and base and (text := speed_text(mine[0], base[0], verdict)):
                line.speed.append(text)
        for pattern, of_pattern in _by_pattern(crash_rows, config).items():
            base = _by_pattern(crash_rows, configs[0]).get(pattern, [])
            text, damaged = crash_text(
                pattern, of_pattern, base if config != configs[0] else (), configs[0]
            )
            line.crash.append(text)
            line.damaged = line.damaged or damaged
        out.append(line)
    return out


def _by_pattern(rows: Sequence[Row], config: str) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for r in rows:
        if r.config == config:
            out.setdefault(str(r.params.get("pattern")), []).append(r)
    return out


def baseline(rows: Sequence[Row]) -> str:
    """The config the speed side is measured against: the run's first."""
    return rows[0].config if rows else ""
