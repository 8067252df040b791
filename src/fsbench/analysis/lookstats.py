"""What one look of a comparison computes: each pair's two tests and three configs' gate,
from moments, so that the decisions (one comparison: pairs.py) and the laws they are judged
against (many draws at once: null_law.py) apply the same formulas.

The design's rounds are blocks: every round runs each config once, in a balanced order,
so a shock that slows a whole round (this VM's host does it) moves every config of it
alike. Two tests per pair, on the log scale for ratio metrics:

- **Welch's t** on the two configs' values, the rounds ignored: the most power when
  rounds do not differ (its df are the two configs' together);
- **the round-paired t**: a one-sample t of the differences within rounds, where a
  round's shock cancels (df: the rounds less one).

A pair's statistic at a look is the smaller p of the two, judged against that smaller p's
own law (null_law.py). Three configs' gate at a look is the smallest of Welch's ANOVA, the
two-way ANOVA with rounds as blocks (configs x rounds, additive), and three times the
smallest pair statistic (Bonferroni over the pairs).

Every function takes plain floats or numpy arrays over many draws at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fsbench.analysis.stats import welch_anova_from_moments, welch_from_moments

WELCH, PAIRED = "Welch", "paired"
# No look's statistic is taken as smaller than this: a p below it is as certain as a p
# gets (and a law's draws cannot tell such p's apart).
P_FLOOR = 1e-10


def paired_from_moments(mean: Any, variance: Any, n: Any) -> tuple[Any, Any, Any, Any]:
    """The round-paired t from the n within-round differences' mean and sample variance:
    the mean, its standard error, the df (n - 1) and the two-sided p. Differences without
    spread: p 1 when their mean is zero, else 0 (certain)."""
    from scipy.special import stdtr

    mean, variance = np.asarray(mean, float), np.asarray(variance, float)
    se = np.sqrt(np.maximum(variance, 0.0) / n)
    df = np.asarray(n, float) - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stdtr(df, -np.abs(mean / se))
    return mean, se, df, np.where(se > 0, p, np.where(mean == 0, 1.0, 0.0))


def blocked_anova_from_moments(means: Any, variances: Any, n: Any, round_variance: Any) -> Any:
    """The p that k configs' means are equal with rounds as blocks (the two-way additive
    ANOVA's F of configs against the residual, df k - 1 and (k - 1)(n - 1)), from the
    configs' means and sample variances over the same n rounds (the last axis) and the
    sample variance of the n round means. A residual of zero: p 0 when the configs differ,
    else 1."""
    from scipy.special import fdtrc

    means, variances = np.asarray(means, float), np.asarray(variances, float)
    k = means.shape[-1]
    grand = means.mean(axis=-1, keepdims=True)
    between = n * ((means - grand) ** 2).sum(axis=-1)
    # Within the configs, less what the rounds explain.
    residual = (n - 1) * (variances.sum(axis=-1) - k * np.asarray(round_variance, float))
    residual = np.maximum(residual, 0.0)
    df = (k - 1) * (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = fdtrc(k - 1, df, (between / (k - 1)) / (residual / df))
    tiny = residual <= 1e-12 * np.maximum(between, 1e-300)
    return np.where(tiny, np.where(between > 0, 0.0, 1.0), p)


def pair_statistic(welch_p: Any, paired_p: Any) -> Any:
    """A pair's statistic at one look: the smaller p of its two tests (at least
    P_FLOOR)."""
    return np.maximum(np.minimum(welch_p, paired_p), P_FLOOR)


def gate_statistic(anova_p: Any, blocked_p: Any, smallest_pair: Any) -> Any:
    """Three configs' gate at one look: the smallest of Welch's ANOVA p, the blocked
    ANOVA's and the Bonferroni p of the pairs' smallest statistic (at least P_FLOOR)."""
    smallest = np.minimum(np.minimum(anova_p, blocked_p), 3 * np.asarray(smallest_pair))
    return np.clip(smallest, P_FLOOR, 1.0)


def statistics_from_moments(
    means: Any,
    variances: Any,
    n: int,
    differences: Any,
    round_variance: Any,
    rounds: bool = True,
) -> tuple[Any, Any]:
    """One look of k configs over the same n rounds, from their means and sample
    variances (draws, k), each pair's within-round differences' means and sample
    variances (draws, pairs, 2; pairs in the order (0, 1), (0, 2), ..., (1, 2), ...) and
    the round means' sample variance (draws,): each pair's statistic (draws, pairs) and,
    for three configs, the gate (draws,; None otherwise). Configs that shared no rounds
    (`rounds` false): Welch's t alone, and no blocked ANOVA."""
    k = means.shape[1]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    found = []
    for index, (i, j) in enumerate(pairs):
        welch = welch_from_moments(means[:, j], variances[:, j], n, means[:, i], variances[:, i], n)
        if rounds:
            paired = paired_from_moments(differences[:, index, 0], differences[:, index, 1], n)
            found.append(pair_statistic(welch[2], paired[3]))
        else:
            found.append(pair_statistic(welch[2], 1.0))
    stats = np.stack(found, axis=1)
    if k != 3:
        return stats, None
    anova = welch_anova_from_moments(means, variances, np.full(means.shape, float(n)))
    blocked = blocked_anova_from_moments(means, variances, n, round_variance) if rounds else 1.0
    return stats, gate_statistic(anova, blocked, stats.min(axis=1))
