"""The VM target kind: a QEMU guest with its own kernel (registered as an entry point of
`fsbench.targets`; its executor is vm/executor.py)."""

from __future__ import annotations

from pydantic import Field, field_validator

from fsbench.plan.targets import TargetSpec, TargetStatus, flagged
from fsbench.system import knobs


class VmTargetSpec(TargetSpec):
    """A QEMU guest with its own kernel: filesystems the host lacks, other kernels."""

    kind: str = "vm"
    kernel: str | list[str] | None = flagged(
        "kernel",
        None,
        "vm: Debian's default, a version (6.1), a linux-image package, or the "
        "path of your own bzImage; several (6.1,6.12) make the kernel a dimension.",
    )
    guest_ram_mb: int = flagged("guest-ram", 2048, "vm: guest RAM in MiB.", ge=256)
    # Under TCG (no KVM) each vCPU is a host thread: guests whose vCPUs outnumber the free
    # cores slow each other far more than their share (bench/results/guest_cpus.json).
    vcpus: int = flagged(
        "guest-cpus", 2, "vm: guest vCPUs (under TCG, one per core free for it).", ge=1, le=64
    )
    throttle: dict[str, int] = Field(default_factory=dict)  # QEMU: iops-total, bps-total...

    @field_validator("kernel")
    @classmethod
    def _kernel_list(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and not [v for v in value if str(v).strip()]:
            raise ValueError("kernel: an empty list")
        return value

    @property
    def kernels(self) -> list[str | None]:
        """The kernels to run under, in order: [None] for the VM's default."""
        if self.kernel is None:
            return [None]
        items = self.kernel if isinstance(self.kernel, list) else self.kernel.split(",")
        out = [str(k).strip() for k in items if str(k).strip()]
        return list(dict.fromkeys(out)) or [None]

    def dimensions(self) -> dict[str, list[str]]:
        kernels = self.kernels
        return {knobs.KERNEL: [str(k) for k in kernels]} if len(kernels) > 1 else {}

    @classmethod
    def doctor(cls) -> TargetStatus:
        """QEMU, the accelerator, the cached guest images and the filesystems they add."""
        from fsbench.vm.doctor import doctor_facts

        facts = doctor_facts(probe=False)
        adds = {
            kernel: [fs for fs, ok in found.items() if ok]
            for kernel, found in (facts.get("guest_filesystems") or {}).items()
        }
        qemu = facts.get("qemu") or {}
        images = [str(i.get("kernel_version")) for i in facts.get("images") or []]
        roots = [f"{r['config']} ({r['made_in']})" for r in facts.get("boot_roots") or []]
        usable = bool(facts.get("usable"))
        return TargetStatus(
            title="vm target (--target vm)",
            usable=usable,
            reason=str(facts.get("reason") or ""),
            columns=["qemu", "accel", "cached guest kernels", "filesystems it adds", "boot roots"],
            rows=[
                [
                    (qemu.get("version") if isinstance(qemu, dict) else None) or "-",
                    str(facts.get("accel") or "-"),
                    ", ".join(images) or "none yet (first vm run builds one)",
                    "; ".join(f"{k}: {', '.join(fs)}" for k, fs in adds.items()) or "-",
                    ", ".join(roots) or "-",
                ]
            ],
            facts={"images": images, "filesystems": adds, "boot_roots": roots},
        )
