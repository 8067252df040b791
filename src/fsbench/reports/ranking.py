"""Who wins a comparison, and only when the data say so.

One comparison is a set of configs measured in the same conditions (one workload, one
combination of parameters and knobs, one metric). The best config by mean is called the
winner only when Welch's t-test against every other config gives p < 0.05 after Holm's
correction over those comparisons (`stats.rank`); otherwise the verdict is "no clear
difference". Pure functions: rows in, verdicts out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fsbench.reports.rows import Row
from fsbench.stats import fisher_exact, holm, rank

ALPHA = 0.05
NO_CLEAR = "no clear difference"
TOO_FEW = "too few repetitions to test"
RULE = "the best config when Welch's t-test gives p < 0.05 against every other (Holm)"
# The rule for counts of events out of N (damaged crashes of N power cuts).
RULE_EVENTS = (
    "the best config when Fisher's exact test on its count out of N gives p < 0.05 "
    "against every other (Holm)"
)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison between configs."""

    metric: str | None
    unit: str | None
    better: str  # higher | lower
    labels: tuple[str, ...]  # the configs compared, in table order
    best: str  # the best label by mean (a winner only if `significant`)
    runner_up: str
    best_mean: float
    runner_up_mean: float
    p_adjusted: float | None  # Holm-adjusted p of best vs runner-up; None: n < 2 somewhere
    significant: bool
    # The comparison that decides the verdict: the largest Holm-adjusted p of the best
    # against any other config, and that config. A winner needs it below 0.05; the p a
    # verdict shows is this one, so that the text and the p agree.
    p_decisive: float | None = None
    decisive: str = ""
    # The difference is within one step of the metric's resolution: no difference.
    within_resolution: bool = False
    resolution: float = 0.0
    # The test: Welch over repetitions, or Fisher's exact test for counts of events out
    # of N (the crash workload's damaged crashes: one trial, many crashes).
    test: str = "Welch"

    @property
    def tested(self) -> bool:
        return self.p_adjusted is not None

    @property
    def ratio(self) -> float | None:
        """best mean / runner-up mean."""
        if self.runner_up_mean == 0:
            return None
        return self.best_mean / self.runner_up_mean

    @property
    def margin(self) -> str:
        """The winner's lead over the runner-up: '-23%', '+15%', '16× lower'."""
        return fmt_change(self.ratio, self.better)

    @property
    def short(self) -> str:
        """For a table's verdict row: 'ext4: -23% vs xfs' or 'no clear difference'."""
        if not self.significant:
            return NO_CLEAR if self.tested else TOO_FEW
        return f"{self.best}: {self.margin} vs {self.runner_up}"

    @property
    def text(self) -> str:
        """One sentence with the evidence; the p it shows is the one that decided."""
        if not self.significant:
            if not self.tested:
                return TOO_FEW
            if self.within_resolution:
                return (
                    f"{NO_CLEAR} (best {self.best} and {self.runner_up} differ by no more "
                    f"than the metric's resolution, {self.resolution:g} {self.unit or ''})"
                ).replace(" )", ")")
            if self.p_decisive is not None:
                return (
                    f"{NO_CLEAR} (best {self.best}; vs {self.decisive}: {self.test} "
                    f"{fmt_p(self.p_decisive)}, Holm-corrected, not below 0.05)"
                )
            return NO_CLEAR
        p = self.p_decisive if self.p_decisive is not None else float("nan")
        if len(self.labels) > 2:  # the largest p of all comparisons: each is at most it
            evidence = f"{self.test} p {'<' if p < 0.001 else '≤'} {p_value(p).lstrip('< ')} "
            evidence += "against each other config"
        else:
            evidence = f"{self.test} {fmt_p(p)}"
        return (
            f"{self.best} best, {self.margin} vs runner-up {self.runner_up} "
            f"({self.better} is better; {evidence}, Holm-corrected)"
        )


def p_value(p: float) -> str:
    """'0.012', '< 0.001'."""
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def fmt_p(p: float) -> str:
    """'p = 0.012', 'p < 0.001'."""
    return f"p {p_value(p)}" if p < 0.001 else f"p = {p_value(p)}"


def fmt_change(ratio: float | None, better: str) -> str:
    """A ratio new/old as people read it: '-23%', '+4.5%', '16× lower', '3.2× higher'."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio <= 0:
        return "-100%"
    if ratio >= 2:
        return f"{ratio:.3g}× higher"
    if ratio <= 0.5:
        return f"{1 / ratio:.3g}× lower"
    change = ratio - 1
    if abs(change) < 0.1:
        return f"{change:+.1%}"
    return f"{change:+.0%}"


def rank_rows(labelled: Sequence[tuple[str, Row | None]]) -> Verdict | None:
    """The verdict over (label, row) pairs of one metric; None when fewer than two
    configs have values (nothing to compare) or the metric has no direction."""
    usable = [(label, r) for label, r in labelled if r is not None and r.values]
    if len(usable) < 2:
        return None
    better = usable[0][1].better
    if better not in ("higher", "lower"):
        return None
    if all(r.over and r.unit == "count" for _, r in usable):
        return _rank_events(usable, better)
    resolution = max(r.resolution for _, r in usable)
    ranking = rank(
        [r.values for _, r in usable],
        higher_is_better=better == "higher",
        alpha=ALPHA,
        resolution=resolution,
    )
    if ranking is None or ranking.runner_up is None:
        return None
    best_label, best_row = usable[ranking.best]
    ru_label, ru_row = usable[ranking.runner_up]
    return Verdict(
        metric=best_row.metric,
        unit=best_row.unit,
        better=better,
        labels=tuple(label for label, _ in usable),
        best=best_label,
        runner_up=ru_label,
        best_mean=best_row.mean if best_row.mean is not None else math.nan,
        runner_up_mean=ru_row.mean if ru_row.mean is not None else math.nan,
        p_adjusted=ranking.p_adjusted,
        significant=ranking.significant,
        p_decisive=ranking.p_decisive,
        decisive=usable[ranking.decisive][0] if ranking.decisive is not None else "",
        within_resolution=ranking.within_resolution,
        resolution=resolution,
    )


def _rank_events(usable: Sequence[tuple[str, Row]], better: str) -> Verdict | None:
    """Counts of events out of N per config (2 of 20 crashes damaged): the best rate,
    and Fisher's exact test of it against each other config, Holm-corrected."""
    hits = [(int(sum(r.values)), int((r.over or {})["n"])) for _, r in usable]
    rates = [k / n if n else math.nan for k, n in hits]
    order = sorted(range(len(usable)), key=lambda i: rates[i], reverse=better == "higher")
    best, others = order[0], order[1:]
    raw = [fisher_exact(*hits[best], *hits[i]) for i in others]
    adjusted = holm(list(raw))
    decisive = max(range(len(others)), key=lambda j: adjusted[j] or 0.0)
    significant = all(p is not None and p < ALPHA for p in adjusted)
    return Verdict(
        metric=usable[best][1].metric,
        unit=usable[best][1].unit,
        better=better,
        labels=tuple(label for label, _ in usable),
        best=usable[best][0],
        runner_up=usable[others[0]][0],
        best_mean=rates[best],
        runner_up_mean=rates[others[0]],
        p_adjusted=adjusted[0],
        significant=significant and rates[best] != rates[others[0]],
        p_decisive=adjusted[decisive],
        decisive=usable[others[decisive]][0],
        test="Fisher",
    )
