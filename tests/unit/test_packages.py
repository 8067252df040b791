"""The Debian packages are stated once (fsbench.execute.packages) and the Makefile asks for them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fsbench import workloads
from fsbench.execute import packages
from fsbench.system import filesystems

MAKEFILE = Path(__file__).resolve().parents[2] / "Makefile"


def _make_variable(name: str) -> list[str]:
    text = MAKEFILE.read_text().replace("\\\n", " ")
    m = re.search(rf"^{name}\s*:?=\s*(.*)$", text, re.MULTILINE)
    assert m, f"no {name} in the Makefile"
    return m.group(1).split()


def test_every_filesystem_and_workload_tool_is_installed_on_host_and_guest() -> None:
    host, guest = set(packages.host_packages()), set(packages.guest_packages())
    for fs in filesystems.catalogue().values():
        assert fs.package in host and fs.package in guest, fs.name
    for name, wl in workloads.all_workloads().items():
        for tool in wl.tools:
            assert tool.package in host and tool.package in guest, (name, tool)


def test_extras_say_why() -> None:
    for extra in packages.EXTRA:
        assert extra.packages and len(extra.why) > 20, extra
    assert "chromium" in packages.host_packages()  # the HTML report's browser test
    assert "chromium" not in packages.guest_packages()
    assert {"stress-ng", "xz-utils", "util-linux"} <= set(packages.guest_packages())
    assert packages.host_packages() == tuple(sorted(set(packages.host_packages())))


def test_the_makefile_asks_fsbench_for_the_list() -> None:
    """One list: the Makefile names only what making the venv needs, and those are in
    the list too; everything else it gets from `python -m fsbench.execute.packages`."""
    text = MAKEFILE.read_text()
    assert "DEB_PACKAGES" not in text
    assert "-m fsbench.execute.packages" in text
    bootstrap = _make_variable("BOOTSTRAP_PACKAGES")
    assert bootstrap and set(bootstrap) <= set(packages.host_packages())
    # No other package name of the list is spelled in the Makefile.
    spelled = set(re.findall(r"[a-z0-9][a-z0-9.+-]+", text))
    # Commands the Makefile runs that share their package's name.
    stated = set(packages.host_packages()) - set(bootstrap) - {"make", "tar", "mount", "grep"}
    assert spelled & stated == set()


def test_make_run_installs_what_the_default_comparison_needs_and_not_the_rest() -> None:
    """`make run` asks for the default preset's list: its filesystems' and workloads'
    tools and what every run calls; QEMU, the servers, the kernel source and the browser
    come with `make install` alone."""
    from fsbench.plan import model as planning
    from fsbench.plan import presets

    run = set(packages.run_packages())
    assert run <= set(packages.host_packages())
    cells = planning.expand(presets.load_preset(presets.DEFAULT_PRESET))
    for cell in cells:
        assert filesystems.get(cell.config.type).package in run, cell.config.type
        for name, _ in cell.steps:
            assert {t.package for t in workloads.get(name).tools} <= run, name
    assert {"python3-venv", "util-linux", "mount"} <= run
    left = {"qemu-system-x86", "postgresql", "mariadb-server", "linux-source", "chromium"}
    assert not run & left
    text = MAKEFILE.read_text()
    assert "-m fsbench.execute.packages run)" in text
    assert re.search(r"^run: apt-run engine$", text, re.MULTILINE)


def test_command_line() -> None:
    for argv, expected in (
        ([], packages.host_packages()),
        (["guest"], packages.guest_packages()),
        (["run"], packages.run_packages()),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "fsbench.execute.packages", *argv],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert tuple(out.split()) == expected, argv
    bad = subprocess.run(
        [sys.executable, "-m", "fsbench.execute.packages", "all"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "usage" in bad.stderr
