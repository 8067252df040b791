"""The validity flags: one registry that every flag set anywhere is in, and which metrics
a timing flag taints."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fsbench.analysis import validity

SRC = Path(__file__).resolve().parents[2] / "src" / "fsbench"


def _flag_names_set_in_the_source() -> dict[str, str]:
    """Every literal flag name the code sets: `X.flag("name", ...)`, `flags["name"] = ...`
    (any mapping named like *flags), and the keys a workload's `check` returns."""
    found: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        where = str(path.relative_to(SRC))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "flag"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found[str(node.args[0].value)] = where
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.slice, ast.Constant)
                        and isinstance(target.slice.value, str)
                        and ast.unparse(target.value).endswith("flags")
                    ):
                        found[target.slice.value] = where
            if isinstance(node, ast.FunctionDef) and node.name == "check":
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                        for key in ret.value.keys:
                            if isinstance(key, ast.Constant):
                                found[str(key.value)] = where
    return found


def test_every_flag_the_code_sets_is_registered() -> None:
    found = _flag_names_set_in_the_source()
    assert {"short", "cpu-bound", "not-cold", "fsck-problems", "outliers"} <= set(found)
    unknown = {name: where for name, where in found.items() if name not in validity.FLAGS}
    assert unknown == {}
    assert validity.meaning("fsck-problems") != validity.meaning("no-such-flag")


@pytest.mark.parametrize(
    ("unit", "tainted"),
    [
        ("s", True),
        ("ms", True),
        ("us", True),
        ("MiB/s", True),
        ("MB/s", True),
        ("files/s", True),
        ("ops/s", True),
        ("tx/s", True),
        ("IOPS", True),
        ("count", False),
        ("B", False),
        ("%", False),
        ("ratio", False),
        ("code", False),
        (None, False),
    ],
)
def test_short_taints_what_the_clock_measured(unit: str | None, tainted: bool) -> None:
    assert validity.applies("short", unit) is tainted
    assert validity.applies("not-cold", unit)  # not a timing flag: taints every metric
