"""Machine, target and plan: what a reader needs to trust or redo the run, as stored."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from fsbench.analysis.rows import Row
from fsbench.reports.html.markup import details, e, facts, head, plain, pre, table, tag
from fsbench.reports.tables import run_header, run_hosts
from fsbench.store import trialfacts
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.system import cpu_latency, numbers
from fsbench.system.hostkeys import Host

# Target facts that name this run's temporary things, not the target.
_TARGET_HIDDEN = {"summary", "notes", "owner_pid", "loop_device", "diskstats_name", "workdir"}


def _value(name: str, value: Any) -> Any:
    """A stored fact as people read it: sizes in binary units, flags as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name.endswith("_bytes") and isinstance(value, int | float):
        return numbers.size(value)
    return plain(value)


def _label(name: str) -> str:
    return name.removesuffix("_bytes").replace("_", " ")


def target_items(t: dict[str, Any]) -> list[tuple[str, Any]]:
    """The stored one-line summary, then every other fact the target described."""
    items: list[tuple[str, Any]] = [("summary", t.get("summary") or t.get("kind"))]
    items += [(_label(k), _value(k, v)) for k, v in t.items() if k not in _TARGET_HIDDEN]
    return items


def _cpuidle(h: Host) -> str | None:
    """The idle driver and the wake-up latency the CPUs were held to (0: polling, never
    halted: the run's `cpu_idle = "shallow"` or another process's request)."""
    if h.cpuidle_driver is None and h.cpu_latency_us is None:
        return None
    latency = h.cpu_latency_us
    held = (
        "no latency request readable"
        if latency is None
        else "held out of deep idle (latency 0)"
        if latency == 0
        else "no latency request"
        if latency >= cpu_latency.NO_REQUEST_US
        else f"latency request {h.shown('cpu_latency_us')} us"
    )
    return f"{h.shown('cpuidle_driver') or 'no driver'}, {held}"


def host_items(run: RunRecord) -> list[tuple[str, Any]]:
    names = run_hosts(run)
    if names is not None:  # the controller's facts are not where the trials ran
        hosts = run.target.get("hosts") or {}
        return [
            ("hosts", f"{len(names)}: compare --by host says what differs"),
            *((n, ", ".join(hosts[n].get("groups") or []) or "no group") for n in names),
            ("fsbench", run.fsbench_version),
        ]
    h = run.host
    commit = h.shown("fsbench_commit")
    items: list[tuple[str, Any]] = [
        ("host", h.shown("hostname")),
        ("kernel", f"Linux {h.shown('kernel')} {h.shown('kernel_version') or ''}".strip()),
        ("architecture", h.shown("machine")),
        ("CPU", f"{h.shown('cpus')} × {h.shown('cpu')}" if h.cpus else h.shown("cpu")),
        ("memory", h.shown("memory_bytes")),
        ("cpufreq governor", h.shown("cpufreq_governor") or "none reported"),
        ("cpuidle", _cpuidle(h)),
        (
            "dirty ratios",
            f"vm.dirty_ratio {h.shown('dirty_ratio')}, "
            f"vm.dirty_background_ratio {h.shown('dirty_background_ratio')}"
            if h.dirty_ratio is not None
            else None,
        ),
        ("python", h.shown("python")),
        ("fsbench", f"{run.fsbench_version}" + (f" ({commit})" if commit else "")),
        ("free page reporting", h.shown("free_page_reporting")),
    ]
    # What this fsbench does not read, as stored: another version's keys, unreadable values.
    items += [
        (k.replace("_", " "), f"{plain(v)} ({h.flagged[k]})" if k in h.flagged else plain(v))
        for k, v in h.others().items()
    ]
    return items


def _plan_lines(run: RunRecord, rows: list[Row] | None = None) -> list[str]:
    """The run header's target notes and plan line (reports.tables: one wording for every
    report), and the convergence target of --reps auto."""
    lines = [line for line in run_header(run, rows)[2:] if not line.startswith("target: ")]
    plan = run.plan
    if plan.get("reps") == "auto" and plan.get("max_reps") and plan.get("ci_target"):
        lines.append(
            f"--reps auto: up to {plan['max_reps']} repetitions, until the 95% CI is within "
            f"±{numbers.percent(plan['ci_target'])} of the mean"
        )
    return lines


def provenance_html(
    run: RunRecord, trials: Sequence[TrialRecord], rows: list[Row] | None = None
) -> str:
    tools = run.host.tools or {}
    parts = [
        tag(
            "div",
            tag("div", tag("h3", "Machine") + facts(host_items(run)), class_="card")
            + tag("div", tag("h3", "Target") + facts(target_items(run.target)), class_="card"),
            class_="cards",
        ),
        tag("h3", "Command line"),
        pre(shlex.join(run.argv)),
        tag("ul", "".join(tag("li", e(line)) for line in _plan_lines(run, rows)), class_="plan"),
    ]
    if run.overrides:
        parts.append(
            tag(
                "p",
                "Parameters set on the command line: "
                + ", ".join(
                    tag("code", e(f"{k}={','.join(map(str, v))}")) for k, v in run.overrides.items()
                ),
            )
        )
    parts.append(configs_html(trials))
    if tools:
        tool_rows = (
            tag("tr", tag("th", e(name), scope="row") + tag("td", e(version)))
            for name, version in sorted(tools.items())
        )
        parts.append(
            details(
                f"Tool versions ({len(tools)})",
                tag(
                    "div",
                    tag("table", tag("tbody", "".join(tool_rows)), class_="plain"),
                    class_="scroll",
                ),
            )
        )
    parts.append(
        details("The plan as run (JSON)", pre(json.dumps(run.plan, indent=2, sort_keys=True)))
    )
    return "".join(parts)


def configs_html(trials: Sequence[TrialRecord]) -> str:
    """Per config: the options asked for, and what mkfs and the kernel made of them."""
    seen: dict[str, TrialRecord] = {}
    for t in trials:
        if t.config not in seen or (seen[t.config].status != "ok" and t.status == "ok"):
            seen[t.config] = t
    if not seen:
        return ""
    rows = []
    for config, t in seen.items():
        mkfs_argv = trialfacts.mkfs_argv(t.provenance)
        effective = trialfacts.mount_effective(t.provenance)
        rows.append(
            tag(
                "tr",
                tag("th", e(config), scope="row")
                + tag("td", e(t.fs))
                + tag("td", tag("code", e(" ".join(t.mkfs_options) or "-")))
                + tag("td", tag("code", e(t.mount_options or "-")))
                + tag("td", tag("code", e(shlex.join(mkfs_argv) if mkfs_argv else "-")))
                + tag("td", tag("code", e(",".join(effective) if effective else "-"))),
            )
        )
    header = head(
        "config", "fs", "mkfs options", "mount options", "mkfs run", "effective mount options"
    )
    return tag("h3", "Configurations") + table(header, rows)
