"""`fsbench features`: what this kernel and these tools actually do, measured on small
scratch filesystems, instead of a wiki's table.

One probe per module in `probes/` (registry.PROBES gives the rows' order); `runner` runs
them on fresh loop images; `render` draws the table. The lead's HTML report includes
`features_table_html(table)` styled with `FEATURES_CSS`.
"""

from __future__ import annotations

from fsbench.features.base import Settings
from fsbench.features.model import FeatureRow, FeatureTable, Result
from fsbench.features.render import FEATURES_CSS, features_table_html
from fsbench.features.runner import run_features
from fsbench.features.store import load_features, save_features

__all__ = [
    "FEATURES_CSS",
    "FeatureRow",
    "FeatureTable",
    "Result",
    "Settings",
    "features_table_html",
    "load_features",
    "run_features",
    "save_features",
]
