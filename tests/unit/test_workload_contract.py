"""The workload contract: discovery by an explicit list, parameter models from the generic
argument, every parameter described, and the runner's own checks (cpu-bound, short,
not-cold) that workloads feed through hooks."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

from fsbench import workloads
from fsbench.analysis.validity import COLD_READ_FRACTION, FLAGS
from fsbench.execute import checks
from fsbench.system import proc
from fsbench.system.monitors.sampler import CpuTimes, Totals
from fsbench.workloads import fsck
from fsbench.workloads.base import Params, Scale, Workload

PACKAGE = Path(workloads.__file__).parent


def _workload_classes() -> set[str]:
    """Every workload class defined in fsbench.workloads (a Workload with a name of its
    own, not abstract), as "module:Class"."""
    found = set()
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="fsbench.workloads."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Workload)
                and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)
                and "name" in vars(obj)
            ):
                found.add(f"{module.__name__}:{name}")
    return found


def test_discovery_is_the_explicit_list() -> None:
    """Every workload class is named in BUILTIN, and only those: no naming rule decides
    what is loaded; and the registry holds exactly them."""
    assert set(workloads.BUILTIN) == _workload_classes()
    names = workloads.all_workloads()
    assert {f"{cls.__module__}:{cls.__name__}" for cls in names.values()} == set(workloads.BUILTIN)


def test_params_model_is_the_generic_argument() -> None:
    for name, cls in workloads.all_workloads().items():
        assert issubclass(cls.params_model, Params), name
        for scale in Scale:
            # Every scale's defaults validate against the model (sweeps: each element),
            # given what a plan must give (no default fits it: the command's `run`).
            defaults = cls.defaults(scale)
            one = {k: v[0] if isinstance(v, list) else v for k, v in defaults.items()}
            one.update(cls.required_example)
            assert isinstance(cls.params_model.model_validate(one), cls.params_model)


def test_no_isinstance_asserts_on_params() -> None:
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert) and "isinstance(params" in ast.unparse(node):
                pytest.fail(f"{path.name}:{node.lineno}: {ast.unparse(node)}")


def test_every_parameter_has_a_description() -> None:
    """`fsbench list workloads`, the stored run facts and docs/workloads.md show it."""
    missing = [
        f"{name}.{field}"
        for name, cls in workloads.all_workloads().items()
        for field, info in cls.params_model.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert missing == []


def test_headline_for_defaults_to_the_headline_reported() -> None:
    cls = workloads.get("gzip")
    params = cls.params_model.model_validate({"size": "1M"})
    assert cls.headline_for(params, ["mb_per_s", "seconds", "ratio"]) == ("seconds", "mb_per_s")
    assert cls.headline_for(params, ["ratio"]) == ()
    alloc = workloads.get("alloc")
    fall = alloc.params_model.model_validate({"size": "1M", "method": "fallocate"})
    write = alloc.params_model.model_validate({"size": "1M", "method": "write-4k"})
    reported = ["seconds", "fragments", "extents"]
    assert alloc.headline_for(fall, reported) == ("fragments", "extents")
    assert alloc.headline_for(write, reported) == ("seconds", "fragments", "extents")


# -- the runner's checks ------------------------------------------------------------------


def totals(seconds: float, own: float) -> Totals:
    return Totals(seconds, None, CpuTimes(0, 0, 0, 0), own_user=own * 0.25, own_system=own * 0.75)


def test_cpu_bound_counts_the_threads_cpus() -> None:
    """One thread is CPU bound at 0.8 CPU-s a second; four threads on two CPUs at 1.6."""
    assert checks.cpu_bound(0.85, 1.0, threads=1, cpus=2)
    assert not checks.cpu_bound(0.95, 1.0, threads=4, cpus=2)
    assert not checks.cpu_bound(1.5, 1.0, threads=4, cpus=2)
    assert checks.cpu_bound(1.65, 1.0, threads=4, cpus=2)
    assert checks.cpu_bound(1.85, 1.0, threads=2, cpus=8)
    assert not checks.cpu_bound(0.4, 0.4, threads=1, cpus=2)  # too short to say
    flags = checks.trial_flags(
        totals(10.0, 9.5),
        10.0,
        checks_duration=True,
        threads=1,
        expected_read=None,
        device_read=0,
    )
    assert list(flags) == ["cpu-bound"] and "9.5 s of CPU in 10.0 s" in flags["cpu-bound"]


def test_short_and_not_cold_flags() -> None:
    def flags(elapsed: float, *, tiny: bool = False, expected: float | None = None) -> set[str]:
        return set(
            checks.trial_flags(
                totals(elapsed, 0.0),
                elapsed,
                checks_duration=not tiny,
                threads=1,
                expected_read=expected,
                device_read=100.0,
            )
        )

    assert flags(1.9) == {"short"}
    assert flags(2.1) == set()
    assert flags(0.1, tiny=True) == set()  # tiny scale: short on purpose
    assert flags(3.0, expected=100.0 / COLD_READ_FRACTION) == set()
    assert flags(3.0, expected=100.0 / COLD_READ_FRACTION + 1) == {"not-cold"}
    assert {"short", "cpu-bound", "not-cold"} <= set(FLAGS)


# -- fsck: the checker failing is not a timing ---------------------------------------------


CHECKED = {
    "xfs_repair": "Phase 1 - find and verify superblock...",
    "btrfs": "Checking filesystem on",
}


@pytest.mark.parametrize(
    "argv0, code, checked, failed",
    [
        ("e2fsck", 0, True, False),
        ("e2fsck", 4, True, False),  # errors left uncorrected: a verdict
        ("e2fsck", 8, False, True),  # operational error
        ("e2fsck", 12, False, True),
        ("e2fsck", 16, False, True),  # usage
        ("e2fsck", 32, False, True),  # cancelled
        ("e2fsck", 124, False, True),  # timed out
        ("xfs_repair", 1, True, False),  # corruption found
        ("xfs_repair", 1, False, True),  # "fatal error -- couldn't initialize XFS library"
        ("xfs_repair", 2, True, True),
        ("btrfs", 1, True, False),
        ("btrfs", 1, False, True),  # could not open the device
        ("fsck.jfs", 8, False, True),
    ],
)
def test_fsck_exit_codes(argv0: str, code: int, checked: bool, failed: bool) -> None:
    out = CHECKED.get(argv0, "") if checked else ""
    res = proc.Result((argv0, "/dev/x"), code, out, f"{argv0}: some words of its own")
    error = fsck.checker_failed([argv0, "-n", "/dev/x"], res)
    assert (error is not None) == failed
    if error is not None:
        assert error.message.startswith(f"{argv0}: ")
        assert "some words of its own" in error.message + error.detail
        if code == 124:
            assert "timed out" in error.message


def test_the_docs_parameter_table_is_the_workloads_own() -> None:
    """The table of parameters in docs/workloads.md is what `fsbench list workloads
    --format md` prints from the workloads' models: regenerate it when a parameter changes
    (`python -m fsbench.workloads.describe docs/workloads.md`)."""
    from pathlib import Path

    from fsbench.workloads import describe

    root = Path(__file__).resolve().parents[2]
    table = describe.table_in((root / describe.DOC).read_text())
    assert table == describe.markdown()
    for item in describe.describe_all():
        for param in item["descriptions"]:
            assert f"| `{param}` |" in table, (item["name"], param)
