"""The report of a bisection, from the store alone: the first bad commit (subject, author
date), each commit's evidence (n, mean, 95% CI, verdict, build and measure seconds), the
endpoints' config differences, the `git bisect log`, the total time; and a chart of the
metric over the commits tested, in history order, with the endpoints as bands.

Pure functions of a stored run (its target's `bisect` facts and its trials).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fsbench.analysis.stats import summarize
from fsbench.store.records import RunRecord, TrialRecord
from fsbench.system import knobs

KIND = "bisect"


def facts(run: RunRecord) -> dict[str, Any]:
    found = run.target.get(KIND)
    return found if isinstance(found, dict) else {}


def values_of(
    trials: Sequence[TrialRecord], commit: str, metric: str, seqs: Sequence[int] | None = None
) -> list[float]:
    """The counted values of `metric` measured under `commit` (its knob kernel), of the
    trials `seqs` when given (an endpoint and its recheck are the same commit)."""
    return [
        m.value
        for t in sorted(trials, key=lambda t: t.seq)
        if t.knobs.get(knobs.KERNEL) == commit[:12] and t.rep > 0 and t.status == "ok"
        if seqs is None or t.seq in seqs
        for m in t.metrics
        if m.name == metric
    ]


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
    }


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def text(report: dict[str, Any]) -> str:
    """The report as plain text (the terminal's, and a mailing-list post's)."""
    unit = report["unit"]
    lines = []
    first = report.get("first_bad")
    if first:
        fb = first
        lines.append(f"first bad commit: {fb['commit'][:12]} {fb['subject']} ({fb['date']})")
    else:
        lines.append(f"no first bad commit: {report.get('stopped') or 'not finished'}")
    lines.append(
        f"metric {report['metric']} ({unit}), good {str(report['good'])[:12]}, "
        f"bad {str(report['bad'])[:12]}, accel {report.get('accel')}"
    )
    for c in report["confounders"]:
        lines.append(f"config differs between the endpoints: {c}")
    lines.append("")
    lines.append(
        f"{'commit':12}  {'role':13} {'n':>3} {'mean':>10} {'95% CI':>21}  {'verdict':10}"
        f" {'build s':>7} {'measure s':>9}"
    )
    for s in report["steps"]:
        ci = f"{_fmt(s['ci95'][0])}..{_fmt(s['ci95'][1])}" if s.get("ci95") else "-"
        lines.append(
            f"{s['commit'][:12]}  {s['role']:13} {s['n']:>3} {_fmt(s['mean']):>10} {ci:>21}  "
            f"{s['verdict'] or '-':10} {s['build_seconds']:>7.0f} {s['measure_seconds']:>9.0f}"
        )
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
    import io

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
