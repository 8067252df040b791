"""The VM target kind: a QEMU guest with its own kernel (registered as an entry point of
`fsbench.targets`; its executor is vm/executor.py)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from fsbench.plan.targets import TargetSpec, flagged
from fsbench.system import knobs


class VmTargetSpec(TargetSpec):
    """A QEMU guest with its own kernel: filesystems the host lacks, other kernels."""

    kind: str = "vm"
    executor: ClassVar[str] = "fsbench.vm.executor:VmExecutor"
    kernel: str | list[str] | None = flagged(
        "kernel",
        None,
        "vm: Debian's default, a version (6.1), a linux-image package, or the "
        "path of your own bzImage; several (6.1,6.12) make the kernel a dimension.",
    )
    guest_ram_mb: int = flagged("guest-ram", 2048, "vm: guest RAM in MiB.", ge=256)
    vcpus: int = Field(default=2, ge=1, le=64)
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
