"""`fsbench list filesystems|workloads|monitors|presets|runs`."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from fsbench.cli.common import DbOption, JsonOption
from fsbench.plan import presets
from fsbench.reports import formats
from fsbench.store import runkinds
from fsbench.store.results import Store
from fsbench.system import filesystems, monitors
from fsbench.system.monitors.base import Needs
from fsbench.workloads import describe

LIST = (formats.TABLE, formats.JSON)
LIST_WORKLOADS = (*LIST, formats.MARKDOWN)


class What(StrEnum):
    filesystems = "filesystems"
    workloads = "workloads"
    monitors = "monitors"
    presets = "presets"
    runs = "runs"


def list_(
    what: Annotated[What, typer.Argument(help="filesystems, workloads, monitors, presets or runs")],
    json_out: JsonOption = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="table or json; workloads also md: the parameter table of docs/workloads.md.",
        ),
    ] = formats.TABLE,
    db: DbOption = None,
) -> None:
    """List the catalogue, the workloads and their parameters, the monitors, the presets, or
    stored runs."""
    formats.check(fmt, LIST_WORKLOADS if what == What.workloads else LIST)
    json_out = json_out or fmt == formats.JSON
    if fmt == formats.MARKDOWN:
        typer.echo(describe.markdown(), nl=False)
        return
    items: list[dict[str, Any]]
    where = ""  # runs say which store they are in (shown without its password)
    if what == What.filesystems:
        items = [
            {
                "name": f.name,
                "summary": f.summary,
                "package": f.package,
                "mkfs": " ".join(f.mkfs),
                "fsck": " ".join(f.fsck_readonly),
            }
            for f in filesystems.catalogue().values()
        ]
    elif what == What.workloads:
        items = describe.describe_all()
    elif what == What.monitors:
        items = [
            {
                "name": name,
                "role": str(m.role),
                "default": name in monitors.DEFAULT,
                "summary": m.summary,
                "needs": _needs(m.needs),
            }
            for name, m in monitors.all_monitors().items()
        ]
    elif what == What.presets:
        items = [
            {"name": n, "description": presets.preset_description(n)}
            for n in presets.preset_names()
        ]
    else:
        store = Store(db)
        items = [
            {
                "id": r.id,
                "name": r.name,
                "kind": r.kind or runkinds.GRID.name,  # its command: runkinds.KINDS
                "status": r.status,
                "created_at": r.created_at,
                "trials": len(r.schedule),
                "uid": r.uid,
            }
            for r in store.list_runs()
        ]
        store.close()
        where = f" in {store}"
    if json_out:
        typer.echo(json.dumps(items, indent=2, default=str))
        return
    if what == What.workloads:
        _print_workloads(items)
        return
    table = Table(box=box.SIMPLE_HEAD, title=Text(f"runs{where}") if where else None)
    if not items:
        Console().print(f"no {what.value}{where}", markup=False, highlight=False)
        return
    shown = [k for k in items[0] if k != "uid"]  # a run's uid: in --json
    for key in shown:
        table.add_column(key, overflow="fold")
    for item in items:
        table.add_row(*(_cell(item[k]) for k in shown))
    Console().print(table)


def _needs(needs: Needs) -> list[str]:
    """What a monitor needs, as words: its tools (with their package), root, tracefs."""
    said = [f"{t.command} ({t.package})" for t in needs.tools]
    return said + ["root"] * needs.root + ["tracefs"] * needs.tracefs


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _print_workloads(items: list[dict[str, Any]]) -> None:
    """One row per workload: what it does, then each parameter with its value per scale
    and what it means."""
    table = Table(box=box.SIMPLE_HEAD, show_lines=True)
    table.add_column("workload", no_wrap=True, style="bold")
    table.add_column("what it measures; each parameter: meaning [tiny | quick | full value]")
    for item in items:
        lines = [item["summary"]]
        for param, meaning in item["descriptions"].items():
            values = describe.per_scale(item, param)
            shown = " | ".join(values) if len(set(values)) > 1 else values[0]
            lines.append(f"  {param}: {meaning} [{shown}]")
        extra = f"cache {item['cache']}" + (
            f", needs {', '.join(item['tools'])}" if item["tools"] else ""
        )
        lines.append(f"  ({extra})")
        table.add_row(item["name"], "\n".join(lines))
    Console().print(table, markup=False, highlight=False)


# Where `fsbench --help` lists it (app.py registers every command module by its rank).
RANK = 60


def register(app: typer.Typer) -> None:
    app.command("list")(list_)
