"""The guest's records as the store takes them: the guest machine's provenance under
"vm", and a `failed` record for every cell the guest never finished."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsbench.plan.model import Cell
from fsbench.store.records import TrialRecord, cell_record

if TYPE_CHECKING:
    from fsbench.vm.protocol import VmCell


def to_record(data: dict[str, Any], vm_prov: dict[str, Any]) -> TrialRecord:
    """One record as the guest wrote it (asdict(TrialRecord)), with `vm_prov` under "vm"."""
    provenance = {**(data.get("provenance") or {}), "vm": vm_prov}
    return TrialRecord.from_dict({**data, "id": None, "provenance": provenance})


def new_record(vc: VmCell) -> TrialRecord:
    """The pending record of a cell the host measures itself (a boot, a crash series)."""
    return record_for(vc.cell(), vc.seq, vc.rep, "pending")


def record_for(cell: Cell, seq: int, rep: int, status: str, **fields: Any) -> TrialRecord:
    """A record of `cell` made on the host, not by the runner (what a guest did not
    finish, a kernel that did not build): the cell's identity, the status and `fields`."""
    return cell_record(cell, seq, rep, status, **fields)
