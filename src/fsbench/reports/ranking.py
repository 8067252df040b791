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
from fsbench.stats import rank

ALPHA = 0.05
NO_CLEAR = "no clear difference"
TOO_FEW = "too few repetitions to test"
RULE = "the best config when Welch's t-test gives p < 0.05 against every other (Holm)"


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
        """One sentence with the evidence."""
        if not self.significant:
            base = NO_CLEAR if self.tested else TOO_FEW
            if self.tested and self.p_adjusted is not None:
                return f"{base} (best {self.best}, {fmt_p(self.p_adjusted)} vs {self.runner_up})"
            return base
        p = self.p_adjusted if self.p_adjusted is not None else float("nan")
        return (
            f"{self.best} best, {self.margin} vs runner-up {self.runner_up} "
            f"({self.better} is better; Welch {fmt_p(p)}, Holm-corrected)"
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
    ranking = rank([r.values for _, r in usable], higher_is_better=better == "higher", alpha=ALPHA)
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
    )
