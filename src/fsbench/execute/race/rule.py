"""Racing configs (`fsbench tune`): drop the ones a test shows worse, round by round.

A race after F-Race (Birattari, Stützle, Paquete & Varrentrapp 2002; irace, López-Ibáñez
et al. 2016). Each round runs every config still alive once (the caller orders a round,
balanced and shuffled, after an uncounted warm-up round); a round is a *block*: whatever
drifts over time hits every config of the round alike, and the tests below compare
configs within blocks only. Values are taken on the log scale (timings and rates are
multiplicative, and the margin is a ratio), turned so that higher is better.

After each round from `min_rounds` (3), one *look*:

1. **Constraints** (`lat_p99_us<5000`): a config is dropped when its mean over the rounds
   so far is on the wrong side of the bound by a one-sided t-test at the look's level
   (its one-sided confidence bound clearly past the bound), never on a single value.
2. **Worse than the best**, 3 or more configs alive: Friedman's test over the complete
   blocks of the configs alive (the chi-square form with ties, as scipy's
   `friedmanchisquare`) gates the look; if it
   rejects, each config is compared with the config of the highest rank sum by Conover's
   post-hoc t on rank sums (Conover 1999, §5.8: the pooled rank variance, (b-1)(k-1)
   degrees of freedom; the test F-Race uses), one-sided, Bonferroni over the k-1
   comparisons. That is Hsu's (1984) multiple comparisons with the best with a Bonferroni
   bound: whatever the other configs are, a truly best config is declared worse at a look
   with probability at most the look's level; under no difference at all, the Friedman
   gate alone bounds any drop by the same level. Holm's step-down is not used: the best
   is chosen from the data, and stepping down over comparisons with a chosen control is
   not covered by Holm's proof, while the single step is (Hsu 1984).
   Ranks, not means, as in F-Race: one wild trial moves a rank by at most k - 1.
3. **Two configs alive**: a paired t-test on the log values, two-sided (so that with no
   difference either config is dropped with probability at most the level, as the
   Friedman gate gives for more). Not the Wilcoxon signed-rank test: its exact p cannot
   go below 2 / 2^n (0.25 at n = 3, 0.06 at n = 5), so it could not drop anything in the
   rounds a race has; and not Friedman with two configs (the sign test), weaker still.
   The paired t on logs is the test of the ratio the margin is stated in.
4. **Equivalent to the best**: the config of the highest geometric mean is the best;
   another config whose ratio to it, from the paired log differences, has a CI inside
   1 ± margin (two one-sided tests, Schuirmann 1987) is "equally good" at this look and is
   not dropped for being worse (a difference inside the margin is none worth a drop). The
   CI's level is the one fsbench's repetition loop judges equivalence at when it looks
   after every round (`design.Design.equivalence_level`, a Pocock constant level for the looks
   from `min_rounds` to `max_rounds`).

**Many looks, one alpha.** Testing at full alpha after every round would drop a good
config far more often than alpha. Every look tests at one constant level, the race's
Pocock boundary: under no difference the ranks within a round are a random permutation
whatever the values' law, so the smallest p over the looks of what would drop a config
(Friedman's p and the smallest Conover p both below the level; the paired t with two
configs) has a law that depends only on k and the looks. It is counted once per (k,
looks) and the level set so that an A/A race drops anything in at most alpha of races (a
fifth kept back, as the repetition loop keeps it): `race_bounds`. Spending alpha over the
looks by a union bound (Lan & DeMets) would waste the looks' correlation (every later look
holds the same rounds) and, in the simulations of the tests, drop a worse config a round
or more later for nothing. A config worse than the best is compared with it one-sided at
that level, Bonferroni over the k-1 comparisons (Hsu's comparisons with the best): the
simulated races keep the true best in more than 95%. Constraints use the level of two
configs (a t on one config's mean against its bound).

The race stops when one config is left, when every config alive is equivalent to the
best (one group), at `max_rounds`, or when the caller says the budget is gone.

A config can also be dropped from outside: `unsafe` (the caller's safety verdict, kept
with its evidence and reported, never silently), `unsupported` (the kernel refused it).

Pure: rounds of values in, drops and a result out; no I/O and no clock. A race resumes
by recording its stored rounds (and outside drops) again, in order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from fsbench.analysis.design import ALPHA, DEFAULT_MARGIN, MIN_REPS, Design
from fsbench.analysis.stats import summarize, t_quantile
from fsbench.execute.race.bounds import look_level
from fsbench.execute.race.checks import (
    Array,
    Constraint,
    conover_vs_best,
    constraint_p,
    finite,
    friedman_p,
    paired_p,
)
from fsbench.system.errors import FsbenchError

MIN_ROUNDS = MIN_REPS  # rounds before the first look
MAX_ROUNDS = 20

# Why a config left the race.
WORSE, CONSTRAINT, UNSAFE, UNSUPPORTED = "worse", "constraint", "unsafe", "unsupported"
# Why the race stopped.
ONE_LEFT, EQUIVALENT, AT_MAX, BUDGET, NONE_LEFT = (
    "one left",
    "equivalent",
    "max rounds",
    "budget",
    "none left",
)

FRIEDMAN_TEST = "Friedman, then Conover vs the best (one-sided, Bonferroni)"
PAIRED_TEST = "paired t on log values (two-sided)"
CONSTRAINT_TEST = "one-sided t on the mean"
SAFETY_TEST = "safety verdict"


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class RaceSettings:
    """How a race decides: the objective's direction, alpha, the margin of "equally good",
    the first look and the last round, and the constraints on other metrics."""

    higher_is_better: bool = True
    alpha: float = ALPHA
    margin: float = DEFAULT_MARGIN
    min_rounds: int = MIN_ROUNDS
    max_rounds: int = MAX_ROUNDS
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 0.5:
            raise FsbenchError(f"alpha {self.alpha}: expected between 0 and 0.5")
        if not 0 < self.margin < 1:
            raise FsbenchError(f"margin {self.margin}: expected between 0 and 1")
        if self.min_rounds < 2:
            raise FsbenchError(f"min rounds {self.min_rounds}: a test needs at least 2")
        if self.max_rounds < self.min_rounds:
            raise FsbenchError(
                f"max rounds {self.max_rounds} is below the first look ({self.min_rounds})"
            )

    def level(self, alive: int) -> float:
        """The p one look with `alive` configs must reach to drop one (a constraint: to
        drop its config): the race's Pocock boundary (`race_bounds.look_level`)."""
        return look_level(alive, self.min_rounds, self.max_rounds, self.alpha)

    @property
    def equivalence_level(self) -> float:
        """The confidence of the ratio's interval equivalence is judged on."""
        design = Design(True, self.min_rounds, self.max_rounds, self.margin, self.alpha)
        return design.equivalence_level(self.max_rounds)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Drop:
    """A config leaving the race: when, why, by which test, with what evidence."""

    config: str
    round: int  # the round after which it left (0: before the first)
    reason: str  # worse | constraint | unsafe | unsupported
    test: str
    p: float | None = None  # the p that dropped it (adjusted for the comparisons)
    level: float | None = None  # the look's level it was compared with
    detail: str = ""  # one line for people
    versus: str = ""  # the best it was compared with
    p_omnibus: float | None = None  # Friedman's p that opened the comparisons
    means: dict[str, float] = field(default_factory=dict)  # geometric means at the look
    mean_ranks: dict[str, float] = field(default_factory=dict)  # rank per block, averaged


@dataclass(frozen=True)
class Standing:
    """A config still in the race at its end: its mean with a 95% CI, and its ratio to
    the leader (geometric means over the rounds both ran) with the equivalence CI."""

    config: str
    n: int
    mean: float | None
    ci: tuple[float, float] | None
    ratio: float | None = None  # this config / the leader, in the metric's own units
    ratio_ci: tuple[float, float] | None = None
    equivalent: bool = False  # within 1 ± margin of the leader (TOST); the leader: True


@dataclass(frozen=True)
class RaceResult:
    """The end of a race: who is left (best first), who was dropped and why, the cost."""

    configs: tuple[str, ...]
    winners: tuple[Standing, ...]  # every config never dropped, the leader first
    dropped: tuple[Drop, ...]
    stop: str  # one left | equivalent | max rounds | budget | none left (or "" running)
    rounds: int
    trials: int  # trials recorded (warm-up excluded: the caller's)
    alive_per_round: tuple[int, ...]
    method: str
    safety: dict[str, str] = field(default_factory=dict)  # config -> the verdict's evidence

    @property
    def leader(self) -> str | None:
        return self.winners[0].config if self.winners else None

    @property
    def runner_up(self) -> str | None:
        """The config next to the leader: the second still in the race, else of those
        dropped as worse the last round's best (the highest mean rank at its look; a pair's
        look drops one)."""
        if len(self.winners) > 1:
            return self.winners[1].config
        worse = [d for d in self.dropped if d.reason == WORSE]
        if not self.winners or not worse:
            return None
        last = max(d.round for d in worse)
        return max(
            (d for d in worse if d.round == last),
            key=lambda d: d.mean_ranks.get(d.config, -math.inf),
        ).config

    @property
    def decided(self) -> bool:
        """One config, or one group of equally good configs, is left."""
        return self.stop in (ONE_LEFT, EQUIVALENT)

    @property
    def unsafe(self) -> tuple[Drop, ...]:
        return tuple(d for d in self.dropped if d.reason == UNSAFE)

    def grid_trials(self, final_n: int | None = None) -> int:
        """The trials a full grid of the same configs would spend at `final_n`
        repetitions each (default: the rounds this race ran). A config the kernel
        refused costs a grid one trial, as it cost the race."""
        n = self.rounds if final_n is None else final_n
        refused = sum(1 for d in self.dropped if d.reason == UNSUPPORTED)
        return (len(self.configs) - refused) * n + refused


# --------------------------------------------------------------------------- the race


@dataclass(frozen=True)
class _Look:
    """The configs alive with complete blocks, their scores (log, higher better), and
    each one's standing against the best by geometric mean."""

    configs: list[str]
    raw: Array  # (blocks, configs), the metric's values
    scores: Array  # (blocks, configs), log values (or relative ones), higher better
    log_scale: bool
    best: int
    ratio: Array  # config / best, the metric's own units
    ratio_lo: Array
    ratio_hi: Array
    equivalent: npt.NDArray[np.bool_]


class Race:
    """One race's state: configs alive, rounds recorded, drops. Feed it rounds with
    `record`; outside verdicts with `drop` and `safety`; `stop` when the budget is gone."""

    def __init__(self, configs: Sequence[str], settings: RaceSettings | None = None) -> None:
        if len(set(configs)) != len(configs):
            raise FsbenchError("a race needs distinct configs")
        if not configs:
            raise FsbenchError("a race needs at least one config")
        self.settings = settings or RaceSettings()
        self.configs = tuple(configs)
        self._eq_level = self.settings.equivalence_level
        self._alive = list(configs)
        self._values: dict[str, list[float | None]] = {c: [] for c in configs}
        self._metrics: dict[str, dict[str, list[float | None]]] = {}
        self._drops: list[Drop] = []
        self._rounds = 0
        self._trials = 0
        self._stop = ""
        self._alive_per_round: list[int] = []
        self._safety: dict[str, str] = {}

    # -- state

    @property
    def alive(self) -> list[str]:
        return list(self._alive)

    @property
    def rounds(self) -> int:
        return self._rounds

    @property
    def done(self) -> bool:
        return bool(self._stop)

    @property
    def drops(self) -> list[Drop]:
        return list(self._drops)

    # -- input

    def record(
        self,
        values: Mapping[str, float | None],
        metrics: Mapping[str, Mapping[str, float | None]] | None = None,
    ) -> list[Drop]:
        """One round: the objective's value of every config alive (None or absent: its
        trial failed), and the constraint metrics' values ({metric: {config: value}}).
        Returns the configs dropped at this round's look."""
        if self._stop:
            raise FsbenchError(f"the race has stopped ({self._stop}): no more rounds")
        stray = [c for c in values if c not in self._alive]
        if stray:
            raise FsbenchError(f"round {self._rounds + 1}: {stray[0]!r} is not in the race")
        self._rounds += 1
        for config in self.configs:
            given = config in self._alive and config in values
            self._values[config].append(finite(values.get(config)) if given else None)
            self._trials += int(given)
        for metric, per_config in (metrics or {}).items():
            series = self._metrics.setdefault(metric, {c: [] for c in self.configs})
            for config in self.configs:
                series[config].extend([None] * (self._rounds - 1 - len(series[config])))
                series[config].append(finite(per_config.get(config)))
        self._alive_per_round.append(len(self._alive))
        dropped: list[Drop] = []
        if self._rounds >= self.settings.min_rounds:
            dropped += self._check_constraints()
            dropped += self._compare()
        self._check_stop()
        return dropped

    def drop(self, config: str, reason: str, detail: str = "", test: str = "") -> Drop:
        """Drop a config for a reason found outside the race (`unsupported`: the kernel
        refused it; `unsafe`: see `safety`)."""
        if config not in self._alive:
            raise FsbenchError(f"{config!r} is not in the race")
        found = Drop(config, self._rounds, reason, test, detail=detail, means=self._means())
        self._remove(found)
        self._check_stop(at_max=False)
        return found

    def safety(self, config: str, safe: bool, evidence: str) -> Drop | None:
        """The caller's safety verdict on a config (`--require safe`: its crash tests),
        with its evidence. An unsafe config leaves the race, reported with the evidence."""
        self._safety[config] = evidence
        if safe or config not in self._alive:
            return None
        return self.drop(config, UNSAFE, evidence, SAFETY_TEST)

    def stop(self, reason: str = BUDGET) -> None:
        """End the race now (the budget is gone)."""
        if not self._stop:
            self._stop = reason

    # -- the look

    def _remove(self, found: Drop) -> None:
        self._alive.remove(found.config)
        self._drops.append(found)

    def _check_constraints(self) -> list[Drop]:
        level = self.settings.level(2)  # one config against its bound: a one-sample t
        dropped: list[Drop] = []
        for constraint in self.settings.constraints:
            series = self._metrics.get(constraint.metric, {})
            for config in list(self._alive):
                values = [v for v in series.get(config, []) if v is not None]
                p, bound = constraint_p(values, constraint, level)
                if p is None or p >= level:
                    continue
                mean = float(np.mean(values))
                found = Drop(
                    config,
                    self._rounds,
                    CONSTRAINT,
                    CONSTRAINT_TEST,
                    p=p,
                    level=level,
                    detail=(
                        f"{constraint.metric} mean {mean:.4g} over {len(values)} rounds "
                        f"(one-sided {1 - level:.2%} bound {bound:.4g}) breaks {constraint}"
                    ),
                    means={config: mean},
                )
                self._remove(found)
                dropped.append(found)
        return dropped

    def _look(self) -> _Look | None:
        """The alive configs' complete blocks and standings; None before min_rounds
        complete blocks."""
        configs = list(self._alive)
        if not configs:
            return None
        raw = np.array(
            [[np.nan if v is None else v for v in self._values[c]] for c in configs],
            dtype=np.float64,
        ).T  # (rounds, configs)
        raw = raw[~np.isnan(raw).any(axis=1)]
        if len(raw) < self.settings.min_rounds:
            return None
        log_scale = bool((raw > 0).all())
        sign = 1.0 if self.settings.higher_is_better else -1.0
        if log_scale:
            scores = sign * np.log(raw)
            best = int(np.argmax(scores.mean(axis=0)))
        else:  # a metric that can be 0 or negative: differences relative to the best's mean
            best = int(np.argmax(sign * raw.mean(axis=0)))
            scores = sign * raw / (abs(float(raw[:, best].mean())) or 1.0)
        n = len(scores)
        diff = (scores - scores[:, [best]]) * sign  # log(config / best), own units
        mean = diff.mean(axis=0)
        sd = diff.std(axis=0, ddof=1)
        half = t_quantile(n - 1, self._eq_level) * sd / math.sqrt(n)
        if log_scale:
            ratio, lo, hi = np.exp(mean), np.exp(mean - half), np.exp(mean + half)
        else:
            ratio, lo, hi = 1 + mean, 1 + mean - half, 1 + mean + half
        margin = self.settings.margin
        equivalent = (lo >= 1 - margin) & (hi <= 1 + margin)
        equivalent[best] = True
        return _Look(configs, raw, scores, log_scale, best, ratio, lo, hi, equivalent)

    def _compare(self) -> list[Drop]:
        look = self._look()
        if look is None or len(look.configs) < 2:
            return []
        k = len(look.configs)
        level = self.settings.level(k)
        means = geo_means(look)
        if k == 2:
            worse = 1 - look.best
            p = paired_p(look.scores[:, look.best] - look.scores[:, worse])
            if p >= level or look.equivalent[worse]:
                return []
            evidence = Drop("", self._rounds, WORSE, PAIRED_TEST, level=level, means=means)
            return [self._worse(look, worse, p, evidence)]
        p_omnibus = friedman_p(look.scores)
        if p_omnibus >= level:
            return []
        ranks, p_each, top = conover_vs_best(look.scores)
        mean_ranks = {c: float(r) for c, r in zip(look.configs, ranks, strict=True)}
        evidence = Drop(
            "", self._rounds, WORSE, FRIEDMAN_TEST, level=level, p_omnibus=p_omnibus,
            means=means, mean_ranks=mean_ranks,
        )  # fmt: skip
        return [
            self._worse(look, i, float(p_each[i]), evidence, versus=top)
            for i in range(k)
            if i != top and p_each[i] < level and not look.equivalent[i]
        ]

    def _worse(
        self, look: _Look, i: int, p: float, evidence: Drop, versus: int | None = None
    ) -> Drop:
        """Config `i` dropped as worse than the best (or `versus`) with its own `p`; the
        look's `evidence` (the test, its level, the means...) is shared by every config
        the look drops."""
        best = look.configs[look.best if versus is None else versus]
        ratio = float(look.ratio[i] / look.ratio[look.configs.index(best)])
        detail = (
            f"worse than {best} after {len(look.scores)} rounds: "
            f"{ratio:.3f}x its mean, p {p:.2g} < {evidence.level:.2g}"
        )
        found = replace(evidence, config=look.configs[i], p=p, detail=detail, versus=best)
        self._remove(found)
        return found

    def _check_stop(self, at_max: bool = True) -> None:
        if self._stop:
            return
        if not self._alive:
            self._stop = NONE_LEFT
        elif len(self._alive) == 1:
            self._stop = ONE_LEFT
        elif (look := self._look()) is not None and bool(look.equivalent.all()):
            self._stop = EQUIVALENT
        elif at_max and self._rounds >= self.settings.max_rounds:
            self._stop = AT_MAX

    def _means(self) -> dict[str, float]:
        look = self._look()
        return {} if look is None else geo_means(look)

    # -- output

    def result(self) -> RaceResult:
        """Where the race stands (its end, once `done`)."""
        look = self._look()
        standings = []
        for config in self._alive:
            values = [v for v in self._values[config] if v is not None]
            summary = summarize(values)
            ratio = lo = hi = None
            equivalent = False
            if look is not None:
                i = look.configs.index(config)
                ratio, lo, hi = (float(x[i]) for x in (look.ratio, look.ratio_lo, look.ratio_hi))
                equivalent = bool(look.equivalent[i])
            standings.append(
                Standing(
                    config,
                    summary.n,
                    summary.mean,
                    summary.ci95,
                    ratio,
                    None if lo is None or hi is None else (lo, hi),
                    equivalent,
                )
            )
        sign = 1.0 if self.settings.higher_is_better else -1.0

        def key(s: Standing) -> float:
            if s.ratio is not None:
                return -sign * s.ratio
            return -sign * s.mean if s.mean is not None else math.inf

        standings.sort(key=key)
        return RaceResult(
            configs=self.configs,
            winners=tuple(standings),
            dropped=tuple(self._drops),
            stop=self._stop,
            rounds=self._rounds,
            trials=self._trials,
            alive_per_round=tuple(self._alive_per_round),
            method=self.method,
            safety=dict(self._safety),
        )

    @property
    def method(self) -> str:
        """The legend's sentence on how the race decided."""
        s = self.settings
        return (
            f"a look after each round from {s.min_rounds} to {s.max_rounds}: {FRIEDMAN_TEST} "
            f"({PAIRED_TEST} with two configs), one level for every look, counted so "
            f"that configs alike lose one in at most {s.alpha:g} of races (Pocock "
            f"boundary); equally good within ±{s.margin:.0%} of the best "
            f"({self._eq_level:.1%} CI of the ratio, TOST)"
        )


def race(
    configs: Sequence[str],
    rounds: Iterable[Mapping[str, float | None]],
    settings: RaceSettings | None = None,
) -> RaceResult:
    """A race over rounds given in advance (each round's values of the configs alive;
    values of configs already dropped are ignored), for replays and simulations."""
    state = Race(configs, settings)
    for values in rounds:
        if state.done:
            break
        state.record({c: v for c, v in values.items() if c in state.alive})
    return state.result()


# --------------------------------------------------------------------------- tests


def geo_means(look: _Look) -> dict[str, float]:
    """Each config's mean over the look's blocks, in the metric's units (geometric on
    the log scale)."""
    means = np.exp(np.log(look.raw).mean(axis=0)) if look.log_scale else look.raw.mean(axis=0)
    return {c: float(v) for c, v in zip(look.configs, means, strict=True)}
