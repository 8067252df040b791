"""A race of `fsbench tune` from its stored trials: the settings a tune run keeps, the
objective's value of a trial, and the replay that rebuilds the race round by round.

A tune run is stored like any run: its plan (the space's configs as `fs`), one trial per
config per round with the round as `rep` (0: the uncounted warm-up), and the race's
settings and space as its facts (store/runkinds.py: the kind `tune`, facts `TuneSpec`).
The race itself is never stored: it is replayed from the trials, the same way by the
driver (after a kill, a resume goes on from there) and by every report, so a report
years later shows the race as it ran. A trial the kernel refused (`unsupported`) drops
its config at that round; a failed trial drops its config too (`failed`: a config that
fails would leave every later round incomplete, and a race compares complete rounds
only).

Pure: stored records in, a `Race` out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from fsbench.analysis.design import ALPHA, DEFAULT_MARGIN
from fsbench.execute.race.checks import Constraint
from fsbench.execute.race.rule import (
    MAX_ROUNDS,
    MIN_ROUNDS,
    UNSAFE,
    UNSUPPORTED,
    Drop,
    Race,
    RaceSettings,
)
from fsbench.store.records import TrialRecord
from fsbench.store.values import better_of, value_of
from fsbench.system.errors import FsbenchError

FAILED = "failed"  # a config whose trial failed leaves the race


class SafetyVerdict(BaseModel):
    """A config's crash tests (`--require safe`): whether it lost nothing, and what they
    showed, one line per pattern."""

    safe: bool
    evidence: str


class RaceSpace(BaseModel):
    """The space a race runs over, as `fsbench tune` split it (driver.split), kept once with
    each race (`TuneSpec.space`): a resume and every report read it from there. Its configs
    are the plan's `fs`; this race's value of each parameter in `by` is its --set
    (runs.overrides)."""

    model_config = ConfigDict(extra="forbid")

    duplicates: int = 0  # identical configs given more than once, kept once
    races: int = 1  # the races the space made: one per value of the parameters `by`
    by: list[str] = []  # the parameters whose values the space sweeps

    def budget(self, plan_budget: float | None) -> float | None:
        """This race's wall time: the plan's budget (the tune's) split evenly between the
        races; None: no limit."""
        return plan_budget / self.races if plan_budget else None


class TuneSpec(BaseModel):
    """What a race decides by, and its space: the run's facts. Its budget is the plan's."""

    model_config = ConfigDict(extra="ignore")

    metric: str  # NAME, or STEP:NAME in a chain
    margin: float = DEFAULT_MARGIN
    alpha: float = ALPHA
    min_rounds: int = MIN_ROUNDS
    max_rounds: int = MAX_ROUNDS
    require: list[str] = []  # METRIC<VALUE constraints
    space: RaceSpace = RaceSpace()
    spent: float = 0.0  # seconds of wall time the race has taken (kept after every round)
    stop: str = ""  # why the race stopped, once it has (kept: a budget is not replayable)
    safety_run: int | None = None  # the run of the crash tests (`--require safe`)
    safety: dict[str, SafetyVerdict] = {}  # config -> its crash tests' verdict

    def constraints(self) -> tuple[Constraint, ...]:
        return tuple(Constraint.parse(text) for text in self.require)

    def settings(self, higher_is_better: bool) -> RaceSettings:
        return RaceSettings(
            higher_is_better=higher_is_better,
            alpha=self.alpha,
            margin=self.margin,
            min_rounds=self.min_rounds,
            max_rounds=self.max_rounds,
            constraints=self.constraints(),
        )


def reported(records: Iterable[TrialRecord]) -> list[str]:
    """The metrics ok trials reported, for an error message."""
    names: dict[str, None] = {}
    for record in records:
        if record.status == "ok":
            names.update(dict.fromkeys(m.name for m in record.metrics))
    return list(names)


def seconds(record: TrialRecord) -> float:
    """A trial's wall time from its stored start and end (0 when unknown)."""
    try:
        start = datetime.fromisoformat(record.started_at)
        end = datetime.fromisoformat(record.finished_at)
    except ValueError:
        return 0.0
    return max(0.0, (end - start).total_seconds())


class Replay:
    """A race fed round by round from stored trials. `feed(round, by_config)` takes the
    records of every config alive (each config's slot records; a config missing: its trial
    is not stored yet) and returns the configs dropped, or None when the round is not
    complete. The race is made at the first round that tells the metric's direction."""

    def __init__(self, configs: Sequence[str], spec: TuneSpec) -> None:
        self.configs = list(configs)
        self.spec = spec
        self.race: Race | None = None
        self.rounds: list[dict[str, Any]] = []  # per fed round: alive, dropped (names)
        self._pending: list[tuple[str, str, str]] = []  # drops before the race is made
        self._seen: list[TrialRecord] = []
        # Unsafe configs leave before the first round (the warm-up included): never run.
        for config, verdict in spec.safety.items():
            if not verdict.safe and config in self.configs:
                self._pending.append((config, UNSAFE, verdict.evidence))

    @property
    def alive(self) -> list[str]:
        if self.race is not None:
            return self.race.alive
        gone = {c for c, _, _ in self._pending}
        return [c for c in self.configs if c not in gone]

    @property
    def done(self) -> bool:
        return self.race is not None and self.race.done

    def feed(self, rnd: int, by_config: Mapping[str, Sequence[TrialRecord]]) -> list[Drop] | None:
        alive = self.alive
        if any(not by_config.get(c) for c in alive):
            return None
        for config in alive:
            self._seen.extend(by_config[config])
        # Configs in the race when the round began: an unsafe one leaves at round 0.
        before = len(self.race.alive) if self.race is not None else len(self.configs)
        outside: list[tuple[str, str, str]] = []
        values: dict[str, float | None] = {}
        for config in alive:
            records = by_config[config]
            bad = next((r for r in records if r.status != "ok"), None)
            if bad is not None:
                reason = UNSUPPORTED if bad.status == "unsupported" else FAILED
                outside.append((config, reason, bad.message or bad.status))
                continue
            values[config] = value_of(records, self.spec.metric)
        self._pending.extend(outside)
        if self.race is None:
            self._make()
        assert self.race is not None
        dropped: list[Drop] = []
        if rnd > 0:
            for config in self.alive:
                if config not in values or values[config] is not None:
                    continue
                message = f"its trial reported no {self.spec.metric}"
                self._pending.append((config, FAILED, message))
        dropped += self._drop_pending()
        if rnd > 0 and not self.race.done:
            constraint_metrics = {
                c.metric: {cfg: value_of(by_config[cfg], c.metric) for cfg in self.race.alive}
                for c in self.spec.constraints()
            }
            dropped += self.race.record({c: values[c] for c in self.race.alive}, constraint_metrics)
        self.rounds.append({"round": rnd, "alive": before, "dropped": [d.config for d in dropped]})
        return dropped

    def _make(self) -> None:
        better = better_of(self._seen, self.spec.metric)
        if better is None and any(r.status == "ok" for r in self._seen):
            raise FsbenchError(
                f"metric {self.spec.metric!r}: no trial reports it (they report: "
                f"{', '.join(reported(self._seen))}); pick one with --metric"
            )
        # A constraint on a metric no trial reports would never drop anything, in silence.
        for constraint in self.spec.constraints():
            if better_of(self._seen, constraint.metric) is None and any(
                r.status == "ok" for r in self._seen
            ):
                raise FsbenchError(
                    f"--require {constraint}: no trial reports {constraint.metric} (they "
                    f"report: {', '.join(reported(self._seen))})"
                )
        self.race = Race(self.configs, self.spec.settings(better != "lower"))
        for config, verdict in self.spec.safety.items():
            if verdict.safe and config in self.configs:
                self.race.safety(config, True, verdict.evidence)

    def _drop_pending(self) -> list[Drop]:
        """The drops found outside the race's tests, now that it is made."""
        assert self.race is not None
        dropped = []
        for config, reason, message in self._pending:
            if config not in self.race.alive or self.race.done:
                continue
            if reason == UNSAFE:
                found = self.race.safety(config, False, message)
                dropped += [found] if found else []
            else:
                dropped.append(self.race.drop(config, reason, message, "trial " + reason))
        self._pending = []
        return dropped

    def finish(self) -> Race:
        """The race (made now if no round told the metric's direction), with the stored
        stop applied when its rounds alone do not end it (a budget)."""
        if self.race is None:
            self._make()
        assert self.race is not None
        self._drop_pending()
        if self.spec.stop and not self.race.done:
            self.race.stop(self.spec.stop)
        return self.race


def replay(
    configs: Sequence[str],
    spec: TuneSpec,
    trials: Iterable[TrialRecord],
    config_of: Mapping[str, str],
    max_seq: int,
) -> Replay:
    """The race as far as the stored trials go: rounds 0 (warm-up) to the last complete
    one. `config_of` maps a cell key to its config's name; trials of seq >= `max_seq` (the
    warm-ups a resumed race adds) are not part of any round."""
    by_round: dict[int, dict[str, list[TrialRecord]]] = {}
    for t in sorted(trials, key=lambda t: (t.seq, t.step)):
        if t.seq >= max_seq or t.cell_key not in config_of:
            continue
        by_round.setdefault(t.rep, {}).setdefault(config_of[t.cell_key], []).append(t)
    state = Replay(configs, spec)
    for rnd in range(0, spec.max_rounds + 1):
        if state.done:
            break
        if rnd == 0 and 0 not in by_round:
            continue  # no warm-up round (a workload that does not warm)
        if state.feed(rnd, by_round.get(rnd, {})) is None:
            break
    return state
