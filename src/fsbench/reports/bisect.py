"""The report of a bisection, from the store alone: the first bad commit (subject, author
date), each commit's evidence (n, mean, 95% CI, verdict, build and measure seconds), the
endpoints' config differences, the `git bisect log`, the total time; and a chart of the
metric over the commits tested, in history order, with the endpoints as bands.

Pure functions of a stored run (its run kind's facts, `BisectFacts` of vm/bisect.py, and
its trials); `report` writes it in every format of `fsbench report`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsbench.analysis.stats import summarize
from fsbench.reports import formats
from fsbench.reports.formats import md_escape
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.store.results import Store
from fsbench.store.values import counted_values
from fsbench.system import knobs, numbers


def facts(run: RunRecord) -> dict[str, Any]:
    """The bisection's facts (its run kind's, in runs.facts)."""
    return dict(run.facts or {})


def values_of(
    trials: Sequence[TrialRecord], commit: str, metric: str, seqs: Sequence[int] | None = None
) -> list[float]:
    """The counted values of `metric` measured under `commit` (its knob kernel), of the
    trials `seqs` when given (an endpoint and its recheck are the same commit)."""
    mine = [
        t
        for t in trials
        if t.knobs.get(knobs.KERNEL) == commit[:12] and (seqs is None or t.seq in seqs)
    ]
    return counted_values(mine, metric)


def as_json(run: RunRecord, trials: Sequence[TrialRecord]) -> dict[str, Any]:
    """What --json prints and the renderers show."""
    f = facts(run)
    metric = str(f.get("metric", ""))
    steps = []
    for step in f.get("steps", []):
        vals = values_of(trials, step["commit"], metric, step.get("seqs"))
        s = summarize(vals)
        steps.append(
            {
                **step,
                "n": s.n,
                "mean": s.mean,
                "ci95": list(s.ci95) if s.ci95 else None,
            }
        )
    return {
        "run": run.id,
        "status": run.status,
        "linux": f.get("linux"),
        "good": f.get("good"),
        "bad": f.get("bad"),
        "metric": metric,
        "unit": f.get("unit", ""),
        "first_bad": f.get("first_bad"),
        "stopped": f.get("stopped", ""),
        "range_left": f.get("range_left", []),
        "confounders": f.get("confounders", []),
        "accel": run.target.get("accel"),
        "steps": steps,
        "bisect_log": f.get("log", ""),
        "order": f.get("order", []),
        "seconds": f.get("seconds"),
        "max_reps": f.get("max_reps"),
    }


def headline(report: dict[str, Any]) -> str:
    """The first bad commit, or why there is none."""
    first = report.get("first_bad")
    if first:
        return f"first bad commit: {first['commit'][:12]} {first['subject']} ({first['date']})"
    return f"no first bad commit: {report.get('stopped') or 'not finished'}"


def budget(report: dict[str, Any]) -> str:
    """The bisection's budget in words, as every format states it."""
    return f"budget: up to {report.get('max_reps') or '?'} repetitions per commit"


STEP_COLUMNS = ("commit", "role", "n", "mean", "95% CI", "verdict", "build s", "measure s")


def step_cells(step: dict[str, Any]) -> list[str]:
    """One commit's row of evidence, as every format prints it."""
    ci = step.get("ci95")
    return [
        step["commit"][:12],
        step["role"],
        str(step["n"]),
        numbers.number(step["mean"]),
        numbers.interval(ci, "-"),
        step.get("verdict") or "-",
        f"{step.get('build_seconds') or 0:.0f}",
        f"{step.get('measure_seconds') or 0:.0f}",
    ]


def text(report: dict[str, Any]) -> str:
    """The report as plain text (the terminal's, and a mailing-list post's)."""
    unit = report["unit"]
    lines = []
    lines.append(headline(report))
    lines.append(
        f"metric {report['metric']} ({unit}), good {str(report['good'])[:12]}, "
        f"bad {str(report['bad'])[:12]}, accel {report.get('accel')}; {budget(report)}"
    )
    for c in report["confounders"]:
        lines.append(f"config differs between the endpoints: {c}")
    lines.append("")
    widths = (12, 13, 3, 10, 21, 10, 7, 9)
    right = {2, 3, 4, 6, 7}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines.append(line(STEP_COLUMNS))
    for s in report["steps"]:
        lines.append(line(step_cells(s)))
        if s.get("error"):
            lines.append(f"{'':14}{s['error'].splitlines()[0][:100]}")
        gate = s.get("gate") or {}
        if gate.get("note") and s["role"] != "good" and s["role"] != "bad":
            lines.append(f"{'':14}{gate['note']}")
    if report.get("range_left"):
        lines.append(f"range left: {', '.join(c[:12] for c in report['range_left'])}")
    lines.append("")
    lines.append("git bisect log:")
    lines += [f"  {ln}" for ln in str(report["bisect_log"]).splitlines()]
    if report.get("seconds") is not None:
        lines.append(f"total {report['seconds']:.0f} s")
    return "\n".join(lines) + "\n"


def chart_svg(report: dict[str, Any]) -> str:
    """The metric over the commits tested, in history order (good first), each a mean with
    its 95% CI; the endpoints' CIs as bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    history: Sequence[str] = report.get("order") or []
    steps = {s["commit"]: s for s in report["steps"] if s["role"] == "step" and s["n"]}
    ends = {s["role"]: s for s in report["steps"] if s["role"] in ("good", "bad") and s["n"]}
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for role, colour in (("good", "tab:green"), ("bad", "tab:red")):
        e = ends.get(role)
        if e and e.get("ci95"):
            ax.axhspan(
                e["ci95"][0], e["ci95"][1], color=colour, alpha=0.2, label=f"{role} (95% CI)"
            )
    xs = [i for i, c in enumerate(history) if c in steps]
    for i in xs:
        s = steps[history[i]]
        lo, hi = s["ci95"] or (s["mean"], s["mean"])
        colour = {"good": "tab:green", "bad": "tab:red"}.get(s["verdict"], "tab:grey")
        ax.errorbar(i, s["mean"], yerr=[[s["mean"] - lo], [hi - s["mean"]]], fmt="o", color=colour)
    ax.set_xticks(xs, [history[i][:7] for i in xs], rotation=45, fontsize=7)
    ax.set_ylabel(f"{report['metric']} ({report['unit']})")
    ax.set_xlabel("commits tested, in history order (good -> bad)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return buf.getvalue()


def markdown(report: dict[str, Any]) -> str:
    """The report as a mailing-list post in markdown: the verdict, the steps' table, the log."""
    out = [f"## fsbench bisect: run {report['run']} ({report['status']})", ""]
    out += [f"**{md_escape(headline(report))}**", ""]
    out.append(
        f"metric {md_escape(report['metric'])} ({md_escape(report['unit'])}), good "
        f"`{str(report['good'])[:12]}`, bad `{str(report['bad'])[:12]}`, accel "
        f"{report.get('accel')}; {budget(report)}"
    )
    out += [
        f"- config differs between the endpoints: {md_escape(c)}" for c in report["confounders"]
    ]
    out += ["", "| " + " | ".join(STEP_COLUMNS) + " |", "|" + "---|" * len(STEP_COLUMNS)]
    out += ["| " + " | ".join(md_escape(c) for c in step_cells(s)) + " |" for s in report["steps"]]
    out += ["", "```", str(report["bisect_log"]).rstrip(), "```"]
    if report.get("seconds") is not None:
        out += ["", f"total {report['seconds']:.0f} s"]
    return "\n".join(out) + "\n"


def csv_text(report: dict[str, Any]) -> str:
    """One row per commit measured."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["commit", "role", "n", "mean", "ci_low", "ci_high", "verdict", "unit"])
    for s in report["steps"]:
        ci = s.get("ci95") or (None, None)
        writer.writerow(
            [s["commit"], s["role"], s["n"], s["mean"], ci[0], ci[1], s.get("verdict") or "",
             report["unit"]]
        )  # fmt: skip
    return buf.getvalue()


def html_page(report: dict[str, Any]) -> str:
    """One self-contained page: the verdict, the chart, the steps, the bisect log."""
    from fsbench.reports.html.markup import e, head, pre, table, tag
    from fsbench.reports.html.page import css

    rows = (tag("tr", "".join(tag("td", e(c)) for c in step_cells(s))) for s in report["steps"])
    body = "".join(
        [
            tag("h1", e(f"fsbench bisect: run {report['run']} ({report['status']})")),
            tag("p", tag("strong", e(headline(report)))),
            tag(
                "p",
                e(
                    f"metric {report['metric']} ({report['unit']}), good "
                    f"{str(report['good'])[:12]}, bad {str(report['bad'])[:12]}, accel "
                    f"{report.get('accel')}; {budget(report)}"
                ),
            ),
            *(
                tag("p", e(f"config differs between the endpoints: {c}"))
                for c in report["confounders"]
            ),
            chart_svg(report) if any(s["n"] for s in report["steps"]) else "",
            tag("h2", "Commits measured"),
            table(head(*STEP_COLUMNS, numeric=("n", "mean", "build s", "measure s")), rows),
            tag("h2", "git bisect log"),
            pre(str(report["bisect_log"])),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{e('fsbench bisect run ' + str(report['run']))}</title>\n"
        f'<style>{css()}</style>\n</head>\n<body>\n<div class="wrap">{body}</div>\n'
        "</body>\n</html>\n"
    )


def report(store: Store, run_id: int, fmt: str, charts: Path | None) -> str | None:
    """The bisection in a format of `fsbench report` (its run kind's report)."""
    data = as_json(store.get_run(run_id), store.get_trials(run_id))
    if charts is not None:
        charts.mkdir(parents=True, exist_ok=True)
        (charts / "bisect.svg").write_text(chart_svg(data), encoding="utf-8")
    if fmt == formats.JSON:
        return json.dumps(data, indent=1, default=str) + "\n"
    if fmt == formats.MARKDOWN:
        return markdown(data)
    if fmt == formats.CSV:
        return csv_text(data)
    if fmt == formats.HTML:
        return html_page(data)
    return text(data)
