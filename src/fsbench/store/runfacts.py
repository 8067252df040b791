"""What a run keeps of the code that made it, so that its reports never ask the live code:
each workload's summary, headline metrics and parameter meanings, and the `fsbench
features` table measured on its kernel. A later fsbench, whose workloads say other things,
still reports the run as it was."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fsbench import workloads


def workload_facts(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{name: {summary, headline, params: {name: description}}} for known workloads."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(names):
        try:
            cls = workloads.get(name)
        except KeyError:  # a workload this fsbench no longer has
            continue
        out[name] = {
            "summary": cls.summary,
            "headline": list(cls.headline),
            "params": {
                pname: info.description or ""
                for pname, info in cls.params_model.model_fields.items()
            },
        }
    return out


def features_snapshot(kernel: str, fs_types: Iterable[str]) -> dict[str, Any]:
    """The feature table measured on `kernel`, cut to these filesystems, as JSON; {} when
    none was measured (or it is unreadable)."""
    from fsbench.store.features import load_features

    try:
        table = load_features(kernel) if kernel else None
    except Exception:  # a damaged or foreign file must not cost the run
        return {}
    if table is None:
        return {}
    mine = [fs for fs in dict.fromkeys(fs_types) if fs in table.filesystems]
    if not mine:
        return {}
    data: dict[str, Any] = table.only(mine).model_dump(mode="json")
    return data
