"""A toy report format, whole in this one file: `fsbench report --format tsv`, one line
per config and metric with its mean, n and the run's verdict for that comparison."""

from __future__ import annotations

from fsbench.analysis import verdicts
from fsbench.reports.render import register_format
from fsbench.reports.source import RunReport


def render_tsv(report: RunReport, all_metrics: bool) -> str:
    lines = ["config\tworkload\tmetric\tmean\tn\tverdict"]
    for row in report.rows:
        if row.headline is None and not all_metrics:
            continue
        decision = report.decisions.get(verdicts.key_of(row))
        lines.append(
            "\t".join(
                [
                    row.config,
                    row.workload,
                    row.metric,
                    f"{row.mean:.6g}",
                    str(row.n),
                    decision.short if decision is not None else "",
                ]
            )  # fmt: skip
        )
    return "\n".join(lines) + "\n"


register_format("tsv", render_tsv)
