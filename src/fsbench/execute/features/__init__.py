"""`fsbench features`: what this kernel and these tools actually do, measured on small
scratch filesystems, instead of a wiki's table.

One probe per module in `probes/` (registry.probes() gives the rows' order); `runner` runs
them on fresh loop images; `fsbench.reports.features_table` draws the table (reports
present, this package measures).
"""

from __future__ import annotations

from fsbench.execute.features.base import Settings
from fsbench.execute.features.runner import run_features
from fsbench.store.features import FeatureRow, FeatureTable, Result, load_features, save_features

__all__ = [
    "FeatureRow",
    "FeatureTable",
    "Result",
    "Settings",
    "load_features",
    "run_features",
    "save_features",
]
