"""A chart on the page: embedded as a data: URL, at the size it was drawn."""

from __future__ import annotations

import base64

from fsbench.reports.charts import Chart
from fsbench.reports.html.markup import e, tag


def img(chart: Chart) -> str:
    """A chart embedded as a data: URL (SVG when written, else PNG), never wider than
    drawn (96 px per inch): fonts keep their size on wide screens."""
    path = chart.path("svg") or chart.path("png")
    if path is None:
        return ""
    mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    width, height = chart.size
    wide = width > 7.5  # two narrow charts side by side stay legible; wider ones span
    px_w, px_h = round(width * 96), round(height * 96)
    image = (
        f'<img src="data:{mime};base64,{data}" alt="{e(chart.title)}" '
        f'width="{px_w}" height="{px_h}" style="max-width:{px_w}px">'
    )
    return tag("figure", image, class_="chart wide" if wide else "chart")
