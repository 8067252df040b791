"""What `fsbench history` sees on short series, on spikes, under heavy tails, and what its
CI gate does over many series, by seeded simulation through the real code path (records
of a warm-up and 3 counted repetitions per run, tests/history_runs.py, built into series
by `analysis/history.build`; the gate by `analysis/history_gate.regressions`).

    .venv/bin/python bench/history_short.py [--draws N] [--only NAME ...]

Writes bench/results/history_short.json: per scenario its seed, draws, rate, Monte-Carlo
standard error and the bound it keeps (`report`: a figure without a bound). A seeded
simulation: the same code gives the same figures on any machine, under any load.
tests/unit/test_history_short.py runs the short scenarios again with fewer draws.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fsbench.analysis import changepoints, history, history_gate  # noqa: E402
from tests.history_runs import RunSpec, in_memory  # noqa: E402

MEAN = 1000.0
# The eight nights of issue 50: ext4 fs_mark tiny, the last four mounted data=journal.
EIGHT_NIGHTS = (797.0, 894.0, 901.0, 841.0, 395.0, 380.0, 490.0, 370.0)
GATE_SERIES = 57  # the headline series of the quick preset's nightly gate
GATE_RUNS = 12  # each series' length in the gate simulation


@dataclass(frozen=True)
class Scenario:
    name: str
    means: tuple[float, ...]
    cv: float = 0.05
    noise: str = "normal"  # normal | lognormal | t3
    measure: str = "any"  # any: a change reported; near: one within a run of `at`
    at: int = 0  # the first run (0-based) of the change, for `near`
    direction: str = "at most"  # at most | at least | report
    bound: float = 0.02  # changepoints.ALPHA + TAIL_ALPHA: the stated false-alarm rate
    draws: int = 600

    def hit(self, series: history.Series) -> bool:
        if self.measure == "any":
            return bool(series.changes)
        return any(abs(c.index - self.at) <= 1 for c in series.changes)


def flat(n: int) -> tuple[float, ...]:
    return (MEAN,) * n


def step(n: int, shift: float) -> tuple[float, ...]:
    return flat(n // 2) + (MEAN * (1 + shift),) * (n - n // 2)


def spike(n: int, shift: float, back: int) -> tuple[float, ...]:
    """`n` runs, the one `back` from the newest `shift` off (back 0: the newest)."""
    means = list(flat(n))
    means[n - 1 - back] = MEAN * (1 + shift)
    return tuple(means)


SHORT = (
    *(Scenario(f"aa-{noise}-{n}runs", flat(n), noise=noise)
      for noise in ("normal", "lognormal", "t3") for n in (6, 8, 10, 12)),
    *(Scenario(f"step20-cv5-{n}runs", step(n, -0.2), measure="near", at=n // 2,
               direction="report", bound=0.0)
      for n in (6, 8, 10, 12)),
    *(Scenario(f"step50-cv20-{n}runs", step(n, -0.5), cv=0.2, measure="near", at=n // 2,
               direction="report", bound=0.0)
      for n in (6, 8, 10, 12)),
    Scenario("eight-nights", EIGHT_NIGHTS, measure="near", at=4, direction="at least",
             bound=0.95),
    *(Scenario(f"spike{round(-s * 100)}-newest-12runs", spike(12, s, 0), bound=0.05)
      for s in (-0.1, -0.2, -0.5)),
    *(Scenario(f"spike{round(-s * 100)}-night-after-12runs", spike(12, s, 1), bound=0.05)
      for s in (-0.1, -0.2, -0.5)),
)  # fmt: skip
LONG = (
    *(Scenario(f"spike{round(-s * 100)}-newest-20runs", spike(20, s, 0), bound=0.05, draws=200)
      for s in (-0.1, -0.2, -0.5)),
    *(Scenario(f"spike{round(-s * 100)}-night-after-20runs", spike(20, s, 1), bound=0.05,
               draws=200)
      for s in (-0.1, -0.2, -0.5)),
    *(Scenario(f"aa-{noise}-40runs", flat(40), noise=noise, cv=0.2, draws=150)
      for noise in ("t3", "lognormal")),
)  # fmt: skip


def one_series(means: tuple[float, ...], seed: int, cv: float, noise: str) -> history.Series:
    runs = in_memory(
        [RunSpec(m) for m in means], seed, cv, lognormal=noise == "lognormal", t3=noise == "t3"
    )
    (series,) = history.build(runs)
    return series


def rate(
    draws: int, first_seed: int, event: Callable[[int], bool], s: Scenario | None = None
) -> dict[str, object]:
    events = sum(event(seed) for seed in range(first_seed, first_seed + draws))
    found = events / draws
    out: dict[str, object] = {
        "rate": found,
        "se": math.sqrt(max(found * (1 - found), 1 / draws) / draws),
        "events": events,
        "draws": draws,
        "seed": first_seed,
    }
    if s is not None:
        out |= {"direction": s.direction, "bound": s.bound, "cv": s.cv, "noise": s.noise,
                "runs": len(s.means)}  # fmt: skip
    return out


def measure(s: Scenario, draws: int, first_seed: int = 0) -> dict[str, object]:
    return rate(draws, first_seed, lambda seed: s.hit(one_series(s.means, seed, s.cv, s.noise)), s)


def gate_night(seed: int, series: int = GATE_SERIES, corrected: bool = True) -> bool:
    """Whether a night with nothing changed fails a gate over `series` series of
    GATE_RUNS runs each (uncorrected: each series at GATE_ALPHA on its own)."""
    all_series = [
        one_series(flat(GATE_RUNS), seed * 1000 + i, 0.05, "normal") for i in range(series)
    ]
    if corrected:
        return bool(history_gate.regressions(all_series))
    return any(history_gate.regressions([s]) for s in all_series)


def main() -> None:
    from results_file import save

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--draws", type=int, help="series per scenario (default: each its own)")
    parser.add_argument("--gate-nights", type=int, default=200)
    parser.add_argument("--only", nargs="*", help="scenario names (and 'gate')")
    args = parser.parse_args()
    started = datetime.now(UTC)
    results: dict[str, dict[str, object]] = {"scenarios": {}, "gate": {}}
    for s in (*SHORT, *LONG):
        if args.only and s.name not in args.only:
            continue
        found = measure(s, args.draws or s.draws)
        results["scenarios"][s.name] = found
        print(f"{s.name}: {found['rate']:.3f} ± {found['se']:.3f}", flush=True)
    if not args.only or "gate" in args.only:
        for corrected in (True, False):
            name = "corrected" if corrected else "uncorrected"
            found = rate(args.gate_nights, 0, functools.partial(gate_night, corrected=corrected))
            results["gate"][name] = found | {"series": GATE_SERIES, "runs": GATE_RUNS}
            print(f"gate {name}: {found['rate']:.3f} ± {found['se']:.3f}", flush=True)
    results["method"] = {
        "alpha": changepoints.ALPHA,
        "tail_alpha": changepoints.TAIL_ALPHA,
        "short": changepoints.SHORT,
        "null_draws": changepoints.NULL_DRAWS,
        "gate_alpha": history_gate.GATE_ALPHA,
    }
    save("history_short", results, started)


if __name__ == "__main__":
    main()
