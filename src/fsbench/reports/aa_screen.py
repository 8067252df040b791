"""The one screen of `fsbench calibrate`: what this machine can tell apart, per workload."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from fsbench.analysis.aa_check import DIFFERENCES, Noise
from fsbench.store.records import RunRecord
from fsbench.system import numbers


def resolves(item: Noise, difference: float, n: int) -> str:
    """'yes' when n reps per config detect `difference`; else the reps it would take."""
    found = item.resolvable(n)
    if found is not None and found <= difference:
        return "yes"
    needed = item.reps_for(difference)
    return f"n={needed}" if needed is not None else "no"


def document(run: RunRecord, noise: Sequence[Noise]) -> dict[str, Any]:
    """`fsbench calibrate --json`: the run and, per workload metric, its noise."""
    n = int(run.plan.get("reps") or 0) if str(run.plan.get("reps")).isdigit() else 0
    items = []
    for item in noise:
        reps = n or item.n
        items.append(
            {
                "workload": item.workload,
                "params": item.params,
                "metric": item.metric,
                "unit": item.unit,
                "cv": item.cv,
                "n": item.n,
                "mean_gap": item.mean_gap,
                "ratio": item.ratio,
                "ratio_ci": list(item.ratio_ci) if item.ratio_ci else None,
                "false_winner": item.false_winner,
                "p": item.p,
                "p_family": item.p_family,
                "order_effect": item.order_effect,
                "resolvable": item.resolvable(reps),
                "reps_for": {f"{d:g}": item.reps_for(d) for d in DIFFERENCES},
            }
        )
    return {
        "run": run.id,
        "kind": run.kind,
        "host": run.host.hostname,
        "kernel": run.host.kernel,
        "target": run.target.get("summary"),
        "noise": items,
    }


def print_screen(console: Console, run: RunRecord, noise: Sequence[Noise]) -> None:
    reps = run.plan.get("reps")
    configs = [c.get("label") or c.get("type") for c in run.plan.get("fs") or []]
    console.print(
        f"fsbench calibrate: run {run.id} on {run.host.shown('hostname')} "
        f"(Linux {run.host.shown('kernel')}), {run.target.get('summary', '')}",
        highlight=False,
        markup=False,
    )
    console.print(
        f"{' and '.join(str(c) for c in configs)}: one config measured as two, {reps} reps "
        "each after a warm-up, order shuffled and balanced",
        style="dim",
        highlight=False,
        markup=False,
    )
    table = Table(box=box.SIMPLE_HEAD, title_justify="left")
    for name, justify in [
        ("workload", "left"),
        ("metric", "left"),
        ("CV", "right"),
        ("A vs B", "right"),
        ("order", "left"),
        ("resolves at n", "right"),
        *((f"{numbers.percent(d)}?", "right") for d in DIFFERENCES),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    false_winners = []
    swept = {
        i.workload
        for i in noise
        if any(j.workload == i.workload and j.params != i.params for j in noise)
    }
    for item in noise:
        gap = numbers.percent(item.mean_gap, 1)
        if item.false_winner:
            gap = f"[red]{gap} winner![/]"
            false_winners.append(item)
        resolvable = item.resolvable()
        table.add_row(
            _workload(item) if item.workload in swept else item.workload,
            item.metric,
            numbers.percent(item.cv, 1),
            gap,
            "[yellow]effect[/]" if item.order_effect else "none",
            "-" if resolvable is None else f"±{numbers.percent(resolvable)} (n={item.n})",
            *(_yes(resolves(item, d, item.n)) for d in DIFFERENCES),
        )
    console.print(table)
    console.print(
        "resolves: the smallest difference between two configs that a comparison with "
        "this many reps detects here (Welch, 95% confidence, 80% power); n=K: the reps per "
        "config it would take. Later reports of this host and kernel warn where configs "
        "differ by less than this.",
        style="dim",
        highlight=False,
        markup=False,
    )
    for item in false_winners:
        p = "p n/a" if item.p_family is None else numbers.p(item.p_family)
        console.print(
            f"warning: identical configs got a winner for {_workload(item)} {item.metric}: "
            f"{item.false_winner} (Holm over this calibration's {len(noise)} metrics: "
            f"{p}). Expect this in 1 calibration in 20 by chance; "
            "more often means this machine's state moves results (see the order column).",
            style="red",
            highlight=False,
            markup=False,
        )


def _workload(item: Noise) -> str:
    params = item.params.strip("{}").replace('"', "")
    return f"{item.workload} {params}".strip() if params else item.workload


def _yes(text: str) -> str:
    return "[green]yes[/]" if text == "yes" else f"[yellow]{text}[/]"
