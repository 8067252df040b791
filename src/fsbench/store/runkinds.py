"""Run kinds, as first-class as target kinds: what made a run, and what drives it.

A run's `kind` names one `RunKind` of the registry `KINDS` (system/plugins.py): the grid
run of `fsbench run` and its A/A twin of `fsbench calibrate` (one driver: the repetition
loop), the race of `fsbench tune`, the instrumented pass of `fsbench explain`, and
(plugins shipped with the target kinds that are packages of their own, entry points of
`fsbench.run_kinds.v1`) the kernel bisection of `fsbench bisect` and the run on many
hosts. Each declares:

- its **driver** (execute/session.py: `Driver`): what its runs are and do, how one
  starts and how one goes on from the store alone; the one session lives the rest, and
  `fsbench resume` goes on with a run of any kind through it;
- its **facts**: a typed model (pydantic) of what the run keeps beyond the plan, in the
  run's own column (`runs.facts`): a grid's design planned from its budget, a race's
  settings and space, a bisection's tree, endpoints and build;
- its **command**, which makes it, and whose `--resume` is its kind's spelling of
  `fsbench resume` (`resumed_by`: another command's, the calibration's `fsbench run`);
- its **report**: the function that builds a stored run's document (reports/document.py),
  which every format of `fsbench report` writes ("": the grid's tables, charts and page);
- whether `fsbench explain` can repeat its cells with tracers (`explainable`);
- what the commands that read many runs ask of it: whether `fsbench compare` takes its
  rows, whether its runs form series of `fsbench history`, whether they calibrate this
  machine's noise, whether its trials are in parts, one per host.

Every reference is "module:attribute", loaded when used: the store knows the kinds
without importing what runs or reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from fsbench.store.griddesign import GridDesign
from fsbench.store.records import RunRecord
from fsbench.system.errors import FsbenchError
from fsbench.system.plugins import Registry, load

# The run-kind contract's version: a plugin built for another is refused.
CONTRACT = 1


@dataclass(frozen=True)
class RunKind:
    name: str  # as the store keeps it in runs.kind
    title: str  # what lists and messages call it: "race of fsbench tune"
    command: str  # the command that makes it: "fsbench tune"
    facts: str  # "module:Class" of its facts model
    # "module:Class" of its driver (execute/session.py: Driver): "" for a kind whose runs
    # cannot be resumed
    driver: str = ""
    # "module:function(store, run_id, wants) -> Document": the run's document, which every
    # format of `fsbench report` writes ("": a grid run's report, reports/run_report.py)
    report: str = ""
    comparable: bool = True  # `fsbench compare` takes its rows
    series: bool = False  # its runs are points of `fsbench history`'s series
    calibration: bool = False  # its runs say what this machine resolves (later reports)
    has_parts: bool = False  # its trials are in its parts, one run per host (runs.part_of)
    noun: str = "run"  # what a message calls one of its runs: "resuming race 3"
    # Its stored plan and overrides expand to the cells its trials ran, one config a cell's
    # trials each: `fsbench explain` can repeat them with tracers.
    explainable: bool = False
    resumed_by: str = ""  # the command whose --resume takes it, when not its own

    @property
    def facts_model(self) -> type[BaseModel]:
        """Its facts model: what a reader asks to know it holds a kind's facts it reads."""
        model: type[BaseModel] = load(self.facts)
        return model

    def facts_of(self, run: RunRecord) -> Any:
        """The run's facts as its kind's model."""
        return self.facts_model.model_validate(run.facts or {})

    @property
    def resume(self) -> str:
        """Its kind's spelling of `fsbench resume` ("fsbench tune --resume")."""
        return f"{self.resumed_by or self.command} --resume"


class GridFacts(BaseModel):
    """A grid run's facts: its design planned from the budget (store/griddesign.py, written
    by execute/decide.py; empty for a fixed or `auto` design)."""

    model_config = ConfigDict(extra="allow")

    design: GridDesign = GridDesign()


# The repetition loop drives the grid's kinds (and, with its executor, the run on many hosts).
LOOP = "fsbench.execute.loop:GridDriver"
GRID = RunKind(
    "run",
    "comparison of fsbench run",
    "fsbench run",
    f"{__name__}:GridFacts",
    driver=LOOP,
    series=True,
    explainable=True,
)
CALIBRATION = RunKind(
    "calibration",
    "A/A calibration of fsbench calibrate",
    "fsbench calibrate",
    f"{__name__}:GridFacts",
    driver=LOOP,
    calibration=True,
    explainable=True,
    resumed_by=GRID.command,  # the repetition loop's run, like a grid's
)
TUNE = RunKind(
    "tune",
    "race of fsbench tune",
    "fsbench tune",
    "fsbench.execute.race.trials:TuneSpec",
    driver="fsbench.execute.race.driver:RaceDriver",
    report="fsbench.reports.tune:report",
    comparable=False,
    noun="race",
    explainable=True,  # a race stores its trials as a grid's, its narrowed cells included
)

# The instrumented pass of `fsbench explain`: a grid run's cells again with tracers, its
# values never counted by a comparison (not comparable, no series).
EXPLAIN = RunKind(
    "explain",
    "instrumented pass of fsbench explain",
    "fsbench explain",
    "fsbench.execute.explain:ExplainFacts",
    driver="fsbench.execute.explain:ExplainDriver",
    report="fsbench.reports.explain:report",
    comparable=False,
)

KINDS: Registry[RunKind] = Registry(
    "run_kinds",
    "run kind",
    CONTRACT,
    tuple(f"{__name__}:{name}" for name in ("GRID", "CALIBRATION", "TUNE", "EXPLAIN")),
)


def known_kind(run: RunRecord) -> RunKind | None:
    """The run's kind, None for one this fsbench does not provide (a command that reads
    every run passes over it)."""
    try:
        return kind_of(run)
    except FsbenchError:
        return None


def kind_of(run: RunRecord) -> RunKind:
    """The run's kind (a run stored before kinds had facts is a grid run); a kind no
    installed fsbench provides is refused in one line."""
    name = run.kind or GRID.name
    try:
        return KINDS.get(name)
    except KeyError:
        raise FsbenchError(
            f"run {run.id} is of kind {name!r}, which this fsbench does not provide (known: "
            f"{', '.join(KINDS.all())}): install the package that made it"
        ) from None


def design(run: RunRecord) -> GridDesign:
    """A grid run's design (GridFacts.design): empty for any other run."""
    found = (run.facts or {}).get("design")
    return GridDesign.model_validate(found) if isinstance(found, dict) else GridDesign()
