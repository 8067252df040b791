"""`make install` installed every package fsbench.execute.packages names (make test runs it first):
a tool a workload or filesystem declares is never missing from the machine that tests it."""

from __future__ import annotations

import subprocess

import pytest

from fsbench.execute import packages

pytestmark = pytest.mark.integration


def test_every_host_package_is_installed() -> None:
    missing = []
    for name in packages.host_packages():
        res = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True
        )
        if "install ok installed" not in res.stdout:
            missing.append(name)
    assert missing == [], f"not installed: {' '.join(missing)} (run make install)"
