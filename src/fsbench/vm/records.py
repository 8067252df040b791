"""The guest's records as the store takes them: the guest machine's provenance under
"vm", and a `failed` record for every cell the guest never finished."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsbench.plan.model import Cell, FsConfig
from fsbench.store.records import MetricRecord, TrialRecord, now

if TYPE_CHECKING:
    from fsbench.vm.job import VmResult
    from fsbench.vm.protocol import VmCell


def to_record(data: dict[str, Any], vm_prov: dict[str, Any]) -> TrialRecord:
    """One record as the guest wrote it (asdict(TrialRecord)), with `vm_prov` under "vm"."""
    fields = dict(data)
    fields["metrics"] = [MetricRecord(**m) for m in fields.get("metrics") or []]
    fields["id"] = None
    fields["provenance"] = {**(fields.get("provenance") or {}), "vm": vm_prov}
    return TrialRecord(**fields)


def new_record(vc: VmCell) -> TrialRecord:
    """The pending record of a cell the host measures itself (a boot, a crash series)."""
    return record_for(vc.cell(), vc.seq, vc.rep, "pending")


def record_for(cell: Cell, seq: int, rep: int, status: str, **fields: Any) -> TrialRecord:
    """A record of `cell` made on the host, not by the runner (what a guest did not
    finish, a kernel that did not build): the cell's identity, the status and `fields`."""
    return TrialRecord(
        seq=seq,
        rep=rep,
        cell_key=cell.key,
        config=cell.config.display,
        fs=cell.config.type,
        mkfs_options=list(cell.config.mkfs),
        mount_options=cell.config.mount,
        workload=cell.workload,
        params=dict(cell.params),
        knobs=dict(cell.knobs),
        status=status,
        started_at=now(),
        **fields,
    )


def import_records(
    result: VmResult, *, only_missing: bool = False, skip: set[str] | None = None
) -> list[TrialRecord]:
    """The guest's records as TrialRecords for Store.record_trials, the VM's provenance
    under "vm"; a cell the guest never finished is a `failed` record with the reason and
    the console's tail. With `only_missing`, just those (the caller stored the others as
    `on_cell` streamed them). Cells whose key is in `skip` (refused by the kernel, so the
    guest skipped them on purpose) are not missing."""
    got = [to_record(r, result.provenance) for r in result.records]
    have = {(r.seq, r.rep) for r in got}
    out = [] if only_missing else got
    skipped = set(skip or ()) | {r.cell_key for r in got if r.status == "unsupported"}
    first = result.error.splitlines()[0] if result.error else "the VM job did not finish"
    for vc in result.job.cells:
        if (vc.seq, vc.rep) in have or vc.cell_key() in skipped:
            continue
        try:
            cell = vc.cell()
            steps = cell.steps
            config, chain, key = cell.config, (cell.workload if cell.is_chain else ""), cell.key
        except Exception:  # an invalid cell in the job: report it, do not crash the import
            config = FsConfig.model_construct(type=str(vc.config.get("type", "?")))
            steps, chain, key = [(vc.workload, vc.params)], "", vc.workload
        for i, (name, params) in enumerate(steps):
            out.append(
                TrialRecord(
                    seq=vc.seq,
                    rep=vc.rep,
                    step=i,
                    chain=chain,
                    cell_key=key,
                    config=config.display,
                    fs=config.type,
                    mkfs_options=list(config.mkfs),
                    mount_options=config.mount,
                    workload=name,
                    params=params,
                    knobs=dict(vc.knobs),
                    status="failed",
                    message=f"VM: {first}" if i == 0 else f"not run: VM: {first}",
                    detail=result.error,
                    started_at=now(),
                    finished_at=now(),
                    provenance={"vm": result.provenance},
                    position=vc.position,
                )
            )
    out.sort(key=lambda r: (r.seq, r.step))
    return out
