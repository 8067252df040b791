"""The statistical gate of a bisection: is a step's sample significantly closer to the good
endpoint's or to the bad one's?

A one-run threshold on a noisy machine marks good commits bad and sends a bisection down
the wrong half. Here a step is marked only when its mean is significantly closer to one
endpoint's mean than to the other's: a Welch-type test of the step's mean against the
endpoints' midpoint (the step's and both endpoints' variances, Welch-Satterthwaite df),
judged at the per-look level of the sequential design every fsbench comparison uses
(design.py: a look after every repetition from 3 to the budget, Pocock boundaries), so
looking again after each added repetition does not inflate false marks. The pairs good /
step / bad are decided too (decisions.py: Welch, Holm with Shaffer's constraints) and
reported: a step ordered against both endpoints is marked by the side it is closer to,
with a note (a drift of the machine between the endpoints' measurements and the step's,
or a partial change). A step not significantly closer to either stays **undecided**:
more repetitions, up to the budget, then the bisection stops with the range left.

Before any step, `refusal` says in one line, with numbers, why a bisection cannot work:
the endpoints are not ordered (at the per-look level a step is judged at), or their
difference is below what the noise lets a step measured to the budget tell apart.

Pure functions: values in, verdicts out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fsbench.analysis import decisions
from fsbench.analysis.decisions import ORDER, Side
from fsbench.analysis.design import ALPHA, DEFAULT_MARGIN, MIN_REPS, Design, cv
from fsbench.analysis.null_law import PAIR_WELCH
from fsbench.analysis.stats import min_detectable, summarize

GOOD, BAD, UNDECIDED = "good", "bad", "undecided"
STEP = "step"


@dataclass(frozen=True)
class Verdict:
    """A step's answer and its evidence."""

    verdict: str  # good | bad | undecided
    n: int
    mean: float
    ci95: tuple[float, float] | None  # the step's mean
    p_good: float | None  # step vs good endpoint (order p, sequential, Holm)
    p_bad: float | None
    needed: int | None  # undecided: repetitions per side that would decide
    note: str = ""
    p_mid: float | None = None  # the step's mean at the endpoints' midpoint (two-sided)

    @property
    def decided(self) -> bool:
        return self.verdict != UNDECIDED

    def as_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "n": self.n,
            "mean": self.mean,
            "ci95": list(self.ci95) if self.ci95 else None,
            "p_good": self.p_good,
            "p_bad": self.p_bad,
            "p_mid": self.p_mid,
            "needed": self.needed,
            "note": self.note,
        }


def design(n_max: int, margin: float = DEFAULT_MARGIN) -> Design:
    """A look after every repetition from MIN_REPS to the budget."""
    return Design(True, MIN_REPS, max(MIN_REPS, n_max), margin)


def gate(
    good: Sequence[float],
    bad: Sequence[float],
    step: Sequence[float],
    *,
    better: str,
    n_max: int,
    unit: str | None = None,
    margin: float = DEFAULT_MARGIN,
) -> Verdict:
    """The verdict on `step` (values in the order measured) against the endpoints."""
    summary = summarize(step)
    mean = summary.mean if summary.mean is not None else math.nan
    base = Verdict(UNDECIDED, len(step), mean, summary.ci95, None, None, None)
    if len(step) < 2 or len(good) < 2 or len(bad) < 2:
        return _with(base, note="too few repetitions to test")
    sides = [Side(GOOD, tuple(good)), Side(STEP, tuple(step)), Side(BAD, tuple(bad))]
    found = decisions.decide(
        sides, better=better, unit=unit, design=design(n_max, margin), explain=False
    )
    if found is None:
        return _with(base, note="no decision possible (no direction for this metric)")
    vs_good, vs_bad = found.pair(GOOD, STEP), found.pair(STEP, BAD)
    assert vs_good is not None and vs_bad is not None
    base = _with(base, p_good=vs_good.p, p_bad=vs_bad.p)
    g, b = statistics.fmean(good), statistics.fmean(bad)
    mid = (g + b) / 2
    good_side = (mean - mid) * (g - mid) > 0
    p_mid = midpoint_p(good, bad, step)
    # a step and its endpoints share no rounds (each kernel is measured apart): Welch's law
    level = design(n_max, margin).boundary(PAIR_WELCH, ALPHA, n_max)
    both = vs_good.kind == ORDER and vs_bad.kind == ORDER
    drift = ", though it differs from both endpoints (a drift, or a partial change)"
    base = _with(base, p_mid=p_mid)
    if p_mid is not None and p_mid <= level:
        side = GOOD if good_side else BAD
        note = f"significantly closer to the {side} endpoint (p={p_mid:.2g})"
        return _with(base, verdict=side, note=note + (drift if both else ""))
    needed = [p.needed for p in (vs_good, vs_bad) if p.needed is not None]
    note = "not significantly closer to either endpoint"
    if both:
        note += ": it differs from both, between them (a partial change, or two changes)"
    return _with(base, needed=max(needed) if needed else None, note=note)


def midpoint_p(good: Sequence[float], bad: Sequence[float], step: Sequence[float]) -> float | None:
    """Two-sided p that the step's mean is at the endpoints' midpoint (as close to one as
    to the other): t = (mean(step) - (mean(good) + mean(bad)) / 2) / se, with
    se^2 = var(step)/n + (var(good)/n_g + var(bad)/n_b) / 4 and Welch-Satterthwaite's df."""
    from scipy.special import stdtr

    parts = []  # (weight, variance of the mean, n)
    for weight, values in ((1.0, step), (0.5, good), (0.5, bad)):
        n = len(values)
        if n < 2:
            return None
        parts.append((weight**2 * statistics.variance(values) / n, n))
    se2 = sum(v for v, _ in parts)
    d = statistics.fmean(step) - (statistics.fmean(good) + statistics.fmean(bad)) / 2
    if se2 == 0:
        return 0.0 if d else 1.0
    df = se2**2 / sum(v**2 / (n - 1) for v, n in parts if v > 0)
    return float(2 * stdtr(df, -abs(d) / math.sqrt(se2)))


def _with(v: Verdict, **changes: object) -> Verdict:
    from dataclasses import replace

    return replace(v, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Refusal:
    """Why a bisection between these endpoints cannot work, with its numbers."""

    line: str
    difference: float  # relative, bad vs good
    detectable: float | None  # the smallest relative difference the budget detects


def refusal(
    good: Sequence[float],
    bad: Sequence[float],
    *,
    better: str,
    n_max: int,
    unit: str = "",
    margin: float = DEFAULT_MARGIN,
) -> Refusal | None:
    """None when the endpoints are ordered and differ by more than the smallest
    difference a step measured to `n_max` repetitions can be told from (at the noise the
    endpoints show, 80% power, the sequential design's per-look level); else the line."""
    if len(good) < 2 or len(bad) < 2:
        return Refusal(
            f"refusing to bisect: endpoints need 2+ repetitions each (good n={len(good)}, "
            f"bad n={len(bad)})",
            math.nan,
            None,
        )
    g, b = statistics.fmean(good), statistics.fmean(bad)
    diff = (b - g) / g if g else math.inf
    cg, cb = cv(good), cv(bad)
    noise = math.sqrt(((cg or 0.0) ** 2 + (cb or 0.0) ** 2) / 2)
    d = design(n_max, margin)
    boundary = d.boundary(PAIR_WELCH, ALPHA, n_max)
    detectable = min_detectable(noise, 1.0, n_max, alpha=boundary)
    # Ordered at the level a step is judged at (the design's per-look boundary), not 5%:
    # identical kernels measured apart in time must not pass for a regression.
    found = decisions.decide(
        [Side(GOOD, tuple(good)), Side(BAD, tuple(bad))],
        better=better,
        unit=unit or None,
        design=Design(False, margin=margin, alpha=boundary),
        explain=False,
    )
    pair = found.pair(GOOD, BAD) if found else None
    ordered = pair is not None and pair.kind == ORDER
    worse = pair is not None and pair.winner == GOOD
    small = detectable is not None and abs(diff) < detectable
    if ordered and worse and not small:
        return None
    p = f"p={pair.p:.2g}" if pair is not None and pair.p is not None else "no test"
    if ordered and not worse:
        why = "the 'bad' endpoint is the better one"
    elif not ordered:
        why = "the endpoints are not ordered"
    else:
        why = "the difference is below what the noise lets the budget detect"
    u = f" {unit}" if unit else ""
    seen = f"{detectable:.1%}" if detectable is not None else "n/a"
    line = (
        f"refusing to bisect: {why}: good {g:.4g}{u} (n={len(good)}), bad {b:.4g}{u} "
        f"(n={len(bad)}), {diff:+.1%} ({p}); noise CV {noise:.1%}: {n_max} repetitions "
        f"detect {seen}"
    )
    return Refusal(line, diff, detectable)
