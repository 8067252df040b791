"""Run kinds, as first-class as target kinds: what made a run, and how it lives.

A run's `kind` names one `RunKind` of the registry `KINDS` (system/plugins.py): the grid
run of `fsbench run` and its A/A twin of `fsbench calibrate` (one driver: the repetition
loop), the race of `fsbench tune`, and (a plugin shipped with the VM target, an entry
point of `fsbench.run_kinds.v1`) the kernel bisection of `fsbench bisect`. Each declares:

- its **facts**: a typed model (pydantic) of what the run keeps beyond the plan, in the
  run's own column (`runs.facts`): a grid's design planned from its budget, a race's
  settings, a bisection's tree and endpoints;
- its **command**, which makes it and resumes it (`fsbench tune --resume RUN`): `fsbench
  run --resume` goes on with grid runs only, and names the command for the others;
- its **report**: the function that builds a stored run's document (reports/document.py),
  which every format of `fsbench report` writes ("": the grid's tables, charts and page);
- whether `fsbench compare` takes its rows.

Its driver is its command's: the repetition loop (execute/loop.py), the race
(execute/race/driver.py), the bisection (vm/bisect.py), each living through the one run life
cycle (execute/session.py).

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


@dataclass(frozen=True)
class RunKind:
    name: str  # as the store keeps it in runs.kind
    title: str  # what lists and messages call it: "race of fsbench tune"
    command: str  # the command that makes and resumes it: "fsbench tune"
    facts: str  # "module:Class" of its facts model
    # "module:function(store, run_id, wants) -> Document": the run's document, which every
    # format of `fsbench report` writes ("": a grid run's report, reports/run_report.py)
    report: str = ""
    comparable: bool = True  # `fsbench compare` takes its rows
    resumed_by: str = ""  # the command that goes on with it, when not its own

    def facts_of(self, run: RunRecord) -> Any:
        """The run's facts as its kind's model."""
        model: type[BaseModel] = load(self.facts)
        return model.model_validate(run.facts or {})

    @property
    def resume(self) -> str:
        """How to go on with a run of this kind ("fsbench tune --resume")."""
        return f"{self.resumed_by or self.command} --resume"


class GridFacts(BaseModel):
    """A grid run's facts: its design planned from the budget (store/griddesign.py, written
    by execute/decide.py; empty for a fixed or `auto` design)."""

    model_config = ConfigDict(extra="allow")

    design: GridDesign = GridDesign()


GRID = RunKind("run", "comparison of fsbench run", "fsbench run", f"{__name__}:GridFacts")
CALIBRATION = RunKind(
    "calibration",
    "A/A calibration of fsbench calibrate",
    "fsbench calibrate",
    f"{__name__}:GridFacts",
    resumed_by=GRID.command,  # the repetition loop's run, like a grid's
)
TUNE = RunKind(
    "tune",
    "race of fsbench tune",
    "fsbench tune",
    "fsbench.execute.race.trials:TuneSpec",
    report="fsbench.reports.tune:report",
    comparable=False,
)

# The run-kind contract's version: a plugin built for another is refused.
CONTRACT = 1
KINDS: Registry[RunKind] = Registry(
    "run_kinds",
    "run kind",
    CONTRACT,
    tuple(f"{__name__}:{name}" for name in ("GRID", "CALIBRATION", "TUNE")),
)


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
