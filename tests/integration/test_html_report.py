"""The HTML report of a real run, as a reader gets it: made by the CLI from a real tiny
alloc run, then loaded by a headless Chromium (when installed) into a screenshot."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import fsbench

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"


def _chromium(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={workdir / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_html_report_of_a_real_run(workdir: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    db = workdir / "results.db"
    res = fsbench(
        "run",
        "--fs",
        "ext4,xfs",
        "--workload",
        "alloc",
        "--set",
        "method=fallocate,write-4k",
        "--set",
        "size=16M",
        "--reps",
        "2",
        "--scale",
        "tiny",
        "--image-size",
        "1G",
        "--workdir",
        str(workdir / "work"),
        "--db",
        str(db),
    )
    assert res.returncode == 0, res.stderr
    page = workdir / "report.html"
    charts = workdir / "charts"
    res = fsbench(
        "report", "--db", str(db), "--format", "html", "-o", str(page), "--charts", str(charts)
    )
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    for needle in ("Machine, target and plan", "alloc: seconds", "Raw values", "ext4", "xfs"):
        assert needle in text
    assert "data:image/svg+xml;base64," in text
    assert "<script" not in text.lower()
    assert sorted(p.suffix for p in charts.iterdir()).count(".png") >= 4  # layout + 3 bars

    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium to render the page")
    shot = workdir / "report.png"
    res = _chromium(workdir, f"--screenshot={shot}", "--window-size=1400,3000", page.as_uri())
    assert shot.exists(), res.stderr
    assert shot.stat().st_size > 50_000  # a rendered page, not a blank one
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1400, 3000)
        colors = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colors is None or len(colors) > 50  # text, tables and charts, not a blank
    dom = _chromium(workdir, "--dump-dom", page.as_uri())
    assert "Machine, target and plan" in dom.stdout
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
