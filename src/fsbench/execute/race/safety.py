"""What "safe" means for `fsbench tune --require safe` (cli/tune.py runs the checks): the
configs' crash tests before the race, as an ordinary run of the `crash` workload on the VM
target (the guest is the machine whose power is
cut), stored beside the race. A config is safe when no crash of any pattern lost or
damaged anything, the volatile-cache states included; a config with no crash result (the
guest's kernel refused the option, a trial failed) is not shown safe, so it does not race.
The verdicts, with their evidence, are kept with the race (`TuneSpec.safety`), so a
resumed race and every report see the same ones. See docs/tune.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fsbench.analysis.crash_evidence import CRASH, crash_text
from fsbench.analysis.rows import Row
from fsbench.execute.race.trials import SafetyVerdict
from fsbench.plan import targets
from fsbench.plan.model import Plan

VM = "vm"


def safety_plan(plan: Plan, guest: Mapping[str, Any] | None = None) -> Plan:
    """The race's configs under the crash workload, once each, in a VM: the race's own VM
    target if it races in one, else the VM target with the race target's image size and
    working directory; `guest` sets fields of that VM target (vcpus, guest_ram_mb...)."""
    if plan.target.kind == VM:
        target: dict[str, Any] = plan.target.model_dump()
    else:
        vm = targets.kinds()[VM]
        shared = plan.target.model_dump(include=set(vm.model_fields) - {"kind"})
        target = {**shared, "kind": VM}
    target.update(guest or {})
    data = plan.model_dump(by_alias=True)
    data.update(
        workload=[{"name": CRASH}],
        reps=1,
        warmup=0,
        budget=None,
        trial_timeout=None,  # a crash trial's own (boots and power cuts), not the race's
        knobs={},
        age=[],
        target=target,
        description=f"crash tests of the configs of a race ({plan.description or 'tune'})",
    )
    return Plan.model_validate(data)


def verdict(rows: list[Row], config: str) -> SafetyVerdict:
    """Safe when every pattern's crashes lost and damaged nothing (the volatile-cache
    states too); the evidence is the crash report's line per pattern."""
    mine = [r for r in rows if r.config == config and r.workload == CRASH]
    ok = [r for r in mine if r.status == "ok"]
    if not ok:
        why = next((f"{r.status}: {r.message}" for r in mine if r.message), "no trial ran")
        return SafetyVerdict(safe=False, evidence=f"no crash result ({why})")
    patterns: dict[str, list[Row]] = {}
    for r in ok:
        patterns.setdefault(str(r.params.get("pattern")), []).append(r)
    lines = [crash_text(pattern, of_pattern) for pattern, of_pattern in patterns.items()]
    unsafe = any(damaged for _, damaged in lines) or len(ok) < len(mine)
    failed = [f"{r.status}: {r.message}" for r in mine if r.status != "ok" and r.message]
    evidence = " | ".join([text for text, _ in lines] + failed[:1])
    return SafetyVerdict(safe=not unsafe, evidence=evidence)
